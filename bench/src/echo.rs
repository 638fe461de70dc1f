//! Message handling of the "limit" echo servers: the least work an MCP echo server can do with
//! plain `serde_json` — parse each message into a small borrowed struct, answer `initialize`,
//! `ping`, `server/discover`, `tools/list` and the `echo` tool, ignore notifications and
//! responses — so that the SDK's servers have a yardstick measured on the same machine and run.
//!
//! Both eras are answered: a request whose `params._meta` names a protocol version (or, over
//! HTTP, that arrives without a session and with a non-session `MCP-Protocol-Version`) is a
//! 2026-07-28 stateless request, checked in the order the specification gives; anything else
//! is session traffic.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::borrow::Cow;

/// The revisions that negotiate a session with `initialize`, oldest first.
pub const SESSION_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The newest session revision, answered when a client asks for one we do not know.
pub const LATEST_SESSION_VERSION: &str = "2025-11-25";
/// The stateless revision.
pub const STATELESS_VERSION: &str = "2026-07-28";
/// `_meta` key carrying the protocol version of a stateless request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key carrying the client capabilities of a stateless request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key carrying the client name and version of a stateless request.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The one tool the echo servers offer.
pub const ECHO_TOOL: &str = "echo";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const HEADER_MISMATCH: i64 = -32020;
const UNSUPPORTED_VERSION: i64 = -32022;

/// The request headers of the stateless HTTP checks. Over stdio there are none.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct HttpHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
    /// Whether the request carried an `Mcp-Session-Id` (validated by the caller).
    pub session: bool,
}

/// Where a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport<'a> {
    /// A newline-delimited stream.
    Stdio,
    /// One HTTP POST body.
    Http(HttpHeaders<'a>),
}

/// What [`handle`] did with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A response was appended to the output.
    Reply {
        /// The HTTP status that goes with it (200, or 400/404 for stateless envelope errors).
        status: u16,
        /// Set when this answered a successful `initialize`: the negotiated revision, so an HTTP
        /// server can start a session.
        initialized: Option<&'static str>,
        /// Whether the request was a 2026-07-28 stateless one.
        stateless: bool,
    },
    /// The message was a notification or a response: nothing to send back.
    NoReply,
}

#[derive(Deserialize)]
struct Incoming<'a> {
    #[serde(borrow)]
    jsonrpc: Cow<'a, str>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize, Default)]
struct Meta<'a> {
    #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
    protocol_version: Option<Cow<'a, str>>,
    #[serde(borrow, default, rename = "io.modelcontextprotocol/clientCapabilities")]
    client_capabilities: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallResult<'a> {
    /// Stateless results only: the server's identity, which the specification asks a server
    /// to put on every response (as the SDK does).
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ResultMeta<'a>>,
    content: [TextContent<'a>; 1],
    is_error: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
}

#[derive(Serialize)]
struct ResultMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: &'a RawValue,
}

#[derive(Serialize)]
struct TextContent<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult<'a> {
    protocol_version: &'a str,
    capabilities: &'a RawValue,
    server_info: &'a RawValue,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<serde_json::Value>,
}

/// The limit echo server's message handler. Cheap to share: it only holds the precomputed
/// constant results.
///
/// ```
/// use mcp_bench::echo::{EchoServer, Outcome, Transport};
///
/// let server = EchoServer::new();
/// let mut out = Vec::new();
/// let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#;
/// let outcome = server.handle(call, Transport::Stdio, &mut out);
/// assert_eq!(outcome, Outcome::Reply { status: 200, initialized: None, stateless: false });
/// assert_eq!(
///     std::str::from_utf8(&out).unwrap(),
///     r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"}],"isError":false}}"#
/// );
/// ```
#[derive(Debug, Clone)]
pub struct EchoServer {
    tools_session: Box<RawValue>,
    tools_stateless: Box<RawValue>,
    discover: Box<RawValue>,
    capabilities: Box<RawValue>,
    server_info: Box<RawValue>,
}

impl Default for EchoServer {
    fn default() -> Self {
        Self::new()
    }
}

fn raw(value: serde_json::Value) -> Box<RawValue> {
    // Serialising a `Value` cannot fail (its keys are strings) and always yields valid JSON.
    serde_json::value::to_raw_value(&value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

impl EchoServer {
    /// The handler with its constant results prepared.
    pub fn new() -> Self {
        let tool = serde_json::json!({
            "name": ECHO_TOOL,
            "description": "Echo the text back",
            "inputSchema": {
                "type": "object",
                "properties": { "text": { "type": "string", "description": "The text to send back" } },
                "required": ["text"]
            }
        });
        let server_info = serde_json::json!({ "name": "limit-echo", "version": "0.1.0" });
        let mut supported: Vec<&str> = SESSION_VERSIONS.to_vec();
        supported.push(STATELESS_VERSION);
        Self {
            tools_session: raw(serde_json::json!({ "tools": [tool] })),
            tools_stateless: raw(serde_json::json!({
                "tools": [tool],
                "_meta": { "io.modelcontextprotocol/serverInfo": server_info },
                "resultType": "complete",
                "ttlMs": 60_000,
                "cacheScope": "public"
            })),
            discover: raw(serde_json::json!({
                "supportedVersions": supported,
                "capabilities": { "tools": {} },
                "_meta": { "io.modelcontextprotocol/serverInfo": server_info },
                "resultType": "complete",
                "ttlMs": 60_000,
                "cacheScope": "public"
            })),
            capabilities: raw(serde_json::json!({ "tools": {} })),
            server_info: raw(server_info),
        }
    }

    /// Handles one JSON-RPC message, appending the response (without a trailing newline) to
    /// `out`. Never panics on malformed input: it answers with the matching JSON-RPC error.
    pub fn handle(&self, message: &[u8], transport: Transport<'_>, out: &mut Vec<u8>) -> Outcome {
        let message = message.trim_ascii();
        if message.first() == Some(&b'[') {
            return write_error(
                out,
                None,
                INVALID_REQUEST,
                "batches are not supported",
                None,
                400,
            );
        }
        let incoming: Incoming<'_> = match serde_json::from_slice(message) {
            Ok(incoming) => incoming,
            Err(e) => {
                let code = if e.is_data() {
                    INVALID_REQUEST
                } else {
                    PARSE_ERROR
                };
                return write_error(out, None, code, &e.to_string(), None, 400);
            }
        };
        let id = incoming.id.filter(|id| {
            // MCP ids are strings or integers; anything else is treated as no id at all.
            matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
        });
        if incoming.jsonrpc != "2.0" {
            return write_error(
                out,
                id,
                INVALID_REQUEST,
                "jsonrpc must be \"2.0\"",
                None,
                400,
            );
        }
        let Some(method) = incoming.method else {
            return Outcome::NoReply; // a response to a request we never sent
        };
        let Some(id) = id else {
            if incoming.id.is_some() {
                return write_error(out, None, INVALID_REQUEST, "invalid id", None, 400);
            }
            return Outcome::NoReply; // a notification
        };
        let params: Params<'_> = match incoming.params {
            Some(params) => match serde_json::from_str(params.get()) {
                Ok(params) => params,
                Err(e) => {
                    return write_error(out, Some(id), INVALID_PARAMS, &e.to_string(), None, 400);
                }
            },
            None => Params::default(),
        };
        let meta = params.meta.as_ref();
        let meta_version = meta.and_then(|m| m.protocol_version.as_deref());
        let stateless = match transport {
            Transport::Stdio => meta_version.is_some(),
            Transport::Http(h) => {
                !h.session
                    && (meta_version.is_some()
                        || h.protocol_version
                            .is_some_and(|v| !SESSION_VERSIONS.contains(&v)))
            }
        };
        if stateless {
            match self.stateless(id, &method, &params, transport, out) {
                Outcome::Reply {
                    status,
                    initialized,
                    ..
                } => Outcome::Reply {
                    status,
                    initialized,
                    stateless: true,
                },
                Outcome::NoReply => Outcome::NoReply,
            }
        } else {
            self.session(id, &method, &params, out)
        }
    }

    fn session(
        &self,
        id: &RawValue,
        method: &str,
        params: &Params<'_>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        match method {
            "initialize" => {
                let Some(requested) = params.protocol_version.as_deref() else {
                    return write_error(
                        out,
                        Some(id),
                        INVALID_PARAMS,
                        "protocolVersion is required",
                        None,
                        200,
                    );
                };
                let version = SESSION_VERSIONS
                    .iter()
                    .copied()
                    .find(|v| *v == requested)
                    .unwrap_or(LATEST_SESSION_VERSION);
                let result = InitializeResult {
                    protocol_version: version,
                    capabilities: &self.capabilities,
                    server_info: &self.server_info,
                };
                let outcome = write_result(out, id, &result);
                match outcome {
                    Outcome::Reply { status, .. } => Outcome::Reply {
                        status,
                        initialized: Some(version),
                        stateless: false,
                    },
                    other => other,
                }
            }
            "ping" => write_result(out, id, &serde_json::Map::new()),
            "tools/list" => write_result(out, id, &self.tools_session),
            "tools/call" => call(out, id, params, None),
            _ => write_error(
                out,
                Some(id),
                METHOD_NOT_FOUND,
                "method not found",
                None,
                200,
            ),
        }
    }

    fn stateless(
        &self,
        id: &RawValue,
        method: &str,
        params: &Params<'_>,
        transport: Transport<'_>,
        out: &mut Vec<u8>,
    ) -> Outcome {
        let headers = match transport {
            Transport::Http(headers) => Some(headers),
            Transport::Stdio => None,
        };
        if let Some(h) = headers
            && h.protocol_version.is_none()
        {
            return write_error(
                out,
                Some(id),
                HEADER_MISMATCH,
                "MCP-Protocol-Version header is required",
                None,
                400,
            );
        }
        let meta = params.meta.as_ref();
        let (Some(version), Some(_)) = (
            meta.and_then(|m| m.protocol_version.as_deref()),
            meta.and_then(|m| m.client_capabilities),
        ) else {
            let message = format!(
                "params._meta must carry {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES}"
            );
            return write_error(out, Some(id), INVALID_PARAMS, &message, None, 400);
        };
        if let Some(h) = headers
            && h.protocol_version != Some(version)
        {
            return write_error(
                out,
                Some(id),
                HEADER_MISMATCH,
                "MCP-Protocol-Version header differs from _meta",
                None,
                400,
            );
        }
        if version != STATELESS_VERSION {
            let data =
                serde_json::json!({ "supported": [STATELESS_VERSION], "requested": version });
            return write_error(
                out,
                Some(id),
                UNSUPPORTED_VERSION,
                "unsupported protocol version",
                Some(data),
                400,
            );
        }
        if let Some(h) = headers {
            if h.method != Some(method) {
                return write_error(
                    out,
                    Some(id),
                    HEADER_MISMATCH,
                    "Mcp-Method header differs from the method",
                    None,
                    400,
                );
            }
            if method == "tools/call" && h.name != params.name.as_deref() {
                return write_error(
                    out,
                    Some(id),
                    HEADER_MISMATCH,
                    "Mcp-Name header differs from params.name",
                    None,
                    400,
                );
            }
        }
        match method {
            "server/discover" => write_result(out, id, &self.discover),
            "tools/list" => write_result(out, id, &self.tools_stateless),
            "tools/call" => call(out, id, params, Some(("complete", &self.server_info))),
            _ => write_error(
                out,
                Some(id),
                METHOD_NOT_FOUND,
                "method not found",
                None,
                404,
            ),
        }
    }
}

fn call(
    out: &mut Vec<u8>,
    id: &RawValue,
    params: &Params<'_>,
    stateless: Option<(&'static str, &RawValue)>,
) -> Outcome {
    if params.name.as_deref() != Some(ECHO_TOOL) {
        return write_error(out, Some(id), INVALID_PARAMS, "unknown tool", None, 200);
    }
    let args = params
        .arguments
        .map(|a| serde_json::from_str::<EchoArgs<'_>>(a.get()));
    let (text, is_error) = match &args {
        Some(Ok(args)) => (Cow::Borrowed(&*args.text), false),
        Some(Err(e)) => (Cow::Owned(format!("invalid arguments: {e}")), true),
        None => (Cow::Borrowed("invalid arguments: text is required"), true),
    };
    let result = CallResult {
        content: [TextContent {
            kind: "text",
            text: &text,
        }],
        is_error,
        result_type: stateless.map(|(kind, _)| kind),
        meta: stateless.map(|(_, server_info)| ResultMeta { server_info }),
    };
    write_result(out, id, &result)
}

fn write_result<T: Serialize + ?Sized>(out: &mut Vec<u8>, id: &RawValue, result: &T) -> Outcome {
    let start = out.len();
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.get().as_bytes());
    out.extend_from_slice(b",\"result\":");
    if let Err(e) = serde_json::to_writer(&mut *out, result) {
        out.truncate(start);
        return write_error(out, Some(id), -32603, &e.to_string(), None, 500);
    }
    out.push(b'}');
    Outcome::Reply {
        status: 200,
        initialized: None,
        stateless: false,
    }
}

fn write_error(
    out: &mut Vec<u8>,
    id: Option<&RawValue>,
    code: i64,
    message: &str,
    data: Option<serde_json::Value>,
    status: u16,
) -> Outcome {
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.map_or("null", RawValue::get).as_bytes());
    out.extend_from_slice(b",\"error\":");
    let error = ErrorObject {
        code,
        message,
        data,
    };
    if serde_json::to_writer(&mut *out, &error).is_err() {
        // Only a `Value` with non-string keys could fail here, and ours has none.
        out.extend_from_slice(b"{\"code\":-32603,\"message\":\"internal error\"}");
    }
    out.push(b'}');
    Outcome::Reply {
        status,
        initialized: None,
        stateless: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn run(server: &EchoServer, message: &str, transport: Transport<'_>) -> (Outcome, Value) {
        let mut out = Vec::new();
        let outcome = server.handle(message.as_bytes(), transport, &mut out);
        let value = if out.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&out).unwrap()
        };
        (outcome, value)
    }

    /// `message` handled as a line from stdin.
    fn stdio(server: &EchoServer, message: &str) -> (Outcome, Value) {
        run(server, message, Transport::Stdio)
    }

    fn stateless_headers<'a>(method: &'a str, name: Option<&'a str>) -> Transport<'a> {
        Transport::Http(HttpHeaders {
            protocol_version: Some(STATELESS_VERSION),
            method: Some(method),
            name,
            session: false,
        })
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn initialize_negotiates_and_reports_the_version() {
        let server = EchoServer::new();
        let (outcome, value) = stdio(
            &server,
            r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        );
        assert_eq!(
            outcome,
            Outcome::Reply {
                status: 200,
                initialized: Some("2025-06-18"),
                stateless: false
            }
        );
        assert_eq!(value["id"], "a");
        assert_eq!(value["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(value["result"]["serverInfo"]["name"], "limit-echo");
        let (_, value) = stdio(
            &server,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#,
        );
        assert_eq!(value["result"]["protocolVersion"], LATEST_SESSION_VERSION);
    }

    #[test]
    fn echo_escapes_and_reports_bad_arguments() {
        let server = EchoServer::new();
        let (_, value) = stdio(
            &server,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"a\"b\n\u00e9"}}}"#,
        );
        assert_eq!(value["result"]["content"][0]["text"], "a\"b\né");
        assert_eq!(value["result"]["isError"], false);
        assert!(value["result"].get("resultType").is_none());
        let (_, value) = stdio(
            &server,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":5}}}"#,
        );
        assert_eq!(value["result"]["isError"], true);
        let (_, value) = stdio(
            &server,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#,
        );
        assert_eq!(value["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn notifications_and_responses_get_no_reply() {
        let server = EchoServer::new();
        let (outcome, _) = stdio(
            &server,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        );
        assert_eq!(outcome, Outcome::NoReply);
        let (outcome, _) = stdio(&server, r#"{"jsonrpc":"2.0","id":4,"result":{}}"#);
        assert_eq!(outcome, Outcome::NoReply);
    }

    #[test]
    fn malformed_input_gets_precise_errors() {
        let server = EchoServer::new();
        for (message, code) in [
            ("{not json", PARSE_ERROR),
            ("", PARSE_ERROR),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
                INVALID_REQUEST,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
                INVALID_REQUEST,
            ),
            (r#"{"id":1,"method":"ping"}"#, INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#,
                METHOD_NOT_FOUND,
            ),
        ] {
            let (outcome, value) = run(&server, message, Transport::Stdio);
            assert!(matches!(outcome, Outcome::Reply { .. }), "{message}");
            assert_eq!(value["error"]["code"], code, "{message}");
        }
    }

    #[test]
    fn stateless_requests_carry_result_type_and_cache_fields() {
        let server = EchoServer::new();
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x"}},{META}}}}}"#
        );
        let (outcome, value) = run(
            &server,
            &call,
            stateless_headers("tools/call", Some("echo")),
        );
        assert_eq!(
            outcome,
            Outcome::Reply {
                status: 200,
                initialized: None,
                stateless: true
            }
        );
        assert_eq!(value["result"]["resultType"], "complete");
        assert_eq!(value["result"]["content"][0]["text"], "x");
        assert_eq!(
            value["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "limit-echo"
        );
        let (_, value) = run(&server, &call, Transport::Stdio);
        assert_eq!(value["result"]["resultType"], "complete");
        assert!(value["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
        let list =
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{META}}}}}"#);
        let (_, value) = run(&server, &list, stateless_headers("tools/list", None));
        assert_eq!(value["result"]["cacheScope"], "public");
        assert_eq!(value["result"]["tools"][0]["name"], ECHO_TOOL);
        assert!(value["result"]["_meta"]["io.modelcontextprotocol/serverInfo"].is_object());
        let discover =
            format!(r#"{{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{{{META}}}}}"#);
        let (_, value) = run(
            &server,
            &discover,
            stateless_headers("server/discover", None),
        );
        assert_eq!(value["result"]["supportedVersions"][4], STATELESS_VERSION);
    }

    #[test]
    fn stateless_checks_follow_the_specified_order() {
        let server = EchoServer::new();
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"x"}},{META}}}}}"#
        );
        let no_header = Transport::Http(HttpHeaders {
            protocol_version: None,
            ..Default::default()
        });
        let (outcome, value) = run(&server, &call, no_header);
        assert_eq!(
            outcome,
            Outcome::Reply {
                status: 400,
                initialized: None,
                stateless: true
            }
        );
        assert_eq!(value["error"]["code"], HEADER_MISMATCH);
        assert_eq!(value["id"], 9);

        let missing_caps = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let (_, value) = run(&server, missing_caps, stateless_headers("tools/list", None));
        assert_eq!(value["error"]["code"], INVALID_PARAMS);

        let other = Transport::Http(HttpHeaders {
            protocol_version: Some("2027-01-01"),
            method: Some("tools/call"),
            name: Some("echo"),
            session: false,
        });
        let (_, value) = run(&server, &call, other);
        assert_eq!(value["error"]["code"], HEADER_MISMATCH);

        let future = call.replace("2026-07-28", "2027-01-01");
        let (_, value) = run(&server, &future, other);
        assert_eq!(value["error"]["code"], UNSUPPORTED_VERSION);
        assert_eq!(value["error"]["data"]["requested"], "2027-01-01");

        let (_, value) = run(
            &server,
            &call,
            stateless_headers("tools/list", Some("echo")),
        );
        assert_eq!(value["error"]["code"], HEADER_MISMATCH);
        let (_, value) = run(
            &server,
            &call,
            stateless_headers("tools/call", Some("other")),
        );
        assert_eq!(value["error"]["code"], HEADER_MISMATCH);

        let ping = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{{META}}}}}"#);
        let (outcome, value) = run(&server, &ping, stateless_headers("ping", None));
        assert_eq!(
            outcome,
            Outcome::Reply {
                status: 404,
                initialized: None,
                stateless: true
            }
        );
        assert_eq!(value["error"]["code"], METHOD_NOT_FOUND);
    }

    #[test]
    fn session_requests_over_http_ignore_meta_routing() {
        let server = EchoServer::new();
        let headers = Transport::Http(HttpHeaders {
            protocol_version: Some("2025-11-25"),
            session: true,
            ..Default::default()
        });
        let (_, value) = run(
            &server,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"_meta":{"progressToken":1}}}"#,
            headers,
        );
        assert_eq!(
            value,
            json!({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":false}})
        );
    }
}
