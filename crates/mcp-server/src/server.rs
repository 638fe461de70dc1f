//! The server value, its builder and the router behind the builder.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcp_jsonrpc::{ErrorObject, Extensions, RawJson};
use mcp_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteRequestParamsRef,
    CompleteResult, GetPromptRequestParams, GetPromptResult, Implementation, JsonObject,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    LoggingLevel, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResult, ServerCapabilities, ServerCapabilitiesPrompts, ServerCapabilitiesResources,
    ServerCapabilitiesTools, SubscribeRequestParams,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::context::{BoxFuture, RequestContext, StateMap};
use crate::dispatch;
use crate::error::{BuildError, resource_not_found};
use crate::handler::{
    Middleware, ServerHandler, completion, no_prompts, no_resources, no_templates, no_tools,
};
use crate::output::{IntoCallToolResult, IntoGetPromptResult, IntoReadResourceResult};
use crate::registry::{
    self, Arguments, Prompt, PromptEntry, Registry, Resource, ResourceEntry, ResourceTemplate,
    ServerEvent, Snapshot, TemplateEntry, Tool, ToolEntry,
};
#[cfg(feature = "skills")]
use crate::skills::SkillSet;
use crate::stateless::mrtr::MrtrLimits;
use crate::stateless::seal::{RequestStateSealer, SealingKey, ServerSealer};
#[cfg(feature = "tasks")]
use crate::tasks::{TaskOptions, TaskSupport, store::TaskStore};
use mcp_types::wire::CacheHint;
use tokio::sync::Semaphore;

/// Limits and defaults of a server. Every field has a sensible default; each limit maps onto the
/// request engine of every connection the server serves.
///
/// ```
/// use std::time::Duration;
/// let mut options = mcp_server::ServerOptions::default();
/// options.max_concurrent_requests = 8;
/// options.client_request_timeout = Duration::from_secs(30);
/// # let _ = options;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Items per page in list results (default 100).
    pub page_size: usize,
    /// Longest accepted message on the byte-stream transports ([`Server::serve_io`],
    /// [`Server::serve_stdio`]), in bytes (default 4 MiB). Longer ones are answered with
    /// `-32600` and skipped. Connections given to [`Server::serve`] bring their own limit.
    pub max_message_bytes: usize,
    /// Requests from the client handled at the same time (default 64). A request read while
    /// all are busy waits for one to finish, while the connection goes on being read: the
    /// client's answers, cancellations and pings, and the end of input, are never stuck
    /// behind it. Only with [`outgoing_queue`](Self::outgoing_queue) requests waiting is the
    /// connection not read until one starts.
    pub max_concurrent_requests: usize,
    /// Requests to the client waiting for an answer at the same time (default 32); further
    /// requests wait for a slot.
    pub max_pending_client_requests: usize,
    /// How long a request to the client (sampling, elicitation, roots) may take in total
    /// (default 5 minutes).
    pub client_request_timeout: Duration,
    /// Outgoing messages queued before senders wait, and notifications queued before the
    /// connection is not read (default 1024).
    pub outgoing_queue: usize,
    /// How long closing a connection may spend writing what is still queued (default 5 s).
    pub shutdown_timeout: Duration,
    /// Logging threshold before the client sends `logging/setLevel` (default `info`; `None`
    /// sends nothing until the client asks). Stateless (2026-07-28) requests ignore it: they
    /// get log messages only when their `_meta` names a level.
    pub default_log_level: Option<LoggingLevel>,
    /// How long a sealed `requestState` of a multi round-trip request stays valid (default 10
    /// minutes).
    pub request_state_ttl: Duration,
    /// The longest sealed `requestState` produced or accepted, in bytes (default 64 KiB).
    pub max_request_state_bytes: usize,
    /// Rounds of input one request may go through, stateless (`input_required`) or on a
    /// session (an [`InputRequired`](crate::InputRequired) handler run again), before it fails
    /// (default 16).
    pub max_input_rounds: u16,
    /// Distinct input requests one run of a handler may make (default 32).
    pub max_input_requests: usize,
    /// `subscriptions/listen` streams open at the same time on this server (default 16). Each
    /// also occupies one of [`max_concurrent_requests`](Self::max_concurrent_requests) of its
    /// connection.
    pub max_subscriptions: usize,
    /// The caching hints (`ttlMs`, `cacheScope`) of stateless results.
    pub cache: CacheHints,
    /// Test mode (default off): on sessions too, `cx.elicit`, `cx.sample` and `cx.roots` stop
    /// the handler at an ask that has no answer yet; the asks are then sent to the client and
    /// the handler runs again from the start with the answers, as it does under the stateless
    /// revision. Turn it on in tests to find handler code that is not safe to replay.
    pub force_input_replay: bool,
    /// The limits of the task store (the tasks extension).
    #[cfg(feature = "tasks")]
    pub tasks: TaskOptions,
}

/// The caching hints of each cacheable stateless (2026-07-28) result. Every default is
/// [`CacheHint::default`]: immediately stale (`ttlMs: 0`) and `private`, which is always true.
/// Raise them for lists that change rarely and hold no per-user data.
///
/// ```
/// use mcp_server::{CacheHint, CacheHints, ServerOptions, model::CacheScope};
///
/// let mut options = ServerOptions::default();
/// options.cache = CacheHints::default().tools(CacheHint::new(60_000, CacheScope::Public));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CacheHints {
    /// `server/discover`.
    pub discover: CacheHint,
    /// `tools/list`.
    pub tools: CacheHint,
    /// `prompts/list`.
    pub prompts: CacheHint,
    /// `resources/list` and `resources/templates/list`.
    pub resources: CacheHint,
    /// `resources/read`.
    pub resource_reads: CacheHint,
}

impl CacheHints {
    /// With the hint of `server/discover`.
    pub fn discover(mut self, hint: CacheHint) -> Self {
        self.discover = hint;
        self
    }

    /// With the hint of `tools/list`.
    pub fn tools(mut self, hint: CacheHint) -> Self {
        self.tools = hint;
        self
    }

    /// With the hint of `prompts/list`.
    pub fn prompts(mut self, hint: CacheHint) -> Self {
        self.prompts = hint;
        self
    }

    /// With the hint of `resources/list` and `resources/templates/list`.
    pub fn resources(mut self, hint: CacheHint) -> Self {
        self.resources = hint;
        self
    }

    /// With the hint of `resources/read`.
    pub fn resource_reads(mut self, hint: CacheHint) -> Self {
        self.resource_reads = hint;
        self
    }

    /// The hint for a cacheable method's result.
    pub(crate) fn for_method(&self, method: &str) -> Option<CacheHint> {
        match method {
            "server/discover" => Some(self.discover),
            "tools/list" => Some(self.tools),
            "prompts/list" => Some(self.prompts),
            "resources/list" | "resources/templates/list" => Some(self.resources),
            "resources/read" => Some(self.resource_reads),
            _ => None,
        }
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            page_size: 100,
            max_message_bytes: 4 * 1024 * 1024,
            max_concurrent_requests: 64,
            max_pending_client_requests: 32,
            client_request_timeout: Duration::from_secs(300),
            outgoing_queue: 1024,
            shutdown_timeout: Duration::from_secs(5),
            default_log_level: Some(LoggingLevel::Info),
            request_state_ttl: RequestStateSealer::DEFAULT_TTL,
            max_request_state_bytes: RequestStateSealer::DEFAULT_MAX_SIZE,
            max_input_rounds: 16,
            max_input_requests: 32,
            max_subscriptions: 16,
            cache: CacheHints::default(),
            force_input_replay: false,
            #[cfg(feature = "tasks")]
            tasks: TaskOptions::default(),
        }
    }
}

impl ServerOptions {
    pub(crate) fn mrtr_limits(&self) -> MrtrLimits {
        MrtrLimits {
            max_rounds: self.max_input_rounds,
            max_asks: self.max_input_requests,
        }
    }

    /// The request engine configured with these limits.
    pub(crate) fn engine(&self) -> mcp_jsonrpc::EngineBuilder {
        mcp_jsonrpc::Engine::builder()
            .max_in_flight(self.max_concurrent_requests)
            .max_outgoing(self.max_pending_client_requests)
            .queue_capacity(self.outgoing_queue)
            .request_timeout(Some(self.client_request_timeout))
            .max_timeout(Some(self.client_request_timeout))
            .shutdown_timeout(self.shutdown_timeout)
    }
}

pub(crate) struct ServerInner {
    pub(crate) info: Implementation,
    /// `info` encoded once, for the `serverInfo` of every stateless result.
    pub(crate) info_json: Box<RawValue>,
    pub(crate) instructions: Option<String>,
    pub(crate) handler: Arc<dyn ServerHandler>,
    /// `handler` is the builder's router, so a `tools/call` can go straight to the registry
    /// with its arguments still as text.
    pub(crate) builtin_router: bool,
    pub(crate) registry: Arc<Registry>,
    pub(crate) middleware: Vec<Arc<dyn Middleware>>,
    pub(crate) options: ServerOptions,
    pub(crate) state: StateMap,
    /// Seals the `requestState` of stateless multi round-trip requests.
    pub(crate) sealer: ServerSealer,
    /// One permit per open `subscriptions/listen`.
    pub(crate) subscriptions: Arc<Semaphore>,
    /// Every live task (the tasks extension).
    #[cfg(feature = "tasks")]
    pub(crate) tasks: Arc<TaskStore>,
    /// Names the caller of a request from its extensions.
    pub(crate) subject: Option<Arc<SubjectFn>>,
    /// The builder's router: the first page of each list as last encoded, per revision.
    pub(crate) lists: ListCache,
}

impl ServerInner {
    /// The builder's router: the first page of a list for `version`, encoded once per
    /// registry snapshot and revision (hosts list often; a server may have many entries).
    pub(crate) fn first_page(
        &self,
        list: List,
        version: ProtocolVersion,
    ) -> Result<RawJson, ErrorObject> {
        let snapshot = self.registry.snapshot();
        if let Some(hit) = self.lists.get(&snapshot, list, version) {
            return Ok(hit);
        }
        let size = self.options.page_size;
        let encoded = match list {
            List::Tools => dispatch::encode(tools_page(&snapshot, None, size)?, version),
            List::Resources => dispatch::encode(resources_page(&snapshot, None, size)?, version),
            List::Templates => dispatch::encode(templates_page(&snapshot, None, size)?, version),
            List::Prompts => dispatch::encode(prompts_page(&snapshot, None, size)?, version),
        }?;
        self.lists.put(&snapshot, list, version, &encoded);
        Ok(encoded)
    }
}

/// The lists of the builder's router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum List {
    Tools,
    Resources,
    Templates,
    Prompts,
}

/// The last encoded first page of each list per revision, for one registry snapshot.
#[derive(Default)]
pub(crate) struct ListCache {
    cached: Mutex<Option<CachedPages>>,
}

struct CachedPages {
    /// Weak, so the snapshot's memory (and its address) is not reused while it is the key.
    snapshot: Weak<Snapshot>,
    pages: Vec<(List, ProtocolVersion, RawJson)>,
}

impl ListCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<CachedPages>> {
        self.cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(
        &self,
        snapshot: &Arc<Snapshot>,
        list: List,
        version: ProtocolVersion,
    ) -> Option<RawJson> {
        let cached = self.lock();
        let cached = cached.as_ref()?;
        if !std::ptr::eq(cached.snapshot.as_ptr(), Arc::as_ptr(snapshot)) {
            return None;
        }
        cached
            .pages
            .iter()
            .find(|(l, v, _)| *l == list && *v == version)
            .map(|(_, _, page)| page.clone())
    }

    fn put(&self, snapshot: &Arc<Snapshot>, list: List, version: ProtocolVersion, page: &RawJson) {
        let mut cached = self.lock();
        let same = cached
            .as_ref()
            .is_some_and(|c| std::ptr::eq(c.snapshot.as_ptr(), Arc::as_ptr(snapshot)));
        if !same {
            *cached = Some(CachedPages {
                snapshot: Arc::downgrade(snapshot),
                pages: Vec::new(),
            });
        }
        if let Some(c) = cached.as_mut() {
            if !c.pages.iter().any(|(l, v, _)| *l == list && *v == version) {
                c.pages.push((list, version, page.clone()));
            }
        }
    }
}

/// A page of the registered tools, from `cursor` on.
fn tools_page(
    snapshot: &Snapshot,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<ListToolsResult, ErrorObject> {
    let (items, next_cursor) = registry::page(&snapshot.tools, cursor, page_size)?;
    Ok(ListToolsResult {
        next_cursor,
        // A tool whose derived schema is refused is left out (its error is logged).
        tools: items.iter().filter_map(|t| t.listed().cloned()).collect(),
        ..no_tools()
    })
}

/// A page of the registered resources, from `cursor` on.
fn resources_page(
    snapshot: &Snapshot,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<ListResourcesResult, ErrorObject> {
    let (items, next_cursor) = registry::page(&snapshot.resources, cursor, page_size)?;
    Ok(ListResourcesResult {
        next_cursor,
        resources: items.iter().map(|r| r.resource.clone()).collect(),
        ..no_resources()
    })
}

/// A page of the registered resource templates, from `cursor` on.
fn templates_page(
    snapshot: &Snapshot,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<ListResourceTemplatesResult, ErrorObject> {
    let (items, next_cursor) = registry::page(&snapshot.templates, cursor, page_size)?;
    Ok(ListResourceTemplatesResult {
        next_cursor,
        resource_templates: items.iter().map(|t| t.template.clone()).collect(),
        ..no_templates()
    })
}

/// A page of the registered prompts, from `cursor` on.
fn prompts_page(
    snapshot: &Snapshot,
    cursor: Option<&str>,
    page_size: usize,
) -> Result<ListPromptsResult, ErrorObject> {
    let (items, next_cursor) = registry::page(&snapshot.prompts, cursor, page_size)?;
    Ok(ListPromptsResult {
        next_cursor,
        prompts: items.iter().map(|p| p.prompt.clone()).collect(),
        ..no_prompts()
    })
}

/// Names the caller of a request from what the transport attached to it.
pub(crate) type SubjectFn = dyn Fn(&Extensions) -> Option<String> + Send + Sync;

/// A configured MCP server. Cheap to clone; serve it on any number of connections.
///
/// ```
/// use mcp_server::{Server, Tool, ToolContext, model::Implementation};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Echo { text: String }
///
/// async fn echo(_cx: ToolContext, args: Echo) -> String { args.text }
///
/// let server = Server::builder(Implementation::new("demo", "1.0.0"))
///     .tool(Tool::new("echo").description("Echo the text back"), echo)
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct Server {
    pub(crate) inner: Arc<ServerInner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("info", &self.inner.info)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    snapshot: Snapshot,
    errors: Vec<BuildError>,
    middleware: Vec<Arc<dyn Middleware>>,
    options: ServerOptions,
    state: StateMap,
    custom: Option<Arc<dyn ServerHandler>>,
    enable_tools: bool,
    enable_resources: bool,
    enable_prompts: bool,
    sealing_key: Option<SealingKey>,
    previous_sealing_key: Option<SealingKey>,
    change_bus: Option<Arc<dyn crate::bus::ChangeBus>>,
    #[cfg(feature = "tasks")]
    task_backend: Option<Arc<dyn crate::tasks::TaskBackend>>,
    #[cfg(feature = "tasks")]
    enable_tasks: bool,
    subject: Option<Arc<SubjectFn>>,
    check_schemas_at_build: bool,
    #[cfg(feature = "skills")]
    skills: Option<Arc<SkillSet>>,
}

impl std::fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Starts building a server that introduces itself as `info`.
    pub fn builder(info: Implementation) -> ServerBuilder {
        ServerBuilder {
            info,
            instructions: None,
            snapshot: Snapshot::default(),
            errors: Vec::new(),
            middleware: Vec::new(),
            options: ServerOptions::default(),
            state: StateMap::default(),
            custom: None,
            enable_tools: false,
            enable_resources: false,
            enable_prompts: false,
            sealing_key: None,
            previous_sealing_key: None,
            change_bus: None,
            #[cfg(feature = "tasks")]
            task_backend: None,
            #[cfg(feature = "tasks")]
            enable_tasks: false,
            subject: None,
            check_schemas_at_build: cfg!(debug_assertions),
            #[cfg(feature = "skills")]
            skills: None,
        }
    }

    /// The server's name and version.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// Adds a tool while the server runs; every session that can receive it gets
    /// `notifications/tools/list_changed`.
    pub fn add_tool<A, F, Fut, O>(&self, tool: Tool, f: F) -> Result<(), BuildError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoCallToolResult + 'static,
    {
        let entry = ToolEntry::new(tool, f)?;
        // Added while serving: its schemas are made (and checked) now.
        entry
            .schemas
            .definition()
            .map_err(|e| e.build_error(entry.name()))?;
        self.inner
            .registry
            .update(Some(ServerEvent::ToolsChanged), |s| s.add_tool(entry))
    }

    /// Removes a tool; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        self.remove(ServerEvent::ToolsChanged, |s| {
            let before = s.tools.len();
            s.tools.retain(|t| t.name() != name);
            before != s.tools.len()
        })
    }

    /// Adds a resource while the server runs (sends `notifications/resources/list_changed`).
    pub fn add_resource<F, Fut, O>(&self, resource: Resource, f: F) -> Result<(), BuildError>
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoReadResourceResult + 'static,
    {
        let entry = ResourceEntry::new(resource, f);
        self.inner
            .registry
            .update(Some(ServerEvent::ResourcesChanged), |s| {
                s.add_resource(entry)
            })
    }

    /// Removes a resource by URI; returns whether it existed.
    pub fn remove_resource(&self, uri: &str) -> bool {
        self.remove(ServerEvent::ResourcesChanged, |s| {
            let before = s.resources.len();
            s.resources.retain(|r| r.resource.uri != uri);
            before != s.resources.len()
        })
    }

    /// Adds a prompt while the server runs (sends `notifications/prompts/list_changed`).
    pub fn add_prompt<A, F, Fut, O>(&self, prompt: Prompt, f: F) -> Result<(), BuildError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoGetPromptResult + 'static,
    {
        let entry = PromptEntry::new(prompt, f);
        self.inner
            .registry
            .update(Some(ServerEvent::PromptsChanged), |s| s.add_prompt(entry))
    }

    /// Removes a prompt; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        self.remove(ServerEvent::PromptsChanged, |s| {
            let before = s.prompts.len();
            s.prompts.retain(|p| p.prompt.name != name);
            before != s.prompts.len()
        })
    }

    fn remove(&self, event: ServerEvent, f: impl FnOnce(&mut Snapshot) -> bool) -> bool {
        let removed = self.inner.registry.update(None, f);
        if removed {
            self.inner.registry.publish(event);
        }
        removed
    }

    /// Who made a request: the [`RequestStateSubject`](crate::RequestStateSubject) a middleware
    /// attached, else what [`ServerBuilder::subject`] derives from the request's extensions.
    pub(crate) fn subject(&self, extensions: &Extensions) -> Option<String> {
        if let Some(s) = extensions.get::<crate::RequestStateSubject>() {
            return Some(s.0.clone());
        }
        self.inner.subject.as_ref().and_then(|f| f(extensions))
    }

    /// Tells every session subscribed to `uri` that the resource changed
    /// (`notifications/resources/updated`).
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.inner
            .registry
            .publish(ServerEvent::ResourceUpdated(uri.into()));
    }
}

impl ServerBuilder {
    fn push_err(mut self, r: Result<(), BuildError>) -> Self {
        if let Err(e) = r {
            self.errors.push(e);
        }
        self
    }

    /// Instructions for the model on how to use this server.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Replaces the limits and defaults.
    pub fn options(mut self, options: ServerOptions) -> Self {
        self.options = options;
        self
    }

    /// Application state, available to handlers through
    /// [`RequestContext::state`](crate::RequestContext::state).
    pub fn with_state<T: Send + Sync + 'static>(mut self, state: T) -> Self {
        self.state.insert(state);
        self
    }

    /// The key that seals the `requestState` of stateless multi round-trip requests.
    ///
    /// Without one, the server generates a random key when a first stateless request that may
    /// ask for input needs it (a random source that fails then answers that request with
    /// `-32603`): fine for one process, but a state sealed by one replica (or before a restart)
    /// then does not open on another. Give every replica behind a load balancer the same key.
    pub fn sealing_key(mut self, key: SealingKey) -> Self {
        self.sealing_key = Some(key);
        self
    }

    /// Shares list changes and resource updates with the other replicas of this server: each
    /// change announced here is published on `bus`, and each change another replica published
    /// reaches this replica's sessions and `subscriptions/listen` streams (see
    /// [`ChangeBus`](crate::ChangeBus)).
    pub fn change_bus(mut self, bus: Arc<dyn crate::bus::ChangeBus>) -> Self {
        self.change_bus = Some(bus);
        self
    }

    /// Keeps tasks in `backend`, shared with the other replicas of this server: a task created
    /// through one replica is read (`tasks/get`), answered (`tasks/update`), cancelled, listed
    /// and its result read (`tasks/result`, 2025-11-25) through any other, while its handler
    /// runs on the replica that created it, which renews the task's lease. A task whose replica
    /// stopped is ended `failed` when next read (see [`TaskBackend`](crate::TaskBackend)).
    /// Tasks of 2025-11-25 sessions are shared when the transport names the session (the
    /// Streamable HTTP transport, with the feature `http`). Without a backend, tasks are found
    /// only by the replica that holds them. The backend's signals are subscribed to when the
    /// server is built (inside a Tokio runtime).
    #[cfg(feature = "tasks")]
    pub fn task_backend(mut self, backend: Arc<dyn crate::tasks::TaskBackend>) -> Self {
        self.task_backend = Some(backend);
        self
    }

    /// The key used before the current [`sealing_key`](Self::sealing_key): states it sealed
    /// still open (for a grace period of one
    /// [`request_state_ttl`](ServerOptions::request_state_ttl) after a rotation).
    pub fn previous_sealing_key(mut self, key: SealingKey) -> Self {
        self.previous_sealing_key = Some(key);
        self
    }

    /// The caching hints of stateless results (`ttlMs`, `cacheScope`), per feature.
    pub fn cache_hints(mut self, hints: CacheHints) -> Self {
        self.options.cache = hints;
        self
    }

    /// Names the caller of each request from a value the transport attached to it (the
    /// authenticated principal): the `requestState` of multi round-trip requests is then sealed
    /// for that caller only, and tasks are found only by the caller that created them (another
    /// caller gets `-32602`, as for a task that does not exist) and counted against
    /// `TaskOptions::max_tasks_per_caller` (with the `tasks` feature). Requests without a `P`
    /// have no caller. A [`RequestStateSubject`](crate::RequestStateSubject) set by middleware
    /// takes precedence.
    ///
    /// ```
    /// use mcp_server::{Server, model::Implementation};
    ///
    /// /// What an authenticator put into the request's extensions.
    /// #[derive(Clone)]
    /// struct Caller { id: String }
    ///
    /// let server = Server::builder(Implementation::new("demo", "1.0.0"))
    ///     .subject(|caller: &Caller| caller.id.clone())
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    ///
    /// With the HTTP transport's OAuth support that is
    /// `.subject(|p: &mcp_auth::Principal| p.identity())`.
    pub fn subject<P, F>(mut self, f: F) -> Self
    where
        P: Send + Sync + 'static,
        F: Fn(&P) -> String + Send + Sync + 'static,
    {
        self.subject = Some(Arc::new(move |e: &Extensions| e.get::<P>().map(&f)));
        self
    }

    /// Declares tasks even with no task-supporting tool registered yet (for servers that add
    /// such tools at run time): the tasks extension to 2026-07-28 clients, the `tasks`
    /// capability (`list`, `cancel`, `requests.tools.call`) to 2025-11-25 sessions.
    #[cfg(feature = "tasks")]
    pub fn enable_tasks(mut self) -> Self {
        self.enable_tasks = true;
        self
    }

    /// Adds a middleware; the first added runs outermost.
    pub fn middleware(mut self, m: impl Middleware) -> Self {
        self.middleware.push(Arc::new(m));
        self
    }

    /// Routes every request to a hand-written [`ServerHandler`] instead of the builder's router.
    /// Tools, resources and prompts registered on the builder are then refused by `build`.
    pub fn handler(mut self, handler: impl ServerHandler) -> Self {
        self.custom = Some(Arc::new(handler));
        self
    }

    /// Registers a tool. `f` is an async function taking the context and the arguments, decoded
    /// into `A`; the input schema is generated from `A` unless the [`Tool`] has one.
    pub fn tool<A, F, Fut, O>(self, tool: Tool, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoCallToolResult + 'static,
    {
        let r = ToolEntry::new(tool, f);
        self.add(r.map(|e| move |s: &mut Snapshot| s.add_tool(e)))
    }

    /// Registers a tool whose arguments arrive as raw JSON; the [`Tool`] must carry an explicit
    /// input schema (arguments are validated against it before `f` runs).
    pub fn tool_raw<F, Fut, O>(self, tool: Tool, f: F) -> Self
    where
        F: Fn(RequestContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoCallToolResult + 'static,
    {
        let r = ToolEntry::raw(tool, f);
        self.add(r.map(|e| move |s: &mut Snapshot| s.add_tool(e)))
    }

    /// Registers a resource with a fixed URI.
    pub fn resource<F, Fut, O>(mut self, resource: Resource, f: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoReadResourceResult + 'static,
    {
        let r = self.snapshot.add_resource(ResourceEntry::new(resource, f));
        self = self.push_err(r);
        self
    }

    /// Registers a resource template; `f` receives the URI's variables decoded into `A` (a struct
    /// of strings, or `HashMap<String, String>`). The URI read is in
    /// [`RequestContext::uri`](crate::RequestContext::uri).
    pub fn resource_template<A, F, Fut, O>(self, template: ResourceTemplate, f: F) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoReadResourceResult + 'static,
    {
        let r = TemplateEntry::new(template, f);
        self.add(r.map(|e| move |s: &mut Snapshot| s.add_template(e)))
    }

    /// Registers a prompt; its arguments are generated from `A` (string fields) unless the
    /// [`Prompt`] lists them.
    pub fn prompt<A, F, Fut, O>(mut self, prompt: Prompt, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoGetPromptResult + 'static,
    {
        let r = self.snapshot.add_prompt(PromptEntry::new(prompt, f));
        self = self.push_err(r);
        self
    }

    /// Completes an argument of a prompt: `f` gets the partial value and the other arguments and
    /// returns candidates (at most 100 are sent).
    pub fn prompt_completion<F, Fut>(mut self, prompt: &str, argument: &str, f: F) -> Self
    where
        F: Fn(String, HashMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        self.snapshot.prompt_completions.insert(
            (prompt.to_owned(), argument.to_owned()),
            registry::completer(f),
        );
        self
    }

    /// Completes a variable of a resource template (named by its URI template).
    pub fn template_completion<F, Fut>(mut self, uri_template: &str, variable: &str, f: F) -> Self
    where
        F: Fn(String, HashMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        self.snapshot.template_completions.insert(
            (uri_template.to_owned(), variable.to_owned()),
            registry::completer(f),
        );
        self
    }

    /// Whether [`build`](Self::build) generates and checks the schemas derived from Rust types
    /// (a tool's argument type, a structured output's type), so that one that breaks the rules
    /// (an `x-mcp-header` annotation, a root that is not an object) fails the build. Default:
    /// in debug builds.
    ///
    /// Otherwise each is generated when first needed, when a client lists or calls the tool: the
    /// server starts without generating any, however many tools it has. A derived schema refused
    /// then is logged, its tool is left out of `tools/list`, and calls to it fail with an
    /// internal error. Schemas written by hand ([`Tool::input_schema`],
    /// [`Tool::output_schema`]) are always checked when the tool is registered, and so are all
    /// schemas of a tool added while the server runs ([`Server::add_tool`]).
    pub fn check_schemas_at_build(mut self, check: bool) -> Self {
        self.check_schemas_at_build = check;
        self
    }

    /// Serves skills (the Skills extension, SEP-2640): declares the extension, registers every
    /// skill file as a resource and answers `skills/list`, `skills/get` and
    /// `resources/directory/read`. See [`skills`](crate::skills).
    #[cfg(feature = "skills")]
    pub fn skills(mut self, set: SkillSet) -> Self {
        for (resource, contents) in set.resources() {
            self = self.resource(resource, move |_cx| {
                let contents = contents.clone();
                async move { contents }
            });
        }
        self.enable_resources = true;
        self.skills = Some(Arc::new(set));
        self
    }

    /// Declares the tools capability even with no tool registered yet (for servers that add
    /// tools at run time).
    pub fn enable_tools(mut self) -> Self {
        self.enable_tools = true;
        self
    }

    /// Declares the resources capability even with no resource registered yet.
    pub fn enable_resources(mut self) -> Self {
        self.enable_resources = true;
        self
    }

    /// Declares the prompts capability even with no prompt registered yet.
    pub fn enable_prompts(mut self) -> Self {
        self.enable_prompts = true;
        self
    }

    fn add<E>(mut self, entry: Result<E, BuildError>) -> Self
    where
        E: FnOnce(&mut Snapshot) -> Result<(), BuildError>,
    {
        match entry {
            Ok(apply) => {
                let r = apply(&mut self.snapshot);
                self.push_err(r)
            }
            Err(e) => {
                self.errors.push(e);
                self
            }
        }
    }

    /// Checks everything (schemas, names, templates, options) and builds the server. Schemas
    /// derived from Rust types are checked here only when
    /// [`check_schemas_at_build`](Self::check_schemas_at_build) says so (the default in debug
    /// builds); otherwise when first needed.
    pub fn build(mut self) -> Result<Server, BuildError> {
        if let Some(e) = self.errors.drain(..).next() {
            return Err(e);
        }
        let o = &self.options;
        if o.page_size == 0
            || o.max_message_bytes < 1024
            || o.max_concurrent_requests == 0
            || o.max_pending_client_requests == 0
            || o.outgoing_queue == 0
            || o.client_request_timeout.is_zero()
        {
            return Err(BuildError::InvalidOption(
                "page_size, max_concurrent_requests, max_pending_client_requests, outgoing_queue and client_request_timeout must be positive; max_message_bytes at least 1024",
            ));
        }
        #[cfg(feature = "tasks")]
        if !o.tasks.is_valid() {
            return Err(BuildError::InvalidOption(
                "tasks.max_tasks, tasks.max_tasks_per_caller and tasks.ttl must be positive; tasks.poll_interval at least 1 ms",
            ));
        }
        if o.request_state_ttl.is_zero()
            || o.max_request_state_bytes < 512
            || o.max_input_rounds == 0
            || o.max_input_requests == 0
            || o.max_subscriptions == 0
        {
            return Err(BuildError::InvalidOption(
                "request_state_ttl, max_input_rounds, max_input_requests and max_subscriptions must be positive; max_request_state_bytes at least 512",
            ));
        }
        let sealer = ServerSealer::new(
            self.sealing_key.take(),
            self.previous_sealing_key.take(),
            o.request_state_ttl,
            o.max_request_state_bytes,
        );
        let subscriptions = Arc::new(Semaphore::new(o.max_subscriptions));
        for (prompt, _) in self.snapshot.prompt_completions.keys() {
            if self.snapshot.prompt(prompt).is_none() {
                return Err(BuildError::UnknownCompletionTarget {
                    kind: "prompt",
                    name: prompt.clone(),
                });
            }
        }
        for (template, _) in self.snapshot.template_completions.keys() {
            if !self
                .snapshot
                .templates
                .iter()
                .any(|t| &t.template.uri_template == template)
            {
                return Err(BuildError::UnknownCompletionTarget {
                    kind: "resource template",
                    name: template.clone(),
                });
            }
        }
        let s = &self.snapshot;
        if self.check_schemas_at_build {
            for tool in &s.tools {
                tool.schemas
                    .definition()
                    .map_err(|e| e.build_error(tool.name()))?;
            }
        }
        let registered = !s.tools.is_empty()
            || !s.resources.is_empty()
            || !s.templates.is_empty()
            || !s.prompts.is_empty();
        let registry = Arc::new(Registry::new(self.snapshot, 64).with_bus(self.change_bus.clone()));
        if let Some(bus) = &self.change_bus {
            let weak = Arc::downgrade(&registry);
            bus.subscribe(Arc::new(move |change| {
                if let Some(registry) = weak.upgrade() {
                    registry.deliver_remote(change);
                }
            }));
        }
        let builtin_router = self.custom.is_none();
        let handler: Arc<dyn ServerHandler> = match self.custom {
            Some(custom) => {
                if registered {
                    return Err(BuildError::InvalidOption(
                        "a custom handler cannot be combined with registered tools, resources or prompts",
                    ));
                }
                custom
            }
            None => Arc::new(Router {
                registry: Arc::clone(&registry),
                page_size: self.options.page_size,
                enable_tools: self.enable_tools,
                enable_resources: self.enable_resources,
                enable_prompts: self.enable_prompts,
                #[cfg(feature = "tasks")]
                enable_tasks: self.enable_tasks,
                #[cfg(feature = "skills")]
                skills: self.skills,
            }),
        };
        #[cfg(feature = "tasks")]
        let tasks = Arc::new(match self.task_backend {
            Some(backend) => TaskStore::with_backend(self.options.tasks, backend),
            None => TaskStore::new(self.options.tasks),
        });
        #[cfg(feature = "tasks")]
        crate::tasks::shared::subscribe(&tasks);
        Ok(Server {
            inner: Arc::new(ServerInner {
                info_json: mcp_jsonrpc::to_raw(&self.info)
                    .map_err(|_| BuildError::InvalidOption("the server info does not encode"))?,
                info: self.info,
                instructions: self.instructions,
                handler,
                builtin_router,
                registry,
                middleware: self.middleware,
                options: self.options,
                state: self.state,
                sealer,
                subscriptions,
                #[cfg(feature = "tasks")]
                tasks,
                subject: self.subject,
                lists: ListCache::default(),
            }),
        })
    }
}

/// The builder's router: lists and calls come from the same registry snapshot.
pub(crate) struct Router {
    registry: Arc<Registry>,
    page_size: usize,
    enable_tools: bool,
    enable_resources: bool,
    enable_prompts: bool,
    #[cfg(feature = "tasks")]
    enable_tasks: bool,
    #[cfg(feature = "skills")]
    skills: Option<Arc<SkillSet>>,
}

impl ServerHandler for Router {
    fn capabilities(&self) -> ServerCapabilities {
        let s = self.registry.snapshot();
        let mut caps = ServerCapabilities {
            logging: Some(JsonObject::new()),
            ..ServerCapabilities::default()
        };
        if self.enable_tools || !s.tools.is_empty() {
            caps.tools = Some(ServerCapabilitiesTools {
                list_changed: Some(true),
            });
        }
        if self.enable_resources || !s.resources.is_empty() || !s.templates.is_empty() {
            caps.resources = Some(ServerCapabilitiesResources {
                list_changed: Some(true),
                subscribe: Some(true),
            });
        }
        if self.enable_prompts || !s.prompts.is_empty() {
            caps.prompts = Some(ServerCapabilitiesPrompts {
                list_changed: Some(true),
            });
        }
        if !s.prompt_completions.is_empty() || !s.template_completions.is_empty() {
            caps.completions = Some(JsonObject::new());
        }
        #[cfg(feature = "tasks")]
        if self.enable_tasks
            || s.tools
                .iter()
                .any(|t| t.tasks.support != TaskSupport::Forbidden)
        {
            // An extension of the stateless revision: projected away for session clients.
            caps.extensions.get_or_insert_with(Default::default).insert(
                mcp_types::wire::TASKS_EXTENSION.to_owned(),
                JsonObject::new(),
            );
            // The tasks of 2025-11-25: projected away for every other revision.
            caps.tasks = Some(crate::tasks::session_capability());
        }
        #[cfg(feature = "skills")]
        if let Some(skills) = &self.skills {
            let (id, settings) = skills.capability();
            caps.extensions
                .get_or_insert_with(Default::default)
                .insert(id, settings);
        }
        caps
    }

    // The Skills extension's methods; without it, the default (-32601).
    #[cfg(feature = "skills")]
    fn custom(
        &self,
        method: String,
        params: Option<Box<RawValue>>,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<RawJson, ErrorObject>> {
        let answer = self
            .skills
            .as_ref()
            .and_then(|s| s.handle(&method, params.as_deref(), self.page_size))
            .unwrap_or_else(|| Err(ErrorObject::method_not_found(&method)));
        Box::pin(std::future::ready(answer))
    }

    fn list_tools(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListToolsResult, ErrorObject>> {
        let r = tools_page(
            &self.registry.snapshot(),
            params.cursor.as_deref(),
            self.page_size,
        );
        Box::pin(async move { r })
    }

    fn call_tool(
        &self,
        params: CallToolRequestParams,
        cx: RequestContext,
    ) -> BoxFuture<'_, Result<CallToolResult, ErrorObject>> {
        let entry = self.registry.tool(&params.name);
        Box::pin(async move {
            let entry = entry?;
            let args = Value::Object(params.arguments.unwrap_or_default());
            entry.call(cx, Arguments::Parsed(Arc::new(args))).await
        })
    }

    fn list_resources(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListResourcesResult, ErrorObject>> {
        let r = resources_page(
            &self.registry.snapshot(),
            params.cursor.as_deref(),
            self.page_size,
        );
        Box::pin(async move { r })
    }

    fn list_resource_templates(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListResourceTemplatesResult, ErrorObject>> {
        let r = templates_page(
            &self.registry.snapshot(),
            params.cursor.as_deref(),
            self.page_size,
        );
        Box::pin(async move { r })
    }

    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        mut cx: RequestContext,
    ) -> BoxFuture<'_, Result<ReadResourceResult, ErrorObject>> {
        let s = self.registry.snapshot();
        Box::pin(async move {
            let uri = params.uri;
            cx.uri = Some(Arc::from(uri.as_str()));
            if let Some(entry) = s.resource(&uri).cloned() {
                drop(s);
                return (entry.handler)(cx).await;
            }
            if let Some((entry, vars)) = s.match_template(&uri) {
                let entry = Arc::clone(entry);
                drop(s);
                return (entry.handler)(cx, vars).await;
            }
            Err(resource_not_found(&uri))
        })
    }

    fn subscribe(
        &self,
        params: SubscribeRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<(), ErrorObject>> {
        let s = self.registry.snapshot();
        let known = s.resource(&params.uri).is_some() || s.match_template(&params.uri).is_some();
        Box::pin(async move {
            if known {
                Ok(())
            } else {
                Err(resource_not_found(&params.uri))
            }
        })
    }

    fn list_prompts(
        &self,
        params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListPromptsResult, ErrorObject>> {
        let r = prompts_page(
            &self.registry.snapshot(),
            params.cursor.as_deref(),
            self.page_size,
        );
        Box::pin(async move { r })
    }

    fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        cx: RequestContext,
    ) -> BoxFuture<'_, Result<GetPromptResult, ErrorObject>> {
        let entry = self.registry.snapshot().prompt(&params.name).cloned();
        Box::pin(async move {
            let Some(entry) = entry else {
                return Err(ErrorObject::invalid_params(format!(
                    "unknown prompt: {}",
                    params.name
                )));
            };
            (entry.handler)(cx, params.arguments.unwrap_or_default()).await
        })
    }

    fn complete(
        &self,
        params: CompleteRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<CompleteResult, ErrorObject>> {
        let s = self.registry.snapshot();
        Box::pin(async move {
            let context: HashMap<String, String> = params
                .context
                .and_then(|c| c.arguments)
                .map(|a| a.into_iter().collect())
                .unwrap_or_default();
            let argument = params.argument.name;
            let completer = match &params.r#ref {
                CompleteRequestParamsRef::Prompt(p) => {
                    if s.prompt(&p.name).is_none() {
                        return Err(ErrorObject::invalid_params(format!(
                            "unknown prompt: {}",
                            p.name
                        )));
                    }
                    s.prompt_completions.get(&(p.name.clone(), argument))
                }
                CompleteRequestParamsRef::ResourceTemplate(r) => {
                    template_completer(&s, &r.uri, argument)?
                }
                CompleteRequestParamsRef::Resource(r) => template_completer(&s, &r.uri, argument)?,
            };
            let Some(completer) = completer.cloned() else {
                return Ok(completion(Vec::new()));
            };
            drop(s);
            let values = completer(params.argument.value, context).await;
            Ok(completion(values))
        })
    }
}

fn template_completer<'s>(
    s: &'s Snapshot,
    uri: &str,
    argument: String,
) -> Result<Option<&'s Arc<registry::CompleteFn>>, ErrorObject> {
    if !s.templates.iter().any(|t| t.template.uri_template == uri) {
        return Err(ErrorObject::invalid_params(format!(
            "unknown resource template: {uri}"
        )));
    }
    Ok(s.template_completions.get(&(uri.to_owned(), argument)))
}

/// What a server built without the `tasks`, the `skills` or the `validation` feature declares
/// and answers.
#[cfg(test)]
#[cfg(any(
    not(feature = "tasks"),
    not(feature = "skills"),
    not(feature = "validation")
))]
mod without_features {
    use super::*;
    use mcp_jsonrpc::{CallError, Engine, Peer, RequestOptions, memory_pair};
    use serde_json::json;

    /// `server` on an in-memory connection; the client's end.
    fn serve(server: Server) -> Peer {
        let (client_side, server_side) = memory_pair(16);
        tokio::spawn(async move { server.serve(server_side).await });
        Engine::builder().spawn(client_side, ()).0
    }

    async fn call(peer: &Peer, method: &str, params: Value) -> Result<Value, CallError> {
        peer.call(method, &params, RequestOptions::new()).await
    }

    fn method_not_found(answer: Result<Value, CallError>) -> bool {
        matches!(answer, Err(CallError::Rpc(e)) if e.code == crate::codes::METHOD_NOT_FOUND)
    }

    /// Initializes a 2025-11-25 session declaring `capabilities`; the initialize result.
    async fn initialize(peer: &Peer, capabilities: Value) -> Value {
        let init = call(
            peer,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                   "clientInfo": {"name": "t", "version": "1"}}),
        )
        .await
        .unwrap();
        peer.notify_with("notifications/initialized", &json!({}))
            .await
            .unwrap();
        init
    }

    /// Without `skills`, the Skills extension's method in the `resources/` namespace is not
    /// routed to the handler: it is unknown, as any method a revision lacks.
    #[cfg(not(feature = "skills"))]
    #[tokio::test]
    async fn the_skills_directory_method_is_unknown() {
        let server = Server::builder(Implementation::new("t", "1"))
            .enable_resources()
            .build()
            .unwrap();
        let peer = serve(server);
        initialize(&peer, json!({})).await;
        let read = json!({"uri": "skill://team"});
        assert!(method_not_found(
            call(&peer, "resources/directory/read", read).await
        ));
    }

    /// Without `tasks`, no task is declared, no tool is listed as supporting one and no tasks
    /// method is known, in either era.
    #[cfg(not(feature = "tasks"))]
    #[tokio::test]
    async fn no_task_is_declared_or_served() {
        let def: mcp_types::Tool = serde_json::from_value(json!({
            "name": "render",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "optional"},
        }))
        .unwrap();
        let server = Server::builder(Implementation::new("t", "1"))
            .tool_raw(Tool::from(def), |_cx: RequestContext, _args: Value| async {
                "ok"
            })
            .build()
            .unwrap();
        let peer = serve(server);

        // 2026-07-28: no tasks extension, and its methods are unknown.
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {
                "extensions": {mcp_types::wire::TASKS_EXTENSION: {}}
            }
        });
        let discovered = call(&peer, "server/discover", json!({"_meta": meta}))
            .await
            .unwrap();
        assert!(discovered["capabilities"].get("extensions").is_none());
        let listed = call(&peer, "tools/list", json!({"_meta": meta}))
            .await
            .unwrap();
        assert!(listed["tools"][0].get("execution").is_none());
        let get = json!({"taskId": "t1", "_meta": meta});
        assert!(method_not_found(call(&peer, "tasks/get", get).await));
        let called = json!({"name": "render", "arguments": {}, "_meta": meta});
        let result = call(&peer, "tools/call", called).await.unwrap();
        assert_eq!(result["resultType"], "complete");

        // 2025-11-25: no `tasks` capability, and its methods are unknown.
        let init = initialize(&peer, json!({"tasks": {}})).await;
        assert!(init["capabilities"].get("tasks").is_none());
        let listed = call(&peer, "tools/list", json!({})).await.unwrap();
        assert!(listed["tools"][0].get("execution").is_none());
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let answer = call(&peer, method, json!({"taskId": "t1"})).await;
            assert!(method_not_found(answer), "{method}");
        }
        assert!(method_not_found(call(&peer, "tasks/list", json!({})).await));
    }

    /// `err` refuses `tool`'s schema, naming the feature that would check it.
    #[cfg(not(feature = "validation"))]
    fn refused_for_the_validator(err: BuildError, tool: &str) {
        assert!(
            matches!(&err, BuildError::InvalidSchema { tool: t, .. } if t == tool)
                && err.to_string().contains("`validation` feature"),
            "{err}"
        );
    }

    /// Without `validation` a constraint its type does not enforce is refused, not ignored:
    /// at build when schemas are checked there, else by leaving the tool out.
    #[cfg(not(feature = "validation"))]
    #[tokio::test]
    async fn a_constraint_nothing_would_check_is_refused() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Plain {
            count: u32,
        }
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Ranged {
            #[schemars(range(min = 1, max = 10))]
            level: i32,
        }
        let tools = |check: bool| {
            Server::builder(Implementation::new("t", "1"))
                .check_schemas_at_build(check)
                .tool(
                    Tool::new("plain"),
                    |_cx: crate::ToolContext, a: Plain| async move { a.count.to_string() },
                )
                .tool(
                    Tool::new("ranged"),
                    |_cx: crate::ToolContext, a: Ranged| async move { a.level.to_string() },
                )
                .build()
        };
        refused_for_the_validator(tools(true).unwrap_err(), "ranged");

        let peer = serve(tools(false).unwrap());
        initialize(&peer, json!({})).await;
        let list = call(&peer, "tools/list", json!({})).await.unwrap();
        let names: Vec<&str> = list["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["plain"]);
        let plain = json!({"name": "plain", "arguments": {"count": 3}});
        let ok = call(&peer, "tools/call", plain).await.unwrap();
        assert_eq!(ok["content"][0]["text"], "3");
        let ranged = json!({"name": "ranged", "arguments": {"level": 0}});
        let err = call(&peer, "tools/call", ranged).await.unwrap_err();
        assert!(matches!(err, CallError::Rpc(e) if e.code == crate::codes::INTERNAL_ERROR));
    }

    /// Without `validation` a hand-written schema is taken only when it states nothing but its
    /// object root.
    #[cfg(not(feature = "validation"))]
    #[tokio::test]
    async fn a_hand_written_schema_needs_the_validator_unless_it_states_nothing() {
        let raw = |schema: Value| {
            Server::builder(Implementation::new("t", "1"))
                .tool_raw(
                    Tool::new("raw").input_schema(schema),
                    |_cx: RequestContext, args: Value| async move { args.to_string() },
                )
                .build()
        };
        let typed = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        refused_for_the_validator(raw(typed).unwrap_err(), "raw");

        let bare = json!({"type": "object", "properties": {}, "description": "anything"});
        let peer = serve(raw(bare).unwrap());
        initialize(&peer, json!({})).await;
        let called = json!({"name": "raw", "arguments": {"n": 1}});
        let out = call(&peer, "tools/call", called).await.unwrap();
        assert_eq!(out["content"][0]["text"], r#"{"n":1}"#);
    }
}
