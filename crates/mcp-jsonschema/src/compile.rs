//! Compiling a schema document into a graph of typed nodes.
//!
//! Two passes. The first walks every subschema (bounded depth) and records, per JSON pointer,
//! the base URI, the dialect and the schema resource it belongs to, plus every `$id`, `$anchor`
//! and `$dynamicAnchor`. The second compiles, from a work queue rather than by recursion, each
//! subschema reachable from the root (through keywords and resolved `$ref`s) into a [`Node`], so
//! references become plain indices and cycles plain edges. A last pass refuses reference cycles
//! along which validation would never move to another part of the instance.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::format::Format;
use crate::number::Num;
use crate::pattern::Pattern;
use crate::{Draft, SchemaError, uri};

/// How deeply subschemas may nest in a schema document.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 128;

pub(crate) type NodeId = u32;

/// One compiled (sub)schema.
#[derive(Debug)]
pub(crate) struct Node {
    /// The schema resource (`$id` scope) the node belongs to, for dynamic references.
    pub(crate) resource: u32,
    pub(crate) body: Body,
}

#[derive(Debug)]
pub(crate) enum Body {
    Bool(bool),
    Keywords {
        keywords: Box<[Kw]>,
        /// Has `unevaluatedProperties` or `unevaluatedItems`: collects annotations.
        tracks: bool,
    },
}

/// JSON types as bits.
pub(crate) mod types {
    pub(crate) const NULL: u8 = 1;
    pub(crate) const BOOLEAN: u8 = 2;
    pub(crate) const OBJECT: u8 = 4;
    pub(crate) const ARRAY: u8 = 8;
    pub(crate) const NUMBER: u8 = 16;
    pub(crate) const STRING: u8 = 32;
    pub(crate) const INTEGER: u8 = 64;

    pub(crate) fn parse(name: &str) -> Option<u8> {
        Some(match name {
            "null" => NULL,
            "boolean" => BOOLEAN,
            "object" => OBJECT,
            "array" => ARRAY,
            "number" => NUMBER,
            "string" => STRING,
            "integer" => INTEGER,
            _ => return None,
        })
    }
}

/// The named, pattern and additional properties of one schema object, applied together.
#[derive(Debug)]
pub(crate) struct Props {
    /// Sorted by name.
    pub(crate) named: Box<[(Box<str>, NodeId)]>,
    pub(crate) patterns: Box<[(Pattern, NodeId)]>,
    pub(crate) additional: Option<NodeId>,
}

/// Property names.
pub(crate) type Names = Box<[Box<str>]>;

#[derive(Debug)]
pub(crate) enum Kw {
    Type {
        mask: u8,
        /// draft-04: `integer` does not take a float with a zero fraction (`1.0`).
        strict_integer: bool,
        /// The names as written, for messages.
        names: Box<[Box<str>]>,
    },
    Enum(Box<[Value]>),
    Const(Value),
    MultipleOf(Num, Value),
    Minimum(Num, Value),
    Maximum(Num, Value),
    ExclusiveMinimum(Num, Value),
    ExclusiveMaximum(Num, Value),
    MinLength(u64),
    MaxLength(u64),
    Pattern(Box<Pattern>),
    Format(Format, Box<str>),
    MinItems(u64),
    MaxItems(u64),
    UniqueItems,
    Items {
        prefix: Box<[NodeId]>,
        rest: Option<NodeId>,
    },
    Contains {
        node: NodeId,
        min: u64,
        max: Option<u64>,
        /// 2020-12: matched items count as evaluated for `unevaluatedItems`.
        annotates: bool,
    },
    MinProperties(u64),
    MaxProperties(u64),
    Required(Box<[Box<str>]>),
    DependentRequired(Box<[(Box<str>, Names)]>),
    DependentSchemas(Box<[(Box<str>, NodeId)]>),
    Properties(Box<Props>),
    PropertyNames(NodeId),
    AllOf(Box<[NodeId]>),
    AnyOf(Box<[NodeId]>),
    OneOf(Box<[NodeId]>),
    Not(NodeId, Box<str>),
    If {
        condition: NodeId,
        then: Option<NodeId>,
        otherwise: Option<NodeId>,
    },
    Ref(NodeId),
    /// `$dynamicRef` (2020-12) or `$recursiveRef` (2019-09).
    DynamicRef {
        target: NodeId,
        /// The dynamic anchor to look for in the dynamic scope; `None` when the reference
        /// resolved to no dynamic anchor and acts as `$ref`.
        anchor: Option<Anchor>,
    },
    UnevaluatedItems(NodeId),
    UnevaluatedProperties(NodeId),
}

#[derive(Debug, Clone)]
pub(crate) enum Anchor {
    /// `$dynamicAnchor` of this name.
    Dynamic(Box<str>),
    /// `$recursiveAnchor: true`.
    Recursive,
}

/// What dynamic references can land on in one schema resource.
#[derive(Debug, Default)]
pub(crate) struct Resource {
    pub(crate) dynamic: Box<[(Box<str>, NodeId)]>,
    pub(crate) recursive: Option<NodeId>,
}

/// A compiled schema document.
#[derive(Debug)]
pub(crate) struct Compiled {
    pub(crate) nodes: Box<[Node]>,
    pub(crate) resources: Box<[Resource]>,
    pub(crate) root: NodeId,
}

/// Where a subschema sits: its base URI, dialect, resource and nesting depth.
#[derive(Clone, Debug)]
struct Context {
    base: String,
    draft: Draft,
    resource: u32,
    depth: usize,
}

#[derive(Clone, Debug)]
struct ResourceInfo {
    pointer: String,
    dynamic: Vec<(String, String)>,
    recursive: bool,
}

struct Compiler<'a> {
    root: &'a Value,
    contexts: HashMap<String, Context>,
    resources: Vec<ResourceInfo>,
    by_uri: HashMap<String, u32>,
    /// (resource URI, anchor name) -> (pointer, is a `$dynamicAnchor`).
    anchors: HashMap<(String, String), (String, bool)>,
    has_dynamic_refs: bool,
    nodes: Vec<Option<Node>>,
    locations: Vec<String>,
    depths: Vec<usize>,
    by_pointer: HashMap<String, NodeId>,
    queue: Vec<NodeId>,
    true_node: Option<NodeId>,
}

fn escape_token(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

fn join(pointer: &str, token: &str) -> String {
    format!("{pointer}/{}", escape_token(token))
}

/// The error for a value where a schema must stand.
fn not_a_schema(location: String, value: &Value) -> SchemaError {
    err(
        location,
        format!(
            "expected a schema (an object or a boolean), got {}",
            show(value)
        ),
    )
}

fn err(location: impl Into<String>, message: impl Into<String>) -> SchemaError {
    SchemaError::new(location.into(), message.into())
}

/// A short rendering of a JSON value for messages. Serializing stops soon after the part that
/// is shown, so a large instance is not rendered whole for one message.
pub(crate) fn show(value: &Value) -> String {
    let mut out = Capped(Vec::new());
    // The error only says the cap was reached.
    let _ = serde_json::to_writer(&mut out, value);
    crate::truncate(String::from_utf8_lossy(&out.0).into_owned())
}

/// A writer that refuses more once it holds more than [`crate::MAX_SHOWN`] bytes.
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() > crate::MAX_SHOWN {
            return Err(std::io::Error::other("long enough to show"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn draft_of(uri: &str) -> Option<Draft> {
    let uri = uri.trim_end_matches('#');
    let path = uri
        .strip_prefix("http://json-schema.org/")
        .or_else(|| uri.strip_prefix("https://json-schema.org/"))?;
    Some(match path {
        "draft-04/schema" => Draft::D4,
        "draft-06/schema" => Draft::D6,
        "draft-07/schema" => Draft::D7,
        "draft/2019-09/schema" => Draft::D2019,
        "draft/2020-12/schema" => Draft::D2020,
        _ => return None,
    })
}

/// The keywords whose values are one subschema, with the first and last draft that has each.
const SINGLE_SCHEMA_KEYWORDS: &[(&str, Draft, Draft)] = &[
    ("additionalItems", Draft::D4, Draft::D2019),
    ("additionalProperties", Draft::D4, Draft::D2020),
    ("not", Draft::D4, Draft::D2020),
    ("contains", Draft::D6, Draft::D2020),
    ("propertyNames", Draft::D6, Draft::D2020),
    ("if", Draft::D7, Draft::D2020),
    ("then", Draft::D7, Draft::D2020),
    ("else", Draft::D7, Draft::D2020),
    ("unevaluatedItems", Draft::D2019, Draft::D2020),
    ("unevaluatedProperties", Draft::D2019, Draft::D2020),
    ("items", Draft::D2020, Draft::D2020),
];

/// The keywords whose values are one subschema, in `draft`.
fn single_schema_keywords(draft: Draft) -> impl Iterator<Item = &'static str> {
    SINGLE_SCHEMA_KEYWORDS
        .iter()
        .filter(move |(_, first, last)| (*first..=*last).contains(&draft))
        .map(|(keyword, _, _)| *keyword)
}

/// Calls `f` with the path (one or two tokens) and value of every direct subschema of `obj`.
fn for_each_subschema<'v>(
    obj: &'v Map<String, Value>,
    draft: Draft,
    mut f: impl FnMut(&[&str], &'v Value) -> Result<(), SchemaError>,
) -> Result<(), SchemaError> {
    let legacy_ref = draft <= Draft::D7 && obj.contains_key("$ref");
    for container in ["$defs", "definitions"] {
        if let Some(Value::Object(map)) = obj.get(container) {
            for (name, value) in map {
                f(&[container, name], value)?;
            }
        }
    }
    if legacy_ref {
        return Ok(());
    }
    for keyword in single_schema_keywords(draft) {
        if let Some(value) = obj.get(keyword) {
            f(&[keyword], value)?;
        }
    }
    let mut arrays: Vec<&str> = vec!["allOf", "anyOf", "oneOf"];
    if draft == Draft::D2020 {
        arrays.push("prefixItems");
    } else {
        match obj.get("items") {
            Some(Value::Array(_)) => arrays.push("items"),
            Some(value) => f(&["items"], value)?,
            None => {}
        }
    }
    for keyword in arrays {
        if let Some(Value::Array(items)) = obj.get(keyword) {
            for (i, value) in items.iter().enumerate() {
                f(&[keyword, &i.to_string()], value)?;
            }
        }
    }
    let mut maps: Vec<&str> = vec!["properties", "patternProperties", "dependencies"];
    if draft >= Draft::D2019 {
        maps.push("dependentSchemas");
    }
    for keyword in maps {
        if let Some(Value::Object(map)) = obj.get(keyword) {
            for (name, value) in map {
                if keyword == "dependencies" && value.is_array() {
                    continue;
                }
                f(&[keyword, name], value)?;
            }
        }
    }
    Ok(())
}

impl<'a> Compiler<'a> {
    fn new(root: &'a Value) -> Self {
        Compiler {
            root,
            contexts: HashMap::new(),
            resources: Vec::new(),
            by_uri: HashMap::new(),
            anchors: HashMap::new(),
            has_dynamic_refs: false,
            nodes: Vec::new(),
            locations: Vec::new(),
            depths: Vec::new(),
            by_pointer: HashMap::new(),
            queue: Vec::new(),
            true_node: None,
        }
    }

    fn add_resource(&mut self, uri: String, pointer: &str) -> u32 {
        if let Some(&existing) = self.by_uri.get(&uri) {
            // The same `$id` twice: the first wins.
            return existing;
        }
        let index = self.resources.len() as u32;
        self.resources.push(ResourceInfo {
            pointer: pointer.to_owned(),
            dynamic: Vec::new(),
            recursive: false,
        });
        self.by_uri.insert(uri, index);
        index
    }

    /// The first pass: contexts, resources and anchors, for every subschema. A work list, not
    /// recursion, so the stack stays flat whatever the document.
    fn scan_all(&mut self, root_ctx: &Context) -> Result<(), SchemaError> {
        let mut work: Vec<(String, &'a Value, Context)> =
            vec![(String::new(), self.root, root_ctx.clone())];
        while let Some((pointer, value, parent)) = work.pop() {
            let before = work.len();
            self.scan(value, &pointer, &parent, &mut work)?;
            // Keep document order among siblings.
            work[before..].reverse();
        }
        Ok(())
    }

    fn scan(
        &mut self,
        value: &'a Value,
        pointer: &str,
        parent: &Context,
        work: &mut Vec<(String, &'a Value, Context)>,
    ) -> Result<(), SchemaError> {
        if parent.depth > MAX_SCHEMA_DEPTH {
            return Err(err(
                pointer,
                format!("subschemas are nested more than {MAX_SCHEMA_DEPTH} levels deep"),
            ));
        }
        let obj = match value {
            Value::Object(obj) => obj,
            Value::Bool(_) => {
                self.contexts.insert(pointer.to_owned(), parent.clone());
                return Ok(());
            }
            _ => return Ok(()),
        };
        let mut ctx = parent.clone();
        let is_root = pointer.is_empty();
        // `$schema` switches the dialect at the root and at embedded resources.
        if let Some(schema) = obj.get("$schema") {
            let Value::String(schema) = schema else {
                return Err(err(join(pointer, "$schema"), "expected a string"));
            };
            if is_root || obj.contains_key("$id") || obj.contains_key("id") {
                if let Some(draft) = draft_of(schema) {
                    ctx.draft = draft;
                }
            }
        }
        let id_keyword = if ctx.draft == Draft::D4 { "id" } else { "$id" };
        // Up to draft-07 an `$id` beside `$ref` is ignored like every other keyword there.
        let legacy_ref = ctx.draft <= Draft::D7 && obj.contains_key("$ref");
        if let Some(id) = obj.get(id_keyword).filter(|_| !legacy_ref) {
            let Value::String(id) = id else {
                return Err(err(join(pointer, id_keyword), "expected a string"));
            };
            let resolved = uri::resolve(&ctx.base, id);
            let (resource_uri, fragment) = uri::split_fragment(&resolved);
            let fragment = uri::percent_decode(fragment).unwrap_or_default();
            if !id.starts_with('#') {
                ctx.base = resource_uri.to_owned();
                if !is_root {
                    ctx.resource = self.add_resource(resource_uri.to_owned(), pointer);
                }
            }
            // draft-04 to draft-07 name anchors with a plain-name fragment in `$id`.
            if !fragment.is_empty() && !fragment.starts_with('/') && ctx.draft <= Draft::D7 {
                self.anchors
                    .entry((resource_uri.to_owned(), fragment))
                    .or_insert((pointer.to_owned(), false));
            }
        }
        if ctx.draft >= Draft::D2019 {
            if let Some(anchor) = obj.get("$anchor") {
                let Value::String(anchor) = anchor else {
                    return Err(err(join(pointer, "$anchor"), "expected a string"));
                };
                self.anchors
                    .entry((ctx.base.clone(), anchor.clone()))
                    .or_insert((pointer.to_owned(), false));
            }
        }
        if ctx.draft == Draft::D2020 {
            if let Some(anchor) = obj.get("$dynamicAnchor") {
                let Value::String(anchor) = anchor else {
                    return Err(err(join(pointer, "$dynamicAnchor"), "expected a string"));
                };
                self.anchors.insert(
                    (ctx.base.clone(), anchor.clone()),
                    (pointer.to_owned(), true),
                );
                self.resources[ctx.resource as usize]
                    .dynamic
                    .push((anchor.clone(), pointer.to_owned()));
            }
            if obj.contains_key("$dynamicRef") {
                self.has_dynamic_refs = true;
            }
        }
        if ctx.draft == Draft::D2019 {
            match obj.get("$recursiveAnchor") {
                None => {}
                Some(Value::Bool(flag)) => {
                    let resource = &mut self.resources[ctx.resource as usize];
                    // Only a resource's root can set it.
                    if *flag && resource.pointer == pointer {
                        resource.recursive = true;
                    }
                }
                Some(_) => {
                    return Err(err(join(pointer, "$recursiveAnchor"), "expected a boolean"));
                }
            }
            if obj.contains_key("$recursiveRef") {
                self.has_dynamic_refs = true;
            }
        }
        self.contexts.insert(pointer.to_owned(), ctx.clone());
        let child = Context {
            depth: ctx.depth + 1,
            ..ctx.clone()
        };
        for_each_subschema(obj, ctx.draft, |path, value| {
            let mut p = pointer.to_owned();
            for token in path {
                p = join(&p, token);
            }
            work.push((p, value, child.clone()));
            Ok(())
        })
    }

    /// The context of the subschema at `pointer`: recorded by the scan, or, for a location the
    /// scan did not reach (inside an unknown keyword), that of its nearest scanned ancestor.
    fn context(&self, pointer: &str) -> Context {
        if let Some(ctx) = self.contexts.get(pointer) {
            return ctx.clone();
        }
        let mut p = pointer;
        let mut extra = 0;
        while let Some(cut) = p.rfind('/') {
            p = &p[..cut];
            extra += 1;
            if let Some(ctx) = self.contexts.get(p) {
                return Context {
                    depth: ctx.depth + extra,
                    ..ctx.clone()
                };
            }
        }
        self.contexts.get("").cloned().unwrap_or(Context {
            base: uri::DEFAULT_BASE.to_owned(),
            draft: Draft::D2020,
            resource: 0,
            depth: extra,
        })
    }

    fn node_for(&mut self, pointer: String, depth: usize) -> NodeId {
        if let Some(&id) = self.by_pointer.get(&pointer) {
            return id;
        }
        let id = self.nodes.len() as NodeId;
        self.nodes.push(None);
        self.locations.push(pointer.clone());
        self.depths.push(depth);
        self.by_pointer.insert(pointer, id);
        self.queue.push(id);
        id
    }

    fn true_node(&mut self) -> NodeId {
        if let Some(id) = self.true_node {
            return id;
        }
        let id = self.nodes.len() as NodeId;
        self.nodes.push(Some(Node {
            resource: 0,
            body: Body::Bool(true),
        }));
        self.locations.push("(meta-schema)".to_owned());
        self.depths.push(0);
        self.true_node = Some(id);
        id
    }

    /// Resolves a reference to a node; the second value is the anchor name when the reference
    /// landed on a `$dynamicAnchor`.
    fn resolve(
        &mut self,
        base: &str,
        reference: &str,
        at: &str,
    ) -> Result<(NodeId, Option<String>), SchemaError> {
        let resolved = uri::resolve(base, reference);
        let (resource_uri, fragment) = uri::split_fragment(&resolved);
        let Some(fragment) = uri::percent_decode(fragment) else {
            return Err(err(
                at,
                format!("cannot resolve {reference:?}: bad percent-encoding"),
            ));
        };
        let Some(&resource) = self.by_uri.get(resource_uri) else {
            if uri::is_meta_schema(resource_uri) {
                return Ok((self.true_node(), None));
            }
            return Err(err(
                at,
                format!(
                    "cannot resolve {reference:?}: only references within the schema document are supported"
                ),
            ));
        };
        let (pointer, dynamic) = if fragment.is_empty() || fragment.starts_with('/') {
            (
                format!("{}{fragment}", self.resources[resource as usize].pointer),
                None,
            )
        } else {
            match self
                .anchors
                .get(&(resource_uri.to_owned(), fragment.clone()))
            {
                Some((pointer, dynamic)) => (pointer.clone(), dynamic.then_some(fragment)),
                None => {
                    return Err(err(
                        at,
                        format!("cannot resolve {reference:?}: no such anchor"),
                    ));
                }
            }
        };
        match self.root.pointer(&pointer) {
            Some(Value::Object(_) | Value::Bool(_)) => {}
            Some(other) => {
                return Err(err(
                    at,
                    format!(
                        "{reference:?} refers to {}, which is not a schema",
                        show(other)
                    ),
                ));
            }
            None => {
                return Err(err(
                    at,
                    format!("cannot resolve {reference:?}: no such location"),
                ));
            }
        }
        let depth = self.context(&pointer).depth;
        if depth > MAX_SCHEMA_DEPTH {
            return Err(err(
                pointer,
                format!("subschemas are nested more than {MAX_SCHEMA_DEPTH} levels deep"),
            ));
        }
        Ok((self.node_for(pointer, depth), dynamic))
    }

    fn run(mut self) -> Result<Compiled, SchemaError> {
        let mut root_ctx = Context {
            base: uri::DEFAULT_BASE.to_owned(),
            draft: Draft::D2020,
            resource: 0,
            depth: 0,
        };
        if let Value::Object(obj) = self.root {
            if let Some(Value::String(schema)) = obj.get("$schema") {
                if let Some(draft) = draft_of(schema) {
                    root_ctx.draft = draft;
                }
            }
            let id_keyword = if root_ctx.draft == Draft::D4 {
                "id"
            } else {
                "$id"
            };
            let legacy_ref = root_ctx.draft <= Draft::D7 && obj.contains_key("$ref");
            if let Some(Value::String(id)) = obj.get(id_keyword).filter(|_| !legacy_ref) {
                let resolved = uri::resolve(uri::DEFAULT_BASE, id);
                root_ctx.base = uri::split_fragment(&resolved).0.to_owned();
            }
        } else if !self.root.is_boolean() {
            return Err(err(
                "",
                format!(
                    "a schema must be an object or a boolean, not {}",
                    show(self.root)
                ),
            ));
        }
        self.add_resource(root_ctx.base.clone(), "");
        self.by_uri.insert(uri::DEFAULT_BASE.to_owned(), 0);
        self.scan_all(&root_ctx)?;

        let root = self.node_for(String::new(), 0);
        // Dynamic references may land on any dynamic anchor.
        let mut resources: Vec<Resource> = Vec::with_capacity(self.resources.len());
        if self.has_dynamic_refs {
            let infos: Vec<ResourceInfo> = self.resources.clone();
            for ResourceInfo {
                pointer,
                dynamic,
                recursive,
            } in infos
            {
                let mut anchors = Vec::new();
                for (name, p) in dynamic {
                    let depth = self.context(&p).depth;
                    anchors.push((name.into_boxed_str(), self.node_for(p, depth)));
                }
                let recursive = recursive.then(|| {
                    let depth = self.context(&pointer).depth;
                    self.node_for(pointer, depth)
                });
                resources.push(Resource {
                    dynamic: anchors.into_boxed_slice(),
                    recursive,
                });
            }
        } else {
            resources.resize_with(self.resources.len(), Resource::default);
        }

        while let Some(id) = self.queue.pop() {
            let node = self.compile(id)?;
            self.nodes[id as usize] = Some(node);
        }
        let nodes: Vec<Node> = self
            .nodes
            .into_iter()
            .map(|n| {
                n.unwrap_or(Node {
                    resource: 0,
                    body: Body::Bool(true),
                })
            })
            .collect();
        check_cycles(&nodes, &self.locations)?;
        Ok(Compiled {
            nodes: nodes.into_boxed_slice(),
            resources: resources.into_boxed_slice(),
            root,
        })
    }

    fn child(
        &mut self,
        parent: &str,
        path: &[&str],
        value: &Value,
        depth: usize,
    ) -> Result<NodeId, SchemaError> {
        let mut pointer = parent.to_owned();
        for token in path {
            pointer = join(&pointer, token);
        }
        match value {
            Value::Object(_) | Value::Bool(_) => {}
            other => return Err(not_a_schema(pointer, other)),
        }
        if depth + 1 > MAX_SCHEMA_DEPTH {
            return Err(err(
                pointer,
                format!("subschemas are nested more than {MAX_SCHEMA_DEPTH} levels deep"),
            ));
        }
        Ok(self.node_for(pointer, depth + 1))
    }

    fn compile(&mut self, id: NodeId) -> Result<Node, SchemaError> {
        let pointer = self.locations[id as usize].clone();
        let depth = self.depths[id as usize];
        let root = self.root;
        let Some(value) = root.pointer(&pointer) else {
            return Err(err(pointer, "no such location"));
        };
        let ctx = self.context(&pointer);
        let obj = match value {
            Value::Bool(b) => {
                return Ok(Node {
                    resource: ctx.resource,
                    body: Body::Bool(*b),
                });
            }
            Value::Object(obj) => obj,
            other => return Err(not_a_schema(pointer, other)),
        };
        let draft = ctx.draft;
        let at = |keyword: &str| join(&pointer, keyword);
        let mut kws: Vec<Kw> = Vec::new();

        if let Some(reference) = obj.get("$ref") {
            let Value::String(reference) = reference else {
                return Err(err(
                    at("$ref"),
                    format!("expected a string, got {}", show(reference)),
                ));
            };
            let (target, _) = self.resolve(&ctx.base, reference, &at("$ref"))?;
            kws.push(Kw::Ref(target));
            if draft <= Draft::D7 {
                // Every other keyword beside `$ref` is ignored.
                return Ok(Node {
                    resource: ctx.resource,
                    body: Body::Keywords {
                        keywords: kws.into_boxed_slice(),
                        tracks: false,
                    },
                });
            }
        }

        if let Some(t) = obj.get("type") {
            let names: Vec<&str> = match t {
                Value::String(s) => vec![s.as_str()],
                Value::Array(items) if !items.is_empty() => items
                    .iter()
                    .map(|v| v.as_str())
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| err(at("type"), "expected type names"))?,
                other => {
                    return Err(err(
                        at("type"),
                        format!(
                            "expected a type name or a non-empty array of them, got {}",
                            show(other)
                        ),
                    ));
                }
            };
            let mut mask = 0;
            for name in &names {
                mask |= types::parse(name)
                    .ok_or_else(|| err(at("type"), format!("unknown type {name:?}")))?;
            }
            kws.push(Kw::Type {
                mask,
                strict_integer: draft == Draft::D4,
                names: names.iter().map(|n| Box::<str>::from(*n)).collect(),
            });
        }
        if draft >= Draft::D6 {
            if let Some(c) = obj.get("const") {
                kws.push(Kw::Const(c.clone()));
            }
        }
        if let Some(e) = obj.get("enum") {
            let Value::Array(options) = e else {
                return Err(err(
                    at("enum"),
                    format!("expected an array, got {}", show(e)),
                ));
            };
            kws.push(Kw::Enum(options.clone().into_boxed_slice()));
        }

        // Numbers.
        let number = |keyword: &str| -> Result<Option<(Num, Value)>, SchemaError> {
            match obj.get(keyword) {
                None => Ok(None),
                Some(Value::Number(n)) => Ok(Some((Num::of(n), Value::Number(n.clone())))),
                Some(other) => Err(err(
                    at(keyword),
                    format!("expected a number, got {}", show(other)),
                )),
            }
        };
        if let Some((m, v)) = number("multipleOf")? {
            if !m.is_positive() {
                return Err(err(at("multipleOf"), "must be greater than 0"));
            }
            kws.push(Kw::MultipleOf(m, v));
        }
        // draft-04 writes exclusive bounds as booleans beside `maximum`/`minimum`; a number
        // there (the later form) is ignored, as a boolean is from draft-06 on.
        let flag = |keyword: &str| -> Result<bool, SchemaError> {
            match obj.get(keyword) {
                Some(Value::Bool(b)) if draft == Draft::D4 => Ok(*b),
                Some(Value::Bool(_)) | None | Some(Value::Number(_)) => Ok(false),
                Some(other) => Err(err(
                    at(keyword),
                    format!("expected a number, got {}", show(other)),
                )),
            }
        };
        let exclusive_max = flag("exclusiveMaximum")?;
        let exclusive_min = flag("exclusiveMinimum")?;
        if let Some((n, v)) = number("maximum")? {
            kws.push(if exclusive_max {
                Kw::ExclusiveMaximum(n, v)
            } else {
                Kw::Maximum(n, v)
            });
        }
        if let Some((n, v)) = number("minimum")? {
            kws.push(if exclusive_min {
                Kw::ExclusiveMinimum(n, v)
            } else {
                Kw::Minimum(n, v)
            });
        }
        if draft > Draft::D4 {
            if let Some(Value::Number(n)) = obj.get("exclusiveMaximum") {
                kws.push(Kw::ExclusiveMaximum(Num::of(n), Value::Number(n.clone())));
            }
            if let Some(Value::Number(n)) = obj.get("exclusiveMinimum") {
                kws.push(Kw::ExclusiveMinimum(Num::of(n), Value::Number(n.clone())));
            }
        }

        let count = |keyword: &str| -> Result<Option<u64>, SchemaError> {
            let Some(v) = obj.get(keyword) else {
                return Ok(None);
            };
            let parsed = match v {
                Value::Number(n) => match Num::of(n) {
                    Num::I(i) => u64::try_from(i).ok(),
                    Num::U(u) => Some(u),
                    Num::F(f) if f >= 0.0 && f.fract() == 0.0 => {
                        Some(if f >= 18_446_744_073_709_551_615.0 {
                            u64::MAX
                        } else {
                            f as u64
                        })
                    }
                    Num::F(_) => None,
                },
                _ => None,
            };
            parsed.map(Some).ok_or_else(|| {
                err(
                    at(keyword),
                    format!("expected a non-negative integer, got {}", show(v)),
                )
            })
        };

        // Strings.
        if let Some(n) = count("maxLength")? {
            kws.push(Kw::MaxLength(n));
        }
        if let Some(n) = count("minLength")? {
            kws.push(Kw::MinLength(n));
        }
        if let Some(p) = obj.get("pattern") {
            let Value::String(p) = p else {
                return Err(err(
                    at("pattern"),
                    format!("expected a string, got {}", show(p)),
                ));
            };
            let pattern = Pattern::new(p).map_err(|e| err(at("pattern"), e))?;
            kws.push(Kw::Pattern(Box::new(pattern)));
        }
        if let Some(f) = obj.get("format") {
            let Value::String(f) = f else {
                return Err(err(
                    at("format"),
                    format!("expected a string, got {}", show(f)),
                ));
            };
            if let Some(format) = Format::for_draft(draft, f) {
                kws.push(Kw::Format(format, f.as_str().into()));
            }
        }

        // Objects: cheap checks first.
        if let Some(n) = count("maxProperties")? {
            kws.push(Kw::MaxProperties(n));
        }
        if let Some(n) = count("minProperties")? {
            kws.push(Kw::MinProperties(n));
        }
        let names = |value: &Value, location: String| -> Result<Box<[Box<str>]>, SchemaError> {
            match value {
                Value::Array(items) => items
                    .iter()
                    .map(|v| v.as_str().map(Box::<str>::from))
                    .collect::<Option<Box<[_]>>>()
                    .ok_or_else(|| err(location, "expected an array of strings")),
                other => Err(err(
                    location,
                    format!("expected an array of strings, got {}", show(other)),
                )),
            }
        };
        if let Some(r) = obj.get("required") {
            let required = names(r, at("required"))?;
            if !required.is_empty() {
                kws.push(Kw::Required(required));
            }
        }
        let mut dependent_required = Vec::new();
        let mut dependent_schemas = Vec::new();
        if draft >= Draft::D2019 {
            if let Some(d) = obj.get("dependentRequired") {
                let Value::Object(map) = d else {
                    return Err(err(at("dependentRequired"), "expected an object"));
                };
                for (name, value) in map {
                    let list = names(value, join(&at("dependentRequired"), name))?;
                    dependent_required.push((Box::<str>::from(name.as_str()), list));
                }
            }
            if let Some(d) = obj.get("dependentSchemas") {
                let Value::Object(map) = d else {
                    return Err(err(at("dependentSchemas"), "expected an object"));
                };
                for (name, value) in map {
                    let node = self.child(&pointer, &["dependentSchemas", name], value, depth)?;
                    dependent_schemas.push((Box::<str>::from(name.as_str()), node));
                }
            }
        }
        if let Some(d) = obj.get("dependencies") {
            let Value::Object(map) = d else {
                return Err(err(at("dependencies"), "expected an object"));
            };
            for (name, value) in map {
                if value.is_array() {
                    let list = names(value, join(&at("dependencies"), name))?;
                    dependent_required.push((Box::<str>::from(name.as_str()), list));
                } else {
                    let node = self.child(&pointer, &["dependencies", name], value, depth)?;
                    dependent_schemas.push((Box::<str>::from(name.as_str()), node));
                }
            }
        }
        if !dependent_required.is_empty() {
            kws.push(Kw::DependentRequired(dependent_required.into_boxed_slice()));
        }

        // Arrays: cheap checks first.
        if let Some(n) = count("maxItems")? {
            kws.push(Kw::MaxItems(n));
        }
        if let Some(n) = count("minItems")? {
            kws.push(Kw::MinItems(n));
        }
        if let Some(u) = obj.get("uniqueItems") {
            match u {
                Value::Bool(true) => kws.push(Kw::UniqueItems),
                Value::Bool(false) => {}
                other => {
                    return Err(err(
                        at("uniqueItems"),
                        format!("expected a boolean, got {}", show(other)),
                    ));
                }
            }
        }

        // Applicators.
        let optional_child =
            |this: &mut Self, keyword: &str| -> Result<Option<NodeId>, SchemaError> {
                obj.get(keyword)
                    .map(|value| this.child(&pointer, &[keyword], value, depth))
                    .transpose()
            };
        let schema_array = |this: &mut Self,
                            keyword: &str|
         -> Result<Option<Box<[NodeId]>>, SchemaError> {
            match obj.get(keyword) {
                None => Ok(None),
                Some(Value::Array(items)) if !items.is_empty() => {
                    let mut ids = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        ids.push(this.child(&pointer, &[keyword, &i.to_string()], item, depth)?);
                    }
                    Ok(Some(ids.into_boxed_slice()))
                }
                Some(other) => Err(err(
                    join(&pointer, keyword),
                    format!("expected a non-empty array of schemas, got {}", show(other)),
                )),
            }
        };
        let (prefix, rest) = if draft == Draft::D2020 {
            let prefix = schema_array(self, "prefixItems")?;
            let rest = optional_child(self, "items")?;
            (prefix, rest)
        } else {
            match obj.get("items") {
                Some(Value::Array(items)) => {
                    let mut ids = Vec::with_capacity(items.len());
                    for (i, item) in items.iter().enumerate() {
                        ids.push(self.child(&pointer, &["items", &i.to_string()], item, depth)?);
                    }
                    let rest = optional_child(self, "additionalItems")?;
                    (Some(ids.into_boxed_slice()), rest)
                }
                Some(items) => (None, Some(self.child(&pointer, &["items"], items, depth)?)),
                None => (None, None),
            }
        };
        if prefix.is_some() || rest.is_some() {
            kws.push(Kw::Items {
                prefix: prefix.unwrap_or_default(),
                rest,
            });
        }
        if draft >= Draft::D6 {
            if let Some(c) = obj.get("contains") {
                let node = self.child(&pointer, &["contains"], c, depth)?;
                let (min, max) = if draft >= Draft::D2019 {
                    (count("minContains")?.unwrap_or(1), count("maxContains")?)
                } else {
                    (1, None)
                };
                kws.push(Kw::Contains {
                    node,
                    min,
                    max,
                    annotates: draft == Draft::D2020,
                });
            }
        }

        let object = |keyword: &str| -> Result<Option<&Map<String, Value>>, SchemaError> {
            match obj.get(keyword) {
                None => Ok(None),
                Some(Value::Object(map)) => Ok(Some(map)),
                Some(other) => Err(err(
                    at(keyword),
                    format!("expected an object, got {}", show(other)),
                )),
            }
        };
        let mut named = Vec::new();
        for (name, value) in object("properties")?.into_iter().flatten() {
            let node = self.child(&pointer, &["properties", name], value, depth)?;
            named.push((Box::<str>::from(name.as_str()), node));
        }
        named.sort_by(|a, b| a.0.cmp(&b.0));
        let mut patterns = Vec::new();
        for (source, value) in object("patternProperties")?.into_iter().flatten() {
            let pattern =
                Pattern::new(source).map_err(|e| err(join(&at("patternProperties"), source), e))?;
            let node = self.child(&pointer, &["patternProperties", source], value, depth)?;
            patterns.push((pattern, node));
        }
        let additional = optional_child(self, "additionalProperties")?;
        if !named.is_empty() || !patterns.is_empty() || additional.is_some() {
            kws.push(Kw::Properties(Box::new(Props {
                named: named.into_boxed_slice(),
                patterns: patterns.into_boxed_slice(),
                additional,
            })));
        }
        if draft >= Draft::D6 {
            if let Some(node) = optional_child(self, "propertyNames")? {
                kws.push(Kw::PropertyNames(node));
            }
        }
        if !dependent_schemas.is_empty() {
            kws.push(Kw::DependentSchemas(dependent_schemas.into_boxed_slice()));
        }

        if let Some(ids) = schema_array(self, "allOf")? {
            kws.push(Kw::AllOf(ids));
        }
        if let Some(ids) = schema_array(self, "anyOf")? {
            kws.push(Kw::AnyOf(ids));
        }
        if let Some(ids) = schema_array(self, "oneOf")? {
            kws.push(Kw::OneOf(ids));
        }
        if let Some(n) = obj.get("not") {
            let node = self.child(&pointer, &["not"], n, depth)?;
            kws.push(Kw::Not(node, show(n).into()));
        }
        if draft >= Draft::D7 {
            if let Some(condition) = obj.get("if") {
                let condition = self.child(&pointer, &["if"], condition, depth)?;
                let then = optional_child(self, "then")?;
                let otherwise = optional_child(self, "else")?;
                // Even alone, `if` evaluates members for `unevaluated*`.
                kws.push(Kw::If {
                    condition,
                    then,
                    otherwise,
                });
            }
        }
        if draft == Draft::D2020 {
            if let Some(reference) = obj.get("$dynamicRef") {
                let Value::String(reference) = reference else {
                    return Err(err(at("$dynamicRef"), "expected a string"));
                };
                let (target, dynamic) = self.resolve(&ctx.base, reference, &at("$dynamicRef"))?;
                kws.push(Kw::DynamicRef {
                    target,
                    anchor: dynamic.map(|name| Anchor::Dynamic(name.into())),
                });
            }
        }
        if draft == Draft::D2019 {
            if let Some(reference) = obj.get("$recursiveRef") {
                let Value::String(reference) = reference else {
                    return Err(err(at("$recursiveRef"), "expected a string"));
                };
                let (target, _) = self.resolve(&ctx.base, reference, &at("$recursiveRef"))?;
                // Dynamic only when the initial target is a resource root with
                // `$recursiveAnchor: true`.
                let target_pointer = &self.locations[target as usize];
                let target_resource = self.context(target_pointer).resource as usize;
                let recursive = self
                    .resources
                    .get(target_resource)
                    .is_some_and(|r| r.recursive && &r.pointer == target_pointer);
                kws.push(Kw::DynamicRef {
                    target,
                    anchor: recursive.then_some(Anchor::Recursive),
                });
            }
        }
        let mut tracks = false;
        if draft >= Draft::D2019 {
            if let Some(node) = optional_child(self, "unevaluatedItems")? {
                kws.push(Kw::UnevaluatedItems(node));
                tracks = true;
            }
            if let Some(node) = optional_child(self, "unevaluatedProperties")? {
                kws.push(Kw::UnevaluatedProperties(node));
                tracks = true;
            }
        }
        Ok(Node {
            resource: ctx.resource,
            body: Body::Keywords {
                keywords: kws.into_boxed_slice(),
                tracks,
            },
        })
    }
}

/// The nodes a node applies to the same instance location (no progress into the instance).
fn in_place_edges(node: &Node) -> Vec<NodeId> {
    let mut out = Vec::new();
    let Body::Keywords { keywords, .. } = &node.body else {
        return out;
    };
    for kw in keywords.iter() {
        match kw {
            Kw::Ref(t) | Kw::Not(t, _) | Kw::DynamicRef { target: t, .. } => out.push(*t),
            Kw::AllOf(ids) | Kw::AnyOf(ids) | Kw::OneOf(ids) => out.extend(ids.iter()),
            Kw::If {
                condition,
                then,
                otherwise,
            } => {
                out.push(*condition);
                out.extend(then.iter().chain(otherwise.iter()));
            }
            Kw::DependentSchemas(entries) => out.extend(entries.iter().map(|(_, n)| *n)),
            _ => {}
        }
    }
    out
}

/// Refuses cycles of in-place applicators (`{"$ref": "#"}`, `allOf` back to an ancestor, ...):
/// evaluating them would recurse forever on the same instance.
fn check_cycles(nodes: &[Node], locations: &[String]) -> Result<(), SchemaError> {
    const NEW: u8 = 0;
    const ACTIVE: u8 = 1;
    const DONE: u8 = 2;
    let mut state = vec![NEW; nodes.len()];
    let edges: Vec<Vec<NodeId>> = nodes.iter().map(in_place_edges).collect();
    let mut stack: Vec<(NodeId, usize)> = Vec::new();
    for start in 0..nodes.len() {
        if state[start] != NEW {
            continue;
        }
        state[start] = ACTIVE;
        stack.push((start as NodeId, 0));
        while let Some((node, next)) = stack.last_mut() {
            let node_edges = &edges[*node as usize];
            if let Some(&target) = node_edges.get(*next) {
                *next += 1;
                match state[target as usize] {
                    NEW => {
                        state[target as usize] = ACTIVE;
                        stack.push((target, 0));
                    }
                    ACTIVE => {
                        return Err(err(
                            locations[*node as usize].clone(),
                            "a reference cycle that never moves into the instance: validation would not terminate",
                        ));
                    }
                    _ => {}
                }
            } else {
                state[*node as usize] = DONE;
                stack.pop();
            }
        }
    }
    Ok(())
}

pub(crate) fn compile(schema: &Value) -> Result<Compiled, SchemaError> {
    Compiler::new(schema).run()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn show_renders_what_a_full_rendering_would_show() {
        for value in [
            json!(null),
            json!("é".repeat(127)),
            json!("é".repeat(128)),
            json!("é\"".repeat(200)),
            json!((0..1000).collect::<Vec<_>>()),
            json!({"a": "x".repeat(300), "b": [1, 2]}),
        ] {
            assert_eq!(show(&value), crate::truncate(value.to_string()), "{value}");
        }
    }
}
