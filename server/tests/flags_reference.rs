//! `docs/flags.md` is what the binary prints with `apiserver flags-reference`: a flag added,
//! removed or reworded without regenerating the file fails here.
//! `UPDATE_FLAGS_REFERENCE=1 cargo test -p apiserver --test integration flags_reference::` rewrites it.

use std::path::Path;
use std::process::Command;

#[test]
fn the_committed_flags_reference_is_what_the_binary_prints() {
    let out = Command::new(env!("CARGO_BIN_EXE_apiserver")).arg("flags-reference").output().expect("run apiserver flags-reference");
    assert!(out.status.success(), "apiserver flags-reference: {}", String::from_utf8_lossy(&out.stderr));
    let printed = String::from_utf8(out.stdout).expect("UTF-8");
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/flags.md");
    if std::env::var_os("UPDATE_FLAGS_REFERENCE").is_some() {
        std::fs::write(&path, &printed).expect("write docs/flags.md");
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == printed,
        "docs/flags.md differs from `apiserver flags-reference`: run UPDATE_FLAGS_REFERENCE=1 cargo test -p apiserver --test integration flags_reference::"
    );
    // Every flag the binary accepts is in it, under its own name.
    let help = Command::new(env!("CARGO_BIN_EXE_apiserver")).arg("--help").output().expect("run apiserver --help");
    let help = String::from_utf8(help.stdout).expect("UTF-8");
    let flags: Vec<&str> = help
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|w| w.starts_with("--") && *w != "--help" && *w != "--version")
        .collect();
    assert!(flags.len() > 50, "--help lists the flags: {help}");
    for flag in flags {
        assert!(committed.contains(&format!("`{flag}")), "{flag} is missing from docs/flags.md");
    }
}
