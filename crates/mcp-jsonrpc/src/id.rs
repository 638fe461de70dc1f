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

/// A table keyed by request id, as the engine keeps them (requests in flight each way).
///
/// It hashes with [`IdHasher`] instead of SipHash: a few instructions per id rather than about
/// a hundred and eighty. Ids come from the peer, so one could make them collide on purpose;
/// keep such tables bounded (by an in-flight limit), which caps what colliding ids can cost.
///
/// ```
/// use mcp_jsonrpc::{Id, IdMap};
///
/// let mut inflight = IdMap::default();
/// inflight.insert(Id::Number(1), "tools/call");
/// assert_eq!(inflight.get(&Id::Number(1)), Some(&"tools/call"));
/// ```
pub type IdMap<V> = std::collections::HashMap<Id, V, BuildIdHasher>;

/// A set of request ids hashed with [`IdHasher`] (see [`IdMap`]).
pub type IdSet = std::collections::HashSet<Id, BuildIdHasher>;

/// Builds [`IdHasher`]s.
#[derive(Debug, Default, Clone, Copy)]
pub struct BuildIdHasher;

impl std::hash::BuildHasher for BuildIdHasher {
    type Hasher = IdHasher;

    fn build_hasher(&self) -> IdHasher {
        IdHasher(0)
    }
}

/// A multiply-rotate hasher over 64-bit words, for request ids and other small keys of
/// bounded tables (not keyed: do not use it for tables a peer can grow at will).
#[derive(Debug)]
pub struct IdHasher(u64);

impl IdHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_i64(&mut self, n: i64) {
        self.add(n as u64);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn write_isize(&mut self, n: isize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
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
    fn id_map_keeps_distinct_ids_apart() {
        let mut map = IdMap::default();
        for n in -300..300 {
            map.insert(Id::Number(n), n);
        }
        // Strings that differ only past the first word, or only in length, and one that
        // spells a number.
        let strings = [
            "",
            "a",
            "ab",
            "abcdefgh",
            "abcdefghi",
            "abcdefghj",
            "1",
            "\0",
        ];
        for (i, s) in strings.iter().enumerate() {
            map.insert(Id::from(*s), 1000 + i as i64);
        }
        assert_eq!(map.len(), 600 + strings.len());
        assert_eq!(map[&Id::Number(-7)], -7);
        assert_eq!(map[&Id::from("abcdefghj")], 1005);
        assert_eq!(map[&Id::from("1")], 1006);
        assert!(!map.contains_key(&Id::Number(300)));
        assert!(!map.contains_key(&Id::from("abcdefgk")));
    }

    #[test]
    fn display() {
        assert_eq!(Id::Number(3).to_string(), "3");
        assert_eq!(Id::from("a").to_string(), "\"a\"");
    }
}
