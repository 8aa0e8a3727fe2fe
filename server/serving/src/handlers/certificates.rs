//! The CertificateSigningRequest subresources as Kubernetes' strategies treat them: `approval`
//! changes the conditions (and metadata) only, never the request or an issued certificate;
//! `status` changes the status, but not the approval conditions, which only `approval` may add.
//! Approved and Denied exclude each other, and neither is ever taken back.

use serde_json::{json, Value};

use access::UserInfo;
use machinery::error::{ApiError, ApiResult, Cause};

const APPROVAL: &[&str] = &["Approved", "Denied"];

fn conditions(obj: &Value) -> Vec<Value> {
    obj["status"]["conditions"].as_array().cloned().unwrap_or_default()
}

fn is_approval(c: &Value) -> bool {
    c["type"].as_str().is_some_and(|t| APPROVAL.contains(&t))
}

/// A new request names who made it, whatever the body says.
pub fn stamp_requestor(obj: &mut Value, user: &UserInfo) {
    let spec = &mut obj["spec"];
    spec["username"] = json!(user.name);
    if user.uid.is_empty() {
        spec.as_object_mut().map(|s| s.remove("uid"));
    } else {
        spec["uid"] = json!(user.uid);
    }
    spec["groups"] = json!(user.groups);
    if user.extra.is_empty() {
        spec.as_object_mut().map(|s| s.remove("extra"));
    } else {
        spec["extra"] = json!(user.extra);
    }
}

/// The new object of a write to `approval`: `body`'s metadata and conditions, the rest as stored.
pub fn approval(old: &Value, body: &Value) -> ApiResult<Value> {
    let mut new = old.clone();
    new["metadata"] = body["metadata"].clone();
    let mut given = conditions(body);
    stamp(&conditions(old), &mut given);
    new["status"]["conditions"] = json!(given);
    check(old, &new)?;
    Ok(new)
}

/// Keeps a status write (already limited to the status and metadata) from changing approval.
pub fn status(old: &Value, new: &mut Value) -> ApiResult<()> {
    // The new conditions in their order, an approval one as it was (or dropped if it was not),
    // then the approvals the write left out.
    let was = conditions(old);
    let mut kept: Vec<Value> = conditions(new)
        .into_iter()
        .filter_map(|c| match is_approval(&c) {
            true => was.iter().find(|o| o["type"] == c["type"]).cloned(),
            false => Some(c),
        })
        .collect();
    let missing: Vec<Value> = was.into_iter().filter(|o| is_approval(o) && !kept.iter().any(|k| k["type"] == o["type"])).collect();
    kept.extend(missing);
    stamp(&conditions(old), &mut kept);
    if !kept.is_empty() || new["status"].get("conditions").is_some() {
        new["status"]["conditions"] = json!(kept);
    }
    check(old, new)
}

/// Conditions get their times when they first appear.
fn stamp(old: &[Value], new: &mut [Value]) {
    let now = machinery::meta::now();
    for c in new.iter_mut() {
        let before = old.iter().find(|o| o["type"] == c["type"]);
        for field in ["lastUpdateTime", "lastTransitionTime"] {
            if c[field].as_str().is_none_or(str::is_empty) {
                c[field] = before.and_then(|b| b.get(field)).cloned().unwrap_or_else(|| json!(now));
            }
        }
    }
}

fn check(old: &Value, new: &Value) -> ApiResult<()> {
    let mut causes = Vec::new();
    let new_conditions = conditions(new);
    let mut seen = Vec::new();
    for (i, c) in new_conditions.iter().enumerate() {
        let kind = c["type"].as_str().unwrap_or_default();
        if seen.contains(&kind) {
            causes.push(Cause::new("FieldValueDuplicate", format!("status.conditions[{i}].type"), format!("Duplicate value: \"{kind}\"")));
        }
        seen.push(kind);
        if APPROVAL.contains(&kind) && c["status"] != "True" {
            let status = c["status"].as_str().unwrap_or_default();
            causes.push(Cause::new("FieldValueNotSupported", format!("status.conditions[{i}].status"), format!("Unsupported value: \"{status}\": supported values: \"True\"")));
        }
    }
    if seen.contains(&"Approved") && seen.contains(&"Denied") {
        causes.push(Cause::invalid("status.conditions", "Approved", "Approved and Denied conditions are mutually exclusive"));
    }
    for gone in conditions(old).iter().filter(|c| is_approval(c)).filter(|c| !new_conditions.iter().any(|n| n["type"] == c["type"])) {
        let kind = gone["type"].as_str().unwrap_or_default();
        causes.push(Cause::new("FieldValueForbidden", "status.conditions", format!("Forbidden: updates may not remove a condition of type \"{kind}\"")));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = new["metadata"]["name"].as_str().unwrap_or_default().to_string();
    Err(ApiError::Invalid { group: "certificates.k8s.io".into(), kind: "CertificateSigningRequest".into(), name, causes })
}
