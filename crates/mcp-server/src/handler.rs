//! The low-level handler trait and middleware.

use std::sync::Arc;

use mcp_jsonrpc::{ErrorObject, Extensions, Id, RawJson};
use mcp_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    CompleteResultCompletion, GetPromptRequestParams, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ReadResourceRequestParams, ReadResourceResult, ServerCapabilities,
    SubscribeRequestParams, UnsubscribeRequestParams,
};
use serde_json::value::RawValue;

use crate::context::{BoxFuture, RequestContext};
use crate::error::resource_not_found;

/// An empty `tools/list` page.
pub(crate) fn no_tools() -> ListToolsResult {
    ListToolsResult {
        meta: None,
        cache_scope: None,
        next_cursor: None,
        result_type: None,
        tools: Vec::new(),
        ttl_ms: None,
    }
}

/// An empty `resources/list` page.
pub(crate) fn no_resources() -> ListResourcesResult {
    ListResourcesResult {
        meta: None,
        cache_scope: None,
        next_cursor: None,
        resources: Vec::new(),
        result_type: None,
        ttl_ms: None,
    }
}

/// An empty `resources/templates/list` page.
pub(crate) fn no_templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult {
        meta: None,
        cache_scope: None,
        next_cursor: None,
        resource_templates: Vec::new(),
        result_type: None,
        ttl_ms: None,
    }
}

/// An empty `prompts/list` page.
pub(crate) fn no_prompts() -> ListPromptsResult {
    ListPromptsResult {
        meta: None,
        cache_scope: None,
        next_cursor: None,
        prompts: Vec::new(),
        result_type: None,
        ttl_ms: None,
    }
}

/// A completion result with the given candidates; more than 100 are cut and flagged with
/// `hasMore` (the limit the specification sets).
///
/// ```
/// let r = mcp_server::completion((0..150).map(|n| n.to_string()).collect());
/// assert_eq!(r.completion.values.len(), 100);
/// assert_eq!(r.completion.total, Some(150));
/// assert_eq!(r.completion.has_more, Some(true));
/// ```
pub fn completion(mut values: Vec<String>) -> CompleteResult {
    let total = i64::try_from(values.len()).unwrap_or(i64::MAX);
    let has_more = values.len() > 100;
    values.truncate(100);
    CompleteResult {
        meta: None,
        completion: CompleteResultCompletion {
            has_more: Some(has_more),
            total: Some(total),
            values,
        },
        result_type: None,
    }
}

/// The low-level server: one method per request, in the protocol's own types, each with a
/// default. The builder's router implements it; implement it yourself (and pass it to
/// [`ServerBuilder::handler`](crate::ServerBuilder::handler)) to take over routing completely.
///
/// Lifecycle (`initialize`, `ping`), `logging/setLevel`, subscription bookkeeping, projection of
/// results to the client's revision and cancellation are handled around it.
///
/// ```
/// use mcp_server::model::{
///     CallToolRequestParams, CallToolResult, Implementation, ServerCapabilities,
///     ServerCapabilitiesTools,
/// };
/// use mcp_server::{BoxFuture, ErrorObject, RequestContext, Server, ServerHandler};
///
/// struct Shout;
///
/// impl ServerHandler for Shout {
///     fn capabilities(&self) -> ServerCapabilities {
///         ServerCapabilities {
///             tools: Some(ServerCapabilitiesTools::default()),
///             ..ServerCapabilities::default()
///         }
///     }
///
///     fn call_tool(
///         &self,
///         params: CallToolRequestParams,
///         _cx: RequestContext,
///     ) -> BoxFuture<'_, Result<CallToolResult, ErrorObject>> {
///         Box::pin(async move { Ok(CallToolResult::text(params.name.to_uppercase())) })
///     }
/// }
///
/// let server = Server::builder(Implementation::new("shout", "1.0.0"))
///     .handler(Shout)
///     .build()
///     .unwrap();
/// # let _ = server;
/// ```
pub trait ServerHandler: Send + Sync + 'static {
    /// The capabilities to declare in `initialize`.
    fn capabilities(&self) -> ServerCapabilities;

    /// `tools/list`.
    fn list_tools(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListToolsResult, ErrorObject>> {
        Box::pin(async { Ok(no_tools()) })
    }

    /// `tools/call`.
    fn call_tool(
        &self,
        params: CallToolRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<CallToolResult, ErrorObject>> {
        Box::pin(async move {
            Err(ErrorObject::invalid_params(format!(
                "unknown tool: {}",
                params.name
            )))
        })
    }

    /// `resources/list`.
    fn list_resources(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListResourcesResult, ErrorObject>> {
        Box::pin(async { Ok(no_resources()) })
    }

    /// `resources/templates/list`.
    fn list_resource_templates(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListResourceTemplatesResult, ErrorObject>> {
        Box::pin(async { Ok(no_templates()) })
    }

    /// `resources/read`.
    fn read_resource(
        &self,
        params: ReadResourceRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ReadResourceResult, ErrorObject>> {
        Box::pin(async move { Err(resource_not_found(&params.uri)) })
    }

    /// `resources/subscribe`: succeed if the URI can be watched. The session remembers the
    /// subscription and forwards [`Server::notify_resource_updated`](crate::Server::notify_resource_updated)
    /// for it.
    fn subscribe(
        &self,
        params: SubscribeRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<(), ErrorObject>> {
        Box::pin(async move { Err(resource_not_found(&params.uri)) })
    }

    /// `resources/unsubscribe`; the session forgets the subscription whatever this returns.
    fn unsubscribe(
        &self,
        _params: UnsubscribeRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<(), ErrorObject>> {
        Box::pin(async { Ok(()) })
    }

    /// `prompts/list`.
    fn list_prompts(
        &self,
        _params: PaginatedRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ListPromptsResult, ErrorObject>> {
        Box::pin(async { Ok(no_prompts()) })
    }

    /// `prompts/get`.
    fn get_prompt(
        &self,
        params: GetPromptRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<GetPromptResult, ErrorObject>> {
        Box::pin(async move {
            Err(ErrorObject::invalid_params(format!(
                "unknown prompt: {}",
                params.name
            )))
        })
    }

    /// `completion/complete`.
    fn complete(
        &self,
        _params: CompleteRequestParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<CompleteResult, ErrorObject>> {
        Box::pin(async { Ok(completion(Vec::new())) })
    }

    /// Any method outside the protocol's namespaces (custom extensions), with its raw params.
    /// The default answers `-32601`.
    fn custom(
        &self,
        method: String,
        _params: Option<Box<RawValue>>,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<RawJson, ErrorObject>> {
        Box::pin(async move { Err(ErrorObject::method_not_found(&method)) })
    }
}

/// A request as middleware sees it: before routing, with raw parameters.
#[derive(Debug)]
#[non_exhaustive]
pub struct Request {
    /// The JSON-RPC id.
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The raw parameters (decoded only by the handler that needs them).
    pub params: Option<Box<RawValue>>,
    /// The negotiated revision, once `initialize` has completed.
    pub protocol_version: Option<ProtocolVersion>,
    /// What the transport attached to the request (HTTP request parts, session id, an
    /// authenticated principal); middleware may add more. Handlers see them through
    /// [`RequestContext::extensions`].
    pub extensions: Extensions,
}

impl Request {
    /// A request built by middleware (for example to issue an inner request), inheriting the
    /// id, revision and extensions of `parent`.
    pub fn derived(
        parent: &Request,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Request {
            id: parent.id.clone(),
            method: method.into(),
            params,
            protocol_version: parent.protocol_version,
            extensions: parent.extensions.clone(),
        }
    }
}

/// Wraps every request: runs code before and after the rest of the chain, or answers on its own.
///
/// ```
/// use mcp_server::{BoxFuture, ErrorObject, Middleware, Next, RawJson, Request};
///
/// struct Timing;
/// impl Middleware for Timing {
///     fn handle<'a>(
///         &'a self,
///         req: Request,
///         next: Next<'a>,
///     ) -> BoxFuture<'a, Result<RawJson, ErrorObject>> {
///         Box::pin(async move {
///             let method = req.method.clone();
///             let started = std::time::Instant::now();
///             let result = next.run(req).await;
///             tracing::debug!(%method, elapsed = ?started.elapsed(), "handled");
///             result
///         })
///     }
/// }
/// ```
pub trait Middleware: Send + Sync + 'static {
    /// Handles a request, usually by calling `next.run(request)`. The result is the raw JSON
    /// result already projected to the client's revision.
    fn handle<'a>(
        &'a self,
        request: Request,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<RawJson, ErrorObject>>;
}

/// The end of the middleware chain: the session's own dispatch.
pub(crate) trait Endpoint: Send + Sync {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<RawJson, ErrorObject>>;
}

/// The rest of the middleware chain. It can be run several times (a middleware may issue more
/// than one inner request).
#[derive(Clone, Copy)]
pub struct Next<'a> {
    pub(crate) chain: &'a [Arc<dyn Middleware>],
    pub(crate) endpoint: &'a dyn Endpoint,
}

impl std::fmt::Debug for Next<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("remaining", &self.chain.len())
            .finish()
    }
}

impl<'a> Next<'a> {
    /// Passes the request to the next middleware, or to the server at the end of the chain.
    pub async fn run(self, request: Request) -> Result<RawJson, ErrorObject> {
        match self.chain.split_first() {
            Some((first, rest)) => {
                first
                    .handle(
                        request,
                        Next {
                            chain: rest,
                            endpoint: self.endpoint,
                        },
                    )
                    .await
            }
            None => self.endpoint.call(request).await,
        }
    }
}
