//! OAuth end to end over real HTTP on 127.0.0.1: a small authorization server (the one of
//! `mcp-auth`'s own flow tests), an MCP server (`StreamableHttpService` protected by
//! `mcp_auth::ResourceServer` with a `JwtVerifier`, serving a plain `mcp_jsonrpc` engine handler),
//! and the `mcp_auth::OAuthClient` driving the HTTP client transport.
//!
//! The success path is 401 -> protected resource metadata -> authorization server metadata ->
//! dynamic registration -> authorization code with PKCE -> token -> the call succeeds, and the
//! handler sees the principal. The failures: an authorization server whose metadata names
//! another issuer, one without PKCE S256, a resource that does not match the server URL, an
//! expired token (refreshed), a token for another audience or from an untrusted issuer (never
//! reaches the handler), and insufficient scope (403, then step-up).

use crate::auth_support::{self, ToolServer, VERSION, loopback, serve};
use crate::support;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use mcp_auth::{
    BearerChallenge, HttpClient, HyperHttpClient, JwtVerifier, OAuthClient, Principal,
    ProtectedResourceMetadata, ResourceServer,
};
use mcp_jsonrpc::{CallError, Peer};
use mcp_tests::http::Served;
use mcp_tests::rpc::{call_tool, failure};
use serde_json::{Value, json};
use support::{AsConfig, SECRET, TestAs, now};

/// What the MCP handler saw: each request's method and the principal in its extensions.
type Seen = Arc<Mutex<Vec<(String, Option<Principal>)>>>;

/// Answers `initialize` and `tools/call` (`whoami` and `write`, both returning the caller),
/// recording in `seen` each request's method and principal.
fn mcp_handler(seen: Seen) -> ToolServer {
    ToolServer::new("protected", |params, cx| {
        let p = cx
            .extensions()
            .get::<Principal>()
            .cloned()
            .unwrap_or_default();
        json!({
            "content": [{"type": "text", "text": format!("{} called {}", p.subject.clone().unwrap_or_default(), params["name"])}],
            "structuredContent": {"subject": p.subject, "scopes": p.scopes},
        })
    })
    .observed(move |request, cx| {
        let principal = cx.extensions().get::<Principal>().cloned();
        seen.lock()
            .unwrap()
            .push((request.method.clone(), principal));
    })
}

/// How the MCP server is protected.
struct McpSetup {
    /// The issuer its verifier trusts (default: the authorization server's).
    trusted_issuer: Option<String>,
    /// Publish this path as the resource instead of `/mcp` (the audience follows it).
    resource_path: Option<&'static str>,
    /// Scopes needed to call the `write` tool.
    write_scopes: Vec<&'static str>,
}

impl Default for McpSetup {
    fn default() -> Self {
        Self {
            trusted_issuer: None,
            resource_path: None,
            write_scopes: vec!["mcp:write"],
        }
    }
}

struct Mcp {
    base: String,
    url: String,
    resource: String,
    seen: Seen,
    /// Stops the server when the test drops it.
    _served: Served,
}

impl Mcp {
    async fn start(issuer: &str, setup: McpSetup) -> Mcp {
        let (listener, base) = loopback().await;
        let url = format!("{base}/mcp");
        let resource_path = setup.resource_path.unwrap_or("/mcp");
        let resource = format!("{base}{resource_path}");
        let trusted = setup.trusted_issuer.unwrap_or_else(|| issuer.to_owned());
        let verifier = JwtVerifier::new(trusted, resource.clone())
            .with_key(DecodingKey::from_secret(SECRET), Algorithm::HS256);
        let rs = ResourceServer::new(
            ProtectedResourceMetadata::new(resource.clone(), issuer)
                .with_scopes(["mcp:read", "mcp:write"]),
            format!("{base}/.well-known/oauth-protected-resource{resource_path}"),
            Arc::new(verifier),
        )
        .with_required_scopes(["mcp:read"])
        .with_tool_scopes("write", setup.write_scopes);
        let seen: Seen = Arc::default();
        let s = seen.clone();
        let served = serve(listener, rs, move || mcp_handler(s.clone()));
        Mcp {
            base,
            url,
            resource,
            seen,
            _served: served,
        }
    }

    fn methods(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|(m, _)| m.clone())
            .collect()
    }

    /// A token signed like the authorization server's, with these claims on top of good ones.
    fn token(&self, issuer: &str, overrides: Value) -> String {
        let mut claims = json!({
            "iss": issuer, "aud": self.resource, "exp": now() + 600,
            "sub": "user-1", "scope": "mcp:read", "client_id": "c",
        });
        for (k, v) in overrides.as_object().unwrap() {
            claims[k] = v.clone();
        }
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap()
    }
}

fn oauth() -> Arc<OAuthClient> {
    Arc::new(auth_support::oauth("e2e").build().unwrap())
}

/// Connects the HTTP client transport with `oauth` and starts a client engine on it.
async fn connect(url: &str, oauth: Arc<OAuthClient>) -> Peer {
    auth_support::connect(url, oauth).await.0
}

async fn initialize(peer: &Peer) -> Result<Value, CallError> {
    auth_support::initialize(peer, "e2e").await
}

#[tokio::test]
async fn full_flow_then_the_call_succeeds_with_the_principal() {
    let auth = TestAs::start(AsConfig::default()).await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let peer = connect(&mcp.url, oauth()).await;

    let init = initialize(&peer).await.unwrap();
    assert_eq!(init["protocolVersion"], VERSION);
    let result = call_tool(&peer, "whoami").await.unwrap();
    assert_eq!(result["structuredContent"]["subject"], "user-1");
    assert_eq!(result["structuredContent"]["scopes"], json!(["mcp:read"]));

    // Discovery, registration, PKCE, token: each exactly once.
    let log = auth.log();
    assert!(
        log.paths
            .contains(&"/.well-known/oauth-authorization-server".to_owned())
    );
    assert_eq!(log.registrations.len(), 1);
    assert_eq!(log.authorizations.len(), 1);
    let q = &log.authorizations[0];
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["resource"], mcp.resource);
    assert_eq!(q["scope"], "mcp:read", "the scope of the 401 challenge");
    assert_eq!(log.tokens.len(), 1);
    let (form, _) = &log.tokens[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["resource"], mcp.resource);
    assert_eq!(form["code_verifier"].len(), 64);

    // The handler saw every request with its principal (no request got through without).
    let seen = mcp.seen.lock().unwrap().clone();
    assert_eq!(
        seen.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(),
        ["initialize", "tools/call"]
    );
    for (_, p) in &seen {
        let p = p.as_ref().expect("principal in the extensions");
        assert_eq!(p.subject.as_deref(), Some("user-1"));
        assert_eq!(p.claims["iss"], json!(auth.issuer));
    }
}

#[tokio::test]
async fn insufficient_scope_is_a_403_then_the_client_steps_up() {
    let auth = TestAs::start(AsConfig::default()).await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let peer = connect(&mcp.url, oauth()).await;
    initialize(&peer).await.unwrap();
    let before = call_tool(&peer, "whoami").await.unwrap();
    assert_eq!(before["structuredContent"]["scopes"], json!(["mcp:read"]));

    let result = call_tool(&peer, "write").await.unwrap();
    assert_eq!(
        result["structuredContent"]["scopes"],
        json!(["mcp:read", "mcp:write"])
    );
    let log = auth.log();
    assert_eq!(log.authorizations.len(), 2, "one step-up");
    assert_eq!(log.authorizations[1]["scope"], "mcp:read mcp:write");
    assert_eq!(log.registrations.len(), 1, "the registration is reused");
    // The refused POST was never delivered: the handler saw `write` once, with the new scopes,
    // and the session survived the new token (same issuer, subject and client).
    assert_eq!(
        mcp.methods(),
        ["initialize", "tools/call", "tools/call"],
        "{:?}",
        mcp.seen.lock().unwrap()
    );
}

#[tokio::test]
async fn a_scope_the_authorization_server_never_grants_ends_in_an_error() {
    let auth = TestAs::start(AsConfig {
        grantable: Some(vec!["mcp:read".into()]),
        ..AsConfig::default()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let peer = connect(&mcp.url, oauth()).await;
    initialize(&peer).await.unwrap();
    let message = failure(call_tool(&peer, "write").await);
    assert!(message.contains("step-up"), "{message}");
    // The first authorization and two step-ups, then the client stops asking.
    assert_eq!(auth.log().authorizations.len(), 3);
    assert_eq!(mcp.methods(), ["initialize"]);
}

#[tokio::test]
async fn an_expired_token_is_refreshed() {
    let auth = TestAs::start(AsConfig {
        first_token_expired: true,
        ..AsConfig::default()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let peer = connect(&mcp.url, oauth()).await;
    initialize(&peer).await.unwrap();
    call_tool(&peer, "whoami").await.unwrap();
    let grants: Vec<_> = auth
        .log()
        .tokens
        .iter()
        .map(|(f, _)| f["grant_type"].clone())
        .collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    assert_eq!(mcp.methods(), ["initialize", "tools/call"]);
}

#[tokio::test]
async fn a_token_for_another_audience_never_reaches_the_handler() {
    let auth = TestAs::start(AsConfig {
        audience_override: Some("http://127.0.0.1:1/elsewhere".into()),
        ..AsConfig::default()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let peer = connect(&mcp.url, oauth()).await;
    let message = failure(initialize(&peer).await);
    assert!(message.contains("401"), "{message}");
    assert!(!auth.log().tokens.is_empty(), "tokens were issued");
    assert!(mcp.methods().is_empty());
}

#[tokio::test]
async fn a_token_from_an_untrusted_issuer_never_reaches_the_handler() {
    let auth = TestAs::start(AsConfig::default()).await;
    let mcp = Mcp::start(
        &auth.issuer,
        McpSetup {
            trusted_issuer: Some("https://trusted.example.com".into()),
            ..McpSetup::default()
        },
    )
    .await;
    let peer = connect(&mcp.url, oauth()).await;
    let message = failure(initialize(&peer).await);
    assert!(message.contains("401"), "{message}");
    assert!(mcp.methods().is_empty());
}

#[tokio::test]
async fn authorization_server_metadata_naming_another_issuer_is_refused() {
    let auth = TestAs::start(AsConfig {
        metadata_issuer: Some("https://evil.example.com".into()),
        ..AsConfig::default()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let peer = connect(&mcp.url, oauth()).await;
    let message = failure(initialize(&peer).await);
    assert!(message.contains("differs from the expected"), "{message}");
    let log = auth.log();
    assert!(log.registrations.is_empty() && log.authorizations.is_empty());
    assert!(log.tokens.is_empty());
    assert!(mcp.methods().is_empty());
}

#[tokio::test]
async fn an_authorization_server_without_s256_is_refused() {
    let auth = TestAs::start(AsConfig {
        pkce: false,
        ..AsConfig::default()
    })
    .await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let peer = connect(&mcp.url, oauth()).await;
    let message = failure(initialize(&peer).await);
    assert!(message.contains("PKCE S256"), "{message}");
    let log = auth.log();
    assert!(log.registrations.is_empty() && log.authorizations.is_empty());
    assert!(mcp.methods().is_empty());
}

#[tokio::test]
async fn metadata_for_another_resource_is_refused() {
    let auth = TestAs::start(AsConfig::default()).await;
    let mcp = Mcp::start(
        &auth.issuer,
        McpSetup {
            resource_path: Some("/other"),
            ..McpSetup::default()
        },
    )
    .await;
    let peer = connect(&mcp.url, oauth()).await;
    let message = failure(initialize(&peer).await);
    assert!(message.contains("does not match"), "{message}");
    assert!(auth.log().paths.is_empty(), "nothing was sent to the AS");
    assert!(mcp.methods().is_empty());
}

/// Raw HTTP against the protected server: metadata, challenges, refusals, session binding.
#[tokio::test]
async fn the_protected_endpoint_over_raw_http() {
    let auth = TestAs::start(AsConfig::default()).await;
    let mcp = Mcp::start(&auth.issuer, McpSetup::default()).await;
    let http = HyperHttpClient::new().unwrap();
    let send = |method: &str,
                path: &str,
                token: Option<String>,
                session: Option<&str>,
                body: Option<Value>| {
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", mcp.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", VERSION);
        if let Some(t) = token {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        if let Some(s) = session {
            b = b.header("mcp-session-id", s);
        }
        let body = body.map(|v| Bytes::from(v.to_string())).unwrap_or_default();
        let req = b.body(body).unwrap();
        let http = &http;
        async move { http.send(req).await.unwrap() }
    };
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", mcp.base);

    // The metadata, at the path-aware and the root well-known URLs, without credentials.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = send("GET", path, None, None, None).await;
        assert_eq!(r.status(), 200, "{path}");
        let doc: Value = serde_json::from_slice(r.body()).unwrap();
        assert_eq!(doc["resource"], mcp.resource);
        assert_eq!(doc["authorization_servers"], json!([auth.issuer]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }

    // No token: 401 naming the metadata and the required scope, on every method.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    for (method, body) in [
        ("POST", Some(init.clone())),
        ("GET", None),
        ("DELETE", None),
    ] {
        let r = send(method, "/mcp", None, Some("some-session"), body).await;
        assert_eq!(r.status(), 401, "{method}");
        let c = BearerChallenge::from_headers(r.headers());
        assert_eq!(c.resource_metadata.as_deref(), Some(metadata_url.as_str()));
        assert_eq!(c.scope.as_deref(), Some("mcp:read"));
        assert_eq!(c.error, None);
    }

    let alice = mcp.token(&auth.issuer, json!({}));
    // A token in the query string is refused, even a good one.
    let r = send(
        "POST",
        &format!("/mcp?access_token={alice}"),
        None,
        None,
        Some(init.clone()),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(
        BearerChallenge::from_headers(r.headers()).error.as_deref(),
        Some("invalid_request")
    );

    // Expired, wrong audience, untrusted issuer: 401 invalid_token.
    for bad in [
        mcp.token(&auth.issuer, json!({"exp": now() - 600})),
        mcp.token(&auth.issuer, json!({"aud": "http://127.0.0.1:1/other"})),
        mcp.token("https://evil.example.com", json!({})),
    ] {
        let r = send("POST", "/mcp", Some(bad), None, Some(init.clone())).await;
        assert_eq!(r.status(), 401);
        let c = BearerChallenge::from_headers(r.headers());
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.resource_metadata.as_deref(), Some(metadata_url.as_str()));
    }

    // Without the required scope: 403 insufficient_scope naming it.
    let r = send(
        "POST",
        "/mcp",
        Some(mcp.token(&auth.issuer, json!({"scope": "other"}))),
        None,
        Some(init.clone()),
    )
    .await;
    assert_eq!(r.status(), 403);
    let c = BearerChallenge::from_headers(r.headers());
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope.as_deref(), Some("mcp:read"));
    assert!(mcp.methods().is_empty());

    // Alice opens a session; the `write` tool needs a scope she lacks.
    let r = send(
        "POST",
        "/mcp",
        Some(alice.clone()),
        None,
        Some(init.clone()),
    )
    .await;
    assert_eq!(r.status(), 200);
    let sid = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let write = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "write", "arguments": {}}});
    let r = send(
        "POST",
        "/mcp",
        Some(alice.clone()),
        Some(&sid),
        Some(write.clone()),
    )
    .await;
    assert_eq!(r.status(), 403);
    let c = BearerChallenge::from_headers(r.headers());
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scope.as_deref(), Some("mcp:read mcp:write"));

    // Bob, with a perfectly good token, cannot use Alice's session: 404 on every method.
    let bob = mcp.token(
        &auth.issuer,
        json!({"sub": "user-2", "scope": "mcp:read mcp:write"}),
    );
    let whoami = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}});
    for (method, body) in [
        ("POST", Some(whoami.clone())),
        ("GET", None),
        ("DELETE", None),
    ] {
        let r = send(method, "/mcp", Some(bob.clone()), Some(&sid), body).await;
        assert_eq!(r.status(), 404, "{method}");
    }
    // Alice, stepped up, still can; her new token has the same identity.
    let alice_more = mcp.token(&auth.issuer, json!({"scope": "mcp:read mcp:write"}));
    let r = send("POST", "/mcp", Some(alice_more), Some(&sid), Some(write)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(mcp.methods(), ["initialize", "tools/call"]);
}
