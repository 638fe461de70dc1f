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
