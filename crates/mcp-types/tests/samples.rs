//! For every request, notification and result type of every revision, hand-written samples
//! (`tests/samples/<revision>.json`) deserialize into the revision's type, serialize back to
//! the same JSON, and validate against that revision's schema. The unified model must
//! round-trip them as well.

use crate::common;

use std::collections::BTreeMap;

use common::*;
use serde_json::{Value, json};

/// The samples of `rev`: its own file's, over the ones it inherits.
fn samples(rev: &str) -> BTreeMap<String, Vec<Value>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/samples")
        .join(format!("{rev}.json"));
    let file = read_json(&path);
    let mut out = match file.get("inherit").and_then(Value::as_str) {
        Some(parent) => samples(parent),
        None => BTreeMap::new(),
    };
    let types = file
        .get("types")
        .and_then(Value::as_object)
        .expect("`types` object");
    for (name, list) in types {
        out.insert(
            name.clone(),
            list.as_array().expect("a list of samples").clone(),
        );
    }
    if file.get("envelope").and_then(Value::as_bool) == Some(true) {
        // Inherited messages gain the JSON-RPC envelope fields this revision's types declare.
        let schema = schema(rev);
        for (name, list) in out.iter_mut() {
            let Some(props) =
                definition(&schema, schema_name(name)).and_then(|d| d.get("properties"))
            else {
                continue;
            };
            for sample in list.iter_mut() {
                let Some(obj) = sample.as_object_mut() else {
                    continue;
                };
                if props.get("jsonrpc").is_some() && !obj.contains_key("jsonrpc") {
                    obj.insert("jsonrpc".into(), json!("2.0"));
                }
                if props.get("id").is_some() && !obj.contains_key("id") {
                    obj.insert("id".into(), json!(1));
                }
            }
        }
    }
    out
}

fn check_revision(rev: &str) {
    let schema = schema(rev);
    let samples = samples(rev);
    let mut failures = Vec::new();
    let mut required: Vec<&str> = Vec::new();
    for (method, message, result) in method_types(rev) {
        required.push(message);
        if let Some(r) = result {
            required.push(r);
        }
        let _ = method;
    }
    required.sort();
    required.dedup();
    for name in &required {
        if samples.get(*name).is_none_or(Vec::is_empty) {
            failures.push(format!("{rev}: no sample for {name}"));
        }
    }
    for (name, list) in &samples {
        let Some(_) = definition(&schema, schema_name(name)) else {
            failures.push(format!("{rev}: sample type {name} is not in the schema"));
            continue;
        };
        let validator = validator(&schema, schema_name(name));
        for (i, sample) in list.iter().enumerate() {
            let errs = errors(&validator, sample);
            if !errs.is_empty() {
                failures.push(format!(
                    "{rev} {name}[{i}]: schema rejects the sample: {errs:?}"
                ));
            }
            match roundtrip(rev, name, sample) {
                None => failures.push(format!("{rev} {name}: no generated type")),
                Some(Err(e)) => failures.push(format!("{rev} {name}[{i}]: {e}")),
                Some(Ok(back)) if &back != sample => failures.push(format!(
                    "{rev} {name}[{i}]: round trip differs:\n  in:  {sample}\n  out: {back}"
                )),
                Some(Ok(_)) => {}
            }
            match mcp_types::__roundtrip(name, sample) {
                None => failures.push(format!("{rev} {name}: not in the unified model")),
                Some(Err(e)) => failures.push(format!("{rev} {name}[{i}] (model): {e}")),
                Some(Ok(back)) if &back != sample => failures.push(format!(
                    "{rev} {name}[{i}] (model): round trip differs:\n  in:  {sample}\n  out: {back}"
                )),
                Some(Ok(_)) => {}
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn samples_2024_11_05() {
    check_revision("2024-11-05");
}

#[test]
fn samples_2025_03_26() {
    check_revision("2025-03-26");
}

#[test]
fn samples_2025_06_18() {
    check_revision("2025-06-18");
}

#[test]
fn samples_2025_11_25() {
    check_revision("2025-11-25");
}

#[test]
fn samples_2026_07_28() {
    check_revision("2026-07-28");
}

/// A sample that breaks its schema must be rejected by the generated type too (the
/// generated types are not just "accept anything").
#[test]
fn wrong_shapes_are_rejected() {
    let bad = [
        (
            "2024-11-05",
            "CallToolRequest",
            json!({"method": "tools/list", "params": {"name": "x"}}),
        ),
        (
            "2024-11-05",
            "CallToolResult",
            json!({"content": [{"type": "audio", "data": "", "mimeType": "a"}]}),
        ),
        (
            "2025-06-18",
            "CallToolResult",
            json!({"content": [{"type": "video", "data": ""}]}),
        ),
        ("2025-06-18", "ElicitResult", json!({"action": "maybe"})),
        (
            "2026-07-28",
            "CallToolRequest",
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {"name": "x", "_meta": {}}}),
        ),
        (
            "2026-07-28",
            "ReadResourceResult",
            json!({"resultType": "complete", "contents": [{"uri": "a"}], "cacheScope": "public", "ttlMs": 1}),
        ),
    ];
    for (rev, name, value) in bad {
        let result = roundtrip(rev, name, &value).expect("type exists");
        assert!(result.is_err(), "{rev} {name} accepted {value}");
    }
}
