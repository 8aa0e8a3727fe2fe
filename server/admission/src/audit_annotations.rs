//! Annotations for the audit event of the request being served. Admission steps add them, as
//! Kubernetes' admission attributes do (`AddAnnotation`), and so does the authorization stage;
//! the API server's audit stage serves the request inside a [`scope`] that collects them.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// The annotation listing a ValidatingAdmissionPolicy's failures under its `Audit` action.
pub const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

/// One request's annotations.
pub type Annotations = Arc<Mutex<BTreeMap<String, String>>>;

tokio::task_local! {
    static ANNOTATIONS: Annotations;
}

/// Adds an annotation to the audit event of the request being served, if any.
pub fn annotate(key: impl Into<String>, value: impl Into<String>) {
    let _ = ANNOTATIONS.try_with(|a| a.lock().unwrap_or_else(|e| e.into_inner()).insert(key.into(), value.into()));
}

/// Runs `f` with [`annotate`] adding to `annotations`.
pub async fn scope<F: Future>(annotations: Annotations, f: F) -> F::Output {
    ANNOTATIONS.scope(annotations, f).await
}
