//! A message-level bridge between two [`Connection`]s: what `mcp proxy` runs to expose a stdio
//! server over HTTP, or an HTTP server on stdio.
//!
//! Every request, notification and response is forwarded as it is, ids included: the two ends
//! each talk to exactly one peer, so the id spaces of the two directions never mix. What the
//! bridge adds:
//!
//! * frames the bridge cannot decode are answered on the side they came from (`-32700` or
//!   `-32600`, as JSON-RPC requires) and not forwarded;
//! * frames from the server that belong to a client request (progress for its token, or, while
//!   exactly one client request is in flight, its log messages and server-to-client requests) are
//!   marked as related to that request, so an HTTP transport puts them on that request's stream
//!   instead of the standalone one;
//! * each direction runs on its own, so a peer that is slow to read only holds up the traffic
//!   towards it; every buffer is bounded (the connections' own, a small queue of error answers,
//!   and at most [`BridgeOptions::max_tracked_requests`] requests remembered for relating).
//!
//! The bridge ends when either side closes; dropping the other side's connection closes it too.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use mcp_cli::bridge::{BridgeEnd, bridge};
//!
//! let (client, client_far) = mcp_jsonrpc::memory_pair(16);
//! let (server, server_far) = mcp_jsonrpc::memory_pair(16);
//! drop(client_far); // the client hangs up at once
//! let end = bridge(client, server).await;
//! assert!(matches!(end, BridgeEnd::ClientClosed(_)));
//! # drop(server_far);
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use futures_util::{SinkExt, StreamExt};
use mcp_jsonrpc::{
    Connection, Frame, Id, Inbound, InboundStream, Message, Outbound, OutboundSink, Response,
};
use serde_json::Value;
use tokio::sync::mpsc;

/// Limits of a bridge.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BridgeOptions {
    /// Client requests remembered while they are in flight, to relate the server's frames to
    /// them (default 4096). Beyond it, frames are forwarded unrelated.
    pub max_tracked_requests: usize,
    /// Error answers for undecodable frames queued per side (default 16); more are dropped.
    pub error_queue: usize,
}

impl Default for BridgeOptions {
    fn default() -> Self {
        BridgeOptions {
            max_tracked_requests: 4096,
            error_queue: 16,
        }
    }
}

/// Why a bridge ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BridgeEnd {
    /// The client side closed (with the transport's reason, when it gave one).
    ClientClosed(Option<String>),
    /// The server side closed (with the transport's reason, when it gave one).
    ServerClosed(Option<String>),
}

/// Bridges `client` (the side facing an MCP client) and `server` (the side facing an MCP
/// server) with default [`BridgeOptions`], until either closes.
pub async fn bridge(client: Connection, server: Connection) -> BridgeEnd {
    bridge_with(client, server, BridgeOptions::default()).await
}

/// [`bridge`] with explicit limits.
pub async fn bridge_with(
    client: Connection,
    server: Connection,
    options: BridgeOptions,
) -> BridgeEnd {
    #[cfg(feature = "otel")]
    let spans = crate::proxy_otel::Spans::new(&client, &server, options.max_tracked_requests);
    let (client_in, client_out) = client.into_parts();
    let (server_in, server_out) = server.into_parts();
    let tracker = Mutex::new(Tracker::new(options.max_tracked_requests));
    let (to_client_tx, to_client_rx) = mpsc::channel(options.error_queue.max(1));
    let (to_server_tx, to_server_rx) = mpsc::channel(options.error_queue.max(1));
    let upstream = pump(
        Side::Client,
        client_in,
        server_out,
        to_client_tx,
        to_server_rx,
        &tracker,
        #[cfg(feature = "otel")]
        spans.as_ref(),
    );
    let downstream = pump(
        Side::Server,
        server_in,
        client_out,
        to_server_tx,
        to_client_rx,
        &tracker,
        #[cfg(feature = "otel")]
        spans.as_ref(),
    );
    tokio::pin!(upstream, downstream);
    tokio::select! {
        end = &mut upstream => end,
        end = &mut downstream => end,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Client,
    Server,
}

impl Side {
    fn closed(self, reason: Option<String>) -> BridgeEnd {
        match self {
            Side::Client => BridgeEnd::ClientClosed(reason),
            Side::Server => BridgeEnd::ServerClosed(reason),
        }
    }

    fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// Forwards what side `from` receives into `to` (the other side's sink). Error answers for
/// frames `from` could not decode go to `answer_source` (written by the other pump); the error
/// answers the other pump queued for the peer behind `to` arrive on `answers_for_dest`.
async fn pump(
    from: Side,
    mut inbound: InboundStream,
    mut to: OutboundSink,
    answer_source: mpsc::Sender<Message>,
    mut answers_for_dest: mpsc::Receiver<Message>,
    tracker: &Mutex<Tracker>,
    #[cfg(feature = "otel")] spans: Option<&crate::proxy_otel::Spans>,
) -> BridgeEnd {
    loop {
        // The spans of the notifications forwarded, ended once passed on.
        #[cfg(feature = "otel")]
        let mut passed = crate::proxy_otel::Passed::new();
        let outbound = tokio::select! {
            item = inbound.next() => match item {
                None => return from.closed(None),
                Some(Err(error)) => return from.closed(Some(error.to_string())),
                Some(Ok(incoming)) => match incoming.frame {
                    Ok(inbound) => {
                        let frame = decoded(inbound, &answer_source);
                        let Some(frame) = frame else { continue };
                        #[cfg(feature = "otel")]
                        let mut frame = frame;
                        #[cfg(feature = "otel")]
                        if let Some(spans) = spans {
                            spans.forward(from == Side::Client, &mut frame, &incoming.extensions, &mut passed);
                        }
                        let related = match from {
                            Side::Client => {
                                lock(tracker).client_sent(&frame);
                                None
                            }
                            Side::Server => lock(tracker).relate(&frame),
                        };
                        Outbound { frame, related }
                    }
                    Err(error) => {
                        tracing::debug!(side = ?from, %error, "undecodable frame");
                        if let Some(response) = error.to_response() {
                            queue(&answer_source, Message::Response(response));
                        }
                        continue;
                    }
                },
            },
            Some(answer) = answers_for_dest.recv() => Outbound::new(answer),
        };
        if let Err(error) = to.send(outbound).await {
            return from.other().closed(Some(error.to_string()));
        }
        #[cfg(feature = "otel")]
        for (received, sent) in passed {
            sent.end(mcp_otel::Outcome::Done(None));
            received.end(mcp_otel::Outcome::Done(None));
        }
    }
}

/// The frame to forward: a single message, or the valid elements of a batch (the invalid ones
/// are answered to the source).
fn decoded(inbound: Inbound, answer_source: &mpsc::Sender<Message>) -> Option<Frame> {
    match inbound {
        Inbound::Single(message) => Some(Frame::Single(message)),
        Inbound::Batch(items) => {
            let mut valid = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Ok(message) => valid.push(message),
                    Err(invalid) => {
                        if let Some(response) = invalid.to_response() {
                            queue(answer_source, Message::Response(response));
                        }
                    }
                }
            }
            (!valid.is_empty()).then_some(Frame::Batch(valid))
        }
    }
}

fn queue(tx: &mpsc::Sender<Message>, message: Message) {
    if tx.try_send(message).is_err() {
        tracing::debug!("error answer queue full or closed; answer dropped");
    }
}

fn lock(tracker: &Mutex<Tracker>) -> std::sync::MutexGuard<'_, Tracker> {
    tracker.lock().unwrap_or_else(PoisonError::into_inner)
}

fn messages(frame: &Frame) -> &[Message] {
    match frame {
        Frame::Single(message) => std::slice::from_ref(message),
        Frame::Batch(messages) => messages,
    }
}

/// The client requests in flight, with their progress tokens.
#[derive(Debug)]
struct Tracker {
    max: usize,
    in_flight: HashMap<Id, Option<String>>,
    /// Progress token (as JSON text) to the request that carries it.
    tokens: HashMap<String, Id>,
}

impl Tracker {
    fn new(max: usize) -> Self {
        Tracker {
            max,
            in_flight: HashMap::new(),
            tokens: HashMap::new(),
        }
    }

    /// Notes the client's requests and cancellations.
    fn client_sent(&mut self, frame: &Frame) {
        for message in messages(frame) {
            match message {
                Message::Request(request) => {
                    if self.in_flight.len() >= self.max {
                        continue;
                    }
                    let token = request
                        .params
                        .as_deref()
                        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
                        .and_then(|params| params.pointer("/_meta/progressToken").cloned())
                        .map(|token| token.to_string());
                    if let Some(token) = &token {
                        self.tokens.insert(token.clone(), request.id.clone());
                    }
                    self.in_flight.insert(request.id.clone(), token);
                }
                Message::Notification(note) if note.method == "notifications/cancelled" => {
                    let id = note
                        .params
                        .as_deref()
                        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
                        .and_then(|params| params.get("requestId").cloned())
                        .and_then(|id| serde_json::from_value::<Id>(id).ok());
                    if let Some(id) = id {
                        self.finish(&id);
                    }
                }
                _ => {}
            }
        }
    }

    /// Notes the server's answers and finds the client request the frame belongs to.
    fn relate(&mut self, frame: &Frame) -> Option<Id> {
        let mut related = None;
        for message in messages(frame) {
            match message {
                Message::Response(Response { id: Some(id), .. }) => {
                    self.finish(id);
                    related = related.or_else(|| Some(id.clone()));
                }
                Message::Response(_) => {}
                Message::Notification(note) if note.method == "notifications/progress" => {
                    let token = note
                        .params
                        .as_deref()
                        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
                        .and_then(|params| params.get("progressToken").map(Value::to_string));
                    related = related.or_else(|| token.and_then(|t| self.tokens.get(&t).cloned()));
                }
                Message::Notification(_) | Message::Request(_) => {
                    related = related.or_else(|| self.only_one());
                }
            }
        }
        related
    }

    fn only_one(&self) -> Option<Id> {
        let mut ids = self.in_flight.keys();
        match (ids.next(), ids.next()) {
            (Some(id), None) => Some(id.clone()),
            _ => None,
        }
    }

    fn finish(&mut self, id: &Id) {
        if let Some(Some(token)) = self.in_flight.remove(id) {
            self.tokens.remove(&token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_jsonrpc::{Notification, Request, memory_pair};
    use serde_json::json;

    fn request(id: i64, params: Value) -> Message {
        Message::Request(Request::new(
            id,
            "tools/call",
            Some(mcp_jsonrpc::to_raw(&params).expect("json")),
        ))
    }

    fn note(method: &str, params: Value) -> Message {
        Message::Notification(Notification::new(
            method,
            Some(mcp_jsonrpc::to_raw(&params).expect("json")),
        ))
    }

    async fn recv(input: &mut InboundStream) -> Message {
        let incoming = input.next().await.expect("a frame").expect("no error");
        match incoming.frame.expect("decoded") {
            Inbound::Single(message) => message,
            other => panic!("expected one message, got {other:?}"),
        }
    }

    #[test]
    fn progress_and_lone_requests_are_related() {
        let mut tracker = Tracker::new(8);
        tracker.client_sent(&Frame::Single(request(
            1,
            json!({"name": "slow", "_meta": {"progressToken": "t1"}}),
        )));
        let progress = note(
            "notifications/progress",
            json!({"progressToken": "t1", "progress": 1}),
        );
        assert_eq!(
            tracker.relate(&Frame::Single(progress.clone())),
            Some(Id::Number(1))
        );
        let log = note(
            "notifications/message",
            json!({"level": "info", "data": "x"}),
        );
        assert_eq!(
            tracker.relate(&Frame::Single(log.clone())),
            Some(Id::Number(1)),
            "one request in flight: its log"
        );

        tracker.client_sent(&Frame::Single(request(2, json!({"name": "other"}))));
        assert_eq!(
            tracker.relate(&Frame::Single(log.clone())),
            None,
            "two in flight: ambiguous"
        );
        assert_eq!(
            tracker.relate(&Frame::Single(progress.clone())),
            Some(Id::Number(1)),
            "the token still identifies its request"
        );

        let answer = Message::Response(Response::success(
            Id::Number(1),
            mcp_jsonrpc::to_raw(&json!({})).expect("json"),
        ));
        assert_eq!(tracker.relate(&Frame::Single(answer)), Some(Id::Number(1)));
        assert_eq!(tracker.relate(&Frame::Single(progress)), None, "finished");
        assert_eq!(tracker.relate(&Frame::Single(log)), Some(Id::Number(2)));

        tracker.client_sent(&Frame::Single(note(
            "notifications/cancelled",
            json!({"requestId": 2}),
        )));
        assert!(tracker.in_flight.is_empty());
    }

    #[test]
    fn tracking_is_bounded() {
        let mut tracker = Tracker::new(2);
        for id in 0..10 {
            tracker.client_sent(&Frame::Single(request(
                id,
                json!({"_meta": {"progressToken": id}}),
            )));
        }
        assert_eq!(tracker.in_flight.len(), 2);
        assert_eq!(tracker.tokens.len(), 2);
    }

    #[tokio::test]
    async fn messages_cross_both_ways_and_garbage_is_answered() {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let (read, write) = tokio::io::split(ours);
        let client_end = mcp_transport_stdio::io(read, write);
        let (their_read, mut their_write) = tokio::io::split(theirs);
        let mut client_lines = BufReader::new(their_read).lines();
        let (server_end, server_far) = memory_pair(8);
        let (mut server_in, mut server_out) = server_far.into_parts();
        let bridge = tokio::spawn(bridge(client_end, server_end));

        // An undecodable frame is answered to the side it came from, not forwarded.
        their_write.write_all(b"{not json\n").await.expect("write");
        let line = client_lines
            .next_line()
            .await
            .expect("read")
            .expect("a line");
        let answer: Value = serde_json::from_str(&line).expect("JSON");
        assert_eq!(answer["error"]["code"], -32700, "{line}");
        assert_eq!(answer["id"], Value::Null);

        let call = request(7, json!({"name": "echo"}));
        their_write
            .write_all(format!("{call}\n").as_bytes())
            .await
            .expect("write");
        assert_eq!(
            recv(&mut server_in).await,
            call,
            "the garbage was not forwarded"
        );

        let result = Message::Response(Response::success(
            Id::Number(7),
            mcp_jsonrpc::to_raw(&json!({"content": []})).expect("json"),
        ));
        server_out
            .send(Outbound::from(result.clone()))
            .await
            .expect("send");
        let line = client_lines
            .next_line()
            .await
            .expect("read")
            .expect("a line");
        assert_eq!(
            serde_json::from_str::<Value>(&line).expect("JSON"),
            serde_json::from_str::<Value>(&result.to_string()).expect("JSON")
        );

        their_write.shutdown().await.expect("end of input");
        let end = bridge.await.expect("bridge task");
        assert_eq!(end, BridgeEnd::ClientClosed(None));
        assert!(
            server_in.next().await.is_none(),
            "the server side is closed when the client leaves"
        );
    }
}
