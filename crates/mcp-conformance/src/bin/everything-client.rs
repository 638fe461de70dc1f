//! `everything-client`: the client the conformance suite runs for each client scenario. It
//! takes the server URL as its last argument and reads `MCP_CONFORMANCE_SCENARIO`,
//! `MCP_CONFORMANCE_PROTOCOL_VERSION` and `MCP_CONFORMANCE_CONTEXT`. Logs go to stderr.

use std::process::ExitCode;

use mcp_conformance::client::{self, Run};

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let run = match Run::from_env() {
        Ok(run) => run,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::from(2);
        }
    };
    // With the `otel` feature and `MCP_CONFORMANCE_OTEL=on`: through the instrumented path.
    #[cfg(feature = "otel")]
    let telemetry = match mcp_conformance::telemetry::install_from_env() {
        Ok(telemetry) => telemetry,
        Err(e) => {
            tracing::error!(error = %e, "cannot start");
            return ExitCode::from(2);
        }
    };
    let scenario = run.scenario.clone();
    let ran = tokio::time::timeout(std::time::Duration::from_secs(25), client::run(run)).await;
    #[cfg(feature = "otel")]
    if let Some(telemetry) = telemetry {
        telemetry.shutdown_blocking().await;
    }
    match ran {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            tracing::error!(scenario, error = %e, "scenario failed");
            ExitCode::FAILURE
        }
        Err(_) => {
            tracing::error!(scenario, "scenario timed out");
            ExitCode::FAILURE
        }
    }
}
