//! Evaluating an instance against compiled nodes.
//!
//! One walk serves both entry points: with no error list it stops at the first failure and
//! allocates nothing (the instance path is a chain of stack frames, rendered only for an error);
//! with one it goes on collecting until the list is full. Annotations for
//! `unevaluatedProperties`/`unevaluatedItems` are collected only below a node that has one of
//! them, as bit sets of the instance's member indices.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

use crate::ValidationError;
use crate::compile::{Anchor, Body, Compiled, Kw, NodeId, Props, types};
use crate::number::{self, Num};

/// How many nodes one evaluation may nest (instance depth and references together).
pub(crate) const MAX_EVAL_DEPTH: u32 = 256;

/// Node evaluations every validation may make, whatever the instance.
pub(crate) const BASE_STEPS: u64 = 100_000;
/// Node evaluations each value of the instance adds to that. References that each name the
/// next definition twice double the work at every level, so a small schema from a peer could
/// otherwise take minutes; a validation that runs out fails.
pub(crate) const STEPS_PER_VALUE: u64 = 64;

/// The node evaluations a validation of `instance` may make.
pub(crate) fn step_budget(instance: &Value) -> u64 {
    fn values(v: &Value, depth: u32) -> u64 {
        if depth >= MAX_EVAL_DEPTH {
            return 1;
        }
        1 + match v {
            Value::Array(a) => a.iter().map(|v| values(v, depth + 1)).sum(),
            Value::Object(o) => o.values().map(|v| values(v, depth + 1)).sum(),
            _ => 0,
        }
    }
    BASE_STEPS.saturating_add(STEPS_PER_VALUE.saturating_mul(values(instance, 0)))
}

/// The value under evaluation: a JSON value, or a property name (for `propertyNames`), which
/// is evaluated as a string without building one.
#[derive(Clone, Copy)]
pub(crate) enum Inst<'a> {
    Val(&'a Value),
    Key(&'a str),
}

impl<'a> Inst<'a> {
    fn as_str(self) -> Option<&'a str> {
        match self {
            Inst::Val(Value::String(s)) => Some(s),
            Inst::Key(k) => Some(k),
            Inst::Val(_) => None,
        }
    }

    fn as_object(self) -> Option<&'a Map<String, Value>> {
        match self {
            Inst::Val(Value::Object(o)) => Some(o),
            _ => None,
        }
    }

    fn as_array(self) -> Option<&'a [Value]> {
        match self {
            Inst::Val(Value::Array(a)) => Some(a),
            _ => None,
        }
    }

    fn as_num(self) -> Option<Num> {
        match self {
            Inst::Val(Value::Number(n)) => Some(Num::of(n)),
            _ => None,
        }
    }

    fn show(self) -> String {
        match self {
            Inst::Val(v) => crate::compile::show(v),
            Inst::Key(k) => crate::truncate(Value::from(k).to_string()),
        }
    }

    fn has_type(self, mask: u8, strict_integer: bool) -> bool {
        let bit = match self {
            Inst::Key(_) | Inst::Val(Value::String(_)) => types::STRING,
            Inst::Val(Value::Null) => types::NULL,
            Inst::Val(Value::Bool(_)) => types::BOOLEAN,
            Inst::Val(Value::Object(_)) => types::OBJECT,
            Inst::Val(Value::Array(_)) => types::ARRAY,
            Inst::Val(Value::Number(n)) => {
                return mask & types::NUMBER != 0
                    || (mask & types::INTEGER != 0
                        && if strict_integer {
                            !matches!(Num::of(n), Num::F(_))
                        } else {
                            Num::of(n).is_integer()
                        });
            }
        };
        mask & bit != 0
    }

    fn equals(self, other: &Value) -> bool {
        match self {
            Inst::Val(v) => json_equal(v, other),
            Inst::Key(k) => other.as_str() == Some(k),
        }
    }
}

/// JSON equality, numbers compared by value (`1 == 1.0`).
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number::equal(Num::of(x), Num::of(y)),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A hash consistent with [`json_equal`].
fn hash_value(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => match Num::of(n) {
            Num::I(i) => (2u8, i128::from(i)).hash(h),
            Num::U(u) => (2u8, i128::from(u)).hash(h),
            Num::F(f) if f.fract() == 0.0 && f.abs() < 1.0e38 => (2u8, f as i128).hash(h),
            Num::F(f) => (3u8, f.to_bits()).hash(h),
        },
        Value::String(s) => (4u8, s).hash(h),
        Value::Array(items) => {
            (5u8, items.len()).hash(h);
            for item in items {
                hash_value(item, h);
            }
        }
        Value::Object(map) => {
            // Independent of member order.
            let mut sum = 0u64;
            for (k, v) in map {
                let mut entry = std::collections::hash_map::DefaultHasher::new();
                k.hash(&mut entry);
                hash_value(v, &mut entry);
                sum = sum.wrapping_add(entry.finish());
            }
            (6u8, map.len(), sum).hash(h);
        }
    }
}

fn has_duplicates(items: &[Value]) -> bool {
    if items.len() <= 32 {
        return items
            .iter()
            .enumerate()
            .any(|(i, a)| items[i + 1..].iter().any(|b| json_equal(a, b)));
    }
    let mut hashed: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            hash_value(v, &mut h);
            (h.finish(), i)
        })
        .collect();
    hashed.sort_unstable();
    // Within each run of equal hashes, compare every pair.
    hashed.chunk_by(|a, b| a.0 == b.0).any(|run| {
        run.iter().enumerate().any(|(i, a)| {
            run[i + 1..]
                .iter()
                .any(|b| json_equal(&items[a.1], &items[b.1]))
        })
    })
}

/// Where the instance under evaluation sits, as a chain of stack frames.
pub(crate) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    /// The JSON pointer (`""` for the root).
    fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut at = self;
        loop {
            match at {
                Path::Root => break,
                Path::Key(parent, key) => {
                    segments.push(key.replace('~', "~0").replace('/', "~1"));
                    at = parent;
                }
                Path::Index(parent, i) => {
                    segments.push(i.to_string());
                    at = parent;
                }
            }
        }
        let mut out = String::new();
        for s in segments.iter().rev() {
            out.push('/');
            out.push_str(s);
        }
        out
    }
}

/// The dynamic scope: the schema resources evaluation has entered, innermost first.
pub(crate) struct Scope<'a> {
    pub(crate) resource: u32,
    pub(crate) parent: Option<&'a Scope<'a>>,
}

/// Which members of the current object or array some keyword evaluated successfully.
#[derive(Default)]
pub(crate) struct Marks {
    all: bool,
    low: u128,
    high: Vec<u64>,
}

impl Marks {
    fn mark(&mut self, i: usize) {
        if self.all {
            return;
        }
        if i < 128 {
            self.low |= 1 << i;
        } else {
            let j = i - 128;
            if self.high.len() <= j / 64 {
                self.high.resize(j / 64 + 1, 0);
            }
            self.high[j / 64] |= 1 << (j % 64);
        }
    }

    fn mark_first(&mut self, n: usize) {
        if n >= 128 {
            self.low = u128::MAX;
            for i in 128..n {
                self.mark(i);
            }
        } else if n > 0 {
            self.low |= u128::MAX >> (128 - n);
        }
    }

    fn is_marked(&self, i: usize) -> bool {
        if self.all {
            return true;
        }
        if i < 128 {
            self.low & (1 << i) != 0
        } else {
            let j = i - 128;
            self.high
                .get(j / 64)
                .is_some_and(|w| w & (1 << (j % 64)) != 0)
        }
    }

    fn merge(&mut self, other: &Marks) {
        self.all |= other.all;
        self.low |= other.low;
        if self.high.len() < other.high.len() {
            self.high.resize(other.high.len(), 0);
        }
        for (a, b) in self.high.iter_mut().zip(&other.high) {
            *a |= b;
        }
    }
}

/// The state of one evaluation.
pub(crate) struct Cx<'e> {
    errors: Option<&'e mut Vec<ValidationError>>,
    max: usize,
    depth: u32,
    /// Node evaluations left, shared with the silent contexts below this one. Once it is
    /// spent every node fails, and the validation as a whole fails (a `not` over a node that
    /// failed for want of steps must not pass).
    steps: &'e std::cell::Cell<u64>,
}

impl<'e> Cx<'e> {
    pub(crate) fn new(
        errors: Option<&'e mut Vec<ValidationError>>,
        max: usize,
        steps: &'e std::cell::Cell<u64>,
    ) -> Self {
        Cx {
            errors,
            max,
            depth: 0,
            steps,
        }
    }

    /// Collecting errors, with room for more: keep going after a failure.
    fn collecting(&self) -> bool {
        matches!(&self.errors, Some(e) if e.len() < self.max)
    }

    /// `ok`, reporting `message` at `path` when it is false.
    fn check(&mut self, path: &Path<'_>, ok: bool, message: impl FnOnce() -> String) -> bool {
        if !ok {
            self.report(path, message);
        }
        ok
    }

    fn report(&mut self, path: &Path<'_>, message: impl FnOnce() -> String) {
        if let Some(errors) = &mut self.errors {
            if errors.len() < self.max {
                errors.push(ValidationError::new(path.render(), message()));
            }
        }
    }

    /// A context that only answers yes or no, at the same depth.
    fn silent(&self) -> Cx<'e> {
        Cx {
            errors: None,
            max: 0,
            depth: self.depth,
            steps: self.steps,
        }
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn quoted_list<S: AsRef<str>>(names: impl Iterator<Item = S>) -> (String, usize) {
    let mut out = String::new();
    let mut count = 0;
    for name in names {
        if count > 0 {
            out.push_str(", ");
        }
        out.push('\'');
        out.push_str(name.as_ref());
        out.push('\'');
        count += 1;
    }
    (out, count)
}

/// Whether `check` holds for each of `items`: all are checked when `cx` collects every
/// error, else the first failure ends the loop.
fn every<'e, T>(
    cx: &mut Cx<'e>,
    items: impl IntoIterator<Item = T>,
    mut check: impl FnMut(&mut Cx<'e>, T) -> bool,
) -> bool {
    let mut valid = true;
    for item in items {
        if !check(cx, item) {
            valid = false;
            if !cx.collecting() {
                break;
            }
        }
    }
    valid
}

fn were(count: usize) -> &'static str {
    if count == 1 { "was" } else { "were" }
}

fn enum_message(inst: Inst<'_>, options: &[Value]) -> String {
    let mut out = format!("{} is not one of ", inst.show());
    let show = |v: &Value| crate::compile::show(v);
    if options.len() <= 3 {
        for (i, option) in options.iter().enumerate() {
            if i == 0 {
                out.push_str(&show(option));
            } else if i == options.len() - 1 {
                out.push_str(" or ");
                out.push_str(&show(option));
            } else {
                out.push_str(", ");
                out.push_str(&show(option));
            }
        }
    } else {
        for (i, option) in options.iter().take(2).enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&show(option));
        }
        out.push_str(&format!(" or {} other candidates", options.len() - 2));
    }
    out
}

impl Compiled {
    fn is_false(&self, id: NodeId) -> bool {
        matches!(self.nodes[id as usize].body, Body::Bool(false))
    }

    /// Evaluates node `id` against `inst`. `marks`, when given, receives the members of `inst`
    /// this node evaluated (only if it passes).
    pub(crate) fn node(
        &self,
        id: NodeId,
        inst: Inst<'_>,
        cx: &mut Cx<'_>,
        path: &Path<'_>,
        scope: &Scope<'_>,
        marks: Option<&mut Marks>,
    ) -> bool {
        let node = &self.nodes[id as usize];
        let (keywords, tracks) = match &node.body {
            Body::Bool(true) => return true,
            Body::Bool(false) => {
                cx.report(path, || {
                    format!("False schema does not allow {}", inst.show())
                });
                return false;
            }
            Body::Keywords { keywords, tracks } => (keywords, *tracks),
        };
        match cx.steps.get() {
            0 => return false,
            left => cx.steps.set(left - 1),
        }
        if cx.depth >= MAX_EVAL_DEPTH {
            cx.report(path, || {
                format!(
                    "validation is nested more than {MAX_EVAL_DEPTH} levels deep (a deeply nested instance or a recursive schema)"
                )
            });
            return false;
        }
        cx.depth += 1;
        let frame;
        let scope = if node.resource == scope.resource {
            scope
        } else {
            frame = Scope {
                resource: node.resource,
                parent: Some(scope),
            };
            &frame
        };
        let own = tracks && matches!(inst, Inst::Val(Value::Object(_) | Value::Array(_)));
        let valid = if own {
            let mut local = Marks::default();
            let valid = self.keywords(keywords, inst, cx, path, scope, Some(&mut local));
            if valid {
                if let Some(parent) = marks {
                    parent.merge(&local);
                }
            }
            valid
        } else {
            self.keywords(keywords, inst, cx, path, scope, marks)
        };
        cx.depth -= 1;
        valid
    }

    fn keywords(
        &self,
        keywords: &[Kw],
        inst: Inst<'_>,
        cx: &mut Cx<'_>,
        path: &Path<'_>,
        scope: &Scope<'_>,
        mut marks: Option<&mut Marks>,
    ) -> bool {
        every(cx, keywords, |cx, kw| {
            self.keyword(kw, inst, cx, path, scope, marks.as_deref_mut())
        })
    }

    #[allow(clippy::too_many_lines)]
    fn keyword(
        &self,
        kw: &Kw,
        inst: Inst<'_>,
        cx: &mut Cx<'_>,
        path: &Path<'_>,
        scope: &Scope<'_>,
        mut marks: Option<&mut Marks>,
    ) -> bool {
        match kw {
            Kw::Items { prefix, rest } => match inst.as_array() {
                Some(a) => self.items(prefix, *rest, a, cx, path, scope, marks),
                None => true,
            },
            Kw::Contains {
                node,
                min,
                max,
                annotates,
            } => match inst.as_array() {
                Some(a) => {
                    let marks = if *annotates { marks } else { None };
                    self.contains(*node, *min, *max, a, inst, cx, path, scope, marks)
                }
                None => true,
            },
            Kw::DependentSchemas(entries) => match inst.as_object() {
                Some(o) => every(cx, entries.iter(), |cx, (name, node)| {
                    !o.contains_key(&**name)
                        || self.node(*node, inst, cx, path, scope, marks.as_deref_mut())
                }),
                None => true,
            },
            Kw::Properties(props) => match inst.as_object() {
                Some(o) => self.properties(props, o, cx, path, scope, marks),
                None => true,
            },
            Kw::PropertyNames(node) => match inst.as_object() {
                Some(o) => every(cx, o.keys(), |cx, key| {
                    self.node(*node, Inst::Key(key), cx, path, scope, None)
                }),
                None => true,
            },
            Kw::AllOf(ids) => every(cx, ids.iter(), |cx, id| {
                self.node(*id, inst, cx, path, scope, marks.as_deref_mut())
            }),
            Kw::AnyOf(ids) => {
                let mut any = false;
                for id in ids.iter() {
                    let mut silent = cx.silent();
                    match marks.as_deref_mut() {
                        Some(marks) => {
                            let mut branch = Marks::default();
                            if self.node(*id, inst, &mut silent, path, scope, Some(&mut branch)) {
                                any = true;
                                marks.merge(&branch);
                            }
                        }
                        None => {
                            if self.node(*id, inst, &mut silent, path, scope, None) {
                                any = true;
                                break;
                            }
                        }
                    }
                }
                cx.check(path, any, || {
                    format!(
                        "{} is not valid under any of the schemas listed in the 'anyOf' keyword",
                        inst.show()
                    )
                })
            }
            Kw::OneOf(ids) => {
                let mut valid_count = 0;
                let mut first = Marks::default();
                let tracking = marks.is_some();
                for id in ids.iter() {
                    let mut silent = cx.silent();
                    let mut branch = Marks::default();
                    if self.node(
                        *id,
                        inst,
                        &mut silent,
                        path,
                        scope,
                        tracking.then_some(&mut branch),
                    ) {
                        valid_count += 1;
                        if valid_count == 1 {
                            first = branch;
                        } else {
                            break;
                        }
                    }
                }
                match valid_count {
                    1 => {
                        if let Some(marks) = marks {
                            marks.merge(&first);
                        }
                        true
                    }
                    0 => cx.check(path, false, || format!(
                            "{} is not valid under any of the schemas listed in the 'oneOf' keyword",
                            inst.show()
                        )),
                    _ => cx.check(path, false, || format!(
                            "{} is valid under more than one of the schemas listed in the 'oneOf' keyword",
                            inst.show()
                        )),
                }
            }
            Kw::Not(id, shown) => {
                let mut silent = cx.silent();
                let matched = self.node(*id, inst, &mut silent, path, scope, None);
                cx.check(path, !matched, || {
                    format!("{shown} is not allowed for {}", inst.show())
                })
            }
            Kw::If {
                condition,
                then,
                otherwise,
            } => {
                if then.is_none() && otherwise.is_none() && marks.is_none() {
                    return true;
                }
                let mut silent = cx.silent();
                let mut condition_marks = Marks::default();
                let tracking = marks.is_some();
                let holds = self.node(
                    *condition,
                    inst,
                    &mut silent,
                    path,
                    scope,
                    tracking.then_some(&mut condition_marks),
                );
                if holds {
                    if let Some(marks) = marks.as_deref_mut() {
                        marks.merge(&condition_marks);
                    }
                    match then {
                        Some(t) => self.node(*t, inst, cx, path, scope, marks),
                        None => true,
                    }
                } else {
                    match otherwise {
                        Some(e) => self.node(*e, inst, cx, path, scope, marks),
                        None => true,
                    }
                }
            }
            Kw::Ref(target) => self.node(*target, inst, cx, path, scope, marks),
            Kw::DynamicRef { target, anchor } => {
                let target = match anchor {
                    Some(anchor) => self.dynamic_target(anchor, scope).unwrap_or(*target),
                    None => *target,
                };
                self.node(target, inst, cx, path, scope, marks)
            }
            Kw::UnevaluatedItems(node) => match inst.as_array() {
                Some(a) => {
                    let items = a.iter().enumerate().map(|(i, v)| (Member::Item(i), v));
                    self.unevaluated(*node, items, "items", cx, path, scope, marks)
                }
                None => true,
            },
            Kw::UnevaluatedProperties(node) => match inst.as_object() {
                Some(o) => {
                    let properties = o.iter().map(|(k, v)| (Member::Property(k), v));
                    self.unevaluated(*node, properties, "properties", cx, path, scope, marks)
                }
                None => true,
            },
            _ => self.assertion(kw, inst, cx, path),
        }
    }

    /// The keywords that apply no subschema. Kept out of [`Self::keyword`] so the frames of
    /// the recursion stay small.
    #[inline(never)]
    #[allow(clippy::too_many_lines)]
    fn assertion(&self, kw: &Kw, inst: Inst<'_>, cx: &mut Cx<'_>, path: &Path<'_>) -> bool {
        match kw {
            Kw::Type {
                mask,
                strict_integer,
                names,
            } => cx.check(path, inst.has_type(*mask, *strict_integer), || {
                if names.len() == 1 {
                    format!("{} is not of type \"{}\"", inst.show(), names[0])
                } else {
                    let list: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
                    format!("{} is not of types {}", inst.show(), list.join(", "))
                }
            }),
            Kw::Enum(options) => cx.check(path, options.iter().any(|o| inst.equals(o)), || {
                enum_message(inst, options)
            }),
            Kw::Const(expected) => cx.check(path, inst.equals(expected), || {
                format!("{} was expected", crate::compile::show(expected))
            }),
            Kw::MultipleOf(m, shown) => match inst.as_num() {
                Some(n) => cx.check(path, number::is_multiple_of(n, *m), || {
                    format!("{} is not a multiple of {shown}", inst.show())
                }),
                None => true,
            },
            Kw::Minimum(limit, shown)
            | Kw::Maximum(limit, shown)
            | Kw::ExclusiveMinimum(limit, shown)
            | Kw::ExclusiveMaximum(limit, shown) => match inst.as_num() {
                Some(n) => {
                    // An incomparable pair (NaN) passes the inclusive bounds, fails the others.
                    let order = number::compare(n, *limit);
                    let (ok, relation) = match kw {
                        Kw::Minimum(..) => (order != Some(Ordering::Less), "less than"),
                        Kw::Maximum(..) => (order != Some(Ordering::Greater), "greater than"),
                        Kw::ExclusiveMinimum(..) => {
                            (order == Some(Ordering::Greater), "less than or equal to")
                        }
                        _ => (order == Some(Ordering::Less), "greater than or equal to"),
                    };
                    let bound = match kw {
                        Kw::Minimum(..) | Kw::ExclusiveMinimum(..) => "minimum",
                        _ => "maximum",
                    };
                    cx.check(path, ok, || {
                        format!("{} is {relation} the {bound} of {shown}", inst.show())
                    })
                }
                None => true,
            },
            Kw::MinLength(bound) | Kw::MaxLength(bound) => match inst.as_str() {
                Some(s) => {
                    let at_least = matches!(kw, Kw::MinLength(_));
                    // The byte length is at least the character count: it settles most
                    // strings without counting.
                    let ok = if at_least {
                        s.len() as u64 >= *bound && s.chars().count() as u64 >= *bound
                    } else {
                        s.len() as u64 <= *bound || s.chars().count() as u64 <= *bound
                    };
                    cx.check(path, ok, || {
                        format!(
                            "{} is {} than {}",
                            inst.show(),
                            if at_least { "shorter" } else { "longer" },
                            plural(*bound, "character", "characters")
                        )
                    })
                }
                None => true,
            },
            Kw::Pattern(p) => match inst.as_str() {
                Some(s) => cx.check(path, p.is_match(s), || {
                    format!("{} does not match \"{}\"", inst.show(), p.source())
                }),
                None => true,
            },
            Kw::Format(format, name) => match inst.as_str() {
                Some(s) => cx.check(path, format.is_valid(s), || {
                    format!("{} is not a \"{name}\"", inst.show())
                }),
                None => true,
            },
            Kw::UniqueItems => match inst.as_array() {
                Some(a) => cx.check(path, !has_duplicates(a), || {
                    format!("{} has non-unique elements", inst.show())
                }),
                None => true,
            },
            Kw::MinItems(bound)
            | Kw::MaxItems(bound)
            | Kw::MinProperties(bound)
            | Kw::MaxProperties(bound) => {
                let (size, unit, units) = match kw {
                    Kw::MinItems(_) | Kw::MaxItems(_) => {
                        (inst.as_array().map(|a| a.len()), "item", "items")
                    }
                    _ => (inst.as_object().map(|o| o.len()), "property", "properties"),
                };
                let at_least = matches!(kw, Kw::MinItems(_) | Kw::MinProperties(_));
                match size {
                    Some(size) => cx.check(
                        path,
                        if at_least {
                            size as u64 >= *bound
                        } else {
                            size as u64 <= *bound
                        },
                        || {
                            format!(
                                "{} has {} than {}",
                                inst.show(),
                                if at_least { "less" } else { "more" },
                                plural(*bound, unit, units)
                            )
                        },
                    ),
                    None => true,
                }
            }
            Kw::Required(names) => match inst.as_object() {
                Some(o) => self.required(names, o, cx, path),
                None => true,
            },
            Kw::DependentRequired(entries) => match inst.as_object() {
                Some(o) => every(cx, entries.iter(), |cx, (name, required)| {
                    !o.contains_key(&**name) || self.required(required, o, cx, path)
                }),
                None => true,
            },
            _ => true,
        }
    }

    /// The outermost resource in the dynamic scope with the anchor.
    fn dynamic_target(&self, anchor: &Anchor, scope: &Scope<'_>) -> Option<NodeId> {
        let mut found = None;
        let mut at = Some(scope);
        while let Some(s) = at {
            let resource = &self.resources[s.resource as usize];
            let hit = match anchor {
                Anchor::Dynamic(name) => resource
                    .dynamic
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, id)| *id),
                Anchor::Recursive => resource.recursive,
            };
            if hit.is_some() {
                found = hit;
            }
            at = s.parent;
        }
        found
    }

    fn required(
        &self,
        names: &[Box<str>],
        o: &Map<String, Value>,
        cx: &mut Cx<'_>,
        path: &Path<'_>,
    ) -> bool {
        let mut valid = true;
        for name in names {
            if !o.contains_key(&**name) {
                valid = false;
                cx.report(path, || {
                    format!("{} is a required property", Value::from(&**name))
                });
                if !cx.collecting() {
                    break;
                }
            }
        }
        valid
    }

    #[allow(clippy::too_many_arguments)]
    fn items(
        &self,
        prefix: &[NodeId],
        rest: Option<NodeId>,
        a: &[Value],
        cx: &mut Cx<'_>,
        path: &Path<'_>,
        scope: &Scope<'_>,
        marks: Option<&mut Marks>,
    ) -> bool {
        let mut valid = true;
        for (i, item) in a.iter().enumerate() {
            let node = if i < prefix.len() {
                prefix[i]
            } else if let Some(rest) = rest {
                if self.is_false(rest) {
                    cx.report(path, || {
                        let extra: Vec<String> =
                            a[prefix.len()..].iter().map(crate::compile::show).collect();
                        format!(
                            "Additional items are not allowed ({} {} unexpected)",
                            extra.join(", "),
                            were(extra.len())
                        )
                    });
                    valid = false;
                    break;
                }
                rest
            } else {
                break;
            };
            let item_path = Path::Index(path, i);
            if !self.node(node, Inst::Val(item), cx, &item_path, scope, None) {
                valid = false;
                if !cx.collecting() {
                    return false;
                }
            }
        }
        if let Some(marks) = marks {
            if rest.is_some() {
                marks.all = true;
            } else {
                marks.mark_first(prefix.len().min(a.len()));
            }
        }
        valid
    }

    #[allow(clippy::too_many_arguments)]
    fn contains(
        &self,
        node: NodeId,
        min: u64,
        max: Option<u64>,
        a: &[Value],
        inst: Inst<'_>,
        cx: &mut Cx<'_>,
        path: &Path<'_>,
        scope: &Scope<'_>,
        mut marks: Option<&mut Marks>,
    ) -> bool {
        let mut count = 0u64;
        for (i, item) in a.iter().enumerate() {
            let mut silent = cx.silent();
            let item_path = Path::Index(path, i);
            if self.node(node, Inst::Val(item), &mut silent, &item_path, scope, None) {
                count += 1;
                if let Some(marks) = marks.as_deref_mut() {
                    marks.mark(i);
                } else if max.is_none_or(|max| count > max) && count >= min {
                    break;
                }
            }
        }
        if count < min {
            cx.report(path, || {
                if min == 1 {
                    format!("None of {} are valid under the given schema", inst.show())
                } else {
                    format!(
                        "{} has fewer than {} valid under the given schema",
                        inst.show(),
                        plural(min, "item", "items")
                    )
                }
            });
            return false;
        }
        if let Some(max) = max {
            if count > max {
                cx.report(path, || {
                    format!(
                        "{} has more than {} valid under the given schema",
                        inst.show(),
                        plural(max, "item", "items")
                    )
                });
                return false;
            }
        }
        true
    }

    fn properties(
        &self,
        props: &Props,
        o: &Map<String, Value>,
        cx: &mut Cx<'_>,
        path: &Path<'_>,
        scope: &Scope<'_>,
        mut marks: Option<&mut Marks>,
    ) -> bool {
        let mut valid = true;
        if props.patterns.is_empty() && props.additional.is_none() && marks.is_none() {
            // Only named properties: look each up.
            for (name, node) in props.named.iter() {
                if let Some((key, value)) = o.get_key_value(&**name) {
                    let p = Path::Key(path, key);
                    if !self.node(*node, Inst::Val(value), cx, &p, scope, None) {
                        valid = false;
                        if !cx.collecting() {
                            return false;
                        }
                    }
                }
            }
            return valid;
        }
        let additional_false = props.additional.is_some_and(|a| self.is_false(a));
        let mut unexpected: Vec<&str> = Vec::new();
        for (i, (key, value)) in o.iter().enumerate() {
            let p = Path::Key(path, key);
            let mut matched = false;
            let mut ok = true;
            if let Ok(at) = props
                .named
                .binary_search_by(|(name, _)| (**name).cmp(key.as_str()))
            {
                matched = true;
                ok &= self.node(props.named[at].1, Inst::Val(value), cx, &p, scope, None);
            }
            for (pattern, node) in props.patterns.iter() {
                if !ok && !cx.collecting() {
                    break;
                }
                if pattern.is_match(key) {
                    matched = true;
                    ok &= self.node(*node, Inst::Val(value), cx, &p, scope, None);
                }
            }
            if !matched {
                if let Some(additional) = props.additional {
                    if additional_false {
                        ok = false;
                        if cx.collecting() {
                            unexpected.push(key);
                        }
                    } else {
                        ok &= self.node(additional, Inst::Val(value), cx, &p, scope, None);
                    }
                    matched = true;
                }
            }
            if matched {
                if let Some(marks) = marks.as_deref_mut() {
                    marks.mark(i);
                }
            }
            if !ok {
                valid = false;
                if !cx.collecting() {
                    return false;
                }
            }
        }
        if !unexpected.is_empty() {
            cx.report(path, || {
                let (list, count) = quoted_list(unexpected.iter().copied());
                format!(
                    "Additional properties are not allowed ({list} {} unexpected)",
                    were(count)
                )
            });
        }
        valid
    }

    /// `unevaluatedItems` and `unevaluatedProperties`: each member no other keyword
    /// evaluated (`marks`) against `node`; `what` names the members in the error.
    #[allow(clippy::too_many_arguments)]
    fn unevaluated<'v>(
        &self,
        node: NodeId,
        members: impl Iterator<Item = (Member<'v>, &'v Value)>,
        what: &str,
        cx: &mut Cx<'_>,
        path: &Path<'_>,
        scope: &Scope<'_>,
        marks: Option<&mut Marks>,
    ) -> bool {
        let Some(marks) = marks else {
            return true;
        };
        let mut failed: Vec<(Member<'v>, &'v Value)> = Vec::new();
        for (i, (member, value)) in members.enumerate() {
            if marks.is_marked(i) {
                continue;
            }
            let mut silent = cx.silent();
            let p = match member {
                Member::Item(index) => Path::Index(path, index),
                Member::Property(key) => Path::Key(path, key),
            };
            if !self.node(node, Inst::Val(value), &mut silent, &p, scope, None) {
                if !cx.collecting() {
                    return false;
                }
                failed.push((member, value));
            }
        }
        if failed.is_empty() {
            marks.all = true;
            return true;
        }
        cx.report(path, || {
            let (list, count) = quoted_list(failed.iter().map(|(member, value)| match member {
                Member::Item(_) => crate::compile::show(value),
                Member::Property(key) => (*key).to_owned(),
            }));
            format!(
                "Unevaluated {what} are not allowed ({list} {} unexpected)",
                were(count)
            )
        });
        false
    }
}

/// A member of an array or object instance: items are shown by value, properties by name.
#[derive(Clone, Copy)]
enum Member<'v> {
    Item(usize),
    Property(&'v str),
}
