//! What clients see of typed handlers: prompt arguments (strings on the wire) read into typed
//! fields, derived schemas in standard JSON Schema 2020-12 (no schemars-only number formats),
//! and elicitation forms whose fields come in the order the code declares them.

use crate::support;

use std::sync::{Arc, Mutex};

use mcp_jsonrpc::{
    CallError, Engine, ErrorObject, Handler, Notification, NotificationContext, Peer, RawJson,
    Request, RequestContext, RequestOptions, memory_pair,
};
use mcp_server::model::Implementation;
use mcp_server::prelude::*;
use serde_json::{Value, json};
use support::call;

/// A client that answers `elicitation/create` by accepting `answer`, and keeps the raw text of
/// the params it was sent.
#[derive(Clone, Default)]
struct FormClient {
    sent: Arc<Mutex<Vec<String>>>,
    answer: Value,
}

impl Handler for FormClient {
    async fn handle_request(
        &self,
        request: Request,
        _cx: RequestContext,
    ) -> Result<RawJson, ErrorObject> {
        let params = request.params.as_deref().map_or("", |p| p.get()).to_owned();
        self.sent.lock().unwrap().push(params);
        Ok(RawJson::serialize(&json!({"action": "accept", "content": self.answer})).unwrap())
    }

    async fn handle_notification(&self, _n: Notification, _cx: NotificationContext) {}
}

async fn start(server: Server, client: FormClient) -> Peer {
    support::start(server, client, json!({"elicitation": {"form": {}}})).await
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Detail {
    Short,
    Full,
}

/// Declared out of alphabetical order on purpose; read through `Debug`.
#[allow(dead_code)]
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Forecast {
    /// The city
    city: String,
    /// Days ahead
    days: u32,
    /// Metric units
    metric: bool,
    detail: Detail,
    /// At most this many lines
    limit: Option<u32>,
    /// A factor
    scale: Option<f64>,
}

async fn forecast(_cx: mcp_server::RequestContext, args: Forecast) -> String {
    format!("{args:?}")
}

fn prompt_server() -> Server {
    Server::builder(Implementation::new("typed", "1.0.0"))
        .prompt(Prompt::new("forecast"), forecast)
        .build()
        .unwrap()
}

async fn get(peer: &Peer, arguments: Value) -> Result<String, ErrorObject> {
    match call(
        peer,
        "prompts/get",
        json!({"name": "forecast", "arguments": arguments}),
    )
    .await
    {
        Ok(result) => Ok(result["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .to_owned()),
        Err(CallError::Rpc(e)) => Err(e),
        Err(e) => panic!("{e}"),
    }
}

#[tokio::test]
async fn typed_prompt_arguments_are_read_from_their_strings() {
    let peer = start(prompt_server(), FormClient::default()).await;
    let text = get(
        &peer,
        json!({"city": "Oslo", "days": "3", "metric": "true", "detail": "full",
               "limit": "10", "scale": "1.5"}),
    )
    .await
    .unwrap();
    assert_eq!(
        text,
        r#"Forecast { city: "Oslo", days: 3, metric: true, detail: Full, limit: Some(10), scale: Some(1.5) }"#
    );

    // Optional ones may be left out, or sent blank; booleans in any case.
    let text = get(
        &peer,
        json!({"city": "42", "days": " 7 ", "metric": "False", "detail": "short", "limit": ""}),
    )
    .await
    .unwrap();
    assert_eq!(
        text,
        r#"Forecast { city: "42", days: 7, metric: false, detail: Short, limit: None, scale: None }"#
    );
}

#[tokio::test]
async fn a_prompt_argument_that_does_not_parse_is_invalid_params_naming_it() {
    let peer = start(prompt_server(), FormClient::default()).await;
    let base = json!({"city": "Oslo", "days": "3", "metric": "true", "detail": "full"});
    let with = |key: &str, value: &str| {
        let mut args = base.clone();
        args[key] = json!(value);
        args
    };
    for (args, named, expected) in [
        (
            with("days", "three"),
            "`days`",
            "an integer from 0 to 4294967295",
        ),
        (
            with("days", "-1"),
            "`days`",
            "an integer from 0 to 4294967295",
        ),
        (with("metric", "yes"), "`metric`", "`true` or `false`"),
        (with("detail", "long"), "`detail`", "one of `short`, `full`"),
        (with("limit", "1.5"), "`limit`", "an integer"),
        (with("scale", "big"), "`scale`", "a number"),
    ] {
        let e = get(&peer, args.clone()).await.unwrap_err();
        assert_eq!(e.code, -32602, "{args}: {e:?}");
        assert!(
            e.message.contains(named) && e.message.contains(expected),
            "{args}: {}",
            e.message
        );
    }
    let e = get(&peer, json!({"city": "Oslo"})).await.unwrap_err();
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("days"), "{}", e.message);
}

// `level` and `positive` state ranges their types do not enforce.
#[cfg(feature = "validation")]
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Numbers {
    small: u8,
    count: u32,
    offset: i32,
    big: i64,
    size: u64,
    ratio: f32,
    precise: f64,
    #[schemars(range(min = 1, max = 10))]
    level: u8,
    #[schemars(range(min = 0))]
    positive: i64,
    maybe: Option<u16>,
    list: Vec<i8>,
}

#[cfg(feature = "validation")]
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Measured {
    total: u32,
    mean: f64,
}

/// Every `format` in a schema, and the schema objects that carry one.
#[cfg(feature = "validation")]
fn formats(schema: &Value, found: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(f)) = map.get("format") {
                found.push(f.clone());
            }
            map.values().for_each(|v| formats(v, found));
        }
        Value::Array(list) => list.iter().for_each(|v| formats(v, found)),
        _ => {}
    }
}

#[cfg(feature = "validation")]
#[tokio::test]
async fn derived_schemas_use_only_standard_formats_and_keep_integer_ranges() {
    let server = Server::builder(Implementation::new("numbers", "1.0.0"))
        .tool(
            Tool::new("measure"),
            |_cx: ToolContext, n: Numbers| async move {
                Structured(Measured {
                    total: u32::from(n.small) + n.count,
                    mean: f64::from(n.ratio),
                })
            },
        )
        .build()
        .unwrap();
    let peer = start(server, FormClient::default()).await;
    let list = call(&peer, "tools/list", json!({})).await.unwrap();
    let tool = &list["tools"][0];
    let mut found = Vec::new();
    formats(tool, &mut found);
    assert!(found.is_empty(), "non-standard formats {found:?} in {tool}");

    let props = &tool["inputSchema"]["properties"];
    let range = |name: &str| {
        (
            props[name]["minimum"].clone(),
            props[name]["maximum"].clone(),
        )
    };
    assert_eq!(range("small"), (json!(0), json!(255)));
    assert_eq!(range("count"), (json!(0), json!(4_294_967_295_u32)));
    assert_eq!(
        range("offset"),
        (json!(-2_147_483_648_i32), json!(2_147_483_647))
    );
    assert_eq!(range("big"), (Value::Null, Value::Null));
    assert_eq!(range("size"), (json!(0), Value::Null));
    assert_eq!(range("ratio"), (Value::Null, Value::Null));
    assert_eq!(props["ratio"]["type"], "number");
    assert_eq!(range("precise"), (Value::Null, Value::Null));
    // Stated ranges are kept when tighter than the type's.
    assert_eq!(range("level"), (json!(1), json!(10)));
    assert_eq!(range("positive"), (json!(0), Value::Null));
    assert_eq!(range("maybe"), (json!(0), json!(65535)));
    assert_eq!(props["list"]["items"]["minimum"], json!(-128));
    assert_eq!(props["list"]["items"]["maximum"], json!(127));
    let output = &tool["outputSchema"]["properties"];
    assert_eq!(output["total"]["minimum"], json!(0));
    assert_eq!(output["total"]["maximum"], json!(4_294_967_295_u32));

    // The type still enforces its range, and a stated range is still checked.
    let args = json!({"small": 1, "count": 2, "offset": -3, "big": 4, "size": 5, "ratio": 0.5,
                      "precise": 0.25, "level": 3, "positive": 6, "list": [-1]});
    let ok = call(
        &peer,
        "tools/call",
        json!({"name": "measure", "arguments": args}),
    )
    .await
    .unwrap();
    assert_eq!(
        ok["structuredContent"],
        json!({"total": 3, "mean": 0.5}),
        "{ok}"
    );
    for (key, bad) in [
        ("small", json!(256)),
        ("level", json!(11)),
        ("positive", json!(-1)),
    ] {
        let mut args = args.clone();
        args[key] = bad;
        let refused = call(
            &peer,
            "tools/call",
            json!({"name": "measure", "arguments": args}),
        )
        .await
        .unwrap();
        assert_eq!(refused["isError"], true, "{key}: {refused}");
    }
}

/// A form declared with its required field first and an optional one after it, against the
/// alphabet. Read through `Debug`.
#[allow(dead_code)]
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Signup {
    /// Required, declared first
    zeta: String,
    /// Optional, declared second
    alpha: Option<u8>,
    middle: bool,
}

#[tokio::test]
async fn elicitation_forms_keep_the_declared_field_order() {
    let client = FormClient {
        answer: json!({"zeta": "z", "alpha": 7, "middle": true}),
        ..FormClient::default()
    };
    let sent = Arc::clone(&client.sent);
    let peer = start(signup_server(), client).await;
    let result = call(
        &peer,
        "tools/call",
        json!({"name": "signup", "arguments": {}}),
    )
    .await
    .unwrap();
    assert_eq!(
        result["content"][0]["text"], r#"Signup { zeta: "z", alpha: Some(7), middle: true }"#,
        "{result}"
    );
    let sent = sent.lock().unwrap();
    let params = &sent[0];
    let (zeta, alpha, middle) = (
        params.find("\"zeta\":").unwrap(),
        params.find("\"alpha\":").unwrap(),
        params.find("\"middle\":").unwrap(),
    );
    assert!(
        zeta < alpha && alpha < middle,
        "fields out of order: {params}"
    );
    let params: Value = serde_json::from_str(params).unwrap();
    let schema = &params["requestedSchema"];
    assert_eq!(schema["required"], json!(["zeta", "middle"]));
    assert_eq!(
        schema["properties"]["alpha"],
        json!({"type": "integer", "minimum": 0, "maximum": 255,
               "description": "Optional, declared second"}),
        "no schemars format in a form: {schema}"
    );
}

/// The `signup` tool: asks for a [`Signup`] form.
fn signup_server() -> Server {
    Server::builder(Implementation::new("forms", "1.0.0"))
        .tool(
            Tool::new("signup"),
            |cx: ToolContext, _: NoArgs| async move {
                match cx.elicit::<Signup>("signup", "Sign up").await? {
                    Elicitation::Accepted(form) => Ok::<_, ToolError>(format!("{form:?}")),
                    _ => Ok("no".to_owned()),
                }
            },
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn stateless_forms_keep_the_declared_field_order() {
    // A 2026-07-28 request: the form travels in the `input_required` result.
    let (client_side, server_side) = memory_pair(16);
    let server = signup_server();
    tokio::spawn(async move { server.serve(server_side).await });
    let (peer, _driver) = Engine::builder().spawn(client_side, FormClient::default());
    let params = json!({
        "name": "signup",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    });
    let params = serde_json::value::to_raw_value(&params).unwrap();
    let raw = peer
        .request("tools/call", Some(params), RequestOptions::new())
        .await
        .unwrap();
    let text = raw.get();
    let result: Value = serde_json::from_str(text).unwrap();
    assert_eq!(result["resultType"], "input_required", "{text}");
    let (zeta, alpha, middle) = (
        text.find("\"zeta\":").unwrap(),
        text.find("\"alpha\":").unwrap(),
        text.find("\"middle\":").unwrap(),
    );
    assert!(
        zeta < alpha && alpha < middle,
        "fields out of order: {text}"
    );
    let form = &result["inputRequests"]["signup"]["params"]["requestedSchema"];
    assert_eq!(form["required"], json!(["zeta", "middle"]), "{text}");
}

#[tokio::test]
async fn prompt_arguments_are_listed_in_declaration_order() {
    let peer = start(prompt_server(), FormClient::default()).await;
    let list = call(&peer, "prompts/list", json!({})).await.unwrap();
    let names: Vec<&str> = list["prompts"][0]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["city", "days", "metric", "detail", "limit", "scale"],
        "{list}"
    );
}

/// A form whose schema states more than its type enforces.
#[cfg(feature = "validation")]
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Nick {
    #[schemars(length(min = 3))]
    name: String,
}

/// An accepted answer is checked against the form's schema, derived or written by hand: one
/// that breaks it is refused, not handed to the tool.
#[cfg(feature = "validation")]
#[tokio::test]
async fn an_answer_that_breaks_the_form_is_refused() {
    let server = Server::builder(Implementation::new("forms", "1.0.0"))
        .tool(
            Tool::new("typed"),
            |cx: ToolContext, _: NoArgs| async move {
                match cx.elicit::<Nick>("nick", "Your nick").await {
                    Ok(Elicitation::Accepted(nick)) => nick.name,
                    Ok(_) => "declined".to_owned(),
                    Err(e) => format!("refused: {e}"),
                }
            },
        )
        .tool(
            Tool::new("by-hand"),
            |cx: ToolContext, _: NoArgs| async move {
                let schema = json!({"type": "object", "properties": {
                "name": {"type": "string", "minLength": 3}
            }, "required": ["name"]});
                match cx.elicit_with_schema("nick", "Your nick", schema).await {
                    Ok(Elicitation::Accepted(form)) => form["name"].to_string(),
                    Ok(_) => "declined".to_owned(),
                    Err(e) => format!("refused: {e}"),
                }
            },
        )
        .build()
        .unwrap();
    for (answer, refused) in [("ab", true), ("abc", false)] {
        let client = FormClient {
            answer: json!({"name": answer}),
            ..FormClient::default()
        };
        let peer = start(server.clone(), client).await;
        for tool in ["typed", "by-hand"] {
            let result = call(&peer, "tools/call", json!({"name": tool, "arguments": {}}))
                .await
                .unwrap();
            let text = result["content"][0]["text"].as_str().unwrap();
            assert_eq!(
                text.starts_with("refused:"),
                refused,
                "{tool} {answer}: {text}"
            );
        }
    }
}
