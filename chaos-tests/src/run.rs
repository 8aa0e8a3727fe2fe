//! One run of the suite, start to end: build the failpoint binary when needed, start the
//! cluster, start the workloads, run the fault schedule, heal everything, take the final reads,
//! stop, check and report. Returns whether every checker passed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, PostParams};
use kube::Api;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::check;
use crate::cluster::Cluster;
use crate::faults::Fault;
use crate::history::{Call, Op, Ret};
use crate::record::Recorder;
use crate::report::{self, Report};
use crate::schedule::{self, progress, Schedule};
use crate::workload::{lists, registers, watchers, Target, NAMESPACE};

pub struct Options {
    pub nodes: u32,
    pub duration: Duration,
    pub faults: Vec<Fault>,
    pub fault_hold: Duration,
    pub quiet: Duration,
    pub clients: u32,
    pub keys: u32,
    pub out: PathBuf,
    pub apiserver: Option<PathBuf>,
    pub broken: Option<String>,
    pub seed: u64,
    pub snapshot_count: Option<u64>,
    /// An earlier version's binary the cluster starts on; the `upgrade` fault replaces it.
    pub upgrade_from: Option<PathBuf>,
}

/// Builds the apiserver with failpoints into its own target directory and returns its path.
/// The integration tests that inject faults use this build too (one build serves both).
pub fn build_apiserver() -> Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().context("workspace root")?;
    let target = root.join("target").join("chaos");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    println!("building apiserver with failpoints");
    let mut build = Command::new(cargo);
    build.args(["build", "--locked", "-p", "apiserver", "--features", "failpoints", "--target-dir"]).arg(&target).current_dir(root);
    // Without the variables cargo sets for the package of a test that runs this: ring's build
    // script watches some (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, ...), and values other than a
    // shell's would rebuild ring and everything above it.
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_MANIFEST_")) {
        build.env_remove(name);
    }
    let status = build.status()?;
    if !status.success() {
        bail!("building the apiserver failed");
    }
    Ok(target.join("debug").join("apiserver"))
}

async fn retry<T, F: std::future::Future<Output = Result<T, kube::Error>>>(what: &str, mut f: impl FnMut() -> F) -> Result<T> {
    let mut last = None;
    for attempt in 1..=100 {
        match tokio::time::timeout(Duration::from_secs(5), f()).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) => last = Some(e.to_string()),
            Err(_) => last = Some("timeout".into()),
        }
        if attempt % 10 == 0 {
            println!("{what}: still failing after {attempt} attempts: {}", last.as_deref().unwrap_or_default());
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    bail!("{what}: {}", last.unwrap_or_default())
}

pub async fn run(opts: Options) -> Result<bool> {
    let bin = match &opts.apiserver {
        Some(b) => b.clone(),
        None => build_apiserver()?,
    };
    std::fs::create_dir_all(&opts.out)?;
    let out = opts.out.canonicalize()?;
    let failpoints = opts.broken.as_ref().map(|_| "read-index-skip=return".to_string());
    let flags = opts.snapshot_count.map(|n| vec!["--snapshot-count".to_string(), n.to_string()]).unwrap_or_default();
    let small_disks = opts.faults.contains(&Fault::DiskFull);
    let mut cluster = Cluster::start(&bin, opts.upgrade_from.as_deref(), &out.join("cluster"), opts.nodes, failpoints, flags, small_disks)?;
    println!("cluster of {} nodes behind https://127.0.0.1:{}; report in {}", opts.nodes, cluster.lb_port, out.display());
    cluster.wait_ready(Duration::from_secs(60)).await?;
    let rec = Arc::new(Recorder::default());
    let mut rng = StdRng::seed_from_u64(opts.seed);

    // The workload namespace, and the revision at which it holds no key yet.
    let lb = cluster.client(None, Some(Duration::from_secs(5))).await?;
    let namespaces: Api<Namespace> = Api::all(lb.clone());
    let ns = Namespace { metadata: kube::api::ObjectMeta { name: Some(NAMESPACE.into()), ..Default::default() }, ..Default::default() };
    let (create, all) = (PostParams::default(), ListParams::default());
    retry("creating the namespace", || async {
        match namespaces.create(&create, &ns).await {
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
            other => other.map(|_| ()),
        }
    })
    .await?;
    let in_ns: Api<ConfigMap> = Api::namespaced(lb.clone(), NAMESPACE);
    let empty = retry("listing the namespace", || in_ns.list(&all)).await?;
    let from: u64 = empty.metadata.resource_version.as_deref().unwrap_or("0").parse()?;

    let mut targets = vec![Target { name: "lb".into(), api: in_ns.clone() }];
    let mut watch_targets = Vec::new();
    for i in 1..=opts.nodes {
        let ops = cluster.client(Some(i), Some(registers::OP_TIMEOUT)).await?;
        targets.push(Target { name: format!("node-{i}"), api: Api::namespaced(ops, NAMESPACE) });
        let watch = cluster.client(Some(i), Some(Duration::from_secs(30))).await?;
        watch_targets.push(Target { name: format!("node-{i}"), api: Api::namespaced(watch, NAMESPACE) });
    }
    let keys: Arc<Vec<String>> = Arc::new((0..opts.keys).map(|k| format!("reg-{k}")).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let (stop_watch, watch_until) = tokio::sync::watch::channel(None);
    let watchers: Vec<_> = watch_targets.into_iter().map(|t| tokio::spawn(watchers::run(rec.clone(), t, from, watch_until.clone()))).collect();
    let mut clients: Vec<_> = (0..opts.clients)
        .map(|c| {
            let target = targets[c as usize % targets.len()].clone();
            tokio::spawn(registers::run(rec.clone(), c, target, keys.clone(), opts.seed * 1000 + u64::from(c), stop.clone()))
        })
        .collect();
    clients.push(tokio::spawn(lists::run(rec.clone(), targets.clone(), opts.seed * 1000 + 999, stop.clone())));
    let ticker = {
        let rec = rec.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                progress(&rec, "");
            }
        })
    };

    let plan = Schedule { faults: opts.faults.clone(), duration: opts.duration, hold: opts.fault_hold, quiet: opts.quiet };
    let scheduled = schedule::run(&mut cluster, &rec, &plan, &mut rng).await;
    // Whatever happened, heal everything before the final reads.
    cluster.net.heal()?;
    for i in 1..=opts.nodes {
        cluster.pause(i, false)?;
        cluster.restart(i)?;
    }
    let faults = scheduled?;
    cluster.wait_ready(Duration::from_secs(60)).await?;
    progress(&rec, "healed; stopping the workload");
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await?;
    }

    // Final consistent reads of every key, and the revision the watchers must reach.
    let mut finals = Vec::new();
    for key in keys.iter() {
        let invoke = rec.now();
        let got = retry("final read", || in_ns.get_opt(key)).await?;
        let value = got.as_ref().and_then(|cm| cm.data.as_ref()).and_then(|d| d.get("v").cloned());
        let rv = got.as_ref().and_then(|cm| cm.metadata.resource_version.as_deref()).and_then(|v| v.parse().ok());
        let call = Call::Read { key: key.clone() };
        finals.push(Op { id: rec.next_id(), client: u32::MAX, target: "lb".into(), call, ret: Ret::Read { value }, invoke, complete: rec.now(), rv });
    }
    let last = retry("final list", || in_ns.list(&all)).await?;
    let until: u64 = last.metadata.resource_version.as_deref().unwrap_or("0").parse()?;
    stop_watch.send(Some(until))?;
    for w in watchers {
        w.await?;
    }
    ticker.abort();
    let duration_us = rec.now();
    cluster.stop();

    let ops = std::mem::take(&mut *rec.ops.lock().unwrap());
    let watches = std::mem::take(&mut *rec.watches.lock().unwrap());
    let lists = std::mem::take(&mut *rec.lists.lock().unwrap());
    progress(&rec, "checking");
    let restores: Vec<_> = faults.iter().filter_map(|f| f.restore.clone()).collect();
    let mut verdicts = vec![check::linearizable::check(&ops, &restores), check::linearizable::durability(&ops, &finals, &restores)];
    verdicts.extend(check::watch::check(&watches, &ops));
    verdicts.push(check::lists::check(&lists, &watches));
    let names: Vec<&str> = opts.faults.iter().map(|f| f.name()).collect();
    let title = format!(
        "{} nodes, {}s of faults ({}){}, seed {}",
        opts.nodes,
        opts.duration.as_secs(),
        names.join(","),
        opts.broken.as_ref().map(|b| format!(", BROKEN SERVER: {b}")).unwrap_or_default(),
        opts.seed
    );
    let report = Report { title, ops: &ops, finals: &finals, watches: &watches, lists: &lists, faults: &faults, verdicts: &verdicts, duration_us };
    let summary = report::write(&out, &report)?;
    println!("{summary}");
    Ok(verdicts.iter().all(|v| v.ok))
}
