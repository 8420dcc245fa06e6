//! The sweep's rows: each tuning knob's values on the shapes it matters
//! for, listed without a device so that tests can plan and compile them.

use qr_gpu::{PlanEdit, Strategy, Tuning};
use qr_verify::Spec;

/// Cases the cluster variants are compared on (forced `cluster`).
const CLUSTER_CASES: [&str; 4] = [
    "40,352,1,dense",
    "60,1024,2,dense",
    "8,2048,1,dense",
    "2,4096,1,dense",
];

/// Cases the shared-memory panel variants are compared on (forced `blocked`).
const PANEL_CASES: [&str; 4] = [
    "40,176,1,dense",
    "40,352,1,dense",
    "640,512,2,dense",
    "60,1024,2,dense",
];

/// The benchmark set's dense cases, for knobs of every strategy.
const DENSE_CASES: [&str; 7] = [
    "20,32,1,dense",
    "40,176,1,dense",
    "40,352,1,dense",
    "640,512,2,dense",
    "60,1024,2,dense",
    "8,2048,1,dense",
    "2,4096,1,dense",
];

/// Few matrices, each panel fitting one block: `cluster` against the
/// one-barrier `blocked` panel at several block sizes.
const FEW_CASES: [&str; 6] = [
    "40,176,1,dense",
    "40,240,1,dense",
    "40,352,1,dense",
    "40,512,1,dense",
    "60,1024,2,dense",
    "20,1024,1,dense",
];

/// One sweep row.
#[derive(Clone)]
pub(super) struct Variant {
    /// The case (`batch,n,cond,case`).
    pub case: &'static str,
    /// The `Tuning` field it sweeps (`--only` selects by this name),
    /// `strategy` for a forced strategy alone, or the plan field an edit
    /// sets (`schedule.graph`).
    pub knob: &'static str,
    /// The knob's value in this row, in words.
    pub value: String,
    /// The strategy forced, if any.
    pub strategy: Option<Strategy>,
    /// The whole tuning of the row.
    pub tuning: Tuning,
    /// A change made to the planner's plans, where the row sets a plan
    /// field no tuning knob sets.
    pub edit: Option<PlanEdit>,
}

/// Adds `knob` = `value` (`tuning`, with `strategy` forced) on each of
/// `specs`.
fn add(
    variants: &mut Vec<Variant>,
    specs: &[&'static str],
    knob: &'static str,
    value: String,
    strategy: Option<Strategy>,
    tuning: &Tuning,
) {
    let row = Variant {
        case: "",
        knob,
        value,
        strategy,
        tuning: tuning.clone(),
        edit: None,
    };
    add_row(variants, specs, row);
}

/// As [`add`] with no strategy forced, the planner's plans changed by
/// `edit`.
fn add_edited(
    variants: &mut Vec<Variant>,
    specs: &[&'static str],
    (knob, value): (&'static str, String),
    tuning: &Tuning,
    edit: Option<PlanEdit>,
) {
    let row = Variant {
        case: "",
        knob,
        value,
        strategy: None,
        tuning: tuning.clone(),
        edit,
    };
    add_row(variants, specs, row);
}

/// `row` on each of `specs`.
fn add_row(variants: &mut Vec<Variant>, specs: &[&'static str], row: Variant) {
    variants.extend(specs.iter().map(|&case| Variant {
        case,
        ..row.clone()
    }));
}

/// Every sweep row: the tuning variants on the shapes each knob matters
/// for (no device needed to list them).
pub(super) fn variants() -> Vec<Variant> {
    let base = Tuning::default();
    let mut variants: Vec<Variant> = Vec::new();
    for tpc in [1u32, 2, 4, 8] {
        let t = Tuning {
            smem_tpc: [tpc; 3],
            ..base.clone()
        };
        add(
            &mut variants,
            &["20,32,1,dense", "40,176,1,dense"],
            "smem_tpc",
            format!("{tpc}"),
            Some(Strategy::Smem),
            &t,
        );
    }
    // The warp kernel of orders up to 32 against the block kernel, by
    // batch: on the H100 it lost at 20 and 132 matrices of order 32 and
    // won from 528 on (docs/PERF.md, `smem_warp_min_batch_per_sm`).
    for (per_sm, label) in [(None, "never"), (Some(0), "always")] {
        let t = Tuning {
            smem_warp_min_batch_per_sm: per_sm,
            ..base.clone()
        };
        add(
            &mut variants,
            &[
                "20,32,1,dense",
                "20,16,1,dense",
                "132,32,1,dense",
                "264,32,1,dense",
                "528,32,1,dense",
                "2112,32,1,dense",
                "20000,32,1,dense",
            ],
            "smem_warp_min_batch_per_sm",
            label.to_string(),
            None,
            &t,
        );
    }
    // The staged tensor update (V and A2 through rings in shared memory)
    // by pipeline depth (0: streamed), with the planner's own warps.
    for depth in [0u32, 2, 3, 4] {
        let t = Tuning {
            tensor_stage_depth: depth,
            ..base.clone()
        };
        add(
            &mut variants,
            &DENSE_CASES[1..6],
            "tensor_stage_depth",
            format!("{depth}"),
            None,
            &t,
        );
    }
    for (waves, warps) in [(u32::MAX, "8"), (0, "4")] {
        let t = Tuning {
            tensor_warps4_min_waves: waves,
            ..base.clone()
        };
        add(
            &mut variants,
            &DENSE_CASES[1..],
            "tensor_warps4_min_waves",
            format!("{waves} ({warps} warps always)"),
            None,
            &t,
        );
    }
    for tensor in [true, false] {
        let t = Tuning {
            tensor_trailing: tensor,
            ..base.clone()
        };
        add(
            &mut variants,
            &["640,512,2,dense", "60,1024,2,dense", "2,4096,1,dense"],
            "tensor_trailing",
            format!("{tensor}"),
            None,
            &t,
        );
    }
    for rpt in [0u32, 1, 2, 4] {
        let t = Tuning {
            reg_panel_rows_per_thread: rpt,
            reg_panel_max_threads: 1024,
            ..base.clone()
        };
        for (sp, strat) in [
            ("40,176,1,dense", Strategy::Blocked),
            ("40,352,1,dense", Strategy::Blocked),
            ("640,512,2,dense", Strategy::Blocked),
            ("60,1024,2,dense", Strategy::Blocked),
            ("40,352,1,dense", Strategy::Cluster),
            ("60,1024,2,dense", Strategy::Cluster),
            ("8,2048,1,dense", Strategy::Cluster),
            ("2,4096,1,dense", Strategy::Cluster),
        ] {
            add(
                &mut variants,
                &[sp],
                "reg_panel_rows_per_thread",
                format!("{rpt}, {strat}"),
                Some(strat),
                &t,
            );
        }
    }
    for k in [0u32, 2, 8] {
        let t = Tuning {
            tensor_row_split: k,
            ..base.clone()
        };
        add(
            &mut variants,
            &[
                "40,176,1,dense",
                "40,352,1,dense",
                "60,1024,2,dense",
                "8,2048,1,dense",
                "2,4096,1,dense",
            ],
            "tensor_row_split",
            format!("{k}"),
            None,
            &t,
        );
    }
    for lanes in [1u32, 2] {
        // Lanes are planned outside graphs only, and for two matrices an
        // SM or more: these few-matrix plans lose their graph to try them.
        let edit = PlanEdit::schedule("lanes, launch by launch", move |s| {
            s.graph = false;
            s.lanes = lanes;
        });
        add_edited(
            &mut variants,
            &["40,352,1,dense", "60,1024,2,dense"],
            ("batch_lanes", format!("{lanes}, without graphs")),
            &base,
            Some(edit),
        );
    }
    for lanes in [1u32, 2, 3, 4] {
        let t = Tuning {
            batch_lanes: lanes,
            batch_lanes_min_batch_per_sm: 0,
            ..base.clone()
        };
        add(
            &mut variants,
            &["640,512,2,dense", "640,512,0,rankdef"],
            "batch_lanes",
            format!("{lanes}"),
            None,
            &t,
        );
    }
    // The L2 eviction hints of the update.
    for hints in [0u32, 1, 2] {
        let t = Tuning {
            tensor_l2_hints: hints,
            ..base.clone()
        };
        add(
            &mut variants,
            &DENSE_CASES[2..],
            "tensor_l2_hints",
            format!("{hints}"),
            None,
            &t,
        );
    }
    for min in [64u32, 128, 256] {
        let t = Tuning {
            reg_panel_alone_min_threads: min,
            ..base.clone()
        };
        add(
            &mut variants,
            &["40,352,1,dense", "60,1024,2,dense"],
            "reg_panel_alone_min_threads",
            format!("{min}"),
            None,
            &t,
        );
    }
    for th in [128u32, 256, 512, 1024] {
        let t = Tuning {
            reg_panel_rows_per_thread: 0,
            blocked_panel_threads: th,
            ..base.clone()
        };
        add(
            &mut variants,
            &["40,352,1,dense", "640,512,2,dense", "60,1024,2,dense"],
            "blocked_panel_threads",
            format!("{th}"),
            Some(Strategy::Blocked),
            &t,
        );
    }
    for (regs, tpc) in [(0, 4), (64, 2), (64, 4), (64, 8)] {
        let t = Tuning {
            smem_register_max_rows: regs,
            smem_tpc: [if tpc == 4 { 8 } else { tpc }, tpc, tpc],
            ..base.clone()
        };
        add(
            &mut variants,
            &[
                "20,32,1,dense",
                "40,96,1,dense",
                "40,144,1,dense",
                "40,176,1,dense",
                "40,192,1,dense",
                "40,208,1,dense",
                "40,224,1,dense",
            ],
            "smem_register_max_rows",
            format!("{regs}, tpc {tpc}"),
            Some(Strategy::Smem),
            &t,
        );
    }
    // Where the whole-matrix shared-memory kernel stops beating the
    // blocked path (`Tuning::smem_max_n`).
    for strat in [Strategy::Smem, Strategy::Blocked, Strategy::Cluster] {
        add(
            &mut variants,
            &[
                "40,96,1,dense",
                "40,128,1,dense",
                "40,144,1,dense",
                "40,160,1,dense",
                "40,176,1,dense",
                "40,208,1,dense",
                "40,240,1,dense",
                "40,288,1,dense",
                "40,352,1,dense",
            ],
            "smem_max_n",
            format!("crossover: {strat}"),
            Some(strat),
            &base,
        );
    }
    for (k, per_sm, th) in [
        (2u32, 8u32, 256u32),
        (4, 8, 256),
        (8, 8, 256),
        (8, 8, 128),
        (8, 8, 512),
        (4, 8, 512),
    ] {
        let t = Tuning {
            cluster_max_blocks: k,
            cluster_blocks_per_sm: per_sm,
            cluster_panel_threads: th,
            cluster_min_rows: 32,
            ..base.clone()
        };
        add(
            &mut variants,
            &CLUSTER_CASES,
            "cluster_max_blocks",
            format!("{k}, threads {th}"),
            Some(Strategy::Cluster),
            &t,
        );
    }
    // Clusters for few small matrices (`Tuning::cluster_min_rows` lowered
    // so that the fill rule alone sets the size).
    for k in [2u32, 4, 8] {
        let t = Tuning {
            cluster_max_blocks: k,
            cluster_blocks_per_sm: 8,
            cluster_min_rows: 16,
            ..base.clone()
        };
        add(
            &mut variants,
            &["40,176,1,dense", "40,240,1,dense"],
            "cluster_min_blocks",
            format!("{k}"),
            Some(Strategy::Cluster),
            &t,
        );
    }
    // The software-pipelined row loop of the one-barrier float32 panel
    // (`Tuning::panel_pipeline_max_threads`): never, blocks of up to 256
    // threads alone on their SM, every block alone on its SM.
    for max in [0, 256, 1024] {
        let t = Tuning {
            panel_pipeline_max_threads: max,
            ..base.clone()
        };
        add(
            &mut variants,
            &PANEL_CASES,
            "panel_pipeline_max_threads",
            format!("{max}"),
            Some(Strategy::Blocked),
            &t,
        );
    }
    add(
        &mut variants,
        &FEW_CASES,
        "cluster_min_blocks",
        "cluster forced".to_string(),
        Some(Strategy::Cluster),
        &base,
    );
    for th in [128u32, 192, 256, 384, 512, 768] {
        let t = Tuning {
            blocked_panel_threads: th,
            blocked_tall_panel_threads: th,
            ..base.clone()
        };
        add(
            &mut variants,
            &FEW_CASES,
            "blocked_tall_panel_threads",
            format!("{th}"),
            Some(Strategy::Blocked),
            &t,
        );
    }
    for aside in [false, true] {
        let t = Tuning {
            checks_aside_min_l2: aside.then_some(0),
            ..base.clone()
        };
        add(
            &mut variants,
            &DENSE_CASES,
            "checks_aside_min_l2",
            format!("{:?}", t.checks_aside_min_l2),
            None,
            &t,
        );
    }
    // The previous panel's update of each panel's columns folded into the
    // panel (`Tuning::panel_fold_min_n`), on the planner's plans.
    for (on, min) in [(false, 240), (true, 240), (true, 0)] {
        let t = Tuning {
            panel_fold_min_n: on.then_some(min),
            ..base.clone()
        };
        add(
            &mut variants,
            &[
                "40,176,1,dense",
                "40,240,1,dense",
                "40,352,1,dense",
                "40,512,1,dense",
                "60,1024,2,dense",
            ],
            "panel_fold_min_n",
            format!("{:?}", t.panel_fold_min_n),
            None,
            &t,
        );
    }
    // Each call as one CUDA graph (the planner's `Schedule::graph`) or
    // launch by launch (an edit): on the planner's plans, and for the large
    // batches with the checks stream off (a plan with it has no graph).
    for on in [false, true] {
        let edit = (!on).then(PlanEdit::launch_by_launch);
        add_edited(
            &mut variants,
            &DENSE_CASES[1..],
            ("schedule.graph", format!("{on}")),
            &base,
            edit.clone(),
        );
        let t = Tuning {
            checks_aside_min_l2: None,
            ..base.clone()
        };
        add_edited(
            &mut variants,
            &["640,512,2,dense", "60,1024,2,dense"],
            ("schedule.graph", format!("{on}, checks first")),
            &t,
            edit,
        );
    }
    add(
        &mut variants,
        &["8,2048,1,dense", "2,4096,1,dense"],
        "strategy",
        "large".to_string(),
        Some(Strategy::Large),
        &base,
    );
    variants
}

/// The planner's plan of sweep row `v` on `device`; `None` where the
/// planner refuses it (a forced strategy that does not fit), which the
/// sweep prints as a row not run.
pub(super) fn variant_plan(v: &Variant, device: &qr_gpu::DeviceInfo) -> Option<qr_gpu::Plan> {
    let shape = v.case.parse::<Spec>().ok()?.shape().ok()?;
    qr_gpu::Planner::new(device, &v.tuning, v.strategy)
        .with_edit(v.edit.as_ref())
        .plan(shape)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use qr_gpu::{DeviceInfo, Plan};

    /// The H200 the sweeps run on (`qr suite`'s first line there: sm_90,
    /// 132 SMs, 227 KiB a block, 60 MiB of L2).
    fn h200() -> DeviceInfo {
        DeviceInfo::modelled("NVIDIA H200 (modelled)", (9, 0), 132, 232_448, 60 << 20)
    }

    /// The planner's plans of every sweep row on the H200; rows the
    /// planner refuses (a forced strategy that does not fit) are left out,
    /// as the sweep prints them unrun.
    fn plans() -> (Vec<Plan>, usize) {
        let d = h200();
        let rows = variants();
        for v in &rows {
            v.case
                .parse::<Spec>()
                .expect("sweep spec")
                .shape()
                .expect("shape");
        }
        let plans: Vec<Plan> = rows.iter().filter_map(|v| variant_plan(v, &d)).collect();
        (plans, rows.len())
    }

    #[test]
    fn most_sweep_rows_plan() {
        let (plans, rows) = plans();
        println!("{} of {rows} sweep rows plan on the H200", plans.len());
        assert!(
            rows > 100 && plans.len() * 10 >= rows * 9,
            "{} of {rows}",
            plans.len()
        );
    }

    /// `--only` selects by knob: every row's knob is a field of `Tuning`
    /// (as its `Debug` names them), `strategy`, or the schedule's field
    /// that an edit sets in some of its rows.
    #[test]
    fn every_knob_is_a_tuning_field() {
        let fields = format!("{:?}", Tuning::default());
        for v in variants() {
            assert!(
                v.knob == "strategy"
                    || v.knob.starts_with("schedule.")
                    || fields.contains(&format!(" {}: ", v.knob)),
                "{} is not a field of Tuning",
                v.knob
            );
        }
    }

    /// Every kernel module of every sweep row compiles for the H200, so a
    /// device call spends none of its time on a variant that cannot build.
    #[test]
    #[ignore = "needs libnvrtc (CUDA 13): cargo test -p qr-gpu -- --ignored nvrtc_"]
    fn nvrtc_sweep_plans_compile_for_sm90() {
        let (plans, _) = plans();
        let compiled = qr_gpu::compile_plans(&plans, (9, 0)).unwrap_or_else(|e| panic!("{e}"));
        println!("{} modules of {} plans", compiled.len(), plans.len());
        for line in &compiled {
            println!("  {line}");
        }
    }
}
