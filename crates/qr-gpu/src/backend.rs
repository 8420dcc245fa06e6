//! `GpuBackend`: the host [`Backend`] (copies in and out) and the
//! device-resident API that benchmarks time.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use qr_core::{
    ApplyQ, Backend, BatchMut, BatchRef, BenchOptions, BenchTiming, Info, Operation, QrError,
    QrFactors, Reflectors, Shape,
};

use crate::bench;
use crate::device::probe::DeviceInfo;
use crate::device::workspace::{alloc_error, dptr};
use crate::error::DriverContext;
use crate::factor;
use crate::factor::Operands;
use crate::factor::engine::Engine;
use crate::factor::q::{self as qops, QOp, QOperands};
use crate::peers::host_round_trip;
use crate::plan::{Plan, PlanEdit, Strategy};
use crate::tuning::Tuning;

mod external;
mod planner;

pub use external::{ExternalStream, RAW_ALIGN, RawBuffer, RawFactors};
pub use planner::Planner;

/// The CUDA engine as a qr-core [`Backend`] (name `"gpu"`).
#[derive(Debug, Clone)]
pub struct GpuBackend {
    engine: Arc<Engine>,
    forced: Option<Strategy>,
    edit: Option<PlanEdit>,
    tuning: Tuning,
}

/// Outputs of a device-resident factorization, in device memory.
#[derive(Debug)]
pub struct DeviceFactorization {
    /// The shape these buffers hold.
    pub shape: Shape,
    /// H, row-major like the input.
    pub h: CudaSlice<f32>,
    /// tau, `n` per matrix.
    pub tau: CudaSlice<f32>,
    /// One [`Info`] code per matrix, as `i32`.
    pub info: CudaSlice<i32>,
}

fn alloc<T: cudarc::driver::DeviceRepr>(
    stream: &Arc<CudaStream>,
    len: usize,
) -> Result<CudaSlice<T>, QrError> {
    let len = len.max(1);
    // SAFETY: the contents are uninitialised; the device-resident API writes
    // every element of the shape before the caller can read it back.
    unsafe { stream.alloc::<T>(len) }.map_err(|e| alloc_error::<T>(len, e))
}

impl DeviceFactorization {
    /// `LengthMismatch` for the first of an input of `a` elements and these
    /// buffers that is shorter than the shape needs.
    fn check_lens(&self, a: usize) -> Result<(), QrError> {
        check_device_lens(
            self.shape,
            [
                ("a", a),
                ("h", self.h.len()),
                ("tau", self.tau.len()),
                ("info", self.info.len()),
            ],
        )
    }
}

/// `LengthMismatch` for the first device buffer shorter than `shape` needs;
/// longer buffers (reused allocations) are fine.
fn check_device_lens(shape: Shape, have: [(&'static str, usize); 4]) -> Result<(), QrError> {
    let need = [
        shape.a_len(),
        shape.a_len(),
        shape.tau_len(),
        shape.info_len(),
    ];
    for ((what, have), need) in have.into_iter().zip(need) {
        if have < need {
            Shape::check_len(what, need, have)?;
        }
    }
    Ok(())
}

impl GpuBackend {
    /// Opens device `ordinal`; fails with [`QrError::Unavailable`] when there
    /// is no usable device or library. Never panics.
    pub fn new(ordinal: usize) -> Result<Self, QrError> {
        Ok(Self {
            engine: Engine::new(ordinal)?,
            forced: None,
            edit: None,
            tuning: Tuning::default(),
        })
    }

    /// Forces `strategy` for every shape (`None` lets the planner choose).
    pub fn with_strategy(mut self, strategy: Option<Strategy>) -> Self {
        self.forced = strategy;
        self
    }

    /// Applies `edit` to every plan after the planner (`None`: plans as
    /// planned).
    pub fn with_plan_edit(mut self, edit: Option<PlanEdit>) -> Self {
        self.edit = edit;
        self
    }

    /// Replaces the planner's tuning constants.
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = tuning;
        self
    }

    /// The plan this backend uses for `shape`.
    pub fn plan(&self, shape: Shape) -> Result<Plan, QrError> {
        self.planner().plan(shape)
    }

    /// Compiles to PTX, on every core, the kernels of `plans` (made for
    /// this device, with any tuning) that the on-disk PTX cache lacks (the
    /// crate README's `QR_GPU_CACHE_DIR`), so that the factorizations
    /// that follow only load them instead of waiting on NVRTC a module at
    /// a time. Returns how many modules were compiled: 0 with the cache
    /// off, where this does nothing.
    pub fn prepare_plans(&self, plans: &[Plan]) -> Result<usize, QrError> {
        crate::plan::modules::warm(
            plans,
            self.engine.info().compute_capability,
            self.engine.launch().ptx_cache(),
        )
    }

    /// The device.
    pub fn device(&self) -> &DeviceInfo {
        self.engine.info()
    }

    /// The stream the device-resident API queues on, in call order. Work
    /// queued on it from other threads (a kernel, a dropped buffer's free)
    /// is ordered only by when it is queued; the engine never records this
    /// stream into a CUDA graph (graph plans record on streams of their
    /// own, graph.rs).
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.engine.stream()
    }

    /// Kernel modules compiled so far (each (family, defines, arch) once).
    pub fn modules_compiled(&self) -> usize {
        self.engine.launch().modules_compiled()
    }

    /// Copies a host batch to a new device buffer.
    pub fn upload(&self, a: &[f32]) -> Result<CudaSlice<f32>, QrError> {
        let _queueing = self.engine.queueing();
        let mut d = alloc::<f32>(self.stream(), a.len())?;
        self.stream()
            .memcpy_htod(a, &mut d.slice_mut(..a.len()))
            .ctx("copying a batch to the device")?;
        Ok(d)
    }

    /// Device outputs for `shape`.
    pub fn alloc_outputs(&self, shape: Shape) -> Result<DeviceFactorization, QrError> {
        let _queueing = self.engine.queueing();
        Ok(DeviceFactorization {
            shape,
            h: alloc(self.stream(), shape.a_len())?,
            tau: alloc(self.stream(), shape.tau_len())?,
            info: alloc(self.stream(), shape.info_len())?,
        })
    }

    /// Queues the factorization of the device batch `a` into `out` on
    /// [`GpuBackend::stream`]; returns without waiting for the device.
    pub fn geqrf_device(
        &self,
        a: &CudaSlice<f32>,
        out: &mut DeviceFactorization,
    ) -> Result<(), QrError> {
        let shape = out.shape;
        out.check_lens(a.len())?;
        let s = self.stream();
        let ops = Operands {
            a: dptr(a, s),
            h: dptr(&out.h, s),
            tau: dptr(&out.tau, s),
            info: dptr(&out.info, s),
        };
        self.run(shape, ops)
    }

    fn run(&self, shape: Shape, ops: Operands) -> Result<(), QrError> {
        let plan = self.plan(shape)?;
        factor::geqrf(&self.engine, &plan, shape, ops)
    }

    /// Copies device outputs back into host buffers (waits for the stream).
    pub fn download(
        &self,
        dev: &DeviceFactorization,
        mut out: BatchMut<'_>,
    ) -> Result<(), QrError> {
        let shape = dev.shape;
        if out.shape() != shape {
            return Err(QrError::Unsupported {
                message: format!("downloading {} into outputs of {}", shape, out.shape()),
            });
        }
        // The fields are public, so a caller can pair a shape with buffers
        // too short for it: an error, before any copy.
        dev.check_lens(shape.a_len())?;
        let (h, tau, info) = out.parts();
        let s = self.stream();
        let mut codes = vec![0i32; shape.info_len()];
        {
            let _queueing = self.engine.queueing();
            s.memcpy_dtoh(&dev.h.slice(..shape.a_len()), h)
                .ctx("copying H back")?;
            s.memcpy_dtoh(&dev.tau.slice(..shape.tau_len()), tau)
                .ctx("copying tau back")?;
            s.memcpy_dtoh(&dev.info.slice(..shape.info_len()), &mut codes)
                .ctx("copying info back")?;
        }
        self.engine.synchronize()?;
        for (i, c) in info.iter_mut().zip(codes) {
            *i = Info(c);
        }
        Ok(())
    }
}

/// Length checks of the device-resident Q operations: each buffer at least
/// as long as `shape` (and `k`) need.
fn check_at_least(what: &'static str, need: usize, have: usize) -> Result<(), QrError> {
    if have < need {
        Shape::check_len(what, need, have)?;
    }
    Ok(())
}

impl GpuBackend {
    /// The planner of this backend's device, tuning and forced strategy.
    pub fn planner(&self) -> Planner<'_> {
        Planner::new(self.engine.info(), &self.tuning, self.forced).with_edit(self.edit.as_ref())
    }

    /// The tensor-core update settings `orgqr` and `ormqr` use for `shape`
    /// ([`Planner::q_plan`]).
    pub fn q_plan(&self, shape: Shape) -> Result<Plan, QrError> {
        self.planner().q_plan(shape)
    }

    /// What `op` launches for `shape`, in words ([`Planner::describe_op`]).
    pub fn describe_op(&self, shape: Shape, op: Operation) -> Result<String, QrError> {
        self.planner().describe_op(shape, op)
    }

    /// Queues `orgqr` of the device reflectors `(h, tau)` of `shape` into
    /// `q` (`batch * n * n`) and `info` on [`GpuBackend::stream`]; returns
    /// without waiting.
    pub fn orgqr_device(
        &self,
        shape: Shape,
        (h, tau): (&CudaSlice<f32>, &CudaSlice<f32>),
        q: &mut CudaSlice<f32>,
        info: &mut CudaSlice<i32>,
    ) -> Result<(), QrError> {
        let ops = self.q_operands(shape, (h, tau), ("q", shape.a_len(), q), info)?;
        self.run_q(shape, QOp::Orgqr, ops)
    }

    /// Queues `ormqr`: `op(Q)` of the device reflectors `(h, tau)` applied
    /// in place to the device batch `c` (`batch` matrices of `n x k` from
    /// the left, `k x n` from the right), codes into `info`.
    pub fn ormqr_device(
        &self,
        shape: Shape,
        (h, tau): (&CudaSlice<f32>, &CudaSlice<f32>),
        (op, k): (ApplyQ, usize),
        c: &mut CudaSlice<f32>,
        info: &mut CudaSlice<i32>,
    ) -> Result<(), QrError> {
        let c_len = ApplyQ::c_len(shape, k)?;
        let ops = self.q_operands(shape, (h, tau), ("c", c_len, c), info)?;
        self.run_q(shape, QOp::Ormqr(op, k), ops)
    }

    /// The device pointers of a Q operation on `shape`, each buffer checked
    /// against what it needs (`out`: its name, the floats it needs, it).
    fn q_operands(
        &self,
        shape: Shape,
        (h, tau): (&CudaSlice<f32>, &CudaSlice<f32>),
        (name, need, out): (&'static str, usize, &mut CudaSlice<f32>),
        info: &mut CudaSlice<i32>,
    ) -> Result<QOperands, QrError> {
        check_at_least("h", shape.a_len(), h.len())?;
        check_at_least("tau", shape.tau_len(), tau.len())?;
        check_at_least(name, need, out.len())?;
        check_at_least("info", shape.info_len(), info.len())?;
        let s = self.stream();
        Ok(QOperands {
            h: dptr(h, s),
            tau: dptr(tau, s),
            out: dptr(out, s),
            info: dptr(info, s),
        })
    }

    /// Queues `A = Q R` of the device batch `a`: geqrf into `f` (whose
    /// `info` is the result's), then `Q` from it into `q` and `R` (the
    /// upper triangle of `f.h`, NaN where `info` is not 0) into `r`, all on
    /// the device.
    pub fn qr_device(
        &self,
        a: &CudaSlice<f32>,
        f: &mut DeviceFactorization,
        q: &mut CudaSlice<f32>,
        r: &mut CudaSlice<f32>,
    ) -> Result<(), QrError> {
        let shape = f.shape;
        check_at_least("q", shape.a_len(), q.len())?;
        check_at_least("r", shape.a_len(), r.len())?;
        self.geqrf_device(a, f)?;
        let s = self.stream();
        let (h, tau, info) = (dptr(&f.h, s), dptr(&f.tau, s), dptr(&f.info, s));
        self.run_qr_rest(shape, (h, tau, info), (dptr(q, s), dptr(r, s)))
    }

    /// The part of `qr` after geqrf: Q (codes left as geqrf's) and R.
    fn run_qr_rest(
        &self,
        shape: Shape,
        (h, tau, info): (u64, u64, u64),
        (q, r): (u64, u64),
    ) -> Result<(), QrError> {
        let ops = QOperands {
            h,
            tau,
            out: q,
            info: 0,
        };
        self.run_q(shape, QOp::Orgqr, ops)?;
        if shape.is_empty() {
            return Ok(());
        }
        let _queueing = self.engine.queueing();
        crate::kernels::trailing_tc::q::upper(
            self.engine.launch(),
            self.stream(),
            shape,
            (h, r, info),
        )
    }

    fn run_q(&self, shape: Shape, op: QOp, ops: QOperands) -> Result<(), QrError> {
        if shape.is_empty() {
            // Nothing to form or apply: every matrix (if any) is OK.
            let _queueing = self.engine.queueing();
            if ops.info != 0 && shape.batch() > 0 {
                self.engine
                    .launch()
                    .memset_u32(self.stream(), ops.info, 0, shape.batch())?;
            }
            return Ok(());
        }
        let planner = self.planner();
        let update = planner.q_update(shape)?;
        let _queueing = self.engine.queueing();
        let on_chip = planner.on_chip(shape, matches!(op, QOp::Ormqr(..)));
        qops::run(&self.engine, (on_chip, &update), shape, op, ops)
    }

    /// The host side of `orgqr_into` / `ormqr_into`: `(h, tau)` and the
    /// result buffer's current contents (C for ormqr) copied in, `op`
    /// queued, the result and codes copied back.
    fn q_round_trip(
        &self,
        f: Reflectors<'_>,
        op: QOp,
        out: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = f.shape();
        let s = self.stream();
        let mut st = self.engine.staging();
        let ops = {
            let _queueing = self.engine.queueing();
            let ops = QOperands {
                h: st.a.ensure(s, shape.a_len())?,
                tau: st.tau.ensure(s, shape.tau_len())?,
                out: st.h.ensure(s, out.len())?,
                info: st.info.ensure(s, shape.info_len())?,
            };
            let up = |buf: &mut crate::device::workspace::Buf<f32>, x: &[f32], what: &str| {
                let d = buf.slice_mut().expect("ensured");
                s.memcpy_htod(x, &mut d.slice_mut(..x.len())).ctx(what)
            };
            up(&mut st.a, f.h(), "copying H to the device")?;
            up(&mut st.tau, f.tau(), "copying tau to the device")?;
            if matches!(op, QOp::Ormqr(..)) {
                up(&mut st.h, out, "copying C to the device")?;
            }
            ops
        };
        self.run_q(shape, op, ops)?;
        let staging = &mut *st;
        self.copy_back(
            &mut [(&mut staging.h, out, "the result")],
            &mut staging.info,
            info,
        )
    }

    /// Copies each staging buffer's first `out.len()` floats into `out` and
    /// the codes into `info`, then waits for the stream.
    fn copy_back(
        &self,
        outs: &mut [(&mut crate::device::workspace::Buf<f32>, &mut [f32], &str)],
        codes: &mut crate::device::workspace::Buf<i32>,
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let s = self.stream();
        let mut raw = vec![0i32; info.len()];
        {
            let _queueing = self.engine.queueing();
            for (buf, out, what) in outs.iter_mut() {
                let d = buf.slice_mut().expect("ensured");
                s.memcpy_dtoh(&d.slice(..out.len()), &mut **out)
                    .ctx(&format!("copying {what} back"))?;
            }
            let d = codes.slice_mut().expect("ensured");
            s.memcpy_dtoh(&d.slice(..info.len()), &mut raw)
                .ctx("copying info back")?;
        }
        self.engine.synchronize()?;
        for (i, c) in info.iter_mut().zip(raw) {
            *i = Info(c);
        }
        Ok(())
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> &str {
        "gpu"
    }

    fn describe(&self) -> String {
        match self.forced {
            Some(s) => format!("gpu: {} (strategy {s} forced)", self.engine.info()),
            None => format!("gpu: {}", self.engine.info()),
        }
    }

    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError> {
        let shape = a.shape();
        host_round_trip(&self.engine, a, out, &|ops| self.run(shape, ops))
    }

    /// Plans each shape and compiles its kernels ahead
    /// ([`GpuBackend::prepare_plans`]). A shape the planner refuses is its
    /// error.
    fn prepare(&self, shapes: &[Shape]) -> Result<(), QrError> {
        let plans = shapes
            .iter()
            .filter(|s| !s.is_empty())
            .map(|&s| self.plan(s))
            .collect::<Result<Vec<_>, _>>()?;
        self.prepare_plans(&plans).map(|_| ())
    }

    fn orgqr_into(
        &self,
        f: Reflectors<'_>,
        q: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = f.shape();
        Shape::check_len("q", shape.a_len(), q.len())?;
        Shape::check_len("info", shape.info_len(), info.len())?;
        if shape.is_empty() {
            info.fill(Info::OK);
            return Ok(());
        }
        self.q_round_trip(f, QOp::Orgqr, q, info)
    }

    fn ormqr_into(
        &self,
        f: Reflectors<'_>,
        op: ApplyQ,
        k: usize,
        c: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = f.shape();
        ApplyQ::check(shape, k, c.len(), info.len())?;
        if shape.is_empty() || k == 0 {
            // Nothing to compute; the reflectors still get their status.
            f.statuses(info);
            return Ok(());
        }
        self.q_round_trip(f, QOp::Ormqr(op, k), c, info)
    }

    /// One round trip: the batch copied in, geqrf, orgqr and R on the
    /// device, Q, R and the codes copied back (the same kernels as
    /// `geqrf_into` then `orgqr_into`, so the same bits).
    fn qr_into(
        &self,
        a: BatchRef<'_>,
        q: &mut [f32],
        r: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = a.shape();
        QrFactors::check(shape, q.len(), r.len(), info.len())?;
        if shape.is_empty() {
            info.fill(Info::OK);
            return Ok(());
        }
        // Planned before anything is queued, so a refusal leaves no work.
        self.q_plan(shape)?;
        let s = self.stream();
        let mut st = self.engine.staging();
        let (ops, pq, pr) = {
            let _queueing = self.engine.queueing();
            let ops = Operands {
                a: st.a.ensure(s, shape.a_len())?,
                h: st.h.ensure(s, shape.a_len())?,
                tau: st.tau.ensure(s, shape.tau_len())?,
                info: st.info.ensure(s, shape.info_len())?,
            };
            let (pq, pr) = (
                st.q.ensure(s, shape.a_len())?,
                st.r.ensure(s, shape.a_len())?,
            );
            let d = st.a.slice_mut().expect("ensured");
            s.memcpy_htod(a.as_slice(), &mut d.slice_mut(..shape.a_len()))
                .ctx("copying the batch to the device")?;
            (ops, pq, pr)
        };
        self.run(shape, ops)?;
        self.run_qr_rest(shape, (ops.h, ops.tau, ops.info), (pq, pr))?;
        let staging = &mut *st;
        self.copy_back(
            &mut [(&mut staging.q, q, "Q"), (&mut staging.r, r, "R")],
            &mut staging.info,
            info,
        )
    }

    fn bench_op(
        &self,
        op: Operation,
        shape: Shape,
        inputs: &[&[f32]],
        opts: &BenchOptions,
    ) -> Result<BenchTiming, QrError> {
        if op == Operation::Geqrf {
            return self.bench(shape, inputs, opts);
        }
        if shape.is_empty() {
            return Err(QrError::Unsupported {
                message: "benchmarking an empty shape".into(),
            });
        }
        self.q_plan(shape)?;
        let factor = |ops: Operands| self.run(shape, ops);
        bench::device_bench_q(&self.engine, shape, inputs, opts, &factor, &|b| {
            let reflectors = |out, info| QOperands {
                h: b.h,
                tau: b.tau,
                out,
                info,
            };
            match op {
                Operation::Orgqr => self.run_q(shape, QOp::Orgqr, reflectors(b.out, b.codes)),
                Operation::Ormqr(apply) => self.run_q(
                    shape,
                    QOp::Ormqr(apply, shape.n()),
                    reflectors(b.work, b.codes),
                ),
                Operation::Geqrf | Operation::Qr => {
                    let ops = Operands {
                        a: b.a,
                        h: b.h,
                        tau: b.tau,
                        info: b.info,
                    };
                    self.run(shape, ops)?;
                    if op == Operation::Qr {
                        self.run_qr_rest(shape, (b.h, b.tau, b.info), (b.out, b.r))?;
                    }
                    Ok(())
                }
            }
        })
    }

    fn bench(
        &self,
        shape: Shape,
        inputs: &[&[f32]],
        opts: &BenchOptions,
    ) -> Result<BenchTiming, QrError> {
        if shape.is_empty() {
            return Err(QrError::Unsupported {
                message: "benchmarking an empty shape".into(),
            });
        }
        // Plan (and compile) before timing, so errors surface here.
        self.plan(shape)?;
        bench::device_bench(&self.engine, shape, inputs, opts, &|ops| {
            self.run(shape, ops)
        })
    }
}
