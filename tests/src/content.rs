//! Reading what tools answer, and what a test client's model answers.

use mcp_types::{ContentBlock, CreateMessageResult};
use serde_json::json;

/// The text blocks of `blocks`, one a line; other kinds of content are left out.
pub fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A sampling answer: `model` replying `text` as the assistant.
pub fn model_reply(model: &str, text: &str) -> CreateMessageResult {
    serde_json::from_value(json!({
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model
    }))
    .expect("a valid CreateMessageResult")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_of_joins_the_text_blocks_only() {
        let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AA==", "mimeType": "image/png"},
            {"type": "text", "text": "two"}
        ]))
        .unwrap();
        assert_eq!(text_of(&blocks), "one\ntwo");
    }

    #[test]
    fn model_reply_is_the_assistant_speaking() {
        let reply = serde_json::to_value(model_reply("m", "hi")).unwrap();
        assert_eq!(reply["role"], "assistant");
        assert_eq!(reply["content"]["text"], "hi");
        assert_eq!(reply["model"], "m");
    }
}
