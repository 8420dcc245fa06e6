//! Reusable device buffers: grown on demand, never shrunk, so that a warm
//! engine allocates nothing per call.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};
use qr_core::QrError;

use crate::error::DriverContext;

/// One growable device buffer of `T`.
#[derive(Debug)]
pub(crate) struct Buf<T> {
    slice: Option<CudaSlice<T>>,
}

impl<T> Default for Buf<T> {
    fn default() -> Self {
        Self { slice: None }
    }
}

impl<T: DeviceRepr> Buf<T> {
    /// A device pointer to at least `len` elements (contents unspecified).
    pub(crate) fn ensure(&mut self, stream: &Arc<CudaStream>, len: usize) -> Result<u64, QrError> {
        let len = len.max(1);
        if self.slice.as_ref().is_none_or(|s| s.len() < len) {
            // Freed in stream order, after any queued work that uses it.
            self.slice = None;
            // SAFETY: the contents are uninitialised; every user writes a
            // region before reading it (or zeroes it, as the barrier counters).
            let s = unsafe { stream.alloc::<T>(len) }.map_err(|e| alloc_error::<T>(len, e))?;
            self.slice = Some(s);
        }
        Ok(self.ptr(stream))
    }

    /// The device pointer of the current allocation (0 if none).
    pub(crate) fn ptr(&self, stream: &Arc<CudaStream>) -> u64 {
        self.slice.as_ref().map_or(0, |s| dptr(s, stream))
    }

    /// The current allocation.
    pub(crate) fn slice_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        self.slice.as_mut()
    }
}

/// The raw device address of `s`.
pub(crate) fn dptr<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> u64 {
    // The engine's context has event tracking disabled, so the guard
    // returned beside the pointer records nothing and can drop at once.
    let (p, _guard) = s.device_ptr(stream);
    p
}

/// A failed device allocation as qr-core's error.
pub(crate) fn alloc_error<T>(len: usize, e: cudarc::driver::DriverError) -> QrError {
    use cudarc::driver::sys::CUresult;
    if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        QrError::OutOfMemory {
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
            location: "device",
        }
    } else {
        Err::<(), _>(e)
            .ctx("allocating device memory")
            .unwrap_err()
            .into()
    }
}

/// Scratch of the blocked paths.
#[derive(Debug, Default)]
pub(crate) struct Workspace {
    /// Explicit V of the current panel, per matrix n x 32.
    pub v: Buf<f32>,
    /// T of the current panel, per matrix 32 x 32.
    pub t: Buf<f32>,
    /// With look-ahead, V of every second panel (n x 32 per matrix).
    pub v2: Buf<f32>,
    /// With look-ahead, T of every second panel (32 x 32 per matrix).
    pub t2: Buf<f32>,
    /// V^T A of the trailing update, per matrix 32 x n.
    pub w: Buf<f32>,
    /// T^T V^T A, per matrix 32 x n.
    pub w2: Buf<f32>,
    /// Cross-block partial sums of the `large` panel.
    pub partials: Buf<f64>,
    /// Diagonal rows of the `large` panel.
    pub rowbuf: Buf<f32>,
    /// Barrier counters of the `large` panel.
    pub counters: Buf<u32>,
    /// Per matrix, one past its last column with a non-zero entry (the
    /// zero-column skip; written by the non-finite scan of every call).
    pub zcol: Buf<i32>,
    /// `orgqr` / `ormqr`: every 32-column block's V of a group of matrices
    /// (kernels/trailing_tc/q's `v_floats` per matrix).
    pub qv: Buf<f32>,
    /// `orgqr` / `ormqr`: every block's T, 32 x 32 each.
    pub qt: Buf<f32>,
    /// `orgqr` / `ormqr`: per matrix the reflectors', C's and the result's
    /// non-finite flags and the update's zero-column bound.
    pub qflags: Buf<i32>,
    /// `ormqr` from the right: C transposed.
    pub qc: Buf<f32>,
}

impl Workspace {
    /// Where every buffer is now (0 for none): a factorization recorded with
    /// these addresses may be replayed only while they stay the same.
    pub(crate) fn addresses(&self, stream: &Arc<CudaStream>) -> [u64; 10] {
        [
            self.v.ptr(stream),
            self.t.ptr(stream),
            self.v2.ptr(stream),
            self.t2.ptr(stream),
            self.w.ptr(stream),
            self.w2.ptr(stream),
            self.partials.ptr(stream),
            self.rowbuf.ptr(stream),
            self.counters.ptr(stream),
            self.zcol.ptr(stream),
        ]
    }
}

/// Host-API staging: the inputs and outputs copied in and out.
#[derive(Debug, Default)]
pub(crate) struct Staging {
    /// Input batch.
    pub a: Buf<f32>,
    /// H.
    pub h: Buf<f32>,
    /// tau.
    pub tau: Buf<f32>,
    /// info codes.
    pub info: Buf<i32>,
    /// `qr`'s Q.
    pub q: Buf<f32>,
    /// `qr`'s R.
    pub r: Buf<f32>,
}
