//! `admissionregistration.k8s.io`: one file per kind (and one for what several of its kinds share).

pub mod mutating_policy;
pub mod policy_binding;
pub mod validating_policy;
pub mod webhook_configuration;
