//! The client transport's tasks: one driver that POSTs outbound frames in order, one task per
//! request reading its response (JSON or a resumable SSE stream), the standalone GET stream, and
//! the 2024-11-05 HTTP+SSE fallback.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{HeaderMap, HeaderValue};
use http::{Method, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper::body::Incoming as Body;
use mcp_jsonrpc::codec::{CodecConfig, SseCodec, SseEvent};
use mcp_jsonrpc::{
    ErrorObject, Frame, FrameError, Id, Inbound, Incoming, Message, Outbound,
    Response as RpcResponse, TransportError,
};
use mcp_types::wire;
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use tokio_util::codec::Decoder;
use tokio_util::sync::CancellationToken;

use super::error::HttpError;
use super::headers::{ToolHeaders, encode_header_value};
use super::net::{self, Exchange, Net};
use super::{ClientMode, Config, Transport};

/// Whether a version named in a request's `_meta` makes it a stateless request: anything but a
/// session revision does ([`wire::era_of_version`]).
fn names_stateless(version: &str) -> bool {
    wire::era_of_version(version).is_stateless()
}

pub(crate) type InboundItem = Result<Incoming, TransportError>;

/// State shared by the driver, its tasks and the handle.
pub(crate) struct Shared {
    pub net: Net,
    pub url: Uri,
    pub config: Config,
    pub state: Mutex<State>,
    inbound: Mutex<Option<mpsc::Sender<InboundItem>>>,
    /// Cancelled to stop every task (close, expiry, fatal errors).
    pub cancel: CancellationToken,
    /// Cancelled once the driver has finished its shutdown (DELETE sent).
    pub finished: CancellationToken,
    /// Request ids whose response is being read, to stop reading when the client cancels.
    inflight: Mutex<HashMap<Id, Inflight>>,
    /// What the transport learned from `tools/list` results: each tool's `x-mcp-header`
    /// parameters, mirrored into `Mcp-Param-*` headers of stateless `tools/call` requests.
    tool_headers: Mutex<ToolHeaders>,
    /// Why the transport stopped, when it failed: the sink reports it to later writers.
    cause: Mutex<Option<Cause>>,
}

/// A request whose response is being read.
struct Inflight {
    /// Cancelled to stop reading (and so close the response stream).
    token: CancellationToken,
    /// Whether it was a stateless (2026-07-28) request: closing its stream is the whole
    /// cancellation, no `notifications/cancelled` is POSTed for it.
    stateless: bool,
}

/// Why a transport stopped on its own.
#[derive(Debug, Clone)]
enum Cause {
    Expired(String),
    Failed(String),
}

/// What the transport has learned from the exchange so far.
#[derive(Debug, Default)]
pub(crate) struct State {
    pub session_id: Option<String>,
    pub protocol_version: Option<String>,
    /// The last protocol version named in a request's `_meta` (stateless requests).
    pub meta_version: Option<String>,
    /// The id of the pending `initialize` request.
    init_id: Option<Id>,
    /// The POST endpoint once the 2024-11-05 HTTP+SSE transport is in use.
    pub legacy_endpoint: Option<Uri>,
    standalone_started: bool,
    expired: bool,
}

impl Shared {
    pub fn new(
        net: Net,
        url: Uri,
        config: Config,
        inbound: mpsc::Sender<InboundItem>,
    ) -> Arc<Self> {
        let max_tools = config.max_tools;
        Arc::new(Shared {
            net,
            url,
            config,
            state: Mutex::new(State::default()),
            inbound: Mutex::new(Some(inbound)),
            cancel: CancellationToken::new(),
            finished: CancellationToken::new(),
            inflight: Mutex::new(HashMap::new()),
            tool_headers: Mutex::new(ToolHeaders::new(max_tools)),
            cause: Mutex::new(None),
        })
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn transport(&self) -> Transport {
        if self.state().legacy_endpoint.is_some() {
            Transport::HttpSse
        } else {
            Transport::StreamableHttp
        }
    }

    /// The error for a write after the transport stopped.
    pub fn closed_error(&self) -> HttpError {
        match self.cause.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            Some(Cause::Expired(session_id)) => HttpError::SessionExpired { session_id },
            Some(Cause::Failed(reason)) => HttpError::Protocol(reason),
            None => HttpError::Closed,
        }
    }

    fn set_cause(&self, cause: Cause) {
        self.cause
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(cause);
    }

    fn inflight(&self) -> MutexGuard<'_, HashMap<Id, Inflight>> {
        self.inflight.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn tool_headers(&self) -> MutexGuard<'_, ToolHeaders> {
        self.tool_headers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the connection speaks the stateless era: no `initialize` was answered and the
    /// requests name a stateless revision in their `_meta`.
    fn is_stateless(&self) -> bool {
        let st = self.state();
        st.protocol_version.is_none()
            && st.legacy_endpoint.is_none()
            && st.meta_version.as_deref().is_some_and(names_stateless)
    }

    /// Hands one item to the connection's inbound stream (waiting for room).
    async fn push_item(&self, item: InboundItem) {
        let tx = self
            .inbound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(tx) = tx {
            if tx.send(item).await.is_err() {
                tracing::debug!("inbound stream dropped; discarding a server message");
            }
        }
    }

    /// Hands one decoded message inbound, sniffing the negotiated protocol version from the
    /// `initialize` result first so that the next POST already carries it.
    async fn push_message(&self, msg: Message) {
        if let Message::Response(RpcResponse {
            id: Some(id),
            result: Ok(raw),
            ..
        }) = &msg
        {
            self.tool_headers().learn(id, raw.get());
        }
        if let Message::Response(resp) = &msg {
            let mut st = self.state();
            if resp.id.is_some() && resp.id == st.init_id {
                st.init_id = None;
                if let Ok(raw) = &resp.result {
                    #[derive(Deserialize)]
                    struct InitProbe {
                        #[serde(rename = "protocolVersion")]
                        protocol_version: Option<String>,
                    }
                    match raw.parse::<InitProbe>() {
                        Ok(InitProbe {
                            protocol_version: Some(v),
                        }) if HeaderValue::from_str(&v).is_ok() => {
                            st.protocol_version = Some(v);
                        }
                        _ => tracing::warn!("initialize result has no usable protocolVersion"),
                    }
                }
            }
        }
        self.push_item(Ok(Incoming::from(Frame::Single(msg)))).await;
    }

    /// Fails every pending request locally with an error response, so that callers do not
    /// wait for an answer that cannot come.
    async fn fail(&self, pending: impl IntoIterator<Item = Id>, err: &HttpError) {
        for id in pending {
            let mut obj = ErrorObject::internal_error(err);
            if let HttpError::Status { status, .. } = err {
                obj = obj
                    .with_data(&serde_json::json!({ "httpStatus": status.as_u16() }))
                    .unwrap_or_else(|_| ErrorObject::internal_error(err));
            }
            self.push_item(Ok(Incoming::from(Frame::Single(Message::Response(
                RpcResponse::error(Some(id), obj),
            )))))
            .await;
        }
    }

    /// The server no longer knows our session: surface a distinct error and stop.
    async fn expire(&self, session_id: String) {
        {
            let mut st = self.state();
            if st.expired {
                return;
            }
            st.expired = true;
            st.session_id = None;
        }
        tracing::warn!(%session_id, "the server ended the MCP session");
        self.set_cause(Cause::Expired(session_id.clone()));
        self.push_item(Err(HttpError::SessionExpired { session_id }.into()))
            .await;
        self.cancel.cancel();
    }

    /// A fatal error: surface it on the inbound stream and stop.
    async fn die(&self, err: HttpError) {
        tracing::warn!(error = %err, "HTTP transport failed");
        self.set_cause(Cause::Failed(err.to_string()));
        self.push_item(Err(err.into())).await;
        self.cancel.cancel();
    }

    /// Sends with a deadline on the response head.
    async fn send_timed(&self, ex: Exchange<'_>) -> Result<Response<Body>, HttpError> {
        match tokio::time::timeout(self.config.ack_timeout, self.net.send(ex)).await {
            Ok(r) => r,
            Err(_) => Err(HttpError::Timeout("the server's response headers")),
        }
    }

    /// Headers of a GET or DELETE within the current session.
    fn session_headers(&self) -> (HeaderMap, Option<String>) {
        let st = self.state();
        let mut h = HeaderMap::new();
        let mut sent = None;
        if let Some(sid) = &st.session_id {
            if let Ok(v) = HeaderValue::from_str(sid) {
                h.insert(net::SESSION_ID, v);
                sent = Some(sid.clone());
            }
        }
        if let Some(v) = st
            .protocol_version
            .as_deref()
            .and_then(|v| HeaderValue::from_str(v).ok())
        {
            h.insert(net::PROTOCOL_VERSION, v);
        }
        (h, sent)
    }

    // ------------------------------------------------------------------ driver

    /// Takes outbound frames in order until the connection's sink closes or the transport is
    /// cancelled, then shuts down (DELETE for a live session).
    pub async fn run(self: Arc<Self>, mut rx: mpsc::Receiver<Outbound>) {
        let permits = Arc::new(Semaphore::new(self.config.max_in_flight));
        loop {
            let out = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                out = rx.recv() => match out {
                    Some(out) => out,
                    None => break,
                },
            };
            // Cancellations act before waiting for a permit: the request they cancel may be
            // holding the last one.
            let info = FrameInfo::of(&out.frame);
            let mut stateless_cancel = info.only_cancel;
            for id in &info.cancelled {
                match self.inflight().remove(id) {
                    Some(inflight) => {
                        inflight.token.cancel();
                        stateless_cancel &= inflight.stateless;
                    }
                    None => stateless_cancel &= self.is_stateless(),
                }
            }
            if stateless_cancel && !info.cancelled.is_empty() {
                // 2026-07-28 over HTTP: closing the response stream is the cancellation.
                tracing::debug!("request cancelled by closing its stream");
                continue;
            }
            let permit = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => break,
                p = permits.clone().acquire_owned() => match p {
                    Ok(p) => p,
                    Err(_) => break,
                },
            };
            self.dispatch(out.frame, info, permit).await;
        }
        drop(rx);
        self.shutdown().await;
    }

    async fn shutdown(&self) {
        self.cancel.cancel();
        let (session, legacy) = {
            let mut st = self.state();
            (st.session_id.take(), st.legacy_endpoint.is_some())
        };
        if let (Some(sid), false) = (session, legacy) {
            let mut headers = HeaderMap::new();
            if let Ok(v) = HeaderValue::from_str(&sid) {
                headers.insert(net::SESSION_ID, v);
            }
            if let Some(v) = self
                .state()
                .protocol_version
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                headers.insert(net::PROTOCOL_VERSION, v);
            }
            let ex = Exchange {
                method: Method::DELETE,
                uri: &self.url,
                headers,
                body: None,
            };
            match self.send_timed(ex).await {
                Ok(resp) if resp.status().is_success() => {
                    tracing::debug!("session terminated with DELETE")
                }
                Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    tracing::debug!("the server does not let clients terminate sessions")
                }
                Ok(resp) => {
                    tracing::debug!(status = %resp.status(), "DELETE of the session failed")
                }
                Err(e) => tracing::debug!(error = %e, "DELETE of the session failed"),
            }
        }
        self.inbound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        self.finished.cancel();
    }

    async fn dispatch(
        self: &Arc<Self>,
        frame: Frame,
        info: FrameInfo,
        permit: OwnedSemaphorePermit,
    ) {
        let mut buf = BytesMut::new();
        if let Err(e) = frame.encode_into(&mut buf) {
            let err = HttpError::Protocol(format!("could not encode an outbound message: {e}"));
            self.fail(info.requests.clone(), &err).await;
            return;
        }
        let body = buf.freeze();

        let legacy = self.state().legacy_endpoint.clone();
        if let Some(endpoint) = legacy {
            self.spawn_legacy_post(endpoint, body, info.requests, permit);
            return;
        }

        if let Some(init_id) = info.initialize.clone() {
            {
                let mut st = self.state();
                st.init_id = Some(init_id.clone());
                st.session_id = None;
                st.protocol_version = None;
                // A failed stateless probe (`server/discover`) must not tag `initialize` as a
                // stateless request.
                st.meta_version = None;
                st.standalone_started = false;
            }
            self.send_initialize(init_id, body, info, permit).await;
            return;
        }

        self.tool_headers().expect_lists(&info.tools_lists);
        let (headers, session_sent, stateless) = self.post_headers(&info);
        if info.requests.is_empty() {
            // Notifications and responses are cheap: wait for the 202 so that they reach the
            // server in order (`notifications/initialized` before the next request).
            let ex = Exchange {
                method: Method::POST,
                uri: &self.url,
                headers,
                body: Some(body),
            };
            let result = tokio::select! {
                _ = self.cancel.cancelled() => return,
                r = self.send_timed(ex) => r,
            };
            match result {
                Ok(resp) => {
                    let ok = resp.status().is_success();
                    self.spawn_response(resp, HashSet::new(), session_sent, permit);
                    if ok && info.initialized {
                        self.open_standalone().await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not deliver a notification or response")
                }
            }
            return;
        }

        let token = self.cancel.child_token();
        {
            let mut inflight = self.inflight();
            for id in &info.requests {
                inflight.insert(
                    id.clone(),
                    Inflight {
                        token: token.clone(),
                        stateless,
                    },
                );
            }
        }
        let this = self.clone();
        tokio::spawn(async move {
            let pending: HashSet<Id> = info.requests.iter().cloned().collect();
            let ex = Exchange {
                method: Method::POST,
                uri: &this.url,
                headers,
                body: Some(body),
            };
            tokio::select! {
                _ = token.cancelled() => {}
                _ = async {
                    match this.net.send(ex).await {
                        Ok(resp) => this.handle_response(resp, pending, session_sent).await,
                        Err(e) => this.fail(pending, &e).await,
                    }
                } => {}
            }
            let mut inflight = this.inflight();
            for id in &info.requests {
                inflight.remove(id);
            }
            drop(permit);
        });
    }

    /// Headers for a POST of `info`'s frame: session id and negotiated version for the
    /// session era; version, `Mcp-Method` and `Mcp-Name` for stateless requests.
    fn post_headers(&self, info: &FrameInfo) -> (HeaderMap, Option<String>, bool) {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::ACCEPT,
            HeaderValue::from_static(net::ACCEPT_BOTH),
        );
        let mut st = self.state();
        if let Some(v) = &info.meta_version {
            st.meta_version = Some(v.clone());
        }
        let stateless_version = match (&info.meta_version, &st.protocol_version) {
            (Some(v), _) if names_stateless(v) => Some(v.clone()),
            (None, None) if info.has_method => {
                st.meta_version.clone().filter(|v| names_stateless(v))
            }
            _ => None,
        };
        let mut session_sent = None;
        let stateless = stateless_version.is_some();
        if let Some(version) = stateless_version {
            drop(st);
            if let Ok(v) = HeaderValue::from_str(&version) {
                h.insert(net::PROTOCOL_VERSION, v);
            }
            if let Some(m) = info.method.as_deref().and_then(encode_header_value) {
                h.insert(net::MCP_METHOD, m);
            }
            if let Some(n) = info.name.as_deref().and_then(encode_header_value) {
                h.insert(net::MCP_NAME, n);
            }
            if let (Some("tools/call"), Some(tool)) = (info.method.as_deref(), &info.name) {
                self.tool_headers()
                    .mirror(tool, info.arguments.as_deref(), &mut h);
            }
        } else {
            if let Some(sid) = &st.session_id {
                if let Ok(v) = HeaderValue::from_str(sid) {
                    h.insert(net::SESSION_ID, v);
                    session_sent = Some(sid.clone());
                }
            }
            if let Some(v) = st
                .protocol_version
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                h.insert(net::PROTOCOL_VERSION, v);
            }
        }
        (h, session_sent, stateless)
    }

    /// POSTs `initialize` and waits for the response head: it carries the session id every
    /// later message needs. A 400, 404 or 405 switches to the 2024-11-05 HTTP+SSE transport
    /// when the mode allows it.
    async fn send_initialize(
        self: &Arc<Self>,
        init_id: Id,
        body: Bytes,
        info: FrameInfo,
        permit: OwnedSemaphorePermit,
    ) {
        let (headers, _, _) = self.post_headers(&info);
        let ex = Exchange {
            method: Method::POST,
            uri: &self.url,
            headers,
            body: Some(body.clone()),
        };
        let result = tokio::select! {
            _ = self.cancel.cancelled() => return,
            r = self.net.send(ex) => r,
        };
        let resp = match result {
            Ok(resp) => resp,
            Err(e) => return self.fail(info.requests, &e).await,
        };
        let status = resp.status();
        if self.config.mode == ClientMode::Auto
            && matches!(
                status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            )
        {
            tracing::info!(%status, "initialize POST refused; trying the 2024-11-05 HTTP+SSE transport");
            let first = net::status_error(resp).await;
            match self.start_legacy().await {
                Ok(endpoint) => self.spawn_legacy_post(endpoint, body, info.requests, permit),
                Err(e) => {
                    let err = HttpError::Protocol(format!(
                        "Streamable HTTP failed ({first}) and so did HTTP+SSE ({e})"
                    ));
                    self.fail([init_id], &err).await;
                }
            }
            return;
        }
        if status.is_success() {
            if let Some(value) = resp.headers().get(net::SESSION_ID) {
                match session_id(value) {
                    Some(sid) => self.state().session_id = Some(sid),
                    None => {
                        return self.fail(info.requests, &HttpError::InvalidSessionId).await;
                    }
                }
            }
        }
        let pending = info.requests.into_iter().collect();
        self.spawn_response(resp, pending, None, permit);
    }

    fn spawn_response(
        self: &Arc<Self>,
        resp: Response<Body>,
        pending: HashSet<Id>,
        session_sent: Option<String>,
        permit: OwnedSemaphorePermit,
    ) {
        let this = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = this.cancel.cancelled() => {}
                _ = this.handle_response(resp, pending, session_sent) => {}
            }
            drop(permit);
        });
    }

    /// Reads one POST's response: JSON, an SSE stream, `202`, or an error status.
    async fn handle_response(
        &self,
        resp: Response<Body>,
        mut pending: HashSet<Id>,
        session_sent: Option<String>,
    ) {
        let status = resp.status();
        let media = net::media_type(&resp);
        if status.is_success() {
            if net::is_empty_success(status) || media.is_empty() {
                if !pending.is_empty() {
                    tracing::debug!(
                        %status,
                        "request accepted without a response body; awaiting the answer elsewhere"
                    );
                }
                return;
            }
            if media == net::EVENT_STREAM {
                return self
                    .follow_stream(Some(resp.into_body()), pending, StreamKind::Request, None)
                    .await;
            }
            if media != "application/json" {
                let err = HttpError::Protocol(format!("unexpected content type {media:?}"));
                return self.fail(pending, &err).await;
            }
            match net::read_body(resp.into_body(), self.config.max_body_size).await {
                Ok(bytes) => {
                    self.deliver_json(&bytes, &mut pending, true).await;
                    if !pending.is_empty() {
                        let err =
                            HttpError::Protocol("the JSON response lacks an answer".to_owned());
                        self.fail(pending, &err).await;
                    }
                }
                Err(e) => self.fail(pending, &e).await,
            }
            return;
        }
        if status == StatusCode::NOT_FOUND {
            if let Some(sid) = session_sent {
                return self.expire(sid).await;
            }
        }
        // 2026-07-28 servers answer envelope errors with 400/404 and a JSON-RPC error body:
        // pass those through as ordinary error responses.
        let body = net::read_body(resp.into_body(), self.config.max_body_size)
            .await
            .unwrap_or_default();
        if media == "application/json" && !body.is_empty() {
            let before = pending.len();
            // A 400 refuses the message itself: its JSON-RPC error is the answer. Any other
            // status (401, 403, ...) refuses the exchange, which its status says best.
            let answers = status == StatusCode::BAD_REQUEST;
            self.deliver_json(&body, &mut pending, answers).await;
            if pending.is_empty() && before > 0 {
                return;
            }
        }
        let text: String = String::from_utf8_lossy(&body).chars().take(512).collect();
        let err = HttpError::Status {
            status,
            body: text.trim_end().to_owned(),
        };
        if pending.is_empty() {
            tracing::warn!(error = %err, "the server refused a notification or response");
        } else {
            self.fail(pending, &err).await;
        }
    }

    /// Decodes a JSON body (one message or a batch) and hands its messages inbound; with
    /// `answers`, an id-less error answers the POST's one request (see [`deliver`]).
    ///
    /// [`deliver`]: Self::deliver
    async fn deliver_json(&self, bytes: &[u8], pending: &mut HashSet<Id>, answers: bool) {
        match Inbound::from_slice(bytes, self.config.max_batch_len) {
            Ok(Inbound::Single(m)) => self.deliver(m, pending, answers).await,
            Ok(Inbound::Batch(items)) => {
                for item in items {
                    match item {
                        Ok(m) => self.deliver(m, pending, answers).await,
                        Err(e) => tracing::warn!(error = %e, "invalid message in a JSON batch"),
                    }
                }
            }
            // The requests it should have answered fail, and their callers say so; a body
            // that answers nothing (a notification's refusal) is only worth a warning.
            Err(e) if pending.is_empty() => {
                tracing::warn!(error = %e, "invalid JSON-RPC response body")
            }
            Err(e) => tracing::debug!(error = %e, "invalid JSON-RPC response body"),
        }
    }

    async fn deliver(&self, mut msg: Message, pending: &mut HashSet<Id>, answers: bool) {
        // An error without an id, in answer to a POST that carried one request, answers that
        // request: the server refused the message before it read its id (a server of an
        // older revision refusing a newer envelope, say). The caller gets the error, not a
        // wait for an answer that never comes and a warning about an error nobody asked for.
        if let Message::Response(response @ RpcResponse { id: None, .. }) = &mut msg {
            if answers && response.result.is_err() && pending.len() == 1 {
                response.id = pending.iter().next().cloned();
            }
        }
        if let Message::Response(RpcResponse { id: Some(id), .. }) = &msg {
            pending.remove(id);
        }
        self.push_message(msg).await;
    }

    /// Reads an SSE stream, resuming it with `Last-Event-ID` after the server's `retry` delay
    /// (or the backoff) when it breaks. A request stream ends once every pending response has
    /// arrived; the standalone stream lives until the transport closes, the server says it has
    /// none (`405`), or reconnecting keeps failing. Without a `body` the stream is opened with a
    /// GET at once; `opened` is signalled when that first GET has been answered, whatever the
    /// answer.
    async fn follow_stream(
        &self,
        mut body: Option<Body>,
        mut pending: HashSet<Id>,
        kind: StreamKind,
        mut opened: Option<oneshot::Sender<()>>,
    ) {
        let policy = &self.config.reconnect;
        let mut cursor = Cursor::default();
        let mut attempts: u32 = 0;
        let mut reconnecting = body.is_some();
        let mut signal = move || {
            if let Some(tx) = opened.take() {
                let _ = tx.send(());
            }
        };
        loop {
            if let Some(b) = body.take() {
                let mut reader = SseReader::new(b, self.config.max_event_size);
                let outcome = self
                    .read_events(&mut reader, &mut pending, &mut cursor)
                    .await;
                if kind == StreamKind::Request && pending.is_empty() {
                    return;
                }
                match outcome {
                    Ok(()) => tracing::debug!(?kind, "SSE stream ended"),
                    Err(e) => tracing::debug!(?kind, error = %e, "SSE stream broke"),
                }
            }
            if cursor.progressed {
                attempts = 0;
                cursor.progressed = false;
            }
            if reconnecting {
                if kind == StreamKind::Request && cursor.last_id.is_none() {
                    let err =
                        HttpError::Protocol("the SSE stream ended before the response".to_owned());
                    return self.fail(pending, &err).await;
                }
                attempts += 1;
                if attempts > policy.max_attempts {
                    let err = HttpError::Protocol(format!(
                        "gave up resuming the SSE stream after {} attempts",
                        policy.max_attempts
                    ));
                    tracing::warn!(?kind, error = %err);
                    return self.fail(pending, &err).await;
                }
                let delay = cursor.retry.unwrap_or_else(|| policy.backoff(attempts));
                tokio::time::sleep(delay).await;
            }
            reconnecting = true;

            let (mut headers, session_sent) = self.session_headers();
            headers.extend(net::accept_event_stream());
            if let Some(v) = cursor
                .last_id
                .as_deref()
                .and_then(|v| HeaderValue::from_str(v).ok())
            {
                headers.insert(net::LAST_EVENT_ID, v);
            }
            let ex = Exchange {
                method: Method::GET,
                uri: &self.url,
                headers,
                body: None,
            };
            let answer = self.send_timed(ex).await;
            signal();
            match answer {
                Ok(resp)
                    if resp.status().is_success()
                        && net::media_type(&resp) == net::EVENT_STREAM =>
                {
                    body = Some(resp.into_body());
                }
                Ok(resp) if resp.status() == StatusCode::NOT_FOUND && session_sent.is_some() => {
                    if let Some(sid) = session_sent {
                        return self.expire(sid).await;
                    }
                }
                Ok(resp) if resp.status() == StatusCode::METHOD_NOT_ALLOWED => {
                    if kind == StreamKind::Standalone {
                        tracing::debug!("the server offers no standalone SSE stream");
                        return;
                    }
                    let err = HttpError::Protocol(
                        "the SSE stream broke and the server does not allow resuming it".into(),
                    );
                    return self.fail(pending, &err).await;
                }
                Ok(resp) => {
                    let err = net::status_error(resp).await;
                    tracing::debug!(?kind, error = %err, "opening the SSE stream failed");
                }
                Err(e) => tracing::debug!(?kind, error = %e, "opening the SSE stream failed"),
            }
        }
    }

    /// Hands a stream's messages inbound until it ends or, for a request stream, until every
    /// pending response has arrived.
    async fn read_events(
        &self,
        reader: &mut SseReader,
        pending: &mut HashSet<Id>,
        cursor: &mut Cursor,
    ) -> Result<(), HttpError> {
        let wait_for_all = !pending.is_empty();
        while let Some(ev) = reader.next().await? {
            cursor.progressed = true;
            if let Some(id) = &ev.id {
                cursor.last_id = (!id.is_empty()).then(|| id.clone());
            }
            if let Some(ms) = ev.retry {
                cursor.retry = Some(Duration::from_millis(ms));
            }
            let Some(data) = ev
                .data
                .as_deref()
                .filter(|d| ev.is_message() && !d.trim().is_empty())
            else {
                continue;
            };
            match Inbound::from_slice(data.as_bytes(), self.config.max_batch_len) {
                Ok(Inbound::Single(m)) => self.deliver(m, pending, false).await,
                Ok(Inbound::Batch(items)) => {
                    for item in items {
                        match item {
                            Ok(m) => self.deliver(m, pending, false).await,
                            Err(e) => {
                                self.push_item(Ok(Incoming::from(Err(
                                    mcp_jsonrpc::FrameError::Invalid(e),
                                ))))
                                .await
                            }
                        }
                    }
                }
                // The engine answers malformed requests and logs the rest.
                Err(e) => self.push_item(Ok(Incoming::from(Err(e)))).await,
            }
            if wait_for_all && pending.is_empty() {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Opens the standalone GET stream (unless disabled, already open, or on HTTP+SSE) and
    /// waits, at most [`standalone_open_timeout`](super::StreamableHttpClientBuilder::standalone_open_timeout),
    /// for the server to answer the GET: a server may send requests unrelated to any POST on
    /// it as soon as the session is initialized, and those are lost while the stream is not
    /// open. The driver sends nothing else meanwhile.
    async fn open_standalone(self: &Arc<Self>) {
        if !self.config.standalone_stream {
            return;
        }
        {
            let mut st = self.state();
            if st.standalone_started || st.legacy_endpoint.is_some() {
                return;
            }
            st.standalone_started = true;
        }
        let (opened_tx, opened_rx) = oneshot::channel();
        let this = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = this.cancel.cancelled() => {}
                _ = this.follow_stream(None, HashSet::new(), StreamKind::Standalone, Some(opened_tx)) => {}
            }
        });
        tokio::select! {
            _ = self.cancel.cancelled() => {}
            r = tokio::time::timeout(self.config.standalone_open_timeout, opened_rx) => {
                if r.is_err() {
                    tracing::debug!("the standalone SSE stream is slow to open; sending on");
                }
            }
        }
    }

    // ------------------------------------------------------------------ 2024-11-05 HTTP+SSE

    /// Opens the HTTP+SSE stream (GET on the server URL), waits for the `endpoint` event and
    /// starts the task that reads the stream. Returns the endpoint for POSTs.
    pub async fn start_legacy(self: &Arc<Self>) -> Result<Uri, HttpError> {
        let ex = Exchange {
            method: Method::GET,
            uri: &self.url,
            headers: net::accept_event_stream(),
            body: None,
        };
        let resp = self.send_timed(ex).await?;
        if !resp.status().is_success() {
            return Err(net::status_error(resp).await);
        }
        let media = net::media_type(&resp);
        if media != net::EVENT_STREAM {
            return Err(HttpError::Protocol(format!(
                "expected an SSE stream, got content type {media:?}"
            )));
        }
        let mut reader = SseReader::new(resp.into_body(), self.config.max_event_size);
        let first = tokio::time::timeout(self.config.ack_timeout, async {
            loop {
                match reader.next().await? {
                    Some(ev) if ev.event.as_deref() == Some("endpoint") => {
                        return Ok(ev.data.unwrap_or_default());
                    }
                    Some(_) => continue,
                    None => {
                        return Err(HttpError::Protocol(
                            "the SSE stream ended before the endpoint event".into(),
                        ));
                    }
                }
            }
        })
        .await
        .map_err(|_| HttpError::Timeout("the endpoint event"))??;
        let endpoint = resolve_endpoint(&self.url, first.trim())?;
        tracing::debug!(%endpoint, "using the 2024-11-05 HTTP+SSE transport");
        self.state().legacy_endpoint = Some(endpoint.clone());

        let this = self.clone();
        tokio::spawn(async move {
            let work = async {
                let mut none = HashSet::new();
                let mut cursor = Cursor::default();
                let err = match this.read_events(&mut reader, &mut none, &mut cursor).await {
                    Ok(()) => HttpError::Protocol("the server closed the HTTP+SSE stream".into()),
                    Err(e) => e,
                };
                this.die(err).await;
            };
            tokio::select! {
                _ = this.cancel.cancelled() => {}
                _ = work => {}
            }
        });
        Ok(endpoint)
    }

    fn spawn_legacy_post(
        self: &Arc<Self>,
        endpoint: Uri,
        body: Bytes,
        requests: Vec<Id>,
        permit: OwnedSemaphorePermit,
    ) {
        let this = self.clone();
        tokio::spawn(async move {
            let work = async {
                let mut headers = HeaderMap::new();
                headers.insert(
                    http::header::ACCEPT,
                    HeaderValue::from_static("application/json, text/event-stream"),
                );
                let ex = Exchange {
                    method: Method::POST,
                    uri: &endpoint,
                    headers,
                    body: Some(body),
                };
                match this.send_timed(ex).await {
                    Ok(resp) if resp.status().is_success() => {
                        // The answer arrives on the SSE stream; the body is informational.
                        let _ = net::read_body(resp.into_body(), 64 * 1024).await;
                    }
                    Ok(resp) => {
                        let err = net::status_error(resp).await;
                        if requests.is_empty() {
                            tracing::warn!(error = %err, "the server refused a message");
                        } else {
                            this.fail(requests, &err).await;
                        }
                    }
                    Err(e) => this.fail(requests, &e).await,
                }
            };
            tokio::select! {
                _ = this.cancel.cancelled() => {}
                _ = work => {}
            }
            drop(permit);
        });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamKind {
    /// The response stream of a POSTed request.
    Request,
    /// The standalone GET stream.
    Standalone,
}

/// Where a stream is, for resuming it.
#[derive(Debug, Default)]
struct Cursor {
    last_id: Option<String>,
    retry: Option<Duration>,
    progressed: bool,
}

/// An SSE body with its decoder.
struct SseReader {
    body: Body,
    decoder: SseCodec,
    buf: BytesMut,
    done: bool,
}

impl SseReader {
    fn new(body: Body, max_event_size: usize) -> Self {
        SseReader {
            body,
            decoder: SseCodec::with_config(CodecConfig::default().max_frame_size(max_event_size)),
            buf: BytesMut::new(),
            done: false,
        }
    }

    /// The next event; an oversized event ends the stream with [`HttpError::TooLarge`].
    async fn next(&mut self) -> Result<Option<SseEvent>, HttpError> {
        loop {
            let item = if self.done {
                self.decoder.decode_eof(&mut self.buf)
            } else {
                self.decoder.decode(&mut self.buf)
            };
            match item.map_err(|e| HttpError::Protocol(e.to_string()))? {
                Some(Ok(ev)) => return Ok(Some(ev)),
                Some(Err(FrameError::TooLarge { limit })) => {
                    return Err(HttpError::TooLarge { limit });
                }
                Some(Err(e)) => return Err(HttpError::Protocol(e.to_string())),
                None if self.done => return Ok(None),
                None => {}
            }
            match self.body.frame().await {
                None => self.done = true,
                Some(Err(e)) => return Err(HttpError::Request(Box::new(e))),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}

/// What the transport needs to know about an outbound frame.
#[derive(Debug, Default)]
struct FrameInfo {
    /// Ids of the requests in the frame.
    requests: Vec<Id>,
    /// The id of an `initialize` request.
    initialize: Option<Id>,
    /// Whether the frame is `notifications/initialized`.
    initialized: bool,
    /// Whether the frame has a method (a request or notification).
    has_method: bool,
    /// Request ids named by `notifications/cancelled`.
    cancelled: Vec<Id>,
    /// The method of a single request or notification.
    method: Option<String>,
    /// `params.name` / `params.uri` / `params.taskId`, for `Mcp-Name`.
    name: Option<String>,
    /// `params._meta["io.modelcontextprotocol/protocolVersion"]`.
    meta_version: Option<String>,
    /// `params.arguments` of a single `tools/call`, for the `Mcp-Param-*` headers.
    arguments: Option<Box<RawValue>>,
    /// Ids of the `tools/list` requests in the frame.
    tools_lists: Vec<Id>,
    /// Whether the frame is one `notifications/cancelled` and nothing else.
    only_cancel: bool,
}

#[derive(Deserialize)]
struct ParamsProbe<'a> {
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<&'a RawValue>,
    #[serde(default, borrow)]
    name: Option<&'a RawValue>,
    #[serde(default, borrow)]
    uri: Option<&'a RawValue>,
    #[serde(rename = "taskId", default, borrow)]
    task_id: Option<&'a RawValue>,
    #[serde(rename = "requestId", default, borrow)]
    request_id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
}

impl FrameInfo {
    fn of(frame: &Frame) -> FrameInfo {
        let mut info = FrameInfo::default();
        match frame {
            Frame::Single(m) => info.add(m, true),
            Frame::Batch(items) => items.iter().for_each(|m| info.add(m, false)),
        }
        info
    }

    fn add(&mut self, msg: &Message, single: bool) {
        let (method, params) = match msg {
            Message::Request(r) => {
                self.requests.push(r.id.clone());
                if r.method == "initialize" {
                    self.initialize = Some(r.id.clone());
                }
                if r.method == "tools/list" {
                    self.tools_lists.push(r.id.clone());
                }
                (&r.method, r.params.as_deref())
            }
            Message::Notification(n) => {
                self.initialized |= n.method == "notifications/initialized";
                self.only_cancel = single && n.method == "notifications/cancelled";
                (&n.method, n.params.as_deref())
            }
            Message::Response(_) => return,
        };
        self.has_method = true;
        if single {
            self.method = Some(method.clone());
        }
        let Some(probe) =
            params.and_then(|p| serde_json::from_str::<ParamsProbe<'_>>(p.get()).ok())
        else {
            return;
        };
        let string = |raw: Option<&RawValue>| raw.and_then(|r| serde_json::from_str(r.get()).ok());
        if method == "notifications/cancelled" {
            if let Some(id) = probe
                .request_id
                .and_then(|r| serde_json::from_str(r.get()).ok())
            {
                self.cancelled.push(id);
            }
        }
        if let Some(meta) = probe.meta {
            if let Ok(map) = serde_json::from_str::<HashMap<&str, &RawValue>>(meta.get()) {
                self.meta_version = string(map.get(wire::META_PROTOCOL_VERSION).copied());
            }
        }
        if single {
            self.name = match method.as_str() {
                "tools/call" | "prompts/get" => string(probe.name),
                "resources/read" => string(probe.uri),
                "tasks/get" | "tasks/update" | "tasks/cancel" => string(probe.task_id),
                _ => None,
            };
            if method == "tools/call" {
                self.arguments = probe.arguments.map(|raw| raw.to_owned());
            }
        }
    }
}

/// A session id as the spec allows it: visible ASCII only.
fn session_id(value: &HeaderValue) -> Option<String> {
    let bytes = value.as_bytes();
    if bytes.is_empty() || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return None;
    }
    std::str::from_utf8(bytes).ok().map(str::to_owned)
}

/// Resolves the `endpoint` event's URI reference against the server URL; it must stay on the
/// same origin.
pub(crate) fn resolve_endpoint(base: &Uri, reference: &str) -> Result<Uri, HttpError> {
    let bad = |why: &str| HttpError::Protocol(format!("bad endpoint {reference:?}: {why}"));
    let scheme = base
        .scheme()
        .ok_or_else(|| bad("the server URL has no scheme"))?;
    let authority = base
        .authority()
        .ok_or_else(|| bad("the server URL has no authority"))?;
    if reference.is_empty() {
        return Err(bad("empty"));
    }
    let lower = reference.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        let uri: Uri = reference.parse().map_err(|_| bad("not a URI"))?;
        if uri.scheme() != Some(scheme) || uri.authority() != Some(authority) {
            return Err(bad("it points to another origin"));
        }
        return Ok(uri);
    }
    if reference.starts_with("//") || reference.contains("://") {
        return Err(bad("it points to another origin"));
    }
    let path_and_query = if reference.starts_with('/') {
        reference.to_owned()
    } else {
        // Relative to the directory of the server URL's path.
        let base_path = base.path();
        let dir = &base_path[..base_path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{dir}{reference}")
    };
    Uri::builder()
        .scheme(scheme.clone())
        .authority(authority.clone())
        .path_and_query(path_and_query.as_str())
        .build()
        .map_err(|_| bad("not a valid path"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_resolution_stays_on_origin() {
        let base: Uri = "http://127.0.0.1:8080/mcp/sse".parse().unwrap();
        let r = |s| resolve_endpoint(&base, s).map(|u| u.to_string());
        assert_eq!(
            r("/messages?sessionId=1").unwrap(),
            "http://127.0.0.1:8080/messages?sessionId=1"
        );
        assert_eq!(
            r("messages?sessionId=1").unwrap(),
            "http://127.0.0.1:8080/mcp/messages?sessionId=1"
        );
        assert_eq!(
            r("http://127.0.0.1:8080/m").unwrap(),
            "http://127.0.0.1:8080/m"
        );
        assert!(r("http://evil.example/m").is_err());
        assert!(r("//evil.example/m").is_err());
        assert!(r("https://127.0.0.1:8080/m").is_err());
        assert!(r("").is_err());
        assert!(r("/bad path").is_err());
    }

    #[test]
    fn frame_info_sniffs_methods_names_versions_and_cancellations() {
        let req = mcp_jsonrpc::Request::with_params(
            7,
            "tools/call",
            &serde_json::json!({
                "name": "get weather",
                "arguments": {"name": {"nested": true}},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
            }),
        )
        .unwrap();
        let info = FrameInfo::of(&Frame::Single(req.into()));
        assert_eq!(info.requests, vec![Id::Number(7)]);
        assert_eq!(info.method.as_deref(), Some("tools/call"));
        assert_eq!(info.name.as_deref(), Some("get weather"));
        assert_eq!(info.meta_version.as_deref(), Some("2026-07-28"));

        let cancel = mcp_jsonrpc::Notification::with_params(
            "notifications/cancelled",
            &serde_json::json!({"requestId": "r1"}),
        )
        .unwrap();
        let init =
            mcp_jsonrpc::Request::with_params(1, "initialize", &serde_json::json!({})).unwrap();
        let info = FrameInfo::of(&Frame::Batch(vec![cancel.into(), init.into()]));
        assert_eq!(info.cancelled, vec![Id::from("r1")]);
        assert_eq!(info.initialize, Some(Id::Number(1)));
        assert_eq!(info.method, None);

        let bad = mcp_jsonrpc::Request::with_params(2, "resources/read", &serde_json::json!([1]))
            .unwrap();
        let info = FrameInfo::of(&Frame::Single(bad.into()));
        assert_eq!(info.name, None);
    }

    #[test]
    fn session_ids_must_be_visible_ascii() {
        assert_eq!(
            session_id(&HeaderValue::from_static("abc-123")).as_deref(),
            Some("abc-123")
        );
        assert_eq!(session_id(&HeaderValue::from_static("a b")), None);
        assert_eq!(session_id(&HeaderValue::from_static("")), None);
    }
}
