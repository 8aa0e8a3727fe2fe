//! Shared harness for the integration tests: runs the real `apiserver` binary over HTTPS on a
//! free port with a temporary data directory, and reaches it with kube-rs, raw HTTP and kubectl.

pub mod cluster;
pub mod failpoints;
pub mod oidc_issuer;
pub mod otlp_receiver;
pub mod ports;
pub mod tls_client;
pub mod user_cert;
pub mod webhook_server;

pub use ports::free_port;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::Status;
use kube::{Client, Config, ResourceExt};
use serde_json::{json, Value};

/// How long a server may take to answer `/readyz` with `ok`: a member of a cluster started with
/// long election timeouts (6-12 s) on a machine busy with other tests took more than 30 s.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// One running `apiserver` process with its own data directory; killed when dropped.
pub struct TestServer {
    binary: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    args: Vec<String>,
    child: Option<Child>,
    client: Option<Client>,
}

/// Flags for tests that list a namespace's ConfigMaps exactly: without the controller that puts
/// `kube-root-ca.crt` in every namespace.
pub const WITHOUT_ROOT_CA: &[&str] = &["--controllers=*,-root-ca-cert-publisher"];

/// A raw HTTP answer.
pub struct Reply {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("HTTP {} body is not JSON ({e}): {}", self.status, self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts the answer is a `Status` with this code and reason, and returns it.
    pub fn expect_status(&self, code: u16, reason: &str) -> Value {
        let body = self.json();
        assert_eq!(self.status, code, "HTTP status; body: {body}");
        assert_eq!(body["kind"], "Status", "{body}");
        assert_eq!(body["apiVersion"], "v1", "{body}");
        assert_eq!(body["status"], "Failure", "{body}");
        assert_eq!(body["code"], code, "{body}");
        assert_eq!(body["reason"], reason, "{body}");
        body
    }
}

pub async fn client_from(kubeconfig: &Path, anonymous: bool) -> Result<Client, Box<dyn std::error::Error>> {
    let kc = Kubeconfig::read_from(kubeconfig)?;
    let mut cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    // The tests look at the server's answers as they are (504, 429...), never at client retries.
    cfg.default_retry = false;
    if anonymous {
        // Trust the cluster CA but present no client certificate.
        cfg.auth_info = Default::default();
    }
    Ok(Client::try_from(cfg)?)
}

impl TestServer {
    /// Starts a server with the default flags.
    pub async fn start() -> TestServer {
        TestServer::start_with(&[]).await
    }

    /// A server not started yet, with extra flags.
    pub fn new(args: &[&str]) -> TestServer {
        TestServer {
            binary: PathBuf::from(env!("CARGO_BIN_EXE_apiserver")),
            dir: tempfile::tempdir().expect("tempdir"),
            port: free_port(),
            args: args.iter().map(|a| a.to_string()).collect(),
            child: None,
            client: None,
        }
    }

    /// The same server run from another build of the binary (e.g. [`failpoints::apiserver`]).
    pub fn with_binary(mut self, binary: PathBuf) -> TestServer {
        self.binary = binary;
        self
    }

    /// Starts a server with extra flags, e.g. `["--history-retention", "2s"]`.
    pub async fn start_with(args: &[&str]) -> TestServer {
        let mut server = TestServer::new(args);
        // Another test may grab the port between our probe and the server's bind: pick again.
        for _ in 0..3 {
            match server.spawn().await {
                Ok(()) => return server,
                Err(log) if log.contains("in use") => server.port = free_port(),
                Err(log) => panic!("apiserver exited before it was ready:\n{log}"),
            }
        }
        panic!("no free port found:\n{}", server.log());
    }

    /// Spawns the binary and waits for `/readyz`; `Err(stderr)` when the process exits first.
    async fn spawn(&mut self) -> Result<(), String> {
        self.launch();
        self.wait_ready().await
    }

    /// Spawns the binary without waiting for it (a cluster member is ready only once a quorum
    /// runs).
    pub fn launch(&mut self) {
        std::fs::create_dir_all(self.data_dir()).unwrap();
        let log = |name: &str| {
            std::fs::OpenOptions::new().create(true).append(true).open(self.dir.path().join(name)).unwrap()
        };
        let child = Command::new(&self.binary)
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(["--secure-port", &self.port.to_string(), "--bind-address", "127.0.0.1"])
            .args(&self.args)
            .stdout(log("apiserver.stdout"))
            .stderr(log("apiserver.stderr"))
            .spawn()
            .expect("spawn apiserver");
        self.child = Some(child);
        self.client = None;
    }

    /// Waits for `/readyz`; `Err(stderr)` when the process exits first.
    pub async fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return Err(format!("exit status {status}\n{}", self.log()));
            }
            if let Ok(client) = client_from(&self.kubeconfig_path(), false).await {
                let ready = client.request_text(http::Request::get("/readyz").body(vec![]).unwrap()).await;
                if ready.is_ok_and(|body| body == "ok") {
                    self.client = Some(client);
                    return Ok(());
                }
            }
            assert!(Instant::now() < deadline, "apiserver not ready within {READY_TIMEOUT:?}:\n{}", self.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The value given to `flag`, or an empty string.
    pub fn flag(&self, flag: &str) -> &str {
        self.args.iter().position(|a| a == flag).and_then(|i| self.args.get(i + 1)).map_or("", String::as_str)
    }

    /// Sets `flag` to `value` for the next start, replacing an earlier value.
    pub fn set_flag(&mut self, flag: &str, value: &str) {
        match self.args.iter().position(|a| a == flag) {
            Some(i) => self.args[i + 1] = value.to_string(),
            None => self.args.extend([flag.to_string(), value.to_string()]),
        }
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Scratch space of this test, beside the data directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    pub fn kubeconfig_path(&self) -> PathBuf {
        self.data_dir().join("admin.kubeconfig")
    }

    /// What the server wrote to stderr so far (all runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("apiserver.stderr")).unwrap_or_default()
    }

    /// A kube-rs client authenticated as the admin (client certificate, system:masters).
    pub fn client(&self) -> Client {
        self.client.clone().expect("the server is not running")
    }

    /// A kubeconfig (written beside the admin's) for `user` in `groups`: a client certificate
    /// with that common name and organizations, signed by the server's CA.
    pub fn kubeconfig_for(&self, user: &str, groups: &[&str]) -> PathBuf {
        let path = self.dir.path().join(format!("{}.kubeconfig", user.replace(':', "_")));
        user_cert::write_kubeconfig(&self.kubeconfig_path(), &self.data_dir().join("pki"), user, groups, &path);
        path
    }

    /// A kubeconfig (written beside the admin's, named `name`) that presents a bearer token
    /// instead of a client certificate.
    pub fn token_kubeconfig(&self, name: &str, token: &str) -> PathBuf {
        let path = self.dir.path().join(format!("{name}.kubeconfig"));
        user_cert::write_token_kubeconfig(&self.kubeconfig_path(), token, &path);
        path
    }

    /// A kube-rs client for a kubeconfig written by [`TestServer::kubeconfig_for`].
    pub async fn client_for(&self, kubeconfig: &Path) -> Client {
        client_from(kubeconfig, false).await.expect("client")
    }

    /// kubectl with another kubeconfig (e.g. one from [`TestServer::kubeconfig_for`]).
    pub fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        let mut cmd = self.kubectl_command(&[]);
        cmd.arg("--kubeconfig").arg(kubeconfig).args(args);
        cmd.output().expect("run kubectl")
    }

    /// A kube-rs client for the admin that impersonates `user` in `groups` (Impersonate-*
    /// headers, as client-go sends them).
    pub async fn impersonating_client(&self, user: &str, groups: &[&str]) -> Client {
        let kc = Kubeconfig::read_from(self.kubeconfig_path()).expect("admin kubeconfig");
        let mut cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.expect("config");
        cfg.default_retry = false;
        cfg.auth_info.impersonate = Some(user.to_string());
        cfg.auth_info.impersonate_groups = (!groups.is_empty()).then(|| groups.iter().map(|g| g.to_string()).collect());
        Client::try_from(cfg).expect("client")
    }

    /// A kube-rs client that trusts the CA but presents no certificate.
    pub async fn anonymous_client(&self) -> Client {
        client_from(&self.kubeconfig_path(), true).await.expect("anonymous client")
    }

    /// Sends a raw request as the admin.
    pub async fn request(&self, req: http::Request<Vec<u8>>) -> Reply {
        send(&self.client(), req).await
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.request(http::Request::get(path).body(vec![]).unwrap()).await
    }

    /// A `kubectl` command (the default one on the PATH) aimed at this server.
    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        self.kubectl_binary_command(Path::new("kubectl"), args)
    }

    /// A command for the given kubectl binary aimed at this server, with its own discovery cache.
    pub fn kubectl_binary_command(&self, kubectl: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(kubectl);
        cmd.arg("--kubeconfig")
            .arg(self.kubeconfig_path())
            .arg("--cache-dir")
            .arg(self.dir.path().join("kubectl-cache"))
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command(args).output().expect("run kubectl")
    }

    /// Runs kubectl, fails the test with its stderr unless it succeeds, returns stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        expect_success(args, self.kubectl(args))
    }

    /// `kubectl create -o json -f -` of `object`: what was created, or kubectl's error output.
    pub fn kubectl_create(&self, object: &Value) -> Result<Value, String> {
        use std::io::Write;
        let mut cmd = self.kubectl_command(&["create", "-o", "json", "-f", "-"]);
        cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("run kubectl");
        child.stdin.take().expect("kubectl's stdin").write_all(object.to_string().as_bytes()).expect("write to kubectl");
        let out = child.wait_with_output().expect("wait for kubectl");
        match out.status.success() {
            true => Ok(serde_json::from_slice(&out.stdout).expect("kubectl's JSON")),
            false => Err(String::from_utf8_lossy(&out.stderr).trim_end().to_string()),
        }
    }

    /// SIGKILL, without any chance to flush or clean up.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("kill -9");
            child.wait().expect("reap apiserver");
        }
        self.client = None;
    }

    /// Kills the process (if running) and starts it again on the same data directory and port.
    pub async fn restart(&mut self) {
        self.kill9();
        if let Err(log) = self.spawn().await {
            panic!("apiserver did not come back after a restart:\n{log}");
        }
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is not running").id()
    }

    /// Sends SIGTERM and waits up to `within` for the exit; `None` if it is still running.
    pub fn sigterm(&mut self, within: Duration) -> Option<ExitStatus> {
        let pid = self.pid();
        let sent = Command::new("kill").args(["-TERM", &pid.to_string()]).status().expect("run kill");
        assert!(sent.success(), "kill -TERM {pid} failed");
        self.wait_exit(within)
    }

    /// Waits up to `within` for the process to exit; `None` if it is still running.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                self.client = None;
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill9();
        if std::thread::panicking() {
            let log = self.log();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            eprintln!("--- apiserver stderr (last lines) ---");
            for line in tail.iter().rev() {
                eprintln!("{line}");
            }
        }
    }
}

/// Sends a raw request with any client.
pub async fn send(client: &Client, req: http::Request<Vec<u8>>) -> Reply {
    let resp = client.send(req.map(kube::client::Body::from)).await.expect("send request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.expect("read body").to_bytes().to_vec();
    Reply { status, headers, body }
}

/// The standard output of a command that ran `args`, asserting it succeeded.
pub fn expect_success(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "{args:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `apiserver ARGS` (the binary under test as a command-line tool), expecting success; its
/// standard output.
pub fn apiserver(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_apiserver")).args(args).output().unwrap();
    expect_success(args, out)
}

/// The `Status` of a failed kube-rs call; panics when the call succeeded or failed otherwise.
pub fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        Err(other) => panic!("expected an API error, got {other}"),
        Ok(value) => panic!("expected an API error, got success: {value:?}"),
    }
}

/// A ConfigMap with the given name, labels and one data entry.
pub fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let labels: serde_json::Map<String, Value> = labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "data": {"key": "value"},
    }))
    .unwrap()
}

/// The resourceVersion of an object as the number it is in this server.
pub fn rv(obj: &impl ResourceExt) -> u64 {
    let v = obj.resource_version().expect("object without resourceVersion");
    v.parse().unwrap_or_else(|_| panic!("resourceVersion {v:?} is not a decimal integer"))
}

/// The names of a list's items, in order.
pub fn names<K: ResourceExt + Clone>(list: &kube::core::ObjectList<K>) -> Vec<String> {
    list.items.iter().map(|o| o.name_any()).collect()
}
