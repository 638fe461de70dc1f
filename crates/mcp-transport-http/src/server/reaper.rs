//! What the serving helpers enforce on each connection: the header-read and idle timeouts, and
//! the answer to a connection over the cap.
//!
//! hyper's own HTTP/1.1 `header_read_timeout` starts as soon as a connection is ready for its
//! next request, so it would also cut every idle keep-alive connection at the same limit. Here
//! the two are apart, as in common web servers: a connection with no request in flight is
//! closed after the idle timeout; once the first byte of a request arrives, its headers must be
//! complete within the header-read timeout.
//!
//! A request only writes down when its headers began and when it ended; it wakes nobody and
//! arms no timer. The connection's watcher looks at those instants at least once per shorter
//! limit and sleeps until the earliest deadline they give. A deadline that starts after a look
//! is at least one shorter limit away, so the next look comes in time, and each look finds the
//! exact deadline. Waking the watcher and re-arming its timer twice per request cost about 5%
//! of the server's CPU time per request (the echo benchmark, 32 in flight on one worker).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use super::body::HttpBody;

/// What a connection is doing, shared by its socket, its requests and its watcher.
pub(crate) struct Activity {
    /// The instants below are nanoseconds after this one.
    origin: Instant,
    /// Requests whose answer is not yet fully handed to hyper.
    in_flight: AtomicUsize,
    /// When the last request ended (0: none has, the connection is idle since `origin`).
    ended_at: AtomicU64,
    /// Bytes arrived while no request was in flight: a request's headers are on their way.
    reading_head: AtomicBool,
    /// When the first of those bytes arrived.
    head_at: AtomicU64,
    /// The connection speaks HTTP/2: bytes between requests are frames, not headers.
    h2: AtomicBool,
    /// The socket has returned bytes before.
    started: AtomicBool,
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
    /// A connection accepted now.
    pub(crate) fn new() -> Self {
        Activity {
            origin: Instant::now(),
            in_flight: AtomicUsize::new(0),
            ended_at: AtomicU64::new(0),
            reading_head: AtomicBool::new(false),
            head_at: AtomicU64::new(0),
            h2: AtomicBool::new(false),
            started: AtomicBool::new(false),
        }
    }

    /// Now, as an offset from `origin`.
    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The instant an offset from `origin` stands for.
    fn instant(&self, at: &AtomicU64) -> Instant {
        self.origin + Duration::from_nanos(at.load(Ordering::Acquire))
    }

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
        {
            self.head_at.store(self.now(), Ordering::Release);
            self.reading_head.store(true, Ordering::Release);
        }
    }

    /// Completes when the connection should be closed: idle past `idle`, or a request's
    /// headers incomplete past `header` after their first byte. Never, when both are `None`.
    ///
    /// Meant to be polled by the connection's own task, beside the connection: until its
    /// timer fires, a poll looks at nothing (the timer keeps the task's waker from the poll
    /// that armed it), so the connection's wake-ups cost it an atomic load each.
    pub(crate) fn expired(
        self: &Arc<Self>,
        header: Option<Duration>,
        idle: Option<Duration>,
    ) -> Expiry {
        // The longest the watcher sleeps without looking (see the module's documentation).
        let period = header.into_iter().chain(idle).min();
        Expiry {
            activity: Arc::clone(self),
            header,
            idle,
            timer: period.map(|p| (Box::pin(tokio::time::sleep_until(self.origin + p)), p)),
            armed: false,
        }
    }

    /// When the connection should close, as of `now` (`Err`: not before the instant given).
    fn look(
        &self,
        now: Instant,
        header: Option<Duration>,
        idle: Option<Duration>,
    ) -> Result<Expired, Option<Instant>> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return Err(None);
        }
        let head = header
            .filter(|_| self.reading_head.load(Ordering::Acquire))
            .map(|limit| (self.instant(&self.head_at) + limit, Expired::Header));
        match head
            .or_else(|| idle.map(|limit| (self.instant(&self.ended_at) + limit, Expired::Idle)))
        {
            Some((at, why)) if at <= now => Ok(why),
            deadline => Err(deadline.map(|(at, _)| at)),
        }
    }
}

/// The future of [`Activity::expired`].
pub(crate) struct Expiry {
    activity: Arc<Activity>,
    header: Option<Duration>,
    idle: Option<Duration>,
    /// The timer and the longest it is set ahead (the shorter limit); `None`: neither limit
    /// is set.
    timer: Option<(Pin<Box<tokio::time::Sleep>>, Duration)>,
    /// The timer is registered with the waker of an earlier poll.
    armed: bool,
}

impl Future for Expiry {
    type Output = Expired;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Expired> {
        let this = self.get_mut();
        let Some((sleep, period)) = this.timer.as_mut() else {
            return Poll::Pending;
        };
        let period = *period;
        if this.armed && !sleep.is_elapsed() {
            return Poll::Pending;
        }
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                this.armed = true;
                return Poll::Pending;
            }
            let now = Instant::now();
            let next = match this.activity.look(now, this.header, this.idle) {
                Ok(why) => return Poll::Ready(why),
                Err(deadline) => deadline.map_or(now + period, |at| at.min(now + period)),
            };
            sleep.as_mut().reset(next);
        }
    }
}

/// Held while a request is in flight: from its headers until hyper has taken the last of its
/// answer (the guard travels in the response body).
pub(crate) struct RequestGuard(Arc<Activity>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        let activity = &self.0;
        activity
            .ended_at
            .fetch_max(activity.now(), Ordering::AcqRel);
        activity.in_flight.fetch_sub(1, Ordering::AcqRel);
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
        let activity = Arc::new(Activity::new());
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
    async fn deadlines_that_start_between_looks_are_exact() {
        let header = Some(Duration::from_secs(1));
        let idle = Some(Duration::from_secs(5));
        // Headers that begin 0.3 s after the connection: the watcher looks at 1 s and closes
        // at 1.3 s, not at its next look.
        let activity = Arc::new(Activity::new());
        let started = Instant::now();
        let watcher = {
            let activity = Arc::clone(&activity);
            tokio::spawn(async move { activity.expired(header, idle).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        activity.received(b"POST /mcp");
        assert_eq!(watcher.await.unwrap(), Expired::Header);
        assert_eq!(started.elapsed(), Duration::from_millis(1300));
        // A request that ends 2.7 s in: idle from then on, closed 5 s later.
        let activity = Arc::new(Activity::new());
        let guard = activity.begin(http::Version::HTTP_11);
        let watcher = {
            let activity = Arc::clone(&activity);
            tokio::spawn(async move { activity.expired(header, idle).await })
        };
        tokio::time::sleep(Duration::from_millis(2700)).await;
        let ended = Instant::now();
        drop(guard);
        assert_eq!(watcher.await.unwrap(), Expired::Idle);
        assert_eq!(ended.elapsed(), Duration::from_secs(5));
        // Neither limit: never.
        let activity = Arc::new(Activity::new());
        let never = tokio::time::timeout(Duration::from_secs(3600), activity.expired(None, None));
        assert!(never.await.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn http2_frames_between_requests_are_not_headers() {
        let activity = Arc::new(Activity::new());
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
