//! ES512 (ECDSA on P-521 with SHA-512), which the JWT library does not verify: keys read from
//! JSON Web Keys, signatures (`r || s`, 66 bytes each) checked with the `p521` crate.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p521::ecdsa::signature::Verifier;
use p521::ecdsa::{Signature, VerifyingKey};
use serde_json::Value;

/// The bytes of one P-521 coordinate.
const COORDINATE: usize = 66;

pub struct Es512Key(VerifyingKey);

/// The key of a JWK with `kty: EC`, `crv: P-521`.
pub fn from_jwk(jwk: &Value) -> Option<Es512Key> {
    if jwk["kty"] != "EC" || jwk["crv"] != "P-521" {
        return None;
    }
    let coordinate = |name: &str| URL_SAFE_NO_PAD.decode(jwk[name].as_str()?).ok().filter(|b| b.len() == COORDINATE);
    let (x, y) = (coordinate("x")?, coordinate("y")?);
    let point = [&[0x04][..], &x, &y].concat();
    VerifyingKey::from_sec1_bytes(&point).ok().map(Es512Key)
}

/// Whether `signature` (base64url) signs `input` (`header.payload`) with `key`.
pub fn verify(input: &str, signature: &str, key: &Es512Key) -> bool {
    let Ok(bytes) = URL_SAFE_NO_PAD.decode(signature) else { return false };
    let Ok(sig) = Signature::from_slice(&bytes) else { return false };
    key.0.verify(input.as_bytes(), &sig).is_ok()
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use p521::ecdsa::signature::Signer;
    use p521::ecdsa::SigningKey;
    use serde_json::json;

    /// A new P-521 key: its JWK and a signer of `header.payload` strings.
    pub fn key(kid: &str) -> (Value, impl Fn(&str) -> String) {
        // A random scalar below 2^521 (the group order is just under it).
        let mut secret: [u8; COORDINATE] = rand::random();
        secret[0] &= 0x01;
        let signing = SigningKey::from_slice(&secret).unwrap();
        let point = VerifyingKey::from(&signing).to_encoded_point(false);
        let jwk = json!({"kty": "EC", "crv": "P-521", "kid": kid,
            "x": URL_SAFE_NO_PAD.encode(point.x().unwrap()), "y": URL_SAFE_NO_PAD.encode(point.y().unwrap())});
        let sign = move |input: &str| {
            let sig: Signature = signing.sign(input.as_bytes());
            URL_SAFE_NO_PAD.encode(sig.to_bytes())
        };
        (jwk, sign)
    }

    #[test]
    fn signatures_verify_with_their_key_only() {
        let (jwk, sign) = key("a");
        let (other, _) = key("b");
        let key = from_jwk(&jwk).unwrap();
        let sig = sign("h.p");
        assert!(verify("h.p", &sig, &key));
        assert!(!verify("h.q", &sig, &key));
        assert!(!verify("h.p", &sig, &from_jwk(&other).unwrap()));
        assert!(!verify("h.p", "!!", &key));
        assert!(from_jwk(&json!({"kty": "EC", "crv": "P-256", "x": "", "y": ""})).is_none());
    }
}
