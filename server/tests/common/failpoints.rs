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
        let status = Command::new(cargo)
            .args(["build", "--locked", "-p", "apiserver", "--features", "failpoints", "--target-dir"])
            .arg(&target)
            .current_dir(&root)
            .status()
            .expect("run cargo");
        assert!(status.success(), "building the apiserver with failpoints failed");
        target.join("debug").join("apiserver")
    })
    .clone()
}
