//! Model Context Protocol types, generated from the official JSON Schema of every published
//! revision (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28).
//!
//! - The crate root is the **unified model**: the union of all revisions, where each type and
//!   field is documented with the revisions it exists in. The SDK works in this model; a value
//!   is [`Project`]ed onto a peer's revision before it is sent.
//! - [`v2024_11_05`] .. [`v2026_07_28`] (one cargo feature each) hold the types of one revision,
//!   generated 1:1 from its schema: the oracle for what that revision allows on the wire.
//! - [`methods`]: a marker type per method ([`methods::Request`] / [`methods::Notification`])
//!   and a runtime table ([`methods::lookup`]) of who sends it and in which revisions.
//! - [`x_mcp_header`]: the rules for `x-mcp-header` tool parameters (`Mcp-Param-*` headers).
//! - `skills` (feature `skills`): the Skills extension (SEP-2640): entries, frontmatter, digests.
//! - [`ProtocolVersion`], [`Era`], [`Feature`] (what came with which revision), [`error_codes`].
//!
//! ```
//! use mcp_types::{CallToolResult, ContentBlock, Project, ProtocolVersion};
//!
//! let result: CallToolResult = serde_json::from_str(
//!     r#"{"content": [{"type": "text", "text": "17°C"}], "isError": false}"#,
//! )?;
//! assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "17°C"));
//!
//! let version: ProtocolVersion = "2025-06-18".parse()?;
//! assert!(version < ProtocolVersion::LATEST);
//! assert!("2099-01-01".parse::<ProtocolVersion>().is_err());
//!
//! // Lower a result to what a 2024-11-05 peer understands.
//! let mut lowered = CallToolResult::text("done");
//! lowered.project(ProtocolVersion::V2024_11_05);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod ext;
mod feature;
mod generated;
mod project;
mod support;
mod version;

pub mod error_codes;
pub mod methods;
#[cfg(feature = "skills")]
pub mod skills;
pub mod wire;
pub mod x_mcp_header;

pub use feature::Feature;
pub use generated::model::*;
pub use generated::tag;
pub use project::Project;
pub use version::{Era, ProtocolVersion, UnsupportedProtocolVersion};

#[cfg(feature = "v2024_11_05")]
pub use generated::v2024_11_05;
#[cfg(feature = "v2025_03_26")]
pub use generated::v2025_03_26;
#[cfg(feature = "v2025_06_18")]
pub use generated::v2025_06_18;
#[cfg(feature = "v2025_11_25")]
pub use generated::v2025_11_25;
#[cfg(feature = "v2026_07_28")]
pub use generated::v2026_07_28;

/// An arbitrary JSON object (tool arguments, input schemas, capability settings).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// The contents of a `_meta` field: an open JSON object whose keys follow the `_meta` naming
/// rules of the specification.
pub type Meta = serde_json::Map<String, serde_json::Value>;

#[doc(hidden)]
pub mod __private {
    pub use crate::support::{ObjectShape, Shape};
}
