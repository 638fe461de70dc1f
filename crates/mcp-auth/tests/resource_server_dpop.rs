//! The resource server with DPoP (RFC 9449): proofs made here with `jsonwebtoken` (not with
//! the client's code), good ones accepted, each kind of bad one refused with
//! `invalid_dpop_proof`, and the bearer/DPoP scheme rules.
#![cfg(feature = "server")]

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header};
use mcp_auth::{
    BearerChallenge, BearerError, DpopOptions, JwtVerifier, ProtectedResourceMetadata,
    ResourceServer,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const ISSUER: &str = "https://auth.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const PRM_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const KEY: &[u8] = b"resource-server-test-key";

/// The P-256 key of RFC 7515 appendix A.3, and another one.
const PEM_A: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjpsQnnGQmL+YBIff\nH1136cspYG6+0iY7X1fCE9+E9LKhRANCAAR/zc4ncPbEXUGDy+5v20t7WAczNXvp\n7xO6z248e9FURcfxRM0bvZt+hyzf7bnuufSzaV1uqQskrYpGIyiFiOWt\n-----END PRIVATE KEY-----\n";
const JWK_A: (&str, &str) = (
    "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
    "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
);
const PEM_B: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKYlD67QePC3AAnQ6\nI4bSnkbHaulx5kqE555rxZXzlImhRANCAARejnuDoiv90VZ2W1TFFtN4aksqdM0s\nvriFzaNc22eLlk6df3BS1dpieAk/x0XXLKFeuAdz/DNgQ4sGiI9aTInp\n-----END PRIVATE KEY-----\n";

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn b64(bytes: impl AsRef<[u8]>) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn jwk_a() -> Value {
    json!({"kty": "EC", "crv": "P-256", "x": JWK_A.0, "y": JWK_A.1})
}

/// RFC 7638 thumbprint of key A.
fn jkt_a() -> String {
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        JWK_A.0, JWK_A.1
    );
    b64(Sha256::digest(canonical.as_bytes()))
}

fn access_token(cnf: Option<&str>) -> String {
    let mut claims = json!({
        "iss": ISSUER, "aud": RESOURCE, "exp": now() + 600, "sub": "alice",
        "scope": "mcp:read", "client_id": "app",
    });
    if let Some(jkt) = cnf {
        claims["cnf"] = json!({ "jkt": jkt });
    }
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(KEY),
    )
    .unwrap()
}

/// What goes into a test proof; each field can be spoiled.
struct ProofSpec {
    typ: &'static str,
    jwk: Value,
    pem: &'static str,
    claims: Value,
}

impl ProofSpec {
    fn good(token: &str) -> Self {
        Self {
            typ: "dpop+jwt",
            jwk: jwk_a(),
            pem: PEM_A,
            claims: json!({
                "jti": format!("jti-{}-{}", now(), rand_suffix()),
                "htm": "POST",
                "htu": RESOURCE,
                "iat": now(),
                "ath": b64(Sha256::digest(token.as_bytes())),
            }),
        }
    }

    /// Signs the header and claims as given (a `jsonwebtoken::Header` would drop a private
    /// member of the `jwk`).
    fn sign(&self) -> String {
        let header = json!({"typ": self.typ, "alg": "ES256", "jwk": self.jwk});
        let input = format!(
            "{}.{}",
            b64(header.to_string()),
            b64(self.claims.to_string())
        );
        let key = EncodingKey::from_ec_pem(self.pem.as_bytes()).unwrap();
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), &key, Algorithm::ES256).unwrap();
        format!("{input}.{signature}")
    }
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn server(options: DpopOptions) -> ResourceServer {
    ResourceServer::new(
        ProtectedResourceMetadata::new(RESOURCE, ISSUER),
        PRM_URL,
        Arc::new(
            JwtVerifier::new(ISSUER, RESOURCE)
                .with_key(DecodingKey::from_secret(KEY), Algorithm::HS256),
        ),
    )
    .with_required_scopes(["mcp:read"])
    .with_dpop(options)
}

fn request(uri: &str, authorization: &str, proofs: &[&str]) -> http::request::Parts {
    let mut b = http::Request::post(uri).header("authorization", authorization);
    for p in proofs {
        b = b.header("dpop", *p);
    }
    b.body(()).unwrap().into_parts().0
}

/// Authenticates a request with a DPoP-bound token and the proof `spec` makes.
async fn with_proof(
    rs: &ResourceServer,
    spoil: impl FnOnce(&mut ProofSpec),
) -> Result<(), (BearerError, String)> {
    let token = access_token(Some(&jkt_a()));
    let mut spec = ProofSpec::good(&token);
    spoil(&mut spec);
    let proof = spec.sign();
    rs.authenticate(&request(RESOURCE, &format!("DPoP {token}"), &[&proof]))
        .await
        .map(|_| ())
        .map_err(|c| {
            (
                c.error().unwrap(),
                c.www_authenticate().to_str().unwrap().to_owned(),
            )
        })
}

#[tokio::test]
async fn a_good_proof_is_accepted() {
    let rs = server(DpopOptions::default());
    with_proof(&rs, |_| {}).await.unwrap();
    // A request target that is only a path is completed with the resource's origin.
    let token = access_token(Some(&jkt_a()));
    let proof = ProofSpec::good(&token).sign();
    let principal = rs
        .authenticate(&request("/mcp", &format!("DPoP {token}"), &[&proof]))
        .await
        .unwrap();
    assert_eq!(principal.subject.as_deref(), Some("alice"));
    // A different query string and an equivalent URL spelling are fine (RFC 9449 4.3).
    with_proof(&rs, |s| {
        s.claims["htu"] = json!("HTTPS://mcp.example.com:443/mcp")
    })
    .await
    .unwrap();
}

/// A change that makes a good proof bad.
type Spoil = Box<dyn FnOnce(&mut ProofSpec)>;

#[tokio::test]
async fn each_bad_proof_is_refused_with_invalid_dpop_proof() {
    let rs = server(DpopOptions::default());
    let cases: Vec<(&str, Spoil)> = vec![
        ("htm", Box::new(|s| s.claims["htm"] = json!("GET"))),
        (
            "htu",
            Box::new(|s| s.claims["htu"] = json!("https://mcp.example.com/other")),
        ),
        (
            "ath",
            Box::new(|s| s.claims["ath"] = json!(b64(Sha256::digest(b"another token")))),
        ),
        (
            "missing ath",
            Box::new(|s| {
                s.claims.as_object_mut().unwrap().remove("ath");
            }),
        ),
        (
            "old iat",
            Box::new(|s| s.claims["iat"] = json!(now() - 600)),
        ),
        (
            "future iat",
            Box::new(|s| s.claims["iat"] = json!(now() + 600)),
        ),
        (
            "missing jti",
            Box::new(|s| {
                s.claims.as_object_mut().unwrap().remove("jti");
            }),
        ),
        ("typ", Box::new(|s| s.typ = "JWT")),
        (
            "private jwk",
            Box::new(|s| s.jwk["d"] = json!("jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI")),
        ),
        // Signed by key B while the header names key A: the signature does not verify.
        ("signature", Box::new(|s| s.pem = PEM_B)),
    ];
    for (name, spoil) in cases {
        let (error, header) = with_proof(&rs, spoil)
            .await
            .expect_err(&format!("{name}: accepted"));
        assert_eq!(error, BearerError::InvalidDpopProof, "{name}");
        assert!(
            header.contains(r#"DPoP algs="#) && header.contains(r#"error="invalid_dpop_proof""#),
            "{name}: {header}"
        );
    }
}

#[tokio::test]
async fn the_proof_key_must_be_the_token_key_and_proofs_are_single_use() {
    let rs = server(DpopOptions::default());
    // A token bound to another key.
    let token = access_token(Some("another-thumbprint"));
    let proof = ProofSpec::good(&token).sign();
    let err = rs
        .authenticate(&request(RESOURCE, &format!("DPoP {token}"), &[&proof]))
        .await
        .unwrap_err();
    assert_eq!(err.error(), Some(BearerError::InvalidDpopProof));

    // The same proof twice.
    let token = access_token(Some(&jkt_a()));
    let proof = ProofSpec::good(&token).sign();
    let parts = request(RESOURCE, &format!("DPoP {token}"), &[&proof]);
    rs.authenticate(&parts).await.unwrap();
    let err = rs.authenticate(&parts).await.unwrap_err();
    assert_eq!(err.error(), Some(BearerError::InvalidDpopProof));

    // No proof, and two proofs.
    for proofs in [vec![], vec![proof.as_str(), proof.as_str()]] {
        let err = rs
            .authenticate(&request(RESOURCE, &format!("DPoP {token}"), &proofs))
            .await
            .unwrap_err();
        assert_eq!(err.error(), Some(BearerError::InvalidDpopProof));
    }
}

#[tokio::test]
async fn scheme_rules() {
    let rs = server(DpopOptions::default());
    // A bound token presented as a bearer token: refused (RFC 9449 section 7.2).
    let bound = access_token(Some(&jkt_a()));
    let err = rs
        .authenticate(&request(RESOURCE, &format!("Bearer {bound}"), &[]))
        .await
        .unwrap_err();
    assert_eq!(err.error(), Some(BearerError::InvalidToken));
    // An unbound token with the DPoP scheme: refused.
    let plain = access_token(None);
    let proof = ProofSpec::good(&plain).sign();
    let err = rs
        .authenticate(&request(RESOURCE, &format!("DPoP {plain}"), &[&proof]))
        .await
        .unwrap_err();
    assert_eq!(err.error(), Some(BearerError::InvalidToken));
    assert!(
        err.www_authenticate()
            .to_str()
            .unwrap()
            .contains(r#"DPoP algs="ES256"#)
    );
    // An unbound bearer token: still accepted unless DPoP is required.
    rs.authenticate(&request(RESOURCE, &format!("Bearer {plain}"), &[]))
        .await
        .unwrap();

    let required = server(DpopOptions::default().required(true));
    let err = required
        .authenticate(&request(RESOURCE, &format!("Bearer {plain}"), &[]))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 401);
    let header = err.www_authenticate().to_str().unwrap().to_owned();
    assert!(header.starts_with("DPoP algs="), "{header}");
    assert!(!header.contains("Bearer"), "{header}");
    assert!(header.contains(r#"error="invalid_token""#), "{header}");
    with_proof(&required, |_| {}).await.unwrap();

    // Without `with_dpop` the DPoP scheme is unknown: a plain challenge, as before.
    let bearer_only = ResourceServer::new(
        ProtectedResourceMetadata::new(RESOURCE, ISSUER),
        PRM_URL,
        Arc::new(
            JwtVerifier::new(ISSUER, RESOURCE)
                .with_key(DecodingKey::from_secret(KEY), Algorithm::HS256),
        ),
    );
    let err = bearer_only
        .authenticate(&request(RESOURCE, &format!("DPoP {bound}"), &[&proof]))
        .await
        .unwrap_err();
    assert_eq!(err.error(), None);
    assert_eq!(
        err.www_authenticate(),
        format!(r#"Bearer resource_metadata="{PRM_URL}""#).as_str()
    );
}

#[tokio::test]
async fn challenges_and_metadata_offer_dpop() {
    let rs = server(DpopOptions::default());
    let challenge = rs.unauthorized();
    let header = challenge.www_authenticate();
    let text = header.to_str().unwrap();
    assert_eq!(
        text,
        format!(
            r#"Bearer resource_metadata="{PRM_URL}", scope="mcp:read", DPoP algs="ES256 ES384 RS256 RS384 RS512 PS256 PS384 PS512 EdDSA", resource_metadata="{PRM_URL}", scope="mcp:read""#
        )
    );
    // A client reads it whichever challenge it looks at.
    let mut headers = http::HeaderMap::new();
    headers.insert("www-authenticate", header.clone());
    let parsed = BearerChallenge::from_headers(&headers);
    assert_eq!(parsed.resource_metadata.as_deref(), Some(PRM_URL));
    assert_eq!(parsed.scope.as_deref(), Some("mcp:read"));

    let prm: Value = serde_json::from_slice(rs.metadata_response().body()).unwrap();
    assert_eq!(prm["dpop_signing_alg_values_supported"][0], "ES256");
    assert_eq!(prm["dpop_bound_access_tokens_required"], false);
    let required = server(DpopOptions::default().required(true));
    let prm: Value = serde_json::from_slice(required.metadata_response().body()).unwrap();
    assert_eq!(prm["dpop_bound_access_tokens_required"], true);
}
