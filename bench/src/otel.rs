//! Telemetry in the benchmark's SDK echo servers (feature `otel`, `scripts/bench --otel`):
//! `MCP_BENCH_OTEL` picks the mode before the server starts.
//!
//! * unset or `off`: nothing installed (the feature's cost alone: a branch per message);
//! * `on`: the server's telemetry installed on the OpenTelemetry SDK, every span sampled,
//!   processed by the SDK's batch processor (its own thread, its bounded queue) and handed to
//!   an exporter that drops it, the duration metrics aggregated and collected by the SDK's
//!   periodic reader (its own thread) for an exporter that drops them (`otel/discard.rs`):
//!   what a deployment pays, minus the network;
//! * `sampled-out`: the same with a sampler that samples nothing (spans are not recorded;
//!   the trace context is still read and the metrics recorded).
//!
//! This file is also compiled into `sdk-echo-stdio` (bench/stdio), which does not depend on
//! this crate.

use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};

// The providers and their exporters that drop everything, shared with the conformance fixtures.
#[path = "otel/discard.rs"]
mod discard;

/// The variable that picks the mode.
pub const VARIABLE: &str = "MCP_BENCH_OTEL";

/// What `MCP_BENCH_OTEL` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Nothing installed.
    Off,
    /// Installed, every span sampled.
    On,
    /// Installed, no span sampled.
    SampledOut,
}

impl Mode {
    /// The mode `value` names (`off`, `on`, `sampled-out`; empty is `off`).
    pub fn parse(value: &str) -> Result<Mode, String> {
        match value {
            "" | "off" => Ok(Mode::Off),
            "on" => Ok(Mode::On),
            "sampled-out" => Ok(Mode::SampledOut),
            other => Err(format!(
                "{VARIABLE}={other}: give `off`, `on` or `sampled-out`"
            )),
        }
    }

    /// The mode the environment asks for.
    pub fn from_env() -> Result<Mode, String> {
        Mode::parse(&std::env::var(VARIABLE).unwrap_or_default())
    }
}

/// The providers of installed telemetry; they live as long as this.
#[derive(Debug)]
pub struct Installed {
    _tracers: SdkTracerProvider,
    _meters: SdkMeterProvider,
}

/// Installs the server's telemetry as `mode` says (nothing for [`Mode::Off`]).
pub fn install(mode: Mode) -> Option<Installed> {
    let sampler = match mode {
        Mode::Off => return None,
        Mode::On => Sampler::AlwaysOn,
        Mode::SampledOut => Sampler::AlwaysOff,
    };
    let (tracers, meters, _spans) = discard::providers(Some(sampler), None);
    let _ = mcp_server::otel::install(mcp_server::otel::Telemetry::new(&tracers, &meters));
    Some(Installed {
        _tracers: tracers,
        _meters: meters,
    })
}

#[cfg(test)]
mod tests {
    use super::Mode;

    #[test]
    fn modes_are_named() {
        assert_eq!(Mode::parse(""), Ok(Mode::Off));
        assert_eq!(Mode::parse("off"), Ok(Mode::Off));
        assert_eq!(Mode::parse("on"), Ok(Mode::On));
        assert_eq!(Mode::parse("sampled-out"), Ok(Mode::SampledOut));
        assert!(Mode::parse("yes").is_err());
    }
}
