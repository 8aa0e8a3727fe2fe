//! The hosts of the cluster under test: one network namespace per node, each with its own
//! address on a private bridge (itself in a namespace of its own), and the runner's end of that
//! network in the initial namespace. Partitions are iptables rules inside the nodes' namespaces,
//! so they cut real traffic between real hosts.

use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

/// The namespaces, addresses and links of one run; torn down when dropped.
pub struct Net {
    prefix: String,
    subnet: String,
    nodes: u32,
}

fn run(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program).args(args).stdin(Stdio::null()).output().with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

impl Net {
    /// Creates `nodes` hosts `10.213.X.11`, `.12`, ... and the runner's address `10.213.X.1`,
    /// with X chosen so that no existing interface uses the subnet.
    pub fn create(nodes: u32) -> Result<Net> {
        let prefix = format!("kc{}", std::process::id() % 100_000);
        let used = String::from_utf8_lossy(&Command::new("ip").args(["-o", "addr"]).output().context("running ip")?.stdout).to_string();
        let third = (0..250u32)
            .map(|k| (std::process::id() + k) % 250)
            .find(|x| !used.contains(&format!("10.213.{x}.")))
            .context("no free 10.213.X.0/24 subnet")?;
        let net = Net { prefix, subnet: format!("10.213.{third}"), nodes };
        net.build().inspect_err(|_| net.destroy())?;
        Ok(net)
    }

    fn build(&self) -> Result<()> {
        let sw = self.switch();
        run("ip", &["netns", "add", &sw])?;
        run("ip", &["netns", "exec", &sw, "ip", "link", "add", "br0", "type", "bridge"])?;
        run("ip", &["netns", "exec", &sw, "ip", "link", "set", "br0", "up"])?;
        let host_if = format!("{}h", self.prefix);
        run("ip", &["link", "add", &host_if, "type", "veth", "peer", "name", "h0", "netns", &sw])?;
        run("ip", &["addr", "add", &format!("{}/24", self.host_ip()), "dev", &host_if])?;
        run("ip", &["link", "set", &host_if, "up"])?;
        run("ip", &["netns", "exec", &sw, "ip", "link", "set", "h0", "master", "br0", "up"])?;
        for i in 1..=self.nodes {
            let ns = self.ns(i);
            let (inside, outside) = (format!("{}-{i}", self.prefix), format!("p{i}"));
            run("ip", &["netns", "add", &ns])?;
            run("ip", &["link", "add", &inside, "netns", &ns, "type", "veth", "peer", "name", &outside, "netns", &sw])?;
            run("ip", &["netns", "exec", &sw, "ip", "link", "set", &outside, "master", "br0", "up"])?;
            run("ip", &["netns", "exec", &ns, "ip", "addr", "add", &format!("{}/24", self.node_ip(i)), "dev", &inside])?;
            run("ip", &["netns", "exec", &ns, "ip", "link", "set", &inside, "up"])?;
            run("ip", &["netns", "exec", &ns, "ip", "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    fn switch(&self) -> String {
        format!("{}-sw", self.prefix)
    }

    /// The namespace of node `i` (1-based).
    pub fn ns(&self, i: u32) -> String {
        format!("{}-n{i}", self.prefix)
    }

    /// The runner's address on the cluster network.
    pub fn host_ip(&self) -> String {
        format!("{}.1", self.subnet)
    }

    pub fn node_ip(&self, i: u32) -> String {
        format!("{}.{}", self.subnet, 10 + i)
    }

    /// A command that runs `program` on node `i`'s host.
    pub fn command(&self, i: u32, program: &std::path::Path) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns(i)]).arg(program);
        cmd
    }

    /// Drops every packet between node `i` and each of `others`, both ways, on `i`'s host.
    pub fn cut(&self, i: u32, others: &[u32]) -> Result<()> {
        let ns = self.ns(i);
        for &j in others {
            let ip = self.node_ip(j);
            run("ip", &["netns", "exec", &ns, "iptables", "-A", "INPUT", "-s", &ip, "-j", "DROP"])?;
            run("ip", &["netns", "exec", &ns, "iptables", "-A", "OUTPUT", "-d", &ip, "-j", "DROP"])?;
        }
        Ok(())
    }

    /// Splits the nodes into groups that cannot reach each other (a node in no group keeps every
    /// link; a node listed in two groups is a bridge between them).
    pub fn partition(&self, groups: &[Vec<u32>]) -> Result<()> {
        let nodes: std::collections::BTreeSet<u32> = groups.iter().flatten().copied().collect();
        let together = |i: u32, j: u32| groups.iter().any(|g| g.contains(&i) && g.contains(&j));
        for &i in &nodes {
            let others: Vec<u32> = nodes.iter().copied().filter(|&j| j != i && !together(i, j)).collect();
            self.cut(i, &others)?;
        }
        Ok(())
    }

    /// Removes every partition.
    pub fn heal(&self) -> Result<()> {
        for i in 1..=self.nodes {
            run("ip", &["netns", "exec", &self.ns(i), "iptables", "-F"])?;
        }
        Ok(())
    }

    fn destroy(&self) {
        let _ = run("ip", &["link", "del", &format!("{}h", self.prefix)]);
        for i in 1..=self.nodes {
            let _ = run("ip", &["netns", "del", &self.ns(i)]);
        }
        let _ = run("ip", &["netns", "del", &self.switch()]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.destroy();
    }
}
