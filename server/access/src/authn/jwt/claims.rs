//! From a verified token's claims to a user, as a JWT authenticator's configuration says:
//! claim validation rules (a required claim value, or a CEL expression over `claims`), claim
//! mappings for the user name, groups, uid and extra (a claim with a prefix, or a CEL
//! expression), and user validation rules (CEL over `user`). Expressions are compiled once,
//! when the configuration is read.

use std::collections::BTreeMap;

use cel::Value;
use serde_json::{json, Value as Json};

use crate::field_errors::FieldErrors;
use crate::UserInfo;
use machinery::expr::{type_name, Expression};

/// Where a user attribute comes from.
pub enum Source {
    /// A claim's value with `prefix` put in front.
    Claim { claim: String, prefix: String },
    Expression(Expression),
}

/// A rule every token must pass before it is mapped.
pub enum ClaimRule {
    /// The claim must be present with this string value.
    Required { claim: String, value: String },
    Expression { expression: Expression, message: String },
}

/// The compiled rules of one JWT authenticator.
pub struct Mapping {
    pub username: Source,
    pub groups: Option<Source>,
    pub uid: Option<Source>,
    pub extra: Vec<(String, Expression)>,
    pub claim_rules: Vec<ClaimRule>,
    pub user_rules: Vec<(Expression, String)>,
}

/// The variables an expression may name, for compilation.
fn claims_sample() -> Json {
    json!({})
}

fn user_sample() -> Json {
    json!({"username": "", "uid": "", "groups": [], "extra": {}})
}

/// Compiles an expression over `claims`, recording a field error at `path` when it does not.
pub fn compile_claims(source: &str, want: Option<&str>, path: &str, errs: &mut FieldErrors) -> Option<Expression> {
    compile(source, "claims", &claims_sample(), want, path, errs)
}

/// Compiles an expression over `user`.
pub fn compile_user(source: &str, path: &str, errs: &mut FieldErrors) -> Option<Expression> {
    compile(source, "user", &user_sample(), Some("bool"), path, errs)
}

fn compile(source: &str, var: &str, sample: &Json, want: Option<&str>, path: &str, errs: &mut FieldErrors) -> Option<Expression> {
    match Expression::compile(source, &[(var, sample)], want) {
        Ok(e) => Some(e),
        Err(e) => {
            errs.invalid(path, source, &e);
            None
        }
    }
}

/// Whether `source` reads `claims.<name>` (or `claims["<name>"]`), as Kubernetes checks that an
/// `email` mapping also looks at `email_verified`.
pub fn reads_claim(source: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let dotted = format!("claims.{name}");
    let found_dotted = source.match_indices(&dotted).any(|(i, _)| {
        let before_ok = source[..i].chars().next_back().is_none_or(|c| !ident(c));
        let after_ok = source[i + dotted.len()..].chars().next().is_none_or(|c| !ident(c));
        before_ok && after_ok
    });
    found_dotted || [format!("claims[\"{name}\"]"), format!("claims['{name}']")].iter().any(|s| source.contains(s.as_str()))
}

impl Mapping {
    /// The user the claims describe, or why the token is refused (worded as Kubernetes words it).
    pub fn user(&self, claims: &Json) -> Result<UserInfo, String> {
        let vars = [("claims", claims)];
        let name = self.username(claims)?;
        let groups = match &self.groups {
            None => Vec::new(),
            Some(Source::Claim { claim, prefix }) => match claims.get(claim) {
                None | Some(Json::Null) => Vec::new(),
                Some(value) => string_or_list(value)
                    .map_err(|_| format!("oidc: parse groups claim {claim:?}: expected a string or a list of strings"))?
                    .into_iter()
                    .map(|g| format!("{prefix}{g}"))
                    .collect(),
            },
            Some(Source::Expression(e)) => {
                let value = eval(e, &vars).map_err(|m| format!("oidc: error evaluating group claim expression: {m}"))?;
                cel_strings(&value).map_err(|m| format!("oidc: error evaluating group claim expression: {m}"))?
            }
        };
        let uid = match &self.uid {
            None => String::new(),
            Some(Source::Claim { claim, .. }) => match claims.get(claim) {
                None => String::new(),
                Some(Json::String(s)) => s.clone(),
                Some(_) => return Err(format!("oidc: parse uid claim {claim:?}: expected a string")),
            },
            Some(Source::Expression(e)) => match eval(e, &vars) {
                Ok(Value::String(s)) => s.to_string(),
                Ok(_) => return Err("oidc: error evaluating uid claim expression: uid claim expression must return a string".into()),
                Err(m) => return Err(format!("oidc: error evaluating uid claim expression: {m}")),
            },
        };
        let mut extra = BTreeMap::new();
        for (key, e) in &self.extra {
            let value = eval(e, &vars).map_err(|m| format!("oidc: error evaluating extra claim expression: {}: {m}", e.source))?;
            let values: Vec<String> = cel_strings(&value)
                .map_err(|m| format!("oidc: error evaluating extra claim expression: {}: {m}", e.source))?
                .into_iter()
                .filter(|v| !v.is_empty())
                .collect();
            if !values.is_empty() {
                extra.insert(key.clone(), values);
            }
        }
        for rule in &self.claim_rules {
            match rule {
                ClaimRule::Required { claim, value } => match claims.get(claim) {
                    None => return Err(format!("oidc: required claim {claim} not present in ID token")),
                    Some(Json::String(got)) if got == value => {}
                    Some(Json::String(got)) => {
                        return Err(format!("oidc: required claim {claim} value does not match. Got = {got}, want = {value}"))
                    }
                    Some(_) => return Err(format!("oidc: parse claim {claim}: expected a string")),
                },
                ClaimRule::Expression { expression, message } => {
                    check(expression, message, &vars).map_err(|m| format!("oidc: error evaluating claim validation expression: {m}"))?
                }
            }
        }
        let user = UserInfo { name, uid, groups, extra };
        if !self.user_rules.is_empty() {
            let value = json!({"username": user.name, "uid": user.uid, "groups": user.groups, "extra": user.extra});
            for (expression, message) in &self.user_rules {
                check(expression, message, &[("user", &value)]).map_err(|m| format!("oidc: error evaluating user info validation rule: {m}"))?;
            }
        }
        Ok(user)
    }

    fn username(&self, claims: &Json) -> Result<String, String> {
        match &self.username {
            Source::Expression(e) => match eval(e, &[("claims", claims)]) {
                Ok(Value::String(s)) if s.is_empty() => Err("oidc: empty username via CEL expression is not allowed".into()),
                Ok(Value::String(s)) => Ok(s.to_string()),
                Ok(_) => Err("oidc: error evaluating username claim expression: username claim expression must return a string".into()),
                Err(m) => Err(format!("oidc: error evaluating username claim expression: {m}")),
            },
            Source::Claim { claim, prefix } => {
                let value = match claims.get(claim) {
                    Some(Json::String(s)) => s.clone(),
                    None => return Err(format!("oidc: parse username claims {claim:?}: claim not present")),
                    Some(_) => return Err(format!("oidc: parse username claims {claim:?}: expected a string")),
                };
                if claim == "email" {
                    match claims.get("email_verified") {
                        None | Some(Json::Bool(true)) => {}
                        Some(Json::Bool(false)) => return Err("oidc: email not verified".into()),
                        Some(_) => return Err("oidc: parse 'email_verified' claim: expected a boolean".into()),
                    }
                }
                Ok(format!("{prefix}{value}"))
            }
        }
    }
}

fn eval(e: &Expression, vars: &[(&str, &Json)]) -> Result<Value, String> {
    e.eval(vars).map_err(|err| err.to_string())
}

/// A validation rule: must evaluate to true, else its message (or the expression) says why.
fn check(e: &Expression, message: &str, vars: &[(&str, &Json)]) -> Result<(), String> {
    match eval(e, vars)? {
        Value::Bool(true) => Ok(()),
        Value::Bool(false) => Err(format!("validation expression '{}' failed: {message}", e.source)),
        other => Err(format!("validation expression must return a boolean, not {}", type_name(&other))),
    }
}

/// A claim that is a string or a list of strings.
fn string_or_list(v: &Json) -> Result<Vec<String>, ()> {
    match v {
        Json::String(s) => Ok(vec![s.clone()]),
        Json::Array(items) => items.iter().map(|i| i.as_str().map(str::to_string).ok_or(())).collect(),
        _ => Err(()),
    }
}

/// An expression's result that must be a string or a list of strings.
fn cel_strings(v: &Value) -> Result<Vec<String>, String> {
    const WANT: &str = "expression must return a string or a list of strings";
    match v {
        Value::String(s) => Ok(vec![s.to_string()]),
        Value::List(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.to_string()),
                _ => Err(WANT.to_string()),
            })
            .collect(),
        Value::Null => Ok(Vec::new()),
        _ => Err(WANT.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(source: &str) -> Expression {
        Expression::compile(source, &[("claims", &json!({})), ("user", &user_sample())], None).unwrap()
    }

    #[test]
    fn claims_and_expressions_become_the_user() {
        let mapping = Mapping {
            username: Source::Claim { claim: "sub".into(), prefix: "oidc:".into() },
            groups: Some(Source::Claim { claim: "groups".into(), prefix: "g:".into() }),
            uid: Some(Source::Expression(expr("'uid-' + claims.sub"))),
            extra: vec![("example.com/tenant".into(), expr("claims.tenant")), ("example.com/none".into(), expr("''"))],
            claim_rules: vec![
                ClaimRule::Required { claim: "hd".into(), value: "example.com".into() },
                ClaimRule::Expression { expression: expr("claims.exp - claims.iat <= 86400"), message: "too long".into() },
            ],
            user_rules: vec![(expr("!user.username.startsWith('system:')"), "no system users".into())],
        };
        let claims = json!({"sub": "alice", "groups": ["dev", "ops"], "tenant": "t1", "hd": "example.com", "iat": 0, "exp": 3600});
        let user = mapping.user(&claims).unwrap();
        assert_eq!(user.name, "oidc:alice");
        assert_eq!(user.groups, ["g:dev", "g:ops"]);
        assert_eq!(user.uid, "uid-alice");
        assert_eq!(user.extra, BTreeMap::from([("example.com/tenant".to_string(), vec!["t1".to_string()])]));

        let wrong_domain = json!({"sub": "alice", "hd": "other.com", "iat": 0, "exp": 10, "tenant": "t"});
        assert_eq!(mapping.user(&wrong_domain).unwrap_err(), "oidc: required claim hd value does not match. Got = other.com, want = example.com");
        let too_long = json!({"sub": "alice", "hd": "example.com", "iat": 0, "exp": 100000, "tenant": "t"});
        assert!(mapping.user(&too_long).unwrap_err().ends_with("validation expression 'claims.exp - claims.iat <= 86400' failed: too long"));
        let no_sub = json!({"hd": "example.com"});
        assert!(mapping.user(&no_sub).unwrap_err().contains("claim not present"));
    }

    #[test]
    fn user_rules_and_email_verification() {
        let mapping = Mapping {
            username: Source::Claim { claim: "email".into(), prefix: String::new() },
            groups: None,
            uid: None,
            extra: vec![],
            claim_rules: vec![],
            user_rules: vec![(expr("!user.username.startsWith('system:')"), "no system users".into())],
        };
        assert_eq!(mapping.user(&json!({"email": "a@example.com"})).unwrap().name, "a@example.com");
        assert_eq!(mapping.user(&json!({"email": "a@example.com", "email_verified": false})).unwrap_err(), "oidc: email not verified");
        let err = mapping.user(&json!({"email": "system:admin"})).unwrap_err();
        assert_eq!(err, "oidc: error evaluating user info validation rule: validation expression '!user.username.startsWith('system:')' failed: no system users");
    }

    #[test]
    fn finds_claim_reads() {
        assert!(reads_claim("claims.email", "email"));
        assert!(reads_claim("claims['email'] + 'x'", "email"));
        assert!(!reads_claim("claims.email_verified", "email"));
        assert!(!reads_claim("myclaims.email", "email"));
        assert!(reads_claim("claims.email_verified == true", "email_verified"));
    }
}
