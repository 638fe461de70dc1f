//! Routing of one request to the [`ServerHandler`](crate::ServerHandler), independent of how
//! the revision and the client were learned (a session's `initialize`, or the request itself).
//!
//! Params are decoded once from the raw JSON into the method's `mcp-types` params type; the
//! result is projected to the request's revision with the generated [`Project`] trait and
//! encoded once.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_jsonrpc::{ErrorObject, RawJson};
use mcp_types::methods::{self, MethodKind};
use mcp_types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, ContentBlock, EmptyResult,
    GetPromptRequestParams, Meta, PaginatedRequestParams, ProgressToken, Project, ProtocolVersion,
    ReadResourceRequestParams, SetLevelRequestParams, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::context::{ClientChannel, ClientScope, RequestContext};
use crate::handler::Request;
use crate::registry::Arguments;
use crate::server::{List, Server};

/// Who a request comes from and how to reach them: the per-request value dispatch works from.
pub(crate) struct Origin<'a> {
    /// The revision, client info and capabilities that apply to this request.
    pub(crate) scope: Arc<ClientScope>,
    /// How handler contexts reach the client.
    pub(crate) channel: Arc<dyn ClientChannel>,
    /// Fires when the request is cancelled or the connection closes.
    pub(crate) cancel: mcp_jsonrpc::Cancellation,
    /// The session's resource subscriptions (`None` where there is no session).
    pub(crate) subscriptions: Option<&'a Mutex<HashSet<String>>>,
}

impl Origin<'_> {
    /// The handler context of the request `id` coming from here.
    fn context(
        self,
        server: &Server,
        id: mcp_jsonrpc::Id,
        extensions: mcp_jsonrpc::Extensions,
        progress_token: Option<ProgressToken>,
    ) -> RequestContext {
        RequestContext {
            scope: self.scope,
            channel: self.channel,
            request_id: id,
            progress_token,
            cancel: self.cancel,
            extensions,
            uri: None,
            server: server.clone(),
        }
    }
}

/// Encodes a result for `version`: projected, then serialized once.
pub(crate) fn encode<T: Serialize + Project>(
    mut value: T,
    version: ProtocolVersion,
) -> Result<RawJson, ErrorObject> {
    value.project(version);
    RawJson::serialize(&value).map_err(ErrorObject::internal_error)
}

/// Encodes params of a message to the client for `version`: projected, then serialized once.
pub(crate) fn encode_params<T: Serialize + Project>(
    mut value: T,
    version: ProtocolVersion,
) -> Result<Box<RawValue>, ErrorObject> {
    value.project(version);
    mcp_jsonrpc::to_raw(&value).map_err(ErrorObject::internal_error)
}

/// `{}`.
pub(crate) fn empty() -> Result<RawJson, ErrorObject> {
    RawJson::serialize(&EmptyResult::default()).map_err(ErrorObject::internal_error)
}

/// The parts of `tools/call` params the builder's router reads, borrowed from the request
/// (the other fields are read before dispatch, or not at all).
#[derive(Deserialize)]
struct ToolCall<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", default)]
    meta: Option<ProgressMeta>,
}

/// The one `_meta` member dispatch reads; the others (a stateless request's revision and
/// capabilities, read before dispatch) are skipped unparsed.
#[derive(Deserialize)]
struct ProgressMeta {
    #[serde(rename = "progressToken", default)]
    progress_token: Option<serde_json::Value>,
}

/// Decodes params (absent params decode as `{}`); failures are `-32602`.
fn params<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Result<T, ErrorObject> {
    serde_json::from_str(raw.map_or("{}", RawValue::get)).map_err(ErrorObject::invalid_params)
}

/// [`tool_arguments`] sharing text already held elsewhere (no copy).
pub(crate) fn shared_tool_arguments(text: Option<&Arc<str>>) -> Option<Arguments<'static>> {
    match text {
        None => tool_arguments(None),
        Some(a) if a.starts_with('{') => Some(Arguments::Shared(Arc::clone(a))),
        Some(_) => None,
    }
}

/// Replaces a content block the revision lacks by a text block saying what it was, so the
/// client still learns something (an audio block for 2024-11-05, a resource link before
/// 2025-06-18). Which blocks exist in which revision comes from the generated model.
pub(crate) fn degrade(block: &mut ContentBlock, version: ProtocolVersion) {
    if block.available_in(version) {
        return;
    }
    let text = match block {
        ContentBlock::Audio(a) => format!(
            "[{} content omitted: audio is not supported by protocol revision {version}]",
            a.mime_type
        ),
        ContentBlock::ResourceLink(l) => format!("{}: {}", l.name, l.uri),
        _ => format!("[content omitted: not supported by protocol revision {version}]"),
    };
    *block = ContentBlock::text(text);
}

fn progress_token(meta: Option<&Meta>) -> Option<ProgressToken> {
    token_of(meta?.get("progressToken")?)
}

/// A progress token: a string or an integer (anything else is ignored).
fn token_of(token: &serde_json::Value) -> Option<ProgressToken> {
    match token {
        serde_json::Value::String(s) => Some(ProgressToken::String(s.clone())),
        serde_json::Value::Number(n) => n.as_i64().map(ProgressToken::Integer),
        _ => None,
    }
}

/// The `_meta` of raw params of a custom method, if it is an object with one.
fn raw_meta(raw: Option<&RawValue>) -> Option<Meta> {
    #[derive(serde::Deserialize)]
    struct WithMeta {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    serde_json::from_str::<WithMeta>(raw?.get()).ok()?.meta
}

/// Whether `method` lies in one of the protocol's namespaces (`tools/`, `notifications/`,
/// ...; taken from every method any revision defines): such a method that the revision lacks
/// is not found rather than routed to [`ServerHandler::custom`](crate::ServerHandler::custom).
fn in_protocol_namespace(method: &str) -> bool {
    let Some((prefix, _)) = method.split_once('/') else {
        return false;
    };
    methods::all()
        .iter()
        .any(|m| m.name.split_once('/').is_some_and(|(p, _)| p == prefix))
}

/// Whether `method` is the Skills extension's method in a protocol namespace
/// (`resources/directory/read`), which goes to the handler when skills are served.
fn is_skills_method(method: &str) -> bool {
    #[cfg(feature = "skills")]
    return method == mcp_types::skills::METHOD_DIRECTORY_READ;
    #[cfg(not(feature = "skills"))]
    {
        let _ = method;
        false
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A tool call's arguments as the builder's router takes them: absent is `{}`; `None` when
/// they are not an object.
pub(crate) fn tool_arguments(text: Option<&str>) -> Option<Arguments<'_>> {
    match text {
        None => Some(Arguments::Text("{}")),
        Some(a) if a.starts_with('{') => Some(Arguments::Text(a)),
        Some(_) => None,
    }
}

/// A tool's result with the content blocks the revision lacks degraded.
fn degraded(mut result: CallToolResult, version: ProtocolVersion) -> CallToolResult {
    for block in &mut result.content {
        degrade(block, version);
    }
    result
}

/// `tools/call` on the builder's router with its params already read (the stateless path
/// reads them once for its own needs): the tool named `name` runs with `arguments`, and its
/// result comes back degraded for the revision but not yet encoded, for the caller to finish.
pub(crate) async fn call_tool_read(
    server: &Server,
    origin: Origin<'_>,
    request: Request,
    name: &str,
    arguments: Arguments<'_>,
    progress_token: Option<ProgressToken>,
) -> Result<CallToolResult, ErrorObject> {
    let version = origin.scope.version;
    let entry = server.inner.registry.tool(name)?;
    let cx = origin.context(server, request.id, request.extensions, progress_token);
    let call = entry.call(cx, arguments);
    #[cfg(feature = "otel")]
    let call = crate::otel::in_tool_span(name, call);
    Ok(degraded(call.await?, version))
}

/// Routes one request (anything but `initialize`) of a client whose revision is known.
pub(crate) async fn dispatch(
    server: &Server,
    origin: Origin<'_>,
    request: Request,
) -> Result<RawJson, ErrorObject> {
    let version = origin.scope.version;
    match methods::lookup(&request.method) {
        Some(info) => {
            let callable = info.kind == MethodKind::Request
                && info.sender.client()
                && info.available_in(version);
            if !callable {
                return Err(ErrorObject::method_not_found(&request.method));
            }
        }
        // An extension's method in a protocol namespace goes to the handler.
        None if in_protocol_namespace(&request.method) && !is_skills_method(&request.method) => {
            return Err(ErrorObject::method_not_found(&request.method));
        }
        None => {}
    }
    // The tasks of 2025-11-25: a `tools/call` that asks for a task, and the tasks methods.
    #[cfg(feature = "tasks")]
    let (origin, request) = match crate::tasks::session::intercept(server, origin, request) {
        crate::tasks::session::Intercept::Pass(origin, request) => (origin, request),
        crate::tasks::session::Intercept::Answer(answer) => return answer.await,
    };
    let Request {
        id,
        method,
        params: raw,
        extensions,
        ..
    } = request;
    let subscriptions = origin.subscriptions;
    // Called once, in whichever arm runs: the request's values move into the context (no
    // reference count or cancellation-token clone per request).
    let cx = move |progress_token: Option<ProgressToken>| {
        origin.context(server, id, extensions, progress_token)
    };
    let h = &*server.inner.handler;
    let raw = raw.as_deref();
    match method.as_str() {
        "ping" => empty(),
        "logging/setLevel" => {
            let p: SetLevelRequestParams = params(raw)?;
            cx(progress_token(p.meta.as_ref())).scope.log.set(p.level);
            empty()
        }
        "tools/list" => {
            let p: PaginatedRequestParams = params(raw)?;
            if server.inner.builtin_router && p.cursor.is_none() {
                return server.inner.first_page(List::Tools, version);
            }
            let cx = cx(progress_token(p.meta.as_ref()));
            encode(h.list_tools(p, cx).await?, version)
        }
        "tools/call" => {
            let result = if server.inner.builtin_router {
                // The builder's router: the arguments stay text until the tool's own type
                // decodes them (no tree of `Value`s built, copied and dropped per call).
                let p: ToolCall<'_> = params(raw)?;
                let Some(args) = tool_arguments(p.arguments.map(RawValue::get)) else {
                    return Err(ErrorObject::invalid_params(
                        "invalid type for `arguments`: expected an object",
                    ));
                };
                let entry = server.inner.registry.tool(&p.name)?;
                let token = p.meta.and_then(|m| m.progress_token);
                let call = entry.call(cx(token.as_ref().and_then(token_of)), args);
                #[cfg(feature = "otel")]
                let call = crate::otel::in_tool_span(&p.name, call);
                call.await?
            } else {
                let p: CallToolRequestParams = params(raw)?;
                let cx = cx(progress_token(p.meta.as_ref()));
                #[cfg(feature = "otel")]
                let name = p.name.clone();
                let call = h.call_tool(p, cx);
                #[cfg(feature = "otel")]
                let call = crate::otel::in_tool_span(&name, call);
                call.await?
            };
            encode(degraded(result, version), version)
        }
        "resources/list" => {
            let p: PaginatedRequestParams = params(raw)?;
            if server.inner.builtin_router && p.cursor.is_none() {
                return server.inner.first_page(List::Resources, version);
            }
            let cx = cx(progress_token(p.meta.as_ref()));
            encode(h.list_resources(p, cx).await?, version)
        }
        "resources/templates/list" => {
            let p: PaginatedRequestParams = params(raw)?;
            if server.inner.builtin_router && p.cursor.is_none() {
                return server.inner.first_page(List::Templates, version);
            }
            let cx = cx(progress_token(p.meta.as_ref()));
            encode(h.list_resource_templates(p, cx).await?, version)
        }
        "resources/read" => {
            let p: ReadResourceRequestParams = params(raw)?;
            let cx = cx(progress_token(p.meta.as_ref()));
            encode(h.read_resource(p, cx).await?, version)
        }
        "resources/subscribe" => {
            let Some(subscriptions) = subscriptions else {
                return Err(ErrorObject::method_not_found(&method));
            };
            let p: SubscribeRequestParams = params(raw)?;
            let cx = cx(progress_token(p.meta.as_ref()));
            let uri = p.uri.clone();
            h.subscribe(p, cx).await?;
            lock(subscriptions).insert(uri);
            empty()
        }
        "resources/unsubscribe" => {
            let Some(subscriptions) = subscriptions else {
                return Err(ErrorObject::method_not_found(&method));
            };
            let p: UnsubscribeRequestParams = params(raw)?;
            lock(subscriptions).remove(&p.uri);
            let cx = cx(progress_token(p.meta.as_ref()));
            h.unsubscribe(p, cx).await?;
            empty()
        }
        "prompts/list" => {
            let p: PaginatedRequestParams = params(raw)?;
            if server.inner.builtin_router && p.cursor.is_none() {
                return server.inner.first_page(List::Prompts, version);
            }
            let cx = cx(progress_token(p.meta.as_ref()));
            encode(h.list_prompts(p, cx).await?, version)
        }
        "prompts/get" => {
            let p: GetPromptRequestParams = params(raw)?;
            let cx = cx(progress_token(p.meta.as_ref()));
            let mut result = h.get_prompt(p, cx).await?;
            for message in &mut result.messages {
                degrade(&mut message.content, version);
            }
            encode(result, version)
        }
        "completion/complete" => {
            let p: CompleteRequestParams = params(raw)?;
            let cx = cx(progress_token(p.meta.as_ref()));
            encode(h.complete(p, cx).await?, version)
        }
        _ if methods::lookup(&method).is_some() => {
            // A protocol method this server does not serve (tasks, for example).
            Err(ErrorObject::method_not_found(&method))
        }
        _ => {
            let meta = raw_meta(raw);
            let cx = cx(progress_token(meta.as_ref()));
            let params = raw.map(ToOwned::to_owned);
            h.custom(method, params, cx).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::ContentBlockExt;

    #[test]
    fn content_a_revision_lacks_degrades_to_text() {
        let mut audio = ContentBlock::audio([0], "audio/wav");
        degrade(&mut audio, ProtocolVersion::V2024_11_05);
        assert!(
            audio
                .as_text()
                .is_some_and(|t| t.contains("audio/wav") && t.contains("2024-11-05"))
        );
        let mut audio = ContentBlock::audio([0], "audio/wav");
        degrade(&mut audio, ProtocolVersion::V2025_03_26);
        assert!(matches!(audio, ContentBlock::Audio(_)));
        let mut link = ContentBlock::resource_link("file:///a", "a");
        degrade(&mut link, ProtocolVersion::V2025_03_26);
        assert_eq!(link.as_text(), Some("a: file:///a"));
        let mut link = ContentBlock::resource_link("file:///a", "a");
        degrade(&mut link, ProtocolVersion::V2025_06_18);
        assert!(matches!(link, ContentBlock::ResourceLink(_)));
    }

    #[test]
    fn protocol_namespaces_come_from_the_method_table() {
        assert!(in_protocol_namespace("tools/frobnicate"));
        assert!(in_protocol_namespace("notifications/whatever"));
        assert!(!in_protocol_namespace("mcp/initialize"));
        assert!(!in_protocol_namespace("acme/search"));
        assert!(!in_protocol_namespace("ping"));
    }

    #[test]
    fn progress_tokens_are_strings_or_integers() {
        let mut meta = Meta::new();
        meta.insert("progressToken".into(), serde_json::json!("p-1"));
        assert_eq!(
            progress_token(Some(&meta)),
            Some(ProgressToken::String("p-1".into()))
        );
        meta.insert("progressToken".into(), serde_json::json!(7));
        assert_eq!(progress_token(Some(&meta)), Some(ProgressToken::Integer(7)));
        meta.insert("progressToken".into(), serde_json::json!(1.5));
        assert_eq!(progress_token(Some(&meta)), None);
        assert_eq!(
            raw_meta(Some(
                &*mcp_jsonrpc::to_raw(&serde_json::json!({"_meta": {"a": 1}})).unwrap()
            ))
            .map(|m| m.len()),
            Some(1)
        );
    }
}
