//! A rolling upgrade on every change: the release named in `chaos-tests/upgrade-from` (a commit
//! of this repository's history) is built beside the tree under test, three nodes start on it,
//! and the `upgrade` fault takes them one at a time to this build while the workload goes on.
//! Every checker must pass: nothing acknowledged lost, every read linearizable, across a
//! cluster that speaks two versions of the peer protocol and two data formats at once.
//!
//! Needs root, HAProxy and git (the release's source comes from the repository's history).

use std::path::{Path, PathBuf};
use std::process::Command;

use raft_store::protocol::PROTOCOL;

/// The release's apiserver with failpoints, built once into the suite's own target directory
/// from `git archive` of its commit.
fn release_build(root: &Path, commit: &str) -> PathBuf {
    let kept = root.join("target").join("chaos").join("releases").join(commit);
    let bin = kept.join("apiserver");
    if bin.exists() {
        return bin;
    }
    let src = kept.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let archive = Command::new("git").arg("-C").arg(root).args(["archive", "--format=tar", commit]).output().expect("run git archive");
    assert!(archive.status.success(), "git archive {commit}: {}", String::from_utf8_lossy(&archive.stderr));
    let mut untar = Command::new("tar").arg("-x").arg("-C").arg(&src).stdin(std::process::Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(untar.stdin.as_mut().unwrap(), &archive.stdout).unwrap();
    assert!(untar.wait().unwrap().success(), "unpacking {commit}");
    // Its own target directory: the release's workspace crates have this tree's names, and a
    // shared one would leave the release's binary where the suite looks for this build's.
    let target = kept.join("target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--locked", "-p", "apiserver", "--features", "failpoints", "--target-dir"])
        .arg(&target)
        .current_dir(&src)
        .status()
        .expect("run cargo");
    assert!(status.success(), "building the release {commit} failed");
    std::fs::copy(target.join("debug").join("apiserver"), &bin).unwrap();
    // The build's intermediate files are gigabytes; the binary is all the suite needs.
    std::fs::remove_dir_all(&target).ok();
    std::fs::remove_dir_all(&src).ok();
    bin
}

#[test]
fn a_rolling_upgrade_from_the_last_release_loses_nothing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let named = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("upgrade-from")).unwrap();
    let commit = named.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')).expect("a commit in chaos-tests/upgrade-from");
    let old = release_build(root, commit);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("upgrade");
    let status = Command::new(env!("CARGO_BIN_EXE_chaos-tests"))
        .arg("--out")
        .arg(&out)
        .args(["--nodes", "3", "--duration", "40s", "--faults", "upgrade", "--seed", "11", "--snapshot-count", "300", "--upgrade-from"])
        .arg(&old)
        .status()
        .expect("run chaos-tests");
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap_or_default();
    assert_eq!(status.code(), Some(0), "the rolling upgrade found a violation or failed:\n{summary}");
    assert!(summary.contains("VERDICT: PASS"), "{summary}");
    let upgrades = summary.lines().find_map(|l| l.trim().strip_prefix("upgrade")).and_then(|rest| rest.trim().strip_prefix('x')?.split_whitespace().next()?.parse::<u32>().ok());
    assert!(upgrades.is_some_and(|n| n >= 3), "fewer than three nodes were upgraded:\n{summary}");
    // The nodes said what they met: a cluster speaking the release's protocol until the last
    // node moved, then this build's; each release's database taken over in place.
    let logs: String = (1..=3).map(|n| std::fs::read_to_string(out.join("cluster").join(format!("node-{n}.log"))).unwrap_or_default()).collect();
    for said in [
        "the cluster speaks peer protocol 1".to_string(),
        format!("the cluster speaks peer protocol {PROTOCOL}"),
        "raft.redb was written before data formats were recorded".to_string(),
    ] {
        assert!(logs.contains(&said), "no node logged {said:?}");
    }
}
