//! The optional response cache of a session: list results and `server/discover`, kept for as
//! long as their `ttlMs` allows.
//!
//! The cache belongs to one session and is never shared: a session is one authorization
//! context, so results the server marks `cacheScope: "private"` may be reused within it, and
//! `"public"` ones are held the same way.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use mcp_types::CacheScope;
use serde::Deserialize;
use tokio::time::Instant;

/// The methods whose results the cache keeps.
pub(crate) const CACHED_METHODS: [&str; 5] = [
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
];

/// The longest time an entry is kept, whatever its `ttlMs` says (a day).
const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

type Key = (&'static str, Option<String>);

struct Entry {
    text: String,
    expires: Instant,
    scope: CacheScope,
}

/// Cached results, bounded by a number of entries.
pub(crate) struct ResponseCache {
    max_entries: usize,
    entries: Mutex<HashMap<Key, Entry>>,
}

#[derive(Deserialize)]
struct Hints {
    #[serde(rename = "ttlMs", default)]
    ttl_ms: Option<i64>,
    #[serde(rename = "cacheScope", default)]
    cache_scope: Option<CacheScope>,
}

impl ResponseCache {
    pub(crate) fn new(max_entries: usize) -> Self {
        Self {
            max_entries,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn entries(&self) -> MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached result text of `method` at `cursor`, if still fresh.
    pub(crate) fn get(&self, method: &'static str, cursor: Option<&str>) -> Option<String> {
        let key = (method, cursor.map(str::to_owned));
        let mut entries = self.entries();
        match entries.get(&key) {
            Some(entry) if entry.expires > Instant::now() => {
                tracing::trace!(
                    method,
                    scope = entry.scope.as_str(),
                    "answered from the cache"
                );
                Some(entry.text.clone())
            }
            Some(_) => {
                entries.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Keeps a result when its `ttlMs` is positive. Returns whether it was kept.
    pub(crate) fn put(&self, method: &'static str, cursor: Option<&str>, text: &str) -> bool {
        if self.max_entries == 0 || !CACHED_METHODS.contains(&method) {
            return false;
        }
        let Ok(hints) = serde_json::from_str::<Hints>(text) else {
            return false;
        };
        let ttl = match hints.ttl_ms {
            Some(ms) if ms > 0 => Duration::from_millis(ms.unsigned_abs()).min(MAX_TTL),
            _ => return false,
        };
        let now = Instant::now();
        let mut entries = self.entries();
        let key = (method, cursor.map(str::to_owned));
        if !entries.contains_key(&key) && entries.len() >= self.max_entries {
            entries.retain(|_, entry| entry.expires > now);
            if entries.len() >= self.max_entries {
                // Make room by dropping the entry that would expire first.
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.expires)
                    .map(|(key, _)| key.clone());
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(
            key,
            Entry {
                text: text.to_owned(),
                expires: now + ttl,
                scope: hints.cache_scope.unwrap_or(CacheScope::Private),
            },
        );
        true
    }

    /// Drops every entry of `method`.
    pub(crate) fn invalidate(&self, method: &str) {
        self.entries().retain(|(m, _), _| *m != method);
    }

    /// Drops everything.
    pub(crate) fn clear(&self) {
        self.entries().clear();
    }

    /// Drops the entries a change notification makes stale.
    pub(crate) fn invalidate_for(&self, notification: &str) {
        match notification {
            "notifications/tools/list_changed" => self.invalidate("tools/list"),
            "notifications/prompts/list_changed" => self.invalidate("prompts/list"),
            "notifications/resources/list_changed" => {
                self.invalidate("resources/list");
                self.invalidate("resources/templates/list");
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn keeps_entries_for_their_ttl_and_within_bounds() {
        let cache = ResponseCache::new(2);
        assert!(
            !cache.put("tools/list", None, r#"{"tools": []}"#),
            "no ttl, no entry"
        );
        assert!(!cache.put("tools/list", None, r#"{"tools": [], "ttlMs": 0}"#));
        assert!(
            !cache.put("tools/call", None, r#"{"ttlMs": 5000}"#),
            "not a cached method"
        );
        assert!(cache.put(
            "tools/list",
            None,
            r#"{"tools": [], "ttlMs": 1000, "cacheScope": "public"}"#
        ));
        assert!(cache.get("tools/list", None).is_some());
        assert!(cache.get("tools/list", Some("c")).is_none());
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert!(cache.get("tools/list", None).is_none(), "expired");

        assert!(cache.put("tools/list", None, r#"{"ttlMs": 10000}"#));
        assert!(cache.put("prompts/list", None, r#"{"ttlMs": 5000}"#));
        assert!(cache.put("resources/list", None, r#"{"ttlMs": 20000}"#));
        assert!(
            cache.get("prompts/list", None).is_none(),
            "the soonest to expire made room"
        );
        assert!(cache.get("tools/list", None).is_some());
        cache.invalidate_for("notifications/tools/list_changed");
        assert!(cache.get("tools/list", None).is_none());
        assert!(cache.get("resources/list", None).is_some());
        cache.invalidate_for("notifications/resources/list_changed");
        assert!(cache.get("resources/list", None).is_none());
    }
}
