//! The session side of the explicit layer: a handler that returns an [`InputRequired`] on a
//! stateful session (2025-11-25 and earlier) gets real server-to-client requests. Each embedded
//! request is sent to the client on the connection, the answers are kept for the request, and
//! the handler runs again and reads them with `cx.input_response(key)`; rounds are bounded.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use mcp_jsonrpc::{ErrorObject, Peer, RequestOptions};
use mcp_types::wire::{self, InputKind};
use mcp_types::{InputRequest, InputRequests, InputResponse, Project, ProtocolVersion};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::mrtr::InputRequired;
use crate::context::{ClientScope, Resume};
use crate::error::AskError;
use crate::error::rpc_error;

#[derive(Debug, Default)]
struct Gathered {
    answers: BTreeMap<String, InputResponse>,
    state: Option<Value>,
    rounds: u16,
    /// Asks made in replay mode that have no answer yet.
    pending: InputRequests,
}

/// The answers gathered for one request on a session.
#[derive(Debug, Default)]
pub(crate) struct SessionInputs {
    gathered: Mutex<Gathered>,
}

impl SessionInputs {
    fn lock(&self) -> std::sync::MutexGuard<'_, Gathered> {
        self.gathered.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn response(&self, key: &str) -> Option<InputResponse> {
        self.lock().answers.get(key).cloned()
    }

    pub(crate) fn state(&self) -> Option<Value> {
        self.lock().state.clone()
    }

    /// Replay mode: records an ask that has no answer yet.
    pub(crate) fn pend(&self, key: &str, request: InputRequest) {
        self.lock().pending.insert(key.to_owned(), request);
    }

    /// Replay mode: the asks recorded in the run that just ended, as one `InputRequired`.
    pub(crate) fn take_pending(&self) -> Option<InputRequired> {
        let pending = std::mem::take(&mut self.lock().pending);
        if pending.is_empty() {
            return None;
        }
        Some(
            pending
                .into_iter()
                .fold(InputRequired::new(), |ask, (k, r)| ask.request(k, r)),
        )
    }
}

/// The params of an input request, projected to `version` and encoded once, straight from the
/// typed params.
///
/// The wire form has its object members in name order: the generated types declare their fields
/// in that order, and the one exception, the schema keywords a sampling tool's `inputSchema` or
/// `outputSchema` carries beyond the named ones (kept in a flattened map, so written after them),
/// is put back in order by one pass through a [`Value`] (whose maps are sorted), only when the
/// request offers tools.
fn params_of(
    request: InputRequest,
    version: ProtocolVersion,
) -> Result<Option<Box<RawValue>>, serde_json::Error> {
    let raw = match request {
        InputRequest::Elicit(mut r) => {
            r.params.project(version);
            mcp_jsonrpc::to_raw(&r.params)?
        }
        InputRequest::CreateMessage(mut r) => {
            r.params.project(version);
            let raw = mcp_jsonrpc::to_raw(&r.params)?;
            if r.params.tools.as_ref().is_some_and(|t| !t.is_empty()) {
                let sorted: Value = serde_json::from_str(raw.get())?;
                mcp_jsonrpc::to_raw(&sorted)?
            } else {
                raw
            }
        }
        InputRequest::ListRoots(r) => match r.params {
            None => return Ok(None),
            Some(mut p) => {
                p.project(version);
                mcp_jsonrpc::to_raw(&p)?
            }
        },
    };
    Ok(Some(raw))
}

/// Sends every request of `ask` to the client and keeps the answers for the replay.
///
/// Fails with `-32021` when the client did not declare what a request needs, with `-32602`
/// after `max_rounds` rounds, and with the client's own error (or an internal error for a
/// malformed answer, a timeout or a closed connection) when a request fails.
pub(crate) async fn fulfil(
    peer: Peer,
    scope: Arc<ClientScope>,
    inputs: Arc<SessionInputs>,
    ask: InputRequired,
    cancel: CancellationToken,
    max_rounds: u16,
) -> Result<Resume, ErrorObject> {
    {
        let mut g = inputs.lock();
        g.rounds = g.rounds.saturating_add(1);
        if g.rounds > max_rounds {
            return Err(ErrorObject::invalid_params(format!(
                "the request did not complete within {max_rounds} rounds of input"
            )));
        }
    }
    let (requests, state) = ask.into_parts();
    for (key, request) in requests {
        let kind = InputKind::of(&request);
        if !kind.declared_by(&scope.capabilities) {
            return Err(rpc_error(wire::missing_capability(
                &kind.required_capabilities(),
            )));
        }
        let params = params_of(request, scope.version)
            .map_err(|e| ErrorObject::internal_error(format!("input request {key}: {e}")))?;
        let call = peer.request(kind.method(), params, RequestOptions::new());
        let raw = match cancel.run_until_cancelled(call).await {
            Some(r) => r.map_err(AskError::from_rpc),
            None => Err(AskError::Cancelled),
        }
        .map_err(|e| e.to_error_object())?;
        let value: Value = serde_json::from_str(raw.get()).map_err(ErrorObject::internal_error)?;
        let answer = kind.parse_response(&value).map_err(|e| {
            ErrorObject::internal_error(format!("the client's answer to {key}: {e}"))
        })?;
        inputs.lock().answers.insert(key, answer);
    }
    if state.is_some() {
        inputs.lock().state = state;
    }
    Ok(Resume::Replay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the params were encoded as before they were encoded straight from the typed
    /// params: the typed params turned into a `Value`, then written.
    fn through_value(request: InputRequest, version: ProtocolVersion) -> Option<String> {
        let value = match request {
            InputRequest::Elicit(mut r) => {
                r.params.project(version);
                serde_json::to_value(r.params)
            }
            InputRequest::CreateMessage(mut r) => {
                r.params.project(version);
                serde_json::to_value(r.params)
            }
            InputRequest::ListRoots(r) => {
                let mut p = r.params?;
                p.project(version);
                serde_json::to_value(p)
            }
        };
        Some(
            mcp_jsonrpc::to_raw(&value.unwrap())
                .unwrap()
                .get()
                .to_owned(),
        )
    }

    #[test]
    fn input_request_params_are_written_as_through_a_value() {
        let requests = [
            json!({"method": "elicitation/create", "params": {
                "mode": "form", "message": "n?", "_meta": {"z": 1, "a": 2},
                "requestedSchema": {"type": "object", "required": ["n"], "properties": {
                    "n": {"type": "number", "minimum": 1.5, "title": "N"},
                    "c": {"type": "string", "enum": ["x", "y"]}
                }}
            }}),
            json!({"method": "elicitation/create", "params": {
                "mode": "url", "message": "go", "url": "https://example.com/x",
                "elicitationId": "e1"
            }}),
            json!({"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10, "temperature": 0.5, "stopSequences": ["a"],
                "modelPreferences": {"hints": [{"name": "m"}], "speedPriority": 1.0},
                "metadata": {"b": 1, "a": [2.5e30]}
            }}),
            json!({"method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                "maxTokens": 10,
                "tools": [{"name": "t", "description": "d", "inputSchema": {
                    "type": "object", "properties": {"q": {"type": "string"}},
                    "additionalProperties": false, "$schema": "x", "$defs": {}
                }, "outputSchema": {"type": "object", "title": "o"}}],
                "toolChoice": {"mode": "auto"}
            }}),
            json!({"method": "roots/list", "params": {"_meta": {"k": true}}}),
            json!({"method": "roots/list"}),
        ];
        for request in requests {
            let request: InputRequest = serde_json::from_value(request).unwrap();
            for version in [ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25] {
                let expected = through_value(request.clone(), version);
                let got = params_of(request.clone(), version)
                    .unwrap()
                    .map(|raw| raw.get().to_owned());
                assert_eq!(got, expected);
            }
        }
    }
}
