//! The API surface at each release this server can present, against kube-apiserver 1.36's at
//! the same `--emulated-version`: every group version, resource and subresource of aggregated
//! discovery (`/api` and `/apis`, `apidiscovery.k8s.io/v2`), with its kind, scope, verbs, short
//! names and categories, one line each. kube-apiserver's lines are recorded under
//! `tests/parity/discovery/RELEASE.txt`; `tests/parity/discovery/known-differences.txt` lists the
//! lines that differ yet (`RELEASE +line`: only this server has it, `RELEASE -line`: only
//! kube-apiserver), and like the parity test's list it only shrinks.
//!
//! Recording (a development tool): start kube-apiserver with `--emulated-version=RELEASE` (the
//! conformance `reference.sh` takes it in `REF_FLAGS`), then
//! `PARITY_RECORD=KUBECONFIG PARITY_RELEASE=RELEASE cargo test -p apiserver --test integration api_surface::`.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{send, TestServer};
use kube::Client;
use serde_json::Value;

/// The releases compared.
const RELEASES: &[&str] = &["1.34", "1.35", "1.36"];

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/parity/discovery")
}

fn words(v: &Value) -> String {
    let mut items: Vec<&str> = v.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    items.sort_unstable();
    items.join(",")
}

/// One line per resource and subresource a server's aggregated discovery lists.
async fn surface(client: &Client) -> BTreeSet<String> {
    let mut lines = BTreeSet::new();
    for path in ["/api", "/apis"] {
        let req = http::Request::get(path).header("Accept", AGGREGATED).body(Vec::new()).unwrap();
        let reply = send(client, req).await;
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        for group in reply.json()["items"].as_array().into_iter().flatten() {
            let name = group["metadata"]["name"].as_str().unwrap_or_default();
            for version in group["versions"].as_array().into_iter().flatten() {
                let gv = if name.is_empty() { version["version"].as_str().unwrap_or_default().to_string() } else { format!("{name}/{}", version["version"].as_str().unwrap_or_default()) };
                for r in version["resources"].as_array().into_iter().flatten() {
                    let resource = r["resource"].as_str().unwrap_or_default();
                    lines.insert(format!(
                        "{gv} {resource} kind={} scope={} verbs={} short={} categories={}",
                        r["responseKind"]["kind"].as_str().unwrap_or_default(),
                        r["scope"].as_str().unwrap_or_default(),
                        words(&r["verbs"]),
                        words(&r["shortNames"]),
                        words(&r["categories"]),
                    ));
                    for sub in r["subresources"].as_array().into_iter().flatten() {
                        lines.insert(format!(
                            "{gv} {resource}/{} kind={} verbs={}",
                            sub["subresource"].as_str().unwrap_or_default(),
                            sub["responseKind"]["kind"].as_str().unwrap_or_default(),
                            words(&sub["verbs"]),
                        ));
                    }
                }
            }
        }
    }
    lines
}

fn known_differences() -> BTreeSet<String> {
    let text = std::fs::read_to_string(dir().join("known-differences.txt")).unwrap_or_default();
    text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_lists_what_kube_apiserver_lists_at_each_release() {
    if let (Ok(kubeconfig), Ok(release)) = (std::env::var("PARITY_RECORD"), std::env::var("PARITY_RELEASE")) {
        let client = common::client_from(Path::new(&kubeconfig), false).await.expect("the reference's kubeconfig");
        let lines: Vec<String> = surface(&client).await.into_iter().collect();
        std::fs::create_dir_all(dir()).unwrap();
        std::fs::write(dir().join(format!("{release}.txt")), lines.join("\n") + "\n").unwrap();
        return;
    }
    let known = known_differences();
    let (mut differ, mut stale) = (Vec::new(), Vec::new());
    for release in RELEASES {
        let golden: BTreeSet<String> = std::fs::read_to_string(dir().join(format!("{release}.txt")))
            .unwrap_or_else(|e| panic!("{release}.txt: {e}; record it (see this file's header)"))
            .lines()
            .map(str::to_string)
            .collect();
        let server = TestServer::start_with(&[&format!("--emulated-version={release}")]).await;
        let ours = surface(&server.client()).await;
        let found: BTreeSet<String> =
            ours.difference(&golden).map(|l| format!("{release} +{l}")).chain(golden.difference(&ours).map(|l| format!("{release} -{l}"))).collect();
        differ.extend(found.difference(&known).cloned());
        stale.extend(known.iter().filter(|k| k.starts_with(&format!("{release} ")) && !found.contains(*k)).cloned());
    }
    assert!(differ.is_empty(), "discovery differs from kube-apiserver's (+ only here, - only there):\n{}", differ.join("\n"));
    assert!(stale.is_empty(), "listed in known-differences.txt but now the same (remove them):\n{}", stale.join("\n"));
}
