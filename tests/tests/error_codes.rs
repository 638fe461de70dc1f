//! The error codes are written down in three crates (`mcp-types` generates them from the
//! schemas; `mcp-jsonrpc` and `mcp-server` cannot depend on the generated crate or predate it).
//! They must never drift apart.

#[test]
fn every_crate_uses_the_schema_codes() {
    use mcp_types::error_codes as schema;

    let jsonrpc = [
        (mcp_jsonrpc::codes::PARSE_ERROR, schema::PARSE_ERROR),
        (mcp_jsonrpc::codes::INVALID_REQUEST, schema::INVALID_REQUEST),
        (
            mcp_jsonrpc::codes::METHOD_NOT_FOUND,
            schema::METHOD_NOT_FOUND,
        ),
        (mcp_jsonrpc::codes::INVALID_PARAMS, schema::INVALID_PARAMS),
        (mcp_jsonrpc::codes::INTERNAL_ERROR, schema::INTERNAL_ERROR),
        (
            mcp_jsonrpc::codes::RESOURCE_NOT_FOUND,
            schema::RESOURCE_NOT_FOUND,
        ),
        (
            mcp_jsonrpc::codes::URL_ELICITATION_REQUIRED,
            schema::URL_ELICITATION_REQUIRED,
        ),
        (mcp_jsonrpc::codes::HEADER_MISMATCH, schema::HEADER_MISMATCH),
        (
            mcp_jsonrpc::codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
            schema::MISSING_REQUIRED_CLIENT_CAPABILITY,
        ),
        (
            mcp_jsonrpc::codes::UNSUPPORTED_PROTOCOL_VERSION,
            schema::UNSUPPORTED_PROTOCOL_VERSION,
        ),
    ];
    for (ours, expected) in jsonrpc {
        assert_eq!(ours, expected);
    }

    let server = [
        (mcp_server::codes::PARSE_ERROR, schema::PARSE_ERROR),
        (mcp_server::codes::INVALID_REQUEST, schema::INVALID_REQUEST),
        (
            mcp_server::codes::METHOD_NOT_FOUND,
            schema::METHOD_NOT_FOUND,
        ),
        (mcp_server::codes::INVALID_PARAMS, schema::INVALID_PARAMS),
        (mcp_server::codes::INTERNAL_ERROR, schema::INTERNAL_ERROR),
        (
            mcp_server::codes::MISSING_CAPABILITY,
            schema::MISSING_REQUIRED_CLIENT_CAPABILITY,
        ),
        (
            mcp_server::codes::URL_ELICITATION_REQUIRED,
            schema::URL_ELICITATION_REQUIRED,
        ),
    ];
    for (ours, expected) in server {
        assert_eq!(i64::from(ours), expected);
    }
}
