//! A real OTLP/gRPC trace receiver for the tests: the OpenTelemetry collector's trace service
//! (from `opentelemetry-proto`) served by tonic on a loopback port, keeping every span it is sent
//! with the `service.instance.id` of the resource that sent it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::common::v1::KeyValue;

/// One span as received.
#[derive(Debug, Clone)]
pub struct Received {
    /// The `service.instance.id` of the sender.
    pub instance: String,
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root.
    pub parent_id: String,
    pub attributes: HashMap<String, String>,
}

#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<Received>>>,
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(&self, req: tonic::Request<ExportTraceServiceRequest>) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let mut spans = self.spans.lock().unwrap();
        for rs in req.into_inner().resource_spans {
            let resource = rs.resource.map(|r| attributes(&r.attributes)).unwrap_or_default();
            for ss in rs.scope_spans {
                for s in ss.spans {
                    spans.push(Received {
                        instance: resource.get("service.instance.id").cloned().unwrap_or_default(),
                        service: resource.get("service.name").cloned().unwrap_or_default(),
                        name: s.name,
                        trace_id: hex(&s.trace_id),
                        span_id: hex(&s.span_id),
                        parent_id: hex(&s.parent_span_id),
                        attributes: attributes(&s.attributes),
                    });
                }
            }
        }
        Ok(tonic::Response::new(ExportTraceServiceResponse { partial_success: None }))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(kvs: &[KeyValue]) -> HashMap<String, String> {
    kvs.iter()
        .map(|kv| {
            let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(AnyValue::StringValue(s)) => s.clone(),
                Some(AnyValue::IntValue(i)) => i.to_string(),
                Some(AnyValue::DoubleValue(d)) => d.to_string(),
                Some(AnyValue::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), value)
        })
        .collect()
}

pub struct OtlpReceiver {
    /// `127.0.0.1:PORT`.
    pub endpoint: String,
    collector: Collector,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl OtlpReceiver {
    pub async fn start() -> OtlpReceiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = listener.local_addr().unwrap().to_string();
        let collector = Collector::default();
        let service = TraceServiceServer::new(collector.clone());
        let task = tokio::spawn(async move {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            let _ = tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming).await;
        });
        OtlpReceiver { endpoint, collector, task }
    }

    /// A `TracingConfiguration` file in `dir` pointing at this receiver.
    pub fn config_file(&self, dir: &std::path::Path, per_million: u32) -> std::path::PathBuf {
        let path = dir.join("tracing.yaml");
        let text = format!("apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: {}\nsamplingRatePerMillion: {per_million}\n", self.endpoint);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Received> {
        self.collector.spans.lock().unwrap().clone()
    }
}
