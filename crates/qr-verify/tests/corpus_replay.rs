//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/`)
//! through the same checks the fuzz targets run, so that `cargo test` keeps
//! every input the fuzzer ever found interesting (crashes included, once
//! fixed) passing without a nightly toolchain.

mod common;

use std::path::PathBuf;

use common::fuzz_check;

/// Runs `check` on every file of `fuzz/corpus/<target>/`, naming the file
/// that fails.
fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    // A seed corpus is a few dozen files; fewer than a handful means it was lost.
    assert!(
        files.len() >= 5,
        "{}: only {} corpus files",
        dir.display(),
        files.len()
    );
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(
            outcome.is_ok(),
            "corpus file {} fails {target}",
            path.display()
        );
    }
}

#[test]
fn shape_views() {
    replay("shape_views", fuzz_check::shape_views::check);
}

#[test]
fn cpu_geqrf() {
    replay("cpu_geqrf", fuzz_check::cpu_geqrf::check);
}

#[test]
fn cpu_q() {
    replay("cpu_q", fuzz_check::cpu_q::check);
}

#[test]
fn gate_check() {
    replay("gate_check", fuzz_check::gate_check::check);
}

#[test]
fn parsers() {
    replay("parsers", fuzz_check::parsers::check);
}
