//! The guides' copies of code kept elsewhere: the "Getting started" files of README.md and
//! docs/server.md (built and run by `scripts/check-getting-started`) are the same in both, and
//! the complete server of docs/server.md is `crates/mcp-server/examples/weather.rs` (built by
//! `cargo build --examples`), so neither copy can drift from what is compiled.

use std::path::Path;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The fenced block that follows the line `<!-- {marker} -->`, without its fences.
fn block_after(doc: &str, marker: &str) -> String {
    let tag = format!("<!-- {marker} -->\n");
    let start = doc
        .find(&tag)
        .unwrap_or_else(|| panic!("no `{tag}` marker"))
        + tag.len();
    let rest = &doc[start..];
    assert!(
        rest.starts_with("```"),
        "`{marker}` is not followed by a fenced block"
    );
    let body = &rest[rest.find('\n').unwrap() + 1..];
    let end = body.find("\n```\n").expect("an unclosed block") + 1;
    body[..end].to_owned()
}

#[test]
fn getting_started_is_the_same_in_the_readme_and_the_server_guide() {
    let readme = read("README.md");
    let guide = read("docs/server.md");
    for file in ["Cargo.toml", "src/main.rs"] {
        let marker = format!("getting-started: {file}");
        assert_eq!(
            block_after(&readme, &marker),
            block_after(&guide, &marker),
            "README.md and docs/server.md differ in {file}"
        );
    }
}

#[test]
fn the_complete_server_in_the_guide_is_the_weather_example() {
    let guide = block_after(&read("docs/server.md"), "example:weather");
    let source = read("crates/mcp-server/examples/weather.rs");
    let (start, end) = ("// example:weather:start\n", "// example:weather:end");
    let from = source.find(start).expect("start marker") + start.len();
    let to = source.find(end).expect("end marker");
    assert_eq!(
        guide,
        source[from..to],
        "docs/server.md's complete server differs from examples/weather.rs"
    );
}
