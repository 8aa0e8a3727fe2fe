//! Free loopback ports for servers the tests and benchmarks start (shared by both).

pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().unwrap().port()
}

/// The first of `n` consecutive free ports. Ports picked one at a time can land inside each
/// other's ranges (the kernel often hands out neighbours), so a cluster's port ranges are
/// carved from one block.
pub fn free_ports(n: u16) -> u16 {
    loop {
        let first = free_port();
        if first.checked_add(n).is_none() {
            continue;
        }
        let held: Result<Vec<_>, _> = (first..first + n).map(|p| std::net::TcpListener::bind(("127.0.0.1", p))).collect();
        if held.is_ok() {
            return first;
        }
    }
}
