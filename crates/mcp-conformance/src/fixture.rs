//! The server fixture: every tool, resource, template and prompt the conformance server
//! scenarios call, with the exact names, texts and MIME types they check.

use std::time::Duration;

use mcp_server::InputRequired;
use mcp_server::model::{ElicitRequestParams, InputResponse};
use mcp_server::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A one-pixel PNG.
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0xC0, 0xF0,
    0x1F, 0x00, 0x05, 0x00, 0x01, 0xFF, 0x89, 0x99, 0x3D, 0x1D, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
];

/// A WAV file: the RIFF header of one 8 kHz mono 8-bit sample of silence.
pub const WAV: &[u8] = &[
    b'R', b'I', b'F', b'F', 37, 0, 0, 0, b'W', b'A', b'V', b'E', b'f', b'm', b't', b' ', 16, 0, 0,
    0, 1, 0, 1, 0, 0x40, 0x1F, 0, 0, 0x40, 0x1F, 0, 0, 1, 0, 8, 0, b'd', b'a', b't', b'a', 1, 0, 0,
    0, 0x80,
];

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the client's model.
    prompt: String,
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message to show the user.
    message: String,
}

#[derive(Deserialize, JsonSchema)]
struct PromptArgs {
    /// First argument
    arg1: String,
    /// Second argument
    arg2: String,
}

#[derive(Deserialize, JsonSchema)]
struct EmbeddedPromptArgs {
    /// URI of the resource to embed
    #[serde(rename = "resourceUri")]
    resource_uri: String,
}

#[derive(Deserialize)]
struct TemplateVars {
    id: String,
}

#[derive(Deserialize, JsonSchema)]
struct GreetArgs {
    /// Who to greet
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct SlowComputeArgs {
    /// How long to compute, in seconds (at most an hour)
    #[serde(default)]
    seconds: u64,
    /// A label for the result
    #[serde(default)]
    label: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct ConfirmDeleteArgs {
    /// The file to delete
    filename: String,
}

async fn with_logging(cx: ToolContext, _args: NoArgs) -> &'static str {
    cx.log(LoggingLevel::Info, "Tool execution started").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LoggingLevel::Info, "Tool processing data").await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    cx.log(LoggingLevel::Info, "Tool execution completed").await;
    "Tool with logging executed successfully"
}

async fn with_progress(cx: ToolContext, _args: NoArgs) -> &'static str {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        cx.progress(step, Some(100.0), None).await;
    }
    "Tool with progress executed successfully"
}

async fn sampling(cx: ToolContext, args: SamplingArgs) -> Result<String, ToolError> {
    let request = CreateMessageRequestParams::user_text(args.prompt, 100);
    let answer = cx
        .sample("sample", request)
        .await
        .map_err(ToolError::execution)?;
    let text = match answer.text() {
        Some(text) => text,
        None => serde_json::to_string(&answer.content).map_err(ToolError::execution)?,
    };
    Ok(format!("LLM response: {text}"))
}

async fn elicit(cx: &ToolContext, message: &str, schema: Value) -> Result<String, ToolError> {
    let answer = cx
        .elicit_with_schema("input", message, schema)
        .await
        .map_err(ToolError::execution)?;
    let (action, content) = match answer {
        Elicitation::Accepted(content) => ("accept", Value::Object(content)),
        Elicitation::Declined => ("decline", json!({})),
        Elicitation::Cancelled => ("cancel", json!({})),
    };
    Ok(format!("User response: action={action}, content={content}"))
}

async fn elicitation(cx: ToolContext, args: ElicitationArgs) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"}
        },
        "required": ["username", "email"]
    });
    elicit(&cx, &args.message, schema).await
}

async fn elicitation_defaults(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    });
    elicit(
        &cx,
        "Please review and update the form fields with defaults",
        schema,
    )
    .await
}

async fn elicitation_enums(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}
                    ]
                }
            }
        },
        "required": []
    });
    elicit(&cx, "Please select options from the enum fields", schema).await
}

/// The input schema of `json_schema_2020_12_tool`, which `tools/list` must show verbatim.
pub fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"}
                }
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["email", "phone"]},
            "email": {"type": "string"},
            "phone": {"type": "string"}
        },
        "allOf": [
            {"anyOf": [{"required": ["name"]}, {"required": ["address"]}, {"required": []}]}
        ],
        "if": {"properties": {"contactMethod": {"const": "email"}}, "required": ["contactMethod"]},
        "then": {"required": ["email"]},
        "else": {},
        "additionalProperties": false
    })
}

// Tools of the stateless revision (2026-07-28): the diagnostics of `server-stateless` and the
// multi round-trip (`input_required`) scenarios. The same handlers serve 2025-11-25 sessions,
// where each ask is a real request to the client.

fn form(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

/// Needs `sampling`: without it the call fails with `-32021` naming the capability.
async fn missing_capability(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    if cx.client_supports(&["sampling"]) {
        return Ok("The client declared sampling.".into());
    }
    let request = CreateMessageRequestParams::user_text("Say hello.", 10);
    cx.sample("greeting", request).await?;
    Ok("unreachable: sampling was not declared".into())
}

/// Logs at `info`: sent only when the request asked for a log level.
async fn logging_tool(cx: ToolContext, _args: NoArgs) -> &'static str {
    cx.log(LoggingLevel::Info, "Logging tool ran").await;
    "Logging tool completed"
}

/// Adds and removes a temporary tool, so open subscriptions hear `tools/list_changed`.
async fn trigger_tool_change(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    cx.server()
        .add_tool(
            Tool::new("test_temporary_tool").description("Exists for a moment"),
            |_cx: ToolContext, _args: NoArgs| async { "temporary" },
        )
        .map_err(ToolError::execution)?;
    cx.server().remove_tool("test_temporary_tool");
    Ok("Tool list changed".into())
}

/// Adds and removes a temporary prompt, so open subscriptions hear `prompts/list_changed`.
async fn trigger_prompt_change(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    cx.server()
        .add_prompt(
            Prompt::new("test_temporary_prompt").description("Exists for a moment"),
            |_cx, _args: NoArgs| async { "temporary".to_owned() },
        )
        .map_err(ToolError::execution)?;
    cx.server().remove_prompt("test_temporary_prompt");
    Ok("Prompt list changed".into())
}

fn accepted_text(
    answer: &Elicitation<serde_json::Map<String, Value>>,
    field: &str,
) -> Option<String> {
    match answer {
        Elicitation::Accepted(content) => content
            .get(field)
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned)),
        _ => None,
    }
}

async fn input_elicitation(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let schema = form(
        json!({"name": {"type": "string", "description": "Your name"}}),
        &["name"],
    );
    let answer = cx
        .elicit_with_schema("user_name", "What is your name?", schema)
        .await?;
    Ok(match accepted_text(&answer, "name") {
        Some(name) => format!("Hello, {name}!"),
        None => "No name was given.".into(),
    })
}

async fn input_sampling(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let request = CreateMessageRequestParams::user_text("What is the capital of France?", 100);
    let answer = cx.sample("sample_request", request).await?;
    Ok(format!(
        "The model said: {}",
        answer.text().unwrap_or_else(|| "(no text)".into())
    ))
}

async fn input_roots(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let roots = cx.roots("roots").await?;
    Ok(format!("Found {} root(s)", roots.len()))
}

async fn input_request_state(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let schema = form(
        json!({"ok": {"type": "boolean", "description": "Proceed?"}}),
        &["ok"],
    );
    let answer = cx
        .elicit_with_schema("confirm", "Confirm to continue", schema)
        .await?;
    Ok(match answer {
        Elicitation::Accepted(content) if content.get("ok") == Some(&json!(true)) => {
            "state-ok: confirmed".into()
        }
        _ => "state-ok: not confirmed".into(),
    })
}

/// Asks for three inputs of three kinds at once, the explicit way.
async fn input_multiple(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let keys = ["user_name", "capital", "roots"];
    let answered: Vec<InputResponse> = keys.iter().filter_map(|k| cx.input_response(k)).collect();
    if answered.len() == keys.len() {
        return Ok(format!("Received all {} inputs", answered.len()));
    }
    let elicit: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": "What is your name?",
        "requestedSchema": form(json!({"name": {"type": "string"}}), &["name"]),
    }))
    .map_err(ToolError::execution)?;
    let ask = InputRequired::new()
        .elicit("user_name", elicit)
        .sample(
            "capital",
            CreateMessageRequestParams::user_text("What is the capital of France?", 100),
        )
        .roots("roots")
        .state(json!({"asked": keys}));
    Err(ask.into())
}

async fn input_multi_round(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let first = cx
        .elicit_with_schema(
            "step1",
            "Step 1: your name?",
            form(json!({"name": {"type": "string"}}), &["name"]),
        )
        .await?;
    let second = cx
        .elicit_with_schema(
            "step2",
            "Step 2: your city?",
            form(json!({"city": {"type": "string"}}), &["city"]),
        )
        .await?;
    Ok(format!(
        "Done in three rounds: name={}, city={}",
        accepted_text(&first, "name").unwrap_or_default(),
        accepted_text(&second, "city").unwrap_or_default()
    ))
}

/// Asks only for what the request's capabilities allow.
async fn input_capabilities(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let mut ask = InputRequired::new();
    if let (Some(InputResponse::CreateMessage(_)), _) | (_, Some(InputResponse::Elicit(_))) =
        (cx.input_response("sample"), cx.input_response("confirm"))
    {
        return Ok("Input received".into());
    }
    if cx.client_supports(&["sampling"]) {
        ask = ask.sample(
            "sample",
            CreateMessageRequestParams::user_text("Summarize the request.", 50),
        );
    }
    if cx.client_supports(&["elicitation"]) {
        let elicit: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Confirm?",
            "requestedSchema": form(json!({"ok": {"type": "boolean"}}), &["ok"]),
        }))
        .map_err(ToolError::execution)?;
        ask = ask.elicit("confirm", elicit);
    }
    if ask.requests().is_empty() {
        return Ok("The client offers no way to ask for input.".into());
    }
    Err(ask.into())
}

async fn input_prompt(cx: ToolContext, _args: NoArgs) -> Result<Vec<PromptMessage>, ToolError> {
    let answer = cx
        .elicit_with_schema(
            "user_context",
            "What context should the prompt use?",
            form(json!({"context": {"type": "string"}}), &["context"]),
        )
        .await?;
    let context = accepted_text(&answer, "context").unwrap_or_else(|| "none".into());
    Ok(vec![PromptMessage::user(ContentBlock::text(format!(
        "Use this context: {context}"
    )))])
}

async fn slow_compute(cx: ToolContext, args: SlowComputeArgs) -> Result<String, ToolError> {
    let seconds = args.seconds.min(3600);
    let label = args.label.unwrap_or_else(|| "unlabelled".into());
    cx.progress(0.0, None, Some(&format!("computing {label}")))
        .await;
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(seconds)) => {}
        () = cx.cancelled() => return Err(ToolError::execution("the computation was cancelled")),
    }
    Ok(format!("Computed {label} in {seconds} second(s)"))
}

async fn failing_job(_cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::execution(
        "The job failed: the input data is corrupt",
    ))
}

async fn protocol_error_job(_cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(200)).await;
    Err(ToolError::Protocol(
        mcp_server::ErrorObject::internal_error("the job's worker crashed"),
    ))
}

async fn confirm_delete(cx: ToolContext, args: ConfirmDeleteArgs) -> Result<String, ToolError> {
    let schema = form(
        json!({"confirm": {"type": "boolean", "description": "Delete the file?"}}),
        &["confirm"],
    );
    let answer = cx
        .elicit_with_schema("confirm", &format!("Delete {}?", args.filename), schema)
        .await?;
    Ok(match answer {
        Elicitation::Accepted(content) if content.get("confirm") == Some(&json!(true)) => {
            format!("Deleted {}", args.filename)
        }
        _ => format!("Kept {}", args.filename),
    })
}

/// Two elicitations at the same time: both are outstanding until answered.
async fn multi_input(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let schema = || form(json!({"name": {"type": "string"}}), &[]);
    let (first, second) = tokio::join!(
        cx.elicit_with_schema("first", "First value?", schema()),
        cx.elicit_with_schema("second", "Second value?", schema()),
    );
    let (first, second) = (first?, second?);
    Ok(format!(
        "Got {} and {}",
        accepted_text(&first, "name").unwrap_or_else(|| "nothing".into()),
        accepted_text(&second, "name").unwrap_or_else(|| "nothing".into())
    ))
}

/// Asks for the name in the request (multi round-trip), then works on as a task.
async fn tool_with_task(cx: ToolContext, _args: NoArgs) -> Result<String, ToolError> {
    let schema = form(json!({"name": {"type": "string"}}), &["name"]);
    let answer = cx
        .elicit_with_schema("user_name", "What is your name?", schema)
        .await?;
    let name = accepted_text(&answer, "name").unwrap_or_else(|| "stranger".into());
    cx.start_task().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(format!("Hello, {name}! Your task is complete."))
}

/// The fixture server's builder, with every registration; [`try_build`] builds it.
pub fn builder() -> Result<mcp_server::ServerBuilder, mcp_server::BuildError> {
    let skills = crate::skills::set()
        .map_err(|_| mcp_server::BuildError::InvalidOption("the skills fixture is invalid"))?;
    Ok(Server::builder(Implementation::new("mcp-conformance-everything-server", env!("CARGO_PKG_VERSION")))
        .skills(skills)
        .tool(
            Tool::new("test_simple_text").description("Tests simple text content response"),
            |_cx: ToolContext, _args: NoArgs| async {
                "This is a simple text response for testing."
            },
        )
        .tool(
            Tool::new("test_image_content").description("Tests image content response"),
            |_cx: ToolContext, _args: NoArgs| async { ContentBlock::image(PNG, "image/png") },
        )
        .tool(
            Tool::new("test_audio_content").description("Tests audio content response"),
            |_cx: ToolContext, _args: NoArgs| async { ContentBlock::audio(WAV, "audio/wav") },
        )
        .tool(
            Tool::new("test_embedded_resource").description("Tests embedded resource content response"),
            |_cx: ToolContext, _args: NoArgs| async {
                ContentBlock::embedded(
                    ResourceContentsKind::text(
                        "test://embedded-resource",
                        "This is an embedded resource content.",
                    )
                    .with_mime_type("text/plain"),
                )
            },
        )
        .tool(
            Tool::new("test_multiple_content_types")
                .description("Tests response with multiple content types (text, image, resource)"),
            |_cx: ToolContext, _args: NoArgs| async {
                vec![
                    ContentBlock::text("Multiple content types test:"),
                    ContentBlock::image(PNG, "image/png"),
                    ContentBlock::embedded(
                        ResourceContentsKind::text(
                            "test://mixed-content-resource",
                            r#"{"test":"data","value":123}"#,
                        )
                        .with_mime_type("application/json"),
                    ),
                ]
            },
        )
        .tool(
            Tool::new("test_tool_with_logging")
                .description("Tests tool that emits log messages during execution"),
            with_logging,
        )
        .tool(
            Tool::new("test_tool_with_progress").description("Tests tool that reports progress notifications"),
            with_progress,
        )
        .tool(
            Tool::new("test_error_handling").description("Tests error response handling"),
            |_cx: ToolContext, _args: NoArgs| async {
                Err::<String, _>(ToolError::execution(
                    "This tool intentionally returns an error for testing",
                ))
            },
        )
        .tool(
            Tool::new("test_sampling").description("Tests server-initiated sampling (LLM completion request)"),
            sampling,
        )
        .tool(
            Tool::new("test_elicitation").description("Tests server-initiated elicitation (user input request)"),
            elicitation,
        )
        .tool(
            Tool::new("test_elicitation_sep1034_defaults")
                .description("Tests elicitation with default values for all primitive types (SEP-1034)"),
            elicitation_defaults,
        )
        .tool(
            Tool::new("test_elicitation_sep1330_enums")
                .description("Tests elicitation with enum schema improvements (SEP-1330)"),
            elicitation_enums,
        )
        .tool_raw(
            Tool::new("json_schema_2020_12_tool")
                .description("Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)")
                .input_schema(json_schema_2020_12()),
            |_cx: ToolContext, args: Value| async move {
                format!("JSON Schema 2020-12 tool called with: {args}")
            },
        )
        .tool(
            Tool::new("test_missing_capability")
                .description("Needs the client's sampling capability (-32021 without it)"),
            missing_capability,
        )
        .tool(
            Tool::new("test_streaming_elicitation")
                .description("Answers without sending requests on the response stream"),
            |_cx: ToolContext, _args: NoArgs| async { "Streaming elicitation check completed" },
        )
        .tool(
            Tool::new("test_logging_tool")
                .description("Logs at info level; silent unless the request asked for a log level"),
            logging_tool,
        )
        .tool(
            Tool::new("test_trigger_tool_change")
                .description("Changes the tool list (notifications/tools/list_changed)"),
            trigger_tool_change,
        )
        .tool(
            Tool::new("test_trigger_prompt_change")
                .description("Changes the prompt list (notifications/prompts/list_changed)"),
            trigger_prompt_change,
        )
        .tool(
            Tool::new("test_input_required_result_elicitation")
                .description("Asks for the user's name (input_required with elicitation)"),
            input_elicitation,
        )
        .tool(
            Tool::new("test_input_required_result_sampling")
                .description("Asks the client's model a question (input_required with sampling)"),
            input_sampling,
        )
        .tool(
            Tool::new("test_input_required_result_list_roots")
                .description("Asks for the client's roots (input_required with roots/list)"),
            input_roots,
        )
        .tool(
            Tool::new("test_input_required_result_request_state")
                .description("Asks for a confirmation and carries requestState"),
            input_request_state,
        )
        .tool(
            Tool::new("test_input_required_result_multiple_inputs")
                .description("Asks for three inputs of three kinds at once"),
            input_multiple,
        )
        .tool(
            Tool::new("test_input_required_result_multi_round")
                .description("Asks for input in two successive rounds"),
            input_multi_round,
        )
        .tool(
            Tool::new("test_input_required_result_tampered_state")
                .description("Asks for the user's name; a modified requestState is refused"),
            input_elicitation,
        )
        .tool(
            Tool::new("test_input_required_result_capabilities")
                .description("Asks only for the kinds of input the client declared"),
            input_capabilities,
        )
        .tool_raw(
            Tool::new("test_x_mcp_header")
                .description("Echoes a region that clients mirror into the Mcp-Param-Region header")
                .input_schema(json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region", "description": "A region"}
                    },
                    "required": ["region"]
                })),
            |_cx: ToolContext, args: Value| async move {
                format!("Region: {}", args["region"].as_str().unwrap_or_default())
            },
        )
        .tool(
            Tool::new("greet").description("Greets someone (never a task)"),
            |_cx: ToolContext, args: GreetArgs| async move { format!("Hello, {}!", args.name) },
        )
        .tool(
            Tool::new("slow_compute")
                .description("Computes for the given number of seconds (a task for clients of the tasks extension)")
                .task_support(TaskSupport::Optional),
            slow_compute,
        )
        .tool(
            Tool::new("failing_job")
                .description("Fails with a tool error after a second (runs only as a task)")
                .task_support(TaskSupport::Required),
            failing_job,
        )
        .tool(
            Tool::new("protocol_error_job")
                .description("Fails with a protocol error (a task that ends failed)")
                .task_support(TaskSupport::Optional),
            protocol_error_job,
        )
        .tool(
            Tool::new("confirm_delete")
                .description("Asks for confirmation before deleting a file (as a task: input_required)")
                .task_support(TaskSupport::Optional),
            confirm_delete,
        )
        .tool(
            Tool::new("multi_input")
                .description("Asks two questions at once (as a task: two outstanding inputs)")
                .task_support(TaskSupport::Optional),
            multi_input,
        )
        .tool(
            Tool::new("test_tool_with_task")
                .description("Asks for the user's name, then continues as a task")
                .task_support(TaskSupport::Required)
                .defer_task(),
            tool_with_task,
        )
        .resource(
            Resource::new("test://static-text", "static-text")
                .description("A static text resource for testing")
                .mime_type("text/plain"),
            |_cx| async { "This is the content of the static text resource." },
        )
        .resource(
            Resource::new("test://static-binary", "static-binary")
                .description("A static binary resource (image) for testing")
                .mime_type("image/png"),
            |_cx| async { PNG.to_vec() },
        )
        .resource(
            Resource::new("test://watched-resource", "watched-resource")
                .description("A resource that can be subscribed to")
                .mime_type("text/plain"),
            |_cx| async { "Watched resource content" },
        )
        .resource_template(
            ResourceTemplate::new("test://template/{id}/data", "template")
                .description("A resource template with parameter substitution")
                .mime_type("application/json"),
            |_cx, vars: TemplateVars| async move {
                json!({"id": vars.id, "templateTest": true, "data": format!("Data for ID: {}", vars.id)})
                    .to_string()
            },
        )
        .prompt(
            Prompt::new("test_simple_prompt").description("A simple prompt without arguments"),
            |_cx, _args: NoArgs| async { "This is a simple prompt for testing.".to_owned() },
        )
        .prompt(
            Prompt::new("test_prompt_with_arguments").description("A prompt with required arguments"),
            |_cx, args: PromptArgs| async move {
                format!(
                    "Prompt with arguments: arg1='{}', arg2='{}'",
                    args.arg1, args.arg2
                )
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_embedded_resource")
                .description("A prompt that includes an embedded resource"),
            |_cx, args: EmbeddedPromptArgs| async move {
                vec![
                    PromptMessage::user(ContentBlock::embedded(
                        ResourceContentsKind::text(
                            args.resource_uri,
                            "Embedded resource content for testing.",
                        )
                        .with_mime_type("text/plain"),
                    )),
                    PromptMessage::user(ContentBlock::text(
                        "Please process the embedded resource above.",
                    )),
                ]
            },
        )
        .prompt(
            Prompt::new("test_prompt_with_image").description("A prompt that includes image content"),
            |_cx, _args: NoArgs| async {
                vec![
                    PromptMessage::user(ContentBlock::image(PNG, "image/png")),
                    PromptMessage::user(ContentBlock::text("Please analyze the image above.")),
                ]
            },
        )
        .prompt(
            Prompt::new("test_input_required_result_prompt")
                .description("Asks for context before building the prompt (input_required)"),
            input_prompt,
        )
        .prompt_completion("test_prompt_with_arguments", "arg1", |value, _context| async move {
            ["paris", "park", "party", "test", "testValue1"]
                .into_iter()
                .filter(|c| c.starts_with(value.as_str()))
                .map(str::to_owned)
                .collect()
        })
    )
}

/// Builds the fixture server.
///
/// # Errors
///
/// A [`mcp_server::BuildError`] if a registration is invalid (a bug in this fixture).
pub fn try_build() -> Result<Server, mcp_server::BuildError> {
    builder()?.build()
}

/// Builds the fixture server; the registrations are fixed, so this only fails on a bug here.
///
/// # Panics
///
/// If [`try_build`] fails, which the crate's tests rule out.
pub fn build() -> Server {
    match try_build() {
        Ok(server) => server,
        Err(e) => panic!("the conformance fixture is invalid: {e}"),
    }
}
