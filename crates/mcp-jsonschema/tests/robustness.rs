//! Schemas from an untrusted peer: whatever the document, compiling and validating end without
//! a panic.

use mcp_jsonschema::Validator;
use proptest::prelude::*;
use serde_json::{Value, json};

const KEYWORDS: [&str; 40] = [
    "type",
    "enum",
    "const",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "format",
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "maxItems",
    "minItems",
    "uniqueItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "required",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$ref",
    "$defs",
    "$id",
    "unevaluatedProperties",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e20f64..1e20).prop_map(Value::from),
        prop::sample::select(vec![
            "",
            "#",
            "#/",
            "#/$defs/a",
            "#/properties/a",
            "#a",
            "a.json",
            "string",
            "integer",
            "object",
            "array",
            "^a$",
            "(?=x)",
            "[",
            "\\",
            "date",
            "ipv4",
            "%",
            "#/%zz",
            "~",
            "https://json-schema.org/draft/2020-12/schema",
            "http://json-schema.org/draft-04/schema#",
        ])
        .prop_map(Value::from),
    ]
}

fn document() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map(
                prop::sample::select(
                    KEYWORDS
                        .iter()
                        .copied()
                        .chain(["a", "$schema", "$anchor", "$dynamicRef", "$dynamicAnchor"])
                        .collect::<Vec<_>>()
                ),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_documents_never_panic(schema in document(), instances in prop::collection::vec(document(), 0..4)) {
        if let Ok(validator) = Validator::new(&schema) {
            for instance in &instances {
                let valid = validator.is_valid(instance);
                prop_assert_eq!(validator.errors(instance, 3).is_empty(), valid);
            }
        }
    }
}

/// `d0` refers to `d1` twice, `d1` to `d2` twice, and so on: evaluating `d0` takes 2^depth
/// steps.
fn doubling(depth: usize, combinator: &str, leaf: Value) -> Value {
    let mut defs = serde_json::Map::new();
    for i in 0..depth {
        let next = json!({"$ref": format!("#/$defs/d{}", i + 1)});
        defs.insert(format!("d{i}"), json!({ combinator: [next.clone(), next] }));
    }
    defs.insert(format!("d{depth}"), leaf);
    json!({"$defs": defs, "$ref": "#/$defs/d0"})
}

#[test]
fn references_that_multiply_the_work_end_in_a_failure() {
    // Without a step budget each of these takes about 2^60 node evaluations.
    let all = Validator::new(&doubling(60, "allOf", json!({"type": "integer"}))).unwrap();
    assert!(!all.is_valid(&json!(1)));
    let errors = all.errors(&json!(1), 8);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].to_string().contains("schema evaluations"),
        "{errors:?}"
    );
    // A node that failed for want of steps does not make a `not` pass: `allOf` of `true`s is
    // true, so the instance is invalid, and the step budget must not turn that around.
    let mut negated = doubling(60, "allOf", json!(true));
    let inner = negated["$ref"].take();
    negated["not"] = json!({ "$ref": inner });
    negated.as_object_mut().unwrap().remove("$ref");
    let not = Validator::new(&negated).unwrap();
    assert!(!not.is_valid(&json!(1)));
    // Small enough to finish: the same shape decides as it should.
    let small = Validator::new(&doubling(8, "allOf", json!({"type": "integer"}))).unwrap();
    assert!(small.is_valid(&json!(1)));
    assert!(!small.is_valid(&json!("x")));
}

#[test]
fn large_instances_get_steps_in_proportion() {
    let schema = json!({
        "type": "array",
        "items": {"type": "object", "properties": {
            "id": {"type": "integer"}, "name": {"type": "string"}, "tags": {"items": {"type": "string"}}
        }, "required": ["id"]}
    });
    let validator = Validator::new(&schema).unwrap();
    let items: Vec<Value> = (0..50_000)
        .map(|i| json!({"id": i, "name": "n", "tags": ["a", "b"]}))
        .collect();
    assert!(validator.is_valid(&Value::Array(items)));
}
