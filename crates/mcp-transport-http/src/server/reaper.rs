//! What the serving helpers enforce on each connection: the header-read and idle timeouts, and
//! the answer to a connection over the cap.
//!
//! hyper's own HTTP/1.1 `header_read_timeout` starts as soon as a connection is ready for its
//! next request, so it would also cut every idle keep-alive connection at the same limit. Here
//! the two are apart, as in common web servers: a connection with no request in flight is
//! closed after the idle timeout; once the first byte of a request arrives, its headers must be
//! complete within the header-read timeout.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

use super::body::HttpBody;

/// What a connection is doing, shared by its socket, its requests and its watcher.
#[derive(Default)]
pub(crate) struct Activity {
    /// Requests whose answer is not yet fully handed to hyper.
    in_flight: AtomicUsize,
    /// Requests finished so far (a change means the connection was busy meanwhile).
    finished: AtomicU64,
    /// Bytes arrived while no request was in flight: a request's headers are on their way.
    reading_head: AtomicBool,
    /// The connection speaks HTTP/2: bytes between requests are frames, not headers.
    h2: AtomicBool,
    /// The socket has returned bytes before.
    started: AtomicBool,
    changed: Notify,
}

/// Why a connection was closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expired {
    /// A request's headers did not arrive in time.
    Header,
    /// No request for too long.
    Idle,
}

impl Expired {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Expired::Header => "the request headers did not arrive in time",
            Expired::Idle => "idle for too long",
        }
    }
}

/// The HTTP/2 connection preface.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

impl Activity {
    /// A request has arrived (its headers are read).
    pub(crate) fn begin(self: &Arc<Self>, version: http::Version) -> RequestGuard {
        if version == http::Version::HTTP_2 {
            self.h2.store(true, Ordering::Relaxed);
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.reading_head.store(false, Ordering::Release);
        RequestGuard(Arc::clone(self))
    }

    /// The socket returned `data`.
    fn received(&self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if !self.started.load(Ordering::Relaxed) && !self.started.swap(true, Ordering::Relaxed) {
            let n = data.len().min(H2_PREFACE.len());
            if data[..n] == H2_PREFACE[..n] {
                self.h2.store(true, Ordering::Relaxed);
            }
        }
        if self.in_flight.load(Ordering::Acquire) == 0
            && !self.h2.load(Ordering::Relaxed)
            && !self.reading_head.load(Ordering::Acquire)
            && !self.reading_head.swap(true, Ordering::AcqRel)
        {
            self.changed.notify_one();
        }
    }

    /// Completes when the connection should be closed: idle past `idle`, or a request's
    /// headers incomplete past `header` after their first byte. Never, when both are `None`.
    pub(crate) async fn expired(
        &self,
        header: Option<Duration>,
        idle: Option<Duration>,
    ) -> Expired {
        let mut idle_since = Instant::now();
        let mut head_since: Option<Instant> = None;
        let mut seen = self.finished.load(Ordering::Acquire);
        loop {
            let finished = self.finished.load(Ordering::Acquire);
            if finished != seen {
                seen = finished;
                idle_since = Instant::now();
                head_since = None;
            }
            if self.in_flight.load(Ordering::Acquire) > 0 {
                head_since = None;
                self.changed.notified().await;
                continue;
            }
            if self.reading_head.load(Ordering::Acquire) {
                head_since.get_or_insert_with(Instant::now);
            }
            let deadline = match (head_since, header, idle) {
                (Some(since), Some(limit), _) => Some((since + limit, Expired::Header)),
                (_, _, Some(limit)) => Some((idle_since + limit, Expired::Idle)),
                _ => None,
            };
            let Some((at, why)) = deadline else {
                self.changed.notified().await;
                continue;
            };
            tokio::select! {
                () = self.changed.notified() => {}
                () = tokio::time::sleep_until(at) => {
                    if self.in_flight.load(Ordering::Acquire) == 0
                        && self.finished.load(Ordering::Acquire) == seen
                    {
                        return why;
                    }
                }
            }
        }
    }
}

/// Held while a request is in flight: from its headers until hyper has taken the last of its
/// answer (the guard travels in the response body).
pub(crate) struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::AcqRel);
        if self.0.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.changed.notify_one();
        }
    }
}

/// A response body that holds its request's [`RequestGuard`] until it is dropped.
pub(crate) struct GuardedBody {
    body: HttpBody,
    _guard: RequestGuard,
}

impl GuardedBody {
    pub(crate) fn new(body: HttpBody, guard: RequestGuard) -> Self {
        GuardedBody {
            body,
            _guard: guard,
        }
    }
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A socket that reports to its connection's [`Activity`] what it reads.
pub(crate) struct WatchedIo<T> {
    io: T,
    activity: Arc<Activity>,
}

impl<T> WatchedIo<T> {
    pub(crate) fn new(io: T, activity: Arc<Activity>) -> Self {
        WatchedIo { io, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WatchedIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            this.activity.received(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WatchedIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// What a connection over the cap is sent before it is closed.
pub(crate) const REFUSAL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: text/plain\r\n\
content-length: 35\r\n\
retry-after: 1\r\n\
connection: close\r\n\
\r\n\
too many connections; retry later.\n";

/// How often, at most, refusing connections is logged.
pub(crate) const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_declares_its_length() {
        let text = std::str::from_utf8(REFUSAL).unwrap();
        let (_, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(text.contains(&format!("content-length: {}\r\n", body.len())));
    }

    #[tokio::test(start_paused = true)]
    async fn idle_and_header_deadlines() {
        let activity = Arc::new(Activity::default());
        let header = Some(Duration::from_secs(1));
        let idle = Some(Duration::from_secs(5));
        // Idle from the start.
        let started = Instant::now();
        assert_eq!(activity.expired(header, idle).await, Expired::Idle);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        // The first byte of a request switches to the header deadline.
        let started = Instant::now();
        activity.received(b"GET / HT");
        assert_eq!(activity.expired(header, idle).await, Expired::Header);
        assert_eq!(started.elapsed(), Duration::from_secs(1));
        // A request in flight holds the connection open; its end restarts the idle clock.
        let guard = activity.begin(http::Version::HTTP_11);
        let watcher = {
            let activity = Arc::clone(&activity);
            tokio::spawn(async move { activity.expired(header, idle).await })
        };
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!watcher.is_finished());
        let ended = Instant::now();
        drop(guard);
        assert_eq!(watcher.await.unwrap(), Expired::Idle);
        assert_eq!(ended.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn http2_frames_between_requests_are_not_headers() {
        let activity = Arc::new(Activity::default());
        activity.received(H2_PREFACE);
        activity.received(b"\0\0\0\x06\0\0\0\0\0");
        let started = Instant::now();
        let why = activity
            .expired(Some(Duration::from_secs(1)), Some(Duration::from_secs(5)))
            .await;
        assert_eq!(why, Expired::Idle);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }
}
