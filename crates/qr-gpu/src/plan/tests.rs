use super::smem_layout::smem_registers;
use super::*;
use crate::device::probe::DeviceInfo;
use crate::tuning::Tuning;

fn h200() -> DeviceInfo {
    DeviceInfo::modelled("test H200", (9, 0), 132, 232_448, 60 << 20)
}

/// The planner's plan for `b` matrices of order `n` on the test H200.
fn at(b: usize, n: usize, t: &Tuning) -> Plan {
    plan(Shape::new(b, n).unwrap(), &h200(), t, None).unwrap()
}

/// The whole-matrix layout of an `smem` plan.
fn small(p: &Plan) -> SmemGeometry {
    match &p.route {
        Route::Small(g) => *g,
        Route::Blocked(_) => panic!("not an smem plan: {p}"),
    }
}

/// A plan's blocked parameters as the tests read them (0 or false where its
/// route, panel or update has none; one lane).
struct View {
    threads: u32,
    groups: u32,
    rows_per_thread: u32,
    min_threads: u32,
    halves: bool,
    fold: bool,
    tensor: bool,
    warps: u32,
    l2_hints: u32,
    lanes: u32,
    checks_aside: bool,
}

fn view(p: &Plan) -> View {
    let Route::Blocked(b) = &p.route else {
        return View {
            threads: 0,
            groups: 0,
            rows_per_thread: 0,
            min_threads: 0,
            halves: false,
            fold: false,
            tensor: false,
            warps: 0,
            l2_hints: 0,
            lanes: 1,
            checks_aside: false,
        };
    };
    let (rows_per_thread, min_threads, halves) = match b.panel {
        Panel::Registers {
            rows_per_thread,
            min_threads,
            halves,
            ..
        } => (rows_per_thread, min_threads, halves),
        Panel::Shared { .. } => (0, 0, false),
    };
    let (tensor, warps, l2_hints) = match b.update {
        Update::Tensor(t) => (true, t.warps, t.l2_hints),
        Update::Sgemm => (false, 0, 0),
    };
    View {
        threads: b.panel.threads(),
        groups: b.meeting.groups(),
        rows_per_thread,
        min_threads,
        halves,
        fold: b.panel.folds(),
        tensor,
        warps,
        l2_hints,
        lanes: b.schedule.lanes,
        checks_aside: b.schedule.checks_aside,
    }
}

#[test]
fn strategies_parse_and_print() {
    for s in Strategy::ALL {
        assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
    }
    assert!("tiled".parse::<Strategy>().is_err());
}

#[test]
fn halves_for_register_panels_of_one_row_per_thread() {
    let t = Tuning::default();
    let p = at(40, 352, &t);
    assert!(view(&p).halves && view(&p).rows_per_thread == 1, "{p}");
    assert!(p.to_string().contains("by halves"));
    assert!(p.defines().contains(&("PREG_RPT".into(), "2".into())));
    assert!(p.defines().contains(&("PREG_HALVES".into(), "1".into())));
    // Not two rows per thread (the kernel would spill), the folding panel,
    // clusters.
    assert!(!view(&at(640, 512, &t)).halves);
    assert!(!view(&at(60, 1024, &t)).halves);
    assert!(!view(&at(40, 176, &t)).halves);
    assert!(!view(&at(8, 2048, &t)).halves);
}

#[test]
fn lanes_for_batches_of_several_matrices_per_sm_outside_graphs() {
    let t = Tuning {
        batch_lanes: 3,
        ..Tuning::default()
    };
    assert_eq!(view(&at(640, 512, &t)).lanes, 3);
    assert!(at(640, 512, &t).to_string().contains("3 groups"));
    // Fewer than two matrices per SM; a graph; the smem strategy.
    assert_eq!(view(&at(60, 1024, &t)).lanes, 1);
    assert_eq!(view(&at(300, 200, &t)).lanes, 1);
    assert_eq!(view(&at(640, 64, &t)).lanes, 1);
    let many = Tuning {
        batch_lanes: 99,
        ..t.clone()
    };
    assert_eq!(view(&at(640, 512, &many)).lanes as usize, super::MAX_LANES);
    let one = Tuning {
        batch_lanes: 1,
        ..Tuning::default()
    };
    assert_eq!(view(&at(640, 512, &one)).lanes, 1);
    // Never on the SGEMM update, whose cuBLAS calls queue on the engine's
    // stream.
    let sgemm = Tuning {
        tensor_trailing: false,
        ..t.clone()
    };
    assert_eq!(view(&at(640, 512, &sgemm)).lanes, 1);
    assert_eq!(view(&at(640, 512, &Tuning::default())).lanes, 2);
}

#[test]
fn graphs_for_panel_chains_without_the_checks_stream() {
    let t = Tuning::default();
    for (b, n) in [(40, 176), (40, 352), (60, 1024), (8, 2048), (2, 4096)] {
        assert!(at(b, n, &t).graph(), "{b} x {n}");
    }
    // One launch; the checks stream beside the largest batches; off.
    assert!(!at(20, 32, &t).graph());
    assert!(!at(640, 512, &t).graph());
    // An edit turns it off, and the plan says so.
    let mut off = at(40, 352, &t);
    crate::plan::PlanEdit::launch_by_launch().apply(&mut off);
    assert!(!off.graph() && off.forced);
    assert!(
        off.to_string().contains("edited: launch by launch"),
        "{off}"
    );
    let sgemm = Tuning {
        tensor_trailing: false,
        ..Tuning::default()
    };
    assert!(!at(40, 352, &sgemm).graph());
}

#[test]
fn folds_for_few_matrices_whose_fold_fits() {
    let d = h200();
    let t = Tuning::default();
    let at = |b, n| plan(Shape::new(b, n).unwrap(), &d, &t, None).unwrap();
    assert!(view(&at(40, 176)).fold);
    assert!(view(&at(40, 240)).fold);
    // Tall panels of a block alone take the register panel instead.
    assert!(!view(&at(40, 352)).fold);
    assert!(!view(&at(40, 512)).fold);
    let smem_only = Tuning {
        reg_panel_rows_per_thread: 0,
        ..Tuning::default()
    };
    assert!(view(&plan(Shape::new(40, 352).unwrap(), &d, &smem_only, None).unwrap()).fold);
    // Too many matrices, too tall a panel, below a raised minimum.
    assert!(!view(&at(640, 512)).fold);
    let from = Tuning {
        panel_fold_min_n: Some(240),
        ..Tuning::default()
    };
    assert!(!view(&plan(Shape::new(40, 176).unwrap(), &d, &from, None).unwrap()).fold);
    assert!(!view(&at(60, 1024)).fold);
}

#[test]
fn dispatch_follows_the_device_limits() {
    let d = h200();
    let t = Tuning::default();
    let at = |b, n| plan(Shape::new(b, n).unwrap(), &d, &t, None).unwrap();
    assert_eq!(at(20, 32).strategy(), Strategy::Smem);
    assert_eq!(at(40, 160).strategy(), Strategy::Smem);
    // Few matrices: two-block clusters and clusters of tall blocks lose
    // to a block alone (table "few matrices").
    assert_eq!(at(40, 176).strategy(), Strategy::Blocked);
    assert_eq!(view(&at(40, 176)).threads, 256);
    assert_eq!(at(40, 352).strategy(), Strategy::Blocked);
    assert_eq!(view(&at(40, 352)).threads, 512);
    assert_eq!(at(40, 512).strategy(), Strategy::Blocked);
    assert_eq!(at(20, 1024).strategy(), Strategy::Cluster);
    assert_eq!(at(640, 512).strategy(), Strategy::Blocked);
    assert_eq!(view(&at(640, 512)).rows_per_thread, 2);
    assert_eq!(view(&at(640, 512)).threads, 256);
    assert_eq!(view(&at(60, 1024)).rows_per_thread, 2);
    assert_eq!(view(&at(40, 352)).rows_per_thread, 1);
    assert_eq!(view(&at(40, 352)).min_threads, 256);
    assert_eq!(view(&at(640, 512)).min_threads, 64);
    assert_eq!(view(&at(2, 4096)).min_threads, 64);
    assert_eq!(view(&at(40, 176)).rows_per_thread, 0);
    assert_eq!(view(&at(640, 512)).warps, 4);
    assert_eq!(view(&at(60, 1024)).warps, 8);
    assert_eq!(view(&at(2, 4096)).warps, 8);
    let ahead = |p: Plan| p.blocked().is_some_and(|b| b.schedule.ahead);
    assert!(ahead(at(640, 512)) && ahead(at(8, 2048)));
    assert!(!ahead(at(20, 32)) && !ahead(at(1, 16384)));
    assert_eq!(at(60, 1024).strategy(), Strategy::Blocked);
    assert_eq!(view(&at(60, 1024)).threads, 512);
    assert_eq!(view(&at(640, 512)).threads, 256);
    assert_eq!(view(&at(40, 352)).groups, 1);
    assert_eq!(at(8, 2048).strategy(), Strategy::Cluster);
    assert_eq!(view(&at(8, 2048)).groups, 8);
    let big = at(2, 4096);
    assert_eq!(big.strategy(), Strategy::Cluster);
    assert_eq!(view(&big).groups, 8);
    assert!(view(&big).tensor);
    assert_eq!(at(1, 16384).strategy(), Strategy::Large);
    let mut old = d.clone();
    old.compute_capability = (8, 0);
    let p = plan(Shape::new(2, 4096).unwrap(), &old, &t, None).unwrap();
    assert_eq!(p.strategy(), Strategy::Large);
    assert!(
        plan(
            Shape::new(2, 4096).unwrap(),
            &old,
            &t,
            Some(Strategy::Cluster)
        )
        .is_err()
    );
    assert!((230..=240).contains(&smem_fit_n(&d)));
}

#[test]
fn register_panels_hold_every_row() {
    let t = Tuning {
        reg_panel_rows_per_thread: 2,
        ..Tuning::default()
    };
    for n in [1, 2, 31, 32, 33, 65, 240, 511, 512, 513, 1000, 1024] {
        let th = t.reg_panel_threads_for(n).expect("fits");
        assert!(
            th.is_power_of_two() && (32..=512).contains(&th),
            "{n}: {th}"
        );
        assert!(panelreg::capacity(th, t.reg_panel_rows_per_thread) >= n);
    }
    assert_eq!(t.reg_panel_threads_for(1025), None);
    let on = plan(Shape::new(640, 512).unwrap(), &h200(), &t, None).unwrap();
    assert_eq!((view(&on).threads, view(&on).rows_per_thread), (256, 2));
    let off = Tuning {
        reg_panel_rows_per_thread: 0,
        ..t
    };
    assert_eq!(off.reg_panel_threads_for(100), None);
    let p = plan(
        Shape::new(4, 100).unwrap(),
        &h200(),
        &off,
        Some(Strategy::Blocked),
    )
    .unwrap();
    assert_eq!(view(&p).rows_per_thread, 0);
}

#[test]
fn forced_strategies_are_checked() {
    let d = h200();
    let t = Tuning::default();
    let s = Shape::new(1, 300).unwrap();
    assert!(plan(s, &d, &t, Some(Strategy::Smem)).is_err());
    let p = plan(s, &d, &t, Some(Strategy::Large)).unwrap();
    assert!(p.forced && view(&p).groups >= 1);
    assert!(p.to_string().starts_with("large (forced)"));
    let tall = Shape::new(1, 4096).unwrap();
    assert!(plan(tall, &d, &t, Some(Strategy::Blocked)).is_err());
}

#[test]
fn smem_register_blocks_fit_the_register_file() {
    assert_eq!(smem_registers(32, 8), Some((4, 256)));
    assert_eq!(smem_registers(176, 4), Some((44, 704)));
    assert_eq!(smem_registers(192, 4), None);
    for n in 1..=240 {
        for tpc in [1, 2, 4, 8, 16] {
            if let Some((rows, threads)) = smem_registers(n, tpc) {
                assert!(threads as usize >= n * tpc as usize && threads % 32 == 0);
                assert!(rows as usize * tpc as usize >= n && rows % 4 == 0);
                assert!(threads <= smem::register_threads(rows));
            }
        }
    }
    // The default keeps the register kernel to its measured range.
    let d = h200();
    let t = Tuning::default();
    let rows = |n| plan(Shape::new(3, n).unwrap(), &d, &t, Some(Strategy::Smem)).unwrap();
    let rows = |n| small(&rows(n)).rows;
    assert_eq!((rows(32), rows(63), rows(64), rows(120)), (4, 8, 0, 0));
}

#[test]
fn warp_kernel_up_to_its_order_in_large_batches_only() {
    let d = h200();
    let warp = |t: &Tuning, batch, n| {
        let p = plan(Shape::new(batch, n).unwrap(), &d, t, None).unwrap();
        match p.route {
            Route::Small(g) => (g.warp, g.threads),
            Route::Blocked(_) => (false, view(&p).threads),
        }
    };
    let t = Tuning::default();
    let many = 4 * d.sm_count as usize;
    // Few matrices keep the block kernel, four an SM take the warp's.
    assert_eq!(warp(&t, 20, 32), (false, 256));
    assert_eq!(warp(&t, many - 1, 32), (false, 256));
    assert_eq!(warp(&t, many, 1), (true, 32));
    assert_eq!(warp(&t, many, 32), (true, 32));
    assert!(!warp(&t, many, 33).0);
    let p = plan(Shape::new(many, 32).unwrap(), &d, &t, None).unwrap();
    assert!(p.to_string().contains("one warp per matrix"));
    let never = Tuning {
        smem_warp_min_batch_per_sm: None,
        ..Tuning::default()
    };
    assert!(!warp(&never, 100 * many, 32).0);
    let always = Tuning {
        smem_warp_min_batch_per_sm: Some(0),
        ..Tuning::default()
    };
    assert!(warp(&always, 1, 32).0);
}

#[test]
fn padded_rows_start_in_different_banks() {
    for tpc in [2u32, 4, 8, 16, 32] {
        for n in 1..=240 {
            let lda = smem::padded_lda(n, tpc);
            assert!(lda >= n && lda < n + 64 / tpc as usize);
            // tpc consecutive rows by 32 / tpc adjacent columns: 32 banks.
            let cols = 32 / tpc as usize;
            let mut banks: Vec<usize> = (0..tpc as usize)
                .flat_map(|u| (0..cols).map(move |g| (u * lda + g) % 32))
                .collect();
            banks.sort_unstable();
            banks.dedup();
            assert_eq!(banks.len(), 32, "n {n}, tpc {tpc}, lda {lda}");
        }
    }
    let (d, t) = (h200(), Tuning::default());
    let lda = |n| {
        let shape = Shape::new(3, n).unwrap();
        small(&plan(shape, &d, &t, Some(Strategy::Smem)).unwrap()).lda
    };
    // Padded, 238 would not fit: it keeps the odd leading dimension.
    assert_eq!((lda(176), lda(238)), (184, 239));
}

#[test]
fn l2_hints_only_for_batches_past_two_l2s() {
    let t = Tuning {
        tensor_l2_hints: 2,
        ..Tuning::default()
    };
    for (batch, n, hints) in [
        (640, 512, 2),
        (60, 1024, 2),
        (8, 2048, 2),
        (2, 4096, 2),
        (40, 352, 0),
        (20, 32, 0),
    ] {
        assert_eq!(view(&at(batch, n, &t)).l2_hints, hints, "{batch} x {n}");
    }
    // Below two L2s only an edit plans them.
    let mut small = at(40, 352, &t);
    crate::plan::PlanEdit::tensor("hints", |u| u.l2_hints = 2).apply(&mut small);
    assert_eq!(view(&small).l2_hints, 2);
    assert_eq!(view(&at(640, 512, &Tuning::default())).l2_hints, 1);
}

#[test]
fn checks_go_aside_for_batches_past_six_l2s() {
    let (d, t) = (h200(), Tuning::default());
    for (batch, n, aside) in [
        (640, 512, true),
        (60, 1024, false),
        (8, 2048, false),
        (40, 176, false),
    ] {
        let p = plan(Shape::new(batch, n).unwrap(), &d, &t, None).unwrap();
        assert_eq!(view(&p).checks_aside, aside, "{batch} x {n}");
    }
}

#[test]
fn smem_blocks_are_whole_warps_of_whole_groups() {
    let d = h200();
    let t = Tuning::default();
    for n in [1, 2, 31, 32, 33, 65, 120, 176, 230] {
        let plan = plan(Shape::new(3, n).unwrap(), &d, &t, Some(Strategy::Smem)).unwrap();
        let p = small(&plan);
        assert_eq!(p.threads % 32, 0);
        assert_eq!(p.threads % p.tpc, 0);
        assert!(p.threads <= 1024);
        assert!(p.threads as usize >= n * p.tpc as usize || p.rows == 0);
        assert_eq!(
            plan.defines(),
            vec![
                ("SMEM_TPC".to_string(), p.tpc.to_string()),
                ("SMEM_ROWS".to_string(), p.rows.to_string()),
                ("SMEM_WARP".to_string(), "0".to_string())
            ]
        );
    }
}

#[test]
fn plan_defines_are_the_ones_the_sources_check() {
    let d = h200();
    // Without the fold, which keeps the shared-memory panel.
    let t = Tuning {
        reg_panel_rows_per_thread: 2,
        panel_fold_min_n: None,
        ..Tuning::default()
    };
    for (n, s, src) in [
        (100, Strategy::Smem, &smem::SOURCE),
        (300, Strategy::Blocked, &panelreg::SOURCE),
        (1200, Strategy::Blocked, &panel::SOURCE),
        (3000, Strategy::Cluster, &panelreg::SOURCE),
        (12000, Strategy::Cluster, &panel::SOURCE),
        (3000, Strategy::Large, &panel::SOURCE),
    ] {
        let p = plan(Shape::new(2, n).unwrap(), &d, &t, Some(s)).unwrap();
        let defines = p.defines();
        let names: Vec<&str> = defines.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, src.defines.to_vec(), "{s}");
    }
}
