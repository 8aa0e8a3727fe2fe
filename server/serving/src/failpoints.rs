//! `/debug/failpoints` (only in builds with the `failpoints` feature): lists the active fault
//! injection points, and sets (`PUT /debug/failpoints/NAME` with the action, e.g. `sleep(200)` or
//! `return`) or clears (`DELETE`) one while the server runs.

use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode};

use machinery::error::ApiError;

use crate::status_response::StatusResponse;

pub fn serve(method: &Method, name: Option<&str>, body: &[u8]) -> Response {
    match (method, name) {
        (&Method::GET, None) => {
            let text: String = fail::list().into_iter().map(|(name, action)| format!("{name}={action}\n")).collect();
            (StatusCode::OK, text).into_response()
        }
        (&Method::PUT, Some(name)) => {
            let action = String::from_utf8_lossy(body);
            match fail::cfg(name, action.trim()) {
                Ok(()) => {
                    tracing::warn!(failpoint = name, action = %action.trim(), "failpoint set");
                    (StatusCode::OK, "ok\n").into_response()
                }
                Err(e) => ApiError::bad_request(format!("failpoint {name}: {e}")).into_response(),
            }
        }
        (&Method::DELETE, Some(name)) => {
            fail::remove(name);
            tracing::warn!(failpoint = name, "failpoint cleared");
            (StatusCode::OK, "ok\n").into_response()
        }
        _ => ApiError::MethodNotAllowed.into_response(),
    }
}
