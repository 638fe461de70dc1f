//! The spans and metrics of what `mcp proxy` forwards (feature `otel`, `docs/telemetry.md`):
//! for every request and notification that crosses the [bridge](crate::bridge), a span of kind
//! `SERVER` for the message the proxy receives and, its child, a span of kind `CLIENT` for the
//! one it sends on, whose context replaces the trace context in the forwarded message's
//! `params._meta`. Both end with the answer (a request) or once the message is passed on (a
//! notification). The same in both directions: what the upstream server asks the client
//! (sampling, elicitation, roots) is received on the proxy's client end and sent on its server
//! end.
//!
//! The spans are named and attributed as the client's and the server's own
//! (`mcp_client::otel`, `mcp_server::otel`), with the scope of the end that makes them: what
//! the proxy receives from a client is `mcp-server`'s, what it sends to the upstream server
//! `mcp-client`'s. Nothing is recorded until [`install`] is called.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Instant;

use mcp_jsonrpc::{Connection, ErrorObject, Extensions, Frame, Id, Message, RawJson, Response};
use mcp_otel::names::{
    MCP_SESSION_ID, NETWORK_PROTOCOL_NAME, NETWORK_PROTOCOL_VERSION, NETWORK_TRANSPORT,
};
use mcp_otel::{Core, Direction, Operation, Outcome, Peek, Side};
use mcp_transport_http::client::HttpClientHandle;
use mcp_types::ProtocolVersion;
use opentelemetry::trace::{Link, SpanBuilder, SpanKind, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use serde::Deserialize;
use serde_json::value::RawValue;

/// The two ends' telemetry: `server` makes the spans of the end facing the MCP client (where
/// the proxy is a server), `client` those of the end facing the upstream server.
struct Cores {
    server: Core,
    client: Core,
}

static INSTALLED: OnceLock<Cores> = OnceLock::new();

/// Turns the spans of forwarded messages on for this process, with spans from `tracers` and
/// metrics from `meters`, the trace context read and written with the global propagator. Once
/// only: `false` when they were already on.
pub fn install<T, M>(tracers: &T, meters: &M) -> bool
where
    T: TracerProvider,
    T::Tracer: Send + Sync + 'static,
    <T::Tracer as Tracer>::Span: Send + Sync + 'static,
    M: opentelemetry::metrics::MeterProvider,
{
    let version = env!("CARGO_PKG_VERSION");
    INSTALLED
        .set(Cores {
            server: Core::new(tracers, meters, Side::Server, version),
            client: Core::new(tracers, meters, Side::Client, version),
        })
        .is_ok()
}

/// What the spans say of one end's connection.
enum End {
    /// stdio (`network.transport` `pipe`); over HTTP as a server, the attributes come with
    /// each message (its request's head).
    Pipe,
    /// The Streamable HTTP client's: `tcp`, `http`, and the session the server gave.
    HttpClient(HttpClientHandle),
}

impl End {
    fn of(connection: &Connection) -> End {
        match connection.extensions().get::<HttpClientHandle>() {
            Some(handle) => End::HttpClient(handle.clone()),
            None => End::Pipe,
        }
    }
}

/// A request in flight through the bridge: the span of its reception and of its sending.
struct Pending {
    received: Operation,
    sent: Operation,
    initialize: bool,
}

/// The spans of one bridge. Requests in flight are remembered up to a bound; beyond it, more
/// are forwarded without spans.
pub(crate) struct Spans {
    cores: &'static Cores,
    /// The connection facing the MCP client.
    client_end: End,
    /// The connection facing the upstream server.
    server_end: End,
    /// The revision the session negotiated (from the answer to `initialize`).
    version: OnceLock<ProtocolVersion>,
    /// By the end the request came from (`true`: the client's) and its id.
    pending: Mutex<HashMap<(bool, Id), Pending>>,
    max: usize,
    /// Whether the client's messages come over HTTP (their requests' heads say so).
    client_over_http: AtomicBool,
}

/// Notifications forwarded in one frame, ended once the frame is passed on.
pub(crate) type Passed = Vec<(Operation, Operation)>;

impl Spans {
    /// The spans of a bridge between `client` and `server`, if telemetry is on.
    pub(crate) fn new(client: &Connection, server: &Connection, max: usize) -> Option<Spans> {
        let cores = INSTALLED.get()?;
        Some(Spans {
            cores,
            client_end: End::of(client),
            server_end: End::of(server),
            version: OnceLock::new(),
            pending: Mutex::new(HashMap::new()),
            max,
            client_over_http: AtomicBool::new(false),
        })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<(bool, Id), Pending>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the spans of the messages of `frame`, which the end `from_client` (or the
    /// server's) sent with `extensions`, and puts the context of each sending span in its
    /// message's `_meta`; ends the spans of the requests its responses answer. The
    /// notifications' spans are pushed on `passed`, to end once the frame is forwarded.
    pub(crate) fn forward(
        &self,
        from_client: bool,
        frame: &mut Frame,
        extensions: &Extensions,
        passed: &mut Passed,
    ) {
        let messages = match frame {
            Frame::Single(message) => std::slice::from_mut(message),
            Frame::Batch(messages) => messages.as_mut_slice(),
        };
        for message in messages {
            match message {
                Message::Request(request) => {
                    let key = (from_client, request.id.clone());
                    if self.pending().len() >= self.max {
                        continue;
                    }
                    let (received, sent) = self.start(
                        from_client,
                        &request.method,
                        Some(&request.id),
                        request.params.as_deref(),
                        extensions,
                    );
                    request.params = sent.inject(request.params.take());
                    let initialize = request.method == "initialize";
                    self.pending().insert(
                        key,
                        Pending {
                            received,
                            sent,
                            initialize,
                        },
                    );
                }
                Message::Notification(notification) => {
                    if notification.method == "notifications/cancelled" {
                        // The request's spans end as cancelled (dropped unended).
                        if let Some(id) = cancelled_id(notification.params.as_deref()) {
                            self.pending().remove(&(from_client, id));
                        }
                    }
                    let (received, sent) = self.start(
                        from_client,
                        &notification.method,
                        None,
                        notification.params.as_deref(),
                        extensions,
                    );
                    notification.params = sent.inject(notification.params.take());
                    passed.push((received, sent));
                }
                Message::Response(Response {
                    id: Some(id),
                    result,
                }) => {
                    // The answer of a request the other end sent.
                    let Some(pending) = self.pending().remove(&(!from_client, id.clone())) else {
                        continue;
                    };
                    if pending.initialize {
                        if let Some(version) =
                            result.as_ref().ok().and_then(|r| negotiated(r.get()))
                        {
                            let _ = self.version.set(version);
                        }
                    }
                    pending.sent.end(outcome(result));
                    pending.received.end(outcome(result));
                }
                Message::Response(_) => {}
            }
        }
    }

    /// The span of a message received on one end, and its child, the span of the same
    /// message sent on the other.
    fn start(
        &self,
        from_client: bool,
        method: &str,
        id: Option<&Id>,
        params: Option<&RawValue>,
        extensions: &Extensions,
    ) -> (Operation, Operation) {
        let start = Instant::now();
        let (receiver, sender, receiving_end, sending_end) = if from_client {
            (
                &self.cores.server,
                &self.cores.client,
                &self.client_end,
                &self.server_end,
            )
        } else {
            (
                &self.cores.client,
                &self.cores.server,
                &self.server_end,
                &self.client_end,
            )
        };
        let peek = Peek::of(params);
        // The session's revision, or the one a stateless request names.
        let version = self
            .version
            .get()
            .copied()
            .or_else(|| requested(params))
            .map(ProtocolVersion::as_str);
        let (attributes, target) = peek.attributes(method, version);
        let name = mcp_otel::span_name(method, target);

        // Received: the parent is the context in `_meta`; an HTTP request's own
        // `traceparent` is a link, as on the server.
        let mut received_attributes = attributes.clone();
        let mut received_span = Vec::new();
        let mut links = Vec::new();
        match (receiving_end, extensions.get::<http::request::Parts>()) {
            (End::HttpClient(handle), _) => {
                tcp(&mut received_attributes, None);
                received_span.extend(session(handle.session_id()));
            }
            (End::Pipe, Some(parts)) => {
                self.client_over_http.store(true, Ordering::Relaxed);
                tcp(&mut received_attributes, Some(parts.version));
                let id = parts
                    .headers
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok());
                received_span.extend(session(id.map(str::to_owned)));
                let linked = receiver.extract(&mcp_otel::HeaderCarrier(&parts.headers));
                let linked = linked.span().span_context().clone();
                if linked.is_valid() {
                    links.push(Link::with_context(linked));
                }
            }
            (End::Pipe, None) => received_attributes.push(KeyValue::new(NETWORK_TRANSPORT, "pipe")),
        }
        received_span.extend(received_attributes.iter().cloned());
        received_span.extend(id.map(mcp_otel::request_id));
        received_span.extend(peek.resource(method));
        let parent = receiver
            .remote_parent(&peek)
            .unwrap_or_else(Context::current);
        let received = receiver.operation(
            Direction::Received,
            start,
            parent,
            SpanBuilder::from_name(name.clone())
                .with_kind(SpanKind::Server)
                .with_attributes(received_span)
                .with_links(links),
            received_attributes,
        );

        // Sent, as a child of the reception.
        let mut sent_attributes = attributes;
        let mut sent_span = Vec::new();
        match sending_end {
            End::HttpClient(handle) => {
                tcp(&mut sent_attributes, None);
                sent_span.extend(session(handle.session_id()));
            }
            // Towards the client: over HTTP when its messages came over HTTP.
            End::Pipe if !from_client && self.client_over_http.load(Ordering::Relaxed) => {
                tcp(&mut sent_attributes, None);
            }
            End::Pipe => sent_attributes.push(KeyValue::new(NETWORK_TRANSPORT, "pipe")),
        }
        sent_span.extend(sent_attributes.iter().cloned());
        sent_span.extend(id.map(mcp_otel::request_id));
        sent_span.extend(peek.resource(method));
        let sent = sender.operation(
            Direction::Sent,
            start,
            received.context(),
            SpanBuilder::from_name(name)
                .with_kind(SpanKind::Client)
                .with_attributes(sent_span),
            sent_attributes,
        );
        (received, sent)
    }
}

/// How the answer to a request ended its spans.
fn outcome(result: &Result<RawJson, ErrorObject>) -> Outcome<'_> {
    match result {
        Ok(raw) => Outcome::Done(Some(raw.get())),
        Err(error) => Outcome::Error(error.code, &error.message),
    }
}

/// `network.transport` `tcp`, `network.protocol.name` `http`, and the HTTP version when
/// known.
fn tcp(attributes: &mut Vec<KeyValue>, version: Option<http::Version>) {
    attributes.push(KeyValue::new(NETWORK_TRANSPORT, "tcp"));
    attributes.push(KeyValue::new(NETWORK_PROTOCOL_NAME, "http"));
    if let Some(version) = version {
        let version = match version {
            http::Version::HTTP_09 => "0.9",
            http::Version::HTTP_10 => "1.0",
            http::Version::HTTP_2 => "2",
            http::Version::HTTP_3 => "3",
            _ => "1.1",
        };
        attributes.push(KeyValue::new(NETWORK_PROTOCOL_VERSION, version));
    }
}

fn session(id: Option<String>) -> Option<KeyValue> {
    id.map(|id| KeyValue::new(MCP_SESSION_ID, id))
}

/// The `requestId` of `notifications/cancelled`.
fn cancelled_id(params: Option<&RawValue>) -> Option<Id> {
    #[derive(Deserialize)]
    struct Cancelled {
        #[serde(rename = "requestId")]
        request_id: Id,
    }
    let params = params?;
    serde_json::from_str::<Cancelled>(params.get())
        .ok()
        .map(|c| c.request_id)
}

/// The revision an `initialize` result names, if this SDK knows it.
fn negotiated(result: &str) -> Option<ProtocolVersion> {
    #[derive(Deserialize)]
    struct Initialized<'a> {
        #[serde(rename = "protocolVersion", borrow)]
        protocol_version: std::borrow::Cow<'a, str>,
    }
    let initialized: Initialized<'_> = serde_json::from_str(result).ok()?;
    initialized.protocol_version.parse().ok()
}

/// The revision a stateless (2026-07-28) message names in its `_meta`.
fn requested(params: Option<&RawValue>) -> Option<ProtocolVersion> {
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(rename = "_meta", borrow)]
        meta: Meta<'a>,
    }
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow)]
        version: std::borrow::Cow<'a, str>,
    }
    let params: Params<'_> = serde_json::from_str(params?.get()).ok()?;
    params.meta.version.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelled_ids_and_negotiated_revisions_are_read() {
        let params = RawValue::from_string(r#"{"requestId":7,"reason":"x"}"#.to_owned()).ok();
        assert_eq!(cancelled_id(params.as_deref()), Some(Id::Number(7)));
        let garbage = RawValue::from_string(r#"{"requestId":[1]}"#.to_owned()).ok();
        assert_eq!(cancelled_id(garbage.as_deref()), None);
        assert_eq!(cancelled_id(None), None);
        assert_eq!(
            negotiated(r#"{"protocolVersion":"2025-11-25","capabilities":{}}"#),
            Some(ProtocolVersion::V2025_11_25)
        );
        assert_eq!(negotiated(r#"{"protocolVersion":"1999-01-01"}"#), None);
        assert_eq!(negotiated("[]"), None);
        let stateless = RawValue::from_string(
            r#"{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#
                .to_owned(),
        )
        .ok();
        assert_eq!(
            requested(stateless.as_deref()),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(requested(params.as_deref()), None);
    }
}
