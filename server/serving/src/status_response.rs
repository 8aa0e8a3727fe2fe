//! An [`ApiError`] as the HTTP response Kubernetes gives: its `Status` body as JSON, its code,
//! and `Retry-After` when the error carries one.

use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue};
use machinery::error::ApiError;

/// Turns an error into its response.
pub trait StatusResponse {
    fn into_response(self) -> Response;
}

impl StatusResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.status()).unwrap_or_default();
        let mut resp = (self.code(), body).into_response();
        let headers = resp.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(secs) = self.retry_after() {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}
