//! OpenTelemetry SDK providers that cost what a deployment's do, minus the network: spans
//! sampled as the caller says, processed by the SDK's batch processor (its own thread, its
//! bounded queue) and handed to an exporter that counts and drops them; the duration metrics
//! aggregated and collected by the SDK's periodic reader (its own thread) for an exporter that
//! drops them.
//!
//! One file for the benchmark's SDK echo servers (`bench/src/otel.rs`) and the conformance
//! fixtures (`crates/mcp-conformance/src/telemetry.rs`), compiled into each with `#[path]`: the
//! benchmark's stdio servers depend on nothing but mcp-server and the OpenTelemetry crates.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use opentelemetry::propagation::TextMapCompositePropagator;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::exporter::PushMetricExporter;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider, Temporality};
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider, SpanData, SpanExporter};

/// Counts the spans exported and drops them; drops the metrics.
#[derive(Debug, Clone, Default)]
struct Discard {
    spans: Arc<AtomicU64>,
    /// With `Some(variable)`: one line on stderr at the first spans exported, so a run's log
    /// shows the instrumented path ran.
    announce: Option<&'static str>,
}

impl SpanExporter for Discard {
    fn export(
        &self,
        batch: Vec<SpanData>,
    ) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        let before = self.spans.fetch_add(batch.len() as u64, Ordering::Relaxed);
        if let Some(variable) = self.announce {
            if before == 0 && !batch.is_empty() {
                eprintln!("{variable}: telemetry on, spans exported");
            }
        }
        std::future::ready(Ok(()))
    }
}

impl PushMetricExporter for Discard {
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

/// The tracer and meter providers, spans sampled by `sampler` (`None`: the SDK's default,
/// `OTEL_TRACES_SAMPLER` or every span whose parent is), with the W3C propagators (trace
/// context, baggage) installed globally; and the count of the spans exported so far. With
/// `announce` (the variable that turned telemetry on), the first spans exported are announced
/// on stderr.
pub fn providers(
    sampler: Option<Sampler>,
    announce: Option<&'static str>,
) -> (SdkTracerProvider, SdkMeterProvider, Arc<AtomicU64>) {
    let exporter = Discard {
        spans: Arc::default(),
        announce,
    };
    let spans = Arc::clone(&exporter.spans);
    let mut tracers = SdkTracerProvider::builder().with_batch_exporter(exporter);
    if let Some(sampler) = sampler {
        tracers = tracers.with_sampler(sampler);
    }
    let tracers = tracers.build();
    let meters = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(Discard::default()).build())
        .build();
    opentelemetry::global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]));
    (tracers, meters, spans)
}
