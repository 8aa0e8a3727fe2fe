//! The integration tests, one binary: each file beside this one is a module, and tests of
//! different files run side by side (one link instead of one per file). Run one file's tests
//! with `cargo test -p apiserver --test integration FILE::`.

mod common;

mod admission_limits;
mod admission_namespace_policies;
mod admission_plugins;
mod admission_policy;
mod admission_webhooks;
mod aggregator;
mod api_surface;
mod apply;
mod audit;
mod authn;
mod authz;
mod authz_modes;
mod autoscaling;
mod bootstrap;
mod bootstrap_tokens;
mod cbor;
mod certificates;
mod cluster;
mod compose;
mod connections;
mod controller_identity;
mod corrupt;
mod crd;
mod crd_conversion;
mod deploy;
mod errors;
mod flags_reference;
mod flowcontrol;
mod gc;
mod kubectl;
mod kubelet;
mod limit_range;
mod metrics;
mod node_authz;
mod oidc;
mod parity;
mod pod_security;
mod pods;
mod probe;
mod protobuf;
mod python_client;
mod quota;
mod reads;
mod refusals;
mod restart;
mod service_accounts;
mod services;
mod tls;
mod traces;
mod versions;
mod watch;
mod writes;
