//! DPoP (RFC 9449) on the resource server: checking the proof that comes with a DPoP-bound
//! access token (section 4.3, and section 7 for the token binding).

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The proof algorithms a [`ResourceServer`](crate::ResourceServer) verifies: the asymmetric
/// JWS algorithms (RFC 9449 section 11.6 forbids `none` and MACs).
pub(crate) const ALGS: [&str; 9] = [
    "ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA",
];

/// The `DPoP` request header.
pub(crate) const DPOP: http::HeaderName = http::HeaderName::from_static("dpop");

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Members of a JWK that only a private (or symmetric) key has.
const PRIVATE_MEMBERS: [&str; 7] = ["d", "p", "q", "dp", "dq", "qi", "k"];

/// How a [`ResourceServer`](crate::ResourceServer) accepts DPoP-bound access tokens
/// (RFC 9449): `Authorization: DPoP <token>` with a proof in the `DPoP` header.
///
/// ```
/// use std::time::Duration;
/// let options = mcp_auth::DpopOptions::default()
///     .required(true)
///     .iat_window(Duration::from_secs(120));
/// # let _ = options;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DpopOptions {
    required: bool,
    iat_window: Duration,
    max_replay_entries: usize,
}

impl Default for DpopOptions {
    fn default() -> Self {
        Self {
            required: false,
            iat_window: Duration::from_secs(300),
            max_replay_entries: 65_536,
        }
    }
}

impl DpopOptions {
    /// Accept only DPoP-bound tokens: a bearer token is refused (default `false`: bearer
    /// tokens without a key binding are accepted too).
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }

    /// How far a proof's `iat` may be from the server's clock, either way (default five
    /// minutes, as the MCP DPoP extension asks).
    pub fn iat_window(mut self, window: Duration) -> Self {
        self.iat_window = window;
        self
    }

    /// How many proof ids (`jti`) are remembered to refuse replays within the `iat` window
    /// (default 65536); the oldest are forgotten first.
    pub fn max_replay_entries(mut self, entries: usize) -> Self {
        self.max_replay_entries = entries.max(1);
        self
    }

    pub(crate) fn is_required(&self) -> bool {
        self.required
    }
}

/// A proof to check, with what it must match.
pub(crate) struct Expected<'a> {
    pub method: &'a str,
    /// The request's URL (query and fragment are ignored).
    pub url: &'a str,
    /// The access token presented with the proof.
    pub access_token: &'a str,
    /// The token's `cnf.jkt`.
    pub jkt: &'a str,
}

/// Checks proofs and remembers their ids.
pub(crate) struct ProofChecker {
    options: DpopOptions,
    replay: Mutex<Replay>,
}

#[derive(Default)]
struct Replay {
    seen: HashSet<String>,
    /// `(jti, until)` in arrival order.
    order: VecDeque<(String, u64)>,
}

impl std::fmt::Debug for ProofChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProofChecker")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl ProofChecker {
    pub(crate) fn new(options: DpopOptions) -> Self {
        Self {
            options,
            replay: Mutex::new(Replay::default()),
        }
    }

    pub(crate) fn options(&self) -> &DpopOptions {
        &self.options
    }

    /// Checks `proof` as RFC 9449 section 4.3 says, and that its key is the one the token is
    /// bound to. The error says what is wrong (for logs and `error_description`).
    pub(crate) fn check(
        &self,
        proof: &str,
        expected: &Expected<'_>,
        now: u64,
    ) -> Result<(), &'static str> {
        let mut segments = proof.split('.');
        let header_b64 = segments.next().ok_or("the proof is not a JWS")?;
        if segments.count() != 2 {
            return Err("the proof is not a compact JWS");
        }
        let header: Map<String, Value> = URL_SAFE_NO_PAD
            .decode(header_b64)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or("the proof header is not base64url JSON")?;
        if header.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
            return Err("the proof's typ is not dpop+jwt");
        }
        let alg_name = header
            .get("alg")
            .and_then(Value::as_str)
            .filter(|a| ALGS.contains(a))
            .ok_or("the proof's alg is not a supported asymmetric algorithm")?;
        let alg: Algorithm = alg_name
            .parse()
            .map_err(|_| "the proof's alg is not supported")?;
        let jwk_value = header
            .get("jwk")
            .and_then(Value::as_object)
            .ok_or("the proof has no jwk")?;
        if PRIVATE_MEMBERS.iter().any(|m| jwk_value.contains_key(*m)) {
            return Err("the proof's jwk is not a public key");
        }
        let thumbprint = thumbprint(jwk_value).ok_or("the proof's jwk is not a usable key")?;
        let jwk: Jwk = serde_json::from_value(Value::Object(jwk_value.clone()))
            .map_err(|_| "the proof's jwk is not a usable key")?;
        let key = DecodingKey::from_jwk(&jwk).map_err(|_| "the proof's jwk is not a usable key")?;
        let mut validation = Validation::new(alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_aud = false;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(proof, &key, &validation)
            .map_err(|_| "the proof's signature does not verify")?
            .claims;
        let claim = |name: &str| claims.get(name).and_then(Value::as_str);
        let jti = claim("jti")
            .filter(|j| !j.is_empty())
            .ok_or("the proof has no jti")?;
        if claim("htm") != Some(expected.method) {
            return Err("the proof's htm is not the request method");
        }
        let htu = claim("htu").ok_or("the proof has no htu")?;
        if normalize(htu).is_none() || normalize(htu) != normalize(expected.url) {
            return Err("the proof's htu is not the request URL");
        }
        let window = self.options.iat_window.as_secs();
        let iat = claims
            .get("iat")
            .and_then(Value::as_u64)
            .ok_or("the proof has no iat")?;
        if iat.abs_diff(now) > window {
            return Err("the proof's iat is outside the accepted window");
        }
        let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(expected.access_token.as_bytes()));
        if claim("ath") != Some(ath.as_str()) {
            return Err("the proof's ath is not the hash of the access token");
        }
        if thumbprint != expected.jkt {
            return Err("the proof's key is not the one the token is bound to");
        }
        self.remember(jti, iat.saturating_add(window), now)
    }

    /// Records `jti` until `until`; a second use within that time is a replay.
    fn remember(&self, jti: &str, until: u64, now: u64) -> Result<(), &'static str> {
        let mut replay = self.replay.lock().unwrap_or_else(PoisonError::into_inner);
        while replay.order.front().is_some_and(|(_, u)| *u < now) {
            if let Some((old, _)) = replay.order.pop_front() {
                replay.seen.remove(&old);
            }
        }
        if !replay.seen.insert(jti.to_owned()) {
            return Err("the proof was used before (jti replay)");
        }
        replay.order.push_back((jti.to_owned(), until));
        while replay.order.len() > self.options.max_replay_entries {
            if let Some((old, _)) = replay.order.pop_front() {
                replay.seen.remove(&old);
            }
        }
        Ok(())
    }
}

/// The RFC 7638 SHA-256 thumbprint of a public JWK: its required members in lexicographic
/// order, without whitespace.
pub(crate) fn thumbprint(jwk: &Map<String, Value>) -> Option<String> {
    let members: &[&str] = match jwk.get("kty")?.as_str()? {
        "EC" => &["crv", "kty", "x", "y"],
        "RSA" => &["e", "kty", "n"],
        "OKP" => &["crv", "kty", "x"],
        _ => return None,
    };
    let mut canonical = String::from("{");
    for (i, name) in members.iter().enumerate() {
        let value = jwk.get(*name)?.as_str()?;
        if i > 0 {
            canonical.push(',');
        }
        canonical.push_str(&Value::from(*name).to_string());
        canonical.push(':');
        canonical.push_str(&Value::from(value).to_string());
    }
    canonical.push('}');
    Some(URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes())))
}

/// A URL for comparison (RFC 9449 section 4.3, step 9): without query and fragment, scheme
/// and host lowercased, the default port dropped, an empty path as `/`.
fn normalize(url: &str) -> Option<String> {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let uri: http::Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = match (scheme.as_str(), uri.port_u16()) {
        ("http", Some(80)) | ("https", Some(443)) | (_, None) => String::new(),
        (_, Some(p)) => format!(":{p}"),
    };
    let path = match uri.path() {
        "" => "/",
        p => p,
    };
    Some(format!("{scheme}://{host}{port}{path}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_compare_after_normalisation() {
        assert_eq!(
            normalize("HTTPS://MCP.Example.com:443/mcp?x=1#f").as_deref(),
            Some("https://mcp.example.com/mcp")
        );
        assert_eq!(
            normalize("http://h:8080").as_deref(),
            Some("http://h:8080/")
        );
        assert_ne!(normalize("http://h/a"), normalize("http://h/A"));
        assert_eq!(normalize("/relative"), None);
    }

    #[test]
    fn thumbprint_of_the_rfc_7638_example() {
        // RFC 7638 section 3.1: the RSA key and its thumbprint.
        let jwk: Map<String, Value> = serde_json::from_str(
            r#"{"kty":"RSA","n":"0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw","e":"AQAB","alg":"RS256","kid":"2011-04-29"}"#,
        )
        .unwrap();
        assert_eq!(
            thumbprint(&jwk).as_deref(),
            Some("NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        );
        let oct: Map<String, Value> =
            serde_json::from_str(r#"{"kty":"oct","k":"c2VjcmV0"}"#).unwrap();
        assert_eq!(thumbprint(&oct), None);
    }

    #[test]
    fn replays_are_refused_and_the_cache_is_bounded() {
        let checker = ProofChecker::new(DpopOptions::default().max_replay_entries(2));
        assert!(checker.remember("a", 100, 10).is_ok());
        assert!(checker.remember("a", 100, 10).is_err());
        assert!(checker.remember("b", 100, 10).is_ok());
        assert!(checker.remember("c", 100, 10).is_ok());
        // "a" was the oldest and has been forgotten; "b" and "c" are still known.
        assert!(checker.remember("b", 100, 10).is_err());
        // Entries past their window are dropped as time goes on.
        assert!(checker.remember("d", 200, 150).is_ok());
        let replay = checker.replay.lock().unwrap();
        assert_eq!(replay.order.len(), 1);
    }
}
