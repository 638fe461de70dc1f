//! Request identifiers.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// A JSON-RPC request id as MCP restricts it: a string or an integer, never `null` and never a
/// fraction.
///
/// MCP uses the same shape for progress tokens, so [`Id`] doubles as a progress token type.
///
/// ```
/// use mcp_jsonrpc::Id;
///
/// let id: Id = serde_json::from_str("7").unwrap();
/// assert_eq!(id, Id::Number(7));
/// let id: Id = serde_json::from_str("\"abc\"").unwrap();
/// assert_eq!(id, Id::from("abc"));
/// assert!(serde_json::from_str::<Id>("null").is_err());
/// assert!(serde_json::from_str::<Id>("1.5").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Id {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for Id {
    fn from(value: i64) -> Self {
        Id::Number(value)
    }
}

impl From<&str> for Id {
    fn from(value: &str) -> Self {
        Id::String(value.to_owned())
    }
}

impl From<String> for Id {
    fn from(value: String) -> Self {
        Id::String(value)
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Number(n) => serializer.serialize_i64(*n),
            Id::String(s) => serializer.serialize_str(s),
        }
    }
}

struct IdVisitor;

impl Visitor<'_> for IdVisitor {
    type Value = Id;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string or an integer id")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
        Ok(Id::Number(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
        i64::try_from(v)
            .map(Id::Number)
            .map_err(|_| E::custom("integer id out of range"))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
        Ok(Id::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Id, E> {
        Ok(Id::String(v))
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(IdVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects() {
        for text in ["0", "-5", "9223372036854775807", "\"x\"", "\"\""] {
            let id: Id = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&id).unwrap(), text);
        }
        for bad in [
            "null",
            "1.0",
            "1e3",
            "true",
            "[]",
            "{}",
            "9223372036854775808",
        ] {
            assert!(serde_json::from_str::<Id>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn display() {
        assert_eq!(Id::Number(3).to_string(), "3");
        assert_eq!(Id::from("a").to_string(), "\"a\"");
    }
}
