//! gzip of large responses, as kube-apiserver does it (feature gate `APIResponseCompression`,
//! on by default): a response whose whole body is known and larger than [`THRESHOLD`] is
//! compressed when the request's `Accept-Encoding` allows gzip, and so is a list streamed as it
//! is made ([`Streamed`]), piece by piece. Watches never are.

use std::io::Write;

use axum::body::Body;
use axum::response::Response;
use http::{header, HeaderMap, HeaderValue};
use axum::body::HttpBody as _;

/// kube-apiserver's threshold: 128 KiB.
pub const THRESHOLD: u64 = 128 * 1024;

/// Whether `Accept-Encoding` allows gzip (and does not give it `q=0`).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).any(|item| {
        let mut parts = item.split(';').map(str::trim);
        let coding = parts.next().unwrap_or_default();
        let zero = parts.any(|p| p.replace(' ', "").trim_start_matches("q=").parse::<f32>().is_ok_and(|q| q == 0.0) && p.starts_with('q'));
        (coding.eq_ignore_ascii_case("gzip") || coding == "*") && !zero
    })
}

/// Marks a response whose body is a large list made as it is sent.
#[derive(Clone, Copy)]
pub struct Streamed;

/// `resp` gzipped when it qualifies.
pub async fn maybe_gzip(resp: Response) -> Response {
    if resp.extensions().get::<Streamed>().is_some() && machinery::features::enabled("APIResponseCompression") {
        return gzip_stream(resp);
    }
    let big = resp.body().size_hint().exact().is_some_and(|n| n > THRESHOLD);
    if !big || resp.headers().contains_key(header::CONTENT_ENCODING) || !machinery::features::enabled("APIResponseCompression") {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return Response::from_parts(parts, Body::empty());
    };
    let mut encoder = flate2::write::GzEncoder::new(Vec::with_capacity(bytes.len() / 4), flate2::Compression::fast());
    let compressed = match encoder.write_all(&bytes).and_then(|()| encoder.finish()) {
        Ok(c) => c,
        Err(_) => return Response::from_parts(parts, Body::from(bytes)),
    };
    parts.headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    Response::from_parts(parts, Body::from(compressed))
}

/// `resp` with its body gzipped piece by piece as it is sent.
fn gzip_stream(resp: Response) -> Response {
    use futures::StreamExt;
    let (mut parts, body) = resp.into_parts();
    let encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let pieces = futures::stream::unfold((body.into_data_stream(), Some(encoder)), |(mut body, encoder)| async move {
        let mut encoder = encoder?;
        loop {
            match body.next().await {
                Some(Ok(piece)) => {
                    if encoder.write_all(&piece).is_err() {
                        return None;
                    }
                    let out = std::mem::take(encoder.get_mut());
                    if !out.is_empty() {
                        return Some((Ok::<_, std::io::Error>(bytes::Bytes::from(out)), (body, Some(encoder))));
                    }
                }
                Some(Err(e)) => return Some((Err(std::io::Error::other(e)), (body, None))),
                None => return encoder.finish().ok().map(|rest| (Ok(bytes::Bytes::from(rest)), (body, None))),
            }
        }
    });
    parts.headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    Response::from_parts(parts, Body::from_stream(pieces))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::ACCEPT_ENCODING, v.parse().unwrap());
        m
    }

    #[test]
    fn accept_encoding() {
        assert!(accepts_gzip(&h("gzip")));
        assert!(accepts_gzip(&h("deflate, gzip;q=0.8")));
        assert!(accepts_gzip(&h("*")));
        assert!(!accepts_gzip(&h("gzip;q=0")));
        assert!(!accepts_gzip(&h("br")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }
}
