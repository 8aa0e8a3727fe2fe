//! kube-apiserver's watch figures: the events sent to watchers and their sizes, by resource.

use prometheus::{Histogram, HistogramVec, IntCounter, IntCounterVec, Registry};

use super::family::{self, Level};

pub struct Watch {
    events: IntCounterVec,
    sizes: HistogramVec,
}

impl Watch {
    pub(super) fn new(r: &Registry) -> Watch {
        let labels = &["group", "version", "resource"];
        Watch {
            events: family::counter(r, "apiserver_watch_events_total", Level::Alpha, "Number of events sent in watch clients", labels),
            sizes: family::histogram(r, "apiserver_watch_events_sizes", Level::Alpha, "Watch event size distribution in bytes", labels, &family::exponential(1024.0, 2.0, 8)),
        }
    }

    /// The counters of one watch's resource, looked up once for all its events.
    pub fn of(&self, group: &str, version: &str, resource: &str) -> WatchCounters {
        let labels = [group, version, resource];
        WatchCounters { events: self.events.with_label_values(&labels), sizes: self.sizes.with_label_values(&labels) }
    }
}

/// What one watch counts its events in.
pub struct WatchCounters {
    events: IntCounter,
    sizes: Histogram,
}

impl WatchCounters {
    /// Counts one event of `bytes` sent.
    pub fn sent(&self, bytes: usize) {
        self.events.inc();
        self.sizes.observe(bytes as f64);
    }
}
