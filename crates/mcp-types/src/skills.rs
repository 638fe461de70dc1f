//! The Skills extension (`io.modelcontextprotocol/skills`, SEP-2640): its wire types, the
//! `SKILL.md` frontmatter parser both sides use, digests and the naming rules.
//!
//! A server publishes skills (directories of files with a `SKILL.md`) as resources, usually
//! under `skill://<skill-path>/<file-path>`, and answers `skills/list`, `skills/get` and,
//! when it declares `directoryRead`, `resources/directory/read`. Every entry carries the
//! skill's frontmatter and a manifest of its files with their SHA-256 digests and sizes, which
//! a client checks each file it reads against.
//!
//! ```
//! use mcp_types::skills::{self, Frontmatter};
//!
//! let text = "---\nname: git-workflow\ndescription: Our Git conventions\n---\n# Git\n";
//! let fm = Frontmatter::parse(text)?;
//! assert_eq!(fm.name(), "git-workflow");
//! assert!(skills::is_valid_name(fm.name()));
//! # Ok::<(), skills::FrontmatterError>(())
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use crate::wire::CacheHint;
use crate::{CacheScope, JsonObject, Resource};

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// `skills/list`.
pub const METHOD_LIST: &str = "skills/list";
/// `skills/get`.
pub const METHOD_GET: &str = "skills/get";
/// `resources/directory/read` (only when the server declares `directoryRead`).
pub const METHOD_DIRECTORY_READ: &str = "resources/directory/read";
/// The scheme skills are conventionally served under.
pub const SCHEME: &str = "skill://";
/// The name of a skill's manifest file.
pub const SKILL_MD: &str = "SKILL.md";
/// The MIME type of a directory resource.
pub const DIRECTORY_MIME_TYPE: &str = "inode/directory";
/// `resources` of an entry whose content is generated (no digests can be published).
pub const DYNAMIC: &str = "dynamic";
/// Most entries in one skill's `resources` every host must accept.
pub const MAX_RESOURCES_PER_SKILL: usize = 512;
/// Most bytes (the sum of `size`) in one skill every host must accept: 16 MiB.
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// The longest frontmatter block the parser reads, in bytes.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;
/// The deepest nesting of maps and lists the parser accepts.
pub const MAX_FRONTMATTER_DEPTH: usize = 16;

/// The settings a server declares under `capabilities.extensions["io.modelcontextprotocol/skills"]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillsCapability {
    /// The server implements `resources/directory/read`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub directory_read: bool,
}

/// A file of a skill, with the digest and size of its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillResource {
    /// The file's resource URI.
    pub uri: String,
    /// `sha256:{64 lowercase hex}` of the file's raw bytes.
    pub digest: String,
    /// The length of the file's raw bytes.
    pub size: u64,
}

/// The `resources` of an entry: a complete manifest, or `"dynamic"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillResources {
    /// Every file of the skill, `SKILL.md` included, each once.
    Files(Vec<SkillResource>),
    /// Generated content: no digests.
    Dynamic,
}

impl Serialize for SkillResources {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SkillResources::Files(files) => files.serialize(s),
            SkillResources::Dynamic => s.serialize_str(DYNAMIC),
        }
    }
}

impl<'de> Deserialize<'de> for SkillResources {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Files(Vec<SkillResource>),
            Word(String),
        }
        match Either::deserialize(d)? {
            Either::Files(files) => Ok(SkillResources::Files(files)),
            Either::Word(w) if w == DYNAMIC => Ok(SkillResources::Dynamic),
            Either::Word(w) => Err(serde::de::Error::custom(format!(
                "`resources` is neither an array nor \"dynamic\": {w:?}"
            ))),
        }
    }
}

/// The entry of one skill, as `skills/list` and `skills/get` return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
    /// The `SKILL.md` frontmatter, verbatim as a JSON object (`name` and `description` always).
    pub frontmatter: JsonObject,
    /// The skill's files, or `"dynamic"`.
    pub resources: SkillResources,
}

impl Skill {
    /// `frontmatter.name` (empty when missing).
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `frontmatter.description` (empty when missing).
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The manifest entry of `uri`, if the skill has a manifest that lists it.
    pub fn file(&self, uri: &str) -> Option<&SkillResource> {
        match &self.resources {
            SkillResources::Files(files) => files.iter().find(|f| f.uri == uri),
            SkillResources::Dynamic => None,
        }
    }

    /// The skill's root directory URI: [`uri`](Self::uri) without `/SKILL.md`.
    pub fn root(&self) -> Option<&str> {
        skill_root(&self.uri)
    }

    /// Checks what the extension requires of an entry before anything is fetched: a URI ending
    /// in `/SKILL.md` whose last skill-path segment is `frontmatter.name`, a non-empty name and
    /// description, and a manifest that lists `SKILL.md`, keeps to the skill's directory,
    /// names each file once with a well-formed digest, and stays within the per-skill limits.
    ///
    /// # Errors
    ///
    /// The first rule the entry breaks, in words.
    pub fn validate(&self) -> Result<(), String> {
        let name = self.name();
        if name.is_empty() {
            return Err(format!("{}: frontmatter.name is missing", self.uri));
        }
        if self.description().is_empty() {
            return Err(format!("{}: frontmatter.description is missing", self.uri));
        }
        match skill_name_of(&self.uri) {
            Some(last) if last == name => {}
            Some(last) => {
                return Err(format!(
                    "{}: the last skill-path segment `{last}` is not frontmatter.name `{name}`",
                    self.uri
                ));
            }
            None => return Err(format!("{}: not the URI of a SKILL.md", self.uri)),
        }
        let SkillResources::Files(files) = &self.resources else {
            return Ok(());
        };
        if files.len() > MAX_RESOURCES_PER_SKILL {
            return Err(format!(
                "{}: {} files, more than the {MAX_RESOURCES_PER_SKILL} every host accepts",
                self.uri,
                files.len()
            ));
        }
        let root = self.root().unwrap_or_default();
        let mut total: u64 = 0;
        let mut seen = std::collections::HashSet::new();
        for file in files {
            if file.uri != self.uri && !is_within(root, &file.uri) {
                return Err(format!(
                    "{} is outside the skill directory {root}",
                    file.uri
                ));
            }
            if !seen.insert(file.uri.as_str()) {
                return Err(format!("{} is listed more than once", file.uri));
            }
            if parse_digest(&file.digest).is_none() {
                return Err(format!(
                    "{}: digest {:?} is not sha256:<64 lowercase hex>",
                    file.uri, file.digest
                ));
            }
            total = total.saturating_add(file.size);
        }
        if !seen.contains(self.uri.as_str()) {
            return Err(format!("{}: the manifest does not list SKILL.md", self.uri));
        }
        if total > MAX_SKILL_BYTES {
            return Err(format!(
                "{}: {total} bytes, more than the {MAX_SKILL_BYTES} every host accepts",
                self.uri
            ));
        }
        Ok(())
    }
}

/// Whether `uri` is strictly inside the directory `root` (no `.` or `..` segments).
fn is_within(root: &str, uri: &str) -> bool {
    uri.strip_prefix(root)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|rest| {
            !rest.is_empty()
                && rest
                    .split('/')
                    .all(|s| !s.is_empty() && s != "." && s != "..")
        })
}

/// `skills/list` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListSkillsRequestParams {
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `skills/list` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSkillsResult {
    /// One page of entries.
    pub skills: Vec<Skill>,
    /// Where the next page starts, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// How long the listing may be kept, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// `skills/get` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetSkillRequestParams {
    /// The URI of the skill's `SKILL.md`.
    pub uri: String,
}

/// `skills/get` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetSkillResult {
    /// The entry.
    pub skill: Skill,
    /// How long the entry may be kept, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<CacheScope>,
}

/// `resources/directory/read` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceDirectoryRequestParams {
    /// The directory resource's URI (no trailing slash).
    pub uri: String,
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `resources/directory/read` result: the direct children of the directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceDirectoryResult {
    /// Files, and subdirectories with the MIME type `inode/directory`.
    pub resources: Vec<Resource>,
    /// Where the next page starts, if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The cache members of a result, from a hint.
pub fn cache_members(hint: CacheHint) -> (Option<u64>, Option<CacheScope>) {
    (Some(hint.ttl_ms), Some(hint.scope))
}

/// Whether `name` follows the Agent Skills naming rules: 1 to 64 characters, lowercase ASCII
/// letters, digits and hyphens, no hyphen first, last or twice in a row.
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// The skill's name as its URI spells it: the segment before `/SKILL.md`.
pub fn skill_name_of(uri: &str) -> Option<&str> {
    let root = skill_root(uri)?;
    let (_, path) = root.split_once("://")?;
    let last = path.rsplit('/').next()?;
    (!last.is_empty()).then_some(last)
}

/// The skill's root directory: `uri` without its `/SKILL.md` suffix.
pub fn skill_root(uri: &str) -> Option<&str> {
    let root = uri.strip_suffix("/SKILL.md")?;
    let (_, path) = root.split_once("://")?;
    (!path.is_empty()).then_some(root)
}

/// `sha256:<hex>` of the SHA-256 hash given as its 32 bytes.
pub fn format_digest(hash: &[u8; 32]) -> String {
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hash {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The 32 hash bytes of a `sha256:{64 lowercase hex}` digest; `None` when it is not one.
pub fn parse_digest(digest: &str) -> Option<[u8; 32]> {
    let hex = digest.strip_prefix("sha256:")?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

/// Whether two JSON values are equal, numbers compared by value (`1` equals `1.0`), as a
/// YAML or JSON reader in another language would see them.
pub fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || matches!((x.as_f64(), y.as_f64()), (Some(p), Some(q)) if p == q)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// The first field in which two frontmatter objects differ, compared field by field.
pub fn frontmatter_difference(a: &JsonObject, b: &JsonObject) -> Option<String> {
    let null = Value::Null;
    a.keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .find(|k| !json_equal(a.get(*k).unwrap_or(&null), b.get(*k).unwrap_or(&null)))
        .cloned()
}

/// A `SKILL.md`'s frontmatter: the leading `---` block, read as a JSON object with a
/// non-empty string `name` and `description`.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter {
    fields: JsonObject,
}

impl Frontmatter {
    /// Parses the frontmatter at the start of `text` (a byte order mark is skipped).
    ///
    /// The block is a small subset of YAML, enough for Agent Skills frontmatter: `key: value`
    /// lines, nested maps and `- item` lists by indentation, single- and double-quoted
    /// strings, `[a, b]` lists of scalars, `|` and `>` block strings, and plain scalars typed as
    /// YAML's core schema types them (`true`, `null`, `42`, `1.5`; everything else a string).
    /// Anchors, aliases, tags and flow maps are refused rather than misread. Timestamps stay
    /// strings.
    ///
    /// # Errors
    ///
    /// No block, a block longer than [`MAX_FRONTMATTER_BYTES`], YAML outside the subset, or no
    /// `name` or `description`.
    pub fn parse(text: &str) -> Result<Frontmatter, FrontmatterError> {
        let fields = parse_block(text)?;
        for key in ["name", "description"] {
            match fields.get(key) {
                Some(Value::String(s)) if !s.is_empty() => {}
                _ => return Err(FrontmatterError::new(0, ErrorKind::MissingField(key))),
            }
        }
        Ok(Frontmatter { fields })
    }

    /// `name`.
    pub fn name(&self) -> &str {
        self.fields
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `description`.
    pub fn description(&self) -> &str {
        self.fields
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Every field.
    pub fn fields(&self) -> &JsonObject {
        &self.fields
    }

    /// Every field, owned.
    pub fn into_fields(self) -> JsonObject {
        self.fields
    }
}

/// Why a frontmatter block was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    /// The 1-based line of the block (0: the block as a whole).
    pub line: usize,
    kind: ErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    NoBlock,
    Unterminated,
    TooLarge,
    TooDeep,
    MissingField(&'static str),
    Unsupported(&'static str),
    Syntax(&'static str),
    DuplicateKey(String),
}

impl FrontmatterError {
    fn new(line: usize, kind: ErrorKind) -> Self {
        Self { line, kind }
    }
}

impl fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "frontmatter line {}: ", self.line)?;
        } else {
            f.write_str("frontmatter: ")?;
        }
        match &self.kind {
            ErrorKind::NoBlock => f.write_str("the file does not begin with a `---` line"),
            ErrorKind::Unterminated => f.write_str("no closing `---` line"),
            ErrorKind::TooLarge => write!(f, "longer than {MAX_FRONTMATTER_BYTES} bytes"),
            ErrorKind::TooDeep => write!(f, "nested deeper than {MAX_FRONTMATTER_DEPTH} levels"),
            ErrorKind::MissingField(k) => write!(f, "no non-empty string `{k}`"),
            ErrorKind::Unsupported(what) => write!(f, "{what} are not supported"),
            ErrorKind::Syntax(what) => f.write_str(what),
            ErrorKind::DuplicateKey(k) => write!(f, "key `{k}` appears twice"),
        }
    }
}

impl std::error::Error for FrontmatterError {}

/// The lines of the block between the opening and the closing `---`.
fn block_lines(text: &str) -> Result<Vec<&str>, FrontmatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(FrontmatterError::new(0, ErrorKind::NoBlock))?;
    let mut lines = Vec::new();
    let mut consumed = 0usize;
    for raw in rest.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if line.trim_end_matches([' ', '\t']) == "---" {
            return Ok(lines);
        }
        consumed += raw.len() + 1;
        if consumed > MAX_FRONTMATTER_BYTES {
            return Err(FrontmatterError::new(0, ErrorKind::TooLarge));
        }
        lines.push(line);
    }
    Err(FrontmatterError::new(0, ErrorKind::Unterminated))
}

fn parse_block(text: &str) -> Result<JsonObject, FrontmatterError> {
    let lines = block_lines(text)?;
    let mut parser = Parser {
        lines: lines
            .iter()
            .enumerate()
            .map(|(i, l)| Line { no: i + 1, text: l })
            .collect(),
        pos: 0,
    };
    parser.skip_blank()?;
    if parser.pos >= parser.lines.len() {
        return Ok(JsonObject::new());
    }
    let indent = parser.lines[parser.pos].indent();
    if indent != 0 {
        return Err(parser.error(ErrorKind::Syntax("the first key is indented")));
    }
    let Value::Object(map) = parser.node(0, 0)? else {
        return Err(parser.error(ErrorKind::Syntax("the frontmatter is not a map of keys")));
    };
    parser.skip_blank()?;
    if parser.pos < parser.lines.len() {
        return Err(parser.error(ErrorKind::Syntax("unexpected indentation")));
    }
    Ok(map)
}

struct Line<'a> {
    no: usize,
    text: &'a str,
}

impl<'a> Line<'a> {
    fn indent(&self) -> usize {
        self.text.len() - self.text.trim_start_matches(' ').len()
    }

    fn body(&self) -> &'a str {
        self.text.trim_start_matches(' ')
    }

    fn is_blank(&self) -> bool {
        let body = self.body().trim_end();
        body.is_empty() || body.starts_with('#')
    }
}

struct Parser<'a> {
    lines: Vec<Line<'a>>,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn error(&self, kind: ErrorKind) -> FrontmatterError {
        let line = self.lines.get(self.pos).map_or(0, |l| l.no);
        FrontmatterError::new(line, kind)
    }

    fn skip_blank(&mut self) -> Result<(), FrontmatterError> {
        while let Some(line) = self.lines.get(self.pos) {
            if line.text.trim_start_matches(' ').starts_with('\t') {
                return Err(self.error(ErrorKind::Syntax("tabs cannot indent YAML")));
            }
            if !line.is_blank() {
                break;
            }
            self.pos += 1;
        }
        Ok(())
    }

    /// A map or a list whose lines start at `indent` (the current line is its first).
    fn node(&mut self, indent: usize, depth: usize) -> Result<Value, FrontmatterError> {
        if depth > MAX_FRONTMATTER_DEPTH {
            return Err(self.error(ErrorKind::TooDeep));
        }
        let first = &self.lines[self.pos];
        if first.body() == "-" || first.body().starts_with("- ") {
            self.list(indent, depth)
        } else {
            self.map(indent, depth)
        }
    }

    /// The body of the block's next line that is not blank, at `indent`; `None` where the block
    /// ends (the end of the text, or a line indented less).
    fn next_in_block(&mut self, indent: usize) -> Result<Option<&'a str>, FrontmatterError> {
        self.skip_blank()?;
        let Some(line) = self.lines.get(self.pos) else {
            return Ok(None);
        };
        let here = line.indent();
        if here < indent {
            return Ok(None);
        }
        if here > indent {
            return Err(self.error(ErrorKind::Syntax("unexpected indentation")));
        }
        Ok(Some(line.body()))
    }

    fn map(&mut self, indent: usize, depth: usize) -> Result<Value, FrontmatterError> {
        let mut map = Map::new();
        while let Some(body) = self.next_in_block(indent)? {
            if body == "-" || body.starts_with("- ") {
                return Err(self.error(ErrorKind::Syntax("a list item among map keys")));
            }
            let (key, rest) = split_key(body).map_err(|k| self.error(k))?;
            if map.contains_key(&key) {
                return Err(self.error(ErrorKind::DuplicateKey(key)));
            }
            let value = self.value_after_key(rest, indent, depth)?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }

    fn list(&mut self, indent: usize, depth: usize) -> Result<Value, FrontmatterError> {
        let mut items = Vec::new();
        while let Some(body) = self.next_in_block(indent)? {
            let Some(rest) = body.strip_prefix('-') else {
                break;
            };
            if !(rest.is_empty() || rest.starts_with(' ')) {
                break;
            }
            let rest = rest.trim_start_matches(' ');
            if rest.is_empty() || rest.starts_with('#') {
                self.pos += 1;
                items.push(self.nested_or_null(indent, depth)?);
            } else if split_key(rest).is_ok() && !starts_quoted_scalar(rest) {
                return Err(self.error(ErrorKind::Unsupported("maps inside list items")));
            } else {
                items.push(self.inline_value(rest, indent, depth)?);
            }
        }
        Ok(Value::Array(items))
    }

    /// The value of a key whose line continues with `rest`.
    fn value_after_key(
        &mut self,
        rest: &str,
        indent: usize,
        depth: usize,
    ) -> Result<Value, FrontmatterError> {
        let rest = rest.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            self.pos += 1;
            return self.nested_or_null(indent, depth);
        }
        self.inline_value(rest, indent, depth)
    }

    /// After a key or dash with nothing on its line: a nested block, or null.
    fn nested_or_null(&mut self, indent: usize, depth: usize) -> Result<Value, FrontmatterError> {
        self.skip_blank()?;
        match self.lines.get(self.pos) {
            Some(next) if next.indent() > indent => {
                let nested = next.indent();
                self.node(nested, depth + 1)
            }
            // YAML lets a map's list sit at the key's own indentation.
            Some(next)
                if next.indent() == indent
                    && (next.body() == "-" || next.body().starts_with("- ")) =>
            {
                self.list(indent, depth + 1)
            }
            _ => Ok(Value::Null),
        }
    }

    /// A value that starts on the current line (after `key:` or `- `); consumes its lines.
    fn inline_value(
        &mut self,
        text: &str,
        indent: usize,
        depth: usize,
    ) -> Result<Value, FrontmatterError> {
        let first = text.as_bytes()[0];
        match first {
            b'&' => return Err(self.error(ErrorKind::Unsupported("anchors"))),
            b'*' => return Err(self.error(ErrorKind::Unsupported("aliases"))),
            b'!' => return Err(self.error(ErrorKind::Unsupported("tags"))),
            b'{' => {
                if strip_comment(text).trim_end() == "{}" {
                    self.pos += 1;
                    return Ok(Value::Object(Map::new()));
                }
                return Err(self.error(ErrorKind::Unsupported("flow maps")));
            }
            b'@' | b'`' | b'%' => {
                return Err(self.error(ErrorKind::Syntax("a reserved character starts a value")));
            }
            _ => {}
        }
        if first == b'|' || first == b'>' {
            return self.block_scalar(text, indent);
        }
        if first == b'[' {
            let v = flow_list(strip_comment(text).trim_end()).map_err(|k| self.error(k))?;
            self.pos += 1;
            return Ok(v);
        }
        if first == b'"' || first == b'\'' {
            return self.quoted(text, indent);
        }
        // A plain scalar, possibly continued on more indented lines. YAML reads `: ` inside
        // one as a nested key, so such text must be quoted.
        let plain = strip_comment(text).trim_end();
        if plain.contains(": ") || plain.ends_with(':') || plain == "-" || plain.starts_with("- ") {
            return Err(self.error(ErrorKind::Syntax(
                "`: ` or a leading `- ` inside a plain value (quote the value)",
            )));
        }
        let mut parts = vec![plain.to_owned()];
        let commented = strip_comment(text).len() != text.len();
        self.pos += 1;
        if !commented {
            while let Some(line) = self.lines.get(self.pos) {
                if line.is_blank() || line.indent() <= indent {
                    break;
                }
                let body = line.body();
                if split_key(body).is_ok() {
                    return Err(self.error(ErrorKind::Syntax("a key inside a multi-line value")));
                }
                let body = strip_comment(body);
                parts.push(body.trim_end().to_owned());
                self.pos += 1;
                if body.len() != line.body().len() {
                    break;
                }
            }
        }
        let _ = depth;
        if parts.len() == 1 {
            return Ok(plain_scalar(&parts[0]));
        }
        Ok(Value::String(parts.join(" ")))
    }

    /// A quoted string, which may continue on further lines (folded with spaces).
    fn quoted(&mut self, text: &str, indent: usize) -> Result<Value, FrontmatterError> {
        let quote = char::from(text.as_bytes()[0]);
        let mut joined = text.to_owned();
        let start = self.pos;
        loop {
            match quoted_end(&joined, quote) {
                Some(end) => {
                    let rest = joined[end..].trim_start_matches([' ', '\t']);
                    if !(rest.is_empty() || rest.starts_with('#')) {
                        return Err(self.error(ErrorKind::Syntax("text after a quoted string")));
                    }
                    let inner = &joined[1..end - 1];
                    let s = if quote == '"' {
                        unescape_double(inner).map_err(|k| self.error(k))?
                    } else {
                        inner.replace("''", "'")
                    };
                    self.pos += 1;
                    return Ok(Value::String(s));
                }
                None => {
                    self.pos += 1;
                    let Some(line) = self.lines.get(self.pos) else {
                        self.pos = start;
                        return Err(self.error(ErrorKind::Syntax("an unterminated quoted string")));
                    };
                    let body = line.body().trim_end();
                    if line.indent() <= indent && !body.is_empty() {
                        self.pos = start;
                        return Err(self.error(ErrorKind::Syntax("an unterminated quoted string")));
                    }
                    // Line folding: a line break becomes a space, an empty line a newline.
                    let trimmed = joined.trim_end_matches([' ', '\t']).len();
                    joined.truncate(trimmed);
                    if body.is_empty() {
                        joined.push('\n');
                    } else {
                        if !joined.ends_with('\n') {
                            joined.push(' ');
                        }
                        joined.push_str(body);
                    }
                }
            }
        }
    }

    /// `|` (literal) or `>` (folded), with an optional `-` (strip) or `+` (keep) indicator.
    fn block_scalar(&mut self, header: &str, indent: usize) -> Result<Value, FrontmatterError> {
        let header = strip_comment(header).trim_end();
        let literal = header.starts_with('|');
        let chomp = match &header[1..] {
            "" => Chomp::Clip,
            "-" => Chomp::Strip,
            "+" => Chomp::Keep,
            _ => {
                return Err(self.error(ErrorKind::Unsupported(
                    "block string indentation indicators",
                )));
            }
        };
        self.pos += 1;
        let mut block_indent = None;
        let mut lines: Vec<&str> = Vec::new();
        while let Some(line) = self.lines.get(self.pos) {
            let blank = line.text.trim().is_empty();
            if blank {
                lines.push("");
                self.pos += 1;
                continue;
            }
            let here = line.indent();
            if here <= indent {
                break;
            }
            let bi = *block_indent.get_or_insert(here);
            if here < bi {
                return Err(self.error(ErrorKind::Syntax("a block string line is less indented")));
            }
            lines.push(&line.text[bi..]);
            self.pos += 1;
        }
        // Trailing blank lines belong to the chomping, not to the content.
        let mut trailing = 0;
        while lines.last() == Some(&"") {
            lines.pop();
            trailing += 1;
        }
        let mut out = String::new();
        if literal {
            out = lines.join("\n");
        } else {
            let mut prev_more_indented = false;
            for (i, line) in lines.iter().enumerate() {
                let more_indented = line.starts_with(' ');
                if i > 0 {
                    let prev = lines[i - 1];
                    if line.is_empty() || prev.is_empty() || more_indented || prev_more_indented {
                        out.push('\n');
                    } else {
                        out.push(' ');
                    }
                }
                out.push_str(line);
                prev_more_indented = more_indented;
            }
            // Folding: n consecutive empty lines stand for n newlines.
            out = fold_empty_lines(&out);
        }
        if !lines.is_empty() {
            match chomp {
                Chomp::Strip => {}
                Chomp::Clip => out.push('\n'),
                Chomp::Keep => {
                    out.push('\n');
                    out.extend(std::iter::repeat_n('\n', trailing));
                }
            }
        }
        Ok(Value::String(out))
    }
}

#[derive(Clone, Copy)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

/// In folded text, an empty line between two lines was joined as `\n` + `` + `\n`; YAML makes
/// such a run of n empty lines n newlines in all.
fn fold_empty_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut newlines = 0;
    for c in text.chars() {
        if c == '\n' {
            newlines += 1;
            continue;
        }
        if newlines > 0 {
            let n = if newlines > 1 { newlines - 1 } else { 1 };
            out.extend(std::iter::repeat_n('\n', n));
            newlines = 0;
        }
        out.push(c);
    }
    out.extend(std::iter::repeat_n('\n', newlines));
    out
}

/// The key of a `key: rest` line and the rest; an error when the line is not one.
fn split_key(body: &str) -> Result<(String, &str), ErrorKind> {
    if body.starts_with('"') || body.starts_with('\'') {
        let quote = char::from(body.as_bytes()[0]);
        let end = quoted_end(body, quote).ok_or(ErrorKind::Syntax("an unterminated quoted key"))?;
        let rest = body[end..]
            .strip_prefix(':')
            .filter(|r| r.is_empty() || r.starts_with(' '))
            .ok_or(ErrorKind::Syntax("a quoted key without `:`"))?;
        let inner = &body[1..end - 1];
        let key = if quote == '"' {
            unescape_double(inner)?
        } else {
            inner.replace("''", "'")
        };
        return Ok((key, rest));
    }
    if body.starts_with('?') {
        return Err(ErrorKind::Unsupported("complex keys"));
    }
    let mut search = 0;
    while let Some(i) = body[search..].find(':') {
        let at = search + i;
        let after = &body[at + 1..];
        if after.is_empty() || after.starts_with(' ') {
            let key = body[..at].trim_end();
            if key.is_empty() || key.contains(" #") {
                return Err(ErrorKind::Syntax("an empty key"));
            }
            return Ok((key.to_owned(), after));
        }
        search = at + 1;
    }
    Err(ErrorKind::Syntax("a line that is not `key: value`"))
}

fn starts_quoted_scalar(text: &str) -> bool {
    (text.starts_with('"') || text.starts_with('\''))
        && quoted_end(text, char::from(text.as_bytes()[0]))
            .is_some_and(|end| !text[end..].starts_with(':'))
}

/// The byte index just past the closing quote of a string opening at 0.
fn quoted_end(text: &str, quote: char) -> Option<usize> {
    let bytes = text.as_bytes();
    let q = quote as u8;
    let mut i = 1;
    while i < bytes.len() {
        let b = bytes[i];
        if q == b'"' && b == b'\\' {
            i += 2;
            continue;
        }
        if b == q {
            if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                i += 2;
                continue;
            }
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

fn unescape_double(inner: &str) -> Result<String, ErrorKind> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next().ok_or(ErrorKind::Syntax("a dangling `\\`"))?;
        match e {
            'n' => out.push('\n'),
            't' | '\t' => out.push('\t'),
            'r' => out.push('\r'),
            '0' => out.push('\0'),
            '"' => out.push('"'),
            '\\' => out.push('\\'),
            '/' => out.push('/'),
            ' ' => out.push(' '),
            'u' | 'x' | 'U' => {
                let n = match e {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let hex: String = chars.by_ref().take(n).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == n)
                    .and_then(char::from_u32)
                    .ok_or(ErrorKind::Syntax("a bad `\\u` escape"))?;
                out.push(code);
            }
            _ => {
                return Err(ErrorKind::Syntax(
                    "an unknown escape in a double-quoted string",
                ));
            }
        }
    }
    Ok(out)
}

/// Text before a ` #` comment.
fn strip_comment(text: &str) -> &str {
    let bytes = text.as_bytes();
    for i in 0..bytes.len() {
        if bytes[i] == b'#' && (i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b'\t') {
            return &text[..i];
        }
    }
    text
}

/// `[a, "b", 3]`: a flow list of scalars.
fn flow_list(text: &str) -> Result<Value, ErrorKind> {
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or(ErrorKind::Unsupported("multi-line flow lists"))?;
    let mut items = Vec::new();
    let mut rest = inner.trim();
    while !rest.is_empty() {
        let (item, after) = if rest.starts_with('"') || rest.starts_with('\'') {
            let quote = char::from(rest.as_bytes()[0]);
            let end = quoted_end(rest, quote).ok_or(ErrorKind::Syntax("an unterminated string"))?;
            let inner = &rest[1..end - 1];
            let s = if quote == '"' {
                unescape_double(inner)?
            } else {
                inner.replace("''", "'")
            };
            (Value::String(s), rest[end..].trim_start())
        } else {
            if rest.starts_with(['[', '{', '&', '*', '!']) {
                return Err(ErrorKind::Unsupported("nested flow collections"));
            }
            let end = rest.find(',').unwrap_or(rest.len());
            (plain_scalar(rest[..end].trim()), &rest[end..])
        };
        items.push(item);
        rest = match after.strip_prefix(',') {
            Some(r) => r.trim_start(),
            None if after.trim().is_empty() => "",
            None => return Err(ErrorKind::Syntax("a flow list item without `,`")),
        };
    }
    Ok(Value::Array(items))
}

/// A plain scalar typed as YAML 1.2's core schema types it.
fn plain_scalar(text: &str) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    if is_decimal_int(text) {
        if let Ok(n) = text.parse::<i64>() {
            return Value::Number(n.into());
        }
    }
    if is_float(text) {
        if let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64) {
            return Value::Number(n);
        }
    }
    Value::String(text.to_owned())
}

fn is_decimal_int(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
fn is_float(text: &str) -> bool {
    let t = text.strip_prefix(['-', '+']).unwrap_or(text).as_bytes();
    let mut i = 0;
    let int_start = i;
    while i < t.len() && t[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < t.len() && t[i] == b'.' {
        i += 1;
        while i < t.len() && t[i].is_ascii_digit() {
            i += 1;
            frac_digits += 1;
        }
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < t.len() && (t[i] == b'e' || t[i] == b'E') {
        i += 1;
        if i < t.len() && (t[i] == b'-' || t[i] == b'+') {
            i += 1;
        }
        let exp_start = i;
        while i < t.len() && t[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == t.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<JsonObject, FrontmatterError> {
        parse_block(text)
    }

    fn obj(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn plain_key_values() {
        let fm = Frontmatter::parse(
            "---\nname: pdf-processing\ndescription: Extract, fill, and assemble PDF documents\n---\n\nBody\n",
        )
        .unwrap();
        assert_eq!(fm.name(), "pdf-processing");
        assert_eq!(
            fm.description(),
            "Extract, fill, and assemble PDF documents"
        );
        assert_eq!(fm.fields().len(), 2);
    }

    #[test]
    fn crlf_and_bom_are_read() {
        let fm =
            Frontmatter::parse("\u{feff}---\r\nname: a\r\ndescription: b c\r\n---\r\nBody\r\n")
                .unwrap();
        assert_eq!(fm.name(), "a");
        assert_eq!(fm.description(), "b c");
    }

    #[test]
    fn a_missing_block_is_refused() {
        for text in [
            "",
            "name: a\n",
            "# Title\n---\nname: a\n---\n",
            "--- \nname: a\n---\n",
        ] {
            assert_eq!(
                parse(text).unwrap_err().kind,
                ErrorKind::NoBlock,
                "{text:?}"
            );
        }
        assert_eq!(
            parse("---\nname: a\n").unwrap_err().kind,
            ErrorKind::Unterminated
        );
        assert!(matches!(
            Frontmatter::parse("---\nname: a\n---\n").unwrap_err().kind,
            ErrorKind::MissingField("description")
        ));
        assert!(matches!(
            Frontmatter::parse("---\nname: ''\ndescription: d\n---\n")
                .unwrap_err()
                .kind,
            ErrorKind::MissingField("name")
        ));
    }

    #[test]
    fn an_oversize_block_is_refused() {
        let mut text = String::from("---\nname: a\ndescription: b\n");
        while text.len() <= MAX_FRONTMATTER_BYTES + 10 {
            text.push_str(&format!("k{}: v\n", text.len()));
        }
        text.push_str("---\n");
        assert_eq!(parse(&text).unwrap_err().kind, ErrorKind::TooLarge);
        // Even without a closing line the reader stops at the limit.
        let endless = format!("---\n{}", "x: y\n".repeat(MAX_FRONTMATTER_BYTES));
        assert_eq!(parse(&endless).unwrap_err().kind, ErrorKind::TooLarge);
    }

    #[test]
    fn types_follow_the_core_schema() {
        let m = parse(
            "---\na: 42\nb: -1.5\nc: true\nd: null\ne: ~\nf: 1.0.0\ng: \"42\"\nh: 'it''s'\ni: 2024-01-01\nj:\nk: 1e3\nl: .5\n---\n",
        )
        .unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"a": 42, "b": -1.5, "c": true, "d": null, "e": null, "f": "1.0.0",
                   "g": "42", "h": "it's", "i": "2024-01-01", "j": null, "k": 1000.0, "l": 0.5})
        );
    }

    #[test]
    fn nested_maps_lists_and_comments() {
        let m = parse(
            "---\n# comment\nname: x # trailing\nmetadata:\n  author: me\n  version: \"2.1\"\n  deep:\n    k: v\ntags:\n  - one\n  - 'two'\nflow: [a, \"b c\", 3]\nempty: {}\nurl: http://example.com/#frag\n---\n",
        )
        .unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"name": "x", "metadata": {"author": "me", "version": "2.1", "deep": {"k": "v"}},
                   "tags": ["one", "two"], "flow": ["a", "b c", 3], "empty": {},
                   "url": "http://example.com/#frag"})
        );
        let m = parse("---\nlist:\n- a\n- b\nnext: 1\n---\n").unwrap();
        assert_eq!(Value::Object(m), json!({"list": ["a", "b"], "next": 1}));
    }

    #[test]
    fn block_and_multi_line_strings() {
        let m = parse(
            "---\nlit: |\n  line one\n  line two\nfold: >-\n  folded\n  text\n\n  para\nplain: first\n  second\nq: \"a\n  b\"\n---\n",
        )
        .unwrap();
        assert_eq!(
            Value::Object(m),
            json!({"lit": "line one\nline two\n", "fold": "folded text\npara",
                   "plain": "first second", "q": "a b"})
        );
    }

    #[test]
    fn outside_the_subset_is_refused() {
        for (text, what) in [
            ("---\na: &x 1\n---\n", "anchors"),
            ("---\na: *x\n---\n", "aliases"),
            ("---\na: !!str 1\n---\n", "tags"),
            ("---\na: {b: 1}\n---\n", "flow maps"),
            ("---\nlist:\n  - a: 1\n---\n", "maps inside list items"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Unsupported(what), "{text:?}");
        }
        assert!(matches!(
            parse("---\na: 1\na: 2\n---\n").unwrap_err().kind,
            ErrorKind::DuplicateKey(_)
        ));
        assert!(parse("---\n  a: 1\n---\n").is_err());
        assert!(parse("---\na: 1\n   b: 2\n---\n").is_err());
        assert!(parse("---\njust text\n---\n").is_err());
        assert!(parse("---\na: \"open\n---\n").is_err());
        assert!(parse("---\n\ta: 1\n---\n").is_err());
        assert!(
            parse("---\na: b: c\n---\n").is_err(),
            "YAML refuses `: ` in a plain value"
        );
        assert!(parse("---\na: 'b: c'\n---\n").is_ok());
    }

    #[test]
    fn depth_is_bounded() {
        let mut text = String::from("---\n");
        for i in 0..(MAX_FRONTMATTER_DEPTH + 3) {
            text.push_str(&" ".repeat(i * 2));
            text.push_str("k:\n");
        }
        text.push_str(&" ".repeat((MAX_FRONTMATTER_DEPTH + 3) * 2));
        text.push_str("k: v\n---\n");
        assert_eq!(parse(&text).unwrap_err().kind, ErrorKind::TooDeep);
    }

    #[test]
    fn digests_round_trip() {
        let hash = [0xabu8; 32];
        let d = format_digest(&hash);
        assert_eq!(d.len(), 71);
        assert_eq!(parse_digest(&d), Some(hash));
        assert_eq!(parse_digest(&d.to_uppercase()), None);
        assert_eq!(parse_digest("sha256:abc"), None);
        assert_eq!(parse_digest(&d.replace("sha256", "sha512")), None);
    }

    #[test]
    fn names_and_uris() {
        for ok in ["a", "pdf-processing", "x1-2", &"a".repeat(64)] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "a b", &"a".repeat(65)] {
            assert!(!is_valid_name(bad), "{bad}");
        }
        assert_eq!(
            skill_name_of("skill://acme/billing/refunds/SKILL.md"),
            Some("refunds")
        );
        assert_eq!(skill_root("skill://git/SKILL.md"), Some("skill://git"));
        assert_eq!(skill_root("skill:///SKILL.md"), None);
        assert_eq!(skill_name_of("skill://git/README.md"), None);
    }

    #[test]
    fn entries_are_validated() {
        let d = format_digest(&[1; 32]);
        let skill = |uri: &str, files: Value| -> Skill {
            serde_json::from_value(json!({
                "uri": uri, "frontmatter": {"name": "git", "description": "d"}, "resources": files
            }))
            .unwrap()
        };
        let ok = skill(
            "skill://git/SKILL.md",
            json!([{"uri": "skill://git/SKILL.md", "digest": d, "size": 1},
                   {"uri": "skill://git/a/b.md", "digest": d, "size": 2}]),
        );
        ok.validate().unwrap();
        assert!(
            skill("skill://other/SKILL.md", json!("dynamic"))
                .validate()
                .is_err()
        );
        assert!(
            skill("skill://git/SKILL.md", json!("dynamic"))
                .validate()
                .is_ok()
        );
        for files in [
            json!([]),
            json!([{"uri": "skill://git/SKILL.md", "digest": "sha256:x", "size": 1}]),
            json!([{"uri": "skill://git/SKILL.md", "digest": d, "size": 1},
                   {"uri": "skill://gitx/a.md", "digest": d, "size": 1}]),
            json!([{"uri": "skill://git/SKILL.md", "digest": d, "size": 1},
                   {"uri": "skill://git/../x/a.md", "digest": d, "size": 1}]),
            json!([{"uri": "skill://git/SKILL.md", "digest": d, "size": 1},
                   {"uri": "skill://git/SKILL.md", "digest": d, "size": 1}]),
            json!([{"uri": "skill://git/SKILL.md", "digest": d, "size": MAX_SKILL_BYTES + 1}]),
        ] {
            assert!(
                skill("skill://git/SKILL.md", files.clone())
                    .validate()
                    .is_err(),
                "{files}"
            );
        }
        let bad: Result<Skill, _> = serde_json::from_value(json!({
            "uri": "skill://git/SKILL.md", "frontmatter": {}, "resources": "static"
        }));
        assert!(bad.is_err());
    }

    #[test]
    fn frontmatter_is_compared_by_value() {
        let a = obj(json!({"name": "x", "n": 1, "m": {"v": [1.0]}}));
        let b = obj(json!({"name": "x", "n": 1.0, "m": {"v": [1]}}));
        assert_eq!(frontmatter_difference(&a, &b), None);
        let c = obj(json!({"name": "x", "n": 1, "m": {"v": [1]}, "extra": null}));
        assert_eq!(frontmatter_difference(&a, &c), None, "null equals absent");
        let d = obj(json!({"name": "y", "n": 1, "m": {"v": [1]}}));
        assert_eq!(frontmatter_difference(&a, &d).as_deref(), Some("name"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Never panics, whatever follows the opening line.
        #[test]
        fn arbitrary_blocks_never_panic(body in "[ a-z:#'\"|>\\[\\]{}&*!,\\-\r\n\t0-9.~]{0,200}") {
            let _ = parse(&format!("---\n{body}\n---\n"));
            let _ = parse(&body);
        }

        /// Plain `key: value` lines of safe strings come back as written.
        #[test]
        fn simple_pairs_round_trip(
            pairs in proptest::collection::btree_map("[a-z][a-z0-9-]{0,10}", "[a-z][a-z ,.]{0,30}[a-z]", 1..10)
        ) {
            let mut text = String::from("---\n");
            for (k, v) in &pairs {
                text.push_str(&format!("{k}: {v}\n"));
            }
            text.push_str("---\nbody\n");
            let parsed = parse(&text).unwrap();
            let expected: JsonObject = pairs
                .iter()
                .map(|(k, v)| (k.clone(), plain_scalar(v)))
                .collect();
            proptest::prop_assert_eq!(parsed, expected);
        }
    }
}
