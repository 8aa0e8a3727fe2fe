//! Endpoints: deprecated since Kubernetes 1.33 in favour of EndpointSlices, which every answer
//! says.

use crate::registry::kinds::Strategy;

/// How the kind is served.
pub const STRATEGY: Strategy = Strategy { deprecation: Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"), ..Strategy::NONE };
