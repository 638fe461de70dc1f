//! Negotiation: `server/discover` for the stateless era, falling back to the `initialize`
//! handshake of the session era, and the per-request `_meta` of stateless requests.

use std::ops::RangeInclusive;

use mcp_jsonrpc::ErrorObject;
use mcp_types::error_codes::{
    HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION,
};
use mcp_types::wire::{self, ResultType};
use mcp_types::{
    CacheScope, DiscoverResult, Implementation, InitializeResult, Project, ProtocolVersion,
};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use std::time::Duration;

use tokio::time::Instant;

use crate::client::Client;
use crate::error::{CallError, ConnectError};
use crate::rpc::Rpc;

/// How many times `server/discover` is retried after `-32022` before giving up.
const MAX_VERSION_RETRIES: usize = 3;

/// What negotiation settled on.
pub(crate) enum Negotiated {
    /// `initialize` succeeded.
    Session {
        version: ProtocolVersion,
        init: Box<InitializeResult>,
    },
    /// `server/discover` succeeded.
    Stateless {
        version: ProtocolVersion,
        discover: Box<DiscoverResult>,
        /// The discover result's raw text, to seed the response cache.
        raw: String,
        server_info: Box<Implementation>,
    },
}

/// The `_meta` members every stateless request of this client carries at `version`.
pub(crate) fn stateless_meta(client: &Client, version: ProtocolVersion) -> Map<String, Value> {
    wire::request_meta(version, &client.capabilities(), Some(&client.shared.info))
}

/// `_meta` members with each value encoded once, to be written into every request as they are
/// (a stateless client's capabilities and information do not change between requests).
pub(crate) type RenderedMeta = Vec<(String, Box<RawValue>)>;

/// Encodes each member of `meta` (see [`RenderedMeta`]).
pub(crate) fn render_meta(meta: &Map<String, Value>) -> RenderedMeta {
    meta.iter()
        .filter_map(|(key, value)| Some((key.clone(), mcp_jsonrpc::to_raw(value).ok()?)))
        .collect()
}

/// Params (an object, or none) with `meta` merged into their `_meta`, as written on the wire,
/// without copying `meta`: `params`' members, then `_meta` holding the caller's own members,
/// then `extra` and `meta`'s members the caller did not set (the caller's members win, and
/// `extra` wins over `meta`). A `_meta` that is not an object is replaced.
pub(crate) struct Stamped<'a> {
    pub(crate) params: Option<&'a Map<String, Value>>,
    pub(crate) meta: &'a [(String, Box<RawValue>)],
    pub(crate) extra: Option<(&'a str, &'a Value)>,
}

impl serde::Serialize for Stamped<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let own = self.params.and_then(|p| p.get("_meta")?.as_object());
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.params.into_iter().flatten() {
            if key != "_meta" {
                map.serialize_entry(key, value)?;
            }
        }
        map.serialize_entry(
            "_meta",
            &MergedMeta {
                own,
                meta: self.meta,
                extra: self.extra,
            },
        )?;
        map.end()
    }
}

struct MergedMeta<'a> {
    own: Option<&'a Map<String, Value>>,
    meta: &'a [(String, Box<RawValue>)],
    extra: Option<(&'a str, &'a Value)>,
}

impl serde::Serialize for MergedMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let own = |key: &str| self.own.is_some_and(|own| own.contains_key(key));
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.own.into_iter().flatten() {
            map.serialize_entry(key, value)?;
        }
        if let Some((key, value)) = self.extra {
            if !own(key) {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in self.meta {
            let overridden = self.extra.is_some_and(|(extra, _)| extra == key);
            if !own(key) && !overridden {
                // Written as encoded when the session was opened: no tree walk per request.
                map.serialize_entry(key, &**value)?;
            }
        }
        map.end()
    }
}

/// The versions listed in an `UnsupportedProtocolVersion` error's `data.supported`.
pub(crate) fn supported_versions(error: &ErrorObject) -> Vec<String> {
    #[derive(Deserialize)]
    struct Data {
        #[serde(default)]
        supported: Vec<Value>,
    }
    error
        .data
        .as_deref()
        .and_then(|raw| serde_json::from_str::<Data>(raw.get()).ok())
        .map(|data| {
            data.supported
                .into_iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The revisions the client is configured to speak.
fn range(client: &Client) -> RangeInclusive<ProtocolVersion> {
    client.shared.min_protocol_version..=client.shared.protocol_version
}

/// Whether an error is one only a stateless-era server sends, which rules out a fallback.
fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// How one `server/discover` attempt ended.
enum Probe {
    Found(Box<Negotiated>),
    /// `-32022`, with the versions the server offered.
    Unsupported(Vec<String>, ErrorObject),
    /// Anything that says the server is from before the stateless era.
    Legacy(String),
}

/// Negotiates as [`Client::connect`] documents.
pub(crate) async fn negotiate(client: &Client, rpc: &Rpc) -> Result<Negotiated, ConnectError> {
    let shared = &client.shared;
    // The whole negotiation (probe, retries, `initialize`) fits in the caller's budget.
    let deadline = Instant::now() + shared.initialize_timeout;
    let mut probe_failure = None;
    if let Some(mut version) = wire::newest_stateless_in(&range(client)) {
        let mut retries = 0;
        loop {
            match discover(client, rpc, version, deadline).await? {
                Probe::Found(negotiated) => return Ok(*negotiated),
                Probe::Legacy(reason) => {
                    tracing::debug!(%reason, "server/discover not understood; falling back to initialize");
                    probe_failure = Some(reason);
                    break;
                }
                Probe::Unsupported(offered, error) => {
                    let Some(mutual) = wire::best_mutual(&offered, &range(client)) else {
                        return Err(ConnectError::UnsupportedVersion {
                            requested: version,
                            min: shared.min_protocol_version,
                            answered: offered.join(", "),
                        });
                    };
                    if mutual.is_session() {
                        return initialize(client, rpc, mutual, deadline).await;
                    }
                    retries += 1;
                    if retries > MAX_VERSION_RETRIES {
                        return Err(ConnectError::Discover(CallError::Rpc(error)));
                    }
                    tracing::debug!(%mutual, "retrying server/discover with a version the server supports");
                    version = mutual;
                }
            }
        }
    }
    match wire::newest_session_in(&range(client)) {
        Some(version) => initialize(client, rpc, version, deadline).await,
        None => Err(ConnectError::UnsupportedVersion {
            requested: shared.protocol_version,
            min: shared.min_protocol_version,
            answered: format!(
                "nothing stateless (server/discover: {})",
                probe_failure.as_deref().unwrap_or("not sent")
            ),
        }),
    }
}

/// What is left of the negotiation's budget; `None` once it is spent.
fn remaining(deadline: Instant) -> Option<Duration> {
    Some(deadline.saturating_duration_since(Instant::now())).filter(|d| !d.is_zero())
}

/// One `server/discover` at `version`, given at most
/// [`discover_timeout`](crate::ClientBuilder::discover_timeout) and half of what is left until
/// `deadline`.
async fn discover(
    client: &Client,
    rpc: &Rpc,
    version: ProtocolVersion,
    deadline: Instant,
) -> Result<Probe, ConnectError> {
    let Some(left) = remaining(deadline) else {
        return Ok(Probe::Legacy("no time left for server/discover".into()));
    };
    // At most half of what is left: a server that ignores `server/discover` (instead of
    // answering `-32601`) still leaves `initialize` time to succeed.
    let timeout = client.shared.discover_timeout.min(left / 2);
    let params = json!({ "_meta": stateless_meta(client, version) });
    let raw = match rpc
        .request("server/discover", Some(params), Some(timeout), None, true)
        .await
    {
        Ok(raw) => raw,
        Err(mcp_jsonrpc::CallError::Rpc(error)) if error.code == UNSUPPORTED_PROTOCOL_VERSION => {
            return Ok(Probe::Unsupported(supported_versions(&error), error));
        }
        Err(mcp_jsonrpc::CallError::Rpc(error)) if is_modern_error(error.code) => {
            return Err(ConnectError::Discover(CallError::Rpc(error)));
        }
        Err(mcp_jsonrpc::CallError::Rpc(error)) => {
            return Ok(Probe::Legacy(format!(
                "error {}: {}",
                error.code, error.message
            )));
        }
        Err(mcp_jsonrpc::CallError::Timeout) => {
            return Ok(Probe::Legacy("no answer in time".into()));
        }
        Err(mcp_jsonrpc::CallError::InvalidResponse(reason)) => {
            return Ok(Probe::Legacy(reason));
        }
        Err(other) => return Err(ConnectError::Discover(other.into())),
    };
    match decode_discover(raw.get(), version) {
        Ok(found) => Ok(Probe::Found(Box::new(found))),
        Err(reason) => Ok(Probe::Legacy(reason)),
    }
}

/// Reads a discover result leniently: only `supportedVersions` is required; the other members
/// the schema requires get their neutral values when a server leaves them out. The server info
/// comes from `_meta` (or a top-level `serverInfo`, which some servers send).
fn parse(text: &str) -> Result<(DiscoverResult, Implementation), String> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "supportedVersions")]
        supported_versions: Vec<String>,
        #[serde(default)]
        capabilities: Option<Value>,
        #[serde(default)]
        instructions: Option<String>,
        #[serde(rename = "_meta", default)]
        meta: Option<Map<String, Value>>,
        #[serde(rename = "ttlMs", default)]
        ttl_ms: Option<i64>,
        #[serde(rename = "cacheScope", default)]
        cache_scope: Option<CacheScope>,
        #[serde(rename = "serverInfo", default)]
        server_info: Option<Value>,
    }
    let probe: Probe = serde_json::from_str(text)
        .map_err(|e| format!("the answer to server/discover is not a discover result: {e}"))?;
    let server_info = probe
        .meta
        .as_ref()
        .and_then(|meta| meta.get(wire::META_SERVER_INFO).cloned())
        .or(probe.server_info)
        .and_then(|info| serde_json::from_value::<Implementation>(info).ok())
        .unwrap_or_else(|| Implementation::new("", ""));
    let mut model = json!({
        "supportedVersions": probe.supported_versions,
        "capabilities": probe.capabilities.unwrap_or_else(|| json!({})),
        "resultType": ResultType::Complete.as_str(),
        "ttlMs": probe.ttl_ms.unwrap_or(0).max(0),
        "cacheScope": probe.cache_scope.unwrap_or(CacheScope::Private),
    });
    if let Some(instructions) = probe.instructions {
        model["instructions"] = json!(instructions);
    }
    if let Some(meta) = probe.meta {
        model["_meta"] = Value::Object(meta);
    }
    let discover: DiscoverResult = serde_json::from_value(model)
        .map_err(|e| format!("the discover result does not decode: {e}"))?;
    Ok((discover, server_info))
}

/// A discover result, as [`ClientSession::discover`](crate::ClientSession::discover) returns it.
pub(crate) fn parse_discover(text: &str) -> Result<DiscoverResult, String> {
    parse(text).map(|(discover, _)| discover)
}

fn decode_discover(text: &str, version: ProtocolVersion) -> Result<Negotiated, String> {
    let (discover, server_info) = parse(text)?;
    if !discover
        .supported_versions
        .iter()
        .any(|v| v == version.as_str())
    {
        tracing::debug!(
            supported = ?discover.supported_versions,
            %version,
            "the server answered server/discover without listing the version it accepted"
        );
    }
    Ok(Negotiated::Stateless {
        version,
        discover: Box::new(discover),
        raw: text.to_owned(),
        server_info: Box::new(server_info),
    })
}

/// `initialize` asking for `requested`, then `notifications/initialized`.
async fn initialize(
    client: &Client,
    rpc: &Rpc,
    requested: ProtocolVersion,
    deadline: Instant,
) -> Result<Negotiated, ConnectError> {
    let shared = &client.shared;
    // What the probe left of the budget ([`ClientBuilder::initialize_timeout`]).
    //
    // [`ClientBuilder::initialize_timeout`]: crate::ClientBuilder::initialize_timeout
    let Some(timeout) = remaining(deadline) else {
        return Err(ConnectError::Initialize(CallError::Timeout));
    };
    let mut params = Map::new();
    params.insert("protocolVersion".into(), json!(requested));
    let mut capabilities = client.capabilities();
    capabilities.project(requested);
    params.insert(
        "capabilities".into(),
        serde_json::to_value(capabilities).unwrap_or_else(|_| json!({})),
    );
    let mut info = shared.info.clone();
    info.project(requested);
    params.insert(
        "clientInfo".into(),
        serde_json::to_value(info).map_err(ConnectError::InvalidInitializeResult)?,
    );
    let raw = rpc
        .request(
            "initialize",
            Some(Value::Object(params)),
            Some(timeout),
            None,
            // The specification forbids cancelling `initialize`.
            false,
        )
        .await
        .map_err(|error| ConnectError::Initialize(error.into()))?;
    let value: Value =
        serde_json::from_str(raw.get()).map_err(ConnectError::InvalidInitializeResult)?;
    let answered = value
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let version = match answered.parse::<ProtocolVersion>() {
        Ok(version)
            if version.is_session()
                && (shared.min_protocol_version..=requested).contains(&version) =>
        {
            version
        }
        _ => {
            return Err(ConnectError::UnsupportedVersion {
                requested,
                min: shared.min_protocol_version,
                answered,
            });
        }
    };
    let init: InitializeResult =
        serde_json::from_value(value).map_err(ConnectError::InvalidInitializeResult)?;
    rpc.notify("notifications/initialized", None)
        .await
        .map_err(ConnectError::Initialized)?;
    Ok(Negotiated::Session {
        version,
        init: Box::new(init),
    })
}

/// The `InitializeResult`-shaped view of a stateless session, for code written against
/// [`ClientSession::initialize_result`](crate::ClientSession::initialize_result).
pub(crate) fn synthesized_init(
    version: ProtocolVersion,
    discover: &DiscoverResult,
    server_info: &Implementation,
) -> InitializeResult {
    InitializeResult {
        meta: None,
        capabilities: discover.capabilities.clone(),
        instructions: discover.instructions.clone(),
        protocol_version: version.as_str().to_owned(),
        server_info: server_info.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(
        params: Option<Value>,
        meta: &Map<String, Value>,
        extra: Option<(&str, &Value)>,
    ) -> Value {
        let text = serde_json::to_string(&Stamped {
            params: params.as_ref().and_then(Value::as_object),
            meta: &render_meta(meta),
            extra,
        })
        .unwrap();
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn meta_merges_without_overwriting_the_callers_members() {
        let mut meta = Map::new();
        meta.insert("v".into(), json!("2026-07-28"));
        meta.insert("caps".into(), json!({"sampling": {}}));
        meta.insert("level".into(), json!("info"));
        let level = json!("debug");
        let both = json!({"v": "2026-07-28", "caps": {"sampling": {}}, "level": "info"});
        let cases = [
            (None, None, json!({"_meta": both})),
            (
                Some(json!({"name": "echo", "arguments": {"text": "hi"}})),
                None,
                json!({"name": "echo", "arguments": {"text": "hi"}, "_meta": both}),
            ),
            // The caller's own members win.
            (
                Some(json!({"name": "echo", "_meta": {"v": "mine", "progressToken": 3}})),
                None,
                json!({"name": "echo", "_meta": {"v": "mine", "progressToken": 3,
                       "caps": {"sampling": {}}, "level": "info"}}),
            ),
            // `extra` wins over `meta`, the caller over both.
            (
                None,
                Some(("level", &level)),
                json!({"_meta": {"v": "2026-07-28", "caps": {"sampling": {}}, "level": "debug"}}),
            ),
            (
                Some(json!({"_meta": {"level": "error"}})),
                Some(("level", &level)),
                json!({"_meta": {"v": "2026-07-28", "caps": {"sampling": {}}, "level": "error"}}),
            ),
            // A `_meta` that is not an object, and params that are not one, are replaced.
            (Some(json!({"_meta": "no"})), None, json!({"_meta": both})),
            (
                Some(json!(["not", "an", "object"])),
                None,
                json!({"_meta": both}),
            ),
        ];
        for (params, extra, expected) in cases {
            assert_eq!(
                stamped(params.clone(), &meta, extra),
                expected,
                "{params:?} {extra:?}"
            );
        }
    }

    #[test]
    fn discover_results_decode_leniently() {
        let found = decode_discover(
            r#"{"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "top", "version": "1"}}"#,
            ProtocolVersion::V2026_07_28,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let Negotiated::Stateless {
            discover,
            server_info,
            ..
        } = found
        else {
            panic!("not stateless")
        };
        assert_eq!(server_info.name, "top");
        assert_eq!(discover.ttl_ms, 0);
        assert!(decode_discover(r#"{"tools": []}"#, ProtocolVersion::V2026_07_28).is_err());
    }

    #[test]
    fn unsupported_version_data_is_read() {
        let error = ErrorObject::new(UNSUPPORTED_PROTOCOL_VERSION, "no")
            .with_data(&json!({"supported": ["2026-07-28", 3], "requested": "x"}))
            .unwrap();
        assert_eq!(supported_versions(&error), vec!["2026-07-28".to_owned()]);
        assert!(supported_versions(&ErrorObject::new(1, "x")).is_empty());
    }
}
