//! Authentication of HTTP requests: the [`Authenticator`] trait and its use by the service.
//!
//! The service asks the authenticator about every request to an MCP endpoint (POST, the GET
//! stream, DELETE, the 2024-11-05 SSE and message endpoints) before it reads a body or touches
//! a session. What the authenticator serves without credentials (a metadata document) is
//! answered first. A granted request's principal goes into the extensions of every message it
//! carries, sessions are bound to the principal that created them, and the `Authorization`
//! header is removed from the request parts handed to the server, so a received token is never
//! passed on by accident.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{Response, header::AUTHORIZATION};
use mcp_jsonrpc::{Extensions, Message};

use super::body::HttpBody;

/// A boxed, `Send` future, as [`Authenticator::authenticate`] returns it.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Decides who may use the MCP endpoint. Install one with
/// [`StreamableHttpServiceBuilder::auth`](super::StreamableHttpServiceBuilder::auth).
///
/// With the `server-auth` feature, `mcp_auth::ResourceServer` implements it: OAuth 2.1 bearer
/// tokens, the protected resource metadata, `401`/`403` challenges and `mcp_auth::Principal`.
/// Implement it yourself for anything else (API keys, mutual TLS identities, a gateway's
/// headers).
///
/// ```
/// use bytes::Bytes;
/// use http::{Response, StatusCode, request::Parts};
/// use mcp_transport_http::server::{AuthFuture, Authenticator};
///
/// /// Who called, as handlers see it in their request extensions.
/// #[derive(Clone, Debug)]
/// struct Caller(String);
///
/// /// Accepts `X-Api-Key` values from a fixed list.
/// struct ApiKeys(Vec<(String, String)>);
///
/// impl Authenticator for ApiKeys {
///     type Principal = Caller;
///
///     fn authenticate<'a>(&'a self, parts: &'a Parts) -> AuthFuture<'a, Result<Caller, Response<Bytes>>> {
///         let key = parts.headers.get("x-api-key").and_then(|v| v.to_str().ok());
///         let found = self.0.iter().find(|(k, _)| Some(k.as_str()) == key);
///         let result = found.map(|(_, who)| Caller(who.clone())).ok_or_else(|| {
///             let mut r = Response::new(Bytes::from_static(b"unknown API key"));
///             *r.status_mut() = StatusCode::UNAUTHORIZED;
///             r
///         });
///         Box::pin(async move { result })
///     }
///
///     fn identity(&self, caller: &Caller) -> String {
///         caller.0.clone()
///     }
/// }
/// ```
pub trait Authenticator: Send + Sync + 'static {
    /// Who made a request; cloned into the extensions of every message the request carries.
    type Principal: Clone + Send + Sync + 'static;

    /// Answers a request that needs no credentials (a metadata document), or `None`. Called
    /// for every request after the `Host`/`Origin` check, before routing.
    fn public_response(&self, parts: &Parts) -> Option<Response<Bytes>> {
        let _ = parts;
        None
    }

    /// Authenticates a request to an MCP endpoint from its head; the error is the complete
    /// response to send (`401` with a challenge, say).
    fn authenticate<'a>(
        &'a self,
        parts: &'a Parts,
    ) -> AuthFuture<'a, Result<Self::Principal, Response<Bytes>>>;

    /// Checks that `principal` may send `message` (every request and notification of a POST
    /// is checked before any of them is delivered); the error is the response to send,
    /// typically `403 insufficient_scope`. Default: everything is allowed.
    fn authorize(
        &self,
        principal: &Self::Principal,
        message: &Message,
    ) -> Result<(), Response<Bytes>> {
        let _ = (principal, message);
        Ok(())
    }

    /// A key naming who `principal` is, derived from its credentials only. A session belongs
    /// to the identity that created it: a request for it with another identity is answered
    /// like a request for a session that does not exist (`404`).
    fn identity(&self, principal: &Self::Principal) -> String;
}

/// The service's type-erased authenticator.
#[derive(Clone)]
pub(crate) struct Auth {
    inner: Arc<dyn Erased>,
}

impl Auth {
    pub(crate) fn new<A: Authenticator>(authenticator: A) -> Self {
        Auth {
            inner: Arc::new(Typed(Arc::new(authenticator))),
        }
    }

    pub(crate) fn public_response(&self, parts: &Parts) -> Option<Response<HttpBody>> {
        self.inner
            .public_response(parts)
            .map(|r| r.map(HttpBody::full))
    }

    /// Authenticates a request; on success the `Authorization` header is removed from `parts`.
    pub(crate) async fn authenticate(
        &self,
        parts: &mut Parts,
    ) -> Result<Granted, Response<HttpBody>> {
        match self.inner.authenticate(parts).await {
            Ok(granted) => {
                parts.headers.remove(AUTHORIZATION);
                Ok(granted)
            }
            Err(r) => Err(r.map(HttpBody::full)),
        }
    }
}

trait Erased: Send + Sync {
    fn public_response(&self, parts: &Parts) -> Option<Response<Bytes>>;
    fn authenticate<'a>(
        &'a self,
        parts: &'a Parts,
    ) -> AuthFuture<'a, Result<Granted, Response<Bytes>>>;
}

struct Typed<A>(Arc<A>);

impl<A: Authenticator> Erased for Typed<A> {
    fn public_response(&self, parts: &Parts) -> Option<Response<Bytes>> {
        self.0.public_response(parts)
    }

    fn authenticate<'a>(
        &'a self,
        parts: &'a Parts,
    ) -> AuthFuture<'a, Result<Granted, Response<Bytes>>> {
        Box::pin(async move {
            let principal = self.0.authenticate(parts).await?;
            let identity = self.0.identity(&principal);
            Ok(Granted {
                identity,
                principal: Box::new(GrantedTyped {
                    auth: self.0.clone(),
                    principal,
                }),
            })
        })
    }
}

/// An authenticated request: who it is and what goes into its messages' extensions.
pub(crate) struct Granted {
    identity: String,
    principal: Box<dyn ErasedPrincipal>,
}

impl Granted {
    pub(crate) fn identity(&self) -> &str {
        &self.identity
    }

    /// Checks every message of a POST; the first refusal is the answer to the whole POST.
    pub(crate) fn authorize(&self, messages: &[Message]) -> Result<(), Response<HttpBody>> {
        for m in messages {
            self.principal
                .authorize(m)
                .map_err(|r| r.map(HttpBody::full))?;
        }
        Ok(())
    }

    /// Extensions holding the principal, as the base of every message's extensions.
    pub(crate) fn extensions(&self) -> Extensions {
        let mut e = Extensions::new();
        self.principal.insert_into(&mut e);
        e
    }
}

trait ErasedPrincipal: Send + Sync + Any {
    fn authorize(&self, message: &Message) -> Result<(), Response<Bytes>>;
    fn insert_into(&self, extensions: &mut Extensions);
}

struct GrantedTyped<A: Authenticator> {
    auth: Arc<A>,
    principal: A::Principal,
}

impl<A: Authenticator> ErasedPrincipal for GrantedTyped<A> {
    fn authorize(&self, message: &Message) -> Result<(), Response<Bytes>> {
        self.auth.authorize(&self.principal, message)
    }

    fn insert_into(&self, extensions: &mut Extensions) {
        extensions.insert(self.principal.clone());
    }
}

/// The bridge to `mcp-auth`'s OAuth resource server.
#[cfg(feature = "server-auth")]
mod resource_server {
    use bytes::Bytes;
    use http::request::Parts;
    use http::{Method, Response};
    use mcp_auth::{Principal, ResourceServer};
    use mcp_jsonrpc::Message;

    use super::{AuthFuture, Authenticator};

    /// The name of the tool a `tools/call` request calls.
    fn tool_name(message: &Message) -> Option<String> {
        #[derive(serde::Deserialize)]
        struct Call {
            name: String,
        }
        match message {
            Message::Request(r) if r.method == "tools/call" => {
                r.params_as::<Call>().ok().map(|c| c.name)
            }
            _ => None,
        }
    }

    /// OAuth 2.1 bearer tokens: the metadata document is served at every path of
    /// [`ResourceServer::metadata_paths`] (GET and HEAD) without credentials, requests are
    /// authenticated with [`ResourceServer::authenticate`], requests are authorized with
    /// [`ResourceServer::authorize_operation`], and sessions are bound to
    /// [`Principal::identity`].
    impl Authenticator for ResourceServer {
        type Principal = Principal;

        fn public_response(&self, parts: &Parts) -> Option<Response<Bytes>> {
            let read = parts.method == Method::GET || parts.method == Method::HEAD;
            (read && self.is_metadata_path(parts.uri.path())).then(|| self.metadata_response())
        }

        fn authenticate<'a>(
            &'a self,
            parts: &'a Parts,
        ) -> AuthFuture<'a, Result<Principal, Response<Bytes>>> {
            Box::pin(async move {
                ResourceServer::authenticate(self, parts)
                    .await
                    .map_err(|c| c.into_response())
            })
        }

        fn authorize(
            &self,
            principal: &Principal,
            message: &Message,
        ) -> Result<(), Response<Bytes>> {
            let method = match message {
                Message::Request(r) => r.method.as_str(),
                Message::Notification(n) => n.method.as_str(),
                Message::Response(_) => return Ok(()),
            };
            let tool = tool_name(message);
            self.authorize_operation(principal, method, tool.as_deref())
                .map_err(|c| c.into_response())
        }

        fn identity(&self, principal: &Principal) -> String {
            principal.identity()
        }
    }
}
