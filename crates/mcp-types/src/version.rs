//! Protocol revisions.

use std::fmt;
use std::str::FromStr;

pub use crate::generated::version::ProtocolVersion;

/// How a revision manages a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// A session negotiated once with `initialize` (2024-11-05 ..= 2025-11-25).
    Session,
    /// Every request carries its own version and capabilities in `_meta` (2026-07-28).
    Stateless,
}

impl Era {
    /// Whether this is [`Era::Session`].
    pub const fn is_session(self) -> bool {
        matches!(self, Era::Session)
    }

    /// Whether this is [`Era::Stateless`].
    pub const fn is_stateless(self) -> bool {
        matches!(self, Era::Stateless)
    }
}

/// A protocol version string that is not a known revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UnsupportedProtocolVersion {
    /// The string that was requested.
    pub requested: String,
}

impl fmt::Display for UnsupportedProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unsupported protocol version {:?} (supported:",
            self.requested
        )?;
        for v in ProtocolVersion::ALL {
            write!(f, " {v}")?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnsupportedProtocolVersion {}

impl ProtocolVersion {
    /// The revision's position in [`ProtocolVersion::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether the revision negotiates a session with `initialize` ([`Era::Session`]).
    pub const fn is_session(self) -> bool {
        self.era().is_session()
    }

    /// Whether the revision carries version and capabilities per request
    /// ([`Era::Stateless`]).
    pub const fn is_stateless(self) -> bool {
        self.era().is_stateless()
    }

    /// Whether the revision is in a bit set of revisions (bit `i` = `ALL[i]`).
    #[doc(hidden)]
    pub const fn in_mask(self, mask: u32) -> bool {
        mask & (1 << self as u32) != 0
    }
}

impl FromStr for ProtocolVersion {
    type Err = UnsupportedProtocolVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::from_date(s).ok_or_else(|| UnsupportedProtocolVersion {
            requested: s.to_owned(),
        })
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for ProtocolVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ProtocolVersion".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let all: Vec<&str> = ProtocolVersion::ALL.iter().map(|v| v.as_str()).collect();
        schemars::json_schema!({ "type": "string", "enum": all })
    }
}
