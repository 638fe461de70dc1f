//! `wire`: what the stateless rules produce validates against the official 2026-07-28 schema,
//! and the method lists in `wire` agree with that schema.

use crate::common;

use mcp_types::methods;
use mcp_types::wire::{self, CacheHint, InputKind, MetaError, RequestMeta, ResultType};
use mcp_types::{
    CacheScope, CallToolResult, ContentBlock, DiscoverResult, ElicitRequest, ElicitRequestParams,
    Implementation, InputRequest, InputRequests, ListRootsRequest, ListToolsResult,
    ProtocolVersion, ServerCapabilities, Tool, tag,
};
use serde_json::{Value, json};

const REV: &str = "2026-07-28";

fn check(name: &str, value: &Value) {
    let schema = common::schema(REV);
    let validator = common::validator(&schema, name);
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}\n{value:#}");
}

fn lowered(method: &str, value: impl serde::Serialize, kind: ResultType) -> Value {
    let Value::Object(mut map) = serde_json::to_value(value).unwrap() else {
        panic!("a result serializes to an object");
    };
    let info = Implementation::new("wire-test", "0.1.0");
    wire::lower_result(
        method,
        &mut map,
        kind,
        Some(&info),
        Some(CacheHint::new(30_000, CacheScope::Public)),
    )
    .unwrap();
    Value::Object(map)
}

fn response(result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": result})
}

#[test]
fn lowered_results_validate() {
    let tools = ListToolsResult {
        meta: None,
        next_cursor: None,
        tools: vec![Tool::new("echo", serde_json::Map::new())],
        cache_scope: None,
        ttl_ms: None,
        result_type: None,
    };
    // The model value alone lacks what 2026-07-28 requires; lowering adds it.
    let schema = common::schema(REV);
    let raw = serde_json::to_value(&tools).unwrap();
    assert!(!common::validator(&schema, "ListToolsResult").is_valid(&raw));
    let v = lowered("tools/list", &tools, ResultType::Complete);
    check("ListToolsResult", &v);
    check("ListToolsResultResponse", &response(v));

    let call = CallToolResult::new(vec![ContentBlock::text("hi")]);
    let v = lowered("tools/call", &call, ResultType::Complete);
    check("CallToolResult", &v);
    check("CallToolResultResponse", &response(v));

    let read = json!({"contents": [{"uri": "test://a", "text": "x", "mimeType": "text/plain"}]});
    let v = lowered("resources/read", &read, ResultType::Complete);
    check("ReadResourceResult", &v);

    for (method, def, body) in [
        ("prompts/list", "ListPromptsResult", json!({"prompts": []})),
        (
            "resources/list",
            "ListResourcesResult",
            json!({"resources": []}),
        ),
        (
            "resources/templates/list",
            "ListResourceTemplatesResult",
            json!({"resourceTemplates": []}),
        ),
        (
            "prompts/get",
            "GetPromptResult",
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}]}),
        ),
        (
            "completion/complete",
            "CompleteResult",
            json!({"completion": {"values": []}}),
        ),
    ] {
        check(def, &lowered(method, &body, ResultType::Complete));
    }

    let discover = DiscoverResult {
        meta: None,
        cache_scope: CacheScope::Private,
        capabilities: ServerCapabilities::default(),
        instructions: None,
        result_type: String::new(),
        supported_versions: wire::stateless_versions()
            .iter()
            .map(|v| v.to_string())
            .collect(),
        ttl_ms: 0,
    };
    let v = lowered("server/discover", &discover, ResultType::Complete);
    check("DiscoverResult", &v);
    assert_eq!(v["resultType"], "complete");
    assert_eq!(
        v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "wire-test"
    );
}

#[test]
fn input_required_results_validate() {
    let mut requests = InputRequests::new();
    let elicit: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": "What is your name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    }))
    .unwrap();
    requests.insert(
        "user_name".into(),
        InputRequest::Elicit(ElicitRequest {
            id: None,
            jsonrpc: None,
            method: tag::ElicitationCreate,
            params: elicit,
        }),
    );
    requests.insert(
        "roots".into(),
        InputRequest::ListRoots(ListRootsRequest::default()),
    );
    let sample: InputRequest = serde_json::from_value(json!({
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}], "maxTokens": 100},
    }))
    .unwrap();
    assert_eq!(InputKind::of(&sample), InputKind::Sampling);
    requests.insert("sample".into(), sample);

    let result = wire::input_required(requests, Some("sealed".into())).unwrap();
    for method in ["tools/call", "prompts/get", "resources/read"] {
        let v = lowered(method, &result, ResultType::InputRequired);
        check("InputRequiredResult", &v);
        assert_eq!(v["resultType"], "input_required");
        assert!(v.get("ttlMs").is_none());
    }
    let only_state = wire::input_required(InputRequests::new(), Some("s".into())).unwrap();
    check(
        "InputRequiredResult",
        &lowered("tools/call", &only_state, ResultType::InputRequired),
    );
}

#[test]
fn errors_validate() {
    let params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": "v999.0.0",
        "io.modelcontextprotocol/clientCapabilities": {},
    }});
    let e = RequestMeta::lift(Some(&params), &[ProtocolVersion::V2026_07_28]).unwrap_err();
    let body = json!({"jsonrpc": "2.0", "id": 3, "error": e.to_error()});
    check("UnsupportedProtocolVersionError", &body);
    check("JSONRPCErrorResponse", &body);

    let missing = wire::missing_capability(&InputKind::Sampling.required_capabilities());
    let body = json!({"jsonrpc": "2.0", "id": "x", "error": missing});
    check("MissingRequiredClientCapabilityError", &body);

    let e = MetaError::MissingClientCapabilities.to_error();
    check(
        "JSONRPCErrorResponse",
        &json!({"jsonrpc": "2.0", "id": 4, "error": e}),
    );
}

#[test]
fn method_lists_agree_with_the_schema() {
    let schema = common::schema(REV);
    let rev = ProtocolVersion::V2026_07_28;
    for m in methods::for_revision(rev) {
        if !m.sender.client() {
            continue;
        }
        if let Some(result) = m.result_type {
            let def = common::definition(&schema, common::schema_name(result))
                .unwrap_or_else(|| panic!("{result} in the schema"));
            let required: Vec<&str> = def["required"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            assert_eq!(
                required.contains(&"ttlMs"),
                wire::is_cacheable(m.name, rev),
                "{} ({result})",
                m.name
            );
        }
        let params = common::definition(&schema, common::schema_name(m.params_type));
        let takes_input = params.is_some_and(|p| p["properties"].get("inputResponses").is_some());
        assert_eq!(
            takes_input,
            wire::supports_input_required(m.name, rev),
            "{}",
            m.name
        );
    }
}

#[test]
fn lifts_a_schema_valid_envelope() {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {"form": {}}, "roots": {}},
        "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1.0.0"},
        "io.modelcontextprotocol/logLevel": "debug",
        "progressToken": 9,
    });
    check("RequestMetaObject", &meta);
    let lifted = RequestMeta::lift(
        Some(&json!({"_meta": meta})),
        &[ProtocolVersion::V2026_07_28],
    )
    .unwrap();
    for kind in [
        InputKind::Elicitation,
        InputKind::Sampling,
        InputKind::Roots,
    ] {
        assert!(kind.declared_by(&lifted.client_capabilities), "{kind:?}");
    }
    assert!(lifted.other.is_empty());
}
