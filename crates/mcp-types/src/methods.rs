//! Every method of every revision: marker types in the style of `lsp-types` and a runtime
//! table for routing.
//!
//! ```
//! use mcp_types::ProtocolVersion;
//! use mcp_types::methods::{self, Request, Sender};
//!
//! assert_eq!(methods::CallTool::METHOD, "tools/call");
//! let info = methods::lookup("tools/call").unwrap();
//! assert_eq!(info.sender, Sender::Client);
//! assert!(info.available_in(ProtocolVersion::V2024_11_05));
//! // `server/discover` only exists in the stateless era.
//! assert!(!methods::lookup("server/discover").unwrap().available_in(ProtocolVersion::V2025_06_18));
//! ```

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

use crate::ProtocolVersion;

pub use crate::generated::methods::*;

/// Which side of a connection sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sender {
    /// Only the client.
    Client,
    /// Only the server.
    Server,
    /// Either side (`ping`, `notifications/cancelled`, `notifications/progress`).
    Both,
}

impl Sender {
    /// Whether a client may send the method.
    pub const fn client(self) -> bool {
        matches!(self, Sender::Client | Sender::Both)
    }
    /// Whether a server may send the method.
    pub const fn server(self) -> bool {
        matches!(self, Sender::Server | Sender::Both)
    }
}

/// Whether a method expects a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MethodKind {
    /// A request: answered with a result or an error.
    Request,
    /// A notification: never answered.
    Notification,
}

/// A request method: its name, params and result types in the model.
pub trait Request {
    /// The method name on the wire.
    const METHOD: &'static str;
    /// The type of the request's `params`.
    type Params;
    /// The type of the response's `result`.
    type Result;
    /// Which side sends the request.
    const SENDER: Sender;
    /// The revisions that define the method.
    const REVISIONS: &'static [ProtocolVersion];
}

/// A notification method: its name and params type in the model.
pub trait Notification {
    /// The method name on the wire.
    const METHOD: &'static str;
    /// The type of the notification's `params`.
    type Params;
    /// Which side sends the notification.
    const SENDER: Sender;
    /// The revisions that define the method.
    const REVISIONS: &'static [ProtocolVersion];
}

/// One method of the protocol, as the runtime table knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MethodInfo {
    /// The method name on the wire.
    pub name: &'static str,
    /// Request or notification.
    pub kind: MethodKind,
    /// Which side sends it.
    pub sender: Sender,
    /// The revisions that define it, oldest first.
    pub revisions: &'static [ProtocolVersion],
    /// Whether the newest revision that defines it requires `params`.
    pub params_required: bool,
    /// The model type of its params.
    pub params_type: &'static str,
    /// The model type of its result (requests only).
    pub result_type: Option<&'static str>,
    /// The name of its marker type in this module.
    pub marker: &'static str,
}

impl MethodInfo {
    /// Whether `rev` defines this method.
    pub fn available_in(&self, rev: ProtocolVersion) -> bool {
        self.revisions.contains(&rev)
    }
}

/// The method called `name`, if any revision defines it.
///
/// Every request is looked up (routing, and telling the eras apart), so this is a hash
/// table built on first use rather than a binary search over the names.
pub fn lookup(name: &str) -> Option<&'static MethodInfo> {
    static TABLE: OnceLock<HashMap<&'static str, &'static MethodInfo, BuildNameHasher>> =
        OnceLock::new();
    TABLE
        .get_or_init(|| METHODS.iter().map(|m| (m.name, m)).collect())
        .get(name)
        .copied()
}

/// Hashes method names with FNV-1a: names are short, and the table is fixed and small, so
/// names made to collide cost at most a walk over it.
#[derive(Default, Clone, Copy)]
struct BuildNameHasher;

impl BuildHasher for BuildNameHasher {
    type Hasher = NameHasher;

    fn build_hasher(&self) -> NameHasher {
        NameHasher(0xcbf2_9ce4_8422_2325)
    }
}

struct NameHasher(u64);

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Every method of every revision, sorted by name.
pub fn all() -> &'static [MethodInfo] {
    METHODS
}

/// The methods `rev` defines; a method outside this set gets `-32601` (method not found).
pub fn for_revision(rev: ProtocolVersion) -> impl Iterator<Item = &'static MethodInfo> {
    METHODS.iter().filter(move |m| m.available_in(rev))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_finds_every_method_and_nothing_else() {
        for m in all() {
            assert_eq!(lookup(m.name), Some(m), "{}", m.name);
        }
        assert!(all().windows(2).all(|w| w[0].name < w[1].name), "sorted");
        for name in [
            "",
            "tools/cal",
            "tools/calls",
            "Tools/call",
            "tools/call\0",
            "x",
        ] {
            assert_eq!(lookup(name), None, "{name:?}");
        }
    }
}
