//! Single-pass decoding of a frame into a message or batch.
//!
//! The visitors here never fail on a *data* problem (a wrong type, a missing member): they consume
//! the whole value, record what was wrong and classify at the end. So a serde_json error is always
//! a syntax error (`-32700`), and everything else becomes an [`InvalidMessage`] (`-32600`) that
//! still knows the request id when there was a valid one.

use std::borrow::Cow;
use std::fmt;

use serde::Deserializer as _;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::{ErrorObject, FrameError, InvalidMessage};
use crate::id::Id;
use crate::message::{Inbound, Message, Notification, Request, Response};

/// Decodes one frame. `max_batch` is `None` when a batch is not acceptable at all.
pub(crate) fn decode_frame(bytes: &[u8], max_batch: Option<usize>) -> Result<Inbound, FrameError> {
    // One pass over the whole frame for UTF-8 is cheaper than the parser's check of every
    // string (and of the raw params) on its own. JSON text is UTF-8 (RFC 8259), so a frame that
    // is not is a parse error at its first invalid byte; the parser is compiled for text only.
    match std::str::from_utf8(bytes) {
        Ok(text) => decode_from(text, max_batch),
        Err(e) => Err(FrameError::Parse(not_utf8(bytes, e.valid_up_to()))),
    }
}

/// The parse error of a frame whose first `valid` bytes are UTF-8 and the next is not, with
/// the parser's line and column (1-based, the column counted in bytes).
#[cold]
fn not_utf8(bytes: &[u8], valid: usize) -> serde_json::Error {
    let before = &bytes[..valid];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let column = 1 + valid
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    de::Error::custom(format_args!("invalid UTF-8 at line {line} column {column}"))
}

fn decode_from(text: &str, max_batch: Option<usize>) -> Result<Inbound, FrameError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let top = de
        .deserialize_any(TopVisitor { max_batch })
        .map_err(FrameError::Parse)?;
    de.end().map_err(FrameError::Parse)?;
    match top {
        Top::Single(Ok(m)) => Ok(Inbound::Single(m)),
        Top::Single(Err(e)) => Err(FrameError::Invalid(e)),
        Top::Batch(v) if v.is_empty() => Err(FrameError::EmptyBatch),
        Top::Batch(v) => Ok(Inbound::Batch(v)),
        Top::BatchTooLarge(limit) => Err(FrameError::BatchTooLarge { limit }),
        Top::BatchNotExpected => Err(FrameError::Invalid(invalid(
            None,
            "expected a single message, got a batch",
            false,
        ))),
        Top::Other(kind) => Err(FrameError::Invalid(invalid(
            None,
            format!("expected a JSON object, got {kind}"),
            false,
        ))),
    }
}

#[cold]
fn invalid(id: Option<Id>, detail: impl fmt::Display, response_like: bool) -> InvalidMessage {
    InvalidMessage {
        id,
        error: ErrorObject::invalid_request(detail),
        response_like,
    }
}

enum Top {
    Single(Result<Message, InvalidMessage>),
    Batch(Vec<Result<Message, InvalidMessage>>),
    BatchTooLarge(usize),
    BatchNotExpected,
    Other(&'static str),
}

/// Implements the visitor methods for every JSON type other than the ones a visitor handles
/// itself, returning `$ret(kind)` after consuming the value.
macro_rules! other_types {
    ($ret:expr; $($which:ident),*) => {
        $(other_types!(@one $which, $ret);)*
    };
    (@one bool, $ret:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok($ret("a boolean")) }
    };
    (@one num, $ret:expr) => {
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok($ret("a number")) }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok($ret("a number")) }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok($ret("a number")) }
    };
    (@one str, $ret:expr) => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok($ret("a string")) }
    };
    (@one unit, $ret:expr) => {
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok($ret("null")) }
    };
    (@one seq, $ret:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($ret("an array"))
        }
    };
    (@one map, $ret:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($ret("an object"))
        }
    };
}

struct TopVisitor {
    max_batch: Option<usize>,
}

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message or batch")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Top, A::Error> {
        MessageVisitor.visit_map(map).map(Top::Single)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Top, A::Error> {
        let Some(max) = self.max_batch else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(Top::BatchNotExpected);
        };
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(max).min(64));
        while let Some(element) = seq.next_element_seed(ElementSeed)? {
            if out.len() == max {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(Top::BatchTooLarge(max));
            }
            out.push(element);
        }
        Ok(Top::Batch(out))
    }

    other_types!(Top::Other; bool, num, str, unit);
}

/// One batch element: an object is classified as a message, anything else is invalid.
struct ElementSeed;

impl<'de> DeserializeSeed<'de> for ElementSeed {
    type Value = Result<Message, InvalidMessage>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(MessageVisitor)
    }
}

fn not_an_object(kind: &'static str) -> Result<Message, InvalidMessage> {
    Err(invalid(
        None,
        format!("expected a JSON object, got {kind}"),
        false,
    ))
}

struct MessageVisitor;

/// The members a message may have.
enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

struct FieldVisitor;

impl Visitor<'_> for FieldVisitor {
    type Value = Field;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
        Ok(match v {
            "jsonrpc" => Field::Jsonrpc,
            "id" => Field::Id,
            "method" => Field::Method,
            "params" => Field::Params,
            "result" => Field::Result,
            "error" => Field::Error,
            _ => Field::Other,
        })
    }
}

impl<'de> de::Deserialize<'de> for Field {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_identifier(FieldVisitor)
    }
}

/// Any JSON value, with strings kept (borrowed when possible) and containers skipped.
enum Loose<'de> {
    Int(i64),
    /// An integer beyond `i64`.
    UInt,
    Str(Cow<'de, str>),
    Null,
    Other(&'static str),
}

impl Loose<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Loose::Int(_) | Loose::UInt => "a number",
            Loose::Str(_) => "a string",
            Loose::Null => "null",
            Loose::Other(k) => k,
        }
    }
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Loose::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(match i64::try_from(v) {
            Ok(i) => Loose::Int(i),
            Err(_) => Loose::UInt,
        })
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Loose::Other("a fractional number"))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Loose::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Loose::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Loose::Str(Cow::Owned(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Loose::Null)
    }

    other_types!(Loose::Other; bool, seq, map);
}

impl<'de> de::Deserialize<'de> for Loose<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(LooseVisitor)
    }
}

/// The `error` member, decoded leniently.
enum LooseError {
    Valid(ErrorObject),
    Invalid(String),
}

struct ErrorVisitor;

fn error_not_object(kind: &'static str) -> LooseError {
    LooseError::Invalid(format!("`error` must be an object, got {kind}"))
}

impl<'de> Visitor<'de> for ErrorVisitor {
    type Value = LooseError;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an error object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LooseError, A::Error> {
        let mut code = None;
        let mut message = None;
        let mut data: Option<Box<RawValue>> = None;
        let mut problem: Option<String> = None;
        while let Some(key) = map.next_key::<Loose<'de>>()? {
            match key {
                Loose::Str(k) if k == "code" => {
                    let v = map.next_value::<Loose<'de>>()?;
                    if code.is_some() {
                        problem.get_or_insert_with(|| "duplicate member `code`".into());
                    }
                    match v {
                        Loose::Int(i) => code = Some(i),
                        other => {
                            problem.get_or_insert_with(|| {
                                format!("`error.code` must be an integer, got {}", other.kind())
                            });
                        }
                    }
                }
                Loose::Str(k) if k == "message" => {
                    let v = map.next_value::<Loose<'de>>()?;
                    if message.is_some() {
                        problem.get_or_insert_with(|| "duplicate member `message`".into());
                    }
                    match v {
                        Loose::Str(s) => message = Some(s.into_owned()),
                        other => {
                            problem.get_or_insert_with(|| {
                                format!("`error.message` must be a string, got {}", other.kind())
                            });
                        }
                    }
                }
                Loose::Str(k) if k == "data" => {
                    let v = map.next_value::<Box<RawValue>>()?;
                    if data.replace(v).is_some() {
                        problem.get_or_insert_with(|| "duplicate member `data`".into());
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if let Some(p) = problem {
            return Ok(LooseError::Invalid(p));
        }
        match (code, message) {
            (Some(code), Some(message)) => Ok(LooseError::Valid(ErrorObject {
                code,
                message,
                data,
            })),
            (None, _) => Ok(LooseError::Invalid("`error.code` is missing".into())),
            (_, None) => Ok(LooseError::Invalid("`error.message` is missing".into())),
        }
    }

    other_types!(error_not_object; bool, num, str, unit, seq);
}

impl<'de> de::Deserialize<'de> for LooseError {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ErrorVisitor)
    }
}

/// The members of a message as seen, before classification.
#[derive(Default)]
struct Seen<'de> {
    jsonrpc: Option<Loose<'de>>,
    id: Option<Loose<'de>>,
    method: Option<Loose<'de>>,
    params: Option<Box<RawValue>>,
    result: Option<Box<RawValue>>,
    error: Option<LooseError>,
    duplicate: Option<&'static str>,
}

fn set<T>(slot: &mut Option<T>, value: T, name: &'static str, dup: &mut Option<&'static str>) {
    if slot.replace(value).is_some() && dup.is_none() {
        *dup = Some(name);
    }
}

impl<'de> Visitor<'de> for MessageVisitor {
    type Value = Result<Message, InvalidMessage>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = Seen::default();
        while let Some(field) = map.next_key::<Field>()? {
            let dup = &mut seen.duplicate;
            match field {
                Field::Jsonrpc => set(&mut seen.jsonrpc, map.next_value()?, "jsonrpc", dup),
                Field::Id => set(&mut seen.id, map.next_value()?, "id", dup),
                Field::Method => set(&mut seen.method, map.next_value()?, "method", dup),
                Field::Params => set(&mut seen.params, map.next_value()?, "params", dup),
                Field::Result => set(&mut seen.result, map.next_value()?, "result", dup),
                Field::Error => set(&mut seen.error, map.next_value()?, "error", dup),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(classify(seen))
    }

    other_types!(not_an_object; bool, num, str, unit, seq);
}

/// The id member, judged.
enum IdState {
    Absent,
    Null,
    Valid(Id),
    Invalid(String),
}

fn classify(seen: Seen<'_>) -> Result<Message, InvalidMessage> {
    let id = match seen.id {
        None => IdState::Absent,
        Some(Loose::Null) => IdState::Null,
        Some(Loose::Int(i)) => IdState::Valid(Id::Number(i)),
        Some(Loose::Str(s)) => IdState::Valid(Id::String(s.into_owned())),
        Some(Loose::UInt) => IdState::Invalid("`id` is out of range".into()),
        Some(other) => IdState::Invalid(format!(
            "`id` must be a string or an integer, got {}",
            other.kind()
        )),
    };
    let valid_id = match &id {
        IdState::Valid(i) => Some(i.clone()),
        _ => None,
    };
    let response_like = seen.method.is_none() && (seen.result.is_some() || seen.error.is_some());
    let fail = |detail: String| Err(invalid(valid_id.clone(), detail, response_like));

    if let Some(name) = seen.duplicate {
        return fail(format!("duplicate member `{name}`"));
    }
    match &seen.jsonrpc {
        Some(Loose::Str(v)) if v == "2.0" => {}
        Some(_) => return fail("`jsonrpc` must be \"2.0\"".into()),
        None => return fail("`jsonrpc` is missing".into()),
    }

    if let Some(method) = seen.method {
        let method = match method {
            Loose::Str(s) => s.into_owned(),
            other => return fail(format!("`method` must be a string, got {}", other.kind())),
        };
        if seen.result.is_some() || seen.error.is_some() {
            return fail("a request must not carry `result` or `error`".into());
        }
        let params = match seen.params {
            None => None,
            Some(p) => match p.get().as_bytes().first() {
                Some(b'{' | b'[') => Some(p),
                // Some peers send `"params": null`; it means the same as no params.
                Some(b'n') => None,
                _ => return fail("`params` must be an object or an array".into()),
            },
        };
        return match id {
            IdState::Absent => Ok(Message::Notification(Notification { method, params })),
            IdState::Valid(id) => Ok(Message::Request(Request { id, method, params })),
            IdState::Null => fail("`id` must not be null".into()),
            IdState::Invalid(why) => fail(why),
        };
    }

    if seen.params.is_some() {
        return fail("`params` without `method`".into());
    }
    match (seen.result, seen.error) {
        (Some(_), Some(_)) => fail("a response must not carry both `result` and `error`".into()),
        (Some(result), None) => match id {
            IdState::Valid(id) => Ok(Message::Response(Response {
                id: Some(id),
                result: Ok(result.into()),
            })),
            IdState::Absent | IdState::Null => fail("a result response needs an `id`".into()),
            IdState::Invalid(why) => fail(why),
        },
        (None, Some(LooseError::Valid(error))) => match id {
            IdState::Valid(id) => Ok(Message::Response(Response {
                id: Some(id),
                result: Err(error),
            })),
            IdState::Absent | IdState::Null => Ok(Message::Response(Response {
                id: None,
                result: Err(error),
            })),
            IdState::Invalid(why) => fail(why),
        },
        (None, Some(LooseError::Invalid(why))) => fail(why),
        (None, None) => fail("expected `method`, `result` or `error`".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;

    fn single(text: &str) -> Result<Message, FrameError> {
        match decode_frame(text.as_bytes(), Some(16))? {
            Inbound::Single(m) => Ok(m),
            Inbound::Batch(_) => panic!("unexpected batch"),
        }
    }

    fn invalid_of(text: &str) -> InvalidMessage {
        match single(text) {
            Err(FrameError::Invalid(m)) => m,
            other => panic!("{text}: expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn classifies_valid_messages() {
        let m = single(r#"{"jsonrpc":"2.0","id":"a","method":"m","params":{"x":[1, 2]}}"#).unwrap();
        let Message::Request(r) = m else { panic!() };
        assert_eq!(r.id, Id::from("a"));
        assert_eq!(r.params.unwrap().get(), r#"{"x":[1, 2]}"#);

        let m = single(r#"{"method":"n","jsonrpc":"2.0"}"#).unwrap();
        assert!(matches!(m, Message::Notification(n) if n.method == "n" && n.params.is_none()));

        let m = single(r#"{"jsonrpc":"2.0","id":-4,"result":[]}"#).unwrap();
        assert!(matches!(
            m,
            Message::Response(Response {
                id: Some(Id::Number(-4)),
                result: Ok(_)
            })
        ));

        let m = single(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":{"a":1}}}"#,
        )
        .unwrap();
        let Message::Response(Response {
            id: None,
            result: Err(e),
        }) = m
        else {
            panic!()
        };
        assert_eq!(e.code, codes::PARSE_ERROR);
        assert_eq!(e.data.unwrap().get(), r#"{"a":1}"#);

        // 2025-11-25 allows the id to be omitted from an error response.
        let m = single(r#"{"jsonrpc":"2.0","error":{"code":1,"message":""}}"#).unwrap();
        assert!(matches!(
            m,
            Message::Response(Response {
                id: None,
                result: Err(_)
            })
        ));

        // Unknown members are ignored; escaped member names and values are understood.
        let m = single(r#"{"jsonrpc":"2\u002e0","x":{"deep":[1]},"i\u0064":1,"method":"a\nb"}"#)
            .unwrap();
        assert!(matches!(m, Message::Request(r) if r.method == "a\nb"));

        // `params: null` means no params.
        let m = single(r#"{"jsonrpc":"2.0","method":"n","params":null}"#).unwrap();
        assert!(matches!(m, Message::Notification(n) if n.params.is_none()));
    }

    #[test]
    fn rejects_invalid_messages_with_precise_errors() {
        let cases: &[(&str, Option<Id>, bool)] = &[
            (r#"{"id":1,"method":"m"}"#, Some(Id::Number(1)), false),
            (
                r#"{"jsonrpc":"1.0","id":1,"method":"m"}"#,
                Some(Id::Number(1)),
                false,
            ),
            (
                r#"{"jsonrpc":2,"id":1,"method":"m"}"#,
                Some(Id::Number(1)),
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":null,"method":"m"}"#, None, false),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"m"}"#, None, false),
            (r#"{"jsonrpc":"2.0","id":{},"method":"m"}"#, None, false),
            (r#"{"jsonrpc":"2.0","id":true,"method":"m"}"#, None, false),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"m"}"#,
                None,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
                Some(Id::Number(1)),
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":3}"#,
                Some(Id::Number(1)),
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"s"}"#,
                Some(Id::Number(1)),
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"m","result":{}}"#,
                Some(Id::Number(1)),
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
                Some(Id::Number(2)),
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":1}"#, Some(Id::Number(1)), false),
            (r#"{"jsonrpc":"2.0","params":{}}"#, None, false),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{"code":1,"message":""}}"#,
                Some(Id::Number(1)),
                true,
            ),
            (r#"{"jsonrpc":"2.0","id":null,"result":1}"#, None, true),
            (r#"{"jsonrpc":"2.0","result":1}"#, None, true),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":""}}"#,
                Some(Id::Number(1)),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":""}}"#,
                Some(Id::Number(1)),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"message":""}}"#,
                Some(Id::Number(1)),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#,
                Some(Id::Number(1)),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":"boom"}"#,
                Some(Id::Number(1)),
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"code":2,"message":""}}"#,
                Some(Id::Number(1)),
                true,
            ),
        ];
        for (text, id, response_like) in cases {
            let m = invalid_of(text);
            assert_eq!(&m.id, id, "{text}");
            assert_eq!(m.response_like, *response_like, "{text}");
            assert_eq!(m.error.code, codes::INVALID_REQUEST, "{text}");
            assert_eq!(m.to_response().is_some(), !response_like, "{text}");
        }
    }

    #[test]
    fn non_objects_are_invalid_requests_not_parse_errors() {
        for text in ["1", "\"x\"", "null", "true", "-1.5"] {
            let e = single(text).unwrap_err();
            let FrameError::Invalid(m) = &e else {
                panic!("{text}: {e:?}")
            };
            assert_eq!(m.id, None);
            let resp = e.to_response().unwrap();
            assert_eq!(resp.id, None);
            assert_eq!(resp.result.unwrap_err().code, codes::INVALID_REQUEST);
        }
    }

    #[test]
    fn syntax_errors_are_parse_errors() {
        for text in [
            "",
            "{",
            "{\"jsonrpc\":\"2.0\",",
            "{\"jsonrpc\": 2, oops}",
            "[1,2",
            "{} {}",
            "{\"a\":\"\u{1}\"}",
            "nul",
        ] {
            let e = single(text).unwrap_err();
            assert!(matches!(e, FrameError::Parse(_)), "{text}: {e:?}");
            let resp = e.to_response().unwrap();
            assert_eq!(resp.id, None);
            assert_eq!(resp.result.unwrap_err().code, codes::PARSE_ERROR);
        }
        // Invalid UTF-8 inside a string, inside raw params, and outside strings.
        for bytes in [
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}"[..],
            &b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":{\"a\":\"\xc3\x28\"}}"[..],
            &b"\xef\xbb\xbf{}"[..],
        ] {
            let e = decode_frame(bytes, Some(4)).unwrap_err();
            assert!(matches!(e, FrameError::Parse(_)), "{e:?}");
        }
        let e = decode_frame(b"{\"jsonrpc\":\"2.0\",\n\"method\":\"\xff\"}", None).unwrap_err();
        assert!(
            matches!(&e, FrameError::Parse(p) if p.to_string() == "invalid UTF-8 at line 2 column 11"),
            "{e:?}"
        );
    }

    #[test]
    fn batches() {
        let text = r#"[{"jsonrpc":"2.0","id":1,"method":"a"}, 1, {"jsonrpc":"2.0","method":"n"}, {"id":2,"method":"b"}]"#;
        let Inbound::Batch(v) = decode_frame(text.as_bytes(), Some(8)).unwrap() else {
            panic!()
        };
        assert_eq!(v.len(), 4);
        assert!(matches!(&v[0], Ok(Message::Request(_))));
        assert!(matches!(&v[1], Err(m) if m.id.is_none()));
        assert!(matches!(&v[2], Ok(Message::Notification(_))));
        assert!(matches!(&v[3], Err(m) if m.id == Some(Id::Number(2))));

        assert!(matches!(
            decode_frame(b"[]", Some(8)),
            Err(FrameError::EmptyBatch)
        ));
        assert!(matches!(
            decode_frame(b" [ ] ", Some(8)),
            Err(FrameError::EmptyBatch)
        ));
        assert!(matches!(
            decode_frame(b"[{},{},{}]", Some(2)),
            Err(FrameError::BatchTooLarge { limit: 2 })
        ));
        assert!(matches!(decode_frame(b"[{},{}]", Some(2)), Ok(Inbound::Batch(v)) if v.len() == 2));
        // A batch with a syntax error anywhere is one parse error.
        assert!(matches!(
            decode_frame(b"[{},{]", Some(8)),
            Err(FrameError::Parse(_))
        ));
        // Batches are refused where none is expected.
        assert!(matches!(
            decode_frame(b"[{}]", None),
            Err(FrameError::Invalid(_))
        ));
    }
}
