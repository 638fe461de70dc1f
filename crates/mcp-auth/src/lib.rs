//! OAuth 2.1 for the Model Context Protocol.
//!
//! * **Client** (feature `client`): an MCP client is an OAuth 2.1 client. [`OAuthClient`]
//!   implements [`AuthProvider`], the small interface an HTTP transport calls: it discovers
//!   the authorization server from the server's `401` (RFC 9728 Protected Resource Metadata,
//!   RFC 8414 and OpenID Connect discovery), registers (pre-registered credentials, Client ID
//!   Metadata Documents, or dynamic registration), runs the authorization code flow with PKCE
//!   `S256`, the `resource` parameter (RFC 8707) and `iss` validation (RFC 9207), refreshes
//!   tokens, steps up scopes on `403 insufficient_scope`, binds tokens to a key with DPoP
//!   (RFC 9449, [`DpopPolicy`]) when the authorization server offers it, and supports the
//!   client credentials grant with secrets or `private_key_jwt` assertions. Tokens live in a [`TokenStore`]
//!   keyed by issuer ([`MemoryTokenStore`], [`FileTokenStore`]); the browser step is an
//!   [`AuthorizationHandler`] ([`HeadlessRedirect`] for tests).
//! * **Server** (feature `server`): an MCP server is an OAuth resource server.
//!   [`ResourceServer`] serves [`ProtectedResourceMetadata`], checks `Authorization: Bearer`
//!   tokens with a [`BearerVerifier`] ([`JwtVerifier`] for JWTs), and answers with
//!   [`AuthChallenge`]s (`401`, or `403 insufficient_scope`); with
//!   [`ResourceServer::with_dpop`] it accepts DPoP-bound tokens and checks their proofs.
//!   Handlers see a [`Principal`].
//! * Servers on stdio do not use OAuth: they take credentials from their environment
//!   ([`StaticToken::from_env`] covers the client side of that pattern over HTTP).
//!
//! Identifiers are compared as plain strings: the `resource` sent to the authorization server
//! is exactly the one published in the metadata, and `iss` values are never normalised.
//!
//! See `docs/auth.md` in the repository for the full flow.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg_attr(not(feature = "server"), allow(dead_code))]
mod challenge;
mod error;
mod metadata;
#[cfg_attr(not(feature = "client"), allow(dead_code))]
mod uri;

#[cfg(feature = "client")]
mod assertion;
#[cfg(feature = "client")]
mod client;
#[cfg(feature = "client")]
mod dpop;
#[cfg(feature = "client")]
mod handler;
#[cfg(feature = "client")]
mod http;
#[cfg(feature = "client")]
mod pkce;
#[cfg(feature = "server")]
mod proof;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "client")]
mod store;

mod http_types {
    /// A boxed, `Send` future, as returned by this crate's object-safe traits.
    pub type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;
}

pub use challenge::{BearerChallenge, Challenge, parse_challenges};
pub use error::{AuthError, HttpError, StoreError};
pub use http_types::BoxFuture;
pub use metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};

#[cfg(feature = "client")]
pub use assertion::{ClientAuth, ClientCredentials, PrivateKeyJwt, SigningAlgorithm};
#[cfg(feature = "client")]
pub use client::{
    ApplicationType, AuthProvider, ClientMetadata, EnterpriseIdp, OAuthClient, OAuthClientBuilder,
    ResponseAction, StaticToken,
};
#[cfg(feature = "client")]
pub use dpop::{DpopKey, DpopPolicy};
#[cfg(feature = "client")]
pub use handler::{
    AuthorizationHandler, AuthorizationRequest, AuthorizationResponse, HeadlessRedirect,
};
#[cfg(feature = "client")]
pub use http::{HttpClient, HttpLimits, HyperHttpClient};
#[cfg(feature = "server")]
pub use proof::DpopOptions;
#[cfg(feature = "server")]
pub use server::{
    AuthChallenge, BearerError, BearerVerifier, JwtVerifier, Principal, ResourceServer, VerifyError,
};
#[cfg(feature = "client")]
pub use store::{
    ClientRegistration, FileTokenStore, MemoryTokenStore, StoredCredentials, TokenSet, TokenStore,
};
