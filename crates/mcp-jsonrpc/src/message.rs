//! The JSON-RPC 2.0 message model as MCP restricts it.

use bytes::{BufMut, BytesMut};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde::ser::{SerializeStruct, Serializer};
use serde_json::value::RawValue;

use crate::decode;
use crate::error::{ErrorObject, FrameError, InvalidMessage};
use crate::id::Id;
use crate::raw::RawJson;

/// Serializes any value into raw JSON, for params, results and error data.
///
/// ```
/// let raw = mcp_jsonrpc::to_raw(&serde_json::json!({"name": "echo"})).unwrap();
/// assert_eq!(raw.get(), r#"{"name":"echo"}"#);
/// ```
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Result<Box<RawValue>, serde_json::Error> {
    serde_json::value::to_raw_value(value)
}

/// Decodes raw JSON into any owned type.
///
/// ```
/// let raw = mcp_jsonrpc::to_raw(&[1, 2, 3]).unwrap();
/// let v: Vec<u8> = mcp_jsonrpc::from_raw(&raw).unwrap();
/// assert_eq!(v, [1, 2, 3]);
/// ```
pub fn from_raw<T: DeserializeOwned>(raw: &RawValue) -> Result<T, serde_json::Error> {
    serde_json::from_str(raw.get())
}

/// Decodes optional params; absent params decode as an empty object (`{}`), so a params type
/// whose fields are all optional accepts a request without params.
fn decode_params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    let text = params.map_or("{}", RawValue::get);
    serde_json::from_str(text).map_err(ErrorObject::invalid_params)
}

/// A request: a call that expects a response.
#[derive(Debug, Clone)]
pub struct Request {
    /// The request id (never null).
    pub id: Id,
    /// The method name.
    pub method: String,
    /// The params (an object or array), kept as raw JSON.
    pub params: Option<Box<RawValue>>,
}

impl Request {
    /// A request with raw params.
    pub fn new(
        id: impl Into<Id>,
        method: impl Into<String>,
        params: Option<Box<RawValue>>,
    ) -> Self {
        Request {
            id: id.into(),
            method: method.into(),
            params,
        }
    }

    /// A request whose params are serialized from `params`.
    pub fn with_params<T: Serialize + ?Sized>(
        id: impl Into<Id>,
        method: impl Into<String>,
        params: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(id, method, Some(to_raw(params)?)))
    }

    /// Decodes the params into `T`; failures become a `-32602` invalid params error ready to be
    /// returned from a handler. Absent params decode as `{}`.
    ///
    /// ```
    /// #[derive(serde::Deserialize, Debug)]
    /// struct Args { name: String }
    /// let req = mcp_jsonrpc::Request::with_params(1, "tools/call", &serde_json::json!({"name": "x"})).unwrap();
    /// assert_eq!(req.params_as::<Args>().unwrap().name, "x");
    /// let err = mcp_jsonrpc::Request::new(2, "tools/call", None).params_as::<Args>().unwrap_err();
    /// assert_eq!(err.code, mcp_jsonrpc::codes::INVALID_PARAMS);
    /// ```
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, ErrorObject> {
        decode_params(self.params.as_deref())
    }
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.method == other.method && raw_eq(&self.params, &other.params)
    }
}

/// A notification: a message that gets no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The params (an object or array), kept as raw JSON.
    pub params: Option<Box<RawValue>>,
}

impl Notification {
    /// A notification with raw params.
    pub fn new(method: impl Into<String>, params: Option<Box<RawValue>>) -> Self {
        Notification {
            method: method.into(),
            params,
        }
    }

    /// A notification whose params are serialized from `params`.
    pub fn with_params<T: Serialize + ?Sized>(
        method: impl Into<String>,
        params: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(method, Some(to_raw(params)?)))
    }

    /// Decodes the params into `T`, like [`Request::params_as`].
    pub fn params_as<T: DeserializeOwned>(&self) -> Result<T, ErrorObject> {
        decode_params(self.params.as_deref())
    }
}

impl PartialEq for Notification {
    fn eq(&self, other: &Self) -> bool {
        self.method == other.method && raw_eq(&self.params, &other.params)
    }
}

/// A response: exactly one of a result or an error.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request answered. `None` is written as `"id": null` and is only meaningful
    /// for error responses to input whose id could not be read.
    pub id: Option<Id>,
    /// The result (raw JSON) or the error.
    pub result: Result<RawJson, ErrorObject>,
}

impl Response {
    /// A successful response carrying a raw result (a [`RawJson`] or a [`RawValue`]).
    pub fn success(id: Id, result: impl Into<RawJson>) -> Self {
        Response {
            id: Some(id),
            result: Ok(result.into()),
        }
    }

    /// A successful response whose result is serialized from `result`.
    pub fn success_from<T: Serialize + ?Sized>(
        id: Id,
        result: &T,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::success(id, RawJson::serialize(result)?))
    }

    /// An error response; `id` is `None` when the request's id could not be determined.
    pub fn error(id: Option<Id>, error: ErrorObject) -> Self {
        Response {
            id,
            result: Err(error),
        }
    }

    /// Decodes the result into `T`.
    pub fn result_as<T: DeserializeOwned>(
        &self,
    ) -> Result<Result<T, ErrorObject>, serde_json::Error> {
        match &self.result {
            Ok(raw) => raw.parse().map(Ok),
            Err(e) => Ok(Err(e.clone())),
        }
    }
}

impl PartialEq for Response {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
            && match (&self.result, &other.result) {
                (Ok(a), Ok(b)) => a.get() == b.get(),
                (Err(a), Err(b)) => a == b,
                _ => false,
            }
    }
}

fn raw_eq(a: &Option<Box<RawValue>>, b: &Option<Box<RawValue>>) -> bool {
    a.as_ref().map(|r| r.get()) == b.as_ref().map(|r| r.get())
}

/// Any JSON-RPC message.
///
/// Decoding is a single pass of `serde_json` over the bytes: params, results and error data stay
/// raw until a handler asks for a typed value.
///
/// ```
/// use mcp_jsonrpc::{Message, Id};
///
/// let msg = Message::from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
/// match &msg {
///     Message::Request(r) => assert_eq!((r.id.clone(), r.method.as_str()), (Id::Number(1), "ping")),
///     _ => unreachable!(),
/// }
/// assert_eq!(msg.to_string(), r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response.
    Response(Response),
}

impl Message {
    /// Decodes one message (a batch is rejected with `-32600`).
    pub fn from_slice(bytes: &[u8]) -> Result<Message, FrameError> {
        match decode::decode_frame(bytes, None)? {
            Inbound::Single(m) => Ok(m),
            Inbound::Batch(_) => Err(FrameError::Invalid(InvalidMessage {
                id: None,
                error: ErrorObject::invalid_request("expected a single message, got a batch"),
                response_like: false,
            })),
        }
    }

    /// Appends the compact JSON encoding of this message to `dst`.
    ///
    /// The envelope is written directly (the same bytes `serde_json` writes for the message):
    /// raw params and results are copied once, only the id, the method and an error object go
    /// through the serializer, and `dst` grows at most once.
    pub fn encode_into(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        dst.reserve(self.encoded_len());
        match self {
            Message::Request(r) => {
                dst.put_slice(br#"{"jsonrpc":"2.0","id":"#);
                serde_json::to_writer(dst.writer(), &r.id)?;
                dst.put_slice(br#","method":"#);
                serde_json::to_writer(dst.writer(), &r.method)?;
                if let Some(p) = &r.params {
                    dst.put_slice(br#","params":"#);
                    dst.put_slice(p.get().as_bytes());
                }
            }
            Message::Notification(n) => {
                dst.put_slice(br#"{"jsonrpc":"2.0","method":"#);
                serde_json::to_writer(dst.writer(), &n.method)?;
                if let Some(p) = &n.params {
                    dst.put_slice(br#","params":"#);
                    dst.put_slice(p.get().as_bytes());
                }
            }
            Message::Response(r) => {
                dst.put_slice(br#"{"jsonrpc":"2.0","id":"#);
                match &r.id {
                    Some(id) => serde_json::to_writer(dst.writer(), id)?,
                    None => dst.put_slice(b"null"),
                }
                match &r.result {
                    Ok(raw) => {
                        dst.put_slice(br#","result":"#);
                        dst.put_slice(raw.get().as_bytes());
                    }
                    Err(error) => {
                        dst.put_slice(br#","error":"#);
                        serde_json::to_writer(dst.writer(), error)?;
                    }
                }
            }
        }
        dst.put_u8(b'}');
        Ok(())
    }

    /// The length of the message's compact JSON as [`encode_into`](Self::encode_into) writes
    /// it: exact unless a string (the id, the method) needs escapes or the message is an error
    /// response (estimated), so a buffer of this size is usually filled exactly.
    ///
    /// ```
    /// use mcp_jsonrpc::{Message, Response, to_raw};
    /// let m = Message::Response(Response::success(7i64.into(), to_raw(&[1, 2]).unwrap()));
    /// let mut buf = bytes::BytesMut::new();
    /// m.encode_into(&mut buf).unwrap();
    /// assert_eq!(buf.len(), m.encoded_len());
    /// ```
    pub fn encoded_len(&self) -> usize {
        /// `"text"`, unescaped.
        fn string(text: &str) -> usize {
            text.len() + 2
        }
        fn id(id: &Id) -> usize {
            match id {
                Id::Number(n) => {
                    let digits = n
                        .unsigned_abs()
                        .checked_ilog10()
                        .map_or(1, |d| d as usize + 1);
                    digits + usize::from(*n < 0)
                }
                Id::String(s) => string(s),
            }
        }
        fn params(raw: Option<&RawValue>) -> usize {
            raw.map_or(0, |r| r#","params":"#.len() + r.get().len())
        }
        match self {
            Message::Request(r) => {
                r#"{"jsonrpc":"2.0","id":,"method":}"#.len()
                    + id(&r.id)
                    + string(&r.method)
                    + params(r.params.as_deref())
            }
            Message::Notification(n) => {
                r#"{"jsonrpc":"2.0","method":}"#.len()
                    + string(&n.method)
                    + params(n.params.as_deref())
            }
            Message::Response(r) => {
                let id = r.id.as_ref().map_or(4, id);
                match &r.result {
                    Ok(raw) => r#"{"jsonrpc":"2.0","id":,"result":}"#.len() + id + raw.get().len(),
                    Err(e) => {
                        r#"{"jsonrpc":"2.0","id":,"error":{"code":-32000,"message":}}"#.len()
                            + id
                            + string(&e.message)
                            + e.data
                                .as_ref()
                                .map_or(0, |d| r#","data":"#.len() + d.get().len())
                    }
                }
            }
        }
    }

    /// The method name, for requests and notifications.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) => None,
        }
    }
}

impl std::fmt::Display for Message {
    /// The compact JSON encoding.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

impl From<Request> for Message {
    fn from(value: Request) -> Self {
        Message::Request(value)
    }
}

impl From<Notification> for Message {
    fn from(value: Notification) -> Self {
        Message::Notification(value)
    }
}

impl From<Response> for Message {
    fn from(value: Response) -> Self {
        Message::Response(value)
    }
}

/// A borrowed view of a message, for serializing without cloning.
pub(crate) enum MessageRef<'a> {
    Request(&'a Request),
    Notification(&'a Notification),
    Response(&'a Response),
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => MessageRef::Request(r).serialize(serializer),
            Message::Notification(n) => MessageRef::Notification(n).serialize(serializer),
            Message::Response(r) => MessageRef::Response(r).serialize(serializer),
        }
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MessageRef::Request(self).serialize(serializer)
    }
}

impl Serialize for Notification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MessageRef::Notification(self).serialize(serializer)
    }
}

/// Writes `"id": null` for an absent id (error responses to unreadable input).
impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        MessageRef::Response(self).serialize(serializer)
    }
}

impl Serialize for MessageRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            MessageRef::Request(r) => {
                let n = if r.params.is_some() { 4 } else { 3 };
                let mut s = serializer.serialize_struct("Request", n)?;
                s.serialize_field("jsonrpc", "2.0")?;
                s.serialize_field("id", &r.id)?;
                s.serialize_field("method", &r.method)?;
                if let Some(p) = &r.params {
                    s.serialize_field("params", p)?;
                }
                s.end()
            }
            MessageRef::Notification(n) => {
                let len = if n.params.is_some() { 3 } else { 2 };
                let mut s = serializer.serialize_struct("Notification", len)?;
                s.serialize_field("jsonrpc", "2.0")?;
                s.serialize_field("method", &n.method)?;
                if let Some(p) = &n.params {
                    s.serialize_field("params", p)?;
                }
                s.end()
            }
            MessageRef::Response(r) => {
                let mut s = serializer.serialize_struct("Response", 3)?;
                s.serialize_field("jsonrpc", "2.0")?;
                s.serialize_field("id", &r.id)?;
                match &r.result {
                    Ok(result) => s.serialize_field("result", result)?,
                    Err(error) => s.serialize_field("error", error)?,
                }
                s.end()
            }
        }
    }
}

/// What one inbound frame carried: a single message or a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// One message.
    Single(Message),
    /// A batch (a JSON array of messages, 2025-03-26). Each element is decoded on its own, so bad
    /// elements can be answered individually while the good ones are processed.
    Batch(Vec<Result<Message, InvalidMessage>>),
}

impl Inbound {
    /// Decodes one frame's bytes: a message or a batch of at most `max_batch` elements.
    pub fn from_slice(bytes: &[u8], max_batch: usize) -> Result<Inbound, FrameError> {
        decode::decode_frame(bytes, Some(max_batch))
    }
}

/// What one outbound frame carries: a single message or a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// One message.
    Single(Message),
    /// A batch, written as one JSON array.
    Batch(Vec<Message>),
}

impl Frame {
    /// Appends the compact JSON encoding of this frame to `dst`.
    pub fn encode_into(&self, dst: &mut BytesMut) -> Result<(), serde_json::Error> {
        match self {
            Frame::Single(m) => m.encode_into(dst),
            Frame::Batch(b) => {
                // Element by element, as single messages are written (each reserves its own
                // length): raw params and results are copied, not parsed again.
                dst.put_u8(b'[');
                for (i, m) in b.iter().enumerate() {
                    if i > 0 {
                        dst.put_u8(b',');
                    }
                    m.encode_into(dst)?;
                }
                dst.put_u8(b']');
                Ok(())
            }
        }
    }
}

impl From<Message> for Frame {
    fn from(value: Message) -> Self {
        Frame::Single(value)
    }
}
