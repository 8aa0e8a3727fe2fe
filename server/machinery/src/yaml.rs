//! YAML request bodies. Aliases let a small document stand for a large one, so the decoded
//! form is held to the limit of a request body ([`MAX_REQUEST_BYTES`], kube-apiserver's 3 MiB)
//! and answered past it as an oversized body is: 413.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// The largest request body, as bytes read or as the JSON a YAML body decodes to.
pub const MAX_REQUEST_BYTES: usize = 3 * 1024 * 1024;

/// The value of YAML `body`; a document that does not parse is `refused` with the parser's
/// error, one that decodes to more than a request may hold is 413.
pub fn decode(body: &[u8], refused: impl FnOnce(serde_yaml::Error) -> ApiError) -> ApiResult<Value> {
    let value: Value = serde_yaml::from_slice(body).map_err(refused)?;
    if body.len() * 2 > MAX_REQUEST_BYTES || may_alias(body) {
        let size = serde_json::to_vec(&value).map(|v| v.len()).unwrap_or(usize::MAX);
        if size > MAX_REQUEST_BYTES {
            return Err(ApiError::TooLarge(format!("Request entity too large: limit is {MAX_REQUEST_BYTES}")));
        }
    }
    Ok(value)
}

/// Whether the document may hold an alias (`*name`), the only way it can decode to more than
/// about its own size.
fn may_alias(body: &[u8]) -> bool {
    body.contains(&b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_that_decode_past_the_limit_are_413() {
        let big = format!("a: &a \"{}\"\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n", "x".repeat(400_000));
        let err = decode(big.as_bytes(), |e| ApiError::bad_request(e.to_string())).unwrap_err();
        assert!(matches!(err, ApiError::TooLarge(ref m) if m == "Request entity too large: limit is 3145728"), "{err:?}");
        let small = "a: &a \"x\"\nb: [*a, *a]\n";
        assert_eq!(decode(small.as_bytes(), |e| ApiError::bad_request(e.to_string())).unwrap()["b"][1], "x");
    }
}
