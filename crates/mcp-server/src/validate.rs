//! JSON Schema checks: tool input, tool output (`structuredContent`) and elicitation answers.

use std::fmt;
use std::sync::Arc;
#[cfg(feature = "validation")]
use std::sync::OnceLock;

use serde_json::Value;

/// How many validation errors one report lists at most.
#[cfg(feature = "validation")]
const MAX_REPORTED_ERRORS: usize = 8;

/// A compiled JSON Schema, cheap to clone.
///
/// Compiling with `mcp-jsonschema` is cheap (no meta-schema is built; a typical tool schema
/// takes microseconds), but schemas the SDK derives from Rust types are still compiled on first
/// use ([`CompiledSchema::deferred`]): most of them are never compiled at all, because their
/// type already enforces everything they say ([`CompiledSchema::needs_check`]), and a server
/// with many tools does no schema work at start-up. Hand-written schemas are compiled (and
/// refused) when the server is built.
///
/// Without the `validation` feature nothing is compiled and every instance passes, so a schema
/// is taken only when nothing needs checking: one derived from a type that enforces all it
/// states, or a hand-written one that states nothing but its object root. Any other is refused
/// with the feature's name.
#[derive(Clone)]
pub(crate) struct CompiledSchema {
    #[cfg_attr(not(feature = "validation"), allow(dead_code))]
    schema: Arc<Value>,
    #[cfg(feature = "validation")]
    validator: Arc<OnceLock<Result<mcp_jsonschema::Validator, String>>>,
    /// Nothing needs checking: the schema was derived from a Rust type and says nothing that
    /// deserializing into (or serializing from) that type does not already enforce (see
    /// [`unenforced_keyword`]), or, without the `validation` feature, it states nothing but its
    /// object root.
    enforced_by_type: bool,
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
    /// Compiles a hand-written object schema (the root must say `"type": "object"`, as the MCP
    /// schema requires for `inputSchema` and `outputSchema`, and for elicitation).
    ///
    /// Without the `validation` feature only a schema that states nothing but its object root
    /// (annotations aside, and an empty `properties` or `required`) is taken: nothing would
    /// check the rest.
    pub(crate) fn object(schema: Value) -> Result<Self, String> {
        require_object_root(&schema)?;
        #[cfg(not(feature = "validation"))]
        if let Some(keyword) = schema.as_object().and_then(|root| {
            root.iter()
                .find(|(k, v)| !is_annotation(k) && *k != "type" && !states_nothing(k, v))
                .map(|(k, _)| k)
        }) {
            return Err(format!(
                "a hand-written schema with `{keyword}` is checked only with mcp-server's \
                 `validation` feature"
            ));
        }
        Self::any(schema)
    }

    /// An object schema derived from a Rust type: the root is checked now, the rest is compiled
    /// when the first instance is checked.
    ///
    /// Without the `validation` feature a schema that states more than the type enforces (see
    /// [`needs_check`](Self::needs_check)) is refused: nothing would check it.
    pub(crate) fn deferred(schema: Value) -> Result<Self, String> {
        require_object_root(&schema)?;
        let unenforced = unenforced_keyword(&schema, cfg!(feature = "validation"));
        #[cfg(not(feature = "validation"))]
        if let Some(keyword) = unenforced {
            return Err(format!(
                "`{keyword}` states a constraint the Rust type does not enforce; it is checked \
                 only with mcp-server's `validation` feature"
            ));
        }
        Ok(Self {
            enforced_by_type: unenforced.is_none(),
            schema: Arc::new(schema),
            #[cfg(feature = "validation")]
            validator: Arc::new(OnceLock::new()),
        })
    }

    /// False when checking an instance against this schema can be left to the Rust type the
    /// schema was derived from: deserializing into it (input) or having been serialized from it
    /// (output) enforces everything the schema says.
    pub(crate) fn needs_check(&self) -> bool {
        !self.enforced_by_type
    }

    /// [`check`](Self::check) when [`needs_check`](Self::needs_check), else `Ok`.
    pub(crate) fn check_if_needed(&self, instance: &Value) -> Result<(), String> {
        if self.needs_check() {
            self.check(instance)
        } else {
            Ok(())
        }
    }

    /// Compiles any schema.
    #[cfg(feature = "validation")]
    fn any(schema: Value) -> Result<Self, String> {
        let validator = mcp_jsonschema::Validator::new(&schema).map_err(|e| e.to_string())?;
        Ok(Self {
            enforced_by_type: false,
            schema: Arc::new(schema),
            validator: Arc::new(OnceLock::from(Ok(validator))),
        })
    }

    /// Takes a schema that states nothing but its object root.
    #[cfg(not(feature = "validation"))]
    fn any(schema: Value) -> Result<Self, String> {
        Ok(Self {
            enforced_by_type: true,
            schema: Arc::new(schema),
        })
    }

    /// Without the `validation` feature every schema the server took is enforced by its Rust
    /// type or states nothing but its root, which the caller has checked.
    #[cfg(not(feature = "validation"))]
    pub(crate) fn check(&self, _instance: &Value) -> Result<(), String> {
        Ok(())
    }

    #[cfg(feature = "validation")]
    fn validator(&self) -> Result<&mcp_jsonschema::Validator, String> {
        self.validator
            .get_or_init(|| {
                mcp_jsonschema::Validator::new(&self.schema).map_err(|e| {
                    tracing::error!(error = %e, "a derived JSON Schema does not compile");
                    e.to_string()
                })
            })
            .as_ref()
            .map_err(|e| format!("the schema does not compile: {e}"))
    }

    /// Checks an instance; on failure returns a readable list of what is wrong, each with the
    /// JSON pointer of the offending value.
    #[cfg(feature = "validation")]
    pub(crate) fn check(&self, instance: &Value) -> Result<(), String> {
        let validator = self.validator()?;
        if validator.is_valid(instance) {
            return Ok(());
        }
        // One more than is reported, to know whether there are more.
        let errors = validator.errors(instance, MAX_REPORTED_ERRORS + 1);
        let more = errors.len() > MAX_REPORTED_ERRORS;
        let messages: Vec<String> = errors
            .iter()
            .take(MAX_REPORTED_ERRORS)
            .map(|error| {
                let path = match error.instance_path() {
                    "" => "/",
                    path => path,
                };
                format!("{path}: {error}")
            })
            .collect();
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

/// The first keyword of a schema derived from a Rust type that deserializing into that type
/// does not enforce, or `None` when it states only types, properties, required fields, enums,
/// nesting and references, plus annotations. Any other keyword (`minimum` on a signed field,
/// `pattern`, `minLength`, `uniqueItems`, ...: constraints a schemars attribute or a
/// hand-written `JsonSchema` impl can add) makes the schema worth checking with a validator.
/// Unknown keywords are taken as constraints; `x-` extensions are annotations.
///
/// A string `format` (`email`, `uri`, `uuid`, `date-time`, ...) counts as a constraint only
/// when `formats_assert`: with the validator, which checks them. Without it a `format` is the
/// annotation JSON Schema 2020-12 makes it by default; the types that write one (`Uuid`,
/// `DateTime`, `Url`) check it when they are deserialized, and an attribute that only adds one
/// (`#[schemars(email)]`) asks for nothing more than an annotation.
fn unenforced_keyword(schema: &Value, formats_assert: bool) -> Option<String> {
    /// A bounded walk: derived schemas are small, and a deep one is simply checked.
    fn walk(schema: &Value, formats_assert: bool, depth: usize) -> Option<String> {
        let nested = |schema: &Value| walk(schema, formats_assert, depth + 1);
        if depth > 32 {
            return Some("(nesting deeper than 32)".to_owned());
        }
        let object = match schema {
            Value::Bool(_) => return None,
            Value::Object(object) => object,
            _ => return Some("(a schema that is not an object)".to_owned()),
        };
        let format = object.get("format").and_then(Value::as_str);
        object.iter().find_map(|(keyword, value)| {
            let enforced = match keyword.as_str() {
                k if is_annotation(k) => true,
                "type" | "required" | "enum" | "const" | "$ref" => true,
                // The numeric formats schemars writes for Rust number types; a string format
                // (`email`, `uri`, ...) may come from an attribute serde does not enforce.
                "format" => !formats_assert || format.is_some_and(numeric_format),
                // Integer bounds schemars states for the width of an integer type, which
                // deserializing into that type enforces.
                "minimum" | "maximum" => integer_bound_of_format(format, keyword, value),
                "properties" | "$defs" | "definitions" => match value.as_object() {
                    Some(map) => return map.values().find_map(nested),
                    None => false,
                },
                "items" | "additionalProperties" => return nested(value),
                "anyOf" | "oneOf" | "allOf" => match value.as_array() {
                    Some(list) => return list.iter().find_map(nested),
                    None => false,
                },
                _ => false,
            };
            (!enforced).then(|| keyword.clone())
        })
    }
    walk(schema, formats_assert, 0)
}

/// An empty `properties` or `required`: it constrains nothing.
#[cfg(not(feature = "validation"))]
fn states_nothing(keyword: &str, value: &Value) -> bool {
    match (keyword, value) {
        ("properties", Value::Object(map)) => map.is_empty(),
        ("required", Value::Array(list)) => list.is_empty(),
        _ => false,
    }
}

/// Keywords that describe and constrain nothing (`x-` extensions among them).
fn is_annotation(keyword: &str) -> bool {
    matches!(
        keyword,
        "$schema"
            | "$id"
            | "$comment"
            | "title"
            | "description"
            | "default"
            | "examples"
            | "deprecated"
            | "readOnly"
            | "writeOnly"
    ) || keyword.starts_with("x-")
}

fn numeric_format(format: &str) -> bool {
    matches!(format, "float" | "double" | "int" | "uint") || integer_bounds(format).is_some()
}

/// The range of the integer type a schemars `format` names.
fn integer_bounds(format: &str) -> Option<(i128, i128)> {
    Some(match format {
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        "uint64" => (0, u64::MAX.into()),
        "uint128" => (0, i128::MAX),
        "uint" => (0, u64::MAX.into()),
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// True when `value` is exactly the `minimum`/`maximum` of the integer type `format` names
/// (schemars writes `"format": "uint8", "minimum": 0, "maximum": 255` for a `u8`).
fn integer_bound_of_format(format: Option<&str>, keyword: &str, value: &Value) -> bool {
    let Some((min, max)) = format.and_then(integer_bounds) else {
        return false;
    };
    let bound = if keyword == "minimum" { min } else { max };
    match value {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
            .is_some_and(|v| v == bound),
        _ => false,
    }
}

#[cfg(all(test, feature = "validation"))]
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

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Slow,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Plain {
        text: String,
        count: u32,
        small: u8,
        offset: i64,
        ratio: Option<f64>,
        mode: Mode,
        tags: Vec<String>,
        nested: Option<Box<Plain>>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Constrained {
        #[schemars(range(min = 1, max = 10))]
        n: i32,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Patterned {
        #[schemars(length(min = 1), regex(pattern = "^[a-z]+$"))]
        name: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Email {
        #[schemars(email)]
        address: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Unique {
        set: std::collections::BTreeSet<String>,
    }

    #[test]
    fn derived_schemas_without_constraints_are_left_to_the_type() {
        let derived = |s: Value| CompiledSchema::deferred(s).unwrap().needs_check();
        assert!(!derived(crate::schema::input_schema_for::<Plain>()));
        assert!(derived(crate::schema::input_schema_for::<Constrained>()));
        assert!(derived(crate::schema::input_schema_for::<Patterned>()));
        assert!(derived(crate::schema::input_schema_for::<Unique>()));
        assert!(derived(crate::schema::input_schema_for::<Email>()));
        // Unknown keywords count as constraints; `x-` extensions do not.
        assert!(derived(json!({"type": "object", "frobnicate": 1})));
        assert!(!derived(json!({"type": "object", "x-mcp-header": "A"})));
        // A `minimum` that is not the integer type's own bound is a constraint.
        assert!(derived(json!({"type": "object", "properties": {
            "n": {"type": "integer", "format": "uint32", "minimum": 1}
        }})));
        // Hand-written schemas are always checked.
        assert!(
            CompiledSchema::object(json!({"type": "object"}))
                .unwrap()
                .needs_check()
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

#[cfg(all(test, not(feature = "validation")))]
mod without_validation {
    use super::*;
    use serde_json::json;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Plain {
        count: u32,
        tags: Vec<String>,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Constrained {
        #[schemars(range(min = 1, max = 10))]
        n: i32,
    }

    #[test]
    fn a_schema_the_type_enforces_is_taken_and_needs_no_check() {
        let s = CompiledSchema::deferred(crate::schema::input_schema_for::<Plain>()).unwrap();
        assert!(!s.needs_check());
        assert!(CompiledSchema::deferred(json!({"type": "string"})).is_err());
    }

    #[test]
    fn constraints_nothing_would_check_are_refused_with_the_feature_named() {
        let err =
            CompiledSchema::deferred(crate::schema::input_schema_for::<Constrained>()).unwrap_err();
        assert!(
            err.contains("`maximum`") && err.contains("`validation`"),
            "{err}"
        );
        let err = CompiledSchema::deferred(json!({"type": "object", "properties": {
            "name": {"type": "string", "pattern": "^a"}
        }}))
        .unwrap_err();
        assert!(err.contains("`pattern`"), "{err}");
    }

    /// A string `format` is an annotation without the validator (JSON Schema 2020-12's
    /// default): a `Uuid` or `DateTime` argument, whose type checks it, is not refused.
    #[test]
    fn string_formats_are_annotations() {
        let s = CompiledSchema::deferred(json!({"type": "object", "properties": {
            "id": {"type": "string", "format": "uuid"},
            "at": {"type": "string", "format": "date-time"}
        }}))
        .unwrap();
        assert!(!s.needs_check());
    }

    #[test]
    fn hand_written_schemas_are_taken_only_when_they_state_nothing_but_the_root() {
        let bare = json!({"type": "object", "description": "no arguments", "x-note": 1});
        assert!(!CompiledSchema::object(bare).unwrap().needs_check());
        let err = CompiledSchema::object(json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}}
        }))
        .unwrap_err();
        assert!(
            err.contains("`properties`") && err.contains("`validation`"),
            "{err}"
        );
        assert!(CompiledSchema::object(json!({"type": "string"})).is_err());
    }
}
