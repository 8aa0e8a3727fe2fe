//! How a metric is declared: its name, the stability level kube-apiserver prints before its help
//! text, its labels and buckets, registered once in the server's registry.

use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, IntGaugeVec, Opts, Registry};

/// The stability level kube-apiserver gives a metric; `None` for etcd's figures and the
/// process collector's, which carry no level.
#[derive(Debug, Clone, Copy)]
pub(super) enum Level {
    Alpha,
    Beta,
    Stable,
    None,
}

/// The help text as the metric's owner prints it.
pub(super) fn help(level: Level, text: &str) -> String {
    match level {
        Level::Alpha => format!("[ALPHA] {text}"),
        Level::Beta => format!("[BETA] {text}"),
        Level::Stable => format!("[STABLE] {text}"),
        Level::None => text.to_string(),
    }
}

/// Registers `metric`: the names are this server's own constants, so a clash is a bug.
fn registered<M: prometheus::core::Collector + Clone + 'static>(registry: &Registry, metric: M) -> M {
    registry.register(Box::new(metric.clone())).expect("each metric is declared once");
    metric
}

pub(super) fn counter(registry: &Registry, name: &str, level: Level, text: &str, labels: &[&str]) -> IntCounterVec {
    let metric = IntCounterVec::new(Opts::new(name, help(level, text)), labels).expect("a valid counter");
    registered(registry, metric)
}

pub(super) fn gauge(registry: &Registry, name: &str, level: Level, text: &str, labels: &[&str]) -> IntGaugeVec {
    let metric = IntGaugeVec::new(Opts::new(name, help(level, text)), labels).expect("a valid gauge");
    registered(registry, metric)
}

/// A gauge without labels.
pub(super) fn single_gauge(registry: &Registry, name: &str, level: Level, text: &str) -> prometheus::IntGauge {
    gauge(registry, name, level, text, &[]).with_label_values(&[] as &[&str])
}

/// A counter without labels.
pub(super) fn single_counter(registry: &Registry, name: &str, level: Level, text: &str) -> prometheus::IntCounter {
    counter(registry, name, level, text, &[]).with_label_values(&[] as &[&str])
}

/// A gauge whose values are not whole numbers (a time stamp).
pub(super) fn float_gauge(registry: &Registry, name: &str, level: Level, text: &str, labels: &[&str]) -> prometheus::GaugeVec {
    let metric = prometheus::GaugeVec::new(Opts::new(name, help(level, text)), labels).expect("a valid gauge");
    registered(registry, metric)
}

pub(super) fn histogram(registry: &Registry, name: &str, level: Level, text: &str, labels: &[&str], buckets: &[f64]) -> HistogramVec {
    let metric = HistogramVec::new(HistogramOpts::new(name, help(level, text)).buckets(buckets.to_vec()), labels).expect("a valid histogram");
    registered(registry, metric)
}

/// `count` buckets from `start`, each `factor` times the one before (Prometheus' exponential
/// buckets, which kube-apiserver and etcd declare theirs with).
pub(super) fn exponential(start: f64, factor: f64, count: usize) -> Vec<f64> {
    std::iter::successors(Some(start), |b| Some(b * factor)).take(count).collect()
}

/// One labelled series of a histogram kept elsewhere: counts cumulative per bound.
pub(super) struct Series<'a> {
    pub labels: Vec<(&'a str, String)>,
    pub buckets: Vec<(f64, u64)>,
    pub count: u64,
    pub sum: f64,
}

/// A histogram family built from counts kept elsewhere.
pub(super) fn histogram_family(name: &str, level: Level, text: &str, series: &[Series]) -> prometheus::proto::MetricFamily {
    use prometheus::proto;
    let metric = |s: &Series| {
        let mut histogram = proto::Histogram::default();
        histogram.set_sample_count(s.count);
        histogram.set_sample_sum(s.sum);
        histogram.set_bucket(
            s.buckets
                .iter()
                .map(|(bound, n)| {
                    let mut b = proto::Bucket::default();
                    b.set_upper_bound(*bound);
                    b.set_cumulative_count(*n);
                    b
                })
                .collect(),
        );
        let mut metric = proto::Metric::default();
        metric.set_label(
            s.labels
                .iter()
                .map(|(name, value)| {
                    let mut pair = proto::LabelPair::default();
                    pair.set_name(name.to_string());
                    pair.set_value(value.clone());
                    pair
                })
                .collect(),
        );
        metric.set_histogram(histogram);
        metric
    };
    let mut family = proto::MetricFamily::default();
    family.set_name(name.to_string());
    family.set_help(help(level, text));
    family.set_field_type(proto::MetricType::HISTOGRAM);
    family.set_metric(series.iter().map(metric).collect());
    family
}
