//! `xtask/overlay.toml`: the naming decisions the generator cannot infer from the schemas.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::ir::Ty;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overlay {
    /// Schema definition name -> Rust type name.
    #[serde(default)]
    rename: BTreeMap<String, String>,
    /// `Parent.path` (or `*.path`) of an inline object, enum or union -> Rust type name.
    #[serde(default)]
    names: BTreeMap<String, String>,
    /// Schema definition name -> builtin JSON shape (`any`, `object`, `array`).
    #[serde(default)]
    builtin: BTreeMap<String, String>,
    /// Types of the per-revision modules left out of the unified model.
    #[serde(default)]
    pub unified_skip: BTreeSet<String>,
    /// Types that keep unknown fields although their schema does not say so explicitly.
    #[serde(default)]
    pub keep_unknown: BTreeSet<String>,
}

impl Overlay {
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| format!("xtask/overlay.toml: {e}"))
    }

    pub fn rename(&self, name: &str) -> String {
        self.rename
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    }

    pub fn inline_name(&self, parent: &str, path: &str) -> Option<String> {
        self.names
            .get(&format!("{parent}.{path}"))
            .or_else(|| self.names.get(&format!("*.{path}")))
            .cloned()
    }

    pub fn builtin(&self, name: &str) -> Option<Ty> {
        Some(match self.builtin.get(name)?.as_str() {
            "any" => Ty::Any,
            "object" => Ty::Object,
            "array" => Ty::Array(Box::new(Ty::Any)),
            _ => return None,
        })
    }
}
