//! Client credentials: secrets and `private_key_jwt` assertions (RFC 7523).

use std::fmt;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use crate::error::AuthError;

/// The JWS algorithms supported for client assertions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// ECDSA with P-256 and SHA-256.
    Es256,
    /// ECDSA with P-384 and SHA-384.
    Es384,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PSS with SHA-256.
    Ps256,
    /// Ed25519.
    EdDsa,
}

impl SigningAlgorithm {
    /// Parses a JWS `alg` name (`ES256`, `ES384`, `RS256`, `PS256`, `EdDSA`).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ES256" => Self::Es256,
            "ES384" => Self::Es384,
            "RS256" => Self::Rs256,
            "PS256" => Self::Ps256,
            "EdDSA" => Self::EdDsa,
            _ => return None,
        })
    }

    fn jwt(self) -> Algorithm {
        match self {
            Self::Es256 => Algorithm::ES256,
            Self::Es384 => Algorithm::ES384,
            Self::Rs256 => Algorithm::RS256,
            Self::Ps256 => Algorithm::PS256,
            Self::EdDsa => Algorithm::EdDSA,
        }
    }
}

/// A private key for `private_key_jwt` client authentication.
#[derive(Clone)]
pub struct PrivateKeyJwt {
    key: EncodingKey,
    alg: SigningAlgorithm,
    kid: Option<String>,
}

impl fmt::Debug for PrivateKeyJwt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrivateKeyJwt")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct AssertionClaims<'a> {
    iss: &'a str,
    sub: &'a str,
    aud: &'a str,
    iat: u64,
    exp: u64,
    jti: &'a str,
}

impl PrivateKeyJwt {
    /// Loads a PEM private key (PKCS#8 for EC and Ed25519, PKCS#1 or PKCS#8 for RSA).
    ///
    /// ```
    /// # let pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgKYlD67QePC3AAnQ6\nI4bSnkbHaulx5kqE555rxZXzlImhRANCAARejnuDoiv90VZ2W1TFFtN4aksqdM0s\nvriFzaNc22eLlk6df3BS1dpieAk/x0XXLKFeuAdz/DNgQ4sGiI9aTInp\n-----END PRIVATE KEY-----\n";
    /// use mcp_auth::{PrivateKeyJwt, SigningAlgorithm};
    /// let key = PrivateKeyJwt::from_pem(pem.as_bytes(), SigningAlgorithm::Es256)?;
    /// # Ok::<(), mcp_auth::AuthError>(())
    /// ```
    pub fn from_pem(pem: &[u8], alg: SigningAlgorithm) -> Result<Self, AuthError> {
        let key = match alg {
            SigningAlgorithm::Es256 | SigningAlgorithm::Es384 => EncodingKey::from_ec_pem(pem),
            SigningAlgorithm::Rs256 | SigningAlgorithm::Ps256 => EncodingKey::from_rsa_pem(pem),
            SigningAlgorithm::EdDsa => EncodingKey::from_ed_pem(pem),
        }
        .map_err(|e| AuthError::Key(e.to_string()))?;
        Ok(Self {
            key,
            alg,
            kid: None,
        })
    }

    /// Sets the `kid` header of the assertions.
    pub fn with_key_id(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }

    /// The signing algorithm.
    pub fn algorithm(&self) -> SigningAlgorithm {
        self.alg
    }

    /// Signs an assertion: `iss` = `sub` = `client_id`, `aud` = `audience` (the issuer),
    /// valid for five minutes, with a random `jti`.
    pub(crate) fn assertion(&self, client_id: &str, audience: &str) -> Result<String, AuthError> {
        let now = crate::store::now_secs();
        let jti = crate::pkce::random_string(32).map_err(|e| AuthError::Key(e.to_string()))?;
        let mut header = Header::new(self.alg.jwt());
        header.kid.clone_from(&self.kid);
        let claims = AssertionClaims {
            iss: client_id,
            sub: client_id,
            aud: audience,
            iat: now,
            exp: now + 300,
            jti: &jti,
        };
        jsonwebtoken::encode(&header, &claims, &self.key).map_err(|e| AuthError::Key(e.to_string()))
    }
}

/// How a client authenticates at the token endpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum ClientAuth {
    /// A public client: no authentication (`none`).
    None,
    /// A client secret, sent with `client_secret_basic` or `client_secret_post`, whichever
    /// the authorization server supports (basic preferred).
    Secret(String),
    /// A signed assertion (`private_key_jwt`).
    PrivateKeyJwt(PrivateKeyJwt),
}

/// A client identifier with its authentication: pre-registered credentials for the
/// authorization code flow, or the credentials of the client credentials grant.
///
/// ```
/// let creds = mcp_auth::ClientCredentials::with_secret("my-client", "s3cret");
/// assert_eq!(creds.client_id(), "my-client");
/// ```
#[derive(Clone)]
pub struct ClientCredentials {
    pub(crate) client_id: String,
    pub(crate) auth: ClientAuth,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let auth = match &self.auth {
            ClientAuth::None => "none",
            ClientAuth::Secret(_) => "secret",
            ClientAuth::PrivateKeyJwt(_) => "private_key_jwt",
        };
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("auth", &auth)
            .finish()
    }
}

impl ClientCredentials {
    /// A public client (no secret).
    pub fn public(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            auth: ClientAuth::None,
        }
    }

    /// A confidential client with a secret.
    pub fn with_secret(client_id: impl Into<String>, secret: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            auth: ClientAuth::Secret(secret.into()),
        }
    }

    /// A client that authenticates with signed assertions.
    pub fn with_private_key(client_id: impl Into<String>, key: PrivateKeyJwt) -> Self {
        Self {
            client_id: client_id.into(),
            auth: ClientAuth::PrivateKeyJwt(key),
        }
    }

    /// The client identifier.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// How the client authenticates.
    pub fn auth(&self) -> &ClientAuth {
        &self.auth
    }
}
