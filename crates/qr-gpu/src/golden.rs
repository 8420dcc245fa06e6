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
//! - `tests/data/default_plans.txt` ([`golden_default_plans_match`], no
//!   NVRTC or GPU needed, so it runs with every `cargo test`): per
//!   (device, operation, shape) the plan's `Display` text, the fields its
//!   strategy's launches read, by name, and the kernel modules the
//!   launches may load (`compile::modules`), each named by its family and
//!   a digest of its defines; the table at the end lists every module's
//!   defines, sorted, as the `-D` options NVRTC is given.
//! - `tests/data/default_ptx.txt` ([`nvrtc_golden_ptx_digests`], ignored:
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
//! ([`golden_write_default_plans`], [`write_golden_ptx`], the latter named
//! apart from `nvrtc_` so that the CI step never rewrites the file it
//! checks) and let the diff show what it changed. A restructure that
//! changes the plan's types adapts [`fields`] (it destructures the
//! structs, so a field added or removed does not compile until it says how
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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use qr_core::{QrError, Shape};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

use crate::compile::modules;
use crate::compile::tests::{SHAPES, device, devices};
use crate::kernels::{KernelSource, q as qk, trailing_tc};
use crate::plan::{PanelPlan, Plan, Strategy};
use crate::probe::DeviceInfo;
use crate::ptx_cache::PtxCache;
use crate::tuning::Tuning;

/// Where the manifests live (committed; rewritten only on purpose).
fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(file)
}

const PLANS: &str = "default_plans.txt";
const PTX: &str = "default_ptx.txt";

/// The devices planned for: those of the compile tests (sm_80 to sm_120)
/// and the H100 SXM beside the H200.
fn golden_devices() -> Vec<DeviceInfo> {
    let mut out = devices();
    let at = out
        .iter()
        .position(|d| d.name == "H200")
        .unwrap_or(out.len());
    out.insert(at, device("H100 SXM 80GB", (9, 0), 132, 227, 50));
    out
}

/// The shapes planned for, each once, in this order: the `qr_v2`
/// benchmark set, its test set, the compile tests' shapes, then orders and
/// batches on either side of the default tuning's limits.
fn golden_shapes() -> Vec<(usize, usize)> {
    let sets = qr_verify::benchmark_set()
        .into_iter()
        .chain(qr_verify::test_set())
        .map(|s| (s.batch, s.n));
    let limits = [
        // Batch 1 from the smallest order on.
        (1, 1),
        (1, 33),
        (1, 512),
        // The smem kernel's threads per column (64, 128), its register
        // kernel's rows, and `smem_max_n` (160).
        (20, 63),
        (20, 64),
        (20, 127),
        (20, 128),
        (20, 160),
        (20, 161),
        // Tall panels of a block alone (320 rows), and a batch past the
        // SMs (no block alone: no fold, register panels of two rows).
        (40, 319),
        (40, 320),
        (132, 176),
        (133, 176),
        (640, 64),
        // The register panel's last order (1024), for a block alone and
        // for a batch past the SMs.
        (60, 1025),
        (200, 1024),
        (200, 1025),
        // Clusters: half the SMs of the 132-SM parts.
        (66, 1024),
        (67, 1024),
        // A panel in one block's shared memory (A100: 1109 rows; H100 and
        // H200: 1605).
        (200, 1109),
        (200, 1110),
        (200, 1605),
        (200, 1606),
        // Lanes from two matrices per SM (132 SMs).
        (263, 512),
        (264, 512),
        // Rows not 16-byte aligned at a large order.
        (2, 4095),
    ];
    let mut seen = std::collections::HashSet::new();
    sets.chain(SHAPES)
        .chain(limits)
        .filter(|s| seen.insert(*s))
        .collect()
}

/// The operations the planner serves: `geqrf` its plan; `orgqr`, `ormqr`
/// and `qr` the update settings of [`q_plan`].
#[derive(Clone, Copy, Debug)]
enum Op {
    Geqrf,
    Orgqr,
    /// With `C` of `n x n` (k = n, as the suites gate it), either side and
    /// transpose (their modules are the same).
    Ormqr,
    Qr,
}

impl Op {
    const ALL: [Op; 4] = [Op::Geqrf, Op::Orgqr, Op::Ormqr, Op::Qr];

    fn name(self) -> &'static str {
        match self {
            Op::Geqrf => "geqrf",
            Op::Orgqr => "orgqr",
            Op::Ormqr => "ormqr k=n",
            Op::Qr => "qr",
        }
    }
}

/// `GpuBackend::q_plan` without a backend (backend.rs): the geqrf plan,
/// or, where that is the whole-matrix kernel, the blocked plan of the same
/// shape. Kept in step with it by hand until it is a function of the
/// device alone.
fn q_plan(shape: Shape, device: &DeviceInfo, tuning: &Tuning) -> Result<Plan, QrError> {
    let p = crate::plan(shape, device, tuning, None)?;
    if p.strategy != Strategy::Smem {
        return Ok(p);
    }
    crate::plan(shape, device, tuning, Some(Strategy::Blocked))
}

/// One kernel module: its family and `-D` defines (in the family's order,
/// as the engine passes them).
#[derive(Clone, Debug)]
struct Module {
    src: &'static KernelSource,
    defines: Vec<(String, String)>,
}

impl Module {
    /// The defines as NVRTC options, sorted.
    fn options(&self) -> Vec<String> {
        let mut o: Vec<String> = self
            .defines
            .iter()
            .map(|(k, v)| format!("-D{k}={v}"))
            .collect();
        o.sort();
        o
    }

    /// `family#digest`, the digest the first 12 hex digits of the SHA-256
    /// of the family and its sorted options.
    fn name(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.src.family.as_bytes());
        for o in self.options() {
            h.update(b"\n");
            h.update(o.as_bytes());
        }
        format!("{}#{}", self.src.family, &hex(&h.finalize())[..12])
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The modules `plan`'s geqrf launches load (`compile::modules`).
fn geqrf_modules(plan: &Plan) -> Vec<Module> {
    modules(plan)
        .into_iter()
        .map(|(src, defines)| Module { src, defines })
        .collect()
}

/// The modules of `orgqr` and of `ormqr` with `C` of `n x n` under the
/// update plan `q` on `device`: the Q kernels (one block a tile), those of
/// the cluster size that holds the tile where one block does not, and
/// where the blocks are applied one per launch (the tile does not fit on
/// chip even over a cluster) the tensor-core
/// update variants `q`'s own update may load (its vectorized loads need
/// rows of a multiple of 4 floats, `n` for both here, as for the geqrf
/// update).
fn q_modules(q: &Plan, device: &DeviceInfo, ormqr: bool) -> Vec<Module> {
    let mut out = vec![Module {
        src: &qk::SOURCE,
        defines: qk::defines(1),
    }];
    match crate::q::OnChip::choose(q.shape.n(), device, &Tuning::default(), ormqr).0 {
        Some(1) => return out,
        Some(c) => {
            out.push(Module {
                src: &qk::SOURCE,
                defines: qk::defines(c),
            });
            return out;
        }
        None => {}
    }
    out.extend(
        geqrf_modules(q)
            .into_iter()
            .filter(|m| m.src.family == trailing_tc::SOURCE.family),
    );
    out
}

/// The fields of `p` its strategy's launches read, by name (`Display`
/// leaves some out): for `smem` the whole-matrix kernel's layout, for the
/// panel strategies the panel plan; `graph` for both. Shape, strategy, `forced` and
/// `reason` are in `Display`. The fields one strategy never reads (the
/// panel plan of `smem`, the layout of the others) are left out, so that a
/// plan made a sum type of the two prints the same lines. Destructured:
/// a field added to `Plan` or `PanelPlan` must be placed here before this
/// compiles.
fn fields(p: &Plan) -> String {
    let Plan {
        shape: _,
        strategy,
        forced: _,
        tpc,
        threads,
        rows,
        lda,
        warp,
        panel,
        graph,
        reason: _,
    } = p;
    if *strategy == Strategy::Smem {
        return format!(
            "smem: tpc={tpc} threads={threads} rows={rows} \
             lda={lda} warp={warp} graph={graph}"
        );
    }
    let PanelPlan {
        threads,
        groups,
        tensor_trailing,
        rows_per_thread,
        min_threads,
        pipelined,
        fold,
        checks_aside,
        tensor_warps,
        tensor_stage_depth,
        tensor_l2_hints,
        tensor_update_reverse,
        tensor_row_split,
        tensor_row_split_min_rows,
        lanes,
        fused_checks,
        reg_halves,
    } = panel;
    format!(
        "panel: threads={threads} groups={groups} tensor_trailing={tensor_trailing} \
         rows_per_thread={rows_per_thread} min_threads={min_threads} \
         pipelined={pipelined} fold={fold} \
         checks_aside={checks_aside} tensor_warps={tensor_warps} \
         tensor_stage_depth={tensor_stage_depth} \
         tensor_l2_hints={tensor_l2_hints} \
         tensor_update_reverse={tensor_update_reverse} tensor_row_split={tensor_row_split} \
         tensor_row_split_min_rows={tensor_row_split_min_rows} \
         lanes={lanes} fused_checks={fused_checks} \
         reg_halves={reg_halves} graph={graph} \
         runs_ahead={}",
        p.runs_ahead()
    )
}

/// A plan's lines: its text and fields, or the planner's refusal.
fn plan_lines(out: &mut String, label: &str, plan: &Result<Plan, QrError>) {
    match plan {
        Ok(p) => {
            let _ = writeln!(out, "{label}: {p}");
            let _ = writeln!(out, "{label} {}", fields(p));
        }
        Err(e) => {
            let _ = writeln!(out, "{label}: refused: {e}");
        }
    }
}

/// The manifest's text, its distinct modules by name with the compute
/// capabilities of the devices whose entries load them, and its count of
/// (device, operation, shape) entries.
struct Manifest {
    text: String,
    modules: BTreeMap<String, (Module, BTreeSet<(i32, i32)>)>,
    entries: usize,
}

/// Builds the manifest of the default plans (module docs). Each plan's
/// fields are written once: how `orgqr` and `ormqr` apply the blocks, and
/// where they are applied one update per block, that update's plan only
/// where it is not the geqrf plan (whole-matrix plans); `qr`'s plans by
/// their text.
fn manifest() -> Manifest {
    let tuning = Tuning::default();
    let devices = golden_devices();
    let shapes = golden_shapes();
    let mut text = String::new();
    let mut table = BTreeMap::new();
    let mut entries = 0;
    let _ = writeln!(
        text,
        "# The default plans (Tuning::default(), no forced strategy) of qr-gpu: written and\n\
         # checked by crates/qr-gpu/src/golden.rs (rewrite: {REWRITE_PLANS}).\n\
         # A restructure leaves this file unchanged; a changed default changes it in the\n\
         # same commit.\n\
         # Per device, operation and shape: the plan's text and fields, and the kernel\n\
         # modules its launches load (family#digest of the sorted defines; the table at\n\
         # the end gives the defines, the device block the NVRTC target)."
    );
    let list: Vec<String> = shapes.iter().map(|(b, n)| format!("{b}x{n}")).collect();
    let _ = writeln!(text, "# shapes (batch x n): {}", list.join(" "));
    for d in &devices {
        let target = crate::nvrtc::options(&[], d.compute_capability).join(" ");
        let _ = write!(text, "\n[device {}]\n{d}\nnvrtc target: {target}\n", d.name);
        for &(b, n) in &shapes {
            let shape = Shape::new(b, n).expect("a valid shape");
            let geqrf = crate::plan(shape, d, &tuning, None);
            let q = q_plan(shape, d, &tuning);
            for op in Op::ALL {
                entries += 1;
                let _ = write!(text, "\n[{} | {} | {shape}]\n", d.name, op.name());
                let mods = match op {
                    Op::Geqrf => {
                        plan_lines(&mut text, "plan", &geqrf);
                        geqrf.as_ref().map(geqrf_modules).unwrap_or_default()
                    }
                    Op::Orgqr | Op::Ormqr => {
                        let ormqr = matches!(op, Op::Ormqr);
                        let on_chip = crate::q::OnChip::choose(n, d, &tuning, ormqr).0;
                        let how = match on_chip {
                            Some(1) => "on chip, one block a tile".to_string(),
                            Some(c) => format!("on chip, a cluster of {c} blocks a tile"),
                            None => "one update per block".to_string(),
                        };
                        let _ = writeln!(text, "blocks applied: {how}");
                        if on_chip.is_some() {
                            // The update plan is not read.
                        } else if let (Ok(g), Ok(u)) = (&geqrf, &q)
                            && g == u
                        {
                            let _ = writeln!(text, "update plan: the geqrf plan");
                        } else {
                            plan_lines(&mut text, "update plan", &q);
                        }
                        q.as_ref()
                            .map(|q| q_modules(q, d, ormqr))
                            .unwrap_or_default()
                    }
                    Op::Qr => {
                        let on_chip = crate::q::OnChip::choose(n, d, &tuning, false).0.is_some();
                        let mut plans = vec![("plan", &geqrf)];
                        if on_chip {
                            let _ = writeln!(text, "blocks applied: on chip");
                        } else {
                            plans.push(("update plan", &q));
                        }
                        for (label, p) in plans {
                            let _ = match p {
                                Ok(p) => writeln!(text, "{label}: {p}"),
                                Err(e) => writeln!(text, "{label}: refused: {e}"),
                            };
                        }
                        let mut m = geqrf.as_ref().map(geqrf_modules).unwrap_or_default();
                        m.extend(
                            q.as_ref()
                                .map(|q| q_modules(q, d, false))
                                .unwrap_or_default(),
                        );
                        m
                    }
                };
                let mut names: Vec<String> = mods.iter().map(Module::name).collect();
                names.sort();
                names.dedup();
                let _ = writeln!(text, "modules: {}", names.join(" "));
                for m in mods {
                    table
                        .entry(m.name())
                        .or_insert_with(|| (m, BTreeSet::new()))
                        .1
                        .insert(d.compute_capability);
                }
            }
        }
    }
    let _ = write!(
        text,
        "\n[modules: family#digest: the defines as NVRTC options, sorted]\n"
    );
    for (name, (m, _)) in &table {
        let _ = writeln!(text, "{name}: {}", m.options().join(" "));
    }
    Manifest {
        text,
        modules: table,
        entries,
    }
}

/// Blocks of a manifest: runs of lines between blank lines, keyed by their
/// first line.
fn blocks(text: &str) -> Vec<(&str, Vec<&str>)> {
    text.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            let mut lines = b.lines();
            (lines.next().unwrap_or(""), lines.collect())
        })
        .collect()
}

/// What differs between the file's text `old` and the regenerated `new`,
/// block by block (at most `max` lines): blocks gone, blocks new, and per
/// changed block the lines only in the file (`-`) and only now (`+`),
/// the module table's first.
fn diff(old: &str, new: &str, max: usize) -> String {
    let (a, b) = (blocks(old), blocks(new));
    let in_a: BTreeMap<&str, &Vec<&str>> = a.iter().map(|(k, v)| (*k, v)).collect();
    let in_b: BTreeMap<&str, &Vec<&str>> = b.iter().map(|(k, v)| (*k, v)).collect();
    let mut out = Vec::new();
    let mut changed = 0;
    // The module table first: a changed define shows there as itself.
    let table = |(k, _): &&(&str, Vec<&str>)| k.starts_with("[modules");
    let first = a.iter().filter(table);
    for (k, v) in first.chain(a.iter().filter(|b| !table(b))) {
        match in_b.get(k) {
            None => {
                changed += 1;
                out.push(format!("- {k} (block gone)"));
            }
            Some(w) if *w != v => {
                changed += 1;
                out.push(format!("  {k}"));
                let gone: Vec<&str> = v.iter().filter(|l| !w.contains(l)).copied().collect();
                let came: Vec<&str> = w.iter().filter(|l| !v.contains(l)).copied().collect();
                if gone.len() == came.len() {
                    for (g, c) in gone.iter().zip(&came) {
                        let (g, c) = changed_words(g, c);
                        out.push(format!("-   {g}"));
                        out.push(format!("+   {c}"));
                    }
                } else {
                    out.extend(gone.iter().map(|l| format!("-   {l}")));
                    out.extend(came.iter().map(|l| format!("+   {l}")));
                }
            }
            Some(_) => {}
        }
    }
    for (k, _) in &b {
        if !in_a.contains_key(k) {
            changed += 1;
            out.push(format!("+ {k} (block new)"));
        }
    }
    let total = out.len();
    out.truncate(max);
    if total > max {
        out.push(format!("... {} lines more", total - max));
    }
    format!("{changed} block(s) differ:\n{}", out.join("\n"))
}

/// Two versions of a line of as many words: their label (the words up
/// to the first ending in `:`) and the words that differ, with `...`
/// where equal words were left out; other pairs as they are.
fn changed_words(old: &str, new: &str) -> (String, String) {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.split(' ').collect(), new.split(' ').collect());
    if a.len() != b.len() {
        return (old.to_string(), new.to_string());
    }
    let label = a.iter().position(|w| w.ends_with(':')).map_or(0, |i| i + 1);
    if a[..label] != b[..label] {
        return (old.to_string(), new.to_string());
    }
    let pick = |x: &[&str], y: &[&str]| {
        let mut words: Vec<&str> = x[..label].to_vec();
        let mut skipped = false;
        for (i, w) in x.iter().enumerate().skip(label) {
            if *w == y[i] {
                if !skipped {
                    words.push("...");
                    skipped = true;
                }
            } else {
                words.push(w);
                skipped = false;
            }
        }
        words.join(" ")
    };
    (pick(&a, &b), pick(&b, &a))
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

/// The default plans are the manifest's (module docs): the proof, without
/// a device or NVRTC, that a restructure changed no plan and no module.
#[test]
fn golden_default_plans_match() {
    check(PLANS, &manifest().text, REWRITE_PLANS);
}

/// Rewrites `tests/data/default_plans.txt` from the code as it is (for a
/// change of a default, committed with it).
#[test]
#[ignore = "rewrites tests/data/default_plans.txt: cargo test -p qr-gpu --lib golden_write -- --ignored"]
fn golden_write_default_plans() {
    let m = manifest();
    write(PLANS, &m.text);
    println!("{} entries, {} modules", m.entries, m.modules.len());
}

/// The manifest sees what it should: every device, operation and shape,
/// each plan's modules in the table, and the modules that differ between
/// devices (row splits only where there are clusters).
#[test]
fn golden_manifest_covers_every_entry() {
    let m = manifest();
    let (devices, shapes) = (golden_devices(), golden_shapes());
    assert_eq!(m.entries, devices.len() * shapes.len() * Op::ALL.len());
    for s in [(1, 4096), (2, 4096), (8, 2048), (60, 1024), (640, 512)] {
        assert!(shapes.contains(&s), "{s:?}");
    }
    assert!(m.text.contains("[H100 SXM 80GB | geqrf | 640x512x512]"));
    assert!(m.text.contains("[H200 | ormqr k=n | 20x32x32]"));
    assert!(!m.text.contains("refused"), "a default plan was refused");
    for line in m.text.lines().filter(|l| l.starts_with("modules: ")) {
        for name in line["modules: ".len()..].split(' ') {
            assert!(m.modules.contains_key(name), "{name}");
        }
    }
    let families: BTreeSet<&str> = m.modules.values().map(|(x, _)| x.src.family).collect();
    assert_eq!(
        families,
        ["panel", "panelreg", "q", "smem", "trailing_tc", "util"].into()
    );
    // Row splits only on devices with clusters, and there.
    let splits = |m: &Module| {
        m.defines
            .iter()
            .any(|(k, v)| k == "TC_ROWSPLIT" && v != "1")
    };
    let split_archs: BTreeSet<(i32, i32)> = m
        .modules
        .values()
        .filter(|(x, _)| splits(x))
        .flat_map(|(_, a)| a.iter().copied())
        .collect();
    assert_eq!(split_archs, [(9, 0), (10, 0), (12, 0)].into());
    // The diff names the changed block and line.
    let old = "# h\n\n[a]\nx: 1\ny: 2\n\n[b]\nz\n";
    let new = "# h\n\n[a]\nx: 1\ny: 3\n\n[c]\nz\n";
    let d = diff(old, new, 80);
    assert!(d.starts_with("3 block(s) differ"), "{d}");
    assert!(d.contains("-   y: 2") && d.contains("+   y: 3"), "{d}");
    let (g, c) = changed_words("p: a=1 b=2 c=3 d=4", "p: a=1 b=5 c=3 d=4");
    assert_eq!(
        (g.as_str(), c.as_str()),
        ("p: ... b=2 ...", "p: ... b=5 ...")
    );
    assert!(d.contains("- [b] (block gone)") && d.contains("+ [c] (block new)"));
}

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
fn ptx_manifest(expected: Option<&BTreeSet<String>>) -> String {
    crate::probe::check_nvrtc().expect("libnvrtc");
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
                let ptx = crate::nvrtc::compile_into(x.src, &x.defines, arch, &PtxCache::at(None))
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

/// The default plans' modules compile to the PTX the file records: the
/// proof that a restructure left the compiled code byte for byte the same
/// (only under the NVRTC that wrote the file: the PTX names its compiler).
#[test]
#[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu --lib -- --ignored nvrtc_golden_ptx"]
fn nvrtc_golden_ptx_digests() {
    let path = data(PTX);
    let old = std::fs::read_to_string(&path).ok();
    let lines: Option<BTreeSet<String>> =
        old.as_ref().map(|t| t.lines().map(str::to_owned).collect());
    let now = ptx_manifest(lines.as_ref());
    if let Some(old) = old {
        let version = |t: &str| {
            t.lines()
                .find(|l| l.starts_with("nvrtc "))
                .map(str::to_owned)
        };
        assert_eq!(
            version(&old),
            version(&now),
            "{} was written by another NVRTC: its digests compare only under the same one \
             (rewrite it from the code before the change with {REWRITE_PTX}, then compare)",
            path.display()
        );
    }
    check(PTX, &now, REWRITE_PTX);
}

/// Rewrites `tests/data/default_ptx.txt` (for a change of a default or of
/// a kernel source, committed with it).
#[test]
#[ignore = "needs libnvrtc; rewrites tests/data/default_ptx.txt: cargo test -p qr-gpu --lib write_golden_ptx -- --ignored"]
fn write_golden_ptx() {
    write(PTX, &ptx_manifest(None));
}
