//! `GpuBackend`: the host [`Backend`] (copies in and out) and the
//! device-resident API that benchmarks time.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};
use qr_core::{Backend, BatchMut, BatchRef, BenchOptions, BenchTiming, Info, QrError, Shape};

use crate::bench::{self, Operands};
use crate::engine::Engine;
use crate::error::DriverContext;
use crate::factor;
use crate::peers::host_round_trip;
use crate::plan::{self, Plan, Strategy};
use crate::probe::DeviceInfo;
use crate::tuning::Tuning;
use crate::workspace::{alloc_error, dptr};

/// The CUDA engine as a qr-core [`Backend`] (name `"gpu"`).
#[derive(Debug, Clone)]
pub struct GpuBackend {
    engine: Arc<Engine>,
    forced: Option<Strategy>,
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
            tuning: Tuning::default(),
        })
    }

    /// Forces `strategy` for every shape (`None` lets the planner choose).
    pub fn with_strategy(mut self, strategy: Option<Strategy>) -> Self {
        self.forced = strategy;
        self
    }

    /// Replaces the planner's tuning constants.
    pub fn with_tuning(mut self, tuning: Tuning) -> Self {
        self.tuning = tuning;
        self
    }

    /// The plan this backend uses for `shape`.
    pub fn plan(&self, shape: Shape) -> Result<Plan, QrError> {
        plan::plan(shape, self.engine.info(), &self.tuning, self.forced)
    }

    /// Compiles to PTX, on every core, the kernels of `plans` (made for
    /// this device, with any tuning) that the on-disk PTX cache lacks (the
    /// crate README's `QR_GPU_CACHE_DIR`), so that the factorizations
    /// that follow only load them instead of waiting on NVRTC a module at
    /// a time. Returns how many modules were compiled: 0 with the cache
    /// off, where this does nothing.
    pub fn prepare_plans(&self, plans: &[Plan]) -> Result<usize, QrError> {
        crate::compile::warm(
            plans,
            self.engine.info().compute_capability,
            self.engine.ptx_cache(),
        )
    }

    /// The device.
    pub fn device(&self) -> &DeviceInfo {
        self.engine.info()
    }

    /// The stream the device-resident API queues on. Do not queue work on
    /// it from another thread while a call of this backend runs: plans
    /// that run as CUDA graphs record the stream's work during the call,
    /// and would record that work with theirs.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.engine.stream()
    }

    /// Kernel modules compiled so far (each (family, defines, arch) once).
    pub fn modules_compiled(&self) -> usize {
        self.engine.modules_compiled()
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
        check_device_lens(
            shape,
            [
                ("a", a.len()),
                ("h", out.h.len()),
                ("tau", out.tau.len()),
                ("info", out.info.len()),
            ],
        )?;
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
        check_device_lens(
            shape,
            [
                ("a", shape.a_len()),
                ("h", dev.h.len()),
                ("tau", dev.tau.len()),
                ("info", dev.info.len()),
            ],
        )?;
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
