//! The resource-server side: an MCP server protected by OAuth.
//!
//! [`ResourceServer`] serves the Protected Resource Metadata, reads bearer tokens from the
//! `Authorization` header only (never from the query string), checks them with a
//! [`BearerVerifier`], and renders `401`/`403` challenges. With
//! [`with_dpop`](ResourceServer::with_dpop) it also accepts DPoP-bound tokens (RFC 9449) and
//! checks their proofs. Handlers get a [`Principal`], which carries no token: a received token
//! is never passed on to another service.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{HeaderValue, Response, StatusCode, request::Parts};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use crate::challenge::{quote, split_scopes};
use crate::http_types::BoxFuture;
use crate::metadata::ProtectedResourceMetadata;
use crate::proof::{self, DpopOptions, Expected, ProofChecker};

/// The root well-known path of Protected Resource Metadata (RFC 9728 section 3).
const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// Whether a query string has an `access_token` parameter (RFC 6750 section 2.3).
fn has_access_token_param(query: &str) -> bool {
    form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "access_token")
}

/// Who made an authenticated request, as established by a [`BearerVerifier`].
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Principal {
    /// The subject (`sub`), if the token names one.
    pub subject: Option<String>,
    /// The client the token was issued to (`client_id` or `azp`), if known.
    pub client_id: Option<String>,
    /// The granted scopes.
    pub scopes: Vec<String>,
    /// All claims of the token (for JWTs), or whatever the verifier chose to expose.
    pub claims: Map<String, Value>,
}

impl Principal {
    /// A principal with a subject and scopes.
    pub fn new<I, S>(subject: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            subject: Some(subject.into()),
            scopes: scopes.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope)
    }

    /// A stable key naming who this is: the issuer (the `iss` claim), the subject and the
    /// client, none of them supplied by the request itself. Bind server-side state to it, as
    /// the specification's session-hijacking mitigation asks (`<user_id>:<session_id>`):
    /// another token of the same user and client yields the same key, a token of anyone else a
    /// different one.
    ///
    /// ```
    /// use mcp_auth::Principal;
    ///
    /// let alice = Principal::new("alice", ["mcp:read"]);
    /// let alice_more = Principal::new("alice", ["mcp:read", "mcp:write"]);
    /// assert_eq!(alice.identity(), alice_more.identity());
    /// assert_ne!(alice.identity(), Principal::new("bob", ["mcp:read"]).identity());
    /// ```
    pub fn identity(&self) -> String {
        let issuer = self.claims.get("iss").and_then(Value::as_str);
        // A JSON array keeps the parts apart whatever characters they contain.
        serde_json::to_string(&(issuer, &self.subject, &self.client_id)).unwrap_or_default()
    }
}

/// Why a bearer token was not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The token is malformed, badly signed, or otherwise invalid.
    #[error("invalid token: {0}")]
    Invalid(String),
    /// The token has expired.
    #[error("token expired")]
    Expired,
    /// The token was issued for another resource.
    #[error("token audience is not this resource")]
    WrongAudience,
    /// The token was issued by an untrusted issuer.
    #[error("token issuer is not trusted")]
    WrongIssuer,
    /// The token could not be checked right now (introspection endpoint down, ...).
    #[error("token verification unavailable: {0}")]
    Unavailable(String),
}

/// Checks a bearer token and says who it belongs to. Implement it for introspection
/// (RFC 7662) or opaque tokens; [`JwtVerifier`] covers JWT access tokens.
///
/// An implementation MUST check that the token was issued for this resource (audience).
///
/// ```
/// use mcp_auth::{BearerVerifier, BoxFuture, Principal, VerifyError};
///
/// /// Accepts one fixed token (for tests).
/// struct Fixed;
///
/// impl BearerVerifier for Fixed {
///     fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>> {
///         Box::pin(async move {
///             if token == "let-me-in" {
///                 Ok(Principal::new("tester", ["mcp:read"]))
///             } else {
///                 Err(VerifyError::Invalid("unknown token".into()))
///             }
///         })
///     }
/// }
/// ```
pub trait BearerVerifier: Send + Sync {
    /// Verifies `token` and returns its principal.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>>;
}

/// A [`BearerVerifier`] for JWT access tokens (RFC 9068 style): checks the signature, the
/// issuer, that the audience contains this resource, and the expiry; reads `scope` (a
/// space-separated string) or `scp` (a string or an array).
///
/// ```
/// use mcp_auth::JwtVerifier;
/// use jsonwebtoken::{Algorithm, DecodingKey};
///
/// let verifier = JwtVerifier::new("https://auth.example.com", "https://mcp.example.com/mcp")
///     .with_key(DecodingKey::from_secret(b"shared secret"), Algorithm::HS256);
/// ```
pub struct JwtVerifier {
    issuer: String,
    audience: String,
    keys: Vec<(Option<String>, DecodingKey, Algorithm)>,
    leeway_secs: u64,
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl JwtVerifier {
    /// A verifier accepting tokens from `issuer` whose audience includes `audience` (this
    /// resource's identifier, as in its protected resource metadata). Add keys before use.
    pub fn new(issuer: impl Into<String>, audience: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            audience: audience.into(),
            keys: Vec::new(),
            leeway_secs: 30,
        }
    }

    /// Adds a verification key for algorithm `alg` (used for tokens without a matching `kid`).
    pub fn with_key(mut self, key: DecodingKey, alg: Algorithm) -> Self {
        self.keys.push((None, key, alg));
        self
    }

    /// Adds every usable key of a JWK Set, matched by `kid`. Keys whose algorithm is not
    /// stated or not supported are skipped.
    pub fn with_jwks(mut self, jwks: &JwkSet) -> Self {
        for jwk in &jwks.keys {
            let Some(alg) = jwk
                .common
                .key_algorithm
                .and_then(|a| a.to_string().parse::<Algorithm>().ok())
            else {
                continue;
            };
            if let Ok(key) = DecodingKey::from_jwk(jwk) {
                self.keys.push((jwk.common.key_id.clone(), key, alg));
            }
        }
        self
    }

    /// Sets the clock skew allowed for `exp` and `nbf` (default 30 s).
    pub fn leeway_secs(mut self, secs: u64) -> Self {
        self.leeway_secs = secs;
        self
    }

    fn verify_sync(&self, token: &str) -> Result<Principal, VerifyError> {
        use jsonwebtoken::errors::ErrorKind;
        let header =
            jsonwebtoken::decode_header(token).map_err(|e| VerifyError::Invalid(e.to_string()))?;
        let candidates: Vec<_> = match &header.kid {
            Some(kid) if self.keys.iter().any(|(k, _, _)| k.as_deref() == Some(kid)) => self
                .keys
                .iter()
                .filter(|(k, _, _)| k.as_deref() == Some(kid))
                .collect(),
            _ => self.keys.iter().filter(|(k, _, _)| k.is_none()).collect(),
        };
        let key = candidates
            .into_iter()
            .find(|(_, _, alg)| *alg == header.alg)
            .ok_or_else(|| VerifyError::Invalid("no key for this token's algorithm".into()))?;
        let mut validation = Validation::new(key.2);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.leeway = self.leeway_secs;
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.1, &validation).map_err(
            |e| match e.kind() {
                ErrorKind::ExpiredSignature => VerifyError::Expired,
                ErrorKind::InvalidAudience => VerifyError::WrongAudience,
                ErrorKind::InvalidIssuer => VerifyError::WrongIssuer,
                _ => VerifyError::Invalid(e.to_string()),
            },
        )?;
        let claims = data.claims;
        let string = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let scopes = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(s)), _) => split_scopes(s),
            (_, Some(Value::String(s))) => split_scopes(s),
            (_, Some(Value::Array(a))) => a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
            _ => Vec::new(),
        };
        Ok(Principal {
            subject: string("sub"),
            client_id: string("client_id").or_else(|| string("azp")),
            scopes,
            claims,
        })
    }
}

impl BearerVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        Box::pin(async move { self.verify_sync(token) })
    }
}

/// The `error` code of a Bearer challenge (RFC 6750 section 3.1), or of a DPoP one
/// (RFC 9449 section 7.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BearerError {
    /// The request is malformed (for example several `Authorization` headers).
    InvalidRequest,
    /// The token is expired, revoked, malformed or not for this resource.
    InvalidToken,
    /// The token lacks a needed scope.
    InsufficientScope,
    /// The DPoP proof is missing, malformed, or does not match the request or the token.
    InvalidDpopProof,
}

impl BearerError {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidToken => "invalid_token",
            Self::InsufficientScope => "insufficient_scope",
            Self::InvalidDpopProof => "invalid_dpop_proof",
        }
    }
}

/// Which challenges a response carries, and which one names the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Schemes {
    bearer: bool,
    dpop: bool,
    error_on_dpop: bool,
}

impl Schemes {
    const BEARER: Schemes = Schemes {
        bearer: true,
        dpop: false,
        error_on_dpop: false,
    };
}

/// A refusal to serve a request, rendered as `400`, `401` or `403` with a `WWW-Authenticate`
/// header of the form `Bearer resource_metadata="...", scope="...", error="..."`; a resource
/// server that accepts DPoP-bound tokens adds (or, when it requires them, has only) a
/// `DPoP algs="...", ...` challenge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthChallenge {
    status: StatusCode,
    error: Option<BearerError>,
    description: Option<String>,
    scope: Option<String>,
    resource_metadata: String,
    schemes: Schemes,
}

impl AuthChallenge {
    /// The HTTP status: `400`, `401` or `403`.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The Bearer error code, if any (a request without credentials gets none).
    pub fn error(&self) -> Option<BearerError> {
        self.error
    }

    /// The `scope` parameter, if any.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The `WWW-Authenticate` header value (one challenge per accepted scheme).
    pub fn www_authenticate(&self) -> HeaderValue {
        let params = |with_error: bool| {
            let mut parts = vec![format!(
                "resource_metadata={}",
                quote(&self.resource_metadata)
            )];
            if let Some(scope) = &self.scope {
                parts.push(format!("scope={}", quote(scope)));
            }
            if let (Some(error), true) = (self.error, with_error) {
                parts.push(format!("error=\"{}\"", error.as_str()));
                if let Some(d) = &self.description {
                    parts.push(format!("error_description={}", quote(d)));
                }
            }
            parts.join(", ")
        };
        let mut challenges = Vec::new();
        if self.schemes.bearer {
            challenges.push(format!("Bearer {}", params(!self.schemes.error_on_dpop)));
        }
        if self.schemes.dpop {
            challenges.push(format!(
                "DPoP algs=\"{}\", {}",
                proof::ALGS.join(" "),
                params(self.schemes.error_on_dpop)
            ));
        }
        let text = challenges.join(", ");
        // `quote` keeps only visible ASCII, space and tab, so this cannot fail; fall back to
        // the bare scheme all the same rather than panic.
        HeaderValue::try_from(text).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    /// The complete response: status, `WWW-Authenticate`, and a small JSON body with the
    /// error.
    pub fn into_response(self) -> Response<Bytes> {
        let body = match self.error {
            Some(e) => {
                let mut m = Map::new();
                m.insert("error".into(), e.as_str().into());
                if let Some(d) = &self.description {
                    m.insert("error_description".into(), d.as_str().into());
                }
                Bytes::from(Value::Object(m).to_string())
            }
            None => Bytes::from_static(
                br#"{"error":"unauthorized","error_description":"authorization required"}"#,
            ),
        };
        let mut response = Response::new(body);
        *response.status_mut() = self.status;
        let headers = response.headers_mut();
        headers.insert(WWW_AUTHENTICATE, self.www_authenticate());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

/// An MCP server's OAuth resource-server configuration.
///
/// ```
/// use std::sync::Arc;
/// use mcp_auth::{JwtVerifier, ProtectedResourceMetadata, ResourceServer};
/// use jsonwebtoken::{Algorithm, DecodingKey};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let resource = "https://mcp.example.com/mcp";
/// let issuer = "https://auth.example.com";
/// let rs = ResourceServer::new(
///     ProtectedResourceMetadata::new(resource, issuer).with_scopes(["mcp:tools"]),
///     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp",
///     Arc::new(JwtVerifier::new(issuer, resource)
///         .with_key(DecodingKey::from_secret(b"secret"), Algorithm::HS256)),
/// )
/// .with_required_scopes(["mcp:tools"]);
///
/// assert_eq!(rs.metadata_path(), "/.well-known/oauth-protected-resource/mcp");
///
/// // A request without a token is challenged with 401.
/// let (parts, ()) = http::Request::post(resource).body(()).unwrap().into_parts();
/// let challenge = rs.authenticate(&parts).await.unwrap_err();
/// assert_eq!(challenge.status(), 401);
/// assert_eq!(
///     challenge.www_authenticate(),
///     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#
/// );
/// # });
/// ```
#[derive(Clone)]
pub struct ResourceServer {
    metadata: ProtectedResourceMetadata,
    metadata_json: Bytes,
    metadata_url: String,
    metadata_paths: Vec<String>,
    verifier: Arc<dyn BearerVerifier>,
    required_scopes: Vec<String>,
    operation_scopes: Vec<(Operation, Vec<String>)>,
    max_token_len: usize,
    dpop: Option<Arc<ProofChecker>>,
}

/// What a per-operation scope rule applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Operation {
    /// Every request of a JSON-RPC method.
    Method(String),
    /// `tools/call` of one tool.
    Tool(String),
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceServer")
            .field("metadata", &self.metadata)
            .field("metadata_url", &self.metadata_url)
            .field("required_scopes", &self.required_scopes)
            .field("operation_scopes", &self.operation_scopes)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// A resource server publishing `metadata` at `metadata_url` (an absolute URL, normally
    /// `<origin>/.well-known/oauth-protected-resource<path>`) and checking tokens with
    /// `verifier`.
    pub fn new(
        metadata: ProtectedResourceMetadata,
        metadata_url: impl Into<String>,
        verifier: Arc<dyn BearerVerifier>,
    ) -> Self {
        let metadata_json = Bytes::from(serde_json::to_vec(&metadata).unwrap_or_default());
        let metadata_url = metadata_url.into();
        // Where clients look (RFC 9728 section 3.1 and the MCP discovery order): the advertised
        // URL, the well-known URL with the resource's path inserted, and the root one.
        let mut metadata_paths = vec![
            crate::uri::path_of(&metadata_url)
                .filter(|p| !p.is_empty())
                .unwrap_or(WELL_KNOWN)
                .to_owned(),
        ];
        for url in crate::uri::protected_resource_metadata_urls(&metadata.resource)
            .unwrap_or_else(|| vec![WELL_KNOWN.to_owned()])
        {
            let path = crate::uri::path_of(&url).unwrap_or(WELL_KNOWN).to_owned();
            if !metadata_paths.contains(&path) {
                metadata_paths.push(path);
            }
        }
        Self {
            metadata,
            metadata_json,
            metadata_url,
            metadata_paths,
            verifier,
            required_scopes: Vec::new(),
            operation_scopes: Vec::new(),
            max_token_len: 16 * 1024,
            dpop: None,
        }
    }

    /// Accepts DPoP-bound access tokens (RFC 9449): `Authorization: DPoP <token>` with
    /// exactly one proof in the `DPoP` header, signed with an asymmetric algorithm by the key
    /// whose thumbprint the token carries as `cnf.jkt` (the verifier must expose the token's
    /// claims, as [`JwtVerifier`] does), with `htm` the request method, `htu` the request URL
    /// (the resource's origin with the request path, when the request target is only a path),
    /// `iat` within the window, `ath` the token's hash, and a `jti` not seen before. A
    /// DPoP-bound token presented as `Bearer` is refused; plain bearer tokens are accepted
    /// unless DPoP is [required](DpopOptions::required). Challenges offer `DPoP`, and the
    /// metadata lists `dpop_signing_alg_values_supported` (and
    /// `dpop_bound_access_tokens_required`).
    pub fn with_dpop(mut self, options: DpopOptions) -> Self {
        self.metadata.dpop_signing_alg_values_supported =
            Some(proof::ALGS.iter().map(|a| (*a).to_owned()).collect());
        self.metadata.dpop_bound_access_tokens_required = Some(options.is_required());
        self.metadata_json = Bytes::from(serde_json::to_vec(&self.metadata).unwrap_or_default());
        self.dpop = Some(Arc::new(ProofChecker::new(options)));
        self
    }

    fn dpop_required(&self) -> bool {
        self.dpop
            .as_ref()
            .is_some_and(|d| d.options().is_required())
    }

    /// The URL a proof's `htu` must name: the request target when it is absolute, else the
    /// resource's origin with the request path.
    fn request_url(&self, parts: &Parts) -> String {
        if parts.uri.scheme().is_some() && parts.uri.authority().is_some() {
            return parts.uri.to_string();
        }
        let origin = self
            .metadata
            .resource
            .parse::<http::Uri>()
            .ok()
            .and_then(|u| Some(format!("{}://{}", u.scheme_str()?, u.authority()?)))
            .unwrap_or_default();
        format!("{origin}{}", parts.uri.path())
    }

    /// Scopes every request needs; they are named in `401` challenges and a token lacking
    /// one gets `403 insufficient_scope`.
    pub fn with_required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Scopes needed, on top of the required ones, for every request of the JSON-RPC `method`
    /// (for example `resources/read`). A token lacking one gets `403 insufficient_scope`
    /// from [`authorize_operation`](Self::authorize_operation), so clients can start with a
    /// small scope set and step up when they first use a privileged operation.
    pub fn with_method_scopes<I, S>(mut self, method: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.operation_scopes.push((
            Operation::Method(method.into()),
            scopes.into_iter().map(Into::into).collect(),
        ));
        self
    }

    /// Scopes needed, on top of the required ones, to call the tool `name` (`tools/call` with
    /// that `name`), like [`with_method_scopes`](Self::with_method_scopes).
    pub fn with_tool_scopes<I, S>(mut self, name: impl Into<String>, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.operation_scopes.push((
            Operation::Tool(name.into()),
            scopes.into_iter().map(Into::into).collect(),
        ));
        self
    }

    /// Sets the longest accepted token, in bytes (default 16 KiB).
    pub fn with_max_token_len(mut self, len: usize) -> Self {
        self.max_token_len = len;
        self
    }

    /// The published metadata.
    pub fn metadata(&self) -> &ProtectedResourceMetadata {
        &self.metadata
    }

    /// The path of the metadata URL, to route `GET` requests to [`metadata_response`](Self::metadata_response).
    pub fn metadata_path(&self) -> &str {
        &self.metadata_paths[0]
    }

    /// Every path the metadata document is served at: the path of the metadata URL, the
    /// well-known path with the resource's path inserted (RFC 9728 section 3.1), and the root
    /// well-known path clients fall back to.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mcp_auth::{JwtVerifier, ProtectedResourceMetadata, ResourceServer};
    ///
    /// let rs = ResourceServer::new(
    ///     ProtectedResourceMetadata::new("https://mcp.example.com/public/mcp", "https://auth.example.com"),
    ///     "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp",
    ///     Arc::new(JwtVerifier::new("https://auth.example.com", "https://mcp.example.com/public/mcp")),
    /// );
    /// assert_eq!(rs.metadata_paths(), [
    ///     "/.well-known/oauth-protected-resource/public/mcp",
    ///     "/.well-known/oauth-protected-resource",
    /// ]);
    /// assert!(rs.is_metadata_path("/.well-known/oauth-protected-resource"));
    /// ```
    pub fn metadata_paths(&self) -> &[String] {
        &self.metadata_paths
    }

    /// Whether `path` is one of the [`metadata_paths`](Self::metadata_paths).
    pub fn is_metadata_path(&self, path: &str) -> bool {
        self.metadata_paths.iter().any(|p| p == path)
    }

    /// The `200` response carrying the metadata document.
    pub fn metadata_response(&self) -> Response<Bytes> {
        let mut response = Response::new(self.metadata_json.clone());
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("max-age=3600"));
        response
    }

    fn challenge(
        &self,
        status: StatusCode,
        error: Option<BearerError>,
        description: Option<String>,
        scope: &[String],
    ) -> AuthChallenge {
        let schemes = match (&self.dpop, self.dpop_required()) {
            (None, _) => Schemes::BEARER,
            (Some(_), required) => Schemes {
                bearer: !required,
                dpop: true,
                error_on_dpop: required,
            },
        };
        AuthChallenge {
            status,
            error,
            description,
            scope: (!scope.is_empty()).then(|| scope.join(" ")),
            resource_metadata: self.metadata_url.clone(),
            schemes,
        }
    }

    /// The plain `401` challenge for a request without credentials.
    pub fn unauthorized(&self) -> AuthChallenge {
        self.challenge(StatusCode::UNAUTHORIZED, None, None, &self.required_scopes)
    }

    /// Authenticates a request from its `Authorization: Bearer` header (the only place a
    /// token is accepted from; `Authorization: DPoP` with its proof too, see
    /// [`with_dpop`](Self::with_dpop)) and checks the required scopes. A request carrying an
    /// `access_token` in its query string is refused with `400 invalid_request` (MCP forbids
    /// tokens in URIs, where logs and referrers keep them), whatever its header holds.
    pub async fn authenticate(&self, parts: &Parts) -> Result<Principal, AuthChallenge> {
        if parts.uri.query().is_some_and(has_access_token_param) {
            return Err(self.challenge(
                StatusCode::BAD_REQUEST,
                Some(BearerError::InvalidRequest),
                Some("access tokens are not accepted in the query string".into()),
                &[],
            ));
        }
        let mut values = parts.headers.get_all(AUTHORIZATION).iter();
        let Some(value) = values.next() else {
            return Err(self.unauthorized());
        };
        if values.next().is_some() {
            return Err(self.challenge(
                StatusCode::BAD_REQUEST,
                Some(BearerError::InvalidRequest),
                Some("more than one Authorization header".into()),
                &[],
            ));
        }
        let text = value.to_str().unwrap_or("");
        let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
        let is_dpop = self.dpop.is_some() && scheme.eq_ignore_ascii_case("dpop");
        // The error goes on the challenge of the scheme the request used.
        let refuse = |error: BearerError, d: &str| {
            let mut c = self.challenge(
                StatusCode::UNAUTHORIZED,
                Some(error),
                Some(d.to_owned()),
                &self.required_scopes,
            );
            c.schemes.error_on_dpop = c.schemes.dpop && (is_dpop || !c.schemes.bearer);
            c
        };
        let invalid = |d: &str| refuse(BearerError::InvalidToken, d);
        if !value.is_empty() && text.is_empty() {
            return Err(invalid("malformed Authorization header"));
        }
        if !is_dpop && !scheme.eq_ignore_ascii_case("bearer") {
            return Err(self.unauthorized());
        }
        if !is_dpop && self.dpop_required() {
            return Err(invalid("this resource accepts only DPoP-bound tokens"));
        }
        let token = token.trim();
        if token.is_empty() || token.len() > self.max_token_len || token.contains(' ') {
            return Err(invalid("malformed access token"));
        }
        let principal = self.verifier.verify(token).await.map_err(|e| {
            tracing::debug!(error = %e, "bearer token rejected");
            invalid(match e {
                VerifyError::Expired => "token expired",
                VerifyError::WrongAudience => "token is not for this resource",
                VerifyError::WrongIssuer => "token issuer is not trusted",
                VerifyError::Invalid(_) => "token is invalid",
                VerifyError::Unavailable(_) => "token could not be verified",
            })
        })?;
        if let Some(checker) = &self.dpop {
            let jkt = principal
                .claims
                .get("cnf")
                .and_then(|c| c.get("jkt"))
                .and_then(Value::as_str);
            match (is_dpop, jkt) {
                // RFC 9449 section 7.2: a bound token is never accepted as a bearer token.
                (false, Some(_)) => {
                    return Err(invalid(
                        "a DPoP-bound token needs the DPoP scheme and a proof",
                    ));
                }
                (true, None) => return Err(invalid("the token is not DPoP-bound")),
                (true, Some(jkt)) => {
                    let bad_proof = |d: &str| {
                        tracing::debug!(reason = d, "DPoP proof rejected");
                        refuse(BearerError::InvalidDpopProof, d)
                    };
                    let mut proofs = parts.headers.get_all(crate::proof::DPOP).iter();
                    let (Some(proof), None) = (proofs.next(), proofs.next()) else {
                        return Err(bad_proof("exactly one DPoP proof is needed"));
                    };
                    let proof = proof
                        .to_str()
                        .map_err(|_| bad_proof("malformed DPoP proof"))?;
                    let url = self.request_url(parts);
                    let expected = Expected {
                        method: parts.method.as_str(),
                        url: &url,
                        access_token: token,
                        jkt,
                    };
                    checker
                        .check(proof, &expected, proof::now_secs())
                        .map_err(bad_proof)?;
                }
                (false, None) => {}
            }
        }
        self.require_scopes(&principal, &self.required_scopes)?;
        Ok(principal)
    }

    /// The scopes an operation needs beyond the required ones: those of the JSON-RPC `method`
    /// and, for `tools/call`, those of the tool `tool`.
    pub fn operation_scopes(&self, method: &str, tool: Option<&str>) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (op, scopes) in &self.operation_scopes {
            let applies = match op {
                Operation::Method(m) => m == method,
                Operation::Tool(t) => method == "tools/call" && tool == Some(t.as_str()),
            };
            if applies {
                for s in scopes {
                    if !out.contains(&s.as_str()) {
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    /// Checks that `principal` may perform an operation (see
    /// [`with_method_scopes`](Self::with_method_scopes) and
    /// [`with_tool_scopes`](Self::with_tool_scopes)); otherwise the `403 insufficient_scope`
    /// challenge of [`require_scopes`](Self::require_scopes).
    pub fn authorize_operation(
        &self,
        principal: &Principal,
        method: &str,
        tool: Option<&str>,
    ) -> Result<(), AuthChallenge> {
        let needed = self.operation_scopes(method, tool);
        if needed.is_empty() {
            return Ok(());
        }
        self.require_scopes(principal, &needed)
    }

    /// Checks that `principal` holds every scope in `scopes`; otherwise a `403
    /// insufficient_scope` challenge naming the scopes needed (those already held plus the
    /// missing ones, so a client that re-authorizes with them gets everything at once).
    pub fn require_scopes<S: AsRef<str>>(
        &self,
        principal: &Principal,
        scopes: &[S],
    ) -> Result<(), AuthChallenge> {
        let missing: Vec<&str> = scopes
            .iter()
            .map(AsRef::as_ref)
            .filter(|s| !principal.has_scope(s))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let mut needed: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        for s in self
            .required_scopes
            .iter()
            .map(String::as_str)
            .chain(scopes.iter().map(AsRef::as_ref))
        {
            if seen.insert(s) {
                needed.push(s.to_owned());
            }
        }
        Err(self.challenge(
            StatusCode::FORBIDDEN,
            Some(BearerError::InsufficientScope),
            Some(format!("missing scope: {}", missing.join(" "))),
            &needed,
        ))
    }
}
