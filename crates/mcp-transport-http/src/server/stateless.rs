//! The stateless (2026-07-28) request envelope: classification and the header checks the
//! transport does before a request reaches the server.

use base64::Engine as _;
use http::request::Parts;
use http::{HeaderMap, HeaderName, Response, StatusCode};
use mcp_jsonrpc::{ErrorObject, Id, Message};
use mcp_types::error_codes as codes;
use mcp_types::wire::{
    self, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SUBSCRIPTION_ID, StatelessParams,
};
use serde_json::Value;
use serde_json::value::RawValue;

use super::McpParamHeaders;
use super::body::{HttpBody, batch_refused, rpc_error};
use super::config::HttpServerConfig;

/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
pub(crate) const MCP_METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
pub(crate) const MCP_NAME: HeaderName = HeaderName::from_static("mcp-name");
/// The prefix of the `Mcp-Param-*` headers.
pub(crate) const MCP_PARAM_PREFIX: &str = "mcp-param-";

/// A notification on the shared stateless connection names its `subscriptions/listen` request
/// by the id the server saw, which the transport rewrote; puts back the id the client sent, so
/// the rewriting stays invisible.
pub(crate) fn retag_subscription(n: &mut mcp_jsonrpc::Notification, internal: &Id, original: &Id) {
    let Some(raw) = &n.params else {
        return;
    };
    if !raw.get().contains(META_SUBSCRIPTION_ID) {
        return;
    }
    let Ok(mut params) = serde_json::from_str::<Value>(raw.get()) else {
        return;
    };
    let Some(tag) = params
        .get_mut("_meta")
        .and_then(|m| m.get_mut(META_SUBSCRIPTION_ID))
    else {
        return;
    };
    if serde_json::to_value(internal).ok().as_ref() != Some(&*tag) {
        return;
    }
    let Ok(original) = serde_json::to_value(original) else {
        return;
    };
    *tag = original;
    if let Ok(raw) = mcp_jsonrpc::to_raw(&params) {
        n.params = Some(raw);
    }
}

/// A header's value, trimmed of optional whitespace; `Err` when it is not visible ASCII.
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, ()> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v.to_str().map(|s| Some(s.trim())).map_err(|_| ()),
    }
}

/// The members of a request's params the stateless envelope is made of, read in one pass (see
/// [`StatelessParams`]); empty when there are none or they cannot be read one by one.
fn envelope(message: &Message) -> StatelessParams<'_> {
    let params = match message {
        Message::Request(r) => r.params.as_deref(),
        Message::Notification(n) => n.params.as_deref(),
        Message::Response(_) => None,
    };
    params
        .and_then(|p| StatelessParams::read(p.get()).ok())
        .unwrap_or_default()
}

/// A member as the checks read it: present and not `null`.
fn given(raw: Option<&RawValue>) -> Option<&RawValue> {
    raw.filter(|r| r.get() != "null")
}

/// A raw JSON value as the string it holds, or its compact JSON text when it is not a string.
fn raw_text(raw: &RawValue) -> Option<std::borrow::Cow<'_, str>> {
    wire::json_string(raw).or_else(|| {
        serde_json::from_str::<Value>(raw.get())
            .ok()
            .map(|v| std::borrow::Cow::Owned(v.to_string()))
    })
}

/// Whether a POST without a session belongs to the stateless path, as [`wire::classify`]
/// decides from the `MCP-Protocol-Version` header and a lone request's `_meta` (a member sent
/// as `null` counts as absent). `single` is the POST's message when it is not a batch, `env`
/// its [`envelope`].
fn is_stateless(parts: &Parts, single: Option<&Message>, env: &StatelessParams<'_>) -> bool {
    let meta_version = matches!(single, Some(Message::Request(_)))
        && env
            .meta()
            .is_some_and(|meta| given(meta.protocol_version()).is_some());
    wire::classify(&wire::EraEvidence {
        version_header: header(&parts.headers, &PROTOCOL_VERSION).ok().flatten(),
        meta_version,
        ..wire::EraEvidence::default()
    })
    .is_stateless()
}

/// A POST without a session on the stateless path (`None`: it is not), with its lone message
/// and what its checks hand on, or the answer that refuses it. `single` is the POST's message
/// when it is not a batch; its envelope is read once, for the classification and the checks.
pub(crate) fn check_post<'a>(
    config: &HttpServerConfig,
    parts: &Parts,
    single: Option<&'a Message>,
) -> Option<Result<(&'a Message, Checked), Response<HttpBody>>> {
    let env = single.map(envelope).unwrap_or_default();
    if !is_stateless(parts, single, &env) {
        return None;
    }
    let Some(message) = single else {
        return Some(Err(batch_refused()));
    };
    Some(validate(config, parts, message, &env).map(|checked| (message, checked)))
}

/// The HTTP status of a stateless JSON answer, from its JSON-RPC error code.
pub(crate) fn status_for(code: Option<i64>) -> StatusCode {
    match code {
        Some(codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            codes::HEADER_MISMATCH
            | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
            | codes::UNSUPPORTED_PROTOCOL_VERSION
            | codes::INVALID_REQUEST
            | codes::PARSE_ERROR,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

fn mismatch(message: &Message, text: impl Into<String>) -> Response<HttpBody> {
    reject(message, ErrorObject::new(codes::HEADER_MISMATCH, text))
}

fn reject(message: &Message, error: ErrorObject) -> Response<HttpBody> {
    let id = match message {
        Message::Request(r) => Some(r.id.clone()),
        _ => None,
    };
    rpc_error(StatusCode::BAD_REQUEST, id, error)
}

/// What the checks of a stateless message hand on with it: the decoded `Mcp-Param-*` headers.
#[derive(Debug)]
pub(crate) struct Checked {
    pub(crate) params: McpParamHeaders,
}

/// Checks a stateless message's headers against its body (`env`, its [`envelope`]), in the
/// order the specification gives.
fn validate(
    config: &HttpServerConfig,
    parts: &Parts,
    message: &Message,
    env: &StatelessParams<'_>,
) -> Result<Checked, Response<HttpBody>> {
    let headers = &parts.headers;
    let version = match header(headers, &PROTOCOL_VERSION) {
        Ok(Some(v)) => v,
        Ok(None) => {
            return Err(mismatch(
                message,
                "the MCP-Protocol-Version header is required",
            ));
        }
        Err(()) => {
            return Err(mismatch(
                message,
                "the MCP-Protocol-Version header is not ASCII",
            ));
        }
    };
    if let Message::Request(_) = message {
        let meta = env.meta();
        let body_version = given(meta.and_then(|m| m.protocol_version()));
        let caps = given(meta.and_then(|m| m.client_capabilities()));
        let Some(body_version) = body_version else {
            return Err(reject(
                message,
                ErrorObject::invalid_params(format!(
                    "params._meta must carry {META_PROTOCOL_VERSION}"
                )),
            ));
        };
        if !caps.is_some_and(|c| c.get().trim_start().starts_with('{')) {
            return Err(reject(
                message,
                ErrorObject::invalid_params(format!(
                    "params._meta must carry {META_CLIENT_CAPABILITIES}"
                )),
            ));
        }
        let Some(body_version) = wire::json_string(body_version) else {
            return Err(reject(
                message,
                ErrorObject::invalid_params(format!("{META_PROTOCOL_VERSION} must be a string")),
            ));
        };
        if body_version != version {
            return Err(mismatch(
                message,
                format!(
                    "MCP-Protocol-Version {version:?} does not match params._meta {body_version:?}"
                ),
            ));
        }
    }
    if !config.stateless_versions.iter().any(|v| v == version) {
        let error = ErrorObject::new(
            codes::UNSUPPORTED_PROTOCOL_VERSION,
            format!("unsupported protocol version {version:?}"),
        )
        .with_data(&serde_json::json!({
            "supported": config.stateless_versions,
            "requested": version,
        }))
        .unwrap_or_else(|_| {
            ErrorObject::new(
                codes::UNSUPPORTED_PROTOCOL_VERSION,
                "unsupported protocol version",
            )
        });
        return Err(reject(message, error));
    }
    if let Some(method) = message.method() {
        match header(headers, &MCP_METHOD) {
            Ok(Some(h)) if h == method => {}
            Ok(Some(h)) => {
                return Err(mismatch(
                    message,
                    format!("Mcp-Method {h:?} does not match the body's method {method:?}"),
                ));
            }
            _ => return Err(mismatch(message, "the Mcp-Method header is required")),
        }
        let name_field = given(match method {
            "tools/call" | "prompts/get" => env.name(),
            "resources/read" => env.uri(),
            "tasks/get" | "tasks/update" | "tasks/cancel" => env.task_id(),
            _ => None,
        });
        if let Some(expected) = name_field.and_then(raw_text) {
            match header(headers, &MCP_NAME) {
                Ok(Some(h)) if h == expected => {}
                Ok(Some(h)) => {
                    return Err(mismatch(
                        message,
                        format!("Mcp-Name {h:?} does not match the body's {expected:?}"),
                    ));
                }
                _ => return Err(mismatch(message, "the Mcp-Name header is required")),
            }
        }
    }
    let mut params = Vec::new();
    for (name, value) in headers {
        let Some(suffix) = name.as_str().strip_prefix(MCP_PARAM_PREFIX) else {
            continue;
        };
        let decoded = value
            .to_str()
            .ok()
            .and_then(|v| decode_param(v.trim()))
            .ok_or_else(|| mismatch(message, format!("header {name} is not validly encoded")))?;
        params.push((suffix.to_owned(), decoded));
    }
    Ok(Checked {
        params: McpParamHeaders(params),
    })
}

/// Decodes an `Mcp-Param-*` value: `=?base64?...?=` is standard, padded base64 of UTF-8;
/// anything else is literal.
fn decode_param(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().method("POST").uri("/mcp");
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    fn request(method: &str, params: Value) -> Message {
        Message::Request(mcp_jsonrpc::Request::with_params(7, method, &params).unwrap())
    }

    /// The headers of a stateless `tools/call`.
    fn call_headers<'a>(version: &'a str, name: &'a str) -> [(&'static str, &'a str); 3] {
        [
            ("mcp-protocol-version", version),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ]
    }

    fn meta() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn classified(parts: &Parts, single: Option<&Message>) -> bool {
        check_post(&HttpServerConfig::default(), parts, single).is_some()
    }

    /// The checks of a message the stateless path takes.
    fn checked(
        c: &HttpServerConfig,
        parts: &Parts,
        message: &Message,
    ) -> Result<Checked, Response<HttpBody>> {
        let checked = check_post(c, parts, Some(message)).expect("a stateless message");
        checked.map(|(_, checked)| checked)
    }

    /// The status and JSON body of an answer.
    fn answer(r: Response<HttpBody>) -> (StatusCode, Value) {
        use http_body_util::BodyExt;
        let status = r.status();
        let bytes = futures_util::FutureExt::now_or_never(r.into_body().collect())
            .unwrap()
            .unwrap()
            .to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    /// The status and error code of the refusal of request 7.
    fn code(r: Response<HttpBody>) -> (StatusCode, i64) {
        let (status, v) = answer(r);
        assert_eq!(v["id"], 7);
        (status, v["error"]["code"].as_i64().unwrap())
    }

    #[test]
    fn classification() {
        let discover = request("server/discover", json!({"_meta": meta()}));
        assert!(classified(&parts(&[]), Some(&discover)));
        let plain = request("tools/list", json!({}));
        assert!(!classified(&parts(&[]), Some(&plain)));
        assert!(!classified(
            &parts(&[("mcp-protocol-version", "2025-11-25")]),
            Some(&plain)
        ));
        assert!(classified(
            &parts(&[("mcp-protocol-version", "v999.0.0")]),
            Some(&plain)
        ));
        let progress_only = request("tools/list", json!({"_meta": {"progressToken": 1}}));
        assert!(!classified(&parts(&[]), Some(&progress_only)));
        // A batch is classified by its headers only, and refused on the stateless path.
        assert!(!classified(&parts(&[]), None));
        let batch = check_post(
            &HttpServerConfig::default(),
            &parts(&[("mcp-protocol-version", "2026-07-28")]),
            None,
        );
        let Some(Err(refused)) = batch else {
            panic!("a stateless batch is refused");
        };
        let (status, v) = answer(refused);
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            (&v["id"], &v["error"]["code"]),
            (&Value::Null, &json!(-32600))
        );
    }

    #[test]
    fn checks_in_order() {
        let c = HttpServerConfig::default();
        let ok_headers = call_headers("2026-07-28", " echo ");
        let call = request("tools/call", json!({"name": "echo", "_meta": meta()}));
        assert!(checked(&c, &parts(&ok_headers), &call).is_ok());

        let e = checked(&c, &parts(&ok_headers[1..]), &call).unwrap_err();
        assert_eq!(code(e), (StatusCode::BAD_REQUEST, codes::HEADER_MISMATCH));
        let no_caps = request(
            "tools/call",
            json!({"name": "echo", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
        );
        assert_eq!(
            code(checked(&c, &parts(&ok_headers), &no_caps).unwrap_err()).1,
            codes::INVALID_PARAMS
        );
        for bad_meta in [
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": []}),
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": "all"}),
            json!({"io.modelcontextprotocol/protocolVersion": 20260728, "io.modelcontextprotocol/clientCapabilities": {}}),
        ] {
            let bad = request("tools/call", json!({"name": "echo", "_meta": bad_meta}));
            assert_eq!(
                code(checked(&c, &parts(&ok_headers), &bad).unwrap_err()).1,
                codes::INVALID_PARAMS,
                "{bad_meta}"
            );
        }
        // The body's name is compared decoded: an escape in it still matches the header.
        let params = serde_json::value::RawValue::from_string(
            r#"{"name":"ec\u0068o","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#
                .to_owned(),
        )
        .unwrap();
        let escaped = Message::Request(mcp_jsonrpc::Request::new(7, "tools/call", Some(params)));
        assert!(checked(&c, &parts(&ok_headers), &escaped).is_ok());
        let other = call_headers("2026-07-28", "echo");
        let v999 = request(
            "tools/call",
            json!({"name": "echo", "_meta": {"io.modelcontextprotocol/protocolVersion": "v999.0.0", "io.modelcontextprotocol/clientCapabilities": {}}}),
        );
        assert_eq!(
            code(checked(&c, &parts(&other), &v999).unwrap_err()).1,
            codes::HEADER_MISMATCH
        );
        let both = call_headers("v999.0.0", "echo");
        let e = checked(&c, &parts(&both), &v999).unwrap_err();
        assert_eq!(code(e).1, codes::UNSUPPORTED_PROTOCOL_VERSION);
        let wrong_name = call_headers("2026-07-28", "other");
        assert_eq!(
            code(checked(&c, &parts(&wrong_name), &call).unwrap_err()).1,
            codes::HEADER_MISMATCH
        );
        let wrong_case = [
            ("mcp-protocol-version", "2026-07-28"),
            ("MCP-METHOD", "TOOLS/CALL"),
            ("mcp-name", "echo"),
        ];
        assert_eq!(
            code(checked(&c, &parts(&wrong_case), &call).unwrap_err()).1,
            codes::HEADER_MISMATCH
        );
    }

    #[test]
    fn param_headers() {
        let c = HttpServerConfig::default();
        let call = request("tools/call", json!({"name": "echo", "_meta": meta()}));
        let base = call_headers("2026-07-28", "echo");
        let mut h = base.to_vec();
        h.push(("mcp-param-region", "=?base64?SGVsbG8=?="));
        h.push(("Mcp-Param-Plain", "=?base64?SGVsbG8"));
        let got = checked(&c, &parts(&h), &call).unwrap().params;
        assert_eq!(got.get("Region"), Some("Hello"));
        assert_eq!(got.get("plain"), Some("=?base64?SGVsbG8"));
        for bad in ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?="] {
            let mut h = base.to_vec();
            h.push(("mcp-param-region", bad));
            assert_eq!(
                code(checked(&c, &parts(&h), &call).unwrap_err()).1,
                codes::HEADER_MISMATCH,
                "{bad}"
            );
        }
    }

    #[test]
    fn subscription_tags_get_the_client_id_back() {
        let params =
            json!({"_meta": {META_SUBSCRIPTION_ID: 17, "other/key": 1}, "notifications": {}});
        let mut n = mcp_jsonrpc::Notification {
            method: "notifications/tools/list_changed".into(),
            params: Some(mcp_jsonrpc::to_raw(&params).unwrap()),
        };
        retag_subscription(&mut n, &Id::Number(17), &Id::String("sub-a".into()));
        let got: Value = serde_json::from_str(n.params.as_ref().unwrap().get()).unwrap();
        assert_eq!(got["_meta"][META_SUBSCRIPTION_ID], "sub-a");
        assert_eq!(got["_meta"]["other/key"], 1);
        // Another request's tag, or none, is left alone.
        let before = n.params.as_ref().unwrap().get().to_owned();
        retag_subscription(&mut n, &Id::Number(3), &Id::Number(99));
        assert_eq!(n.params.as_ref().unwrap().get(), before);
        let mut plain = mcp_jsonrpc::Notification {
            method: "notifications/progress".into(),
            params: Some(mcp_jsonrpc::to_raw(&json!({"progress": 1})).unwrap()),
        };
        retag_subscription(&mut plain, &Id::Number(17), &Id::Number(1));
        assert_eq!(plain.params.as_ref().unwrap().get(), r#"{"progress":1}"#);
    }

    #[test]
    fn statuses() {
        assert_eq!(
            status_for(Some(codes::METHOD_NOT_FOUND)),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            status_for(Some(codes::MISSING_REQUIRED_CLIENT_CAPABILITY)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(status_for(Some(codes::INVALID_PARAMS)), StatusCode::OK);
        assert_eq!(status_for(None), StatusCode::OK);
    }
}
