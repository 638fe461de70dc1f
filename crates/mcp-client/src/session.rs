//! A live session with one server: negotiation and the typed calls.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures_core::Stream;
use futures_util::{TryStreamExt, stream};
use mcp_jsonrpc::Connection;
use mcp_types::error_codes::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};
use mcp_types::wire;
use mcp_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult, DiscoverResult,
    Era, Feature, GetPromptRequestParams, GetPromptResult, Implementation, InitializeResult,
    InputRequests, InputRequiredResult, InputResponse, InputResponses, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel, Project,
    Prompt, ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, Resource,
    ResourceTemplate, ServerCapabilities, SubscriptionFilter, Tool,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, broadcast, mpsc, oneshot};

use crate::cache::ResponseCache;
use crate::client::Client;
use crate::error::{CallError, ConnectError};
use crate::incoming::IncomingHandler;
use crate::lifecycle::{self, Negotiated};
use crate::listen::{PendingListen, Subscription};
use crate::mrtr::{Outcome, decode_outcome, retry_params};
use crate::notify::{Notifications, ServerNotification};
use crate::rpc::{Progress, ProgressCallback, Rpc};

/// Most tool output schemas a session keeps compiled for `structuredContent` validation.
const MAX_CACHED_SCHEMAS: usize = 4096;

/// One of a server's `inputRequests`, its params as written.
#[derive(serde::Deserialize)]
struct RawInputRequest<'a> {
    method: String,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

/// Per-call options, carried by a [`ClientSession`] value (see [`ClientSession::with_timeout`]).
#[derive(Clone, Default)]
pub(crate) struct CallOptions {
    /// `None`: the client's default; `Some(None)`: no timeout.
    timeout: Option<Option<Duration>>,
    progress: Option<ProgressCallback>,
}

/// A session with one server. Cheap to clone: clones share the connection.
///
/// Every call checks that the negotiated revision has the method and that the server declared
/// the capability it needs before anything is sent. Dropping a call's future cancels the request
/// (`notifications/cancelled` is sent).
#[derive(Clone)]
pub struct ClientSession {
    inner: Arc<SessionInner>,
    options: CallOptions,
}

impl std::fmt::Debug for ClientSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSession")
            .field("server", &self.inner.init.server_info)
            .field("protocol_version", &self.inner.version)
            .finish_non_exhaustive()
    }
}

struct SessionInner {
    rpc: Rpc,
    client: Client,
    version: ProtocolVersion,
    init: InitializeResult,
    /// The `server/discover` result of a stateless session.
    discover: Option<DiscoverResult>,
    server_caps: Value,
    notifications: broadcast::Sender<ServerNotification>,
    output_schemas: Mutex<HashMap<String, Arc<OutputSchema>>>,
    incoming: IncomingHandler,
    /// The `_meta` members of every stateless request, encoded (empty in the session era).
    meta: lifecycle::RenderedMeta,
    /// The `io.modelcontextprotocol/logLevel` stateless requests ask for.
    log_level: Mutex<Option<LoggingLevel>>,
    cache: Option<Arc<ResponseCache>>,
    /// Serializes the opening of `subscriptions/listen` subscriptions.
    listen_gate: tokio::sync::Mutex<()>,
}

struct OutputSchema {
    validator: Option<mcp_jsonschema::Validator>,
}

/// A page of a paginated list.
trait Page: DeserializeOwned {
    type Item;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
    /// Drops items the session must not hand out (tools with invalid `x-mcp-header`s).
    fn checked(self, session: &ClientSession) -> Self;
}

macro_rules! page {
    ($result:ty, $item:ty, $field:ident) => {
        page!($result, $item, $field, |page, _session| page);
    };
    ($result:ty, $item:ty, $field:ident, |$page:ident, $session:ident| $checked:expr) => {
        impl Page for $result {
            type Item = $item;
            fn into_parts(self) -> (Vec<$item>, Option<String>) {
                (self.$field, self.next_cursor)
            }
            #[allow(unused_mut)]
            fn checked(self, $session: &ClientSession) -> Self {
                let mut $page = self;
                $checked
            }
        }
    };
}
page!(ListToolsResult, Tool, tools, |page, session| {
    session.drop_invalid_tools(&mut page.tools);
    page
});
page!(ListResourcesResult, Resource, resources);
page!(
    ListResourceTemplatesResult,
    ResourceTemplate,
    resource_templates
);
page!(ListPromptsResult, Prompt, prompts);

/// Builds a model value from its JSON shape.
fn model<T: DeserializeOwned>(value: Value) -> Result<T, CallError> {
    serde_json::from_value(value).map_err(CallError::Decode)
}

/// Whether `tools/call` params hold only a name and arguments (see [`plain_call`]).
fn is_plain_call(params: &CallToolRequestParams) -> bool {
    params.meta.is_none()
        && params.input_responses.is_none()
        && params.request_state.is_none()
        && params.task.is_none()
}

/// Plain `tools/call` params as the object they encode to, moved, not copied.
fn plain_call(params: CallToolRequestParams) -> Value {
    let mut object = Map::new();
    if let Some(arguments) = params.arguments {
        object.insert("arguments".into(), Value::Object(arguments));
    }
    object.insert("name".into(), Value::String(params.name));
    Value::Object(object)
}

fn cursor_params(cursor: Option<String>) -> Value {
    match cursor {
        Some(cursor) => json!({ "cursor": cursor }),
        None => json!({}),
    }
}

impl Client {
    /// Connects over `connection`, negotiating the newest revision both sides speak within
    /// [`ClientBuilder::min_protocol_version`](crate::ClientBuilder::min_protocol_version) ..= [`ClientBuilder::protocol_version`](crate::ClientBuilder::protocol_version):
    ///
    /// 1. When that range includes a stateless revision (2026-07-28, in the default range), the
    ///    client sends `server/discover`. A discover result makes a stateless session: no
    ///    handshake, every request carries the version, capabilities and client info in its
    ///    `_meta`. An `UnsupportedProtocolVersion` error (`-32022`) makes the client retry with
    ///    the newest mutual version from the error's `supported` list; another modern error
    ///    (`-32020`, `-32021`) fails the connection.
    /// 2. Any other answer (`-32601` and other JSON-RPC errors, an HTTP error status, a timeout
    ///    after [`ClientBuilder::discover_timeout`](crate::ClientBuilder::discover_timeout)) means a server from before the stateless
    ///    era: the client falls back to `initialize` with the newest session revision in range,
    ///    accepts any older revision the server answers with down to the minimum, and sends
    ///    `notifications/initialized`.
    ///
    /// On an answer outside the range the connection is closed and the result is
    /// [`ConnectError::UnsupportedVersion`].
    pub async fn connect(&self, connection: Connection) -> Result<ClientSession, ConnectError> {
        ClientSession::start(self.clone(), connection).await
    }
}

impl ClientSession {
    pub(crate) async fn start(
        client: Client,
        connection: Connection,
    ) -> Result<ClientSession, ConnectError> {
        let (notifications, _) = broadcast::channel(client.shared.notification_buffer);
        let handler = IncomingHandler::new(client.clone(), notifications.clone());
        let rpc = Rpc::start(
            connection,
            handler.clone(),
            client.shared.max_concurrent_requests,
        );
        let negotiated = match lifecycle::negotiate(&client, &rpc).await {
            Ok(negotiated) => negotiated,
            Err(error) => {
                rpc.close().await;
                return Err(error);
            }
        };
        let cache = (client.shared.cache_entries > 0)
            .then(|| Arc::new(ResponseCache::new(client.shared.cache_entries)));
        if let Some(cache) = &cache {
            handler.set_cache(cache.clone());
        }
        let (version, init, discover, meta) = match negotiated {
            Negotiated::Session { version, init } => (version, *init, None, Vec::new()),
            Negotiated::Stateless {
                version,
                discover,
                raw,
                server_info,
            } => {
                if let Some(cache) = &cache {
                    cache.put("server/discover", None, &raw);
                }
                let init = lifecycle::synthesized_init(version, &discover, &server_info);
                let meta = lifecycle::render_meta(&lifecycle::stateless_meta(&client, version));
                (version, init, Some(*discover), meta)
            }
        };
        handler.set_version(version);
        #[cfg(feature = "otel")]
        rpc.set_version(version);
        tracing::debug!(
            server = %init.server_info.name,
            version = %version,
            "connected"
        );
        let server_caps = serde_json::to_value(&init.capabilities).unwrap_or_else(|_| json!({}));
        let inner = Arc::new(SessionInner {
            rpc,
            client: client.clone(),
            version,
            init,
            discover,
            server_caps,
            notifications,
            output_schemas: Mutex::new(HashMap::new()),
            incoming: handler,
            meta,
            log_level: Mutex::new(None),
            cache,
            listen_gate: tokio::sync::Mutex::new(()),
        });
        // `notifications/roots/list_changed` exists in the session era only.
        let roots = client
            .shared
            .roots
            .as_ref()
            .filter(|_| wire::accepts("notifications/roots/list_changed", version));
        if let Some(roots) = roots {
            spawn_roots_watcher(Arc::downgrade(&inner), roots.subscribe());
        }
        Ok(ClientSession {
            inner,
            options: CallOptions::default(),
        })
    }

    /// The client this session was made by.
    pub(crate) fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The revision negotiated with the server.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.version
    }

    /// Whether the session was negotiated with `initialize` or is stateless (`server/discover`,
    /// per-request `_meta`).
    pub fn era(&self) -> Era {
        self.inner.version.era()
    }

    pub(crate) fn is_stateless(&self) -> bool {
        self.inner.version.is_stateless()
    }

    /// The server's implementation info. A stateless server gives it in its discover result's
    /// `_meta` (a SHOULD); when it does not, both fields are empty.
    pub fn server_info(&self) -> &Implementation {
        &self.inner.init.server_info
    }

    /// The capabilities the server declared.
    pub fn server_capabilities(&self) -> &ServerCapabilities {
        &self.inner.init.capabilities
    }

    /// The server's usage instructions, if it gave any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.init.instructions.as_deref()
    }

    /// The full `initialize` result. On a stateless session there is none: this is assembled
    /// from the `server/discover` result (version, capabilities, server info, instructions).
    pub fn initialize_result(&self) -> &InitializeResult {
        &self.inner.init
    }

    /// The `server/discover` result the session was negotiated with (stateless sessions only).
    pub fn discover_result(&self) -> Option<&DiscoverResult> {
        self.inner.discover.as_ref()
    }

    /// A bounded receiver of the server's notifications from now on (see [`Notifications`]).
    pub fn notifications(&self) -> Notifications {
        Notifications::new(self.inner.notifications.subscribe())
    }

    /// Whether the connection has closed.
    pub fn is_closed(&self) -> bool {
        self.inner.rpc.is_closed()
    }

    /// Waits until the connection closes and returns why.
    pub async fn closed(&self) -> String {
        self.inner.rpc.closed().await
    }

    /// Closes the connection; pending calls fail with [`CallError::Closed`].
    pub async fn close(&self) {
        self.inner.rpc.close().await;
    }

    /// This session with a timeout for the calls made through the returned value
    /// (`None`: no timeout). On timeout the request is cancelled and the call fails with
    /// [`CallError::Timeout`].
    ///
    /// ```no_run
    /// # async fn f(session: mcp_client::ClientSession) -> Result<(), mcp_client::CallError> {
    /// use std::time::Duration;
    /// session.with_timeout(Some(Duration::from_secs(5))).ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn with_timeout(&self, timeout: Option<Duration>) -> ClientSession {
        let mut session = self.clone();
        session.options.timeout = Some(timeout);
        session
    }

    /// This session with a progress callback for the calls made through the returned value: each
    /// such request carries a progress token and the server's `notifications/progress` for it
    /// reach `callback`.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_client::ClientSession) -> Result<(), mcp_client::CallError> {
    /// let result = session
    ///     .with_progress(|p| eprintln!("{} of {:?}", p.progress, p.total))
    ///     .call_tool("slow", serde_json::json!({}))
    ///     .await?;
    /// # let _ = result; Ok(()) }
    /// ```
    pub fn with_progress(
        &self,
        callback: impl Fn(Progress) + Send + Sync + 'static,
    ) -> ClientSession {
        let mut session = self.clone();
        session.options.progress = Some(Arc::new(callback));
        session
    }

    fn timeout(&self) -> Option<Duration> {
        self.options
            .timeout
            .unwrap_or(self.inner.client.shared.request_timeout)
    }

    /// Whether the server declared the top-level capability `name` (`tools`, `resources`,
    /// `prompts`, `logging`, `completions`, ...).
    pub fn offers(&self, name: &str) -> bool {
        self.has_capability(&[name])
    }

    pub(crate) fn has_capability(&self, path: &[&str]) -> bool {
        let mut value = &self.inner.server_caps;
        for key in path {
            match value.get(key) {
                Some(next) if !next.is_null() => value = next,
                _ => return false,
            }
        }
        // `subscribe` and `listChanged` are booleans; anything else is an object.
        !matches!(value, Value::Bool(false))
    }

    pub(crate) fn check(
        &self,
        method: &'static str,
        capability: Option<(&'static str, &[&str])>,
    ) -> Result<(), CallError> {
        let available = mcp_types::methods::lookup(method)
            .is_some_and(|info| info.available_in(self.inner.version));
        if !available {
            return Err(CallError::NotInRevision {
                method,
                version: self.inner.version,
            });
        }
        if let Some((name, _)) = capability.filter(|(_, path)| !self.has_capability(path)) {
            return Err(CallError::MissingCapability {
                method,
                capability: name,
            });
        }
        Ok(())
    }

    /// Sends a request whose params are already checked and projected.
    async fn send<R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: Option<&Value>,
    ) -> Result<R, CallError> {
        let raw = self.send_raw(method, params).await?;
        serde_json::from_str(raw.get()).map_err(CallError::Decode)
    }

    /// Sends a request; on a stateless session, with the request `_meta` added, and retried
    /// once when the server refuses the version with `-32022` but lists it as supported (a
    /// server may refuse a first request that way).
    pub(crate) async fn send_raw(
        &self,
        method: &'static str,
        params: Option<&Value>,
    ) -> Result<Box<RawValue>, CallError> {
        let stateless = self.is_stateless();
        let params = if stateless {
            Some(self.stamp(params))
        } else {
            params.map(mcp_jsonrpc::to_raw)
        }
        .transpose()
        .map_err(CallError::Decode)?;
        let mut retried = false;
        loop {
            let outcome = self
                .inner
                .rpc
                .request_raw(
                    method,
                    params.clone(),
                    self.timeout(),
                    self.options.progress.clone(),
                    true,
                )
                .await;
            match outcome {
                Err(mcp_jsonrpc::CallError::Rpc(error))
                    if stateless
                        && !retried
                        && error.code == UNSUPPORTED_PROTOCOL_VERSION
                        && lifecycle::supported_versions(&error)
                            .iter()
                            .any(|v| v == self.inner.version.as_str()) =>
                {
                    tracing::debug!(
                        method,
                        "version refused but listed as supported; retrying once"
                    );
                    retried = true;
                }
                other => return other.map_err(Into::into),
            }
        }
    }

    /// `params` (an object, or none) with the session's `_meta` merged in, encoded: the
    /// members stateless requests carry, and the log level once one is set. The members the
    /// caller put in `_meta` itself win.
    fn stamp(&self, params: Option<&Value>) -> Result<Box<RawValue>, serde_json::Error> {
        let level = *self
            .inner
            .log_level
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let level = level.map(|level| json!(level));
        mcp_jsonrpc::to_raw(&lifecycle::Stamped {
            params: params.and_then(Value::as_object),
            meta: &self.inner.meta,
            extra: level.as_ref().map(|level| (wire::META_LOG_LEVEL, level)),
        })
    }

    /// Projects model params onto the negotiated revision and encodes them.
    fn encode<P: Serialize + Project>(&self, mut params: P) -> Result<Value, CallError> {
        params.project(self.inner.version);
        serde_json::to_value(params).map_err(CallError::Decode)
    }

    /// [`Self::encode`] for `tools/call` params. Params with only a name and arguments (nearly
    /// every call) are moved into the object as they are: projection leaves those two members
    /// alone, and encoding would copy the arguments into a second tree.
    fn encode_call(&self, params: CallToolRequestParams) -> Result<Value, CallError> {
        if is_plain_call(&params) {
            return Ok(plain_call(params));
        }
        self.encode(params)
    }

    /// Checks that the server answers: `ping` where the negotiated revision has it, otherwise
    /// `server/discover` (2026-07-28 has no `ping`), sent to the server even when a response
    /// cache holds a discover result.
    pub async fn ping(&self) -> Result<(), CallError> {
        let has_ping = mcp_types::methods::lookup("ping")
            .is_some_and(|info| info.available_in(self.inner.version));
        if has_ping {
            let _: Value = self.send("ping", None).await?;
            return Ok(());
        }
        const DISCOVER: &str = "server/discover";
        self.check(DISCOVER, None)?;
        let raw = self.send_raw(DISCOVER, None).await?;
        lifecycle::parse_discover(raw.get()).map_err(CallError::InvalidResponse)?;
        Ok(())
    }

    async fn list_page<P: Page>(
        &self,
        method: &'static str,
        capability: (&'static str, &[&str]),
        cursor: Option<String>,
    ) -> Result<P, CallError> {
        self.check(method, Some(capability))?;
        let cached = self
            .inner
            .cache
            .as_ref()
            .and_then(|cache| cache.get(method, cursor.as_deref()));
        let page: P = match cached {
            Some(text) => serde_json::from_str(&text).map_err(CallError::Decode)?,
            None => {
                let key = cursor.clone();
                let raw = self.send_raw(method, Some(&cursor_params(cursor))).await?;
                if let Some(cache) = &self.inner.cache {
                    cache.put(method, key.as_deref(), raw.get());
                }
                serde_json::from_str(raw.get()).map_err(CallError::Decode)?
            }
        };
        Ok(page.checked(self))
    }

    fn pages<P: Page + Send + 'static>(
        &self,
        method: &'static str,
        capability: (&'static str, &'static [&'static str]),
    ) -> impl Stream<Item = Result<P::Item, CallError>> + Send + 'static
    where
        P::Item: Send + 'static,
    {
        struct State {
            session: ClientSession,
            cursor: Option<String>,
            seen: HashSet<String>,
            pages: usize,
            done: bool,
        }
        let state = State {
            session: self.clone(),
            cursor: None,
            seen: HashSet::new(),
            pages: 0,
            done: false,
        };
        stream::try_unfold(state, move |mut state| async move {
            if state.done {
                return Ok(None);
            }
            let max = state.session.inner.client.shared.max_pages;
            if state.pages >= max {
                return Err(CallError::Pagination(format!(
                    "`{method}` returned more than {max} pages"
                )));
            }
            state.pages += 1;
            let page: P = state
                .session
                .list_page(method, capability, state.cursor.take())
                .await?;
            let (items, next) = page.into_parts();
            match next {
                Some(cursor) => {
                    if !state.seen.insert(cursor.clone()) {
                        return Err(CallError::Pagination(format!(
                            "`{method}` repeated the cursor {cursor:?}"
                        )));
                    }
                    state.cursor = Some(cursor);
                }
                None => state.done = true,
            }
            Ok(Some((items, state)))
        })
        .map_ok(|items| stream::iter(items.into_iter().map(Ok)))
        .try_flatten()
    }

    /// `tools/list`: one page, from `cursor`.
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, CallError> {
        let page: ListToolsResult = self
            .list_page("tools/list", ("tools", &["tools"]), cursor)
            .await?;
        self.remember_output_schemas(&page.tools);
        Ok(page)
    }

    /// Every tool, following `nextCursor` across pages (bounded by
    /// [`ClientBuilder::max_pages`](crate::ClientBuilder::max_pages)).
    pub async fn list_all_tools(&self) -> Result<Vec<Tool>, CallError> {
        self.tools().try_collect().await
    }

    /// Every tool as a stream that fetches pages as it goes.
    pub fn tools(&self) -> impl Stream<Item = Result<Tool, CallError>> + Send + 'static {
        let session = self.clone();
        self.pages::<ListToolsResult>("tools/list", ("tools", &["tools"]))
            .inspect_ok(move |tool| session.remember_output_schemas(std::slice::from_ref(tool)))
    }

    /// Drops, with a warning, the tools whose `x-mcp-header` annotations break the rules of
    /// 2026-07-28: a client must not offer them (their calls could not carry correct
    /// `Mcp-Param-*` headers). Earlier revisions know no such annotation.
    fn drop_invalid_tools(&self, tools: &mut Vec<Tool>) {
        if !self.is_stateless() {
            return;
        }
        tools.retain(|tool| {
            match mcp_types::x_mcp_header::param_headers(&tool.input_schema.extra) {
                Ok(_) => true,
                Err(error) => {
                    tracing::warn!(tool = %tool.name, %error, "ignoring a tool with an invalid x-mcp-header annotation");
                    false
                }
            }
        });
    }

    fn remember_output_schemas(&self, tools: &[Tool]) {
        let Ok(mut cache) = self.inner.output_schemas.lock() else {
            return;
        };
        for tool in tools {
            let Some(schema) = &tool.output_schema else {
                cache.remove(&tool.name);
                continue;
            };
            if cache.len() >= MAX_CACHED_SCHEMAS && !cache.contains_key(&tool.name) {
                tracing::debug!(tool = %tool.name, "output schema cache full; not validating this tool");
                continue;
            }
            let schema = serde_json::to_value(schema).unwrap_or(Value::Null);
            let validator = match mcp_jsonschema::Validator::new(&schema) {
                Ok(validator) => Some(validator),
                Err(error) => {
                    tracing::warn!(tool = %tool.name, %error, "tool output schema does not compile; its results are not validated");
                    None
                }
            };
            cache.insert(tool.name.clone(), Arc::new(OutputSchema { validator }));
        }
    }

    /// `tools/call` with any serializable arguments (a JSON object).
    ///
    /// When the tool was listed with an `outputSchema`, a successful result's
    /// `structuredContent` is checked against it ([`CallError::InvalidStructuredContent`]).
    /// A tool that fails reports it in the result (`is_error`), not as an `Err`.
    pub async fn call_tool(
        &self,
        name: impl Into<String>,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, CallError> {
        let arguments = match serde_json::to_value(arguments).map_err(CallError::Decode)? {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(CallError::Decode(serde::de::Error::custom(format!(
                    "tool arguments must serialize to a JSON object, not {other}"
                ))));
            }
        };
        self.call_tool_with(CallToolRequestParams {
            meta: None,
            arguments,
            input_responses: None,
            name: name.into(),
            request_state: None,
            task: None,
        })
        .await
    }

    /// `tools/call` and decodes the tool's `structuredContent` into `T`.
    pub async fn call_tool_structured<T: DeserializeOwned>(
        &self,
        name: impl Into<String>,
        arguments: impl Serialize,
    ) -> Result<T, CallError> {
        let name = name.into();
        let result = self.call_tool(name.clone(), arguments).await?;
        if result.is_error == Some(true) {
            let text = result
                .content
                .iter()
                .filter_map(|block| match block {
                    mcp_types::ContentBlock::Text(text) => Some(text.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            return Err(CallError::InvalidStructuredContent {
                tool: name,
                reason: format!("the tool failed: {text}"),
            });
        }
        let structured =
            result
                .structured_content
                .ok_or_else(|| CallError::InvalidStructuredContent {
                    tool: name,
                    reason: "the result has no structuredContent".into(),
                })?;
        serde_json::from_value(structured).map_err(CallError::Decode)
    }

    /// `tools/call` with spec-shaped params.
    ///
    /// On a stateless session an `input_required` answer is resolved here: the client's
    /// handlers answer each of the server's `inputRequests` and the call is repeated with the
    /// answers and the server's `requestState`, for at most
    /// [`ClientBuilder::max_input_rounds`](crate::ClientBuilder::max_input_rounds) rounds
    /// ([`CallError::RoundsExceeded`] after). [`ClientSession::call_tool_once`] leaves that to
    /// the caller.
    pub async fn call_tool_with(
        &self,
        params: CallToolRequestParams,
    ) -> Result<CallToolResult, CallError> {
        self.check("tools/call", Some(("tools", &["tools"])))?;
        let name = params.name.clone();
        let params = self.encode_call(params)?;
        let result: CallToolResult = self.drive("tools/call", params).await?;
        self.validate_structured(&name, &result)?;
        Ok(result)
    }

    /// One round of `tools/call`: the result, or the server's request for input (stateless
    /// sessions only; a session-era server always gives the result). To continue, set
    /// `input_responses` (see [`ClientSession::answer_input_requests`]) and `request_state` on
    /// the same params and call again.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_client::ClientSession) -> Result<(), mcp_client::CallError> {
    /// use mcp_client::Outcome;
    /// use mcp_types::CallToolRequestParams;
    ///
    /// let mut params: CallToolRequestParams =
    ///     serde_json::from_value(serde_json::json!({"name": "deploy"})).unwrap();
    /// let result = loop {
    ///     match session.call_tool_once(params.clone()).await? {
    ///         Outcome::Complete(result) => break result,
    ///         Outcome::InputRequired(input) => {
    ///             let requests = input.input_requests.clone().unwrap_or_default();
    ///             params.input_responses = Some(session.answer_input_requests(&requests).await?);
    ///             params.request_state = input.request_state;
    ///         }
    ///         _ => unreachable!("no other outcome"),
    ///     }
    /// };
    /// # let _ = result; Ok(()) }
    /// ```
    pub async fn call_tool_once(
        &self,
        params: CallToolRequestParams,
    ) -> Result<Outcome<CallToolResult>, CallError> {
        self.check("tools/call", Some(("tools", &["tools"])))?;
        let name = params.name.clone();
        let params = self.encode_call(params)?;
        let outcome: Outcome<CallToolResult> = self.round("tools/call", &params).await?;
        if let Outcome::Complete(result) = &outcome {
            self.validate_structured(&name, result)?;
        }
        Ok(outcome)
    }

    /// Answers a server's `inputRequests` with this client's handlers (sampling, elicitation,
    /// roots), as [`ClientSession::call_tool_once`] callers need for the retry.
    pub async fn answer_input_requests(
        &self,
        requests: &InputRequests,
    ) -> Result<InputResponses, CallError> {
        let mut responses = InputResponses::new();
        for (key, answer) in self.answer_inputs(requests).await? {
            let response: InputResponse =
                serde_json::from_value(answer).map_err(CallError::Decode)?;
            responses.insert(key, response);
        }
        Ok(responses)
    }

    async fn answer_inputs(
        &self,
        requests: &InputRequests,
    ) -> Result<Map<String, Value>, CallError> {
        let mut answers = Map::new();
        for (key, request) in requests {
            let text = mcp_jsonrpc::to_raw(request).map_err(CallError::Decode)?;
            let request: RawInputRequest<'_> =
                serde_json::from_str(text.get()).map_err(CallError::Decode)?;
            let answer = self
                .answer_input(key, &request.method, request.params)
                .await?;
            answers.insert(key.clone(), answer);
        }
        Ok(answers)
    }

    /// Answers the `inputRequests` of an `input_required` result from the server's text, so the
    /// params reach the handlers as the server wrote them (the fields of a form in its order).
    pub(crate) async fn answer_raw_inputs(
        &self,
        result: &RawValue,
    ) -> Result<Map<String, Value>, CallError> {
        #[derive(serde::Deserialize)]
        struct RawInputs<'a> {
            #[serde(rename = "inputRequests", borrow, default)]
            input_requests: Option<std::collections::BTreeMap<String, RawInputRequest<'a>>>,
        }
        let inputs: RawInputs<'_> =
            serde_json::from_str(result.get()).map_err(CallError::Decode)?;
        let mut answers = Map::new();
        for (key, request) in inputs.input_requests.unwrap_or_default() {
            let answer = self
                .answer_input(&key, &request.method, request.params)
                .await?;
            answers.insert(key, answer);
        }
        Ok(answers)
    }

    async fn answer_input(
        &self,
        key: &str,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Value, CallError> {
        self.inner
            .incoming
            .request(method, params)
            .await
            .map_err(|error| CallError::InputRequest {
                key: key.to_owned(),
                method: method.to_owned(),
                error,
            })
    }

    /// One round of a request that may need input: the outcome of sending `params` once.
    async fn round<R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &Value,
    ) -> Result<Outcome<R>, CallError> {
        self.round_keeping_text(method, params)
            .await
            .map(|(outcome, _)| outcome)
    }

    /// [`Self::round`], also returning the result's text when it is stateless.
    async fn round_keeping_text<R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &Value,
    ) -> Result<(Outcome<R>, Option<Box<RawValue>>), CallError> {
        if !self.is_stateless() {
            return self
                .send(method, Some(params))
                .await
                .map(|result| (Outcome::Complete(result), None));
        }
        let raw = match self.send_raw(method, Some(params)).await {
            // The server expects `Mcp-Param-*` headers the transport did not send: the tool's
            // schema changed. Listing the tools again teaches the transport the new ones.
            Err(CallError::Rpc(error))
                if method == "tools/call" && error.code == HEADER_MISMATCH =>
            {
                tracing::debug!(message = %error.message, "header mismatch; listing the tools again and retrying once");
                if let Some(cache) = &self.inner.cache {
                    cache.invalidate("tools/list");
                }
                let _ = self.list_all_tools().await?;
                self.send_raw(method, Some(params)).await?
            }
            other => other?,
        };
        let outcome = decode_outcome(&raw)?;
        Ok((outcome, Some(raw)))
    }

    /// Sends `params` and resolves `input_required` rounds until the final result.
    async fn drive<R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<R, CallError> {
        let max = self.inner.client.shared.max_input_rounds;
        let mut params = params;
        let mut rounds = 0;
        loop {
            let (outcome, text) = self.round_keeping_text(method, &params).await?;
            let input: InputRequiredResult = match outcome {
                Outcome::Complete(result) => return Ok(result),
                Outcome::InputRequired(input) => input,
            };
            if rounds >= max {
                return Err(CallError::RoundsExceeded { method, rounds });
            }
            rounds += 1;
            let answers = match (&text, &input.input_requests) {
                (Some(text), Some(_)) => self.answer_raw_inputs(text).await?,
                (None, Some(requests)) => self.answer_inputs(requests).await?,
                (_, None) => Map::new(),
            };
            params = retry_params(&params, answers, input.request_state.as_deref());
        }
    }

    pub(crate) fn validate_structured(
        &self,
        tool: &str,
        result: &CallToolResult,
    ) -> Result<(), CallError> {
        if result.is_error == Some(true) {
            return Ok(());
        }
        let schema = match self.inner.output_schemas.lock() {
            Ok(cache) => cache.get(tool).cloned(),
            Err(_) => None,
        };
        let Some(schema) = schema else {
            return Ok(());
        };
        let Some(validator) = &schema.validator else {
            return Ok(());
        };
        let Some(structured) = &result.structured_content else {
            return Err(CallError::InvalidStructuredContent {
                tool: tool.to_owned(),
                reason: "the tool declares an outputSchema but returned no structuredContent"
                    .into(),
            });
        };
        if validator.is_valid(structured) {
            return Ok(());
        }
        let problems: Vec<String> = validator
            .errors(structured, 8)
            .iter()
            .map(|error| match error.instance_path() {
                "" => error.to_string(),
                at => format!("{at}: {error}"),
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CallError::InvalidStructuredContent {
                tool: tool.to_owned(),
                reason: problems.join("; "),
            })
        }
    }

    /// `resources/list`: one page, from `cursor`.
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, CallError> {
        self.list_page("resources/list", ("resources", &["resources"]), cursor)
            .await
    }

    /// Every resource, across pages.
    pub async fn list_all_resources(&self) -> Result<Vec<Resource>, CallError> {
        self.resources().try_collect().await
    }

    /// Every resource as a stream that fetches pages as it goes.
    pub fn resources(&self) -> impl Stream<Item = Result<Resource, CallError>> + Send + 'static {
        self.pages::<ListResourcesResult>("resources/list", ("resources", &["resources"]))
    }

    /// `resources/templates/list`: one page, from `cursor`.
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, CallError> {
        self.list_page(
            "resources/templates/list",
            ("resources", &["resources"]),
            cursor,
        )
        .await
    }

    /// Every resource template, across pages.
    pub async fn list_all_resource_templates(&self) -> Result<Vec<ResourceTemplate>, CallError> {
        self.resource_templates().try_collect().await
    }

    /// Every resource template as a stream that fetches pages as it goes.
    pub fn resource_templates(
        &self,
    ) -> impl Stream<Item = Result<ResourceTemplate, CallError>> + Send + 'static {
        self.pages::<ListResourceTemplatesResult>(
            "resources/templates/list",
            ("resources", &["resources"]),
        )
    }

    /// `resources/read`.
    pub async fn read_resource(
        &self,
        uri: impl Into<String>,
    ) -> Result<ReadResourceResult, CallError> {
        self.read_resource_with(model(json!({ "uri": uri.into() }))?)
            .await
    }

    /// `resources/read` with spec-shaped params; `input_required` rounds are resolved as for
    /// [`ClientSession::call_tool_with`].
    pub async fn read_resource_with(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, CallError> {
        self.check("resources/read", Some(("resources", &["resources"])))?;
        let params = self.encode(params)?;
        self.drive("resources/read", params).await
    }

    /// One round of `resources/read` (see [`ClientSession::call_tool_once`]).
    pub async fn read_resource_once(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<Outcome<ReadResourceResult>, CallError> {
        self.check("resources/read", Some(("resources", &["resources"])))?;
        let params = self.encode(params)?;
        self.round("resources/read", &params).await
    }

    /// `resources/subscribe`: the server then sends
    /// [`ServerNotification::ResourceUpdated`] when the resource changes.
    pub async fn subscribe(&self, uri: impl Into<String>) -> Result<(), CallError> {
        self.check(
            "resources/subscribe",
            Some(("resources.subscribe", &["resources", "subscribe"])),
        )?;
        let _: Value = self
            .send("resources/subscribe", Some(&json!({"uri": uri.into()})))
            .await?;
        Ok(())
    }

    /// `resources/unsubscribe`.
    pub async fn unsubscribe(&self, uri: impl Into<String>) -> Result<(), CallError> {
        self.check(
            "resources/unsubscribe",
            Some(("resources.subscribe", &["resources", "subscribe"])),
        )?;
        let _: Value = self
            .send("resources/unsubscribe", Some(&json!({"uri": uri.into()})))
            .await?;
        Ok(())
    }

    /// `prompts/list`: one page, from `cursor`.
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, CallError> {
        self.list_page("prompts/list", ("prompts", &["prompts"]), cursor)
            .await
    }

    /// Every prompt, across pages.
    pub async fn list_all_prompts(&self) -> Result<Vec<Prompt>, CallError> {
        self.prompts().try_collect().await
    }

    /// Every prompt as a stream that fetches pages as it goes.
    pub fn prompts(&self) -> impl Stream<Item = Result<Prompt, CallError>> + Send + 'static {
        self.pages::<ListPromptsResult>("prompts/list", ("prompts", &["prompts"]))
    }

    /// `prompts/get` with string arguments.
    pub async fn get_prompt<K, V>(
        &self,
        name: impl Into<String>,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<GetPromptResult, CallError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let arguments: Map<String, Value> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), Value::String(v.into())))
            .collect();
        let mut params = json!({ "name": name.into() });
        if !arguments.is_empty() {
            params["arguments"] = Value::Object(arguments);
        }
        self.get_prompt_with(model(params)?).await
    }

    /// `prompts/get` with spec-shaped params; `input_required` rounds are resolved as for
    /// [`ClientSession::call_tool_with`].
    pub async fn get_prompt_with(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, CallError> {
        self.check("prompts/get", Some(("prompts", &["prompts"])))?;
        let params = self.encode(params)?;
        self.drive("prompts/get", params).await
    }

    /// One round of `prompts/get` (see [`ClientSession::call_tool_once`]).
    pub async fn get_prompt_once(
        &self,
        params: GetPromptRequestParams,
    ) -> Result<Outcome<GetPromptResult>, CallError> {
        self.check("prompts/get", Some(("prompts", &["prompts"])))?;
        let params = self.encode(params)?;
        self.round("prompts/get", &params).await
    }

    /// `completion/complete`: argument suggestions for a prompt or resource template.
    pub async fn complete(
        &self,
        params: CompleteRequestParams,
    ) -> Result<CompleteResult, CallError> {
        // 2024-11-05 had no `completions` capability; later revisions require it.
        let capability: Option<(&'static str, &[&str])> =
            if self.inner.version.has(Feature::CompletionsCapability) {
                Some(("completions", &["completions"]))
            } else {
                None
            };
        self.check("completion/complete", capability)?;
        let params = self.encode(params)?;
        self.send("completion/complete", Some(&params)).await
    }

    /// `logging/setLevel`: the server then sends log messages at `level` and above.
    ///
    /// A stateless session has no such method; there the level is remembered and every later
    /// request made through this session (and its clones) asks for it in its `_meta`
    /// (`io.modelcontextprotocol/logLevel`), with the same effect on the requests' streams.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), CallError> {
        if self.is_stateless() {
            if !self.has_capability(&["logging"]) {
                return Err(CallError::MissingCapability {
                    method: "logging/setLevel",
                    capability: "logging",
                });
            }
            *self
                .inner
                .log_level
                .lock()
                .unwrap_or_else(|e| e.into_inner()) = Some(level);
            return Ok(());
        }
        self.check("logging/setLevel", Some(("logging", &["logging"])))?;
        let _: Value = self
            .send("logging/setLevel", Some(&json!({ "level": level })))
            .await?;
        Ok(())
    }

    /// `server/discover` (stateless sessions): the server's versions, capabilities and info. With
    /// a response cache it is answered from the cache while its `ttlMs` lasts.
    pub async fn discover(&self) -> Result<DiscoverResult, CallError> {
        const METHOD: &str = "server/discover";
        self.check(METHOD, None)?;
        let text = match self.inner.cache.as_ref().and_then(|c| c.get(METHOD, None)) {
            Some(text) => text,
            None => {
                let raw = self.send_raw(METHOD, None).await?;
                if let Some(cache) = &self.inner.cache {
                    cache.put(METHOD, None, raw.get());
                }
                raw.get().to_owned()
            }
        };
        lifecycle::parse_discover(&text).map_err(CallError::InvalidResponse)
    }

    /// Drops every cached result (see
    /// [`ClientBuilder::response_cache`](crate::ClientBuilder::response_cache)).
    pub fn clear_cache(&self) {
        if let Some(cache) = &self.inner.cache {
            cache.clear();
        }
    }

    /// `subscriptions/listen` (stateless sessions): opens a subscription to the change
    /// notifications `filter` opts in to and returns once the server has acknowledged it.
    /// Its notifications also reach [`ClientSession::notifications`] and the notification
    /// callback. On a session-era server use [`ClientSession::notifications`] and
    /// [`ClientSession::subscribe`] instead.
    ///
    /// ```no_run
    /// # async fn f(session: mcp_client::ClientSession) -> Result<(), mcp_client::CallError> {
    /// use mcp_client::ServerNotification;
    /// use mcp_types::SubscriptionFilter;
    ///
    /// let filter = SubscriptionFilter { tools_list_changed: Some(true), ..Default::default() };
    /// let mut changes = session.listen(filter).await?;
    /// while let Some(change) = changes.recv().await {
    ///     if matches!(change, ServerNotification::ToolListChanged) {
    ///         let tools = session.list_all_tools().await?;
    ///         # let _ = tools;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn listen(&self, filter: SubscriptionFilter) -> Result<Subscription, CallError> {
        const METHOD: &str = "subscriptions/listen";
        self.check(METHOD, None)?;
        let _gate = self.inner.listen_gate.lock().await;
        let subscriptions = self.inner.incoming.subscriptions().clone();
        let (tx, rx) = mpsc::channel(self.inner.client.shared.subscription_buffer);
        let (ack_tx, ack_rx) = oneshot::channel();
        let end = Arc::new(Notify::new());
        let key = Arc::new(OnceLock::new());
        subscriptions.expect(PendingListen {
            tx,
            ack: ack_tx,
            end: end.clone(),
            key: key.clone(),
        });
        let key_slot = key.clone();
        let params = json!({ "notifications": filter });
        let (done_tx, done_rx) = oneshot::channel::<CallError>();
        // The listen request lives as long as the subscription: no timeout.
        let listener = self.with_timeout(None);
        let task = {
            let subscriptions = subscriptions.clone();
            let end = end.clone();
            tokio::spawn(async move {
                let outcome = tokio::select! {
                    outcome = listener.send_raw(METHOD, Some(&params)) => outcome.err(),
                    () = end.notified() => None,
                };
                match key.get() {
                    Some(key) => subscriptions.remove(key),
                    None => subscriptions.abandon(&end),
                }
                if let Some(error) = outcome {
                    tracing::debug!(%error, "subscriptions/listen ended with an error");
                    let _ = done_tx.send(error);
                }
            })
        };
        let acknowledged = async {
            tokio::select! {
                ack = ack_rx => ack.map_err(|_| {
                    CallError::InvalidResponse(
                        "the listen request ended before the server acknowledged it".into(),
                    )
                }),
                error = done_rx => Err(error.unwrap_or_else(|_| {
                    CallError::InvalidResponse(
                        "the listen request ended before the server acknowledged it".into(),
                    )
                })),
            }
        };
        let acknowledged = match self.timeout() {
            Some(limit) => tokio::time::timeout(limit, acknowledged)
                .await
                .unwrap_or(Err(CallError::Timeout)),
            None => acknowledged.await,
        };
        match acknowledged {
            Ok(filter) => {
                let key = key_slot.get().cloned().unwrap_or_default();
                Ok(Subscription {
                    acknowledged: filter,
                    key,
                    rx,
                    subscriptions,
                    task,
                })
            }
            Err(error) => {
                subscriptions.abandon(&end);
                task.abort();
                Err(error)
            }
        }
    }

    /// Sends any request the negotiated revision defines, with raw JSON params: the escape hatch
    /// for methods without a typed call. The capability check is the caller's. On a stateless
    /// session the request `_meta` is added.
    pub async fn request_raw(
        &self,
        method: &'static str,
        params: Option<Value>,
    ) -> Result<Value, CallError> {
        self.check(method, None)?;
        self.send(method, params.as_ref()).await
    }
}

fn spawn_roots_watcher(
    session: std::sync::Weak<SessionInner>,
    mut changes: tokio::sync::watch::Receiver<u64>,
) {
    tokio::spawn(async move {
        loop {
            let closed = match session.upgrade() {
                Some(inner) => inner.rpc.closed_signal(),
                None => return,
            };
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
                _ = closed => return,
            }
            let Some(inner) = session.upgrade() else {
                return;
            };
            if let Err(error) = inner
                .rpc
                .notify("notifications/roots/list_changed", None)
                .await
            {
                tracing::debug!(%error, "could not send roots/list_changed");
                return;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(value: Value) -> CallToolRequestParams {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn plain_tool_calls_encode_as_the_generic_encoding_does() {
        for value in [
            json!({"name": "echo", "arguments": {"text": "hi", "n": [1, {"a": null}]}}),
            json!({"name": "echo"}),
            json!({"name": "echo", "arguments": {}}),
        ] {
            let expected = serde_json::to_value(params(value.clone())).unwrap();
            assert!(is_plain_call(&params(value.clone())), "{value}");
            let moved = plain_call(params(value.clone()));
            assert_eq!(moved, expected, "{value}");
            assert_eq!(moved, value);
        }
    }

    #[test]
    fn tool_calls_with_other_members_take_the_generic_encoding() {
        for value in [
            json!({"name": "echo", "_meta": {"progressToken": 1}}),
            json!({"name": "echo", "requestState": "s"}),
            json!({"name": "echo", "inputResponses": {}}),
            json!({"name": "echo", "task": {"ttl": 1000}}),
        ] {
            assert!(!is_plain_call(&params(value.clone())), "{value}");
        }
    }
}
