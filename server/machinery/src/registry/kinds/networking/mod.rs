//! `networking.k8s.io/v1`: one file per kind (and one for what several of its kinds share).

pub mod ingress;
pub mod ingressclass;
pub mod ipaddress;
pub mod networkpolicy;
pub mod servicecidr;
