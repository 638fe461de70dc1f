//! A small deterministic random source and the `Sample` trait the generated
//! `support/sample.rs` implements for every model type.

use std::collections::BTreeMap;

use mcp_types::{JsonObject, ProtocolVersion};
use serde_json::Value;

/// Nesting beyond this depth leaves optional values out and lists empty.
const MAX_DEPTH: u32 = 4;

/// SplitMix64.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    pub fn number_in(&mut self, min: f64, max: f64) -> f64 {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        min + (max - min) * unit
    }

    /// Whether to fill an optional field that exists in `mask` and is required in `required`.
    pub fn include(&mut self, rev: ProtocolVersion, mask: u32, required: u32, depth: u32) -> bool {
        if !rev.in_mask(mask) {
            return false;
        }
        rev.in_mask(required) || (depth < MAX_DEPTH && self.bool())
    }

    /// A union variant available in `rev`.
    pub fn variant(&mut self, masks: &[u32], rev: ProtocolVersion, depth: u32) -> usize {
        let available: Vec<usize> = (0..masks.len())
            .filter(|i| rev.in_mask(masks[*i]))
            .collect();
        if available.is_empty() {
            return 0;
        }
        if depth >= MAX_DEPTH {
            return available[0];
        }
        available[self.below(available.len())]
    }

    pub fn pick_available<T: Copy>(&mut self, values: &[(u32, T)], rev: ProtocolVersion) -> T {
        let available: Vec<T> = values
            .iter()
            .filter(|(m, _)| rev.in_mask(*m))
            .map(|(_, v)| *v)
            .collect();
        if available.is_empty() {
            values[0].1
        } else {
            available[self.below(available.len())]
        }
    }

    /// A `_meta` object shaped like the named schema type.
    pub fn meta<T: Sample + serde::Serialize>(
        &mut self,
        rev: ProtocolVersion,
        depth: u32,
    ) -> JsonObject {
        match serde_json::to_value(T::sample(self, rev, depth + 1)) {
            Ok(Value::Object(map)) => map,
            _ => JsonObject::new(),
        }
    }

    pub fn string(&mut self) -> String {
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789 _-/:.";
        let len = self.below(12);
        (0..len)
            .map(|_| ALPHABET[self.below(ALPHABET.len())] as char)
            .collect()
    }
}

pub trait Sample: Sized {
    fn sample(rng: &mut Rng, rev: ProtocolVersion, depth: u32) -> Self;
}

impl Sample for String {
    fn sample(rng: &mut Rng, _: ProtocolVersion, _: u32) -> Self {
        rng.string()
    }
}

impl Sample for i64 {
    fn sample(rng: &mut Rng, _: ProtocolVersion, _: u32) -> Self {
        rng.below(100_000) as i64
    }
}

impl Sample for f64 {
    fn sample(rng: &mut Rng, _: ProtocolVersion, _: u32) -> Self {
        if rng.bool() {
            rng.below(1000) as f64
        } else {
            rng.number_in(-1000.0, 1000.0)
        }
    }
}

impl Sample for bool {
    fn sample(rng: &mut Rng, _: ProtocolVersion, _: u32) -> Self {
        rng.bool()
    }
}

impl Sample for Value {
    fn sample(rng: &mut Rng, _: ProtocolVersion, depth: u32) -> Self {
        // The schemas' `JSONValue`: objects, arrays, strings, integers, booleans (no null).
        match rng.below(if depth < MAX_DEPTH { 6 } else { 4 }) {
            0 | 1 => Value::Bool(rng.bool()),
            2 => Value::from(rng.below(1000)),
            3 => Value::String(rng.string()),
            4 => Value::Array(
                (0..rng.below(3))
                    .map(|_| Value::String(rng.string()))
                    .collect(),
            ),
            _ => {
                let mut m = JsonObject::new();
                m.insert(rng.string(), Value::from(rng.below(10)));
                Value::Object(m)
            }
        }
    }
}

impl<T: Sample> Sample for Vec<T> {
    fn sample(rng: &mut Rng, rev: ProtocolVersion, depth: u32) -> Self {
        let n = if depth >= MAX_DEPTH { 0 } else { rng.below(3) };
        (0..n).map(|_| T::sample(rng, rev, depth + 1)).collect()
    }
}

impl<T: Sample> Sample for BTreeMap<String, T> {
    fn sample(rng: &mut Rng, rev: ProtocolVersion, depth: u32) -> Self {
        let n = if depth >= MAX_DEPTH { 0 } else { rng.below(3) };
        (0..n)
            .map(|_| {
                (
                    format!("k{}", rng.below(100)),
                    T::sample(rng, rev, depth + 1),
                )
            })
            .collect()
    }
}

impl<T: Sample> Sample for Box<T> {
    fn sample(rng: &mut Rng, rev: ProtocolVersion, depth: u32) -> Self {
        Box::new(T::sample(rng, rev, depth))
    }
}

impl<T: Sample> Sample for Option<T> {
    fn sample(rng: &mut Rng, rev: ProtocolVersion, depth: u32) -> Self {
        if depth < MAX_DEPTH && rng.bool() {
            Some(T::sample(rng, rev, depth + 1))
        } else {
            None
        }
    }
}

impl Sample for JsonObject {
    fn sample(rng: &mut Rng, rev: ProtocolVersion, depth: u32) -> Self {
        let mut m = JsonObject::new();
        if depth < MAX_DEPTH && rng.bool() {
            m.insert(
                format!("k{}", rng.below(100)),
                Value::sample(rng, rev, depth + 1),
            );
        }
        m
    }
}
