//! Response bodies: a full body or a Server-Sent Events stream, plus SSE encoding (with
//! mcp-jsonrpc's SSE codec).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, Response, StatusCode};
use hyper::body::{Body, Frame, SizeHint};
use mcp_jsonrpc::codec::{SseFields, encode_sse_comment};
use mcp_jsonrpc::{ErrorObject, Id, Message};
use tokio::sync::mpsc;

/// The body of every response of the service: empty, a complete JSON document, or an SSE
/// stream that ends when the transport is done with it.
pub struct HttpBody {
    kind: Kind,
}

enum Kind {
    Full(Option<Bytes>),
    Sse(SseBody),
}

impl fmt::Debug for HttpBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            Kind::Full(b) => f
                .debug_struct("HttpBody")
                .field("len", &b.as_ref().map_or(0, Bytes::len))
                .finish(),
            Kind::Sse(_) => f.debug_struct("HttpBody").field("sse", &true).finish(),
        }
    }
}

impl HttpBody {
    /// An empty body.
    pub fn empty() -> Self {
        HttpBody {
            kind: Kind::Full(None),
        }
    }

    /// A complete body.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        HttpBody {
            kind: Kind::Full((!bytes.is_empty()).then_some(bytes)),
        }
    }

    pub(crate) fn sse(stream: SseBody) -> Self {
        HttpBody {
            kind: Kind::Sse(stream),
        }
    }
}

impl Body for HttpBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.get_mut().kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Sse(sse) => sse.poll_next(cx).map(|o| o.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.kind, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Kind::Sse(_) => SizeHint::default(),
        }
    }
}

/// Something dropped with the body (to notice a client going away).
pub(crate) type DropGuard = Box<dyn Send + Sync + 'static>;

/// An SSE stream: events already known, then the live channel, with keep-alive comments.
pub(crate) struct SseBody {
    first: VecDeque<Bytes>,
    rx: Option<mpsc::Receiver<Bytes>>,
    keep_alive: Option<tokio::time::Interval>,
    _guard: Option<DropGuard>,
}

impl SseBody {
    pub(crate) fn new(
        first: Vec<Bytes>,
        rx: Option<mpsc::Receiver<Bytes>>,
        keep_alive: Option<Duration>,
        guard: Option<DropGuard>,
    ) -> Self {
        let keep_alive = keep_alive.filter(|d| !d.is_zero()).map(|period| {
            let mut interval =
                tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            interval
        });
        SseBody {
            first: first.into(),
            rx,
            keep_alive,
            _guard: guard,
        }
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Some(b) = self.first.pop_front() {
            return Poll::Ready(Some(b));
        }
        let Some(rx) = &mut self.rx else {
            return Poll::Ready(None);
        };
        match rx.poll_recv(cx) {
            Poll::Ready(Some(b)) => return Poll::Ready(Some(b)),
            Poll::Ready(None) => {
                self.rx = None;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        if let Some(ka) = &mut self.keep_alive {
            if ka.poll_tick(cx).is_ready() {
                let mut comment = BytesMut::with_capacity(16);
                encode_sse_comment("keep-alive", &mut comment);
                return Poll::Ready(Some(comment.freeze()));
            }
        }
        Poll::Pending
    }
}

/// The codec's fields for an event's `id`, `event` and `retry` lines.
fn fields<'a>(
    id: Option<&'a str>,
    event: Option<&'a str>,
    retry: Option<Duration>,
) -> SseFields<'a> {
    SseFields {
        event,
        id,
        retry: retry.map(|r| u64::try_from(r.as_millis()).unwrap_or(u64::MAX)),
    }
}

/// Encodes one SSE event into one buffer, allocated once: each event is one body frame, so
/// hyper writes it in one go. Data that is not UTF-8 (which the transport never produces) is
/// made so, as an `text/event-stream` must be.
pub(crate) fn encode_event(
    id: Option<&str>,
    event: Option<&str>,
    data: &[u8],
    retry: Option<Duration>,
) -> Bytes {
    let mut out = BytesMut::new();
    fields(id, event, retry).encode(&String::from_utf8_lossy(data), &mut out);
    out.freeze()
}

/// Encodes a message as one SSE event, serialising it straight into the event's buffer (one
/// allocation). Returns the event and the message's compact JSON, a view into the same
/// buffer (for the event store).
pub(crate) fn encode_message_event(
    id: Option<&str>,
    event: Option<&str>,
    message: &Message,
) -> (Bytes, Bytes) {
    let fields = fields(id, event, None);
    let mut out = BytesMut::with_capacity(fields.head_len() + 8 + message.encoded_len());
    match fields.encode_json(message, &mut out) {
        Ok(Some(json)) => {
            let event = out.freeze();
            let data = event.slice(json);
            (event, data)
        }
        // Line breaks inside raw values (pretty-printed params) were split over lines.
        Ok(None) => (out.freeze(), message_bytes(message)),
        Err(e) => {
            // Raw values are already valid JSON, so this only happens for a broken Serialize impl.
            tracing::error!(error = %e, "could not encode an outbound message");
            (encode_event(id, event, b"", None), Bytes::new())
        }
    }
}

/// The compact JSON of a message, in one allocation: the buffer is sized exactly (but for
/// escapes and errors), so the `Bytes` it becomes takes it over without a second allocation.
pub(crate) fn message_bytes(message: &Message) -> Bytes {
    let mut buf = BytesMut::with_capacity(message.encoded_len());
    if let Err(e) = message.encode_into(&mut buf) {
        // Raw values are already valid JSON, so this only happens for a broken Serialize impl.
        tracing::error!(error = %e, "could not encode an outbound message");
    }
    buf.freeze()
}

pub(crate) fn empty(status: StatusCode) -> Response<HttpBody> {
    let mut r = Response::new(HttpBody::empty());
    *r.status_mut() = status;
    r
}

pub(crate) fn json(status: StatusCode, body: Bytes) -> Response<HttpBody> {
    let mut r = Response::new(HttpBody::full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub(crate) fn sse(body: SseBody) -> Response<HttpBody> {
    let mut r = Response::new(HttpBody::sse(body));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// An HTTP error whose body is a JSON-RPC error response (with `id: null` unless known).
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<Id>,
    error: ErrorObject,
) -> Response<HttpBody> {
    let message = Message::Response(mcp_jsonrpc::Response::error(id, error));
    json(status, message_bytes(&message))
}

/// A plain HTTP error with a JSON-RPC error body carrying `code` and `message`.
pub(crate) fn http_error(
    status: StatusCode,
    code: i64,
    message: impl Into<String>,
) -> Response<HttpBody> {
    rpc_error(status, None, ErrorObject::new(code, message))
}

/// The answer to a batch in a revision without batches (from 2025-06-18 on, stateless
/// revisions included): 400 with `-32600` and a null id.
pub(crate) fn batch_refused() -> Response<HttpBody> {
    http_error(
        StatusCode::BAD_REQUEST,
        mcp_jsonrpc::codes::INVALID_REQUEST,
        "Invalid request: batches are not allowed in this protocol revision",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_jsonrpc::codec::{SseCodec, SseEvent};
    use tokio_util::codec::Encoder;

    /// The event as mcp-jsonrpc's SSE codec writes it.
    fn codec_event(
        id: Option<&str>,
        event: Option<&str>,
        data: &[u8],
        retry: Option<u64>,
    ) -> Vec<u8> {
        let mut e = SseEvent::new(String::from_utf8_lossy(data).into_owned());
        e.id = id.map(str::to_owned);
        e.event = event.map(str::to_owned);
        e.retry = retry;
        let mut out = BytesMut::new();
        SseCodec::new().encode(&e, &mut out).unwrap();
        out.to_vec()
    }

    #[test]
    fn events_match_the_sse_codec_in_one_allocation() {
        let datas: [&[u8]; 9] = [
            b"",
            b"{}",
            b"a\nb",
            b"a\r\nb",
            b"a\rb",
            b"\n",
            b"\r\n\r\n",
            b"x\r\r\ny\n",
            b"caf\xc3\xa9 \xff",
        ];
        for data in datas {
            for (id, event, retry) in [
                (None, None, None),
                (Some("3-4"), None, Some(1500)),
                (Some("1\n2"), Some("message"), None),
            ] {
                let ours = encode_event(id, event, data, retry.map(Duration::from_millis));
                assert_eq!(
                    ours.to_vec(),
                    codec_event(id, event, data, retry),
                    "{data:?} {id:?} {event:?}"
                );
            }
        }
    }

    #[test]
    fn message_events_carry_the_compact_json_once() {
        let params = serde_json::value::RawValue::from_string("{\"a\": [1,\n 2]}".into()).unwrap();
        let messages = [
            Message::Response(mcp_jsonrpc::Response::success(
                Id::Number(7),
                serde_json::value::RawValue::from_string("{\"x\":\"y\"}".into()).unwrap(),
            )),
            Message::Response(mcp_jsonrpc::Response::error(
                Some(Id::String("q\"1".into())),
                ErrorObject::new(-32000, "bad \"thing\""),
            )),
            Message::Request(mcp_jsonrpc::Request {
                id: Id::Number(1),
                method: "tools/call".into(),
                params: Some(params),
            }),
        ];
        for m in &messages {
            let json = message_bytes(m);
            for (id, event) in [(None, None), (Some("0-9"), Some("message"))] {
                let (bytes, data) = encode_message_event(id, event, m);
                assert_eq!(data, json);
                assert_eq!(bytes.to_vec(), codec_event(id, event, &json, None));
            }
            if !matches!(m, Message::Response(r) if r.result.is_err()) {
                assert_eq!(json.len(), m.encoded_len(), "{json:?}");
            }
        }
    }

    #[test]
    fn encodes_events() {
        let e = encode_event(
            Some("1-2"),
            None,
            b"{\"a\":\r\n1}",
            Some(Duration::from_millis(500)),
        );
        assert_eq!(&e[..], b"id: 1-2\nretry: 500\ndata: {\"a\":\ndata: 1}\n\n");
        let e = encode_event(None, Some("endpoint"), b"/messages?sessionId=x", None);
        assert_eq!(&e[..], b"event: endpoint\ndata: /messages?sessionId=x\n\n");
        let e = encode_event(Some("0-0"), None, b"", None);
        assert_eq!(&e[..], b"id: 0-0\ndata: \n\n");
    }
}
