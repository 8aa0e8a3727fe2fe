//! Test support: runs the real `apiserver` binary on a free port with a temporary data
//! directory, and gives kube-rs, raw HTTP and kubectl access to it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use kube::{Client, Config};

pub struct TestServer {
    pub dir: tempfile::TempDir,
    pub port: u16,
    child: Option<Child>,
    args: Vec<String>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl TestServer {
    pub async fn start(extra: &[&str]) -> TestServer {
        let mut s = TestServer {
            dir: tempfile::tempdir().unwrap(),
            port: free_port(),
            child: None,
            args: extra.iter().map(|s| s.to_string()).collect(),
        };
        s.spawn().await;
        s
    }

    async fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.path().join("server.log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_apiserver"))
            .arg("--data-dir")
            .arg(self.dir.path())
            .args(["--secure-port", &self.port.to_string()])
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start apiserver");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("apiserver exited with {status}: {}", self.log());
            }
            if self.kubeconfig().exists() {
                if let Ok(client) = self.try_client().await {
                    let resp = client.request_text(http::Request::get("/readyz").body(vec![]).unwrap()).await;
                    if resp.is_ok_and(|b| b == "ok") {
                        return;
                    }
                }
            }
            assert!(Instant::now() < deadline, "apiserver not ready: {}", self.log());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("admin.kubeconfig")
    }

    async fn try_client(&self) -> Result<Client, Box<dyn std::error::Error>> {
        let kc = kube::config::Kubeconfig::read_from(self.kubeconfig())?;
        let mut cfg = Config::from_custom_kubeconfig(kc, &Default::default()).await?;
        // Tests see the server's answers as they are, without client-side retries.
        cfg.default_retry = false;
        Ok(Client::try_from(cfg)?)
    }

    pub async fn client(&self) -> Client {
        self.try_client().await.expect("client")
    }

    /// Sends a raw request; returns status, headers and body.
    pub async fn raw(&self, req: http::Request<Vec<u8>>) -> (u16, http::HeaderMap, serde_json::Value) {
        let client = self.client().await;
        let resp = client.send(req.map(kube::client::Body::from)).await.expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
        let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::String(String::from_utf8_lossy(&body).into()));
        (status, headers, json)
    }

    pub async fn get_json(&self, path: &str) -> (u16, serde_json::Value) {
        let (s, _, b) = self.raw(http::Request::get(path).body(vec![]).unwrap()).await;
        (s, b)
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new("kubectl").arg("--kubeconfig").arg(self.kubeconfig()).args(args).output().expect("run kubectl")
    }

    /// Runs kubectl and returns stdout, failing the test with stderr when it fails.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(out.status.success(), "kubectl {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    pub async fn restart(&mut self) {
        self.kill9();
        self.spawn().await;
    }

    pub fn sigterm(&mut self) -> std::process::ExitStatus {
        let mut c = self.child.take().unwrap();
        Command::new("kill").args(["-TERM", &c.id().to_string()]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(s) = c.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "no exit within 10 s of SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill9();
    }
}
