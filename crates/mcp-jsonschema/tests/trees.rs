//! Schemas both the keyword tests and the differential tests run: the official test suite's
//! strict trees, a tree (`{data, children}`) whose `children` refer back to the tree through a
//! dynamic reference, so that the outer resource's rules reach the nested nodes.

use serde_json::{Value, json};

/// The 2020-12 strict tree: the tree's `children` are `$dynamicRef: "#node"`, and the outer
/// resource's `$dynamicAnchor` (which forbids unevaluated properties) wins.
pub fn dynamic_strict_tree() -> Value {
    json!({
        "$id": "https://example.com/strict-tree",
        "$dynamicAnchor": "node",
        "$ref": "tree",
        "unevaluatedProperties": false,
        "$defs": {"tree": {
            "$id": "tree",
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {"data": true, "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}
        }}
    })
}

/// The 2019-09 strict tree, the outer resource at `id`: the tree's `children` are
/// `$recursiveRef: "#"`. With `outer_anchor`, the outer resource's `$recursiveAnchor` wins;
/// without, `$recursiveRef` is a plain `$ref` to the tree.
pub fn recursive_strict_tree(id: &str, outer_anchor: bool) -> Value {
    let mut schema = json!({
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "$id": id,
        "$ref": "tree",
        "unevaluatedProperties": false,
        "$defs": {"tree": {
            "$id": "tree",
            "$recursiveAnchor": true,
            "type": "object",
            "properties": {"data": true, "children": {"type": "array", "items": {"$recursiveRef": "#"}}}
        }}
    });
    if outer_anchor {
        schema["$recursiveAnchor"] = json!(true);
    }
    schema
}
