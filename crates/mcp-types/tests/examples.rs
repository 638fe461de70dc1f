//! Every example instance the 2026-07-28 schema ships (the specification's own golden vectors)
//! deserializes into its generated type, serializes back to equal JSON, and is accepted by the
//! schema; the unified model round-trips it too.

use crate::common;

use common::*;

#[test]
fn spec_examples_round_trip() {
    let dir = schema_dir().join("2026-07-28/examples");
    let schema = schema("2026-07-28");
    let mut types: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    types.sort();
    let mut count = 0;
    let mut failures = Vec::new();
    for type_dir in types {
        let type_name = type_dir.file_name().unwrap().to_str().unwrap().to_owned();
        let validator = validator(&schema, &type_name);
        let mut files: Vec<_> = std::fs::read_dir(&type_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            count += 1;
            let value = read_json(&file);
            let errs = errors(&validator, &value);
            if !errs.is_empty() {
                failures.push(format!(
                    "{}: schema rejects the example: {errs:?}",
                    file.display()
                ));
            }
            match roundtrip("2026-07-28", rust_name(&type_name), &value) {
                None => failures.push(format!("{}: no generated type {type_name}", file.display())),
                Some(Err(e)) => failures.push(format!("{}: {e}", file.display())),
                Some(Ok(back)) if back != value => failures.push(format!(
                    "{}: round trip differs:\n  in:  {value}\n  out: {back}",
                    file.display()
                )),
                Some(Ok(_)) => {}
            }
            if let Some(result) = mcp_types::__roundtrip(rust_name(&type_name), &value) {
                match result {
                    Err(e) => failures.push(format!("{} (model): {e}", file.display())),
                    Ok(back) if back != value => failures.push(format!(
                        "{} (model): round trip differs:\n  in:  {value}\n  out: {back}",
                        file.display()
                    )),
                    Ok(_) => {}
                }
            }
        }
    }
    assert_eq!(count, 129, "expected the 129 example files of 2026-07-28");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
