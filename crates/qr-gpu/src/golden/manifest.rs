//! The manifest of the default plans: the devices and shapes planned for,
//! each plan's text and fields, and the kernel modules its launches load.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use qr_core::{QrError, Shape};
use sha2::{Digest, Sha256};

use super::{REWRITE_PLANS, hex};
use crate::device::probe::DeviceInfo;
use crate::kernels::KernelSource;
use crate::kernels::trailing_tc::{self, q as qk};
use crate::plan::Plan;
use crate::plan::modules::modules;
use crate::plan::modules::tests::SHAPES;
use crate::tuning::Tuning;

/// The devices planned for: every modelled board (sm_80 to sm_120, the
/// H100 SXM beside the H200).
pub(super) fn golden_devices() -> Vec<DeviceInfo> {
    DeviceInfo::models()
}

/// The shapes planned for, each once, in this order: the `qr_v2`
/// benchmark set, its test set, the compile tests' shapes, then orders and
/// batches on either side of the default tuning's limits.
pub(super) fn golden_shapes() -> Vec<(usize, usize)> {
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
pub(super) enum Op {
    Geqrf,
    Orgqr,
    /// With `C` of `n x n` (k = n, as the suites gate it), either side and
    /// transpose (their modules are the same).
    Ormqr,
    Qr,
}

impl Op {
    pub(super) const ALL: [Op; 4] = [Op::Geqrf, Op::Orgqr, Op::Ormqr, Op::Qr];

    fn name(self) -> &'static str {
        match self {
            Op::Geqrf => "geqrf",
            Op::Orgqr => "orgqr",
            Op::Ormqr => "ormqr k=n",
            Op::Qr => "qr",
        }
    }
}

/// One kernel module: its family and `-D` defines (in the family's order,
/// as the engine passes them).
#[derive(Clone, Debug)]
pub(super) struct Module {
    pub(super) src: &'static KernelSource,
    pub(super) defines: Vec<(String, String)>,
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

/// The modules `plan`'s geqrf launches load (`plan::modules`).
fn geqrf_modules(plan: &Plan) -> Vec<Module> {
    modules(plan)
        .into_iter()
        .map(|(src, defines)| Module { src, defines })
        .collect()
}

/// The modules of `orgqr` and of `ormqr` with `C` of `n x n` under the
/// update plan `q`, the blocks applied as `on_chip` says: the Q kernels
/// (one block a tile), those of the cluster size that holds the tile where
/// one block does not, and where the blocks are applied one per launch the
/// tensor-core update variants `q`'s own update may load (its vectorized
/// loads need rows of a multiple of 4 floats, `n` for both here, as for
/// the geqrf update).
fn q_modules(q: &Plan, on_chip: Option<u32>) -> Vec<Module> {
    let mut out = vec![Module {
        src: &qk::SOURCE,
        defines: qk::defines(1),
    }];
    match on_chip {
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

/// A plan's lines: its text and fields, or the planner's refusal.
fn plan_lines(out: &mut String, label: &str, plan: &Result<Plan, QrError>) {
    match plan {
        Ok(p) => {
            let _ = writeln!(out, "{label}: {p}");
            let _ = writeln!(out, "{label} {}", p.parameters());
        }
        Err(e) => {
            let _ = writeln!(out, "{label}: refused: {e}");
        }
    }
}

/// The manifest's text, its distinct modules by name with the compute
/// capabilities of the devices whose entries load them, and its count of
/// (device, operation, shape) entries.
pub(super) struct Manifest {
    pub(super) text: String,
    pub(super) modules: BTreeMap<String, (Module, BTreeSet<(i32, i32)>)>,
    pub(super) entries: usize,
}

/// Builds the manifest of the default plans (`golden`'s docs). Each plan's
/// fields are written once: how `orgqr` and `ormqr` apply the blocks, and
/// where they are applied one update per block, that update's plan only
/// where it is not the geqrf plan (whole-matrix plans); `qr`'s plans by
/// their text.
pub(super) fn manifest() -> Manifest {
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
        let target = crate::compile::nvrtc::options(&[], d.compute_capability).join(" ");
        let _ = write!(text, "\n[device {}]\n{d}\nnvrtc target: {target}\n", d.name);
        for &(b, n) in &shapes {
            let shape = Shape::new(b, n).expect("a valid shape");
            let geqrf = crate::plan(shape, d, &tuning, None);
            let q = crate::Planner::new(d, &tuning, None).q_plan(shape);
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
                        let on_chip = crate::factor::q::OnChip::choose(n, d, &tuning, ormqr).0;
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
                            .map(|q| q_modules(q, on_chip))
                            .unwrap_or_default()
                    }
                    Op::Qr => {
                        let on_chip = crate::factor::q::OnChip::choose(n, d, &tuning, false).0;
                        let mut plans = vec![("plan", &geqrf)];
                        if on_chip.is_some() {
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
                                .map(|q| q_modules(q, on_chip))
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
