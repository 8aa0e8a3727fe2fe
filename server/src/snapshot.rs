//! `apiserver snapshot save|status|restore`: backups of a cluster's state (the file is
//! `raft_store::backup`'s). `save` asks a member's HTTPS port for `GET /backup` with the
//! credentials of a kubeconfig and writes the stream to a file beside the target, which becomes
//! the target only once it checks out; `restore` makes a data directory hold the state.

use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context};
use http_body_util::BodyExt;

use crate::cli::SnapshotAction;
use raft_store::backup;

pub async fn run(data_dir: &Path, action: &SnapshotAction) -> anyhow::Result<()> {
    match action {
        SnapshotAction::Save { file, kubeconfig } => save(file, kubeconfig).await,
        SnapshotAction::Status { file } => {
            let header = backup::status(file).map_err(anyhow::Error::msg)?;
            print_header(file, &header);
            Ok(())
        }
        SnapshotAction::Restore { file, node_id, initial_cluster } => {
            let restored = backup::restore(file, data_dir, *node_id, initial_cluster).map_err(anyhow::Error::msg)?;
            println!(
                "restored {} objects at revision {} into {} (node {node_id}); the cluster goes on from revision {}",
                restored.header.objects,
                restored.header.revision,
                data_dir.display(),
                restored.revision
            );
            println!("start the node on it; clients that hold a newer resourceVersion than the backup's are answered 410 Gone and list again");
            Ok(())
        }
    }
}

async fn save(file: &Path, kubeconfig: &Path) -> anyhow::Result<()> {
    let endpoint = machinery::webhook::kubeconfig::load(kubeconfig).map_err(|e| anyhow::anyhow!("{}: {e}", kubeconfig.display()))?;
    let request = http::Request::get(serving::backup::PATH).body(http_body_util::Full::new(bytes::Bytes::new()))?;
    let resp = endpoint.send(request).await.map_err(|e| anyhow::anyhow!("asking {} for a backup: {e}", endpoint.url()))?;
    let status = resp.status();
    let mut body = resp.into_body();
    if !status.is_success() {
        let text = body.collect().await.map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned()).unwrap_or_default();
        bail!("{} refused the backup ({status}): {text}", endpoint.url());
    }
    let partial = file.with_extension("partial");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&partial).with_context(|| format!("creating {}", partial.display()))?);
    while let Some(frame) = body.frame().await {
        let frame = frame.context("reading the backup")?;
        if let Ok(data) = frame.into_data() {
            out.write_all(&data).with_context(|| format!("writing {}", partial.display()))?;
        }
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    let header = match backup::status(&partial) {
        Ok(header) => header,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            bail!("the backup received does not check out: {e}");
        }
    };
    std::fs::rename(&partial, file).with_context(|| format!("renaming {} to {}", partial.display(), file.display()))?;
    print_header(file, &header);
    Ok(())
}

fn print_header(file: &Path, header: &backup::Header) {
    let time = chrono::DateTime::from_timestamp(header.time as i64, 0).map(|t| t.to_rfc3339()).unwrap_or_default();
    let size = std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
    println!("{}: format {}, revision {}, {} objects, taken from node {} at {time}, {size} bytes, checksum ok", file.display(), header.format, header.revision, header.objects, header.node);
}
