//! Errors of the OAuth client flow and of the HTTP layer under it.

use std::error::Error as StdError;

/// A failure of the HTTP exchange itself (not an HTTP error status).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The request could not be built or sent (bad URL, unsupported scheme, ...).
    #[error("invalid HTTP request: {0}")]
    InvalidRequest(String),
    /// The connection failed or broke while the exchange was in progress.
    #[error("HTTP transport error")]
    Transport(#[source] Box<dyn StdError + Send + Sync>),
    /// The exchange did not finish within the configured time.
    #[error("HTTP request timed out")]
    Timeout,
    /// The response body was larger than the configured limit.
    #[error("HTTP response body exceeds {limit} bytes")]
    BodyTooLarge {
        /// The limit in bytes.
        limit: usize,
    },
}

/// A failure of a token store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading or writing the backing file failed.
    #[error("token store I/O error")]
    Io(#[from] std::io::Error),
    /// The stored data could not be encoded or decoded.
    #[error("token store data is malformed")]
    Format(#[from] serde_json::Error),
    /// The stored data is larger than the configured limit.
    #[error("token store file exceeds {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
}

/// Why an OAuth flow could not produce a usable access token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// An HTTP exchange with the resource or an authorization server failed.
    #[error("HTTP exchange with {url} failed")]
    Http {
        /// The URL that was requested.
        url: String,
        /// What went wrong.
        #[source]
        source: HttpError,
    },
    /// A URL (configured, advertised or received) is not usable.
    #[error("invalid URL {url:?}: {reason}")]
    InvalidUrl {
        /// The offending URL, as received.
        url: String,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// A peer answered with a body that is not what the protocol requires.
    #[error("invalid {what} from {url}: {detail}")]
    InvalidResponse {
        /// Which document or response was being read.
        what: &'static str,
        /// Where it came from.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// No Protected Resource Metadata could be fetched from any candidate URL.
    #[error("no protected resource metadata found (tried {tried:?})")]
    ProtectedResourceMetadataNotFound {
        /// The URLs that were tried, in order.
        tried: Vec<String>,
    },
    /// The metadata's `resource` does not identify the server the client talks to.
    #[error(
        "protected resource metadata names resource {resource:?}, which does not match {server_url:?}"
    )]
    ResourceMismatch {
        /// The `resource` value from the metadata.
        resource: String,
        /// The URL of the MCP server.
        server_url: String,
    },
    /// The Protected Resource Metadata lists no authorization server.
    #[error("protected resource metadata lists no authorization server")]
    NoAuthorizationServer,
    /// No authorization server metadata could be fetched for the issuer.
    #[error("no authorization server metadata found for issuer {issuer:?} (tried {tried:?})")]
    AuthorizationServerMetadataNotFound {
        /// The issuer named by the resource.
        issuer: String,
        /// The URLs that were tried, in order.
        tried: Vec<String>,
    },
    /// The authorization server metadata names a different issuer than the one it was fetched for.
    #[error(
        "authorization server metadata issuer {found:?} differs from the expected {expected:?}"
    )]
    IssuerMismatch {
        /// The issuer the metadata URL was built from.
        expected: String,
        /// The issuer in the metadata.
        found: String,
    },
    /// The authorization server does not advertise PKCE with `S256`.
    #[error("authorization server {issuer:?} does not advertise PKCE S256 support")]
    PkceNotSupported {
        /// The issuer.
        issuer: String,
    },
    /// Neither pre-registered credentials, a client ID metadata document nor dynamic
    /// registration can be used with this authorization server.
    #[error("no way to register a client with authorization server {issuer:?}")]
    NoRegistrationMethod {
        /// The issuer.
        issuer: String,
    },
    /// The client needs an [`AuthorizationHandler`](crate::AuthorizationHandler) for the
    /// authorization code flow, and none was configured.
    #[error("an authorization handler is required for the authorization code flow")]
    NoAuthorizationHandler,
    /// The authorization handler (the browser step) failed.
    #[error("authorization handler failed: {0}")]
    Handler(String),
    /// The authorization server answered the authorization request with an error.
    #[error("authorization denied: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    AuthorizationDenied {
        /// The OAuth `error` code.
        error: String,
        /// The `error_description`, if any.
        description: Option<String>,
    },
    /// The `state` in the authorization response is missing or differs from the one sent.
    #[error("authorization response state does not match the request")]
    StateMismatch,
    /// The `iss` in the authorization response (RFC 9207) is missing where the server
    /// promised it, or differs from the issuer.
    #[error("authorization response issuer {found:?} does not match {expected:?}")]
    IssMismatch {
        /// The issuer the request went to.
        expected: String,
        /// The `iss` parameter received, if any.
        found: Option<String>,
    },
    /// The authorization response carries no `code`.
    #[error("authorization response carries no code")]
    MissingCode,
    /// An OAuth endpoint (token, registration) answered with an error.
    #[error("{endpoint} endpoint answered {status}: {}", error.as_deref().unwrap_or("no error code"))]
    Endpoint {
        /// `"token"`, `"registration"` or `"token exchange"` (at an enterprise identity
        /// provider).
        endpoint: &'static str,
        /// The HTTP status.
        status: u16,
        /// The OAuth `error` code, if the body had one.
        error: Option<String>,
        /// The `error_description`, if any.
        description: Option<String>,
    },
    /// The token endpoint issued a token type this client cannot use.
    #[error("unsupported token type {0:?}")]
    UnsupportedTokenType(String),
    /// DPoP is required ([`DpopPolicy::Required`](crate::DpopPolicy::Required)) but the
    /// authorization server does not accept `ES256` proofs.
    #[error("authorization server {issuer:?} does not support DPoP with ES256")]
    DpopNotSupported {
        /// The issuer.
        issuer: String,
    },
    /// The resource rejected the DPoP proof of a bound token (`invalid_dpop_proof`, or a
    /// `use_dpop_nonce` challenge that the retry with its nonce did not satisfy).
    #[error("the resource rejected the DPoP proof: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    DpopRejected {
        /// The `error` of the `DPoP` challenge.
        error: String,
        /// Its `error_description`, if any.
        description: Option<String>,
    },
    /// The resource kept demanding scopes after the configured number of step-up attempts.
    #[error("gave up after {attempts} step-up authorizations for scope {scope:?}")]
    StepUpLimit {
        /// The scope that was requested in the last attempt.
        scope: String,
        /// How many step-up authorizations were made.
        attempts: u32,
    },
    /// The resource rejected a token that cannot be replaced (a fixed token).
    #[error("the resource rejected the token and no other can be obtained")]
    TokenRejected,
    /// The token store failed.
    #[error("token store failed")]
    Store(#[from] StoreError),
    /// A signing key (of client assertions or DPoP proofs) could not be made, loaded or used.
    #[error("signing key error: {0}")]
    Key(String),
    /// The client configuration is unusable.
    #[error("invalid OAuth client configuration: {0}")]
    Config(String),
}
