//! OwnerReferencesPermissionEnforcement, a validating admission plugin as in kube-apiserver
//! 1.36: an update that changes `metadata.ownerReferences` needs the `delete` verb on the object
//! (a creation does not: its author could as well not have created it), and a reference that
//! newly sets `blockOwnerDeletion: true` needs `update` on the owner's `finalizers` subresource
//! (the owner's resource found from its apiVersion and kind), unless the user may update every
//! resource's finalizers. A pod's `status` writes are left alone, as their strategy keeps the
//! references.

use std::collections::HashMap;

use serde_json::Value;

use access::authz::Outcome;
use access::{Attributes, Auth};
use machinery::error::ApiResult;
use machinery::registry;

use crate::{Operation, Request, Validating};

pub struct OwnerReferencesPermissionEnforcement {
    pub auth: Auth,
}

fn owner_references(obj: Option<&Value>) -> &[Value] {
    obj.and_then(|o| o["metadata"]["ownerReferences"].as_array()).map_or(&[], Vec::as_slice)
}

fn blocks(reference: &Value) -> bool {
    reference["blockOwnerDeletion"] == true
}

/// The references that block their owner's deletion and did not before (new, or turned on).
fn newly_blocking<'a>(object: &'a [Value], old: &[Value]) -> Vec<&'a Value> {
    let old_by_uid: HashMap<&Value, &Value> = old.iter().map(|r| (&r["uid"], r)).collect();
    object.iter().filter(|r| blocks(r) && !old_by_uid.get(&r["uid"]).is_some_and(|o| blocks(o))).collect()
}

impl OwnerReferencesPermissionEnforcement {
    /// Asks the authorizers; a refusal is their reason and error, as the Go plugin prints them
    /// (`reason, error`, with `<nil>` for no error).
    async fn authorize(&self, attrs: Attributes) -> Result<(), String> {
        match self.auth.chain.authorize(&attrs).await {
            Outcome::Decided(verdict) if verdict.allowed() => Ok(()),
            Outcome::Decided(verdict) => Err(format!("{}, {}", verdict.reason, verdict.error.as_deref().unwrap_or("<nil>"))),
            Outcome::Failed(error) => Err(format!(", {error}")),
        }
    }

    /// What updating the finalizers of `reference`'s owner takes: attributes for each resource
    /// its kind maps to at its version, or why there is none.
    fn owner_finalizers(r: &Request<'_>, reference: &Value) -> Result<Vec<Attributes>, String> {
        let api_version = reference["apiVersion"].as_str().unwrap_or_default();
        let kind = reference["kind"].as_str().unwrap_or_default();
        let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
            [version] => ("", version),
            [group, version] => (group, version),
            _ => return Err(format!("unexpected GroupVersion string: {api_version}")),
        };
        let mapped: Vec<_> = registry::served().filter(|i| (i.group, i.version, i.kind) == (group, version, kind)).collect();
        if mapped.is_empty() {
            return Err(format!("no matches for kind {kind:?} in version {api_version:?}"));
        }
        let attributes = mapped.into_iter().map(|info| Attributes {
            user: (*r.req.user).clone(),
            verb: "update".into(),
            resource_request: true,
            api_group: info.group.into(),
            api_version: info.version.into(),
            resource: info.resource.into(),
            subresource: "finalizers".into(),
            name: reference["name"].as_str().unwrap_or_default().into(),
            // A namespaced owner is in the dependent's namespace.
            namespace: if info.namespaced { r.req.namespace.clone().unwrap_or_default() } else { String::new() },
            ..Default::default()
        });
        Ok(attributes.collect())
    }
}

#[async_trait::async_trait]
impl Validating for OwnerReferencesPermissionEnforcement {
    fn name(&self) -> &'static str {
        "OwnerReferencesPermissionEnforcement"
    }

    async fn validate(&self, r: &Request<'_>) -> ApiResult<()> {
        let pod_status = r.req.info.group.is_empty() && r.req.info.resource == "pods" && r.req.subresource.as_deref() == Some("status");
        if r.operation == Operation::Delete || pod_status {
            return Ok(());
        }
        let (references, old) = (owner_references(r.object), owner_references(r.old));
        let changing = match r.old {
            None => !references.is_empty(),
            Some(_) => references != old,
        };
        if !changing {
            return Ok(());
        }
        if r.operation == Operation::Update {
            let delete = Attributes {
                user: (*r.req.user).clone(),
                verb: "delete".into(),
                resource_request: true,
                api_group: r.req.info.group.into(),
                api_version: r.req.info.version.into(),
                resource: r.req.info.resource.into(),
                subresource: r.req.subresource.clone().unwrap_or_default(),
                namespace: r.req.namespace.clone().unwrap_or_default(),
                name: r.req.name().into(),
                ..Default::default()
            };
            if let Err(why) = self.authorize(delete).await {
                return Err(r.forbidden(format!("cannot set an ownerRef on a resource you can't delete: {why}")));
            }
        }
        let blocking = newly_blocking(references, old);
        if blocking.is_empty() {
            return Ok(());
        }
        let finalize_anything = Attributes {
            user: (*r.req.user).clone(),
            verb: "update".into(),
            resource_request: true,
            api_group: "*".into(),
            api_version: "*".into(),
            resource: "*".into(),
            subresource: "finalizers".into(),
            name: "*".into(),
            ..Default::default()
        };
        if self.authorize(finalize_anything).await.is_ok() {
            return Ok(());
        }
        for reference in blocking {
            let owners = Self::owner_finalizers(r, reference).map_err(|e| {
                let (api_version, kind) = (reference["apiVersion"].as_str().unwrap_or_default(), reference["kind"].as_str().unwrap_or_default());
                r.forbidden(format!("cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion {api_version} Kind {kind}: {e}"))
            })?;
            for owner in owners {
                if let Err(why) = self.authorize(owner).await {
                    return Err(r.forbidden(format!("cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: {why}")));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_references_that_start_blocking_count() {
        let r = |uid: &str, block: Option<bool>| match block {
            Some(b) => json!({"uid": uid, "blockOwnerDeletion": b}),
            None => json!({"uid": uid}),
        };
        let old = [r("a", Some(true)), r("b", None), r("c", Some(false))];
        let new = [r("a", Some(true)), r("b", Some(true)), r("c", Some(false)), r("d", Some(true)), r("e", None)];
        let uids: Vec<&Value> = newly_blocking(&new, &old).iter().map(|r| &r["uid"]).collect();
        assert_eq!(uids, [&json!("b"), &json!("d")]);
    }
}
