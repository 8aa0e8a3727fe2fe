//! The short schedule CI runs on every change: a 3-node cluster under six kinds of fault must
//! pass every checker, and the deliberately broken server (Most Recent reads served locally,
//! without a read index) must be caught by the linearizability checker.
//!
//! Needs root (network namespaces, iptables) and HAProxy, as the suite itself does.

use std::path::Path;
use std::process::Command;

fn chaos(out: &Path, args: &[&str]) -> (Option<i32>, String) {
    let status = Command::new(env!("CARGO_BIN_EXE_chaos-tests")).arg("--out").arg(out).args(args).status().expect("run chaos-tests");
    let summary = std::fs::read_to_string(out.join("summary.txt")).unwrap_or_default();
    (status.code(), summary)
}

#[test]
fn short_schedule_passes_and_the_broken_server_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let faults = "kill-leader,pause-random,partition-leader,slow-fsync,disk-full,backup-restore";
    let (code, summary) = chaos(&dir.path().join("faults"), &["--nodes", "3", "--duration", "60s", "--faults", faults, "--seed", "7", "--snapshot-count", "300"]);
    assert_eq!(code, Some(0), "the short schedule found a violation or failed:\n{summary}");
    assert!(summary.contains("VERDICT: PASS"), "{summary}");
    for fault in faults.split(',') {
        assert!(summary.contains(fault), "{fault} was not injected:\n{summary}");
    }

    let (code, summary) = chaos(&dir.path().join("broken"), &["--duration", "15s", "--faults", "partition-leader", "--broken", "stale-reads"]);
    assert_eq!(code, Some(1), "the broken server was not caught:\n{summary}");
    assert!(summary.contains("FAIL linearizable"), "{summary}");
}
