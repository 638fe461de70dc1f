//! Arguments checked against a tool's input schema before the call is sent: names the tool
//! does not have, missing required arguments, values outside an `enum`, and `--arg` values read
//! by the schema's type. What is not checked here (patterns, ranges, nested objects) the server
//! has the final say on.

use serde_json::{Map, Value};

use crate::sig::{self, Style};

/// Edit distance between two names (Levenshtein, by characters).
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let value = (previous[j] + cost)
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
            current.push(value);
        }
        previous = current;
    }
    previous[b.len()]
}

/// The known name closest to `wanted`, if one is close enough to be a likely typo: a few edits
/// away, the same ignoring case and `-`/`_`, or one containing the other.
pub fn closest<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let fold = |s: &str| s.to_lowercase().replace(['-', '_'], "");
    let wanted_folded = fold(wanted);
    let limit = (wanted.chars().count() / 3).max(1);
    known
        .into_iter()
        .filter_map(|name| {
            let folded = fold(name);
            let d = if folded == wanted_folded {
                0
            } else {
                distance(&wanted_folded, &folded)
            };
            let contains = wanted_folded.len() >= 3
                && (folded.contains(&wanted_folded) || wanted_folded.contains(&folded));
            (d <= limit || contains).then_some((d, name))
        })
        .min_by_key(|(d, name)| (*d, name.len()))
        .map(|(_, name)| name)
}

/// `; did you mean `x`?` or nothing.
pub fn suggestion<'a>(wanted: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(wanted, known)
        .map(|name| format!("; did you mean `{name}`?"))
        .unwrap_or_default()
}

/// The JSON types a property schema allows (`type` as a string or a list, or the types of an
/// `enum`'s values).
pub fn types_of(property: Option<&Value>) -> Vec<String> {
    let Some(property) = property else {
        return Vec::new();
    };
    match property.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(|t| t.as_str().map(str::to_owned))
            .collect(),
        _ => {
            let mut types = Vec::new();
            for key in ["anyOf", "oneOf"] {
                for option in property
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    types.extend(types_of(Some(option)));
                }
            }
            if let Some(values) = property.get("enum").and_then(Value::as_array) {
                types.extend(values.iter().map(|v| json_type(v).to_owned()));
            }
            types
        }
    }
}

/// The JSON type of a value, `integer` for whole numbers.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn fits(types: &[String], kind: &str) -> bool {
    types
        .iter()
        .any(|t| t == kind || (t == "number" && kind == "integer"))
}

/// `--arg k=v` read by the property's schema: a string stays a string where strings are
/// allowed (`zip=02134`); `yes`/`no`/`1`/`0` are booleans where booleans are; a bare value for
/// an array is a one-element array of it, read by the items' schema; anything else is JSON when
/// it parses as JSON, else a string (the server then says what it expected).
pub fn coerce(value: &str, property: Option<&Value>) -> Value {
    let types = types_of(property);
    let parsed = serde_json::from_str::<Value>(value).ok();
    if types.is_empty() {
        return parsed.unwrap_or_else(|| Value::String(value.to_owned()));
    }
    if let Some(parsed) = &parsed {
        if fits(&types, json_type(parsed)) {
            // A string schema takes the text as it is: `"x"` quoted stays quoted only when the
            // parsed value is a JSON string itself.
            return parsed.clone();
        }
    }
    if fits(&types, "string") {
        return Value::String(value.to_owned());
    }
    if fits(&types, "boolean") {
        match value.to_ascii_lowercase().as_str() {
            "yes" | "y" | "on" | "1" => return Value::Bool(true),
            "no" | "n" | "off" | "0" => return Value::Bool(false),
            _ => {}
        }
    }
    if fits(&types, "array") {
        let items = property.and_then(|p| p.get("items"));
        return Value::Array(vec![coerce(value, items)]);
    }
    parsed.unwrap_or_else(|| Value::String(value.to_owned()))
}

/// Adds `--arg` pairs to `base`, read by `schema`. A key given more than once collects its
/// values into an array when the schema says the property is one; otherwise it is an error.
pub fn build(
    mut base: Map<String, Value>,
    pairs: Vec<(String, String)>,
    schema: Option<&Value>,
) -> Result<Map<String, Value>, String> {
    let properties = schema.and_then(|s| s.get("properties"));
    let mut seen: Vec<String> = Vec::new();
    for (key, text) in pairs {
        let property = properties.and_then(|p| p.get(&key));
        let value = coerce(&text, property);
        if seen.contains(&key) {
            if !fits(&types_of(property), "array") {
                return Err(format!("--arg `{key}` is given twice"));
            }
            match (base.get_mut(&key), value) {
                (Some(Value::Array(items)), Value::Array(more)) => items.extend(more),
                (Some(Value::Array(items)), other) => items.push(other),
                _ => return Err(format!("--arg `{key}` is given twice")),
            }
            continue;
        }
        seen.push(key.clone());
        base.insert(key, value);
    }
    Ok(base)
}

/// What is wrong with `arguments` for `schema`, one problem a line; empty when nothing is.
pub fn problems(tool: &str, arguments: &Map<String, Value>, schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let names: Vec<&str> = properties
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for key in arguments.keys() {
        if properties.is_some_and(|p| p.contains_key(key)) {
            continue;
        }
        let hint = closest(key, names.iter().copied());
        match hint {
            Some(name) => problems.push(format!(
                "`{tool}` has no argument `{key}`; did you mean `{name}`?"
            )),
            None if closed && properties.is_some() => problems.push(format!(
                "`{tool}` has no argument `{key}` (it takes: {})",
                names.join(", ")
            )),
            None => {}
        }
    }
    let style = Style::new(false);
    let missing: Vec<String> = sig::required(schema)
        .into_iter()
        .filter(|name| !arguments.contains_key(name))
        .map(|name| {
            let kind = properties
                .and_then(|p| p.get(&name))
                .map(|p| sig::type_of(p, style))
                .unwrap_or_else(|| "any".to_owned());
            format!("{name}: {kind}")
        })
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "`{tool}` needs {} {} (give {})",
            if missing.len() == 1 {
                "argument"
            } else {
                "arguments"
            },
            missing.join(", "),
            missing
                .iter()
                .map(|m| format!("--arg {}=…", m.split(':').next().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    for (key, value) in arguments {
        let Some(allowed) = properties
            .and_then(|p| p.get(key))
            .and_then(|p| p.get("enum"))
            .and_then(Value::as_array)
        else {
            continue;
        };
        if !allowed.contains(value) {
            let list: Vec<String> = allowed
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect();
            problems.push(format!(
                "`{key}` is {value}, not one of the allowed values: {}",
                list.join(", ")
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typos_find_their_name() {
        let tools = ["read_file", "write_file", "list_directory"];
        assert_eq!(closest("read_fiel", tools), Some("read_file"));
        assert_eq!(closest("readFile", tools), Some("read_file"));
        assert_eq!(closest("list", tools), Some("list_directory"));
        assert_eq!(closest("frobnicate", tools), None);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn values_follow_the_schema() {
        let schema = json!({"properties": {
            "text": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "flag": {"type": "boolean"},
            "either": {"type": ["string", "null"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "free": {}
        }});
        let props = schema.get("properties");
        let p = |k: &str| props.and_then(|p| p.get(k));
        assert_eq!(
            coerce("123", p("text")),
            json!("123"),
            "the schema says string"
        );
        assert_eq!(coerce("true", p("text")), json!("true"));
        assert_eq!(coerce("3", p("count")), json!(3));
        assert_eq!(coerce("3", p("ratio")), json!(3), "an integer is a number");
        assert_eq!(coerce("yes", p("flag")), json!(true));
        assert_eq!(coerce("0", p("flag")), json!(false));
        assert_eq!(coerce("null", p("either")), Value::Null);
        assert_eq!(coerce("7", p("either")), json!("7"));
        assert_eq!(
            coerce("a", p("tags")),
            json!(["a"]),
            "a bare value: one element"
        );
        assert_eq!(coerce(r#"["a","b"]"#, p("tags")), json!(["a", "b"]));
        assert_eq!(
            coerce("5", p("ids")),
            json!([5]),
            "items read by their type"
        );
        assert_eq!(coerce(r#"{"a":1}"#, p("free")), json!({"a": 1}));
        assert_eq!(
            coerce("x", p("count")),
            json!("x"),
            "the server says what it expected"
        );
        assert_eq!(coerce("hi there", None), json!("hi there"));
    }

    #[test]
    fn repeated_array_arguments_collect() {
        let schema = json!({"properties": {"tags": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"}}});
        let pairs = vec![
            ("tags".to_owned(), "a".to_owned()),
            ("tags".to_owned(), "b".to_owned()),
        ];
        let built = build(Map::new(), pairs, Some(&schema)).expect("valid");
        assert_eq!(Value::Object(built), json!({"tags": ["a", "b"]}));
        let twice = vec![
            ("n".to_owned(), "1".to_owned()),
            ("n".to_owned(), "2".to_owned()),
        ];
        assert!(build(Map::new(), twice, Some(&schema)).is_err());
    }

    #[test]
    fn problems_are_named() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "mode": {"enum": ["fast", "slow"]}
            },
            "required": ["path"]
        });
        let args = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert!(problems("t", &args(json!({"path": "/x", "mode": "fast"})), &schema).is_empty());
        let missing = problems("t", &args(json!({"mode": "fast"})), &schema);
        assert_eq!(missing.len(), 1);
        assert!(
            missing[0].contains("needs argument path: string"),
            "{missing:?}"
        );
        let bad = problems("t", &args(json!({"path": "/x", "mode": "quick"})), &schema);
        assert!(bad[0].contains("allowed values: fast, slow"), "{bad:?}");
        let typo = problems("t", &args(json!({"pth": "/x"})), &schema);
        assert!(
            typo.iter().any(|p| p.contains("did you mean `path`")),
            "{typo:?}"
        );
    }
}
