//! The resource-server side on its own: token checks and challenges.

use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use mcp_auth::{
    BearerChallenge, BearerError, BearerVerifier, JwtVerifier, ProtectedResourceMetadata,
    ResourceServer, VerifyError,
};
use serde_json::{Value, json};

const ISSUER: &str = "https://auth.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const PRM_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const KEY: &[u8] = b"resource-server-test-key";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn token(claims: Value) -> String {
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(KEY),
    )
    .unwrap()
}

fn good_claims() -> Value {
    json!({"iss": ISSUER, "aud": RESOURCE, "exp": now() + 600, "sub": "alice", "scope": "mcp:read mcp:write", "client_id": "app"})
}

fn verifier() -> JwtVerifier {
    JwtVerifier::new(ISSUER, RESOURCE).with_key(DecodingKey::from_secret(KEY), Algorithm::HS256)
}

fn server() -> ResourceServer {
    ResourceServer::new(
        ProtectedResourceMetadata::new(RESOURCE, ISSUER).with_scopes(["mcp:read", "mcp:write"]),
        PRM_URL,
        Arc::new(verifier()),
    )
    .with_required_scopes(["mcp:read"])
}

fn parts(headers: &[(&str, &str)], uri: &str) -> http::request::Parts {
    let mut b = http::Request::post(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

#[tokio::test]
async fn jwt_verifier_accepts_a_good_token_and_reads_claims() {
    let p = verifier().verify(&token(good_claims())).await.unwrap();
    assert_eq!(p.subject.as_deref(), Some("alice"));
    assert_eq!(p.client_id.as_deref(), Some("app"));
    assert_eq!(p.scopes, ["mcp:read", "mcp:write"]);
    assert_eq!(p.claims["iss"], ISSUER);

    let mut scp = good_claims();
    scp.as_object_mut().unwrap().remove("scope");
    scp["scp"] = json!(["a", "b"]);
    scp["aud"] = json!(["https://other", RESOURCE]);
    assert_eq!(
        verifier().verify(&token(scp)).await.unwrap().scopes,
        ["a", "b"]
    );
}

#[tokio::test]
async fn jwt_verifier_rejects_expired_wrong_audience_issuer_and_signature() {
    let mut c = good_claims();
    c["exp"] = json!(now() - 600);
    assert!(matches!(
        verifier().verify(&token(c)).await,
        Err(VerifyError::Expired)
    ));

    let mut c = good_claims();
    c["aud"] = json!("https://other.example.com/mcp");
    assert!(matches!(
        verifier().verify(&token(c)).await,
        Err(VerifyError::WrongAudience)
    ));

    let mut c = good_claims();
    c["iss"] = json!("https://evil.example.com");
    assert!(matches!(
        verifier().verify(&token(c)).await,
        Err(VerifyError::WrongIssuer)
    ));

    let mut c = good_claims();
    c.as_object_mut().unwrap().remove("aud");
    assert!(
        verifier().verify(&token(c)).await.is_err(),
        "aud is required"
    );

    let forged = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &good_claims(),
        &EncodingKey::from_secret(b"another key"),
    )
    .unwrap();
    assert!(matches!(
        verifier().verify(&forged).await,
        Err(VerifyError::Invalid(_))
    ));
    assert!(matches!(
        verifier().verify("not.a.jwt").await,
        Err(VerifyError::Invalid(_))
    ));
    assert!(matches!(
        verifier().verify("").await,
        Err(VerifyError::Invalid(_))
    ));
}

#[tokio::test]
async fn missing_token_gets_a_401_with_metadata_and_scope() {
    let c = server()
        .authenticate(&parts(&[], RESOURCE))
        .await
        .unwrap_err();
    assert_eq!(c.status(), 401);
    assert_eq!(c.error(), None);
    let resp = c.into_response();
    let mut headers = http::HeaderMap::new();
    headers.insert(
        "www-authenticate",
        resp.headers()["www-authenticate"].clone(),
    );
    let b = BearerChallenge::from_headers(&headers);
    assert_eq!(b.resource_metadata.as_deref(), Some(PRM_URL));
    assert_eq!(b.scope.as_deref(), Some("mcp:read"));
    assert_eq!(b.error, None);
}

#[tokio::test]
async fn tokens_in_the_query_string_are_refused() {
    let good = token(good_claims());
    let uri = format!("{RESOURCE}?access_token={good}");
    let c = server().authenticate(&parts(&[], &uri)).await.unwrap_err();
    assert_eq!(c.status(), 400);
    assert_eq!(c.error(), Some(BearerError::InvalidRequest));
    // Even beside a valid header: a token in the URI has leaked already.
    let h = format!("Bearer {good}");
    let uri = format!("{RESOURCE}?sessionId=x&access_token=y");
    let c = server()
        .authenticate(&parts(&[("authorization", &h)], &uri))
        .await
        .unwrap_err();
    assert_eq!(c.status(), 400);
    // Other query parameters are fine.
    let uri = format!("{RESOURCE}?sessionId=x&not_access_token=y");
    assert!(
        server()
            .authenticate(&parts(&[("authorization", &h)], &uri))
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn per_operation_scopes_challenge_for_what_is_missing() {
    let rs = server()
        .with_method_scopes("resources/read", ["mcp:resources"])
        .with_tool_scopes("delete", ["mcp:admin", "mcp:write"]);
    let mut c = good_claims();
    c["scope"] = json!("mcp:read mcp:write");
    let h = format!("Bearer {}", token(c));
    let principal = rs
        .authenticate(&parts(&[("authorization", &h)], RESOURCE))
        .await
        .unwrap();
    assert!(
        rs.authorize_operation(&principal, "tools/list", None)
            .is_ok()
    );
    assert!(
        rs.authorize_operation(&principal, "tools/call", Some("echo"))
            .is_ok()
    );
    assert_eq!(
        rs.operation_scopes("tools/call", Some("delete")),
        ["mcp:admin", "mcp:write"]
    );
    let ch = rs
        .authorize_operation(&principal, "tools/call", Some("delete"))
        .unwrap_err();
    assert_eq!(ch.status(), 403);
    assert_eq!(ch.error(), Some(BearerError::InsufficientScope));
    // The required scope first, then everything the operation needs.
    assert_eq!(ch.scope(), Some("mcp:read mcp:admin mcp:write"));
    let ch = rs
        .authorize_operation(&principal, "resources/read", None)
        .unwrap_err();
    assert_eq!(ch.scope(), Some("mcp:read mcp:resources"));
    // A tool rule does not apply to another method that happens to carry the name.
    assert!(
        rs.authorize_operation(&principal, "prompts/get", Some("delete"))
            .is_ok()
    );
}

#[tokio::test]
async fn identity_names_issuer_subject_and_client() {
    let p = verifier().verify(&token(good_claims())).await.unwrap();
    let mut other_client = good_claims();
    other_client["client_id"] = json!("other-app");
    let q = verifier().verify(&token(other_client)).await.unwrap();
    let mut more_scopes = good_claims();
    more_scopes["scope"] = json!("mcp:read mcp:write mcp:admin");
    let r = verifier().verify(&token(more_scopes)).await.unwrap();
    assert_ne!(p.identity(), q.identity());
    assert_eq!(p.identity(), r.identity());
    assert!(p.identity().contains(ISSUER));
}

#[tokio::test]
async fn malformed_authorization_headers() {
    let t = format!("Bearer {}", token(good_claims()));
    let c = server()
        .authenticate(&parts(
            &[("authorization", &t), ("authorization", &t)],
            RESOURCE,
        ))
        .await
        .unwrap_err();
    assert_eq!(c.status(), 400);
    assert_eq!(c.error(), Some(BearerError::InvalidRequest));

    let c = server()
        .authenticate(&parts(&[("authorization", "Basic dTpw")], RESOURCE))
        .await
        .unwrap_err();
    assert_eq!(c.status(), 401);

    for bad in ["Bearer", "Bearer ", "Bearer a b"] {
        let c = server()
            .authenticate(&parts(&[("authorization", bad)], RESOURCE))
            .await
            .unwrap_err();
        assert_eq!(c.error(), Some(BearerError::InvalidToken), "{bad:?}");
    }
    let long = format!("Bearer {}", "a".repeat(20_000));
    let c = server()
        .authenticate(&parts(&[("authorization", &long)], RESOURCE))
        .await
        .unwrap_err();
    assert_eq!(c.error(), Some(BearerError::InvalidToken));
}

#[tokio::test]
async fn invalid_tokens_get_invalid_token() {
    let mut c = good_claims();
    c["aud"] = json!("https://other.example.com/mcp");
    let h = format!("bearer {}", token(c));
    let ch = server()
        .authenticate(&parts(&[("authorization", &h)], RESOURCE))
        .await
        .unwrap_err();
    assert_eq!(ch.status(), 401);
    assert_eq!(ch.error(), Some(BearerError::InvalidToken));
    let v = ch.www_authenticate();
    let text = v.to_str().unwrap();
    assert!(text.starts_with("Bearer resource_metadata=\""), "{text}");
    assert!(text.contains("error=\"invalid_token\""), "{text}");
}

#[tokio::test]
async fn insufficient_scope_names_what_is_needed() {
    let mut c = good_claims();
    c["scope"] = json!("mcp:read");
    let h = format!("Bearer {}", token(c));
    let rs = server();
    let principal = rs
        .authenticate(&parts(&[("authorization", &h)], RESOURCE))
        .await
        .unwrap();
    assert!(principal.has_scope("mcp:read"));
    assert!(rs.require_scopes(&principal, &["mcp:read"]).is_ok());
    let ch = rs.require_scopes(&principal, &["mcp:admin"]).unwrap_err();
    assert_eq!(ch.status(), 403);
    assert_eq!(ch.error(), Some(BearerError::InsufficientScope));
    assert_eq!(ch.scope(), Some("mcp:read mcp:admin"));
    let resp = ch.into_response();
    assert_eq!(resp.status(), 403);
    let body: Value = serde_json::from_slice(resp.body()).unwrap();
    assert_eq!(body["error"], "insufficient_scope");

    // A token without the required scope is refused by authenticate itself.
    let mut c = good_claims();
    c["scope"] = json!("other");
    let h = format!("Bearer {}", token(c));
    let ch = rs
        .authenticate(&parts(&[("authorization", &h)], RESOURCE))
        .await
        .unwrap_err();
    assert_eq!(ch.status(), 403);
}

#[test]
fn metadata_document() {
    let rs = server();
    assert_eq!(
        rs.metadata_path(),
        "/.well-known/oauth-protected-resource/mcp"
    );
    assert_eq!(
        rs.metadata_paths(),
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource"
        ]
    );
    assert!(!rs.is_metadata_path("/mcp"));
    let resp = rs.metadata_response();
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body: Value = serde_json::from_slice(resp.body()).unwrap();
    assert_eq!(
        body,
        json!({
            "resource": RESOURCE,
            "authorization_servers": [ISSUER],
            "scopes_supported": ["mcp:read", "mcp:write"],
            "bearer_methods_supported": ["header"],
        })
    );
}
