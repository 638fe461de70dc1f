//! The server of the `everything` example: one of each feature. Shared with the test binary of
//! the cross-crate tests, which serves it on stdio.

use std::collections::HashMap;
use std::time::Duration;

use mcp_server::LegacyMethods;
use mcp_server::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A one-pixel PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: f64,
    b: f64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    sum: f64,
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// Number of steps (at most 20), 50 ms each.
    steps: u32,
}

#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// What to ask the model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct Contact {
    /// Your name
    name: String,
    /// Your age
    age: Option<u32>,
}

#[derive(Deserialize, JsonSchema)]
struct GreetingArgs {
    /// First argument
    arg1: String,
    /// Second argument
    arg2: String,
}

#[derive(Deserialize)]
struct ItemVars {
    id: String,
}

async fn echo(_cx: ToolContext, args: EchoArgs) -> String {
    args.text
}

async fn add(_cx: ToolContext, args: AddArgs) -> Structured<Sum> {
    Structured(Sum {
        sum: args.a + args.b,
    })
}

async fn fail(_cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    Err(ToolError::execution("this tool always fails"))
}

async fn slow(cx: ToolContext, args: SlowArgs) -> Result<String, ToolError> {
    let steps = args.steps.min(20);
    for i in 1..=steps {
        tokio::select! {
            _ = cx.cancelled() => return Err(ToolError::execution("cancelled")),
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        cx.progress(f64::from(i), Some(f64::from(steps)), Some("working"))
            .await;
        cx.log(LoggingLevel::Info, format!("step {i} of {steps}"))
            .await;
    }
    Ok(format!("done after {steps} steps"))
}

async fn sample(cx: ToolContext, args: PromptArgs) -> Result<String, ToolError> {
    let request = CreateMessageRequestParams::user_text(args.prompt, 100);
    let answer = cx.sample("answer", request).await?;
    Ok(format!(
        "{} said: {}",
        answer.model,
        answer.text().unwrap_or_default()
    ))
}

async fn ask_name(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    match cx.elicit::<Contact>("contact", "Who are you?").await? {
        Elicitation::Accepted(c) => Ok(match c.age {
            Some(age) => format!("Hello {}, aged {age}", c.name),
            None => format!("Hello {}", c.name),
        }),
        Elicitation::Declined => Ok("declined".to_owned()),
        Elicitation::Cancelled => Ok("cancelled".to_owned()),
    }
}

async fn list_roots(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let roots = cx.roots("roots").await?;
    Ok(roots
        .iter()
        .map(|r| r.uri.as_str())
        .collect::<Vec<_>>()
        .join("\n"))
}

async fn mixed(_cx: ToolContext, _args: NoArgs) -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("an image, a sound and a resource"),
        ContentBlock::image(PNG, "image/png"),
        ContentBlock::audio(b"RIFF\0\0\0\0WAVE", "audio/wav"),
        ContentBlock::embedded(
            ResourceContentsKind::text("test://static-text", "Hello, world!")
                .with_mime_type("text/plain"),
        ),
        ContentBlock::resource_link("test://static-text", "static-text"),
    ]
}

/// Builds the `everything` server.
pub fn build() -> Server {
    Server::builder(Implementation::new("everything", env!("CARGO_PKG_VERSION")))
        .instructions("A server exercising every feature of the protocol.")
        .middleware(LegacyMethods)
        .tool(Tool::new("echo").description("Echo the text back"), echo)
        .tool(
            Tool::new("add")
                .title("Add")
                .description("Add two numbers (structured output)")
                .read_only(),
            add,
        )
        .tool(
            Tool::new("fail").description("Always fails (isError)"),
            fail,
        )
        .tool(
            Tool::new("slow").description("Reports progress and logs while it works"),
            slow,
        )
        .tool(
            Tool::new("sample").description("Asks the client's model (sampling)"),
            sample,
        )
        .tool(
            Tool::new("ask_name").description("Asks the user for a name (elicitation)"),
            ask_name,
        )
        .tool(
            Tool::new("list_roots").description("Lists the client's roots"),
            list_roots,
        )
        .tool(
            Tool::new("mixed").description("Returns every kind of content"),
            mixed,
        )
        .tool(
            Tool::new("add_tool").description("Registers a new tool at run time"),
            |cx: ToolContext, _args: NoArgs| async move {
                cx.server()
                    .add_tool(
                        Tool::new("late").description("Added at run time"),
                        |_cx: ToolContext, _a: NoArgs| async { "late tool" },
                    )
                    .map_err(ToolError::execution)?;
                Ok::<_, ToolError>("added tool `late`")
            },
        )
        .tool(
            Tool::new("touch").description("Marks test://static-text as updated"),
            |cx: ToolContext, _args: NoArgs| async move {
                cx.server().notify_resource_updated("test://static-text");
                "touched"
            },
        )
        .resource(
            Resource::new("test://static-text", "static-text")
                .description("A static text resource")
                .mime_type("text/plain"),
            |_cx| async { "Hello, world!" },
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .description("A static binary resource")
                .mime_type("image/png"),
            |_cx| async { PNG.to_vec() },
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "item")
                .description("An item by id")
                .mime_type("application/json"),
            |_cx, vars: ItemVars| async move { format!("{{\"id\":\"{}\"}}", vars.id) },
        )
        .prompt(
            Prompt::new("simple").description("A prompt without arguments"),
            |_cx, _args: NoArgs| async { "Say hello.".to_owned() },
        )
        .prompt(
            Prompt::new("with_args").description("A prompt with two arguments"),
            |_cx, args: GreetingArgs| async move {
                format!("Compare {} with {}.", args.arg1, args.arg2)
            },
        )
        .prompt(
            Prompt::new("with_resource").description("A prompt embedding a resource"),
            |_cx, _args: NoArgs| async {
                vec![
                    PromptMessage::user(ContentBlock::embedded(
                        ResourceContentsKind::text("test://static-text", "Hello, world!")
                            .with_mime_type("text/plain"),
                    )),
                    PromptMessage::user(ContentBlock::text("Summarise the resource above.")),
                ]
            },
        )
        .prompt(
            Prompt::new("with_image").description("A prompt with an image"),
            |_cx, _args: NoArgs| async {
                vec![PromptMessage::user(ContentBlock::image(PNG, "image/png"))]
            },
        )
        .prompt_completion("with_args", "arg1", |value, _context| async move {
            ["apple", "apricot", "banana"]
                .into_iter()
                .filter(|c| c.starts_with(&value))
                .map(str::to_owned)
                .collect()
        })
        .template_completion(
            "test://template/{id}/data",
            "id",
            |value, _context: HashMap<String, String>| async move {
                (1..=3)
                    .map(|n| n.to_string())
                    .filter(|c| c.starts_with(&value))
                    .collect()
            },
        )
        .build()
        .expect("the everything server is valid")
}
