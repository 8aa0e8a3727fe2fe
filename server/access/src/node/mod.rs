//! Nodes as users: a kubelet authenticates as `system:node:<name>` in `system:nodes`. The graph
//! of what each node may read ([`graph`]) serves the `Node` authorizer and the NodeRestriction
//! admission check.

pub mod graph;

pub use graph::{NodeGraph, Vertex};

use super::user::UserInfo;

const NODE_USER_PREFIX: &str = "system:node:";
pub const NODES_GROUP: &str = "system:nodes";

/// The node a user acts for: `Some(name)` for a `system:node:<name>` user in `system:nodes`
/// (the name may be empty, which Kubernetes refuses), `None` for everyone else.
pub fn node_name(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.in_group(NODES_GROUP).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_node_users_in_the_nodes_group_are_nodes() {
        let user = |name: &str, groups: &[&str]| UserInfo { name: name.into(), groups: groups.iter().map(|g| g.to_string()).collect(), ..Default::default() };
        assert_eq!(node_name(&user("system:node:n1", &[NODES_GROUP])), Some("n1"));
        assert_eq!(node_name(&user("system:node:", &[NODES_GROUP])), Some(""));
        assert_eq!(node_name(&user("system:node:n1", &["system:authenticated"])), None);
        assert_eq!(node_name(&user("alice", &[NODES_GROUP])), None);
    }
}
