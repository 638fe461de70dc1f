//! Asking the client for input, below both eras and the tasks that use it: the
//! [`InputRequired`] a handler returns to ask explicitly, and the input request a context's
//! ask is made into.

use mcp_types::{
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    InputRequest, InputRequests, ListRootsRequest, tag,
};
use serde_json::Value;
use serde_json::value::RawValue;

/// What a handler returns to ask the client for input explicitly (the lower layer of the two
/// ways to ask): requests keyed by name, and optional state of its own. Under 2026-07-28 it is
/// sent as an `input_required` result with the state sealed into `requestState`; on the retry
/// the handler reads the answers with `cx.input_response(key)` and its state with
/// `cx.input_state()`.
///
/// ```
/// use mcp_server::InputRequired;
/// use mcp_types::ElicitRequestParams;
///
/// let params: ElicitRequestParams = serde_json::from_value(serde_json::json!({
///     "mode": "form",
///     "message": "Deploy to production?",
///     "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
/// }))?;
/// let ask = InputRequired::new().elicit("confirm", params).state(serde_json::json!({"step": 1}));
/// assert_eq!(ask.requests().len(), 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequired {
    pub(crate) requests: InputRequests,
    pub(crate) state: Option<Value>,
}

impl InputRequired {
    /// No requests and no state yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the user through the client (`elicitation/create`).
    pub fn elicit(self, key: impl Into<String>, params: ElicitRequestParams) -> Self {
        self.request(
            key,
            InputRequest::Elicit(ElicitRequest {
                id: None,
                jsonrpc: None,
                method: tag::ElicitationCreate,
                params,
            }),
        )
    }

    /// Asks the client's language model (`sampling/createMessage`).
    pub fn sample(self, key: impl Into<String>, params: CreateMessageRequestParams) -> Self {
        self.request(
            key,
            InputRequest::CreateMessage(CreateMessageRequest {
                id: None,
                jsonrpc: None,
                method: tag::SamplingCreateMessage,
                params,
            }),
        )
    }

    /// Asks for the client's roots (`roots/list`).
    pub fn roots(self, key: impl Into<String>) -> Self {
        self.request(key, InputRequest::ListRoots(ListRootsRequest::default()))
    }

    /// Adds any input request under `key` (a later request with the same key replaces it).
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.insert(key.into(), request);
        self
    }

    /// State the handler wants back on the retry (sealed, so the client cannot change it, but
    /// readable by the client: no secrets).
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The requests, by key.
    pub fn requests(&self) -> &InputRequests {
        &self.requests
    }

    /// The handler's state, if any.
    pub fn state_value(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    pub(crate) fn into_parts(self) -> (InputRequests, Option<Value>) {
        (self.requests, self.state)
    }
}

impl std::fmt::Display for InputRequired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("input required")?;
        for (i, key) in self.requests.keys().enumerate() {
            f.write_str(if i == 0 { ": " } else { ", " })?;
            f.write_str(key)?;
        }
        Ok(())
    }
}

/// A request for client input as a context makes it: the method, the params encoded for the
/// request's revision (what a session sends the client) and the same params as the typed input
/// request (what the stateless revision and tasks record and answer), each made once from the
/// handler's typed params, neither read back from the other.
pub(crate) struct Outgoing {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub(crate) method: &'static str,
    /// The params as sent, projected to the request's revision.
    pub(crate) params: Option<Box<RawValue>>,
    /// The same request, typed.
    pub(crate) request: InputRequest,
}
