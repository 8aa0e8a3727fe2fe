//! Three real nodes on loopback, one Raft group behind three API servers: writes on any node
//! are read on every node, a watch resumes on another node, acknowledged writes survive
//! `kill -9` of any node (the leader among them, also under load), a full restart keeps
//! everything, a wiped node rejoins from a snapshot, a node whose database is damaged refuses to
//! start and is re-seeded with `apiserver reseed` while writes go on, a node's peer certificate
//! is replaced on disk and taken up without a restart, a node out of disk space refuses writes
//! at once, serves reads and recovers by itself once space is freed, a backup saved from a
//! follower under writes restores a new cluster, a survivor forced into a cluster of its own
//! keeps every write it had and takes its lost members back, members are added and removed, every
//! node's `/metrics` names the same leader, a watcher on a follower sees a write without waiting
//! for further traffic, and the leader's log gathers its flushes only while
//! its followers answer, and a RoleBinding written through one node authorizes on every node,
//! even through a follower whose apply a failpoint holds behind the commit; the controllers run
//! on the leader alone and move with it; a CustomResourceDefinition created through one node is
//! served (printer columns, short name, category, explain), scaled, applied and deleted with its
//! resources through every node with kubectl.

use crate::common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::cluster::{cluster_of, cluster_with};
use common::{apiserver, configmap, free_port, names, rv, TestServer};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube::Api;

async fn cluster() -> Vec<TestServer> {
    cluster_with(&[]).await
}

fn configmaps(node: &TestServer) -> Api<ConfigMap> {
    Api::namespaced(node.client(), "default")
}

/// Names of the ConfigMaps a consistent list on `node` returns.
async fn stored(node: &TestServer) -> BTreeSet<String> {
    names(&configmaps(node).list(&ListParams::default()).await.unwrap()).into_iter().collect()
}

#[tokio::test]
async fn writes_on_any_node_are_read_on_every_node() {
    let nodes = cluster().await;
    let mut written = BTreeSet::new();
    for (i, node) in nodes.iter().enumerate() {
        let name = format!("from-{}", i + 1);
        let created = configmaps(node).create(&PostParams::default(), &configmap(&name, &[])).await.unwrap();
        // Read-your-writes on the same node, and on the others by a consistent read.
        assert_eq!(rv(&configmaps(node).get(&name).await.unwrap()), rv(&created));
        written.insert(name);
        for other in &nodes {
            assert!(stored(other).await.is_superset(&written), "a consistent read on another node missed a write");
        }
    }
    // Optimistic concurrency holds across nodes: a stale update fails wherever it is sent.
    let mut current = configmaps(&nodes[0]).get("from-1").await.unwrap();
    current.data = Some([("k".to_string(), "first".to_string())].into());
    configmaps(&nodes[1]).replace("from-1", &PostParams::default(), &current).await.unwrap();
    current.data = Some([("k".to_string(), "second".to_string())].into());
    let stale = configmaps(&nodes[2]).replace("from-1", &PostParams::default(), &current).await;
    assert!(matches!(stale, Err(kube::Error::Api(s)) if s.code == 409), "stale update was not refused");
}

/// The value of an unlabelled-but-for-node metric in `/metrics` text.
fn gauge(text: &str, name: &str) -> u64 {
    let line = text.lines().find(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with(['{', ' ']))).unwrap_or_else(|| panic!("no {name} in:\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

#[tokio::test]
async fn metrics_agree_on_one_leader() {
    let nodes = cluster().await;
    // The server's own post-start hooks create ConfigMaps through the same chain, and are counted
    // too: the create below is the one more.
    const CREATED: &str = r#"apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",verb="POST",version="v1"} "#;
    let created = |text: &str| text.lines().find_map(|l| l.strip_prefix(CREATED)).map_or(0, |n| n.parse::<u64>().unwrap());
    let before = created(&nodes[1].get("/metrics").await.text());
    configmaps(&nodes[1]).create(&PostParams::default(), &configmap("counted", &[])).await.unwrap();
    let mut leaders = BTreeSet::new();
    let mut leading = 0;
    for node in &nodes {
        let text = node.get("/metrics").await.text();
        leaders.insert(gauge(&text, "apiserver_raft_leader_id"));
        leading += gauge(&text, "etcd_server_is_leader");
        assert_eq!(gauge(&text, "etcd_server_has_leader"), 1, "{text}");
        assert!(gauge(&text, "apiserver_raft_term") >= 1);
        assert!(gauge(&text, "etcd_server_proposals_applied_total") >= 1);
        assert!(gauge(&text, "etcd_server_leader_changes_seen_total") >= 1, "{text}");
        assert!(gauge(&text, "etcd_mvcc_db_total_size_in_bytes") >= gauge(&text, "etcd_mvcc_db_total_size_in_use_in_bytes"), "{text}");
        assert!(gauge(&text, "etcd_debugging_mvcc_keys_total") >= 1, "{text}");
        // Every node has written entries to its log, each flush holding at least one.
        let flushed = gauge(&text, "apiserver_raft_log_flushed_entries_total");
        let flushes = gauge(&text, "etcd_disk_wal_fsync_duration_seconds_count");
        assert!(flushed >= 1 && flushes >= 1, "{text}");
        // The flush histogram's buckets (etcd's: 1 ms doubling to 8.192 s, then +Inf) rise to its
        // total, and its flushes (none near 8 s) are counted in its finite buckets too.
        let buckets: Vec<u64> = text
            .lines()
            .filter(|l| l.starts_with("etcd_disk_wal_fsync_duration_seconds_bucket{"))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(buckets.len(), 15, "{text}");
        assert!(buckets.windows(2).all(|w| w[0] <= w[1]) && buckets[13] >= 1, "{text}");
    }
    assert_eq!((leaders.len(), leading), (1, 1), "nodes disagree on the leader: {leaders:?}");
    assert!(!leaders.contains(&0));
    let text = nodes[1].get("/metrics").await.text();
    assert_eq!(created(&text), before + 1, "{text}");
    assert!(gauge(&text, "apiserver_raft_proposals_total") >= 1);
}

/// Waits until `node`'s gauge `name` reads `want`.
async fn until_gauge(node: &TestServer, name: &str, want: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = node.get("/metrics").await.text();
        if gauge(&text, name) == want {
            return;
        }
        assert!(Instant::now() < deadline, "{name} did not become {want}:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_leader_lingers_over_its_flushes_only_while_both_followers_answer() {
    const LINGERING: &str = "apiserver_raft_log_flush_lingering";
    let mut nodes = cluster().await;
    let leader = leader_index(&nodes).await;
    until_gauge(&nodes[leader], LINGERING, 1).await;
    let follower = (leader + 1) % 3;
    assert_eq!(gauge(&nodes[follower].get("/metrics").await.text(), LINGERING), 0, "a follower lingers");

    // With a follower down the leader's own flush is needed for a quorum: no more waiting.
    nodes[follower].kill9();
    until_gauge(&nodes[leader], LINGERING, 0).await;
    configmaps(&nodes[leader]).create(&PostParams::default(), &configmap("one-down", &[])).await.unwrap();
    nodes[follower].restart().await;
    until_gauge(&nodes[leader], LINGERING, 1).await;
    assert!(stored(&nodes[follower]).await.contains("one-down"));
}

/// The leader tells its followers of a commit as soon as it advances, not with its next append
/// or heartbeat: with heartbeats 3 s apart and no other writes, a watcher on a follower sees each
/// write within a second of its acknowledgement (a second, not less, for a machine busy with
/// other tests; were commits told with heartbeats, eight writes would all fall within a second
/// of the next one a time in 6,500).
#[tokio::test]
async fn a_watcher_on_a_follower_sees_a_write_without_waiting_for_more_traffic() {
    let nodes = cluster_with(&["--heartbeat-interval", "3000", "--election-timeout", "6000"]).await;
    let leader = leader_index(&nodes).await;
    let follower = (leader + 1) % 3;
    let on_leader = configmaps(&nodes[leader]);
    let start = rv(&on_leader.create(&PostParams::default(), &configmap("quiet-0", &[])).await.unwrap());
    let mut events = configmaps(&nodes[follower]).watch(&WatchParams::default(), &start.to_string()).await.unwrap().boxed();
    for i in 1..=8 {
        // Apart by more than a heartbeat's share of chance: each write lands at another point of
        // the heartbeat cycle.
        tokio::time::sleep(Duration::from_millis(700)).await;
        let name = format!("quiet-{i}");
        on_leader.create(&PostParams::default(), &configmap(&name, &[])).await.unwrap();
        match tokio::time::timeout(Duration::from_secs(1), events.try_next()).await {
            Ok(Ok(Some(WatchEvent::Added(cm)))) => assert_eq!(cm.metadata.name.as_deref(), Some(name.as_str())),
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => panic!("the follower's watcher did not see {name} within 1 s (heartbeats are 3 s apart)"),
        }
    }
}

#[tokio::test]
async fn a_watch_resumes_on_another_node() {
    let nodes = cluster().await;
    let start = rv(&configmaps(&nodes[0]).create(&PostParams::default(), &configmap("w-0", &[])).await.unwrap());
    let mut first = configmaps(&nodes[0]).watch(&WatchParams::default(), &start.to_string()).await.unwrap().boxed();
    for i in 1..=3 {
        configmaps(&nodes[1]).create(&PostParams::default(), &configmap(&format!("w-{i}"), &[])).await.unwrap();
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(10), first.try_next()).await.unwrap().unwrap() {
            Some(WatchEvent::Added(cm)) => seen.push((cm.metadata.name.unwrap(), cm.metadata.resource_version.unwrap())),
            other => panic!("unexpected {other:?}"),
        }
    }
    drop(first);
    // Resume on the third node from the last revision seen: exactly the events after it.
    let last = seen.last().unwrap().1.clone();
    for i in 4..=5 {
        configmaps(&nodes[0]).create(&PostParams::default(), &configmap(&format!("w-{i}"), &[])).await.unwrap();
    }
    let mut resumed = configmaps(&nodes[2]).watch(&WatchParams::default(), &last).await.unwrap().boxed();
    while seen.len() < 5 {
        match tokio::time::timeout(Duration::from_secs(10), resumed.try_next()).await.unwrap().unwrap() {
            Some(WatchEvent::Added(cm)) => seen.push((cm.metadata.name.unwrap(), cm.metadata.resource_version.unwrap())),
            other => panic!("unexpected {other:?}"),
        }
    }
    let order: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(order, ["w-1", "w-2", "w-3", "w-4", "w-5"]);
}

#[tokio::test]
async fn acknowledged_writes_survive_killing_each_node_and_a_full_restart() {
    let mut nodes = cluster().await;
    let mut acknowledged = BTreeSet::new();
    let mut n = 0;
    for victim in 0..3 {
        nodes[victim].kill9();
        // The others keep accepting writes once they have (re)elected a leader.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut ok = 0;
        while ok < 10 {
            let node = &nodes[(victim + 1 + n % 2) % 3];
            let name = format!("k-{n}");
            n += 1;
            match configmaps(node).create(&PostParams::default(), &configmap(&name, &[])).await {
                Ok(_) => {
                    acknowledged.insert(name);
                    ok += 1;
                }
                Err(e) => assert!(Instant::now() < deadline, "no write accepted within 10 s of killing node {}: {e}", victim + 1),
            }
        }
        nodes[victim].launch();
        nodes[victim].wait_ready().await.unwrap_or_else(|log| panic!("node {} did not come back:\n{log}", victim + 1));
    }
    for node in &nodes {
        assert!(stored(node).await.is_superset(&acknowledged), "an acknowledged write is missing");
    }
    for node in &mut nodes {
        node.kill9();
    }
    for node in &mut nodes {
        node.launch();
    }
    for node in &mut nodes {
        node.wait_ready().await.unwrap_or_else(|log| panic!("node did not come back after a full restart:\n{log}"));
    }
    for node in &nodes {
        assert!(stored(node).await.is_superset(&acknowledged), "an acknowledged write is missing after a full restart");
    }
}

/// The leader's index in `nodes`, from the first node's `/metrics`.
async fn leader_index(nodes: &[TestServer]) -> usize {
    let live = nodes.iter().find(|n| n.is_running()).expect("a running node");
    let id = gauge(&live.get("/metrics").await.text(), "apiserver_raft_leader_id");
    assert!(id >= 1, "no leader");
    id as usize - 1
}

#[tokio::test]
async fn killing_the_leader_under_load_loses_no_acknowledged_write() {
    let mut nodes = cluster().await;
    let leader = leader_index(&nodes).await;
    let others: Vec<Api<ConfigMap>> = (0..3).filter(|i| *i != leader).map(|i| configmaps(&nodes[i])).collect();
    // Eight writers on the two followers, each recording what was acknowledged and when.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (api, stop) = (others[w % 2].clone(), stop.clone());
            tokio::spawn(async move {
                let mut acked = Vec::new();
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let name = format!("load-{w}-{i}");
                    i += 1;
                    if api.create(&PostParams::default(), &configmap(&name, &[])).await.is_ok() {
                        acked.push((name, Instant::now()));
                    }
                }
                acked
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let killed = Instant::now();
    nodes[leader].kill9();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut acknowledged = BTreeSet::new();
    let mut resumed = None;
    for w in writers {
        for (name, at) in w.await.unwrap() {
            if at > killed {
                resumed = Some(resumed.map_or(at, |r: Instant| r.min(at)));
            }
            acknowledged.insert(name);
        }
    }
    let resumed = resumed.expect("no write was acknowledged after the leader was killed");
    // A few election timeouts (300-600 ms each), with room for a loaded test machine.
    assert!(resumed - killed < Duration::from_secs(3), "writes resumed only after {:?}", resumed - killed);
    for i in (0..3).filter(|i| *i != leader) {
        let have = stored(&nodes[i]).await;
        let missing: Vec<_> = acknowledged.difference(&have).collect();
        assert!(missing.is_empty(), "node {} lost acknowledged writes: {missing:?}", i + 1);
    }
    nodes[leader].launch();
    nodes[leader].wait_ready().await.unwrap_or_else(|log| panic!("the old leader did not come back:\n{log}"));
    assert!(stored(&nodes[leader]).await.is_superset(&acknowledged));
}

#[tokio::test]
async fn any_reads_on_a_node_never_go_back_in_time() {
    let nodes = cluster().await;
    let writer = configmaps(&nodes[0]);
    let reader = configmaps(&nodes[2]);
    let mut last = 0u64;
    for i in 0..40 {
        writer.create(&PostParams::default(), &configmap(&format!("t-{i}"), &[])).await.unwrap();
        let list = reader.list(&ListParams::default().match_any()).await.unwrap();
        let at: u64 = list.metadata.resource_version.unwrap().parse().unwrap();
        assert!(at >= last, "an rv=0 list went back from {last} to {at}");
        last = at;
    }
}

#[tokio::test]
async fn a_wiped_node_rejoins_from_a_snapshot() {
    let mut nodes = cluster_with(&["--snapshot-count", "20"]).await;
    let mut written = BTreeSet::new();
    for i in 0..60 {
        let name = format!("s-{i}");
        configmaps(&nodes[i % 2]).create(&PostParams::default(), &configmap(&name, &[])).await.unwrap();
        written.insert(name);
    }
    // Lose node 3's log and state (keeping its certificates), then let it rejoin.
    nodes[2].kill9();
    std::fs::remove_file(nodes[2].data_dir().join("raft.redb")).unwrap();
    nodes[2].set_flag("--initial-cluster-state", "existing");
    nodes[2].launch();
    nodes[2].wait_ready().await.unwrap_or_else(|log| panic!("the wiped node did not rejoin:\n{log}"));
    let local = names(&configmaps(&nodes[2]).list(&ListParams::default().match_any()).await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut local: BTreeSet<String> = local.into_iter().collect();
    while !local.is_superset(&written) {
        assert!(Instant::now() < deadline, "the rejoined node has {} of {} objects", local.len(), written.len());
        tokio::time::sleep(Duration::from_millis(100)).await;
        local = names(&configmaps(&nodes[2]).list(&ListParams::default().match_any()).await.unwrap()).into_iter().collect();
    }
    assert!(nodes[2].log().contains("snapshot installed"), "caught up without a snapshot:\n{}", nodes[2].log());
    // And it takes part in writes again.
    configmaps(&nodes[2]).create(&PostParams::default(), &configmap("after-rejoin", &[])).await.unwrap();
    assert!(stored(&nodes[0]).await.contains("after-rejoin"));
}

#[tokio::test]
async fn a_damaged_follower_refuses_to_start_and_is_reseeded_under_writes() {
    let mut nodes = cluster_with(&["--snapshot-count", "20"]).await;
    for i in 0..30 {
        configmaps(&nodes[i % 2]).create(&PostParams::default(), &configmap(&format!("before-{i}"), &[])).await.unwrap();
    }
    // Writes go on through the other two nodes all along.
    let writer = {
        let api = configmaps(&nodes[0]);
        tokio::spawn(async move {
            let mut written = BTreeSet::new();
            for i in 0..60 {
                let name = format!("during-{i}");
                api.create(&PostParams::default(), &configmap(&name, &[])).await.expect("a write while a follower was damaged");
                written.insert(name);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            written
        })
    };
    // Node 3's database damaged on disk: a byte changed in every page after the first.
    let leader = leader_index(&nodes).await;
    let victim = if leader == 2 { 1 } else { 2 };
    nodes[victim].kill9();
    let db = nodes[victim].data_dir().join("raft.redb");
    let mut bytes = std::fs::read(&db).unwrap();
    for page in (4096..bytes.len()).step_by(4096) {
        bytes[page + 100] ^= 0x5a;
    }
    std::fs::write(&db, &bytes).unwrap();
    nodes[victim].launch();
    let refused = nodes[victim].wait_ready().await.expect_err("a node started from a damaged database");
    assert!(refused.contains("raft.redb is damaged") && refused.contains("apiserver reseed --data-dir"), "{refused}");
    let checked = std::process::Command::new(env!("CARGO_BIN_EXE_apiserver")).args(["check", "--data-dir"]).arg(nodes[victim].data_dir()).output().unwrap();
    assert!(!checked.status.success() && String::from_utf8_lossy(&checked.stderr).contains("raft.redb"), "{}", String::from_utf8_lossy(&checked.stderr));

    // The documented command, then a start as a member that lost its data.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiserver")).args(["reseed", "--data-dir"]).arg(nodes[victim].data_dir()).output().unwrap();
    let said = common::expect_success(&["reseed"], out);
    assert!(said.contains("moved raft.redb"), "{said}");
    nodes[victim].set_flag("--initial-cluster-state", "existing");
    nodes[victim].launch();
    nodes[victim].wait_ready().await.unwrap_or_else(|log| panic!("the reseeded node did not rejoin:\n{log}"));

    let mut expected: BTreeSet<String> = (0..30).map(|i| format!("before-{i}")).collect();
    expected.extend(writer.await.unwrap());
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let here: BTreeSet<String> = names(&configmaps(&nodes[victim]).list(&ListParams::default().match_any()).await.unwrap()).into_iter().collect();
        if here.is_superset(&expected) {
            break;
        }
        assert!(Instant::now() < deadline, "the reseeded node lacks {:?}", expected.difference(&here).collect::<Vec<_>>());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for node in &nodes {
        let stored: BTreeSet<String> = stored(node).await;
        assert!(stored.is_superset(&expected), "a node lost acknowledged writes");
    }
}

#[tokio::test]
async fn peer_certificates_rotate_without_a_restart() {
    use common::tls_client::{handshake, Hello};
    let mut nodes = cluster().await;
    // Node 1's peer certificate reissued from the cluster CA, as an operator's tooling would.
    let pki = nodes[0].data_dir().join("pki");
    let read = |dir: &std::path::Path, f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&read(&pki, "ca.crt"), rcgen::KeyPair::from_pem(&read(&pki, "ca.key")).unwrap()).unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.distinguished_name.push(rcgen::DnType::CommonName, "rotated-peer");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth, rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    for (name, pem) in [("peer.key", key.serialize_pem()), ("peer.crt", cert.pem())] {
        std::fs::write(pki.join(format!("{name}.new")), pem).unwrap();
        std::fs::rename(pki.join(format!("{name}.new")), pki.join(name)).unwrap();
    }

    // Node 1's peer port shows the new certificate to a peer (node 2's certificate).
    let peer_port: u16 = nodes[0].flag("--initial-cluster").split(',').next().unwrap().rsplit(':').next().unwrap().parse().unwrap();
    let other = nodes[1].data_dir().join("pki");
    let (client_cert, client_key) = (read(&other, "peer.crt"), read(&other, "peer.key"));
    let as_peer = Hello { alpn: Some(b"h2"), client_cert: Some((&client_cert, &client_key)), ..Default::default() };
    let new_leaf = cert.der().clone();
    let deadline = Instant::now() + Duration::from_secs(10);
    while handshake(peer_port, &as_peer).await.unwrap().1 != new_leaf {
        assert!(Instant::now() < deadline, "node 1's peer port still shows its old certificate");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // The cluster works across it, over connections opened since: node 2 restarted.
    nodes[1].restart().await;
    for (i, node) in nodes.iter().enumerate() {
        configmaps(node).create(&PostParams::default(), &configmap(&format!("after-rotation-{i}"), &[])).await.unwrap();
    }
    for node in &nodes {
        let stored = stored(node).await;
        assert!((0..3).all(|i| stored.contains(&format!("after-rotation-{i}"))), "{stored:?}");
    }
    assert!(nodes[0].log().contains("certificates reloaded"), "{}", nodes[0].log());
}

/// A small file system mounted over a directory (its contents copied in) for as long as this
/// lives.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn over(dir: &std::path::Path, mib: u64) -> SmallDisk {
        let saved = dir.with_extension("saved");
        std::fs::rename(dir, &saved).unwrap();
        std::fs::create_dir(dir).unwrap();
        let mount = std::process::Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"]).arg(dir).output().unwrap();
        assert!(mount.status.success(), "mounting a tmpfs (the test needs to): {}", String::from_utf8_lossy(&mount.stderr));
        let copy = std::process::Command::new("cp").arg("-a").arg(format!("{}/.", saved.display())).arg(dir).status().unwrap();
        assert!(copy.success());
        SmallDisk(dir.to_path_buf())
    }

    /// Fills the file system up to `left` bytes free.
    fn fill(&self, left: u64) {
        // Never the disk the rest of the tests run on: only the small file system mounted here.
        let size = df(&self.0, "size");
        assert!(size <= 1 << 30, "{} is not on the small file system ({size} bytes)", self.0.display());
        let stats = df(&self.0, "avail");
        let filler = std::fs::File::create(self.0.join("filler")).unwrap();
        filler.set_len(0).unwrap();
        let mut filler = std::io::BufWriter::new(filler);
        let block = vec![0x5a; 1 << 20];
        let mut to_write = stats.saturating_sub(left);
        while to_write > 0 {
            let n = to_write.min(block.len() as u64) as usize;
            if std::io::Write::write_all(&mut filler, &block[..n]).is_err() {
                break;
            }
            to_write -= n as u64;
        }
        let _ = std::io::Write::flush(&mut filler);
    }

    fn empty(&self) {
        std::fs::remove_file(self.0.join("filler")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A figure in bytes (`size`, `avail`) of the file system holding `dir`, as `df` reports it.
fn df(dir: &std::path::Path, field: &str) -> u64 {
    let out = std::process::Command::new("df").args(["-B1", &format!("--output={field}")]).arg(dir).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().nth(1).unwrap().trim().parse().unwrap()
}

#[tokio::test]
async fn a_node_out_of_disk_space_refuses_writes_serves_reads_and_recovers_by_itself() {
    let mut nodes = cluster().await;
    for i in 0..10 {
        configmaps(&nodes[0]).create(&PostParams::default(), &configmap(&format!("before-{i}"), &[])).await.unwrap();
    }
    // A follower moved onto a file system of 128 MiB.
    let leader = leader_index(&nodes).await;
    let victim = if leader == 2 { 1 } else { 2 };
    nodes[victim].kill9();
    let disk = SmallDisk::over(&nodes[victim].data_dir(), 128);
    nodes[victim].launch();
    nodes[victim].wait_ready().await.unwrap_or_else(|log| panic!("the node did not start on its small disk:\n{log}"));

    // Filled to 16 MiB free, under the reserve: writes through it are refused at once, naming the cause.
    disk.fill(16 << 20);
    let started = Instant::now();
    let refused = configmaps(&nodes[victim]).create(&PostParams::default(), &configmap("refused", &[])).await;
    let status = common::api_error(refused);
    assert_eq!(status.code, 503, "{status:?}");
    assert!(status.message.contains("no space left for the Raft log"), "{}", status.message);
    assert!(started.elapsed() < Duration::from_secs(2), "the refusal took {:?}", started.elapsed());
    let ready = nodes[victim].get("/readyz?verbose").await;
    assert_eq!(ready.status, 500, "{}", ready.text());
    assert!(ready.text().contains("[-]etcd failed"), "{}", ready.text());
    // Reads go on there, and writes through the others.
    let listed = configmaps(&nodes[victim]).list(&ListParams::default().match_any()).await.unwrap();
    assert!(names(&listed).contains(&"before-9".to_string()));
    let mut during = BTreeSet::new();
    for i in 0..20 {
        let name = format!("during-{i}");
        configmaps(&nodes[leader]).create(&PostParams::default(), &configmap(&name, &[])).await.unwrap();
        during.insert(name);
    }

    // Space freed: the node takes up writes again by itself, with every write made meanwhile.
    disk.empty();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match configmaps(&nodes[victim]).create(&PostParams::default(), &configmap("after", &[])).await {
            Ok(_) => break,
            Err(e) => assert!(Instant::now() < deadline, "writes still refused after space was freed: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let here = stored(&nodes[victim]).await;
    assert!(here.is_superset(&during) && here.contains("after"), "{here:?}");
    assert!(nodes[victim].log().contains("log writes held until space is freed") || nodes[victim].log().contains("no space left"), "{}", nodes[victim].log());
    nodes[victim].kill9();
    drop(disk);
}

#[tokio::test]
async fn a_backup_saved_from_a_follower_under_writes_restores_a_new_cluster() {
    let mut nodes = cluster().await;
    for i in 0..30 {
        let mut cm = configmap(&format!("kept-{i}"), &[("app", "backup")]);
        cm.data = Some([("v".to_string(), i.to_string())].into());
        configmaps(&nodes[i % 3]).create(&PostParams::default(), &cm).await.unwrap();
    }
    let before = configmaps(&nodes[0]).list(&ListParams::default().labels("app=backup")).await.unwrap();

    // Saved through a follower's HTTPS port while writes go on through the leader.
    let leader = leader_index(&nodes).await;
    let follower = (leader + 1) % 3;
    let writer = {
        let api = configmaps(&nodes[leader]);
        tokio::spawn(async move {
            for i in 0..40 {
                api.create(&PostParams::default(), &configmap(&format!("during-{i}"), &[])).await.unwrap();
            }
        })
    };
    let file = nodes[0].dir().join("cluster.backup");
    let saved = apiserver(&["snapshot", "save", file.to_str().unwrap(), "--kubeconfig", nodes[follower].kubeconfig_path().to_str().unwrap()]);
    writer.await.unwrap();
    assert!(saved.contains("checksum ok"), "{saved}");
    let status = apiserver(&["snapshot", "status", file.to_str().unwrap()]);
    let revision: u64 = status.split("revision ").nth(1).and_then(|r| r.split(',').next()).and_then(|r| r.parse().ok()).expect(&status);
    let old_rv = configmaps(&nodes[leader]).list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();

    // A user outside system:masters may not take one.
    let other = nodes[0].kubeconfig_for("mallory", &[]);
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_apiserver")).args(["snapshot", "save", "/dev/null", "--kubeconfig", other.to_str().unwrap()]).output().unwrap();
    assert!(!refused.status.success() && String::from_utf8_lossy(&refused.stderr).contains("403"), "{}", String::from_utf8_lossy(&refused.stderr));

    // Every node lost; each member's directory restored (certificates kept), then started.
    let initial = nodes[0].flag("--initial-cluster").to_string();
    for node in nodes.iter_mut() {
        node.kill9();
        for state in ["raft.redb", "snapshot"] {
            let _ = std::fs::remove_file(node.data_dir().join(state));
        }
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        let said = apiserver(&["snapshot", "restore", file.to_str().unwrap(), "--data-dir", node.data_dir().to_str().unwrap(), "--node-id", &(i + 1).to_string(), "--initial-cluster", &initial]);
        assert!(said.contains(&format!("at revision {revision}")), "{said}");
        node.launch();
    }
    for node in nodes.iter_mut() {
        node.wait_ready().await.unwrap_or_else(|log| panic!("a restored node did not start:\n{log}"));
    }

    // Everything written before the save, as it was: resourceVersion, uid, managed fields.
    for node in &nodes {
        let after = configmaps(node).list(&ListParams::default().labels("app=backup")).await.unwrap();
        assert_eq!(after.items.len(), 30);
        for (a, b) in before.items.iter().zip(&after.items) {
            assert_eq!((&a.metadata.name, &a.metadata.uid, &a.metadata.resource_version), (&b.metadata.name, &b.metadata.uid, &b.metadata.resource_version));
            assert_eq!(a.metadata.managed_fields, b.metadata.managed_fields);
            assert_eq!(a.data, b.data);
        }
    }
    // Revisions go on far above the old cluster's; a watch from one of those is 410 Gone.
    let new_rv: u64 = configmaps(&nodes[0]).list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap().parse().unwrap();
    assert!(new_rv > revision + 999_000_000, "{new_rv}");
    let stale = configmaps(&nodes[1]).watch(&WatchParams::default(), &old_rv).await.unwrap().boxed().try_next().await;
    match stale {
        Ok(Some(WatchEvent::Error(e))) => assert_eq!(e.code, 410, "{e:?}"),
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 410, "{e:?}"),
        other => panic!("a watch from the old cluster's revision {old_rv}: {other:?}"),
    }
    // And the restored cluster takes writes through every node, kubectl included.
    for (i, node) in nodes.iter().enumerate() {
        configmaps(node).create(&PostParams::default(), &configmap(&format!("restored-{i}"), &[])).await.unwrap();
    }
    let listed = nodes[2].kubectl_ok(&["get", "configmaps", "-o", "name"]);
    assert!(listed.contains("configmap/kept-29") && listed.contains("configmap/restored-0"), "{listed}");
}

#[tokio::test]
async fn a_survivor_forced_into_a_new_cluster_keeps_its_writes_and_takes_members_back() {
    let mut nodes = cluster_with(&["--snapshot-count", "25"]).await;
    let leader = leader_index(&nodes).await;
    let mut acked = BTreeSet::new();
    for i in 0..60 {
        let name = format!("acked-{i}");
        configmaps(&nodes[leader]).create(&PostParams::default(), &configmap(&name, &[])).await.unwrap();
        acked.insert(name);
    }
    // The other two are lost for good; the survivor (which led, so holds every acknowledged
    // write) starts alone with --force-new-cluster.
    let lost: Vec<usize> = (0..3).filter(|i| *i != leader).collect();
    for &i in &lost {
        nodes[i].kill9();
        for state in ["raft.redb", "snapshot"] {
            let _ = std::fs::remove_file(nodes[i].data_dir().join(state));
        }
    }
    nodes[leader].kill9();
    let checked = apiserver(&["check", "--data-dir", nodes[leader].data_dir().to_str().unwrap()]);
    assert!(checked.contains("no problem found") && checked.contains("objects"), "{checked}");
    nodes[leader].set_flag("--force-new-cluster", "true");
    nodes[leader].launch();
    nodes[leader].wait_ready().await.unwrap_or_else(|log| panic!("the survivor did not start alone:\n{log}"));
    assert!(stored(&nodes[leader]).await.is_superset(&acked), "the survivor lost acknowledged writes");
    configmaps(&nodes[leader]).create(&PostParams::default(), &configmap("alone", &[])).await.unwrap();
    let peer_of = |node: &TestServer| node.flag("--initial-cluster").split(',').find_map(|e| e.strip_prefix(&format!("{}=", node.flag("--node-id")))).unwrap().to_string();
    let listing = member(&nodes[leader], &peer_of(&nodes[leader]), &["list"]);
    assert_eq!(roles(&listing).len(), 1, "{listing}");

    // A restart without the flag keeps it so.
    nodes[leader].kill9();
    nodes[leader].set_flag("--force-new-cluster", "false");
    nodes[leader].launch();
    nodes[leader].wait_ready().await.unwrap();

    // The lost members come back empty, are added as learners and promoted.
    for &i in &lost {
        let id = nodes[i].flag("--node-id").to_string();
        let peer = peer_of(&nodes[i]);
        nodes[i].set_flag("--initial-cluster-state", "existing");
        nodes[i].launch();
        let added = member(&nodes[leader], &peer_of(&nodes[leader]), &["add", &id, &peer]);
        assert!(roles(&added).contains(&(id.clone(), "learner".into())), "{added}");
        let promoted = member(&nodes[leader], &peer_of(&nodes[leader]), &["promote", &id]);
        assert!(roles(&promoted).contains(&(id.clone(), "voter".into())), "{promoted}");
        nodes[i].wait_ready().await.unwrap_or_else(|log| panic!("a member added back did not start:\n{log}"));
    }
    for (i, node) in nodes.iter().enumerate() {
        configmaps(node).create(&PostParams::default(), &configmap(&format!("three-again-{i}"), &[])).await.unwrap();
    }
    for node in &nodes {
        let here = stored(node).await;
        assert!(here.is_superset(&acked) && here.contains("alone") && here.contains("three-again-2"), "a member misses writes");
    }
}

/// Runs `apiserver member ...` with the peer certificate of `via`, against its peer address.
fn member(via: &TestServer, peer: &str, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_apiserver"))
        .args(["member", "--endpoint", peer, "--data-dir"])
        .arg(via.data_dir())
        .args(args)
        .output()
        .expect("run apiserver member");
    assert!(out.status.success(), "apiserver member {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `(id, role)` of every member in `apiserver member list` output.
fn roles(listing: &str) -> Vec<(String, String)> {
    listing.lines().skip(1).map(|l| l.split_whitespace().collect::<Vec<_>>()).map(|f| (f[0].to_string(), f[2].to_string())).collect()
}

#[tokio::test]
async fn members_are_added_promoted_and_removed() {
    let nodes = cluster().await;
    let peer_of = |node: &TestServer| {
        node.flag("--initial-cluster").split(',').find_map(|e| e.strip_prefix(&format!("{}=", node.flag("--node-id")))).unwrap().to_string()
    };
    let endpoint = peer_of(&nodes[0]);
    let listing = member(&nodes[0], &endpoint, &["list"]);
    assert_eq!(roles(&listing).len(), 3, "{listing}");
    assert_eq!(listing.matches('*').count(), 1, "one leader: {listing}");

    // A fourth node joins as a learner, catches up, and becomes a voter.
    let fourth_peer = format!("127.0.0.1:{}", free_port());
    let mut fourth = TestServer::new(&["--node-id", "4", "--initial-cluster", &format!("4={fourth_peer}"), "--initial-cluster-state", "existing"]);
    let pki = fourth.data_dir().join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    for f in ["ca.crt", "ca.key", "sa.key"] {
        std::fs::copy(nodes[0].data_dir().join("pki").join(f), pki.join(f)).unwrap();
    }
    configmaps(&nodes[0]).create(&PostParams::default(), &configmap("before-join", &[])).await.unwrap();
    fourth.launch();
    let added = member(&nodes[1], &peer_of(&nodes[1]), &["add", "4", &fourth_peer]);
    assert!(roles(&added).contains(&("4".into(), "learner".into())), "{added}");
    let promoted = member(&nodes[2], &peer_of(&nodes[2]), &["promote", "4"]);
    assert!(roles(&promoted).contains(&("4".into(), "voter".into())), "{promoted}");
    fourth.wait_ready().await.unwrap_or_else(|log| panic!("the fourth node is not ready:\n{log}"));
    assert!(stored(&fourth).await.contains("before-join"));
    configmaps(&fourth).create(&PostParams::default(), &configmap("from-4", &[])).await.unwrap();
    assert!(stored(&nodes[0]).await.contains("from-4"));

    // Removing a member leaves four minus one voters, and the rest keep serving.
    let removed = member(&nodes[0], &endpoint, &["remove", "2"]);
    let ids: Vec<String> = roles(&removed).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["1", "3", "4"], "{removed}");
    configmaps(&nodes[2]).create(&PostParams::default(), &configmap("after-remove", &[])).await.unwrap();
    assert!(stored(&fourth).await.contains("after-remove"));
}


/// Every member says which peer protocol it speaks (`apiserver member list`, from the probes),
/// and a replica refuses a caller that speaks one older than it takes, over the real mutual-TLS
/// peer port, while a caller that says nothing (a build from before versions) is served.
#[tokio::test]
async fn members_say_their_peer_protocol_and_a_caller_too_old_is_refused() {
    use raft_store::protocol::PROTOCOL;
    let nodes = cluster().await;
    let peer = nodes[0].flag("--initial-cluster").split(',').find_map(|e| e.strip_prefix("1=")).unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let listing = member(&nodes[0], &peer, &["list"]);
        let protocols: Vec<String> = listing.lines().skip(1).map(|l| l.split_whitespace().nth(3).unwrap_or_default().to_string()).collect();
        if protocols.len() == 3 && protocols.iter().all(|p| *p == PROTOCOL.to_string()) {
            break;
        }
        assert!(Instant::now() < deadline, "members do not all say protocol {PROTOCOL}:\n{listing}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let pki = nodes[0].data_dir().join("pki");
    let read = |f: &str| std::fs::read_to_string(pki.join(f)).unwrap();
    let tls = tonic::transport::ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(read("ca.crt")))
        .identity(tonic::transport::Identity::from_pem(read("peer.crt"), read("peer.key")))
        .domain_name("127.0.0.1");
    let channel = tonic::transport::Endpoint::from_shared(format!("https://{peer}")).unwrap().tls_config(tls).unwrap().connect().await.unwrap();
    let mut client = proto::raft::raft_client::RaftClient::new(channel);
    let probe = |version: Option<&str>| {
        let mut req = tonic::Request::new(proto::raft::RaftPayload::default());
        if let Some(v) = version {
            req.metadata_mut().insert("apiserver-peer-protocol", v.parse().unwrap());
        }
        req
    };
    let refused = client.probe(probe(Some("0"))).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition, "{refused:?}");
    assert!(refused.message().contains("speaks peer protocol 0"), "{}", refused.message());
    let answer = client.probe(probe(None)).await.unwrap().into_inner().payload;
    let spoken: u32 = ciborium::from_reader(answer.as_slice()).unwrap();
    assert_eq!(spoken, PROTOCOL);
}

/// A RoleBinding written through one node authorizes at once on every node: each replica
/// decides from its own index, and one that is behind decides again once it has caught up.
#[tokio::test]
async fn a_role_binding_written_on_one_node_authorizes_on_every_node() {
    let nodes = cluster().await;
    nodes[0].kubectl_ok(&["create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps", "-n", "default"]);
    let users: Vec<std::path::PathBuf> = (0..3).map(|i| nodes[i].kubeconfig_for(&format!("user-{i}"), &[])).collect();
    for round in 0..9 {
        let (writer, reader) = (round % 3, (round + 1 + round / 3) % 3);
        let user = format!("user-{reader}");
        let binding = format!("b-{round}");
        nodes[writer].kubectl_ok(&["create", "rolebinding", &binding, "--role=cm-reader", &format!("--user={user}"), "-n", "default"]);
        let out = nodes[reader].kubectl_as(&users[reader], &["get", "configmaps", "-n", "default"]);
        assert!(out.status.success(), "round {round}: node {reader} refused {user} right after node {writer} bound it: {}", String::from_utf8_lossy(&out.stderr));
        nodes[writer].kubectl_ok(&["delete", "rolebinding", &binding, "-n", "default"]);
        // A revoked binding stops allowing once the reader has applied the deletion.
        let deadline = Instant::now() + Duration::from_secs(5);
        while nodes[reader].kubectl_as(&users[reader], &["get", "configmaps", "-n", "default"]).status.success() {
            assert!(Instant::now() < deadline, "round {round}: node {reader} still allows {user} after the binding was deleted");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test]
async fn a_follower_behind_the_commit_does_not_refuse_a_new_binding() {
    let nodes = cluster_of(common::failpoints::apiserver(), &[]).await;
    let leader = leader_index(&nodes).await;
    let follower = (leader + 1) % 3;
    nodes[leader].kubectl_ok(&["create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps", "-n", "default"]);
    let user = nodes[follower].kubeconfig_for("late", &[]);
    // Hold the follower's apply back: every batch it applies waits 700 ms first.
    let hold = http::Request::put("/debug/failpoints/apply-delay").body(b"return(700)".to_vec()).unwrap();
    assert_eq!(nodes[follower].request(hold).await.status, 200);
    nodes[leader].kubectl_ok(&["create", "rolebinding", "late-reads", "--role=cm-reader", "--user=late", "-n", "default"]);
    // The follower has not applied the binding yet (a read of its own state does not find it) ...
    let local = nodes[follower].get("/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/late-reads?resourceVersion=0").await;
    assert_eq!(local.status, 404, "the follower was not behind; the test proves nothing");
    // ... yet a request through it is allowed: refused at first, it is decided again once the
    // follower has caught up with the leader's commit.
    let out = nodes[follower].kubectl_as(&user, &["get", "configmaps", "-n", "default"]);
    assert!(out.status.success(), "the lagging follower refused a binding the leader had committed: {}", String::from_utf8_lossy(&out.stderr));
    let clear = http::Request::delete("/debug/failpoints/apply-delay").body(vec![]).unwrap();
    assert_eq!(nodes[follower].request(clear).await.status, 200);
}

#[tokio::test]
async fn a_token_issued_by_one_node_authenticates_on_every_node() {
    let nodes = cluster().await;
    for round in 0..3 {
        let (issuer, user) = (round, (round + 1) % 3);
        let account = format!("robot-{round}");
        nodes[issuer].kubectl_ok(&["create", "serviceaccount", &account]);
        let token = nodes[issuer].kubectl_ok(&["create", "token", &account]).trim().to_string();
        // Straight away, through another node: the account may not be applied there yet.
        let kubeconfig = nodes[user].token_kubeconfig(&account, &token);
        let out = nodes[user].kubectl_as(&kubeconfig, &["auth", "whoami"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "node {user} refused a token node {issuer} issued: {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains(&format!("system:serviceaccount:default:{account}")), "{text}");
    }
}

/// Waits up to 20 s for `done`.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Whether `node`'s log says its `controller` started leading.
fn leads(node: &TestServer, controller: &str) -> bool {
    node.log().lines().any(|l| l.contains("this node leads: controller started") && l.contains(controller))
}

#[tokio::test]
async fn controllers_run_on_the_leader_and_move_with_it() {
    let mut nodes = cluster_with(&["--enable-bootstrap-token-auth"]).await;
    let leader = leader_index(&nodes).await;
    eventually("the leader did not start its controllers", || ["serviceaccount", "bootstrap-tokens", "garbagecollector"].iter().all(|c| leads(&nodes[leader], c))).await;
    for (i, node) in nodes.iter().enumerate().filter(|(i, _)| *i != leader) {
        assert!(!node.log().contains("this node leads: controller started"), "follower {i} runs a controller:\n{}", node.log());
    }
    let (a, b) = ((leader + 1) % 3, (leader + 2) % 3);
    // A namespace made through one follower gets its default account, seen through the other.
    nodes[a].kubectl_ok(&["create", "namespace", "before"]);
    eventually("no default account in the namespace", || nodes[b].kubectl(&["-n", "before", "get", "serviceaccount", "default"]).status.success()).await;
    // A bootstrap token that expires after the leader is gone.
    let soon = (chrono::Utc::now() + chrono::Duration::seconds(3)).format("%Y-%m-%dT%H:%M:%SZ").to_string();
    nodes[a].kubectl_ok(&["-n", "kube-system", "create", "secret", "generic", "bootstrap-token-moving", "--type", "bootstrap.kubernetes.io/token", "--from-literal=token-id=moving", "--from-literal=token-secret=0123456789abcdef", &format!("--from-literal=expiration={soon}")]);

    nodes[leader].kill9();
    let started = Instant::now();
    let new_leader = loop {
        let text = nodes[a].get("/metrics").await.text();
        let id = gauge(&text, "apiserver_raft_leader_id") as usize;
        if id >= 1 && id - 1 != leader {
            break id - 1;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no new leader");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    eventually("the new leader did not take the controllers over", || ["serviceaccount", "bootstrap-tokens", "garbagecollector"].iter().all(|c| leads(&nodes[new_leader], c))).await;
    let other = if new_leader == a { b } else { a };
    assert!(!nodes[other].log().contains("this node leads: controller started"), "the remaining follower runs a controller");
    nodes[other].kubectl_ok(&["create", "namespace", "after"]);
    eventually("no default account after the leader moved", || nodes[other].kubectl(&["-n", "after", "get", "serviceaccount", "default"]).status.success()).await;
    eventually("the new leader's cleaner left the expired token", || !nodes[other].kubectl(&["-n", "kube-system", "get", "secret", "bootstrap-token-moving"]).status.success()).await;
    // The garbage collector moved too: a dependent made through the follower goes with its owner.
    nodes[other].kubectl_ok(&["create", "configmap", "owner"]);
    let uid = nodes[other].kubectl_ok(&["get", "configmap", "owner", "-o", "jsonpath={.metadata.uid}"]);
    let dependent = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dependent",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]}});
    configmaps(&nodes[other]).create(&PostParams::default(), &serde_json::from_value(dependent).unwrap()).await.unwrap();
    nodes[other].kubectl_ok(&["delete", "configmap", "owner"]);
    eventually("the new leader's garbage collector left the dependent", || !nodes[other].kubectl(&["get", "configmap", "dependent"]).status.success()).await;
    // The FlowSchema status controller (which watches through the loopback client) moved too.
    let schema = serde_json::json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "moved"},
        "spec": {"matchingPrecedence": 900, "priorityLevelConfiguration": {"name": "nowhere"}}});
    let file = nodes[other].dir().join("flowschema.json");
    std::fs::write(&file, schema.to_string()).unwrap();
    nodes[other].kubectl_ok(&["create", "-f", file.to_str().unwrap()]);
    let dangling = || nodes[other].kubectl_ok(&["get", "flowschema", "moved", "-o", "jsonpath={.status.conditions[?(@.type==\"Dangling\")].status}"]);
    eventually("the new leader did not mark the schema dangling", || dangling() == "True").await;
}

#[tokio::test]
async fn a_node_stopped_with_sigterm_exits_while_the_others_run() {
    let mut nodes = cluster().await;
    let leader = leader_index(&nodes).await;
    let follower = (leader + 1) % 3;
    // The other replicas' standing streams do not hold a stopping node up.
    assert!(nodes[follower].sigterm(Duration::from_secs(10)).is_some(), "a follower still runs 10 s after SIGTERM:\n{}", nodes[follower].log());
    assert!(nodes[leader].sigterm(Duration::from_secs(10)).is_some(), "the leader still runs 10 s after SIGTERM:\n{}", nodes[leader].log());
}

#[tokio::test]
async fn an_oidc_token_authenticates_on_every_node() {
    let issuer = common::oidc_issuer::OidcIssuer::start().await;
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("authn.yaml");
    let doc = serde_json::json!({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthenticationConfiguration",
        "jwt": [{"issuer": {"url": issuer.url, "certificateAuthority": issuer.ca_pem, "audiences": ["kube"]},
                 "claimMappings": {"username": {"claim": "sub", "prefix": "oidc:"}}}]});
    std::fs::write(&config, doc.to_string()).unwrap();
    let nodes = cluster_with(&["--authentication-config", config.to_str().unwrap()]).await;
    let token = issuer.token("alice", "kube", serde_json::json!({}));
    for (i, node) in nodes.iter().enumerate() {
        let kubeconfig = node.token_kubeconfig("alice", &token);
        let mut text = String::new();
        for _ in 0..50 {
            let out = node.kubectl_as(&kubeconfig, &["auth", "whoami"]);
            text = String::from_utf8_lossy(&out.stdout).into_owned();
            if out.status.success() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(text.contains("oidc:alice"), "node {i}: {text}");
    }
}

#[tokio::test]
async fn a_definition_created_through_one_node_is_served_by_every_node() {
    let nodes = cluster().await;
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"], "categories": ["all"]},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                     "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                     "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
                     "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                         "spec": {"type": "object", "description": "What a gadget should be.", "properties": {
                             "size": {"type": "integer", "default": 2}, "replicas": {"type": "integer"}, "color": {"type": "string"}}},
                         "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}]},
    });
    let path = nodes[1].dir().join("gadgets.json");
    std::fs::write(&path, crd.to_string()).unwrap();
    nodes[1].kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
    nodes[1].kubectl_ok(&["wait", "--for", "condition=established", "crd/gadgets.example.com", "--timeout=20s"]);
    // A custom resource created through each node is read, defaulted, through every node.
    for (i, node) in nodes.iter().enumerate() {
        let body = serde_json::json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": format!("g{i}")}, "spec": {}});
        let req = http::Request::post("/apis/example.com/v1/namespaces/default/gadgets").header("content-type", "application/json").body(body.to_string().into_bytes()).unwrap();
        let created = node.request(req).await;
        assert_eq!(created.status, 201, "node {i}: {}", created.text());
    }
    for (i, node) in nodes.iter().enumerate() {
        let list = node.get("/apis/example.com/v1/namespaces/default/gadgets").await;
        assert_eq!(list.status, 200, "node {i}: {}", list.text());
        let items = list.json()["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 3, "node {i}");
        assert!(items.iter().all(|g| g["spec"]["size"] == 2), "node {i}: {items:?}");
        // kubectl on every node: the printer column, the short name, the `all` category, explain.
        let table = node.kubectl_ok(&["get", "gd"]);
        assert!(table.lines().next().is_some_and(|h| h.split_whitespace().eq(["NAME", "SIZE"])), "node {i}: {table}");
        assert!(table.lines().any(|l| l.split_whitespace().eq(["g0", "2"])), "node {i}: {table}");
        let all = node.kubectl_ok(&["get", "all", "-o", "name"]);
        assert!(all.lines().filter(|l| l.starts_with("gadget.example.com/")).count() == 3, "node {i}: {all}");
        let explained = node.kubectl_ok(&["explain", "gadgets.spec"]);
        assert!(explained.contains("What a gadget should be.") && explained.contains("replicas"), "node {i}: {explained}");
    }
    // Scale and apply through one node, seen through another.
    nodes[2].kubectl_ok(&["scale", "gadget/g0", "--replicas=4"]);
    assert_eq!(nodes[0].kubectl_ok(&["get", "gadget", "g0", "-o", "jsonpath={.spec.replicas}"]), "4");
    let applied = nodes[0].dir().join("g0.yaml");
    std::fs::write(&applied, "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g0\nspec:\n  color: red\n").unwrap();
    nodes[0].kubectl_ok(&["apply", "--server-side", "-f", applied.to_str().unwrap()]);
    assert_eq!(nodes[1].kubectl_ok(&["get", "gadget", "g0", "-o", "jsonpath={.spec.color}/{.spec.replicas}"]), "red/4");
    // Deleting the definition through one node takes its resources, then its routes, everywhere.
    nodes[0].kubectl_ok(&["delete", "crd", "gadgets.example.com", "--timeout=30s"]);
    for (i, node) in nodes.iter().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(10);
        while node.get("/apis/example.com/v1/namespaces/default/gadgets").await.status != 404 {
            assert!(Instant::now() < deadline, "node {i} still serves gadgets");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let recreated = nodes[2].kubectl_ok(&["create", "-f", path.to_str().unwrap()]);
    assert!(recreated.contains("created"), "{recreated}");
    nodes[2].kubectl_ok(&["wait", "--for", "condition=established", "crd/gadgets.example.com", "--timeout=20s"]);
    assert_eq!(nodes[0].kubectl_ok(&["get", "gadgets", "-o", "name"]), "", "the old resources went with the old definition");
}

/// A follower that misses the leader's heartbeats past its election timeout (paused here, as a
/// replica starved of CPU or cut off for a moment would be) asks the others before it stands;
/// they still hear from the leader and would not vote for it, so it neither raises the term nor
/// deposes the leader, and follows again once it runs.
#[tokio::test]
async fn a_follower_paused_past_its_election_timeout_neither_raises_the_term_nor_deposes_the_leader() {
    let nodes = cluster().await;
    let leader = leader_index(&nodes).await;
    let follower = (leader + 1) % 3;
    let terms = async || {
        let mut terms = Vec::new();
        for node in &nodes {
            terms.push(gauge(&node.get("/metrics").await.text(), "apiserver_raft_term"));
        }
        terms
    };
    let before = terms().await;
    let signal = |sig: &str| {
        let pid = nodes[follower].pid().to_string();
        assert!(std::process::Command::new("kill").args([sig, &pid]).status().expect("run kill").success(), "kill {sig} {pid} failed");
    };
    // Each pause is several election timeouts (300-600 ms) long.
    for _ in 0..3 {
        signal("-STOP");
        tokio::time::sleep(Duration::from_millis(2000)).await;
        signal("-CONT");
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    configmaps(&nodes[follower]).create(&PostParams::default(), &configmap("after-the-pauses", &[])).await.unwrap();
    assert_eq!(terms().await, before, "the paused follower raised the term");
    assert_eq!(leader_index(&nodes).await, leader, "the leader changed");
}
