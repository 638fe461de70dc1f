//! Constructors and accessors for the protocol types a server builds most often.
//!
//! The types are `mcp-types`' (the same ones a client sees); these extension traits add what a
//! handler needs to build them in one line, such as an image block from raw bytes. Bring them
//! into scope with `use mcp_server::prelude::*;`.
//!
//! ```
//! use mcp_server::prelude::*;
//! use mcp_server::model::{ContentBlock, PromptMessage, ResourceContentsKind};
//!
//! let png = ContentBlock::image([0x89, b'P', b'N', b'G'], "image/png");
//! let doc = ContentBlock::embedded(
//!     ResourceContentsKind::text("test://doc", "# Title").with_mime_type("text/markdown"),
//! );
//! let msg = PromptMessage::user(ContentBlock::text("Summarise this."));
//! # let _ = (png, doc, msg);
//! ```

use base64::Engine as _;
use mcp_types::{
    AudioContent, BlobResourceContents, ContentBlock, CreateMessageRequestParams,
    CreateMessageResult, EmbeddedResource, ImageContent, PromptMessage, ResourceContentsKind,
    ResourceLink, Role, SamplingContent, SamplingMessage, SamplingMessageContentBlock, TextContent,
    TextResourceContents, tag,
};

fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Constructors and accessors for [`ContentBlock`].
pub trait ContentBlockExt: Sized {
    /// An image block from raw bytes (base64-encoded here).
    fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self;
    /// An audio block from raw bytes (2025-03-26 and later; older clients get a text note).
    fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self;
    /// A link to a resource (2025-06-18 and later; older clients get a text block with the URI).
    fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self;
    /// An embedded resource.
    fn embedded(resource: ResourceContentsKind) -> Self;
    /// The text of a text block.
    fn as_text(&self) -> Option<&str>;
}

impl ContentBlockExt for ContentBlock {
    fn image(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Image(ImageContent {
            meta: None,
            annotations: None,
            data: base64(bytes.as_ref()),
            mime_type: mime_type.into(),
            r#type: tag::Image,
        })
    }

    fn audio(bytes: impl AsRef<[u8]>, mime_type: impl Into<String>) -> Self {
        ContentBlock::Audio(AudioContent {
            meta: None,
            annotations: None,
            data: base64(bytes.as_ref()),
            mime_type: mime_type.into(),
            r#type: tag::Audio,
        })
    }

    fn resource_link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ContentBlock::ResourceLink(ResourceLink {
            meta: None,
            annotations: None,
            description: None,
            icons: None,
            mime_type: None,
            name: name.into(),
            size: None,
            title: None,
            r#type: tag::ResourceLink,
            uri: uri.into(),
        })
    }

    fn embedded(resource: ResourceContentsKind) -> Self {
        ContentBlock::Resource(EmbeddedResource {
            meta: None,
            annotations: None,
            resource,
            r#type: tag::Resource,
        })
    }

    fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text(t) => Some(&t.text),
            _ => None,
        }
    }
}

/// Constructors and accessors for [`ResourceContentsKind`] (the contents of a resource).
pub trait ResourceContentsExt: Sized {
    /// Text contents.
    fn text(uri: impl Into<String>, text: impl Into<String>) -> Self;
    /// Binary contents from raw bytes (base64-encoded here).
    fn blob(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self;
    /// Sets the MIME type.
    fn with_mime_type(self, mime_type: impl Into<String>) -> Self;
    /// The URI of the contents.
    fn uri(&self) -> &str;
}

impl ResourceContentsExt for ResourceContentsKind {
    fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContentsKind::Text(TextResourceContents {
            meta: None,
            mime_type: None,
            text: text.into(),
            uri: uri.into(),
        })
    }

    fn blob(uri: impl Into<String>, bytes: impl AsRef<[u8]>) -> Self {
        ResourceContentsKind::Blob(BlobResourceContents {
            meta: None,
            blob: base64(bytes.as_ref()),
            mime_type: None,
            uri: uri.into(),
        })
    }

    fn with_mime_type(mut self, mime: impl Into<String>) -> Self {
        match &mut self {
            ResourceContentsKind::Text(t) => t.mime_type = Some(mime.into()),
            ResourceContentsKind::Blob(b) => b.mime_type = Some(mime.into()),
        }
        self
    }

    fn uri(&self) -> &str {
        match self {
            ResourceContentsKind::Text(t) => &t.uri,
            ResourceContentsKind::Blob(b) => &b.uri,
        }
    }
}

/// Constructors for [`PromptMessage`].
pub trait PromptMessageExt: Sized {
    /// A message from the user.
    fn user(content: ContentBlock) -> Self;
    /// A message from the assistant.
    fn assistant(content: ContentBlock) -> Self;
}

impl PromptMessageExt for PromptMessage {
    fn user(content: ContentBlock) -> Self {
        PromptMessage {
            content,
            role: Role::User,
        }
    }

    fn assistant(content: ContentBlock) -> Self {
        PromptMessage {
            content,
            role: Role::Assistant,
        }
    }
}

/// Constructors for a sampling request ([`CreateMessageRequestParams`]).
pub trait CreateMessageRequestExt: Sized {
    /// A request with the conversation so far and the most tokens to generate; every other
    /// field unset.
    fn new(messages: Vec<SamplingMessage>, max_tokens: i64) -> Self;
    /// A request with one text message from the user.
    fn user_text(text: impl Into<String>, max_tokens: i64) -> Self;
}

impl CreateMessageRequestExt for CreateMessageRequestParams {
    fn new(messages: Vec<SamplingMessage>, max_tokens: i64) -> Self {
        CreateMessageRequestParams {
            meta: None,
            include_context: None,
            max_tokens,
            messages,
            metadata: None,
            model_preferences: None,
            stop_sequences: None,
            system_prompt: None,
            task: None,
            temperature: None,
            tool_choice: None,
            tools: None,
        }
    }

    fn user_text(text: impl Into<String>, max_tokens: i64) -> Self {
        let message = SamplingMessage {
            meta: None,
            content: SamplingContent::Text(TextContent::new(text)),
            role: Role::User,
        };
        Self::new(vec![message], max_tokens)
    }
}

/// Accessors for the client's answer to a sampling request ([`CreateMessageResult`]).
pub trait CreateMessageResultExt {
    /// The text of the generated content, if it is (or contains) text.
    fn text(&self) -> Option<String>;
}

impl CreateMessageResultExt for CreateMessageResult {
    fn text(&self) -> Option<String> {
        match &self.content {
            SamplingContent::Text(t) => Some(t.text.clone()),
            SamplingContent::Array(blocks) => {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter_map(|b| match b {
                        SamplingMessageContentBlock::Text(t) => Some(t.text.as_str()),
                        _ => None,
                    })
                    .collect();
                (!texts.is_empty()).then(|| texts.concat())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_serialize_as_the_schema_says() {
        let image = ContentBlock::image([1, 2, 3], "image/png");
        assert_eq!(
            serde_json::to_value(&image).unwrap(),
            serde_json::json!({"type": "image", "data": "AQID", "mimeType": "image/png"})
        );
        let link = ContentBlock::resource_link("file:///a", "a");
        assert_eq!(
            serde_json::to_value(&link).unwrap(),
            serde_json::json!({"type": "resource_link", "uri": "file:///a", "name": "a"})
        );
        let embedded = ContentBlock::embedded(
            ResourceContentsKind::blob("test://b", b"hi")
                .with_mime_type("application/octet-stream"),
        );
        assert_eq!(
            serde_json::to_value(&embedded).unwrap()["resource"],
            serde_json::json!({"uri": "test://b", "blob": "aGk=", "mimeType": "application/octet-stream"})
        );
        assert_eq!(ContentBlock::text("x").as_text(), Some("x"));
        assert_eq!(image.as_text(), None);
    }

    #[test]
    fn sampling_text_is_collected() {
        let r: CreateMessageResult = serde_json::from_value(serde_json::json!({
            "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
        }))
        .unwrap();
        assert_eq!(r.text().as_deref(), Some("ab"));
        let req = CreateMessageRequestParams::user_text("hi", 10);
        assert_eq!(
            serde_json::to_value(&req).unwrap(),
            serde_json::json!({"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10})
        );
    }
}
