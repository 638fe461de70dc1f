//! DPoP (RFC 9449) end to end over real HTTP on 127.0.0.1: the test authorization server of
//! `mcp-auth`'s flow tests with DPoP switched on (it verifies the proof of every token request
//! and binds the token to the proof's key with `cnf.jkt`), an MCP server
//! (`StreamableHttpService`) whose authenticator accepts only DPoP-bound tokens and checks the
//! proof of every HTTP request on its own (signature, `typ`, `jwk`, `jti` replay, `htm`,
//! `htu`, `iat`, `ath`, `cnf.jkt`, nonces), and `mcp_auth::OAuthClient` driving the HTTP
//! client transport.
//!
//! The proofs are checked by code independent of the client's (`jsonwebtoken` for the
//! signature, the RFC 7638 recipe for the thumbprint), so a wrong claim fails these tests.

use crate::auth_support::{self, ToolServer, connect, loopback, serve, subject_result};
use crate::support;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode};
use jsonwebtoken::{Algorithm, DecodingKey};
use mcp_auth::{
    DpopKey, DpopOptions, DpopPolicy, JwtVerifier, OAuthClient, Principal,
    ProtectedResourceMetadata, ResourceServer,
};
use mcp_jsonrpc::{CallError, Peer};
use mcp_tests::http::Served;
use mcp_tests::rpc::{call_tool, failure};
use mcp_transport_http::server::{AuthFuture, Authenticator};
use serde_json::Value;
use support::{AsConfig, SECRET, TestAs, verify_proof};

/// Answers `initialize` and `tools/call`, with the subject of the verified token.
fn mcp_handler() -> ToolServer {
    ToolServer::new("dpop-protected", |_, cx| {
        subject_result(cx.extensions().get::<Caller>().map(|c| c.0.clone()))
    })
}

/// The subject of a verified token.
#[derive(Clone, Debug)]
struct Caller(String);

/// What the resource server saw.
#[derive(Default, Debug)]
struct RsLog {
    /// `(method, verified proof claims)` of every accepted request.
    accepted: Vec<(String, Value)>,
    /// Why requests were refused (each refused request once).
    refused: Vec<String>,
    /// `Authorization` schemes presented.
    schemes: Vec<String>,
    /// How many `use_dpop_nonce` challenges were sent.
    nonce_challenges: usize,
}

/// How the resource server treats nonces.
#[derive(Clone, Debug, PartialEq)]
enum RsNonce {
    /// None required.
    Off,
    /// This one is required; it never changes.
    Fixed(&'static str),
    /// A new one is required for every request (a server that never lets the client in).
    Always,
}

/// The MCP endpoint's authenticator: DPoP-bound tokens only, every proof checked.
struct DpopResource {
    base: String,
    resource: String,
    issuer: String,
    nonce: RsNonce,
    /// Also accept plain bearer tokens (tokens without `cnf`).
    accept_bearer: bool,
    jtis: Mutex<HashSet<String>>,
    log: Arc<Mutex<RsLog>>,
}

impl DpopResource {
    fn metadata_url(&self) -> String {
        format!("{}/.well-known/oauth-protected-resource/mcp", self.base)
    }

    fn challenge(&self, error: Option<&str>, nonce: Option<String>) -> Response<Bytes> {
        let mut value = format!(
            r#"DPoP algs="ES256", resource_metadata="{}""#,
            self.metadata_url()
        );
        if let Some(e) = error {
            value.push_str(&format!(r#", error="{e}""#));
        }
        let mut builder = Response::builder()
            .status(StatusCode::UNAUTHORIZED)
            .header("www-authenticate", value);
        if let Some(n) = nonce {
            builder = builder.header("dpop-nonce", n);
        }
        builder.body(Bytes::new()).unwrap()
    }

    fn refuse(&self, why: String, error: &str) -> Response<Bytes> {
        self.log.lock().unwrap().refused.push(why);
        self.challenge(Some(error), None)
    }

    // The error is the response itself, as `Authenticator::authenticate` returns it.
    #[allow(clippy::result_large_err)]
    fn check(&self, parts: &Parts) -> Result<Caller, Response<Bytes>> {
        let Some(authorization) = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
        else {
            return Err(self.challenge(None, None));
        };
        let (scheme, token) = authorization.split_once(' ').unwrap_or((authorization, ""));
        self.log.lock().unwrap().schemes.push(scheme.to_owned());
        let mut validation = jsonwebtoken::Validation::new(Algorithm::HS256);
        validation.set_audience(&[&self.resource]);
        validation.set_issuer(&[&self.issuer]);
        let claims = match jsonwebtoken::decode::<Value>(
            token,
            &DecodingKey::from_secret(SECRET),
            &validation,
        ) {
            Ok(data) => data.claims,
            Err(e) => return Err(self.refuse(format!("token: {e}"), "invalid_token")),
        };
        let subject = Caller(claims["sub"].as_str().unwrap_or_default().to_owned());
        if scheme.eq_ignore_ascii_case("bearer") && self.accept_bearer && claims["cnf"].is_null() {
            return Ok(subject);
        }
        if !scheme.eq_ignore_ascii_case("dpop") {
            return Err(self.refuse(format!("scheme {scheme}"), "invalid_token"));
        }
        let proofs: Vec<&str> = parts
            .headers
            .get_all("dpop")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let [proof] = proofs.as_slice() else {
            return Err(self.refuse(
                format!("{} DPoP headers", proofs.len()),
                "invalid_dpop_proof",
            ));
        };
        let url = format!("{}{}", self.base, parts.uri.path());
        let verified = match verify_proof(proof, parts.method.as_str(), &url, Some(token)) {
            Ok(v) => v,
            Err(e) => return Err(self.refuse(e, "invalid_dpop_proof")),
        };
        if claims["cnf"]["jkt"] != verified.jkt {
            return Err(self.refuse(
                "the proof's key is not the token's cnf.jkt".into(),
                "invalid_dpop_proof",
            ));
        }
        let jti = verified.claims["jti"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !self.jtis.lock().unwrap().insert(jti) {
            return Err(self.refuse("a replayed jti".into(), "invalid_dpop_proof"));
        }
        let wanted = match &self.nonce {
            RsNonce::Off => None,
            RsNonce::Fixed(n) => Some((*n).to_owned()),
            RsNonce::Always => Some(format!(
                "rs-nonce-{}",
                self.log.lock().unwrap().nonce_challenges
            )),
        };
        if let Some(wanted) = wanted {
            let sent = verified.claims["nonce"].as_str();
            if self.nonce == RsNonce::Always || sent != Some(wanted.as_str()) {
                self.log.lock().unwrap().nonce_challenges += 1;
                return Err(self.challenge(Some("use_dpop_nonce"), Some(wanted)));
            }
        }
        self.log
            .lock()
            .unwrap()
            .accepted
            .push((parts.method.to_string(), verified.claims));
        Ok(subject)
    }
}

impl Authenticator for DpopResource {
    type Principal = Caller;

    fn public_response(&self, parts: &Parts) -> Option<Response<Bytes>> {
        if parts.uri.path() != "/.well-known/oauth-protected-resource/mcp" {
            return None;
        }
        let mut prm = ProtectedResourceMetadata::new(self.resource.clone(), self.issuer.clone());
        prm.dpop_signing_alg_values_supported = Some(vec!["ES256".into()]);
        prm.dpop_bound_access_tokens_required = Some(!self.accept_bearer);
        Some(
            Response::builder()
                .header("content-type", "application/json")
                .body(Bytes::from(serde_json::to_vec(&prm).unwrap()))
                .unwrap(),
        )
    }

    fn authenticate<'a>(
        &'a self,
        parts: &'a Parts,
    ) -> AuthFuture<'a, Result<Caller, Response<Bytes>>> {
        let result = self.check(parts);
        Box::pin(async move { result })
    }

    fn identity(&self, caller: &Caller) -> String {
        caller.0.clone()
    }
}

struct Mcp {
    url: String,
    log: Arc<Mutex<RsLog>>,
    /// Stops the server when the test drops it.
    _served: Served,
}

impl Mcp {
    async fn start(issuer: &str, nonce: RsNonce, accept_bearer: bool) -> Mcp {
        let (listener, base) = loopback().await;
        let url = format!("{base}/mcp");
        let log: Arc<Mutex<RsLog>> = Arc::default();
        let rs = DpopResource {
            base,
            resource: url.clone(),
            issuer: issuer.to_owned(),
            nonce,
            accept_bearer,
            jtis: Mutex::default(),
            log: log.clone(),
        };
        let served = serve(listener, rs, mcp_handler);
        Mcp {
            url,
            log,
            _served: served,
        }
    }

    fn log<T>(&self, f: impl FnOnce(&RsLog) -> T) -> T {
        f(&self.log.lock().unwrap())
    }
}

fn oauth(policy: DpopPolicy) -> Arc<OAuthClient> {
    Arc::new(
        auth_support::oauth("dpop-e2e")
            .dpop(policy)
            .build()
            .unwrap(),
    )
}

async fn initialize(peer: &Peer) -> Result<Value, CallError> {
    let init = auth_support::initialize(peer, "dpop-e2e").await?;
    peer.notify("notifications/initialized", None).await?;
    Ok(init)
}

fn dpop_as() -> AsConfig {
    AsConfig {
        dpop: true,
        ..AsConfig::default()
    }
}

#[tokio::test]
async fn the_token_is_bound_and_every_request_carries_a_fresh_proof() {
    let auth = TestAs::start(dpop_as()).await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, false).await;
    let oauth = oauth(DpopPolicy::WhenSupported);
    let (peer, handle) = connect(&mcp.url, oauth.clone()).await;

    initialize(&peer).await.unwrap();
    let result = call_tool(&peer, "whoami").await.unwrap();
    assert_eq!(result["structuredContent"]["subject"], "user-1");
    call_tool(&peer, "whoami").await.unwrap();
    handle.close().await;

    // The token request carried a valid proof without `ath`, so the token is bound.
    let log = auth.log();
    assert_eq!(log.tokens.len(), 1);
    assert_eq!(log.dpop_proofs.len(), 1);
    let proof = &log.dpop_proofs[0]
        .as_ref()
        .expect("a valid token proof")
        .claims;
    assert!(proof.get("ath").is_none() && proof.get("nonce").is_none());

    let (accepted, refused, schemes) =
        mcp.log(|l| (l.accepted.clone(), l.refused.clone(), l.schemes.clone()));
    assert!(refused.is_empty(), "refused: {refused:?}");
    assert!(
        schemes.iter().all(|s| s == "DPoP"),
        "schemes presented: {schemes:?}"
    );
    // initialize, initialized, the standalone GET, two calls, the closing DELETE: each with
    // its own proof bound to its method.
    let methods: Vec<&str> = accepted.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        methods.iter().filter(|m| **m == "POST").count(),
        4,
        "{methods:?}"
    );
    assert!(methods.contains(&"GET"), "{methods:?}");
    assert!(methods.contains(&"DELETE"), "{methods:?}");
    for (method, claims) in &accepted {
        assert_eq!(claims["htm"], method.as_str());
        assert_eq!(claims["htu"], mcp.url);
        assert!(claims.get("nonce").is_none());
    }
    let jtis: HashSet<&str> = accepted
        .iter()
        .map(|(_, c)| c["jti"].as_str().unwrap())
        .collect();
    assert_eq!(jtis.len(), accepted.len(), "every proof has its own jti");
}

#[tokio::test]
async fn nonces_of_the_token_endpoint_and_the_resource_are_used_after_one_retry() {
    let auth = TestAs::start(AsConfig {
        dpop_nonce: Some("as-nonce-1".into()),
        ..dpop_as()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Fixed("rs-nonce-1"), false).await;
    let (peer, handle) = connect(&mcp.url, oauth(DpopPolicy::WhenSupported)).await;

    initialize(&peer).await.unwrap();
    call_tool(&peer, "whoami").await.unwrap();
    call_tool(&peer, "whoami").await.unwrap();
    handle.close().await;

    // The token endpoint: one challenge, then the retry with its nonce.
    let log = auth.log();
    assert_eq!(log.nonce_challenges, 1);
    assert_eq!(log.tokens.len(), 2);
    let last = &log.dpop_proofs.last().unwrap().as_ref().unwrap().claims;
    assert_eq!(last["nonce"], "as-nonce-1");

    // The resource: one challenge; the nonce is remembered for every later request, and the
    // two servers' nonces are not mixed up.
    let (accepted, refused, challenges) =
        mcp.log(|l| (l.accepted.clone(), l.refused.clone(), l.nonce_challenges));
    assert!(refused.is_empty(), "refused: {refused:?}");
    assert_eq!(challenges, 1);
    assert!(accepted.len() >= 5, "{accepted:?}");
    for (_, claims) in &accepted {
        assert_eq!(claims["nonce"], "rs-nonce-1");
    }
}

#[tokio::test]
async fn a_resource_that_never_accepts_the_nonce_fails_the_request_without_looping() {
    let auth = TestAs::start(dpop_as()).await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Always, false).await;
    let (peer, _handle) = connect(&mcp.url, oauth(DpopPolicy::WhenSupported)).await;

    let message = failure(initialize(&peer).await);
    assert!(message.contains("DPoP"), "{message}");
    // The bound request, its one nonce retry, and nothing more: the client neither loops
    // nor authorizes again.
    assert_eq!(mcp.log(|l| l.nonce_challenges), 2);
    assert_eq!(auth.log().authorizations.len(), 1);
}

#[tokio::test]
async fn a_refresh_is_made_with_a_proof_of_the_same_key() {
    // Tokens that expire within the client's 30 s skew are refreshed before each use.
    let auth = TestAs::start(AsConfig {
        expires_in: 5,
        ..dpop_as()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, false).await;
    let (peer, _handle) = connect(&mcp.url, oauth(DpopPolicy::WhenSupported)).await;

    initialize(&peer).await.unwrap();
    call_tool(&peer, "whoami").await.unwrap();

    let log = auth.log();
    let grants: Vec<&str> = log
        .tokens
        .iter()
        .map(|(f, _)| f["grant_type"].as_str())
        .collect();
    assert_eq!(grants[0], "authorization_code");
    assert!(
        grants[1..].iter().all(|g| *g == "refresh_token") && grants.len() > 1,
        "{grants:?}"
    );
    // The test server refuses a refresh whose proof is not from the token's key, so every
    // refresh here proved the same key.
    assert!(log.dpop_proofs.iter().all(Result::is_ok));
    assert!(mcp.log(|l| l.refused.is_empty()));
}

#[tokio::test]
async fn dpop_disabled_keeps_bearer_tokens_and_sends_no_proof() {
    let auth = TestAs::start(dpop_as()).await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, true).await;
    let (peer, _handle) = connect(&mcp.url, oauth(DpopPolicy::Disabled)).await;

    initialize(&peer).await.unwrap();
    call_tool(&peer, "whoami").await.unwrap();

    assert!(
        auth.log().dpop_proofs.is_empty(),
        "no proof at the token endpoint"
    );
    let schemes = mcp.log(|l| l.schemes.clone());
    assert!(schemes.iter().all(|s| s == "Bearer"), "{schemes:?}");
}

#[tokio::test]
async fn a_bearer_answer_to_a_proof_is_presented_as_bearer() {
    let auth = TestAs::start(AsConfig {
        dpop_bearer_answer: true,
        ..dpop_as()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, true).await;
    let (peer, _handle) = connect(&mcp.url, oauth(DpopPolicy::WhenSupported)).await;

    initialize(&peer).await.unwrap();
    assert_eq!(auth.log().dpop_proofs.len(), 1);
    let schemes = mcp.log(|l| l.schemes.clone());
    assert!(schemes.iter().all(|s| s == "Bearer"), "{schemes:?}");
}

#[tokio::test]
async fn dpop_required_refuses_bearer_only_servers_before_authorizing() {
    let auth = TestAs::start(AsConfig::default()).await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, true).await;
    let (peer, _handle) = connect(&mcp.url, oauth(DpopPolicy::Required)).await;

    let message = failure(initialize(&peer).await);
    assert!(message.contains("DPoP"), "{message}");
    let log = auth.log();
    assert!(log.authorizations.is_empty() && log.tokens.is_empty());

    // Required, and the server binds nothing despite the proof: refused as well.
    let auth = TestAs::start(AsConfig {
        dpop_bearer_answer: true,
        ..dpop_as()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, true).await;
    let (peer, _handle) = connect(&mcp.url, oauth(DpopPolicy::Required)).await;
    let message = failure(initialize(&peer).await);
    assert!(message.contains("Bearer"), "{message}");
}

#[tokio::test]
async fn a_resource_requiring_dpop_behind_a_bearer_only_server_is_refused_early() {
    // The resource's metadata says `dpop_bound_access_tokens_required`; its authorization
    // server cannot bind tokens: no bearer token would ever be accepted.
    let auth = TestAs::start(AsConfig::default()).await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, false).await;
    let (peer, _handle) = connect(&mcp.url, oauth(DpopPolicy::WhenSupported)).await;

    let message = failure(initialize(&peer).await);
    assert!(message.contains("DPoP"), "{message}");
    let log = auth.log();
    assert!(log.registrations.is_empty() && log.authorizations.is_empty());
}

#[tokio::test]
async fn a_given_key_is_the_one_tokens_are_bound_to() {
    let key = DpopKey::generate().unwrap();
    let oauth = auth_support::oauth("dpop-e2e")
        .dpop_key(key.clone())
        .build();
    let oauth = Arc::new(oauth.unwrap());
    let auth = TestAs::start(dpop_as()).await;
    let mcp = Mcp::start(&auth.issuer, RsNonce::Off, false).await;
    let (peer, _handle) = connect(&mcp.url, oauth).await;
    initialize(&peer).await.unwrap();

    // The token endpoint saw proofs of the given key, and the resource (which compares
    // every proof's key with the token's cnf.jkt) accepted the requests.
    let log = auth.log();
    let proof = log.dpop_proofs[0].as_ref().expect("a valid token proof");
    assert_eq!(proof.jkt, key.thumbprint());
    let (accepted, refused) = mcp.log(|l| (l.accepted.len(), l.refused.clone()));
    assert!(accepted > 0 && refused.is_empty(), "refused: {refused:?}");
}

#[tokio::test]
async fn the_sdk_resource_server_requiring_dpop_serves_the_sdk_client() {
    let auth = TestAs::start(dpop_as()).await;
    let (listener, base) = loopback().await;
    let url = format!("{base}/mcp");
    let rs = ResourceServer::new(
        ProtectedResourceMetadata::new(url.clone(), auth.issuer.clone()),
        format!("{base}/.well-known/oauth-protected-resource/mcp"),
        Arc::new(
            JwtVerifier::new(auth.issuer.clone(), url.clone())
                .with_key(DecodingKey::from_secret(SECRET), Algorithm::HS256),
        ),
    )
    .with_dpop(DpopOptions::default().required(true));
    // Its tools answer with the subject of the `mcp_auth::Principal` the SDK verified.
    let _served = serve(listener, rs, || {
        ToolServer::new("dpop-resource-server", |_, cx| {
            subject_result(
                cx.extensions()
                    .get::<Principal>()
                    .and_then(|p| p.subject.clone()),
            )
        })
    });

    let (peer, handle) = connect(&url, oauth(DpopPolicy::WhenSupported)).await;
    initialize(&peer).await.unwrap();
    let result = call_tool(&peer, "whoami").await.unwrap();
    assert_eq!(result["structuredContent"]["subject"], "user-1");
    handle.close().await;
    assert_eq!(auth.log().dpop_proofs.len(), 1);

    // The same server refuses a client that does not bind its tokens.
    let (peer, _handle) = connect(&url, oauth(DpopPolicy::Disabled)).await;
    let message = failure(initialize(&peer).await);
    assert!(
        message.contains("401") || message.contains("rejected"),
        "{message}"
    );
}
