//! Buffers and streams the caller owns: the API a framework binding (the
//! Python package over torch tensors) uses to run the engine on memory it
//! did not allocate, ordered with the work of a stream it did not create.
//!
//! The engine keeps queueing on its own stream: a call here first makes
//! that stream wait for everything already queued on the caller's stream
//! (an event), queues the operation, then makes the caller's stream wait
//! for it (another event). The host never waits, and the caller's later
//! work on its stream, freeing or reusing the buffers included, runs after
//! the operation.

use std::marker::PhantomData;

use cudarc::driver::result;
use cudarc::driver::sys::{CUevent_wait_flags, CUstream};
use qr_core::{ApplyQ, QrError, Shape};

use super::{GpuBackend, check_at_least};
use crate::error::DriverContext;
use crate::factor::q::{QOp, QOperands};
use crate::factor::{self, Operands};

/// Alignment asked of every caller-owned buffer: what `cudaMalloc` and the
/// frameworks' caching allocators return, and what the kernels' vector
/// and `cp.async` accesses of a batch's first matrix rely on.
pub const RAW_ALIGN: u64 = 256;

/// A CUDA stream of the caller's (torch's current stream, for example), by
/// its raw handle: 0 (or 1) for the legacy default stream, 2 for the
/// per-thread default stream, else a `CUstream`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalStream(usize);

impl ExternalStream {
    /// Wraps the handle `raw`.
    ///
    /// # Safety
    /// `raw` is a stream of the primary context of the backend's device
    /// (or a default-stream handle) and stays alive for every call it is
    /// passed to.
    pub unsafe fn from_raw(raw: usize) -> Self {
        Self(raw)
    }

    fn handle(self) -> CUstream {
        self.0 as CUstream
    }
}

/// A device buffer of the caller's: `len` elements of `T` at address
/// `ptr` in the primary context of the backend's device.
#[derive(Debug)]
pub struct RawBuffer<T> {
    ptr: u64,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T> Clone for RawBuffer<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for RawBuffer<T> {}

impl<T> RawBuffer<T> {
    /// Describes `len` elements at `ptr`. Errors when `ptr` is not
    /// [`RAW_ALIGN`]-aligned, or null with `len > 0`.
    ///
    /// # Safety
    /// `ptr .. ptr + len * size_of::<T>()` is device memory of the primary
    /// context of the device the buffer is used on, readable (and, for an
    /// output, writable) by kernels queued on the stream passed with it,
    /// and not freed or reused before that stream's work queued after the
    /// call has run.
    pub unsafe fn new(ptr: u64, len: usize, what: &str) -> Result<Self, QrError> {
        if ptr == 0 && len > 0 {
            return Err(QrError::Unsupported {
                message: format!("{what}: a null device pointer for {len} elements"),
            });
        }
        if ptr % RAW_ALIGN != 0 {
            return Err(QrError::Unsupported {
                message: format!(
                    "{what}: device address {ptr:#x} is not aligned to {RAW_ALIGN} bytes \
                     (copy the tensor into a fresh allocation)"
                ),
            });
        }
        Ok(Self {
            ptr,
            len,
            _elem: PhantomData,
        })
    }

    /// Its address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Its length in elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// `H`, `tau` and `info` of a factorization in caller-owned buffers.
#[derive(Clone, Copy, Debug)]
pub struct RawFactors {
    /// H, `batch * n * n`.
    pub h: RawBuffer<f32>,
    /// tau, `batch * n`.
    pub tau: RawBuffer<f32>,
    /// One code per matrix.
    pub info: RawBuffer<i32>,
}

impl RawFactors {
    fn check(&self, shape: Shape) -> Result<(), QrError> {
        check_at_least("h", shape.a_len(), self.h.len)?;
        check_at_least("tau", shape.tau_len(), self.tau.len)?;
        check_at_least("info", shape.info_len(), self.info.len)
    }
}

impl GpuBackend {
    /// Runs `queue` (which queues on the engine's stream) ordered after
    /// the work already on `stream`, and orders `stream`'s later work
    /// after it. The second order is queued even when `queue` fails, so
    /// that whatever it queued before failing is never unordered against
    /// the caller's stream.
    fn ordered_with<R>(
        &self,
        stream: ExternalStream,
        queue: impl FnOnce() -> Result<R, QrError>,
    ) -> Result<R, QrError> {
        let ctx = self.engine.launch().context();
        let before = ctx
            .new_event(None)
            .ctx("creating an event on the caller's stream")?;
        // SAFETY: the event is live, the context is bound by new_event, and
        // the stream is the caller's (ExternalStream::from_raw's contract).
        unsafe { result::event::record(before.cu_event(), stream.handle()) }
            .ctx("recording an event on the caller's stream")?;
        {
            let _queueing = self.engine.queueing();
            self.stream()
                .wait(&before)
                .ctx("ordering the engine after the caller's stream")?;
        }
        let queued = queue();
        let after = {
            let _queueing = self.engine.queueing();
            self.stream()
                .record_event(None)
                .ctx("recording the end of the call")?
        };
        // SAFETY: as above; the wait takes the event's state now, so the
        // event may be destroyed when this returns.
        unsafe {
            result::stream::wait_event(
                stream.handle(),
                after.cu_event(),
                CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .ctx("ordering the caller's stream after the call")?;
        queued
    }

    /// [`GpuBackend::geqrf_device`] over caller-owned buffers, ordered on
    /// the caller's `stream`: `a` (`batch * n * n`) into `out`. Returns
    /// without waiting for the device.
    pub fn geqrf_raw(
        &self,
        stream: ExternalStream,
        shape: Shape,
        a: RawBuffer<f32>,
        out: RawFactors,
    ) -> Result<(), QrError> {
        check_at_least("a", shape.a_len(), a.len)?;
        out.check(shape)?;
        let ops = Operands {
            a: a.ptr,
            h: out.h.ptr,
            tau: out.tau.ptr,
            info: out.info.ptr,
        };
        let plan = self.plan(shape)?;
        // What needs no scratch (an smem plan's one launch) is queued on the
        // caller's stream itself, with no event between two streams.
        let launch = self.engine.launch();
        // SAFETY: the stream is the caller's, of this context and alive for
        // the call (ExternalStream::from_raw's contract); the wrapper does
        // not destroy it.
        let caller = unsafe { launch.context().wrap_borrowed_stream(stream.handle()) };
        if factor::without_scratch(launch, &caller, &plan, shape, ops)?.is_none() {
            return Ok(());
        }
        self.ordered_with(stream, || factor::geqrf(&self.engine, &plan, shape, ops))
    }

    /// [`GpuBackend::orgqr_device`] over caller-owned buffers, ordered on
    /// the caller's `stream`: `Q` of the reflectors `(h, tau)` into `q`,
    /// codes into `info`.
    pub fn orgqr_raw(
        &self,
        stream: ExternalStream,
        shape: Shape,
        (h, tau): (RawBuffer<f32>, RawBuffer<f32>),
        q: RawBuffer<f32>,
        info: RawBuffer<i32>,
    ) -> Result<(), QrError> {
        RawFactors { h, tau, info }.check(shape)?;
        check_at_least("q", shape.a_len(), q.len)?;
        let ops = QOperands {
            h: h.ptr,
            tau: tau.ptr,
            out: q.ptr,
            info: info.ptr,
        };
        self.ordered_with(stream, || self.run_q(shape, QOp::Orgqr, ops))
    }

    /// [`GpuBackend::ormqr_device`] over caller-owned buffers, ordered on
    /// the caller's `stream`: `op(Q)` applied to `c` in place.
    pub fn ormqr_raw(
        &self,
        stream: ExternalStream,
        shape: Shape,
        (h, tau): (RawBuffer<f32>, RawBuffer<f32>),
        (op, k): (ApplyQ, usize),
        c: RawBuffer<f32>,
        info: RawBuffer<i32>,
    ) -> Result<(), QrError> {
        RawFactors { h, tau, info }.check(shape)?;
        check_at_least("c", ApplyQ::c_len(shape, k)?, c.len)?;
        let ops = QOperands {
            h: h.ptr,
            tau: tau.ptr,
            out: c.ptr,
            info: info.ptr,
        };
        self.ordered_with(stream, || self.run_q(shape, QOp::Ormqr(op, k), ops))
    }

    /// [`GpuBackend::qr_device`] over caller-owned buffers, ordered on the
    /// caller's `stream`: geqrf of `a` into `f` (its scratch and the codes),
    /// then `Q` into `q` and `R` into `r`.
    pub fn qr_raw(
        &self,
        stream: ExternalStream,
        shape: Shape,
        a: RawBuffer<f32>,
        f: RawFactors,
        (q, r): (RawBuffer<f32>, RawBuffer<f32>),
    ) -> Result<(), QrError> {
        check_at_least("a", shape.a_len(), a.len)?;
        f.check(shape)?;
        check_at_least("q", shape.a_len(), q.len)?;
        check_at_least("r", shape.a_len(), r.len)?;
        let ops = Operands {
            a: a.ptr,
            h: f.h.ptr,
            tau: f.tau.ptr,
            info: f.info.ptr,
        };
        self.ordered_with(stream, || {
            self.run(shape, ops)?;
            self.run_qr_rest(shape, (ops.h, ops.tau, ops.info), (q.ptr, r.ptr))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_buffers_are_checked_for_null_and_alignment() {
        // SAFETY: nothing is launched; only the checks run.
        unsafe {
            assert!(RawBuffer::<f32>::new(0, 0, "a").is_ok());
            assert!(RawBuffer::<f32>::new(0, 4, "a").is_err());
            let e = RawBuffer::<f32>::new(0x1000 + 4, 4, "A").unwrap_err();
            assert!(e.to_string().contains("not aligned"), "{e}");
            let b = RawBuffer::<i32>::new(0x7f00_0000_0100, 3, "info").unwrap();
            assert_eq!(
                (b.ptr(), b.len(), b.is_empty()),
                (0x7f00_0000_0100, 3, false)
            );
        }
    }
}
