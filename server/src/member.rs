//! `apiserver member list|add|promote|remove`: membership administration through a member's
//! peer endpoint, with the peer certificate of the node whose data directory is given.

use std::path::Path;

use anyhow::Context;
use raft_store::{MembershipChange, PeerTls};

use crate::cli::MemberAction;

pub async fn run(data_dir: &Path, endpoint: &str, action: &MemberAction) -> anyhow::Result<()> {
    let pki = data_dir.join("pki");
    let read = |f: &str| std::fs::read_to_string(pki.join(f)).with_context(|| format!("reading {}", pki.join(f).display()));
    let tls = PeerTls { ca_pem: read("ca.crt")?, cert_pem: read("peer.crt")?, key_pem: read("peer.key")? };
    let change = match action {
        MemberAction::List => MembershipChange::List,
        MemberAction::Add { id, peer_address } => MembershipChange::AddLearner { id: *id, addr: peer_address.clone() },
        MemberAction::Promote { id } => MembershipChange::Promote(*id),
        MemberAction::Remove { id } => MembershipChange::Remove(*id),
    };
    let (members, leader) = raft_store::membership(endpoint, tls, change).await.map_err(anyhow::Error::msg)?;
    println!("{:<6} {:<28} {:<8} {:<9} LEADER", "ID", "PEER ADDRESS", "ROLE", "PROTOCOL");
    for m in members {
        let role = if m.voter { "voter" } else { "learner" };
        let protocol = m.protocol.map_or_else(|| "-".to_string(), |p| p.to_string());
        println!("{:<6} {:<28} {:<8} {:<9} {}", m.id, m.addr, role, protocol, if m.id == leader { "*" } else { "" });
    }
    Ok(())
}
