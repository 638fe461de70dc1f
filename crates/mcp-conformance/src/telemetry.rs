//! Telemetry in the fixtures (feature `otel`): with `MCP_CONFORMANCE_OTEL=on`, both fixtures
//! install the server's and the client's OpenTelemetry telemetry before they start, so the
//! suite runs through the instrumented path (spans made, trace context read from and written
//! to `_meta`, durations recorded). Spans are sampled, processed by the SDK's batch processor
//! and handed to an exporter that counts and discards them; metrics are aggregated and
//! collected by the SDK's periodic reader for an exporter that drops them.
//! `scripts/conformance --otel` builds and runs the fixtures so.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};

/// The variable that turns the fixtures' telemetry on (`on`); unset or `off`, it stays off.
pub const VARIABLE: &str = "MCP_CONFORMANCE_OTEL";

/// Counts the spans exported, and drops them.
#[derive(Debug, Clone, Default)]
struct Counting(Arc<AtomicU64>);

impl SpanExporter for Counting {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let before = self.0.fetch_add(batch.len() as u64, Ordering::Relaxed);
        if before == 0 && !batch.is_empty() {
            // One line, so a run's log shows the instrumented path ran.
            eprintln!("{VARIABLE}: telemetry on, spans exported");
        }
        std::future::ready(Ok(()))
    }
}

impl PushMetricExporter for Counting {
    fn export(
        &self,
        _metrics: &ResourceMetrics,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        std::future::ready(Ok(()))
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
        Ok(())
    }

    fn temporality(&self) -> Temporality {
        Temporality::Cumulative
    }
}

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
    let exporter = Counting::default();
    let spans = Arc::clone(&exporter.0);
    let tracers = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build();
    let meters = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(Counting::default()).build())
        .build();
    opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]));
    let _ = mcp_server::otel::install(mcp_server::otel::Telemetry::new(&tracers, &meters));
    let _ = mcp_client::otel::install(mcp_client::otel::Telemetry::new(&tracers, &meters));
    Installed {
        tracers,
        meters,
        spans,
    }
}
