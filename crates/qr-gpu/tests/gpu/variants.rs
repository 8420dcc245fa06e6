//! Tuning switches and kernel variants, as data: each row of `ROWS` flips
//! knobs of the default tuning and, on each of its strategies, either
//! gates the result (at given orders, or through `panel_variant` or
//! `smem_variant`) or requires it bit for bit equal to a reference
//! tuning's. Variant tests that check more than that are functions, in
//! `kernel_variants.rs` and `streams.rs`.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{Info, Shape, geqrf};
use qr_gpu::{GpuBackend, Strategy, Tuning};
use qr_verify::{Case, generate};

use super::BoxedTest;
use super::common::{
    batch_for, extreme_scales_twice, gate, gate_orders, panel_variant, same_bits, sizes,
    sizes_and_cases, spec,
};

/// One trial: its runs in turn.
pub(crate) struct Row {
    /// The trial's name.
    pub(crate) name: &'static str,
    runs: &'static [Run],
}

/// One tuning, checked on each of its strategies in turn.
struct Run {
    /// The failure messages' label; `{s}` stands for the strategy.
    label: &'static str,
    /// Turns the default tuning into the one under test.
    flip: fn(&mut Tuning),
    strategies: &'static [Strategy],
    check: Check,
}

/// What a run requires of its tuning on a strategy.
enum Check {
    /// `gate_orders` at `orders`, the cases from `case0`.
    Orders {
        orders: &'static [usize],
        case0: usize,
        seed: u64,
    },
    /// `panel_variant`.
    Panel { seed: u64 },
    /// `smem_variant` (its strategy is `smem`).
    Smem,
    /// `same_bits` (the run's tuning gated, its bits those of the default
    /// tuning flipped by `reference`) on
    /// `sizes_and_cases(orders, cases, cases_from)`.
    Bits {
        reference: fn(&mut Tuning),
        orders: &'static [usize],
        cases: (usize, usize, f64),
        cases_from: usize,
        seed: u64,
    },
}

const BLOCKED: &[Strategy] = &[Strategy::Blocked];
const CLUSTER: &[Strategy] = &[Strategy::Cluster];
const SMEM: &[Strategy] = &[Strategy::Smem];
const PANELS: &[Strategy] = &[Strategy::Blocked, Strategy::Cluster, Strategy::Large];

/// The trial of `ROWS`' row `name`.
pub(crate) fn trial(name: &str) -> BoxedTest {
    let row = ROWS
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name} in the variants table"));
    Box::new(move |g| run_row(g, row))
}

fn run_row(g: &Arc<GpuBackend>, row: &Row) -> Result<(), Failed> {
    for run in row.runs {
        let mut tuning = Tuning::default();
        (run.flip)(&mut tuning);
        for &s in run.strategies {
            let label = run.label.replace("{s}", &s.to_string());
            let forced = || {
                (**g)
                    .clone()
                    .with_tuning(tuning.clone())
                    .with_strategy(Some(s))
            };
            match run.check {
                Check::Orders {
                    orders,
                    case0,
                    seed,
                } => gate_orders(&forced(), orders, case0, seed, &label)?,
                Check::Panel { seed } => panel_variant(g.as_ref(), &tuning, s, &label, seed)?,
                Check::Smem => smem_variant(g, &tuning, &label)?,
                Check::Bits {
                    reference,
                    orders,
                    cases,
                    cases_from,
                    seed,
                } => {
                    let mut base = Tuning::default();
                    reference(&mut base);
                    let variant = forced();
                    let reference = variant.clone().with_tuning(base);
                    let specs = sizes_and_cases(orders, cases, cases_from);
                    same_bits(&variant, &reference, &specs, seed, &label)?;
                }
            }
        }
    }
    Ok(())
}

/// The rows, grouped by the kernels they vary.
pub(crate) static ROWS: &[Row] = &[
    // The blocked panel of a block alone (one block barrier per
    // reflector, float32 reflectors), its row loop plain and
    // software-pipelined (`Tuning::panel_pipeline_max_threads`;
    // rank-deficient and 1e-30 inputs take the double redo).
    Row {
        name: "panel_barriers",
        runs: &[
            Run {
                label: "panel pipelined up to 0 threads",
                flip: barriers::<0>,
                strategies: BLOCKED,
                check: Check::Panel { seed: 1300 },
            },
            Run {
                label: "panel pipelined up to 1024 threads",
                flip: barriers::<1024>,
                strategies: BLOCKED,
                check: Check::Panel { seed: 1300 },
            },
        ],
    },
    // The register panel's cluster loop (one meeting per reflector), plus
    // orders that take clusters of 2 to 8 blocks.
    Row {
        name: "register_cluster_meetings",
        runs: &[
            Run {
                label: "register cluster",
                flip: |_| {},
                strategies: CLUSTER,
                check: Check::Panel { seed: 3000 },
            },
            Run {
                label: "register cluster",
                flip: |_| {},
                strategies: CLUSTER,
                check: Check::Orders {
                    orders: &[2048, 3000, 4096],
                    case0: 2,
                    seed: 3200,
                },
            },
        ],
    },
    // The previous panel's update of each panel's columns folded into the
    // panel (`Tuning::panel_fold_min_n`, the default for few matrices): the
    // strategy tests run it; here the unfolded path (a tensor-core launch
    // of that update between the panels), and the fold beside the
    // mid-factorization check (`Tuning::checks_aside_min_l2` forced), bitwise
    // equal to the check first.
    Row {
        name: "panel_fold",
        runs: &[
            Run {
                label: "no fold",
                flip: |t| t.panel_fold_min_n = None,
                strategies: BLOCKED,
                check: Check::Panel { seed: 2200 },
            },
            Run {
                label: "fold checks aside",
                flip: |t| t.checks_aside_min_l2 = Some(0),
                strategies: BLOCKED,
                check: Check::Bits {
                    reference: |t| t.checks_aside_min_l2 = None,
                    orders: &[65, 96, 97, 200, 512],
                    cases: (3, 300, 0.0),
                    cases_from: 20,
                    seed: 2300,
                },
            },
        ],
    },
    // The `smem` kernel that keeps the matrix in shared memory (one block
    // barrier per column, `Tuning::smem_register_max_rows` 0): the strategy
    // tests run the default, the register kernel for small orders.
    Row {
        name: "smem_shared_kernels",
        runs: &[Run {
            label: "smem shared memory",
            flip: smem_shared,
            strategies: SMEM,
            check: Check::Smem,
        }],
    },
    // The register `smem` kernel beyond its default range (up to 16 rows
    // per thread at 4 and 8 threads per column).
    Row {
        name: "smem_registers",
        runs: &[
            Run {
                label: "smem registers tpc 4",
                flip: smem_registers::<4>,
                strategies: SMEM,
                check: Check::Smem,
            },
            Run {
                label: "smem registers tpc 8",
                flip: smem_registers::<8>,
                strategies: SMEM,
                check: Check::Smem,
            },
        ],
    },
    // The cuBLAS SGEMM trailing update (the fallback of devices without
    // tf32 tensor cores) on every panel strategy, sizes around the limits.
    Row {
        name: "sgemm_trailing",
        runs: &[Run {
            label: "{s} sgemm",
            flip: |t| t.tensor_trailing = false,
            strategies: PANELS,
            check: Check::Orders {
                orders: &[33, 200, 513, 1000],
                case0: 3,
                seed: 300,
            },
        }],
    },
    // The tensor-core update with V and A2 staged through rings in shared
    // memory (`Tuning::tensor_stage_depth`), sizes around its row steps,
    // bitwise equal to the streaming update (the same products summed in
    // the same order).
    Row {
        name: "tensor_stage",
        runs: &[
            Run {
                label: "{s} tensor stage 2 warps 4",
                flip: staged::<2, 4>,
                strategies: PANELS,
                check: Check::Bits {
                    reference: streamed::<4>,
                    orders: &[33, 65, 200, 513, 1000],
                    cases: (3, 300, 0.0),
                    cases_from: 30,
                    seed: 1400,
                },
            },
            Run {
                label: "{s} tensor stage 3 warps 8",
                flip: staged::<3, 8>,
                strategies: PANELS,
                check: Check::Bits {
                    reference: streamed::<8>,
                    orders: &[33, 65, 200, 513, 1000],
                    cases: (3, 300, 0.0),
                    cases_from: 30,
                    seed: 1400,
                },
            },
        ],
    },
    // The input scan beside the first panel and update
    // (`Tuning::checks_aside_min_l2`, forced from any size), bitwise equal (H, tau
    // and info) to the scan first.
    Row {
        name: "checks_aside",
        runs: &[Run {
            label: "{s} checks aside",
            flip: |t| t.checks_aside_min_l2 = Some(0),
            strategies: PANELS,
            check: Check::Bits {
                reference: |t| t.checks_aside_min_l2 = None,
                orders: &[1, 32, 33, 64, 65, 200, 512],
                cases: (3, 300, 0.0),
                cases_from: 20,
                seed: 1400,
            },
        }],
    },
];

/// `panel_barriers`' tunings: the row loop pipelined up to `PIPE` threads.
fn barriers<const PIPE: u32>(t: &mut Tuning) {
    t.panel_pipeline_max_threads = PIPE;
}

/// `smem_shared_kernels`' tunings: no register kernel.
fn smem_shared(t: &mut Tuning) {
    t.smem_register_max_rows = 0;
}

/// `smem_registers`' tunings.
fn smem_registers<const TPC: u32>(t: &mut Tuning) {
    t.smem_tpc = [TPC; 3];
    t.smem_register_max_rows = 16;
}

/// `tensor_stage`'s reference: the streaming update at `WARPS` warps.
fn streamed<const WARPS: u32>(t: &mut Tuning) {
    t.tensor_warps4_min_waves = if WARPS == 4 { 0 } else { u32::MAX };
    t.tensor_stage_depth = 0;
}

/// `tensor_stage`'s variants: `streamed::<WARPS>` staged `DEPTH` slabs
/// deep.
fn staged<const DEPTH: u32, const WARPS: u32>(t: &mut Tuning) {
    streamed::<WARPS>(t);
    t.tensor_stage_depth = DEPTH;
}

/// An `smem` kernel variant: sizes up to the shared-memory limit, every
/// distribution, inputs of 1e-30s and 1e+30s with a zero column, two runs
/// bitwise identical, and a NaN matrix beside a finite one.
fn smem_variant(g: &Arc<GpuBackend>, tuning: &qr_gpu::Tuning, label: &str) -> Result<(), Failed> {
    let b = (**g)
        .clone()
        .with_tuning(tuning.clone())
        .with_strategy(Some(Strategy::Smem));
    for (i, n) in sizes(g, Strategy::Smem).into_iter().enumerate() {
        let case = Case::ALL_QR_V2[i % Case::ALL_QR_V2.len()];
        let sp = spec(batch_for(n), n, 2.0, case);
        let a = generate(&sp, 1500 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("{label} {sp}"))?;
    }
    // Orders every smem kernel takes by default or in the tests' tunings.
    for (i, case) in Case::all().enumerate() {
        let sp = spec(3, 60, if i % 2 == 0 { 2.0 } else { 0.0 }, case);
        let a = generate(&sp, 1600 + i as u64);
        gate(&b, sp.shape()?, &a, &format!("{label} {sp}"))?;
    }
    let sp = spec(2, 57, 1.0, Case::Dense);
    extreme_scales_twice(&b, sp, (21, 20), label)?;
    // A NaN matrix beside a finite one: flagged and NaN-filled, the other
    // factored (each kernel has its own copy of the scan).
    let mut a = generate(&sp, 22);
    a[57 * 57 + 100] = f32::NAN;
    let f = geqrf(&b, sp.shape()?, &a)?;
    let flagged = f.h[57 * 57..]
        .iter()
        .chain(&f.tau[57..])
        .all(|x| x.is_nan());
    if f.info != [Info::OK, Info::NON_FINITE] || !flagged {
        return Err(format!(
            "{label}: NaN matrix info {:?}, NaN-filled {flagged}",
            f.info
        )
        .into());
    }
    let one = Shape::new(1, 57)?;
    let report = qr_verify::check(one, &a[..57 * 57], &f.h[..57 * 57], &f.tau[..57])?;
    if !report.meets_bar() {
        return Err(format!("{label}: the finite matrix beside a NaN one fails the bar").into());
    }
    Ok(())
}
