//! The restricted form schema of `elicitation/create` (form mode) and validation of the user's
//! answer against it.
//!
//! A form-mode elicitation asks for a flat object whose properties are strings (with optional
//! `minLength`, `maxLength` and `format`), numbers or integers (with optional `minimum` and
//! `maximum`), booleans, single-choice enums and multi-choice enums. [`FormSchema::parse`] reads
//! such a schema into typed fields a user interface can render; [`FormSchema::validate`] checks an
//! `accept` answer before it is sent; [`FormSchema::apply_defaults`] fills fields the user left
//! empty from the schema's `default`s.
//!
//! The fields keep the order of the schema's `properties` as the server wrote them when the
//! schema is read from JSON text ([`FormSchema::parse_str`], or `FormSchema`'s `Deserialize`),
//! which is how the client reads the server's requests. A `serde_json::Value` keeps its keys
//! sorted (unless serde_json's `preserve_order` feature is on), so [`FormSchema::parse`] gives
//! the fields in that order.
//!
//! ```
//! use mcp_client::elicit::FormSchema;
//! use serde_json::json;
//!
//! let schema = FormSchema::parse(&json!({
//!     "type": "object",
//!     "properties": {
//!         "name": {"type": "string", "minLength": 1},
//!         "age": {"type": "integer", "minimum": 0, "default": 30}
//!     },
//!     "required": ["name"]
//! }))?;
//! let mut answer = json!({"name": "Ada"}).as_object().cloned().unwrap_or_default();
//! schema.apply_defaults(&mut answer);
//! assert_eq!(answer["age"], 30);
//! schema.validate(&answer)?;
//! assert!(schema.validate(json!({"name": ""}).as_object().unwrap()).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Most properties a form may have.
pub const MAX_FIELDS: usize = 256;

/// Most options an enum field may offer.
pub const MAX_OPTIONS: usize = 1024;

/// A parsed form-mode `requestedSchema`.
#[derive(Debug, Clone, PartialEq)]
pub struct FormSchema {
    fields: Vec<FormField>,
}

/// One property of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// The property name (the key in the answer).
    pub name: String,
    /// Display title.
    pub title: Option<String>,
    /// Longer description.
    pub description: Option<String>,
    /// Whether the answer must contain this property.
    pub required: bool,
    /// The value's type and constraints.
    pub kind: FieldKind,
    /// The schema's `default`, already checked against `kind`.
    pub default: Option<Value>,
}

/// The type and constraints of a form field.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FieldKind {
    /// Free text.
    String {
        /// Minimum length in characters.
        min_length: Option<u64>,
        /// Maximum length in characters.
        max_length: Option<u64>,
        /// Required format.
        format: Option<StringFormat>,
    },
    /// A number; `integer` when the schema type is `integer`.
    Number {
        /// Whether only whole numbers are allowed.
        integer: bool,
        /// Inclusive lower bound.
        minimum: Option<f64>,
        /// Inclusive upper bound.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// Exactly one of the options.
    Enum {
        /// The allowed values with their display titles.
        options: Vec<EnumOption>,
    },
    /// Any number of distinct options (`type: array`).
    MultiEnum {
        /// The allowed values with their display titles.
        options: Vec<EnumOption>,
        /// Fewest selections.
        min_items: Option<u64>,
        /// Most selections.
        max_items: Option<u64>,
    },
}

/// One choice of an enum field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumOption {
    /// The value sent back.
    pub value: String,
    /// The label shown, when the schema gives one.
    pub title: Option<String>,
}

/// The string formats a form field may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StringFormat {
    /// `user@host`.
    Email,
    /// An absolute URI (`scheme:rest`).
    Uri,
    /// `YYYY-MM-DD`.
    Date,
    /// RFC 3339 date-time.
    DateTime,
}

/// A `requestedSchema` outside the restricted subset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported elicitation schema at `{path}`: {reason}")]
pub struct SchemaError {
    /// Where in the schema (`properties.age.minimum`).
    pub path: String,
    /// What is wrong.
    pub reason: String,
}

/// An answer that does not match its form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("elicitation answer does not match the requested schema: {}", .problems.join("; "))]
pub struct AnswerError {
    /// Every problem found, one per field.
    pub problems: Vec<String>,
}

fn schema_error(path: impl Into<String>, reason: impl Into<String>) -> SchemaError {
    SchemaError {
        path: path.into(),
        reason: reason.into(),
    }
}

impl FormSchema {
    /// Reads a `requestedSchema` value. The fields come in the order of the value's
    /// `properties` map (sorted by name, unless serde_json's `preserve_order` feature is on);
    /// [`FormSchema::parse_str`] keeps the order of the JSON text.
    pub fn parse(schema: &Value) -> Result<Self, SchemaError> {
        let top = schema
            .as_object()
            .ok_or_else(|| schema_error("", "the schema is not an object"))?;
        let properties = match top.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(Properties::Object {
                count: p.len(),
                fields: p
                    .iter()
                    .take(MAX_FIELDS + 1)
                    .map(|(name, property)| (name.clone(), property.clone()))
                    .collect(),
            }),
            Some(_) => Some(Properties::NotObject),
        };
        Self::from_parts(top, properties)
    }

    /// Reads a `requestedSchema` from JSON text, keeping the fields in the order the
    /// `properties` are written.
    ///
    /// ```
    /// use mcp_client::elicit::FormSchema;
    ///
    /// let schema = FormSchema::parse_str(
    ///     r#"{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}"#,
    /// )?;
    /// let names: Vec<&str> = schema.fields().iter().map(|f| f.name.as_str()).collect();
    /// assert_eq!(names, ["name", "age"]);
    /// # Ok::<(), mcp_client::elicit::SchemaError>(())
    /// ```
    pub fn parse_str(json: &str) -> Result<Self, SchemaError> {
        let ordered: OrderedSchema =
            serde_json::from_str(json).map_err(|e| schema_error("", e.to_string()))?;
        Self::from_parts(&ordered.top, ordered.properties)
    }

    fn from_parts(
        top: &Map<String, Value>,
        properties: Option<Properties>,
    ) -> Result<Self, SchemaError> {
        match top.get("type") {
            Some(Value::String(t)) if t == "object" => {}
            None => {}
            _ => return Err(schema_error("type", "the top-level type must be `object`")),
        }
        let properties = match properties {
            None => Vec::new(),
            Some(Properties::Object { count, .. }) if count > MAX_FIELDS => {
                return Err(schema_error(
                    "properties",
                    format!("{count} fields, more than {MAX_FIELDS}"),
                ));
            }
            Some(Properties::Object { fields, .. }) => fields,
            Some(Properties::NotObject) => {
                return Err(schema_error("properties", "not an object"));
            }
        };
        let mut names = HashSet::with_capacity(properties.len());
        for (name, _) in &properties {
            if !names.insert(name.as_str()) {
                return Err(schema_error(
                    format!("properties.{name}"),
                    "the property is given twice",
                ));
            }
        }
        let required: Vec<String> = match top.get("required") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| schema_error("required", "an entry is not a string"))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(schema_error("required", "not an array")),
        };
        for name in &required {
            if !names.contains(name.as_str()) {
                return Err(schema_error(
                    "required",
                    format!("`{name}` is required but not a property"),
                ));
            }
        }
        let fields = properties
            .iter()
            .map(|(name, property)| parse_field(name, property, required.contains(name)))
            .collect::<Result<_, _>>()?;
        Ok(Self { fields })
    }

    /// The form's fields, in schema order.
    pub fn fields(&self) -> &[FormField] {
        &self.fields
    }

    /// Adds each field's `default` to `content` where the user gave no value.
    pub fn apply_defaults(&self, content: &mut Map<String, Value>) {
        for field in &self.fields {
            let Some(default) = &field.default else {
                continue;
            };
            if content.get(&field.name).is_none_or(Value::is_null) {
                content.insert(field.name.clone(), default.clone());
            }
        }
    }

    /// Checks an `accept` answer: required fields present, every value of its field's type and
    /// within its constraints, no property the form did not ask for.
    pub fn validate(&self, content: &Map<String, Value>) -> Result<(), AnswerError> {
        let mut problems = Vec::new();
        for field in &self.fields {
            match content.get(&field.name) {
                None if field.required => {
                    problems.push(format!("`{}` is required", field.name));
                }
                None => {}
                Some(value) => {
                    if let Err(problem) = check_value(&field.kind, value) {
                        problems.push(format!("`{}` {problem}", field.name));
                    }
                }
            }
        }
        for key in content.keys() {
            if !self.fields.iter().any(|field| &field.name == key) {
                problems.push(format!("`{key}` is not a field of the form"));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(AnswerError { problems })
        }
    }
}

/// Reads the schema from any serde format, keeping the fields in the order the format gives
/// the `properties` (for JSON text: as written).
impl<'de> Deserialize<'de> for FormSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ordered = OrderedSchema::deserialize(deserializer)?;
        FormSchema::from_parts(&ordered.top, ordered.properties).map_err(de::Error::custom)
    }
}

/// A schema's top level, with `properties` read in document order.
struct OrderedSchema {
    /// Every other member.
    top: Map<String, Value>,
    properties: Option<Properties>,
}

/// The `properties` member as read: its first [`MAX_FIELDS`] + 1 entries in document order and
/// how many there were, or something other than an object.
enum Properties {
    Object {
        fields: Vec<(String, Value)>,
        count: usize,
    },
    NotObject,
}

impl<'de> Deserialize<'de> for OrderedSchema {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TopVisitor;

        impl<'de> Visitor<'de> for TopVisitor {
            type Value = OrderedSchema;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a schema object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedSchema, A::Error> {
                let mut top = Map::new();
                let mut properties = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "properties" {
                        properties = Some(map.next_value::<Properties>()?);
                    } else {
                        top.insert(key, map.next_value()?);
                    }
                }
                Ok(OrderedSchema { top, properties })
            }
        }

        deserializer.deserialize_map(TopVisitor)
    }
}

impl<'de> Deserialize<'de> for Properties {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PropertiesVisitor;

        impl<'de> Visitor<'de> for PropertiesVisitor {
            type Value = Properties;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the form's properties")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Properties, A::Error> {
                let mut fields = Vec::new();
                let mut count = 0;
                while let Some(name) = map.next_key::<String>()? {
                    count += 1;
                    // Past the limit only count, so a huge form costs no memory.
                    if fields.len() > MAX_FIELDS {
                        map.next_value::<IgnoredAny>()?;
                    } else {
                        fields.push((name, map.next_value()?));
                    }
                }
                Ok(Properties::Object { fields, count })
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Properties, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Properties::NotObject)
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Properties, E> {
                Ok(Properties::NotObject)
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Properties, E> {
                Ok(Properties::NotObject)
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Properties, E> {
                Ok(Properties::NotObject)
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Properties, E> {
                Ok(Properties::NotObject)
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<Properties, E> {
                Ok(Properties::NotObject)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Properties, E> {
                Ok(Properties::NotObject)
            }
        }

        deserializer.deserialize_any(PropertiesVisitor)
    }
}

fn optional_string(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, SchemaError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(schema_error(format!("{path}.{key}"), "not a string")),
    }
}

fn optional_count(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<u64>, SchemaError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                    .map(|f| f as u64)
            })
            .map(Some)
            .ok_or_else(|| schema_error(format!("{path}.{key}"), "not a non-negative integer")),
        Some(_) => Err(schema_error(
            format!("{path}.{key}"),
            "not a non-negative integer",
        )),
    }
}

fn optional_number(
    map: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<f64>, SchemaError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .map(Some)
            .ok_or_else(|| schema_error(format!("{path}.{key}"), "not a number")),
        Some(_) => Err(schema_error(format!("{path}.{key}"), "not a number")),
    }
}

fn string_list(value: &Value, path: &str) -> Result<Vec<EnumOption>, SchemaError> {
    let items = value
        .as_array()
        .ok_or_else(|| schema_error(path, "not an array"))?;
    if items.len() > MAX_OPTIONS {
        return Err(schema_error(
            path,
            format!("more than {MAX_OPTIONS} options"),
        ));
    }
    items
        .iter()
        .map(|item| {
            item.as_str()
                .map(|value| EnumOption {
                    value: value.to_owned(),
                    title: None,
                })
                .ok_or_else(|| schema_error(path, "an option is not a string"))
        })
        .collect()
}

fn titled_list(value: &Value, path: &str) -> Result<Vec<EnumOption>, SchemaError> {
    let items = value
        .as_array()
        .ok_or_else(|| schema_error(path, "not an array"))?;
    if items.len() > MAX_OPTIONS {
        return Err(schema_error(
            path,
            format!("more than {MAX_OPTIONS} options"),
        ));
    }
    items
        .iter()
        .map(|item| {
            let item = item
                .as_object()
                .ok_or_else(|| schema_error(path, "an option is not an object"))?;
            let value = item
                .get("const")
                .and_then(Value::as_str)
                .ok_or_else(|| schema_error(path, "an option has no string `const`"))?;
            Ok(EnumOption {
                value: value.to_owned(),
                title: optional_string(item, "title", path)?,
            })
        })
        .collect()
}

fn parse_field(name: &str, property: &Value, required: bool) -> Result<FormField, SchemaError> {
    let path = format!("properties.{name}");
    let map = property
        .as_object()
        .ok_or_else(|| schema_error(&path, "the property schema is not an object"))?;
    let kind_name = map
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| schema_error(&path, "the property has no string `type`"))?;
    let kind = match kind_name {
        "string" => {
            if let Some(options) = map.get("oneOf") {
                FieldKind::Enum {
                    options: titled_list(options, &format!("{path}.oneOf"))?,
                }
            } else if let Some(values) = map.get("enum") {
                let mut options = string_list(values, &format!("{path}.enum"))?;
                // Legacy `enumNames` give the titles positionally.
                if let Some(names) = map.get("enumNames") {
                    let names = string_list(names, &format!("{path}.enumNames"))?;
                    if names.len() != options.len() {
                        return Err(schema_error(
                            format!("{path}.enumNames"),
                            "not as many names as enum values",
                        ));
                    }
                    for (option, name) in options.iter_mut().zip(names) {
                        option.title = Some(name.value);
                    }
                }
                FieldKind::Enum { options }
            } else {
                let format = match optional_string(map, "format", &path)?.as_deref() {
                    None => None,
                    Some("email") => Some(StringFormat::Email),
                    Some("uri") => Some(StringFormat::Uri),
                    Some("date") => Some(StringFormat::Date),
                    Some("date-time") => Some(StringFormat::DateTime),
                    Some(other) => {
                        return Err(schema_error(
                            format!("{path}.format"),
                            format!("unknown format `{other}`"),
                        ));
                    }
                };
                FieldKind::String {
                    min_length: optional_count(map, "minLength", &path)?,
                    max_length: optional_count(map, "maxLength", &path)?,
                    format,
                }
            }
        }
        "number" | "integer" => FieldKind::Number {
            integer: kind_name == "integer",
            minimum: optional_number(map, "minimum", &path)?,
            maximum: optional_number(map, "maximum", &path)?,
        },
        "boolean" => FieldKind::Boolean,
        "array" => {
            let items = map
                .get("items")
                .and_then(Value::as_object)
                .ok_or_else(|| schema_error(&path, "a multi-select has no `items` object"))?;
            let options = if let Some(options) = items.get("anyOf") {
                titled_list(options, &format!("{path}.items.anyOf"))?
            } else if let Some(values) = items.get("enum") {
                string_list(values, &format!("{path}.items.enum"))?
            } else {
                return Err(schema_error(
                    format!("{path}.items"),
                    "a multi-select needs `enum` or `anyOf`",
                ));
            };
            FieldKind::MultiEnum {
                options,
                min_items: optional_count(map, "minItems", &path)?,
                max_items: optional_count(map, "maxItems", &path)?,
            }
        }
        other => {
            return Err(schema_error(
                format!("{path}.type"),
                format!("`{other}` is not a primitive type"),
            ));
        }
    };
    let default = match map.get("default") {
        None | Some(Value::Null) => None,
        Some(default) => {
            check_value(&kind, default).map_err(|problem| {
                schema_error(format!("{path}.default"), format!("the default {problem}"))
            })?;
            Some(default.clone())
        }
    };
    Ok(FormField {
        name: name.to_owned(),
        title: optional_string(map, "title", &path)?,
        description: optional_string(map, "description", &path)?,
        required,
        kind,
        default,
    })
}

fn is_integer(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn check_value(kind: &FieldKind, value: &Value) -> Result<(), String> {
    match kind {
        FieldKind::String {
            min_length,
            max_length,
            format,
        } => {
            let text = value.as_str().ok_or("must be a string")?;
            let length = text.chars().count() as u64;
            if let Some(min) = min_length.filter(|&min| length < min) {
                return Err(format!("must be at least {min} characters long"));
            }
            if let Some(max) = max_length.filter(|&max| length > max) {
                return Err(format!("must be at most {max} characters long"));
            }
            if let Some(format) = format.filter(|format| !format.matches(text)) {
                return Err(format!("must be a valid {}", format.name()));
            }
            Ok(())
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let Value::Number(n) = value else {
                return Err(if *integer {
                    "must be an integer".into()
                } else {
                    "must be a number".into()
                });
            };
            if *integer && !is_integer(n) {
                return Err("must be an integer".into());
            }
            let f = n.as_f64().ok_or("must be a finite number")?;
            if let Some(min) = minimum.filter(|&min| f < min) {
                return Err(format!("must be at least {min}"));
            }
            if let Some(max) = maximum.filter(|&max| f > max) {
                return Err(format!("must be at most {max}"));
            }
            Ok(())
        }
        FieldKind::Boolean => value
            .is_boolean()
            .then_some(())
            .ok_or_else(|| "must be true or false".into()),
        FieldKind::Enum { options } => {
            let text = value.as_str().ok_or("must be one of the options")?;
            if options.iter().any(|option| option.value == text) {
                Ok(())
            } else {
                Err(format!("`{text}` is not one of the options"))
            }
        }
        FieldKind::MultiEnum {
            options,
            min_items,
            max_items,
        } => {
            let items = value.as_array().ok_or("must be a list of options")?;
            let mut seen: Vec<&str> = Vec::with_capacity(items.len());
            for item in items {
                let text = item.as_str().ok_or("must be a list of option strings")?;
                if !options.iter().any(|option| option.value == text) {
                    return Err(format!("`{text}` is not one of the options"));
                }
                if seen.contains(&text) {
                    return Err(format!("selects `{text}` twice"));
                }
                seen.push(text);
            }
            let count = items.len() as u64;
            if let Some(min) = min_items.filter(|&min| count < min) {
                return Err(format!("must select at least {min}"));
            }
            if let Some(max) = max_items.filter(|&max| count > max) {
                return Err(format!("must select at most {max}"));
            }
            Ok(())
        }
    }
}

impl StringFormat {
    fn name(self) -> &'static str {
        match self {
            StringFormat::Email => "email address",
            StringFormat::Uri => "URI",
            StringFormat::Date => "date (YYYY-MM-DD)",
            StringFormat::DateTime => "RFC 3339 date-time",
        }
    }

    /// Whether `text` has this format (RFC 3339 dates and date-times, RFC 3986 URIs, RFC 5321
    /// addresses: the checks the SDK's JSON Schema validator makes).
    pub fn matches(self, text: &str) -> bool {
        let name = match self {
            StringFormat::Email => "email",
            StringFormat::Uri => "uri",
            StringFormat::Date => "date",
            StringFormat::DateTime => "date-time",
        };
        mcp_jsonschema::format_matches(name, text).unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    fn schema() -> FormSchema {
        FormSchema::parse(&json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 2, "maxLength": 5, "default": "Ada"},
                "email": {"type": "string", "format": "email"},
                "site": {"type": "string", "format": "uri"},
                "born": {"type": "string", "format": "date"},
                "seen": {"type": "string", "format": "date-time"},
                "age": {"type": "integer", "minimum": 0, "maximum": 150, "default": 30},
                "score": {"type": "number", "minimum": 0.5},
                "ok": {"type": "boolean", "default": true},
                "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
                "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
                "legacy": {"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]},
                "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y", "z"]}, "minItems": 1, "maxItems": 2},
                "picks": {"type": "array", "items": {"anyOf": [{"const": "p", "title": "P"}]}}
            },
            "required": ["name", "age"]
        }))
        .unwrap()
    }

    #[test]
    fn parses_every_field_kind() {
        let schema = schema();
        assert_eq!(schema.fields().len(), 13);
        let legacy = schema.fields().iter().find(|f| f.name == "legacy").unwrap();
        let FieldKind::Enum { options } = &legacy.kind else {
            panic!("legacy is not an enum")
        };
        assert_eq!(options[1].title.as_deref(), Some("B"));
        let size = schema.fields().iter().find(|f| f.name == "size").unwrap();
        assert!(
            matches!(&size.kind, FieldKind::Enum { options } if options[0].title.as_deref() == Some("Small"))
        );
        assert!(
            schema
                .fields()
                .iter()
                .any(|f| f.name == "age" && f.required)
        );
    }

    #[test]
    fn accepts_a_valid_answer() {
        let answer = object(json!({
            "name": "Ada", "email": "ada@example.com", "site": "https://example.com/x",
            "born": "2024-02-29", "seen": "2024-02-29T00:59:60.5+01:00", "age": 36,
            "score": 0.5, "ok": false, "color": "green", "size": "l", "legacy": "a",
            "tags": ["x", "z"], "picks": ["p"]
        }));
        schema().validate(&answer).unwrap();
    }

    #[test]
    fn reports_each_problem() {
        let cases = [
            (json!({"age": 1}), "`name` is required"),
            (json!({"name": "A", "age": 1}), "at least 2 characters"),
            (
                json!({"name": "Adalbert", "age": 1}),
                "at most 5 characters",
            ),
            (json!({"name": "Ada", "age": 1.5}), "must be an integer"),
            (json!({"name": "Ada", "age": "1"}), "must be an integer"),
            (json!({"name": "Ada", "age": -1}), "at least 0"),
            (json!({"name": "Ada", "age": 151}), "at most 150"),
            (
                json!({"name": "Ada", "age": 1, "score": 0.1}),
                "at least 0.5",
            ),
            (
                json!({"name": "Ada", "age": 1, "ok": "yes"}),
                "true or false",
            ),
            (json!({"name": "Ada", "age": 1, "email": "nope"}), "email"),
            (json!({"name": "Ada", "age": 1, "site": "no scheme"}), "URI"),
            (
                json!({"name": "Ada", "age": 1, "born": "2023-02-29"}),
                "date",
            ),
            (
                json!({"name": "Ada", "age": 1, "seen": "2023-02-01 10:00:00Z"}),
                "date-time",
            ),
            (
                json!({"name": "Ada", "age": 1, "seen": "2023-02-01T25:00:00Z"}),
                "date-time",
            ),
            (
                json!({"name": "Ada", "age": 1, "color": "blue"}),
                "not one of the options",
            ),
            (json!({"name": "Ada", "age": 1, "tags": []}), "at least 1"),
            (
                json!({"name": "Ada", "age": 1, "tags": ["x", "y", "z"]}),
                "at most 2",
            ),
            (
                json!({"name": "Ada", "age": 1, "tags": ["x", "x"]}),
                "twice",
            ),
            (json!({"name": "Ada", "age": 1, "extra": 1}), "not a field"),
        ];
        let schema = schema();
        for (answer, expected) in cases {
            let err = schema.validate(&object(answer.clone())).unwrap_err();
            assert!(
                err.to_string().contains(expected),
                "{answer}: `{err}` lacks `{expected}`"
            );
        }
    }

    #[test]
    fn fills_defaults_only_where_missing() {
        let mut answer = object(json!({"name": "Bob", "ok": null}));
        schema().apply_defaults(&mut answer);
        assert_eq!(
            Value::Object(answer),
            json!({"name": "Bob", "age": 30, "ok": true, "color": "red"})
        );
    }

    #[test]
    fn refuses_schemas_outside_the_subset() {
        let cases = [
            (json!({"type": "array"}), "top-level"),
            (
                json!({"type": "object", "properties": {"a": {"type": "object"}}}),
                "not a primitive",
            ),
            (
                json!({"type": "object", "properties": {"a": {}}}),
                "no string `type`",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}}),
                "unknown format",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "integer", "default": 1.5}}}),
                "default",
            ),
            (
                json!({"type": "object", "properties": {}, "required": ["b"]}),
                "not a property",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}}),
                "non-negative",
            ),
            (
                json!({"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "enumNames": []}}}),
                "not as many",
            ),
        ];
        for (schema, expected) in cases {
            let err = FormSchema::parse(&schema).unwrap_err().to_string();
            assert!(
                err.contains(expected),
                "{schema}: `{err}` lacks `{expected}`"
            );
        }
    }

    #[test]
    fn json_text_keeps_the_order_of_the_properties() {
        let text = r#"{"type": "object", "properties": {
            "zeta": {"type": "string"},
            "alpha": {"type": "integer"},
            "mid": {"type": "boolean", "default": true}
        }, "required": ["alpha"]}"#;
        let names = |schema: &FormSchema| -> Vec<String> {
            schema.fields().iter().map(|f| f.name.clone()).collect()
        };
        let schema = FormSchema::parse_str(text).unwrap();
        assert_eq!(names(&schema), ["zeta", "alpha", "mid"]);
        assert!(schema.fields()[1].required);
        let deserialized: FormSchema = serde_json::from_str(text).unwrap();
        assert_eq!(deserialized, schema);
        // Read through a `Value`, the same form, in the value's key order.
        let value: Value = serde_json::from_str(text).unwrap();
        let mut sorted = names(&schema);
        sorted.sort();
        assert_eq!(names(&FormSchema::parse(&value).unwrap()), sorted);
    }

    #[test]
    fn json_text_outside_the_subset_is_refused_like_a_value() {
        let many: Vec<String> = (0..=MAX_FIELDS)
            .map(|i| format!(r#""f{i}": {{"type": "string"}}"#))
            .collect();
        let cases = [
            (
                r#"{"type": "object", "properties": {"a": {"type": "string"}, "a": {"type": "integer"}}}"#.to_owned(),
                "given twice",
            ),
            (
                r#"{"type": "object", "properties": [1, 2]}"#.to_owned(),
                "not an object",
            ),
            (r#"{"type": "object", "properties": null}"#.to_owned(), "not an object"),
            (
                r#"{"type": "object", "properties": {}, "required": ["b"]}"#.to_owned(),
                "not a property",
            ),
            (r#"[1]"#.to_owned(), "a schema object"),
            (r#"{"type": "object""#.to_owned(), "EOF"),
            (
                format!(r#"{{"type": "object", "properties": {{{}}}}}"#, many.join(",")),
                "more than 256",
            ),
        ];
        for (text, expected) in cases {
            let err = FormSchema::parse_str(&text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: `{err}` lacks `{expected}`");
            assert!(serde_json::from_str::<FormSchema>(&text).is_err(), "{text}");
        }
    }

    #[test]
    fn formats() {
        assert!(StringFormat::Date.matches("2000-02-29"));
        assert!(!StringFormat::Date.matches("1900-02-29"));
        assert!(!StringFormat::Date.matches("2000-13-01"));
        assert!(!StringFormat::Date.matches("２000-01-01"));
        assert!(StringFormat::DateTime.matches("2000-01-01t00:00:00z"));
        assert!(StringFormat::DateTime.matches("2000-01-01T00:00:00-05:30"));
        assert!(!StringFormat::DateTime.matches("2000-01-01T00:00:00"));
        assert!(!StringFormat::DateTime.matches("2000-01-01T00:00:00.Z"));
        // A leap second ends a UTC day, whatever the offset it is written in.
        assert!(StringFormat::DateTime.matches("2016-12-31T23:59:60Z"));
        assert!(StringFormat::DateTime.matches("2017-01-01T00:59:60+01:00"));
        assert!(!StringFormat::DateTime.matches("2016-12-31T23:59:60+01:00"));
        assert!(StringFormat::Uri.matches("urn:isbn:1"));
        assert!(!StringFormat::Uri.matches("1http://x"));
        assert!(StringFormat::Email.matches("a.b@c.d"));
        assert!(!StringFormat::Email.matches("a@"));
    }
}
