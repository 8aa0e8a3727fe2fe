//! What a service-account token says: the claims Kubernetes puts in a bound token (issued by
//! the `token` subresource) and in a legacy token (kept in a `kubernetes.io/service-account-token`
//! Secret), and reading them back from a verified token.

use serde_json::{json, Map, Value};

/// The issuer of legacy tokens, whatever `--service-account-issuer` says.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";
const LEGACY: &str = "kubernetes.io/serviceaccount/";

/// An object a token is bound to, or the account itself.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Ref {
    pub name: String,
    pub uid: String,
}

impl Ref {
    fn json(&self) -> Value {
        json!({"name": self.name, "uid": self.uid})
    }
    fn from(v: &Value) -> Option<Ref> {
        let name = v["name"].as_str()?.to_string();
        Some(Ref { name, uid: v["uid"].as_str().unwrap_or_default().to_string() })
    }
}

/// Everything a bound token is issued with.
#[derive(Debug, Clone, Default)]
pub struct Bound {
    pub issuer: String,
    pub audiences: Vec<String>,
    pub namespace: String,
    pub account: Ref,
    pub pod: Option<Ref>,
    pub secret: Option<Ref>,
    pub node: Option<Ref>,
    /// Issued at (UNIX seconds).
    pub now: i64,
    pub expiration_seconds: i64,
    /// For kubelet tokens given a longer life: when the old expiry would have been.
    pub warn_after: Option<i64>,
    pub jti: String,
}

impl Bound {
    pub fn claims(&self) -> Value {
        let mut private = Map::new();
        private.insert("namespace".into(), json!(self.namespace));
        private.insert("serviceaccount".into(), self.account.json());
        for (key, r) in [("pod", &self.pod), ("secret", &self.secret), ("node", &self.node)] {
            if let Some(r) = r {
                private.insert(key.into(), r.json());
            }
        }
        if let Some(w) = self.warn_after {
            private.insert("warnafter".into(), json!(w));
        }
        json!({
            "aud": self.audiences,
            "exp": self.now + self.expiration_seconds,
            "iat": self.now,
            "iss": self.issuer,
            "jti": self.jti,
            "kubernetes.io": private,
            "nbf": self.now,
            "sub": subject(&self.namespace, &self.account.name),
        })
    }
}

/// `system:serviceaccount:NAMESPACE:NAME`.
pub fn subject(namespace: &str, name: &str) -> String {
    format!("{}{namespace}:{name}", crate::user::SERVICE_ACCOUNT_PREFIX)
}

/// The claims of a legacy token for the account `account` kept in Secret `secret`.
pub fn legacy(namespace: &str, secret: &str, account: &Ref) -> Value {
    json!({
        "iss": LEGACY_ISSUER,
        format!("{LEGACY}namespace"): namespace,
        format!("{LEGACY}secret.name"): secret,
        format!("{LEGACY}service-account.name"): account.name,
        format!("{LEGACY}service-account.uid"): account.uid,
        "sub": subject(namespace, &account.name),
    })
}

/// Who a verified token speaks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Subject {
    pub namespace: String,
    pub account: Ref,
    pub pod: Option<Ref>,
    pub secret: Option<Ref>,
    pub node: Option<Ref>,
    pub jti: Option<String>,
    /// A legacy token: the Secret that must still hold it.
    pub legacy_secret: Option<String>,
    /// The token's `aud` (empty for legacy tokens).
    pub audiences: Vec<String>,
}

/// Reads the claims of a verified token.
pub fn read(claims: &Value) -> Result<Subject, String> {
    let sub = claims["sub"].as_str().unwrap_or_default();
    if claims["iss"] == LEGACY_ISSUER {
        let field = |k: &str| claims[format!("{LEGACY}{k}")].as_str().unwrap_or_default().to_string();
        let subject = Subject {
            namespace: field("namespace"),
            account: Ref { name: field("service-account.name"), uid: field("service-account.uid") },
            legacy_secret: Some(field("secret.name")),
            ..Default::default()
        };
        if subject.namespace.is_empty() || subject.account.name.is_empty() || subject.legacy_secret.as_deref() == Some("") {
            return Err("token is missing the service account claims".into());
        }
        return check_sub(subject, sub);
    }
    let private = &claims["kubernetes.io"];
    let account = Ref::from(&private["serviceaccount"]).ok_or("token does not name a service account")?;
    let audiences = match &claims["aud"] {
        Value::String(a) => vec![a.clone()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).map(String::from).collect(),
        _ => Vec::new(),
    };
    let subject = Subject {
        namespace: private["namespace"].as_str().unwrap_or_default().to_string(),
        account,
        pod: Ref::from(&private["pod"]),
        secret: Ref::from(&private["secret"]),
        node: Ref::from(&private["node"]),
        jti: claims["jti"].as_str().map(String::from),
        legacy_secret: None,
        audiences,
    };
    check_sub(subject, sub)
}

fn check_sub(subject: Subject, sub: &str) -> Result<Subject, String> {
    if sub != self::subject(&subject.namespace, &subject.account.name) {
        return Err("token subject does not match its service account".into());
    }
    Ok(subject)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_claims_read_back() {
        let bound = Bound {
            issuer: "https://kubernetes.default.svc.cluster.local".into(),
            audiences: vec!["api".into()],
            namespace: "ns".into(),
            account: Ref { name: "sa".into(), uid: "u1".into() },
            pod: Some(Ref { name: "p".into(), uid: "u2".into() }),
            node: Some(Ref { name: "n".into(), uid: "u3".into() }),
            now: 1000,
            expiration_seconds: 3600,
            jti: "j".into(),
            ..Default::default()
        };
        let claims = bound.claims();
        assert_eq!(claims["sub"], "system:serviceaccount:ns:sa");
        assert_eq!(claims["exp"], 4600);
        assert_eq!(claims["nbf"], 1000);
        assert_eq!(claims["kubernetes.io"]["pod"]["uid"], "u2");
        assert!(claims["kubernetes.io"].get("secret").is_none());
        let subject = read(&claims).unwrap();
        assert_eq!(subject.account.uid, "u1");
        assert_eq!(subject.node.unwrap().name, "n");
        assert_eq!(subject.audiences, vec!["api"]);
        assert_eq!(subject.jti.as_deref(), Some("j"));
    }

    #[test]
    fn legacy_claims_read_back() {
        let claims = legacy("ns", "sa-token", &Ref { name: "sa".into(), uid: "u1".into() });
        let subject = read(&claims).unwrap();
        assert_eq!(subject.legacy_secret.as_deref(), Some("sa-token"));
        assert_eq!(subject.account.name, "sa");
        let mut forged = claims.clone();
        forged["sub"] = json!("system:serviceaccount:kube-system:admin");
        assert!(read(&forged).is_err());
    }
}
