//! The core group (`v1`): one file per kind (and one for what several of its kinds share).

pub mod componentstatus;
pub mod configmap;
pub mod event;
pub mod namespace;
pub mod node;
pub mod persistentvolumeclaim;
pub mod pod;
pub mod pod_spec;
pub mod replicationcontroller;
pub mod secret;
pub mod service;
pub mod serviceaccount;
