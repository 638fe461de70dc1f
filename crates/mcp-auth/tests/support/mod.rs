//! A small authorization server and protected MCP resource on hyper, for the flow tests.
#![allow(dead_code)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use mcp_auth::{
    AuthError, AuthProvider, BearerVerifier, BoxFuture, JwtVerifier, Principal,
    ProtectedResourceMetadata, ResourceServer, VerifyError,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The HMAC key shared by the test authorization servers and the resource.
pub const SECRET: &[u8] = b"test-signing-secret";

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

type Handler = Arc<dyn Fn(Request<Bytes>) -> Response<Bytes> + Send + Sync>;

/// A running server; aborted on drop.
pub struct Served {
    pub base: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Binds 127.0.0.1 on a random port; the handler is installed later through the slot.
pub async fn bind() -> (Served, Arc<Mutex<Option<Handler>>>) {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let slot: Arc<Mutex<Option<Handler>>> = Arc::new(Mutex::new(None));
    let s = slot.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let s = s.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| {
                    let s = s.clone();
                    async move {
                        let (parts, body) = req.into_parts();
                        let body = body
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let handler = s.lock().unwrap().clone();
                        let resp = match handler {
                            Some(h) => h(Request::from_parts(parts, body)),
                            None => Response::builder().status(503).body(Bytes::new()).unwrap(),
                        };
                        Ok::<_, Infallible>(resp.map(Full::new))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (Served { base, task }, slot)
}

fn json_response(status: u16, v: Value) -> Response<Bytes> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Bytes::from(v.to_string()))
        .unwrap()
}

fn not_found() -> Response<Bytes> {
    Response::builder().status(404).body(Bytes::new()).unwrap()
}

pub fn form(body: &[u8]) -> HashMap<String, String> {
    form_urlencoded::parse(body).into_owned().collect()
}

/// How the authorization server puts `iss` into its redirect.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum IssMode {
    Correct,
    Omit,
    Wrong,
    TrailingSlash,
}

/// Knobs of the test authorization server.
#[derive(Clone, Debug)]
pub struct AsConfig {
    /// Appended to the base URL to form the issuer (e.g. `/tenant1`).
    pub issuer_path: String,
    /// Publish this issuer in the metadata instead of the real one.
    pub metadata_issuer: Option<String>,
    pub pkce: bool,
    pub iss_supported: Option<bool>,
    pub iss_mode: IssMode,
    pub registration: bool,
    pub auth_methods: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
    pub cimd: bool,
    /// Scopes the server is willing to grant (None: any).
    pub grantable: Option<Vec<String>>,
    /// `expires_in` reported to the client.
    pub expires_in: u64,
    /// The first access token is already expired inside (its `exp` is in the past).
    pub first_token_expired: bool,
    /// Put this audience into tokens instead of the requested resource.
    pub audience_override: Option<String>,
    /// DCR answers with this token endpoint auth method and a secret.
    pub dcr_method: Option<String>,
    pub dcr_client_id: String,
    /// Public key (PEM) to verify `private_key_jwt` assertions with.
    pub assertion_key: Option<Vec<u8>>,
    /// HMAC key to verify JWT bearer grant assertions with (audience: the issuer).
    pub jwt_bearer_key: Option<Vec<u8>>,
    /// DPoP (RFC 9449): advertise `ES256`, verify the proofs of token requests and bind the
    /// tokens of requests that carry one (`cnf.jkt`, `token_type: DPoP`).
    pub dpop: bool,
    /// Require this nonce in proofs: others get `400 use_dpop_nonce` with `DPoP-Nonce`.
    pub dpop_nonce: Option<String>,
    /// Answer a valid proof with an unbound `Bearer` token anyway.
    pub dpop_bearer_answer: bool,
}

impl Default for AsConfig {
    fn default() -> Self {
        Self {
            issuer_path: String::new(),
            metadata_issuer: None,
            pkce: true,
            iss_supported: Some(true),
            iss_mode: IssMode::Correct,
            registration: true,
            auth_methods: vec!["none".into()],
            scopes_supported: None,
            cimd: false,
            grantable: None,
            expires_in: 3600,
            first_token_expired: false,
            audience_override: None,
            dcr_method: None,
            dcr_client_id: "dcr-client".into(),
            assertion_key: None,
            jwt_bearer_key: None,
            dpop: false,
            dpop_nonce: None,
            dpop_bearer_answer: false,
        }
    }
}

/// What the authorization server saw.
#[derive(Clone, Debug, Default)]
pub struct AsLog {
    pub paths: Vec<String>,
    pub registrations: Vec<Value>,
    pub authorizations: Vec<HashMap<String, String>>,
    pub tokens: Vec<(HashMap<String, String>, Option<String>)>,
    /// Each DPoP proof at the token endpoint, verified, or why it was refused.
    pub dpop_proofs: Vec<Result<VerifiedProof, String>>,
    /// How many token requests were answered `use_dpop_nonce`.
    pub nonce_challenges: usize,
}

struct Code {
    challenge: String,
    resource: String,
    redirect_uri: String,
    scope: String,
    client_id: String,
}

/// What a refresh token stands for: resource, scope, and the DPoP key it is bound to.
type RefreshGrant = (String, String, Option<String>);

#[derive(Default)]
struct AsState {
    log: AsLog,
    codes: HashMap<String, Code>,
    refresh: HashMap<String, RefreshGrant>,
    issued: u64,
    jtis: std::collections::HashSet<String>,
}

pub struct TestAs {
    pub served: Served,
    pub issuer: String,
    state: Arc<Mutex<AsState>>,
}

impl TestAs {
    pub fn log(&self) -> AsLog {
        self.state.lock().unwrap().log.clone()
    }

    pub async fn start(config: AsConfig) -> Self {
        let (served, slot) = bind().await;
        let issuer = format!("{}{}", served.base, config.issuer_path);
        let state = Arc::new(Mutex::new(AsState::default()));
        let st = state.clone();
        let iss = issuer.clone();
        let handler: Handler = Arc::new(move |req| as_handle(&config, &iss, &st, req));
        *slot.lock().unwrap() = Some(handler);
        Self {
            served,
            issuer,
            state,
        }
    }
}

fn metadata_paths(config: &AsConfig) -> Vec<String> {
    if config.issuer_path.is_empty() {
        vec!["/.well-known/oauth-authorization-server".into()]
    } else {
        vec![format!(
            "/.well-known/oauth-authorization-server{}",
            config.issuer_path
        )]
    }
}

fn as_handle(
    config: &AsConfig,
    issuer: &str,
    state: &Mutex<AsState>,
    req: Request<Bytes>,
) -> Response<Bytes> {
    let path = req.uri().path().to_owned();
    state.lock().unwrap().log.paths.push(path.clone());
    let base = issuer.strip_suffix(&config.issuer_path).unwrap_or(issuer);
    if req.method() == Method::GET && metadata_paths(config).contains(&path) {
        let mut m = json!({
            "issuer": config.metadata_issuer.clone().unwrap_or_else(|| issuer.to_owned()),
            "authorization_endpoint": format!("{base}/authorize"),
            "token_endpoint": format!("{base}/token"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "token_endpoint_auth_methods_supported": config.auth_methods,
        });
        if config.pkce {
            m["code_challenge_methods_supported"] = json!(["S256"]);
        }
        if let Some(s) = config.iss_supported {
            m["authorization_response_iss_parameter_supported"] = json!(s);
        }
        if config.registration {
            m["registration_endpoint"] = json!(format!("{base}/register"));
        }
        if let Some(s) = &config.scopes_supported {
            m["scopes_supported"] = json!(s);
        }
        if config.cimd {
            m["client_id_metadata_document_supported"] = json!(true);
        }
        if config.dpop {
            m["dpop_signing_alg_values_supported"] = json!(["ES256"]);
        }
        return json_response(200, m);
    }
    match (req.method().clone(), path.as_str()) {
        (Method::POST, "/register") if config.registration => {
            let body: Value = serde_json::from_slice(req.body()).unwrap_or(Value::Null);
            state.lock().unwrap().log.registrations.push(body);
            let mut r = json!({"client_id": config.dcr_client_id});
            if let Some(m) = &config.dcr_method {
                r["token_endpoint_auth_method"] = json!(m);
                if m != "none" {
                    r["client_secret"] = json!("dcr-secret");
                }
            }
            json_response(201, r)
        }
        (Method::GET, "/authorize") => {
            let q: HashMap<String, String> = req
                .uri()
                .query()
                .map(|q| form(q.as_bytes()))
                .unwrap_or_default();
            let mut s = state.lock().unwrap();
            s.log.authorizations.push(q.clone());
            let code = format!("code-{}", s.log.authorizations.len());
            s.codes.insert(
                code.clone(),
                Code {
                    challenge: q.get("code_challenge").cloned().unwrap_or_default(),
                    resource: q.get("resource").cloned().unwrap_or_default(),
                    redirect_uri: q.get("redirect_uri").cloned().unwrap_or_default(),
                    scope: q.get("scope").cloned().unwrap_or_default(),
                    client_id: q.get("client_id").cloned().unwrap_or_default(),
                },
            );
            let mut pairs = form_urlencoded::Serializer::new(String::new());
            pairs.append_pair("code", &code);
            if let Some(st) = q.get("state") {
                pairs.append_pair("state", st);
            }
            match config.iss_mode {
                IssMode::Correct => {
                    pairs.append_pair("iss", issuer);
                }
                IssMode::Wrong => {
                    pairs.append_pair("iss", "https://evil.example.com");
                }
                IssMode::TrailingSlash => {
                    pairs.append_pair("iss", &format!("{issuer}/"));
                }
                IssMode::Omit => {}
            }
            let location = format!(
                "{}?{}",
                q.get("redirect_uri").cloned().unwrap_or_default(),
                pairs.finish()
            );
            Response::builder()
                .status(302)
                .header("location", location)
                .body(Bytes::new())
                .unwrap()
        }
        (Method::POST, "/token") => token(config, issuer, state, req),
        _ => not_found(),
    }
}

fn token_error(status: u16, error: &str) -> Response<Bytes> {
    json_response(status, json!({"error": error}))
}

fn token(
    config: &AsConfig,
    issuer: &str,
    state: &Mutex<AsState>,
    req: Request<Bytes>,
) -> Response<Bytes> {
    let f = form(req.body());
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut s = state.lock().unwrap();
    s.log.tokens.push((f.clone(), auth.clone()));
    let mut jkt = None;
    if config.dpop {
        let proofs: Vec<&str> = req
            .headers()
            .get_all("dpop")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        if proofs.len() > 1 {
            return token_error(400, "invalid_dpop_proof");
        }
        if let Some(proof) = proofs.first() {
            let endpoint = format!(
                "{}/token",
                issuer.strip_suffix(&config.issuer_path).unwrap_or(issuer)
            );
            let verified = verify_proof(proof, "POST", &endpoint, None);
            s.log.dpop_proofs.push(verified.clone());
            let proof = match verified {
                Ok(p) => p,
                Err(_) => return token_error(400, "invalid_dpop_proof"),
            };
            if !s
                .jtis
                .insert(proof.claims["jti"].as_str().unwrap_or_default().to_owned())
            {
                return token_error(400, "invalid_dpop_proof");
            }
            let stale = |n: &&String| proof.claims["nonce"].as_str() != Some(n.as_str());
            if let Some(nonce) = config.dpop_nonce.as_ref().filter(stale) {
                s.log.nonce_challenges += 1;
                let mut r = token_error(400, "use_dpop_nonce");
                r.headers_mut().insert(
                    "dpop-nonce",
                    http::HeaderValue::try_from(nonce.as_str()).unwrap(),
                );
                return r;
            }
            jkt = Some(proof.jkt);
        }
    }
    let grant = f.get("grant_type").cloned().unwrap_or_default();
    let (resource, scope) = match grant.as_str() {
        "authorization_code" => {
            let Some(code) = f.get("code").and_then(|c| s.codes.remove(c)) else {
                return token_error(400, "invalid_grant");
            };
            let verifier = f.get("code_verifier").cloned().unwrap_or_default();
            let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            if computed != code.challenge
                || f.get("resource") != Some(&code.resource)
                || f.get("redirect_uri") != Some(&code.redirect_uri)
            {
                return token_error(400, "invalid_grant");
            }
            let _ = code.client_id;
            (code.resource, code.scope)
        }
        "refresh_token" => {
            let Some((resource, scope, bound)) = f
                .get("refresh_token")
                .and_then(|r| s.refresh.get(r))
                .cloned()
            else {
                return token_error(400, "invalid_grant");
            };
            // RFC 9449 section 5: a public client's refresh token is bound to its DPoP key.
            if bound.is_some() && bound != jkt {
                return token_error(400, "invalid_grant");
            }
            (resource, scope)
        }
        "client_credentials" => {
            if let Some(pem) = &config.assertion_key {
                let Some(assertion) = f.get("client_assertion") else {
                    return token_error(401, "invalid_client");
                };
                if f.get("client_assertion_type").map(String::as_str)
                    != Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
                {
                    return token_error(401, "invalid_client");
                }
                let key = DecodingKey::from_ec_pem(pem).unwrap();
                let mut v = jsonwebtoken::Validation::new(Algorithm::ES256);
                v.set_audience(&[issuer]);
                let Ok(data) = jsonwebtoken::decode::<Value>(assertion, &key, &v) else {
                    return token_error(401, "invalid_client");
                };
                let id = f.get("client_id").cloned().unwrap_or_default();
                if data.claims["iss"] != json!(id) || data.claims["sub"] != json!(id) {
                    return token_error(401, "invalid_client");
                }
            } else if auth.is_none() && !f.contains_key("client_secret") {
                return token_error(401, "invalid_client");
            }
            (
                f.get("resource").cloned().unwrap_or_default(),
                f.get("scope").cloned().unwrap_or_default(),
            )
        }
        "urn:ietf:params:oauth:grant-type:jwt-bearer" if config.jwt_bearer_key.is_some() => {
            let key = DecodingKey::from_secret(config.jwt_bearer_key.as_deref().unwrap_or(b""));
            let mut v = jsonwebtoken::Validation::new(Algorithm::HS256);
            v.set_audience(&[issuer]);
            v.leeway = 0;
            let Some(assertion) = f.get("assertion") else {
                return token_error(400, "invalid_request");
            };
            if jsonwebtoken::decode::<Value>(assertion, &key, &v).is_err() {
                return token_error(400, "invalid_grant");
            }
            (
                f.get("resource").cloned().unwrap_or_default(),
                f.get("scope").cloned().unwrap_or_default(),
            )
        }
        _ => return token_error(400, "unsupported_grant_type"),
    };
    let granted: Vec<&str> = scope
        .split(' ')
        .filter(|x| !x.is_empty())
        .filter(|x| {
            config
                .grantable
                .as_ref()
                .is_none_or(|g| g.iter().any(|y| y == x))
        })
        .collect();
    let granted = granted.join(" ");
    s.issued += 1;
    let expired = config.first_token_expired && s.issued == 1;
    let exp = if expired { now() - 600 } else { now() + 3600 };
    let aud = config
        .audience_override
        .clone()
        .unwrap_or_else(|| resource.clone());
    let bind = jkt.clone().filter(|_| !config.dpop_bearer_answer);
    let mut claims = json!({
        "iss": issuer, "aud": aud, "exp": exp, "sub": "user-1",
        "scope": granted, "client_id": "c", "n": s.issued,
    });
    if let Some(jkt) = &bind {
        claims["cnf"] = json!({ "jkt": jkt });
    }
    let access = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET),
    )
    .unwrap();
    let rt = format!("rt-{}", s.issued);
    s.refresh
        .insert(rt.clone(), (resource, scope, bind.clone()));
    let mut body = json!({
        "access_token": access,
        "token_type": if bind.is_some() { "DPoP" } else { "Bearer" },
        "expires_in": config.expires_in, "scope": granted,
    });
    if grant != "client_credentials" {
        body["refresh_token"] = json!(rt);
    }
    json_response(200, body)
}

/// Knobs of the protected resource.
#[derive(Clone, Debug)]
pub struct RsConfig {
    /// The path of the MCP endpoint.
    pub mcp_path: String,
    /// Publish PRM at the root well-known URL with `resource` = origin (no path).
    pub root_prm: bool,
    /// Advertise the metadata URL in WWW-Authenticate.
    pub advertise: bool,
    /// Publish this resource instead of the real one.
    pub resource_override: Option<String>,
    pub required_scopes: Vec<String>,
    pub scopes_supported: Option<Vec<String>>,
}

impl Default for RsConfig {
    fn default() -> Self {
        Self {
            mcp_path: "/mcp".into(),
            root_prm: false,
            advertise: true,
            resource_override: None,
            required_scopes: Vec::new(),
            scopes_supported: None,
        }
    }
}

/// A verifier that trusts one of two issuers, switchable at run time.
pub struct Switchable {
    pub first: JwtVerifier,
    pub second: Option<JwtVerifier>,
    pub switched: AtomicBool,
}

impl BearerVerifier for Switchable {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Principal, VerifyError>> {
        Box::pin(async move {
            match (&self.second, self.switched.load(Ordering::SeqCst)) {
                (Some(v), true) => v.verify(token).await,
                _ => self.first.verify(token).await,
            }
        })
    }
}

pub struct TestRs {
    pub served: Served,
    pub url: String,
    pub resource: String,
    pub paths: Arc<Mutex<Vec<String>>>,
    pub verifier: Arc<Switchable>,
    pub issuers: Arc<Mutex<Vec<String>>>,
}

impl TestRs {
    pub fn switch_to_second(&self) {
        self.verifier.switched.store(true, Ordering::SeqCst);
        let mut i = self.issuers.lock().unwrap();
        i.remove(0);
    }

    pub async fn start(config: RsConfig, issuers: Vec<String>) -> Self {
        let (served, slot) = bind().await;
        let url = format!("{}{}", served.base, config.mcp_path);
        let resource = config.resource_override.clone().unwrap_or_else(|| {
            if config.root_prm {
                served.base.clone()
            } else {
                url.clone()
            }
        });
        let prm_path = if config.root_prm {
            "/.well-known/oauth-protected-resource".to_owned()
        } else {
            format!("/.well-known/oauth-protected-resource{}", config.mcp_path)
        };
        let metadata_url = format!("{}{}", served.base, prm_path);
        let audience = if config.resource_override.is_some() {
            url.clone()
        } else {
            resource.clone()
        };
        let key = || DecodingKey::from_secret(SECRET);
        let verifier = Arc::new(Switchable {
            first: JwtVerifier::new(issuers[0].clone(), audience.clone())
                .with_key(key(), Algorithm::HS256),
            second: issuers.get(1).map(|i| {
                JwtVerifier::new(i.clone(), audience.clone()).with_key(key(), Algorithm::HS256)
            }),
            switched: AtomicBool::new(false),
        });
        let paths = Arc::new(Mutex::new(Vec::new()));
        let issuers = Arc::new(Mutex::new(issuers));
        let (p, v, iss) = (paths.clone(), verifier.clone(), issuers.clone());
        let published = resource.clone();
        let handler: Handler = Arc::new(move |req| {
            let path = req.uri().path().to_owned();
            p.lock().unwrap().push(path.clone());
            let first_issuer = iss.lock().unwrap()[0].clone();
            let mut prm = ProtectedResourceMetadata::new(resource.clone(), first_issuer);
            prm.scopes_supported = config.scopes_supported.clone();
            let advertised = if config.advertise {
                metadata_url.clone()
            } else {
                String::new()
            };
            let rs = ResourceServer::new(prm, advertised, v.clone())
                .with_required_scopes(config.required_scopes.clone());
            if req.method() == Method::GET && path == prm_path {
                return rs.metadata_response();
            }
            if path != config.mcp_path {
                return not_found();
            }
            let (parts, _) = req.into_parts();
            let result = futures_lite_block(rs.authenticate(&parts));
            let principal = match result {
                Ok(p) => p,
                Err(c) => return strip_metadata(c.into_response(), config.advertise),
            };
            let extra: Vec<String> = parts
                .headers
                .get("x-scope")
                .and_then(|v| v.to_str().ok())
                .map(|s| s.split(' ').map(str::to_owned).collect())
                .unwrap_or_default();
            if let Err(c) = rs.require_scopes(&principal, &extra) {
                return strip_metadata(c.into_response(), config.advertise);
            }
            json_response(200, json!({"ok": true, "sub": principal.subject}))
        });
        *slot.lock().unwrap() = Some(handler);
        Self {
            served,
            url,
            resource: published,
            paths,
            verifier,
            issuers,
        }
    }
}

/// Removes `resource_metadata=""` for the variant that does not advertise the metadata URL.
fn strip_metadata(mut r: Response<Bytes>, advertise: bool) -> Response<Bytes> {
    if advertise {
        return r;
    }
    if let Some(v) = r
        .headers()
        .get("www-authenticate")
        .and_then(|v| v.to_str().ok())
    {
        let cleaned = v
            .replace("resource_metadata=\"\", ", "")
            .replace("resource_metadata=\"\"", "");
        r.headers_mut().insert(
            "www-authenticate",
            http::HeaderValue::try_from(cleaned).unwrap(),
        );
    }
    r
}

/// The verifiers used here never wait, so their futures complete on the first poll.
fn futures_lite_block<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    match f.as_mut().poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("test verifier must not block"),
    }
}

/// What a transport does: send with the provider's header, react to 401 and 403, retry.
/// Returns the final status, or the provider's error.
pub async fn call(
    provider: &dyn AuthProvider,
    url: &str,
    scope: Option<&str>,
) -> Result<StatusCode, AuthError> {
    let http = mcp_auth::HyperHttpClient::new().unwrap();
    let mut status = StatusCode::INTERNAL_SERVER_ERROR;
    for _ in 0..6 {
        let mut req = Request::post(url).header("content-type", "application/json");
        if let Some(h) = provider.authorization(url).await {
            req = req.header("authorization", h);
        }
        if let Some(s) = scope {
            req = req.header("x-scope", s);
        }
        let resp = mcp_auth::HttpClient::send(&http, req.body(Bytes::from_static(b"{}")).unwrap())
            .await
            .unwrap();
        status = resp.status();
        let headers: HeaderMap = resp.headers().clone();
        match status.as_u16() {
            401 => provider.on_unauthorized(url, &headers).await?,
            403 => provider.on_insufficient_scope(url, &headers).await?,
            _ => return Ok(status),
        }
    }
    Ok(status)
}

/// A DPoP proof that passed [`verify_proof`].
#[derive(Clone, Debug)]
pub struct VerifiedProof {
    pub header: Value,
    pub claims: Value,
    /// The RFC 7638 thumbprint of the proof's key.
    pub jkt: String,
}

/// Checks a DPoP proof as RFC 9449 section 4.3 says, independently of the client's code:
/// `typ`, `alg` ES256 and a public P-256 `jwk` in the header, the signature with that key,
/// `jti`, `htm` = `method`, `htu` = `url` exactly, `iat` within a minute, and `ath` = the hash
/// of `access_token` when one is presented (absent otherwise).
pub fn verify_proof(
    proof: &str,
    method: &str,
    url: &str,
    access_token: Option<&str>,
) -> Result<VerifiedProof, String> {
    let parts: Vec<&str> = proof.split('.').collect();
    if parts.len() != 3 {
        return Err("not a compact JWS".into());
    }
    let header: Value = URL_SAFE_NO_PAD
        .decode(parts[0])
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .ok_or("header is not base64url JSON")?;
    if header["typ"] != "dpop+jwt" {
        return Err(format!("typ is {}", header["typ"]));
    }
    if header["alg"] != "ES256" {
        return Err(format!("alg is {}", header["alg"]));
    }
    let jwk = &header["jwk"];
    if jwk.get("d").is_some() {
        return Err("the jwk holds a private key".into());
    }
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err(format!("jwk is not a P-256 key: {jwk}"));
    }
    let (Some(x), Some(y)) = (jwk["x"].as_str(), jwk["y"].as_str()) else {
        return Err("jwk lacks x or y".into());
    };
    let key = DecodingKey::from_ec_components(x, y).map_err(|e| format!("jwk: {e}"))?;
    let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_aud = false;
    let claims = jsonwebtoken::decode::<Value>(proof, &key, &validation)
        .map_err(|e| format!("signature: {e}"))?
        .claims;
    if claims["jti"].as_str().is_none_or(|j| j.len() < 16) {
        return Err("jti missing or short".into());
    }
    if claims["htm"] != method {
        return Err(format!("htm {} for a {method}", claims["htm"]));
    }
    if claims["htu"] != url {
        return Err(format!("htu {} for {url}", claims["htu"]));
    }
    if claims["iat"]
        .as_u64()
        .is_none_or(|iat| iat.abs_diff(now()) > 60)
    {
        return Err(format!("iat {} out of the window", claims["iat"]));
    }
    match access_token {
        Some(token) => {
            let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()));
            if claims["ath"] != ath {
                return Err(format!("ath {} is not the token's hash", claims["ath"]));
            }
        }
        None if claims.get("ath").is_some() => return Err("ath without a token".into()),
        None => {}
    }
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    let jkt = URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()));
    Ok(VerifiedProof {
        header,
        claims,
        jkt,
    })
}

/// Decodes a Basic header into `(id, secret)`.
pub fn basic(h: &str) -> (String, String) {
    let raw =
        String::from_utf8(STANDARD.decode(h.strip_prefix("Basic ").unwrap()).unwrap()).unwrap();
    let (a, b) = raw.split_once(':').unwrap();
    (a.to_owned(), b.to_owned())
}
