//! PodSecurity, the validating admission plugin that applies the Pod Security Standards as
//! kube-apiserver 1.36 does: each namespace's labels choose a level and version for three modes
//! (enforce refuses pods, audit annotates the audit event, warn answers with warnings), over the
//! defaults and exemptions of the plugin's configuration. Pod-template kinds are audited and
//! warned about, never refused; a namespace relabelled to a stricter enforce level is answered
//! with the existing pods that would be refused.

mod checks;
mod configuration;
mod evaluation;
mod labels;
mod levels;
mod namespace;
mod plugin;
mod pods;

pub use plugin::PodSecurity;
