//! The OAuth 2.1 client an MCP client uses to reach protected MCP servers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use mcp_types::{Feature, ProtocolVersion};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::assertion::{ClientAuth, ClientCredentials};
use crate::challenge::{BearerChallenge, parse_challenges, split_scopes};
use crate::dpop::{self, DpopKey, DpopPolicy, Nonces};
use crate::error::AuthError;
use crate::handler::{AuthorizationHandler, AuthorizationRequest, AuthorizationResponse};
use crate::http::{BoxFuture, HttpClient, HyperHttpClient};
use crate::metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};
use crate::pkce::{Pkce, random_string};
use crate::store::{
    ClientRegistration, MemoryTokenStore, StoredCredentials, TokenSet, TokenStore, now_secs,
};
use crate::uri;

/// The interface an HTTP transport uses to authorize its requests.
///
/// For each HTTP request the transport calls [`authorize_request`](Self::authorize_request)
/// with the request's method and URL, which adds the credentials (by default the
/// [`authorization`](Self::authorization) header). It shows every response to
/// [`on_response`](Self::on_response) first, which may ask for one immediate retry (a DPoP
/// nonce challenge). On a `401` it calls [`on_unauthorized`](Self::on_unauthorized) and, on
/// success, retries the request. On a `403` whose `WWW-Authenticate` says
/// `error="insufficient_scope"` it calls [`on_insufficient_scope`](Self::on_insufficient_scope)
/// and, on success, retries; the provider bounds how often that can happen.
pub trait AuthProvider: Send + Sync {
    /// The `Authorization` header for a request to `resource_url`, refreshing an expired token
    /// first when possible. `None` means "send the request without credentials".
    ///
    /// For a DPoP-bound token this is `DPoP <token>`, which the resource accepts only with a
    /// proof: transports call [`authorize_request`](Self::authorize_request), which adds both.
    fn authorization<'a>(&'a self, resource_url: &'a str) -> BoxFuture<'a, Option<HeaderValue>>;

    /// Adds the credentials of one HTTP request with `method` to `url` to `headers`. The
    /// default adds the [`authorization`](Self::authorization) header; a provider with
    /// sender-constrained tokens adds what it computes from the method and URL as well
    /// ([`OAuthClient`] with DPoP: `Authorization: DPoP <token>` and a fresh `DPoP` proof).
    /// Called again for every retry, so every attempt carries fresh credentials.
    fn authorize_request<'a>(
        &'a self,
        method: &'a Method,
        url: &'a str,
        headers: &'a mut HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        let _ = method;
        Box::pin(async move {
            if let Some(value) = self.authorization(url).await {
                headers.insert(AUTHORIZATION, value);
            }
            Ok(())
        })
    }

    /// Sees the status and headers of every response to a request made with
    /// [`authorize_request`](Self::authorize_request), before the transport acts on the
    /// status. [`ResponseAction::Retry`] asks for the request to be sent again at once, with
    /// fresh credentials; transports honour that at most once per request. The default does
    /// nothing ([`ResponseAction::Proceed`]).
    fn on_response(&self, url: &str, status: StatusCode, headers: &HeaderMap) -> ResponseAction {
        let _ = (url, status, headers);
        ResponseAction::Proceed
    }

    /// Handles a `401` from `resource_url`: `headers` are the response headers (their
    /// `WWW-Authenticate` values are read). Obtains a new token or fails.
    fn on_unauthorized<'a>(
        &'a self,
        resource_url: &'a str,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>>;

    /// Handles a `403` with `error="insufficient_scope"`: obtains a token with the union of
    /// the scopes held so far and the challenged ones, or fails once the step-up limit is hit.
    fn on_insufficient_scope<'a>(
        &'a self,
        resource_url: &'a str,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>>;
}

/// What a transport does with a response after [`AuthProvider::on_response`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseAction {
    /// Handle the response as usual: a `401` or `403` goes to the provider.
    Proceed,
    /// Send the request again right away with fresh credentials (at most once per request),
    /// for example after a `use_dpop_nonce` challenge that supplied a new nonce.
    Retry,
}

/// The OAuth `application_type` of the client (OpenID Connect Dynamic Client Registration),
/// which MCP requires in registration requests from revision 2026-07-28 on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ApplicationType {
    /// A native application (desktop, command line, mobile): loopback or custom-scheme redirects.
    Native,
    /// A web application with an `https` redirect URI.
    Web,
}

impl ApplicationType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Web => "web",
        }
    }

    /// `Native` for loopback `http` and custom-scheme redirect URIs, `Web` otherwise.
    fn infer(redirect_uri: &str) -> Self {
        match redirect_uri.parse::<http::Uri>() {
            Ok(u) if u.scheme_str() == Some("https") => {
                if u.host().is_some_and(uri::is_loopback) {
                    Self::Native
                } else {
                    Self::Web
                }
            }
            Ok(u) if u.scheme_str() == Some("http") => {
                if u.host().is_some_and(uri::is_loopback) {
                    Self::Native
                } else {
                    Self::Web
                }
            }
            _ => Self::Native,
        }
    }
}

/// Who the client is, as told to authorization servers.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ClientMetadata {
    /// A human-readable client name (`client_name`).
    pub client_name: String,
    /// The redirect URI of the authorization code flow.
    pub redirect_uri: String,
    /// The application type; inferred from the redirect URI when `None`.
    pub application_type: Option<ApplicationType>,
    /// A URL of the client's home page (`client_uri`).
    pub client_uri: Option<String>,
}

impl ClientMetadata {
    /// Metadata with a name and a redirect URI.
    pub fn new(client_name: impl Into<String>, redirect_uri: impl Into<String>) -> Self {
        Self {
            client_name: client_name.into(),
            redirect_uri: redirect_uri.into(),
            application_type: None,
            client_uri: None,
        }
    }

    /// Sets the application type explicitly (it is then always sent at registration).
    pub fn with_application_type(mut self, application_type: ApplicationType) -> Self {
        self.application_type = Some(application_type);
        self
    }
}

#[derive(Clone, Debug)]
enum Grant {
    AuthorizationCode,
    ClientCredentials(ClientCredentials),
    JwtBearer(JwtBearer),
}

/// The `grant_type` of the JWT bearer grant (RFC 7523 section 2.1).
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// The `grant_type` of a token exchange (RFC 8693 section 2.1).
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an Identity Assertion JWT Authorization Grant (ID-JAG).
const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The token type of an OpenID Connect ID token (RFC 8693 section 3).
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// Produces the assertion of a JWT bearer token request.
type AssertionFn = Arc<dyn Fn() -> Result<String, AuthError> + Send + Sync>;

/// Where the assertions of the JWT bearer grant come from.
#[derive(Clone)]
enum AssertionSource {
    /// The application's function (a workload identity token).
    Fn(AssertionFn),
    /// A token exchange at the enterprise identity provider (an ID-JAG).
    Enterprise(EnterpriseIdp),
}

/// The JWT bearer grant: the client and where its assertions come from.
#[derive(Clone)]
struct JwtBearer {
    credentials: ClientCredentials,
    assertion: AssertionSource,
}

/// The enterprise identity provider of enterprise-managed authorization (SEP-990): the client
/// exchanges the user's ID token there for an Identity Assertion JWT Authorization Grant
/// (ID-JAG, RFC 8693 token exchange) addressed to the MCP server's authorization server, then
/// presents it with the JWT bearer grant.
///
/// ```
/// use mcp_auth::{ClientCredentials, ClientMetadata, EnterpriseIdp, OAuthClient};
///
/// let idp = EnterpriseIdp::new(
///     "https://idp.example.com/oauth2/token",
///     ClientCredentials::with_secret("mcp-client-at-idp", "idp-secret"),
///     "eyJhbGciOi...the user's ID token",
/// );
/// let oauth = OAuthClient::builder(ClientMetadata::new("agent", "http://localhost/unused"))
///     .enterprise_grant(ClientCredentials::with_secret("agent", "as-secret"), idp)
///     .build()
///     .unwrap();
/// ```
#[derive(Clone)]
pub struct EnterpriseIdp {
    token_endpoint: String,
    client: ClientCredentials,
    id_token: String,
}

impl std::fmt::Debug for EnterpriseIdp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterpriseIdp")
            .field("token_endpoint", &self.token_endpoint)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl EnterpriseIdp {
    /// The identity provider's token endpoint, how the client authenticates there, and the
    /// user's ID token (the `subject_token` of the exchange).
    pub fn new(
        token_endpoint: impl Into<String>,
        client: ClientCredentials,
        id_token: impl Into<String>,
    ) -> Self {
        Self {
            token_endpoint: token_endpoint.into(),
            client,
            id_token: id_token.into(),
        }
    }
}

impl std::fmt::Debug for JwtBearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtBearer")
            .field("credentials", &self.credentials)
            .finish_non_exhaustive()
    }
}

#[derive(Clone, Debug)]
struct Config {
    metadata: ClientMetadata,
    pre_registered: Vec<(Option<String>, ClientCredentials)>,
    client_metadata_url: Option<String>,
    scopes: Option<Vec<String>>,
    offline_access: bool,
    protocol_revision: Option<String>,
    grant: Grant,
    allow_insecure_http: bool,
    max_step_up_attempts: u32,
    max_resources: usize,
    expiry_skew_secs: u64,
    dpop: DpopPolicy,
    max_dpop_nonces: usize,
}

/// Builds an [`OAuthClient`].
pub struct OAuthClientBuilder {
    config: Config,
    dpop_key: Option<DpopKey>,
    http: Option<Arc<dyn HttpClient>>,
    store: Option<Arc<dyn TokenStore>>,
    handler: Option<Arc<dyn AuthorizationHandler>>,
}

impl std::fmt::Debug for OAuthClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClientBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OAuthClientBuilder {
    /// The browser step of the authorization code flow. Required unless the client uses the
    /// client credentials grant.
    pub fn authorization_handler(mut self, handler: impl AuthorizationHandler + 'static) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// The HTTP client for discovery, registration and token requests (default:
    /// [`HyperHttpClient`]). It must not follow redirects.
    pub fn http_client(mut self, http: Arc<dyn HttpClient>) -> Self {
        self.http = Some(http);
        self
    }

    /// Where registrations and tokens are kept (default: [`MemoryTokenStore`]).
    pub fn token_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Pre-registered credentials, used with any authorization server that has no more
    /// specific pre-registration (see [`pre_registered_for`](Self::pre_registered_for)).
    pub fn pre_registered(mut self, credentials: ClientCredentials) -> Self {
        self.config.pre_registered.push((None, credentials));
        self
    }

    /// Pre-registered credentials for the authorization server with this exact issuer.
    pub fn pre_registered_for(
        mut self,
        issuer: impl Into<String>,
        credentials: ClientCredentials,
    ) -> Self {
        self.config
            .pre_registered
            .push((Some(issuer.into()), credentials));
        self
    }

    /// The `https` URL of this client's Client ID Metadata Document, used as `client_id` with
    /// authorization servers that advertise `client_id_metadata_document_supported`.
    pub fn client_metadata_document(mut self, url: impl Into<String>) -> Self {
        self.config.client_metadata_url = Some(url.into());
        self
    }

    /// Requests exactly these scopes instead of choosing them from the challenge and the
    /// protected resource metadata.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Whether to add `offline_access` to a non-empty scope request when the authorization
    /// server lists it in `scopes_supported` (default `true`).
    pub fn offline_access(mut self, enabled: bool) -> Self {
        self.config.offline_access = enabled;
        self
    }

    /// The MCP protocol revision in use (`"2025-11-25"`, `"2026-07-28"`, ...). It is sent as
    /// `MCP-Protocol-Version` on discovery requests and decides whether `application_type`
    /// is sent at registration (the revisions with
    /// [`Feature::RegistrationApplicationType`](mcp_types::Feature::RegistrationApplicationType)).
    pub fn protocol_revision(mut self, revision: impl Into<String>) -> Self {
        self.config.protocol_revision = Some(revision.into());
        self
    }

    /// Uses the client credentials grant (machine to machine) with these credentials instead
    /// of the authorization code flow.
    pub fn client_credentials_grant(mut self, credentials: ClientCredentials) -> Self {
        self.config.grant = Grant::ClientCredentials(credentials);
        self
    }

    /// Uses the JWT bearer grant (RFC 7523 section 2.1) instead of the authorization code flow,
    /// as workload identity federation does: every token request sends the JWT that
    /// `assertion` returns (a workload identity token, read afresh each time so that a rotated
    /// one is picked up) as `assertion`, with `credentials` authenticating the client
    /// ([`ClientCredentials::public`] for none). A token endpoint error is reported as it is:
    /// the client neither retries the assertion nor falls back to another grant.
    ///
    /// ```
    /// use mcp_auth::{ClientCredentials, ClientMetadata, OAuthClient};
    ///
    /// let oauth = OAuthClient::builder(ClientMetadata::new("worker", "http://localhost/unused"))
    ///     .jwt_bearer_grant(ClientCredentials::public("worker"), || {
    ///         std::fs::read_to_string("/var/run/secrets/tokens/mcp")
    ///             .map(|t| t.trim().to_owned())
    ///             .map_err(|e| mcp_auth::AuthError::Config(format!("workload token: {e}")))
    ///     })
    ///     .build()
    ///     .unwrap();
    /// ```
    pub fn jwt_bearer_grant(
        mut self,
        credentials: ClientCredentials,
        assertion: impl Fn() -> Result<String, AuthError> + Send + Sync + 'static,
    ) -> Self {
        self.config.grant = Grant::JwtBearer(JwtBearer {
            credentials,
            assertion: AssertionSource::Fn(Arc::new(assertion)),
        });
        self
    }

    /// Uses enterprise-managed authorization (SEP-990) instead of the authorization code flow:
    /// for every token, the user's ID token is exchanged at `idp` for an ID-JAG whose audience
    /// is the MCP server's authorization server and whose resource is the MCP server, which is
    /// then presented with the JWT bearer grant, `credentials` authenticating the client at
    /// the authorization server. Errors of either step are reported without retry or
    /// fallback.
    pub fn enterprise_grant(mut self, credentials: ClientCredentials, idp: EnterpriseIdp) -> Self {
        self.config.grant = Grant::JwtBearer(JwtBearer {
            credentials,
            assertion: AssertionSource::Enterprise(idp),
        });
        self
    }

    /// Allows plain `http` endpoints on non-loopback hosts (default `false`).
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.config.allow_insecure_http = allow;
        self
    }

    /// How many step-up authorizations are made for the same scope set before giving up
    /// (default 2: with the first authorization, at most three authorization requests).
    pub fn max_step_up_attempts(mut self, attempts: u32) -> Self {
        self.config.max_step_up_attempts = attempts;
        self
    }

    /// How many protected resources the client tracks at once (default 64).
    pub fn max_resources(mut self, resources: usize) -> Self {
        self.config.max_resources = resources.max(1);
        self
    }

    /// When tokens are bound to a key with DPoP (RFC 9449); default
    /// [`DpopPolicy::WhenSupported`]: whenever the authorization server accepts `ES256`
    /// proofs.
    pub fn dpop(mut self, policy: DpopPolicy) -> Self {
        self.config.dpop = policy;
        self
    }

    /// The DPoP key (default: a new one generated when the client is built). Give the same
    /// key again to use DPoP-bound tokens kept in a persistent store after a restart.
    pub fn dpop_key(mut self, key: DpopKey) -> Self {
        self.dpop_key = Some(key);
        self
    }

    /// How many servers' DPoP nonces are remembered at once (default 64).
    pub fn max_dpop_nonces(mut self, servers: usize) -> Self {
        self.config.max_dpop_nonces = servers.max(1);
        self
    }

    /// Builds the client.
    pub fn build(self) -> Result<OAuthClient, AuthError> {
        let config = self.config;
        if matches!(config.grant, Grant::AuthorizationCode) {
            let r = &config.metadata.redirect_uri;
            let parsed: http::Uri = r.parse().map_err(|_| AuthError::InvalidUrl {
                url: r.clone(),
                reason: "redirect URI is not a valid URI",
            })?;
            if parsed.scheme().is_none() || r.contains('#') {
                return Err(AuthError::InvalidUrl {
                    url: r.clone(),
                    reason: "redirect URI must be absolute and without a fragment",
                });
            }
        }
        if let Some(u) = &config.client_metadata_url {
            let ok = u.starts_with("https://")
                && uri::path_of(u).is_some_and(|p| !p.is_empty() && p != "/");
            if !ok {
                return Err(AuthError::InvalidUrl {
                    url: u.clone(),
                    reason: "a client metadata document URL must be https with a path",
                });
            }
        }
        let http = match self.http {
            Some(h) => h,
            None => Arc::new(HyperHttpClient::new().map_err(|source| AuthError::Http {
                url: String::new(),
                source,
            })?),
        };
        let dpop = match (config.dpop, self.dpop_key) {
            (DpopPolicy::Disabled, _) => None,
            (_, key) => Some(Dpop {
                key: match key {
                    Some(k) => k,
                    None => DpopKey::generate()?,
                },
                nonces: Nonces::new(config.max_dpop_nonces),
            }),
        };
        Ok(OAuthClient {
            inner: Arc::new(Inner {
                config,
                dpop,
                http,
                store: self
                    .store
                    .unwrap_or_else(|| Arc::new(MemoryTokenStore::default())),
                handler: self.handler,
                flow: tokio::sync::Mutex::new(()),
                resources: Mutex::new(HashMap::new()),
            }),
        })
    }
}

/// An OAuth 2.1 client for MCP: discovers the authorization server of a protected MCP
/// server, registers (pre-registered credentials, Client ID Metadata Document, or dynamic
/// registration), runs the authorization code flow with PKCE (or the client credentials
/// grant), stores tokens by issuer, refreshes them, and steps up scopes.
///
/// Cloning is cheap; clones share state. It implements [`AuthProvider`] for the transport.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use mcp_auth::{AuthProvider, ClientMetadata, HeadlessRedirect, HttpClient, HyperHttpClient, OAuthClient};
///
/// let http: Arc<dyn HttpClient> = Arc::new(HyperHttpClient::new()?);
/// let oauth = OAuthClient::builder(ClientMetadata::new("my-client", "http://127.0.0.1:8765/callback"))
///     .http_client(http.clone())
///     .authorization_handler(HeadlessRedirect::new(http))
///     .protocol_revision("2025-11-25")
///     .build()?;
///
/// // In the transport, for a request to the MCP server:
/// let url = "https://mcp.example.com/mcp";
/// let header = oauth.authorization(url).await; // None at first
/// // ... the server answered 401 with these headers:
/// let headers = http::HeaderMap::new();
/// oauth.on_unauthorized(url, &headers).await?;
/// assert!(oauth.authorization(url).await.is_some());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct OAuthClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuthClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthClient")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

struct Inner {
    config: Config,
    /// The DPoP key and the servers' nonces, unless DPoP is disabled.
    dpop: Option<Dpop>,
    http: Arc<dyn HttpClient>,
    store: Arc<dyn TokenStore>,
    handler: Option<Arc<dyn AuthorizationHandler>>,
    /// Serialises flows (discovery, registration, authorization, refresh).
    flow: tokio::sync::Mutex<()>,
    /// What is known about each protected resource, by the URL the transport uses.
    resources: Mutex<HashMap<String, ResourceState>>,
}

/// What the client needs for DPoP.
struct Dpop {
    key: DpopKey,
    nonces: Nonces,
}

/// The outcome of discovery for one resource.
#[derive(Debug)]
struct Discovered {
    /// The protected resource metadata's `resource`, verbatim.
    resource: String,
    /// The chosen authorization server's issuer, verbatim.
    issuer: String,
    prm_scopes: Option<Vec<String>>,
    /// The resource accepts only DPoP-bound tokens (`dpop_bound_access_tokens_required`).
    resource_requires_dpop: bool,
    meta: AuthorizationServerMetadata,
}

/// A client identity usable at one authorization server.
#[derive(Clone, Debug)]
struct ResolvedClient {
    credentials: ClientCredentials,
    /// The token endpoint authentication method assigned at registration, if any.
    assigned_method: Option<String>,
}

#[derive(Clone, Debug)]
struct ResourceState {
    discovered: Arc<Discovered>,
    client: Option<ResolvedClient>,
    requested_scopes: Vec<String>,
    tokens: Option<TokenSet>,
    /// The current token came from a refresh made because of a 401.
    refreshed_after_401: bool,
    /// The scope set of the last step-up and how many step-ups were made for it.
    step_up: Option<(Vec<String>, u32)>,
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    token_type: Option<String>,
    expires_in: Option<serde_json::Value>,
    refresh_token: Option<String>,
    scope: Option<String>,
}

#[derive(Deserialize)]
struct OAuthErrorBody {
    error: Option<String>,
    error_description: Option<String>,
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
    client_secret_expires_at: Option<u64>,
}

enum Fetched<T> {
    Found(T),
    Missing(String),
}

/// Sorted, de-duplicated union of two scope lists.
fn scope_union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = a.to_vec();
    for s in b {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

fn scope_key(scopes: &[String]) -> Vec<String> {
    let mut k = scopes.to_vec();
    k.sort();
    k.dedup();
    k
}

impl OAuthClient {
    /// Starts building a client with the given metadata.
    pub fn builder(metadata: ClientMetadata) -> OAuthClientBuilder {
        OAuthClientBuilder {
            config: Config {
                metadata,
                pre_registered: Vec::new(),
                client_metadata_url: None,
                scopes: None,
                offline_access: true,
                protocol_revision: None,
                grant: Grant::AuthorizationCode,
                allow_insecure_http: false,
                max_step_up_attempts: 2,
                max_resources: 64,
                expiry_skew_secs: 30,
                dpop: DpopPolicy::default(),
                max_dpop_nonces: 64,
            },
            dpop_key: None,
            http: None,
            store: None,
            handler: None,
        }
    }

    fn resources(&self) -> MutexGuard<'_, HashMap<String, ResourceState>> {
        self.inner
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn state(&self, resource_url: &str) -> Option<ResourceState> {
        self.resources().get(resource_url).cloned()
    }

    fn set_state(&self, resource_url: &str, state: ResourceState) {
        let mut map = self.resources();
        if !map.contains_key(resource_url) && map.len() >= self.inner.config.max_resources {
            if let Some(victim) = map.keys().next().cloned() {
                map.remove(&victim);
            }
        }
        map.insert(resource_url.to_owned(), state);
    }

    fn clear_tokens(&self, resource_url: &str) {
        if let Some(s) = self.resources().get_mut(resource_url) {
            s.tokens = None;
        }
    }

    /// Forgets the in-memory state for `resource_url` (stored credentials stay).
    pub fn forget(&self, resource_url: &str) {
        self.resources().remove(resource_url);
    }

    /// The scopes requested in the last authorization for `resource_url`.
    pub fn requested_scopes(&self, resource_url: &str) -> Option<Vec<String>> {
        self.state(resource_url).map(|s| s.requested_scopes)
    }

    // ---------------------------------------------------------------- HTTP helpers

    fn http_err(url: &str) -> impl FnOnce(crate::error::HttpError) -> AuthError + '_ {
        move |source| AuthError::Http {
            url: url.to_owned(),
            source,
        }
    }

    async fn get_json<T: DeserializeOwned>(
        &self,
        url: &str,
        what: &'static str,
    ) -> Result<Fetched<T>, AuthError> {
        let mut req = http::Request::get(url).header(ACCEPT, "application/json");
        if let Some(rev) = &self.inner.config.protocol_revision {
            req = req.header("MCP-Protocol-Version", rev.as_str());
        }
        let req = req.body(Bytes::new()).map_err(|_| AuthError::InvalidUrl {
            url: url.to_owned(),
            reason: "not a valid request URL",
        })?;
        let response = self
            .inner
            .http
            .send(req)
            .await
            .map_err(Self::http_err(url))?;
        if !response.status().is_success() {
            return Ok(Fetched::Missing(format!("{url} ({})", response.status())));
        }
        serde_json::from_slice(response.body())
            .map(Fetched::Found)
            .map_err(|e| AuthError::InvalidResponse {
                what,
                url: url.to_owned(),
                detail: e.to_string(),
            })
    }

    async fn post(
        &self,
        url: &str,
        content_type: &'static str,
        body: Vec<u8>,
        headers: HeaderMap,
    ) -> Result<http::Response<Bytes>, AuthError> {
        let mut req = http::Request::builder()
            .method(Method::POST)
            .uri(url)
            .header(CONTENT_TYPE, content_type)
            .header(ACCEPT, "application/json");
        if let Some(h) = req.headers_mut() {
            h.extend(headers);
        }
        let req = req
            .body(Bytes::from(body))
            .map_err(|_| AuthError::InvalidUrl {
                url: url.to_owned(),
                reason: "not a valid request URL",
            })?;
        self.inner.http.send(req).await.map_err(Self::http_err(url))
    }

    fn endpoint<'m>(
        &self,
        value: Option<&'m String>,
        name: &'static str,
        meta_url: &str,
    ) -> Result<&'m str, AuthError> {
        let url = value.ok_or_else(|| AuthError::InvalidResponse {
            what: "authorization server metadata",
            url: meta_url.to_owned(),
            detail: format!("no {name}"),
        })?;
        uri::check_endpoint(url, self.inner.config.allow_insecure_http).map_err(|reason| {
            AuthError::InvalidUrl {
                url: url.clone(),
                reason,
            }
        })?;
        Ok(url)
    }

    // ---------------------------------------------------------------- discovery

    async fn fetch_protected_resource_metadata(
        &self,
        resource_url: &str,
        challenge: &BearerChallenge,
    ) -> Result<ProtectedResourceMetadata, AuthError> {
        let mut candidates = Vec::new();
        if let Some(u) = &challenge.resource_metadata {
            candidates.push(u.clone());
        }
        let well_known = uri::protected_resource_metadata_urls(resource_url).ok_or_else(|| {
            AuthError::InvalidUrl {
                url: resource_url.to_owned(),
                reason: "not an absolute http(s) URL",
            }
        })?;
        for u in well_known {
            if !candidates.contains(&u) {
                candidates.push(u);
            }
        }
        let mut tried = Vec::new();
        for url in candidates {
            if let Err(reason) = uri::check_endpoint(&url, self.inner.config.allow_insecure_http) {
                tracing::debug!(%url, reason, "skipping protected resource metadata URL");
                tried.push(format!("{url} ({reason})"));
                continue;
            }
            match self
                .get_json::<ProtectedResourceMetadata>(&url, "protected resource metadata")
                .await
            {
                Ok(Fetched::Found(prm)) => return Ok(prm),
                Ok(Fetched::Missing(why)) => tried.push(why),
                Err(e) => {
                    tracing::debug!(%url, error = %e, "protected resource metadata fetch failed");
                    tried.push(format!("{url} ({e})"));
                }
            }
        }
        Err(AuthError::ProtectedResourceMetadataNotFound { tried })
    }

    async fn fetch_authorization_server_metadata(
        &self,
        issuer: &str,
    ) -> Result<AuthorizationServerMetadata, AuthError> {
        uri::check_endpoint(issuer, self.inner.config.allow_insecure_http).map_err(|reason| {
            AuthError::InvalidUrl {
                url: issuer.to_owned(),
                reason,
            }
        })?;
        let urls = uri::authorization_server_metadata_urls(issuer).ok_or_else(|| {
            AuthError::InvalidUrl {
                url: issuer.to_owned(),
                reason: "an issuer must be an http(s) URL without query or fragment",
            }
        })?;
        let mut tried = Vec::new();
        for url in urls {
            match self
                .get_json::<AuthorizationServerMetadata>(&url, "authorization server metadata")
                .await
            {
                Ok(Fetched::Found(meta)) => {
                    // RFC 8414 section 3.3: plain string comparison, no normalisation.
                    if meta.issuer != issuer {
                        return Err(AuthError::IssuerMismatch {
                            expected: issuer.to_owned(),
                            found: meta.issuer,
                        });
                    }
                    return Ok(meta);
                }
                Ok(Fetched::Missing(why)) => tried.push(why),
                Err(e) => {
                    tracing::debug!(%url, error = %e, "authorization server metadata fetch failed");
                    tried.push(format!("{url} ({e})"));
                }
            }
        }
        Err(AuthError::AuthorizationServerMetadataNotFound {
            issuer: issuer.to_owned(),
            tried,
        })
    }

    async fn discover(
        &self,
        resource_url: &str,
        challenge: &BearerChallenge,
    ) -> Result<Discovered, AuthError> {
        let prm = self
            .fetch_protected_resource_metadata(resource_url, challenge)
            .await?;
        if !uri::resource_matches(&prm.resource, resource_url) {
            return Err(AuthError::ResourceMismatch {
                resource: prm.resource,
                server_url: resource_url.to_owned(),
            });
        }
        let issuer = prm
            .authorization_servers
            .first()
            .cloned()
            .ok_or(AuthError::NoAuthorizationServer)?;
        let meta = self.fetch_authorization_server_metadata(&issuer).await?;
        Ok(Discovered {
            resource: prm.resource,
            issuer,
            prm_scopes: prm.scopes_supported,
            resource_requires_dpop: prm.dpop_bound_access_tokens_required == Some(true),
            meta,
        })
    }

    /// Scopes for a fresh authorization: the fixed set if configured, else the challenge's,
    /// else the resource's `scopes_supported`, else none; plus `offline_access` when offered.
    fn select_scopes(&self, challenge: &BearerChallenge, d: &Discovered) -> Vec<String> {
        let config = &self.inner.config;
        let mut scopes = if let Some(fixed) = &config.scopes {
            fixed.clone()
        } else {
            let from_challenge = challenge.scopes();
            if !from_challenge.is_empty() {
                from_challenge
            } else {
                d.prm_scopes.clone().unwrap_or_default()
            }
        };
        self.add_offline_access(&mut scopes, d);
        scopes
    }

    fn add_offline_access(&self, scopes: &mut Vec<String>, d: &Discovered) {
        if self.inner.config.offline_access
            && matches!(self.inner.config.grant, Grant::AuthorizationCode)
            && !scopes.is_empty()
            && d.meta.supports_scope("offline_access")
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".to_owned());
        }
    }

    // ---------------------------------------------------------------- registration

    fn send_application_type(&self) -> bool {
        self.inner.config.metadata.application_type.is_some()
            || self
                .inner
                .config
                .protocol_revision
                .as_deref()
                .and_then(ProtocolVersion::from_date)
                .is_some_and(|r| r.has(Feature::RegistrationApplicationType))
    }

    async fn resolve_client(
        &self,
        d: &Discovered,
        stored: &mut StoredCredentials,
    ) -> Result<ResolvedClient, AuthError> {
        let config = &self.inner.config;
        let pre = config
            .pre_registered
            .iter()
            .find(|(i, _)| i.as_deref() == Some(d.issuer.as_str()))
            .or_else(|| config.pre_registered.iter().find(|(i, _)| i.is_none()));
        if let Some((_, creds)) = pre {
            return Ok(ResolvedClient {
                credentials: creds.clone(),
                assigned_method: None,
            });
        }
        if let (Some(url), Some(true)) = (
            &config.client_metadata_url,
            d.meta.client_id_metadata_document_supported,
        ) {
            return Ok(ResolvedClient {
                credentials: ClientCredentials::public(url.clone()),
                assigned_method: Some("none".to_owned()),
            });
        }
        if let Some(reg) = stored.client.as_ref().filter(|r| !r.expired(now_secs())) {
            return Ok(Self::resolved_from_registration(reg));
        }
        if d.meta.registration_endpoint.is_some() {
            let reg = self.register(d).await?;
            let resolved = Self::resolved_from_registration(&reg);
            stored.client = Some(reg);
            return Ok(resolved);
        }
        Err(AuthError::NoRegistrationMethod {
            issuer: d.issuer.clone(),
        })
    }

    fn resolved_from_registration(reg: &ClientRegistration) -> ResolvedClient {
        let credentials = match &reg.client_secret {
            Some(secret) => ClientCredentials::with_secret(reg.client_id.clone(), secret.clone()),
            None => ClientCredentials::public(reg.client_id.clone()),
        };
        ResolvedClient {
            credentials,
            assigned_method: reg.token_endpoint_auth_method.clone(),
        }
    }

    /// Dynamic client registration (RFC 7591).
    async fn register(&self, d: &Discovered) -> Result<ClientRegistration, AuthError> {
        let url = self.endpoint(
            d.meta.registration_endpoint.as_ref(),
            "registration_endpoint",
            &d.issuer,
        )?;
        let config = &self.inner.config;
        let supported = &d.meta.token_endpoint_auth_methods_supported;
        let lists = |m: &str| AuthorizationServerMetadata::lists(supported, m);
        let method = if supported.is_none() || lists("none") {
            "none"
        } else if lists("client_secret_basic") {
            "client_secret_basic"
        } else if lists("client_secret_post") {
            "client_secret_post"
        } else {
            "none"
        };
        let mut body = serde_json::json!({
            "client_name": config.metadata.client_name,
            "redirect_uris": [config.metadata.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
        });
        if self.send_application_type() {
            let t = config
                .metadata
                .application_type
                .unwrap_or_else(|| ApplicationType::infer(&config.metadata.redirect_uri));
            body["application_type"] = t.as_str().into();
        }
        if let Some(u) = &config.metadata.client_uri {
            body["client_uri"] = u.as_str().into();
        }
        let body = serde_json::to_vec(&body).map_err(|e| AuthError::Config(e.to_string()))?;
        let response = self
            .post(url, "application/json", body, HeaderMap::new())
            .await?;
        let reg: RegistrationResponse =
            Self::endpoint_answer(&response, "registration", "registration response", url)?;
        if reg.client_id.is_empty() {
            return Err(AuthError::InvalidResponse {
                what: "registration response",
                url: url.to_owned(),
                detail: "empty client_id".to_owned(),
            });
        }
        tracing::debug!(issuer = %d.issuer, client_id = %reg.client_id, "registered client");
        Ok(ClientRegistration {
            client_id: reg.client_id,
            client_secret: reg.client_secret,
            token_endpoint_auth_method: reg
                .token_endpoint_auth_method
                .or_else(|| Some(method.to_owned())),
            client_secret_expires_at: reg.client_secret_expires_at,
        })
    }

    // ---------------------------------------------------------------- token endpoint

    /// The JSON answer of `endpoint`: an error status is [`AuthError::Endpoint`], a body that
    /// is not a `T` an invalid `what` from `url`.
    fn endpoint_answer<T: DeserializeOwned>(
        response: &http::Response<Bytes>,
        endpoint: &'static str,
        what: &'static str,
        url: &str,
    ) -> Result<T, AuthError> {
        let status = response.status();
        if !status.is_success() {
            return Err(Self::endpoint_error(endpoint, status, response.body()));
        }
        serde_json::from_slice(response.body()).map_err(|e| AuthError::InvalidResponse {
            what,
            url: url.to_owned(),
            detail: e.to_string(),
        })
    }

    fn endpoint_error(endpoint: &'static str, status: StatusCode, body: &[u8]) -> AuthError {
        let parsed: Option<OAuthErrorBody> = serde_json::from_slice(body).ok();
        let (error, description) = parsed
            .map(|b| (b.error, b.error_description))
            .unwrap_or((None, None));
        AuthError::Endpoint {
            endpoint,
            status: status.as_u16(),
            error,
            description,
        }
    }

    /// Adds client authentication to a token request.
    fn authenticate_client(
        &self,
        client: &ResolvedClient,
        d: &Discovered,
        form: &mut Vec<(&'static str, String)>,
    ) -> Result<Option<HeaderValue>, AuthError> {
        let id = client.credentials.client_id.clone();
        match &client.credentials.auth {
            ClientAuth::None => {
                form.push(("client_id", id));
                Ok(None)
            }
            ClientAuth::Secret(secret) => {
                let supported = &d.meta.token_endpoint_auth_methods_supported;
                let lists = |m: &str| AuthorizationServerMetadata::lists(supported, m);
                let method = match client.assigned_method.as_deref() {
                    Some(m @ ("client_secret_basic" | "client_secret_post" | "none")) => m,
                    _ if supported.is_none() || lists("client_secret_basic") => {
                        "client_secret_basic"
                    }
                    _ if lists("client_secret_post") => "client_secret_post",
                    _ => "client_secret_basic",
                };
                match method {
                    "client_secret_post" => {
                        form.push(("client_id", id));
                        form.push(("client_secret", secret.clone()));
                        Ok(None)
                    }
                    "none" => {
                        form.push(("client_id", id));
                        Ok(None)
                    }
                    _ => {
                        // RFC 6749 section 2.3.1: form-encode both parts, then Basic.
                        let user: String = form_urlencoded::byte_serialize(id.as_bytes()).collect();
                        let pass: String =
                            form_urlencoded::byte_serialize(secret.as_bytes()).collect();
                        let mut value = HeaderValue::try_from(format!(
                            "Basic {}",
                            STANDARD.encode(format!("{user}:{pass}"))
                        ))
                        .map_err(|_| AuthError::Config("unusable client credentials".into()))?;
                        value.set_sensitive(true);
                        Ok(Some(value))
                    }
                }
            }
            ClientAuth::PrivateKeyJwt(key) => {
                let assertion = key.assertion(&id, &d.issuer)?;
                form.push(("client_id", id));
                form.push((
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
                ));
                form.push(("client_assertion", assertion));
                Ok(None)
            }
        }
    }

    /// The DPoP key to bind tokens from this authorization server to, if DPoP is used with
    /// it: when the policy allows it and the server accepts `ES256` proofs. Without such a
    /// server, DPoP being required (by the policy, or by the resource's metadata) is an error
    /// found before anything is registered or authorized.
    fn dpop_for(&self, d: &Discovered) -> Result<Option<&Dpop>, AuthError> {
        let Some(dpop) = &self.inner.dpop else {
            return Ok(None);
        };
        let listed = AuthorizationServerMetadata::lists(
            &d.meta.dpop_signing_alg_values_supported,
            dpop::ALG,
        );
        let required = self.inner.config.dpop == DpopPolicy::Required || d.resource_requires_dpop;
        match (listed, required) {
            (true, _) => Ok(Some(dpop)),
            (false, true) => Err(AuthError::DpopNotSupported {
                issuer: d.issuer.clone(),
            }),
            (false, false) => Ok(None),
        }
    }

    /// Whether a token can be presented by this client: a bearer token, or one bound to the
    /// client's own DPoP key.
    fn usable_binding(&self, tokens: &TokenSet) -> bool {
        match &tokens.dpop_jkt {
            None => true,
            Some(jkt) => self
                .inner
                .dpop
                .as_ref()
                .is_some_and(|d| d.key.thumbprint() == jkt),
        }
    }

    async fn token_request(
        &self,
        d: &Discovered,
        client: &ResolvedClient,
        form: Vec<(&'static str, String)>,
        requested: &[String],
        previous_refresh: Option<&str>,
    ) -> Result<TokenSet, AuthError> {
        let url = self.endpoint(d.meta.token_endpoint.as_ref(), "token_endpoint", &d.issuer)?;
        let dpop = self.dpop_for(d)?;
        let mut nonce_retried = false;
        let response = loop {
            // Client authentication is redone for a retry: an assertion's `jti` is single-use.
            let mut form = form.clone();
            let auth = self.authenticate_client(client, d, &mut form)?;
            let mut headers = authorization_headers(auth);
            if let Some(dpop) = dpop {
                let nonce = dpop.nonces.get(url);
                let proof = dpop.key.proof(&Method::POST, url, None, nonce.as_deref())?;
                headers.insert(dpop::DPOP, header_value(proof)?);
            }
            let response = self
                .post(
                    url,
                    "application/x-www-form-urlencoded",
                    form_body(&form),
                    headers,
                )
                .await?;
            let Some(dpop) = dpop else { break response };
            // RFC 9449 section 8: a nonce may come with any answer; `use_dpop_nonce` asks for a
            // new proof carrying it.
            let fresh = response
                .headers()
                .get(dpop::DPOP_NONCE)
                .is_some_and(|v| dpop.nonces.record(url, v));
            if fresh
                && !nonce_retried
                && response.status() == StatusCode::BAD_REQUEST
                && oauth_error(response.body()).as_deref() == Some("use_dpop_nonce")
            {
                tracing::debug!(%url, "token endpoint asked for a DPoP nonce; retrying");
                nonce_retried = true;
                continue;
            }
            break response;
        };
        let tr: TokenResponse = Self::endpoint_answer(&response, "token", "token response", url)?;
        let invalid = |detail: String| AuthError::InvalidResponse {
            what: "token response",
            url: url.to_owned(),
            detail,
        };
        let dpop_jkt = match (tr.token_type.as_deref(), dpop) {
            (Some(t), Some(dpop)) if t.eq_ignore_ascii_case("dpop") => {
                Some(dpop.key.thumbprint().to_owned())
            }
            // RFC 9449 section 5: a server may answer a proof with a bearer token.
            (Some(t), Some(_))
                if t.eq_ignore_ascii_case("bearer")
                    && self.inner.config.dpop == DpopPolicy::Required =>
            {
                return Err(AuthError::UnsupportedTokenType(t.to_owned()));
            }
            (Some(t), _) if t.eq_ignore_ascii_case("bearer") => None,
            (Some(t), _) => return Err(AuthError::UnsupportedTokenType(t.to_owned())),
            (None, _) => return Err(invalid("no token_type".to_owned())),
        };
        if tr.access_token.is_empty()
            || HeaderValue::try_from(format!("Bearer {}", tr.access_token)).is_err()
        {
            return Err(invalid(
                "access_token is empty or not header-safe".to_owned(),
            ));
        }
        let expires_in = match &tr.expires_in {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::Number(n)) => n.as_u64(),
            Some(serde_json::Value::String(s)) => s.parse::<u64>().ok(),
            Some(_) => None,
        };
        Ok(TokenSet {
            access_token: tr.access_token,
            refresh_token: tr
                .refresh_token
                .or_else(|| previous_refresh.map(str::to_owned)),
            expires_at: expires_in.map(|s| now_secs().saturating_add(s)),
            scopes: match tr.scope {
                Some(s) => split_scopes(&s),
                None => requested.to_vec(),
            },
            dpop_jkt,
        })
    }

    async fn refresh(
        &self,
        d: &Discovered,
        client: &ResolvedClient,
        tokens: &TokenSet,
    ) -> Result<TokenSet, AuthError> {
        let refresh_token = tokens
            .refresh_token
            .as_deref()
            .ok_or_else(|| AuthError::Config("no refresh token".into()))?;
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh_token.to_owned()),
            ("resource", d.resource.clone()),
        ];
        self.token_request(d, client, form, &tokens.scopes, Some(refresh_token))
            .await
    }

    async fn client_credentials(
        &self,
        d: &Discovered,
        creds: &ClientCredentials,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let form = vec![("grant_type", "client_credentials".to_owned())];
        self.grant_request(d, creds, form, scopes).await
    }

    /// The token request of a grant the client makes in its own name (no user, no refresh
    /// token): `form` with the scopes and the resource.
    async fn grant_request(
        &self,
        d: &Discovered,
        credentials: &ClientCredentials,
        mut form: Vec<(&'static str, String)>,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let client = ResolvedClient {
            credentials: credentials.clone(),
            assigned_method: None,
        };
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        form.push(("resource", d.resource.clone()));
        self.token_request(d, &client, form, scopes, None).await
    }

    /// A token by the JWT bearer grant (RFC 7523 section 2.1).
    async fn jwt_bearer(
        &self,
        d: &Discovered,
        grant: &JwtBearer,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        let assertion = match &grant.assertion {
            AssertionSource::Fn(f) => f()?,
            AssertionSource::Enterprise(idp) => self.id_jag(d, idp, scopes).await?,
        };
        let form = vec![
            ("grant_type", JWT_BEARER_GRANT.to_owned()),
            ("assertion", assertion),
        ];
        self.grant_request(d, &grant.credentials, form, scopes)
            .await
    }

    /// Exchanges the user's ID token at the enterprise identity provider for an ID-JAG
    /// addressed to the authorization server `d.issuer` for the resource `d.resource`
    /// (RFC 8693 token exchange, SEP-990).
    async fn id_jag(
        &self,
        d: &Discovered,
        idp: &EnterpriseIdp,
        scopes: &[String],
    ) -> Result<String, AuthError> {
        crate::uri::check_endpoint(&idp.token_endpoint, self.inner.config.allow_insecure_http)
            .map_err(|reason| AuthError::InvalidUrl {
                url: idp.token_endpoint.clone(),
                reason,
            })?;
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT.to_owned()),
            ("requested_token_type", ID_JAG_TOKEN_TYPE.to_owned()),
            ("audience", d.issuer.clone()),
            ("resource", d.resource.clone()),
            ("subject_token", idp.id_token.clone()),
            ("subject_token_type", ID_TOKEN_TYPE.to_owned()),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        // Client authentication at the identity provider: assertions are addressed to its token
        // endpoint (RFC 7523 section 3 allows it as the audience).
        let at_idp = Discovered {
            resource: d.resource.clone(),
            issuer: idp.token_endpoint.clone(),
            prm_scopes: None,
            resource_requires_dpop: false,
            meta: AuthorizationServerMetadata::default(),
        };
        let client = ResolvedClient {
            credentials: idp.client.clone(),
            assigned_method: None,
        };
        let auth = self.authenticate_client(&client, &at_idp, &mut form)?;
        let url = idp.token_endpoint.as_str();
        let response = self
            .post(
                url,
                "application/x-www-form-urlencoded",
                form_body(&form),
                authorization_headers(auth),
            )
            .await?;
        #[derive(serde::Deserialize)]
        struct Exchanged {
            access_token: String,
            issued_token_type: Option<String>,
        }
        let exchanged: Exchanged =
            Self::endpoint_answer(&response, "token exchange", "token exchange response", url)?;
        let invalid = |detail: String| AuthError::InvalidResponse {
            what: "token exchange response",
            url: url.to_owned(),
            detail,
        };
        match exchanged.issued_token_type.as_deref() {
            Some(ID_JAG_TOKEN_TYPE) if !exchanged.access_token.is_empty() => {
                Ok(exchanged.access_token)
            }
            Some(other) if other != ID_JAG_TOKEN_TYPE => Err(invalid(format!(
                "issued_token_type is {other:?}, not an ID-JAG"
            ))),
            _ => Err(invalid("no ID-JAG in the response".to_owned())),
        }
    }

    /// A token by the grant configured for machine-to-machine use, if any.
    async fn machine_grant(
        &self,
        d: &Discovered,
        scopes: &[String],
    ) -> Option<Result<TokenSet, AuthError>> {
        match &self.inner.config.grant {
            Grant::AuthorizationCode => None,
            Grant::ClientCredentials(creds) => {
                Some(self.client_credentials(d, creds, scopes).await)
            }
            Grant::JwtBearer(grant) => Some(self.jwt_bearer(d, grant, scopes).await),
        }
    }

    /// Checks what the authorization code flow needs before anything is registered.
    fn check_code_flow(&self, d: &Discovered) -> Result<(), AuthError> {
        if !d.meta.supports_s256() {
            return Err(AuthError::PkceNotSupported {
                issuer: d.issuer.clone(),
            });
        }
        self.endpoint(
            d.meta.authorization_endpoint.as_ref(),
            "authorization_endpoint",
            &d.issuer,
        )?;
        self.endpoint(d.meta.token_endpoint.as_ref(), "token_endpoint", &d.issuer)?;
        if self.inner.handler.is_none() {
            return Err(AuthError::NoAuthorizationHandler);
        }
        Ok(())
    }

    /// The authorization code flow with PKCE, `state`, `resource` and `iss` validation.
    async fn authorization_code(
        &self,
        d: &Discovered,
        client: &ResolvedClient,
        scopes: &[String],
    ) -> Result<TokenSet, AuthError> {
        self.check_code_flow(d)?;
        let handler = self
            .inner
            .handler
            .as_ref()
            .ok_or(AuthError::NoAuthorizationHandler)?;
        let endpoint = self.endpoint(
            d.meta.authorization_endpoint.as_ref(),
            "authorization_endpoint",
            &d.issuer,
        )?;
        let rng = |e: getrandom::Error| AuthError::Config(format!("no randomness: {e}"));
        let pkce = Pkce::generate().map_err(rng)?;
        let state = random_string(32).map_err(rng)?;
        let redirect_uri = self.inner.config.metadata.redirect_uri.clone();
        let scope = scopes.join(" ");
        let mut params: Vec<(&str, &str)> = vec![
            ("response_type", "code"),
            ("client_id", &client.credentials.client_id),
            ("redirect_uri", &redirect_uri),
        ];
        if !scope.is_empty() {
            params.push(("scope", &scope));
        }
        params.extend([
            ("state", state.as_str()),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("resource", d.resource.as_str()),
        ]);
        let request = AuthorizationRequest {
            url: uri::append_query(endpoint, params),
            redirect_uri: redirect_uri.clone(),
            state: state.clone(),
        };
        tracing::debug!(issuer = %d.issuer, scope = %scope, "starting authorization");
        let (code, got_state, iss, error, description) = match handler.authorize(&request).await? {
            AuthorizationResponse::Redirect(url) => {
                let mut code = None;
                let mut st = None;
                let mut iss = None;
                let mut error = None;
                let mut description = None;
                for (k, v) in uri::query_pairs(&url) {
                    let slot = match k.as_str() {
                        "code" => &mut code,
                        "state" => &mut st,
                        "iss" => &mut iss,
                        "error" => &mut error,
                        "error_description" => &mut description,
                        _ => continue,
                    };
                    if slot.is_none() {
                        *slot = Some(v);
                    }
                }
                (code, st, iss, error, description)
            }
            AuthorizationResponse::Code { code, state, iss } => {
                (Some(code), state, iss, None, None)
            }
        };
        if got_state.as_deref() != Some(state.as_str()) {
            return Err(AuthError::StateMismatch);
        }
        // RFC 9207: compare a present iss by plain string; require it where advertised.
        match iss {
            Some(iss) if iss != d.issuer => {
                return Err(AuthError::IssMismatch {
                    expected: d.issuer.clone(),
                    found: Some(iss),
                });
            }
            None if d.meta.authorization_response_iss_parameter_supported == Some(true) => {
                return Err(AuthError::IssMismatch {
                    expected: d.issuer.clone(),
                    found: None,
                });
            }
            _ => {}
        }
        if let Some(error) = error {
            return Err(AuthError::AuthorizationDenied { error, description });
        }
        let code = code
            .filter(|c| !c.is_empty())
            .ok_or(AuthError::MissingCode)?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", pkce.verifier),
            ("resource", d.resource.clone()),
        ];
        self.token_request(d, client, form, scopes, None).await
    }

    // ---------------------------------------------------------------- the provider flows

    async fn save_tokens(
        &self,
        d: &Discovered,
        stored: &mut StoredCredentials,
        tokens: &TokenSet,
    ) -> Result<(), AuthError> {
        stored.tokens.insert(d.resource.clone(), tokens.clone());
        self.inner.store.save(&d.issuer, stored).await?;
        Ok(())
    }

    async fn handle_unauthorized(
        &self,
        resource_url: &str,
        headers: &HeaderMap,
    ) -> Result<(), AuthError> {
        let _flow = self.inner.flow.lock().await;
        let previous = self.state(resource_url);
        // A DPoP error about the proof of a bound token is not fixed by a new token: the
        // nonce retry (`on_response`) has been made, or the proof itself is refused.
        if previous
            .as_ref()
            .and_then(|p| p.tokens.as_ref())
            .is_some_and(|t| t.dpop_jkt.is_some())
        {
            if let Some((error, description)) = dpop_challenge_error(headers) {
                if error == "use_dpop_nonce" || error == "invalid_dpop_proof" {
                    return Err(AuthError::DpopRejected { error, description });
                }
            }
        }
        let challenge = BearerChallenge::from_headers(headers);
        let d = Arc::new(self.discover(resource_url, &challenge).await?);
        self.dpop_for(&d)?;
        let previous = match previous {
            Some(p) if p.discovered.issuer == d.issuer && p.discovered.resource == d.resource => {
                Some(p)
            }
            Some(p) => {
                tracing::info!(
                    old = %p.discovered.issuer,
                    new = %d.issuer,
                    "authorization server changed; credentials of the old one are not reused"
                );
                None
            }
            None => None,
        };
        let mut scopes = self.select_scopes(&challenge, &d);
        if self.inner.config.scopes.is_none() {
            if let Some(p) = &previous {
                scopes = scope_union(&scopes, &p.requested_scopes);
            }
        }
        let mut stored = self.inner.store.load(&d.issuer).await?.unwrap_or_default();

        if let Some(tokens) = self.machine_grant(&d, &scopes).await {
            let tokens = tokens?;
            self.save_tokens(&d, &mut stored, &tokens).await?;
            self.set_state(
                resource_url,
                ResourceState {
                    discovered: d,
                    client: None,
                    requested_scopes: scopes,
                    tokens: Some(tokens),
                    refreshed_after_401: false,
                    step_up: None,
                },
            );
            return Ok(());
        }

        self.check_code_flow(&d)?;
        let client = self.resolve_client(&d, &mut stored).await?;
        let rejected = previous
            .as_ref()
            .and_then(|p| p.tokens.as_ref())
            .map(|t| t.access_token.clone());
        let refreshed_before = previous.as_ref().is_some_and(|p| p.refreshed_after_401);
        let step_up = previous.as_ref().and_then(|p| p.step_up.clone());
        // The state once the code flow's client holds a token.
        let authorized = |requested_scopes, tokens, refreshed_after_401| ResourceState {
            discovered: Arc::clone(&d),
            client: Some(client.clone()),
            requested_scopes,
            tokens: Some(tokens),
            refreshed_after_401,
            step_up: step_up.clone(),
        };
        if let Some(saved) = stored
            .tokens
            .get(&d.resource)
            .filter(|t| self.usable_binding(t))
            .cloned()
        {
            if rejected.as_deref() != Some(saved.access_token.as_str())
                && !saved.expires_within(now_secs(), self.inner.config.expiry_skew_secs)
            {
                tracing::debug!("using stored token");
                let requested = if saved.scopes.is_empty() {
                    scopes
                } else {
                    saved.scopes.clone()
                };
                self.set_state(resource_url, authorized(requested, saved, false));
                return Ok(());
            }
            if saved.refresh_token.is_some() && !refreshed_before {
                match self.refresh(&d, &client, &saved).await {
                    Ok(tokens) => {
                        self.save_tokens(&d, &mut stored, &tokens).await?;
                        self.set_state(resource_url, authorized(scopes, tokens, true));
                        return Ok(());
                    }
                    Err(e) => tracing::debug!(error = %e, "refresh failed; authorizing anew"),
                }
            }
        }
        // Save a fresh registration before the user step, so it survives a failure there.
        self.inner.store.save(&d.issuer, &stored).await?;
        let tokens = self.authorization_code(&d, &client, &scopes).await?;
        self.save_tokens(&d, &mut stored, &tokens).await?;
        self.set_state(resource_url, authorized(scopes, tokens, false));
        Ok(())
    }

    async fn handle_insufficient_scope(
        &self,
        resource_url: &str,
        headers: &HeaderMap,
    ) -> Result<(), AuthError> {
        let Some(previous) = self.state(resource_url) else {
            return self.handle_unauthorized(resource_url, headers).await;
        };
        let _flow = self.inner.flow.lock().await;
        let challenge = BearerChallenge::from_headers(headers);
        if challenge.error.as_deref() != Some("insufficient_scope") {
            tracing::debug!(error = ?challenge.error, "403 without insufficient_scope; stepping up anyway");
        }
        let d = previous.discovered.clone();
        let mut scopes = scope_union(&previous.requested_scopes, &challenge.scopes());
        self.add_offline_access(&mut scopes, &d);
        let key = scope_key(&scopes);
        let attempts = match &previous.step_up {
            Some((k, n)) if *k == key => n.saturating_add(1),
            _ => 1,
        };
        if attempts > self.inner.config.max_step_up_attempts {
            return Err(AuthError::StepUpLimit {
                scope: scopes.join(" "),
                attempts: attempts - 1,
            });
        }
        let mut state = previous.clone();
        state.step_up = Some((key, attempts));
        state.requested_scopes = scopes.clone();
        state.tokens = None;
        self.set_state(resource_url, state.clone());

        let mut stored = self.inner.store.load(&d.issuer).await?.unwrap_or_default();
        let tokens = match &self.inner.config.grant {
            Grant::ClientCredentials(creds) => self.client_credentials(&d, creds, &scopes).await?,
            Grant::JwtBearer(grant) => self.jwt_bearer(&d, grant, &scopes).await?,
            Grant::AuthorizationCode => {
                let client = match &previous.client {
                    Some(c) => c.clone(),
                    None => self.resolve_client(&d, &mut stored).await?,
                };
                let tokens = self.authorization_code(&d, &client, &scopes).await?;
                state.client = Some(client);
                tokens
            }
        };
        self.save_tokens(&d, &mut stored, &tokens).await?;
        state.tokens = Some(tokens);
        state.refreshed_after_401 = false;
        self.set_state(resource_url, state);
        Ok(())
    }

    /// The token to present to `resource_url`, refreshed first when it is about to expire.
    async fn current_tokens(&self, resource_url: &str) -> Option<TokenSet> {
        let skew = self.inner.config.expiry_skew_secs;
        let tokens = self.state(resource_url)?.tokens?;
        if !tokens.expires_within(now_secs(), skew) {
            return Some(tokens);
        }
        tokens.refresh_token.as_ref()?;
        let _flow = self.inner.flow.lock().await;
        // Another task may have refreshed while this one waited.
        let state = self.state(resource_url)?;
        let tokens = state.tokens.clone()?;
        if !tokens.expires_within(now_secs(), skew) {
            return Some(tokens);
        }
        let d = state.discovered.clone();
        let client = match &state.client {
            Some(c) => c.clone(),
            None => {
                self.clear_tokens(resource_url);
                return None;
            }
        };
        match self.refresh(&d, &client, &tokens).await {
            Ok(new) => {
                match self.inner.store.load(&d.issuer).await {
                    Ok(stored) => {
                        let mut stored = stored.unwrap_or_default();
                        if let Err(e) = self.save_tokens(&d, &mut stored, &new).await {
                            tracing::warn!(error = %e, "could not store refreshed token");
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "could not load stored credentials"),
                }
                if let Some(s) = self.resources().get_mut(resource_url) {
                    s.tokens = Some(new.clone());
                    s.refreshed_after_401 = false;
                }
                Some(new)
            }
            Err(e) => {
                tracing::debug!(error = %e, "token refresh failed");
                self.clear_tokens(resource_url);
                None
            }
        }
    }
}

impl OAuthClient {
    /// The credentials of one request: `Bearer`, or `DPoP` with a fresh proof for a token
    /// bound to this client's key.
    async fn authorize(
        &self,
        method: &Method,
        url: &str,
        headers: &mut HeaderMap,
    ) -> Result<(), AuthError> {
        let Some(tokens) = self.current_tokens(url).await else {
            return Ok(());
        };
        let Some(jkt) = &tokens.dpop_jkt else {
            if let Some(v) = bearer(&tokens.access_token) {
                headers.insert(AUTHORIZATION, v);
            }
            return Ok(());
        };
        match &self.inner.dpop {
            Some(dpop) if dpop.key.thumbprint() == jkt => {
                let nonce = dpop.nonces.get(url);
                let proof =
                    dpop.key
                        .proof(method, url, Some(&tokens.access_token), nonce.as_deref())?;
                let mut value = header_value(format!("DPoP {}", tokens.access_token))?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
                headers.insert(dpop::DPOP, header_value(proof)?);
            }
            // Bound to a key this client does not hold: presenting it cannot succeed.
            _ => tracing::debug!("the token is bound to another DPoP key; sending none"),
        }
        Ok(())
    }

    /// Remembers a `DPoP-Nonce` of the server at `url`; a `401` with a `use_dpop_nonce`
    /// challenge to a DPoP request that brought a usable nonce is retried with it
    /// (RFC 9449 section 9).
    fn observe(&self, url: &str, status: StatusCode, headers: &HeaderMap) -> ResponseAction {
        let (Some(dpop), Some(nonce)) = (&self.inner.dpop, headers.get(dpop::DPOP_NONCE)) else {
            return ResponseAction::Proceed;
        };
        if !dpop.nonces.record(url, nonce) || status != StatusCode::UNAUTHORIZED {
            return ResponseAction::Proceed;
        }
        let bound = self
            .state(url)
            .and_then(|s| s.tokens)
            .is_some_and(|t| t.dpop_jkt.is_some());
        match dpop_challenge_error(headers) {
            Some((error, _)) if bound && error == "use_dpop_nonce" => ResponseAction::Retry,
            _ => ResponseAction::Proceed,
        }
    }
}

fn bearer(token: &str) -> Option<HeaderValue> {
    let mut v = HeaderValue::try_from(format!("Bearer {token}")).ok()?;
    v.set_sensitive(true);
    Some(v)
}

fn header_value(value: String) -> Result<HeaderValue, AuthError> {
    HeaderValue::try_from(value).map_err(|_| AuthError::Config("a value is not header-safe".into()))
}

/// Headers carrying an optional `Authorization` value.
fn authorization_headers(authorization: Option<HeaderValue>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(a) = authorization {
        headers.insert(AUTHORIZATION, a);
    }
    headers
}

/// An `application/x-www-form-urlencoded` body.
fn form_body(form: &[(&'static str, String)]) -> Vec<u8> {
    let mut body = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form {
        body.append_pair(k, v);
    }
    body.finish().into_bytes()
}

/// The OAuth `error` of an error response body, if it has one.
fn oauth_error(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<OAuthErrorBody>(body)
        .ok()
        .and_then(|b| b.error)
}

/// The `error` and `error_description` of the first `DPoP` challenge that has an `error`.
fn dpop_challenge_error(headers: &HeaderMap) -> Option<(String, Option<String>)> {
    headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(parse_challenges)
        .filter(|c| c.scheme.eq_ignore_ascii_case("dpop"))
        .find_map(|c| {
            let error = c.param("error")?.to_owned();
            Some((error, c.param("error_description").map(str::to_owned)))
        })
}

impl AuthProvider for OAuthClient {
    fn authorization<'a>(&'a self, resource_url: &'a str) -> BoxFuture<'a, Option<HeaderValue>> {
        Box::pin(async move {
            let tokens = self.current_tokens(resource_url).await?;
            let scheme = if tokens.dpop_jkt.is_some() {
                "DPoP"
            } else {
                "Bearer"
            };
            let mut v = HeaderValue::try_from(format!("{scheme} {}", tokens.access_token)).ok()?;
            v.set_sensitive(true);
            Some(v)
        })
    }

    fn authorize_request<'a>(
        &'a self,
        method: &'a Method,
        url: &'a str,
        headers: &'a mut HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        Box::pin(self.authorize(method, url, headers))
    }

    fn on_response(&self, url: &str, status: StatusCode, headers: &HeaderMap) -> ResponseAction {
        self.observe(url, status, headers)
    }

    fn on_unauthorized<'a>(
        &'a self,
        resource_url: &'a str,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        Box::pin(self.handle_unauthorized(resource_url, headers))
    }

    fn on_insufficient_scope<'a>(
        &'a self,
        resource_url: &'a str,
        headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        Box::pin(self.handle_insufficient_scope(resource_url, headers))
    }
}

/// An [`AuthProvider`] that always sends one fixed bearer token, for example one taken from
/// the environment. A `401` or `403` is final.
///
/// ```
/// use mcp_auth::{AuthProvider, StaticToken};
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let provider = StaticToken::new("abc123")?;
/// assert_eq!(provider.authorization("https://mcp.example.com/mcp").await.unwrap(), "Bearer abc123");
/// # Ok::<(), mcp_auth::AuthError>(()) }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct StaticToken {
    header: HeaderValue,
}

impl StaticToken {
    /// A provider for `token`.
    pub fn new(token: &str) -> Result<Self, AuthError> {
        bearer(token)
            .filter(|_| !token.is_empty())
            .map(|header| Self { header })
            .ok_or_else(|| AuthError::Config("the token is empty or not header-safe".into()))
    }

    /// A provider for the token in environment variable `var`, or `None` if it is unset.
    pub fn from_env(var: &str) -> Result<Option<Self>, AuthError> {
        match std::env::var(var) {
            Ok(t) => Self::new(t.trim()).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => {
                Err(AuthError::Config(format!("{var} is not valid Unicode")))
            }
        }
    }
}

impl AuthProvider for StaticToken {
    fn authorization<'a>(&'a self, _resource_url: &'a str) -> BoxFuture<'a, Option<HeaderValue>> {
        Box::pin(async move { Some(self.header.clone()) })
    }

    fn on_unauthorized<'a>(
        &'a self,
        _resource_url: &'a str,
        _headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        Box::pin(async { Err(AuthError::TokenRejected) })
    }

    fn on_insufficient_scope<'a>(
        &'a self,
        _resource_url: &'a str,
        _headers: &'a HeaderMap,
    ) -> BoxFuture<'a, Result<(), AuthError>> {
        Box::pin(async { Err(AuthError::TokenRejected) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_type_inference() {
        for (redirect_uri, expected) in [
            ("http://127.0.0.1:8000/cb", ApplicationType::Native),
            ("http://localhost/cb", ApplicationType::Native),
            ("com.example.app:/cb", ApplicationType::Native),
            ("https://app.example.com/cb", ApplicationType::Web),
        ] {
            assert_eq!(
                ApplicationType::infer(redirect_uri),
                expected,
                "{redirect_uri}"
            );
        }
    }

    #[test]
    fn scope_helpers() {
        let a = vec!["b".to_owned(), "a".to_owned()];
        let b = vec!["a".to_owned(), "c".to_owned()];
        assert_eq!(scope_union(&a, &b), ["b", "a", "c"]);
        assert_eq!(scope_key(&scope_union(&a, &b)), ["a", "b", "c"]);
    }

    #[test]
    fn builder_validates_urls() {
        let bad = OAuthClient::builder(ClientMetadata::new("c", "not a uri")).build();
        assert!(matches!(bad, Err(AuthError::InvalidUrl { .. })));
        let bad_cimd = OAuthClient::builder(ClientMetadata::new("c", "http://localhost/cb"))
            .client_metadata_document("http://example.com/meta.json")
            .build();
        assert!(matches!(bad_cimd, Err(AuthError::InvalidUrl { .. })));
    }

    #[tokio::test]
    async fn static_token() {
        let p = StaticToken::new("t").unwrap();
        assert_eq!(p.authorization("x").await.unwrap(), "Bearer t");
        assert!(p.on_unauthorized("x", &HeaderMap::new()).await.is_err());
        assert!(StaticToken::new("").is_err());
        assert!(StaticToken::new("a\nb").is_err());
    }
}
