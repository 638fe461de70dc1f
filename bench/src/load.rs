//! Load-generation building blocks shared by the drivers: the request schedule (warm-up, then a
//! measured window), the latency recorder, the echo call encoder and response check, and the
//! JSON reports the drivers print.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::echo::{ECHO_TOOL, LATEST_SESSION_VERSION, STATELESS_VERSION};
use crate::stats::quantile_sorted;

/// An error of a driver run, as a message (drivers report it and exit non-zero).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<E: std::error::Error> From<E> for Error {
    fn from(e: E) -> Self {
        Error(e.to_string())
    }
}

/// Builds an [`Error`] from a format string.
#[macro_export]
macro_rules! fail {
    ($($arg:tt)*) => { $crate::load::Error(format!($($arg)*)) };
}

/// Result of a driver step.
pub type Result<T> = std::result::Result<T, Error>;

/// Which wire the driver speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Protocol {
    /// 2025-11-25: `initialize` handshake, then session traffic.
    #[serde(rename = "2025-11-25")]
    Session,
    /// 2026-07-28: every request carries its version and capabilities in `_meta`.
    #[serde(rename = "2026-07-28")]
    Stateless,
}

impl Protocol {
    /// The protocol revision string.
    pub fn version(self) -> &'static str {
        match self {
            Protocol::Session => LATEST_SESSION_VERSION,
            Protocol::Stateless => STATELESS_VERSION,
        }
    }
}

impl FromStr for Protocol {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "2025-11-25" | "session" | "stateful" => Ok(Protocol::Session),
            "2026-07-28" | "stateless" => Ok(Protocol::Stateless),
            other => Err(fail!(
                "unknown protocol {other:?} (2025-11-25 or 2026-07-28)"
            )),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.version())
    }
}

/// When the measured window ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this long.
    After(Duration),
    /// After this many measured calls were sent.
    Calls(u64),
}

/// Decides whether another request goes out: everything sent before the measured window opens is
/// warm-up; the window closes per [`Stop`]. Shared by all senders of a run.
#[derive(Debug)]
pub struct Schedule {
    measure_start: Instant,
    stop: Stop,
    measured: AtomicU64,
}

impl Schedule {
    /// A schedule whose measured window opens `warmup` from now.
    pub fn new(warmup: Duration, stop: Stop) -> Self {
        Self {
            measure_start: Instant::now() + warmup,
            stop,
            measured: AtomicU64::new(0),
        }
    }

    /// When the measured window opens.
    pub fn measure_start(&self) -> Instant {
        self.measure_start
    }

    /// The send time of the next request, or `None` when no more requests should go out.
    pub fn next(&self) -> Option<Instant> {
        let now = Instant::now();
        if now < self.measure_start {
            return Some(now);
        }
        match self.stop {
            Stop::After(window) => (now < self.measure_start + window).then_some(now),
            Stop::Calls(calls) => {
                (self.measured.fetch_add(1, Ordering::Relaxed) < calls).then_some(now)
            }
        }
    }
}

/// Collects the outcome of the calls sent in the measured window: counts, latencies (up to a
/// bound) and the time of the last completion.
#[derive(Debug, Clone)]
pub struct Recorder {
    measure_start: Instant,
    max_samples: usize,
    samples: Vec<u64>,
    calls: u64,
    errors: u64,
    last_done: Option<Instant>,
}

/// Latency samples kept per run by default; later calls are still counted.
pub const DEFAULT_MAX_SAMPLES: usize = 4_000_000;

impl Recorder {
    /// A recorder for calls sent at or after `measure_start`, keeping at most `max_samples`
    /// latencies.
    pub fn new(measure_start: Instant, max_samples: usize) -> Self {
        Self {
            measure_start,
            max_samples,
            samples: Vec::new(),
            calls: 0,
            errors: 0,
            last_done: None,
        }
    }

    /// Records one call sent at `sent` and answered at `done`; `ok` says whether the answer was
    /// the expected one. Calls sent during warm-up are ignored.
    pub fn record(&mut self, sent: Instant, done: Instant, ok: bool) {
        if sent < self.measure_start {
            return;
        }
        if ok {
            self.calls += 1;
            if self.samples.len() < self.max_samples {
                let nanos = done.saturating_duration_since(sent).as_nanos();
                self.samples.push(u64::try_from(nanos).unwrap_or(u64::MAX));
            }
        } else {
            self.errors += 1;
        }
        self.last_done = Some(self.last_done.map_or(done, |last| last.max(done)));
    }

    /// Records a failed call (no answer at all) that was sent at `sent`.
    pub fn record_failure(&mut self, sent: Instant) {
        if sent >= self.measure_start {
            self.errors += 1;
        }
    }

    /// Adds another sender's records to this one.
    pub fn merge(&mut self, other: Recorder) {
        let room = self.max_samples.saturating_sub(self.samples.len());
        self.samples.extend(other.samples.into_iter().take(room));
        self.calls += other.calls;
        self.errors += other.errors;
        self.last_done = match (self.last_done, other.last_done) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// The throughput and latency figures.
    pub fn summary(mut self) -> Summary {
        self.samples.sort_unstable();
        let secs = self.last_done.map_or(0.0, |done| {
            done.saturating_duration_since(self.measure_start)
                .as_secs_f64()
        });
        let micros = |q| quantile_sorted(&self.samples, q).map_or(0.0, |ns| ns as f64 / 1000.0);
        Summary {
            calls: self.calls,
            errors: self.errors,
            secs,
            calls_per_s: if secs > 0.0 {
                self.calls as f64 / secs
            } else {
                0.0
            },
            p50_us: micros(0.5),
            p99_us: micros(0.99),
        }
    }
}

/// Throughput and latency of a run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Calls answered as expected in the measured window.
    pub calls: u64,
    /// Calls answered with an error, a wrong result or not at all.
    pub errors: u64,
    /// Length of the measured window, from its start to the last answer.
    pub secs: f64,
    /// `calls / secs`.
    pub calls_per_s: f64,
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub p99_us: f64,
}

/// Encodes the `tools/call` requests of the echo workload and checks their answers.
///
/// ```
/// use mcp_bench::load::{EchoCall, Protocol};
///
/// let call = EchoCall::new(Protocol::Session, 10);
/// let mut line = Vec::new();
/// call.encode(42, &mut line);
/// let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
/// assert_eq!(value["id"], 42);
/// assert_eq!(value["params"]["arguments"]["text"], call.text());
///
/// let answer = format!(
///     r#"{{"jsonrpc":"2.0","id":42,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
///     call.text()
/// );
/// let reply = call.check(answer.as_bytes()).unwrap();
/// assert_eq!(reply, mcp_bench::load::Reply::Response { id: Some(42), ok: true });
/// ```
#[derive(Debug, Clone)]
pub struct EchoCall {
    prefix: Vec<u8>,
    suffix: Vec<u8>,
    text: String,
    protocol: Protocol,
}

/// What a line or body from the server was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// A response; `id` when it was an unsigned integer, `ok` when it carried the expected
    /// echo result.
    Response {
        /// The response id.
        id: Option<u64>,
        /// Whether the result is the expected echo.
        ok: bool,
    },
    /// A notification or request from the server (not an answer).
    Message,
}

#[derive(Deserialize)]
struct WireReply<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    result: Option<WireCallResult<'a>>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct WireCallResult<'a> {
    #[serde(borrow, default)]
    content: Vec<WireContent<'a>>,
    #[serde(default, rename = "isError")]
    is_error: bool,
}

#[derive(Deserialize)]
struct WireContent<'a> {
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// `_meta` a stateless driver request carries.
pub fn stateless_meta() -> serde_json::Value {
    serde_json::json!({
        crate::echo::META_PROTOCOL_VERSION: STATELESS_VERSION,
        crate::echo::META_CLIENT_CAPABILITIES: {},
        crate::echo::META_CLIENT_INFO: { "name": "mcp-bench-driver", "version": "0.1.0" },
    })
}

impl EchoCall {
    /// The workload for `protocol` with a text of `text_len` ASCII letters and digits.
    pub fn new(protocol: Protocol, text_len: usize) -> Self {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let text: String = ALPHABET
            .iter()
            .cycle()
            .take(text_len)
            .map(|&b| char::from(b))
            .collect();
        let mut params = serde_json::json!({ "name": ECHO_TOOL, "arguments": { "text": text } });
        if protocol == Protocol::Stateless {
            params["_meta"] = stateless_meta();
        }
        let mut suffix = b",\"method\":\"tools/call\",\"params\":".to_vec();
        suffix.extend_from_slice(params.to_string().as_bytes());
        suffix.push(b'}');
        Self {
            prefix: b"{\"jsonrpc\":\"2.0\",\"id\":".to_vec(),
            suffix,
            text,
            protocol,
        }
    }

    /// The protocol the requests are for.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// The text each call sends and expects back.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Appends the request with this `id` (no trailing newline).
    pub fn encode(&self, id: u64, out: &mut Vec<u8>) {
        use std::io::Write;
        out.extend_from_slice(&self.prefix);
        // Writing into a Vec cannot fail.
        let _ = write!(out, "{id}");
        out.extend_from_slice(&self.suffix);
    }

    /// Classifies one message from the server and checks an answer against the expected echo.
    pub fn check(&self, message: &[u8]) -> Result<Reply> {
        let reply: WireReply<'_> = serde_json::from_slice(message)?;
        if reply.method.is_some() {
            return Ok(Reply::Message);
        }
        let id = reply.id.and_then(|id| id.get().parse::<u64>().ok());
        let ok = reply.error.is_none()
            && reply.result.is_some_and(|result| {
                !result.is_error
                    && result.content.len() == 1
                    && result.content.first().and_then(|c| c.text.as_deref())
                        == Some(self.text.as_str())
            });
        Ok(Reply::Response { id, ok })
    }
}

/// What a driver prints: one JSON object per run, on one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case")]
pub enum Report {
    /// Calls per second and latency.
    Throughput(ThroughputReport),
    /// Resident memory per idle session.
    Sessions(SessionsReport),
    /// Spawn to `initialize` answer.
    ColdStart(ColdStartReport),
}

/// A throughput run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputReport {
    /// `stdio` or `http`.
    pub transport: String,
    /// The wire revision.
    pub protocol: Protocol,
    /// Requests kept in flight.
    pub inflight: usize,
    /// The figures.
    #[serde(flatten)]
    pub summary: Summary,
    /// Resident memory of the server at the end (kB), when the driver started it.
    pub server_rss_kb: Option<u64>,
    /// Peak resident memory of the server (kB), when the driver started it.
    pub server_peak_rss_kb: Option<u64>,
}

impl ThroughputReport {
    /// The report of a run over `transport` (`stdio` or `http`), with the memory of the
    /// server at its end when the driver started it.
    pub fn new(
        transport: &str,
        protocol: Protocol,
        inflight: usize,
        summary: Summary,
        memory: Option<crate::procfs::Memory>,
    ) -> Self {
        Self {
            transport: transport.into(),
            protocol,
            inflight,
            summary,
            server_rss_kb: memory.map(|m| m.rss_kb),
            server_peak_rss_kb: memory.map(|m| m.peak_kb),
        }
    }
}

/// A sessions run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionsReport {
    /// The wire revision (stateless runs open no sessions: they send the requests a fresh client
    /// would).
    pub protocol: Protocol,
    /// Sessions (or fresh stateless clients) opened.
    pub sessions: u64,
    /// How many answers carried an `Mcp-Session-Id`.
    pub session_ids: u64,
    /// Server RSS before opening them (kB).
    pub rss_before_kb: u64,
    /// Server RSS with all of them open and idle (kB).
    pub rss_after_kb: u64,
    /// `(after - before) / sessions`, in bytes (may be slightly negative from noise).
    pub bytes_per_session: f64,
}

/// A cold-start run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdStartReport {
    /// Median of the samples, milliseconds.
    pub median_ms: f64,
    /// Fastest sample, milliseconds.
    pub min_ms: f64,
    /// Number of samples.
    pub samples: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_ignores_warmup_and_merges() {
        let start = Instant::now();
        let measure = start + Duration::from_millis(10);
        let mut a = Recorder::new(measure, 10);
        a.record(start, start + Duration::from_millis(20), true); // sent during warm-up
        a.record(measure, measure + Duration::from_micros(5), true);
        a.record(measure, measure + Duration::from_micros(7), false);
        let mut b = Recorder::new(measure, 10);
        b.record(measure, measure + Duration::from_micros(9), true);
        b.record_failure(measure);
        a.merge(b);
        let summary = a.summary();
        assert_eq!(summary.calls, 2);
        assert_eq!(summary.errors, 2);
        assert_eq!(summary.p50_us, 5.0);
        assert_eq!(summary.p99_us, 9.0);
        assert!((summary.secs - 9e-6).abs() < 1e-9);
    }

    #[test]
    fn recorder_bounds_samples() {
        let now = Instant::now();
        let mut recorder = Recorder::new(now, 3);
        for _ in 0..10 {
            recorder.record(now, now, true);
        }
        assert_eq!(recorder.samples.len(), 3);
        assert_eq!(recorder.summary().calls, 10);
    }

    #[test]
    fn schedule_counts_calls() {
        let schedule = Schedule::new(Duration::ZERO, Stop::Calls(3));
        assert_eq!((0..10).filter_map(|_| schedule.next()).count(), 3);
        let schedule = Schedule::new(Duration::ZERO, Stop::After(Duration::ZERO));
        assert!(schedule.next().is_none());
    }

    #[test]
    fn check_rejects_wrong_answers() {
        let call = EchoCall::new(Protocol::Stateless, 4);
        assert_eq!(call.text(), "abcd");
        let mut line = Vec::new();
        call.encode(1, &mut line);
        let value: serde_json::Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            value["params"]["_meta"][crate::echo::META_PROTOCOL_VERSION],
            STATELESS_VERSION
        );
        for (answer, expected) in [
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"abcd"}],"isError":false}}"#,
                Reply::Response {
                    id: Some(1),
                    ok: true,
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"abce"}]}}"#,
                Reply::Response {
                    id: Some(1),
                    ok: false,
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"abcd"}],"isError":true}}"#,
                Reply::Response {
                    id: Some(1),
                    ok: false,
                },
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}}"#,
                Reply::Response {
                    id: None,
                    ok: false,
                },
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
                Reply::Message,
            ),
        ] {
            assert_eq!(call.check(answer.as_bytes()).unwrap(), expected, "{answer}");
        }
        assert!(call.check(b"{").is_err());
    }

    #[test]
    fn reports_round_trip() {
        let report = Report::ColdStart(ColdStartReport {
            median_ms: 1.5,
            min_ms: 1.0,
            samples: 20,
        });
        let line = serde_json::to_string(&report).unwrap();
        assert!(line.starts_with(r#"{"mode":"cold-start""#));
        assert_eq!(serde_json::from_str::<Report>(&line).unwrap(), report);
    }
}
