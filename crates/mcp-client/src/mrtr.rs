//! Multi round-trip requests (2026-07-28): a `tools/call`, `prompts/get` or `resources/read`
//! may be answered with `resultType: "input_required"`, naming requests for the client
//! (`inputRequests`) and an opaque `requestState`; the client answers them and retries the
//! same call with `inputResponses` and the state, under a new JSON-RPC id.

use mcp_types::InputRequiredResult;
use mcp_types::wire::ResultType;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::CallError;

/// What one round of a multi round-trip request returned: the final result, or the server's
/// request for input. See [`ClientSession::call_tool_once`](crate::ClientSession::call_tool_once).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome<T> {
    /// The final result (`resultType` `"complete"`, or absent).
    Complete(T),
    /// The server needs input first: answer its `inputRequests` (for example with
    /// [`ClientSession::answer_input_requests`](crate::ClientSession::answer_input_requests))
    /// and call again with `inputResponses` and, when given, the `requestState` unchanged.
    InputRequired(InputRequiredResult),
}

impl<T> Outcome<T> {
    /// The final result, if this is one.
    pub fn complete(self) -> Option<T> {
        match self {
            Outcome::Complete(result) => Some(result),
            Outcome::InputRequired(_) => None,
        }
    }
}

#[derive(Deserialize)]
struct TypeProbe<'a> {
    #[serde(rename = "resultType", default, borrow)]
    result_type: Option<&'a str>,
}

/// Decodes a stateless result: an `InputRequiredResult` or the final `T`.
pub(crate) fn decode_outcome<T: DeserializeOwned>(raw: &RawValue) -> Result<Outcome<T>, CallError> {
    let probe: TypeProbe<'_> = serde_json::from_str(raw.get()).map_err(CallError::Decode)?;
    match ResultType::of_result(probe.result_type) {
        Ok(ResultType::Complete) => serde_json::from_str(raw.get())
            .map(Outcome::Complete)
            .map_err(CallError::Decode),
        Ok(ResultType::InputRequired) => serde_json::from_str(raw.get())
            .map(Outcome::InputRequired)
            .map_err(CallError::Decode),
        Ok(other) => Err(CallError::InvalidResponse(format!(
            "unexpected resultType `{other}`"
        ))),
        Err(other) => Err(CallError::InvalidResponse(format!(
            "unexpected resultType `{other}`"
        ))),
    }
}

/// The params of the retry: the original ones with the answers and the server's state (the
/// state of an earlier round is dropped when this round has none).
pub(crate) fn retry_params(
    params: &Value,
    responses: Map<String, Value>,
    request_state: Option<&str>,
) -> Value {
    let mut next = match params {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    next.insert("inputResponses".into(), Value::Object(responses));
    match request_state {
        Some(state) => {
            next.insert("requestState".into(), Value::String(state.to_owned()));
        }
        None => {
            next.remove("requestState");
        }
    }
    Value::Object(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(value: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&value).unwrap()
    }

    #[test]
    fn result_types_decide_the_outcome() {
        let complete: Outcome<Value> = decode_outcome(&raw(json!({"content": []}))).unwrap();
        assert!(matches!(complete, Outcome::Complete(_)));
        let input: Outcome<Value> = decode_outcome(&raw(json!({
            "resultType": "input_required",
            "inputRequests": {"k": {"method": "roots/list"}},
            "requestState": "s"
        })))
        .unwrap();
        let Outcome::InputRequired(input) = input else {
            panic!("not input_required")
        };
        assert_eq!(input.request_state.as_deref(), Some("s"));
        assert!(decode_outcome::<Value>(&raw(json!({"resultType": "task"}))).is_err());
    }

    #[test]
    fn retries_carry_answers_and_only_the_latest_state() {
        let first = json!({"name": "t", "arguments": {"a": 1}, "requestState": "old"});
        let mut answers = Map::new();
        answers.insert("k".into(), json!({"roots": []}));
        let next = retry_params(&first, answers.clone(), None);
        assert!(next.get("requestState").is_none());
        assert_eq!(next["inputResponses"]["k"]["roots"], json!([]));
        assert_eq!(next["arguments"]["a"], 1);
        let next = retry_params(&first, answers, Some("new"));
        assert_eq!(next["requestState"], "new");
    }
}
