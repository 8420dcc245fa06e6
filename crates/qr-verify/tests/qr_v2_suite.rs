//! The `qr_v2` test set through qr-cpu, the suite runner and the gates.
//!
//! `geqrf` runs all 22 cases, batches capped so that the set takes about a
//! minute on two cores (at most 4 matrices per case, 1 from n = 2048 on).
//! The `Q` operations run every case up to n = 1024, 2 matrices each, plus
//! `upper` (which the set has only at n = 4096) and `diagonal` (which it
//! lacks) at n = 512, so that every distribution of DESIGN section 2 is
//! gated for each operation in a few minutes; `qr suite --op` runs the
//! whole sets.

mod support;

use std::time::{Duration, Instant};

use qr_core::{ApplyQ, Backend, BenchOptions, Operation};
use qr_verify::{Case, RunOptions, Spec, run_case, test_set};
use support::{Reference, cpu, describe_op};

/// One repetition, no warm-up: the timing is not the point here.
fn untimed(seed: u64, max_batch: usize) -> RunOptions {
    RunOptions {
        seed,
        max_batch: Some(max_batch),
        bench: BenchOptions {
            warmup: 0,
            min_reps: 1,
            max_reps: 1,
            budget: Duration::ZERO,
            flush_bytes: 0,
            ..BenchOptions::default()
        },
        list_bytes: 0,
        max_inputs: 1,
    }
}

/// Runs `specs` of `op` on `backend`, each capped at `cap(spec)` matrices,
/// and fails listing every case below the bar.
fn run_set(backend: &dyn Backend, op: Operation, specs: &[Spec], cap: fn(&Spec) -> usize) {
    let mut failures = Vec::new();
    let started = Instant::now();
    for spec in specs {
        let t0 = Instant::now();
        let result = run_case(backend, op, spec, &untimed(2026, cap(spec))).expect("the case runs");
        assert_eq!(result.inputs, 1);
        assert_eq!(result.op, op);
        assert_eq!(result.capped, result.batch_run < spec.batch);
        assert_eq!(result.report.matrices.len(), result.batch_run);
        eprintln!(
            "{op} {spec:>20}  batch {}  {:7.2} s  {}",
            result.batch_run,
            t0.elapsed().as_secs_f64(),
            describe_op(&result.report)
        );
        if !result.report.meets_bar() {
            failures.push(format!("{spec}: {}", describe_op(&result.report)));
        }
    }
    eprintln!("{op}: {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "{op} below the bar:\n{}",
        failures.join("\n")
    );
}

/// The test set's cases up to n = 1024, then `upper` and `diagonal` at 512.
fn q_specs() -> Vec<Spec> {
    let mut specs: Vec<Spec> = test_set().into_iter().filter(|s| s.n <= 1024).collect();
    for (cond, case) in [(0.0, Case::Upper), (2.0, Case::Diagonal)] {
        specs.push(Spec {
            batch: 16,
            n: 512,
            cond,
            case,
        });
    }
    specs
}

#[test]
fn the_test_set_meets_the_bar_on_cpu() {
    run_set(&cpu(), Operation::Geqrf, &test_set(), |s| {
        if s.n >= 2048 { 1 } else { 4 }
    });
}

#[test]
fn orgqr_meets_the_bar_on_cpu_for_every_distribution() {
    run_set(&cpu(), Operation::Orgqr, &q_specs(), |_| 2);
}

#[test]
fn ormqr_meets_the_bar_on_cpu_for_every_distribution() {
    run_set(&cpu(), Operation::Ormqr(ApplyQ::QT_LEFT), &q_specs(), |_| 2);
}

#[test]
fn qr_meets_the_bar_on_cpu_for_every_distribution() {
    run_set(&cpu(), Operation::Qr, &q_specs(), |_| 2);
}

/// The runner and the gates of every operation on the `f64` reference,
/// which shares no code with qr-cpu: what the CPU tests above fail on is
/// then the CPU's, not the runner's.
#[test]
fn every_operation_runs_and_meets_the_bar_on_the_reference() {
    let specs: Vec<Spec> = ["3,33,1,dense", "2,40,0,rankdef", "3,24,2,mixed"]
        .iter()
        .map(|s| s.parse().unwrap())
        .collect();
    for op in [
        Operation::Geqrf,
        Operation::Orgqr,
        Operation::Ormqr(ApplyQ::QT_LEFT),
        Operation::Qr,
    ] {
        run_set(&Reference, op, &specs, |s| s.batch);
    }
}
