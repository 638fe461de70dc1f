//! Hand-written constructors for the most used model types.

use crate::{
    CallToolResult, ContentBlock, Implementation, TextContent, Tool, ToolInputSchema, tag,
};

impl TextContent {
    /// A text content block.
    ///
    /// ```
    /// let t = mcp_types::TextContent::new("hello");
    /// assert_eq!(serde_json::to_value(&t)?, serde_json::json!({"type": "text", "text": "hello"}));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(text: impl Into<String>) -> Self {
        TextContent {
            meta: None,
            annotations: None,
            text: text.into(),
            r#type: tag::Text,
        }
    }
}

impl ContentBlock {
    /// A text content block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text(TextContent::new(text))
    }
}

impl CallToolResult {
    /// A successful result with the given content.
    pub fn new(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            meta: None,
            content,
            is_error: None,
            result_type: None,
            structured_content: None,
        }
    }

    /// A successful result with one text block.
    ///
    /// ```
    /// let r = mcp_types::CallToolResult::text("done");
    /// assert_eq!(
    ///     serde_json::to_value(&r)?,
    ///     serde_json::json!({"content": [{"type": "text", "text": "done"}]})
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult::new(vec![ContentBlock::text(text)])
    }

    /// A tool execution error (`isError: true`) with one text block explaining it.
    pub fn error(message: impl Into<String>) -> Self {
        CallToolResult {
            is_error: Some(true),
            ..CallToolResult::text(message)
        }
    }
}

impl ToolInputSchema {
    /// An object schema with the given `properties` (each a JSON Schema).
    pub fn object(properties: crate::JsonObject) -> Self {
        let mut extra = crate::JsonObject::new();
        extra.insert("properties".into(), serde_json::Value::Object(properties));
        ToolInputSchema {
            extra,
            ..ToolInputSchema::default()
        }
    }
}

impl Tool {
    /// A tool called `name` whose arguments have the object schema with `properties`.
    ///
    /// ```
    /// let tool = mcp_types::Tool::new("get_weather", serde_json::Map::new());
    /// assert_eq!(
    ///     serde_json::to_value(&tool.input_schema)?,
    ///     serde_json::json!({"type": "object", "properties": {}})
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub fn new(name: impl Into<String>, properties: crate::JsonObject) -> Self {
        Tool {
            meta: None,
            annotations: None,
            description: None,
            execution: None,
            icons: None,
            input_schema: ToolInputSchema::object(properties),
            name: name.into(),
            output_schema: None,
            title: None,
        }
    }
}

impl Implementation {
    /// An implementation description with a name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            description: None,
            icons: None,
            name: name.into(),
            title: None,
            version: version.into(),
            website_url: None,
        }
    }
}
