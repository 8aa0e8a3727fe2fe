//! Traces (OpenTelemetry), as kube-apiserver's `--tracing-config-file` turns them on: requests
//! sampled at the configured rate, or as a privileged client's W3C `traceparent` asks, become one
//! trace each, exported over OTLP/gRPC. A write's trace continues on every replica its entry
//! reaches (see `raft_store::trace`).
//!
//! - `config`: the `TracingConfiguration` file.
//! - `export`: the tracer provider and the bounded queue in front of the exporter.
//! - `request`: a request's own spans, named as kube-apiserver names them.

mod config;
mod export;
mod request;

pub use config::TracingConfig;
pub use export::Exporting;
pub use request::{handler_span, RequestTrace};
