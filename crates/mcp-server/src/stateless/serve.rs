//! Serving one request of the stateless revision (2026-07-28) on any connection.
//!
//! The request brings its own revision, client capabilities and client information in
//! `params._meta`; nothing is taken from earlier requests on the same connection. The request
//! is routed by the same dispatch as session traffic, with a per-request [`ClientScope`] and a
//! [`StatelessChannel`]; the result is lowered to the stateless wire (`resultType`,
//! `serverInfo`, caching hints) and multi round-trip requests end in the handler's result, an
//! `input_required` result or an error, as their [`Exchange`] decides.

use std::sync::Arc;

use mcp_jsonrpc::{ErrorObject, RawJson};
use mcp_types::wire::{self, RequestMeta, ResultType, RetryInput, StatelessParams};
use mcp_types::{CallToolResult, DiscoverResult, Project, ProtocolVersion, ServerCapabilities};
use serde_json::Value;
use serde_json::value::RawValue;

use super::channel::{FirstAttempt, MethodName, RequestExchange, StatelessChannel};
use super::listen;
use super::mrtr::{Exchange, HandlerOutcome, Verdict};
use super::seal::Binding;
use crate::context::{ClientScope, LogThreshold};
use crate::dispatch::{self, Origin, dispatch};
use crate::error::rpc_error;
use crate::handler::Request;
use crate::server::Server;
#[cfg(feature = "tasks")]
use crate::tasks::{self, serve::Ran};
use mcp_types::wire::tasks as tasks_wire;

/// The two `_meta` members that make a request stateless, borrowed from the request.
#[derive(serde::Deserialize)]
struct MetaProbe<'a> {
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<MetaKeys<'a>>,
}

#[derive(serde::Deserialize)]
struct MetaKeys<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default, borrow)]
    #[serde(deserialize_with = "present")]
    protocol_version: Option<&'a RawValue>,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default, borrow)]
    #[serde(deserialize_with = "present")]
    client_capabilities: Option<&'a RawValue>,
}

/// A member that is present, `null` included (plain `Option` would read `null` as absent; a
/// `null` `_meta` then fails to read as an object, and the parsed value decides the error).
fn present<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// How a request is to be served: statelessly (with the revision its `_meta` names, when it
/// names a known one) or on the session. Reads only the two `_meta` members that decide it.
pub(crate) fn classify(method: &str, params: Option<&RawValue>) -> Option<Option<ProtocolVersion>> {
    let (has_version, version, has_capabilities) = params
        .filter(|p| may_have_meta(p.get()))
        .and_then(probe_meta)
        .unwrap_or((false, None, false));
    let evidence = wire::EraEvidence {
        method: Some(method),
        meta_version: has_version,
        meta_capabilities: has_capabilities,
        ..wire::EraEvidence::default()
    };
    wire::classify(&evidence).is_stateless().then_some(version)
}

/// From `_meta`: whether it has a protocol version, the revision that names (when it is a string
/// naming a known one), and whether it has client capabilities. `None` when there is no `_meta`
/// object.
fn probe_meta(params: &RawValue) -> Option<(bool, Option<ProtocolVersion>, bool)> {
    match serde_json::from_str::<MetaProbe<'_>>(params.get()) {
        Ok(probe) => {
            let keys = probe.meta?;
            let version = keys
                .protocol_version
                .and_then(|v| serde_json::from_str::<String>(v.get()).ok())
                .and_then(|v| ProtocolVersion::from_date(&v));
            Some((
                keys.protocol_version.is_some(),
                version,
                keys.client_capabilities.is_some(),
            ))
        }
        // `_meta` not an object, or one of its members twice: decide on the parsed value.
        Err(_) => {
            #[derive(serde::Deserialize)]
            struct Probe {
                #[serde(rename = "_meta")]
                meta: Option<Value>,
            }
            let Value::Object(meta) = serde_json::from_str::<Probe>(params.get()).ok()?.meta?
            else {
                return None;
            };
            let version = meta.get(wire::META_PROTOCOL_VERSION);
            Some((
                version.is_some(),
                version
                    .and_then(Value::as_str)
                    .and_then(ProtocolVersion::from_date),
                meta.contains_key(wire::META_CLIENT_CAPABILITIES),
            ))
        }
    }
}

/// Whether a request may be one of the stateless revision: a cheap test (no parsing) that is
/// never wrong when it says no. A session's request without `_meta` is known at once.
pub(crate) fn may_be_stateless(method: &str, params: Option<&RawValue>) -> bool {
    wire::stateless_only(method) || params.is_some_and(|p| may_have_meta(p.get()))
}

/// Whether params may hold a `_meta` member: without the name and without any escape (which
/// could spell it), they cannot, and most requests of a session skip a parse. The portable
/// searcher, as the codecs use: `memchr::memchr2_iter` would detect the CPU's features on its
/// first call, tens of microseconds of a stdio server's start in a virtual machine.
fn may_have_meta(params: &str) -> bool {
    let bytes = params.as_bytes();
    memchr::arch::all::memchr::Two::new(b'_', b'\\')
        .iter(bytes)
        .any(|i| bytes[i] == b'\\' || bytes[i..].starts_with(b"_meta"))
}

fn internal(e: impl std::fmt::Display) -> ErrorObject {
    ErrorObject::internal_error(e)
}

/// Lowers an encoded result to the stateless wire. A custom method's result that is not an
/// object is passed through.
fn lower(
    server: &Server,
    method: &str,
    raw: &RawJson,
    kind: ResultType,
) -> Result<RawJson, ErrorObject> {
    if kind == ResultType::Complete {
        if let Some(lowered) = lower_complete_in_place(server, method, raw) {
            return Ok(lowered);
        }
    }
    lower_via_value(server, method, raw, kind)
}

/// [`lower`] through a decoded value: the general path.
fn lower_via_value(
    server: &Server,
    method: &str,
    raw: &RawJson,
    kind: ResultType,
) -> Result<RawJson, ErrorObject> {
    let mut value: Value = serde_json::from_str(raw.get()).map_err(internal)?;
    let Value::Object(map) = &mut value else {
        return Ok(raw.clone());
    };
    let inner = &server.inner;
    let hint = inner.options.cache.for_method(method);
    wire::lower_result(method, map, kind, Some(&inner.info), hint).map_err(internal)?;
    RawJson::serialize(map).map_err(internal)
}

/// [`lower`] for a complete result without members the lowering would have to merge with
/// (`_meta`, `resultType`, caching hints): the envelope members are written in front of the
/// result's own, with no decoding. `None` when the text might hold any of those members (an
/// escape could spell one), so the general path decides.
fn lower_complete_in_place(server: &Server, method: &str, raw: &RawJson) -> Option<RawJson> {
    const MERGED: [&str; 4] = ["\"_meta\"", "\"resultType\"", "\"ttlMs\"", "\"cacheScope\""];
    let text = raw.get();
    let members = text.strip_prefix('{')?;
    if text.contains('\\') || MERGED.iter().any(|m| text.contains(m)) {
        return None;
    }
    let inner = &server.inner;
    let info = inner.info_json.get();
    let mut out = String::with_capacity(text.len() + info.len() + 128);
    out.push_str("{\"resultType\":\"complete\",\"_meta\":{\"");
    out.push_str(wire::META_SERVER_INFO);
    out.push_str("\":");
    out.push_str(info);
    out.push('}');
    if wire::CACHEABLE_METHODS.contains(&method) {
        let hint = inner.options.cache.for_method(method).unwrap_or_default();
        out.push_str(",\"ttlMs\":");
        out.push_str(&hint.ttl_ms.to_string());
        out.push_str(",\"cacheScope\":\"");
        out.push_str(hint.scope.as_str());
        out.push('"');
    }
    if !members.trim_start().starts_with('}') {
        out.push(',');
    }
    out.push_str(members);
    RawJson::from_string(out).ok()
}

/// Whether the server's capabilities cover a method: without `tools` (`prompts`, `resources`,
/// `completions`) declared, the methods of that feature do not exist.
fn serves(capabilities: &ServerCapabilities, method: &str) -> bool {
    match method.split_once('/').map(|(family, _)| family) {
        Some("tools") => capabilities.tools.is_some(),
        Some("prompts") => capabilities.prompts.is_some(),
        Some("resources") => capabilities.resources.is_some(),
        Some("completion") => capabilities.completions.is_some(),
        _ => true,
    }
}

#[derive(serde::Deserialize)]
struct IsError {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

fn is_error_result(raw: &RawJson) -> bool {
    let text = raw.get();
    if !text.contains("isError") && !text.contains('\\') {
        return false;
    }
    serde_json::from_str::<IsError>(text).is_ok_and(|r| r.is_error == Some(true))
}

/// A stateless request's params, read once: the members the stateless path reads itself, the
/// tool arguments (as text) and the lifted `_meta`.
pub(crate) struct Lifted {
    params: Members,
    arguments: Option<Arc<str>>,
    meta: Box<RequestMeta>,
}

/// The members of a stateless request's params that the stateless path reads itself (not the
/// handler's): for most requests the target's name and nothing else, kept without building a
/// value of the params.
#[derive(Default)]
pub(crate) struct Members {
    /// The params parsed whole: for the methods that read them all, for retries, and for
    /// params whose members could not be read one by one (the parsed value decides, as for
    /// any method).
    whole: Option<Value>,
    /// `name` when it is a string.
    name: Option<String>,
    /// `uri` when it is a string.
    uri: Option<String>,
}

impl Members {
    /// The params whole, for the methods that read them all and for retries (`None` when
    /// they were read member by member).
    pub(crate) fn whole(&self) -> Option<&Value> {
        self.whole.as_ref()
    }

    fn member(&self, key: &str) -> Option<&str> {
        self.whole.as_ref()?.get(key)?.as_str()
    }

    /// `name` (a tool's or a prompt's), when it is a string.
    pub(crate) fn name(&self) -> Option<&str> {
        self.name.as_deref().or_else(|| self.member("name"))
    }

    /// The member a sealed state is bound to: `uri` for `resources/read`, else `name`.
    pub(crate) fn target(&self, method: &str) -> Option<&str> {
        match method {
            "resources/read" => self.uri.as_deref().or_else(|| self.member("uri")),
            _ => self.name(),
        }
    }
}

#[cfg(test)]
impl Members {
    /// Members read from a parsed value of the params (tests).
    pub(crate) fn of(params: Value) -> Members {
        Members {
            whole: Some(params),
            ..Members::default()
        }
    }
}

impl Lifted {
    /// The revision the request's `_meta` names (a supported one).
    pub(crate) fn version(&self) -> ProtocolVersion {
        self.meta.protocol_version
    }
}

/// Reads a stateless request's params: `Err` when its `_meta` is missing, malformed or names
/// a revision this server does not serve (the error the request is answered with).
pub(crate) fn lift(method: &str, raw: Option<&RawValue>) -> Result<Lifted, ErrorObject> {
    // `subscriptions/listen` and the tasks methods read their params whole; every other method
    // needs only a few members here, and the rest (the arguments above all) stays text.
    let whole = method == "subscriptions/listen" || tasks_wire::METHODS.contains(&method);
    let supported = wire::stateless_versions();
    let from_members = |params: wire::LiftedParams| Lifted {
        params: Members {
            whole: None,
            name: params.name,
            uri: params.uri,
        },
        arguments: params.arguments,
        meta: params.meta,
    };
    if whole {
        return whole_params(raw, supported, true);
    }
    match raw
        .and_then(|raw| StatelessParams::read(raw.get()).ok())
        .filter(|params| !params.is_retry())
    {
        Some(params) => params
            .lift(supported)
            .map(from_members)
            .map_err(|e| rpc_error(e.to_error())),
        // The params whole: for retries, and for params that are not an object with each
        // member once (the parsed value decides, as for any method).
        None => whole_params(raw, supported, false),
    }
}

/// A stateless request's params parsed whole: for the methods that read them all (`whole`),
/// for retries, and for params whose members could not be read one by one.
fn whole_params(
    raw: Option<&RawValue>,
    supported: &[ProtocolVersion],
    whole: bool,
) -> Result<Lifted, ErrorObject> {
    let mut params = raw.map(parse_params).transpose()?;
    let meta =
        RequestMeta::lift(params.as_ref(), supported).map_err(|e| rpc_error(e.to_error()))?;
    let arguments = match &mut params {
        Some(Value::Object(p)) if !whole => p.remove("arguments").map(|a| Arc::from(a.to_string())),
        _ => None,
    };
    Ok(Lifted {
        params: Members {
            whole: params,
            ..Members::default()
        },
        arguments,
        meta: Box::new(meta),
    })
}

/// Serves one stateless request.
pub(crate) async fn serve(
    server: &Server,
    rpc: &mcp_jsonrpc::RequestContext,
    request: Request,
) -> Result<RawJson, ErrorObject> {
    let lifted = lift(&request.method, request.params.as_deref())?;
    serve_lifted(server, rpc.clone(), request, lifted).await
}

/// Where a stateless request goes.
enum Route {
    Discover,
    Listen,
    Tasks,
    Call,
}

/// Serves one stateless request whose params were read by [`lift`]. It owns what it uses (the
/// server through whatever holds it: a transport's direct path passes the session, so it
/// boxes this future alone, without a wrapper holding a second copy of the request, and
/// without counting a reference to the server); the client's `_meta` is boxed for the same
/// reason: it is moved through every layer down to the request's scope.
pub(crate) async fn serve_lifted<S: std::borrow::Borrow<Server>>(
    server: S,
    rpc: mcp_jsonrpc::RequestContext,
    request: Request,
    lifted: Lifted,
) -> Result<RawJson, ErrorObject> {
    let server: &Server = server.borrow();
    let Lifted {
        params,
        arguments,
        meta,
    } = lifted;
    let version = meta.protocol_version;
    let route = match request.method.as_str() {
        "server/discover" => Route::Discover,
        "subscriptions/listen" => Route::Listen,
        m if tasks_wire::METHODS.contains(&m) => Route::Tasks,
        _ => Route::Call,
    };
    let result = match route {
        Route::Discover => discover(server, version),
        Route::Listen => {
            let owner = server.subject(&request.extensions);
            // Boxed: a subscription stream is long-lived and rare; held in place its future
            // would size every stateless request's.
            Box::pin(listen::listen(
                server,
                &rpc,
                params.whole(),
                &meta,
                owner.as_deref(),
            ))
            .await
        }
        #[cfg(not(feature = "tasks"))]
        Route::Tasks => Err(ErrorObject::method_not_found(&request.method)),
        #[cfg(feature = "tasks")]
        Route::Tasks => {
            let owner = server.subject(&request.extensions);
            if server.inner.tasks.shared().is_some() {
                // Boxed: only servers whose tasks are shared wait on the store here.
                Box::pin(tasks::serve::handle_shared(
                    server,
                    &request.method,
                    params.whole(),
                    &meta.client_capabilities,
                    owner.as_deref(),
                ))
                .await
            } else {
                tasks::serve::handle(
                    server,
                    &request.method,
                    params.whole(),
                    &meta.client_capabilities,
                    owner.as_deref(),
                )
            }
        }
        // Boxed: held in place, the call's future (which holds the request again, as an async
        // fn's arguments are) would put this one past the allocator's per-thread cache.
        Route::Call => Box::pin(call(server, &rpc, request, params, arguments, meta)).await,
    };
    result.map_err(|mut e| {
        e.code = wire::lower_error_code(e.code, version);
        e
    })
}

/// `server/discover`: the stateless revisions served, the capabilities derived from what is
/// registered, the instructions; cacheable.
fn discover(server: &Server, version: ProtocolVersion) -> Result<RawJson, ErrorObject> {
    let inner = &server.inner;
    let mut capabilities = inner.handler.capabilities();
    capabilities.project(version);
    let hint = inner.options.cache.discover;
    let result = DiscoverResult {
        meta: None,
        cache_scope: hint.scope,
        capabilities,
        instructions: inner.instructions.clone(),
        result_type: ResultType::Complete.as_str().to_owned(),
        supported_versions: wire::stateless_versions()
            .iter()
            .map(|v| v.as_str().to_owned())
            .collect(),
        ttl_ms: i64::try_from(hint.ttl_ms).unwrap_or(i64::MAX),
    };
    let raw = RawJson::serialize(&result).map_err(internal)?;
    lower(server, "server/discover", &raw, ResultType::Complete)
}

fn parse_params(raw: &RawValue) -> Result<Value, ErrorObject> {
    serde_json::from_str(raw.get()).map_err(ErrorObject::invalid_params)
}

/// The target a sealed state is bound to (tool or prompt name, resource URI) and the
/// arguments, from the params of a request that may ask for input.
pub(crate) fn binding(
    method: &str,
    params: &Members,
    arguments: Option<&str>,
    subject: Option<&str>,
) -> Binding {
    let arguments = match method {
        "resources/read" => None,
        _ => arguments,
    };
    let binding =
        Binding::new(method, params.target(method).unwrap_or_default()).arguments_text(arguments);
    match subject {
        Some(s) => binding.subject(s),
        None => binding,
    }
}

async fn call(
    server: &Server,
    rpc: &mcp_jsonrpc::RequestContext,
    request: Request,
    params: Members,
    arguments: Option<Arc<str>>,
    meta: Box<RequestMeta>,
) -> Result<RawJson, ErrorObject> {
    let inner = &server.inner;
    let version = meta.protocol_version;
    // The protocol's own names are static: no copy of the name per request.
    let method: MethodName = match mcp_types::methods::lookup(&request.method) {
        Some(info) => MethodName::Borrowed(info.name),
        None => MethodName::Owned(request.method.clone()),
    };
    if !serves(&inner.handler.capabilities(), &method) {
        return Err(ErrorObject::method_not_found(&method));
    }
    #[cfg(feature = "tasks")]
    let may_be_task =
        tasks::serve::eligible(server, &method, params.name(), &meta.client_capabilities)?;
    #[cfg(not(feature = "tasks"))]
    let may_be_task = false;
    let owner = server.subject(&request.extensions);
    let mut request = request;
    // Only requests that may ask for input need the sealer (its key may be made now).
    let sealer = wire::supports_input_required(&method, version)
        .then(|| inner.sealer.get().map_err(internal))
        .transpose()?;
    // The arguments' text (read once, by `lift`) is shared by the tool call and the
    // exchange's binding.
    // `tools/call` on the builder's router, outside a task: the tool runs with what `lift`
    // read (no second pass over the params), and its typed result is lowered as it is
    // encoded (one serialization). Anything unusual takes the general dispatch.
    let tool = (inner.builtin_router && !may_be_task && &*method == "tools/call")
        .then(|| {
            let name = params.name()?.to_owned();
            Some((name, dispatch::shared_tool_arguments(arguments.as_ref())?))
        })
        .flatten();
    let progress_token = meta.progress_token;
    let scope = Arc::new(ClientScope {
        version,
        // Left out, the client is reported as `unknown` (`RequestContext::client_info`), with no
        // string made per request.
        info: meta.client_info,
        capabilities: meta.client_capabilities,
        log: LogThreshold::new(meta.log_level),
    });
    let exchange = match sealer {
        None => RequestExchange::none(),
        Some(sealer) => {
            // A retry's params are read whole (see `lift`).
            let retry = RetryInput::lift(params.whole()).map_err(|e| rpc_error(e.to_error()))?;
            if retry.is_empty() {
                // A first attempt: the exchange is made if the handler asks for input.
                RequestExchange::later(FirstAttempt {
                    method: method.clone(),
                    params,
                    arguments,
                    subject: owner.clone(),
                    scope: Arc::clone(&scope),
                    limits: inner.options.mrtr_limits(),
                })
            } else {
                // The exchange holds them now; the handler's params must not fail on answers
                // the model types do not know (unknown keys are to be ignored).
                let whole = request.params.as_deref().map(parse_params).transpose()?;
                if let Some(Value::Object(mut p)) = whole {
                    p.remove("inputResponses");
                    p.remove("requestState");
                    request.params = Some(mcp_jsonrpc::to_raw(&p).map_err(internal)?);
                }
                let exchange = Exchange::open(
                    sealer,
                    binding(&method, &params, arguments.as_deref(), owner.as_deref()),
                    scope.capabilities.clone(),
                    retry,
                    inner.options.mrtr_limits(),
                )
                .map_err(rpc_error)?;
                RequestExchange::open(exchange)
            }
        }
    };
    let channel = Arc::new(StatelessChannel {
        peer: rpc.peer().clone(),
        exchange,
        method: method.clone(),
    });
    // The exchange, as the handler leaves it.
    let after = Arc::clone(&channel);
    let result = match may_be_task {
        #[cfg(feature = "tasks")]
        true => {
            let waiting = || after.exchange.get().is_some_and(|x| x.has_asks());
            // Boxed, as is the general dispatch below: held in place, their futures would size
            // every stateless tool call's past the allocator's per-thread cache.
            let ran = Box::pin(tasks::serve::run_as(
                server,
                rpc.cancellation(),
                scope,
                channel,
                request,
                owner,
                &waiting,
                tasks::serve::Form::Extension,
            ))
            .await;
            let finished = match ran {
                Ran::Task(task) => return tasks::serve::created(server, &task),
                Ran::Finished(result) => result,
            };
            finished.map(Done::Encoded)
        }
        _ => {
            let origin = Origin {
                scope,
                channel,
                cancel: rpc.cancellation_handle().clone(),
                subscriptions: None,
            };
            match tool {
                Some((name, arguments)) => Box::pin(dispatch::call_tool_read(
                    server,
                    origin,
                    request,
                    &name,
                    arguments,
                    progress_token,
                ))
                .await
                .map(Done::Tool),
                None => Box::pin(dispatch(server, origin, request))
                    .await
                    .map(Done::Encoded),
            }
        }
    };
    if let (Some(exchange), Some(sealer)) = (after.exchange.get(), sealer) {
        let failed = match &result {
            Err(_) => true,
            Ok(Done::Encoded(raw)) => is_error_result(raw),
            Ok(Done::Tool(result)) => result.is_error == Some(true),
        };
        let outcome = if failed {
            HandlerOutcome::Failed
        } else {
            HandlerOutcome::Succeeded
        };
        let form_orders = exchange.form_orders();
        match exchange.finish(outcome, sealer) {
            Verdict::Complete => {}
            Verdict::InputRequired(mut ask) => {
                ask.project(version);
                let raw = RawJson::serialize(&ask).map_err(internal)?;
                let lowered = lower(server, &method, &raw, ResultType::InputRequired)?;
                if form_orders.is_empty() {
                    return Ok(lowered);
                }
                // Forms in the order their types declare their fields (the model and the
                // lowering write maps sorted).
                let ordered = crate::schema::with_form_orders(lowered.get(), &form_orders)
                    .map_err(internal)?;
                return Ok(RawJson::from(ordered));
            }
            Verdict::Error(e) => return Err(rpc_error(e)),
        }
    }
    match result? {
        Done::Encoded(raw) => lower(server, &method, &raw, ResultType::Complete),
        Done::Tool(result) => lower_tool(server, result, version),
    }
}

/// What a stateless request's handler produced: an encoded result, or a tool's typed result
/// still to be lowered and encoded.
enum Done {
    Encoded(RawJson),
    Tool(CallToolResult),
}

/// [`lower`] for a tool's typed result, in one serialization: `resultType` and the server
/// information (its JSON encoded once, at build) are written around the result's own members
/// (`tools/call` results carry no caching hints).
fn lower_tool(
    server: &Server,
    mut result: CallToolResult,
    version: ProtocolVersion,
) -> Result<RawJson, ErrorObject> {
    result.project(version);
    // Every member, named: a member the model gains must be added to `LoweredTool` (this
    // pattern stops compiling until it is).
    let CallToolResult {
        meta,
        content,
        is_error,
        result_type: _,
        structured_content,
    } = &result;
    let lowered = LoweredTool {
        meta: MetaWithInfo {
            meta: meta.as_ref(),
            info: &server.inner.info_json,
        },
        content,
        is_error: *is_error,
        result_type: ResultType::Complete.as_str(),
        structured_content: structured_content.as_ref(),
    };
    RawJson::serialize(&lowered).map_err(internal)
}

/// A tool's result on the stateless wire: the members of [`CallToolResult`] with `resultType`
/// and the server information set, written as a plain struct (serde's `flatten` would route
/// every member through a map serializer).
#[derive(serde::Serialize)]
struct LoweredTool<'a> {
    #[serde(rename = "_meta")]
    meta: MetaWithInfo<'a>,
    content: &'a [mcp_types::ContentBlock],
    #[serde(rename = "isError", skip_serializing_if = "Option::is_none")]
    is_error: Option<bool>,
    #[serde(rename = "resultType")]
    result_type: &'static str,
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
}

/// A result's `_meta` with the server information set.
struct MetaWithInfo<'a> {
    meta: Option<&'a mcp_types::Meta>,
    info: &'a RawValue,
}

impl serde::Serialize for MetaWithInfo<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.meta.into_iter().flatten() {
            if key != wire::META_SERVER_INFO {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry(wire::META_SERVER_INFO, self.info)?;
        map.end()
    }
}

#[cfg(test)]
mod classify_tests {
    use super::*;

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_owned()).unwrap()
    }

    /// What `lift` must give for params, computed from their parsed value alone: the lifted
    /// `_meta` (or the error), the target's name, the arguments and the retry members.
    fn reference(params: &Value) -> Result<(RequestMeta, Option<String>, Option<Value>), String> {
        let meta = RequestMeta::lift(Some(params), wire::stateless_versions())
            .map_err(|e| rpc_error(e.to_error()).message.to_string())?;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Ok((meta, name, params.get("arguments").cloned()))
    }

    #[test]
    fn lifting_in_one_pass_reads_what_the_parsed_value_holds() {
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"progressToken":7,"traceparent":"00-1"}"#;
        let cases = [
            format!(r#"{{"name":"echo","arguments":{{"text":"hi"}},{meta}}}"#),
            format!(r#"{{{meta},"arguments":{{"text":"a\"b"}},"name":"e\u0063ho"}}"#),
            format!(r#"{{"name":7,{meta}}}"#),
            format!(r#"{{"name":"echo",{meta},"inputResponses":{{"a":{{"action":"accept"}}}},"requestState":"s"}}"#),
            // A member twice: the parsed value decides (the last one).
            format!(r#"{{"name":"one","name":"two",{meta}}}"#),
            r#"{"name":"echo","_meta":null}"#.to_owned(),
            r#"{"name":"echo","_meta":5}"#.to_owned(),
            r#"{"name":"echo"}"#.to_owned(),
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#.to_owned(),
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"1999-01-01","io.modelcontextprotocol/clientCapabilities":{}}}"#.to_owned(),
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":3}}"#.to_owned(),
        ];
        for text in &cases {
            let value: Value = serde_json::from_str(text).unwrap();
            let got = lift("tools/call", Some(&raw(text))).map(|l| {
                let arguments = l
                    .arguments
                    .map(|a| serde_json::from_str::<Value>(&a).unwrap());
                let retry = RetryInput::lift(l.params.whole());
                (
                    *l.meta,
                    l.params.name().map(str::to_owned),
                    arguments,
                    retry,
                )
            });
            match (got, reference(&value)) {
                (Ok((meta, name, arguments, retry)), Ok(expected)) => {
                    assert_eq!((meta, name, arguments), expected, "{text}");
                    assert_eq!(retry, RetryInput::lift(Some(&value)), "{text}");
                }
                // serde_json names the place in the text, which a value has not.
                (Err(e), Err(message)) => {
                    let at = e.message.find(" at line").unwrap_or(e.message.len());
                    assert_eq!(e.message[..at], message, "{text}");
                }
                (got, expected) => panic!(
                    "{text}: lifted {:?}, expected {:?}",
                    got.map(|_| ()).map_err(|e| e.message),
                    expected.map(|_| ())
                ),
            }
        }
    }

    #[test]
    fn session_requests_without_meta_are_not_stateless() {
        let params = raw(r#"{"name":"echo","arguments":{"text":"hi"}}"#);
        assert_eq!(classify("tools/call", Some(&params)), None);
        assert_eq!(classify("tools/list", None), None);
    }

    #[test]
    fn stateless_meta_is_found_even_when_its_name_is_escaped() {
        let plain = raw(
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        );
        let version = ProtocolVersion::from_date("2026-07-28");
        assert_eq!(classify("tools/call", Some(&plain)), Some(version));
        let escaped = raw(
            r#"{"name":"echo","\u005fmeta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#,
        );
        assert_eq!(classify("tools/call", Some(&escaped)), Some(version));
    }

    #[test]
    fn odd_meta_is_decided_as_its_parsed_value_would_be() {
        // A version that is not a string still makes the request stateless, naming no revision.
        let number = raw(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}"#);
        assert_eq!(classify("tools/list", Some(&number)), Some(None));
        // Capabilities alone are enough; `null` counts as present.
        let caps = raw(r#"{"_meta":{"io.modelcontextprotocol/clientCapabilities":null}}"#);
        assert_eq!(classify("tools/list", Some(&caps)), Some(None));
        // `_meta` that is not an object, or has neither member: the session's.
        for session in [
            r#"{"_meta":5}"#,
            r#"{"_meta":null}"#,
            r#"{"_meta":{"progressToken":1}}"#,
        ] {
            assert_eq!(
                classify("tools/list", Some(&raw(session))),
                None,
                "{session}"
            );
        }
        // A member of `_meta` twice: the last one wins, as in the parsed value.
        let twice = raw(
            r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#,
        );
        assert_eq!(
            classify("tools/list", Some(&twice)),
            Some(ProtocolVersion::from_date("2026-07-28"))
        );
    }

    #[test]
    fn methods_of_the_stateless_revision_only_are_stateless_without_meta() {
        assert!(classify("server/discover", None).is_some());
    }

    /// The probe's member names are spelled out for serde: they are the keys of `wire`.
    #[test]
    fn the_probe_reads_the_wire_keys() {
        let version = wire::stateless_versions()[0];
        let params = serde_json::json!({"_meta": {
            wire::META_PROTOCOL_VERSION: version,
            wire::META_CLIENT_CAPABILITIES: {},
        }});
        let params = serde_json::value::to_raw_value(&params).unwrap();
        assert_eq!(probe_meta(&params), Some((true, Some(version), true)));
    }
}

#[cfg(test)]
mod lower_tests {
    use super::*;
    use crate::model::Implementation;

    fn server() -> Server {
        Server::builder(Implementation::new("lower-test", "1.0.0"))
            .build()
            .unwrap()
    }

    fn raw(text: &str) -> RawJson {
        RawJson::from_string(text.to_owned()).unwrap()
    }

    #[test]
    fn lowering_in_place_equals_lowering_through_a_value() {
        let server = server();
        for (method, result) in [
            ("tools/call", r#"{"content":[{"type":"text","text":"hi"}]}"#),
            ("tools/call", r#"{"content":[],"isError":true}"#),
            ("tools/list", r#"{"tools":[]}"#),
            ("resources/read", r#"{"contents":[]}"#),
            ("ping", "{}"),
            ("ping", "{ }"),
        ] {
            let fast = lower_complete_in_place(&server, method, &raw(result))
                .unwrap_or_else(|| panic!("{method} {result} takes the general path"));
            let general =
                lower_via_value(&server, method, &raw(result), ResultType::Complete).unwrap();
            let fast: Value = serde_json::from_str(fast.get()).unwrap();
            let general: Value = serde_json::from_str(general.get()).unwrap();
            assert_eq!(fast, general, "{method} {result}");
        }
    }

    #[test]
    fn results_with_members_to_merge_take_the_general_path() {
        let server = server();
        for result in [
            r#"{"_meta":{"a":1},"content":[]}"#,
            r#"{"content":[],"resultType":"complete"}"#,
            r#"{"tools":[],"ttlMs":5}"#,
            r#"{"\u005fmeta":{},"content":[]}"#,
            "[1,2]",
        ] {
            assert!(
                lower_complete_in_place(&server, "tools/list", &raw(result)).is_none(),
                "{result}"
            );
        }
        // And the general path merges them.
        let merged = lower(
            &server,
            "tools/list",
            &raw(r#"{"_meta":{"a":1},"tools":[],"ttlMs":5}"#),
            ResultType::Complete,
        )
        .unwrap();
        let merged: Value = serde_json::from_str(merged.get()).unwrap();
        assert_eq!(merged["_meta"]["a"], 1);
        assert_eq!(merged["ttlMs"], 5);
        assert!(merged["_meta"][wire::META_SERVER_INFO].is_object());
    }
}

#[cfg(test)]
mod tests {
    use super::may_have_meta;

    #[test]
    fn meta_is_looked_for_by_name_and_behind_escapes() {
        for yes in [
            r#"{"_meta":{}}"#,
            r#"{"a_b":1,"_meta":{}}"#,
            r#"{"_met":1,"x":"_meta"}"#,
            r#"{"\u005fmeta":{}}"#,
            r#"{"x":"a\"b"}"#,
            r#"{"__meta":1}"#,
            "_meta",
        ] {
            assert!(may_have_meta(yes), "{yes}");
        }
        for no in [
            "",
            "_",
            "{}",
            r#"{"a_b":"___","_met":"a"}"#,
            r#"{"text":"meta"}"#,
        ] {
            assert!(!may_have_meta(no), "{no}");
        }
    }
}

#[cfg(test)]
mod lower_tool_tests {
    use super::*;
    use mcp_types::{ContentBlock, Implementation};

    /// The typed lowering of a tool's result writes what the general lowering writes.
    #[test]
    fn typed_lowering_matches_the_general_one() {
        let server = Server::builder(Implementation::new("s", "1.0.0"))
            .build()
            .unwrap();
        let v = ProtocolVersion::V2026_07_28;
        let mut with_meta = CallToolResult::new(vec![ContentBlock::text("a\"b")]);
        with_meta.is_error = Some(true);
        let mut meta = mcp_types::Meta::new();
        meta.insert("trace".into(), serde_json::json!({"x": [1, 2]}));
        meta.insert(wire::META_SERVER_INFO.into(), serde_json::json!("stale"));
        with_meta.meta = Some(meta);
        with_meta.result_type = Some("stale".into());
        let mut structured = CallToolResult::text("x");
        structured.structured_content = Some(serde_json::json!({"n": 1}));
        for result in [CallToolResult::new(Vec::new()), with_meta, structured] {
            let general = lower(
                &server,
                "tools/call",
                &dispatch::encode(result.clone(), v).unwrap(),
                ResultType::Complete,
            )
            .unwrap();
            let typed = lower_tool(&server, result, v).unwrap();
            let parse = |raw: &RawJson| serde_json::from_str::<Value>(raw.get()).unwrap();
            assert_eq!(parse(&typed), parse(&general), "{}", typed.get());
        }
    }
}
