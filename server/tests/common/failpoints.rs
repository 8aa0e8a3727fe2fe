//! The apiserver built with the `failpoints` feature (fault injection through
//! `/debug/failpoints`), by the fault-injection suite's own build, so that one build serves both.

use std::path::PathBuf;
use std::sync::OnceLock;

/// Builds (once per test process) and returns the failpoints binary.
pub fn apiserver() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| chaos_tests::run::build_apiserver().expect("building the apiserver with failpoints")).clone()
}
