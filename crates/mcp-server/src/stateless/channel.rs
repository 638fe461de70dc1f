//! How a handler reaches the client of a stateless request: notifications go on the request's
//! own stream (its response stream on HTTP), and asks for input are answered from the
//! request's [`Exchange`] or recorded there: nothing is ever sent to the client as a request.

use std::sync::Arc;

use mcp_jsonrpc::{ErrorObject, Peer};
use mcp_types::wire::InputKind;
use mcp_types::{
    CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    InputRequest, InputResponse, ListRootsRequest, ListRootsRequestParams, tag,
};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::mrtr::{Ask, Exchange, InputRequired};
use crate::context::{BoxFuture, ClientChannel, Resume};
use crate::error::CallError;

/// The channel of one stateless request.
pub(crate) struct StatelessChannel {
    /// The connection's peer, related to the request (notifications go on its stream).
    pub(crate) peer: Peer,
    /// The request's multi round-trip bookkeeping (`tools/call`, `prompts/get` and
    /// `resources/read` only; other requests cannot ask for input).
    pub(crate) exchange: Option<Arc<Exchange>>,
    /// The request's method, for the error when it cannot ask.
    pub(crate) method: Arc<str>,
}

/// Builds the input request a context asks for from its method and encoded params.
pub(crate) fn input_request(
    method: &str,
    params: Option<&RawValue>,
) -> Result<InputRequest, CallError> {
    let invalid = |e: serde_json::Error| CallError::InvalidRequest(e.to_string());
    let raw = params.map_or("{}", RawValue::get);
    match InputKind::from_method(method) {
        Some(InputKind::Elicitation) => Ok(InputRequest::Elicit(ElicitRequest {
            id: None,
            jsonrpc: None,
            method: tag::ElicitationCreate,
            params: serde_json::from_str::<ElicitRequestParams>(raw).map_err(invalid)?,
        })),
        Some(InputKind::Sampling) => Ok(InputRequest::CreateMessage(CreateMessageRequest {
            id: None,
            jsonrpc: None,
            method: tag::SamplingCreateMessage,
            params: serde_json::from_str::<CreateMessageRequestParams>(raw).map_err(invalid)?,
        })),
        Some(InputKind::Roots) => Ok(InputRequest::ListRoots(ListRootsRequest {
            params: match params {
                None => None,
                Some(p) => {
                    Some(serde_json::from_str::<ListRootsRequestParams>(p.get()).map_err(invalid)?)
                }
            },
            ..ListRootsRequest::default()
        })),
        None => Err(CallError::InvalidRequest(format!(
            "{method} is not a request for client input"
        ))),
    }
}

impl ClientChannel for StatelessChannel {
    fn request(
        &self,
        key: &str,
        method: &'static str,
        params: Option<Box<RawValue>>,
        _cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Box<RawValue>, CallError>> {
        let result = match &self.exchange {
            None => Err(CallError::NoInputChannel(self.method.to_string())),
            Some(exchange) => input_request(method, params.as_deref()).and_then(|request| {
                match exchange.ask(key, request) {
                    Ask::Answered(answer) => mcp_jsonrpc::to_raw(&*answer)
                        .map_err(|e| CallError::InvalidResponse(e.to_string())),
                    Ask::Pending => Err(CallError::InputRequired),
                    Ask::MissingCapability(kind) => {
                        Err(CallError::MissingCapability(kind.capability()))
                    }
                    Ask::Invalid(message) => Err(CallError::InvalidResponse(message)),
                }
            }),
        };
        Box::pin(std::future::ready(result))
    }

    fn notify(&self, method: &'static str, params: Box<RawValue>) -> BoxFuture<'static, ()> {
        let peer = self.peer.clone();
        Box::pin(async move {
            if let Err(e) = peer.notify(method, Some(params)).await {
                tracing::debug!(%method, error = %e, "notification not sent");
            }
        })
    }

    fn missing_capability(&self, path: &'static str) {
        if let Some(exchange) = &self.exchange {
            exchange.missing_capability(path);
        }
    }

    fn input_response(&self, key: &str) -> Option<InputResponse> {
        self.exchange.as_ref()?.input_response(key)
    }

    fn input_state(&self) -> Option<Value> {
        self.exchange.as_ref()?.state().cloned()
    }

    fn input_required(
        &self,
        ask: InputRequired,
        _cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Resume, ErrorObject>> {
        let result = match &self.exchange {
            Some(exchange) => {
                exchange.suspend(ask);
                Ok(Resume::Stop)
            }
            None => Err(ErrorObject::internal_error(CallError::NoInputChannel(
                self.method.to_string(),
            ))),
        };
        Box::pin(std::future::ready(result))
    }
}
