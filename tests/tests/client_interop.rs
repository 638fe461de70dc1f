//! The client against the reference servers from npm (pinned in `tests/interop/package.json`,
//! installed by `scripts/test`): `@modelcontextprotocol/server-everything` and
//! `@modelcontextprotocol/server-filesystem`, both over stdio.
//!
//! These tests fail, never skip, when `node` or the modules are missing.

use crate::client_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client_support::call_with_progress;
use mcp_client::{
    CallError, Client, ClientSession, ElicitationAnswer, ElicitationRequest, Roots,
    ServerNotification,
};
use mcp_tests::content::{model_reply, text_of};
use mcp_tests::interop::reference_server;
use mcp_transport_stdio::{ChildProcess, ServerCommand};
use mcp_types::{Implementation, LoggingLevel};
use serde_json::json;

async fn spawn(client: &Client, args: Vec<String>) -> (ClientSession, ChildProcess) {
    let (connection, child) = ServerCommand::new("node")
        .args(args)
        .spawn()
        .expect("start node");
    let session = client.connect(connection).await.expect("connect");
    (session, child)
}

async fn wait_for_tool(session: &ClientSession, name: &str) -> Vec<mcp_types::Tool> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let tools = session.list_all_tools().await.unwrap();
        if tools.iter().any(|t| t.name == name) || Instant::now() > deadline {
            return tools;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_server_from_npm() {
    let script = reference_server("server-everything");
    let sampled = Arc::new(Mutex::new(Vec::new()));
    let seen_samples = sampled.clone();
    let root: mcp_types::Root =
        serde_json::from_value(json!({"uri": "file:///tmp/interop-root", "name": "interop"}))
            .unwrap();
    let client = Client::builder(Implementation::new("mcp-rs-interop", "1.0.0"))
        .on_sample(move |request: mcp_types::CreateMessageRequestParams| {
            let seen = seen_samples.clone();
            async move {
                seen.lock().unwrap().push(request.messages.len());
                Ok(model_reply("test-model", "a sampled answer"))
            }
        })
        .on_elicit(|request: ElicitationRequest| async move {
            match request {
                ElicitationRequest::Form { schema, .. } => {
                    assert!(schema.fields().len() > 5);
                    let answer = json!({"name": "Ada Lovelace", "email": "ada@example.com"});
                    Ok(ElicitationAnswer::Accept(
                        answer.as_object().unwrap().clone(),
                    ))
                }
                _ => Ok(ElicitationAnswer::Decline),
            }
        })
        .roots(Roots::new(vec![root]))
        .build();
    let (session, child) = spawn(&client, vec![script.display().to_string(), "stdio".into()]).await;
    assert!(
        session.server_info().name.contains("everything"),
        "{:?}",
        session.server_info()
    );

    // Tools (the elicitation tool is registered once the server knows our capabilities).
    let tools = wait_for_tool(&session, "trigger-elicitation-request").await;
    for name in [
        "echo",
        "get-sum",
        "trigger-long-running-operation",
        "trigger-sampling-request",
        "trigger-elicitation-request",
        "get-structured-content",
    ] {
        assert!(tools.iter().any(|t| t.name == name), "no tool {name}");
    }
    let echo = session
        .call_tool("echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert!(text_of(&echo.content).contains("hello"));
    let sum = session
        .call_tool("get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(text_of(&sum.content).contains('5'), "{sum:?}");
    // Its structuredContent is validated against the listed outputSchema.
    let weather = session
        .call_tool("get-structured-content", json!({"location": "New York"}))
        .await
        .unwrap();
    assert!(weather.structured_content.is_some());

    // Progress.
    let (long, progress) = call_with_progress(
        &session,
        "trigger-long-running-operation",
        json!({"duration": 1, "steps": 4}),
    )
    .await;
    assert!(text_of(&long.content).contains("completed"));
    assert_eq!(progress, vec![1.0, 2.0, 3.0, 4.0]);

    // Sampling and elicitation requests from the server.
    let sampling = session
        .call_tool("trigger-sampling-request", json!({"prompt": "hi"}))
        .await
        .unwrap();
    assert!(
        serde_json::to_string(&sampling)
            .unwrap()
            .contains("a sampled answer")
    );
    assert_eq!(*sampled.lock().unwrap(), vec![1]);
    let elicited = session
        .call_tool("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    let text = text_of(&elicited.content);
    assert!(text.contains("Name: Ada Lovelace"), "{text}");
    // Left-out fields were filled from the schema's defaults.
    assert!(text.contains("Favorite Integer: 42"), "{text}");

    // Roots: the server asks for them shortly after initialization.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let roots = session
            .call_tool("get-roots-list", json!({}))
            .await
            .unwrap();
        if text_of(&roots.content).contains("file:///tmp/interop-root") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "roots never reached the server: {roots:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Logging.
    session
        .set_logging_level(LoggingLevel::Debug)
        .await
        .unwrap();
    let mut notifications = session.notifications();
    session
        .call_tool("toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    let log = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match notifications.recv().await {
                Some(ServerNotification::Log(log)) => break log,
                Some(_) => continue,
                None => panic!("session closed"),
            }
        }
    })
    .await
    .expect("a log notification");
    assert!(!log.data.is_null());
    session
        .call_tool("toggle-simulated-logging", json!({}))
        .await
        .unwrap();

    // Resources.
    let resources = session.list_all_resources().await.unwrap();
    assert!(!resources.is_empty());
    let first = &resources[0];
    let read = session.read_resource(first.uri.clone()).await.unwrap();
    assert!(!read.contents.is_empty(), "{read:?}");
    let templates = session.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template.contains("dynamic/text"))
    );
    let dynamic = session
        .read_resource("demo://resource/dynamic/text/1")
        .await
        .unwrap();
    assert!(!dynamic.contents.is_empty());

    // Prompts.
    let prompts = session.list_all_prompts().await.unwrap();
    assert!(prompts.iter().any(|p| p.name == "simple-prompt"));
    let simple = session
        .get_prompt("simple-prompt", Vec::<(String, String)>::new())
        .await
        .unwrap();
    assert!(!simple.messages.is_empty());
    let args = session
        .get_prompt("args-prompt", [("city", "Lisbon")])
        .await
        .unwrap();
    assert!(serde_json::to_string(&args).unwrap().contains("Lisbon"));

    // Unknown tools are errors from the server, never a hang.
    let unknown = session.call_tool("no-such-tool", json!({})).await;
    assert!(
        matches!(&unknown, Err(CallError::Rpc(_)))
            || matches!(&unknown, Ok(r) if r.is_error == Some(true)),
        "{unknown:?}"
    );

    session.close().await;
    child.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_server_from_npm() {
    let script = reference_server("server-filesystem");
    let dir = std::env::temp_dir().join(format!("mcp-client-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.canonicalize().unwrap();
    std::fs::write(dir.join("hello.txt"), "Hello from the filesystem\n").unwrap();

    let client = Client::builder(Implementation::new("mcp-rs-interop", "1.0.0")).build();
    let (session, child) = spawn(
        &client,
        vec![script.display().to_string(), dir.display().to_string()],
    )
    .await;
    let tools = session.list_all_tools().await.unwrap();
    for name in ["read_text_file", "write_file", "list_directory"] {
        assert!(tools.iter().any(|t| t.name == name), "no tool {name}");
    }
    let read = session
        .call_tool("read_text_file", json!({"path": dir.join("hello.txt")}))
        .await
        .unwrap();
    assert_ne!(read.is_error, Some(true), "{read:?}");
    assert!(text_of(&read.content).contains("Hello from the filesystem"));

    let written = session
        .call_tool(
            "write_file",
            json!({"path": dir.join("new.txt"), "content": "written by the Rust client"}),
        )
        .await
        .unwrap();
    assert_ne!(written.is_error, Some(true), "{written:?}");
    assert_eq!(
        std::fs::read_to_string(dir.join("new.txt")).unwrap(),
        "written by the Rust client"
    );
    let listing = session
        .call_tool("list_directory", json!({"path": dir}))
        .await
        .unwrap();
    let text = text_of(&listing.content);
    assert!(
        text.contains("hello.txt") && text.contains("new.txt"),
        "{text}"
    );

    // Outside the allowed folder: the tool fails, the session stays up.
    let outside = session
        .call_tool("read_text_file", json!({"path": "/etc/hostname"}))
        .await
        .unwrap();
    assert_eq!(outside.is_error, Some(true));
    session.ping().await.unwrap();

    session.close().await;
    child.shutdown().await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}
