//! Conversions from what handlers return to protocol results.
//!
//! One trait per kind of result, in the style of axum's `IntoResponse`: a tool may return a
//! [`CallToolResult`], a `String`, a content block or a vector of them, [`Structured<T>`], `()` or
//! a `Result<T, E>` whose error becomes an `isError` result (or, for [`ErrorObject`] and
//! [`ToolError::Protocol`], a JSON-RPC error).

use std::any::{Any, TypeId};
use std::fmt::Display;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use mcp_jsonrpc::ErrorObject;
use mcp_types::{
    CallToolResult, ContentBlock, GetPromptResult, PromptMessage, ReadResourceResult,
    ResourceContentsKind,
};

use crate::error::ToolError;
use crate::ext::{PromptMessageExt, ResourceContentsExt};
use crate::input::InputRequired;

/// What a handler's return value converts to: a result (or a JSON-RPC error), or a request for
/// client input ([`InputRequired`]). Used by the registry; handlers never name it.
#[doc(hidden)]
#[derive(Debug)]
pub enum Reply<T> {
    /// The final result or error.
    Done(Result<T, ErrorObject>),
    /// The handler asked for client input.
    InputRequired(InputRequired),
}

/// The ask carried by an error value, if it is one: [`InputRequired`] itself or
/// [`ToolError::InputRequired`].
fn ask_of<E: 'static>(e: &E) -> Option<InputRequired> {
    let any: &dyn Any = e;
    if let Some(ask) = any.downcast_ref::<InputRequired>() {
        return Some(ask.clone());
    }
    match any.downcast_ref::<ToolError>() {
        Some(ToolError::InputRequired(ask)) => Some((**ask).clone()),
        _ => None,
    }
}

/// A tool result carrying structured content.
///
/// The tool's `outputSchema` is generated from `T` (unless one was given explicitly), the value is
/// sent as `structuredContent` and, for clients that read only `content`, as a JSON text block.
/// Before sending, the value is checked against the output schema; a mismatch is a server bug and
/// is answered with an internal error instead of an invalid result.
///
/// ```
/// use mcp_server::Structured;
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Forecast { celsius: f64 }
/// let out = Structured(Forecast { celsius: 21.5 });
/// # let _ = out;
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Structured<T>(pub T);

/// Converts a tool handler's return value into a `tools/call` result.
pub trait IntoCallToolResult {
    /// The result, or a JSON-RPC error for protocol failures.
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject>;

    /// The output schema implied by the type, if it produces structured content.
    fn output_schema() -> Option<Value> {
        None
    }

    /// The result, or the handler's request for client input.
    #[doc(hidden)]
    fn into_tool_reply(self) -> Reply<CallToolResult>
    where
        Self: Sized,
    {
        Reply::Done(self.into_call_tool_result())
    }

    /// Whether [`into_tool_reply`](Self::into_tool_reply) may return an ask rather than a
    /// result. A tool whose output cannot ask runs once, without the state a replay would
    /// need; the default keeps that state.
    #[doc(hidden)]
    fn may_ask() -> bool
    where
        Self: Sized,
    {
        true
    }
}

impl IntoCallToolResult for InputRequired {
    /// Outside a request that can ask for input this is an internal error; the registry turns
    /// it into an `input_required` result or requests to the client instead.
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        Err(ErrorObject::internal_error(self))
    }

    fn into_tool_reply(self) -> Reply<CallToolResult> {
        Reply::InputRequired(self)
    }
}

impl IntoCallToolResult for CallToolResult {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        Ok(self)
    }

    fn may_ask() -> bool {
        false
    }
}

impl IntoCallToolResult for String {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        Ok(CallToolResult::text(self))
    }

    fn may_ask() -> bool {
        false
    }
}

impl IntoCallToolResult for &'static str {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        Ok(CallToolResult::text(self))
    }

    fn may_ask() -> bool {
        false
    }
}

impl IntoCallToolResult for () {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        Ok(CallToolResult::new(Vec::new()))
    }

    fn may_ask() -> bool {
        false
    }
}

impl IntoCallToolResult for ContentBlock {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        Ok(CallToolResult::new(vec![self]))
    }

    fn may_ask() -> bool {
        false
    }
}

impl IntoCallToolResult for Vec<ContentBlock> {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        Ok(CallToolResult::new(self))
    }

    fn may_ask() -> bool {
        false
    }
}

impl<T: Serialize + JsonSchema> IntoCallToolResult for Structured<T> {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        let value = serde_json::to_value(&self.0).map_err(|e| {
            ErrorObject::internal_error(format!("tool output is not serializable: {e}"))
        })?;
        if !value.is_object() {
            return Err(ErrorObject::internal_error(
                "structured tool output must serialize to a JSON object",
            ));
        }
        let text = value.to_string();
        Ok(CallToolResult {
            structured_content: Some(value),
            ..CallToolResult::text(text)
        })
    }

    fn output_schema() -> Option<Value> {
        Some(crate::schema::schema_for::<T>())
    }

    fn may_ask() -> bool {
        false
    }
}

/// Turns an error value into the failure of a call: [`ErrorObject`] and [`ToolError::Protocol`]
/// stay protocol errors, everything else becomes an `isError` result with the error's text.
fn tool_failure<E: Display + 'static>(e: E) -> Result<CallToolResult, ErrorObject> {
    match protocol_error_of(&e) {
        Some(data) => Err(data),
        None => Ok(CallToolResult::error(e.to_string())),
    }
}

/// The JSON-RPC error an error value stands for, if it is one: [`ErrorObject`] itself or
/// [`ToolError::Protocol`].
fn protocol_error_of<E: 'static>(e: &E) -> Option<ErrorObject> {
    let any: &dyn Any = e;
    if let Some(data) = any.downcast_ref::<ErrorObject>() {
        return Some(data.clone());
    }
    match any.downcast_ref::<ToolError>() {
        Some(ToolError::Protocol(data)) => Some(data.clone()),
        _ => None,
    }
}

/// The reply for a handler's error: its ask when it carries one, else `failure(e)`.
fn error_reply<T, E: 'static>(e: E, failure: impl FnOnce(E) -> Result<T, ErrorObject>) -> Reply<T> {
    match ask_of(&e) {
        Some(ask) => Reply::InputRequired(ask),
        None => Reply::Done(failure(e)),
    }
}

impl<T: IntoCallToolResult, E: Display + 'static> IntoCallToolResult for Result<T, E> {
    fn into_call_tool_result(self) -> Result<CallToolResult, ErrorObject> {
        match self {
            Ok(v) => v.into_call_tool_result(),
            Err(e) => tool_failure(e),
        }
    }

    fn into_tool_reply(self) -> Reply<CallToolResult> {
        match self {
            Ok(v) => v.into_tool_reply(),
            Err(e) => error_reply(e, tool_failure),
        }
    }

    fn output_schema() -> Option<Value> {
        T::output_schema()
    }

    /// The error asks when it is one of the types [`ask_of`] recognizes.
    fn may_ask() -> bool {
        T::may_ask()
            || TypeId::of::<E>() == TypeId::of::<InputRequired>()
            || TypeId::of::<E>() == TypeId::of::<ToolError>()
    }
}

/// Converts an error of a resource or prompt handler to a JSON-RPC error: [`ErrorObject`] is kept
/// as it is, anything else becomes an internal error with the error's text.
fn protocol_failure<E: Display + 'static>(e: E) -> ErrorObject {
    protocol_error_of(&e).unwrap_or_else(|| ErrorObject::internal_error(e.to_string()))
}

/// Converts a resource handler's return value into a `resources/read` result.
///
/// Plain text and bytes become contents with the URI that was read and the MIME type declared
/// when the resource was registered.
pub trait IntoReadResourceResult {
    /// The result for `uri`, or a JSON-RPC error.
    fn into_read_resource_result(
        self,
        uri: &str,
        mime_type: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject>;

    /// The result, or the handler's request for client input.
    #[doc(hidden)]
    fn into_resource_reply(self, uri: &str, mime_type: Option<&str>) -> Reply<ReadResourceResult>
    where
        Self: Sized,
    {
        Reply::Done(self.into_read_resource_result(uri, mime_type))
    }
}

impl IntoReadResourceResult for InputRequired {
    fn into_read_resource_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        Err(ErrorObject::internal_error(self))
    }

    fn into_resource_reply(self, _uri: &str, _mime: Option<&str>) -> Reply<ReadResourceResult> {
        Reply::InputRequired(self)
    }
}

impl IntoReadResourceResult for ReadResourceResult {
    fn into_read_resource_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        Ok(self)
    }
}

impl IntoReadResourceResult for ResourceContentsKind {
    fn into_read_resource_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        Ok(read_result(vec![self]))
    }
}

impl IntoReadResourceResult for Vec<ResourceContentsKind> {
    fn into_read_resource_result(
        self,
        _uri: &str,
        _mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        Ok(read_result(self))
    }
}

/// A `resources/read` result with these contents.
pub(crate) fn read_result(contents: Vec<ResourceContentsKind>) -> ReadResourceResult {
    ReadResourceResult {
        meta: None,
        cache_scope: None,
        contents,
        result_type: None,
        ttl_ms: None,
    }
}

fn with_mime(c: ResourceContentsKind, mime: Option<&str>) -> ResourceContentsKind {
    match mime {
        Some(m) => c.with_mime_type(m),
        None => c,
    }
}

impl IntoReadResourceResult for String {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        Ok(read_result(vec![with_mime(
            ResourceContentsKind::text(uri, self),
            mime,
        )]))
    }
}

impl IntoReadResourceResult for &'static str {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        self.to_owned().into_read_resource_result(uri, mime)
    }
}

impl IntoReadResourceResult for Vec<u8> {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        Ok(read_result(vec![with_mime(
            ResourceContentsKind::blob(uri, self),
            mime,
        )]))
    }
}

impl<T: IntoReadResourceResult, E: Display + 'static> IntoReadResourceResult for Result<T, E> {
    fn into_read_resource_result(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<ReadResourceResult, ErrorObject> {
        match self {
            Ok(v) => v.into_read_resource_result(uri, mime),
            Err(e) => Err(protocol_failure(e)),
        }
    }

    fn into_resource_reply(self, uri: &str, mime: Option<&str>) -> Reply<ReadResourceResult> {
        match self {
            Ok(v) => v.into_resource_reply(uri, mime),
            Err(e) => error_reply(e, |e| Err(protocol_failure(e))),
        }
    }
}

/// Converts a prompt handler's return value into a `prompts/get` result.
pub trait IntoGetPromptResult {
    /// The result, or a JSON-RPC error.
    fn into_get_prompt_result(self) -> Result<GetPromptResult, ErrorObject>;

    /// The result, or the handler's request for client input.
    #[doc(hidden)]
    fn into_prompt_reply(self) -> Reply<GetPromptResult>
    where
        Self: Sized,
    {
        Reply::Done(self.into_get_prompt_result())
    }
}

impl IntoGetPromptResult for InputRequired {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        Err(ErrorObject::internal_error(self))
    }

    fn into_prompt_reply(self) -> Reply<GetPromptResult> {
        Reply::InputRequired(self)
    }
}

impl IntoGetPromptResult for GetPromptResult {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        Ok(self)
    }
}

impl IntoGetPromptResult for Vec<PromptMessage> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        Ok(GetPromptResult {
            meta: None,
            description: None,
            messages: self,
            result_type: None,
        })
    }
}

impl IntoGetPromptResult for PromptMessage {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        vec![self].into_get_prompt_result()
    }
}

impl IntoGetPromptResult for String {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        PromptMessage::user(ContentBlock::text(self)).into_get_prompt_result()
    }
}

impl<T: IntoGetPromptResult, E: Display + 'static> IntoGetPromptResult for Result<T, E> {
    fn into_get_prompt_result(self) -> Result<GetPromptResult, ErrorObject> {
        match self {
            Ok(v) => v.into_get_prompt_result(),
            Err(e) => Err(protocol_failure(e)),
        }
    }

    fn into_prompt_reply(self) -> Reply<GetPromptResult> {
        match self {
            Ok(v) => v.into_prompt_reply(),
            Err(e) => error_reply(e, |e| Err(protocol_failure(e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ext::ContentBlockExt;

    #[derive(Serialize, JsonSchema)]
    struct Out {
        n: i32,
    }

    #[test]
    fn only_outputs_that_can_carry_an_ask_may_ask() {
        assert!(!String::may_ask());
        assert!(!<&'static str>::may_ask());
        assert!(!<()>::may_ask());
        assert!(!CallToolResult::may_ask());
        assert!(!Vec::<ContentBlock>::may_ask());
        assert!(!Structured::<Out>::may_ask());
        assert!(!Result::<String, std::io::Error>::may_ask());
        assert!(!Result::<String, String>::may_ask());
        assert!(InputRequired::may_ask());
        assert!(Result::<String, ToolError>::may_ask());
        assert!(Result::<String, InputRequired>::may_ask());
        assert!(Result::<InputRequired, String>::may_ask());
        // What `may_ask` promises: an error it says cannot ask is not taken for one.
        let plain: Result<String, String> = Err("boom".into());
        assert!(matches!(plain.into_tool_reply(), Reply::Done(_)));
        let ask: Result<String, ToolError> =
            Err(ToolError::InputRequired(Box::new(InputRequired::new())));
        assert!(matches!(ask.into_tool_reply(), Reply::InputRequired(_)));
    }

    #[test]
    fn strings_and_blocks() {
        let r = "hi".to_owned().into_call_tool_result().unwrap();
        assert_eq!(r.content, vec![ContentBlock::text("hi")]);
        assert_eq!(r.is_error, None);
    }

    #[test]
    fn errors_become_is_error_results() {
        let r: Result<String, String> = Err("boom".into());
        let r = r.into_call_tool_result().unwrap();
        assert_eq!(r.is_error, Some(true));
        assert_eq!(r.content[0].as_text(), Some("boom"));
    }

    #[test]
    fn protocol_errors_stay_protocol_errors() {
        let r: Result<String, ToolError> =
            Err(ToolError::Protocol(ErrorObject::invalid_params("x")));
        assert_eq!(r.into_call_tool_result().unwrap_err().code, -32602);
        let r: Result<String, ErrorObject> = Err(ErrorObject::internal_error("y"));
        assert_eq!(r.into_call_tool_result().unwrap_err().code, -32603);
        let r: Result<String, ToolError> = Err(ToolError::execution("z"));
        assert_eq!(r.into_call_tool_result().unwrap().is_error, Some(true));
    }

    #[test]
    fn structured_output_has_schema_and_fallback() {
        let r = Structured(Out { n: 3 }).into_call_tool_result().unwrap();
        assert_eq!(r.structured_content, Some(serde_json::json!({"n": 3})));
        assert_eq!(r.content[0].as_text(), Some("{\"n\":3}"));
        let schema = <Result<Structured<Out>, String>>::output_schema().unwrap();
        assert_eq!(schema["type"], "object");
        assert!(schema.get("$schema").is_none());
    }

    #[test]
    fn resource_text_gets_uri_and_mime() {
        let r = "body"
            .into_read_resource_result("test://a", Some("text/plain"))
            .unwrap();
        assert_eq!(
            r.contents,
            vec![ResourceContentsKind::text("test://a", "body").with_mime_type("text/plain")]
        );
        let r: Result<String, String> = Err("gone".into());
        assert_eq!(
            r.into_read_resource_result("x", None).unwrap_err().code,
            -32603
        );
    }
}
