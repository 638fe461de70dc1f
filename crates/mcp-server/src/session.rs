//! One stateful session over a byte stream: newline-delimited JSON-RPC, the `initialize`
//! lifecycle, concurrent request handling, cancellation and server-to-client requests.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Semaphore, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::context::{
    BoxFuture, ClientChannel, ClientInfo, Extensions, LogThreshold, RequestContext, SessionHandle,
};
use crate::error::{CallError, ErrorData, codes};
use crate::handler::{CallToolParams, CompleteParams, Endpoint, GetPromptParams, Next, Request};
use crate::model::{Implementation, LoggingLevel, ProtocolVersion};
use crate::project;
use crate::registry::ServerEvent;
use crate::server::Server;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A request id as a hashable key.
fn id_key(id: &Value) -> String {
    id.to_string()
}

struct Shared {
    server: Server,
    out: mpsc::Sender<String>,
    handle: Mutex<Option<Arc<SessionHandle>>>,
    initialized: AtomicBool,
    log_level: Arc<LogThreshold>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<i64, oneshot::Sender<Result<Value, ErrorData>>>>,
    inflight: Mutex<HashMap<String, CancellationToken>>,
    subscriptions: Mutex<HashSet<String>>,
    closed: CancellationToken,
}

impl Shared {
    async fn send(&self, message: Value) {
        // A closed writer means the peer is gone; the reader notices EOF on its own.
        let _ = self.out.send(message.to_string()).await;
    }

    async fn respond(&self, id: Value, result: Result<Value, ErrorData>) {
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        };
        self.send(message).await;
    }

    fn version(&self) -> Option<ProtocolVersion> {
        lock(&self.handle).as_ref().map(|h| h.client.version)
    }
}

/// The session's way of reaching its client, behind [`ClientChannel`].
struct SessionPeer {
    shared: Weak<Shared>,
}

impl ClientChannel for SessionPeer {
    fn request(
        &self,
        method: &'static str,
        params: Value,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Value, CallError>> {
        let shared = self.shared.upgrade();
        Box::pin(async move {
            let Some(shared) = shared else {
                return Err(CallError::Closed);
            };
            if shared.closed.is_cancelled() {
                return Err(CallError::Closed);
            }
            let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            {
                let mut pending = lock(&shared.pending);
                if pending.len() >= shared.server.inner.options.max_pending_client_requests {
                    return Err(CallError::Busy);
                }
                pending.insert(id, tx);
            }
            shared
                .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
                .await;
            let timeout = shared.server.inner.options.client_request_timeout;
            let outcome = tokio::select! {
                r = rx => match r {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(e)) => Err(CallError::Rpc(e)),
                    Err(_) => Err(CallError::Closed),
                },
                _ = cancel.cancelled() => Err(CallError::Cancelled),
                _ = shared.closed.cancelled() => Err(CallError::Closed),
                _ = tokio::time::sleep(timeout) => Err(CallError::Timeout),
            };
            if matches!(outcome, Err(CallError::Cancelled | CallError::Timeout)) {
                lock(&shared.pending).remove(&id);
                let reason = if matches!(outcome, Err(CallError::Timeout)) {
                    "timed out"
                } else {
                    "the request that needed it was cancelled"
                };
                shared
                    .send(
                        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": id, "reason": reason}}),
                    )
                    .await;
            }
            outcome
        })
    }

    fn notify(&self, method: &'static str, params: Value) -> BoxFuture<'static, ()> {
        let shared = self.shared.upgrade();
        Box::pin(async move {
            if let Some(shared) = shared {
                shared
                    .send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
                    .await;
            }
        })
    }
}

struct SessionEndpoint {
    shared: Arc<Shared>,
    cancel: CancellationToken,
}

fn parse_params<T: serde::de::DeserializeOwned>(params: Option<Value>) -> Result<T, ErrorData> {
    serde_json::from_value(params.unwrap_or_else(|| Value::Object(Map::new())))
        .map_err(|e| ErrorData::invalid_params(format!("invalid params: {e}")))
}

fn cursor_of(params: &Option<Value>) -> Result<Option<String>, ErrorData> {
    match params.as_ref().and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ErrorData::invalid_params("cursor must be a string")),
    }
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, ErrorData> {
    serde_json::to_value(v).map_err(|e| ErrorData::internal(format!("serialization failed: {e}")))
}

fn list_result<T: serde::Serialize>(
    key: &str,
    page: crate::handler::Page<T>,
) -> Result<Value, ErrorData> {
    let mut out = Map::new();
    out.insert(key.to_owned(), to_value(&page.items)?);
    if let Some(c) = page.next_cursor {
        out.insert("nextCursor".to_owned(), Value::String(c));
    }
    Ok(Value::Object(out))
}

impl SessionEndpoint {
    async fn initialize(&self, params: Option<Value>) -> Result<Value, ErrorData> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct InitParams {
            protocol_version: String,
            #[serde(default)]
            capabilities: Value,
            client_info: Implementation,
        }
        let p: InitParams = parse_params(params)?;
        let capabilities = match p.capabilities {
            Value::Null => Value::Object(Map::new()),
            Value::Object(m) => Value::Object(m),
            _ => return Err(ErrorData::invalid_params("capabilities must be an object")),
        };
        let version =
            ProtocolVersion::parse(&p.protocol_version).unwrap_or(ProtocolVersion::LATEST);
        let shared = &self.shared;
        {
            let mut handle = lock(&shared.handle);
            if handle.is_some() {
                return Err(ErrorData::invalid_request(
                    "the session is already initialized",
                ));
            }
            *handle = Some(Arc::new(SessionHandle {
                client: ClientInfo {
                    version,
                    implementation: p.client_info,
                    capabilities,
                },
                log_level: Arc::clone(&shared.log_level),
                channel: Arc::new(SessionPeer {
                    shared: Arc::downgrade(shared),
                }),
            }));
        }
        tracing::debug!(%version, "session initialized");
        let inner = &shared.server.inner;
        let mut result = json!({
            "protocolVersion": version.as_str(),
            "capabilities": inner.handler.capabilities(),
            "serverInfo": to_value(&inner.info)?,
        });
        if let Some(instructions) = &inner.instructions {
            result["instructions"] = json!(instructions);
        }
        project::result("initialize", &mut result, version);
        Ok(result)
    }

    async fn dispatch(&self, request: Request) -> Result<Value, ErrorData> {
        let Request {
            id,
            method,
            params,
            extensions,
            ..
        } = request;
        match method.as_str() {
            "initialize" => return self.initialize(params).await,
            "ping" => return Ok(json!({})),
            _ => {}
        }
        let Some(handle) = lock(&self.shared.handle).clone() else {
            return Err(ErrorData::new(
                codes::NOT_INITIALIZED,
                format!("the session is not initialized: send `initialize` before `{method}`"),
            ));
        };
        let version = handle.client.version;
        if !project::client_method_exists(&method, version)
            && !method.starts_with("notifications/")
            && !is_custom(&method)
        {
            return Err(ErrorData::method_not_found(&method));
        }
        let progress_token = params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_i64() || t.is_u64())
            .cloned();
        let inner = &self.shared.server.inner;
        let cx = RequestContext {
            session: handle,
            request_id: id,
            progress_token,
            cancel: self.cancel.clone(),
            state: Arc::clone(&inner.state),
            extensions: Arc::new(extensions),
            uri: None,
            server: self.shared.server.clone(),
        };
        let h = &inner.handler;
        let mut result = match method.as_str() {
            "logging/setLevel" => {
                #[derive(serde::Deserialize)]
                struct SetLevel {
                    level: LoggingLevel,
                }
                let p: SetLevel = parse_params(params)?;
                self.shared.log_level.set(p.level);
                return Ok(json!({}));
            }
            "tools/list" => list_result("tools", h.list_tools(cursor_of(&params)?, cx).await?)?,
            "tools/call" => {
                let p: CallToolParams = parse_params(params)?;
                if p.arguments
                    .as_ref()
                    .is_some_and(|a| !a.is_object() && !a.is_null())
                {
                    return Err(ErrorData::invalid_params("arguments must be an object"));
                }
                to_value(&h.call_tool(p, cx).await?)?
            }
            "resources/list" => list_result(
                "resources",
                h.list_resources(cursor_of(&params)?, cx).await?,
            )?,
            "resources/templates/list" => list_result(
                "resourceTemplates",
                h.list_resource_templates(cursor_of(&params)?, cx).await?,
            )?,
            "resources/read" => {
                let uri = uri_param(params)?;
                to_value(&h.read_resource(uri, cx).await?)?
            }
            "resources/subscribe" => {
                let uri = uri_param(params)?;
                h.subscribe(uri.clone(), cx).await?;
                lock(&self.shared.subscriptions).insert(uri);
                return Ok(json!({}));
            }
            "resources/unsubscribe" => {
                let uri = uri_param(params)?;
                lock(&self.shared.subscriptions).remove(&uri);
                return Ok(json!({}));
            }
            "prompts/list" => {
                list_result("prompts", h.list_prompts(cursor_of(&params)?, cx).await?)?
            }
            "prompts/get" => {
                let p: GetPromptParams = parse_params(params)?;
                to_value(&h.get_prompt(p, cx).await?)?
            }
            "completion/complete" => {
                let p: CompleteParams = parse_params(params)?;
                json!({"completion": to_value(&h.complete(p, cx).await?)?})
            }
            _ => return h.custom(method, params, cx).await,
        };
        project::result(&method, &mut result, version);
        Ok(result)
    }
}

/// Methods outside the MCP namespace are routed to [`ServerHandler::custom`](crate::ServerHandler::custom).
fn is_custom(method: &str) -> bool {
    const MCP_PREFIXES: &[&str] = &[
        "tools/",
        "resources/",
        "prompts/",
        "completion/",
        "logging/",
        "sampling/",
        "elicitation/",
        "roots/",
        "tasks/",
        "server/",
        "subscriptions/",
    ];
    !MCP_PREFIXES.iter().any(|p| method.starts_with(p))
        && method != "initialize"
        && method != "ping"
}

fn uri_param(params: Option<Value>) -> Result<String, ErrorData> {
    #[derive(serde::Deserialize)]
    struct Uri {
        uri: String,
    }
    let p: Uri = parse_params(params)?;
    Ok(p.uri)
}

impl Endpoint for SessionEndpoint {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Value, ErrorData>> {
        Box::pin(self.dispatch(request))
    }
}

/// Reads one newline-terminated line of at most `max` bytes. `Ok(None)` at EOF;
/// `Ok(Some(Err(())))` for a line that was too long (it is consumed and discarded).
async fn read_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Result<(), ()>>> {
    buf.clear();
    let mut too_long = false;
    let mut seen_any = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (seen_any, too_long) {
                (false, _) => None,
                (true, true) => Some(Err(())),
                (true, false) => Some(Ok(())),
            });
        }
        seen_any = true;
        let newline = available.iter().position(|b| *b == b'\n');
        let chunk = match newline {
            Some(i) => &available[..i],
            None => available,
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let consumed = newline.map_or(available.len(), |i| i + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return Ok(Some(if too_long { Err(()) } else { Ok(()) }));
        }
    }
}

/// Serves one session on a reader and a writer until the reader reaches EOF.
pub(crate) async fn serve_io<R, W>(server: Server, reader: R, mut writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let options = server.inner.options.clone();
    let (out_tx, mut out_rx) = mpsc::channel::<String>(options.outgoing_queue);
    let shared = Arc::new(Shared {
        log_level: Arc::new(LogThreshold::new(options.default_log_level)),
        server: server.clone(),
        out: out_tx,
        handle: Mutex::new(None),
        initialized: AtomicBool::new(false),
        next_id: AtomicI64::new(1),
        pending: Mutex::new(HashMap::new()),
        inflight: Mutex::new(HashMap::new()),
        subscriptions: Mutex::new(HashSet::new()),
        closed: CancellationToken::new(),
    });

    let writer_task = tokio::spawn(async move {
        while let Some(line) = out_rx.recv().await {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await?;
        }
        writer.shutdown().await.ok();
        Ok::<(), std::io::Error>(())
    });

    let events_task = {
        let shared = Arc::clone(&shared);
        let mut events = server.inner.registry.subscribe();
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    _ = shared.closed.cancelled() => break,
                    e = events.recv() => e,
                };
                let event = match event {
                    Ok(e) => e,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                };
                if shared.version().is_none() {
                    continue;
                }
                let method = match &event {
                    ServerEvent::ToolsChanged => "notifications/tools/list_changed",
                    ServerEvent::ResourcesChanged => "notifications/resources/list_changed",
                    ServerEvent::PromptsChanged => "notifications/prompts/list_changed",
                    ServerEvent::ResourceUpdated(uri) => {
                        if lock(&shared.subscriptions).contains(uri) {
                            shared
                                .send(json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}}))
                                .await;
                        }
                        continue;
                    }
                };
                shared
                    .send(json!({"jsonrpc": "2.0", "method": method}))
                    .await;
            }
        })
    };

    let semaphore = Arc::new(Semaphore::new(options.max_concurrent_requests));
    let mut reader = BufReader::with_capacity(64 * 1024, reader);
    let mut buf = Vec::new();
    let result = loop {
        let line = match read_line(&mut reader, &mut buf, options.max_message_bytes).await {
            Ok(Some(l)) => l,
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        };
        if line.is_err() {
            tracing::warn!(
                limit = options.max_message_bytes,
                "message too large; discarded"
            );
            shared
                .respond(
                    Value::Null,
                    Err(ErrorData::invalid_request(format!(
                        "message exceeds the limit of {} bytes",
                        options.max_message_bytes
                    ))),
                )
                .await;
            continue;
        }
        let text = buf.strip_suffix(b"\r").unwrap_or(&buf);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Value = match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(e) => {
                shared
                    .respond(
                        Value::Null,
                        Err(ErrorData::new(
                            codes::PARSE_ERROR,
                            format!("parse error: {e}"),
                        )),
                    )
                    .await;
                continue;
            }
        };
        match message {
            Value::Array(items) => {
                if shared.version() != Some(ProtocolVersion::V2025_03_26) || items.is_empty() {
                    shared
                        .respond(
                            Value::Null,
                            Err(ErrorData::invalid_request(
                                "batches are only accepted from 2025-03-26 clients",
                            )),
                        )
                        .await;
                    continue;
                }
                let mut handles = Vec::new();
                for item in items {
                    let permit = Arc::clone(&semaphore).acquire_owned().await.ok();
                    let shared = Arc::clone(&shared);
                    handles.push(tokio::spawn(async move {
                        let _permit = permit;
                        handle_message(shared, item, None).await
                    }));
                }
                let batch_shared = Arc::clone(&shared);
                tokio::spawn(async move {
                    let mut responses = Vec::new();
                    for h in handles {
                        if let Ok(Some(r)) = h.await {
                            responses.push(r);
                        }
                    }
                    if !responses.is_empty() {
                        batch_shared.send(Value::Array(responses)).await;
                    }
                });
            }
            message => {
                let is_request = message.get("method").is_some() && message.get("id").is_some();
                if is_request {
                    let permit = Arc::clone(&semaphore).acquire_owned().await.ok();
                    // Register the request before reading on, so that a `notifications/cancelled`
                    // on the next line always finds it.
                    let token = register(&shared, message.get("id"));
                    let shared = Arc::clone(&shared);
                    tokio::spawn(async move {
                        let _permit = permit;
                        if let Some(r) = handle_message(Arc::clone(&shared), message, token).await {
                            shared.send(r).await;
                        }
                    });
                } else if let Some(r) = handle_message(Arc::clone(&shared), message, None).await {
                    shared.send(r).await;
                }
            }
        }
    };

    // EOF: cancel in-flight work, fail waiting calls, flush what is queued and stop.
    shared.closed.cancel();
    for (_, token) in lock(&shared.inflight).drain() {
        token.cancel();
    }
    lock(&shared.pending).clear();
    events_task.abort();
    let flush = {
        let shared = Arc::clone(&shared);
        async move {
            // Give handlers that were cancelled a moment to finish, then drop the last sender.
            let _ = tokio::time::timeout(
                std::time::Duration::from_millis(500),
                semaphore.acquire_many(options.max_concurrent_requests as u32),
            )
            .await;
            drop(shared);
        }
    };
    flush.await;
    drop(shared);
    match tokio::time::timeout(std::time::Duration::from_secs(2), writer_task).await {
        Ok(Ok(Err(e))) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            tracing::debug!(error = %e, "writer stopped")
        }
        _ => {}
    }
    result
}

/// Handles one message; returns the response to send, if any. Requests are answered here
/// (they run on their own task), notifications and responses are applied in wire order.
/// Registers an in-flight request id; `None` if the id is not usable or already in flight (the
/// request is then refused by [`handle_message`]).
fn register(shared: &Shared, id: Option<&Value>) -> Option<CancellationToken> {
    let id = id?;
    if !(id.is_string() || id.is_i64() || id.is_u64()) {
        return None;
    }
    let mut inflight = lock(&shared.inflight);
    let key = id_key(id);
    if inflight.contains_key(&key) {
        return None;
    }
    let token = shared.closed.child_token();
    inflight.insert(key, token.clone());
    Some(token)
}

async fn handle_message(
    shared: Arc<Shared>,
    message: Value,
    registered: Option<CancellationToken>,
) -> Option<Value> {
    let Value::Object(mut obj) = message else {
        return Some(json!({"jsonrpc": "2.0", "id": null,
            "error": ErrorData::invalid_request("a message must be a JSON object")}));
    };
    let id = obj.remove("id");
    let error_for = |id: Value, e: ErrorData| Some(json!({"jsonrpc": "2.0", "id": id, "error": e}));
    // A request refused before it runs must not stay registered as in flight.
    let unregister = |id: &Option<Value>| {
        if registered.is_some()
            && let Some(id) = id
        {
            lock(&shared.inflight).remove(&id_key(id));
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        unregister(&id);
        return error_for(
            id.unwrap_or(Value::Null),
            ErrorData::invalid_request("`jsonrpc` must be \"2.0\""),
        );
    }
    let method = obj.remove("method");
    match (id, method) {
        (Some(id), Some(Value::String(method))) => {
            if !(id.is_string() || id.is_i64() || id.is_u64()) {
                return error_for(
                    Value::Null,
                    ErrorData::invalid_request("the request id must be a string or an integer"),
                );
            }
            // `"params": null` is treated as absent (the legacy `mcp/` methods allow it).
            let params = obj.remove("params").filter(|p| !p.is_null());
            if params
                .as_ref()
                .is_some_and(|p| !p.is_object() && !p.is_array())
            {
                unregister(&Some(id.clone()));
                return error_for(id, ErrorData::invalid_request("params must be an object"));
            }
            let key = id_key(&id);
            let Some(cancel) = registered.or_else(|| register(&shared, Some(&id))) else {
                return error_for(
                    id,
                    ErrorData::invalid_request("a request with this id is already in flight"),
                );
            };
            let endpoint = SessionEndpoint {
                shared: Arc::clone(&shared),
                cancel: cancel.clone(),
            };
            let request = Request {
                id: id.clone(),
                method,
                params,
                protocol_version: shared.version(),
                extensions: Extensions::new(),
            };
            let next = Next {
                chain: &shared.server.inner.middleware,
                endpoint: &endpoint,
            };
            let result = tokio::select! {
                r = next.run(request) => Some(r),
                _ = cancel.cancelled() => None,
            };
            lock(&shared.inflight).remove(&key);
            let result = result?;
            if cancel.is_cancelled() {
                return None;
            }
            Some(match result {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
            })
        }
        (None, Some(Value::String(method))) => {
            let params = obj.remove("params").unwrap_or(Value::Null);
            match method.as_str() {
                "notifications/initialized" => {
                    shared.initialized.store(true, Ordering::Relaxed);
                }
                "notifications/cancelled" => {
                    if let Some(request_id) = params.get("requestId") {
                        let token = lock(&shared.inflight).get(&id_key(request_id)).cloned();
                        if let Some(token) = token {
                            tracing::debug!(%request_id, "request cancelled by the client");
                            token.cancel();
                        }
                    }
                }
                other => tracing::debug!(method = other, "notification ignored"),
            }
            None
        }
        (Some(id), None) => {
            let Some(n) = id.as_i64() else {
                tracing::debug!(%id, "response with an unknown id ignored");
                return None;
            };
            let waiter = lock(&shared.pending).remove(&n);
            let Some(waiter) = waiter else {
                tracing::debug!(%id, "response with an unknown id ignored");
                return None;
            };
            let outcome = if let Some(result) = obj.remove("result") {
                Ok(result)
            } else if let Some(error) = obj.remove("error") {
                Err(
                    serde_json::from_value::<ErrorData>(error).unwrap_or_else(|e| {
                        ErrorData::internal(format!("malformed error from the client: {e}"))
                    }),
                )
            } else {
                Err(ErrorData::internal("response without result or error"))
            };
            let _ = waiter.send(outcome);
            None
        }
        (id, _) => {
            unregister(&id);
            error_for(
                id.unwrap_or(Value::Null),
                ErrorData::invalid_request("not a JSON-RPC request, notification or response"),
            )
        }
    }
}
