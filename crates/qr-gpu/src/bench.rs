//! The device-event benchmark shared by the engine and its peers: inputs
//! uploaded once, L2 evicted before each repetition, CUDA events around one
//! pass over all inputs.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::CudaSlice;
use cudarc::driver::sys::CUevent_flags;
use qr_core::{BenchOptions, BenchTiming, QrError, Shape};

use crate::device::workspace::{Buf, alloc_error, dptr};
use crate::error::DriverContext;
use crate::factor::Operands;
use crate::factor::engine::Engine;

/// Bytes written before each repetition: at least 256 MiB, several times the
/// H200's 60 MiB L2 (and at least four times the device's own).
pub(crate) fn flush_bytes(engine: &Engine, opts: &BenchOptions) -> usize {
    if opts.flush_bytes == 0 {
        0
    } else {
        opts.flush_bytes
            .max(256 << 20)
            .max(4 * engine.info().l2_bytes)
    }
}

/// Times `run` over `inputs` (all of `shape`) with device events.
pub(crate) fn device_bench(
    engine: &Arc<Engine>,
    shape: Shape,
    inputs: &[&[f32]],
    opts: &BenchOptions,
    run: &dyn Fn(Operands) -> Result<(), QrError>,
) -> Result<BenchTiming, QrError> {
    for a in inputs {
        Shape::check_len("a", shape.a_len(), a.len())?;
    }
    let stream = engine.stream();
    let mut devs: Vec<CudaSlice<f32>> = Vec::with_capacity(inputs.len());
    for a in inputs {
        let len = a.len().max(1);
        // SAFETY: the first a.len() elements are written just below; the
        // factorization reads no more than the shape's a_len() == a.len().
        let mut d = unsafe { stream.alloc::<f32>(len) }.map_err(|e| alloc_error::<f32>(len, e))?;
        stream
            .memcpy_htod(*a, &mut d.slice_mut(..a.len()))
            .ctx("uploading a benchmark input")?;
        devs.push(d);
    }
    let (mut h, mut tau, mut info) = (
        Buf::<f32>::default(),
        Buf::<f32>::default(),
        Buf::<i32>::default(),
    );
    let hp = h.ensure(stream, shape.a_len())?;
    let tp = tau.ensure(stream, shape.tau_len())?;
    let ip = info.ensure(stream, shape.info_len())?;
    let pass = || -> Result<(), QrError> {
        for d in &devs {
            run(Operands {
                a: dptr(d, stream),
                h: hp,
                tau: tp,
                info: ip,
            })?;
        }
        Ok(())
    };
    time_passes(engine, inputs.len(), opts, &pass)
}

/// Device pointers of one input of [`device_bench_q`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct QBench {
    /// The input batch.
    pub a: u64,
    /// Its factorization (geqrf, untimed): H.
    pub h: u64,
    /// tau.
    pub tau: u64,
    /// geqrf's codes.
    pub info: u64,
    /// A copy of the input of its own, for operations in place (ormqr's C).
    pub work: u64,
    /// An output of the batch's size (Q), shared by the inputs.
    pub out: u64,
    /// A second one (R).
    pub r: u64,
    /// Codes of the operation, shared.
    pub codes: u64,
}

/// Times `run` over `inputs` (all of `shape`) with device events, as
/// [`device_bench`] times geqrf, after `factor` has factored each input
/// once into buffers of its own (untimed).
pub(crate) fn device_bench_q(
    engine: &Arc<Engine>,
    shape: Shape,
    inputs: &[&[f32]],
    opts: &BenchOptions,
    factor: &dyn Fn(Operands) -> Result<(), QrError>,
    run: &dyn Fn(QBench) -> Result<(), QrError>,
) -> Result<BenchTiming, QrError> {
    for a in inputs {
        Shape::check_len("a", shape.a_len(), a.len())?;
    }
    let stream = engine.stream();
    // Per input: a, h, work (f32, the batch's size each), tau; info.
    let mut floats: Vec<[Buf<f32>; 4]> = Vec::with_capacity(inputs.len());
    let mut codes: Vec<Buf<i32>> = Vec::with_capacity(inputs.len());
    let mut per = Vec::with_capacity(inputs.len());
    for a in inputs {
        let mut bufs: [Buf<f32>; 4] = Default::default();
        let mut info = Buf::<i32>::default();
        let pa = bufs[0].ensure(stream, shape.a_len())?;
        let ph = bufs[1].ensure(stream, shape.a_len())?;
        let pw = bufs[2].ensure(stream, shape.a_len())?;
        let pt = bufs[3].ensure(stream, shape.tau_len())?;
        let pi = info.ensure(stream, shape.info_len())?;
        {
            let _queueing = engine.queueing();
            let d = bufs[0].slice_mut().expect("ensured");
            stream
                .memcpy_htod(*a, &mut d.slice_mut(..a.len()))
                .ctx("uploading a benchmark input")?;
            engine.launch().copy_dtod(stream, pw, pa, shape.a_bytes())?;
        }
        factor(Operands {
            a: pa,
            h: ph,
            tau: pt,
            info: pi,
        })?;
        per.push((pa, ph, pw, pt, pi));
        floats.push(bufs);
        codes.push(info);
    }
    let (mut out, mut r, mut shared) = (
        Buf::<f32>::default(),
        Buf::<f32>::default(),
        Buf::<i32>::default(),
    );
    let po = out.ensure(stream, shape.a_len())?;
    let pr = r.ensure(stream, shape.a_len())?;
    let pc = shared.ensure(stream, shape.info_len())?;
    let pass = || -> Result<(), QrError> {
        for &(a, h, work, tau, info) in &per {
            run(QBench {
                a,
                h,
                tau,
                info,
                work,
                out: po,
                r: pr,
                codes: pc,
            })?;
        }
        Ok(())
    };
    time_passes(engine, inputs.len(), opts, &pass)
}

/// The repetition loop of the device benchmarks: warm-up passes, then
/// timed passes between two events until [`BenchTiming::should_stop`],
/// [`flush_bytes`] written before each.
fn time_passes(
    engine: &Arc<Engine>,
    inputs: usize,
    opts: &BenchOptions,
    pass: &dyn Fn() -> Result<(), QrError>,
) -> Result<BenchTiming, QrError> {
    let stream = engine.stream();
    let flush_len = flush_bytes(engine, opts) / 4;
    let mut flush_buf = Buf::<u32>::default();
    let flush_ptr = if flush_len > 0 {
        flush_buf.ensure(stream, flush_len).map_err(|e| match e {
            QrError::OutOfMemory { .. } => alloc_error::<u32>(
                flush_len,
                cudarc::driver::DriverError(
                    cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY,
                ),
            ),
            other => other,
        })?
    } else {
        0
    };
    for _ in 0..opts.warmup {
        pass()?;
    }
    engine.synchronize()?;
    let ctx = engine.launch().context();
    let start = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .ctx("creating a timing event")?;
    let end = ctx
        .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .ctx("creating a timing event")?;
    let mut samples = Vec::new();
    let began = Instant::now();
    let mut round = 0u32;
    while !BenchTiming::should_stop(&samples, began, opts) {
        round = round.wrapping_add(1);
        {
            let _queueing = engine.queueing();
            if flush_len > 0 {
                engine
                    .launch()
                    .memset_u32(stream, flush_ptr, round, flush_len)?;
            }
            start.record(stream).ctx("recording the start event")?;
        }
        pass()?;
        {
            let _queueing = engine.queueing();
            end.record(stream).ctx("recording the end event")?;
        }
        end.synchronize().ctx("waiting for the end event")?;
        let ms = start.elapsed_ms(&end).ctx("reading the events")? as f64;
        samples.push(ms * 1e-3 / inputs.max(1) as f64);
    }
    Ok(BenchTiming::from_samples(&samples, "cuda-events"))
}
