//! Serving skills: the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640).
//!
//! A skill is a directory with a `SKILL.md` (frontmatter with `name` and `description`) and any
//! supporting files. Give the builder a [`SkillSet`], built in code from [`ServedSkill`]s or
//! read from a directory tree with [`SkillSet::from_dir`], and the server
//!
//! * declares the extension (with `directoryRead`) and the resources capability,
//! * serves every file as a resource at `skill://<skill-path>/<file-path>` (`SKILL.md` with the
//!   frontmatter's name and description, as `text/markdown`),
//! * answers `skills/list` and `skills/get` with each skill's frontmatter and a manifest of its
//!   files with SHA-256 digests and sizes, and `resources/directory/read` for every directory.
//!
//! Content is read once, when the set is built: what the manifest describes is what is served.
//!
//! ```
//! use mcp_server::skills::{ServedSkill, SkillSet};
//! use mcp_server::{Server, model::Implementation};
//!
//! let skill = ServedSkill::new("---\nname: git-workflow\ndescription: Our Git conventions\n---\n# Git\n")?
//!     .file("references/BRANCHES.md", "main is protected.\n")?;
//! let server = Server::builder(Implementation::new("docs", "1.0.0"))
//!     .skills(SkillSet::new().with(skill)?)
//!     .build()
//!     .unwrap();
//! # let _ = server;
//! # Ok::<(), mcp_server::skills::SkillError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_jsonrpc::{ErrorObject, RawJson};
use mcp_types::skills::{
    self as wire, DIRECTORY_MIME_TYPE, EXTENSION, Frontmatter, FrontmatterError,
    GetSkillRequestParams, GetSkillResult, ListSkillsRequestParams, ListSkillsResult,
    MAX_RESOURCES_PER_SKILL, MAX_SKILL_BYTES, METHOD_DIRECTORY_READ, METHOD_GET, METHOD_LIST,
    ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, SKILL_MD, Skill,
    SkillResource, SkillResources,
};
use mcp_types::wire::CacheHint;
use mcp_types::{JsonObject, ResourceContentsKind};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::ext::ResourceContentsExt as _;

/// The deepest directory [`SkillSet::from_dir`] descends into.
pub const MAX_DIR_DEPTH: usize = 16;
/// The most files [`SkillSet::from_dir`] reads in all.
pub const MAX_DIR_FILES: usize = 10_000;
/// The most bytes [`SkillSet::from_dir`] reads in all (256 MiB).
pub const MAX_DIR_BYTES: u64 = 256 * 1024 * 1024;

/// Why a skill or a skill set was refused.
#[derive(Debug)]
#[non_exhaustive]
pub enum SkillError {
    /// `SKILL.md` has no usable frontmatter.
    Frontmatter {
        /// Where the `SKILL.md` is (a file path, or the skill's name).
        path: String,
        /// What is wrong with it.
        source: FrontmatterError,
    },
    /// The frontmatter `name` breaks the Agent Skills naming rules, or is not the name of the
    /// skill's directory.
    Name {
        /// The name.
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A file path or prefix that is not a plain relative path (`..`, `.`, empty segments,
    /// `\`, a leading `/`), or a file listed twice.
    Path {
        /// The path.
        path: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Two skills at the same URI, or one URI served with two contents.
    Duplicate(String),
    /// The skill is over a per-skill limit of the extension (512 files, 16 MiB), or the
    /// directory tree over a reading limit.
    TooLarge {
        /// What is too large.
        what: String,
        /// The limit.
        limit: u64,
    },
    /// A symbolic link that leaves the skills root, or one to a directory.
    Link {
        /// The link.
        path: PathBuf,
        /// Why it is refused.
        reason: &'static str,
    },
    /// Reading the directory tree failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkillError::Frontmatter { path, source } => write!(f, "{path}: {source}"),
            SkillError::Name { name, reason } => write!(f, "invalid skill name `{name}`: {reason}"),
            SkillError::Path { path, reason } => write!(f, "invalid path `{path}`: {reason}"),
            SkillError::Duplicate(e) => write!(f, "{e} is served twice"),
            SkillError::TooLarge { what, limit } => write!(f, "{what}: over the limit of {limit}"),
            SkillError::Link { path, reason } => write!(f, "{}: {reason}", path.display()),
            SkillError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for SkillError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SkillError::Frontmatter { source, .. } => Some(source),
            SkillError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> SkillError + '_ {
    move |source| SkillError::Io {
        path: path.to_owned(),
        source,
    }
}

/// One skill to serve: its `SKILL.md` and supporting files, under an optional prefix.
#[derive(Debug, Clone)]
pub struct ServedSkill {
    prefix: Vec<String>,
    frontmatter: Frontmatter,
    skill_md: Arc<[u8]>,
    files: BTreeMap<String, Arc<[u8]>>,
}

impl ServedSkill {
    /// A skill from the text of its `SKILL.md`.
    ///
    /// # Errors
    ///
    /// [`SkillError::Frontmatter`] when the frontmatter is missing or has no `name` or
    /// `description`; [`SkillError::Name`] when the name breaks the naming rules.
    pub fn new(skill_md: impl Into<String>) -> Result<ServedSkill, SkillError> {
        let text = skill_md.into();
        let frontmatter = Frontmatter::parse(&text).map_err(|source| SkillError::Frontmatter {
            path: SKILL_MD.to_owned(),
            source,
        })?;
        if !wire::is_valid_name(frontmatter.name()) {
            return Err(SkillError::Name {
                name: frontmatter.name().to_owned(),
                reason: "1-64 lowercase letters, digits and single hyphens, no hyphen first or last",
            });
        }
        Ok(ServedSkill {
            prefix: Vec::new(),
            frontmatter,
            skill_md: Arc::from(text.into_bytes()),
            files: BTreeMap::new(),
        })
    }

    /// The skill's name (`frontmatter.name`).
    pub fn name(&self) -> &str {
        self.frontmatter.name()
    }

    /// The frontmatter.
    pub fn frontmatter(&self) -> &Frontmatter {
        &self.frontmatter
    }

    /// Serves the skill under an organizational prefix: `acme/billing` puts skill `refunds` at
    /// `skill://acme/billing/refunds/SKILL.md`.
    ///
    /// # Errors
    ///
    /// [`SkillError::Path`] when the prefix is not a plain relative path.
    pub fn prefix(mut self, prefix: &str) -> Result<ServedSkill, SkillError> {
        self.prefix = segments(prefix)?;
        Ok(self)
    }

    /// Adds a supporting file at `path`, relative to the skill's directory (`/`-separated).
    ///
    /// # Errors
    ///
    /// [`SkillError::Path`] when the path is not a plain relative path, is `SKILL.md`, or was
    /// added before.
    pub fn file(
        mut self,
        path: &str,
        content: impl Into<Vec<u8>>,
    ) -> Result<ServedSkill, SkillError> {
        let path = segments(path)?.join("/");
        if path == SKILL_MD {
            return Err(SkillError::Path {
                path,
                reason: "SKILL.md is the skill's own text",
            });
        }
        if self.files.contains_key(&path) {
            return Err(SkillError::Path {
                path,
                reason: "added twice",
            });
        }
        self.files.insert(path, Arc::from(content.into()));
        Ok(self)
    }
}

/// The segments of a relative path, each checked.
fn segments(path: &str) -> Result<Vec<String>, SkillError> {
    let bad = |reason| SkillError::Path {
        path: path.to_owned(),
        reason,
    };
    if path.is_empty() {
        return Err(bad("empty"));
    }
    if path.starts_with('/') {
        return Err(bad("absolute"));
    }
    if path.contains('\\') || path.contains('\0') {
        return Err(bad("a `\\` or NUL byte"));
    }
    let mut out = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" => return Err(bad("an empty segment")),
            "." | ".." => return Err(bad("a `.` or `..` segment")),
            s if s.chars().any(char::is_control) => return Err(bad("a control character")),
            s => out.push(s.to_owned()),
        }
    }
    Ok(out)
}

/// A path segment as it appears in a URI: everything outside RFC 3986's unreserved
/// characters, sub-delimiters, `:` and `@` percent-encoded.
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A file as served.
#[derive(Debug)]
struct File {
    bytes: Arc<[u8]>,
    mime_type: String,
    /// The last segment, or the skill's name for a `SKILL.md`.
    name: String,
    description: Option<String>,
}

/// Every skill a server serves, with the files and directories they make.
///
/// Build it in code ([`SkillSet::with`]) or from a directory tree ([`SkillSet::from_dir`]), and
/// give it to [`ServerBuilder::skills`](crate::ServerBuilder::skills).
#[derive(Debug, Default)]
pub struct SkillSet {
    /// Every entry, by `SKILL.md` URI (listed in URI order).
    skills: BTreeMap<String, Skill>,
    files: BTreeMap<String, File>,
    /// Directory URI → its direct children (URIs).
    dirs: BTreeMap<String, BTreeSet<String>>,
    directory_read: bool,
    cache: CacheHint,
}

impl SkillSet {
    /// An empty set that will answer `resources/directory/read` (`directoryRead: true`).
    pub fn new() -> SkillSet {
        SkillSet {
            directory_read: true,
            ..SkillSet::default()
        }
    }

    /// Whether to declare and answer `resources/directory/read` (default: yes).
    pub fn directory_read(mut self, on: bool) -> SkillSet {
        self.directory_read = on;
        self
    }

    /// The caching hint of `skills/list` and `skills/get` results (default: immediately stale,
    /// private).
    pub fn cache_hint(mut self, hint: CacheHint) -> SkillSet {
        self.cache = hint;
        self
    }

    /// Adds a skill.
    ///
    /// # Errors
    ///
    /// See [`SkillSet::add`].
    pub fn with(mut self, skill: ServedSkill) -> Result<SkillSet, SkillError> {
        self.add(skill)?;
        Ok(self)
    }

    /// Adds a skill at `skill://<prefix>/<name>/`.
    ///
    /// # Errors
    ///
    /// [`SkillError::Duplicate`] when a skill is already served at that URI or one of its files
    /// is already served with other content (a nested skill's files may be served by its
    /// enclosing skill too, with the same content); [`SkillError::TooLarge`] when it has more
    /// than 512 files or more than 16 MiB.
    pub fn add(&mut self, skill: ServedSkill) -> Result<(), SkillError> {
        let mut path: Vec<String> = skill.prefix.iter().map(|s| encode_segment(s)).collect();
        path.push(skill.name().to_owned());
        let root = format!("{}{}", wire::SCHEME, path.join("/"));
        let uri = format!("{root}/{SKILL_MD}");
        if self.skills.contains_key(&uri) {
            return Err(SkillError::Duplicate(uri));
        }
        let count = skill.files.len() + 1;
        if count > MAX_RESOURCES_PER_SKILL {
            return Err(SkillError::TooLarge {
                what: format!("{uri}: {count} files"),
                limit: MAX_RESOURCES_PER_SKILL as u64,
            });
        }
        let total: u64 = std::iter::once(&skill.skill_md)
            .chain(skill.files.values())
            .map(|b| b.len() as u64)
            .sum();
        if total > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge {
                what: format!("{uri}: {total} bytes"),
                limit: MAX_SKILL_BYTES,
            });
        }
        let mut served: Vec<(String, File)> = Vec::with_capacity(count);
        served.push((
            uri.clone(),
            File {
                bytes: Arc::clone(&skill.skill_md),
                mime_type: "text/markdown".to_owned(),
                name: skill.name().to_owned(),
                description: Some(skill.frontmatter.description().to_owned()),
            },
        ));
        for (rel, bytes) in &skill.files {
            let encoded: Vec<String> = rel.split('/').map(encode_segment).collect();
            let file_uri = format!("{root}/{}", encoded.join("/"));
            let name = rel.rsplit('/').next().unwrap_or(rel).to_owned();
            let nested_skill_md = name == SKILL_MD;
            served.push((
                file_uri,
                File {
                    bytes: Arc::clone(bytes),
                    mime_type: mime_type(&name, bytes),
                    name,
                    description: None,
                }
                .nested(nested_skill_md),
            ));
        }
        // A URI already served must be served with the same bytes (a nested skill's files).
        for (file_uri, file) in &served {
            if let Some(existing) = self.files.get(file_uri) {
                if existing.bytes != file.bytes {
                    return Err(SkillError::Duplicate(file_uri.clone()));
                }
            }
        }
        let resources = served
            .iter()
            .map(|(file_uri, file)| SkillResource {
                uri: file_uri.clone(),
                digest: digest(&file.bytes),
                size: file.bytes.len() as u64,
            })
            .collect();
        for (file_uri, file) in served {
            self.link(&file_uri);
            // An enclosing skill lists a nested skill's `SKILL.md` as a plain file; the nested
            // skill's own entry names and describes it.
            match self.files.get(&file_uri) {
                Some(existing) if existing.description.is_some() => {}
                _ => {
                    self.files.insert(file_uri, file);
                }
            }
        }
        self.skills.insert(
            uri.clone(),
            Skill {
                uri,
                frontmatter: skill.frontmatter.into_fields(),
                resources: SkillResources::Files(resources),
            },
        );
        Ok(())
    }

    /// Records `uri` as a child of each directory above it, up to the scheme's root.
    fn link(&mut self, uri: &str) {
        let mut child = uri.to_owned();
        while let Some((parent, _)) = child.rsplit_once('/') {
            if parent.ends_with(':') || parent.ends_with("//") {
                break;
            }
            let parent = parent.to_owned();
            let fresh = self
                .dirs
                .entry(parent.clone())
                .or_default()
                .insert(child.clone());
            if !fresh {
                break;
            }
            child = parent;
        }
    }

    /// Reads every skill under `root`: each directory with a `SKILL.md` is a skill whose files
    /// are everything below it (a nested skill's files included), served under the directory's
    /// path relative to `root` (a `root` that is itself a skill is served under its own
    /// name). The frontmatter `name` must equal the directory's name. Names starting with `.`
    /// are skipped.
    ///
    /// Symbolic links to files inside `root` are followed; links that leave `root`, and links
    /// to directories, are refused. The walk is bounded ([`MAX_DIR_DEPTH`], [`MAX_DIR_FILES`],
    /// [`MAX_DIR_BYTES`]).
    ///
    /// # Errors
    ///
    /// The first file or skill that cannot be read or served.
    pub fn from_dir(root: impl AsRef<Path>) -> Result<SkillSet, SkillError> {
        let root = root.as_ref();
        let canonical = root.canonicalize().map_err(io_error(root))?;
        let mut walk = Walk {
            root: canonical.clone(),
            files: Vec::new(),
            bytes: 0,
        };
        walk.dir(&canonical, &[], 0)?;
        let mut set = SkillSet::new();
        let skill_dirs: Vec<Vec<String>> = walk
            .files
            .iter()
            .filter(|(rel, _)| rel.last().is_some_and(|n| n == SKILL_MD))
            .map(|(rel, _)| rel[..rel.len() - 1].to_vec())
            .collect();
        for dir in skill_dirs {
            let skill_md = walk
                .files
                .iter()
                .find(|(rel, _)| rel.len() == dir.len() + 1 && rel.starts_with(&dir))
                .map(|(_, bytes)| bytes.clone())
                .unwrap_or_default();
            let shown = if dir.is_empty() {
                SKILL_MD.to_owned()
            } else {
                format!("{}/{SKILL_MD}", dir.join("/"))
            };
            let text = String::from_utf8(skill_md.to_vec()).map_err(|_| SkillError::Path {
                path: shown.clone(),
                reason: "not UTF-8 text",
            })?;
            let mut skill = ServedSkill::new(text).map_err(|e| match e {
                SkillError::Frontmatter { source, .. } => SkillError::Frontmatter {
                    path: shown.clone(),
                    source,
                },
                other => other,
            })?;
            let expected = match dir.last() {
                Some(last) => last.clone(),
                None => canonical
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_owned(),
            };
            if skill.name() != expected {
                return Err(SkillError::Name {
                    name: skill.name().to_owned(),
                    reason: "the frontmatter name must equal the skill's directory name",
                });
            }
            if dir.len() > 1 {
                skill = skill.prefix(&dir[..dir.len() - 1].join("/"))?;
            }
            for (rel, bytes) in &walk.files {
                if rel.len() > dir.len() && rel.starts_with(&dir) {
                    let inner = rel[dir.len()..].join("/");
                    if inner != SKILL_MD {
                        skill.files.insert(inner, Arc::clone(bytes));
                    }
                }
            }
            set.add(skill)?;
        }
        Ok(set)
    }

    /// The entries, in URI order.
    pub fn skills(&self) -> impl Iterator<Item = &Skill> {
        self.skills.values()
    }

    /// Whether the set has no skill.
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The settings declared under `capabilities.extensions`.
    pub(crate) fn capability(&self) -> (String, JsonObject) {
        let mut settings = JsonObject::new();
        if self.directory_read {
            settings.insert("directoryRead".into(), Value::Bool(true));
        }
        (EXTENSION.to_owned(), settings)
    }

    /// The resources to register: definition and contents of every file.
    pub(crate) fn resources(&self) -> Vec<(crate::Resource, ResourceContentsKind)> {
        self.files
            .iter()
            .map(|(uri, file)| {
                let mut resource = crate::Resource::new(uri.clone(), file.name.clone())
                    .mime_type(file.mime_type.clone())
                    .size(i64::try_from(file.bytes.len()).unwrap_or(i64::MAX));
                if let Some(d) = &file.description {
                    resource = resource.description(d.clone());
                }
                let contents = match std::str::from_utf8(&file.bytes) {
                    Ok(text) => ResourceContentsKind::text(uri.clone(), text),
                    Err(_) => ResourceContentsKind::blob(uri.clone(), &file.bytes),
                }
                .with_mime_type(file.mime_type.clone());
                (resource, contents)
            })
            .collect()
    }

    /// Answers the extension's methods; `None` for any other method.
    pub(crate) fn handle(
        &self,
        method: &str,
        params: Option<&RawValue>,
        page_size: usize,
    ) -> Option<Result<RawJson, ErrorObject>> {
        let answer = match method {
            METHOD_LIST => self.list(params, page_size),
            METHOD_GET => self.get(params),
            METHOD_DIRECTORY_READ if self.directory_read => self.read_directory(params, page_size),
            _ => return None,
        };
        Some(answer)
    }

    fn list(&self, params: Option<&RawValue>, page_size: usize) -> Result<RawJson, ErrorObject> {
        let p: ListSkillsRequestParams = decode(params)?;
        let (start, next) = page(p.cursor.as_deref(), self.skills.len(), page_size)?;
        let (ttl_ms, cache_scope) = wire::cache_members(self.cache);
        encode(&ListSkillsResult {
            skills: self
                .skills
                .values()
                .skip(start)
                .take(page_size)
                .cloned()
                .collect(),
            next_cursor: next,
            ttl_ms,
            cache_scope,
        })
    }

    fn get(&self, params: Option<&RawValue>) -> Result<RawJson, ErrorObject> {
        let p: GetSkillRequestParams = decode(params)?;
        let Some(skill) = self.skills.get(&p.uri) else {
            return Err(ErrorObject::new(
                mcp_jsonrpc::codes::INVALID_PARAMS,
                format!("No skill is served at {}", p.uri),
            ));
        };
        let (ttl_ms, cache_scope) = wire::cache_members(self.cache);
        encode(&GetSkillResult {
            skill: skill.clone(),
            ttl_ms,
            cache_scope,
        })
    }

    fn read_directory(
        &self,
        params: Option<&RawValue>,
        page_size: usize,
    ) -> Result<RawJson, ErrorObject> {
        let p: ReadResourceDirectoryRequestParams = decode(params)?;
        let Some(children) = self.dirs.get(&p.uri) else {
            let message = if self.files.contains_key(&p.uri) {
                format!("{} is not a directory resource", p.uri)
            } else {
                format!("No directory resource at {}", p.uri)
            };
            return Err(ErrorObject::new(
                mcp_jsonrpc::codes::INVALID_PARAMS,
                message,
            ));
        };
        let (start, next) = page(p.cursor.as_deref(), children.len(), page_size)?;
        let resources = children
            .iter()
            .skip(start)
            .take(page_size)
            .map(|child| self.child(child))
            .collect();
        encode(&ReadResourceDirectoryResult {
            resources,
            next_cursor: next,
        })
    }

    fn child(&self, uri: &str) -> mcp_types::Resource {
        let last = uri.rsplit('/').next().unwrap_or(uri);
        let resource = match self.files.get(uri) {
            Some(file) => crate::Resource::new(uri, last)
                .mime_type(file.mime_type.clone())
                .size(i64::try_from(file.bytes.len()).unwrap_or(i64::MAX)),
            None => crate::Resource::new(uri, last).mime_type(DIRECTORY_MIME_TYPE),
        };
        resource.definition().clone()
    }
}

impl File {
    /// A nested skill's `SKILL.md` is markdown too.
    fn nested(mut self, skill_md: bool) -> File {
        if skill_md {
            self.mime_type = "text/markdown".to_owned();
        }
        self
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    wire::format_digest(&hmac_sha256::Hash::hash(bytes))
}

fn decode<T: serde::de::DeserializeOwned>(params: Option<&RawValue>) -> Result<T, ErrorObject> {
    let text = params.map_or("{}", RawValue::get);
    serde_json::from_str(text).map_err(ErrorObject::invalid_params)
}

fn encode<T: serde::Serialize>(value: &T) -> Result<RawJson, ErrorObject> {
    RawJson::serialize(value).map_err(ErrorObject::internal_error)
}

/// The first index of the page a cursor names, and the cursor of the next page.
fn page(
    cursor: Option<&str>,
    len: usize,
    page_size: usize,
) -> Result<(usize, Option<String>), ErrorObject> {
    let start = match cursor {
        None => 0,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0 && n < len)
            .ok_or_else(|| ErrorObject::invalid_params(format!("unknown cursor {c:?}")))?,
    };
    let end = start.saturating_add(page_size);
    Ok((start, (end < len).then(|| end.to_string())))
}

/// The MIME type of a file, from its extension (text or bytes when unknown).
fn mime_type(name: &str, bytes: &[u8]) -> String {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let known = match ext.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" => "text/plain",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "ts" => "text/x-typescript",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "toml" => "application/toml",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "csv" => "text/csv",
        "xml" => "application/xml",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    };
    known.to_owned()
}

/// The bounded walk of [`SkillSet::from_dir`]: every file, by its path segments under the root.
struct Walk {
    root: PathBuf,
    files: Vec<(Vec<String>, Arc<[u8]>)>,
    bytes: u64,
}

impl Walk {
    fn dir(&mut self, dir: &Path, rel: &[String], depth: usize) -> Result<(), SkillError> {
        if depth > MAX_DIR_DEPTH {
            return Err(SkillError::TooLarge {
                what: format!("{}: directory depth", dir.display()),
                limit: MAX_DIR_DEPTH as u64,
            });
        }
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .map_err(io_error(dir))?
            .collect::<Result<_, _>>()
            .map_err(io_error(dir))?;
        entries.sort_by_key(std::fs::DirEntry::file_name);
        for entry in entries {
            let path = entry.path();
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                return Err(SkillError::Path {
                    path: path.display().to_string(),
                    reason: "a file name that is not UTF-8",
                });
            };
            if name.starts_with('.') {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).map_err(io_error(&path))?;
            let mut child = rel.to_vec();
            child.push(name);
            let target = if meta.file_type().is_symlink() {
                let target = path.canonicalize().map_err(io_error(&path))?;
                if !target.starts_with(&self.root) {
                    return Err(SkillError::Link {
                        path,
                        reason: "a symbolic link that leaves the skills directory",
                    });
                }
                if target.is_dir() {
                    return Err(SkillError::Link {
                        path,
                        reason: "a symbolic link to a directory",
                    });
                }
                target
            } else if meta.is_dir() {
                self.dir(&path, &child, depth + 1)?;
                continue;
            } else if meta.is_file() {
                path.clone()
            } else {
                continue;
            };
            self.file(&target, child)?;
        }
        Ok(())
    }

    fn file(&mut self, path: &Path, rel: Vec<String>) -> Result<(), SkillError> {
        if self.files.len() >= MAX_DIR_FILES {
            return Err(SkillError::TooLarge {
                what: format!("{}: files in the skills directory", self.root.display()),
                limit: MAX_DIR_FILES as u64,
            });
        }
        let len = std::fs::metadata(path).map_err(io_error(path))?.len();
        if len > MAX_SKILL_BYTES || self.bytes + len > MAX_DIR_BYTES {
            return Err(SkillError::TooLarge {
                what: format!("{}: bytes", path.display()),
                limit: MAX_SKILL_BYTES.min(MAX_DIR_BYTES),
            });
        }
        // Read no more than announced, whatever the file does meanwhile.
        let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
        let file = std::fs::File::open(path).map_err(io_error(path))?;
        std::io::Read::read_to_end(&mut std::io::Read::take(file, len), &mut bytes)
            .map_err(io_error(path))?;
        self.bytes += bytes.len() as u64;
        self.files.push((rel, Arc::from(bytes)));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    /// The map from SKILL.md URI to entry.
    fn by_uri(set: &SkillSet) -> HashMap<&str, &Skill> {
        set.skills.iter().map(|(k, v)| (k.as_str(), v)).collect()
    }

    const MD: &str =
        "---\nname: pdf-processing\ndescription: Extract PDFs\nlicense: MIT\n---\nBody\n";

    fn call(set: &SkillSet, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let raw = mcp_jsonrpc::to_raw(&params).unwrap();
        let out = set.handle(method, Some(&raw), 2).expect("routed")?;
        Ok(serde_json::from_str(out.get()).unwrap())
    }

    #[test]
    fn entries_carry_digests_sizes_and_frontmatter() {
        let skill = ServedSkill::new(MD)
            .unwrap()
            .file("templates/invoice.md", "Invoice\n")
            .unwrap()
            .file("templates/regional/eu.md", "EU\n")
            .unwrap();
        let set = SkillSet::new().with(skill).unwrap();
        let entry = by_uri(&set)["skill://pdf-processing/SKILL.md"];
        entry.validate().unwrap();
        assert_eq!(entry.frontmatter["license"], "MIT");
        let SkillResources::Files(files) = &entry.resources else {
            panic!("a manifest")
        };
        assert_eq!(files.len(), 3);
        let md = entry.file("skill://pdf-processing/SKILL.md").unwrap();
        assert_eq!(md.size, MD.len() as u64);
        assert_eq!(md.digest, digest(MD.as_bytes()));
        assert_eq!(
            digest(b""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn methods_answer_as_the_extension_says() {
        let a = ServedSkill::new("---\nname: a\ndescription: A\n---\n").unwrap();
        let b = ServedSkill::new("---\nname: b\ndescription: B\n---\n")
            .unwrap()
            .prefix("team/x")
            .unwrap()
            .file("docs/one.md", "1")
            .unwrap();
        let c = ServedSkill::new("---\nname: c\ndescription: C\n---\n").unwrap();
        let set = SkillSet::new()
            .with(a)
            .unwrap()
            .with(b)
            .unwrap()
            .with(c)
            .unwrap();
        let page = call(&set, METHOD_LIST, json!({})).unwrap();
        assert_eq!(page["skills"].as_array().unwrap().len(), 2);
        assert_eq!(page["nextCursor"], "2");
        assert_eq!(page["ttlMs"], 0);
        assert_eq!(page["cacheScope"], "private");
        let rest = call(&set, METHOD_LIST, json!({"cursor": "2"})).unwrap();
        assert_eq!(rest["skills"].as_array().unwrap().len(), 1);
        assert!(rest.get("nextCursor").is_none());
        assert!(call(&set, METHOD_LIST, json!({"cursor": "x"})).is_err());

        let got = call(
            &set,
            METHOD_GET,
            json!({"uri": "skill://team/x/b/SKILL.md"}),
        )
        .unwrap();
        assert_eq!(got["skill"]["frontmatter"]["name"], "b");
        let missing = call(&set, METHOD_GET, json!({"uri": "skill://nope/SKILL.md"})).unwrap_err();
        assert_eq!(missing.code, -32602);

        let root = call(
            &set,
            METHOD_DIRECTORY_READ,
            json!({"uri": "skill://team/x/b"}),
        )
        .unwrap();
        let kids: Vec<(&str, &str)> = root["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["uri"].as_str().unwrap(), r["mimeType"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kids,
            [
                ("skill://team/x/b/SKILL.md", "text/markdown"),
                ("skill://team/x/b/docs", DIRECTORY_MIME_TYPE)
            ]
        );
        let top = call(&set, METHOD_DIRECTORY_READ, json!({"uri": "skill://team"})).unwrap();
        assert_eq!(top["resources"][0]["uri"], "skill://team/x");
        for uri in [
            "skill://team/x/b/SKILL.md",
            "skill://team/x/b/../b",
            "skill://zzz",
        ] {
            let e = call(&set, METHOD_DIRECTORY_READ, json!({"uri": uri})).unwrap_err();
            assert_eq!(e.code, -32602, "{uri}");
        }
        let off = SkillSet::new().directory_read(false);
        assert!(
            off.handle(METHOD_DIRECTORY_READ, None, 10).is_none(),
            "not found when not declared"
        );
    }

    #[test]
    fn traversal_is_refused() {
        let skill = || ServedSkill::new(MD).unwrap();
        for path in [
            "../x.md",
            "a/../../x",
            "/etc/passwd",
            "a//b",
            "./a",
            "a\\b",
            "",
            "SKILL.md",
        ] {
            assert!(skill().file(path, "x").is_err(), "{path:?}");
        }
        assert!(skill().prefix("..").is_err());
        assert!(skill().prefix("a/../b").is_err());
        assert!(skill().file("a/b c.md", "x").is_ok());
        assert_eq!(encode_segment("b c.md"), "b%20c.md");
        assert!(ServedSkill::new("---\nname: Bad_Name\ndescription: d\n---\n").is_err());
    }

    #[test]
    fn limits_are_kept() {
        let mut skill = ServedSkill::new(MD).unwrap();
        for i in 0..MAX_RESOURCES_PER_SKILL {
            skill = skill.file(&format!("f{i}.txt"), "x").unwrap();
        }
        assert!(matches!(
            SkillSet::new().with(skill),
            Err(SkillError::TooLarge { .. })
        ));
        let big = ServedSkill::new(MD)
            .unwrap()
            .file("big.bin", vec![0u8; MAX_SKILL_BYTES as usize])
            .unwrap();
        assert!(matches!(
            SkillSet::new().with(big),
            Err(SkillError::TooLarge { .. })
        ));
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcp-skills-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn directories_are_read_with_nested_skills() {
        let root = temp_dir("tree");
        let skill = root.join("acme/refunds");
        std::fs::create_dir_all(skill.join("examples/inner")).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: refunds\ndescription: Refunds\n---\n",
        )
        .unwrap();
        std::fs::write(skill.join("examples/email.md"), "Dear customer\n").unwrap();
        std::fs::write(skill.join(".hidden"), "skipped").unwrap();
        std::fs::write(
            skill.join("examples/inner/SKILL.md"),
            "---\nname: inner\ndescription: Inner\n---\n",
        )
        .unwrap();
        let set = SkillSet::from_dir(&root).unwrap();
        let skills = by_uri(&set);
        let outer = skills["skill://acme/refunds/SKILL.md"];
        outer.validate().unwrap();
        let SkillResources::Files(files) = &outer.resources else {
            panic!()
        };
        let uris: Vec<&str> = files.iter().map(|f| f.uri.as_str()).collect();
        assert_eq!(
            uris,
            [
                "skill://acme/refunds/SKILL.md",
                "skill://acme/refunds/examples/email.md",
                "skill://acme/refunds/examples/inner/SKILL.md"
            ]
        );
        let inner = skills["skill://acme/refunds/examples/inner/SKILL.md"];
        inner.validate().unwrap();
        let nested = set
            .resources()
            .into_iter()
            .find(|(r, _)| r.definition().uri == inner.uri)
            .unwrap();
        assert_eq!(
            nested.0.definition().name,
            "inner",
            "its own entry names it"
        );

        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: other\ndescription: Refunds\n---\n",
        )
        .unwrap();
        assert!(matches!(
            SkillSet::from_dir(&root),
            Err(SkillError::Name { .. })
        ));
        let _ = std::fs::remove_dir_all(&root);
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_the_root_are_refused() {
        let root = temp_dir("links");
        let outside = temp_dir("outside");
        std::fs::write(outside.join("secret"), "s3cret").unwrap();
        let skill = root.join("s");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: s\ndescription: S\n---\n",
        )
        .unwrap();
        std::fs::write(skill.join("real.md"), "real").unwrap();
        std::os::unix::fs::symlink(skill.join("real.md"), skill.join("alias.md")).unwrap();
        assert!(SkillSet::from_dir(&root).is_ok(), "a link inside the root");
        std::os::unix::fs::symlink(outside.join("secret"), skill.join("leak.md")).unwrap();
        assert!(matches!(
            SkillSet::from_dir(&root),
            Err(SkillError::Link { .. })
        ));
        std::fs::remove_file(skill.join("leak.md")).unwrap();
        std::os::unix::fs::symlink(&skill, skill.join("loop")).unwrap();
        assert!(matches!(
            SkillSet::from_dir(&root),
            Err(SkillError::Link { .. })
        ));
        let _ = std::fs::remove_dir_all(&root);
        let _ = std::fs::remove_dir_all(&outside);
    }
}
