//! The PTX manifest: every module of the plans' manifest compiled by the
//! engine's NVRTC path, one digest per module and architecture.

use std::collections::BTreeSet;

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::manifest::{Module, manifest};
use super::{REWRITE_PTX, hex};
use crate::compile::ptx_cache::PtxCache;

/// The architectures every module's PTX is digested for beside those of
/// the devices that load it: the Hopper parts' and the B200's.
const PTX_ARCHS: [(i32, i32); 2] = [(9, 0), (10, 0)];

/// The compiler a PTX text names in its header (NVRTC's release and
/// build): the PTX is comparable only between texts of the same one.
fn compiler(ptx: &str) -> String {
    let named: Vec<&str> = ptx
        .lines()
        .take_while(|l| l.starts_with("//"))
        .filter_map(|l| {
            l.strip_prefix("// Cuda compilation tools, ")
                .or_else(|| l.strip_prefix("// Compiler Build ID: "))
        })
        .collect();
    named.join(", ")
}

/// Every distinct module of the manifest compiled to PTX through the
/// engine's path (`nvrtc::compile_into`: the options it builds, no cache)
/// for the compute capability of each device whose entries load it and
/// for each of `PTX_ARCHS`, on every core: one line per module and
/// architecture with a digest of the PTX text, sorted, under a header
/// naming the compiler the PTX names.
/// Compiles of one module at most, in [`ptx_manifest`]: NVRTC 13.5 gives
/// the folding pipelined panel (`PANEL_FOLD=1 PANEL_PIPE=1`) one of two
/// PTX texts, the shorter about once in 15 compiles, even serially in one
/// process; a digest that differs from the file's is compiled again
/// before it counts as a change.
const PTX_TRIES: usize = 8;

/// The PTX manifest; `expected`: the lines of the file to compare with
/// (each module compiled again, up to [`PTX_TRIES`] times, until its line
/// is one of them), or `None` to write (each module's most frequent line
/// of three compiles).
pub(super) fn ptx_manifest(expected: Option<&BTreeSet<String>>) -> String {
    crate::device::probe::check_nvrtc().expect("libnvrtc");
    let m = manifest();
    let jobs: Vec<((i32, i32), &String, &Module)> = m
        .modules
        .iter()
        .flat_map(|(name, (x, archs))| {
            let mut all = archs.clone();
            all.extend(PTX_ARCHS);
            all.into_iter().map(move |a| (a, name, x))
        })
        .collect();
    let start = std::time::Instant::now();
    let done: Vec<(String, String)> = jobs
        .par_iter()
        .map(|&(arch, name, x)| {
            let once = || {
                let ptx = crate::compile::nvrtc::compile_into(
                    x.src,
                    &x.defines,
                    arch,
                    &PtxCache::at(None),
                )
                .unwrap_or_else(|e| panic!("{name} for compute_{}{}: {e}", arch.0, arch.1));
                let text = ptx.to_src();
                let digest = hex(&Sha256::digest(text.as_bytes()));
                let line = format!(
                    "compute_{}{} {name}: ptx sha256 {}, {} bytes",
                    arch.0,
                    arch.1,
                    &digest[..32],
                    text.len()
                );
                (line, compiler(&text))
            };
            match expected {
                Some(lines) => {
                    let mut got = once();
                    for _ in 1..PTX_TRIES {
                        if lines.contains(&got.0) {
                            break;
                        }
                        got = once();
                    }
                    got
                }
                None => {
                    let (a, b, c) = (once(), once(), once());
                    if a.0 == b.0 || a.0 == c.0 {
                        a
                    } else if b.0 == c.0 {
                        b
                    } else {
                        a
                    }
                }
            }
        })
        .collect();
    let compilers: BTreeSet<&str> = done.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(
        compilers.len(),
        1,
        "PTX of several compilers: {compilers:?}"
    );
    let nvrtc = compilers.first().copied().unwrap_or_default();
    let mut lines: Vec<&str> = done.iter().map(|(l, _)| l.as_str()).collect();
    println!(
        "{} modules, {} compiles on {} threads in {:.1} s",
        m.modules.len(),
        jobs.len(),
        rayon::current_num_threads(),
        start.elapsed().as_secs_f64()
    );
    lines.sort();
    format!(
        "# PTX of every module of default_plans.txt, compiled by NVRTC as the engine compiles\n\
         # it (crates/qr-gpu/src/golden.rs; compare: cargo test -p qr-gpu --lib\n\
         # nvrtc_golden_ptx -- --ignored; rewrite: {REWRITE_PTX}).\n\
         # A restructure leaves every digest unchanged under the same NVRTC.\n\
         nvrtc {nvrtc}\n\n\
         [ptx: target family#digest: SHA-256 of the PTX text (its first 128 bits), its length]\n\
         {}\n",
        lines.join("\n")
    )
}
