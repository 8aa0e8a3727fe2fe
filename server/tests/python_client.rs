//! The Python `kubernetes` client (pinned, installed into a virtual environment under the
//! target directory on first use) drives the real server: CRUD, a strategic merge patch, a
//! watch, server-side apply with a conflict and force through the dynamic client, a 404.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::TestServer;

/// The client version the check is written against.
const CLIENT: &str = "kubernetes==37.0.2";

/// A Python with the client installed: a virtual environment made (once) beside the build.
fn python() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").join("target").join("python");
    let bin = root.join("bin").join("python3");
    let ready = |b: &PathBuf| Command::new(b).args(["-c", "import kubernetes"]).status().is_ok_and(|s| s.success());
    if !ready(&bin) {
        let made = Command::new("python3").arg("-m").arg("venv").arg(&root).status().expect("python3 is needed");
        assert!(made.success(), "python3 -m venv failed");
        let pip = Command::new(&bin).args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", CLIENT]).status().expect("pip");
        assert!(pip.success(), "installing {CLIENT} failed");
    }
    bin
}

#[tokio::test]
async fn the_python_client_works_unchanged() {
    let server = TestServer::start().await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("python").join("client_check.py");
    let python = python();
    let out = tokio::task::spawn_blocking({
        let kubeconfig = server.kubeconfig_path();
        move || Command::new(python).arg(script).arg(kubeconfig).arg("python-client").output().expect("run python")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.trim() == "ok", "stdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
}
