//! A small JSON Schema validator for the schemas Model Context Protocol peers exchange: tool
//! `inputSchema` and `outputSchema`, elicitation forms.
//!
//! A schema is compiled once into a graph of typed nodes ([`Validator::new`]), with every
//! `$ref` resolved to an index, and then checks any number of instances: [`Validator::is_valid`]
//! answers yes or no, stops at the first failure and allocates nothing on the way to a yes;
//! [`Validator::errors`] lists what is wrong, up to a limit.
//!
//! # Dialects
//!
//! `$schema` picks the dialect; without it a schema is read as 2020-12 (the MCP default).
//! Draft-04, draft-06, draft-07, 2019-09 and 2020-12 are known, with their differences: `items`
//! as an array and `additionalItems` before 2020-12, `prefixItems` from it; `dependencies` in
//! every dialect next to `dependentRequired`/`dependentSchemas` (2019-09 on); draft-04's boolean
//! `exclusiveMaximum`/`exclusiveMinimum`; keywords beside `$ref` ignored up to draft-07.
//! `$defs` and `definitions` are both reference targets everywhere. Unknown keywords are ignored.
//!
//! # What is checked
//!
//! Every validation and applicator keyword of 2020-12 (and their older forms), `$ref` within the
//! document (JSON pointers, `$anchor`, draft-07 `"$id": "#name"`, embedded `$id`s),
//! `$dynamicRef`/`$dynamicAnchor` and `$recursiveRef`/`$recursiveAnchor` with their dynamic scope,
//! and `unevaluatedProperties`/`unevaluatedItems` with annotations from every in-place
//! applicator. `format` is an annotation from 2019-09 on (as the specification says) and an
//! assertion before, for `date`, `date-time`, `time`, `email`, `hostname`, `ipv4`, `ipv6`,
//! `uri`, `uri-reference`, `json-pointer`, `relative-json-pointer` and `regex`; other formats
//! pass.
//!
//! `pattern` and `patternProperties` are ECMA-262 regular expressions run on `regex-lite`:
//! `\d`, `\w` and `\b` are ASCII, as in ECMA-262 without the `u` flag, and `\s` and `.` get
//! ECMA-262's sets. Look-around, backreferences and `\p{..}` cannot be compiled and make the
//! schema an error that names the pattern.
//!
//! # Untrusted schemas
//!
//! A client compiles the output schemas a server sends, so compiling and validating are bounded:
//! subschemas nest at most 128 levels, a regular expression has a size and nesting limit, a
//! cycle of references that never moves into the instance (`{"$ref": "#"}`) is refused at
//! compile time, and one evaluation nests at most 256 schema nodes (instance depth and references
//! together: deeper instances fail validation), and one validation makes at most 100,000 node
//! evaluations plus 64 per value of the instance (references that each name the next
//! definition twice would otherwise double the work at every level; a validation that runs out
//! fails, and says why). References to other documents are refused,
//! except the standard meta-schemas, which are taken as `true`. Nothing panics.
//!
//! # Example
//!
//! ```
//! use mcp_jsonschema::Validator;
//! use serde_json::json;
//!
//! let validator = Validator::new(&json!({
//!     "type": "object",
//!     "properties": {
//!         "city": {"type": "string", "minLength": 1},
//!         "days": {"type": "integer", "minimum": 1, "maximum": 14}
//!     },
//!     "required": ["city"],
//!     "additionalProperties": false
//! }))?;
//!
//! assert!(validator.is_valid(&json!({"city": "Lisbon", "days": 3})));
//!
//! let errors = validator.errors(&json!({"days": 30, "unit": "C"}), 8);
//! let listed: Vec<String> = errors
//!     .iter()
//!     .map(|e| format!("{}: {}", e.instance_path(), e))
//!     .collect();
//! assert_eq!(
//!     listed,
//!     [
//!         ": \"city\" is a required property",
//!         "/days: 30 is greater than the maximum of 14",
//!         ": Additional properties are not allowed ('unit' was unexpected)",
//!     ]
//! );
//!
//! // A schema that cannot be used says what is wrong and where.
//! let error = Validator::new(&json!({"properties": {"n": {"minimum": "x"}}})).unwrap_err();
//! assert_eq!(error.location(), "/properties/n/minimum");
//! # Ok::<(), mcp_jsonschema::SchemaError>(())
//! ```

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod compile;
mod eval;
mod format;
mod number;
mod pattern;
mod uri;

use std::fmt;

use serde_json::Value;

use crate::compile::Compiled;
use crate::eval::{Cx, Inst, Path, Scope};

/// The JSON Schema dialects, oldest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Draft {
    D4,
    D6,
    D7,
    D2019,
    D2020,
}

/// The longest rendering of an instance or schema value in a message, in bytes.
pub(crate) const MAX_SHOWN: usize = 256;

/// Cuts a rendering of a value that would swamp a message.
pub(crate) fn truncate(mut text: String) -> String {
    if text.len() > MAX_SHOWN {
        let mut end = MAX_SHOWN;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push_str("...");
    }
    text
}

/// A compiled JSON Schema: compile once, validate many instances. Cheap to share between
/// threads.
#[derive(Debug)]
pub struct Validator {
    compiled: Compiled,
}

impl Validator {
    /// Compiles a schema.
    ///
    /// # Errors
    ///
    /// The schema is malformed (a keyword with a value of the wrong type, an unknown type name,
    /// a regular expression `regex-lite` cannot run), nests deeper than 128 levels, has a
    /// reference this crate cannot resolve (another document) or a reference cycle that never
    /// moves into the instance.
    pub fn new(schema: &Value) -> Result<Validator, SchemaError> {
        Ok(Validator {
            compiled: compile::compile(schema)?,
        })
    }

    /// Evaluates the root; `errors` (when given) receives up to `max` errors, and one saying
    /// so when the validation ran out of steps (see `eval::step_budget`).
    fn run(&self, instance: &Value, errors: Option<&mut Vec<ValidationError>>, max: usize) -> bool {
        let root = self.compiled.root;
        let scope = Scope {
            resource: self.compiled.nodes[root as usize].resource,
            parent: None,
        };
        let budget = eval::step_budget(instance);
        let steps = std::cell::Cell::new(budget);
        let mut errors = errors;
        let valid = self.compiled.node(
            root,
            Inst::Val(instance),
            &mut Cx::new(errors.as_deref_mut(), max, &steps),
            &Path::Root,
            &scope,
            None,
        );
        if steps.get() > 0 {
            return valid;
        }
        if let Some(errors) = errors {
            errors.truncate(max.saturating_sub(1));
            errors.push(ValidationError::new(
                String::new(),
                format!(
                    "validation needs more than {budget} schema evaluations (a schema whose references multiply the work)"
                ),
            ));
        }
        false
    }

    /// Whether `instance` is valid. Stops at the first failure; allocates nothing when the
    /// instance is valid, except for `unevaluatedProperties`/`unevaluatedItems` over more than
    /// 128 members and `uniqueItems` over more than 32 items.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.run(instance, None, 0)
    }

    /// What makes `instance` invalid: at most `max` errors, in schema order (the search stops
    /// once `max` are found). Empty when the instance is valid.
    ///
    /// `anyOf`, `oneOf`, `not`, `contains` and the `unevaluated*` keywords report one error of
    /// their own rather than those of their subschemas.
    pub fn errors(&self, instance: &Value, max: usize) -> Vec<ValidationError> {
        if max == 0 {
            return Vec::new();
        }
        let mut errors = Vec::new();
        let valid = self.run(instance, Some(&mut errors), max);
        if !valid && errors.is_empty() {
            errors.push(ValidationError::new(
                String::new(),
                format!("{} is not valid", compile::show(instance)),
            ));
        }
        errors
    }
}

/// Why an instance is invalid: where (a JSON pointer into the instance) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    instance_path: String,
    message: String,
}

impl ValidationError {
    pub(crate) fn new(instance_path: String, message: String) -> Self {
        ValidationError {
            instance_path,
            message,
        }
    }

    /// The JSON pointer of the offending value: `""` for the instance itself, `/a/0` for the
    /// first item of its member `a`.
    pub fn instance_path(&self) -> &str {
        &self.instance_path
    }

    /// What is wrong, for example `5 is not of type "string"`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ValidationError {}

/// Why a schema cannot be compiled: what is wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    location: String,
    message: String,
}

impl SchemaError {
    pub(crate) fn new(location: String, message: String) -> Self {
        SchemaError { location, message }
    }

    /// The JSON pointer, within the schema, of the offending keyword or subschema (`""` for the
    /// root).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// What is wrong.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Whether `value` has the string format `name`, checked as draft-07 asserts it (`date`,
/// `date-time`, `time`, `email`, `hostname`, `ipv4`, `ipv6`, `uri`, `uri-reference`,
/// `json-pointer`, `relative-json-pointer`, `regex`); `None` for a format this crate does not
/// check. For formats a peer enforces outside a schema, such as the fields of an elicitation
/// form a client fills in.
///
/// ```
/// assert_eq!(mcp_jsonschema::format_matches("date", "2024-02-29"), Some(true));
/// assert_eq!(mcp_jsonschema::format_matches("date", "2023-02-29"), Some(false));
/// assert_eq!(mcp_jsonschema::format_matches("color", "red"), None);
/// ```
pub fn format_matches(name: &str, value: &str) -> Option<bool> {
    format::Format::for_draft(Draft::D7, name).map(|format| format.is_valid(value))
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid schema at \"#{}\": {}",
            self.location, self.message
        )
    }
}

impl std::error::Error for SchemaError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validator_is_send_sync() {
        fn check<T: Send + Sync + fmt::Debug>() {}
        check::<Validator>();
        check::<ValidationError>();
        check::<SchemaError>();
    }
}
