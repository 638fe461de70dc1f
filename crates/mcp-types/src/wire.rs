//! The pure rules of the stateless (2026-07-28) envelope.
//!
//! From 2026-07-28 on there is no `initialize`: every request carries its protocol version,
//! client capabilities and (optionally) client information in `params._meta`, and every result
//! says what it is with `resultType`. This module holds those rules as data and pure functions,
//! with no I/O, so that servers, clients and transports apply them identically:
//!
//! - the reserved `_meta` keys ([`META_PROTOCOL_VERSION`] ..);
//! - the revision rules ([`classify`], [`session_versions`], [`stateless_versions`],
//!   [`latest_session_version`], [`best_mutual`], [`batches_allowed`], ...; what else came with
//!   a revision is [`crate::Feature`]);
//! - [`era_of`]: does a request belong to the stateless era?
//! - [`request_meta`]: the envelope a client stamps on a stateless request;
//! - [`RequestMeta::lift`]: the per-request fields, with the precise error a malformed or
//!   unsupported envelope deserves ([`MetaError`]: `-32602` or `-32022`);
//! - [`lower_result`]: `resultType`, `_meta["io.modelcontextprotocol/serverInfo"]` and the
//!   caching hints `ttlMs`/`cacheScope` on the results whose schema has them;
//! - [`removed_in`]: the client methods a revision dropped (they get `-32601`);
//! - multi round-trip requests: [`InputKind`], [`RetryInput`], [`input_required`];
//! - error codes per era ([`lower_error_code`], [`missing_capability`]);
//! - extensions declared per request ([`declares_extension`], [`missing_extension`]) and the
//!   shapes of the tasks extension ([`tasks`], `resultType: "task"`).
//!
//! ```
//! use mcp_types::wire::{self, RequestMeta, ResultType};
//! use mcp_types::{Era, Implementation, ProtocolVersion};
//! use serde_json::json;
//!
//! let params = json!({
//!     "name": "get_weather",
//!     "_meta": {
//!         "io.modelcontextprotocol/protocolVersion": "2026-07-28",
//!         "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
//!     }
//! });
//! assert_eq!(wire::era_of("tools/call", Some(&params)), Era::Stateless);
//! let meta = RequestMeta::lift(Some(&params), &[ProtocolVersion::V2026_07_28])?;
//! assert_eq!(meta.protocol_version, ProtocolVersion::V2026_07_28);
//! assert!(meta.client_capabilities.elicitation.is_some());
//!
//! let mut result = json!({"content": []}).as_object().cloned().unwrap();
//! let info = Implementation::new("weather", "1.0.0");
//! wire::lower_result("tools/call", &mut result, ResultType::Complete, Some(&info), None)?;
//! assert_eq!(result["resultType"], "complete");
//! assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "weather");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::Value;

use crate::methods::{self, MethodInfo};
use crate::{
    CacheScope, ClientCapabilities, CreateMessageResult, ElicitResult, Era, Implementation,
    InputRequest, InputRequests, InputRequiredResult, InputResponse, JsonObject, ListRootsResult,
    LoggingLevel, Meta, ProgressToken, Project, ProtocolVersion, RequestId, RpcError, error_codes,
};

/// `_meta` key: the protocol version of a stateless request (required).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client capabilities declared for one request (required).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version (optional, a SHOULD).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the minimum log level the client wants for one request; without it the server
/// sends no `notifications/message` for the request.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key of a result: the server's name and version.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key of a notification on a `subscriptions/listen` stream: the JSON-RPC id of the
/// listen request.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// `_meta` key: the token that asks for `notifications/progress` (every revision).
pub const META_PROGRESS_TOKEN: &str = "progressToken";

/// The `_meta` keys [`RequestMeta`] lifts into typed fields.
const LIFTED_KEYS: [&str; 5] = [
    META_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROGRESS_TOKEN,
];

/// The methods whose 2026-07-28 result is a `CacheableResult` (`ttlMs` and `cacheScope` are
/// required).
pub const CACHEABLE_METHODS: [&str; 6] = [
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "server/discover",
    "tools/list",
];

/// The methods a server may answer with an `InputRequiredResult` (multi round-trip requests).
/// Every other request must complete or fail.
pub const INPUT_REQUIRED_METHODS: [&str; 3] = ["prompts/get", "resources/read", "tools/call"];

/// The identifier of the tasks extension (SEP-2663): declared under `capabilities.extensions`
/// by a server that can answer with task handles, and per request by a client that accepts
/// them.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The methods a server may answer with a `CreateTaskResult` (`resultType: "task"`) when the
/// request declared the [`TASKS_EXTENSION`].
pub const TASK_METHODS: [&str; 1] = ["tools/call"];

pub mod tasks;

mod revisions;
pub use revisions::{
    EraEvidence, HTTP_VERSION_WITHOUT_HEADER, batches_allowed, batches_allowed_in, best_mutual,
    classify, era_of_version, latest_session_version, negotiate_session, newest_session_in,
    newest_stateless_in, session_versions, stateless_versions,
};

/// The `_meta` object of a request's params, if there is one.
///
/// `Err` when `_meta` is present but not an object (a malformed envelope in every revision).
pub fn meta_of(params: Option<&Value>) -> Result<Option<&Meta>, MetaError> {
    match params.and_then(|p| p.get("_meta")) {
        None => Ok(None),
        Some(Value::Object(meta)) => Ok(Some(meta)),
        Some(_) => Err(MetaError::Invalid {
            key: "_meta",
            reason: "must be an object".into(),
        }),
    }
}

/// The era a request belongs to.
///
/// [`Era::Stateless`] when the method exists only in stateless revisions (`server/discover`,
/// `subscriptions/listen`), or when `params._meta` carries the per-request protocol version or
/// client capabilities. Everything else is session traffic: `initialize`, or a request on a
/// session opened by it. A malformed stateless envelope is still stateless, so that
/// [`RequestMeta::lift`] can answer it with the right error.
pub fn era_of(method: &str, params: Option<&Value>) -> Era {
    era_of_meta(method, params.and_then(|p| p.get("_meta")))
}

/// Whether `method` exists only in stateless revisions (`server/discover`,
/// `subscriptions/listen`, ...): such a request is stateless whatever its `_meta` says.
pub fn stateless_only(method: &str) -> bool {
    // Every request asks: the few names are listed once and compared, with no hashing.
    static ONLY: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
        methods::all()
            .iter()
            .filter(|info| is_stateless_only(info))
            .map(|info| info.name)
            .collect()
    });
    ONLY.contains(&method)
}

fn is_stateless_only(info: &MethodInfo) -> bool {
    info.revisions.iter().all(|v| v.era() == Era::Stateless)
}

/// [`era_of`] from the `_meta` value alone (for callers that extract it without parsing the
/// rest of the params).
pub fn era_of_meta(method: &str, meta: Option<&Value>) -> Era {
    let meta = meta.and_then(Value::as_object);
    classify(&EraEvidence {
        method: Some(method),
        meta_version: meta.is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION)),
        meta_capabilities: meta.is_some_and(|m| m.contains_key(META_CLIENT_CAPABILITIES)),
        ..EraEvidence::default()
    })
}

/// The `_meta` members a client stamps on every stateless request at `version`: the version,
/// its capabilities and (when given) its information, each projected onto `version`. Members
/// that change per request ([`META_LOG_LEVEL`], [`META_PROGRESS_TOKEN`]) are the caller's.
///
/// ```
/// use mcp_types::wire::{self, RequestMeta};
/// use mcp_types::{ClientCapabilities, Implementation, ProtocolVersion};
///
/// let v = ProtocolVersion::V2026_07_28;
/// let meta = wire::request_meta(v, &ClientCapabilities::default(), Some(&Implementation::new("c", "1")));
/// let params = serde_json::json!({ "_meta": meta });
/// let lifted = RequestMeta::lift(Some(&params), wire::stateless_versions()).unwrap();
/// assert_eq!(lifted.protocol_version, v);
/// assert_eq!(lifted.client_info.unwrap().name, "c");
/// ```
pub fn request_meta(
    version: ProtocolVersion,
    capabilities: &ClientCapabilities,
    info: Option<&Implementation>,
) -> Meta {
    let mut capabilities = capabilities.clone();
    capabilities.project(version);
    let mut meta = Meta::new();
    meta.insert(META_PROTOCOL_VERSION.into(), Value::from(version.as_str()));
    meta.insert(
        META_CLIENT_CAPABILITIES.into(),
        serde_json::to_value(capabilities).unwrap_or_else(|_| Value::Object(JsonObject::new())),
    );
    if let Some(info) = info {
        let mut info = info.clone();
        info.project(version);
        if let Ok(info) = serde_json::to_value(info) {
            meta.insert(META_CLIENT_INFO.into(), info);
        }
    }
    meta
}

/// The per-request fields of a stateless request, lifted from `params._meta`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`: one of the supported stateless revisions.
    pub protocol_version: ProtocolVersion,
    /// `io.modelcontextprotocol/clientCapabilities`: what the client supports for this request.
    pub client_capabilities: ClientCapabilities,
    /// `io.modelcontextprotocol/clientInfo`, when the client sent it.
    pub client_info: Option<Implementation>,
    /// `io.modelcontextprotocol/logLevel`: `None` means no `notifications/message` at all.
    pub log_level: Option<LoggingLevel>,
    /// `progressToken`: asks for `notifications/progress` carrying this token.
    pub progress_token: Option<ProgressToken>,
    /// Every other `_meta` key (trace context, extensions), as sent.
    pub other: Meta,
}

/// A stateless request's `_meta` object read in one pass over its JSON text, for
/// [`RequestMeta::lift_members`]: the members it lifts are kept as borrowed JSON text (nothing
/// is checked or decoded yet), every other member is decoded. A member sent twice counts once,
/// the last one, as in a parsed [`Value`].
///
/// A caller that reads the rest of the params in the same pass deserializes this in place of
/// the `_meta` value (anything but an object fails to deserialize).
///
/// ```
/// use mcp_types::ProtocolVersion;
/// use mcp_types::wire::{MetaMembers, RequestMeta};
///
/// #[derive(serde::Deserialize)]
/// struct Params<'a> {
///     name: String,
///     #[serde(rename = "_meta", borrow)]
///     meta: Option<MetaMembers<'a>>,
/// }
///
/// let text = r#"{"name": "echo", "_meta": {
///     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities": {}
/// }}"#;
/// let params: Params<'_> = serde_json::from_str(text).unwrap();
/// let meta = RequestMeta::lift_members(params.meta, &[ProtocolVersion::V2026_07_28]).unwrap();
/// assert_eq!(meta.protocol_version, ProtocolVersion::V2026_07_28);
/// ```
#[derive(Default)]
pub struct MetaMembers<'a> {
    protocol_version: Option<&'a serde_json::value::RawValue>,
    client_capabilities: Option<&'a serde_json::value::RawValue>,
    client_info: Option<&'a serde_json::value::RawValue>,
    log_level: Option<&'a serde_json::value::RawValue>,
    progress_token: Option<&'a serde_json::value::RawValue>,
    other: Meta,
}

impl<'de: 'a, 'a> Deserialize<'de> for MetaMembers<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Keys<'a>(std::marker::PhantomData<MetaMembers<'a>>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Keys<'a> {
            type Value = MetaMembers<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut keys = MetaMembers::default();
                while let Some(BorrowedKey(key)) = map.next_key()? {
                    let slot = match key.as_ref() {
                        META_PROTOCOL_VERSION => &mut keys.protocol_version,
                        META_CLIENT_CAPABILITIES => &mut keys.client_capabilities,
                        META_CLIENT_INFO => &mut keys.client_info,
                        META_LOG_LEVEL => &mut keys.log_level,
                        META_PROGRESS_TOKEN => &mut keys.progress_token,
                        _ => {
                            keys.other.insert(key.into_owned(), map.next_value()?);
                            continue;
                        }
                    };
                    *slot = Some(map.next_value()?);
                }
                Ok(keys)
            }
        }
        deserializer.deserialize_map(Keys(std::marker::PhantomData))
    }
}

impl<'a> MetaMembers<'a> {
    /// [`META_PROTOCOL_VERSION`] as sent (not checked yet), `null` included.
    pub fn protocol_version(&self) -> Option<&'a serde_json::value::RawValue> {
        self.protocol_version
    }

    /// [`META_CLIENT_CAPABILITIES`] as sent (not checked yet), `null` included.
    pub fn client_capabilities(&self) -> Option<&'a serde_json::value::RawValue> {
        self.client_capabilities
    }
}

/// The members of a request's params that the stateless revision's envelope is made of, read
/// in one pass over the params' JSON text and borrowed from it: `_meta` (as [`MetaMembers`]),
/// the target (`name`, `uri`, `taskId`), the tool `arguments`, and the members that make a
/// request a retry (`inputResponses`, `requestState`). Every other member is skipped. A member
/// that is present counts, `null` included.
///
/// Reading fails when the params are not an object, when one of these members is there twice,
/// or when `_meta` is not an object: the parsed value then decides, as for any request.
///
/// ```
/// use mcp_types::ProtocolVersion;
/// use mcp_types::wire::StatelessParams;
///
/// let text = r#"{"name": "echo", "arguments": {"text": "hi"}, "_meta": {
///     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities": {}
/// }}"#;
/// let params = StatelessParams::read(text).unwrap();
/// assert_eq!(params.name().map(|n| n.get()), Some(r#""echo""#));
/// assert!(!params.is_retry());
/// let lifted = params.lift(&[ProtocolVersion::V2026_07_28]).unwrap();
/// assert_eq!(lifted.meta.protocol_version, ProtocolVersion::V2026_07_28);
/// assert_eq!(lifted.name.as_deref(), Some("echo"));
/// assert_eq!(lifted.arguments.as_deref(), Some(r#"{"text": "hi"}"#));
/// ```
#[derive(Deserialize, Default)]
pub struct StatelessParams<'a> {
    #[serde(rename = "_meta", default, borrow, deserialize_with = "present")]
    meta: Option<MetaMembers<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    name: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    uri: Option<&'a serde_json::value::RawValue>,
    #[serde(rename = "taskId", default, borrow, deserialize_with = "present")]
    task_id: Option<&'a serde_json::value::RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    arguments: Option<&'a serde_json::value::RawValue>,
    #[serde(
        rename = "inputResponses",
        default,
        borrow,
        deserialize_with = "present"
    )]
    input_responses: Option<&'a serde_json::value::RawValue>,
    #[serde(rename = "requestState", default, borrow, deserialize_with = "present")]
    request_state: Option<&'a serde_json::value::RawValue>,
}

/// A member that is present, `null` included (plain `Option` reads `null` as absent).
fn present<'de, D: serde::Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

impl<'a> StatelessParams<'a> {
    /// Reads the members from the params' JSON text, in one pass.
    pub fn read(params: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(params)
    }

    /// `_meta`, when the params have one.
    pub fn meta(&self) -> Option<&MetaMembers<'a>> {
        self.meta.as_ref()
    }

    /// `name` (a tool's or a prompt's), as sent.
    pub fn name(&self) -> Option<&'a serde_json::value::RawValue> {
        self.name
    }

    /// `uri` (a resource's), as sent.
    pub fn uri(&self) -> Option<&'a serde_json::value::RawValue> {
        self.uri
    }

    /// `taskId`, as sent.
    pub fn task_id(&self) -> Option<&'a serde_json::value::RawValue> {
        self.task_id
    }

    /// The tool `arguments`, as sent.
    pub fn arguments(&self) -> Option<&'a serde_json::value::RawValue> {
        self.arguments
    }

    /// Whether the request is a retry: it carries `inputResponses` or `requestState`.
    pub fn is_retry(&self) -> bool {
        self.input_responses.is_some() || self.request_state.is_some()
    }

    /// Lifts `_meta` ([`RequestMeta::lift_members`], with its checks and errors), and keeps the
    /// target's name and URI when they are strings, and the arguments as text.
    // `#[inline]`: compiled by the crate that lifts requests (a server), which compiles the
    // capabilities' and client info's deserializers anyway, not here a second time.
    #[inline]
    pub fn lift(self, supported: &[ProtocolVersion]) -> Result<LiftedParams, MetaError> {
        let meta = RequestMeta::lift_members(self.meta, supported)?;
        let text = |member: Option<&serde_json::value::RawValue>| {
            member.and_then(|m| serde_json::from_str::<String>(m.get()).ok())
        };
        Ok(LiftedParams {
            meta: Box::new(meta),
            name: text(self.name),
            uri: text(self.uri),
            arguments: self.arguments.map(|a| std::sync::Arc::from(a.get())),
        })
    }
}

/// A stateless request's params, lifted by [`StatelessParams::lift`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LiftedParams {
    /// The lifted `_meta` (boxed: it is moved through every layer that serves the request,
    /// and the transport keeps the whole of this beside the request's HTTP parts).
    pub meta: Box<RequestMeta>,
    /// `name`, when it is a string.
    pub name: Option<String>,
    /// `uri`, when it is a string.
    pub uri: Option<String>,
    /// The tool `arguments`, as JSON text.
    pub arguments: Option<std::sync::Arc<str>>,
}

/// A member name, borrowed from the JSON text unless it has escapes (serde's own `Cow`
/// always copies).
struct BorrowedKey<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for BorrowedKey<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = BorrowedKey<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(BorrowedKey(std::borrow::Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(BorrowedKey(std::borrow::Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(BorrowedKey(std::borrow::Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// The string a JSON value holds (borrowed when it has no escapes); `None` when it is not a
/// string. For the transports, which read the same raw members.
#[doc(hidden)]
pub fn json_string(raw: &serde_json::value::RawValue) -> Option<std::borrow::Cow<'_, str>> {
    let text = raw.get().trim();
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(inner) if !inner.contains('\\') => Some(std::borrow::Cow::Borrowed(inner)),
        _ => serde_json::from_str::<String>(text)
            .ok()
            .map(std::borrow::Cow::Owned),
    }
}

fn invalid(key: &'static str, reason: impl fmt::Display) -> MetaError {
    MetaError::Invalid {
        key,
        reason: reason.to_string(),
    }
}

impl RequestMeta {
    /// Lifts the per-request fields from a request's `params`.
    ///
    /// Checks, in this order: `params._meta` is present and an object; it carries
    /// [`META_PROTOCOL_VERSION`] and [`META_CLIENT_CAPABILITIES`]; the version is a string and
    /// one of `supported` ([`MetaError::UnsupportedVersion`], `-32022`, before anything else is
    /// parsed: another revision may shape its fields differently); then the capabilities, client
    /// information, log level and progress token have their schema's shape. Every failure but
    /// the unsupported version is `-32602`.
    pub fn lift(
        params: Option<&Value>,
        supported: &[ProtocolVersion],
    ) -> Result<RequestMeta, MetaError> {
        let params = match params {
            None | Some(Value::Null) => return Err(MetaError::MissingMeta),
            Some(Value::Object(p)) => p,
            Some(_) => return Err(invalid("params", "must be an object")),
        };
        Self::lift_meta(params.get("_meta"), supported)
    }

    /// [`RequestMeta::lift`] from the `_meta` member alone (`None`: the params have none), for
    /// a caller that has already checked that the params are an object.
    pub fn lift_meta(
        meta: Option<&Value>,
        supported: &[ProtocolVersion],
    ) -> Result<RequestMeta, MetaError> {
        let meta = match meta {
            None => return Err(MetaError::MissingMeta),
            Some(Value::Object(meta)) => meta,
            Some(_) => return Err(invalid("_meta", "must be an object")),
        };
        let Some(version) = meta.get(META_PROTOCOL_VERSION) else {
            return Err(MetaError::MissingProtocolVersion);
        };
        let Some(capabilities) = meta.get(META_CLIENT_CAPABILITIES) else {
            return Err(MetaError::MissingClientCapabilities);
        };
        let Value::String(version) = version else {
            return Err(invalid(META_PROTOCOL_VERSION, "must be a string"));
        };
        let protocol_version = match ProtocolVersion::from_date(version) {
            Some(v) if supported.contains(&v) => v,
            _ => {
                return Err(MetaError::UnsupportedVersion {
                    requested: version.clone(),
                    supported: supported.to_vec(),
                });
            }
        };
        if !capabilities.is_object() {
            return Err(invalid(META_CLIENT_CAPABILITIES, "must be an object"));
        }
        let client_capabilities = ClientCapabilities::deserialize(capabilities)
            .map_err(|e| invalid(META_CLIENT_CAPABILITIES, e))?;
        let client_info = match meta.get(META_CLIENT_INFO) {
            None => None,
            Some(v) => {
                Some(Implementation::deserialize(v).map_err(|e| invalid(META_CLIENT_INFO, e))?)
            }
        };
        let log_level = match meta.get(META_LOG_LEVEL) {
            None => None,
            Some(v) => Some(LoggingLevel::deserialize(v).map_err(|e| invalid(META_LOG_LEVEL, e))?),
        };
        let progress_token = match meta.get(META_PROGRESS_TOKEN) {
            None => None,
            Some(v) => {
                Some(ProgressToken::deserialize(v).map_err(|e| invalid(META_PROGRESS_TOKEN, e))?)
            }
        };
        let other = meta
            .iter()
            .filter(|(k, _)| !LIFTED_KEYS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(RequestMeta {
            protocol_version,
            client_capabilities,
            client_info,
            log_level,
            progress_token,
            other,
        })
    }

    /// [`RequestMeta::lift_meta`] from the `_meta` member's JSON text: the same checks, in the
    /// same order, with one pass over the text (the lifted members are decoded into their
    /// types directly, with no intermediate [`Value`]).
    ///
    /// ```
    /// use mcp_types::ProtocolVersion;
    /// use mcp_types::wire::RequestMeta;
    /// use serde_json::value::RawValue;
    ///
    /// let meta = RawValue::from_string(r#"{
    ///     "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    ///     "io.modelcontextprotocol/clientCapabilities": {},
    ///     "traceparent": "00-1"
    /// }"#.into()).unwrap();
    /// let lifted = RequestMeta::lift_meta_raw(Some(&meta), &[ProtocolVersion::V2026_07_28]).unwrap();
    /// assert_eq!(lifted.protocol_version, ProtocolVersion::V2026_07_28);
    /// assert_eq!(lifted.other["traceparent"], "00-1");
    /// ```
    // `#[inline]`: compiled by the crate that lifts requests (a server), which compiles the
    // capabilities' and client info's deserializers anyway, not here a second time.
    #[inline]
    pub fn lift_meta_raw(
        meta: Option<&serde_json::value::RawValue>,
        supported: &[ProtocolVersion],
    ) -> Result<RequestMeta, MetaError> {
        let Some(meta) = meta else {
            return Err(MetaError::MissingMeta);
        };
        let keys: MetaMembers<'_> =
            serde_json::from_str(meta.get()).map_err(|_| invalid("_meta", "must be an object"))?;
        Self::lift_members(Some(keys), supported)
    }

    /// [`RequestMeta::lift_meta_raw`] from members already read ([`MetaMembers`]; `None`: the
    /// params have no `_meta`): the same checks, in the same order, with no second pass over
    /// the `_meta` text.
    // `#[inline]`: compiled by the crate that lifts requests (a server), which compiles the
    // capabilities' and client info's deserializers anyway, not here a second time.
    #[inline]
    pub fn lift_members(
        members: Option<MetaMembers<'_>>,
        supported: &[ProtocolVersion],
    ) -> Result<RequestMeta, MetaError> {
        let Some(keys) = members else {
            return Err(MetaError::MissingMeta);
        };
        let Some(version) = keys.protocol_version else {
            return Err(MetaError::MissingProtocolVersion);
        };
        let Some(capabilities) = keys.client_capabilities else {
            return Err(MetaError::MissingClientCapabilities);
        };
        let Some(version) = json_string(version) else {
            return Err(invalid(META_PROTOCOL_VERSION, "must be a string"));
        };
        let protocol_version = match ProtocolVersion::from_date(&version) {
            Some(v) if supported.contains(&v) => v,
            _ => {
                return Err(MetaError::UnsupportedVersion {
                    requested: version.into_owned(),
                    supported: supported.to_vec(),
                });
            }
        };
        if !capabilities.get().trim_start().starts_with('{') {
            return Err(invalid(META_CLIENT_CAPABILITIES, "must be an object"));
        }
        fn decode<'a, T: Deserialize<'a>>(
            key: &'static str,
            raw: Option<&'a serde_json::value::RawValue>,
        ) -> Result<Option<T>, MetaError> {
            raw.map(|raw| serde_json::from_str(raw.get()).map_err(|e| invalid(key, e)))
                .transpose()
        }
        let client_capabilities =
            decode(META_CLIENT_CAPABILITIES, Some(capabilities))?.unwrap_or_default();
        Ok(RequestMeta {
            protocol_version,
            client_capabilities,
            client_info: decode(META_CLIENT_INFO, keys.client_info)?,
            log_level: decode(META_LOG_LEVEL, keys.log_level)?,
            progress_token: decode(META_PROGRESS_TOKEN, keys.progress_token)?,
            other: keys.other,
        })
    }

    /// Whether a log message at `level` may be sent for this request: only when the request
    /// asked for a level, and `level` is at least as severe.
    pub fn allows_log(&self, level: LoggingLevel) -> bool {
        self.log_level
            .is_some_and(|min| severity(level) >= severity(min))
    }
}

/// The severity rank of a log level, from `debug` (0) to `emergency` (7), as RFC 5424 orders
/// them. ([`LoggingLevel`]'s own `Ord` is alphabetical.)
pub const fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Why a stateless request's envelope was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MetaError {
    /// `params` or `params._meta` is absent (`-32602`).
    MissingMeta,
    /// `_meta` lacks [`META_PROTOCOL_VERSION`] (`-32602`).
    MissingProtocolVersion,
    /// `_meta` lacks [`META_CLIENT_CAPABILITIES`] (`-32602`).
    MissingClientCapabilities,
    /// A field does not have its schema's shape (`-32602`).
    Invalid {
        /// The field: a `_meta` key, `_meta` itself or `params`.
        key: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The requested version is unknown or not served statelessly
    /// (`-32022`, `UnsupportedProtocolVersionError`).
    UnsupportedVersion {
        /// The version string the client sent.
        requested: String,
        /// The versions this server accepts in `_meta`.
        supported: Vec<ProtocolVersion>,
    },
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::MissingMeta => write!(
                f,
                "params._meta is required and must carry {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES}"
            ),
            MetaError::MissingProtocolVersion => {
                write!(f, "params._meta must carry {META_PROTOCOL_VERSION}")
            }
            MetaError::MissingClientCapabilities => {
                write!(f, "params._meta must carry {META_CLIENT_CAPABILITIES}")
            }
            MetaError::Invalid { key, reason } => write!(f, "invalid {key}: {reason}"),
            MetaError::UnsupportedVersion {
                requested,
                supported,
            } => {
                write!(f, "unsupported protocol version {requested:?} (supported:")?;
                for v in supported {
                    write!(f, " {v}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl std::error::Error for MetaError {}

impl MetaError {
    /// The JSON-RPC error code: `-32022` for an unsupported version, `-32602` otherwise.
    pub fn code(&self) -> i64 {
        match self {
            MetaError::UnsupportedVersion { .. } => error_codes::UNSUPPORTED_PROTOCOL_VERSION,
            _ => error_codes::INVALID_PARAMS,
        }
    }

    /// The JSON-RPC error object to answer with; for an unsupported version its `data` is
    /// `{"supported": [...], "requested": "..."}`.
    pub fn to_error(&self) -> RpcError {
        let data = match self {
            MetaError::UnsupportedVersion {
                requested,
                supported,
            } => Some(serde_json::json!({
                "supported": supported.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
                "requested": requested,
            })),
            _ => None,
        };
        RpcError {
            code: self.code(),
            message: self.to_string(),
            data,
        }
    }
}

/// The client methods a revision removed: defined by an earlier revision, not by `rev`.
/// A request for one of them gets `-32601` (on HTTP with status 404).
///
/// ```
/// use mcp_types::{ProtocolVersion, wire};
///
/// let removed: Vec<&str> = wire::removed_in(ProtocolVersion::V2026_07_28).map(|m| m.name).collect();
/// assert!(removed.contains(&"initialize"));
/// assert!(removed.contains(&"resources/subscribe"));
/// assert!(!removed.contains(&"tools/call"));
/// ```
pub fn removed_in(rev: ProtocolVersion) -> impl Iterator<Item = &'static MethodInfo> {
    methods::all().iter().filter(move |m| {
        m.sender.client() && !m.available_in(rev) && m.revisions.iter().any(|v| *v < rev)
    })
}

/// Whether a client may send `method` to a server speaking `rev` (any other method is
/// `-32601`).
pub fn accepts(method: &str, rev: ProtocolVersion) -> bool {
    methods::lookup(method).is_some_and(|m| m.sender.client() && m.available_in(rev))
}

/// Whether a server may send `method` to a client speaking `rev` (a request or notification of
/// the server's that the revision defines).
pub fn server_may_send(method: &str, rev: ProtocolVersion) -> bool {
    methods::lookup(method).is_some_and(|m| m.sender.server() && m.available_in(rev))
}

/// Whether the `rev` result of `method` carries `ttlMs` and `cacheScope`.
pub fn is_cacheable(method: &str, rev: ProtocolVersion) -> bool {
    rev.era() == Era::Stateless && CACHEABLE_METHODS.contains(&method)
}

/// Whether `method` may be answered with an `InputRequiredResult` in `rev`.
pub fn supports_input_required(method: &str, rev: ProtocolVersion) -> bool {
    rev.era() == Era::Stateless && INPUT_REQUIRED_METHODS.contains(&method)
}

/// The caching hints of a cacheable result (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheHint {
    /// How long the client may keep the result, in milliseconds (0: immediately stale).
    pub ttl_ms: u64,
    /// Whether shared caches may keep it (`public`) or only the requesting client (`private`).
    pub scope: CacheScope,
}

impl CacheHint {
    /// A hint with a time to live and a scope.
    pub const fn new(ttl_ms: u64, scope: CacheScope) -> Self {
        Self { ttl_ms, scope }
    }
}

impl Default for CacheHint {
    /// Immediately stale and private: the hint that promises nothing.
    fn default() -> Self {
        Self::new(0, CacheScope::Private)
    }
}

/// The kind of a stateless result (`resultType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// `"complete"`: the final result.
    Complete,
    /// `"input_required"`: an `InputRequiredResult`; the client retries with answers.
    InputRequired,
    /// `"task"`: a `CreateTaskResult` of the tasks extension; the client polls `tasks/get`.
    Task,
}

impl ResultType {
    /// The value as it appears on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ResultType::Complete => "complete",
            ResultType::InputRequired => "input_required",
            ResultType::Task => "task",
        }
    }

    /// The kind a wire value names; `None` for an unknown one.
    pub fn from_wire(value: &str) -> Option<ResultType> {
        match value {
            "complete" => Some(ResultType::Complete),
            "input_required" => Some(ResultType::InputRequired),
            "task" => Some(ResultType::Task),
            _ => None,
        }
    }

    /// The kind of a result from its `resultType` member: absent means [`ResultType::Complete`]
    /// (results of earlier revisions, and servers that leave it out); `Err` holds an unknown
    /// value.
    ///
    /// ```
    /// use mcp_types::wire::ResultType;
    ///
    /// assert_eq!(ResultType::of_result(None), Ok(ResultType::Complete));
    /// assert_eq!(ResultType::of_result(Some("input_required")), Ok(ResultType::InputRequired));
    /// assert_eq!(ResultType::of_result(Some("other")), Err("other"));
    /// ```
    pub fn of_result(member: Option<&str>) -> Result<ResultType, &str> {
        match member {
            None => Ok(ResultType::Complete),
            Some(value) => ResultType::from_wire(value).ok_or(value),
        }
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a result cannot be lowered to the stateless wire.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LowerError {
    /// An `InputRequiredResult` for a method that must complete (only `tools/call`,
    /// `prompts/get` and `resources/read` may ask for input).
    InputRequiredNotAllowed(String),
    /// An `InputRequiredResult` with neither `inputRequests` nor `requestState`.
    EmptyInputRequired,
    /// A `CreateTaskResult` for a method that cannot run as a task (see [`TASK_METHODS`]).
    TaskNotAllowed(String),
    /// The result's `_meta` is not an object.
    InvalidMeta,
}

impl fmt::Display for LowerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LowerError::InputRequiredNotAllowed(m) => {
                write!(f, "{m} must not be answered with an InputRequiredResult")
            }
            LowerError::EmptyInputRequired => {
                f.write_str("an InputRequiredResult needs inputRequests or requestState (or both)")
            }
            LowerError::InvalidMeta => f.write_str("the result's _meta is not an object"),
            LowerError::TaskNotAllowed(m) => {
                write!(f, "{m} must not be answered with a CreateTaskResult")
            }
        }
    }
}

impl std::error::Error for LowerError {}

/// Lowers a result to the stateless wire, in place: sets `resultType`, adds
/// `_meta["io.modelcontextprotocol/serverInfo"]` when `server_info` is given, and on the results
/// of [`CACHEABLE_METHODS`] adds `ttlMs` and `cacheScope` from `cache` (or the conservative
/// [`CacheHint::default`]) unless the result already has them. A `CreateTaskResult`
/// ([`ResultType::Task`]) is allowed only for [`TASK_METHODS`] and never gets caching hints.
///
/// Fields the revision lacks are the job of [`crate::Project`], which should run first.
pub fn lower_result(
    method: &str,
    result: &mut JsonObject,
    result_type: ResultType,
    server_info: Option<&Implementation>,
    cache: Option<CacheHint>,
) -> Result<(), LowerError> {
    if result_type == ResultType::InputRequired {
        if !INPUT_REQUIRED_METHODS.contains(&method) {
            return Err(LowerError::InputRequiredNotAllowed(method.to_owned()));
        }
        if !result.contains_key("inputRequests") && !result.contains_key("requestState") {
            return Err(LowerError::EmptyInputRequired);
        }
    }
    if result_type == ResultType::Task && !TASK_METHODS.contains(&method) {
        return Err(LowerError::TaskNotAllowed(method.to_owned()));
    }
    if let Some(info) = server_info {
        let meta = result
            .entry("_meta")
            .or_insert_with(|| Value::Object(JsonObject::new()));
        let Value::Object(meta) = meta else {
            return Err(LowerError::InvalidMeta);
        };
        let info = serde_json::to_value(info).map_err(|_| LowerError::InvalidMeta)?;
        meta.insert(META_SERVER_INFO.into(), info);
    }
    result.insert("resultType".into(), Value::from(result_type.as_str()));
    if result_type == ResultType::Complete && CACHEABLE_METHODS.contains(&method) {
        let hint = cache.unwrap_or_default();
        if !result.get("ttlMs").is_some_and(Value::is_u64) {
            result.insert("ttlMs".into(), Value::from(hint.ttl_ms));
        }
        if !matches!(
            result.get("cacheScope").and_then(Value::as_str),
            Some("public" | "private")
        ) {
            result.insert("cacheScope".into(), Value::from(hint.scope.as_str()));
        }
    }
    Ok(())
}

/// Tags a notification sent on a `subscriptions/listen` stream with the listen request's id
/// (`params._meta["io.modelcontextprotocol/subscriptionId"]`).
pub fn tag_subscription(params: &mut JsonObject, subscription: &RequestId) {
    let id = match subscription {
        RequestId::String(s) => Value::from(s.clone()),
        RequestId::Integer(n) => Value::from(*n),
    };
    match params.get_mut("_meta") {
        Some(Value::Object(meta)) => {
            meta.insert(META_SUBSCRIPTION_ID.into(), id);
        }
        _ => {
            let mut meta = JsonObject::new();
            meta.insert(META_SUBSCRIPTION_ID.into(), id);
            params.insert("_meta".into(), Value::Object(meta));
        }
    }
}

/// The error code to send a peer of `rev` for a code the SDK uses internally.
///
/// 2026-07-28 retired two codes: resource not found (`-32002`) becomes invalid params
/// (`-32602`), and URL elicitation required (`-32042`, which multi round-trip requests replace)
/// becomes an internal error. Every other code, and every code on earlier revisions, is kept.
pub fn lower_error_code(code: i64, rev: ProtocolVersion) -> i64 {
    match (rev.era(), code) {
        (Era::Stateless, error_codes::RESOURCE_NOT_FOUND) => error_codes::INVALID_PARAMS,
        (Era::Stateless, error_codes::URL_ELICITATION_REQUIRED) => error_codes::INTERNAL_ERROR,
        _ => code,
    }
}

/// The `-32021` error (`MissingRequiredClientCapabilityError`): `data.requiredCapabilities`
/// holds the capabilities the request needs and the client did not declare.
pub fn missing_capability(required: &ClientCapabilities) -> RpcError {
    let value = serde_json::to_value(required).unwrap_or_else(|_| Value::Object(JsonObject::new()));
    let names: Vec<&str> = value
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default();
    RpcError {
        code: error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: format!(
            "the request needs client capabilities that were not declared: {}",
            names.join(", ")
        ),
        data: Some(serde_json::json!({ "requiredCapabilities": value })),
    }
}

/// Whether `capabilities` declare the extension `id` (a key of `extensions`, whatever its
/// settings).
///
/// ```
/// use mcp_types::ClientCapabilities;
/// use mcp_types::wire::{self, TASKS_EXTENSION};
///
/// let caps: ClientCapabilities = serde_json::from_value(serde_json::json!({
///     "extensions": {"io.modelcontextprotocol/tasks": {}}
/// }))?;
/// assert!(wire::declares_extension(&caps, TASKS_EXTENSION));
/// assert!(!wire::declares_extension(&ClientCapabilities::default(), TASKS_EXTENSION));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn declares_extension(capabilities: &ClientCapabilities, id: &str) -> bool {
    capabilities
        .extensions
        .as_ref()
        .is_some_and(|e| e.contains_key(id))
}

/// The `-32021` error for a request that needs the extension `id` and did not declare it:
/// `data.requiredCapabilities` is `{"extensions": {id: {}}}`.
pub fn missing_extension(id: &str) -> RpcError {
    let mut extensions = JsonObject::new();
    extensions.insert(id.to_owned(), Value::Object(JsonObject::new()));
    RpcError {
        code: error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        message: format!("the request needs the {id} extension, which it did not declare"),
        data: Some(serde_json::json!({ "requiredCapabilities": { "extensions": extensions } })),
    }
}

/// The three kinds of input a server can ask the client for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKind {
    /// `elicitation/create`: the user fills a form (or visits a URL).
    Elicitation,
    /// `sampling/createMessage`: the client's language model completes a conversation.
    Sampling,
    /// `roots/list`: the client's roots.
    Roots,
}

impl InputKind {
    /// The method of the request that asks for this input.
    pub const fn method(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicitation/create",
            InputKind::Sampling => "sampling/createMessage",
            InputKind::Roots => "roots/list",
        }
    }

    /// The kind asked for by a request method, if it is one of the three.
    pub fn from_method(method: &str) -> Option<Self> {
        match method {
            "elicitation/create" => Some(InputKind::Elicitation),
            "sampling/createMessage" => Some(InputKind::Sampling),
            "roots/list" => Some(InputKind::Roots),
            _ => None,
        }
    }

    /// The kind of an input request.
    pub fn of(request: &InputRequest) -> Self {
        match request {
            InputRequest::Elicit(_) => InputKind::Elicitation,
            InputRequest::CreateMessage(_) => InputKind::Sampling,
            InputRequest::ListRoots(_) => InputKind::Roots,
        }
    }

    /// The capability name a client declares for this kind (`elicitation`, `sampling`,
    /// `roots`).
    pub const fn capability(self) -> &'static str {
        match self {
            InputKind::Elicitation => "elicitation",
            InputKind::Sampling => "sampling",
            InputKind::Roots => "roots",
        }
    }

    /// The capabilities a client must declare to be asked for this kind, as the
    /// `requiredCapabilities` of a `-32021` error.
    pub fn required_capabilities(self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        match self {
            InputKind::Elicitation => caps.elicitation = Some(Default::default()),
            InputKind::Sampling => caps.sampling = Some(Default::default()),
            InputKind::Roots => caps.roots = Some(JsonObject::new()),
        }
        caps
    }

    /// Whether `caps` declares this kind.
    pub fn declared_by(self, caps: &ClientCapabilities) -> bool {
        match self {
            InputKind::Elicitation => caps.elicitation.is_some(),
            InputKind::Sampling => caps.sampling.is_some(),
            InputKind::Roots => caps.roots.is_some(),
        }
    }

    /// Parses a client's answer to a request of this kind: an `ElicitResult`, a
    /// `CreateMessageResult` or a `ListRootsResult`. `Err` describes the mismatch.
    // `#[inline]`: compiled by the crates that parse answers (a server), which compile these
    // results' deserializers anyway, not here for every user of the model.
    #[inline]
    pub fn parse_response(self, answer: &Value) -> Result<InputResponse, String> {
        if !answer.is_object() {
            return Err(format!(
                "the answer to {} must be an object, not {}",
                self.method(),
                crate::support::kind(answer)
            ));
        }
        // Read from `&Value` (no copy of the answer): the deserializers the unions' variant
        // picking uses already, not a second set from an owned `Value`.
        let parsed = match self {
            InputKind::Elicitation => ElicitResult::deserialize(answer).map(InputResponse::Elicit),
            InputKind::Sampling => {
                CreateMessageResult::deserialize(answer).map(InputResponse::CreateMessage)
            }
            InputKind::Roots => ListRootsResult::deserialize(answer).map(InputResponse::ListRoots),
        };
        parsed.map_err(|e| format!("the answer to {} is malformed: {e}", self.method()))
    }
}

/// What a client sends when it retries a multi round-trip request: `params.inputResponses`
/// (answers keyed like the `inputRequests` they answer, kept raw until the server knows what it
/// asked) and `params.requestState` (echoed byte for byte).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct RetryInput {
    /// `inputResponses`, unparsed: each value is checked against the kind of the ask it answers
    /// with [`InputKind::parse_response`].
    pub responses: BTreeMap<String, Value>,
    /// `requestState`, exactly as the client echoed it.
    pub request_state: Option<String>,
}

impl RetryInput {
    /// Lifts `inputResponses` and `requestState` from a request's params. `Err` (`-32602`) when
    /// `inputResponses` is present but not an object (`null` included) or `requestState` is not
    /// a string.
    pub fn lift(params: Option<&Value>) -> Result<RetryInput, MetaError> {
        let Some(Value::Object(params)) = params else {
            return Ok(RetryInput::default());
        };
        let responses = match params.get("inputResponses") {
            None => BTreeMap::new(),
            Some(Value::Object(map)) => map.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(other) => {
                return Err(invalid(
                    "inputResponses",
                    format!("must be an object, not {}", crate::support::kind(other)),
                ));
            }
        };
        let request_state = match params.get("requestState") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                return Err(invalid(
                    "requestState",
                    format!("must be a string, not {}", crate::support::kind(other)),
                ));
            }
        };
        Ok(RetryInput {
            responses,
            request_state,
        })
    }

    /// Whether the client sent neither answers nor state (a first attempt).
    pub fn is_empty(&self) -> bool {
        self.responses.is_empty() && self.request_state.is_none()
    }
}

/// Builds an `InputRequiredResult` (`resultType: "input_required"`). `Err` when both
/// `requests` is empty and `request_state` is `None`: the result must carry at least one.
pub fn input_required(
    requests: InputRequests,
    request_state: Option<String>,
) -> Result<InputRequiredResult, LowerError> {
    if requests.is_empty() && request_state.is_none() {
        return Err(LowerError::EmptyInputRequired);
    }
    Ok(InputRequiredResult {
        meta: None,
        input_requests: (!requests.is_empty()).then_some(requests),
        request_state,
        result_type: ResultType::InputRequired.as_str().to_owned(),
        extra: JsonObject::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const V26: &[ProtocolVersion] = &[ProtocolVersion::V2026_07_28];

    fn meta(extra: Value) -> Value {
        let mut m = json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {},
        });
        if let (Value::Object(m), Value::Object(e)) = (&mut m, extra) {
            m.extend(e);
        }
        json!({ "_meta": m })
    }

    /// `lift_meta_raw` decides exactly as `lift_meta` on the parsed value: same fields, same
    /// error kind (messages may word a decoding failure differently).
    #[test]
    fn lifting_from_text_matches_lifting_from_a_value() {
        let cases = [
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {"elicitation": {"form": {}}, "sampling": {}},
                   META_CLIENT_INFO: {"name": "c", "version": "1"}, META_LOG_LEVEL: "debug",
                   META_PROGRESS_TOKEN: 7, "traceparent": "00-ab", "x/y": [1, {"z": null}]}),
            json!({META_CLIENT_CAPABILITIES: {}}),
            json!({META_PROTOCOL_VERSION: "2026-07-28"}),
            json!({META_PROTOCOL_VERSION: 20260728, META_CLIENT_CAPABILITIES: {}}),
            json!({META_PROTOCOL_VERSION: "2025-11-25", META_CLIENT_CAPABILITIES: {}}),
            json!({META_PROTOCOL_VERSION: "1999-01-01", META_CLIENT_CAPABILITIES: []}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {"sampling": 3}}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, META_CLIENT_INFO: "x"}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, META_LOG_LEVEL: "loud"}),
            json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}, META_PROGRESS_TOKEN: {}}),
            json!("not an object"),
            json!([1, 2]),
            json!(null),
        ];
        for meta in cases {
            let raw = serde_json::value::to_raw_value(&meta).unwrap();
            let from_value = RequestMeta::lift_meta(Some(&meta), V26);
            let from_text = RequestMeta::lift_meta_raw(Some(&raw), V26);
            match (from_value, from_text) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{meta}"),
                (Err(a), Err(b)) => {
                    assert_eq!(a.to_error().code, b.to_error().code, "{meta}");
                    assert_eq!(
                        std::mem::discriminant(&a),
                        std::mem::discriminant(&b),
                        "{meta}: {a:?} / {b:?}"
                    );
                    if let (
                        MetaError::Invalid { key: ka, .. },
                        MetaError::Invalid { key: kb, .. },
                    ) = (&a, &b)
                    {
                        assert_eq!(ka, kb, "{meta}");
                    }
                }
                (a, b) => panic!("{meta}: {a:?} / {b:?}"),
            }
        }
        assert!(matches!(
            RequestMeta::lift_meta_raw(None, V26),
            Err(MetaError::MissingMeta)
        ));
        // Escaped key names are the same names.
        let raw = serde_json::value::RawValue::from_string(
            r#"{"io.modelcontextprotocol\/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities" : { } }"#
                .into(),
        )
        .unwrap();
        assert!(RequestMeta::lift_meta_raw(Some(&raw), V26).is_ok());
    }

    #[test]
    fn era_detection() {
        assert_eq!(era_of("server/discover", None), Era::Stateless);
        assert_eq!(
            era_of("subscriptions/listen", Some(&json!({}))),
            Era::Stateless
        );
        assert_eq!(era_of("tools/list", Some(&meta(json!({})))), Era::Stateless);
        assert_eq!(era_of("initialize", Some(&json!({}))), Era::Session);
        assert_eq!(era_of("tools/list", None), Era::Session);
        assert_eq!(
            era_of("tools/call", Some(&json!({"_meta": {"progressToken": 1}}))),
            Era::Session
        );
        // A stateless request missing its version is still stateless, so it gets -32602.
        assert_eq!(
            era_of(
                "tools/list",
                Some(&json!({"_meta": {META_CLIENT_CAPABILITIES: {}}}))
            ),
            Era::Stateless
        );
        assert_eq!(era_of("no/such", Some(&meta(json!({})))), Era::Stateless);
    }

    #[test]
    fn lifts_every_field() {
        let p = meta(json!({
            META_CLIENT_CAPABILITIES: {"sampling": {}, "roots": {"listChanged": true}},
            META_CLIENT_INFO: {"name": "c", "version": "1"},
            META_LOG_LEVEL: "warning",
            "progressToken": "p-1",
            "traceparent": "00-abc-def-01",
        }));
        let m = RequestMeta::lift(Some(&p), V26).unwrap();
        assert_eq!(m.protocol_version, ProtocolVersion::V2026_07_28);
        assert!(m.client_capabilities.sampling.is_some());
        assert!(m.client_capabilities.elicitation.is_none());
        assert_eq!(m.client_info.as_ref().map(|i| i.name.as_str()), Some("c"));
        assert_eq!(m.log_level, Some(LoggingLevel::Warning));
        assert_eq!(m.progress_token, Some(ProgressToken::String("p-1".into())));
        assert_eq!(m.other.len(), 1);
        assert_eq!(m.other["traceparent"], "00-abc-def-01");
        assert!(m.allows_log(LoggingLevel::Error));
        assert!(m.allows_log(LoggingLevel::Warning));
        assert!(!m.allows_log(LoggingLevel::Info));
        let quiet = RequestMeta::lift(Some(&meta(json!({}))), V26).unwrap();
        assert!(quiet.client_info.is_none());
        assert!(!quiet.allows_log(LoggingLevel::Emergency));
    }

    #[test]
    fn errors_in_order() {
        let e = |p: Value| RequestMeta::lift(Some(&p), V26).unwrap_err();
        assert_eq!(
            RequestMeta::lift(None, V26).unwrap_err(),
            MetaError::MissingMeta
        );
        assert_eq!(e(json!({})), MetaError::MissingMeta);
        assert_eq!(e(json!([])).code(), error_codes::INVALID_PARAMS);
        assert!(matches!(
            e(json!({"_meta": 1})),
            MetaError::Invalid { key: "_meta", .. }
        ));
        assert_eq!(
            e(json!({"_meta": {META_CLIENT_CAPABILITIES: {}}})),
            MetaError::MissingProtocolVersion
        );
        assert_eq!(
            e(json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}})),
            MetaError::MissingClientCapabilities
        );
        // Neither: the version is reported first.
        assert_eq!(
            e(json!({"_meta": {"progressToken": 1}})),
            MetaError::MissingProtocolVersion
        );
        let bad_version =
            e(json!({"_meta": {META_PROTOCOL_VERSION: 2026, META_CLIENT_CAPABILITIES: {}}}));
        assert_eq!(bad_version.code(), error_codes::INVALID_PARAMS);
        // Unsupported wins over a malformed field a future revision may define differently.
        let future = e(json!({"_meta": {
            META_PROTOCOL_VERSION: "v999.0.0",
            META_CLIENT_CAPABILITIES: "anything",
            META_CLIENT_INFO: 7,
        }}));
        assert_eq!(future.code(), error_codes::UNSUPPORTED_PROTOCOL_VERSION);
        let err = future.to_error();
        assert_eq!(
            err.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "v999.0.0"}))
        );
        assert!(err.message.contains("v999.0.0"));
        // A known session-era version is not served statelessly.
        let legacy = e(
            json!({"_meta": {META_PROTOCOL_VERSION: "2025-11-25", META_CLIENT_CAPABILITIES: {}}}),
        );
        assert!(
            matches!(legacy, MetaError::UnsupportedVersion { ref requested, .. } if requested == "2025-11-25")
        );
        for (key, value) in [
            (META_CLIENT_CAPABILITIES, json!([])),
            (META_CLIENT_CAPABILITIES, json!({"sampling": true})),
            (META_CLIENT_INFO, json!({"name": "no version"})),
            (META_LOG_LEVEL, json!("loud")),
            ("progressToken", json!(1.5)),
        ] {
            let mut p = meta(json!({}));
            p["_meta"][key] = value;
            let err = e(p);
            assert!(
                matches!(&err, MetaError::Invalid { key: k, .. } if *k == key),
                "{key}: {err:?}"
            );
            assert_eq!(err.to_error().code, error_codes::INVALID_PARAMS);
            assert!(err.to_error().data.is_none());
        }
    }

    #[test]
    fn removed_methods_come_from_the_method_table() {
        let removed: Vec<&str> = removed_in(ProtocolVersion::V2026_07_28)
            .map(|m| m.name)
            .collect();
        for m in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
            "notifications/initialized",
            "notifications/roots/list_changed",
        ] {
            assert!(removed.contains(&m), "{m} in {removed:?}");
        }
        for m in ["tools/call", "server/discover", "elicitation/create"] {
            assert!(!removed.contains(&m), "{m}");
        }
        assert_eq!(removed_in(ProtocolVersion::V2024_11_05).count(), 0);
        assert!(accepts("server/discover", ProtocolVersion::V2026_07_28));
        assert!(!accepts("ping", ProtocolVersion::V2026_07_28));
        assert!(accepts("ping", ProtocolVersion::V2025_11_25));
        assert!(!accepts(
            "sampling/createMessage",
            ProtocolVersion::V2026_07_28
        ));
        assert!(!accepts("unknown/method", ProtocolVersion::V2026_07_28));
    }

    #[test]
    fn lowering() {
        let info = Implementation::new("srv", "2.0");
        let mut r = JsonObject::new();
        r.insert("tools".into(), json!([]));
        lower_result(
            "tools/list",
            &mut r,
            ResultType::Complete,
            Some(&info),
            Some(CacheHint::new(60_000, CacheScope::Public)),
        )
        .unwrap();
        assert_eq!(
            Value::Object(r),
            json!({"tools": [], "resultType": "complete", "ttlMs": 60000, "cacheScope": "public",
                   "_meta": {META_SERVER_INFO: {"name": "srv", "version": "2.0"}}})
        );
        // Not cacheable: no hints; existing _meta keys survive.
        let mut r = json!({"content": [], "_meta": {"x/y": 1}})
            .as_object()
            .cloned()
            .unwrap();
        lower_result(
            "tools/call",
            &mut r,
            ResultType::Complete,
            Some(&info),
            None,
        )
        .unwrap();
        assert!(!r.contains_key("ttlMs"));
        assert_eq!(r["_meta"]["x/y"], 1);
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "srv");
        // Default hint; values a handler set are kept.
        let mut r = json!({"contents": [], "ttlMs": 5})
            .as_object()
            .cloned()
            .unwrap();
        lower_result("resources/read", &mut r, ResultType::Complete, None, None).unwrap();
        assert_eq!(r["ttlMs"], 5);
        assert_eq!(r["cacheScope"], "private");
        assert!(!r.contains_key("_meta"));
        // Input required only where allowed, and never empty.
        let mut r = json!({"inputRequests": {}}).as_object().cloned().unwrap();
        assert_eq!(
            lower_result("tools/list", &mut r, ResultType::InputRequired, None, None),
            Err(LowerError::InputRequiredNotAllowed("tools/list".into()))
        );
        lower_result("prompts/get", &mut r, ResultType::InputRequired, None, None).unwrap();
        assert_eq!(r["resultType"], "input_required");
        assert!(!r.contains_key("ttlMs"));
        let mut empty = JsonObject::new();
        assert_eq!(
            lower_result(
                "tools/call",
                &mut empty,
                ResultType::InputRequired,
                None,
                None
            ),
            Err(LowerError::EmptyInputRequired)
        );
        let mut bad = json!({"_meta": 3}).as_object().cloned().unwrap();
        assert_eq!(
            lower_result(
                "tools/call",
                &mut bad,
                ResultType::Complete,
                Some(&info),
                None
            ),
            Err(LowerError::InvalidMeta)
        );
        assert!(is_cacheable(
            "server/discover",
            ProtocolVersion::V2026_07_28
        ));
        assert!(!is_cacheable("tools/list", ProtocolVersion::V2025_11_25));
        assert!(supports_input_required(
            "resources/read",
            ProtocolVersion::V2026_07_28
        ));
        assert!(!supports_input_required(
            "tools/call",
            ProtocolVersion::V2025_11_25
        ));
    }

    #[test]
    fn task_results_and_extensions() {
        let info = Implementation::new("srv", "2.0");
        let mut r = json!({"taskId": "t", "status": "working"})
            .as_object()
            .cloned()
            .unwrap();
        lower_result("tools/call", &mut r, ResultType::Task, Some(&info), None).unwrap();
        assert_eq!(r["resultType"], "task");
        assert!(!r.contains_key("ttlMs") && !r.contains_key("cacheScope"));
        // Only task methods, and cacheable methods get no hints as tasks either.
        let mut r = JsonObject::new();
        assert_eq!(
            lower_result("resources/read", &mut r, ResultType::Task, None, None),
            Err(LowerError::TaskNotAllowed("resources/read".into()))
        );
        assert!(r.is_empty());
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"extensions": {TASKS_EXTENSION: {}}})).unwrap();
        assert!(declares_extension(&caps, TASKS_EXTENSION));
        assert!(!declares_extension(&caps, "com.example/other"));
        let e = missing_extension(TASKS_EXTENSION);
        assert_eq!(e.code, error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
        );
    }

    #[test]
    fn error_codes_per_era() {
        let v26 = ProtocolVersion::V2026_07_28;
        let v25 = ProtocolVersion::V2025_11_25;
        for (code, rev, lowered) in [
            (
                error_codes::RESOURCE_NOT_FOUND,
                v26,
                error_codes::INVALID_PARAMS,
            ),
            (
                error_codes::RESOURCE_NOT_FOUND,
                v25,
                error_codes::RESOURCE_NOT_FOUND,
            ),
            (
                error_codes::URL_ELICITATION_REQUIRED,
                v26,
                error_codes::INTERNAL_ERROR,
            ),
            (
                error_codes::INVALID_PARAMS,
                v26,
                error_codes::INVALID_PARAMS,
            ),
        ] {
            assert_eq!(lower_error_code(code, rev), lowered, "{code} in {rev:?}");
        }
        let e = missing_capability(&InputKind::Sampling.required_capabilities());
        assert_eq!(e.code, -32021);
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"sampling": {}}}))
        );
        assert!(e.message.contains("sampling"));
    }

    #[test]
    fn input_kinds() {
        for kind in [
            InputKind::Elicitation,
            InputKind::Sampling,
            InputKind::Roots,
        ] {
            assert_eq!(InputKind::from_method(kind.method()), Some(kind));
            let caps = kind.required_capabilities();
            assert!(kind.declared_by(&caps));
            assert!(!kind.declared_by(&ClientCapabilities::default()));
            let v = serde_json::to_value(&caps).unwrap();
            assert_eq!(v, json!({ kind.capability(): {} }));
        }
        assert_eq!(InputKind::from_method("tools/call"), None);
        let accept = json!({"action": "accept", "content": {"name": "Alice"}});
        assert!(matches!(
            InputKind::Elicitation.parse_response(&accept),
            Ok(InputResponse::Elicit(_))
        ));
        assert!(InputKind::Sampling.parse_response(&accept).is_err());
        assert!(
            InputKind::Elicitation
                .parse_response(&json!(12345))
                .unwrap_err()
                .contains("a number")
        );
        let roots = json!({"roots": [{"uri": "file:///test/root", "name": "Test Root"}]});
        assert!(matches!(
            InputKind::Roots.parse_response(&roots),
            Ok(InputResponse::ListRoots(r)) if r.roots.len() == 1
        ));
        let sample = json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"});
        assert!(matches!(
            InputKind::Sampling.parse_response(&sample),
            Ok(InputResponse::CreateMessage(_))
        ));
        assert!(InputKind::Roots.parse_response(&sample).is_err());
    }

    #[test]
    fn retry_input() {
        let r = RetryInput::lift(Some(&json!({"name": "t"}))).unwrap();
        assert!(r.is_empty());
        let r = RetryInput::lift(Some(&json!({
            "inputResponses": {"a": {"action": "cancel"}, "b": 1},
            "requestState": "abc",
        })))
        .unwrap();
        assert_eq!(r.responses.len(), 2);
        assert_eq!(r.request_state.as_deref(), Some("abc"));
        for bad in [
            json!({"inputResponses": null}),
            json!({"inputResponses": 5}),
            json!({"inputResponses": []}),
            json!({"requestState": 5}),
        ] {
            let e = RetryInput::lift(Some(&bad)).unwrap_err();
            assert_eq!(e.code(), error_codes::INVALID_PARAMS, "{bad}");
        }
        assert!(input_required(InputRequests::new(), None).is_err());
        let r = input_required(InputRequests::new(), Some("s".into())).unwrap();
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"resultType": "input_required", "requestState": "s"})
        );
    }

    #[test]
    fn subscription_tags() {
        let mut p = JsonObject::new();
        tag_subscription(&mut p, &RequestId::Integer(7));
        assert_eq!(
            Value::Object(p.clone()),
            json!({"_meta": {META_SUBSCRIPTION_ID: 7}})
        );
        let mut p = json!({"_meta": {"a/b": true}, "notifications": {}})
            .as_object()
            .cloned()
            .unwrap();
        tag_subscription(&mut p, &RequestId::String("s".into()));
        assert_eq!(p["_meta"], json!({"a/b": true, META_SUBSCRIPTION_ID: "s"}));
    }

    #[test]
    fn severity_is_rfc5424_order() {
        let ordered = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        assert!(ordered.windows(2).all(|w| severity(w[0]) < severity(w[1])));
    }

    #[test]
    fn stateless_only_methods_are_those_of_stateless_revisions_alone() {
        let mut only = 0;
        for info in methods::all() {
            assert_eq!(
                stateless_only(info.name),
                is_stateless_only(info),
                "{}",
                info.name
            );
            only += usize::from(is_stateless_only(info));
        }
        assert!(
            only >= 2,
            "server/discover and subscriptions/listen at least"
        );
        assert!(stateless_only("server/discover"));
        assert!(!stateless_only("tools/call"));
        assert!(!stateless_only("no/such/method"));
    }
}
