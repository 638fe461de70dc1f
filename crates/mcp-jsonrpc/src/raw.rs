//! [`RawJson`]: a result's JSON text, written once and copied into its frame as it is.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeOwned, Deserializer};
use serde::ser::{Error as _, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// JSON text known to be valid: the result of a request, as a handler answers with it or as it
/// was read from the wire. It is copied into the response's frame as it is, never parsed again.
///
/// [`RawJson::serialize`] writes a value once, into a buffer sized from the results this thread
/// serialized before, so a result the size of the previous ones is written without growing or
/// shrinking its buffer ([`serde_json::value::to_raw_value`] starts every value at 128 bytes,
/// grows, then shrinks the text to its length: two copies of every result that outgrows the
/// start). A result read from the wire stays the [`RawValue`] the decoder made.
///
/// ```
/// use mcp_jsonrpc::RawJson;
///
/// let json = RawJson::serialize(&serde_json::json!({"content": []})).unwrap();
/// assert_eq!(json.get(), r#"{"content":[]}"#);
/// let back: serde_json::Value = json.parse().unwrap();
/// assert_eq!(back["content"], serde_json::json!([]));
/// ```
#[derive(Clone)]
pub struct RawJson(Repr);

#[derive(Clone)]
enum Repr {
    /// Read from the wire, or handed over as a [`RawValue`].
    Raw(Box<RawValue>),
    /// Written by `serde_json` (or checked by [`RawJson::from_string`]); the string keeps its
    /// capacity.
    Text(String),
}

/// The smallest and the largest buffer [`RawJson::serialize`] starts with.
const MIN_START: usize = 128;
const MAX_START: usize = 4096;

thread_local! {
    /// The start size for this thread's next result: the last result's length, rounded up to a
    /// power of two (bounded), so the common case, a result like the previous one, fits.
    static START: Cell<usize> = const { Cell::new(MIN_START) };
}

impl RawJson {
    /// Serializes `value` into JSON text.
    pub fn serialize<T: Serialize + ?Sized>(value: &T) -> Result<Self, serde_json::Error> {
        // Only the write depends on `T`: the buffer's sizing and the text's check are compiled
        // once, not once per serialized type.
        let mut out = start_buffer();
        serde_json::to_writer(&mut out, value)?;
        Self::from_written(out)
    }

    /// The JSON text `serde_json` wrote into `out` (a buffer from [`start_buffer`]).
    fn from_written(out: Vec<u8>) -> Result<Self, serde_json::Error> {
        START.with(|start| start.set(start_for(out.len())));
        // serde_json writes UTF-8 only; the check is one pass over ASCII.
        let text = String::from_utf8(out).map_err(serde_json::Error::custom)?;
        Ok(RawJson(Repr::Text(text)))
    }

    /// Checks that `json` is one JSON value (surrounding whitespace allowed, as
    /// [`RawValue::from_string`] allows it) and keeps it.
    pub fn from_string(json: String) -> Result<Self, serde_json::Error> {
        serde_json::from_str::<&RawValue>(&json)?;
        Ok(RawJson(Repr::Text(json)))
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        match &self.0 {
            Repr::Raw(raw) => raw.get(),
            Repr::Text(text) => text,
        }
    }

    /// Decodes the JSON into any owned type.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.get())
    }

    /// The JSON as a [`RawValue`]: free for JSON read from the wire; text written by
    /// [`serialize`](Self::serialize) is checked again.
    pub fn into_raw_value(self) -> Box<RawValue> {
        match self.0 {
            Repr::Raw(raw) => raw,
            // Valid by construction (serde_json's output, or checked by `from_string`), so
            // the fallback is never taken.
            Repr::Text(text) => {
                RawValue::from_string(text).unwrap_or_else(|_| RawValue::NULL.to_owned())
            }
        }
    }
}

/// An empty buffer the size of this thread's last result (see `START`).
fn start_buffer() -> Vec<u8> {
    Vec::with_capacity(START.with(Cell::get))
}

/// The start size after a result of `len` bytes.
fn start_for(len: usize) -> usize {
    len.checked_next_power_of_two()
        .unwrap_or(MAX_START)
        .clamp(MIN_START, MAX_START)
}

impl From<Box<RawValue>> for RawJson {
    fn from(raw: Box<RawValue>) -> Self {
        RawJson(Repr::Raw(raw))
    }
}

impl From<&RawValue> for RawJson {
    fn from(raw: &RawValue) -> Self {
        RawJson(Repr::Raw(raw.to_owned()))
    }
}

impl From<RawJson> for Box<RawValue> {
    fn from(json: RawJson) -> Self {
        json.into_raw_value()
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawJson {}

impl fmt::Debug for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RawJson").field(&self.get()).finish()
    }
}

impl fmt::Display for RawJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

/// Written as the JSON it holds (not as a string).
impl Serialize for RawJson {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Raw(raw) => raw.serialize(serializer),
            Repr::Text(text) => serde_json::from_str::<&RawValue>(text)
                .map_err(S::Error::custom)?
                .serialize(serializer),
        }
    }
}

/// Read as any JSON value, kept raw.
impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawJson::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serialize_writes_what_serde_json_writes() {
        for value in [
            json!(null),
            json!("a \"quoted\" line\n"),
            json!({"content": [{"type": "text", "text": "é ✓"}], "isError": false}),
            json!([1, 2.5, -3]),
        ] {
            let json = RawJson::serialize(&value).unwrap();
            assert_eq!(json.get(), serde_json::to_string(&value).unwrap());
            assert_eq!(json.parse::<serde_json::Value>().unwrap(), value);
        }
    }

    #[test]
    fn the_start_size_follows_the_last_result_within_bounds() {
        assert_eq!(start_for(0), MIN_START);
        assert_eq!(start_for(174), 256);
        assert_eq!(start_for(256), 256);
        assert_eq!(start_for(1 << 20), MAX_START);
        assert_eq!(start_for(usize::MAX), MAX_START);
        let text = "x".repeat(300);
        RawJson::serialize(&text).unwrap();
        assert_eq!(START.with(Cell::get), 512);
        RawJson::serialize(&1).unwrap();
        assert_eq!(START.with(Cell::get), MIN_START);
    }

    #[test]
    fn from_string_checks_the_text() {
        assert_eq!(RawJson::from_string(" [1] ".into()).unwrap().get(), " [1] ");
        assert!(RawJson::from_string("[1".into()).is_err());
        assert!(RawJson::from_string("1 2".into()).is_err());
        assert!(RawJson::from_string(String::new()).is_err());
    }

    #[test]
    fn both_kinds_compare_serialize_and_convert_alike() {
        let written = RawJson::serialize(&json!({"a": [1]})).unwrap();
        let read = RawJson::from(RawValue::from_string(r#"{"a":[1]}"#.into()).unwrap());
        assert_eq!(written, read);
        assert_eq!(format!("{written}"), r#"{"a":[1]}"#);
        assert_eq!(format!("{read:?}"), r#"RawJson("{\"a\":[1]}")"#);
        let wrapped = json!({"result": written.clone(), "other": read.clone()});
        assert_eq!(wrapped, json!({"result": {"a": [1]}, "other": {"a": [1]}}));
        assert_eq!(written.into_raw_value().get(), r#"{"a":[1]}"#);
        assert_eq!(Box::<RawValue>::from(read).get(), r#"{"a":[1]}"#);
        let back: RawJson = serde_json::from_str(r#" {"b": 2} "#).unwrap();
        assert_eq!(back.get(), r#"{"b": 2}"#);
    }
}
