//! Property tests of the Protobuf decoder, which reads untrusted request bodies: arbitrary bytes
//! in any message, and a valid body cut short or with bytes changed, decode or are refused with
//! an error, never a panic; what decodes encodes again.

use proptest::prelude::*;
use proptest::sample::{select, Index};
use serde_json::json;

use super::{decode, decode_body, encode_object, schema};

/// A Protobuf body of a Pod with fields of every kind: strings, maps, lists, a time, a
/// quantity and an int-or-string.
fn pod_body() -> Vec<u8> {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "d", "labels": {"a": "b"}, "creationTimestamp": "2024-01-01T00:00:00Z"},
        "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "500m"}}, "livenessProbe": {"httpGet": {"port": "http", "path": "/"}}}]},
    });
    encode_object(&pod).expect("a Pod encodes")
}

fn message_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = schema::messages().keys().copied().collect();
    names.sort_unstable();
    names
}

proptest! {
    #[test]
    fn arbitrary_bytes_in_any_message_never_panic(name in select(message_names()), bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode::message(name, &bytes);
        let mut body = super::MAGIC.to_vec();
        body.extend(&bytes);
        let _ = decode_body(&body);
    }

    #[test]
    fn damaged_bodies_never_panic(flips in proptest::collection::vec((any::<Index>(), any::<u8>()), 0..6), cut in any::<Index>()) {
        let mut body = pod_body();
        for (at, byte) in flips {
            let i = at.index(body.len());
            body[i] = byte;
        }
        body.truncate(cut.index(body.len() + 1));
        if let Ok(obj) = decode_body(&body) {
            let _ = encode_object(&obj);
        }
    }
}

#[test]
fn the_undamaged_body_decodes() {
    let pod = decode_body(&pod_body()).unwrap();
    assert_eq!(pod["spec"]["containers"][0]["livenessProbe"]["httpGet"]["port"], "http");
    assert_eq!(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"], "500m");
}
