//! Vendor peers on the same device, timed with the same device-event
//! benchmark: cuSOLVER's `Sgeqrf` looped over the batch (what `torch.geqrf`
//! does) and cuBLAS's `SgeqrfBatched`. Both libraries are column-major, so
//! each call transposes in and out, as PyTorch does for a row-major tensor.

mod cublas_batched;
mod cusolver;

pub use cublas_batched::CublasBatchedBackend;
pub use cusolver::CusolverBackend;

use std::sync::Arc;

use qr_core::{BatchMut, BatchRef, Info, QrError};

use crate::error::DriverContext;
use crate::factor::Operands;
use crate::factor::engine::Engine;
use crate::kernels::util;

/// `qr_core::Backend` for a peer whose `run(shape, ops)` queues its
/// factorization of device operands on its engine's stream: the host API
/// through `host_round_trip`, the bench through the device-event bench.
macro_rules! peer_backend {
    ($ty:ty, $name:literal, $what:literal) => {
        impl qr_core::Backend for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn describe(&self) -> String {
                format!(concat!($name, ": ", $what, " on {}"), self.engine.info())
            }

            fn geqrf_into(
                &self,
                a: qr_core::BatchRef<'_>,
                out: qr_core::BatchMut<'_>,
            ) -> Result<(), qr_core::QrError> {
                let shape = a.shape();
                super::host_round_trip(&self.engine, a, out, &|ops| self.run(shape, ops))
            }

            fn bench(
                &self,
                shape: qr_core::Shape,
                inputs: &[&[f32]],
                opts: &qr_core::BenchOptions,
            ) -> Result<qr_core::BenchTiming, qr_core::QrError> {
                crate::bench::device_bench(&self.engine, shape, inputs, opts, &|ops| {
                    self.run(shape, ops)
                })
            }
        }
    };
}
pub(crate) use peer_backend;

/// Queues a column-major library's factorization of `ops` on `engine`'s
/// stream: non-finite matrices flagged, the input transposed into `cm`
/// (`shape.a_len()` floats), `solve` (in place on `cm`, taus into
/// `ops.tau`), the result transposed into `ops.h`, non-finite matrices
/// NaN-filled.
pub(crate) fn column_major(
    engine: &Engine,
    shape: qr_core::Shape,
    ops: Operands,
    cm: u64,
    solve: impl FnOnce() -> Result<(), QrError>,
) -> Result<(), QrError> {
    let (k, s) = (engine.launch(), engine.stream());
    util::nonfinite(k, s, shape, ops.a, ops.info)?;
    util::transpose(k, s, shape, ops.a, cm)?;
    solve()?;
    util::transpose(k, s, shape, cm, ops.h)?;
    util::nanfill(k, s, shape, (ops.h, ops.tau), ops.info, 0)
}

/// Host round trip shared by the backend and its peers: upload, `run` on
/// device pointers, download. The copies hold the engine's queueing lock;
/// `run` takes it itself where it queues.
pub(crate) fn host_round_trip(
    engine: &Arc<Engine>,
    a: BatchRef<'_>,
    mut out: BatchMut<'_>,
    run: &dyn Fn(Operands) -> Result<(), QrError>,
) -> Result<(), QrError> {
    let shape = a.shape();
    if out.shape() != shape {
        return Err(QrError::Unsupported {
            message: format!("input of {} with outputs of {}", shape, out.shape()),
        });
    }
    if shape.is_empty() {
        out.parts().2.fill(Info::OK);
        return Ok(());
    }
    let s = engine.stream();
    let mut st = engine.staging();
    let ops = {
        let _queueing = engine.queueing();
        let ops = Operands {
            a: st.a.ensure(s, shape.a_len())?,
            h: st.h.ensure(s, shape.a_len())?,
            tau: st.tau.ensure(s, shape.tau_len())?,
            info: st.info.ensure(s, shape.info_len())?,
        };
        let da = st.a.slice_mut().expect("ensured");
        s.memcpy_htod(a.as_slice(), &mut da.slice_mut(..shape.a_len()))
            .ctx("copying the batch to the device")?;
        ops
    };
    run(ops)?;
    let (h, tau, info) = out.parts();
    let mut codes = vec![0i32; shape.info_len()];
    {
        let _queueing = engine.queueing();
        let dh = st.h.slice_mut().expect("ensured");
        s.memcpy_dtoh(&dh.slice(..shape.a_len()), h)
            .ctx("copying H back")?;
        let dt = st.tau.slice_mut().expect("ensured");
        s.memcpy_dtoh(&dt.slice(..shape.tau_len()), tau)
            .ctx("copying tau back")?;
        let di = st.info.slice_mut().expect("ensured");
        s.memcpy_dtoh(&di.slice(..shape.info_len()), &mut codes)
            .ctx("copying info back")?;
    }
    engine.synchronize()?;
    for (i, c) in info.iter_mut().zip(codes) {
        *i = Info(c);
    }
    Ok(())
}
