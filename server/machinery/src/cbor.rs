//! CBOR bodies, behind the `CBORServingAndStorage` feature gate (off by default, as in
//! Kubernetes 1.34): `application/cbor` requests and responses, each item prefixed with the
//! self-described CBOR tag (55799) as Kubernetes writes it, watches as `application/cbor-seq`
//! (one `WatchEvent` item after another), and server-side apply as
//! `application/apply-patch+cbor`. Stored objects stay JSON.

use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};

pub const MEDIA_TYPE: &str = "application/cbor";
pub const STREAM_MEDIA_TYPE: &str = "application/cbor-seq";
pub const APPLY_MEDIA_TYPE: &str = "application/apply-patch+cbor";

/// The self-described CBOR tag, as the first bytes of each item.
const SELF_DESCRIBED: [u8; 3] = [0xd9, 0xd9, 0xf7];

/// Whether CBOR is served.
pub fn enabled() -> bool {
    crate::features::enabled("CBORServingAndStorage")
}

/// `v` as one tagged CBOR item.
pub fn encode(v: &Value) -> ApiResult<Vec<u8>> {
    let mut out = SELF_DESCRIBED.to_vec();
    ciborium::into_writer(v, &mut out).map_err(ApiError::internal)?;
    Ok(out)
}

/// A request body: one CBOR item (tagged or not) holding a map.
pub fn decode(bytes: &[u8]) -> ApiResult<Value> {
    let body = bytes.strip_prefix(&SELF_DESCRIBED[..]).unwrap_or(bytes);
    let value: Value = ciborium::from_reader(body).map_err(|e| ApiError::bad_request(format!("couldn't decode the request body as CBOR: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be a CBOR map"));
    }
    Ok(value)
}

/// One watch event of a `cbor-seq` stream.
pub fn watch_frame(kind: &str, object: &Value) -> ApiResult<Vec<u8>> {
    encode(&json!({"type": kind, "object": object}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_junk() {
        let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}, "n": 3, "f": 1.5, "b": true, "z": null});
        let bytes = encode(&v).unwrap();
        assert_eq!(&bytes[..3], &SELF_DESCRIBED);
        assert_eq!(decode(&bytes).unwrap(), v);
        assert_eq!(decode(&bytes[3..]).unwrap(), v, "the tag is optional on input");
        assert!(decode(b"\xff\x00").is_err());
        assert!(decode(&encode(&json!([1])).unwrap()).is_err());
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = decode(&bytes);
        }
    }
}
