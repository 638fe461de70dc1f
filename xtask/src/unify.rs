//! The unified model: the union of every revision's types. The newest definition of a type
//! decides its shape; fields and variants are merged and remember the revisions they exist in.

use std::collections::BTreeMap;

use crate::ir::{Def, Field, Kind, Method, Revision, Sender, Ty};
use crate::overlay::Overlay;

/// A bit set of revisions: bit `i` is the `i`-th revision of `schema/revisions.toml`.
pub type Mask = u32;

#[derive(Clone, Debug)]
pub struct UField {
    /// The field as the newest revision that has it defines it.
    pub field: Field,
    pub revs: Mask,
    /// Revisions in which the field is required.
    pub required_in: Mask,
}

#[derive(Clone, Debug)]
pub enum UKind {
    Struct {
        fields: Vec<UField>,
        extra: Option<Ty>,
    },
    Enum(Vec<(String, Mask)>),
    Union(Vec<(Ty, Mask)>),
    Alias(Ty),
}

#[derive(Clone, Debug)]
pub struct UDef {
    pub name: String,
    pub doc: Option<String>,
    pub kind: UKind,
    pub revs: Mask,
    /// Revisions in which the type has the shape of `kind` (the newest shape).
    pub shape_revs: Mask,
}

impl UDef {
    /// Whether a field is required by every revision that has this type.
    pub fn field_required(&self, f: &UField) -> bool {
        f.required_in == self.revs
    }
}

#[derive(Clone, Debug)]
pub struct UMethod {
    pub method: Method,
    pub revs: Mask,
    pub sender: Sender,
}

pub struct Unified {
    pub defs: BTreeMap<String, UDef>,
    pub methods: Vec<UMethod>,
}

fn same_shape(a: &Kind, b: &UKind) -> bool {
    matches!(
        (a, b),
        (Kind::Struct { .. }, UKind::Struct { .. })
            | (Kind::Enum(_), UKind::Enum(_))
            | (Kind::Union(_), UKind::Union(_))
    )
}

fn fresh(def: &Def, bit: Mask) -> UKind {
    match &def.kind {
        Kind::Struct { fields, extra } => UKind::Struct {
            fields: fields
                .iter()
                .map(|f| UField {
                    field: f.clone(),
                    revs: bit,
                    required_in: if f.required { bit } else { 0 },
                })
                .collect(),
            extra: extra.clone(),
        },
        Kind::Enum(values) => UKind::Enum(values.iter().map(|v| (v.clone(), bit)).collect()),
        Kind::Union(vs) => UKind::Union(vs.iter().map(|v| (v.clone(), bit)).collect()),
        Kind::Alias(t) => UKind::Alias(t.clone()),
    }
}

fn merge(into: &mut UDef, def: &Def, bit: Mask) {
    into.revs |= bit;
    if def.doc.is_some() {
        into.doc = def.doc.clone();
    }
    if !same_shape(&def.kind, &into.kind) {
        into.kind = fresh(def, bit);
        into.shape_revs = bit;
        return;
    }
    into.shape_revs |= bit;
    match (&mut into.kind, &def.kind) {
        (
            UKind::Struct { fields, extra },
            Kind::Struct {
                fields: new,
                extra: new_extra,
            },
        ) => {
            for f in new {
                match fields.iter_mut().find(|u| u.field.wire == f.wire) {
                    Some(u) => {
                        u.revs |= bit;
                        if f.required {
                            u.required_in |= bit;
                        }
                        let doc = f.doc.clone().or_else(|| u.field.doc.clone());
                        u.field = Field { doc, ..f.clone() };
                    }
                    None => fields.push(UField {
                        field: f.clone(),
                        revs: bit,
                        required_in: if f.required { bit } else { 0 },
                    }),
                }
            }
            if new_extra.is_some() {
                // The newest shape is open: a field it no longer declares may now hold any
                // value, so it leaves the typed fields and lands in `extra`.
                fields.retain(|u| new.iter().any(|f| f.wire == u.field.wire));
            }
            fields.sort_by(|a, b| a.field.wire.cmp(&b.field.wire));
            *extra = new_extra.clone();
        }
        (UKind::Enum(values), Kind::Enum(new)) => {
            for v in new {
                match values.iter_mut().find(|(x, _)| x == v) {
                    Some((_, m)) => *m |= bit,
                    None => values.push((v.clone(), bit)),
                }
            }
        }
        (UKind::Union(variants), Kind::Union(new)) => {
            let mut merged: Vec<(Ty, Mask)> = Vec::new();
            // The newest order first, then variants only older revisions have.
            for v in new {
                let old = variants.iter().find(|(x, _)| x == v).map_or(0, |(_, m)| *m);
                merged.push((v.clone(), old | bit));
            }
            for (v, m) in variants.iter() {
                if !new.contains(v) {
                    merged.push((v.clone(), *m));
                }
            }
            *variants = merged;
        }
        _ => into.kind = fresh(def, bit),
    }
}

pub fn unify(revisions: &[Revision], overlay: &Overlay) -> Result<Unified, String> {
    let mut defs: BTreeMap<String, UDef> = BTreeMap::new();
    for (i, rev) in revisions.iter().enumerate() {
        let bit: Mask = 1 << i;
        for def in rev.defs.values() {
            if overlay.unified_skip.contains(&def.owner) {
                continue;
            }
            match defs.get_mut(&def.name) {
                Some(u) => merge(u, def, bit),
                None => {
                    defs.insert(
                        def.name.clone(),
                        UDef {
                            name: def.name.clone(),
                            doc: def.doc.clone(),
                            kind: fresh(def, bit),
                            revs: bit,
                            shape_revs: bit,
                        },
                    );
                }
            }
        }
    }
    // Every referenced type must exist in the model.
    let mut missing = Vec::new();
    for d in defs.values() {
        let mut refs = Vec::new();
        match &d.kind {
            UKind::Struct { fields, extra } => {
                for f in fields {
                    collect_named(&f.field.ty, &mut refs);
                }
                if let Some(e) = extra {
                    collect_named(e, &mut refs);
                }
            }
            UKind::Union(vs) => vs.iter().for_each(|(t, _)| collect_named(t, &mut refs)),
            UKind::Alias(t) => collect_named(t, &mut refs),
            UKind::Enum(_) => {}
        }
        for r in refs {
            if !defs.contains_key(&r) {
                missing.push(format!("{} -> {r}", d.name));
            }
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "the unified model references types it leaves out: {}",
            missing.join(", ")
        ));
    }
    let mut methods: BTreeMap<String, UMethod> = BTreeMap::new();
    for (i, rev) in revisions.iter().enumerate() {
        let bit: Mask = 1 << i;
        for m in &rev.methods {
            match methods.get_mut(&m.name) {
                Some(u) => {
                    u.revs |= bit;
                    u.sender = u.sender.merge(m.sender);
                    if u.method.kind != m.kind {
                        return Err(format!("method {} changes kind between revisions", m.name));
                    }
                    u.method = m.clone();
                }
                None => {
                    methods.insert(
                        m.name.clone(),
                        UMethod {
                            method: m.clone(),
                            revs: bit,
                            sender: m.sender,
                        },
                    );
                }
            }
        }
    }
    let methods: Vec<UMethod> = methods.into_values().collect();
    let mut markers = BTreeMap::new();
    for m in &methods {
        if let Some(other) = markers.insert(m.method.marker.clone(), m.method.name.clone()) {
            return Err(format!(
                "methods {other} and {} share the marker name {}",
                m.method.name, m.method.marker
            ));
        }
    }
    Ok(Unified { defs, methods })
}

pub fn collect_named(t: &Ty, out: &mut Vec<String>) {
    match t {
        Ty::Named(n) => out.push(n.clone()),
        Ty::Array(i) | Ty::Map(i) | Ty::Nullable(i) => collect_named(i, out),
        _ => {}
    }
}
