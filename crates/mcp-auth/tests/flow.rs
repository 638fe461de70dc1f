//! The OAuth client against a test authorization server and a protected resource that uses
//! this crate's resource-server side, over real HTTP on 127.0.0.1.
#![cfg(all(feature = "client", feature = "server"))]

use crate::support;

use std::sync::Arc;

use std::collections::HashMap;

use mcp_auth::{
    ApplicationType, AuthError, AuthProvider, ClientCredentials, ClientMetadata, EnterpriseIdp,
    FileTokenStore, HeadlessRedirect, HttpClient, HyperHttpClient, OAuthClient, OAuthClientBuilder,
    PrivateKeyJwt, SigningAlgorithm, TokenStore,
};
use support::{AsConfig, IssMode, RsConfig, TestAs, TestRs, basic, call};

const REDIRECT: &str = "http://127.0.0.1:1/callback";

fn builder() -> OAuthClientBuilder {
    let http: Arc<dyn HttpClient> = Arc::new(HyperHttpClient::new().unwrap());
    OAuthClient::builder(ClientMetadata::new("flow-test", REDIRECT))
        .http_client(http.clone())
        .authorization_handler(HeadlessRedirect::new(http))
}

fn client() -> OAuthClient {
    builder().protocol_revision("2026-07-28").build().unwrap()
}

async fn pair(as_config: AsConfig, rs_config: RsConfig) -> (TestAs, TestRs) {
    let auth = TestAs::start(as_config).await;
    let rs = TestRs::start(rs_config, vec![auth.issuer.clone()]).await;
    (auth, rs)
}

#[tokio::test]
async fn full_flow_with_dynamic_registration() {
    let (auth, rs) = pair(
        AsConfig::default(),
        RsConfig {
            required_scopes: vec!["mcp:read".into()],
            scopes_supported: Some(vec!["mcp:read".into(), "mcp:write".into()]),
            ..RsConfig::default()
        },
    )
    .await;
    let oauth = client();
    assert!(oauth.authorization(&rs.url).await.is_none());
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);

    let log = auth.log();
    assert_eq!(log.registrations.len(), 1);
    let reg = &log.registrations[0];
    assert_eq!(reg["application_type"], "native");
    assert_eq!(reg["redirect_uris"][0], REDIRECT);
    assert!(
        reg["grant_types"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "refresh_token")
    );
    assert_eq!(reg["token_endpoint_auth_method"], "none");

    assert_eq!(log.authorizations.len(), 1);
    let q = &log.authorizations[0];
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "dcr-client");
    assert_eq!(q["code_challenge_method"], "S256");
    assert_eq!(q["code_challenge"].len(), 43);
    assert_eq!(q["resource"], rs.resource);
    assert_eq!(
        q["scope"], "mcp:read",
        "the challenge's scope wins over scopes_supported"
    );
    assert!(q["state"].len() >= 32);

    assert_eq!(log.tokens.len(), 1);
    let (form, header) = &log.tokens[0];
    assert_eq!(form["grant_type"], "authorization_code");
    assert_eq!(form["resource"], rs.resource);
    assert_eq!(form["client_id"], "dcr-client");
    assert!(header.is_none());

    // PRM from the WWW-Authenticate URL only; the root was never needed.
    let paths = rs.paths.lock().unwrap().clone();
    assert!(paths.contains(&"/.well-known/oauth-protected-resource/mcp".to_owned()));
    assert!(!paths.contains(&"/.well-known/oauth-protected-resource".to_owned()));

    // The token is reused: no further authorization.
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    assert_eq!(auth.log().authorizations.len(), 1);
    assert_eq!(oauth.requested_scopes(&rs.url).unwrap(), ["mcp:read"]);
}

#[tokio::test]
async fn root_metadata_and_issuer_with_path_are_used_verbatim() {
    let (auth, rs) = pair(
        AsConfig {
            issuer_path: "/tenant1".into(),
            ..AsConfig::default()
        },
        RsConfig {
            root_prm: true,
            advertise: false,
            ..RsConfig::default()
        },
    )
    .await;
    assert!(auth.issuer.ends_with("/tenant1"));
    let oauth = builder().protocol_revision("2025-11-25").build().unwrap();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);

    // Path-based PRM first (404), then the root.
    let paths = rs.paths.lock().unwrap().clone();
    let prm: Vec<_> = paths.iter().filter(|p| p.contains("well-known")).collect();
    assert_eq!(
        prm,
        [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource"
        ]
    );
    // Path insertion for the issuer; the root AS metadata URL is never requested.
    let log = auth.log();
    assert_eq!(
        log.paths[0],
        "/.well-known/oauth-authorization-server/tenant1"
    );
    assert!(
        !log.paths
            .iter()
            .any(|p| p == "/.well-known/oauth-authorization-server")
    );
    // `resource` is the origin exactly, with no slash added.
    assert!(!rs.resource.ends_with('/'));
    assert_eq!(log.authorizations[0]["resource"], rs.resource);
    assert_eq!(log.tokens[0].0["resource"], rs.resource);
    // No scope anywhere: the parameter is omitted. 2025-11-25: no application_type.
    assert!(!log.authorizations[0].contains_key("scope"));
    assert!(log.registrations[0].get("application_type").is_none());
}

#[tokio::test]
async fn wrong_metadata_issuer_stops_before_any_endpoint() {
    let (auth, rs) = pair(
        AsConfig {
            metadata_issuer: Some("https://attacker.example.com".into()),
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    let err = call(&client(), &rs.url, None).await.unwrap_err();
    assert!(
        matches!(err, AuthError::IssuerMismatch { ref found, .. } if found == "https://attacker.example.com"),
        "{err:?}"
    );
    let log = auth.log();
    assert!(log.registrations.is_empty() && log.authorizations.is_empty() && log.tokens.is_empty());
}

#[tokio::test]
async fn authorization_response_iss_is_checked_exactly() {
    for (mode, advertised, ok) in [
        (IssMode::Correct, Some(true), true),
        (IssMode::Omit, None, true),
        (IssMode::Omit, Some(true), false),
        (IssMode::Wrong, Some(true), false),
        (IssMode::Wrong, None, false),
        (IssMode::TrailingSlash, Some(true), false),
    ] {
        let (auth, rs) = pair(
            AsConfig {
                iss_mode: mode,
                iss_supported: advertised,
                ..AsConfig::default()
            },
            RsConfig::default(),
        )
        .await;
        let result = call(&client(), &rs.url, None).await;
        let log = auth.log();
        assert_eq!(log.authorizations.len(), 1, "{mode:?}");
        if ok {
            assert_eq!(result.unwrap(), 200, "{mode:?}");
            assert_eq!(log.tokens.len(), 1);
        } else {
            assert!(
                matches!(result, Err(AuthError::IssMismatch { .. })),
                "{mode:?}: {result:?}"
            );
            assert!(
                log.tokens.is_empty(),
                "{mode:?}: no token request after a bad iss"
            );
        }
    }
}

#[tokio::test]
async fn missing_pkce_support_is_refused() {
    let (auth, rs) = pair(
        AsConfig {
            pkce: false,
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    let err = call(&client(), &rs.url, None).await.unwrap_err();
    assert!(matches!(err, AuthError::PkceNotSupported { .. }), "{err:?}");
    let log = auth.log();
    assert!(log.registrations.is_empty() && log.authorizations.is_empty());
}

#[tokio::test]
async fn resource_mismatch_is_refused() {
    let (auth, rs) = pair(
        AsConfig::default(),
        RsConfig {
            resource_override: Some("https://evil.example.com/mcp".into()),
            ..RsConfig::default()
        },
    )
    .await;
    let err = call(&client(), &rs.url, None).await.unwrap_err();
    assert!(matches!(err, AuthError::ResourceMismatch { .. }), "{err:?}");
    assert!(
        auth.log().paths.is_empty(),
        "the authorization server is never contacted"
    );
}

#[tokio::test]
async fn expired_token_is_refreshed_after_401() {
    let (auth, rs) = pair(
        AsConfig {
            first_token_expired: true,
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    let oauth = client();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let log = auth.log();
    let grants: Vec<_> = log
        .tokens
        .iter()
        .map(|(f, _)| f["grant_type"].clone())
        .collect();
    assert_eq!(grants, ["authorization_code", "refresh_token"]);
    assert_eq!(log.tokens[1].0["resource"], rs.resource);
    assert_eq!(log.authorizations.len(), 1);
}

#[tokio::test]
async fn token_expiring_by_the_clock_is_refreshed_before_sending() {
    let (auth, rs) = pair(
        AsConfig {
            expires_in: 1,
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    let oauth = client();
    // The token expires within the client's skew, so the retry after the 401 already
    // refreshes it before sending, and so does every later request.
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let grants = |auth: &TestAs| -> Vec<String> {
        auth.log()
            .tokens
            .iter()
            .map(|(f, _)| f["grant_type"].clone())
            .collect()
    };
    assert_eq!(grants(&auth), ["authorization_code", "refresh_token"]);
    assert!(oauth.authorization(&rs.url).await.is_some());
    assert_eq!(
        grants(&auth),
        ["authorization_code", "refresh_token", "refresh_token"]
    );
    assert_eq!(auth.log().authorizations.len(), 1);
}

#[tokio::test]
async fn wrong_audience_is_rejected_by_the_resource() {
    let (auth, rs) = pair(
        AsConfig {
            audience_override: Some("https://other.example.com/mcp".into()),
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    // Every token is for another resource: the client tries a refresh and a new
    // authorization, then the transport gives up with 401.
    assert_eq!(call(&client(), &rs.url, None).await.unwrap(), 401);
    assert!(auth.log().tokens.len() >= 2);
}

#[tokio::test]
async fn insufficient_scope_steps_up_with_the_union() {
    let (auth, rs) = pair(
        AsConfig::default(),
        RsConfig {
            required_scopes: vec!["mcp:basic".into()],
            scopes_supported: Some(vec!["mcp:profile".into()]),
            ..RsConfig::default()
        },
    )
    .await;
    let oauth = client();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    assert_eq!(call(&oauth, &rs.url, Some("mcp:write")).await.unwrap(), 200);
    let log = auth.log();
    assert_eq!(log.authorizations.len(), 2);
    assert_eq!(log.authorizations[0]["scope"], "mcp:basic");
    assert_eq!(log.authorizations[1]["scope"], "mcp:basic mcp:write");
    assert_eq!(log.registrations.len(), 1, "the registration is reused");
}

#[tokio::test]
async fn step_up_gives_up_after_three_authorizations() {
    let (auth, rs) = pair(
        AsConfig {
            grantable: Some(vec!["mcp:basic".into()]),
            ..AsConfig::default()
        },
        RsConfig {
            required_scopes: vec!["mcp:admin".into()],
            ..RsConfig::default()
        },
    )
    .await;
    let err = call(&client(), &rs.url, None).await.unwrap_err();
    assert!(matches!(err, AuthError::StepUpLimit { .. }), "{err:?}");
    assert_eq!(auth.log().authorizations.len(), 3);
}

#[tokio::test]
async fn pre_registered_client_uses_basic_auth() {
    let (auth, rs) = pair(
        AsConfig {
            registration: false,
            auth_methods: vec!["client_secret_basic".into()],
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    let oauth = builder()
        .pre_registered(ClientCredentials::with_secret(
            "pre-registered-client",
            "pre-registered-secret",
        ))
        .build()
        .unwrap();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let log = auth.log();
    assert!(log.registrations.is_empty());
    let (form, header) = &log.tokens[0];
    assert_eq!(
        basic(header.as_deref().unwrap()),
        (
            "pre-registered-client".to_owned(),
            "pre-registered-secret".to_owned()
        )
    );
    assert!(!form.contains_key("client_secret"));
}

#[tokio::test]
async fn token_endpoint_auth_method_follows_the_registration() {
    for (method, expect_basic, expect_post) in [
        ("client_secret_basic", true, false),
        ("client_secret_post", false, true),
        ("none", false, false),
    ] {
        let (auth, rs) = pair(
            AsConfig {
                auth_methods: vec![method.into()],
                dcr_method: Some(method.into()),
                ..AsConfig::default()
            },
            RsConfig::default(),
        )
        .await;
        assert_eq!(call(&client(), &rs.url, None).await.unwrap(), 200);
        let log = auth.log();
        assert_eq!(log.registrations[0]["token_endpoint_auth_method"], method);
        let (form, header) = &log.tokens[0];
        assert_eq!(header.is_some(), expect_basic, "{method}");
        assert_eq!(form.get("client_secret").is_some(), expect_post, "{method}");
        if expect_basic {
            assert_eq!(basic(header.as_deref().unwrap()).1, "dcr-secret");
        }
    }
}

#[tokio::test]
async fn client_id_metadata_document_replaces_registration() {
    let cimd = "https://client.example.com/client-metadata.json";
    let (auth, rs) = pair(
        AsConfig {
            cimd: true,
            scopes_supported: Some(vec!["mcp:basic".into(), "offline_access".into()]),
            ..AsConfig::default()
        },
        RsConfig {
            scopes_supported: Some(vec!["mcp:basic".into()]),
            ..RsConfig::default()
        },
    )
    .await;
    let oauth = builder().client_metadata_document(cimd).build().unwrap();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let log = auth.log();
    assert!(log.registrations.is_empty());
    assert_eq!(log.authorizations[0]["client_id"], cimd);
    assert_eq!(log.authorizations[0]["scope"], "mcp:basic offline_access");
}

#[tokio::test]
async fn offline_access_only_when_offered() {
    let (auth, rs) = pair(
        AsConfig {
            scopes_supported: Some(vec!["mcp:basic".into(), "mcp:read".into()]),
            ..AsConfig::default()
        },
        RsConfig {
            scopes_supported: Some(vec!["mcp:basic".into(), "mcp:read".into()]),
            ..RsConfig::default()
        },
    )
    .await;
    assert_eq!(call(&client(), &rs.url, None).await.unwrap(), 200);
    assert_eq!(auth.log().authorizations[0]["scope"], "mcp:basic mcp:read");
}

#[tokio::test]
async fn authorization_server_change_registers_anew() {
    let as1 = TestAs::start(AsConfig {
        dcr_client_id: "as1-client".into(),
        ..AsConfig::default()
    })
    .await;
    let as2 = TestAs::start(AsConfig {
        dcr_client_id: "as2-client".into(),
        ..AsConfig::default()
    })
    .await;
    let rs = TestRs::start(
        RsConfig::default(),
        vec![as1.issuer.clone(), as2.issuer.clone()],
    )
    .await;
    let oauth = client();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    rs.switch_to_second();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let log2 = as2.log();
    assert_eq!(log2.registrations.len(), 1);
    assert_eq!(log2.authorizations[0]["client_id"], "as2-client");
    assert!(
        log2.tokens
            .iter()
            .all(
                |(f, h)| f.get("client_id").map(String::as_str) != Some("as1-client")
                    && h.is_none()
            )
    );
    assert!(
        as1.log()
            .tokens
            .iter()
            .all(|(f, _)| f["grant_type"] == "authorization_code"),
        "no refresh at the old server"
    );
}

#[tokio::test]
async fn file_store_survives_a_new_client() {
    let (auth, rs) = pair(AsConfig::default(), RsConfig::default()).await;
    let dir = std::env::temp_dir().join(format!("mcp-auth-flow-{}", std::process::id()));
    let path = dir.join("tokens.json");
    let store: Arc<dyn TokenStore> = Arc::new(FileTokenStore::new(&path));
    let first = builder().token_store(store.clone()).build().unwrap();
    assert_eq!(call(&first, &rs.url, None).await.unwrap(), 200);
    let stored = store.load(&auth.issuer).await.unwrap().unwrap();
    assert_eq!(stored.client.unwrap().client_id, "dcr-client");
    assert!(stored.tokens.contains_key(&rs.resource));

    let second = builder()
        .token_store(Arc::new(FileTokenStore::new(&path)))
        .build()
        .unwrap();
    assert_eq!(call(&second, &rs.url, None).await.unwrap(), 200);
    let log = auth.log();
    assert_eq!(log.authorizations.len(), 1, "the stored token is reused");
    assert_eq!(
        log.registrations.len(),
        1,
        "the stored registration is reused"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn client_credentials_with_secret() {
    let (auth, rs) = pair(
        AsConfig {
            auth_methods: vec!["client_secret_basic".into()],
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    let oauth = OAuthClient::builder(ClientMetadata::new("m2m", REDIRECT))
        .client_credentials_grant(ClientCredentials::with_secret("svc", "svc-secret"))
        .build()
        .unwrap();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let log = auth.log();
    assert!(log.authorizations.is_empty() && log.registrations.is_empty());
    let (form, header) = &log.tokens[0];
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["resource"], rs.resource);
    assert_eq!(
        basic(header.as_deref().unwrap()),
        ("svc".into(), "svc-secret".into())
    );
}

const WORKLOAD_KEY: &[u8] = b"workload-identity-key";

fn workload_jwt(audience: &str, exp_offset: i64) -> String {
    let claims = serde_json::json!({
        "iss": "https://idp.example.com", "sub": "workload", "aud": audience,
        "exp": support::now() as i64 + exp_offset,
    });
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(WORKLOAD_KEY),
    )
    .unwrap()
}

fn workload_as() -> AsConfig {
    AsConfig {
        registration: false,
        jwt_bearer_key: Some(WORKLOAD_KEY.to_vec()),
        ..AsConfig::default()
    }
}

#[tokio::test]
async fn jwt_bearer_grant_sends_the_workload_assertion() {
    let (auth, rs) = pair(
        workload_as(),
        RsConfig {
            required_scopes: vec!["mcp:read".into()],
            ..RsConfig::default()
        },
    )
    .await;
    let jwt = workload_jwt(&auth.issuer, 300);
    let assertion = jwt.clone();
    let oauth = OAuthClient::builder(ClientMetadata::new("worker", REDIRECT))
        .jwt_bearer_grant(ClientCredentials::public("worker"), move || {
            Ok(assertion.clone())
        })
        .build()
        .unwrap();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let log = auth.log();
    assert!(log.authorizations.is_empty() && log.registrations.is_empty());
    assert_eq!(log.tokens.len(), 1);
    let (form, header) = &log.tokens[0];
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(form["assertion"], jwt);
    assert_eq!(form["client_id"], "worker");
    assert_eq!(form["scope"], "mcp:read");
    assert_eq!(form["resource"], rs.resource);
    assert!(header.is_none(), "a public client sends no credentials");
}

#[tokio::test]
async fn a_rejected_jwt_bearer_assertion_is_reported_without_retry_or_fallback() {
    let (auth, rs) = pair(workload_as(), RsConfig::default()).await;
    for jwt in [
        workload_jwt(&auth.issuer, -120),
        workload_jwt("https://wrong.example", 300),
    ] {
        let before = auth.log().tokens.len();
        let oauth = OAuthClient::builder(ClientMetadata::new("worker", REDIRECT))
            .jwt_bearer_grant(ClientCredentials::public("worker"), move || Ok(jwt.clone()))
            .build()
            .unwrap();
        let err = call(&oauth, &rs.url, None).await.unwrap_err();
        assert!(
            matches!(&err, AuthError::Endpoint { error: Some(e), .. } if e == "invalid_grant"),
            "{err:?}"
        );
        let log = auth.log();
        assert_eq!(log.tokens.len(), before + 1, "one token request, no retry");
        assert!(
            log.authorizations.is_empty(),
            "no fallback to another grant"
        );
    }
    // An assertion that cannot be produced is reported before anything is sent.
    let oauth = OAuthClient::builder(ClientMetadata::new("worker", REDIRECT))
        .jwt_bearer_grant(ClientCredentials::public("worker"), || {
            Err(AuthError::Config("no workload token".into()))
        })
        .build()
        .unwrap();
    let before = auth.log().tokens.len();
    assert!(matches!(
        call(&oauth, &rs.url, None).await,
        Err(AuthError::Config(_))
    ));
    assert_eq!(auth.log().tokens.len(), before);
}

/// A client of the enterprise-managed grant: `agent` at the authorization server, `agent-at-idp`
/// at the identity provider `idp`, which it shows `id_token`.
fn enterprise_client(idp: &support::Served, id_token: &str) -> OAuthClient {
    OAuthClient::builder(ClientMetadata::new("agent", REDIRECT))
        .enterprise_grant(
            ClientCredentials::with_secret("agent", "as-secret"),
            EnterpriseIdp::new(
                format!("{}/token", idp.base),
                ClientCredentials::public("agent-at-idp"),
                id_token,
            ),
        )
        .build()
        .unwrap()
}

/// An enterprise identity provider: exchanges `the-id-token` for an ID-JAG signed with the
/// workload key (so the test authorization server accepts it), addressed to the `audience`.
async fn start_idp() -> (
    support::Served,
    Arc<std::sync::Mutex<Vec<HashMap<String, String>>>>,
) {
    let (served, slot) = support::bind().await;
    let seen: Arc<std::sync::Mutex<Vec<HashMap<String, String>>>> = Arc::default();
    let s = seen.clone();
    *slot.lock().unwrap() = Some(Arc::new(move |req: http::Request<bytes::Bytes>| {
        let f = support::form(req.body());
        s.lock().unwrap().push(f.clone());
        let ok = f.get("grant_type").map(String::as_str)
            == Some("urn:ietf:params:oauth:grant-type:token-exchange")
            && f.get("subject_token").map(String::as_str) == Some("the-id-token")
            && f.get("subject_token_type").map(String::as_str)
                == Some("urn:ietf:params:oauth:token-type:id_token")
            && f.get("requested_token_type").map(String::as_str)
                == Some("urn:ietf:params:oauth:token-type:id-jag");
        let body = if ok {
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
            header.typ = Some("oauth-id-jag+jwt".into());
            let claims = serde_json::json!({
                "iss": "https://idp.example.com", "sub": "alice", "aud": f["audience"],
                "resource": f["resource"], "client_id": "agent",
                "exp": support::now() + 300,
            });
            let jag = jsonwebtoken::encode(
                &header,
                &claims,
                &jsonwebtoken::EncodingKey::from_secret(WORKLOAD_KEY),
            )
            .unwrap();
            serde_json::json!({"access_token": jag, "token_type": "N_A",
                "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"})
        } else {
            serde_json::json!({"error": "invalid_grant"})
        };
        http::Response::builder()
            .status(if ok { 200 } else { 400 })
            .header("content-type", "application/json")
            .body(bytes::Bytes::from(body.to_string()))
            .unwrap()
    }));
    (served, seen)
}

#[tokio::test]
async fn enterprise_managed_authorization_exchanges_the_id_token_for_an_id_jag() {
    let (auth, rs) = pair(
        AsConfig {
            auth_methods: vec!["client_secret_basic".into()],
            ..workload_as()
        },
        RsConfig {
            required_scopes: vec!["mcp:read".into()],
            ..RsConfig::default()
        },
    )
    .await;
    let (idp, exchanges) = start_idp().await;
    let oauth = enterprise_client(&idp, "the-id-token");
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);

    let exchanges = exchanges.lock().unwrap().clone();
    assert_eq!(exchanges.len(), 1);
    let x = &exchanges[0];
    assert_eq!(
        x["audience"], auth.issuer,
        "the ID-JAG is for the MCP server's AS"
    );
    assert_eq!(x["resource"], rs.resource);
    assert_eq!(x["scope"], "mcp:read");
    assert_eq!(x["client_id"], "agent-at-idp");

    let log = auth.log();
    assert!(log.authorizations.is_empty() && log.registrations.is_empty());
    let (form, header) = &log.tokens[0];
    assert_eq!(
        form["grant_type"],
        "urn:ietf:params:oauth:grant-type:jwt-bearer"
    );
    assert_eq!(
        basic(header.as_deref().unwrap()),
        ("agent".into(), "as-secret".into())
    );
    let jag = jsonwebtoken::decode_header(&form["assertion"]).unwrap();
    assert_eq!(jag.typ.as_deref(), Some("oauth-id-jag+jwt"));
}

#[tokio::test]
async fn a_failed_token_exchange_is_reported_before_the_authorization_server_is_asked() {
    let (auth, rs) = pair(workload_as(), RsConfig::default()).await;
    let (idp, exchanges) = start_idp().await;
    let oauth = enterprise_client(&idp, "a-stale-id-token");
    let err = call(&oauth, &rs.url, None).await.unwrap_err();
    assert!(
        matches!(&err, AuthError::Endpoint { endpoint: "token exchange", error: Some(e), .. } if e == "invalid_grant"),
        "{err:?}"
    );
    assert_eq!(exchanges.lock().unwrap().len(), 1, "no retry");
    assert!(auth.log().tokens.is_empty());
}

const EC_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKYlD67QePC3AAnQ6
I4bSnkbHaulx5kqE555rxZXzlImhRANCAARejnuDoiv90VZ2W1TFFtN4aksqdM0s
vriFzaNc22eLlk6df3BS1dpieAk/x0XXLKFeuAdz/DNgQ4sGiI9aTInp
-----END PRIVATE KEY-----
";
const EC_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEXo57g6Ir/dFWdltUxRbTeGpLKnTN
LL64hc2jXNtni5ZOnX9wUtXaYngJP8dF1yyhXrgHc/wzYEOLBoiPWkyJ6Q==
-----END PUBLIC KEY-----
";

#[tokio::test]
async fn client_credentials_with_private_key_jwt() {
    let (auth, rs) = pair(
        AsConfig {
            auth_methods: vec!["private_key_jwt".into()],
            assertion_key: Some(EC_PUBLIC.as_bytes().to_vec()),
            ..AsConfig::default()
        },
        RsConfig::default(),
    )
    .await;
    let key = PrivateKeyJwt::from_pem(EC_PRIVATE.as_bytes(), SigningAlgorithm::Es256).unwrap();
    let oauth = OAuthClient::builder(ClientMetadata::new("m2m", REDIRECT))
        .client_credentials_grant(ClientCredentials::with_private_key("svc-jwt", key))
        .build()
        .unwrap();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    let log = auth.log();
    assert_eq!(log.tokens.len(), 1);
    assert_eq!(log.tokens[0].0["client_id"], "svc-jwt");
}

#[tokio::test]
async fn explicit_application_type_is_sent_on_any_revision() {
    let (auth, rs) = pair(AsConfig::default(), RsConfig::default()).await;
    let http: Arc<dyn HttpClient> = Arc::new(HyperHttpClient::new().unwrap());
    let oauth = OAuthClient::builder(
        ClientMetadata::new("web", "https://app.example.com/cb")
            .with_application_type(ApplicationType::Web),
    )
    .http_client(http.clone())
    .authorization_handler(HeadlessRedirect::new(http))
    .build()
    .unwrap();
    assert_eq!(call(&oauth, &rs.url, None).await.unwrap(), 200);
    assert_eq!(auth.log().registrations[0]["application_type"], "web");
}
