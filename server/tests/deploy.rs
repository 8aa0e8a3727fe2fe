//! `deploy/local-cluster`: three nodes behind HAProxy as a user starts them; kubectl through the
//! load balancer keeps working while a node is down, flags after `--` reach every node, and
//! `down` stops every process it started and no other.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::expect_success;
use common::ports::free_ports;

fn local_cluster(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/local-cluster");
    let out = Command::new(script).args(args).env("APISERVER_BIN", env!("CARGO_BIN_EXE_apiserver")).output().expect("run deploy/local-cluster");
    expect_success(args, out)
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl").arg("--kubeconfig").arg(kubeconfig).args(args).output().expect("run kubectl")
}

#[test]
fn kubectl_through_haproxy_survives_a_node_loss() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let lb = free_ports(7);
    let (base, peer) = (lb + 1, lb + 4);
    // Snapshots every 5 entries (the default is 50,000), so that the nodes build some here.
    let up = local_cluster(&[
        "up", "--nodes", "3", "--dir", d, "--lb-port", &lb.to_string(), "--base-port", &base.to_string(), "--peer-base-port", &peer.to_string(),
        "--", "--snapshot-count", "5",
    ]);
    assert!(up.contains(&format!("https://127.0.0.1:{lb}")), "{up}");
    let kubeconfig = dir.path().join("admin.kubeconfig");
    let cleanup = scopeguard(d);
    expect_success(&["create"], kubectl(&kubeconfig, &["create", "configmap", "before", "--from-literal=k=v"]));

    // Lose one node: every request through the balancer still succeeds.
    let pids = std::fs::read_to_string(dir.path().join("pids")).unwrap();
    let victim = pids.lines().find(|l| l.starts_with("node-1 ")).unwrap().split(' ').nth(1).unwrap().to_string();
    assert!(Command::new("kill").args(["-9", &victim]).status().unwrap().success());
    for i in 0..10 {
        expect_success(&["create"], kubectl(&kubeconfig, &["create", "configmap", &format!("after-{i}"), "--from-literal=k=v"]));
    }
    let names = expect_success(&["get"], kubectl(&kubeconfig, &["get", "configmaps", "-o", "name"]));
    assert_eq!(names.lines().filter(|l| l.starts_with("configmap/after-") || *l == "configmap/before").count(), 11, "{names}");
    // Each node also answers on its own kubeconfig.
    let direct = dir.path().join("node-2.kubeconfig");
    expect_success(&["get"], kubectl(&direct, &["get", "configmap", "before"]));
    for i in [2, 3] {
        let log = std::fs::read_to_string(dir.path().join(format!("node-{i}/apiserver.log"))).unwrap();
        assert!(log.contains("snapshot built"), "node-{i} built no snapshot: the flag after `--` did not reach it");
    }

    // The killed node's pid now belongs to another process, as after pid reuse: `down` must
    // stop the cluster's processes and leave that one alone.
    let mut stranger = Command::new("sleep").arg("60").spawn().unwrap();
    let pids = pids.replace(&format!("node-1 {victim}\n"), &format!("node-1 {}\n", stranger.id()));
    assert!(pids.contains(&format!("node-1 {}\n", stranger.id())), "{pids}");
    std::fs::write(dir.path().join("pids"), &pids).unwrap();
    drop(cleanup);
    assert!(!dir.path().join("pids").exists(), "down left the pid file");
    assert!(stranger.try_wait().unwrap().is_none(), "down stopped a process it did not start");
    stranger.kill().unwrap();
    stranger.wait().unwrap();
    for line in pids.lines().filter(|l| !l.starts_with("node-1 ")) {
        let pid = line.split(' ').nth(1).unwrap();
        assert!(!running(pid), "down left {line} running");
    }
}

/// Whether the process is there and not a zombie awaiting its parent.
fn running(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z'))
}

/// Runs `down` when dropped, so a failing test leaves no processes behind.
fn scopeguard(dir: &str) -> impl Drop + '_ {
    struct Down<'a>(&'a str);
    impl Drop for Down<'_> {
        fn drop(&mut self) {
            let _ = local_cluster(&["down", "--dir", self.0]);
        }
    }
    Down(dir)
}

/// `--goaway-chance` behind a load balancer in TCP mode: HTTP/2 clients that would each keep one
/// connection to one node are sent GOAWAY now and then, reconnect, and end up on every node.
#[tokio::test(flavor = "multi_thread")]
async fn goaway_chance_spreads_http2_clients_over_every_node() {
    use common::tls_client::{handshake, http1, Hello};
    use http_body_util::Full;

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let lb = free_ports(7);
    let (base, peer) = (lb + 1, lb + 4);
    local_cluster(&["up", "--nodes", "3", "--dir", d, "--lb-port", &lb.to_string(), "--base-port", &base.to_string(), "--peer-base-port", &peer.to_string(), "--", "--goaway-chance", "0.02"]);
    let _cleanup = scopeguard(d);
    let read = |name: &str| std::fs::read_to_string(dir.path().join("node-1/pki").join(name)).unwrap();
    let (cert, key) = (read("admin.crt"), read("admin.key"));
    let admin = Hello { alpn: Some(b"h2"), client_cert: Some((&cert, &key)), ..Default::default() };

    // 30 clients, 40 requests each, every one on the connection it has until that is closed.
    let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut clients = Vec::new();
    for _ in 0..30 {
        let (admin, connections) = (Hello { client_cert: admin.client_cert, alpn: admin.alpn, ..Default::default() }, connections.clone());
        clients.push(async move {
            let mut sender: Option<hyper::client::conn::http2::SendRequest<Full<bytes::Bytes>>> = None;
            let mut done = 0;
            while done < 40 {
                if sender.as_mut().is_none_or(|s| s.is_closed()) {
                    let (stream, _) = handshake(lb, &admin).await.unwrap();
                    sender = Some(common::tls_client::http2(stream).await);
                    connections.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                let s = sender.as_mut().unwrap();
                if s.ready().await.is_err() {
                    sender = None;
                    continue;
                }
                let probe = http::Request::get(format!("https://127.0.0.1:{lb}/api/v1/namespaces/default/limitranges/goaway-probe")).body(Full::new(bytes::Bytes::new())).unwrap();
                match s.send_request(probe).await {
                    Ok(resp) => {
                        assert_eq!(resp.status(), 404);
                        done += 1;
                    }
                    // Sent as the GOAWAY crossed it: not taken, sent again on a new connection.
                    Err(_) => sender = None,
                }
            }
        });
    }
    futures::future::join_all(clients).await;
    let made = connections.load(std::sync::atomic::Ordering::Relaxed);
    assert!(made > 30, "no client was sent GOAWAY in 1200 requests ({made} connections)");

    // Each node's count of the probes it answered.
    let mut served = Vec::new();
    for port in base..base + 3 {
        let (stream, _) = handshake(port, &Hello { client_cert: admin.client_cert, alpn: Some(b"http/1.1"), ..Default::default() }).await.unwrap();
        let (status, metrics) = http1(stream, "GET", "/metrics", &[], "").await.unwrap();
        assert_eq!(status, 200);
        let line = metrics.lines().find(|l| l.starts_with(r#"apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="limitranges",scope="resource",subresource="",verb="GET",version="v1"}"#));
        served.push(line.and_then(|l| l.rsplit(' ').next()).and_then(|n| n.parse::<u64>().ok()).unwrap_or(0));
    }
    assert!(served.iter().all(|n| *n > 0), "probes per node: {served:?}");
    assert!(served.iter().sum::<u64>() >= 1200, "probes per node: {served:?}");
}
