//! Shared helpers: finding the official schemas, validating against one definition, and
//! dispatching to each revision module's round-trip function.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::Value;

pub const REVISIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// `$MCP_SCHEMA_DIR`, else `../shared/schema` beside the workspace. A missing directory fails
/// the test: these tests must never pass by skipping.
pub fn schema_dir() -> PathBuf {
    let dir = match std::env::var_os("MCP_SCHEMA_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/schema"),
    };
    assert!(
        dir.join("2026-07-28/schema.json").is_file(),
        "official schemas not found in {} (set MCP_SCHEMA_DIR)",
        dir.display()
    );
    dir
}

pub fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn schema(rev: &str) -> Value {
    read_json(&schema_dir().join(rev).join("schema.json"))
}

fn defs_key(schema: &Value) -> &'static str {
    if schema.get("$defs").is_some() {
        "$defs"
    } else {
        "definitions"
    }
}

/// The schema's definition of `name` (the raw schema name, before Rust renames).
pub fn definition<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    schema.get(defs_key(schema))?.get(name)
}

/// The Rust type name the generator gives a schema definition.
pub fn rust_name(schema_name: &str) -> &str {
    match schema_name {
        "Result" => "EmptyResult",
        "Error" => "RpcError",
        other => other,
    }
}

/// The schema definition name of a Rust type name.
pub fn schema_name(rust_name: &str) -> &str {
    match rust_name {
        "EmptyResult" => "Result",
        "RpcError" => "Error",
        other => other,
    }
}

/// A validator for one definition of a revision's schema.
pub fn validator(schema: &Value, name: &str) -> jsonschema::Validator {
    let mut root = schema.clone();
    let key = defs_key(schema);
    if let Value::Object(map) = &mut root {
        map.insert("$ref".into(), Value::String(format!("#/{key}/{name}")));
    }
    jsonschema::validator_for(&root).unwrap_or_else(|e| panic!("schema for {name}: {e}"))
}

pub fn errors(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// Deserializes `value` as the type `name` of revision `rev` and serializes it again.
pub fn roundtrip(rev: &str, name: &str, value: &Value) -> Option<Result<Value, serde_json::Error>> {
    match rev {
        "2024-11-05" => mcp_types::v2024_11_05::__roundtrip(name, value),
        "2025-03-26" => mcp_types::v2025_03_26::__roundtrip(name, value),
        "2025-06-18" => mcp_types::v2025_06_18::__roundtrip(name, value),
        "2025-11-25" => mcp_types::v2025_11_25::__roundtrip(name, value),
        "2026-07-28" => mcp_types::v2026_07_28::__roundtrip(name, value),
        other => panic!("unknown revision {other}"),
    }
}

/// `(method, message type, result type)` of every method of `rev`.
pub fn method_types(rev: &str) -> &'static [(&'static str, &'static str, Option<&'static str>)] {
    match rev {
        "2024-11-05" => mcp_types::v2024_11_05::__METHOD_TYPES,
        "2025-03-26" => mcp_types::v2025_03_26::__METHOD_TYPES,
        "2025-06-18" => mcp_types::v2025_06_18::__METHOD_TYPES,
        "2025-11-25" => mcp_types::v2025_11_25::__METHOD_TYPES,
        "2026-07-28" => mcp_types::v2026_07_28::__METHOD_TYPES,
        other => panic!("unknown revision {other}"),
    }
}
