//! The low-level handler trait and middleware.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::{BoxFuture, Extensions, RequestContext};
use crate::error::ErrorData;
use crate::model::{
    CallToolResult, Completion, GetPromptResult, ProtocolVersion, ReadResourceResult,
};
use crate::registry::{Prompt, Resource, ResourceTemplate, Tool};

/// Parameters of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallToolParams {
    /// The tool.
    pub name: String,
    /// Its arguments (absent means none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

/// Parameters of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptParams {
    /// The prompt.
    pub name: String,
    /// Its arguments (strings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

/// What `completion/complete` completes: a prompt argument or a template variable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum CompletionReference {
    /// An argument of a prompt.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// A variable of a resource template.
    #[serde(rename = "ref/resource")]
    Resource {
        /// The template (or URI).
        uri: String,
    },
}

/// The argument being completed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// Its name.
    pub name: String,
    /// What the user typed so far.
    pub value: String,
}

/// Parameters of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteParams {
    /// What is completed.
    #[serde(rename = "ref")]
    pub reference: CompletionReference,
    /// The argument.
    pub argument: CompletionArgument,
    /// Values of the other arguments already chosen (2025-06-18 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CompletionContext>,
}

/// Arguments already resolved, for context-aware completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Argument name to value.
    #[serde(default)]
    pub arguments: HashMap<String, String>,
}

/// A page of a list result.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// A single page with every item.
    pub fn all(items: Vec<T>) -> Self {
        Self {
            items,
            next_cursor: None,
        }
    }
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("unknown tool: {name}"))
}

/// The low-level server: one method per request, each with a default. The builder's router
/// implements it; implement it yourself to take over routing completely.
///
/// Lifecycle (`initialize`, `ping`), `logging/setLevel`, subscriptions bookkeeping, version
/// projection and cancellation are handled by the session around it.
pub trait ServerHandler: Send + Sync + 'static {
    /// The capabilities to declare in `initialize` (a `ServerCapabilities` object).
    fn capabilities(&self) -> Value;

    /// `tools/list`.
    fn list_tools(
        &self,
        _cursor: Option<String>,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<Page<Tool>, ErrorData>> {
        Box::pin(async { Ok(Page::all(Vec::new())) })
    }

    /// `tools/call`.
    fn call_tool(
        &self,
        params: CallToolParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<CallToolResult, ErrorData>> {
        Box::pin(async move { Err(unknown_tool(&params.name)) })
    }

    /// `resources/list`.
    fn list_resources(
        &self,
        _cursor: Option<String>,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<Page<Resource>, ErrorData>> {
        Box::pin(async { Ok(Page::all(Vec::new())) })
    }

    /// `resources/templates/list`.
    fn list_resource_templates(
        &self,
        _cursor: Option<String>,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<Page<ResourceTemplate>, ErrorData>> {
        Box::pin(async { Ok(Page::all(Vec::new())) })
    }

    /// `resources/read`.
    fn read_resource(
        &self,
        uri: String,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<ReadResourceResult, ErrorData>> {
        Box::pin(async move { Err(resource_not_found(&uri)) })
    }

    /// `resources/subscribe`: succeed if the URI can be watched.
    fn subscribe(&self, uri: String, _cx: RequestContext) -> BoxFuture<'_, Result<(), ErrorData>> {
        Box::pin(async move { Err(resource_not_found(&uri)) })
    }

    /// `prompts/list`.
    fn list_prompts(
        &self,
        _cursor: Option<String>,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<Page<Prompt>, ErrorData>> {
        Box::pin(async { Ok(Page::all(Vec::new())) })
    }

    /// `prompts/get`.
    fn get_prompt(
        &self,
        params: GetPromptParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<GetPromptResult, ErrorData>> {
        Box::pin(async move {
            Err(ErrorData::invalid_params(format!(
                "unknown prompt: {}",
                params.name
            )))
        })
    }

    /// `completion/complete`.
    fn complete(
        &self,
        _params: CompleteParams,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<Completion, ErrorData>> {
        Box::pin(async { Ok(Completion::default()) })
    }

    /// Any other method (custom extensions). The default answers `-32601`.
    fn custom(
        &self,
        method: String,
        _params: Option<Value>,
        _cx: RequestContext,
    ) -> BoxFuture<'_, Result<Value, ErrorData>> {
        Box::pin(async move { Err(ErrorData::method_not_found(&method)) })
    }
}

/// The error for a resource URI that does not exist: `-32602` with `data.uri`.
pub fn resource_not_found(uri: &str) -> ErrorData {
    ErrorData::invalid_params(format!("resource not found: {uri}"))
        .with_data(serde_json::json!({"uri": uri}))
}

/// A request as middleware sees it: before routing, with raw parameters.
#[derive(Debug)]
#[non_exhaustive]
pub struct Request {
    /// The JSON-RPC id.
    pub id: Value,
    /// The method name.
    pub method: String,
    /// The raw parameters.
    pub params: Option<Value>,
    /// The negotiated revision, once `initialize` has completed.
    pub protocol_version: Option<ProtocolVersion>,
    /// Per-request extensions; handlers see them through
    /// [`RequestContext::extensions`].
    pub extensions: Extensions,
}

/// Wraps every request: runs code before and after the rest of the chain, or answers on its own.
///
/// ```
/// use mcp_server::{Middleware, Next, Request, ErrorData, BoxFuture};
/// use serde_json::Value;
///
/// struct Timing;
/// impl Middleware for Timing {
///     fn handle<'a>(&'a self, req: Request, next: Next<'a>) -> BoxFuture<'a, Result<Value, ErrorData>> {
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
    /// Handles a request, usually by calling `next.run(request)`.
    fn handle<'a>(
        &'a self,
        request: Request,
        next: Next<'a>,
    ) -> BoxFuture<'a, Result<Value, ErrorData>>;
}

pub(crate) trait Endpoint: Send + Sync {
    fn call(&self, request: Request) -> BoxFuture<'_, Result<Value, ErrorData>>;
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
    pub async fn run(self, request: Request) -> Result<Value, ErrorData> {
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
