//! Where the OAuth client keeps its registrations and tokens.
//!
//! Everything is keyed by the authorization server's **issuer**: credentials obtained from
//! one authorization server are never presented to another. Within an issuer, tokens are
//! keyed by the protected resource they were issued for.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::http::BoxFuture;

/// A client registration obtained by dynamic client registration at one issuer.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ClientRegistration {
    /// The client identifier.
    pub client_id: String,
    /// The client secret, for confidential clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The token endpoint authentication method the server assigned (or the client asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// When the secret expires (seconds since the Unix epoch); `None` or `0` means never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_expires_at: Option<u64>,
}

impl ClientRegistration {
    /// A registration with only a client id.
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            client_secret_expires_at: None,
        }
    }

    /// Whether the secret has expired at `now` (seconds since the Unix epoch).
    pub(crate) fn expired(&self, now: u64) -> bool {
        matches!(self.client_secret_expires_at, Some(t) if t != 0 && t <= now)
    }
}

impl fmt::Debug for ClientRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientRegistration")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("client_secret_expires_at", &self.client_secret_expires_at)
            .finish()
    }
}

/// Tokens issued for one protected resource.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TokenSet {
    /// The access token.
    pub access_token: String,
    /// The refresh token, if one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (or, if the server did not say, requested).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// For a DPoP-bound token (`token_type` `DPoP`), the thumbprint of the key it is bound
    /// to ([`DpopKey::thumbprint`](crate::DpopKey::thumbprint)); `None` for a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_jkt: Option<String>,
}

impl TokenSet {
    /// A token set with only an access token.
    pub fn new(access_token: impl Into<String>) -> Self {
        Self {
            access_token: access_token.into(),
            refresh_token: None,
            expires_at: None,
            scopes: Vec::new(),
            dpop_jkt: None,
        }
    }

    /// Whether the access token expires within `skew_secs` of `now`.
    pub(crate) fn expires_within(&self, now: u64, skew_secs: u64) -> bool {
        matches!(self.expires_at, Some(t) if t <= now.saturating_add(skew_secs))
    }
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .field("dpop_jkt", &self.dpop_jkt)
            .finish()
    }
}

/// Everything stored for one issuer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StoredCredentials {
    /// The dynamically registered client, if any. Pre-registered and metadata-document
    /// clients are configuration, not stored state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRegistration>,
    /// Tokens by protected resource identifier (the metadata's `resource`, verbatim).
    #[serde(default)]
    pub tokens: BTreeMap<String, TokenSet>,
}

/// Persistent storage of OAuth credentials, keyed by issuer.
///
/// The [`OAuthClient`](crate::OAuthClient) serialises its own accesses, so an implementation
/// only needs to be safe to call from several tasks.
pub trait TokenStore: Send + Sync {
    /// Loads what is stored for `issuer`.
    fn load<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, StoreError>>;
    /// Replaces what is stored for `issuer`.
    fn save<'a>(
        &'a self,
        issuer: &'a str,
        credentials: &'a StoredCredentials,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    /// Forgets everything stored for `issuer`.
    fn remove<'a>(&'a self, issuer: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// An in-memory [`TokenStore`], the default. It holds at most `max_issuers` issuers and
/// forgets an arbitrary one when full.
#[derive(Debug)]
pub struct MemoryTokenStore {
    map: Mutex<HashMap<String, StoredCredentials>>,
    max_issuers: usize,
}

impl Default for MemoryTokenStore {
    fn default() -> Self {
        Self::new(64)
    }
}

impl MemoryTokenStore {
    /// A store for at most `max_issuers` issuers (at least one).
    pub fn new(max_issuers: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            max_issuers: max_issuers.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, StoredCredentials>> {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl TokenStore for MemoryTokenStore {
    fn load<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, StoreError>> {
        let found = self.lock().get(issuer).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn save<'a>(
        &'a self,
        issuer: &'a str,
        credentials: &'a StoredCredentials,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let mut map = self.lock();
        if !map.contains_key(issuer) && map.len() >= self.max_issuers {
            if let Some(victim) = map.keys().next().cloned() {
                map.remove(&victim);
            }
        }
        map.insert(issuer.to_owned(), credentials.clone());
        Box::pin(async { Ok(()) })
    }

    fn remove<'a>(&'a self, issuer: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.lock().remove(issuer);
        Box::pin(async { Ok(()) })
    }
}

/// A [`TokenStore`] in one JSON file, written atomically (temporary file, then rename) and,
/// on Unix, readable by the owner only.
///
/// ```no_run
/// let store = mcp_auth::FileTokenStore::new("/home/me/.config/my-app/mcp-tokens.json");
/// ```
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    max_file_bytes: u64,
    lock: tokio::sync::Mutex<()>,
}

impl FileTokenStore {
    /// A store in the file at `path` (created on first save), at most 1 MiB large.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_file_bytes: 1024 * 1024,
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Sets the largest file the store reads or writes.
    pub fn max_file_bytes(mut self, bytes: u64) -> Self {
        self.max_file_bytes = bytes;
        self
    }

    async fn read_all(&self) -> Result<BTreeMap<String, StoredCredentials>, StoreError> {
        let meta = match tokio::fs::metadata(&self.path).await {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(e) => return Err(e.into()),
        };
        if meta.len() > self.max_file_bytes {
            return Err(StoreError::TooLarge {
                limit: self.max_file_bytes,
            });
        }
        let bytes = tokio::fs::read(&self.path).await?;
        if bytes.len() as u64 > self.max_file_bytes {
            return Err(StoreError::TooLarge {
                limit: self.max_file_bytes,
            });
        }
        Ok(serde_json::from_slice(&bytes)?)
    }

    async fn write_all(&self, all: &BTreeMap<String, StoredCredentials>) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(all)?;
        if bytes.len() as u64 > self.max_file_bytes {
            return Err(StoreError::TooLarge {
                limit: self.max_file_bytes,
            });
        }
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir).await?;
        }
        let mut tmp = self.path.clone().into_os_string();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let mut options = tokio::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        options.mode(0o600);
        {
            use tokio::io::AsyncWriteExt as _;
            let mut file = options.open(&tmp).await?;
            file.write_all(&bytes).await?;
            file.sync_all().await?;
        }
        tokio::fs::rename(&tmp, &self.path).await?;
        Ok(())
    }
}

impl TokenStore for FileTokenStore {
    fn load<'a>(
        &'a self,
        issuer: &'a str,
    ) -> BoxFuture<'a, Result<Option<StoredCredentials>, StoreError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            Ok(self.read_all().await?.remove(issuer))
        })
    }

    fn save<'a>(
        &'a self,
        issuer: &'a str,
        credentials: &'a StoredCredentials,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let mut all = self.read_all().await?;
            all.insert(issuer.to_owned(), credentials.clone());
            self.write_all(&all).await
        })
    }

    fn remove<'a>(&'a self, issuer: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let _guard = self.lock.lock().await;
            let mut all = self.read_all().await?;
            if all.remove(issuer).is_some() {
                self.write_all(&all).await?;
            }
            Ok(())
        })
    }
}

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StoredCredentials {
        let mut c = StoredCredentials {
            client: Some(ClientRegistration::new("id")),
            ..Default::default()
        };
        let mut t = TokenSet::new("at");
        t.refresh_token = Some("rt".into());
        t.expires_at = Some(100);
        c.tokens.insert("https://r/mcp".into(), t);
        c
    }

    #[tokio::test]
    async fn memory_store_round_trip_and_bound() {
        let store = MemoryTokenStore::new(1);
        store.save("a", &sample()).await.unwrap();
        assert_eq!(store.load("a").await.unwrap(), Some(sample()));
        store.save("b", &sample()).await.unwrap();
        assert_eq!(store.load("a").await.unwrap(), None);
        store.remove("b").await.unwrap();
        assert_eq!(store.load("b").await.unwrap(), None);
    }

    #[tokio::test]
    async fn file_store_round_trip() {
        let dir = std::env::temp_dir().join(format!(
            "mcp-auth-store-{}-{}",
            std::process::id(),
            crate::pkce::random_string(8).unwrap()
        ));
        let path = dir.join("tokens.json");
        let store = FileTokenStore::new(&path);
        assert_eq!(store.load("a").await.unwrap(), None);
        store.save("a", &sample()).await.unwrap();
        store
            .save("b", &StoredCredentials::default())
            .await
            .unwrap();
        let again = FileTokenStore::new(&path);
        assert_eq!(again.load("a").await.unwrap(), Some(sample()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0);
        }
        again.remove("a").await.unwrap();
        assert_eq!(again.load("a").await.unwrap(), None);
        assert!(again.load("b").await.unwrap().is_some());
        let tiny = FileTokenStore::new(&path).max_file_bytes(4);
        assert!(matches!(
            tiny.load("b").await,
            Err(StoreError::TooLarge { .. })
        ));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn debug_redacts_secrets() {
        let s = format!("{:?}", sample());
        assert!(!s.contains("\"at\"") && !s.contains("\"rt\""));
        let mut r = ClientRegistration::new("id");
        r.client_secret = Some("hunter2".into());
        assert!(!format!("{r:?}").contains("hunter2"));
    }
}
