//! The core group (`v1`): one file per kind (and one for what several of its kinds share).

pub mod componentstatus;
pub mod configmap;
pub mod endpoints;
pub mod event;
pub mod limitrange;
pub mod namespace;
pub mod node;
pub mod persistentvolume;
pub mod persistentvolumeclaim;
pub mod pod;
pub mod pod_spec;
pub mod pod_warnings;
pub mod podtemplate;
pub mod replicationcontroller;
pub mod resource_names;
pub mod resourcequota;
pub mod secret;
pub mod service;
pub mod serviceaccount;
