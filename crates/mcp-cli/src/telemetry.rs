//! OpenTelemetry export of the command's MCP spans and metrics (feature `otel`, see
//! `docs/telemetry.md`): on when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces endpoint
//! variable) is set, for `serve`, `proxy` and the client commands alike; `proxy` also records
//! what it forwards (`mcp_cli::proxy_otel`).
//!
//! OTLP over HTTP, configured by the standard variables, which the exporter and the SDK read
//! themselves: `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf`, the default, or `http/json`),
//! `OTEL_SERVICE_NAME` (`mcp` when unset), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`
//! and `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*` (the bounded batch queue),
//! `OTEL_METRIC_EXPORT_INTERVAL`. The exporter's HTTP client is hyper, already in the command
//! for the Streamable HTTP transport, so no second HTTP or TLS stack comes with it (the
//! exporter sends over plain HTTP: a collector beside the process, as usual). Nothing is
//! written to stdout, which a stdio server keeps for MCP messages: the SDK's own diagnostics go
//! through `tracing`, to stderr.

use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::metrics::periodic_reader_with_async_runtime::PeriodicReader;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::runtime::Tokio;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;

/// The variables that turn export on.
const ENDPOINT_VARIABLES: &[&str] = &[
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
];

/// The providers export goes through; [`Exporting::shutdown`] flushes them.
pub struct Exporting {
    tracers: SdkTracerProvider,
    meters: SdkMeterProvider,
}

/// Whether the environment asks for export.
fn requested(var: impl Fn(&str) -> Option<String>) -> bool {
    ENDPOINT_VARIABLES
        .iter()
        .any(|name| var(name).is_some_and(|v| !v.trim().is_empty()))
}

/// Starts export when the environment asks for it, and turns the server's and the client's
/// telemetry on. Must run inside the Tokio runtime (the batch processor and the periodic
/// reader are tasks of it). A configuration the exporter refuses is reported on stderr, and the
/// command runs without export.
pub fn start() -> Option<Exporting> {
    if !requested(|name| std::env::var(name).ok()) {
        return None;
    }
    let spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build();
    let metrics = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .build();
    let (spans, metrics) = match (spans, metrics) {
        (Ok(spans), Ok(metrics)) => (spans, metrics),
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!(error = %e, "OpenTelemetry export is off");
            return None;
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("mcp");
    }
    let resource = resource.build();
    // The batch processor's queue is bounded (`OTEL_BSP_MAX_QUEUE_SIZE`, 2048 by default):
    // spans beyond it are dropped, never buffered without limit.
    let tracers = SdkTracerProvider::builder()
        .with_span_processor(BatchSpanProcessor::builder(spans, Tokio).build())
        .with_resource(resource.clone())
        .build();
    let meters = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics, Tokio).build())
        .with_resource(resource)
        .build();
    opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]));
    opentelemetry::global::set_tracer_provider(tracers.clone());
    opentelemetry::global::set_meter_provider(meters.clone());
    let _ = mcp_server::otel::install(mcp_server::otel::Telemetry::new(&tracers, &meters));
    let _ = mcp_client::otel::install(mcp_client::otel::Telemetry::new(&tracers, &meters));
    let _ = mcp_cli::proxy_otel::install(&tracers, &meters);
    Some(Exporting { tracers, meters })
}

impl Exporting {
    /// Exports what is left and stops. The providers' shutdown waits for their tasks on this
    /// runtime, so it runs on a blocking thread.
    pub async fn shutdown(self) {
        let done = tokio::task::spawn_blocking(move || {
            if let Err(e) = self.tracers.shutdown() {
                tracing::warn!(error = %e, "exporting the last spans failed");
            }
            if let Err(e) = self.meters.shutdown() {
                tracing::warn!(error = %e, "exporting the last metrics failed");
            }
        });
        let _ = done.await;
    }
}

#[cfg(test)]
mod tests {
    use super::requested;

    #[test]
    fn an_endpoint_turns_export_on() {
        assert!(!requested(|_| None));
        assert!(!requested(|_| Some(" ".to_owned())));
        assert!(requested(|name| {
            (name == "OTEL_EXPORTER_OTLP_ENDPOINT").then(|| "http://localhost:4318".to_owned())
        }));
        assert!(requested(|name| {
            (name == "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .then(|| "http://localhost:4318/v1/traces".to_owned())
        }));
    }
}
