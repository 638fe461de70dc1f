//! Projection of model values onto one revision.

use std::collections::BTreeMap;

use crate::ProtocolVersion;

/// Removes from a model value what a given revision does not define, so that it can be sent
/// to a peer speaking that revision.
///
/// Generated for every model type: optional fields the revision lacks are cleared, and nested
/// values are projected too. In a `Vec` or map, elements whose variant the revision lacks (an
/// `audio` content block for 2024-11-05) are dropped; an `Option` holding such a value becomes
/// `None`.
///
/// ```
/// use mcp_types::{Icon, Project, ProtocolVersion, Tool};
///
/// let icon = Icon { src: "https://example.com/w.png".into(), mime_type: None, sizes: None, theme: None };
/// let mut tool = Tool { icons: Some(vec![icon]), ..Tool::new("get_weather", serde_json::Map::new()) };
/// tool.project(ProtocolVersion::V2024_11_05);
/// assert_eq!(tool.icons, None);
/// ```
pub trait Project {
    /// Clears everything `rev` does not define, recursively.
    fn project(&mut self, rev: ProtocolVersion);

    /// Whether this value (an enum variant or union member) exists in `rev` at all.
    fn available_in(&self, rev: ProtocolVersion) -> bool {
        let _ = rev;
        true
    }
}

macro_rules! leaf {
    ($($t:ty),*) => {$(
        impl Project for $t {
            fn project(&mut self, _rev: ProtocolVersion) {}
        }
    )*};
}
leaf!(String, i64, f64, bool, serde_json::Value, serde_json::Map<String, serde_json::Value>);

impl<T: Project> Project for Option<T> {
    fn project(&mut self, rev: ProtocolVersion) {
        if let Some(v) = self {
            if v.available_in(rev) {
                v.project(rev);
            } else {
                *self = None;
            }
        }
    }
}

impl<T: Project> Project for Box<T> {
    fn project(&mut self, rev: ProtocolVersion) {
        T::project(self, rev);
    }
    fn available_in(&self, rev: ProtocolVersion) -> bool {
        T::available_in(self, rev)
    }
}

impl<T: Project> Project for Vec<T> {
    fn project(&mut self, rev: ProtocolVersion) {
        self.retain(|v| v.available_in(rev));
        for v in self {
            v.project(rev);
        }
    }
}

impl<T: Project> Project for BTreeMap<String, T> {
    fn project(&mut self, rev: ProtocolVersion) {
        self.retain(|_, v| v.available_in(rev));
        for v in self.values_mut() {
            v.project(rev);
        }
    }
}
