//! The guides' copies of code kept elsewhere: the complete server of docs/server.md is
//! `crates/mcp-server/examples/weather.rs` (built by `cargo build --examples`), so the copy
//! cannot drift from what is compiled.

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
