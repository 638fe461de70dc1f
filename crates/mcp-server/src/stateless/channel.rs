//! How a handler reaches the client of a stateless request: notifications go on the request's
//! own stream (its response stream on HTTP), and asks for input are answered from the
//! request's [`Exchange`] or recorded there: nothing is ever sent to the client as a request.

use std::sync::{Arc, OnceLock};

use mcp_jsonrpc::{ErrorObject, Peer};
use mcp_types::InputResponse;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::mrtr::{Ask, Exchange, InputRequired, MrtrLimits};
use crate::context::{BoxFuture, ClientChannel, ClientScope, Resume};
use crate::error::AskError;
use crate::input::Outgoing;

/// A request's method: the protocol's own names are static, a custom one is copied.
pub(crate) type MethodName = std::borrow::Cow<'static, str>;

/// The channel of one stateless request.
pub(crate) struct StatelessChannel {
    /// The connection's peer, related to the request (notifications go on its stream).
    pub(crate) peer: Peer,
    /// The request's multi round-trip bookkeeping (`tools/call`, `prompts/get` and
    /// `resources/read` only; other requests cannot ask for input).
    pub(crate) exchange: RequestExchange,
    /// The request's method, for the error when it cannot ask.
    pub(crate) method: MethodName,
}

/// A stateless request's [`Exchange`]. A request that carries answers or state from an earlier
/// round has it from the start; a first attempt gets it when its handler first asks for input
/// or misses a capability, which most never do: no exchange (its binding, its maps, the copy
/// of the arguments it seals with) is built for them. Until then the exchange a first attempt
/// would have is empty, so reading it (answers, state) finds nothing either way.
pub(crate) struct RequestExchange {
    /// Boxed: an exchange is large, and most requests never make one.
    opened: OnceLock<Box<Exchange>>,
    /// What opening it for a first attempt takes; `None` when it is open from the start or
    /// the request cannot ask for input.
    later: Option<FirstAttempt>,
}

/// The makings of a first attempt's exchange.
pub(crate) struct FirstAttempt {
    pub(crate) method: MethodName,
    pub(crate) params: super::serve::Members,
    pub(crate) arguments: Option<Arc<str>>,
    pub(crate) subject: Option<String>,
    pub(crate) scope: Arc<ClientScope>,
    pub(crate) limits: MrtrLimits,
}

impl RequestExchange {
    /// A request that cannot ask for input.
    pub(crate) fn none() -> Self {
        RequestExchange {
            opened: OnceLock::new(),
            later: None,
        }
    }

    /// A request whose exchange is open from the start.
    pub(crate) fn open(exchange: Exchange) -> Self {
        RequestExchange {
            opened: OnceLock::from(Box::new(exchange)),
            later: None,
        }
    }

    /// A first attempt, whose exchange is made when first needed.
    pub(crate) fn later(first: FirstAttempt) -> Self {
        RequestExchange {
            opened: OnceLock::new(),
            later: Some(first),
        }
    }

    /// The exchange, if it is open.
    pub(crate) fn get(&self) -> Option<&Exchange> {
        self.opened.get().map(|x| &**x)
    }

    /// The exchange, opened now for a first attempt; `None` when the request cannot ask.
    fn needed(&self) -> Option<&Exchange> {
        match &self.later {
            Some(first) => Some(self.opened.get_or_init(|| {
                Box::new(Exchange::fresh(
                    super::serve::binding(
                        &first.method,
                        &first.params,
                        first.arguments.as_deref(),
                        first.subject.as_deref(),
                    ),
                    first.scope.capabilities.clone(),
                    first.limits,
                ))
            })),
            None => self.get(),
        }
    }
}

impl ClientChannel for StatelessChannel {
    fn request(
        &self,
        key: &str,
        ask: Outgoing,
        _cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Box<RawValue>, AskError>> {
        let result = match self.exchange.needed() {
            None => Err(AskError::NoInputChannel(self.method.to_string())),
            Some(exchange) => {
                // The form's fields in the order the context wrote them (the model's schema
                // sorts them).
                if let Some(order) = ask.params.as_deref().and_then(crate::schema::form_order_of) {
                    exchange.form_order(key, order);
                }
                match exchange.ask(key, ask.request) {
                    Ask::Answered(answer) => mcp_jsonrpc::to_raw(&*answer)
                        .map_err(|e| AskError::InvalidResponse(e.to_string())),
                    Ask::Pending => Err(AskError::InputRequired),
                    Ask::MissingCapability(kind) => {
                        Err(AskError::MissingCapability(kind.capability()))
                    }
                    Ask::Invalid(message) => Err(AskError::InvalidResponse(message)),
                }
            }
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
        if let Some(exchange) = self.exchange.needed() {
            exchange.missing_capability(path);
        }
    }

    fn input_response(&self, key: &str) -> Option<InputResponse> {
        self.exchange.get()?.input_response(key)
    }

    fn input_state(&self) -> Option<Value> {
        self.exchange.get()?.state().cloned()
    }

    fn input_required(
        &self,
        ask: InputRequired,
        _scope: &Arc<ClientScope>,
        _cancel: &CancellationToken,
    ) -> BoxFuture<'static, Result<Resume, ErrorObject>> {
        let result = match self.exchange.needed() {
            Some(exchange) => {
                exchange.suspend(ask);
                Ok(Resume::Stop)
            }
            None => Err(ErrorObject::internal_error(AskError::NoInputChannel(
                self.method.to_string(),
            ))),
        };
        Box::pin(std::future::ready(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::LogThreshold;
    use mcp_types::{ClientCapabilities, Implementation, ProtocolVersion};

    fn first_attempt() -> FirstAttempt {
        FirstAttempt {
            method: MethodName::Borrowed("tools/call"),
            params: super::super::serve::Members::of(serde_json::json!({"name": "echo"})),
            arguments: Some(Arc::from(r#"{"text":"hi"}"#)),
            subject: None,
            scope: Arc::new(ClientScope {
                version: ProtocolVersion::V2026_07_28,
                info: Some(Implementation::new("c", "1")),
                capabilities: ClientCapabilities::default(),
                log: LogThreshold::new(None),
            }),
            limits: MrtrLimits::default(),
        }
    }

    #[test]
    fn a_first_attempt_has_an_exchange_only_once_it_is_needed() {
        let later = RequestExchange::later(first_attempt());
        assert!(
            later.get().is_none(),
            "nothing built for a request that does not ask"
        );
        let opened = later
            .needed()
            .expect("a request that may ask has one when needed");
        assert_eq!(opened.round(), 0);
        assert!(!opened.has_asks());
        assert!(later.get().is_some(), "and keeps it");
        let none = RequestExchange::none();
        assert!(none.needed().is_none() && none.get().is_none());
    }

    #[tokio::test]
    async fn reading_an_unopened_exchange_finds_what_a_fresh_one_holds() {
        let (_client, server) = mcp_jsonrpc::memory_pair(4);
        let (peer, _engine) = mcp_jsonrpc::Engine::builder().spawn(server, ());
        let channel = StatelessChannel {
            peer,
            exchange: RequestExchange::later(first_attempt()),
            method: MethodName::Borrowed("tools/call"),
        };
        assert!(channel.input_response("k").is_none());
        assert!(channel.input_state().is_none());
        assert!(channel.exchange.get().is_none(), "reading does not open it");
        channel.missing_capability("sampling");
        assert!(channel.exchange.get().is_some(), "recording does");
    }
}
