//! DPoP (RFC 9449) on the client: the key pair a client proves possession of, the proof JWTs
//! it sends with token requests and resource requests, and the nonces servers hand out.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderValue;
use p256::ecdsa::signature::Signer as _;
use p256::ecdsa::{Signature, SigningKey};
use p256::pkcs8::{DecodePrivateKey as _, EncodePrivateKey as _, LineEnding};
use sha2::{Digest, Sha256};

use crate::error::AuthError;

/// The `DPoP` header: a proof JWT.
pub(crate) const DPOP: http::HeaderName = http::HeaderName::from_static("dpop");
/// The `DPoP-Nonce` header of server responses.
pub(crate) const DPOP_NONCE: http::HeaderName = http::HeaderName::from_static("dpop-nonce");
/// The only algorithm this client signs proofs with.
pub(crate) const ALG: &str = "ES256";
/// The longest nonce remembered; longer ones are ignored.
const MAX_NONCE_LEN: usize = 1024;

/// When the OAuth client binds its tokens to a key with DPoP (RFC 9449).
///
/// With DPoP, the authorization server binds each access token (and, for public clients, the
/// refresh token) to the client's public key; the client sends a fresh signed proof with every
/// token request and every request to the MCP server, so a leaked token is useless without the
/// private key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DpopPolicy {
    /// Never: tokens are bearer tokens.
    Disabled,
    /// Whenever the authorization server lists `ES256` in its
    /// `dpop_signing_alg_values_supported` metadata (RFC 9449 section 5.1); bearer tokens
    /// otherwise, and when the server issues a `Bearer` token despite the proof.
    #[default]
    WhenSupported,
    /// Always: an authorization server that does not list `ES256`, or that answers a proof
    /// with a `Bearer` token, is an error.
    Required,
}

/// The key pair a client proves possession of with DPoP: ECDSA on P-256 (`ES256`).
///
/// [`OAuthClient`](crate::OAuthClient) generates one when it is built, unless one is given
/// with [`dpop_key`](crate::OAuthClientBuilder::dpop_key). Tokens bound to a key are useless
/// without it: a client that keeps tokens across restarts (a
/// [`FileTokenStore`](crate::FileTokenStore)) keeps its key too ([`to_pkcs8_pem`](Self::to_pkcs8_pem)).
///
/// ```
/// use mcp_auth::DpopKey;
///
/// let key = DpopKey::generate()?;
/// let pem = key.to_pkcs8_pem()?;
/// let again = DpopKey::from_pkcs8_pem(&pem)?;
/// assert_eq!(key.thumbprint(), again.thumbprint());
/// # Ok::<(), mcp_auth::AuthError>(())
/// ```
#[derive(Clone)]
pub struct DpopKey {
    signing: SigningKey,
    /// The public key as a JWK with only the required members, in lexicographic order: both
    /// the proof's `jwk` header and the input of the thumbprint (RFC 7638 section 3).
    jwk: String,
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("alg", &ALG)
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new random key from the operating system's generator.
    pub fn generate() -> Result<Self, AuthError> {
        let mut bytes = [0u8; 32];
        // A random 256-bit string is a valid P-256 scalar except with probability ~2^-32.
        for _ in 0..16 {
            getrandom::fill(&mut bytes)
                .map_err(|e| AuthError::Key(format!("no randomness: {e}")))?;
            if let Ok(signing) = SigningKey::from_slice(&bytes) {
                bytes.fill(0);
                return Ok(Self::from_signing_key(signing));
            }
        }
        Err(AuthError::Key("could not draw a P-256 key".into()))
    }

    /// Loads a P-256 private key in PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    pub fn from_pkcs8_pem(pem: &str) -> Result<Self, AuthError> {
        SigningKey::from_pkcs8_pem(pem)
            .map(Self::from_signing_key)
            .map_err(|e| AuthError::Key(format!("not a P-256 PKCS#8 key: {e}")))
    }

    /// The private key in PKCS#8 PEM, to keep the key across restarts. Store it as a secret.
    pub fn to_pkcs8_pem(&self) -> Result<String, AuthError> {
        self.signing
            .to_pkcs8_pem(LineEnding::LF)
            .map(|pem| pem.as_str().to_owned())
            .map_err(|e| AuthError::Key(e.to_string()))
    }

    fn from_signing_key(signing: SigningKey) -> Self {
        let point = signing.verifying_key().to_encoded_point(false);
        let coordinate =
            |c: Option<&p256::FieldBytes>| c.map(|c| URL_SAFE_NO_PAD.encode(c)).unwrap_or_default();
        let (x, y) = (coordinate(point.x()), coordinate(point.y()));
        let jwk = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = URL_SAFE_NO_PAD.encode(Sha256::digest(jwk.as_bytes()));
        Self {
            signing,
            jwk,
            thumbprint,
        }
    }

    /// The JWK SHA-256 thumbprint of the public key (RFC 7638), base64url: what a bound
    /// token carries as `cnf.jkt`.
    pub fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// A fresh proof for one HTTP request (RFC 9449 section 4.2): header `typ: dpop+jwt`,
    /// `alg: ES256` and the public `jwk`; claims a random `jti`, `htm` = `method`, `htu` =
    /// `url` without query and fragment, `iat` = now, `ath` = the base64url SHA-256 of
    /// `access_token` when one is presented, and `nonce` when the server supplied one.
    ///
    /// ```
    /// let key = mcp_auth::DpopKey::generate()?;
    /// let proof = key.proof(&http::Method::POST, "https://mcp.example.com/mcp?x=1", Some("token"), None)?;
    /// assert_eq!(proof.split('.').count(), 3);
    /// # Ok::<(), mcp_auth::AuthError>(())
    /// ```
    pub fn proof(
        &self,
        method: &http::Method,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, AuthError> {
        let htu = target_uri(url).ok_or_else(|| AuthError::InvalidUrl {
            url: url.to_owned(),
            reason: "a DPoP proof needs an absolute http(s) URL",
        })?;
        let jti = crate::pkce::random_string(32)
            .map_err(|e| AuthError::Key(format!("no randomness: {e}")))?;
        let header = format!(r#"{{"typ":"dpop+jwt","alg":"{ALG}","jwk":{}}}"#, self.jwk);
        let mut claims = serde_json::Map::new();
        claims.insert("jti".into(), jti.into());
        claims.insert("htm".into(), method.as_str().into());
        claims.insert("htu".into(), htu.into());
        claims.insert("iat".into(), crate::store::now_secs().into());
        if let Some(token) = access_token {
            claims.insert("ath".into(), access_token_hash(token).into());
        }
        if let Some(nonce) = nonce {
            claims.insert("nonce".into(), nonce.into());
        }
        let claims = serde_json::Value::Object(claims).to_string();
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let signature: Signature = self.signing.sign(input.as_bytes());
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        ))
    }
}

/// `ath`: base64url of the SHA-256 of the ASCII access token (RFC 9449 section 4.2).
pub(crate) fn access_token_hash(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// `htu`: the URL without query and fragment, `scheme://authority/path`.
pub(crate) fn target_uri(url: &str) -> Option<String> {
    let without_fragment = url.split('#').next().unwrap_or(url);
    let uri: http::Uri = without_fragment.parse().ok()?;
    let scheme = uri.scheme_str()?;
    if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
        return None;
    }
    let authority = uri.authority()?;
    Some(format!(
        "{}://{}{}",
        scheme.to_ascii_lowercase(),
        authority.as_str(),
        uri.path()
    ))
}

/// The server a nonce belongs to: the lowercased `scheme://authority` of a URL.
pub(crate) fn origin(url: &str) -> Option<String> {
    let uri: http::Uri = url.split('#').next().unwrap_or(url).parse().ok()?;
    Some(format!(
        "{}://{}",
        uri.scheme_str()?.to_ascii_lowercase(),
        uri.authority()?.as_str().to_ascii_lowercase()
    ))
}

/// The latest `DPoP-Nonce` of each server (RFC 9449 sections 8 and 9), by origin; at most
/// `max` servers are remembered.
pub(crate) struct Nonces {
    max: usize,
    by_origin: Mutex<HashMap<String, String>>,
}

impl Nonces {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            by_origin: Mutex::new(HashMap::new()),
        }
    }

    /// The nonce to put into the next proof for `url`.
    pub(crate) fn get(&self, url: &str) -> Option<String> {
        let origin = origin(url)?;
        self.by_origin
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&origin)
            .cloned()
    }

    /// Remembers the nonce `value` (a `DPoP-Nonce` header) of the server at `url`. Returns
    /// whether it was usable (RFC 9449 section 8.1: `1*NQCHAR`, and not overlong).
    pub(crate) fn record(&self, url: &str, value: &HeaderValue) -> bool {
        let bytes = value.as_bytes();
        let valid = !bytes.is_empty()
            && bytes.len() <= MAX_NONCE_LEN
            && bytes
                .iter()
                .all(|&b| (0x21..=0x7e).contains(&b) && b != b'"' && b != b'\\');
        let (true, Some(origin)) = (valid, origin(url)) else {
            tracing::debug!(%url, "ignoring an unusable DPoP-Nonce");
            return false;
        };
        let nonce = String::from_utf8_lossy(bytes).into_owned();
        let mut map = self
            .by_origin
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !map.contains_key(&origin) && map.len() >= self.max {
            if let Some(victim) = map.keys().next().cloned() {
                map.remove(&victim);
            }
        }
        map.insert(origin, nonce);
        true
    }
}

impl fmt::Debug for Nonces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nonces")
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier as _;
    use serde_json::Value;

    fn b64json(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    /// Checks the signature with the public key from the proof's own `jwk` header, and
    /// returns the header and the claims.
    fn verify(proof: &str) -> (Value, Value) {
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = b64json(parts[0]);
        let jwk = &header["jwk"];
        let coordinate = |name: &str| URL_SAFE_NO_PAD.decode(jwk[name].as_str().unwrap()).unwrap();
        let mut sec1 = vec![4u8];
        sec1.extend(coordinate("x"));
        sec1.extend(coordinate("y"));
        let key = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let signature = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the proof's signature verifies with its jwk");
        (header, b64json(parts[1]))
    }

    #[test]
    fn proof_header_claims_and_signature() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                &http::Method::POST,
                "https://MCP.example.com:8443/mcp/v1?session=1#frag",
                Some("an-access-token"),
                Some("server-nonce"),
            )
            .unwrap();
        let (header, claims) = verify(&proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert_eq!(header["jwk"]["crv"], "P-256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://MCP.example.com:8443/mcp/v1");
        assert_eq!(claims["nonce"], "server-nonce");
        // Python: urlsafe_b64encode(sha256(b"an-access-token").digest()).rstrip(b"=")
        assert_eq!(claims["ath"], "YiHPD2T9DaX5B837XJXto32BKkT6ZcpVAT6si9f5KiY");
        let iat = claims["iat"].as_u64().unwrap();
        assert!(iat.abs_diff(crate::store::now_secs()) < 5);
        assert!(claims["jti"].as_str().unwrap().len() >= 32);
    }

    #[test]
    fn token_request_proofs_have_no_ath_or_nonce_and_fresh_jtis() {
        let key = DpopKey::generate().unwrap();
        let url = "http://127.0.0.1:9000/token";
        let (_, a) = verify(&key.proof(&http::Method::POST, url, None, None).unwrap());
        let (_, b) = verify(&key.proof(&http::Method::POST, url, None, None).unwrap());
        assert!(a.get("ath").is_none());
        assert!(a.get("nonce").is_none());
        assert_eq!(a["htu"], url);
        assert_ne!(a["jti"], b["jti"]);
        assert!(
            key.proof(&http::Method::GET, "/relative", None, None)
                .is_err()
        );
    }

    #[test]
    fn thumbprint_follows_rfc_7638() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(&http::Method::GET, "https://a.example/", None, None)
            .unwrap();
        let (header, _) = verify(&proof);
        let jwk = &header["jwk"];
        // Required members only, lexicographic order, no whitespace.
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        assert_eq!(
            key.thumbprint(),
            URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
        );
        assert_ne!(key.thumbprint(), DpopKey::generate().unwrap().thumbprint());
    }

    #[test]
    fn known_key_and_thumbprint() {
        // The P-256 key of RFC 7515 appendix A.3, as PKCS#8 (written by Python's
        // `cryptography`); the thumbprint by the RFC 7638 recipe with Python's hashlib.
        let pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjpsQnnGQmL+YBIff\nH1136cspYG6+0iY7X1fCE9+E9LKhRANCAAR/zc4ncPbEXUGDy+5v20t7WAczNXvp\n7xO6z248e9FURcfxRM0bvZt+hyzf7bnuufSzaV1uqQskrYpGIyiFiOWt\n-----END PRIVATE KEY-----\n";
        let key = DpopKey::from_pkcs8_pem(pem).unwrap();
        let (header, _) = verify(
            &key.proof(&http::Method::GET, "https://a.example/", None, None)
                .unwrap(),
        );
        assert_eq!(
            header["jwk"]["x"],
            "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU"
        );
        assert_eq!(
            header["jwk"]["y"],
            "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"
        );
        assert_eq!(
            key.thumbprint(),
            "oKIywvGUpTVTyxMQ3bwIIeQUudfr_CkLMjCE19ECD-U"
        );
        assert!(DpopKey::from_pkcs8_pem("not a key").is_err());
    }

    #[test]
    fn nonces_are_per_origin_validated_and_bounded() {
        let nonces = Nonces::new(2);
        let v = HeaderValue::from_static;
        assert!(nonces.record("https://as.example/token", &v("n-1")));
        assert_eq!(
            nonces.get("https://AS.example/other").as_deref(),
            Some("n-1")
        );
        assert_eq!(nonces.get("https://as.example:8443/token"), None);
        assert!(nonces.record("https://as.example/token", &v("n-2")));
        assert_eq!(nonces.get("https://as.example/").as_deref(), Some("n-2"));
        assert!(!nonces.record("https://as.example/token", &v("has space")));
        assert!(!nonces.record("https://as.example/token", &v("quo\"te")));
        assert!(!nonces.record("https://as.example/token", &v("")));
        assert_eq!(nonces.get("https://as.example/").as_deref(), Some("n-2"));
        assert!(nonces.record("https://b.example/", &v("b")));
        assert!(nonces.record("https://c.example/", &v("c")));
        let kept = [
            "https://as.example/",
            "https://b.example/",
            "https://c.example/",
        ]
        .iter()
        .filter(|u| nonces.get(u).is_some())
        .count();
        assert_eq!(kept, 2);
    }

    #[test]
    fn target_uris() {
        assert_eq!(
            target_uri("http://h:1/a/b?c=d").as_deref(),
            Some("http://h:1/a/b")
        );
        assert_eq!(target_uri("HTTPS://h").as_deref(), Some("https://h/"));
        assert_eq!(target_uri("ftp://h/x"), None);
        assert_eq!(target_uri("/x"), None);
    }
}
