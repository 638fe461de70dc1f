//! Collision-free names for items aggregated from several servers.
//!
//! A [`NameTable`] gives each `(server, item)` pair a qualified name `server__item` made only of
//! the characters tool names may use (`A-Z a-z 0-9 _ - .`). When two pairs would get the same
//! qualified name (after replacing other characters, or because a name itself contains the
//! separator) the later one gets a numeric suffix (`server__item_2`), so names never collide and
//! the same inputs in the same order always give the same names. Routing goes through the table,
//! never by splitting a name, so any server or item name routes correctly.

use std::collections::HashMap;

/// The separator between the server part and the item part of a qualified name.
pub const SEPARATOR: &str = "__";

/// A qualified name's route: which server, and the item's own name there.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Route {
    /// The server's name in the host.
    pub server: String,
    /// The item's name (or URI) on that server.
    pub name: String,
}

/// Qualified names for items from several servers.
#[derive(Debug, Clone, Default)]
pub struct NameTable {
    routes: HashMap<String, Route>,
    order: Vec<String>,
}

/// Replaces every character outside `A-Z a-z 0-9 _ - .` with `_`.
pub fn sanitize(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

impl NameTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `(server, name)` and returns its qualified name. Adding the same pair twice returns
    /// the name it already has.
    pub fn insert(&mut self, server: &str, name: &str) -> String {
        self.insert_as(server, name, name)
    }

    /// Adds an item whose qualified name derives from `label` but which routes to `target`
    /// (a resource: named by its `name`, read by its URI).
    pub fn insert_as(&mut self, server: &str, label: &str, target: &str) -> String {
        let route = Route {
            server: server.to_owned(),
            name: target.to_owned(),
        };
        let base = format!("{}{SEPARATOR}{}", sanitize(server), sanitize(label));
        let mut candidate = base.clone();
        let mut suffix = 1u64;
        loop {
            match self.routes.get(&candidate) {
                None => break,
                Some(existing) if *existing == route => return candidate,
                Some(_) => {
                    suffix += 1;
                    candidate = format!("{base}_{suffix}");
                }
            }
        }
        self.routes.insert(candidate.clone(), route);
        self.order.push(candidate.clone());
        candidate
    }

    /// Where a qualified name routes to.
    pub fn route(&self, qualified: &str) -> Option<&Route> {
        self.routes.get(qualified)
    }

    /// Qualified names in insertion order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.order.iter().map(String::as_str)
    }

    /// How many names the table holds.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifies_and_routes() {
        let mut table = NameTable::new();
        assert_eq!(table.insert("files", "read"), "files__read");
        assert_eq!(table.insert("web", "read"), "web__read");
        assert_eq!(table.route("web__read").unwrap().server, "web");
        assert_eq!(table.route("files__read").unwrap().name, "read");
        assert!(table.route("read").is_none());
        let doc = table.insert_as("files", "readme", "file:///readme.md");
        assert_eq!(doc, "files__readme");
        assert_eq!(table.route(&doc).unwrap().name, "file:///readme.md");
        // Two resources with one name on one server still get distinct names.
        let other = table.insert_as("files", "readme", "file:///docs/readme.md");
        assert_eq!(other, "files__readme_2");
    }

    #[test]
    fn never_collides() {
        let mut table = NameTable::new();
        let a = table.insert("a__b", "c");
        let b = table.insert("a", "b__c");
        let c = table.insert("a b", "c");
        let d = table.insert("a_b", "c");
        let names = [&a, &b, &c, &d];
        for (i, x) in names.iter().enumerate() {
            for y in names.iter().skip(i + 1) {
                assert_ne!(x, y);
            }
        }
        assert_eq!(table.route(&b).unwrap().name, "b__c");
        assert_eq!(table.route(&c).unwrap().server, "a b");
        assert_eq!(table.route(&d).unwrap().server, "a_b");
        assert_eq!(table.len(), 4);
        // Re-adding a pair gives back its name.
        assert_eq!(table.insert("a", "b__c"), b);
        assert_eq!(table.len(), 4);
    }

    #[test]
    fn sanitizes_to_tool_name_characters() {
        assert_eq!(sanitize("my server/✓"), "my_server__");
        assert_eq!(sanitize(""), "_");
        assert_eq!(sanitize("ok-1.2_x"), "ok-1.2_x");
    }
}
