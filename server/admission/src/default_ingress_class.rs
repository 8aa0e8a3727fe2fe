//! DefaultIngressClass: a new Ingress that names no class (neither `spec.ingressClassName` nor
//! the old `kubernetes.io/ingress.class` annotation) gets the default IngressClass, the one
//! annotated `ingressclass.kubernetes.io/is-default-class: "true"` (the newest if several).

use std::sync::Arc;

use serde_json::{json, Value};

use crate::classes::{annotated, newest_default};
use crate::kept::Kept;
use crate::{Mutating, Operation, Request};
use machinery::error::ApiResult;

pub struct DefaultIngressClass {
    pub classes: Arc<Kept>,
}

#[async_trait::async_trait]
impl Mutating for DefaultIngressClass {
    fn name(&self) -> &'static str {
        "DefaultIngressClass"
    }

    async fn admit(&self, r: &Request<'_>, ingress: &mut Value) -> ApiResult<()> {
        if r.operation != Operation::Create || !r.concerns("networking.k8s.io", "ingresses") {
            return Ok(());
        }
        if !ingress["spec"]["ingressClassName"].is_null() || !ingress["metadata"]["annotations"]["kubernetes.io/ingress.class"].is_null() {
            return Ok(());
        }
        if let Some(class) = newest_default(&self.classes, |c| annotated(c, "ingressclass.kubernetes.io/is-default-class")) {
            ingress["spec"]["ingressClassName"] = json!(class["metadata"]["name"]);
        }
        Ok(())
    }
}
