//! Golden manifests of the default plans: what the engine would compile
//! and with which plan parameters it would launch, for every shape of the
//! `qr_v2` benchmark and test sets (and the orders around the planner's
//! limits) on a fixed list of modelled devices, with `Tuning::default()`
//! and no forced strategy.
//!
//! Why: a restructure of this crate (issue 32: the plan as a sum type,
//! launchers taking a small launch context instead of the engine, files
//! split) must not change what runs. Its proof is that these files stay
//! byte for byte the same across it:
//!
//! - `tests/data/default_plans.txt`
//!   ([`golden_default_plans_match`](tests::golden_default_plans_match), no
//!   NVRTC or GPU needed, so it runs with every `cargo test`): per
//!   (device, operation, shape) the plan's `Display` text, the fields its
//!   strategy's launches read, by name, and the kernel modules the
//!   launches may load (`plan::modules`), each named by its family and
//!   a digest of its defines; the table at the end lists every module's
//!   defines, sorted, as the `-D` options NVRTC is given.
//! - `tests/data/default_ptx.txt`
//!   ([`nvrtc_golden_ptx_digests`](tests::nvrtc_golden_ptx_digests), ignored:
//!   needs libnvrtc; `.ci/run`'s `--ignored nvrtc_` step runs it with the
//!   NVRTC it pins): every distinct module of that manifest compiled to
//!   PTX by the engine's own NVRTC path, for the architecture of each
//!   device that loads it and for compute_90 and compute_100, one digest
//!   of the PTX text per module and architecture. A kernel source edit
//!   changes it too.
//!
//! A change that means to change a default (a flipped `Tuning` field, a
//! new kernel variant, a new plan field, a kernel source edit) changes
//! these files on purpose: rewrite them in the same commit
//! ([`golden_write_default_plans`](tests::golden_write_default_plans),
//! [`write_golden_ptx`](tests::write_golden_ptx), the latter named
//! apart from `nvrtc_` so that the CI step never rewrites the file it
//! checks) and let the diff show what it changed. A restructure that
//! changes the plan's types adapts [`fields`](manifest::fields) (it
//! destructures the structs, so a field added or removed does not compile until it says how
//! to print it) to print the same lines, and leaves both files unchanged.
//!
//! Not in the manifest: the launch sequence itself (entries, grids,
//! blocks, dynamic shared memory, order). The launchers compute it inside
//! the functions that launch, between calls that need the engine's
//! streams, compiled functions and occupancy queries (`blocked::factor`,
//! `trailing_tc::launch`, `smem::launch`, `panel::launch`,
//! `panelreg::launch`, the `util` and `q` launchers,
//! `q::run`), so it cannot be recorded without a device until those are
//! split into a pure launch specification and its execution.

mod diff;
mod manifest;
mod ptx;
mod tests;

use std::path::{Path, PathBuf};

use diff::diff;

/// Where the manifests live (committed; rewritten only on purpose).
fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file)
}

const PLANS: &str = "default_plans.txt";
const PTX: &str = "default_ptx.txt";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fails, with the differences and how to rewrite the file, unless the
/// file `file` holds `text`.
fn check(file: &str, text: &str, rewrite: &str) {
    let path = data(file);
    let old = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; write it with {rewrite}", path.display()));
    if old != text {
        panic!(
            "{} differs from what the code builds now. A restructure must leave it \
             unchanged; a change of a default rewrites it in the same commit ({rewrite}) \
             and shows the change in its diff.\n{}",
            path.display(),
            diff(&old, text, 80)
        );
    }
}

/// Writes `text` to `file` (a temporary file renamed over it, so that a
/// check running beside never reads half of it).
fn write(file: &str, text: &str) {
    let path = data(file);
    let dir = path.parent().expect("tests/data");
    std::fs::create_dir_all(dir).expect("creating tests/data");
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text).expect("writing the manifest");
    std::fs::rename(&tmp, &path).expect("renaming the manifest into place");
    println!("wrote {} ({} bytes)", path.display(), text.len());
}

const REWRITE_PLANS: &str = "cargo test -p qr-gpu --lib golden_write -- --ignored";
const REWRITE_PTX: &str = "cargo test -p qr-gpu --lib write_golden_ptx -- --ignored";
