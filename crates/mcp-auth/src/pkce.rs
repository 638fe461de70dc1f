//! PKCE (RFC 7636) with `S256`, and random `state` values.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

const UNRESERVED: &[u8; 66] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~";

/// A random string of `len` characters from the URL-unreserved set, from the OS generator.
pub(crate) fn random_string(len: usize) -> Result<String, getrandom::Error> {
    let mut out = String::with_capacity(len);
    let mut buf = [0u8; 64];
    while out.len() < len {
        getrandom::fill(&mut buf)?;
        // Rejection sampling: 198 = 3 * 66 keeps the choice uniform.
        for b in buf.iter().copied().filter(|b| *b < 198) {
            if out.len() == len {
                break;
            }
            out.push(char::from(UNRESERVED[usize::from(b % 66)]));
        }
    }
    Ok(out)
}

/// A PKCE verifier and its `S256` challenge.
#[derive(Clone)]
pub(crate) struct Pkce {
    pub(crate) verifier: String,
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh 64-character verifier (RFC 7636 allows 43 to 128).
    pub(crate) fn generate() -> Result<Self, getrandom::Error> {
        let verifier = random_string(64)?;
        let challenge = s256(&verifier);
        Ok(Self {
            verifier,
            challenge,
        })
    }
}

/// `BASE64URL-NOPAD(SHA256(verifier))`.
pub(crate) fn s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_matches_an_independent_implementation() {
        assert_eq!(
            s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r-wW1gFWFOEjXk"),
            // Computed with Python: urlsafe_b64encode(sha256(v).digest()).rstrip("=")
            "NPsYzawS-__wqk67X9gyb4dr3JBo3hnlEi5MNyD5jX0"
        );
    }

    #[test]
    fn verifiers_are_unreserved_and_distinct() {
        let a = Pkce::generate().unwrap();
        let b = Pkce::generate().unwrap();
        assert_eq!(a.verifier.len(), 64);
        assert!(a.verifier.bytes().all(|c| UNRESERVED.contains(&c)));
        assert_ne!(a.verifier, b.verifier);
        assert_eq!(a.challenge, s256(&a.verifier));
        assert_eq!(random_string(128).unwrap().len(), 128);
    }
}
