//! Starts a stdio server, lists its tools and calls one.
//!
//! ```text
//! cargo run -p mcp-client --example stdio_call -- <command> [args...] -- <tool> '<json arguments>'
//! cargo run -p mcp-client --example stdio_call -- node server.js -- echo '{"message": "hi"}'
//! ```

use mcp_client::Client;
use mcp_transport_stdio::ServerCommand;
use mcp_types::{ContentBlock, Implementation};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let split = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let (command, rest) = args.split_at(split);
    let Some((program, program_args)) = command.split_first() else {
        eprintln!("usage: stdio_call <command> [args...] -- <tool> '<json arguments>'");
        std::process::exit(2);
    };
    let tool = rest.get(1);
    let arguments: serde_json::Value = match rest.get(2) {
        Some(text) => serde_json::from_str(text)?,
        None => serde_json::json!({}),
    };

    let (connection, child) = ServerCommand::new(program).args(program_args).spawn()?;
    let client = Client::builder(Implementation::new("stdio-call-example", "0.1.0")).build();
    let session = client.connect(connection).await?;
    println!(
        "connected to {} {} (protocol {})",
        session.server_info().name,
        session.server_info().version,
        session.protocol_version()
    );

    for tool in session.list_all_tools().await? {
        println!("- {}: {}", tool.name, tool.description.unwrap_or_default());
    }
    if let Some(tool) = tool {
        let result = session.call_tool(tool.as_str(), arguments).await?;
        for block in &result.content {
            match block {
                ContentBlock::Text(text) => println!("{}", text.text),
                other => println!("{}", serde_json::to_string(other)?),
            }
        }
        if result.is_error == Some(true) {
            eprintln!("the tool reported an error");
        }
    }

    session.close().await;
    child.shutdown().await?;
    Ok(())
}
