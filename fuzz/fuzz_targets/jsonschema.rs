#![no_main]

//! Schemas come from peers (a client compiles the output schemas a server lists), so compiling
//! any JSON document, and validating with what compiled, must neither panic nor hang. The
//! input is split at the first NUL: a schema, then an instance (the schema itself and a few
//! fixed instances are checked too). A string schema is read as a `pattern`, which reaches the
//! ECMA-262 translation with arbitrary text.

use libfuzzer_sys::fuzz_target;
use mcp_jsonschema::Validator;
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let (schema, instance) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let schema = match serde_json::from_slice::<Value>(schema) {
        Ok(Value::String(pattern)) => json!({"type": "string", "pattern": pattern}),
        Ok(schema) => schema,
        Err(_) => match std::str::from_utf8(schema) {
            Ok(pattern) => json!({"patternProperties": {pattern: {"type": "integer"}}}),
            Err(_) => return,
        },
    };
    let Ok(validator) = Validator::new(&schema) else {
        return;
    };
    let mut instances = vec![
        schema.clone(),
        Value::Null,
        json!("text"),
        json!(""),
        json!(1.5),
        json!(-3),
        json!([1, "a", [null], {"k": 2}]),
        json!({"a": 1, "b": "x", "c": [true, false], "d": {"e": null}}),
    ];
    if let Some(Ok(instance)) = instance.map(serde_json::from_slice::<Value>) {
        instances.push(instance);
    }
    for instance in &instances {
        let valid = validator.is_valid(instance);
        let errors = validator.errors(instance, 4);
        // A yes has no errors and a no has at least one.
        assert_eq!(valid, errors.is_empty(), "{schema} / {instance}: {errors:?}");
        assert!(errors.len() <= 4);
    }
});
