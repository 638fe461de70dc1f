//! The client side of the Skills extension (`io.modelcontextprotocol/skills`, SEP-2640).
//!
//! [`ClientSession::skills`] gives a [`Skills`] handle once the server has declared the
//! extension. Listing returns each skill's entry (frontmatter and a manifest of its files with
//! digests and sizes) and fetches nothing else: files are read only when asked for, and every
//! file read is checked against the entry it belongs to. A file the manifest does not list,
//! whose size or SHA-256 digest differs from the manifest's, or a `SKILL.md` whose frontmatter
//! differs from the entry's, is refused with a [`SkillError`], and its content is not handed
//! out.
//!
//! ```no_run
//! # async fn demo(session: mcp_client::ClientSession) -> Result<(), mcp_client::skills::SkillError> {
//! let skills = session.skills()?;
//! for entry in skills.list_all().await? {
//!     println!("{}: {}", entry.name(), entry.description());
//! }
//! let entry = skills.get("skill://pdf-processing/SKILL.md").await?;
//! let loaded = skills.load(&entry).await?; // SKILL.md, verified
//! println!("{}", loaded.text().unwrap_or_default());
//! let forms = skills
//!     .read_file(&entry, "skill://pdf-processing/references/FORMS.md")
//!     .await?;
//! # let _ = forms;
//! # Ok(())
//! # }
//! ```

use base64::Engine as _;
use mcp_types::skills::{
    self as wire, EXTENSION, Frontmatter, FrontmatterError, GetSkillRequestParams, GetSkillResult,
    ListSkillsRequestParams, ListSkillsResult, MAX_SKILL_BYTES, METHOD_DIRECTORY_READ, METHOD_GET,
    METHOD_LIST, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult, Skill,
    SkillResources, SkillsCapability,
};
use mcp_types::{ReadResourceResult, ResourceContentsKind};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::CallError;
use crate::session::ClientSession;

/// Most pages [`Skills::list_all`] follows.
const MAX_PAGES: usize = 1000;

/// Why a skill request failed or a skill's content was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SkillError {
    /// The server did not declare the extension, so no skill method may be called (on
    /// revisions before 2026-07-28 extensions are not negotiated at all).
    #[error("the server does not declare the skills extension ({EXTENSION})")]
    NotDeclared,
    /// `resources/directory/read` on a server that did not declare `directoryRead`.
    #[error("the server does not declare directoryRead")]
    DirectoryReadNotDeclared,
    /// The request failed.
    #[error("{method}: {source}")]
    Call {
        /// The method.
        method: &'static str,
        /// Why.
        #[source]
        source: CallError,
    },
    /// The server's entry breaks the extension's rules (it must not be loaded).
    #[error("invalid skill entry: {0}")]
    InvalidEntry(String),
    /// The file is not in the entry's manifest: reading it would step outside what the entry
    /// (and any approval bound to it) covers.
    #[error("{uri} is not listed in the manifest of {skill}")]
    NotListed {
        /// The file.
        uri: String,
        /// The skill's `SKILL.md` URI.
        skill: String,
    },
    /// The content's length is not the manifest's `size`.
    #[error("{uri}: {actual} bytes, but the manifest says {expected}")]
    SizeMismatch {
        /// The file.
        uri: String,
        /// The manifest's size.
        expected: u64,
        /// What was read.
        actual: u64,
    },
    /// The content's SHA-256 digest is not the manifest's `digest`.
    #[error("{uri}: digest {actual}, but the manifest says {expected}")]
    DigestMismatch {
        /// The file.
        uri: String,
        /// The manifest's digest.
        expected: String,
        /// The digest of what was read.
        actual: String,
    },
    /// The `SKILL.md` read has no usable frontmatter.
    #[error("{uri}: {source}")]
    Frontmatter {
        /// The `SKILL.md`.
        uri: String,
        /// What is wrong with it.
        #[source]
        source: FrontmatterError,
    },
    /// The `SKILL.md` read has frontmatter that differs from the entry's.
    #[error("{uri}: frontmatter field `{field}` differs from the entry's")]
    FrontmatterMismatch {
        /// The `SKILL.md`.
        uri: String,
        /// The first field that differs.
        field: String,
    },
    /// The read returned no contents for the URI, or contents that do not decode.
    #[error("{uri}: {reason}")]
    Content {
        /// The file.
        uri: String,
        /// What is wrong.
        reason: String,
    },
    /// A dynamic skill's file is larger than the 16 MiB a skill may have.
    #[error("{uri}: over the {MAX_SKILL_BYTES} bytes a skill may have")]
    TooLarge {
        /// The file.
        uri: String,
    },
}

impl SkillError {
    /// Whether this is a verification failure (the content is not what the entry describes):
    /// refresh the entry with [`Skills::get`] before trying again.
    pub fn is_verification_failure(&self) -> bool {
        matches!(
            self,
            SkillError::NotListed { .. }
                | SkillError::SizeMismatch { .. }
                | SkillError::DigestMismatch { .. }
                | SkillError::FrontmatterMismatch { .. }
                | SkillError::Frontmatter { .. }
        )
    }
}

/// A file of a skill, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFile {
    /// The file's URI.
    pub uri: String,
    /// The MIME type the server gave.
    pub mime_type: Option<String>,
    /// The raw bytes (text contents as UTF-8).
    pub bytes: Vec<u8>,
    /// Whether digest and size were checked (false only for a `"dynamic"` skill).
    pub verified: bool,
}

impl SkillFile {
    /// The content as text, if it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// The skill methods of a session whose server declared the extension.
#[derive(Debug, Clone, Copy)]
pub struct Skills<'a> {
    session: &'a ClientSession,
    capability: SkillsCapability,
}

impl ClientSession {
    /// The skill methods, if the server declared the Skills extension.
    ///
    /// # Errors
    ///
    /// [`SkillError::NotDeclared`] when it did not (nothing may be called then).
    pub fn skills(&self) -> Result<Skills<'_>, SkillError> {
        let declared = self
            .server_capabilities()
            .extensions
            .as_ref()
            .and_then(|e| e.get(EXTENSION))
            .ok_or(SkillError::NotDeclared)?;
        let capability =
            serde_json::from_value(serde_json::Value::Object(declared.clone())).unwrap_or_default();
        Ok(Skills {
            session: self,
            capability,
        })
    }
}

impl Skills<'_> {
    /// The extension's settings as the server declared them.
    pub fn capability(&self) -> SkillsCapability {
        self.capability
    }

    async fn call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &'static str,
        params: &P,
    ) -> Result<R, SkillError> {
        let failed = |source| SkillError::Call { method, source };
        let params = serde_json::to_value(params).map_err(|e| failed(CallError::Decode(e)))?;
        let raw = self
            .session
            .send_raw(method, Some(&params))
            .await
            .map_err(failed)?;
        serde_json::from_str(raw.get()).map_err(|e| failed(CallError::Decode(e)))
    }

    /// One page of `skills/list`. Entries that break the extension's rules are kept; check
    /// them with [`Skill::validate`] (the read methods here do).
    ///
    /// # Errors
    ///
    /// [`SkillError::Call`].
    pub async fn list(&self, cursor: Option<String>) -> Result<ListSkillsResult, SkillError> {
        self.call(METHOD_LIST, &ListSkillsRequestParams { cursor })
            .await
    }

    /// Every page of `skills/list`. Only the entries are fetched, no file.
    ///
    /// # Errors
    ///
    /// [`SkillError::Call`], or [`CallError::Pagination`] inside it when the server repeats a
    /// cursor or pages without end.
    pub async fn list_all(&self) -> Result<Vec<Skill>, SkillError> {
        let mut all = Vec::new();
        let mut cursor = None;
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_PAGES {
            let page = self.list(cursor).await?;
            all.extend(page.skills);
            match page.next_cursor {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.clone()) {
                        break;
                    }
                    cursor = Some(next);
                }
                _ => return Ok(all),
            }
        }
        Err(SkillError::Call {
            method: METHOD_LIST,
            source: CallError::Pagination("skills/list repeated a cursor or did not end".into()),
        })
    }

    /// `skills/get`: the current entry of the skill whose `SKILL.md` is at `uri`.
    ///
    /// # Errors
    ///
    /// [`SkillError::Call`] (a server that does not serve the skill answers `-32602`), or
    /// [`SkillError::InvalidEntry`] when the entry is not for `uri`.
    pub async fn get(&self, uri: impl Into<String>) -> Result<Skill, SkillError> {
        let uri = uri.into();
        let result: GetSkillResult = self
            .call(METHOD_GET, &GetSkillRequestParams { uri: uri.clone() })
            .await?;
        if result.skill.uri != uri {
            return Err(SkillError::InvalidEntry(format!(
                "skills/get for {uri} answered with {}",
                result.skill.uri
            )));
        }
        Ok(result.skill)
    }

    /// `resources/directory/read`: the direct children of a directory resource.
    ///
    /// The result is the server's live view, not part of any entry: a child it lists that the
    /// entry's manifest does not is not a file of the skill as held.
    ///
    /// # Errors
    ///
    /// [`SkillError::DirectoryReadNotDeclared`] (nothing is sent), or [`SkillError::Call`].
    pub async fn read_directory(
        &self,
        uri: impl Into<String>,
        cursor: Option<String>,
    ) -> Result<ReadResourceDirectoryResult, SkillError> {
        if !self.capability.directory_read {
            return Err(SkillError::DirectoryReadNotDeclared);
        }
        self.call(
            METHOD_DIRECTORY_READ,
            &ReadResourceDirectoryRequestParams {
                uri: uri.into(),
                cursor,
            },
        )
        .await
    }

    /// Loads a skill: reads its `SKILL.md` and checks it against the entry (manifest size and
    /// digest, then the frontmatter field by field). Nothing else is read.
    ///
    /// # Errors
    ///
    /// See [`Skills::read_file`]; also [`SkillError::Frontmatter`] and
    /// [`SkillError::FrontmatterMismatch`].
    pub async fn load(&self, skill: &Skill) -> Result<SkillFile, SkillError> {
        self.read_file(skill, &skill.uri).await
    }

    /// Reads one file of a skill and checks it against the entry: it must be listed in the
    /// manifest, and its size and SHA-256 digest must be the manifest's (the size first,
    /// without hashing). A `SKILL.md` read this way is the skill's own, so its frontmatter is
    /// compared with the entry's too. Only a `"dynamic"` skill's files go unchecked (they are
    /// marked `verified: false` and bounded to 16 MiB).
    ///
    /// # Errors
    ///
    /// [`SkillError::InvalidEntry`] before anything is read when the entry breaks the
    /// extension's rules; [`SkillError::NotListed`] before anything is read when the file is
    /// not in the manifest; [`SkillError::SizeMismatch`], [`SkillError::DigestMismatch`],
    /// [`SkillError::FrontmatterMismatch`] when the content is not what the entry describes;
    /// [`SkillError::Call`] and [`SkillError::Content`] when it cannot be read.
    pub async fn read_file(&self, skill: &Skill, uri: &str) -> Result<SkillFile, SkillError> {
        skill.validate().map_err(SkillError::InvalidEntry)?;
        let listed = match &skill.resources {
            SkillResources::Files(_) => {
                Some(skill.file(uri).ok_or_else(|| SkillError::NotListed {
                    uri: uri.to_owned(),
                    skill: skill.uri.clone(),
                })?)
            }
            SkillResources::Dynamic => None,
        };
        let result: ReadResourceResult =
            self.session
                .read_resource(uri.to_owned())
                .await
                .map_err(|source| SkillError::Call {
                    method: "resources/read",
                    source,
                })?;
        let (bytes, mime_type) = contents_of(uri, result)?;
        if let Some(entry) = listed {
            verify(uri, &bytes, entry)?;
        } else if bytes.len() as u64 > MAX_SKILL_BYTES {
            return Err(SkillError::TooLarge {
                uri: uri.to_owned(),
            });
        }
        if uri == skill.uri {
            verify_frontmatter(skill, &bytes)?;
        }
        Ok(SkillFile {
            uri: uri.to_owned(),
            mime_type,
            bytes,
            verified: listed.is_some(),
        })
    }
}

/// The bytes and MIME type of the contents for `uri` in a `resources/read` result.
fn contents_of(
    uri: &str,
    result: ReadResourceResult,
) -> Result<(Vec<u8>, Option<String>), SkillError> {
    let content = |reason: &str| SkillError::Content {
        uri: uri.to_owned(),
        reason: reason.to_owned(),
    };
    let mut matching = result.contents.into_iter().filter(|c| match c {
        ResourceContentsKind::Text(t) => t.uri == uri,
        ResourceContentsKind::Blob(b) => b.uri == uri,
    });
    let first = matching
        .next()
        .ok_or_else(|| content("the read returned no contents for this URI"))?;
    if matching.next().is_some() {
        return Err(content(
            "the read returned more than one contents for this URI",
        ));
    }
    match first {
        ResourceContentsKind::Text(t) => Ok((t.text.into_bytes(), t.mime_type)),
        ResourceContentsKind::Blob(b) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b.blob.as_bytes())
                .map_err(|_| content("the blob is not base64"))?;
            Ok((bytes, b.mime_type))
        }
    }
}

/// Checks `bytes` against a manifest entry: the size first, then the digest.
pub fn verify(
    uri: &str,
    bytes: &[u8],
    entry: &mcp_types::skills::SkillResource,
) -> Result<(), SkillError> {
    let actual = bytes.len() as u64;
    if actual != entry.size {
        return Err(SkillError::SizeMismatch {
            uri: uri.to_owned(),
            expected: entry.size,
            actual,
        });
    }
    let digest = wire::format_digest(&hmac_sha256::Hash::hash(bytes));
    if digest != entry.digest {
        return Err(SkillError::DigestMismatch {
            uri: uri.to_owned(),
            expected: entry.digest.clone(),
            actual: digest,
        });
    }
    Ok(())
}

/// Checks that a `SKILL.md`'s frontmatter is the entry's, field by field.
pub fn verify_frontmatter(skill: &Skill, bytes: &[u8]) -> Result<(), SkillError> {
    let text = std::str::from_utf8(bytes).map_err(|_| SkillError::Content {
        uri: skill.uri.clone(),
        reason: "SKILL.md is not UTF-8 text".into(),
    })?;
    let frontmatter = Frontmatter::parse(text).map_err(|source| SkillError::Frontmatter {
        uri: skill.uri.clone(),
        source,
    })?;
    if let Some(field) = wire::frontmatter_difference(frontmatter.fields(), &skill.frontmatter) {
        return Err(SkillError::FrontmatterMismatch {
            uri: skill.uri.clone(),
            field,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const MD: &str = "---\nname: pdf\ndescription: PDFs\n---\nBody\n";

    fn entry(md: &str) -> Skill {
        let digest = wire::format_digest(&hmac_sha256::Hash::hash(md.as_bytes()));
        serde_json::from_value(json!({
            "uri": "skill://pdf/SKILL.md",
            "frontmatter": {"name": "pdf", "description": "PDFs"},
            "resources": [{"uri": "skill://pdf/SKILL.md", "digest": digest, "size": md.len()}]
        }))
        .unwrap()
    }

    #[test]
    fn digest_and_size_are_checked() {
        let skill = entry(MD);
        let listed = skill.file("skill://pdf/SKILL.md").unwrap();
        verify(&skill.uri, MD.as_bytes(), listed).unwrap();
        let longer = format!("{MD}extra");
        assert!(matches!(
            verify(&skill.uri, longer.as_bytes(), listed),
            Err(SkillError::SizeMismatch { expected, actual, .. }) if actual == expected + 5
        ));
        let tampered = MD.replace("Body", "Evil");
        let e = verify(&skill.uri, tampered.as_bytes(), listed).unwrap_err();
        assert!(matches!(e, SkillError::DigestMismatch { .. }));
        assert!(e.is_verification_failure());
    }

    #[test]
    fn frontmatter_is_compared() {
        let skill = entry(MD);
        verify_frontmatter(&skill, MD.as_bytes()).unwrap();
        let changed = MD.replace("description: PDFs", "description: Exfiltrate");
        assert!(matches!(
            verify_frontmatter(&skill, changed.as_bytes()),
            Err(SkillError::FrontmatterMismatch { field, .. }) if field == "description"
        ));
        let added = MD.replace("name: pdf\n", "name: pdf\nallowed-tools: Bash\n");
        assert!(matches!(
            verify_frontmatter(&skill, added.as_bytes()),
            Err(SkillError::FrontmatterMismatch { field, .. }) if field == "allowed-tools"
        ));
        assert!(matches!(
            verify_frontmatter(&skill, b"no frontmatter"),
            Err(SkillError::Frontmatter { .. })
        ));
    }

    #[test]
    fn contents_must_match_the_uri() {
        let result: ReadResourceResult = serde_json::from_value(json!({
            "contents": [{"uri": "skill://pdf/other.md", "text": "x"}]
        }))
        .unwrap();
        assert!(matches!(
            contents_of("skill://pdf/SKILL.md", result),
            Err(SkillError::Content { .. })
        ));
        let blob: ReadResourceResult = serde_json::from_value(json!({
            "contents": [{"uri": "skill://pdf/a.bin", "blob": "AQID", "mimeType": "application/octet-stream"}]
        }))
        .unwrap();
        let (bytes, mime) = contents_of("skill://pdf/a.bin", blob).unwrap();
        assert_eq!(bytes, [1, 2, 3]);
        assert_eq!(mime.as_deref(), Some("application/octet-stream"));
    }
}
