//! Response bodies that hold something (a count of open or long-running requests) until the
//! body is done with (streamed to its end, or dropped with its connection), or that tell the bytes
//! they carried then.

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

/// `body`, telling `done` the bytes it carried once it is done with.
pub fn counted<F: FnOnce(u64) + Send + Unpin + 'static>(body: Body, done: F) -> Body {
    Body::new(Counted { body, bytes: 0, done: Some(done) })
}

struct Counted<F: FnOnce(u64)> {
    body: Body,
    bytes: u64,
    done: Option<F>,
}

impl<F: FnOnce(u64) + Unpin> HttpBody for Counted<F> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.bytes += data.len() as u64;
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl<F: FnOnce(u64)> Drop for Counted<F> {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            done(self.bytes);
        }
    }
}
