//! The loopback client's watch, as client-go's `Watch` is: a GET with `watch=true` through the
//! router, whose body of newline-separated JSON events is read as it arrives and decoded into
//! k8s-openapi's `WatchEvent` of the kind. The stream ends when the server ends the watch (its
//! timeout); an `ERROR` event (a resource version too old, say) comes out as the error its
//! `Status` names, and the stream ends after it.

use axum::body::BodyDataStream;
use futures::stream::{self, Stream, StreamExt};
use http::Method;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::WatchEvent;
use serde::de::DeserializeOwned;

use access::request::ResourceRequest;
use machinery::error::{ApiError, ApiResult};

use super::{path, Client, JSON};

/// What is left of a watch's body: the frames not read yet, and a partial line.
struct Body {
    frames: BodyDataStream,
    pending: Vec<u8>,
    done: bool,
}

impl Client {
    /// The objects of `req`'s collection (in its namespace, or in all), read consistently, as
    /// ADDED events, then every change to them.
    pub async fn watch<K: DeserializeOwned>(&self, req: &ResourceRequest) -> ApiResult<impl Stream<Item = ApiResult<WatchEvent<K>>> + Send + use<K>> {
        let uri = format!("{}?watch=true", path(req, false));
        let response = self.respond(Method::GET, &uri, None, JSON).await?;
        let body = Body { frames: response.into_body().into_data_stream(), pending: Vec::new(), done: false };
        Ok(stream::unfold(body, |mut body| async move {
            let event = body.next().await?;
            body.done = event.is_err();
            Some((event, body))
        }))
    }
}

impl Body {
    /// The next event, once its line is complete; `None` at the end of the body.
    async fn next<K: DeserializeOwned>(&mut self) -> Option<ApiResult<WatchEvent<K>>> {
        if self.done {
            return None;
        }
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(decode(&line));
            }
            match self.frames.next().await {
                Some(Ok(frame)) => self.pending.extend_from_slice(&frame),
                Some(Err(e)) => return Some(Err(ApiError::internal(e))),
                None if self.pending.iter().all(u8::is_ascii_whitespace) => return None,
                None => return Some(Err(ApiError::internal("a watch ended in the middle of an event"))),
            }
        }
    }
}

/// One line of the body as an event; an `ERROR` event as the error its `Status` names.
fn decode<K: DeserializeOwned>(line: &[u8]) -> ApiResult<WatchEvent<K>> {
    match serde_json::from_slice(line).map_err(ApiError::internal)? {
        WatchEvent::ErrorStatus(status) => {
            let status = serde_json::to_value(&status).map_err(ApiError::internal)?;
            let code = status["code"].as_u64().and_then(|c| u16::try_from(c).ok()).unwrap_or(500);
            Err(ApiError::from_status(code, &status))
        }
        WatchEvent::ErrorOther(other) => Err(ApiError::internal(format!("a watch failed: {}", other.0))),
        event => Ok(event),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn an_error_event_is_the_error_its_status_names() {
        let gone = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        match decode::<Value>(gone) {
            Err(ApiError::Passed { code: 410, reason, message }) => assert_eq!((reason.as_str(), message.as_str()), ("Expired", "too old resource version: 1 (5)")),
            other => panic!("{other:?}"),
        }
        let added = br#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#;
        assert!(matches!(decode::<Value>(added), Ok(WatchEvent::Added(v)) if v["metadata"]["name"] == "a"));
    }
}
