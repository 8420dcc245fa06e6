//! Ahead-of-time compilation of a plan's kernels with NVRTC alone: no
//! device and no driver, so that a plan can be checked for an architecture
//! on a machine that lacks it (the development machine, CI).

use qr_core::QrError;
use rayon::prelude::*;

use crate::compile::ptx_cache::PtxCache;
use crate::kernels::{KernelSource, panel, trailing_tc, util};
use crate::plan::{Blocked, Plan, Update};

/// One kernel module: a family and its `-D` defines.
type Module = (&'static KernelSource, Vec<(String, String)>);

/// The modules that `plan`'s launches load: the first panel's family (or
/// the whole-matrix kernel), every
/// tensor-core update variant the update's launcher may choose between
/// (staged or streaming, with and without a row split) and the utility
/// kernels. Later panels of a register panel take fewer threads: a define
/// that sizes the block's loops and arrays, not which instructions the
/// kernel needs, so the first panel's module stands for them here.
pub(crate) fn modules(plan: &Plan) -> Vec<Module> {
    let mut out = vec![plan.kernel(), (&util::SOURCE, Vec::new())];
    let Some(Blocked {
        update: Update::Tensor(t),
        ..
    }) = plan.blocked()
    else {
        return out;
    };
    let vec4 = plan.shape.n() % 4 == 0;
    let staged = t.stage_depth > 0 && vec4;
    let mut stages = vec![0];
    if staged {
        stages.push(t.stage_depth.min(8));
    }
    // `trailing_tc::row_split` halves the plan's most blocks of a split
    // until a launch fits, so each power of two up to it may come.
    let splits: Vec<u32> = std::iter::successors(Some(1u32), |k| Some(2 * k))
        .take_while(|&k| k <= trailing_tc::split_size(t.row_split))
        .collect();
    for &stage in &stages {
        for &split in &splits {
            out.push((
                &trailing_tc::SOURCE,
                trailing_tc::defines(vec4, t.warps, stage, split, t.l2_hints),
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|(src, d)| seen.insert((src.family, d.clone())));
    out
}

/// What the assembler reports of one entry point of a module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Resources {
    entry: String,
    registers: u32,
    smem: usize,
    spill_stores: usize,
    spill_loads: usize,
}

/// The entries' resources in a `--ptxas-options=-v` log.
fn resources(log: &str) -> Vec<Resources> {
    let number = |line: &str, unit: &str| -> Option<usize> {
        let at = line.find(unit)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    let mut out: Vec<Resources> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            out.push(Resources {
                entry: rest.trim().to_string(),
                ..Default::default()
            });
        } else if let Some(r) = out.last_mut() {
            if line.contains("spill stores") {
                r.spill_stores = number(line, "bytes spill stores").unwrap_or(0);
                r.spill_loads = number(line, "bytes spill loads").unwrap_or(0);
            } else if line.contains("Used ") && line.contains("registers") {
                r.registers = number(line, "registers").unwrap_or(0) as u32;
                r.smem = number(line, "bytes smem").unwrap_or(0);
            }
        }
    }
    out
}

/// The static shared memory the planner leaves a module's blocks beside
/// their dynamic shared memory, where it counts on a bound: the
/// whole-matrix kernels 1 KiB (`smem_fit_n`), the shared-memory panel the
/// reserve of `panel_fit_rows` or, folding, `panel::FOLD_STATIC_BYTES`.
/// Other modules'
/// launches ask the driver (the update's staging) or take no dynamic shared
/// memory to speak of.
fn static_smem_bound(family: &str, defines: &[(String, String)]) -> Option<usize> {
    let on = |k: &str| defines.iter().any(|(n, v)| n == k && v != "0");
    match family {
        "smem" => Some(1024),
        "panel" if on("PANEL_FOLD") => Some(panel::FOLD_STATIC_BYTES),
        "panel" => Some(crate::plan::STATIC_SMEM_RESERVE),
        _ => None,
    }
}

/// Compiles every kernel module that the launches of `plans` load (each
/// module once, on every core) to machine code for compute capability
/// `arch` with NVRTC, assembler included, checks each module's static
/// shared memory against the planner's bound for it, and returns one line
/// per module (family, defines, and per entry its registers, static shared
/// memory and spills), sorted. Needs libnvrtc only, no device or driver:
/// plans made for a modelled device ([`crate::plan`] with
/// [`crate::DeviceInfo::modelled`]) can be checked on a machine without a
/// GPU. Every module NVRTC rejects or that breaks its bound is reported,
/// with the reason, in one error.
pub fn compile_plans(plans: &[Plan], arch: (i32, i32)) -> Result<Vec<String>, QrError> {
    crate::device::probe::check_nvrtc()?;
    let jobs = unique_modules(plans);
    let (mut compiled, failed) = on_every_core(&jobs, |(src, d)| check_module(src, d, arch));
    if !failed.is_empty() {
        return Err(failures(&failed, jobs.len(), arch));
    }
    compiled.sort();
    Ok(compiled)
}

/// Compiles to PTX, on every core, the kernel modules of `plans` for
/// compute capability `arch` that `cache` lacks, and keeps them there, so
/// that the engine's launches find every module compiled instead of
/// waiting on NVRTC one module at a time as they first ask for them.
/// Returns how many modules NVRTC compiled (0 where the cache is off).
/// Modules the launches turn out not to need cost only this compile.
pub(crate) fn warm(plans: &[Plan], arch: (i32, i32), cache: &PtxCache) -> Result<usize, QrError> {
    if !cache.is_on() {
        return Ok(0);
    }
    crate::device::probe::check_nvrtc()?;
    let jobs = unique_modules(plans);
    let (fresh, failed) = on_every_core(&jobs, |(src, d)| {
        crate::compile::nvrtc::compile_cached(src, d, arch, cache)
            .map(|(_, cached)| !cached)
            .map_err(|e| e.to_string())
    });
    if !failed.is_empty() {
        return Err(failures(&failed, jobs.len(), arch));
    }
    Ok(fresh.into_iter().filter(|&f| f).count())
}

/// The modules of `plans`, each once.
fn unique_modules(plans: &[Plan]) -> Vec<Module> {
    let mut seen = std::collections::BTreeSet::new();
    plans
        .iter()
        .flat_map(modules)
        .filter(|(src, d)| seen.insert((src.family, d.clone())))
        .collect()
}

/// `f` of each job on rayon's threads (one a core): the results and the
/// failures.
fn on_every_core<T: Send>(
    jobs: &[Module],
    f: impl Fn(&Module) -> Result<T, String> + Sync + Send,
) -> (Vec<T>, Vec<String>) {
    let results: Vec<Result<T, String>> = jobs.par_iter().map(f).collect();
    let mut out = (Vec::new(), Vec::new());
    for r in results {
        match r {
            Ok(x) => out.0.push(x),
            Err(e) => out.1.push(e),
        }
    }
    out
}

fn failures(failed: &[String], jobs: usize, arch: (i32, i32)) -> QrError {
    QrError::Backend {
        backend: "gpu".to_string(),
        message: format!(
            "{} of {jobs} modules failed for sm_{}{}:\n{}",
            failed.len(),
            arch.0,
            arch.1,
            failed.join("\n\n")
        ),
    }
}

/// One module compiled and checked: its report line, or why it failed.
fn check_module(
    src: &KernelSource,
    defines: &[(String, String)],
    arch: (i32, i32),
) -> Result<String, String> {
    let log = crate::compile::nvrtc::compile_machine_code(src, defines, arch)
        .map_err(|e| e.to_string())?;
    let d: Vec<String> = defines.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let name = if d.is_empty() {
        src.family.to_string()
    } else {
        format!("{} {}", src.family, d.join(" "))
    };
    let entries = resources(&log);
    if entries.is_empty() {
        return Err(format!("{name}: no resource report in NVRTC's log:\n{log}"));
    }
    let bound = static_smem_bound(src.family, defines);
    let mut line = name.clone();
    for r in &entries {
        if let Some(b) = bound.filter(|&b| r.smem > b) {
            return Err(format!(
                "{name}: {} takes {} bytes of static shared memory, past the planner's {b}",
                r.entry, r.smem
            ));
        }
        line += &format!(
            "; {}: {} registers, {} B smem, spills {} / {} B",
            r.entry, r.registers, r.smem, r.spill_stores, r.spill_loads
        );
    }
    Ok(line)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;

    use qr_core::Shape;

    use super::*;
    use crate::device::probe::DeviceInfo;
    use crate::tuning::Tuning;

    /// One modelled board per compute capability: A100 (sm_80), RTX A6000
    /// (sm_86), L40S (sm_89), H200 (sm_90), B200 (sm_100) and RTX 5090
    /// (sm_120); the H100 plans as the H200 but for its L2.
    pub(crate) fn devices() -> Vec<DeviceInfo> {
        DeviceInfo::models()
            .into_iter()
            .filter(|d| !d.name.starts_with("H100"))
            .collect()
    }

    /// The benchmark set's shapes, an order whose rows are not 16-byte
    /// aligned, and one past a block's shared memory.
    pub(crate) const SHAPES: [(usize, usize); 10] = [
        (20, 32),
        (40, 176),
        (40, 352),
        (640, 512),
        (60, 1024),
        (8, 2048),
        (2, 4096),
        (3, 301),
        (4, 90),
        (1, 16384),
    ];

    fn families(plan: &Plan) -> Vec<(&'static str, Vec<(String, String)>)> {
        modules(plan)
            .into_iter()
            .map(|(s, d)| (s.family, d))
            .collect()
    }

    fn value<'a>(d: &'a [(String, String)], k: &str) -> &'a str {
        &d.iter().find(|(n, _)| n == k).unwrap().1
    }

    #[test]
    fn modules_follow_the_plan() {
        let [a100, h200] = [&devices()[0], &devices()[3]];
        let t = Tuning::default();
        let at =
            |d: &DeviceInfo, b, n| crate::plan(Shape::new(b, n).unwrap(), d, &t, None).unwrap();
        // Whole matrices: their kernel and the scans.
        let small = families(&at(h200, 20, 32));
        assert_eq!(small.len(), 2);
        assert_eq!((small[0].0, small[1].0), ("smem", "util"));
        // Panels and the update, streaming and staged, on one module each.
        let p = at(h200, 640, 512);
        let m = families(&p);
        assert_eq!(m[0], (p.kernel().0.family, p.defines()));
        let tc: Vec<_> = m.iter().filter(|(f, _)| *f == "trailing_tc").collect();
        let stages: BTreeSet<&str> = tc.iter().map(|(_, d)| value(d, "TC_STAGE")).collect();
        assert_eq!(stages, BTreeSet::from(["0", "2"]));
        // Row splits of every size the launcher may halve down to, only
        // where the device has clusters.
        let splits = |d: &DeviceInfo| -> BTreeSet<String> {
            families(&at(d, 2, 4096))
                .iter()
                .filter(|(f, _)| *f == "trailing_tc")
                .map(|(_, d)| value(d, "TC_ROWSPLIT").to_string())
                .collect()
        };
        assert_eq!(splits(h200), ["1", "2", "4", "8"].map(String::from).into());
        assert_eq!(splits(a100), ["1"].map(String::from).into());
        // Without tf32 tensor cores the update is cuBLAS's.
        let mut turing = a100.clone();
        turing.compute_capability = (7, 5);
        assert!(
            families(&at(&turing, 640, 512))
                .iter()
                .all(|(f, _)| *f != "trailing_tc")
        );
        // No module twice.
        let set: BTreeSet<_> = m.iter().collect();
        assert_eq!(set.len(), m.len());
    }

    #[test]
    fn resource_reports_parse_per_entry() {
        let log = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a_f32' for 'sm_90'
ptxas info    : Function properties for a_f32
ptxas         .     80 bytes stack frame, 80 bytes spill stores, 236 bytes spill loads
ptxas info    : Used 80 registers, used 1 barriers, 80 bytes cumulative stack size, 17152 bytes smem
ptxas info    : Compile time = 908.412 ms
ptxas info    : Function properties for b_f32
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers
";
        let r = resources(log);
        assert_eq!(r.len(), 2);
        assert_eq!(
            (
                r[0].entry.as_str(),
                r[0].registers,
                r[0].smem,
                r[0].spill_stores,
                r[0].spill_loads
            ),
            ("a_f32", 80, 17152, 80, 236)
        );
        assert_eq!((r[1].registers, r[1].smem), (32, 0));
        let fold = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert_eq!(
            static_smem_bound("panel", &fold("PANEL_FOLD", "1")),
            Some(24 << 10)
        );
        assert_eq!(
            static_smem_bound("panel", &fold("PANEL_FOLD", "0")),
            Some(20 << 10)
        );
        assert_eq!(static_smem_bound("trailing_tc", &[]), None);
    }

    /// Every module of every benchmark plan, for each device above,
    /// compiles to its machine code: the `mma.sync`, `cp.async` and cluster
    /// instructions only where the plan may use them (issue 5, item 7).
    #[test]
    #[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu -- --ignored nvrtc_"]
    fn nvrtc_benchmark_plans_compile_from_sm80_to_sm120() {
        let t = Tuning::default();
        for d in devices() {
            let plans: Vec<Plan> = SHAPES
                .iter()
                .map(|&(b, n)| crate::plan(Shape::new(b, n).unwrap(), &d, &t, None).unwrap())
                .collect();
            let compiled = compile_plans(&plans, d.compute_capability)
                .unwrap_or_else(|e| panic!("{}: {e}", d.name));
            println!("{}: {} modules", d.name, compiled.len());
            for line in &compiled {
                println!("  {line}");
            }
        }
    }

    /// The Q operations' own kernels (kernels/trailing_tc/q) compile for every device
    /// above, with every cluster size it has (`Q_CLUSTER`); their per-block
    /// updates are the plans' trailing_tc modules, compiled by the test
    /// before.
    #[test]
    #[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu -- --ignored nvrtc_"]
    fn nvrtc_q_kernels_compile_from_sm80_to_sm120() {
        crate::device::probe::check_nvrtc().expect("libnvrtc");
        for d in devices() {
            // Clusters of blocks from sm_90 on.
            let clusters: &[u32] = if crate::plan::has_clusters(&d) {
                &[1, 2, 4, 8]
            } else {
                &[1]
            };
            for &c in clusters {
                let defs = crate::kernels::trailing_tc::q::defines(c);
                let line = check_module(
                    &crate::kernels::trailing_tc::q::SOURCE,
                    &defs,
                    d.compute_capability,
                )
                .unwrap_or_else(|e| panic!("{} cluster {c}: {e}", d.name));
                println!("{} cluster {c}: {line}", d.name);
            }
        }
    }

    /// The engine's path from source to PTX: the modules of the H200's
    /// benchmark plans compiled by NVRTC, kept, then read back as the same
    /// text without NVRTC (times printed: a second process's saving).
    #[test]
    #[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu -- --ignored nvrtc_"]
    fn nvrtc_ptx_cache_returns_what_nvrtc_compiled() {
        crate::device::probe::check_nvrtc().expect("libnvrtc");
        let d = &devices()[3];
        let t = Tuning::default();
        let plans: Vec<Plan> = SHAPES
            .iter()
            .map(|&(b, n)| crate::plan(Shape::new(b, n).unwrap(), d, &t, None).unwrap())
            .collect();
        let mods = unique_modules(&plans);
        let dir = tempfile::tempdir().unwrap();
        let cache = PtxCache::at(Some(dir.path().to_path_buf()));
        let mut texts = Vec::new();
        for from_cache in [false, true] {
            let start = std::time::Instant::now();
            let mut these = Vec::new();
            for (src, def) in &mods {
                let (ptx, cached) =
                    crate::compile::nvrtc::compile_cached(src, def, (9, 0), &cache).unwrap();
                assert_eq!(cached, from_cache, "{}", src.family);
                these.push(ptx.to_src());
            }
            println!(
                "{} modules {}: {:.2} s",
                mods.len(),
                if from_cache {
                    "from the cache"
                } else {
                    "by NVRTC"
                },
                start.elapsed().as_secs_f64()
            );
            texts.push(these);
        }
        assert_eq!(texts[0], texts[1]);
        // The same modules warmed on every core into an empty cache.
        let dir = tempfile::tempdir().unwrap();
        let empty = PtxCache::at(Some(dir.path().to_path_buf()));
        let start = std::time::Instant::now();
        assert_eq!(warm(&plans, (9, 0), &empty).unwrap(), mods.len());
        println!(
            "{} modules warmed on {} threads: {:.2} s",
            mods.len(),
            rayon::current_num_threads(),
            start.elapsed().as_secs_f64()
        );
        // Compiled side by side, each module's PTX is one compiled alone.
        // NVRTC 13.5 gives the folding pipelined panel one of two texts
        // (about once in 15 compiles, serially too: golden.rs, PTX_TRIES),
        // so a differing module is compiled alone again, until the rare
        // text comes too (64 tries: a miss about once in 1,300 runs, where
        // 8 missed once in 25) or the test fails.
        for ((src, def), alone) in mods.iter().zip(&texts[0]) {
            let (ptx, cached) =
                crate::compile::nvrtc::compile_cached(src, def, (9, 0), &empty).unwrap();
            let warmed = ptx.to_src();
            let same = warmed == *alone
                || (0..64).any(|_| {
                    crate::compile::nvrtc::compile_into(src, def, (9, 0), &PtxCache::at(None))
                        .unwrap()
                        .to_src()
                        == warmed
                });
            assert!(cached && same, "{}", src.family);
        }
    }

    /// Warming compiles what the cache lacks, on every core, and leaves
    /// every module of the plans there for the engine's lookups.
    #[test]
    #[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu -- --ignored nvrtc_"]
    fn nvrtc_warming_fills_the_cache_once() {
        let d = &devices()[3];
        let t = Tuning::default();
        let plans: Vec<Plan> = [(640, 512), (40, 176)]
            .iter()
            .map(|&(b, n)| crate::plan(Shape::new(b, n).unwrap(), d, &t, None).unwrap())
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let cache = PtxCache::at(Some(dir.path().to_path_buf()));
        let mods = unique_modules(&plans);
        assert_eq!(warm(&plans, (9, 0), &cache).unwrap(), mods.len());
        assert_eq!(warm(&plans, (9, 0), &cache).unwrap(), 0);
        for (src, def) in &mods {
            assert!(
                crate::compile::nvrtc::compile_cached(src, def, (9, 0), &cache)
                    .unwrap()
                    .1
            );
        }
        assert_eq!(warm(&plans, (9, 0), &PtxCache::at(None)).unwrap(), 0);
    }

    /// A module whose instructions the architecture lacks is an error
    /// naming it (the tensor-core update's `cp.async` before sm_80).
    #[test]
    #[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu -- --ignored nvrtc_"]
    fn nvrtc_rejects_what_the_architecture_lacks() {
        let d = &devices()[3];
        let p = crate::plan(Shape::new(640, 512).unwrap(), d, &Tuning::default(), None).unwrap();
        let e = compile_plans(&[p], (7, 5)).unwrap_err().to_string();
        assert!(e.contains("trailing_tc") && e.contains("cp.async"), "{e}");
    }
}
