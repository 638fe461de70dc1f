//! A host over several servers from an `mcpServers` configuration file: connects them all,
//! lists every tool under its collision-free name, and calls one by that name.
//!
//! ```text
//! cargo run -p mcp-client --example host -- servers.json [<server__tool> '<json arguments>']
//! ```
//!
//! `servers.json`, for example two copies of one server:
//!
//! ```json
//! {"mcpServers": {
//!   "one": {"command": "node", "args": ["server.js", "stdio"]},
//!   "two": {"command": "node", "args": ["server.js", "stdio"]}
//! }}
//! ```

use mcp_client::config::HostConfig;
use mcp_client::{Client, Host};
use mcp_types::Implementation;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: host <servers.json> [<server__tool> '<json arguments>']");
        std::process::exit(2);
    };
    let config = HostConfig::from_path(&path)?;
    let client = Client::builder(Implementation::new("host-example", "0.1.0"))
        .on_notification(|notification| eprintln!("notification: {notification:?}"))
        .build();
    let host = Host::new(client, config);

    for (server, outcome) in host.connect_all().await {
        match outcome {
            Ok(session) => println!(
                "{server}: {} (protocol {})",
                session.server_info().name,
                session.protocol_version()
            ),
            Err(error) => println!("{server}: not connected: {error}"),
        }
    }

    let tools = host.list_tools().await;
    for tool in &tools.items {
        println!("{:<40} from {}", tool.name, tool.server);
    }
    for (server, error) in &tools.failures {
        println!("{server}: could not list tools: {error}");
    }

    if let Some(name) = args.next() {
        let arguments: serde_json::Value = match args.next() {
            Some(text) => serde_json::from_str(&text)?,
            None => serde_json::json!({}),
        };
        let result = host.call_tool(&name, arguments).await?;
        println!("{}", serde_json::to_string_pretty(&result)?);
    }

    host.shutdown().await;
    Ok(())
}
