//! The engine's services around the factorization: compiled modules
//! cached, kernels prepared ahead, device timing, the device-resident API,
//! and the cuSOLVER and cuBLAS peers through the same gate.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{Backend, Shape, geqrf};
use qr_gpu::peers::{CublasBatchedBackend, CusolverBackend};
use qr_gpu::{GpuBackend, Strategy};
use qr_verify::{Case, Spec, generate};

use super::common::{gate, same_outputs, spec};

pub(crate) fn modules_are_cached(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let sp = spec(2, 48, 1.0, Case::Dense);
    let a = generate(&sp, 2);
    geqrf(&**g, sp.shape()?, &a)?;
    let before = g.modules_compiled();
    geqrf(&**g, sp.shape()?, &a)?;
    if g.modules_compiled() != before {
        return Err("a second identical call compiled again".into());
    }
    Ok(())
}

/// Kernels compiled ahead (`Backend::prepare`) serve the calls after it:
/// the factorizations pass the gate, and a refused shape is an error.
pub(crate) fn prepared_shapes_factor(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let specs = [
        spec(3, 300, 1.0, Case::Dense),
        spec(2, 48, 1.0, Case::Dense),
    ];
    let shapes = specs
        .iter()
        .map(Spec::shape)
        .collect::<Result<Vec<_>, _>>()?;
    g.prepare(&shapes)?;
    for (i, sp) in specs.iter().enumerate() {
        gate(&**g, shapes[i], &generate(sp, 9), &format!("prepared {sp}"))?;
    }
    let smem_only = (**g).clone().with_strategy(Some(Strategy::Smem));
    if smem_only.prepare(&[Shape::new(1, 4096)?]).is_ok() {
        return Err("preparing a shape its forced strategy refuses succeeded".into());
    }
    Ok(())
}

pub(crate) fn device_bench_times_something(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let sp = spec(4, 64, 1.0, Case::Dense);
    let a = generate(&sp, 4);
    let opts = qr_core::BenchOptions {
        min_reps: 3,
        max_reps: 5,
        ..Default::default()
    };
    let t = g.bench(sp.shape()?, &[&a, &a], &opts)?;
    if t.clock != "cuda-events" || t.reps < 3 || t.mean.is_zero() {
        return Err(format!("implausible timing {t:?}").into());
    }
    Ok(())
}

pub(crate) fn device_api_round_trip(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let sp = spec(3, 300, 1.0, Case::Dense);
    let shape = sp.shape()?;
    let a = generate(&sp, 6);
    let da = g.upload(&a)?;
    let mut out = g.alloc_outputs(shape)?;
    g.geqrf_device(&da, &mut out)?;
    let mut f = qr_core::Factorization::zeroed(shape)?;
    g.download(&out, f.as_batch_mut()?)?;
    let host = geqrf(&**g, shape, &a)?;
    if !same_outputs(&f, &host) {
        return Err("device API and host API disagree".into());
    }
    Ok(())
}

pub(crate) fn peer_cusolver(_g: &Arc<GpuBackend>) -> Result<(), Failed> {
    peer_gates(
        &CusolverBackend::new(0)?,
        "cusolver",
        (2, &[1, 33, 200, 513]),
    )
}

pub(crate) fn peer_cublas_batched(_g: &Arc<GpuBackend>) -> Result<(), Failed> {
    peer_gates(
        &CublasBatchedBackend::new(0)?,
        "cublas-batched",
        (3, &[1, 33, 100]),
    )
}

/// The peer `p` passes the gate on `batch` dense matrices of each order.
fn peer_gates(
    p: &dyn Backend,
    name: &str,
    (batch, orders): (usize, &[usize]),
) -> Result<(), Failed> {
    for &n in orders {
        let sp = spec(batch, n, 2.0, Case::Dense);
        gate(p, sp.shape()?, &generate(&sp, 8), &format!("{name} {sp}"))?;
    }
    Ok(())
}
