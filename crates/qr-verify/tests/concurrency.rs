//! One `CpuBackend` shared by several threads gives, for every call, the
//! same bits as the same call made alone: no state leaks between calls,
//! scratch is per call or per worker, and the rayon pool being busy with
//! another thread's batch changes nothing.

use std::sync::Arc;

use qr_core::{Backend, Factorization, Shape, geqrf};
use qr_cpu::{CpuBackend, Tuning};
use qr_verify::{Case, Spec, generate};

/// Calls that between them take every path: unblocked, blocked, a lone
/// matrix (parallel inside) and batches spread over the pool, and a batch
/// with a flagged matrix.
fn calls() -> Vec<(Shape, Vec<f32>)> {
    let mut out = Vec::new();
    for (batch, n, case) in [
        (6, 5, Case::Dense),
        (3, 64, Case::Mixed),
        (1, 300, Case::Dense),
        (4, 97, Case::Rankdef),
        (2, 160, Case::Clustered),
        (1, 1, Case::Dense),
    ] {
        let spec = Spec {
            batch,
            n,
            cond: 2.0,
            case,
        };
        out.push((
            Shape::new(batch, n).unwrap(),
            generate(&spec, (batch * n) as u64),
        ));
    }
    let (shape, mut a) = out[1].clone();
    a[64 * 64 + 5] = f32::NAN;
    out.push((shape, a));
    out
}

fn bits(f: &Factorization) -> (Vec<u32>, Vec<u32>, Vec<i32>) {
    (
        f.h.iter().map(|x| x.to_bits()).collect(),
        f.tau.iter().map(|x| x.to_bits()).collect(),
        f.info.iter().map(|i| i.0).collect(),
    )
}

fn shared_backend_is_bitwise_serial(backend: CpuBackend) {
    let calls = Arc::new(calls());
    let serial: Vec<_> = calls
        .iter()
        .map(|(shape, a)| bits(&geqrf(&backend, *shape, a).unwrap()))
        .collect();
    let backend = Arc::new(backend);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (backend, calls, serial) = (Arc::clone(&backend), Arc::clone(&calls), &serial);
            s.spawn(move || {
                // Each thread walks the calls from its own start, several
                // times, so that different calls overlap each round.
                for round in 0..3 {
                    for k in 0..calls.len() {
                        let i = (k + t + round) % calls.len();
                        let (shape, a) = &calls[i];
                        let f = geqrf(backend.as_ref(), *shape, a).unwrap();
                        assert!(
                            bits(&f) == serial[i],
                            "thread {t} round {round}: call {i} ({shape}) differs"
                        );
                    }
                }
            });
        }
    });
}

#[test]
fn default_tuning() {
    shared_backend_is_bitwise_serial(CpuBackend::new());
}

#[test]
fn every_batch_split_over_the_pool() {
    shared_backend_is_bitwise_serial(CpuBackend::with_tuning(Tuning {
        batch_parallel_min_work: 0,
        ..Tuning::default()
    }));
}

#[test]
fn blocked_with_inner_parallelism() {
    shared_backend_is_bitwise_serial(CpuBackend::with_tuning(Tuning {
        small_n: 8,
        block: 16,
        batch_parallel_min: usize::MAX,
        par_update_min_cols: 1,
        panel_leaf: 4,
        ..Tuning::default()
    }));
}

#[test]
fn backends_are_shareable_trait_objects() {
    fn assert_send_sync<T: Send + Sync + ?Sized>() {}
    assert_send_sync::<CpuBackend>();
    assert_send_sync::<dyn Backend>();
}
