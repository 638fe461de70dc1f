//! `x-mcp-header` annotations (2026-07-28, SEP-2243): tool parameters whose values a Streamable
//! HTTP client mirrors into `Mcp-Param-<Name>` request headers.
//!
//! A tool's `inputSchema` marks a parameter by giving its property schema an `x-mcp-header`
//! string. [`param_headers`] checks every annotation of a schema against the specification's
//! rules and returns where each mirrored value lives; [`header_text`] turns a value into the
//! header's text before transport encoding (plain, or the `=?base64?...?=` form for values that
//! are not header-safe, which the HTTP transport applies).
//!
//! The rules: the name is non-empty and made of HTTP token characters only (no space, colon,
//! control or non-ASCII character), unique case-insensitively within the schema, on a property
//! whose `type` is `string`, `integer` or `boolean` (`number` is not allowed), and reachable from
//! the root through `properties` keys only (never through `items`, composition, conditional or
//! `$ref` keywords). One violation makes the whole tool definition invalid.
//!
//! ```
//! use mcp_types::x_mcp_header::{header_text, param_headers};
//! use serde_json::json;
//!
//! let schema = json!({
//!     "type": "object",
//!     "properties": {
//!         "region": {"type": "string", "x-mcp-header": "Region"},
//!         "query": {"type": "string"}
//!     }
//! });
//! let headers = param_headers(schema.as_object().unwrap()).unwrap();
//! assert_eq!(headers[0].header_name(), "Mcp-Param-Region");
//! let arguments = json!({"region": "us-west1", "query": "SELECT 1"});
//! let value = headers[0].value_in(arguments.as_object().unwrap()).unwrap();
//! assert_eq!(header_text(value).as_deref(), Some("us-west1"));
//!
//! let bad = json!({"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}});
//! assert!(param_headers(bad.as_object().unwrap()).is_err());
//! ```

use std::collections::HashSet;
use std::fmt;

use serde_json::{Map, Value};

/// The schema keyword that designates a mirrored parameter.
pub const ANNOTATION: &str = "x-mcp-header";

/// The prefix of a mirrored parameter's header name.
pub const HEADER_PREFIX: &str = "Mcp-Param-";

/// Keywords whose value is one schema.
const SCHEMA_KEYWORDS: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "additionalItems",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];

/// Keywords whose value is an array of schemas.
const SCHEMA_ARRAY_KEYWORDS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];

/// Keywords whose value maps names to schemas (`properties` is handled apart).
const SCHEMA_MAP_KEYWORDS: &[&str] = &[
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// One parameter a tool designates for an `Mcp-Param-*` header.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParamHeader {
    /// The annotation's value: the part after `Mcp-Param-`.
    pub name: String,
    /// The chain of `properties` keys from the schema root to the parameter.
    pub path: Vec<String>,
}

impl ParamHeader {
    /// The full header name, `Mcp-Param-<name>`.
    pub fn header_name(&self) -> String {
        format!("{HEADER_PREFIX}{}", self.name)
    }

    /// The value at this parameter's path in a call's `arguments`; `None` when it is absent or
    /// `null` (the header is then omitted).
    pub fn value_in<'a>(&self, arguments: &'a Map<String, Value>) -> Option<&'a Value> {
        let (last, parents) = self.path.split_last()?;
        let mut object = arguments;
        for key in parents {
            object = object.get(key)?.as_object()?;
        }
        object.get(last).filter(|value| !value.is_null())
    }
}

/// Why a tool's `x-mcp-header` annotations are invalid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidAnnotation {
    /// Where the offending annotation sits, as a JSON pointer into the input schema.
    pub pointer: String,
    /// Which rule it breaks.
    pub reason: InvalidReason,
}

/// The rule an `x-mcp-header` annotation breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidReason {
    /// The annotation is not a string.
    NotAString,
    /// The annotation is the empty string.
    Empty,
    /// The name has a character outside the HTTP token set (space, colon, control,
    /// non-ASCII, ...).
    InvalidCharacter(char),
    /// Another annotation of the schema has the same name, ignoring case.
    Duplicate(String),
    /// The property's `type` is not `string`, `integer` or `boolean`.
    NotPrimitive,
    /// The annotation is not reachable from the root through `properties` keys only.
    NotStaticallyReachable,
}

impl fmt::Display for InvalidAnnotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "/"
        } else {
            &self.pointer
        };
        match &self.reason {
            InvalidReason::NotAString => write!(f, "the {ANNOTATION} at {at} is not a string"),
            InvalidReason::Empty => write!(f, "the {ANNOTATION} at {at} is empty"),
            InvalidReason::InvalidCharacter(c) => write!(
                f,
                "the {ANNOTATION} at {at} has {c:?}, which is not an HTTP token character"
            ),
            InvalidReason::Duplicate(name) => write!(
                f,
                "the {ANNOTATION} at {at} repeats the header name {name:?} (names are compared case-insensitively)"
            ),
            InvalidReason::NotPrimitive => write!(
                f,
                "the {ANNOTATION} at {at} is on a property whose type is not string, integer or boolean"
            ),
            InvalidReason::NotStaticallyReachable => write!(
                f,
                "the {ANNOTATION} at {at} is not reachable through `properties` keys alone"
            ),
        }
    }
}

impl std::error::Error for InvalidAnnotation {}

/// Whether `c` is an HTTP token character (`tchar`, RFC 9110 section 5.6.2).
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Whether the property schema's `type` allows only header-safe primitives.
fn is_primitive(schema: &Map<String, Value>) -> bool {
    const ALLOWED: [&str; 3] = ["string", "integer", "boolean"];
    match schema.get("type") {
        Some(Value::String(ty)) => ALLOWED.contains(&ty.as_str()),
        // `["string", "null"]`: a nullable primitive; null omits the header.
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            names.len() == types.len()
                && names.iter().any(|ty| ALLOWED.contains(ty))
                && names.iter().all(|ty| ALLOWED.contains(ty) || *ty == "null")
        }
        _ => false,
    }
}

fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

struct Walk {
    found: Vec<ParamHeader>,
    seen: HashSet<String>,
}

impl Walk {
    /// Visits one schema. `path` is `Some` while the schema is reachable from the root through
    /// `properties` keys alone.
    fn schema(
        &mut self,
        schema: &Value,
        pointer: &str,
        path: Option<&[String]>,
    ) -> Result<(), InvalidAnnotation> {
        match schema {
            Value::Object(object) => self.object(object, pointer, path),
            _ => Ok(()),
        }
    }

    fn object(
        &mut self,
        object: &Map<String, Value>,
        pointer: &str,
        path: Option<&[String]>,
    ) -> Result<(), InvalidAnnotation> {
        if let Some(annotation) = object.get(ANNOTATION) {
            self.annotation(object, annotation, pointer, path)?;
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
            for (name, property) in properties {
                let child = format!("{pointer}/properties/{}", escape_pointer(name));
                let child_path = path.map(|p| {
                    let mut p = p.to_vec();
                    p.push(name.clone());
                    p
                });
                self.schema(property, &child, child_path.as_deref())?;
            }
        }
        for keyword in SCHEMA_KEYWORDS {
            if let Some(sub) = object.get(*keyword).filter(|v| v.is_object()) {
                self.schema(sub, &format!("{pointer}/{keyword}"), None)?;
            }
        }
        for keyword in SCHEMA_ARRAY_KEYWORDS {
            if let Some(Value::Array(items)) = object.get(*keyword) {
                for (index, sub) in items.iter().enumerate() {
                    self.schema(sub, &format!("{pointer}/{keyword}/{index}"), None)?;
                }
            }
        }
        for keyword in SCHEMA_MAP_KEYWORDS {
            if let Some(Value::Object(map)) = object.get(*keyword) {
                for (name, sub) in map {
                    let child = format!("{pointer}/{keyword}/{}", escape_pointer(name));
                    self.schema(sub, &child, None)?;
                }
            }
        }
        Ok(())
    }

    fn annotation(
        &mut self,
        property: &Map<String, Value>,
        annotation: &Value,
        pointer: &str,
        path: Option<&[String]>,
    ) -> Result<(), InvalidAnnotation> {
        let fail = |reason| InvalidAnnotation {
            pointer: pointer.to_owned(),
            reason,
        };
        // The root is the arguments object itself, never a primitive.
        let path = match path {
            Some(path) if !path.is_empty() => path,
            _ => return Err(fail(InvalidReason::NotStaticallyReachable)),
        };
        let Value::String(name) = annotation else {
            return Err(fail(InvalidReason::NotAString));
        };
        if name.is_empty() {
            return Err(fail(InvalidReason::Empty));
        }
        if let Some(c) = name.chars().find(|c| !is_tchar(*c)) {
            return Err(fail(InvalidReason::InvalidCharacter(c)));
        }
        if !is_primitive(property) {
            return Err(fail(InvalidReason::NotPrimitive));
        }
        if !self.seen.insert(name.to_ascii_lowercase()) {
            return Err(fail(InvalidReason::Duplicate(name.clone())));
        }
        self.found.push(ParamHeader {
            name: name.clone(),
            path: path.to_vec(),
        });
        Ok(())
    }
}

/// The parameters `input_schema` designates for `Mcp-Param-*` headers, in schema order, or the
/// first annotation that breaks the rules (the tool must then be excluded from `tools/list`).
pub fn param_headers(
    input_schema: &Map<String, Value>,
) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
    let mut walk = Walk {
        found: Vec::new(),
        seen: HashSet::new(),
    };
    walk.object(input_schema, "", Some(&[]))?;
    Ok(walk.found)
}

/// The text of a mirrored value: strings as they are, integers in decimal, booleans as `true`
/// or `false`. `None` for `null`, objects and arrays (no header is sent for them). Non-integer
/// numbers keep their JSON spelling.
pub fn header_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Number(number) => Some(number.to_string()),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(schema: Value) -> Result<Vec<ParamHeader>, InvalidAnnotation> {
        param_headers(schema.as_object().expect("an object schema"))
    }

    fn reason(schema: Value) -> InvalidReason {
        check(schema)
            .expect_err("the schema should be invalid")
            .reason
    }

    fn one(name: &str, property: Value) -> Value {
        json!({"type": "object", "properties": {name: property}})
    }

    #[test]
    fn finds_nested_and_top_level_annotations() {
        let headers = check(json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "opts": {"type": "object", "properties": {
                    "verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"}
                }},
                "x-mcp-header": {"type": "integer"},
                "note": {"type": "string", "default": {"x-mcp-header": "not an annotation"}}
            }
        }))
        .unwrap();
        let names: HashSet<(&str, Vec<&str>)> = headers
            .iter()
            .map(|h| (h.name.as_str(), h.path.iter().map(String::as_str).collect()))
            .collect();
        assert!(names.contains(&("Region", vec!["region"])), "{headers:?}");
        assert!(
            names.contains(&("Verbose", vec!["opts", "verbose"])),
            "{headers:?}"
        );
        assert_eq!(headers.len(), 2);
        let args = json!({"opts": {"verbose": false}, "region": null});
        let args = args.as_object().unwrap();
        let verbose = headers.iter().find(|h| h.name == "Verbose").unwrap();
        assert_eq!(verbose.value_in(args), Some(&json!(false)));
        let region = headers.iter().find(|h| h.name == "Region").unwrap();
        assert_eq!(region.value_in(args), None, "null omits the header");
        assert_eq!(region.value_in(&Map::new()), None);
    }

    #[test]
    fn refuses_each_broken_rule() {
        assert_eq!(
            reason(one("v", json!({"type": "string", "x-mcp-header": ""}))),
            InvalidReason::Empty
        );
        assert_eq!(
            reason(one("v", json!({"type": "string", "x-mcp-header": 3}))),
            InvalidReason::NotAString
        );
        for ty in ["object", "array", "null", "number"] {
            assert_eq!(
                reason(one("v", json!({"type": ty, "x-mcp-header": "V"}))),
                InvalidReason::NotPrimitive,
                "{ty}"
            );
        }
        assert_eq!(
            reason(one("v", json!({"x-mcp-header": "V"}))),
            InvalidReason::NotPrimitive
        );
        assert_eq!(
            reason(one(
                "v",
                json!({"type": ["string", "object"], "x-mcp-header": "V"})
            )),
            InvalidReason::NotPrimitive
        );
        for (name, bad) in [
            ("My Region", ' '),
            ("Region:Primary", ':'),
            ("Région", 'é'),
            ("Region\t1", '\t'),
        ] {
            assert_eq!(
                reason(one("v", json!({"type": "string", "x-mcp-header": name}))),
                InvalidReason::InvalidCharacter(bad)
            );
        }
        assert_eq!(
            reason(json!({"type": "object", "properties": {
                "a": {"type": "string", "x-mcp-header": "MyField"},
                "b": {"type": "string", "x-mcp-header": "myfield"}
            }})),
            InvalidReason::Duplicate("myfield".into())
        );
        for schema in [
            json!({"type": "object", "properties": {"list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}}}}),
            json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            json!({"type": "object", "$defs": {"a": {"type": "string", "x-mcp-header": "A"}}, "properties": {"a": {"$ref": "#/$defs/a"}}}),
            json!({"type": "object", "if": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}}),
            json!({"type": "object", "x-mcp-header": "Root"}),
        ] {
            assert_eq!(
                reason(schema.clone()),
                InvalidReason::NotStaticallyReachable,
                "{schema}"
            );
        }
        let err = check(one("v", json!({"type": "number", "x-mcp-header": "V"}))).unwrap_err();
        assert_eq!(err.pointer, "/properties/v");
        assert!(err.to_string().contains("/properties/v"), "{err}");
    }

    #[test]
    fn header_text_spells_primitives() {
        assert_eq!(header_text(&json!("a b")).as_deref(), Some("a b"));
        assert_eq!(header_text(&json!(42)).as_deref(), Some("42"));
        assert_eq!(header_text(&json!(-7)).as_deref(), Some("-7"));
        assert_eq!(header_text(&json!(true)).as_deref(), Some("true"));
        assert_eq!(header_text(&json!(null)), None);
        assert_eq!(header_text(&json!({"a": 1})), None);
        assert_eq!(header_text(&json!([1])), None);
    }
}
