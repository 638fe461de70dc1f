//! Runtime helpers for the generated code: union variant selection and constant tags.

use serde_json::Value;

/// What a union variant looks like on the wire.
#[derive(Debug)]
pub enum Shape {
    /// An object with known fields.
    Object(&'static ObjectShape),
    /// A JSON string.
    String,
    /// A JSON integer.
    Integer,
    /// Any JSON number.
    Number,
    /// A JSON boolean.
    Boolean,
    /// A JSON array.
    Array,
    /// Any JSON object.
    Map,
    /// Anything.
    Any,
}

/// The fields of an object variant.
#[derive(Debug)]
pub struct ObjectShape {
    /// Constant fields: wire name, value, whether required.
    pub consts: &'static [(&'static str, &'static str, bool)],
    /// Required fields.
    pub required: &'static [&'static str],
    /// Every field the schema names.
    pub known: &'static [&'static str],
    /// Whether the schema allows other fields.
    pub open: bool,
}

/// How well an object matches a shape: `None` if it cannot be that variant.
fn object_rank(map: &serde_json::Map<String, Value>, shape: &ObjectShape) -> Option<u8> {
    for (key, value, required) in shape.consts {
        match map.get(*key) {
            Some(Value::String(s)) if s == value => {}
            None if !required => {}
            _ => return None,
        }
    }
    if !shape.required.iter().all(|k| map.contains_key(*k)) {
        return None;
    }
    let all_known = map.keys().all(|k| shape.known.contains(&k.as_str()));
    Some(match (all_known, shape.open) {
        // Every field accounted for by a closed shape: the best match.
        (true, false) => 0,
        (true, true) => 1,
        (false, true) => 2,
        (false, false) => 3,
    })
}

/// What kind of JSON value `value` is, with its article ("a string"), for messages.
pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A generated union: the variant a JSON value belongs to is picked from the value.
///
/// [`pick`](Union::pick) is not generic: a crate that reads a union compiles its variant
/// selection and its variants' deserializers from `&Value` once, whatever `Deserializer` the
/// union is read from (per deserializer it instantiates only [`deserialize_union`], a `Value`
/// read and a call). It is `#[inline]`, so that only the crates that read a union compile it:
/// not inlined, every union would be compiled here, read or not.
pub(crate) trait Union: Sized {
    /// The variant `value` is, deserialized; the message says why none fits.
    fn pick(value: &Value) -> Result<Self, String>;
}

/// A union's `Deserialize`: the value is buffered as a [`Value`] (the variant is chosen by
/// looking at all of it), then [`Union::pick`] chooses and reads the variant.
pub(crate) fn deserialize_union<'de, T: Union, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<T, D::Error> {
    let value = <Value as serde::Deserialize>::deserialize(deserializer)?;
    T::pick(&value).map_err(<D::Error as serde::de::Error>::custom)
}

/// Picks the union variant `value` belongs to and deserializes it with `parse`: variants are
/// ranked by how exactly the value fits them (constants, required fields, known fields), and
/// tried best first.
pub fn pick<T>(
    value: &Value,
    union: &str,
    shapes: &[Shape],
    parse: impl Fn(usize, &Value) -> Option<Result<T, serde_json::Error>>,
) -> Result<T, String> {
    // A tagged union (content blocks, say): when the value fits one variant alone, that one is
    // all the ranking would try, so the ranking (an allocation, and every key checked against
    // every variant) is skipped.
    if let Value::Object(map) = value {
        if let Some(only) = sole_tagged_fit(map, shapes) {
            return match parse(only, value) {
                Some(Ok(v)) => Ok(v),
                Some(Err(e)) => Err(format!("invalid {union}: {e}")),
                None => Err(no_variant(value, union)),
            };
        }
    }
    pick_ranked(value, union, shapes, parse)
}

/// The one variant an object can be, when every variant is an object told apart by a required
/// constant and exactly one of them fits; `None` otherwise (the ranking decides).
fn sole_tagged_fit(map: &serde_json::Map<String, Value>, shapes: &[Shape]) -> Option<usize> {
    // The variants of a tagged union share their tag's name: it is looked up once.
    let mut last: Option<(&str, Option<&Value>)> = None;
    let mut fit = None;
    for (i, shape) in shapes.iter().enumerate() {
        let Shape::Object(o) = shape else {
            return None;
        };
        if !o.consts.iter().any(|&(_, _, required)| required) {
            return None;
        }
        let mut fits = true;
        for &(key, value, required) in o.consts {
            let member = match last {
                Some((k, member)) if k == key => member,
                _ => {
                    let member = map.get(key);
                    last = Some((key, member));
                    member
                }
            };
            fits = match member {
                Some(Value::String(s)) => s == value,
                None => !required,
                Some(_) => false,
            };
            if !fits {
                break;
            }
        }
        if fits && o.required.iter().all(|k| map.contains_key(*k)) {
            if fit.is_some() {
                return None;
            }
            fit = Some(i);
        }
    }
    fit
}

/// [`pick`] without the shortcut: every variant ranked, then tried best first.
fn pick_ranked<T>(
    value: &Value,
    union: &str,
    shapes: &[Shape],
    parse: impl Fn(usize, &Value) -> Option<Result<T, serde_json::Error>>,
) -> Result<T, String> {
    let mut ranked: Vec<(u8, usize)> = Vec::with_capacity(shapes.len());
    for (i, shape) in shapes.iter().enumerate() {
        let rank = match (shape, value) {
            (Shape::Object(o), Value::Object(map)) => object_rank(map, o),
            (Shape::Map, Value::Object(_)) => Some(4),
            (Shape::String, Value::String(_)) => Some(0),
            (Shape::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => Some(0),
            (Shape::Number, Value::Number(_)) => Some(1),
            (Shape::Boolean, Value::Bool(_)) => Some(0),
            (Shape::Array, Value::Array(_)) => Some(0),
            (Shape::Any, _) => Some(5),
            _ => None,
        };
        if let Some(rank) = rank {
            ranked.push((rank, i));
        }
    }
    ranked.sort_unstable();
    let mut first_error = None;
    for (_, i) in ranked {
        match parse(i, value) {
            Some(Ok(v)) => return Ok(v),
            Some(Err(e)) if first_error.is_none() => first_error = Some(e),
            Some(Err(_)) | None => {}
        }
    }
    Err(match first_error {
        Some(e) => format!("invalid {union}: {e}"),
        None => no_variant(value, union),
    })
}

fn no_variant(value: &Value, union: &str) -> String {
    match value.get("type").and_then(Value::as_str) {
        Some(t) => format!("no variant of {union} has type `{t}`"),
        None => format!("{} matches no variant of {union}", kind(value)),
    }
}

/// Defines a zero-sized type for one string constant of the schemas.
macro_rules! const_tag {
    ($name:ident, $value:literal) => {
        #[doc = concat!("The constant `\"", $value, "\"`.")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name;

        impl $name {
            /// The constant's string.
            pub const VALUE: &'static str = $value;
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                serializer.serialize_str($value)
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                struct Visitor;
                impl ::serde::de::Visitor<'_> for Visitor {
                    type Value = $name;
                    fn expecting(
                        &self,
                        f: &mut ::core::fmt::Formatter<'_>,
                    ) -> ::core::fmt::Result {
                        f.write_str(concat!("the string \"", $value, "\""))
                    }
                    fn visit_str<E: ::serde::de::Error>(
                        self,
                        v: &str,
                    ) -> ::core::result::Result<$name, E> {
                        if v == $value {
                            Ok($name)
                        } else {
                            Err(E::invalid_value(::serde::de::Unexpected::Str(v), &self))
                        }
                    }
                }
                deserializer.deserialize_str(Visitor)
            }
        }

        #[cfg(feature = "schemars")]
        impl ::schemars::JsonSchema for $name {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(stringify!($name))
            }
            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                ::schemars::json_schema!({ "type": "string", "const": $value })
            }
        }

        impl $crate::Project for $name {
            fn project(&mut self, _rev: $crate::ProtocolVersion) {}
        }
    };
}
pub(crate) use const_tag;

/// Serializes an `f64` that holds an integer as a JSON integer (`50`, not `50.0`), so numbers
/// round-trip as peers wrote them.
pub(crate) fn ser_f64<S: serde::Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // Integers up to 2^53 are exact in an f64.
    if value.fract() == 0.0 && value.abs() <= 9_007_199_254_740_992.0 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

/// An `f64` field's value, serialized by [`ser_f64`].
pub(crate) struct Num<'a>(pub &'a f64);

impl serde::Serialize for Num<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ser_f64(self.0, serializer)
    }
}

// The generated structs and enums implement serde by hand rather than by derive. A struct is
// read from a map only (JSON-RPC never sends an object as an array), its keys through the one
// `Field` reader below; it is written as a map, so `serde_json` does not compile each field a
// second time for its raw-value writer; an open struct keeps the keys it does not name in its
// `extra` without serde's `flatten` buffering. Per type that is about half the code the derive
// makes, and the code that remains is instantiated once per deserializer, not once per type.

/// Reads a struct's field name: `Ok(index)` of a name among the struct's wire names,
/// `Err(name)` for another (`name` is kept only for an open struct, which keeps such fields).
/// A name read twice is an error, as with serde's derive.
pub(crate) struct Field<'a> {
    names: &'static [&'static str],
    seen: &'a mut u64,
    open: bool,
}

impl<'a> Field<'a> {
    /// A closed struct's field name: others are skipped.
    pub(crate) fn closed(names: &'static [&'static str], seen: &'a mut u64) -> Self {
        Field {
            names,
            seen,
            open: false,
        }
    }

    /// An open struct's field name: others are kept.
    pub(crate) fn open(names: &'static [&'static str], seen: &'a mut u64) -> Self {
        Field {
            names,
            seen,
            open: true,
        }
    }

    /// The index of `key`, marked as read; `None` for a name the struct does not have.
    fn index<E: serde::de::Error>(&mut self, key: &str) -> Result<Option<usize>, E> {
        let Some(index) = self.names.iter().position(|name| *name == key) else {
            return Ok(None);
        };
        // The generator gives no struct more than 64 fields.
        let bit = 1u64 << index;
        if *self.seen & bit != 0 {
            return Err(E::duplicate_field(self.names[index]));
        }
        *self.seen |= bit;
        Ok(Some(index))
    }

    /// A name the struct does not have, kept only by an open struct.
    fn other(&self, key: impl Into<String>) -> String {
        if self.open { key.into() } else { String::new() }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Field<'_> {
    type Value = Result<usize, String>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl serde::de::Visitor<'_> for Field<'_> {
    type Value = Result<usize, String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: serde::de::Error>(mut self, key: &str) -> Result<Self::Value, E> {
        Ok(self.index(key)?.ok_or_else(|| self.other(key)))
    }

    fn visit_string<E: serde::de::Error>(mut self, key: String) -> Result<Self::Value, E> {
        Ok(self.index(&key)?.ok_or_else(|| self.other(key)))
    }
}

/// A required field's value, or serde's "missing field" error.
#[inline]
pub(crate) fn required<T, E: serde::de::Error>(
    value: Option<T>,
    name: &'static str,
) -> Result<T, E> {
    value.ok_or_else(|| E::missing_field(name))
}

/// Reads a string enum: the index of the string among `names`, or serde's "unknown variant"
/// error.
pub(crate) fn variant<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
    names: &'static [&'static str],
) -> Result<usize, D::Error> {
    struct Variant(&'static [&'static str]);
    impl serde::de::Visitor<'_> for Variant {
        type Value = usize;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("one of ")?;
            for (i, name) in self.0.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                write!(f, "{sep}`{name}`")?;
            }
            Ok(())
        }
        fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<usize, E> {
            self.0
                .iter()
                .position(|name| *name == value)
                .ok_or_else(|| E::unknown_variant(value, self.0))
        }
    }
    deserializer.deserialize_str(Variant(names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::de::Error as _;
    use serde_json::json;

    const KNOWN: &[&str] = &["type", "text", "data", "resource", "_meta"];
    static TEXT: ObjectShape = ObjectShape {
        consts: &[("type", "text", true)],
        required: &["type", "text"],
        known: KNOWN,
        open: false,
    };
    static IMAGE: ObjectShape = ObjectShape {
        consts: &[("type", "image", true)],
        required: &["type", "data"],
        known: KNOWN,
        open: false,
    };
    static RESOURCE: ObjectShape = ObjectShape {
        consts: &[("type", "resource", true)],
        required: &["type", "resource"],
        known: KNOWN,
        open: false,
    };
    static UNTAGGED: ObjectShape = ObjectShape {
        consts: &[],
        required: &["text"],
        known: &["text"],
        open: true,
    };

    /// "Parses" variant `i`: fails when the value has a `bad` member, so both the error and the
    /// fall-through paths are taken.
    fn parse(i: usize, v: &Value) -> Option<Result<usize, serde_json::Error>> {
        match (i, v.get("bad")) {
            (9.., _) => None,
            (_, Some(_)) => Some(Err(serde_json::Error::custom(format!(
                "variant {i} refused"
            )))),
            _ => Some(Ok(i)),
        }
    }

    #[test]
    fn the_tagged_shortcut_decides_as_the_ranking_does() {
        let tagged_union = [
            Shape::Object(&TEXT),
            Shape::Object(&IMAGE),
            Shape::Object(&RESOURCE),
        ];
        let mixed = [
            Shape::Object(&TEXT),
            Shape::Object(&UNTAGGED),
            Shape::String,
        ];
        let values = [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "text", "text": "hi", "extra": 1}),
            json!({"type": "text"}),
            json!({"type": "image", "data": "AA=="}),
            json!({"type": "resource", "resource": {}}),
            json!({"type": "video", "text": "hi"}),
            json!({"type": 5, "text": "hi"}),
            json!({"text": "hi"}),
            json!({"type": "text", "text": "hi", "bad": true}),
            json!({}),
            json!("text"),
            json!(3),
        ];
        let mut shortcut_taken = 0;
        for shapes in [&tagged_union[..], &mixed[..]] {
            for value in &values {
                if let Value::Object(map) = value {
                    shortcut_taken += usize::from(sole_tagged_fit(map, shapes).is_some());
                }
                assert_eq!(
                    pick(value, "U", shapes, parse),
                    pick_ranked(value, "U", shapes, parse),
                    "{value}"
                );
            }
        }
        // The shortcut applies to the tagged union only, for the five values that fit one
        // variant (the one with `bad` fails in both ways alike).
        assert_eq!(shortcut_taken, 5);
    }
}
