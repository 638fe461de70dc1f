//! The context a handler receives: who the client is, progress, logging, cancellation, app state
//! and requests back to the client (sampling, elicitation, roots).
//!
//! Two seams keep handler code independent of the era and the transport:
//!
//! * [`ClientScope`]: the revision, client info and capabilities of *one request*. A stateful
//!   session shares the one it built from `initialize`; a stateless request brings its own.
//! * [`ClientChannel`]: how a request reaches its client. A stateful session sends real
//!   requests and notifications on its connection, tagged with the inbound request id; other
//!   backends implement the same operations differently.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use mcp_jsonrpc::{ErrorObject, Extensions, Id};
use mcp_types::wire;
use mcp_types::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestFormParams, ElicitRequestParams, ElicitRequestURLParams,
    ElicitResultAction, Feature, Implementation, InputRequest, InputResponse, JsonObject,
    ListRootsRequest, ListRootsResult, LoggingLevel, LoggingMessageNotificationParams,
    ProgressNotificationParams, ProgressToken, Project, ProtocolVersion, Root,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::error::AskError;
use crate::input::{InputRequired, Outgoing};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Application state given to the builder: a map from type to shared value.
#[derive(Default)]
pub(crate) struct StateMap {
    map: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.map.insert(TypeId::of::<T>(), Arc::new(value));
    }

    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.map
            .get(&TypeId::of::<T>())
            .and_then(|v| Arc::clone(v).downcast::<T>().ok())
    }
}

/// How one request reaches its client. A stateful session sends requests and notifications on
/// its connection; another backend (the stateless revision, where asks travel in the result)
/// implements the same two operations, so handler code never depends on the transport or era.
pub(crate) trait ClientChannel: Send + Sync + 'static {
    /// Sends a request to the client and waits for its result. `key` names the ask within the
    /// request (handlers pass it to `elicit`, `sample` and `roots`); a session ignores it.
    fn request(
        &self,
        key: &str,
        ask: Outgoing,
        cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Box<RawValue>, AskError>>;

    /// Sends a notification to the client about this request (progress, log messages).
    fn notify(&self, method: &'static str, params: Box<RawValue>) -> BoxFuture<'static, ()>;

    /// Notes that the handler needed a client capability the request did not declare (a path:
    /// `sampling`, `elicitation.url`). The stateless revision answers `-32021` if the handler
    /// then fails; a session has nothing to do.
    fn missing_capability(&self, _path: &'static str) {}

    /// The client's answer under `key` to an [`InputRequired`] of an earlier round.
    fn input_response(&self, key: &str) -> Option<InputResponse>;

    /// The state the handler put in its last [`InputRequired`].
    fn input_state(&self) -> Option<Value>;

    /// Handles an [`InputRequired`] the handler returned: a session asks the client and asks for
    /// a replay; the stateless revision records it and the request answers `input_required`.
    /// `scope` is the request's (the session's client, whose capabilities the asks need).
    fn input_required(
        &self,
        ask: InputRequired,
        scope: &Arc<ClientScope>,
        cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Resume, ErrorObject>>;

    /// The asks a run left unanswered when they are to be fulfilled by a replay (the test mode
    /// [`ServerOptions::force_input_replay`](crate::ServerOptions::force_input_replay) on
    /// sessions); `None` everywhere else.
    fn take_pending(&self) -> Option<InputRequired> {
        None
    }

    /// Whether a run may leave asks for [`take_pending`](Self::take_pending): the handler is
    /// then run again even when its output type cannot ask.
    fn records_asks(&self) -> bool {
        false
    }

    /// Turns the call into a task (the tasks extension); resolves to `true` once it runs as
    /// one, `false` where the call cannot become a task. A call whose request answers otherwise
    /// (no task could be created) never resolves: its handler is dropped.
    fn start_task(&self) -> BoxFuture<'static, bool> {
        Box::pin(std::future::ready(false))
    }

    /// The id of the task the call runs as.
    fn task_id(&self) -> Option<String> {
        None
    }

    /// Records a status message on the task the call runs as; `false` when it is not a task.
    fn task_status(&self, _message: &str) -> bool {
        false
    }

    /// The same client through a channel that outlives this request (the session's
    /// connection), for a task that runs on after its request was answered; `None` where there
    /// is none.
    #[cfg(feature = "tasks")]
    fn detached(&self) -> Option<Arc<dyn ClientChannel>> {
        None
    }
}

/// What to do after an [`InputRequired`] was handed to the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resume {
    /// The answers are in: run the handler again.
    Replay,
    /// The request ends here (it answers `input_required`).
    Stop,
}

/// A log threshold; `u8::MAX` lets nothing through.
#[derive(Debug)]
pub(crate) struct LogThreshold(AtomicU8);

impl LogThreshold {
    pub(crate) fn new(level: Option<LoggingLevel>) -> Self {
        Self(AtomicU8::new(level.map_or(u8::MAX, wire::severity)))
    }
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(wire::severity(level), Ordering::Relaxed);
    }
    pub(crate) fn allows(&self, level: LoggingLevel) -> bool {
        wire::severity(level) >= self.0.load(Ordering::Relaxed)
    }
}

/// What the server knows about the client of one request: its revision, name and capabilities,
/// and the logging threshold that applies. Stateful sessions build one at `initialize` and share
/// it; a stateless request carries its own.
#[derive(Debug)]
pub(crate) struct ClientScope {
    pub(crate) version: ProtocolVersion,
    /// `None`: the client did not say (a stateless request may leave it out).
    pub(crate) info: Option<Implementation>,
    pub(crate) capabilities: ClientCapabilities,
    pub(crate) log: LogThreshold,
}

/// The context of one request: identical for tools, resources, prompts and completions, and the
/// same in every protocol revision.
///
/// ```
/// use mcp_server::{RequestContext, model::LoggingLevel};
///
/// async fn work(cx: RequestContext) {
///     cx.progress(1.0, Some(2.0), Some("halfway")).await;
///     cx.log(LoggingLevel::Info, "still working").await;
///     if cx.is_cancelled() {
///         return;
///     }
/// }
/// # let _ = work;
/// ```
#[derive(Clone)]
pub struct RequestContext {
    pub(crate) scope: Arc<ClientScope>,
    pub(crate) channel: Arc<dyn ClientChannel>,
    pub(crate) request_id: Id,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) cancel: mcp_jsonrpc::Cancellation,
    pub(crate) extensions: Extensions,
    pub(crate) uri: Option<Arc<str>>,
    pub(crate) server: crate::Server,
}

/// The context of a tool call (the same type as [`RequestContext`]).
pub type ToolContext = RequestContext;

impl fmt::Debug for RequestContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestContext")
            .field("request_id", &self.request_id)
            .field("protocol_version", &self.scope.version)
            .field("client", &self.client_info().name)
            .finish_non_exhaustive()
    }
}

/// The answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicitation<T> {
    /// The user submitted the form (or completed the URL flow).
    Accepted(T),
    /// The user declined.
    Declined,
    /// The user dismissed the request.
    Cancelled,
}

/// The client's raw answer to `elicitation/create`, read leniently: form values are checked
/// against the schema the server sent rather than against a fixed value type.
#[derive(serde::Deserialize)]
struct RawElicitResult {
    action: ElicitResultAction,
    #[serde(default)]
    content: Option<JsonObject>,
}

fn encode<T: Serialize + Project>(
    mut value: T,
    version: ProtocolVersion,
) -> Result<Box<RawValue>, AskError> {
    value.project(version);
    mcp_jsonrpc::to_raw(&value).map_err(|e| AskError::InvalidRequest(e.to_string()))
}

/// An ask of `method` with `params`: projected to `version`, encoded once for a session, and
/// kept typed (`wrap` makes it the input request) for the channels that record asks.
fn outgoing<T: Serialize + Project>(
    method: &'static str,
    mut params: T,
    version: ProtocolVersion,
    wrap: impl FnOnce(T) -> InputRequest,
) -> Result<Outgoing, AskError> {
    params.project(version);
    let raw = mcp_jsonrpc::to_raw(&params).map_err(|e| AskError::InvalidRequest(e.to_string()))?;
    Ok(Outgoing {
        method,
        params: Some(raw),
        request: wrap(params),
    })
}

/// An elicitation with `params`, as an input request.
/// The form [`RequestContext::elicit_form`] asks with.
enum Form {
    /// Derived from a Rust type and restricted already ([`crate::schema::elicitation_schema_for`]),
    /// with schemars' numeric formats; its fields are sent in `order`.
    Derived { schema: Value, order: Vec<String> },
    /// Written by hand; restricted when it is asked.
    #[cfg(feature = "validation")]
    HandWritten(Value),
}

fn elicit_request(params: ElicitRequestParams) -> InputRequest {
    InputRequest::Elicit(ElicitRequest {
        id: None,
        jsonrpc: None,
        method: mcp_types::tag::ElicitationCreate,
        params,
    })
}

fn decode<T: DeserializeOwned>(raw: &RawValue) -> Result<T, AskError> {
    mcp_jsonrpc::from_raw(raw).map_err(|e| AskError::InvalidResponse(e.to_string()))
}

impl RequestContext {
    /// The protocol revision of this request (negotiated by the session).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.scope.version
    }

    /// The client's name and version, as it sent them (`unknown` for both when a stateless
    /// request carries no `clientInfo`).
    pub fn client_info(&self) -> &Implementation {
        static UNKNOWN: std::sync::OnceLock<Implementation> = std::sync::OnceLock::new();
        self.scope
            .info
            .as_ref()
            .unwrap_or_else(|| UNKNOWN.get_or_init(|| Implementation::new("unknown", "unknown")))
    }

    /// The capabilities the client declared.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.scope.capabilities
    }

    /// Whether the client declared a capability, by path (`["sampling"]`,
    /// `["elicitation", "url"]`, `["roots"]`).
    pub fn client_supports(&self, path: &[&str]) -> bool {
        let caps = &self.scope.capabilities;
        match path {
            [] => true,
            ["sampling"] => caps.sampling.is_some(),
            ["sampling", "tools"] => caps.sampling.as_ref().is_some_and(|s| s.tools.is_some()),
            ["sampling", "context"] => caps.sampling.as_ref().is_some_and(|s| s.context.is_some()),
            ["roots"] => caps.roots.is_some(),
            ["roots", "listChanged"] => caps
                .roots
                .as_ref()
                .is_some_and(|r| r.get("listChanged") == Some(&Value::Bool(true))),
            ["elicitation"] => caps.elicitation.is_some(),
            ["elicitation", "form"] => caps.elicitation.as_ref().is_some_and(|e| {
                // An empty `elicitation: {}` means form mode only.
                e.form.is_some() || (e.form.is_none() && e.url.is_none())
            }),
            ["elicitation", "url"] => caps.elicitation.as_ref().is_some_and(|e| e.url.is_some()),
            _ => {
                // Anything else (experimental, extensions, tasks): walk the JSON form.
                let Ok(mut cur) = serde_json::to_value(caps) else {
                    return false;
                };
                for p in path {
                    match cur.get_mut(*p) {
                        Some(v) if !v.is_null() => cur = v.take(),
                        _ => return false,
                    }
                }
                true
            }
        }
    }

    /// The JSON-RPC id of the request.
    pub fn request_id(&self) -> &Id {
        &self.request_id
    }

    /// The server handling the request (to add or remove tools, resources and prompts at run
    /// time, or to announce resource updates).
    pub fn server(&self) -> &crate::Server {
        &self.server
    }

    /// The URI being read (resource and template handlers only).
    pub fn uri(&self) -> Option<&str> {
        self.uri.as_deref()
    }

    /// Application state given to [`ServerBuilder::with_state`](crate::ServerBuilder::with_state).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.server.inner.state.get::<T>()
    }

    /// What the transport (and any middleware) attached to the request: for example the HTTP
    /// request's parts, the session id or an authenticated principal.
    ///
    /// ```
    /// # async fn f(cx: mcp_server::RequestContext) {
    /// #[derive(Debug)]
    /// struct Principal(String);
    /// if let Some(who) = cx.extensions().get::<Principal>() {
    ///     tracing::info!(?who, "authenticated call");
    /// }
    /// # }
    /// ```
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// Whether the client cancelled the request (or the connection closed).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled.
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// The request's cancellation token (to hand to other tasks).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.token().clone()
    }

    /// Reports progress. Sent only if the client asked for progress (a `progressToken` in the
    /// request's `_meta`); otherwise nothing happens. `message` reaches clients of 2025-03-26 and
    /// later. In a call that runs as a task (which has no stream for notifications) `message`
    /// becomes the task's `statusMessage` instead.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(message) = message {
            if self.channel.task_status(message) {
                return;
            }
        } else if self.channel.task_id().is_some() {
            return;
        }
        let Some(token) = &self.progress_token else {
            return;
        };
        let params = ProgressNotificationParams {
            meta: None,
            message: message.map(str::to_owned),
            progress,
            progress_token: token.clone(),
            total,
        };
        match encode(params, self.scope.version) {
            Ok(raw) => self.channel.notify("notifications/progress", raw).await,
            Err(e) => tracing::warn!(error = %e, "progress not sent"),
        }
    }

    /// Sends a log message (`notifications/message`) if the client's level lets it through.
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) {
        self.log_to(level, None, data).await
    }

    /// Like [`log`](Self::log), naming the logger.
    pub async fn log_to(&self, level: LoggingLevel, logger: Option<&str>, data: impl Serialize) {
        if !self.scope.log.allows(level) {
            return;
        }
        let data = serde_json::to_value(data).unwrap_or_else(|e| json!(e.to_string()));
        let params = LoggingMessageNotificationParams {
            meta: None,
            data,
            level,
            logger: logger.map(str::to_owned),
        };
        match encode(params, self.scope.version) {
            Ok(raw) => self.channel.notify("notifications/message", raw).await,
            Err(e) => tracing::warn!(error = %e, "log message not sent"),
        }
    }

    /// Asks the user for input through the client, with a form generated from `T` (flat
    /// primitive fields only: strings, numbers, booleans, enums). `key` names the ask within the
    /// request; it keeps the answer apart from other asks when a handler is replayed under the
    /// stateless revision.
    ///
    /// Fails with [`AskError::MissingCapability`] when the client did not declare elicitation
    /// and with [`AskError::NotInRevision`] before 2025-06-18.
    pub async fn elicit<T>(&self, key: &str, message: &str) -> Result<Elicitation<T>, AskError>
    where
        T: DeserializeOwned + schemars::JsonSchema,
    {
        let schema = crate::schema::elicitation_schema_for::<T>().map_err(|e| {
            AskError::InvalidRequest(format!("the requested type is not a flat form: {e}"))
        })?;
        // The form's fields in the order `T` declares them, not the schema map's.
        let order = crate::schema::property_order(&schema, crate::schema::declared_fields::<T>());
        match self
            .elicit_form(key, message, Form::Derived { schema, order })
            .await?
        {
            Elicitation::Accepted(content) => {
                let value = serde_json::from_value(Value::Object(content)).map_err(|e| {
                    AskError::InvalidResponse(format!("the submitted form does not match: {e}"))
                })?;
                Ok(Elicitation::Accepted(value))
            }
            Elicitation::Declined => Ok(Elicitation::Declined),
            Elicitation::Cancelled => Ok(Elicitation::Cancelled),
        }
    }

    /// Asks the user for input with an explicit restricted schema (form mode). Accepted content
    /// is checked against the schema before it is returned.
    ///
    /// Only with the `validation` feature, which checks the answers.
    #[cfg(feature = "validation")]
    pub async fn elicit_with_schema(
        &self,
        key: &str,
        message: &str,
        schema: Value,
    ) -> Result<Elicitation<JsonObject>, AskError> {
        self.elicit_form(key, message, Form::HandWritten(schema))
            .await
    }

    /// Asks for `form`. The answer is checked against its schema when the schema states more
    /// than a derived form's type enforces.
    async fn elicit_form(
        &self,
        key: &str,
        message: &str,
        form: Form,
    ) -> Result<Elicitation<JsonObject>, AskError> {
        use crate::validate::CompiledSchema;
        self.require_elicitation("form")?;
        let invalid =
            |e: String| AskError::InvalidRequest(format!("invalid requested schema: {e}"));
        let (checker, schema, order) = match form {
            Form::Derived { mut schema, order } => {
                let checker = CompiledSchema::deferred(schema.clone()).map_err(invalid)?;
                crate::schema::standard_formats(&mut schema);
                (checker, schema, Some(order))
            }
            #[cfg(feature = "validation")]
            Form::HandWritten(schema) => {
                let schema = crate::schema::restrict_elicitation_schema(schema).map_err(invalid)?;
                (
                    CompiledSchema::object(schema.clone()).map_err(invalid)?,
                    schema,
                    None,
                )
            }
        };
        let requested_schema =
            serde_json::from_value(schema).map_err(|e| invalid(e.to_string()))?;
        // The generated projection keeps `mode` for 2025-06-18 (the form-params type only exists
        // from 2025-11-25 on, so the generator sees `mode` in every revision that has the type);
        // the field is new in 2025-11-25.
        let mode = self
            .scope
            .version
            .has(Feature::ElicitationMode)
            .then_some(mcp_types::tag::Form);
        let params = ElicitRequestFormParams {
            meta: None,
            message: message.to_owned(),
            mode,
            requested_schema,
            task: None,
        };
        let mut ask = outgoing("elicitation/create", params, self.scope.version, |p| {
            elicit_request(ElicitRequestParams::Form(p))
        })?;
        if let (Some(order), Some(encoded)) = (order, &ask.params) {
            ask.params = Some(
                crate::schema::with_property_order(encoded, &order)
                    .map_err(|e| AskError::InvalidRequest(e.to_string()))?,
            );
        }
        let raw = self.request(key, ask).await?;
        let answer: RawElicitResult = decode(&raw)?;
        Ok(match answer.action {
            ElicitResultAction::Accept => {
                let content = answer.content.unwrap_or_default();
                let value = Value::Object(content);
                checker
                    .check_if_needed(&value)
                    .map_err(|e| AskError::InvalidResponse(format!("submitted form: {e}")))?;
                match value {
                    Value::Object(content) => Elicitation::Accepted(content),
                    _ => Elicitation::Accepted(JsonObject::new()),
                }
            }
            ElicitResultAction::Decline => Elicitation::Declined,
            ElicitResultAction::Cancel => Elicitation::Cancelled,
        })
    }

    /// Sends the user to a URL (URL-mode elicitation, 2025-11-25 with `elicitation.url`).
    pub async fn elicit_url(
        &self,
        key: &str,
        message: &str,
        url: &str,
        elicitation_id: &str,
    ) -> Result<ElicitResultAction, AskError> {
        if !self.protocol_version().has(Feature::UrlElicitation) {
            return Err(AskError::NotInRevision {
                feature: "URL-mode elicitation",
                version: self.protocol_version().to_string(),
            });
        }
        self.require_elicitation("url")?;
        let params = ElicitRequestURLParams {
            meta: None,
            elicitation_id: Some(elicitation_id.to_owned()),
            message: message.to_owned(),
            mode: mcp_types::tag::Url,
            task: None,
            url: url.to_owned(),
        };
        let ask = outgoing("elicitation/create", params, self.scope.version, |p| {
            elicit_request(ElicitRequestParams::URL(p))
        })?;
        let raw = self.request(key, ask).await?;
        let answer: RawElicitResult = decode(&raw)?;
        Ok(answer.action)
    }

    fn require_elicitation(&self, mode: &'static str) -> Result<(), AskError> {
        if !wire::server_may_send("elicitation/create", self.protocol_version()) {
            return Err(AskError::NotInRevision {
                feature: "elicitation",
                version: self.protocol_version().to_string(),
            });
        }
        if !self.client_supports(&["elicitation"]) {
            return Err(self.missing("elicitation"));
        }
        match mode {
            "url" if !self.client_supports(&["elicitation", "url"]) => {
                Err(self.missing("elicitation.url"))
            }
            "form" if !self.client_supports(&["elicitation", "form"]) => {
                Err(self.missing("elicitation.form"))
            }
            _ => Ok(()),
        }
    }

    /// Asks the client's language model for a completion (`sampling/createMessage`). Tools in
    /// the request need a 2025-11-25 client that declared `sampling.tools`.
    pub async fn sample(
        &self,
        key: &str,
        request: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, AskError> {
        if !self.client_supports(&["sampling"]) {
            return Err(self.missing("sampling"));
        }
        if request.tools.is_some() || request.tool_choice.is_some() {
            if !self.protocol_version().has(Feature::SamplingTools) {
                return Err(AskError::NotInRevision {
                    feature: "tools in sampling",
                    version: self.protocol_version().to_string(),
                });
            }
            if !self.client_supports(&["sampling", "tools"]) {
                return Err(self.missing("sampling.tools"));
            }
        }
        let ask = outgoing(
            "sampling/createMessage",
            request,
            self.scope.version,
            |params| {
                InputRequest::CreateMessage(CreateMessageRequest {
                    id: None,
                    jsonrpc: None,
                    method: mcp_types::tag::SamplingCreateMessage,
                    params,
                })
            },
        )?;
        let raw = self.request(key, ask).await?;
        decode(&raw)
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn roots(&self, key: &str) -> Result<Vec<Root>, AskError> {
        if !self.client_supports(&["roots"]) {
            return Err(self.missing("roots"));
        }
        let ask = Outgoing {
            method: "roots/list",
            params: None,
            request: InputRequest::ListRoots(ListRootsRequest::default()),
        };
        let raw = self.request(key, ask).await?;
        let list: ListRootsResult = decode(&raw)?;
        Ok(list.roots)
    }

    fn missing(&self, path: &'static str) -> AskError {
        self.channel.missing_capability(path);
        AskError::MissingCapability(path)
    }

    /// The client's answer under `key` to the [`InputRequired`] this handler returned in an
    /// earlier round (the explicit way to ask for input). `None` on the first round, for a key
    /// the client did not answer, and for an answer that is not an `ElicitResult`,
    /// `CreateMessageResult` or `ListRootsResult` (the request then fails with `-32602`).
    ///
    /// ```
    /// use mcp_server::{InputRequired, RequestContext, ToolError};
    /// use mcp_server::model::{ElicitResultAction, InputResponse};
    ///
    /// async fn deploy(cx: RequestContext) -> Result<String, ToolError> {
    ///     match cx.input_response("confirm") {
    ///         Some(InputResponse::Elicit(r)) if r.action == ElicitResultAction::Accept => {
    ///             Ok("deployed".into())
    ///         }
    ///         Some(_) => Ok("cancelled".into()),
    ///         None => {
    ///             let form = serde_json::from_value(serde_json::json!({
    ///                 "mode": "form",
    ///                 "message": "Deploy to production?",
    ///                 "requestedSchema": {"type": "object", "properties": {}},
    ///             }))
    ///             .map_err(ToolError::execution)?;
    ///             Err(InputRequired::new().elicit("confirm", form).into())
    ///         }
    ///     }
    /// }
    /// # let _ = deploy;
    /// ```
    pub fn input_response(&self, key: &str) -> Option<InputResponse> {
        self.channel.input_response(key)
    }

    /// The state this handler attached to its last [`InputRequired`]
    /// ([`InputRequired::state`]), on the round that follows it.
    pub fn input_state(&self) -> Option<Value> {
        self.channel.input_state()
    }

    /// Turns this call into a task, for a tool registered with `Tool::defer_task` (the `tasks`
    /// feature): code before this point is part of the
    /// request (its asks for input are multi round-trip requests, answered before any task
    /// exists), code after it runs as a task whose asks park the task in `input_required`
    /// until `tasks/update` answers them. The request is answered with the task handle
    /// (`resultType: "task"`) when this returns `true`.
    ///
    /// Returns `false`, and the call simply goes on, where it cannot become a task: the tool
    /// does not support tasks, or the client did not declare the extension (every session
    /// revision, and 2026-07-28 requests without it). For a tool without `defer_task` the call
    /// became a task before the handler ran, and this returns `true` at once. If no task can be
    /// created (the store is full) the request is answered with an error and this never
    /// returns.
    ///
    /// ```
    /// use mcp_server::{Elicitation, RequestContext, ToolError};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Name { name: String }
    ///
    /// async fn report(cx: RequestContext) -> Result<String, ToolError> {
    ///     // Asked before the task exists: a multi round-trip request.
    ///     let name = match cx.elicit::<Name>("user_name", "Who is the report for?").await? {
    ///         Elicitation::Accepted(n) => n.name,
    ///         _ => "nobody".to_owned(),
    ///     };
    ///     cx.start_task().await;
    ///     // The long part runs as a task.
    ///     tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    ///     Ok(format!("Report for {name}"))
    /// }
    /// # let _ = report;
    /// ```
    pub async fn start_task(&self) -> bool {
        self.channel.start_task().await
    }

    /// The id of the task this call runs as (tasks extension), if it runs as one.
    pub fn task_id(&self) -> Option<String> {
        self.channel.task_id()
    }

    pub(crate) async fn provide_input(&self, ask: InputRequired) -> Result<Resume, ErrorObject> {
        self.channel
            .input_required(ask, &self.scope, self.cancel.token())
            .await
    }

    pub(crate) fn take_pending(&self) -> Option<InputRequired> {
        self.channel.take_pending()
    }

    pub(crate) fn records_asks(&self) -> bool {
        self.channel.records_asks()
    }

    async fn request(&self, key: &str, ask: Outgoing) -> Result<Box<RawValue>, AskError> {
        self.channel.request(key, ask, self.cancel.token()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_follow_severity_not_the_alphabet() {
        let t = LogThreshold::new(Some(LoggingLevel::Warning));
        assert!(!t.allows(LoggingLevel::Info));
        assert!(!t.allows(LoggingLevel::Debug));
        assert!(t.allows(LoggingLevel::Warning));
        assert!(t.allows(LoggingLevel::Alert));
        assert!(t.allows(LoggingLevel::Emergency));
        t.set(LoggingLevel::Emergency);
        assert!(!t.allows(LoggingLevel::Critical));
        let off = LogThreshold::new(None);
        assert!(!off.allows(LoggingLevel::Emergency));
    }
}
