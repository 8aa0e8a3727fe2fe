//! The cluster under test: one apiserver process per network-namespace host, HAProxy in front
//! of them on the runner's loopback, and the operations faults are made of (kill, pause, wipe,
//! restart, membership changes, failpoints). Clients are kube-rs clients with the admin
//! certificate the binary generated.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::net::Net;

const API_PORT: u16 = 6443;
const PEER_PORT: u16 = 2380;
/// Each node's own file system, when faults fill disks.
const SMALL_DISK_MIB: u64 = 512;
/// What a filled disk leaves free: less than the reserve a node keeps.
const FILLED_LEAVES: u64 = 16 << 20;

/// One replica: its data directory and, while it runs, its process.
struct Node {
    dir: PathBuf,
    process: Option<Child>,
    paused: bool,
    /// The binary it runs: an earlier version's until a rolling upgrade reaches it.
    bin: PathBuf,
}

pub struct Cluster {
    pub net: Net,
    bin: PathBuf,
    dir: PathBuf,
    nodes: Vec<Node>,
    haproxy: Option<Child>,
    pub lb_port: u16,
    /// `FAILPOINTS` given to every node at start (the deliberately broken modes).
    failpoints: Option<String>,
    /// Flags every node starts with, besides its address and membership.
    flags: Vec<String>,
    /// Whether each node's data directory is a small file system of its own (for `disk-full`).
    small_disks: bool,
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn signal(pid: u32, sig: &str) -> Result<()> {
    let status = Command::new("kill").args([sig, &pid.to_string()]).status()?;
    if !status.success() {
        bail!("kill {sig} {pid} failed");
    }
    Ok(())
}

impl Cluster {
    /// Starts `nodes` replicas of a new cluster under `dir` and the load balancer; with
    /// `small_disks`, each on a tmpfs of its own; on `first_bin` (an earlier version, for a
    /// rolling upgrade to `bin`) when given.
    pub fn start(bin: &Path, first_bin: Option<&Path>, dir: &Path, nodes: u32, failpoints: Option<String>, flags: Vec<String>, small_disks: bool) -> Result<Cluster> {
        let net = Net::create(nodes)?;
        let lb_port = free_port()?;
        let status = Command::new(bin)
            .args(["certs", "--data-dir"])
            .arg(dir.join("ca"))
            .args(["--server", &format!("https://127.0.0.1:{lb_port}")])
            .stdout(Stdio::null())
            .status()
            .context("apiserver certs")?;
        if !status.success() {
            bail!("apiserver certs failed");
        }
        let mut cluster = Cluster { net, bin: bin.to_path_buf(), dir: dir.to_path_buf(), nodes: Vec::new(), haproxy: None, lb_port, failpoints, flags, small_disks };
        let first = first_bin.unwrap_or(bin).to_path_buf();
        cluster.nodes = (1..=nodes).map(|i| Node { dir: dir.join(format!("node-{i}")), process: None, paused: false, bin: first.clone() }).collect();
        for i in 1..=nodes {
            if small_disks {
                cluster.mount_small_disk(i)?;
            }
            cluster.seed_pki(i)?;
            cluster.launch(i, "new")?;
        }
        cluster.start_haproxy()?;
        Ok(cluster)
    }

    pub fn size(&self) -> u32 {
        self.nodes.len() as u32
    }

    fn node(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize - 1]
    }

    /// Mounts a tmpfs of `SMALL_DISK_MIB` as node `i`'s data directory.
    fn mount_small_disk(&mut self, i: u32) -> Result<()> {
        let dir = self.node(i).dir.clone();
        std::fs::create_dir_all(&dir)?;
        let status = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={SMALL_DISK_MIB}m"), "tmpfs"]).arg(&dir).status()?;
        if !status.success() {
            bail!("mounting a tmpfs on {}", dir.display());
        }
        Ok(())
    }

    /// Fills node `i`'s file system until less than a node's reserve is left.
    pub fn fill_disk(&mut self, i: u32) -> Result<()> {
        if !self.small_disks {
            bail!("disk-full needs the nodes on small disks of their own");
        }
        let dir = self.node(i).dir.clone();
        // Only ever the node's own small file system, never the disk everything else is on.
        let size = df(&dir, "size")?;
        if size > SMALL_DISK_MIB << 20 {
            bail!("{} is not on its small disk ({size} bytes)", dir.display());
        }
        let free = df(&dir, "avail")?;
        let mut filler = std::io::BufWriter::new(std::fs::File::create(dir.join("filler"))?);
        let block = vec![0x5a_u8; 1 << 20];
        let mut left = free.saturating_sub(FILLED_LEAVES);
        while left > 0 {
            let n = left.min(block.len() as u64) as usize;
            std::io::Write::write_all(&mut filler, &block[..n])?;
            left -= n as u64;
        }
        std::io::Write::flush(&mut filler)?;
        Ok(())
    }

    /// Frees what `fill_disk` took.
    pub fn free_disk(&mut self, i: u32) -> Result<()> {
        let filler = self.node(i).dir.join("filler");
        if filler.exists() {
            std::fs::remove_file(filler)?;
        }
        Ok(())
    }

    /// Gives node `i` the cluster CA, from which it issues its own certificates.
    fn seed_pki(&mut self, i: u32) -> Result<()> {
        let pki = self.node(i).dir.join("pki");
        std::fs::create_dir_all(&pki)?;
        for f in ["ca.crt", "ca.key", "sa.key"] {
            std::fs::copy(self.dir.join("ca/pki").join(f), pki.join(f))?;
        }
        Ok(())
    }

    pub fn peer_addr(&self, i: u32) -> String {
        format!("{}:{PEER_PORT}", self.net.node_ip(i))
    }

    /// Starts node `i` on its data directory; `state` is `new` or `existing`.
    fn launch(&mut self, i: u32, state: &str) -> Result<()> {
        self.launch_with(i, state, &[])
    }

    /// Kills node `i` and starts it alone with `--force-new-cluster` (once: a later restart
    /// goes without the flag).
    pub fn force_alone(&mut self, i: u32) -> Result<()> {
        self.kill(i)?;
        self.launch_with(i, "existing", &["--force-new-cluster"])
    }

    /// `launch` with flags for this start only.
    fn launch_with(&mut self, i: u32, state: &str, extra: &[&str]) -> Result<()> {
        let members: Vec<String> = (1..=self.size()).map(|j| format!("{j}={}", self.peer_addr(j))).collect();
        let dir = self.node(i).dir.clone();
        // Beside the data directory, which may be a file system unmounted at the end.
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join(format!("node-{i}.log")))?;
        let bin = self.node(i).bin.clone();
        let mut cmd = self.net.command(i, &bin);
        cmd.arg("--data-dir")
            .arg(&dir)
            .args(["--bind-address", &self.net.node_ip(i), "--secure-port", &API_PORT.to_string()])
            .args(["--node-id", &i.to_string(), "--initial-cluster", &members.join(","), "--initial-cluster-state", state])
            .args(&self.flags)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        if let Some(fp) = &self.failpoints {
            cmd.env("FAILPOINTS", fp);
        }
        let child = cmd.spawn().context("starting apiserver")?;
        let node = self.node(i);
        node.process = Some(child);
        node.paused = false;
        Ok(())
    }

    fn start_haproxy(&mut self) -> Result<()> {
        let mut cfg = String::from(
            "global\n  maxconn 4096\ndefaults\n  mode tcp\n  retries 3\n  option redispatch\n  timeout connect 1s\n  timeout client 1h\n  timeout server 1h\n",
        );
        cfg += &format!("frontend apiserver\n  bind 127.0.0.1:{}\n  default_backend nodes\nbackend nodes\n", self.lb_port);
        cfg += "  option httpchk GET /readyz\n  http-check expect status 200\n";
        cfg += "  default-server check check-ssl verify none inter 500ms fall 2 rise 1\n";
        for i in 1..=self.size() {
            cfg += &format!("  server node-{i} {}:{API_PORT}\n", self.net.node_ip(i));
        }
        let path = self.dir.join("haproxy.cfg");
        std::fs::write(&path, cfg)?;
        let log = std::fs::File::create(self.dir.join("haproxy.log"))?;
        let child = Command::new("haproxy").arg("-f").arg(&path).arg("-db").stdout(log.try_clone()?).stderr(log).spawn().context("starting haproxy")?;
        self.haproxy = Some(child);
        Ok(())
    }

    /// A client for node `i` (`None`: through the load balancer). `timeout` bounds each read.
    pub async fn client(&self, node: Option<u32>, timeout: Option<Duration>) -> Result<kube::Client> {
        let kubeconfig = Kubeconfig::read_from(self.dir.join("ca/admin.kubeconfig"))?;
        let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
        if let Some(i) = node {
            config.cluster_url = format!("https://{}:{API_PORT}", self.net.node_ip(i)).parse()?;
        }
        config.connect_timeout = Some(Duration::from_secs(2));
        config.read_timeout = timeout;
        config.write_timeout = Some(Duration::from_secs(5));
        Ok(kube::Client::try_from(config)?)
    }

    pub fn is_running(&self, i: u32) -> bool {
        self.nodes[i as usize - 1].process.is_some()
    }

    pub fn is_paused(&self, i: u32) -> bool {
        self.nodes[i as usize - 1].paused
    }

    /// `kill -9` of node `i`.
    pub fn kill(&mut self, i: u32) -> Result<()> {
        if let Some(mut child) = self.node(i).process.take() {
            child.kill()?;
            child.wait()?;
        }
        self.node(i).paused = false;
        Ok(())
    }

    /// Whether node `i` runs the binary under test.
    pub fn upgraded(&self, i: u32) -> bool {
        self.nodes[i as usize - 1].bin == self.bin
    }

    /// Makes node `i` run the binary under test from its next start.
    pub fn upgrade(&mut self, i: u32) {
        self.node(i).bin = self.bin.clone();
    }

    /// Restarts node `i` on its data directory.
    pub fn restart(&mut self, i: u32) -> Result<()> {
        if self.is_running(i) {
            return Ok(());
        }
        self.launch(i, "existing")
    }

    /// SIGSTOP (`pause`) or SIGCONT of node `i`.
    pub fn pause(&mut self, i: u32, pause: bool) -> Result<()> {
        let Some(pid) = self.node(i).process.as_ref().map(Child::id) else { return Ok(()) };
        signal(pid, if pause { "-STOP" } else { "-CONT" })?;
        self.node(i).paused = pause;
        Ok(())
    }

    /// Kills node `i` and deletes its data (its certificates stay: the host keeps its identity).
    pub fn wipe(&mut self, i: u32) -> Result<()> {
        self.kill(i)?;
        let dir = self.node(i).dir.clone();
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.file_name().is_some_and(|n| n != "pki") {
                if path.is_dir() {
                    std::fs::remove_dir_all(&path)?;
                } else {
                    std::fs::remove_file(&path)?;
                }
            }
        }
        Ok(())
    }

    /// Where a backup taken at `now` goes.
    pub fn backup_path(&self, now: u64) -> PathBuf {
        self.dir.join(format!("backup-{now}"))
    }

    /// `apiserver snapshot save` of the cluster through node `i`'s HTTPS port into `file`, as the
    /// admin; the backup's revision, from `apiserver snapshot status`.
    pub fn save_backup(&self, i: u32, file: &Path) -> Result<u64> {
        let admin = std::fs::read_to_string(self.dir.join("ca/admin.kubeconfig"))?;
        let kubeconfig = self.dir.join(format!("node-{i}.kubeconfig"));
        std::fs::write(&kubeconfig, admin.replace(&format!("https://127.0.0.1:{}", self.lb_port), &format!("https://{}:{API_PORT}", self.net.node_ip(i))))?;
        let save = [std::ffi::OsStr::new("snapshot"), "save".as_ref(), file.as_os_str(), "--kubeconfig".as_ref(), kubeconfig.as_os_str()];
        self.run(&save)?;
        let status = self.run(&["snapshot".as_ref(), "status".as_ref(), file.as_os_str()])?;
        status.split("revision ").nth(1).and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()).and_then(|r| r.parse().ok()).with_context(|| format!("no revision in {status:?}"))
    }

    /// `apiserver snapshot restore` of `file` into node `i`'s (wiped) data directory, as a member
    /// of a new cluster of the same members; the revision the new cluster goes on from.
    pub fn restore_backup(&mut self, i: u32, file: &Path) -> Result<u64> {
        let members: Vec<String> = (1..=self.size()).map(|j| format!("{j}={}", self.peer_addr(j))).collect();
        let (dir, id, members) = (self.node(i).dir.clone(), i.to_string(), members.join(","));
        let args = ["snapshot".as_ref(), "restore".as_ref(), file.as_os_str(), "--data-dir".as_ref(), dir.as_os_str(), "--node-id".as_ref(), id.as_ref(), "--initial-cluster".as_ref(), members.as_ref()];
        let said = self.run(&args)?;
        said.split("goes on from revision ").nth(1).and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next()).and_then(|r| r.parse().ok()).with_context(|| format!("no revision in {said:?}"))
    }

    /// Runs the apiserver binary with `args` on the runner; its standard output.
    fn run(&self, args: &[&std::ffi::OsStr]) -> Result<String> {
        let out = Command::new(&self.bin).args(args).output()?;
        if !out.status.success() {
            bail!("apiserver {:?}: {}", args, String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `apiserver member ARGS` through node `via`.
    pub fn member(&self, via: u32, args: &[&str]) -> Result<String> {
        let out = Command::new(&self.bin)
            .args(["member", "--endpoint", &self.peer_addr(via), "--data-dir"])
            .arg(&self.nodes[via as usize - 1].dir)
            .args(args)
            .output()?;
        if !out.status.success() {
            bail!("apiserver member {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Sets (`Some(action)`) or clears a failpoint on node `i`.
    pub async fn failpoint(&self, i: u32, name: &str, action: Option<&str>) -> Result<()> {
        let client = self.client(Some(i), Some(Duration::from_secs(3))).await?;
        let uri = format!("/debug/failpoints/{name}");
        let req = match action {
            Some(a) => http::Request::put(uri).body(a.as_bytes().to_vec())?,
            None => http::Request::delete(uri).body(Vec::new())?,
        };
        client.request_text(req).await.with_context(|| format!("failpoint {name} on node {i}"))?;
        Ok(())
    }

    /// What node `i` reports through `/metrics`: (is it leader, leader id).
    pub async fn raft_view(&self, i: u32) -> Result<(bool, u64)> {
        let client = self.client(Some(i), Some(Duration::from_secs(2))).await?;
        let text = client.request_text(http::Request::get("/metrics").body(Vec::new())?).await?;
        let metric = |name: &str| {
            let line = text.lines().find(|l| l.strip_prefix(name).is_some_and(|rest| rest.starts_with(['{', ' '])));
            line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0)
        };
        Ok((metric("etcd_server_is_leader") == 1.0, metric("apiserver_raft_leader_id") as u64))
    }

    /// The node that says it leads (and that the others agree on), if any.
    pub async fn leader(&self) -> Option<u32> {
        for i in 1..=self.size() {
            if !self.is_running(i) || self.is_paused(i) {
                continue;
            }
            if let Ok((true, _)) = self.raft_view(i).await {
                return Some(i);
            }
        }
        None
    }

    /// Whether node `i` answers `/readyz`.
    pub async fn ready(&self, i: u32) -> bool {
        let Ok(client) = self.client(Some(i), Some(Duration::from_secs(2))).await else { return false };
        let Ok(req) = http::Request::get("/readyz").body(Vec::new()) else { return false };
        client.request_text(req).await.is_ok()
    }

    /// Waits until every running node is ready, up to `limit`.
    pub async fn wait_ready(&self, limit: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + limit;
        for i in 1..=self.size() {
            if !self.is_running(i) {
                continue;
            }
            while !self.ready(i).await {
                if tokio::time::Instant::now() > deadline {
                    bail!("node {i} not ready after {limit:?}");
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Ok(())
    }

    /// Stops everything this run started.
    pub fn stop(&mut self) {
        for i in 1..=self.size() {
            let _ = self.pause(i, false);
            let _ = self.kill(i);
        }
        if let Some(mut h) = self.haproxy.take() {
            let _ = h.kill();
            let _ = h.wait();
        }
        if std::mem::take(&mut self.small_disks) {
            for node in &self.nodes {
                let _ = Command::new("umount").arg("-l").arg(&node.dir).status();
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A figure in bytes (`size`, `avail`) of the file system holding `dir`, as `df` reports it.
fn df(dir: &std::path::Path, field: &str) -> Result<u64> {
    let out = Command::new("df").args(["-B1", &format!("--output={field}")]).arg(dir).output()?;
    Ok(String::from_utf8_lossy(&out.stdout).lines().nth(1).context("df")?.trim().parse()?)
}
