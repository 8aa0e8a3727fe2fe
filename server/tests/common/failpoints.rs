//! The apiserver built with the `failpoints` feature (fault injection through
//! `/debug/failpoints`), into the target directory the fault-injection suite builds it in, so
//! that one build serves both.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// Builds (once per test process) and returns the failpoints binary.
pub fn apiserver() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf();
        let target = root.join("target").join("chaos");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--locked", "-p", "apiserver", "--features", "failpoints", "--target-dir"]).arg(&target).current_dir(&root);
        // Without the variables cargo sets for this test's package: ring's build script watches
        // some (CARGO_PKG_NAME, CARGO_MANIFEST_DIR, ...), and values other than a shell's would
        // rebuild ring and everything above it.
        for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_MANIFEST_")) {
            build.env_remove(name);
        }
        let status = build.status().expect("run cargo");
        assert!(status.success(), "building the apiserver with failpoints failed");
        target.join("debug").join("apiserver")
    })
    .clone()
}
