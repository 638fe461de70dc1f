//! Keyword families, dialect differences, messages and the limits that make untrusted schemas
//! safe to compile.

use crate::trees;

use mcp_jsonschema::{SchemaError, Validator};
use serde_json::{Value, json};

fn compile(schema: Value) -> Validator {
    Validator::new(&schema).unwrap_or_else(|e| panic!("{schema}: {e}"))
}

fn refused(schema: Value) -> SchemaError {
    match Validator::new(&schema) {
        Ok(_) => panic!("{schema} compiled"),
        Err(e) => e,
    }
}

/// `(instance_path, message)` of every error.
fn errors(v: &Validator, instance: Value) -> Vec<(String, String)> {
    let listed = v.errors(&instance, 16);
    assert_eq!(listed.is_empty(), v.is_valid(&instance), "{instance}");
    listed
        .into_iter()
        .map(|e| (e.instance_path().to_owned(), e.to_string()))
        .collect()
}

fn one_error(v: &Validator, instance: Value) -> String {
    let e = errors(v, instance);
    assert_eq!(e.len(), 1, "{e:?}");
    e[0].1.clone()
}

#[test]
fn types() {
    let v = compile(json!({"type": "integer"}));
    assert!(v.is_valid(&json!(1)));
    assert!(v.is_valid(&json!(1.0)), "a whole float is an integer");
    assert!(v.is_valid(&json!(u64::MAX)));
    assert!(!v.is_valid(&json!(1.5)));
    assert_eq!(one_error(&v, json!("1")), r#""1" is not of type "integer""#);
    let v = compile(json!({"type": ["string", "null"]}));
    assert!(v.is_valid(&json!(null)));
    assert_eq!(
        one_error(&v, json!(5)),
        r#"5 is not of types "string", "null""#
    );
    let v = compile(json!({"type": "number"}));
    assert!(v.is_valid(&json!(1)) && v.is_valid(&json!(1.5)));
    assert!(!v.is_valid(&json!("1")));
    assert!(Validator::new(&json!({"type": "strin"})).is_err());
    assert!(Validator::new(&json!({"type": []})).is_err());
    assert!(Validator::new(&json!({"type": 12})).is_err());
}

#[test]
fn enum_and_const_compare_numbers_by_value() {
    let v = compile(json!({"enum": [1, "a", {"x": [2]}]}));
    assert!(v.is_valid(&json!(1.0)));
    assert!(v.is_valid(&json!({"x": [2.0]})));
    assert!(!v.is_valid(&json!({"x": [2], "y": 1})));
    assert_eq!(
        one_error(&v, json!(2)),
        r#"2 is not one of 1, "a" or {"x":[2]}"#
    );
    let v = compile(json!({"enum": [1, 2, 3, 4, 5]}));
    assert_eq!(
        one_error(&v, json!(6)),
        "6 is not one of 1, 2 or 3 other candidates"
    );
    let v = compile(json!({"const": 1}));
    assert!(v.is_valid(&json!(1.0)));
    assert_eq!(one_error(&v, json!(2)), "1 was expected");
    let v = compile(json!({"const": false}));
    assert!(!v.is_valid(&json!(0)), "false is not 0");
    let v = compile(json!({"enum": []}));
    assert!(!v.is_valid(&json!(null)));
    assert!(Validator::new(&json!({"enum": 5})).is_err());
}

#[test]
fn numeric_bounds_and_multiples() {
    let v = compile(json!({"minimum": 5, "maximum": 10.5}));
    assert_eq!(one_error(&v, json!(3)), "3 is less than the minimum of 5");
    assert_eq!(
        one_error(&v, json!(11)),
        "11 is greater than the maximum of 10.5"
    );
    assert!(v.is_valid(&json!(5)) && v.is_valid(&json!(10.5)) && v.is_valid(&json!("x")));
    let v = compile(json!({"exclusiveMinimum": 5, "exclusiveMaximum": 10}));
    assert_eq!(
        one_error(&v, json!(5)),
        "5 is less than or equal to the minimum of 5"
    );
    assert_eq!(
        one_error(&v, json!(10)),
        "10 is greater than or equal to the maximum of 10"
    );
    assert!(v.is_valid(&json!(5.000001)));
    // Large integers are compared exactly, never through a lossy f64.
    let v = compile(json!({"maximum": 9007199254740992u64}));
    assert!(!v.is_valid(&json!(9007199254740993u64)));
    let v = compile(json!({"minimum": -9223372036854775808i64}));
    assert!(v.is_valid(&json!(i64::MIN)));
    assert!(!v.is_valid(&json!(-9.3e18)));
    let v = compile(json!({"maximum": 18446744073709551615u64}));
    assert!(v.is_valid(&json!(u64::MAX)));
    assert!(!v.is_valid(&json!(1.9e19)));

    let v = compile(json!({"multipleOf": 0.0001}));
    assert!(v.is_valid(&json!(0.0075)));
    assert!(!v.is_valid(&json!(0.00751)));
    let v = compile(json!({"multipleOf": 2}));
    assert!(v.is_valid(&json!(4)) && v.is_valid(&json!(4.0)) && v.is_valid(&json!(-4)));
    assert_eq!(one_error(&v, json!(3)), "3 is not a multiple of 2");
    assert!(Validator::new(&json!({"multipleOf": 0})).is_err());
    assert!(Validator::new(&json!({"multipleOf": -1})).is_err());
    let e = refused(json!({"properties": {"n": {"minimum": "x"}}}));
    assert_eq!(e.location(), "/properties/n/minimum");
    assert!(e.to_string().contains("expected a number"), "{e}");
}

#[test]
fn strings() {
    let v = compile(json!({"minLength": 2, "maxLength": 3}));
    assert!(v.is_valid(&json!("😀😀")), "code points, not bytes");
    assert!(v.is_valid(&json!("ééé")));
    assert!(!v.is_valid(&json!("éééé")));
    assert_eq!(
        one_error(&v, json!("a")),
        r#""a" is shorter than 2 characters"#
    );
    assert_eq!(
        one_error(&v, json!("abcd")),
        r#""abcd" is longer than 3 characters"#
    );
    let v = compile(json!({"maxLength": 1}));
    assert_eq!(
        one_error(&v, json!("ab")),
        r#""ab" is longer than 1 character"#
    );
    let v = compile(json!({"pattern": "^[0-9]+$"}));
    assert_eq!(
        one_error(&v, json!("abc")),
        r#""abc" does not match "^[0-9]+$""#
    );
    let v = compile(json!({"pattern": "b"}));
    assert!(v.is_valid(&json!("abc")), "patterns search, unanchored");
    assert!(Validator::new(&json!({"minLength": -1})).is_err());
    assert!(Validator::new(&json!({"minLength": 1.5})).is_err());
    assert!(Validator::new(&json!({"maxLength": 2.0})).is_ok());
}

#[test]
fn unsupported_patterns_are_errors_naming_the_pattern() {
    for pattern in ["(?=a)b", "(a)\\1", "\\p{L}", "[a-"] {
        let e = refused(json!({"properties": {"p": {"pattern": pattern}}}));
        assert_eq!(e.location(), "/properties/p/pattern");
        assert!(e.to_string().contains(&format!("{pattern:?}")), "{e}");
    }
    let e = refused(json!({"patternProperties": {"(?<!x)y": true}}));
    assert!(e.to_string().contains("(?<!x)y"), "{e}");
    // A pattern whose compiled form would be huge.
    assert!(Validator::new(&json!({"pattern": "((a{1000}){1000}){1000}"})).is_err());
}

#[test]
fn arrays() {
    let v = compile(json!({"minItems": 1, "maxItems": 2, "uniqueItems": true}));
    assert_eq!(one_error(&v, json!([])), "[] has less than 1 item");
    assert_eq!(
        one_error(&v, json!([1, 2, 3])),
        "[1,2,3] has more than 2 items"
    );
    assert_eq!(
        one_error(&v, json!([1, 1.0])),
        "[1,1.0] has non-unique elements"
    );
    let big: Vec<Value> = (0..100).map(|i| json!({"k": [i, {"x": i}]})).collect();
    let v = compile(json!({"uniqueItems": true}));
    assert!(v.is_valid(&Value::from(big.clone())));
    let mut dup = big.clone();
    dup.push(json!({"k": [7.0, {"x": 7}]}));
    assert!(!v.is_valid(&Value::from(dup)));

    let v = compile(json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}));
    assert!(v.is_valid(&json!(["a", 1, 2])));
    let e = errors(&v, json!([1, "x", 2]));
    assert_eq!(
        e,
        [
            ("/0".to_owned(), r#"1 is not of type "string""#.to_owned()),
            (
                "/1".to_owned(),
                r#""x" is not of type "integer""#.to_owned()
            )
        ]
    );
    let v = compile(json!({"prefixItems": [true], "items": false}));
    assert_eq!(
        one_error(&v, json!([1, 2, 3])),
        "Additional items are not allowed (2, 3 were unexpected)"
    );

    let v = compile(json!({"contains": {"type": "integer"}}));
    assert_eq!(
        one_error(&v, json!(["a"])),
        r#"None of ["a"] are valid under the given schema"#
    );
    let v = compile(json!({"contains": {"type": "integer"}, "minContains": 2, "maxContains": 3}));
    assert!(!v.is_valid(&json!([1, "a"])));
    assert!(v.is_valid(&json!([1, 2, "a"])));
    assert!(!v.is_valid(&json!([1, 2, 3, 4])));
    let v = compile(json!({"contains": false, "minContains": 0}));
    assert!(v.is_valid(&json!([])) && v.is_valid(&json!([1])));
}

#[test]
fn objects() {
    let v = compile(json!({
        "properties": {"a": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": false,
        "required": ["a"]
    }));
    assert!(v.is_valid(&json!({"a": "s", "x-1": 1})));
    assert_eq!(
        errors(&v, json!({"x-1": "s", "b": 1, "c": 2})),
        [
            (String::new(), r#""a" is a required property"#.to_owned()),
            (
                "/x-1".to_owned(),
                r#""s" is not of type "integer""#.to_owned()
            ),
            (
                String::new(),
                "Additional properties are not allowed ('b', 'c' were unexpected)".to_owned()
            ),
        ]
    );
    assert_eq!(
        one_error(&v, json!({"a": "s", "x": 1})),
        "Additional properties are not allowed ('x' was unexpected)"
    );
    let v = compile(json!({"minProperties": 1, "maxProperties": 1}));
    assert_eq!(one_error(&v, json!({})), "{} has less than 1 property");
    assert_eq!(
        one_error(&v, json!({"a": 1, "b": 2})),
        r#"{"a":1,"b":2} has more than 1 property"#
    );
    let v = compile(json!({"propertyNames": {"maxLength": 2}}));
    assert_eq!(
        one_error(&v, json!({"abc": 1})),
        r#""abc" is longer than 2 characters"#
    );
    let v = compile(
        json!({"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}}),
    );
    assert_eq!(
        one_error(&v, json!({"a": 1})),
        r#""b" is a required property"#
    );
    assert_eq!(
        one_error(&v, json!({"c": 1})),
        r#""d" is a required property"#
    );
    assert!(v.is_valid(&json!({"b": 1, "d": 1})));
    // Paths escape `~` and `/`.
    let v = compile(json!({"properties": {"a/b": {"properties": {"c~d": {"type": "null"}}}}}));
    assert_eq!(errors(&v, json!({"a/b": {"c~d": 1}}))[0].0, "/a~1b/c~0d");
    assert!(Validator::new(&json!({"required": 5})).is_err());
    assert!(Validator::new(&json!({"required": [1]})).is_err());
    assert!(Validator::new(&json!({"properties": {"a": 5}})).is_err());
}

#[test]
fn combinators() {
    let v = compile(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}));
    assert_eq!(
        one_error(&v, json!(null)),
        "null is not valid under any of the schemas listed in the 'anyOf' keyword"
    );
    let v = compile(json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]}));
    assert!(v.is_valid(&json!(-1)) && v.is_valid(&json!(0.5)));
    assert_eq!(
        one_error(&v, json!(1)),
        "1 is valid under more than one of the schemas listed in the 'oneOf' keyword"
    );
    let v = compile(json!({"not": {"type": "string"}}));
    assert_eq!(
        one_error(&v, json!("a")),
        r#"{"type":"string"} is not allowed for "a""#
    );
    let v = compile(json!({"allOf": [{"minimum": 1}, {"maximum": 2}]}));
    assert_eq!(errors(&v, json!(5)).len(), 1);
    let v = compile(
        json!({"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}}),
    );
    assert!(v.is_valid(&json!("ab")) && v.is_valid(&json!(1)));
    assert!(!v.is_valid(&json!("a")) && !v.is_valid(&json!(1.5)));
    let v = compile(json!({"then": false}));
    assert!(v.is_valid(&json!(1)), "then without if is ignored");
    let v = compile(json!(false));
    assert_eq!(one_error(&v, json!(1)), "False schema does not allow 1");
    assert!(compile(json!(true)).is_valid(&json!({"any": "thing"})));
    assert!(Validator::new(&json!({"allOf": []})).is_err());
    assert!(Validator::new(&json!({"anyOf": {}})).is_err());
}

#[test]
fn unknown_keywords_are_ignored() {
    let v = compile(json!({"frobnicate": {"minimum": "x"}, "x-mcp-header": 5, "title": 1}));
    assert!(v.is_valid(&json!(1)));
}

#[test]
fn errors_stop_at_max() {
    let v = compile(json!({"items": {"type": "string"}}));
    let instance = Value::from((0..100).collect::<Vec<i32>>());
    assert_eq!(v.errors(&instance, 3).len(), 3);
    assert!(v.errors(&instance, 0).is_empty());
    assert!(v.errors(&json!(["a"]), 3).is_empty());
}

#[test]
fn long_values_are_cut_in_messages() {
    let v = compile(json!({"type": "string"}));
    let big = Value::from(vec![1; 1000]);
    let message = one_error(&v, big);
    assert!(message.len() < 400, "{message}");
    assert!(message.contains("...") && message.ends_with(r#"is not of type "string""#));
}

// ---------------------------------------------------------------------------------------------
// References.

#[test]
fn references() {
    let v = compile(json!({
        "$defs": {"a~b": {"type": "integer"}, "c/d": {"type": "string"}, "e f": {"type": "null"}},
        "properties": {
            "x": {"$ref": "#/$defs/a~0b"},
            "y": {"$ref": "#/$defs/c~1d"},
            "z": {"$ref": "#/$defs/e%20f"},
            "w": {"$ref": "#/definitions/w"}
        },
        "definitions": {"w": {"type": "boolean"}}
    }));
    assert!(v.is_valid(&json!({"x": 1, "y": "s", "z": null, "w": true})));
    assert!(!v.is_valid(&json!({"x": "1"})));
    assert!(!v.is_valid(&json!({"y": 1})));
    assert!(!v.is_valid(&json!({"z": 1})));
    assert!(!v.is_valid(&json!({"w": 1})));

    let v = compile(json!({"properties": {"self": {"$ref": "#"}}, "required": ["id"]}));
    assert!(v.is_valid(&json!({"id": 1, "self": {"id": 2}})));
    assert!(!v.is_valid(&json!({"id": 1, "self": {}})));

    // `$anchor`, and relative references against embedded `$id`s.
    let v = compile(json!({
        "$id": "https://example.com/schemas/root.json",
        "$defs": {
            "a": {"$anchor": "num", "type": "number"},
            "b": {"$id": "other/b.json", "$defs": {"c": {"$anchor": "s", "type": "string"}}, "$ref": "#s"}
        },
        "properties": {
            "n": {"$ref": "#num"},
            "b": {"$ref": "other/b.json"},
            "c": {"$ref": "https://example.com/schemas/other/b.json#/$defs/c"},
            "d": {"$ref": "/schemas/root.json#num"}
        }
    }));
    assert!(v.is_valid(&json!({"n": 1, "b": "s", "c": "s", "d": 2})));
    assert!(!v.is_valid(&json!({"n": "1"})));
    assert!(!v.is_valid(&json!({"b": 1})));
    assert!(!v.is_valid(&json!({"c": 1})));
    assert!(!v.is_valid(&json!({"d": "x"})));

    // draft-07 anchors are `$id`s with a plain-name fragment.
    let v = compile(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"a": {"$id": "#pos", "minimum": 0}},
        "items": {"$ref": "#pos"}
    }));
    assert!(v.is_valid(&json!([1])) && !v.is_valid(&json!([-1])));
}

#[test]
fn unresolvable_references_are_errors() {
    for (schema, location) in [
        (json!({"$ref": "https://example.com/other.json"}), "/$ref"),
        (
            json!({"properties": {"a": {"$ref": "other.json#/x"}}}),
            "/properties/a/$ref",
        ),
        (json!({"$ref": "#/$defs/missing"}), "/$ref"),
        (json!({"$ref": "#nope"}), "/$ref"),
        (json!({"$ref": "#/minimum", "minimum": 1}), "/$ref"),
        (json!({"$ref": 5}), "/$ref"),
    ] {
        let e = refused(schema.clone());
        assert_eq!(e.location(), location, "{schema}: {e}");
        assert!(
            e.to_string().contains("cannot resolve")
                || e.to_string().contains("not a schema")
                || e.to_string().contains("expected a string"),
            "{e}"
        );
    }
    // The standard meta-schemas are taken as `true`.
    for uri in [
        "https://json-schema.org/draft/2020-12/schema",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/meta/core",
    ] {
        assert!(compile(json!({"$ref": uri})).is_valid(&json!({"type": 5})));
    }
}

#[test]
fn dynamic_references() {
    // The 2020-12 test suite's strict tree: the outer resource's `$dynamicAnchor` wins.
    let strict = compile(trees::dynamic_strict_tree());
    assert!(!strict.is_valid(&json!({"children": [{"daat": 1}]})));
    assert!(strict.is_valid(&json!({"children": [{"data": 1}]})));

    // Without a matching `$dynamicAnchor` in scope, `$dynamicRef` acts as `$ref`.
    let plain = compile(json!({
        "$defs": {"a": {"$anchor": "x", "type": "integer"}},
        "items": {"$dynamicRef": "#x"}
    }));
    assert!(plain.is_valid(&json!([1])) && !plain.is_valid(&json!(["1"])));

    // An extensible list: the caller's `$dynamicAnchor` decides what the items are.
    let list = compile(json!({
        "$id": "https://example.com/strings",
        "$ref": "list",
        "$defs": {
            "items": {"$dynamicAnchor": "items", "type": "string"},
            "list": {
                "$id": "list",
                "type": "array",
                "items": {"$dynamicRef": "#items"},
                "$defs": {"items": {"$dynamicAnchor": "items"}}
            }
        }
    }));
    assert!(list.is_valid(&json!(["a"])));
    assert!(!list.is_valid(&json!([1])));

    // 2019-09 `$recursiveRef`.
    let recursive = compile(trees::recursive_strict_tree(
        "https://example.com/strict-tree",
        true,
    ));
    assert!(!recursive.is_valid(&json!({"children": [{"daat": 1}]})));
    assert!(recursive.is_valid(&json!({"children": [{"data": 1}]})));
    // With `$recursiveAnchor: false` outside, `$recursiveRef` is a plain `$ref`.
    let plain = compile(trees::recursive_strict_tree(
        "https://example.com/root",
        false,
    ));
    assert!(plain.is_valid(&json!({"children": [{"daat": 1}]})));
}

// ---------------------------------------------------------------------------------------------
// unevaluatedProperties / unevaluatedItems.

#[test]
fn unevaluated_properties_see_every_in_place_applicator() {
    let v = compile(json!({
        "properties": {"a": true},
        "patternProperties": {"^p": true},
        "allOf": [{"properties": {"b": true}}],
        "anyOf": [{"properties": {"c": true}, "required": ["c"]}, {"properties": {"d": true}, "required": ["d"]}],
        "oneOf": [{"properties": {"e": true}}, {"required": ["never"]}],
        "if": {"properties": {"f": {"const": 1}}, "required": ["f"]},
        "then": {"properties": {"g": true}},
        "else": {"properties": {"h": true}},
        "dependentSchemas": {"i": {"properties": {"i": true, "j": true}}},
        "$ref": "#/$defs/k",
        "not": {"properties": {"z": true}, "required": ["z"]},
        "$defs": {"k": {"properties": {"k": true}}},
        "unevaluatedProperties": false
    }));
    // Both `anyOf` branches pass here, and both evaluate.
    assert!(v.is_valid(&json!({"a": 1, "p1": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "i": 1, "j": 1, "k": 1})));
    assert!(v.is_valid(&json!({"c": 1, "h": 1})));
    assert!(
        !v.is_valid(&json!({"c": 1, "f": 2, "h": 1})),
        "a failed if evaluates nothing"
    );
    assert!(
        !v.is_valid(&json!({"c": 1, "f": 1, "h": 1})),
        "h is evaluated only by else"
    );
    assert!(
        !v.is_valid(&json!({"c": 1, "g": 1})),
        "g is evaluated only by then"
    );
    assert!(!v.is_valid(&json!({"c": 1, "j": 1})), "j needs i");
    assert!(!v.is_valid(&json!({"c": 1, "q": 1})));
    assert_eq!(
        one_error(&v, json!({"c": 1, "q": 1, "r": 2})),
        "Unevaluated properties are not allowed ('q', 'r' were unexpected)"
    );
    // `not` never evaluates anything.
    let v = compile(
        json!({"not": {"not": {"properties": {"a": true}}}, "unevaluatedProperties": false}),
    );
    assert!(!v.is_valid(&json!({"a": 1})));
    // A failed branch's annotations are dropped.
    let v = compile(json!({
        "anyOf": [{"properties": {"a": true}, "required": ["b"]}, true],
        "unevaluatedProperties": false
    }));
    assert!(!v.is_valid(&json!({"a": 1})));
    // Annotations do not cross into a nested object's own `unevaluatedProperties`, but an
    // inner `unevaluatedProperties` evaluates for the outer one.
    let v = compile(json!({
        "allOf": [{"unevaluatedProperties": true}],
        "unevaluatedProperties": false
    }));
    assert!(v.is_valid(&json!({"anything": 1})));
    let v = compile(json!({
        "unevaluatedProperties": {"type": "integer"},
        "properties": {"a": {"type": "string"}}
    }));
    assert!(v.is_valid(&json!({"a": "s", "b": 1})));
    assert!(!v.is_valid(&json!({"a": "s", "b": "t"})));
    // Objects with more members than the inline mark set holds.
    let mut wide = serde_json::Map::new();
    for i in 0..300 {
        wide.insert(format!("p{i}"), json!(i));
    }
    let v = compile(json!({"patternProperties": {"^p": true}, "unevaluatedProperties": false}));
    assert!(v.is_valid(&Value::Object(wide.clone())));
    wide.insert("q".into(), json!(1));
    assert!(!v.is_valid(&Value::Object(wide)));
}

#[test]
fn unevaluated_items() {
    let v = compile(json!({"prefixItems": [true], "unevaluatedItems": false}));
    assert!(v.is_valid(&json!([1])));
    assert_eq!(
        one_error(&v, json!([1, 2, 3])),
        "Unevaluated items are not allowed ('2', '3' were unexpected)"
    );
    let v = compile(json!({"allOf": [{"prefixItems": [true, true]}], "unevaluatedItems": false}));
    assert!(v.is_valid(&json!([1, 2])) && !v.is_valid(&json!([1, 2, 3])));
    // 2020-12: items `contains` matched are evaluated.
    let v = compile(json!({"contains": {"type": "string"}, "unevaluatedItems": false}));
    assert!(v.is_valid(&json!(["a", "b"])));
    assert!(!v.is_valid(&json!(["a", 1])));
    // 2019-09: they are not (`contains` produces no annotation there).
    let v = compile(json!({
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "contains": {"type": "string"},
        "unevaluatedItems": false
    }));
    assert!(!v.is_valid(&json!(["a"])));
    let v = compile(json!({
        "$schema": "https://json-schema.org/draft/2019-09/schema",
        "items": [true],
        "additionalItems": true,
        "unevaluatedItems": false
    }));
    assert!(v.is_valid(&json!([1, 2, 3])));
    let long: Vec<i32> = (0..300).collect();
    let v = compile(json!({"if": {"items": {"type": "integer"}}, "unevaluatedItems": false}));
    assert!(v.is_valid(&Value::from(long.clone())));
    let v = compile(json!({"prefixItems": [true], "unevaluatedItems": false}));
    assert!(!v.is_valid(&Value::from(long)));
}

// ---------------------------------------------------------------------------------------------
// Dialects.

const D4: &str = "http://json-schema.org/draft-04/schema#";
const D6: &str = "http://json-schema.org/draft-06/schema#";
const D7: &str = "http://json-schema.org/draft-07/schema#";
const D2019: &str = "https://json-schema.org/draft/2019-09/schema";

#[test]
fn items_array_form_before_2020_12() {
    let v = compile(
        json!({"$schema": D7, "items": [{"type": "string"}], "additionalItems": {"type": "integer"}}),
    );
    assert!(v.is_valid(&json!(["a", 1])));
    assert!(!v.is_valid(&json!(["a", "b"])));
    let v =
        compile(json!({"$schema": D2019, "items": [{"type": "string"}], "additionalItems": false}));
    assert!(!v.is_valid(&json!(["a", 1])));
    // `additionalItems` without an array `items` is ignored.
    let v = compile(json!({"$schema": D7, "additionalItems": false}));
    assert!(v.is_valid(&json!([1, 2])));
    // 2020-12 has `prefixItems`; an array `items` is a malformed schema there.
    assert!(Validator::new(&json!({"items": [true]})).is_err());
    // and `prefixItems` is unknown (ignored) before 2020-12.
    let v = compile(json!({"$schema": D7, "prefixItems": [false]}));
    assert!(v.is_valid(&json!([1])));
}

#[test]
fn dependencies_and_their_successors() {
    for dialect in [D4, D6, D7, D2019] {
        let v = compile(
            json!({"$schema": dialect, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}),
        );
        assert!(!v.is_valid(&json!({"a": 1})), "{dialect}");
        assert!(!v.is_valid(&json!({"c": 1})), "{dialect}");
        assert!(
            v.is_valid(&json!({"a": 1, "b": 1, "c": 1, "d": 1})),
            "{dialect}"
        );
    }
    // 2019-09 and later also have the split forms; draft-07 does not know them.
    let split =
        json!({"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}});
    let mut d7 = split.clone();
    d7["$schema"] = json!(D7);
    assert!(compile(d7).is_valid(&json!({"a": 1, "c": 1})));
    assert!(!compile(split).is_valid(&json!({"a": 1})));
}

#[test]
fn draft_04_exclusive_bounds_are_booleans() {
    let v = compile(json!({"$schema": D4, "maximum": 5, "exclusiveMaximum": true}));
    assert!(!v.is_valid(&json!(5)) && v.is_valid(&json!(4.99)));
    let v = compile(json!({"$schema": D4, "minimum": 5, "exclusiveMinimum": false}));
    assert!(v.is_valid(&json!(5)));
    let v = compile(json!({"$schema": D6, "exclusiveMaximum": 5}));
    assert!(!v.is_valid(&json!(5)));
    // draft-04 integers are integers in the JSON text.
    let v = compile(json!({"$schema": D4, "type": "integer"}));
    assert!(v.is_valid(&json!(1)) && !v.is_valid(&json!(1.0)));
    // draft-04 uses `id`, not `$id`.
    let v = compile(json!({
        "$schema": D4,
        "definitions": {"a": {"id": "#num", "type": "number"}},
        "items": {"$ref": "#num"}
    }));
    assert!(!v.is_valid(&json!(["x"])));
}

#[test]
fn ref_siblings_are_ignored_up_to_draft_07() {
    for dialect in [D4, D6, D7] {
        let v = compile(
            json!({"$schema": dialect, "definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s", "maxLength": 1}),
        );
        assert!(v.is_valid(&json!("abc")), "{dialect}");
        assert!(!v.is_valid(&json!(1)), "{dialect}");
    }
    for dialect in [D2019, "https://json-schema.org/draft/2020-12/schema"] {
        let v = compile(
            json!({"$schema": dialect, "$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 1}),
        );
        assert!(!v.is_valid(&json!("abc")), "{dialect}");
    }
    // `$defs` and `definitions` are reference targets in every dialect.
    for dialect in [D4, D7, D2019] {
        let v = compile(
            json!({"$schema": dialect, "properties": {"a": {"$ref": "#/$defs/x"}, "b": {"$ref": "#/definitions/x"}}, "$defs": {"x": {"type": "string"}}, "definitions": {"x": {"type": "null"}}}),
        );
        assert!(v.is_valid(&json!({"a": "s", "b": null})), "{dialect}");
        assert!(!v.is_valid(&json!({"a": null})), "{dialect}");
    }
}

#[test]
fn keywords_newer_than_the_dialect_are_ignored() {
    let v = compile(json!({"$schema": D4, "const": 1, "contains": false, "propertyNames": false}));
    assert!(v.is_valid(&json!(2)) && v.is_valid(&json!([1])) && v.is_valid(&json!({"a": 1})));
    let v = compile(json!({"$schema": D6, "if": true, "then": false}));
    assert!(v.is_valid(&json!(1)));
    let v = compile(
        json!({"$schema": D7, "unevaluatedProperties": false, "minContains": 5, "contains": true}),
    );
    assert!(v.is_valid(&json!({"a": 1})) && v.is_valid(&json!([1])));
}

#[test]
fn format_asserts_only_before_2019_09() {
    let schema = |dialect: Option<&str>, format: &str| {
        let mut s = json!({"format": format});
        if let Some(d) = dialect {
            s["$schema"] = json!(d);
        }
        compile(s)
    };
    for (format, good, bad) in [
        ("date", "2024-02-29", "2023-02-29"),
        ("date-time", "2024-01-01T00:00:00Z", "2024-01-01"),
        ("time", "23:59:60Z", "12:00:00"),
        ("email", "a@example.com", "a@@example.com"),
        ("ipv4", "192.168.0.1", "192.168.0.256"),
        ("ipv6", "2001:db8::1", "2001:db8:::1"),
        ("hostname", "a-b.example", "a_b.example"),
        ("uri", "urn:x:y", "not a uri"),
    ] {
        let v = schema(Some(D7), format);
        assert!(v.is_valid(&json!(good)), "{format} {good}");
        assert!(!v.is_valid(&json!(bad)), "{format} {bad}");
        assert_eq!(
            one_error(&v, json!(bad)),
            format!("\"{bad}\" is not a \"{format}\"")
        );
        assert!(v.is_valid(&json!(5)), "formats apply to strings only");
        assert!(
            schema(None, format).is_valid(&json!(bad)),
            "2020-12: annotation"
        );
        assert!(
            schema(Some(D2019), format).is_valid(&json!(bad)),
            "2019-09: annotation"
        );
    }
    assert!(schema(Some(D7), "made-up").is_valid(&json!("x")));
    // uuid is not a draft-07 format.
    assert!(schema(Some(D7), "uuid").is_valid(&json!("x")));
    assert!(Validator::new(&json!({"format": 5})).is_err());
}

// ---------------------------------------------------------------------------------------------
// Untrusted schemas.

fn nested(depth: usize) -> Value {
    let mut schema = json!({"type": "integer"});
    for _ in 0..depth {
        let mut properties = serde_json::Map::new();
        properties.insert("a".into(), schema);
        schema = json!({"properties": Value::Object(properties)});
    }
    schema
}

#[test]
fn schema_nesting_is_bounded() {
    assert!(Validator::new(&nested(100)).is_ok());
    let e = refused(nested(200));
    assert!(e.to_string().contains("nested"), "{e}");
    // Far deeper than any parser produces: still an error, not a stack overflow.
    let mut deep = json!(true);
    for _ in 0..100_000 {
        let mut map = serde_json::Map::new();
        map.insert("not".into(), deep);
        deep = Value::Object(map);
    }
    assert!(Validator::new(&deep).is_err());
    // serde_json drops a value this deep recursively; do it on a big stack.
    on_stack(256 << 20, move || drop(deep));
}

#[test]
fn reference_cycles_without_progress_are_refused() {
    for schema in [
        json!({"$ref": "#"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
        json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "properties": {"x": {"$ref": "#/$defs/a"}}}),
        json!({"anyOf": [{"type": "string"}, {"$ref": "#"}]}),
        json!({"not": {"$ref": "#"}}),
        json!({"$schema": D7, "definitions": {"a": {"$ref": "#/definitions/a"}}, "items": {"$ref": "#/definitions/a"}}),
    ] {
        let e = refused(schema.clone());
        assert!(e.to_string().contains("cycle"), "{schema}: {e}");
    }
    // Recursion that moves into the instance is fine.
    assert!(
        Validator::new(&json!({"items": {"$ref": "#"}, "properties": {"a": {"$ref": "#"}}}))
            .is_ok()
    );
    // An unreferenced cycle is never compiled.
    assert!(Validator::new(&json!({"$defs": {"a": {"$ref": "#/$defs/a"}}})).is_ok());
}

#[test]
fn deep_instances_fail_instead_of_overflowing() {
    let v = compile(json!({"items": {"$ref": "#"}, "type": "array"}));
    let mut deep = json!([]);
    for _ in 0..100 {
        deep = Value::Array(vec![deep]);
    }
    assert!(v.is_valid(&deep));
    for _ in 0..5000 {
        deep = Value::Array(vec![deep]);
    }
    // Run on half the stack a Tokio worker has (2 MiB), unoptimized builds included.
    let result = on_stack(1 << 20, move || {
        let valid = v.is_valid(&deep);
        let errors = v.errors(&deep, 4);
        (valid, errors, deep)
    });
    assert!(!result.0);
    assert!(
        result.1[0].message().contains("nested more than"),
        "{:?}",
        result.1
    );
    on_stack(256 << 20, move || drop(result));
}

#[test]
fn dynamic_reference_loops_are_bounded() {
    // The dynamic target is chosen at run time, so no compile-time check sees this loop; the
    // evaluation depth bound ends it.
    // Statically the `$dynamicRef` lands on B's own anchor; dynamically on A, which refers to
    // B again.
    let v = compile(json!({
        "$id": "https://example.com/A",
        "$dynamicAnchor": "loop",
        "$ref": "B",
        "$defs": {"B": {
            "$id": "B",
            "$defs": {"anchor": {"$dynamicAnchor": "loop", "type": "object"}},
            "allOf": [{"$dynamicRef": "#loop"}]
        }}
    }));
    let result = on_stack(2 << 20, move || v.is_valid(&json!({"a": 1})));
    assert!(!result);
}

#[test]
fn malformed_keyword_values_are_errors() {
    for (schema, location) in [
        (json!({"minimum": "x"}), "/minimum"),
        (json!({"required": 5}), "/required"),
        (json!({"maxItems": -1}), "/maxItems"),
        (json!({"pattern": 5}), "/pattern"),
        (json!({"uniqueItems": "yes"}), "/uniqueItems"),
        (json!({"properties": []}), "/properties"),
        (json!({"items": {"not": 5}}), "/items/not"),
        (json!({"allOf": [1]}), "/allOf/0"),
        (
            json!({"dependentRequired": {"a": "b"}}),
            "/dependentRequired/a",
        ),
        (json!({"$defs": {"a": 1}, "$ref": "#/$defs/a"}), "/$ref"),
        (json!(5), ""),
    ] {
        let e = refused(schema.clone());
        assert_eq!(e.location(), location, "{schema}: {e}");
    }
}

/// Runs `f` on a thread with a stack of `size` bytes and returns its result.
fn on_stack<R: Send + 'static>(size: usize, f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(size)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}
