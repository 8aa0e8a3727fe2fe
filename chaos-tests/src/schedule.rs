//! The fault schedule: quiet, inject, hold, heal, then wait for the cluster to take a write
//! again (the recovery time) and for every node to be ready. Prints progress as it goes.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::PostParams;
use kube::Api;
use rand::rngs::StdRng;

use crate::cluster::Cluster;
use crate::faults::{self, Fault};
use crate::history::{FaultRecord, Micros, Outcome};
use crate::record::Recorder;
use crate::workload::configmap;

/// How long a healed cluster may take to accept a write and be ready again.
const RECOVERY_LIMIT: Duration = Duration::from_secs(60);

pub struct Schedule {
    pub faults: Vec<Fault>,
    pub duration: Duration,
    pub hold: Duration,
    pub quiet: Duration,
}

/// Runs faults in turn until `duration` has passed; returns what happened.
pub async fn run(cluster: &mut Cluster, rec: &Arc<Recorder>, plan: &Schedule, rng: &mut StdRng) -> Result<Vec<FaultRecord>> {
    let probes: Api<ConfigMap> = Api::namespaced(cluster.client(None, Some(Duration::from_secs(2))).await?, "default");
    let started = rec.now();
    let mut records = Vec::new();
    let mut probe = 0u64;
    for fault in plan.faults.iter().cycle() {
        if rec.now() - started > plan.duration.as_micros() as Micros {
            break;
        }
        tokio::time::sleep(plan.quiet).await;
        let start = rec.now();
        let mut active = faults::inject(cluster, rec, *fault, rng).await?;
        progress(rec, &format!("inject {} on {:?}", fault.name(), active.nodes));
        tokio::time::sleep(plan.hold).await;
        faults::heal(cluster, &mut active).await?;
        let heal = rec.now();
        let recovered = recover(rec, &probes, &mut probe).await;
        progress(
            rec,
            &format!(
                "healed {}; {}",
                fault.name(),
                match recovered {
                    Some(t) => format!("writes again after {} ms", (t - heal) / 1000),
                    None => "no write accepted yet".into(),
                }
            ),
        );
        records.push(FaultRecord { name: fault.name().into(), nodes: active.nodes, start, heal, recovered, restore: active.restore });
        if let Err(e) = cluster.wait_ready(RECOVERY_LIMIT).await {
            progress(rec, &format!("warning: {e}"));
        }
    }
    Ok(records)
}

/// Writes probe objects through the load balancer until one is acknowledged.
async fn recover(rec: &Recorder, probes: &Api<ConfigMap>, n: &mut u64) -> Option<Micros> {
    let deadline = tokio::time::Instant::now() + RECOVERY_LIMIT;
    while tokio::time::Instant::now() < deadline {
        *n += 1;
        let cm = configmap(&format!("probe-{n}"), "probe", None);
        if let Ok(Ok(_)) = tokio::time::timeout(Duration::from_secs(2), probes.create(&PostParams::default(), &cm)).await {
            return Some(rec.now());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// One progress line: elapsed time, operations so far by outcome, and what just happened.
pub fn progress(rec: &Recorder, what: &str) {
    let (mut ok, mut failed, mut unknown) = (0, 0, 0);
    for op in rec.ops.lock().unwrap().iter() {
        match op.outcome() {
            Outcome::Ok => ok += 1,
            Outcome::Failed => failed += 1,
            Outcome::Unknown => unknown += 1,
        }
    }
    let events = rec.watches.lock().unwrap().len();
    let lists = rec.lists.lock().unwrap().len();
    println!("[{:>5.1}s] ops ok {ok} failed {failed} unknown {unknown}, watch records {events}, lists {lists} | {what}", rec.now() as f64 / 1e6);
}
