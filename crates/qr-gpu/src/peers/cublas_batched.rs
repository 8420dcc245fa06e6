//! cuBLAS's `SgeqrfBatched` (all matrices in one call, meant for small n).

use std::ffi::c_int;
use std::sync::{Arc, Mutex, PoisonError};

use qr_core::{QrError, Shape};

use super::{column_major, peer_backend};
use crate::device::workspace::Buf;
use crate::error::{DriverContext, blas};
use crate::factor::Operands;
use crate::factor::engine::Engine;

/// `cublasSgeqrfBatched` over the whole batch (name `"cublas-batched"`).
#[derive(Debug)]
pub struct CublasBatchedBackend {
    engine: Arc<Engine>,
    scratch: Mutex<Scratch>,
}

#[derive(Debug, Default)]
struct Scratch {
    colmajor: Buf<f32>,
    /// Device arrays of matrix and tau pointers, and what they were built for.
    pointers: Buf<u64>,
    built_for: Option<(u64, u64, usize, usize)>,
}

impl CublasBatchedBackend {
    /// Opens device `ordinal`.
    pub fn new(ordinal: usize) -> Result<Self, QrError> {
        Ok(Self {
            engine: Engine::new(ordinal)?,
            scratch: Mutex::new(Scratch::default()),
        })
    }

    fn run(&self, shape: Shape, ops: Operands) -> Result<(), QrError> {
        let e = &self.engine;
        let (batch, n) = (shape.batch(), shape.n());
        let int = |x: usize| {
            c_int::try_from(x).map_err(|_| QrError::Unsupported {
                message: format!("{x} exceeds cuBLAS's int"),
            })
        };
        let mut sc = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        let s = e.stream();
        let cm = sc.colmajor.ensure(s, shape.a_len())?;
        let ptrs = sc.pointers.ensure(s, 2 * batch)?;
        let key = (cm, ops.tau, batch, n);
        if sc.built_for != Some(key) {
            let mut host: Vec<u64> = (0..batch).map(|b| cm + (b * n * n * 4) as u64).collect();
            host.extend((0..batch).map(|b| ops.tau + (b * n * 4) as u64));
            let dev = sc.pointers.slice_mut().expect("ensured");
            s.memcpy_htod(&host, &mut dev.slice_mut(..2 * batch))
                .ctx("uploading the pointer arrays")?;
            sc.built_for = Some(key);
        }
        column_major(e, shape, ops, cm, || {
            let mut host_info: c_int = 0;
            // SAFETY: the pointer arrays hold `batch` device addresses of n*n
            // column-major matrices and of n taus each; `host_info` is a live
            // host int, as this routine's parameter check expects.
            blas(
                unsafe {
                    cudarc::cublas::sys::cublasSgeqrfBatched(
                        e.blas_handle(),
                        int(n)?,
                        int(n)?,
                        ptrs as *const *mut f32,
                        int(n)?,
                        (ptrs + (batch * 8) as u64) as *const *mut f32,
                        &mut host_info,
                        int(batch)?,
                    )
                }
                .result(),
                "cublasSgeqrfBatched",
            )?;
            if host_info != 0 {
                return Err(QrError::Backend {
                    backend: "cublas-batched".into(),
                    message: format!("cublasSgeqrfBatched rejected argument {}", -host_info),
                });
            }
            Ok(())
        })
    }
}

peer_backend!(
    CublasBatchedBackend,
    "cublas-batched",
    "cublasSgeqrfBatched"
);
