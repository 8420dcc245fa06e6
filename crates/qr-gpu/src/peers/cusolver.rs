//! cuSOLVER's dense `Sgeqrf`, one call per matrix, with its workspace query.

use std::ffi::c_int;
use std::sync::{Arc, Mutex, PoisonError};

use cudarc::cusolver::DnHandle;
use qr_core::{QrError, Shape};

use super::{column_major, peer_backend};
use crate::device::probe;
use crate::device::workspace::Buf;
use crate::error::solver;
use crate::factor::Operands;
use crate::factor::engine::Engine;

/// `cusolverDnSgeqrf` looped over the batch (name `"cusolver"`).
#[derive(Debug)]
pub struct CusolverBackend {
    engine: Arc<Engine>,
    handle: DnHandle,
    scratch: Mutex<Scratch>,
}

#[derive(Debug, Default)]
struct Scratch {
    colmajor: Buf<f32>,
    work: Buf<f32>,
    dev_info: Buf<i32>,
    lwork: Option<(usize, c_int)>,
}

impl CusolverBackend {
    /// Opens device `ordinal` with a cuSOLVER handle on the engine's stream.
    pub fn new(ordinal: usize) -> Result<Self, QrError> {
        let engine = Engine::new(ordinal)?;
        probe::check_cusolver()?;
        let handle = solver(
            DnHandle::new(engine.stream().clone()),
            "creating the cuSOLVER handle",
        )?;
        Ok(Self {
            engine,
            handle,
            scratch: Mutex::new(Scratch::default()),
        })
    }

    fn run(&self, shape: Shape, ops: Operands) -> Result<(), QrError> {
        let e = &self.engine;
        let n = shape.n();
        let ni = c_int::try_from(n).map_err(|_| QrError::Unsupported {
            message: format!("n = {n} exceeds cuSOLVER's int"),
        })?;
        let mut sc = self.scratch.lock().unwrap_or_else(PoisonError::into_inner);
        let s = e.stream();
        let cm = sc.colmajor.ensure(s, shape.a_len())?;
        let lwork = match sc.lwork {
            Some((m, l)) if m == n => l,
            _ => {
                let mut l: c_int = 0;
                // SAFETY: the handle is live; the query reads only the sizes
                // and writes the live local `l`.
                solver(
                    unsafe {
                        cudarc::cusolver::sys::cusolverDnSgeqrf_bufferSize(
                            self.handle.cu(),
                            ni,
                            ni,
                            cm as *mut f32,
                            ni,
                            &mut l,
                        )
                    }
                    .result(),
                    "cusolverDnSgeqrf_bufferSize",
                )?;
                sc.lwork = Some((n, l));
                l
            }
        };
        let work = sc.work.ensure(s, lwork.max(1) as usize)?;
        let dinfo = sc.dev_info.ensure(s, 1)?;
        column_major(e, shape, ops, cm, || {
            for b in 0..shape.batch() {
                let am = cm + (b * n * n * 4) as u64;
                let tm = ops.tau + (b * n * 4) as u64;
                // SAFETY: `am` is matrix b of the column-major copy (n*n floats),
                // `tm` its n taus, `work` holds `lwork` floats and `dinfo` one
                // int, all device memory queued on the handle's stream.
                solver(
                    unsafe {
                        cudarc::cusolver::sys::cusolverDnSgeqrf(
                            self.handle.cu(),
                            ni,
                            ni,
                            am as *mut f32,
                            ni,
                            tm as *mut f32,
                            work as *mut f32,
                            lwork,
                            dinfo as *mut c_int,
                        )
                    }
                    .result(),
                    "cusolverDnSgeqrf",
                )?;
            }
            Ok(())
        })
    }
}

peer_backend!(CusolverBackend, "cusolver", "cusolverDnSgeqrf per matrix");
