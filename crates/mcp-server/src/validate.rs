//! JSON Schema checks: tool input, tool output (`structuredContent`) and elicitation answers.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// How many validation errors one report lists at most.
const MAX_REPORTED_ERRORS: usize = 8;

/// A compiled JSON Schema, cheap to clone.
///
/// Compiling validates the schema against its meta-schema, and building the meta-schema's own
/// validator costs a few milliseconds, most of a small server's cold start. Schemas the SDK
/// derives from Rust types are therefore compiled on first use ([`CompiledSchema::deferred`]),
/// while hand-written ones are compiled (and refused) when the server is built.
#[derive(Clone)]
pub(crate) struct CompiledSchema {
    schema: Arc<Value>,
    validator: Arc<OnceLock<Result<jsonschema::Validator, String>>>,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

fn require_object_root(schema: &Value) -> Result<(), String> {
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        _ => Err("the root of the schema must have \"type\": \"object\"".to_owned()),
    }
}

impl CompiledSchema {
    /// Compiles an object schema (the root must say `"type": "object"`, as the MCP schema
    /// requires for `inputSchema` and `outputSchema`).
    pub(crate) fn object(schema: Value) -> Result<Self, String> {
        require_object_root(&schema)?;
        Self::any(schema)
    }

    /// An object schema derived from a Rust type: the root is checked now, the rest is compiled
    /// when the first instance is checked.
    pub(crate) fn deferred(schema: Value) -> Result<Self, String> {
        require_object_root(&schema)?;
        Ok(Self {
            schema: Arc::new(schema),
            validator: Arc::new(OnceLock::new()),
        })
    }

    /// Compiles any schema.
    pub(crate) fn any(schema: Value) -> Result<Self, String> {
        let validator = jsonschema::validator_for(&schema).map_err(|e| e.to_string())?;
        Ok(Self {
            schema: Arc::new(schema),
            validator: Arc::new(OnceLock::from(Ok(validator))),
        })
    }

    fn validator(&self) -> Result<&jsonschema::Validator, String> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(&self.schema).map_err(|e| {
                    tracing::error!(error = %e, "a derived JSON Schema does not compile");
                    e.to_string()
                })
            })
            .as_ref()
            .map_err(|e| format!("the schema does not compile: {e}"))
    }

    /// Checks an instance; on failure returns a readable list of what is wrong, each with the
    /// JSON pointer of the offending value.
    pub(crate) fn check(&self, instance: &Value) -> Result<(), String> {
        let validator = self.validator()?;
        if validator.is_valid(instance) {
            return Ok(());
        }
        let mut messages = Vec::new();
        let mut more = false;
        for error in validator.iter_errors(instance) {
            if messages.len() == MAX_REPORTED_ERRORS {
                more = true;
                break;
            }
            let path = error.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_owned()
            } else {
                path
            };
            messages.push(format!("{path}: {error}"));
        }
        if messages.is_empty() {
            return Ok(());
        }
        let mut text = messages.join("; ");
        if more {
            text.push_str("; ...");
        }
        Err(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn object_root_is_required() {
        assert!(CompiledSchema::object(json!({"type": "string"})).is_err());
        assert!(CompiledSchema::object(json!({"properties": {}})).is_err());
        assert!(CompiledSchema::object(json!({"type": "object"})).is_ok());
    }

    #[test]
    fn deferred_schemas_compile_on_first_use() {
        let s = CompiledSchema::deferred(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}}
        }))
        .unwrap();
        assert!(s.validator.get().is_none(), "nothing compiled yet");
        assert!(s.check(&json!({"n": 1})).is_ok());
        assert!(s.check(&json!({"n": "x"})).unwrap_err().contains("/n"));
        assert!(CompiledSchema::deferred(json!({"type": "string"})).is_err());
        let broken = CompiledSchema::deferred(json!({"type": "object", "minimum": "x"})).unwrap();
        assert!(
            broken
                .check(&json!({}))
                .unwrap_err()
                .contains("does not compile")
        );
    }

    #[test]
    fn invalid_schema_is_an_error() {
        assert!(CompiledSchema::any(json!({"type": 12})).is_err());
    }

    #[test]
    fn errors_name_the_path() {
        let s = CompiledSchema::object(json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        }))
        .unwrap();
        assert!(s.check(&json!({"text": "hi"})).is_ok());
        let err = s.check(&json!({"text": 5})).unwrap_err();
        assert!(err.contains("/text"), "{err}");
        let err = s.check(&json!({})).unwrap_err();
        assert!(err.contains("text"), "{err}");
    }
}
