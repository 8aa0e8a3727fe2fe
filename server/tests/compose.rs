//! `deploy/docker`: the images built FROM scratch, three containers and HAProxy with Docker
//! Compose; kubectl through HAProxy, a rolling restart under writes that loses none, and a
//! killed container that the others cover for.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::expect_success;
use common::ports::free_ports;

fn cluster(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/docker/cluster");
    let out = Command::new(script).args(args).env("APISERVER_BIN", env!("CARGO_BIN_EXE_apiserver")).output().expect("run deploy/docker/cluster");
    expect_success(args, out)
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl").arg("--kubeconfig").arg(kubeconfig).args(args).output().expect("run kubectl");
    expect_success(args, out)
}

/// Takes the containers down when dropped, pass or fail.
struct Down(String);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = cluster(&["down", "--dir", &self.0]);
    }
}

#[test]
fn compose_cluster_behind_haproxy_survives_rolling_restart_and_a_lost_node() {
    // Fresh images from this build's binary.
    let build = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/docker/build-images");
    let out = Command::new(build).env("APISERVER_BIN", env!("CARGO_BIN_EXE_apiserver")).output().expect("build images");
    expect_success(&["build-images"], out);

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    // Node i listens on lb + i: a block of four free ports.
    let lb = free_ports(4);
    let up = cluster(&["up", "--nodes", "3", "--dir", &d, "--lb-port", &lb.to_string()]);
    let _down = Down(d.clone());
    assert!(up.contains(&format!("https://127.0.0.1:{lb}")), "{up}");
    let kubeconfig = dir.path().join("admin.kubeconfig");
    kubectl(&kubeconfig, &["create", "deployment", "web", "--image=nginx"]);

    // Writes continue through a rolling restart of every node.
    let writer_config = kubeconfig.clone();
    let writer = std::thread::spawn(move || {
        let mut failed = Vec::new();
        for i in 0..40 {
            let out = Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&writer_config)
                .args(["create", "configmap", &format!("rolling-{i}"), "--from-literal=k=v"])
                .output()
                .unwrap();
            if !out.status.success() {
                failed.push(String::from_utf8_lossy(&out.stderr).into_owned());
            }
            std::thread::sleep(std::time::Duration::from_millis(150));
        }
        failed
    });
    let restarted = cluster(&["rolling-restart", "--dir", &d]);
    assert_eq!(restarted.lines().filter(|l| l.ends_with("restarted and ready")).count(), 3, "{restarted}");
    let failed = writer.join().unwrap();
    assert!(failed.is_empty(), "writes failed during the rolling restart: {failed:?}");
    let names = kubectl(&kubeconfig, &["get", "configmaps", "-o", "name"]);
    assert_eq!(names.lines().filter(|l| l.starts_with("configmap/rolling-")).count(), 40, "{names}");

    // A killed node: HAProxy sends the traffic to the other two.
    let settings = std::fs::read_to_string(dir.path().join("cluster.env")).unwrap();
    let project = settings.lines().find_map(|l| l.strip_prefix("PROJECT=")).expect("PROJECT in cluster.env");
    let killed = Command::new("docker").args(["kill", &format!("{project}_node2_1")]).output().unwrap();
    expect_success(&["docker kill"], killed);
    for i in 0..10 {
        kubectl(&kubeconfig, &["create", "configmap", &format!("after-kill-{i}"), "--from-literal=k=v"]);
    }
    assert!(kubectl(&kubeconfig, &["get", "deployment", "web", "-o", "name"]).contains("deployment.apps/web"));
}
