//! JSON Schemas generated from Rust types with `schemars`.

use std::fmt;

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Deserialize;
use serde::de::{self, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Settings for every schema made here: JSON Schema 2020-12 (the MCP default dialect, which
/// applies without naming it), and no `$schema` member: clients validate with many JSON Schema
/// libraries, and several reject an unknown `$schema`.
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|s| s.meta_schema = None)
}

/// The schema of a tool's input type (what the type accepts when deserializing).
pub(crate) fn input_schema_for<T: JsonSchema>() -> Value {
    let generator = settings().for_deserialize().into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// The schema of an output type (what the type produces when serializing).
pub(crate) fn schema_for<T: JsonSchema>() -> Value {
    let generator = settings().for_serialize().into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

/// The restricted, flat schema elicitation allows (`requestedSchema`): an object whose properties
/// are strings (optionally with `format`, `enum` or `oneOf` of `const`/`title`), numbers,
/// integers, booleans or arrays of enumerated strings. Optional fields (`Option<T>`) lose their
/// `null` alternative and are simply not `required`. It keeps schemars' numeric formats, which
/// tell the bounds of an integer type (enforced by the type) from a constraint; what is sent goes
/// through [`standard_formats`].
pub(crate) fn elicitation_schema_for<T: JsonSchema>() -> Result<Value, String> {
    let generator = settings()
        .for_deserialize()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    restrict_elicitation_schema(generator.into_root_schema_for::<T>().to_value())
}

/// The `format`s schemars writes for Rust number types, which JSON Schema 2020-12 does not
/// define (TypeScript clients warn about each on every call), with the bounds of the integer
/// types they name. Bounds beyond 2^53 are left out: clients read them as doubles, which cannot
/// hold them exactly.
fn number_format(format: &str) -> Option<(Option<i64>, Option<i64>)> {
    Some(match format {
        "uint8" => (Some(0), Some(u8::MAX.into())),
        "uint16" => (Some(0), Some(u16::MAX.into())),
        "uint32" => (Some(0), Some(u32::MAX.into())),
        "uint64" | "uint128" | "uint" => (Some(0), None),
        "int8" => (Some(i8::MIN.into()), Some(i8::MAX.into())),
        "int16" => (Some(i16::MIN.into()), Some(i16::MAX.into())),
        "int32" => (Some(i32::MIN.into()), Some(i32::MAX.into())),
        "int64" | "int128" | "int" | "float" | "double" => (None, None),
        _ => return None,
    })
}

/// Rewrites a derived schema into what JSON Schema 2020-12 defines: the numeric `format`s of
/// schemars (`uint8`, `int64`, `double`, ...) are dropped, and the range of the integer type
/// they name is kept as `minimum`/`maximum` (a bound already stated, from a `range`
/// attribute, is kept when it is the tighter one). Every subschema is rewritten.
pub(crate) fn standard_formats(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    let bounds = object
        .get("format")
        .and_then(Value::as_str)
        .and_then(number_format);
    if let Some((min, max)) = bounds {
        object.remove("format");
        let tighter = |object: &mut Map<String, Value>, key: &str, bound: i64, lower: bool| {
            let stated = object.get(key).and_then(Value::as_f64);
            let keep = stated.is_some_and(|s| {
                if lower {
                    s >= bound as f64
                } else {
                    s <= bound as f64
                }
            });
            if !keep {
                object.insert(key.to_owned(), Value::from(bound));
            }
        };
        if let Some(min) = min {
            tighter(object, "minimum", min, true);
        }
        if let Some(max) = max {
            tighter(object, "maximum", max, false);
        }
    }
    for (keyword, value) in object.iter_mut() {
        match keyword.as_str() {
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(map) = value {
                    map.values_mut().for_each(standard_formats);
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(list) = value {
                    list.iter_mut().for_each(standard_formats);
                }
            }
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties" => {
                standard_formats(value);
            }
            _ => {}
        }
    }
}

/// The names of a struct's fields in the order the code declares them (with their aliases),
/// as its `Deserialize` impl states them; `None` for a type that is not deserialized as a
/// struct (a map, an enum, a struct with `#[serde(flatten)]`).
///
/// A derived schema's `properties` is a `serde_json` map, which is sorted by name (the
/// workspace does not enable `preserve_order`); this is how the declaration order is kept for
/// the places where clients show it: elicitation forms and prompt arguments.
pub(crate) fn declared_fields<T: de::DeserializeOwned>() -> Option<&'static [&'static str]> {
    /// A deserializer that only listens for the field list and then stops.
    struct Probe<'a>(&'a mut Option<&'static [&'static str]>);

    #[derive(Debug)]
    struct Stop;

    impl fmt::Display for Stop {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("field probe")
        }
    }

    impl std::error::Error for Stop {}

    impl de::Error for Stop {
        fn custom<M: fmt::Display>(_msg: M) -> Self {
            Stop
        }
    }

    impl<'de> de::Deserializer<'de> for Probe<'_> {
        type Error = Stop;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Stop> {
            *self.0 = Some(fields);
            Err(Stop)
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut fields = None;
    let _ = T::deserialize(Probe(&mut fields));
    fields
}

/// The names of `properties` in declaration order: first those `declared` names (in its order),
/// then any others in the map's order.
pub(crate) fn property_order(schema: &Value, declared: Option<&[&str]>) -> Vec<String> {
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Vec::new();
    };
    let mut order: Vec<String> = Vec::with_capacity(props.len());
    for name in declared.unwrap_or_default() {
        if props.contains_key(*name) && !order.iter().any(|o| o == name) {
            order.push((*name).to_owned());
        }
    }
    for name in props.keys() {
        if !order.contains(name) {
            order.push(name.clone());
        }
    }
    order
}

/// An object written as it is, except the member at `path`, whose keys are written in
/// `order` first.
struct Ordered<'a> {
    object: &'a Map<String, Value>,
    path: &'a [&'a str],
    order: &'a [String],
}

impl Serialize for Ordered<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.object.len()))?;
        match self.path.split_first() {
            // The properties map itself: declared names first.
            None => {
                for name in self.order {
                    if let Some(value) = self.object.get(name) {
                        map.serialize_entry(name, value)?;
                    }
                }
                for (name, value) in self.object {
                    if !self.order.contains(name) {
                        map.serialize_entry(name, value)?;
                    }
                }
            }
            Some((head, rest)) => {
                for (key, value) in self.object {
                    match value {
                        Value::Object(inner) if key == head => {
                            let inner = Ordered {
                                object: inner,
                                path: rest,
                                order: self.order,
                            };
                            map.serialize_entry(key, &inner)?;
                        }
                        _ => map.serialize_entry(key, value)?,
                    }
                }
            }
        }
        map.end()
    }
}

/// Re-encodes `elicitation/create` params so that `requestedSchema.properties` lists the
/// fields in `order` (JSON objects keep the order of their text; clients show form fields in
/// it). Everything else is written as it was.
pub(crate) fn with_property_order(
    params: &RawValue,
    order: &[String],
) -> Result<Box<RawValue>, serde_json::Error> {
    let object: Map<String, Value> = serde_json::from_str(params.get())?;
    serde_json::value::to_raw_value(&Ordered {
        object: &object,
        path: &["requestedSchema", "properties"],
        order,
    })
}

/// Re-encodes a stateless `input_required` result so that the form of each elicitation in
/// `inputRequests` lists its fields in the order recorded for its key (as
/// [`with_property_order`] does for one request). Everything else is written as it was.
pub(crate) fn with_form_orders(
    result: &str,
    orders: &std::collections::BTreeMap<String, Vec<String>>,
) -> Result<Box<RawValue>, serde_json::Error> {
    /// `inputRequests`, each elicitation's form in its recorded order.
    struct Requests<'a> {
        requests: &'a Map<String, Value>,
        orders: &'a std::collections::BTreeMap<String, Vec<String>>,
    }

    impl Serialize for Requests<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.requests.len()))?;
            for (key, request) in self.requests {
                match (request, self.orders.get(key)) {
                    (Value::Object(object), Some(order)) => map.serialize_entry(
                        key,
                        &Ordered {
                            object,
                            path: &["params", "requestedSchema", "properties"],
                            order,
                        },
                    )?,
                    _ => map.serialize_entry(key, request)?,
                }
            }
            map.end()
        }
    }

    /// The result, with its `inputRequests` written by [`Requests`].
    struct Outer<'a> {
        object: &'a Map<String, Value>,
        orders: &'a std::collections::BTreeMap<String, Vec<String>>,
    }

    impl Serialize for Outer<'_> {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            let mut map = serializer.serialize_map(Some(self.object.len()))?;
            for (key, value) in self.object {
                match value {
                    Value::Object(requests) if key == "inputRequests" => map.serialize_entry(
                        key,
                        &Requests {
                            requests,
                            orders: self.orders,
                        },
                    )?,
                    _ => map.serialize_entry(key, value)?,
                }
            }
            map.end()
        }
    }

    let object: Map<String, Value> = serde_json::from_str(result)?;
    serde_json::value::to_raw_value(&Outer {
        object: &object,
        orders,
    })
}

/// The names of `requestedSchema.properties` in `elicitation/create` params, in the order the
/// text lists them (`None` when the params have no such object).
pub(crate) fn form_order_of(params: &RawValue) -> Option<Vec<String>> {
    /// The keys of a JSON object, in the order of the text.
    struct Keys(Vec<String>);

    impl<'de> Deserialize<'de> for Keys {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> de::Visitor<'de> for V {
                type Value = Keys;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
                    let mut keys = Vec::new();
                    while let Some(key) = map.next_key::<String>()? {
                        map.next_value::<de::IgnoredAny>()?;
                        keys.push(key);
                    }
                    Ok(Keys(keys))
                }
            }
            d.deserialize_map(V)
        }
    }

    #[derive(Deserialize)]
    struct Schema {
        properties: Option<Keys>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Params {
        requested_schema: Option<Schema>,
    }

    let params: Params = serde_json::from_str(params.get()).ok()?;
    Some(params.requested_schema?.properties?.0)
}

/// Checks (and normalises) a schema for elicitation.
pub(crate) fn restrict_elicitation_schema(value: Value) -> Result<Value, String> {
    let Value::Object(root) = value else {
        return Err("the schema must be an object".to_owned());
    };
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err("the schema's root must have \"type\": \"object\"".to_owned());
    }
    let props = match root.get("properties") {
        Some(Value::Object(p)) => p.clone(),
        None => Map::new(),
        Some(_) => return Err("`properties` must be an object".to_owned()),
    };
    let mut out_props = Map::new();
    for (name, prop) in props {
        out_props.insert(name.clone(), restrict_property(&name, prop)?);
    }
    let mut out = Map::new();
    out.insert("type".to_owned(), Value::String("object".to_owned()));
    out.insert("properties".to_owned(), Value::Object(out_props));
    if let Some(req) = root.get("required") {
        out.insert("required".to_owned(), req.clone());
    }
    Ok(Value::Object(out))
}

const ALLOWED_KEYS: &[&str] = &[
    "type",
    "title",
    "description",
    "default",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "enum",
    "enumNames",
    "oneOf",
    "anyOf",
    "items",
    "minItems",
    "maxItems",
];

fn restrict_property(name: &str, prop: Value) -> Result<Value, String> {
    let Value::Object(mut map) = prop else {
        return Err(format!("property `{name}` must be a schema object"));
    };
    // `Option<T>`: `"type": ["string", "null"]` becomes `"type": "string"`.
    if let Some(Value::Array(types)) = map.get("type") {
        let non_null: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if non_null.len() != 1 {
            return Err(format!("property `{name}` must have exactly one type"));
        }
        let t = non_null[0].clone();
        map.insert("type".to_owned(), t);
    }
    // `Option<Enum>` of a unit-only enum comes as `"enum": [..., null]` (with the type array
    // above); the form has no null choice, leaving the field out means none.
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    // An enum whose variants have doc comments comes as `oneOf: [{const, description}, ...]`;
    // its `Option` adds a null alternative. A titled choice is `{const, title}`: the doc
    // comment is the title.
    if let Some(Value::Array(alts)) = map.get_mut("oneOf") {
        alts.retain(|a| !is_null_schema(a));
        for alt in alts.iter_mut() {
            *alt = titled_choice(alt);
        }
    }
    // Other optional schemas come as `anyOf: [{...}, {type: null}]`.
    if let Some(Value::Array(alts)) = map.get("anyOf").cloned() {
        let non_null: Vec<Value> = alts.into_iter().filter(|a| !is_null_schema(a)).collect();
        if non_null.len() == 1 && map.get("type").is_none() {
            map.remove("anyOf");
            if let Value::Object(inner) = &non_null[0] {
                for (k, v) in inner {
                    map.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            // The alternative may itself be an enum written the `Option` way.
            return restrict_property(name, Value::Object(map));
        }
    }
    if map.get("type").is_none() && (map.contains_key("enum") || map.contains_key("oneOf")) {
        map.insert("type".to_owned(), Value::String("string".to_owned()));
    }
    let ty = map
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("property `{name}` has no primitive type"))?
        .to_owned();
    match ty.as_str() {
        "string" | "number" | "integer" | "boolean" => {}
        "array" => {
            let items = map.get("items").ok_or_else(|| {
                format!("array property `{name}` needs `items` with an enum of strings")
            })?;
            let enumerated = items.get("enum").is_some() || items.get("anyOf").is_some();
            if !enumerated {
                return Err(format!(
                    "array property `{name}` must enumerate its string values"
                ));
            }
        }
        other => {
            return Err(format!(
                "property `{name}` has type `{other}`; elicitation allows only flat primitive fields"
            ));
        }
    }
    map.retain(|k, _| ALLOWED_KEYS.contains(&k.as_str()));
    Ok(Value::Object(map))
}

/// A choice of a titled enum as elicitation has it: `{"const": value, "title": label}`, the
/// label taken from the choice's `title`, else its `description`, else the value itself.
fn titled_choice(choice: &Value) -> Value {
    let Some(value) = choice.get("const") else {
        return choice.clone();
    };
    let title = ["title", "description"]
        .iter()
        .find_map(|key| choice.get(*key).filter(|v| v.is_string()))
        .or_else(|| Some(value).filter(|v| v.is_string()))
        .cloned();
    let mut out = Map::new();
    out.insert("const".to_owned(), value.clone());
    if let Some(title) = title {
        out.insert("title".to_owned(), title);
    }
    Value::Object(out)
}

/// Whether a schema admits only `null`: `{"type": "null"}`, `{"const": null}` or
/// `{"enum": [null]}`.
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
        || schema
            .get("enum")
            .and_then(Value::as_array)
            .is_some_and(|values| values.iter().all(Value::is_null))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    struct Contact {
        /// Your name
        name: String,
        age: Option<u32>,
        subscribed: bool,
        color: Color,
    }

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Color {
        Red,
        Green,
    }

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    struct Preferences {
        /// Favourite colour
        color: Option<Color>,
        /// Second choice
        fallback: Option<Color>,
        size: Option<Size>,
        name: String,
    }

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Size {
        /// Small
        S,
        /// Large
        L,
    }

    #[allow(dead_code)]
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    struct Nested {
        inner: Contact,
    }

    #[test]
    fn input_schema_is_an_object_without_dialect() {
        let s = input_schema_for::<Contact>();
        assert_eq!(s["type"], "object");
        assert!(s.get("$schema").is_none());
        assert!(s["required"].as_array().unwrap().contains(&json!("name")));
    }

    #[test]
    fn elicitation_schema_is_flat() {
        let s = elicitation_schema_for::<Contact>().unwrap();
        assert_eq!(s["properties"]["name"]["type"], "string");
        assert_eq!(s["properties"]["name"]["description"], "Your name");
        assert_eq!(s["properties"]["age"]["type"], "integer");
        assert_eq!(s["properties"]["subscribed"]["type"], "boolean");
        assert_eq!(s["properties"]["color"]["type"], "string");
        assert_eq!(s["properties"]["color"]["enum"], json!(["red", "green"]));
        assert!(s.get("$defs").is_none());
    }

    #[test]
    fn optional_enums_keep_their_choices_and_are_not_required() {
        let s = elicitation_schema_for::<Preferences>().unwrap();
        let color = &s["properties"]["color"];
        assert_eq!(
            color,
            &json!({"type": "string", "enum": ["red", "green"], "description": "Favourite colour"}),
            "{s}"
        );
        assert_eq!(s["properties"]["fallback"]["enum"], json!(["red", "green"]));
        let size = &s["properties"]["size"];
        assert_eq!(size["type"], "string", "{s}");
        assert_eq!(
            size["oneOf"],
            json!([{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]),
            "titled choices as elicitation has them: {s}"
        );
        assert_eq!(s["required"], json!(["name"]));
        // The protocol's own type for `requestedSchema` takes it unchanged.
        let typed: mcp_types::ElicitRequestFormParamsRequestedSchema =
            serde_json::from_value(s.clone()).unwrap();
        assert_eq!(serde_json::to_value(typed).unwrap(), s);
        // What the schema promises, the type accepts.
        let none: Preferences = serde_json::from_value(json!({"name": "Ada"})).unwrap();
        assert!(none.color.is_none());
    }

    #[test]
    fn nested_objects_are_refused_for_elicitation() {
        assert!(elicitation_schema_for::<Nested>().is_err());
    }
}
