//! Free loopback ports for servers the tests and benchmarks start (shared by both).
//!
//! Ports come from below the kernel's ephemeral range. A port picked with `bind(0)` and released
//! lies inside that range, where the local end of any outgoing connection (a client's, or a Raft
//! peer's) may take it before the server binds it; below the range only an explicit bind can.
//! Within one process a counter hands each port out once; processes start at different offsets.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// Lowest port handed out (above the well-known and most registered service ports).
const LOWEST: u32 = 10_000;

/// Offset of the next candidate from `LOWEST`, or `u32::MAX` before the first pick.
static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);

/// First port of the kernel's ephemeral range (Linux's default when it cannot be read).
fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .filter(|&p| p > LOWEST + 1_000)
        .unwrap_or(32_768)
}

pub fn free_port() -> u16 {
    free_ports(1)
}

/// The first of `n` consecutive free ports (a cluster's port ranges are carved from one block).
pub fn free_ports(n: u16) -> u16 {
    let span = ephemeral_start() - LOWEST;
    let n = u32::from(n);
    assert!(n < span, "{n} ports do not fit below the ephemeral range");
    let start = std::process::id().wrapping_mul(7_919) % span;
    let _ = NEXT.compare_exchange(u32::MAX, start, Ordering::SeqCst, Ordering::SeqCst);
    for _ in 0..span {
        let offset = NEXT.fetch_add(n, Ordering::SeqCst) % span;
        if offset + n > span {
            continue;
        }
        let first = LOWEST + offset;
        let held: Result<Vec<_>, _> = (first..first + n).map(|p| TcpListener::bind(("127.0.0.1", p as u16))).collect();
        if held.is_ok() {
            return first as u16;
        }
    }
    panic!("no {n} consecutive free ports below {}", LOWEST + span);
}
