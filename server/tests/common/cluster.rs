//! Three members of one new cluster on this machine, each a real `apiserver` process.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{free_port, TestServer};

/// Three members of one new cluster, sharing the first one's CA, with extra flags.
pub async fn cluster_with(extra: &[&str]) -> Vec<TestServer> {
    cluster_of(PathBuf::from(env!("CARGO_BIN_EXE_apiserver")), extra).await
}

/// Three members of one new cluster run from `binary`.
pub async fn cluster_of(binary: PathBuf, extra: &[&str]) -> Vec<TestServer> {
    let peers: Vec<String> = (0..3).map(|_| format!("127.0.0.1:{}", free_port())).collect();
    let initial = peers.iter().enumerate().map(|(i, p)| format!("{}={p}", i + 1)).collect::<Vec<_>>().join(",");
    let mut nodes: Vec<TestServer> = (1..=3)
        .map(|id| TestServer::new(&[&["--node-id", &id.to_string(), "--initial-cluster", &initial], extra].concat()).with_binary(binary.clone()))
        .collect();
    nodes[0].launch();
    let ca = nodes[0].data_dir().join("pki");
    let deadline = Instant::now() + Duration::from_secs(10);
    // Each file appears whole (written aside, then renamed).
    while !["ca.crt", "ca.key", "sa.key"].iter().all(|f| ca.join(f).exists()) {
        assert!(Instant::now() < deadline, "the first node wrote no CA:\n{}", nodes[0].log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for node in &mut nodes[1..] {
        let pki = node.data_dir().join("pki");
        std::fs::create_dir_all(&pki).unwrap();
        for f in ["ca.crt", "ca.key", "sa.key"] {
            std::fs::copy(ca.join(f), pki.join(f)).unwrap();
        }
        node.launch();
    }
    for node in &mut nodes {
        node.wait_ready().await.unwrap_or_else(|log| panic!("node did not become ready:\n{log}"));
    }
    nodes
}
