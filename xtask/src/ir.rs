//! The schema-independent intermediate representation: one set of named types per revision,
//! built from a revision's JSON Schema with every inline object, enum and union named.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::overlay::Overlay;

/// The Rust-side shape of a JSON value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ty {
    String,
    Integer,
    Number,
    Bool,
    /// Any JSON value.
    Any,
    /// An open JSON object.
    Object,
    /// A `_meta` object (open JSON object).
    Meta,
    Named(String),
    Array(Box<Ty>),
    Map(Box<Ty>),
    /// A string constant, represented by a zero-sized tag type.
    Const(String),
    Nullable(Box<Ty>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub wire: String,
    pub ty: Ty,
    pub required: bool,
    pub doc: Option<String>,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    /// For `_meta` fields: the named type the schema gives the object, if any.
    pub meta_schema: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Struct {
        fields: Vec<Field>,
        extra: Option<Ty>,
    },
    Enum(Vec<String>),
    Union(Vec<Ty>),
    Alias(Ty),
}

#[derive(Clone, Debug)]
pub struct Def {
    pub name: String,
    pub doc: Option<String>,
    pub kind: Kind,
    /// The top-level schema definition this type was found in.
    pub owner: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum MethodKind {
    Request,
    Notification,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sender {
    Client,
    Server,
    Both,
}

impl Sender {
    pub fn merge(self, other: Sender) -> Sender {
        if self == other { self } else { Sender::Both }
    }
    pub fn rust(self) -> &'static str {
        match self {
            Sender::Client => "Client",
            Sender::Server => "Server",
            Sender::Both => "Both",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Method {
    pub name: String,
    pub kind: MethodKind,
    pub sender: Sender,
    /// Marker type name (`CallTool`).
    pub marker: String,
    /// The message type (`CallToolRequest`).
    pub message: String,
    pub params: Option<Ty>,
    pub params_required: bool,
    pub result: Option<String>,
}

pub struct Revision {
    pub version: String,
    pub defs: BTreeMap<String, Def>,
    pub methods: Vec<Method>,
}

pub fn pascal(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    out
}

struct Ctx {
    parent: String,
    path: String,
    name: String,
    owner: String,
}

struct Builder<'a> {
    overlay: &'a Overlay,
    raw: &'a Map<String, Value>,
    defs: BTreeMap<String, Def>,
    errors: Vec<String>,
}

fn doc_of(schema: &Value) -> Option<String> {
    schema
        .get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

fn strip_docs(kind: &Kind) -> Kind {
    match kind {
        Kind::Struct { fields, extra } => Kind::Struct {
            fields: fields
                .iter()
                .map(|f| Field {
                    doc: None,
                    ..f.clone()
                })
                .collect(),
            extra: extra.clone(),
        },
        other => other.clone(),
    }
}

impl Builder<'_> {
    fn ref_name(&self, r: &str) -> String {
        let last = r.rsplit('/').next().unwrap_or(r);
        self.overlay.rename(last)
    }

    fn child(&self, parent: &str, path: &str, default: String, owner: &str) -> Ctx {
        let name = self.overlay.inline_name(parent, path).unwrap_or(default);
        Ctx {
            parent: parent.to_owned(),
            path: path.to_owned(),
            name,
            owner: owner.to_owned(),
        }
    }

    fn register(&mut self, def: Def) {
        if let Some(existing) = self.defs.get(&def.name) {
            if strip_docs(&existing.kind) != strip_docs(&def.kind) {
                self.errors.push(format!(
                    "two different types are both named `{}` (owners `{}` and `{}`); name one in xtask/overlay.toml",
                    def.name, existing.owner, def.owner
                ));
            }
            return;
        }
        self.defs.insert(def.name.clone(), def);
    }

    /// The type of a value position; names and registers inline objects, enums and unions.
    fn ty_of(&mut self, schema: &Value, ctx: &Ctx) -> Ty {
        let kind = self.kind_of(schema, ctx);
        self.named(kind, schema, ctx)
    }

    /// The type of `kind`: an alias stands for its type, anything else is registered under
    /// the context's name.
    fn named(&mut self, kind: Kind, schema: &Value, ctx: &Ctx) -> Ty {
        match kind {
            Kind::Alias(t) => t,
            kind => {
                self.register(Def {
                    name: ctx.name.clone(),
                    doc: doc_of(schema),
                    kind,
                    owner: ctx.owner.clone(),
                });
                Ty::Named(ctx.name.clone())
            }
        }
    }

    fn prim(&self, t: &str) -> Option<Ty> {
        Some(match t {
            "string" => Ty::String,
            "integer" => Ty::Integer,
            "number" => Ty::Number,
            "boolean" => Ty::Bool,
            "object" => Ty::Object,
            "array" => Ty::Array(Box::new(Ty::Any)),
            _ => return None,
        })
    }

    fn kind_of(&mut self, schema: &Value, ctx: &Ctx) -> Kind {
        let Some(obj) = schema.as_object() else {
            // `true` / `{}`-like schemas accept anything.
            return Kind::Alias(Ty::Any);
        };
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            return Kind::Alias(Ty::Named(self.ref_name(r)));
        }
        if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
            let refs: Vec<&str> = all
                .iter()
                .filter_map(|s| s.get("$ref").and_then(Value::as_str))
                .collect();
            if refs.len() == all.len() && refs.len() > 1 {
                // Intersection of named object types: merge their properties.
                let mut props = Map::new();
                let mut required = BTreeSet::new();
                let mut open = false;
                for r in refs {
                    let raw_name = r.rsplit('/').next().unwrap_or(r);
                    let Some(target) = self.raw.get(raw_name) else {
                        self.errors.push(format!("unresolved $ref {r}"));
                        continue;
                    };
                    if let Some(p) = target.get("properties").and_then(Value::as_object) {
                        for (k, v) in p {
                            props.insert(k.clone(), v.clone());
                        }
                    }
                    if let Some(req) = target.get("required").and_then(Value::as_array) {
                        required.extend(req.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                    open |= target
                        .get("additionalProperties")
                        .is_some_and(|ap| ap != &Value::Bool(false));
                }
                let mut merged = Map::new();
                merged.insert("type".into(), "object".into());
                merged.insert("properties".into(), Value::Object(props));
                merged.insert(
                    "required".into(),
                    Value::Array(required.into_iter().map(Value::String).collect()),
                );
                if open {
                    merged.insert("additionalProperties".into(), Value::Object(Map::new()));
                }
                return self.kind_of(&Value::Object(merged), ctx);
            }
            // A named type refined inline (for example an error with a fixed code): the
            // named type is the Rust shape.
            if let Some(first) = all.first() {
                return self.kind_of(first, ctx);
            }
        }
        if let Some(any) = obj.get("anyOf").and_then(Value::as_array) {
            let mut variants = Vec::new();
            for (i, member) in any.iter().enumerate() {
                if let Some(types) = member.get("type").and_then(Value::as_array) {
                    for t in types.iter().filter_map(Value::as_str) {
                        if let Some(p) = self.prim(t) {
                            variants.push(p);
                        }
                    }
                    continue;
                }
                let vctx = self.child(
                    &ctx.parent,
                    &format!("{}|{i}", ctx.path),
                    format!("{}Variant{i}", ctx.name),
                    &ctx.owner,
                );
                variants.push(self.ty_of(member, &vctx));
            }
            variants.dedup();
            if variants.len() == 1 {
                return Kind::Alias(variants.remove(0));
            }
            return Kind::Union(variants);
        }
        if let Some(types) = obj.get("type").and_then(Value::as_array) {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            let nullable = names.contains(&"null");
            let mut prims: Vec<Ty> = names.iter().filter_map(|t| self.prim(t)).collect();
            let inner = if prims.len() == 1 {
                Kind::Alias(prims.remove(0))
            } else {
                Kind::Union(prims)
            };
            if nullable {
                let t = self.named(inner, schema, ctx);
                return Kind::Alias(Ty::Nullable(Box::new(t)));
            }
            return inner;
        }
        if let Some(s) = obj.get("const").and_then(Value::as_str) {
            return Kind::Alias(Ty::Const(s.to_owned()));
        }
        if let Some(values) = obj.get("enum").and_then(Value::as_array) {
            let strings: Vec<String> = values
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if strings.len() == values.len() {
                return Kind::Enum(strings);
            }
        }
        let t = obj.get("type").and_then(Value::as_str);
        match t {
            Some("string") => Kind::Alias(Ty::String),
            Some("integer") => Kind::Alias(Ty::Integer),
            Some("number") => Kind::Alias(Ty::Number),
            Some("boolean") => Kind::Alias(Ty::Bool),
            Some("null") => Kind::Alias(Ty::Any),
            Some("array") => {
                let items = obj.get("items").cloned().unwrap_or(Value::Bool(true));
                let ictx = self.child(
                    &ctx.parent,
                    &format!("{}[]", ctx.path),
                    format!("{}Item", ctx.name),
                    &ctx.owner,
                );
                Kind::Alias(Ty::Array(Box::new(self.ty_of(&items, &ictx))))
            }
            Some("object") | None => {
                let props = obj.get("properties").and_then(Value::as_object);
                if let Some(props) = props.filter(|p| !p.is_empty()) {
                    return self.struct_of(obj, props, ctx);
                }
                match obj.get("additionalProperties") {
                    Some(Value::Object(ap)) if !ap.is_empty() => {
                        let vctx = self.child(
                            &ctx.parent,
                            &format!("{}{{}}", ctx.path),
                            format!("{}Value", ctx.name),
                            &ctx.owner,
                        );
                        let vt = self.ty_of(&Value::Object(ap.clone()), &vctx);
                        if vt == Ty::Any {
                            Kind::Alias(Ty::Object)
                        } else {
                            Kind::Alias(Ty::Map(Box::new(vt)))
                        }
                    }
                    _ if t.is_some() || props.is_some() => Kind::Alias(Ty::Object),
                    _ => Kind::Alias(Ty::Any),
                }
            }
            Some(other) => {
                self.errors
                    .push(format!("{}: unsupported type `{other}`", ctx.name));
                Kind::Alias(Ty::Any)
            }
        }
    }

    fn struct_of(
        &mut self,
        obj: &Map<String, Value>,
        props: &Map<String, Value>,
        ctx: &Ctx,
    ) -> Kind {
        let required: BTreeSet<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut keys: Vec<&String> = props.keys().collect();
        keys.sort();
        let mut fields = Vec::new();
        for key in keys {
            let Some(p) = props.get(key) else { continue };
            let (ty, meta_schema) = if key == "_meta" {
                let named = p
                    .get("$ref")
                    .and_then(Value::as_str)
                    .map(|r| self.ref_name(r));
                (Ty::Meta, named)
            } else {
                let fctx = self.child(
                    &ctx.name,
                    key,
                    format!("{}{}", ctx.name, pascal(key)),
                    &ctx.owner,
                );
                (self.ty_of(p, &fctx), None)
            };
            fields.push(Field {
                wire: key.clone(),
                ty,
                required: required.contains(key.as_str()),
                doc: doc_of(p),
                minimum: p.get("minimum").and_then(Value::as_f64),
                maximum: p.get("maximum").and_then(Value::as_f64),
                meta_schema,
            });
        }
        let extra = match obj.get("additionalProperties") {
            None if self.overlay.keep_unknown.contains(&ctx.name) => Some(Ty::Any),
            None | Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(Ty::Any),
            Some(Value::Object(ap)) if ap.is_empty() => Some(Ty::Any),
            Some(ap) => {
                let vctx = self.child(&ctx.name, "{}", format!("{}Value", ctx.name), &ctx.owner);
                Some(self.ty_of(ap, &vctx))
            }
        };
        Kind::Struct { fields, extra }
    }
}

/// Builds the named types and method table of one revision.
pub fn build(version: &str, schema: &Value, overlay: &Overlay) -> Result<Revision, Vec<String>> {
    let raw = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .and_then(Value::as_object)
        .ok_or_else(|| vec![format!("{version}: schema has no `$defs` or `definitions`")])?;
    let mut b = Builder {
        overlay,
        raw,
        defs: BTreeMap::new(),
        errors: Vec::new(),
    };
    let mut names: Vec<&String> = raw.keys().collect();
    names.sort();
    for raw_name in names {
        let Some(def_schema) = raw.get(raw_name) else {
            continue;
        };
        let name = overlay.rename(raw_name);
        let ctx = Ctx {
            parent: name.clone(),
            path: String::new(),
            name: name.clone(),
            owner: name.clone(),
        };
        let kind = if let Some(builtin) = overlay.builtin(raw_name) {
            Kind::Alias(builtin)
        } else {
            b.kind_of(def_schema, &ctx)
        };
        if kind == Kind::Alias(Ty::Named(name.clone())) {
            // An alias of a renamed type onto itself (`EmptyResult` = `Result`).
            continue;
        }
        b.register(Def {
            name,
            doc: doc_of(def_schema),
            kind,
            owner: ctx.owner,
        });
    }
    let methods = methods_of(version, raw, &b.defs, overlay, &mut b.errors);
    if !b.errors.is_empty() {
        return Err(b.errors);
    }
    Ok(Revision {
        version: version.to_owned(),
        defs: b.defs,
        methods,
    })
}

fn methods_of(
    version: &str,
    raw: &Map<String, Value>,
    defs: &BTreeMap<String, Def>,
    overlay: &Overlay,
    errors: &mut Vec<String>,
) -> Vec<Method> {
    let mut groups: Vec<(&str, MethodKind, Sender)> = vec![
        ("ClientRequest", MethodKind::Request, Sender::Client),
        (
            "ClientNotification",
            MethodKind::Notification,
            Sender::Client,
        ),
        (
            "ServerNotification",
            MethodKind::Notification,
            Sender::Server,
        ),
    ];
    if raw.contains_key("ServerRequest") {
        groups.push(("ServerRequest", MethodKind::Request, Sender::Server));
    } else if raw.contains_key("InputRequest") {
        // Revisions without server-to-client requests embed them in results instead.
        groups.push(("InputRequest", MethodKind::Request, Sender::Server));
    }
    let mut by_name: BTreeMap<String, Method> = BTreeMap::new();
    for (group, kind, sender) in groups {
        let Some(g) = raw.get(group) else {
            errors.push(format!("{version}: no `{group}` definition"));
            continue;
        };
        let members: Vec<String> = match g.get("anyOf").and_then(Value::as_array) {
            Some(any) => any
                .iter()
                .filter_map(|m| m.get("$ref").and_then(Value::as_str))
                .map(|r| r.rsplit('/').next().unwrap_or(r).to_owned())
                .collect(),
            None => vec![group.to_owned()],
        };
        for mut member in members {
            if member == group {
                // A group that is a single message in this revision (`ClientNotification` as a
                // copy of `CancelledNotification`): use the named message with the same method.
                let method = g.pointer("/properties/method/const").cloned();
                if let Some(named) = raw.iter().find(|(k, v)| {
                    k.as_str() != group
                        && !k.starts_with("Client")
                        && !k.starts_with("Server")
                        && (k.ends_with("Request") || k.ends_with("Notification"))
                        && v.pointer("/properties/method/const").cloned() == method
                }) {
                    member = named.0.clone();
                }
            }
            let Some(m) = raw.get(&member) else { continue };
            let Some(method) = m
                .pointer("/properties/method/const")
                .and_then(Value::as_str)
            else {
                errors.push(format!("{version}: `{member}` has no constant method"));
                continue;
            };
            let message = overlay.rename(&member);
            let (params, params_required) = match defs.get(&message).map(|d| &d.kind) {
                Some(Kind::Struct { fields, .. }) => fields
                    .iter()
                    .find(|f| f.wire == "params")
                    .map(|f| (Some(f.ty.clone()), f.required))
                    .unwrap_or((None, false)),
                _ => (None, false),
            };
            let base = message
                .strip_suffix("Request")
                .or_else(|| message.strip_suffix("Notification"))
                .unwrap_or(&message)
                .to_owned();
            let marker = base.clone();
            let result = match kind {
                MethodKind::Notification => None,
                MethodKind::Request => {
                    let candidate = format!("{base}Result");
                    if defs.contains_key(&candidate) {
                        Some(candidate)
                    } else {
                        Some(overlay.rename("Result"))
                    }
                }
            };
            match by_name.get_mut(method) {
                Some(existing) => existing.sender = existing.sender.merge(sender),
                None => {
                    by_name.insert(
                        method.to_owned(),
                        Method {
                            name: method.to_owned(),
                            kind,
                            sender,
                            marker,
                            message,
                            params,
                            params_required,
                            result,
                        },
                    );
                }
            }
        }
    }
    by_name.into_values().collect()
}
