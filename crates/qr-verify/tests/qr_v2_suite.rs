//! All 22 cases of the `qr_v2` test set through qr-cpu, the suite runner and
//! the gate, batches capped so that the whole set takes about a minute on
//! two cores: at most 4 matrices per case, 1 from n = 2048 on.

mod support;

use std::time::{Duration, Instant};

use qr_core::BenchOptions;
use qr_verify::{RunOptions, run_case, test_set};
use support::{cpu, describe};

#[test]
fn the_test_set_meets_the_bar_on_cpu() {
    let backend = cpu();
    let mut failures = Vec::new();
    let started = Instant::now();
    for spec in test_set() {
        let opts = RunOptions {
            seed: 2026,
            max_batch: Some(if spec.n >= 2048 { 1 } else { 4 }),
            // One untimed-warmup-free repetition: the timing is not the point here.
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
        };
        let t0 = Instant::now();
        let result = run_case(&backend, &spec, &opts).expect("the case runs");
        assert_eq!(result.inputs, 1);
        assert_eq!(result.capped, result.batch_run < spec.batch);
        assert_eq!(result.report.matrices.len(), result.batch_run);
        eprintln!(
            "{spec:>20}  batch {}  {:7.2} s  {}",
            result.batch_run,
            t0.elapsed().as_secs_f64(),
            describe(&result.report)
        );
        if !result.report.meets_bar() {
            failures.push(format!("{spec}: {}", describe(&result.report)));
        }
    }
    eprintln!("test set: {:.1} s", started.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "below the bar:\n{}",
        failures.join("\n")
    );
}
