//! The revision rules every layer applies the same way: which revisions each era has, which
//! era a request belongs to, which revision two peers settle on, and what a revision allows on
//! the wire (batches).
//!
//! ```
//! use mcp_types::wire::{self, EraEvidence};
//! use mcp_types::{Era, ProtocolVersion};
//!
//! assert_eq!(wire::latest_session_version(), ProtocolVersion::V2025_11_25);
//! assert_eq!(wire::era_of_version("2025-06-18"), Era::Session);
//! // A version this SDK does not know is taken for a later, stateless one.
//! assert_eq!(wire::era_of_version("2099-01-01"), Era::Stateless);
//!
//! let header = EraEvidence { version_header: Some("2026-07-28"), ..EraEvidence::default() };
//! assert_eq!(wire::classify(&header), Era::Stateless);
//!
//! assert!(wire::batches_allowed(ProtocolVersion::V2025_03_26));
//! assert!(!wire::batches_allowed_in("2025-11-25"));
//!
//! let range = ProtocolVersion::V2024_11_05..=ProtocolVersion::LATEST;
//! assert_eq!(
//!     wire::best_mutual(["2025-06-18", "2025-03-26", "bogus"], &range),
//!     Some(ProtocolVersion::V2025_06_18)
//! );
//! ```

use std::ops::RangeInclusive;
use std::sync::LazyLock;

use super::stateless_only;
use crate::{Era, Feature, ProtocolVersion};

fn of_era(era: Era) -> Vec<ProtocolVersion> {
    ProtocolVersion::ALL
        .iter()
        .copied()
        .filter(|v| v.era() == era)
        .collect()
}

/// The revisions negotiated once with `initialize`, oldest first.
pub fn session_versions() -> &'static [ProtocolVersion] {
    static VERSIONS: LazyLock<Vec<ProtocolVersion>> = LazyLock::new(|| of_era(Era::Session));
    &VERSIONS
}

/// The revisions that carry version and capabilities per request, oldest first (listed once,
/// not per request: a stateless request's `_meta` is lifted against them).
pub fn stateless_versions() -> &'static [ProtocolVersion] {
    static VERSIONS: LazyLock<Vec<ProtocolVersion>> = LazyLock::new(|| of_era(Era::Stateless));
    &VERSIONS
}

/// The newest revision negotiated with `initialize`: the one a client asks for when it falls
/// back from `server/discover`, and the one a server answers an `initialize` for a revision it
/// does not know with.
pub const fn latest_session_version() -> ProtocolVersion {
    let all = ProtocolVersion::ALL;
    let mut i = all.len();
    while i > 0 {
        i -= 1;
        if all[i].is_session() {
            return all[i];
        }
    }
    // The oldest revision negotiates a session: never reached.
    all[0]
}

/// The revision an HTTP server assumes for session traffic without an `MCP-Protocol-Version`
/// header (the header is required from 2025-06-18 on; before it there was none).
pub const HTTP_VERSION_WITHOUT_HEADER: ProtocolVersion = ProtocolVersion::V2025_03_26;

/// The era of a protocol version string, as sent in `MCP-Protocol-Version` or in
/// `_meta["io.modelcontextprotocol/protocolVersion"]`: [`Era::Session`] for a known session
/// revision, [`Era::Stateless`] for anything else (a known stateless revision, or one this SDK
/// does not know, which is newer than every session revision or not a revision at all; the
/// stateless checks then refuse it with `-32022`).
pub fn era_of_version(version: &str) -> Era {
    match ProtocolVersion::from_date(version) {
        Some(v) if v.is_session() => Era::Session,
        _ => Era::Stateless,
    }
}

/// What a message shows of its era, as the caller read it (a transport from its headers and
/// body, a server from the `_meta` alone). [`classify`] decides from it; a field left at its
/// default is "not seen".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EraEvidence<'a> {
    /// The `MCP-Protocol-Version` header, when there is one (HTTP only).
    pub version_header: Option<&'a str>,
    /// The method of a request.
    pub method: Option<&'a str>,
    /// Whether the request's `_meta` carries
    /// [`io.modelcontextprotocol/protocolVersion`](super::META_PROTOCOL_VERSION).
    pub meta_version: bool,
    /// Whether the request's `_meta` carries
    /// [`io.modelcontextprotocol/clientCapabilities`](super::META_CLIENT_CAPABILITIES).
    pub meta_capabilities: bool,
}

/// The era a message belongs to: [`Era::Stateless`] when its version header names anything
/// but a session revision ([`era_of_version`]), when its method exists only in stateless
/// revisions (`server/discover`, `subscriptions/listen`), or when its `_meta` carries the
/// per-request protocol version or client capabilities; [`Era::Session`] otherwise
/// (`initialize`, or traffic on a session it opened). A malformed stateless envelope is still
/// stateless, so that the stateless checks answer it with the right error.
pub fn classify(evidence: &EraEvidence<'_>) -> Era {
    let stateless = evidence
        .version_header
        .is_some_and(|v| era_of_version(v) == Era::Stateless)
        || evidence.method.is_some_and(stateless_only)
        || evidence.meta_version
        || evidence.meta_capabilities;
    if stateless {
        Era::Stateless
    } else {
        Era::Session
    }
}

/// The revision a server answers `initialize` with: the one the client asked for when it is a
/// session revision, else [`latest_session_version`].
pub fn negotiate_session(requested: &str) -> ProtocolVersion {
    ProtocolVersion::from_date(requested)
        .filter(|v| v.is_session())
        .unwrap_or(latest_session_version())
}

/// The newest of the `offered` version strings that is a known revision within `range` (the
/// revisions a peer is configured to speak); unknown strings are skipped.
pub fn best_mutual<I, S>(
    offered: I,
    range: &RangeInclusive<ProtocolVersion>,
) -> Option<ProtocolVersion>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    offered
        .into_iter()
        .filter_map(|v| ProtocolVersion::from_date(v.as_ref()))
        .filter(|v| range.contains(v))
        .max()
}

/// The newest session revision within `range`.
pub fn newest_session_in(range: &RangeInclusive<ProtocolVersion>) -> Option<ProtocolVersion> {
    newest_of(session_versions(), range)
}

/// The newest stateless revision within `range`.
pub fn newest_stateless_in(range: &RangeInclusive<ProtocolVersion>) -> Option<ProtocolVersion> {
    newest_of(stateless_versions(), range)
}

fn newest_of(
    versions: &[ProtocolVersion],
    range: &RangeInclusive<ProtocolVersion>,
) -> Option<ProtocolVersion> {
    versions.iter().rev().copied().find(|v| range.contains(v))
}

/// Whether a session at `rev` takes JSON-RPC batches ([`Feature::Batches`]: 2025-03-26 only).
/// Elsewhere a batch is refused with `-32600` (on HTTP with status 400).
pub const fn batches_allowed(rev: ProtocolVersion) -> bool {
    rev.has(Feature::Batches)
}

/// [`batches_allowed`] for a revision named by its date string; `false` for an unknown one.
pub fn batches_allowed_in(revision: &str) -> bool {
    ProtocolVersion::from_date(revision).is_some_and(batches_allowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ProtocolVersion as V;

    #[test]
    fn eras_partition_the_revisions() {
        assert_eq!(
            session_versions(),
            [
                V::V2024_11_05,
                V::V2025_03_26,
                V::V2025_06_18,
                V::V2025_11_25
            ]
        );
        assert_eq!(stateless_versions(), [V::V2026_07_28]);
        assert_eq!(
            session_versions().len() + stateless_versions().len(),
            V::ALL.len()
        );
        assert_eq!(latest_session_version(), V::V2025_11_25);
        assert_eq!(
            latest_session_version(),
            *session_versions().last().unwrap()
        );
    }

    #[test]
    fn version_strings() {
        for v in V::ALL {
            assert_eq!(era_of_version(v.as_str()), v.era(), "{v}");
        }
        assert_eq!(era_of_version("v999.0.0"), Era::Stateless);
        assert_eq!(era_of_version(""), Era::Stateless);
    }

    #[test]
    fn classification() {
        let none = EraEvidence::default();
        assert_eq!(classify(&none), Era::Session);
        let with = |f: fn(&mut EraEvidence<'static>)| {
            let mut e = EraEvidence::default();
            f(&mut e);
            classify(&e)
        };
        assert_eq!(
            with(|e| e.version_header = Some("2025-11-25")),
            Era::Session
        );
        assert_eq!(
            with(|e| e.version_header = Some("2026-07-28")),
            Era::Stateless
        );
        assert_eq!(with(|e| e.version_header = Some("v999")), Era::Stateless);
        assert_eq!(with(|e| e.method = Some("server/discover")), Era::Stateless);
        assert_eq!(with(|e| e.method = Some("tools/call")), Era::Session);
        assert_eq!(with(|e| e.meta_version = true), Era::Stateless);
        assert_eq!(with(|e| e.meta_capabilities = true), Era::Stateless);
    }

    #[test]
    fn negotiation() {
        assert_eq!(negotiate_session("2025-03-26"), V::V2025_03_26);
        assert_eq!(negotiate_session("2026-07-28"), V::V2025_11_25);
        assert_eq!(negotiate_session("1999-01-01"), V::V2025_11_25);
        let all = V::V2024_11_05..=V::LATEST;
        let old = V::V2024_11_05..=V::V2025_03_26;
        assert_eq!(
            best_mutual(["2026-07-28", "2025-11-25"], &all),
            Some(V::V2026_07_28)
        );
        assert_eq!(best_mutual(["2026-07-28", "2025-11-25"], &old), None);
        assert_eq!(best_mutual(Vec::<String>::new(), &all), None);
        assert_eq!(newest_session_in(&all), Some(V::V2025_11_25));
        assert_eq!(newest_session_in(&old), Some(V::V2025_03_26));
        assert_eq!(newest_stateless_in(&all), Some(V::V2026_07_28));
        assert_eq!(newest_stateless_in(&old), None);
    }

    #[test]
    fn batches() {
        let allowed: Vec<V> = V::ALL
            .iter()
            .copied()
            .filter(|v| batches_allowed(*v))
            .collect();
        assert_eq!(allowed, [V::V2025_03_26]);
        assert!(batches_allowed_in("2025-03-26"));
        assert!(!batches_allowed_in("2025-06-18"));
        assert!(!batches_allowed_in("2024-11-05"));
        assert!(!batches_allowed_in("bogus"));
        assert!(batches_allowed(HTTP_VERSION_WITHOUT_HEADER));
    }
}
