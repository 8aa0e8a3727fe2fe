//! The faults: each is injected on real hosts (signals to the node's process, iptables in its
//! network namespace, its data directory, failpoints in its storage) and healed afterwards.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, VersionMatch};
use kube::Api;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

use crate::cluster::Cluster;
use crate::history::Restore;
use crate::record::Recorder;
use crate::workload::NAMESPACE;

/// How long writes go on after a backup before the cluster is destroyed: the writes acknowledged
/// then are the ones the restore loses.
const AFTER_BACKUP: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    KillLeader,
    KillFollower,
    KillRandom,
    PauseLeader,
    PauseRandom,
    PartitionLeader,
    PartitionMinority,
    PartitionSplit,
    PartitionBridge,
    RestartAll,
    WipeNode,
    Membership,
    SlowFsync,
    FailFsync,
    DiskFull,
    LoseMajority,
    BackupRestore,
    Upgrade,
}

const NAMES: &[(&str, Fault)] = &[
    ("kill-leader", Fault::KillLeader),
    ("kill-follower", Fault::KillFollower),
    ("kill-random", Fault::KillRandom),
    ("pause-leader", Fault::PauseLeader),
    ("pause-random", Fault::PauseRandom),
    ("partition-leader", Fault::PartitionLeader),
    ("partition-minority", Fault::PartitionMinority),
    ("partition-split", Fault::PartitionSplit),
    ("partition-bridge", Fault::PartitionBridge),
    ("restart-all", Fault::RestartAll),
    ("wipe-node", Fault::WipeNode),
    ("membership", Fault::Membership),
    ("slow-fsync", Fault::SlowFsync),
    ("fail-fsync", Fault::FailFsync),
    ("disk-full", Fault::DiskFull),
    ("lose-majority", Fault::LoseMajority),
    ("backup-restore", Fault::BackupRestore),
    ("upgrade", Fault::Upgrade),
];

impl Fault {
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, f)| *f == self).map(|(n, _)| *n).unwrap_or("?")
    }

    /// `all`, or a comma-separated list of fault names.
    pub fn parse_list(list: &str) -> Result<Vec<Fault>> {
        if list == "all" {
            return Ok(NAMES.iter().map(|(_, f)| *f).collect());
        }
        list.split(',')
            .map(|name| match NAMES.iter().find(|(n, _)| *n == name.trim()) {
                Some((_, f)) => Ok(*f),
                None => bail!("unknown fault {name:?}; known: all, {}", NAMES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")),
            })
            .collect()
    }
}

/// A fault in effect, and the nodes it acts on.
pub struct Active {
    pub fault: Fault,
    pub nodes: Vec<u32>,
    /// For `backup-restore`: the backup's file and what it holds (known once restored).
    pub backup: Option<PathBuf>,
    pub restore: Option<Restore>,
}

/// Injects `fault`; the leader is asked of the cluster, and a random node stands in when there is none.
pub async fn inject(cluster: &mut Cluster, rec: &Recorder, fault: Fault, rng: &mut StdRng) -> Result<Active> {
    let all: Vec<u32> = (1..=cluster.size()).collect();
    let leader = match cluster.leader().await {
        Some(l) => l,
        None => all[rng.random_range(0..all.len())],
    };
    let mut followers: Vec<u32> = all.iter().copied().filter(|n| *n != leader).collect();
    followers.shuffle(rng);
    let follower = followers[0];
    let random = all[rng.random_range(0..all.len())];
    let minority = (all.len() - 1) / 2;
    let (mut backup, mut restore) = (None, None);
    let nodes = match fault {
        Fault::KillLeader => kill(cluster, leader)?,
        Fault::KillFollower => kill(cluster, follower)?,
        Fault::KillRandom => kill(cluster, random)?,
        Fault::PauseLeader => pause(cluster, leader)?,
        Fault::PauseRandom => pause(cluster, random)?,
        Fault::PartitionLeader => partition(cluster, vec![vec![leader], followers])?,
        Fault::PartitionMinority => {
            let (small, rest) = followers.split_at(minority);
            let mut big = rest.to_vec();
            big.push(leader);
            partition(cluster, vec![small.to_vec(), big])?
        }
        Fault::PartitionSplit => {
            let mut shuffled = all.clone();
            shuffled.shuffle(rng);
            let (small, big) = shuffled.split_at(minority);
            partition(cluster, vec![small.to_vec(), big.to_vec()])?
        }
        Fault::PartitionBridge => {
            let mut shuffled = all.clone();
            shuffled.shuffle(rng);
            let bridge = shuffled[0];
            let half = (shuffled.len() - 1) / 2;
            let mut left = shuffled[1..1 + half].to_vec();
            let mut right = shuffled[1 + half..].to_vec();
            left.push(bridge);
            right.push(bridge);
            cluster.net.partition(&[left, right])?;
            vec![bridge]
        }
        Fault::RestartAll => {
            for &n in &all {
                cluster.kill(n)?;
            }
            all.clone()
        }
        Fault::WipeNode => {
            cluster.wipe(follower)?;
            vec![follower]
        }
        Fault::Membership => {
            cluster.member(leader, &["remove", &follower.to_string()])?;
            cluster.wipe(follower)?;
            vec![follower]
        }
        Fault::SlowFsync => {
            cluster.failpoint(leader, "raft-log-fsync", Some("sleep(150)")).await?;
            vec![leader]
        }
        Fault::FailFsync => {
            cluster.failpoint(follower, "raft-log-fsync", Some("return")).await?;
            vec![follower]
        }
        Fault::DiskFull => {
            cluster.fill_disk(random)?;
            vec![random]
        }
        Fault::LoseMajority => {
            // Every member but the leader lost for good; the leader, which holds every
            // acknowledged write, goes on alone.
            let lost: Vec<u32> = all.iter().copied().filter(|n| *n != leader).collect();
            for &n in &lost {
                cluster.wipe(n)?;
            }
            cluster.force_alone(leader)?;
            lost
        }
        Fault::Upgrade => {
            // One step of a rolling upgrade: the next node still on the earlier version is
            // stopped (SIGKILL, the harshest stop) and comes back on the binary under test; once
            // every node is upgraded, a random one is restarted.
            let next = all.iter().copied().find(|n| !cluster.upgraded(*n)).unwrap_or(random);
            kill(cluster, next)?
        }
        Fault::BackupRestore => {
            // Saved through a follower while the clients write, then every member lost.
            let file = cluster.backup_path(rec.now());
            let save_started = rec.now();
            let revision = cluster.save_backup(follower, &file)?;
            let saved = rec.now();
            tokio::time::sleep(AFTER_BACKUP).await;
            for &n in &all {
                cluster.wipe(n)?;
            }
            let destroyed = rec.now();
            backup = Some(file);
            restore = Some(Restore { revision, save_started, saved, destroyed, held: Default::default() });
            all.clone()
        }
    };
    Ok(Active { fault, nodes, backup, restore })
}

/// Restarts node `n` (on an empty data directory) and has it added through `via` as a learner,
/// then promoted once it has caught up.
async fn rejoin(cluster: &mut Cluster, via: u32, n: u32) -> Result<()> {
    cluster.restart(n)?;
    for args in [vec!["add".to_string(), n.to_string(), cluster.peer_addr(n)], vec!["promote".to_string(), n.to_string()]] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut tries = 0;
        while let Err(e) = cluster.member(via, &args) {
            tries += 1;
            if tries > 40 {
                return Err(e);
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    Ok(())
}

fn kill(cluster: &mut Cluster, n: u32) -> Result<Vec<u32>> {
    cluster.kill(n)?;
    Ok(vec![n])
}

fn pause(cluster: &mut Cluster, n: u32) -> Result<Vec<u32>> {
    cluster.pause(n, true)?;
    Ok(vec![n])
}

/// Partitions into `groups`; the nodes recorded are the first (smaller) side.
fn partition(cluster: &mut Cluster, groups: Vec<Vec<u32>>) -> Result<Vec<u32>> {
    cluster.net.partition(&groups)?;
    Ok(groups[0].clone())
}

/// Undoes `active`: restarts, resumes, reconnects, rejoins, restores.
pub async fn heal(cluster: &mut Cluster, active: &mut Active) -> Result<()> {
    match active.fault {
        Fault::Upgrade => {
            for &n in &active.nodes {
                cluster.upgrade(n);
                cluster.restart(n)?;
            }
        }
        Fault::KillLeader | Fault::KillFollower | Fault::KillRandom | Fault::RestartAll | Fault::WipeNode => {
            for &n in &active.nodes {
                cluster.restart(n)?;
            }
        }
        Fault::PauseLeader | Fault::PauseRandom => {
            for &n in &active.nodes {
                cluster.pause(n, false)?;
            }
        }
        Fault::PartitionLeader | Fault::PartitionMinority | Fault::PartitionSplit | Fault::PartitionBridge => cluster.net.heal()?,
        Fault::Membership => {
            let n = active.nodes[0];
            let via = (1..=cluster.size()).find(|v| *v != n).unwrap_or(1);
            rejoin(cluster, via, n).await?;
        }
        Fault::SlowFsync => {
            for &n in &active.nodes {
                cluster.failpoint(n, "raft-log-fsync", None).await?;
            }
        }
        Fault::LoseMajority => {
            // The lost members come back empty.
            let survivor = (1..=cluster.size()).find(|n| !active.nodes.contains(n)).unwrap_or(1);
            for &n in &active.nodes {
                rejoin(cluster, survivor, n).await?;
            }
        }
        Fault::DiskFull => {
            // Nothing else: the node goes on by itself once its disk has room.
            for &n in &active.nodes {
                cluster.free_disk(n)?;
            }
        }
        Fault::FailFsync => {
            // A node whose log cannot be written stops its Raft; it comes back by restart.
            for &n in &active.nodes {
                cluster.kill(n)?;
                cluster.restart(n)?;
            }
        }
        Fault::BackupRestore => {
            let (Some(file), Some(restore)) = (&active.backup, &mut active.restore) else { bail!("backup-restore without its backup") };
            let mut first = 0;
            for &n in &active.nodes {
                first = cluster.restore_backup(n, file)?;
                cluster.restart(n)?;
            }
            restore.held = held_at(cluster, first).await?;
        }
    }
    Ok(())
}

/// What the workload's keys hold at revision `rv` (a restored cluster's first), key to value.
async fn held_at(cluster: &Cluster, rv: u64) -> Result<std::collections::BTreeMap<String, String>> {
    let api: Api<ConfigMap> = Api::namespaced(cluster.client(None, Some(Duration::from_secs(5))).await?, NAMESPACE);
    let at = ListParams { resource_version: Some(rv.to_string()), version_match: Some(VersionMatch::Exact), ..Default::default() };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match api.list(&at).await {
            Ok(list) => {
                return Ok(list
                    .items
                    .into_iter()
                    .filter_map(|cm| Some((cm.metadata.name?, cm.data?.remove("v")?)))
                    .collect())
            }
            Err(e) if tokio::time::Instant::now() > deadline => bail!("listing the restored cluster at rv {rv}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
}
