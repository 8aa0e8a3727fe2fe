//! Query parameters of resource requests, and the resourceVersion semantics table that turns
//! `resourceVersion` / `resourceVersionMatch` / `limit` / `continue` into one read plan.

use std::collections::HashMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::error::{ApiError, ApiResult, Cause};

/// The decoded query string; for a repeated key the first value counts, as in Kubernetes.
#[derive(Debug, Default, Clone)]
pub struct Params {
    first: HashMap<String, String>,
    pairs: Vec<(String, String)>,
}

impl Params {
    pub fn parse(query: Option<&str>) -> ApiResult<Params> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query.unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("invalid query string: {e}")))?;
        let mut first = HashMap::new();
        for (k, v) in &pairs {
            first.entry(k.clone()).or_insert_with(|| v.clone());
        }
        Ok(Params { first, pairs })
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.first.get(key).map(String::as_str)
    }

    /// Every value of a repeated parameter, in order.
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.pairs.iter().filter(|(k, _)| k == key).map(|(_, v)| v.as_str()).collect()
    }

    /// A present, non-empty value.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// A boolean parameter: `1`, `true` (any case) or an empty value mean true.
    pub fn flag(&self, key: &str) -> ApiResult<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "" | "1" | "true" | "t" => Ok(true),
                "0" | "false" | "f" => Ok(false),
                _ => Err(ApiError::bad_request(format!("invalid boolean value {v:?} for {key}"))),
            },
        }
    }

    pub fn uint(&self, key: &str) -> ApiResult<Option<u64>> {
        match self.value(key) {
            None => Ok(None),
            Some(v) => v.parse::<i64>().map(|n| Some(n.max(0) as u64)).map_err(|e| {
                // As Go's strconv.ParseInt words it.
                let why = match e.kind() {
                    std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
                    _ => "invalid syntax",
                };
                ApiError::bad_request(format!("strconv.ParseInt: parsing {}: {why}", crate::expr::quote(v)))
            }),
        }
    }

    /// `dryRun`: absent, or `All`.
    pub fn dry_run(&self) -> ApiResult<bool> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(v) => Err(invalid_options(
                "CreateOptions",
                vec![Cause::new("FieldValueNotSupported", "dryRun", format!("Unsupported value: \"{v}\": supported values: \"All\""))],
            )),
        }
    }
}

/// 422 for invalid request options, as Kubernetes reports them (kind `ListOptions`, ...).
pub fn invalid_options(kind: &str, causes: Vec<Cause>) -> ApiError {
    ApiError::Invalid { group: "meta.k8s.io".into(), kind: kind.into(), name: String::new(), causes }
}

/// How a read picks its revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadAt {
    /// Linearizable: read index from the leader, then local state.
    MostRecent,
    /// Whatever the local state is.
    Any,
    /// At least this revision: wait for it locally.
    NotOlderThan(u64),
    /// Exactly this revision, from history.
    Exact(u64),
    /// The next page of a list at a fixed revision, or (`None`) at the latest one, for a
    /// token handed out when the fixed revision was compacted.
    Continue { rev: Option<u64>, after: String },
}

/// Parses a resourceVersion value (`""` is unset).
fn parse_rv(rv: &str) -> ApiResult<u64> {
    rv.parse::<u64>().map_err(|_| {
        invalid_options(
            "ListOptions",
            vec![Cause::invalid("resourceVersion", rv, "must be a non-negative integer")],
        )
    })
}

/// The read plan of a get.
pub fn get_read(params: &Params) -> ApiResult<ReadAt> {
    Ok(match params.value("resourceVersion") {
        None => ReadAt::MostRecent,
        Some("0") => ReadAt::Any,
        Some(rv) => ReadAt::NotOlderThan(parse_rv(rv)?),
    })
}

/// The read plan of a list, by the semantics table; `prefix` checks a continue token belongs
/// to this collection.
pub fn list_read(params: &Params, prefix: &str) -> ApiResult<ReadAt> {
    let rv = params.value("resourceVersion");
    let rvm = params.value("resourceVersionMatch");
    let limit = params.uint("limit")?.filter(|l| *l > 0);
    params.uint("timeoutSeconds")?;
    let cont = params.value("continue");
    let mut causes = Vec::new();
    if params.get("sendInitialEvents").is_some() {
        causes.push(Cause::new("FieldValueForbidden", "sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list"));
    }
    if let Some(m) = rvm {
        if m != "Exact" && m != "NotOlderThan" {
            causes.push(Cause::new(
                "FieldValueNotSupported",
                "resourceVersionMatch",
                format!("Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\", \"\""),
            ));
        } else if rv.is_none() {
            causes.push(Cause::new("FieldValueForbidden", "resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"));
        } else if cont.is_some() {
            causes.push(Cause::new("FieldValueForbidden", "resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden when continue is provided"));
        } else if m == "Exact" && rv == Some("0") {
            causes.push(Cause::new("FieldValueForbidden", "resourceVersionMatch", "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
        }
    }
    if !causes.is_empty() {
        return Err(invalid_options("ListOptions", causes));
    }
    if let Some(token) = cont {
        if rv.is_some_and(|v| v != "0") {
            return Err(ApiError::bad_request("specifying resource version is not allowed when using continue"));
        }
        let (rev, after) = decode_continue(token, prefix)?;
        return Ok(ReadAt::Continue { rev, after });
    }
    Ok(match (rvm, rv) {
        (_, None) => ReadAt::MostRecent,
        (_, Some("0")) => ReadAt::Any,
        (Some("Exact"), Some(v)) => ReadAt::Exact(parse_rv(v)?),
        (Some(_), Some(v)) => ReadAt::NotOlderThan(parse_rv(v)?),
        (None, Some(v)) if limit.is_some() => ReadAt::Exact(parse_rv(v)?),
        (None, Some(v)) => ReadAt::NotOlderThan(parse_rv(v)?),
    })
}

#[derive(Serialize, Deserialize)]
struct ContinueToken {
    v: String,
    /// -1: the latest revision (an inconsistent continuation), as Kubernetes encodes it.
    rv: i64,
    start: String,
}

/// A continue token for the page after `last_key`, read at `rev` (`None`: the latest): unpadded
/// base64 of a small JSON document holding the revision and the position relative to the
/// collection prefix, as Kubernetes encodes it.
pub fn encode_continue(rev: Option<u64>, prefix: &str, last_key: &str) -> String {
    let start = last_key.strip_prefix(prefix).unwrap_or(last_key);
    let rv = rev.map_or(-1, |r| i64::try_from(r).unwrap_or(i64::MAX));
    let token = ContinueToken { v: "meta.k8s.io/v1".into(), rv, start: start.to_string() };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// Reads a continue token as Kubernetes does, refusing what it never issues (padding, an empty
/// start key, a start key that is not a clean path) in its words.
fn decode_continue(token: &str, prefix: &str) -> ApiResult<(Option<u64>, String)> {
    let bad = |why: String| ApiError::bad_request(format!("invalid continue token: continue key is not valid{why}"));
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(at, _) | base64::DecodeError::InvalidLastSymbol(at, _) => at,
            base64::DecodeError::InvalidLength(len) => len,
            base64::DecodeError::InvalidPadding => token.find('=').unwrap_or(token.len()),
        };
        bad(format!(": illegal base64 data at input byte {at}"))
    })?;
    let t: ContinueToken = serde_json::from_slice(&raw).map_err(|e| bad(format!(": {e}")))?;
    if t.v != "meta.k8s.io/v1" {
        return Err(bad(format!(": server does not recognize this encoded version {}", t.v)));
    }
    if t.rv == 0 {
        return Err(bad(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)".into()));
    }
    if t.start.is_empty() {
        return Err(bad(": encoded start key empty (version meta.k8s.io/v1)".into()));
    }
    let key = if t.start.starts_with('/') { t.start.clone() } else { format!("/{}", t.start) };
    if !is_clean_path(&key) {
        return Err(bad(format!(": {}", t.start)));
    }
    let rev = (t.rv > 0).then_some(t.rv as u64);
    Ok((rev, format!("{prefix}{}", &key[1..])))
}

/// Whether Go's `path.Clean` leaves an absolute path as it is: no empty, `.` or `..` segment and
/// no trailing slash.
fn is_clean_path(path: &str) -> bool {
    path == "/" || path[1..].split('/').all(|segment| !segment.is_empty() && segment != "." && segment != "..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(q: &str) -> Params {
        Params::parse(Some(q)).unwrap()
    }

    #[test]
    fn list_semantics_table() {
        let pre = "/registry/configmaps/";
        assert_eq!(list_read(&p(""), pre).unwrap(), ReadAt::MostRecent);
        assert_eq!(list_read(&p("resourceVersion=0"), pre).unwrap(), ReadAt::Any);
        assert_eq!(list_read(&p("resourceVersion=5"), pre).unwrap(), ReadAt::NotOlderThan(5));
        assert_eq!(list_read(&p("limit=2"), pre).unwrap(), ReadAt::MostRecent);
        assert_eq!(list_read(&p("limit=2&resourceVersion=0"), pre).unwrap(), ReadAt::Any);
        assert_eq!(list_read(&p("limit=2&resourceVersion=5"), pre).unwrap(), ReadAt::Exact(5));
        assert_eq!(list_read(&p("resourceVersionMatch=Exact&resourceVersion=5"), pre).unwrap(), ReadAt::Exact(5));
        assert_eq!(
            list_read(&p("resourceVersionMatch=NotOlderThan&resourceVersion=5&limit=3"), pre).unwrap(),
            ReadAt::NotOlderThan(5)
        );
        assert_eq!(list_read(&p("resourceVersionMatch=NotOlderThan&resourceVersion=0"), pre).unwrap(), ReadAt::Any);
        for bad in ["resourceVersionMatch=Exact", "resourceVersionMatch=NotOlderThan", "resourceVersionMatch=Exact&resourceVersion=0", "resourceVersionMatch=Bogus&resourceVersion=1"] {
            assert_eq!(list_read(&p(bad), pre).unwrap_err().code(), 422, "{bad}");
        }
        let token = encode_continue(Some(7), pre, "/registry/configmaps/ns/b");
        let q = format!("limit=1&continue={token}");
        assert_eq!(
            list_read(&p(&q), pre).unwrap(),
            ReadAt::Continue { rev: Some(7), after: "/registry/configmaps/ns/b".into() }
        );
        let q = format!("limit=1&continue={token}&resourceVersion=0");
        assert!(matches!(list_read(&p(&q), pre).unwrap(), ReadAt::Continue { .. }));
        let q = format!("limit=1&continue={token}&resourceVersion=3");
        assert_eq!(list_read(&p(&q), pre).unwrap_err().code(), 400);
        assert_eq!(list_read(&p("continue=garbage"), pre).unwrap_err().code(), 400);
        assert_eq!(list_read(&p("resourceVersion=abc"), pre).unwrap_err().code(), 422);
    }

    #[test]
    fn get_semantics() {
        assert_eq!(get_read(&p("")).unwrap(), ReadAt::MostRecent);
        assert_eq!(get_read(&p("resourceVersion=0")).unwrap(), ReadAt::Any);
        assert_eq!(get_read(&p("resourceVersion=9")).unwrap(), ReadAt::NotOlderThan(9));
    }
}
