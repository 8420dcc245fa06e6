//! GPU tests. Without a device every test is reported as ignored, after a
//! one-line reason; `QR_REQUIRE_GPU=1` (the project's one environment
//! variable, read here only) turns a missing device into a failure.
//!
//! This file is the harness: the device probe and the list of trials. The
//! tests are grouped by subject under `gpu/`: `strategies.rs` (each
//! strategy forced), `variants.rs` (tuning switches, as a table),
//! `kernel_variants.rs` and `streams.rs` (variants that need more than the
//! table's checks), `engine.rs` (caching, preparing, timing, the device
//! API, the peers), `behaviour.rs`, `failure_paths.rs` and `q_ops.rs`, and
//! `common.rs`, the helpers they share.

use std::sync::Arc;

use libtest_mimic::{Arguments, Failed, Trial};
use qr_core::Backend;
use qr_gpu::GpuBackend;

#[path = "gpu/behaviour.rs"]
mod behaviour;
#[path = "gpu/common.rs"]
mod common;
#[path = "gpu/engine.rs"]
mod engine;
#[path = "gpu/failure_paths.rs"]
mod failure_paths;
#[path = "gpu/kernel_variants.rs"]
mod kernel_variants;
#[path = "gpu/q_ops.rs"]
mod q_ops;
#[path = "gpu/strategies.rs"]
mod strategies;
#[path = "gpu/streams.rs"]
mod streams;
#[path = "gpu/variants.rs"]
mod variants;

type Test = fn(&Arc<GpuBackend>) -> Result<(), Failed>;
type BoxedTest = Box<dyn Fn(&Arc<GpuBackend>) -> Result<(), Failed> + Send + Sync>;

/// Where a listed trial's body is.
enum Body {
    /// A test function.
    Function(Test),
    /// The row of the same name in `variants::ROWS`.
    Table,
}

fn trials() -> Vec<(String, BoxedTest)> {
    use Body::{Function, Table};
    use engine::{
        device_api_round_trip, device_bench_times_something, modules_are_cached,
        peer_cublas_batched, peer_cusolver, prepared_shapes_factor,
    };
    use kernel_variants::{
        fused_checks, register_panel, register_panel_halves, smem_warp, tensor_l2_hints,
        tensor_row_split, tensor_warps_4,
    };
    use strategies::{chosen_plans_pass_the_test_set, forced_out_of_range_is_an_error};
    use streams::{batch_lanes, graphs, graphs_beside_another_thread};
    let mut t = strategies::trials();
    let listed: [(&str, Body); 26] = [
        ("sgemm_trailing", Table),
        // The newest kernels first: a call that runs out of time still
        // says whether they pass.
        ("smem_warp", Function(smem_warp)),
        ("smem_shared_kernels", Table),
        ("smem_registers", Table),
        (
            "forced_out_of_range_is_an_error",
            Function(forced_out_of_range_is_an_error),
        ),
        (
            "chosen_plans_pass_the_test_set",
            Function(chosen_plans_pass_the_test_set),
        ),
        ("modules_are_cached", Function(modules_are_cached)),
        ("prepared_shapes_factor", Function(prepared_shapes_factor)),
        ("register_panel", Function(register_panel)),
        ("register_cluster_meetings", Table),
        ("tensor_row_split", Function(tensor_row_split)),
        ("batch_lanes", Function(batch_lanes)),
        ("fused_checks", Function(fused_checks)),
        ("tensor_l2_hints", Function(tensor_l2_hints)),
        ("register_panel_halves", Function(register_panel_halves)),
        ("tensor_warps_4", Function(tensor_warps_4)),
        ("tensor_stage", Table),
        ("panel_barriers", Table),
        ("checks_aside", Table),
        ("graphs", Function(graphs)),
        (
            "graphs_beside_another_thread",
            Function(graphs_beside_another_thread),
        ),
        ("panel_fold", Table),
        (
            "device_bench_times_something",
            Function(device_bench_times_something),
        ),
        ("device_api_round_trip", Function(device_api_round_trip)),
        ("peer_cusolver", Function(peer_cusolver)),
        ("peer_cublas_batched", Function(peer_cublas_batched)),
    ];
    // A name listed as `Table` but not in the table panics in `variants::trial`.
    for row in variants::ROWS {
        let times = listed
            .iter()
            .filter(|(name, body)| matches!(body, Table) && *name == row.name)
            .count();
        assert_eq!(times, 1, "variants row {} listed {times} times", row.name);
    }
    let listed = listed.into_iter().map(|(name, body)| {
        let f: BoxedTest = match body {
            Function(f) => Box::new(f),
            Table => variants::trial(name),
        };
        (name.to_string(), f)
    });
    let plain = |(name, f): (&str, Test)| (name.to_string(), Box::new(f) as BoxedTest);
    t.extend(q_ops::TRIALS.into_iter().map(plain));
    t.extend(listed);
    t.extend(failure_paths::TRIALS.into_iter().map(plain));
    t.extend(behaviour::trials());
    t
}

fn main() {
    let mut args = Arguments::from_args();
    // The GPU is one device: run its tests one at a time.
    args.test_threads = Some(1);
    let require = std::env::var("QR_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let device = qr_gpu::probe().and_then(|_| GpuBackend::new(0));
    let list = trials();
    let trials: Vec<Trial> = match device {
        Ok(g) => {
            println!("GPU tests on {}", g.describe());
            let g = Arc::new(g);
            list.into_iter()
                .map(|(name, f)| {
                    let g = g.clone();
                    Trial::test(name, move || f(&g))
                })
                .collect()
        }
        Err(e) if require => {
            println!("QR_REQUIRE_GPU=1 but no usable GPU: {e}");
            vec![Trial::test("gpu_required", move || {
                Err(format!("{e}").into())
            })]
        }
        Err(e) => {
            println!("no usable GPU, GPU tests ignored: {e}");
            list.into_iter()
                .map(|(name, _)| Trial::test(name, || Ok(())).with_ignored_flag(true))
                .collect()
        }
    };
    libtest_mimic::run(&args, trials).exit();
}
