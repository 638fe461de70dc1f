//! Telemetry in the fixtures (feature `otel`): with `MCP_CONFORMANCE_OTEL=on`, both fixtures
//! install the server's and the client's OpenTelemetry telemetry before they start, so the
//! suite runs through the instrumented path (spans made, trace context read from and written
//! to `_meta`, durations recorded). Spans are sampled, processed by the SDK's batch processor
//! and handed to an exporter that counts and discards them; metrics are aggregated and
//! collected by the SDK's periodic reader for an exporter that drops them.
//! `scripts/conformance --otel` builds and runs the fixtures so.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

// The providers and their exporters that drop everything, shared with the benchmark's servers.
#[path = "../../../bench/src/otel/discard.rs"]
mod discard;

/// The variable that turns the fixtures' telemetry on (`on`); unset or `off`, it stays off.
pub const VARIABLE: &str = "MCP_CONFORMANCE_OTEL";

/// The providers the installed telemetry records into; they live as long as this.
#[derive(Debug)]
pub struct Installed {
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
    spans: Arc<AtomicU64>,
}

impl Installed {
    /// The spans exported so far.
    pub fn spans(&self) -> u64 {
        self.spans.load(Ordering::Relaxed)
    }

    /// Exports what the batch processor holds and stops (on a blocking thread: the
    /// processor's shutdown waits for its own thread), then logs how many spans were exported.
    pub async fn shutdown_blocking(self) {
        let spans = Arc::clone(&self.spans);
        let _ = tokio::task::spawn_blocking(move || {
            let _ = self.tracers.shutdown();
            let _ = self.meters.shutdown();
        })
        .await;
        tracing::info!(
            spans = spans.load(Ordering::Relaxed),
            "telemetry: spans exported"
        );
    }
}

/// Installs the server's and the client's telemetry when `MCP_CONFORMANCE_OTEL` is `on`; an
/// error for a value that is neither `on` nor `off`.
pub fn install_from_env() -> Result<Option<Installed>, String> {
    match std::env::var(VARIABLE).as_deref() {
        Err(_) | Ok("" | "off") => Ok(None),
        Ok("on") => Ok(Some(install())),
        Ok(other) => Err(format!("{VARIABLE}={other}: give `on` or `off`")),
    }
}

/// Installs the server's and the client's telemetry, with the W3C propagators.
pub fn install() -> Installed {
    let (tracers, meters, spans) = discard::providers(None, Some(VARIABLE));
    let _ = mcp_server::otel::install(mcp_server::otel::Telemetry::new(&tracers, &meters));
    let _ = mcp_client::otel::install(mcp_client::otel::Telemetry::new(&tracers, &meters));
    Installed {
        tracers,
        meters,
        spans,
    }
}
