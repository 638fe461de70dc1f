//! Project automation: `cargo xtask codegen [--check] [--update] [--schema-dir DIR]`.
//!
//! `codegen` reads `schema/revisions.toml`, finds every revision's official `schema.json`,
//! verifies its sha256 and generates `crates/mcp-types/src/generated/` (see `docs/codegen.md`).

mod emit;
mod ir;
mod overlay;
mod unify;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use serde::Deserialize;
use sha2::{Digest, Sha256};

const USAGE: &str = "usage: cargo xtask codegen [--check] [--update] [--schema-dir DIR]

  --check           fail if the committed generated code differs from what the schemas generate
  --update          accept schema files whose sha256 differs from schema/revisions.toml and
                    record the new hashes
  --schema-dir DIR  where <revision>/schema.json live (default: $MCP_SCHEMA_DIR, schema/,
                    ../shared/schema)";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    revision: Vec<RevisionEntry>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RevisionEntry {
    pub version: String,
    pub era: String,
    pub sha256: String,
    pub upstream_repo: String,
    pub upstream_path: String,
}

struct Options {
    check: bool,
    update: bool,
    schema_dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(cmd) = args.next() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if cmd != "codegen" {
        eprintln!("unknown command `{cmd}`\n{USAGE}");
        return ExitCode::from(2);
    }
    let mut opts = Options {
        check: false,
        update: false,
        schema_dir: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => opts.check = true,
            "--update" => opts.update = true,
            "--schema-dir" => match args.next() {
                Some(dir) => opts.schema_dir = Some(PathBuf::from(dir)),
                None => {
                    eprintln!("--schema-dir needs a value\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            other => {
                eprintln!("unknown argument `{other}`\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    match codegen(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("codegen: {e}");
            ExitCode::FAILURE
        }
    }
}

fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

fn find_schema_dir(root: &Path, opts: &Options, first: &str) -> Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(dir) = &opts.schema_dir {
        candidates.push(dir.clone());
    } else {
        if let Some(dir) = std::env::var_os("MCP_SCHEMA_DIR") {
            candidates.push(PathBuf::from(dir));
        }
        candidates.push(root.join("schema"));
        candidates.push(root.join("../shared/schema"));
    }
    for dir in &candidates {
        if dir.join(first).join("schema.json").is_file() {
            return Ok(dir.clone());
        }
    }
    Err(format!(
        "no schema directory with {first}/schema.json; looked in: {}",
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn codegen(opts: &Options) -> Result<(), String> {
    let root = workspace_root();
    let manifest_path = root.join("schema/revisions.toml");
    let manifest_text = std::fs::read_to_string(&manifest_path)
        .map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    let manifest: Manifest =
        toml::from_str(&manifest_text).map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    if manifest.revision.is_empty() {
        return Err("schema/revisions.toml lists no revision".into());
    }
    for pair in manifest.revision.windows(2) {
        if pair[0].version >= pair[1].version {
            return Err("schema/revisions.toml must list revisions oldest first".into());
        }
    }
    for rev in &manifest.revision {
        if rev.era != "session" && rev.era != "stateless" {
            return Err(format!(
                "revision {}: era must be `session` or `stateless`",
                rev.version
            ));
        }
    }
    let overlay_path = root.join("xtask/overlay.toml");
    let overlay_text = std::fs::read_to_string(&overlay_path)
        .map_err(|e| format!("{}: {e}", overlay_path.display()))?;
    let overlay = overlay::Overlay::parse(&overlay_text)?;

    let schema_dir = find_schema_dir(&root, opts, &manifest.revision[0].version)?;
    let mut new_manifest = manifest_text.clone();
    let mut revisions = Vec::new();
    for entry in &manifest.revision {
        let path = schema_dir.join(&entry.version).join("schema.json");
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let actual = sha256_hex(&bytes);
        if actual != entry.sha256 {
            if opts.update {
                new_manifest = new_manifest.replace(&entry.sha256, &actual);
                eprintln!(
                    "codegen: {} sha256 updated to {actual} in schema/revisions.toml",
                    entry.version
                );
            } else {
                return Err(format!(
                    "{}: sha256 is {actual}, schema/revisions.toml expects {}; \
                     pass --update if the new file is intended",
                    path.display(),
                    entry.sha256
                ));
            }
        }
        let json: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        let rev = ir::build(&entry.version, &json, &overlay)
            .map_err(|errs| format!("{}:\n  {}", entry.version, errs.join("\n  ")))?;
        revisions.push(rev);
    }
    let unified = unify::unify(&revisions, &overlay)?;
    let mut files: BTreeMap<PathBuf, String> = BTreeMap::new();
    for (name, text) in emit::emit_all(&manifest.revision, &revisions, &unified)? {
        let formatted = rustfmt(&text).map_err(|e| format!("rustfmt on {name}: {e}"))?;
        files.insert(
            PathBuf::from("crates/mcp-types/src/generated").join(name),
            formatted,
        );
    }
    for (name, text) in emit::emit_test_support(&revisions, &unified)? {
        let formatted = rustfmt(&text).map_err(|e| format!("rustfmt on {name}: {e}"))?;
        files.insert(
            PathBuf::from("crates/mcp-types/tests").join(name),
            formatted,
        );
    }
    let cargo_path = PathBuf::from("crates/mcp-types/Cargo.toml");
    let cargo_text = std::fs::read_to_string(root.join(&cargo_path))
        .map_err(|e| format!("{}: {e}", cargo_path.display()))?;
    files.insert(
        cargo_path.clone(),
        emit::features_block(&cargo_text, &manifest.revision)?,
    );

    if opts.check {
        let mut stale = Vec::new();
        for (path, text) in &files {
            let on_disk = std::fs::read_to_string(root.join(path)).unwrap_or_default();
            if &on_disk != text {
                stale.push(path.display().to_string());
            }
        }
        let gen_dir = root.join("crates/mcp-types/src/generated");
        if let Ok(entries) = std::fs::read_dir(&gen_dir) {
            for entry in entries.flatten() {
                let rel = PathBuf::from("crates/mcp-types/src/generated").join(entry.file_name());
                if !files.contains_key(&rel) {
                    stale.push(format!("{} (not generated any more)", rel.display()));
                }
            }
        }
        if new_manifest != manifest_text {
            stale.push("schema/revisions.toml (hashes)".into());
        }
        if !stale.is_empty() {
            return Err(format!(
                "generated code is out of date; run `cargo xtask codegen`:\n  {}",
                stale.join("\n  ")
            ));
        }
        eprintln!("codegen: {} files up to date", files.len());
        return Ok(());
    }
    let gen_dir = root.join("crates/mcp-types/src/generated");
    if let Ok(entries) = std::fs::read_dir(&gen_dir) {
        for entry in entries.flatten() {
            let rel = PathBuf::from("crates/mcp-types/src/generated").join(entry.file_name());
            if !files.contains_key(&rel) {
                std::fs::remove_file(entry.path())
                    .map_err(|e| format!("{}: {e}", rel.display()))?;
            }
        }
    }
    for (path, text) in &files {
        let full = root.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let old = std::fs::read_to_string(&full).unwrap_or_default();
        if &old != text {
            std::fs::write(&full, text).map_err(|e| format!("{}: {e}", full.display()))?;
        }
    }
    if new_manifest != manifest_text {
        std::fs::write(&manifest_path, new_manifest)
            .map_err(|e| format!("{}: {e}", manifest_path.display()))?;
    }
    eprintln!("codegen: wrote {} files", files.len());
    Ok(())
}

fn rustfmt(source: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new(std::env::var("RUSTFMT").unwrap_or_else(|_| "rustfmt".into()))
        .args(["--edition", "2024", "--emit", "stdout", "--quiet"])
        .current_dir(workspace_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run rustfmt: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("rustfmt has no stdin")?;
    let input = source.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    writer
        .join()
        .map_err(|_| "rustfmt writer panicked".to_owned())?
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    String::from_utf8(output.stdout).map_err(|e| e.to_string())
}
