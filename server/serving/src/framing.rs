//! What Go's HTTP server refuses before kube-apiserver sees an HTTP/1.1 request, refused here
//! alike: a missing, repeated or malformed `Host`, a transfer encoding other than one `chunked`,
//! and an `Expect` other than `100-continue`. The answers are Go's (plain text, the connection
//! closed), not `Status` objects: no API handler ran.

use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode, Version};

/// The refusal of a request whose framing Go would not accept, if it is one.
pub fn refusal(parts: &http::request::Parts) -> Option<Response> {
    if parts.version != Version::HTTP_11 {
        return None;
    }
    let headers = &parts.headers;
    // Looked at without collecting: this runs for every request.
    let mut hosts = headers.get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) => return Some(plain(StatusCode::BAD_REQUEST, "400 Bad Request: missing required Host header")),
        (Some(_), Some(_)) => return Some(plain(StatusCode::BAD_REQUEST, "400 Bad Request: too many Host headers")),
        (Some(host), None) if !valid_host(host.as_bytes()) => return Some(plain(StatusCode::BAD_REQUEST, "400 Bad Request: malformed Host header")),
        (Some(_), None) => {}
    }
    let mut encodings = headers.get_all(header::TRANSFER_ENCODING).iter();
    match (encodings.next(), encodings.next()) {
        (None, _) => {}
        (Some(one), None) if one.as_bytes().eq_ignore_ascii_case(b"chunked") => {}
        _ => return Some(plain(StatusCode::NOT_IMPLEMENTED, "Unsupported transfer encoding")),
    }
    if headers.get(header::EXPECT).is_some_and(|e| !e.as_bytes().eq_ignore_ascii_case(b"100-continue")) {
        return Some(plain(StatusCode::EXPECTATION_FAILED, ""));
    }
    None
}

/// The bytes Go allows in a Host header (`httpguts.ValidHostHeader`).
fn valid_host(host: &[u8]) -> bool {
    host.iter().all(|b| b.is_ascii_alphanumeric() || b"!$%&'()*+,-.:;=[]_~".contains(b))
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut resp = (status, text).into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(headers: &[(&str, &str)]) -> http::request::Parts {
        let mut req = http::Request::builder().uri("/api").version(Version::HTTP_11);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.body(()).unwrap().into_parts().0
    }

    #[test]
    fn what_go_refuses_is_refused() {
        let status = |h: &[(&str, &str)]| refusal(&parts(h)).map(|r| r.status().as_u16());
        assert_eq!(status(&[("host", "a")]), None);
        assert_eq!(status(&[]), Some(400));
        assert_eq!(status(&[("host", "a"), ("host", "b")]), Some(400));
        assert_eq!(status(&[("host", "a b")]), Some(400));
        assert_eq!(status(&[("host", "a"), ("transfer-encoding", "chunked")]), None);
        assert_eq!(status(&[("host", "a"), ("transfer-encoding", "gzip, chunked")]), Some(501));
        assert_eq!(status(&[("host", "a"), ("transfer-encoding", "chunked"), ("transfer-encoding", "chunked")]), Some(501));
        assert_eq!(status(&[("host", "a"), ("expect", "100-continue")]), None);
        assert_eq!(status(&[("host", "a"), ("expect", "something")]), Some(417));
    }
}
