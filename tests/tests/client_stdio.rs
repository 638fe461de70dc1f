//! The client against this project's example server (`mcp-example`) over stdio, for each
//! revision (the session revisions and the stateless 2026-07-28): negotiation, every typed call,
//! the client-side features, notifications, and what happens when the server dies mid-request.

use crate::client_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_support::{assert_sampling, call_with_progress};
use mcp_client::config::HostConfig;
use mcp_client::elicit::FieldKind;
use mcp_client::{
    CallError, Client, ClientSession, ElicitationAnswer, ElicitationRequest, Host, Roots,
    ServerNotification, ServerStatus,
};
use mcp_tests::content::{model_reply, text_of};
use mcp_transport_stdio::ServerCommand;
use mcp_types::{
    Era, Implementation, LoggingLevel, ProtocolVersion, ResourceContentsKind, SubscriptionFilter,
};
use serde_json::json;

/// The URI of the next `notifications/resources/updated` that `$rx` (the session's
/// notifications or a listen subscription: two types with the same `recv`) yields within 5 s.
macro_rules! resource_update {
    ($rx:expr, $source:literal) => {
        tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match $rx.recv().await {
                    Some(ServerNotification::ResourceUpdated(p)) => break p.uri,
                    Some(_) => continue,
                    None => panic!(concat!($source, " ended")),
                }
            }
        })
        .await
        .expect(concat!("resource updated notification on ", $source))
    };
}

const SERVER: &str = env!("CARGO_BIN_EXE_everything-stdio");
const REVISIONS: [ProtocolVersion; 4] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
];

fn client(version: ProtocolVersion, elicited: Arc<Mutex<Vec<String>>>) -> Client {
    let root: mcp_types::Root =
        serde_json::from_value(json!({"uri": "file:///tmp/project", "name": "project"})).unwrap();
    Client::builder(Implementation::new("client-stdio-test", "1.0.0"))
        .protocol_version(version)
        .on_sample(
            |request: mcp_types::CreateMessageRequestParams| async move {
                assert_eq!(request.max_tokens, mcp_example::ASK_MODEL_MAX_TOKENS);
                Ok(model_reply("test-model", "four"))
            },
        )
        .on_elicit(move |request: ElicitationRequest| {
            let elicited = elicited.clone();
            async move {
                let ElicitationRequest::Form {
                    message, schema, ..
                } = request
                else {
                    return Ok(ElicitationAnswer::Cancel);
                };
                elicited.lock().unwrap().push(message);
                assert!(
                    schema
                        .fields()
                        .iter()
                        .any(|f| f.name == "name" && f.required)
                );
                // The optional choice, when the form offers it: its options, not required.
                let language = schema.fields().iter().find(|f| f.name == "language");
                if let Some(field) = language {
                    assert!(!field.required, "{schema:?}");
                    assert!(
                        matches!(&field.kind, FieldKind::Enum { options } if options.len() == 3),
                        "{schema:?}"
                    );
                }
                let answer = match language {
                    Some(_) => json!({"name": "Ada", "language": "french"}),
                    None => json!({"name": "Ada"}),
                };
                Ok(ElicitationAnswer::Accept(
                    answer.as_object().unwrap().clone(),
                ))
            }
        })
        .roots(Roots::new(vec![root]))
        .build()
}

async fn connect(client: &Client) -> (ClientSession, mcp_transport_stdio::ChildProcess) {
    let (connection, child) = ServerCommand::new(SERVER)
        .spawn()
        .expect("spawn the server");
    let session = client.connect(connection).await.expect("connect");
    (session, child)
}

async fn exercise(version: ProtocolVersion) {
    let elicited = Arc::new(Mutex::new(Vec::new()));
    let client = client(version, elicited.clone());
    let (session, child) = connect(&client).await;
    assert_eq!(session.protocol_version(), version);
    assert_eq!(session.server_info().name, mcp_example::NAME);
    assert!(
        session
            .instructions()
            .unwrap_or_default()
            .contains("one of each feature")
    );
    assert!(session.offers("tools") && session.offers("resources") && session.offers("prompts"));
    let stateless = session.era() == Era::Stateless;
    // `ping` on a session, `server/discover` under 2026-07-28 (which has no `ping`).
    session.ping().await.unwrap();

    // Tools.
    let tools = session.list_all_tools().await.unwrap();
    for name in [
        "echo",
        "add",
        "fail",
        "countdown",
        "greet",
        "ask_model",
        "list_roots",
    ] {
        assert!(
            tools.iter().any(|t| t.name == name),
            "{version}: no tool {name}"
        );
    }
    let echo = session
        .call_tool("echo", json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echo.content), "hi");
    assert_ne!(echo.is_error, Some(true));
    let failed = session.call_tool("fail", json!({})).await.unwrap();
    assert_eq!(failed.is_error, Some(true));
    if version >= ProtocolVersion::V2025_06_18 {
        #[derive(serde::Deserialize)]
        struct Sum {
            sum: f64,
        }
        let sum: Sum = session
            .call_tool_structured("add", json!({"a": 2, "b": 3.5}))
            .await
            .unwrap();
        assert_eq!(sum.sum, 5.5);
    } else {
        let added = session
            .call_tool("add", json!({"a": 2, "b": 3.5}))
            .await
            .unwrap();
        assert!(text_of(&added.content).contains("5.5"), "{version}");
    }
    let unknown = session.call_tool("no_such_tool", json!({})).await;
    assert!(
        matches!(&unknown, Err(CallError::Rpc(_)))
            || matches!(&unknown, Ok(r) if r.is_error == Some(true)),
        "{version}: {unknown:?}"
    );

    // Progress and logging.
    session.set_logging_level(LoggingLevel::Info).await.unwrap();
    let mut notifications = session.notifications();
    let (countdown, progress) =
        call_with_progress(&session, "countdown", json!({"steps": 3, "delay_ms": 20})).await;
    assert_eq!(text_of(&countdown.content), "liftoff after 3 steps");
    assert_eq!(progress, vec![1.0, 2.0, 3.0], "{version}");
    let mut logs = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while logs < 3 && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), notifications.recv()).await {
            Ok(Some(ServerNotification::Log(log))) => {
                assert!(log.data.to_string().contains("step"), "{version}: {log:?}");
                logs += 1;
            }
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    assert_eq!(logs, 3, "{version}: log notifications");

    // Sampling, roots and (from 2025-06-18) elicitation through our handlers.
    assert_sampling(&session, version).await;
    let roots = session.call_tool("list_roots", json!({})).await.unwrap();
    assert_eq!(text_of(&roots.content), "file:///tmp/project", "{version}");
    let asked = session.call_tool("greet", json!({})).await.unwrap();
    if version >= ProtocolVersion::V2025_06_18 {
        // 2025-06-18 sends the form without the choice: the model's enum schema does not
        // project onto that revision's `EnumSchema` yet (mcp-types), so only the name is asked.
        let expected = if version >= ProtocolVersion::V2025_11_25 {
            "Bonjour, Ada!"
        } else {
            "Hello, Ada!"
        };
        assert_eq!(text_of(&asked.content), expected, "{version}");
        assert_eq!(
            *elicited.lock().unwrap(),
            vec!["Who is visiting?".to_owned()]
        );
    } else {
        // The revision has no elicitation: the tool reports it cannot ask.
        assert_eq!(asked.is_error, Some(true), "{version}: {asked:?}");
        assert!(elicited.lock().unwrap().is_empty());
    }

    // Resources.
    let resources = session.list_all_resources().await.unwrap();
    assert!(resources.iter().any(|r| r.uri == "example://readme"));
    let read = session.read_resource("example://readme").await.unwrap();
    match read.contents.first() {
        Some(ResourceContentsKind::Text(text)) => assert_eq!(text.text, mcp_example::README),
        other => panic!("{version}: unexpected contents {other:?}"),
    }
    let templates = session.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "example://items/{id}")
    );
    let item = session.read_resource("example://items/7").await.unwrap();
    match item.contents.first() {
        Some(ResourceContentsKind::Text(text)) => {
            let item: serde_json::Value = serde_json::from_str(&text.text).unwrap();
            assert_eq!(item["id"], "7", "{version}");
        }
        other => panic!("{version}: unexpected contents {other:?}"),
    }
    if stateless {
        // No resources/subscribe: a subscriptions/listen stream carries the updates.
        assert!(matches!(
            session.subscribe("example://readme").await,
            Err(CallError::NotInRevision { .. })
        ));
        let filter = SubscriptionFilter {
            resource_subscriptions: Some(vec!["example://readme".into()]),
            ..Default::default()
        };
        let mut updates = session.listen(filter).await.unwrap();
        session.call_tool("touch", json!({})).await.unwrap();
        let updated = resource_update!(updates, "the listen stream");
        assert_eq!(updated, "example://readme");
    } else {
        match session.subscribe("example://readme").await {
            Ok(()) => {
                let mut updates = session.notifications();
                session.call_tool("touch", json!({})).await.unwrap();
                let updated = resource_update!(updates, "the session's notifications");
                assert_eq!(updated, "example://readme");
                session.unsubscribe("example://readme").await.unwrap();
            }
            Err(CallError::MissingCapability { .. }) => {}
            Err(other) => panic!("{version}: subscribe failed: {other}"),
        }
    }

    // Prompts and completion.
    let prompts = session.list_all_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "greeting"));
    let prompt = session
        .get_prompt("greeting", [("name", "Grace")])
        .await
        .unwrap();
    assert!(
        serde_json::to_string(&prompt)
            .unwrap()
            .contains("a short, warm greeting for Grace.")
    );
    let complete: mcp_types::CompleteRequestParams = serde_json::from_value(json!({
        "ref": {"type": "ref/prompt", "name": "greeting"},
        "argument": {"name": "name", "value": "a"}
    }))
    .unwrap();
    match session.complete(complete).await {
        Ok(result) => assert_eq!(result.completion.values, ["Ada", "Alan"]),
        Err(CallError::MissingCapability { .. }) => {}
        Err(other) => panic!("{version}: complete failed: {other}"),
    }

    // A timeout cancels the request and the session stays usable.
    let timed_out = session
        .with_timeout(Some(Duration::from_millis(100)))
        .call_tool("countdown", json!({"steps": 20}))
        .await;
    assert!(
        matches!(timed_out, Err(CallError::Timeout)),
        "{timed_out:?}"
    );
    session.list_tools(None).await.unwrap();

    session.close().await;
    assert!(session.is_closed());
    assert!(matches!(
        session.list_tools(None).await,
        Err(CallError::Closed(_))
    ));
    child.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_feature_on_2024_11_05() {
    exercise(REVISIONS[0]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_feature_on_2025_03_26() {
    exercise(REVISIONS[1]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_feature_on_2025_06_18() {
    exercise(REVISIONS[2]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_feature_on_2025_11_25() {
    exercise(REVISIONS[3]).await;
}

/// The stateless revision: `server/discover`, per-request `_meta`, sampling, roots and
/// elicitation through `input_required` rounds answered by the same handlers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_feature_on_2026_07_28() {
    exercise(ProtocolVersion::V2026_07_28).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_capabilities_are_refused_without_a_round_trip() {
    // A client without handlers declares nothing; the server's requests get -32601 and its
    // tools report that they cannot ask.
    // A stateless server refuses such a call with -32021 instead.
    let client = Client::builder(Implementation::new("bare", "1.0.0"))
        .protocol_version(ProtocolVersion::V2025_11_25)
        .build();
    assert_eq!(
        serde_json::to_value(client.capabilities()).unwrap(),
        json!({})
    );
    let (session, child) = connect(&client).await;
    let sampled = session
        .call_tool("ask_model", json!({"question": "x"}))
        .await
        .unwrap();
    assert_eq!(sampled.is_error, Some(true));
    // `logging/setLevel` exists in every revision; the server declares logging.
    session
        .set_logging_level(LoggingLevel::Debug)
        .await
        .unwrap();
    session.close().await;
    child.shutdown().await.unwrap();
}

fn host_config() -> HostConfig {
    HostConfig::from_json(
        &json!({"mcpServers": {
            "alpha": {"command": SERVER},
            "beta": {"command": SERVER, "env": {"RUST_LOG": "warn"}},
            "remote": {"url": "http://127.0.0.1:9/mcp"}
        }})
        .to_string(),
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_aggregates_routes_and_reports_unreachable_url_entries_clearly() {
    let host = Host::new(
        Client::builder(Implementation::new("host-test", "1.0.0")).build(),
        host_config(),
    );
    let outcomes = host.connect_all().await;
    assert_eq!(outcomes.len(), 3);
    for (name, outcome) in &outcomes {
        match name.as_str() {
            "remote" => {
                // Nothing listens there: the HTTP failure is in the error's chain.
                let error = outcome.as_ref().unwrap_err();
                let mut chain = error.to_string();
                let mut source = std::error::Error::source(error);
                while let Some(cause) = source {
                    chain.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                assert!(chain.contains("HTTP"), "{chain}");
            }
            _ => assert!(outcome.is_ok(), "{name}: {outcome:?}"),
        }
    }
    let tools = host.list_tools().await;
    assert!(tools.failures.is_empty());
    let names: Vec<&str> = tools.items.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"alpha__echo") && names.contains(&"beta__echo"),
        "{names:?}"
    );
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "names collide");
    let echoed = host
        .call_tool("beta__echo", json!({"text": "via beta"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echoed.content), "via beta");
    assert!(matches!(
        host.call_tool("gamma__echo", json!({})).await,
        Err(CallError::NotFound(_))
    ));

    let resources = host.list_resources().await;
    let readme = resources
        .items
        .iter()
        .find(|r| r.server == "alpha" && r.item.uri == "example://readme")
        .unwrap();
    let read = host.read_resource(&readme.name).await.unwrap();
    assert_eq!(read.contents.len(), 1);

    let prompts = host.list_prompts().await;
    assert!(
        prompts
            .items
            .iter()
            .any(|p| p.name == "beta__describe_pixel")
    );
    let prompt = host
        .get_prompt("beta__describe_pixel", Vec::<(String, String)>::new())
        .await
        .unwrap();
    assert!(
        serde_json::to_string(&prompt)
            .unwrap()
            .contains("Describe this image.")
    );
    host.shutdown().await;
    assert_eq!(host.status("alpha").await, Some(ServerStatus::Disconnected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_fails_the_pending_call_promptly_and_the_host_reconnects() {
    let host = Host::new(
        Client::builder(Implementation::new("host-test", "1.0.0")).build(),
        host_config(),
    );
    let session = host.connect("alpha").await.unwrap();
    let pid = host.process_id("alpha").await.expect("a child process");

    let pending = tokio::spawn({
        let session = session.clone();
        async move {
            session
                .with_timeout(Some(Duration::from_secs(30)))
                .call_tool("countdown", json!({"steps": 20}))
                .await
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_secs(5), pending)
        .await
        .expect("the pending call fails promptly")
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    match outcome {
        Err(CallError::Closed(reason)) => assert!(!reason.is_empty()),
        other => panic!("expected a closed error, got {other:?}"),
    }
    assert!(session.is_closed());
    assert_eq!(host.status("alpha").await, Some(ServerStatus::Closed));
    assert!(matches!(
        session.list_tools(None).await,
        Err(CallError::Closed(_))
    ));

    let fresh = host.reconnect("alpha").await.unwrap();
    assert_ne!(host.process_id("alpha").await, Some(pid));
    let echoed = fresh
        .call_tool("echo", json!({"text": "back"}))
        .await
        .unwrap();
    assert_eq!(text_of(&echoed.content), "back");
    assert_eq!(host.status("alpha").await, Some(ServerStatus::Connected));
    host.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_minimum_version_disconnects_with_a_clear_error() {
    // Asking for 2025-03-26 while requiring at least 2025-06-18 cannot succeed: the server
    // answers with what we asked for, which is below our minimum.
    let client = Client::builder(Implementation::new("strict", "1.0.0"))
        .protocol_version(ProtocolVersion::V2025_03_26)
        .min_protocol_version(ProtocolVersion::V2025_06_18)
        .build();
    let (connection, child) = ServerCommand::new(SERVER).spawn().unwrap();
    let error = client.connect(connection).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("2025-03-26"), "{text}");
    assert!(matches!(
        error,
        mcp_client::ConnectError::UnsupportedVersion { .. }
    ));
    let _ = child.shutdown().await;
}
