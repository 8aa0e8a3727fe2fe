//! A response body that holds something (a count of open or long-running requests) until the
//! body is done with: streamed to its end, or dropped with its connection.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

/// `body`, holding `held` as long as it lives.
pub fn holding<G: Send + Unpin + 'static>(body: Body, held: G) -> Body {
    Body::new(Holding { body, _held: held })
}

struct Holding<G> {
    body: Body,
    _held: G,
}

impl<G: Unpin> HttpBody for Holding<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
