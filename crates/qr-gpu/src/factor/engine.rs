//! The engine: one context and stream on one device, the compiled-module
//! cache, the cuBLAS handle and the reusable workspace.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cudarc::cublas::CudaBlas;
use cudarc::cublas::sys::{cublasHandle_t, cublasMath_t};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaStream};
use qr_core::QrError;

use crate::compile::module_cache::ModuleCache;
use crate::compile::ptx_cache::PtxCache;
use crate::device::launch::Launch;
use crate::device::probe::{self, DeviceInfo};
use crate::device::workspace::{Staging, Workspace};
use crate::error::{DriverContext, blas};
use crate::factor::graph::Graphs;
use crate::plan::MAX_LANES;

/// A second stream and the two events that order it against the main one
/// (each event is recorded again only after the wait on it is queued).
#[derive(Debug)]
struct SideStream {
    stream: Arc<CudaStream>,
    to_side: CudaEvent,
    to_main: CudaEvent,
}

impl SideStream {
    fn new(ctx: &Arc<CudaContext>, priority: i32, what: &str) -> Result<Self, QrError> {
        let flags = Some(CUevent_flags::CU_EVENT_DISABLE_TIMING);
        Ok(Self {
            stream: ctx
                .new_stream_with_priority(priority)
                .ctx(&format!("creating the engine's {what} stream"))?,
            to_side: ctx.new_event(flags).ctx("creating an event")?,
            to_main: ctx.new_event(flags).ctx("creating an event")?,
        })
    }
}

/// Queues on `waiter` a wait for the work queued on `other` so far, through
/// `event` (re-recorded: a wait already queued on it keeps its point).
fn wait_for(waiter: &CudaStream, other: &CudaStream, event: &CudaEvent) -> Result<(), QrError> {
    event.record(other).ctx("recording an event")?;
    waiter.wait(event).ctx("waiting on an event")?;
    Ok(())
}

/// One set of streams a blocked factorization queues on, and its scratch:
/// the main stream, a priority stream for the panels' chain and a
/// low-priority one for the checks, with the events that order them.
/// Lane 0 is the engine's own (its main stream is the engine's stream);
/// the others let groups of one batch run their chains independently
/// (`Schedule::lanes`).
#[derive(Debug)]
pub(crate) struct Lane {
    main: Arc<CudaStream>,
    side: SideStream,
    aux: SideStream,
    /// Orders the side stream after the auxiliary one.
    aux_to_side: CudaEvent,
    /// Orders the auxiliary stream after the side one.
    side_to_aux: CudaEvent,
    /// Orders this lane's main stream after the engine's (fork).
    fork: CudaEvent,
    /// Orders the engine's stream after this lane's main one (join).
    join: CudaEvent,
    /// The lane's scratch (the capture lane shares lane 0's).
    workspace: Arc<Mutex<Workspace>>,
}

impl Lane {
    fn new(
        ctx: &Arc<CudaContext>,
        main: Arc<CudaStream>,
        workspace: Arc<Mutex<Workspace>>,
    ) -> Result<Self, QrError> {
        let (least, greatest) = cudarc::driver::result::stream::get_priority_range()
            .ctx("querying the stream priorities")?;
        let flags = Some(CUevent_flags::CU_EVENT_DISABLE_TIMING);
        Ok(Self {
            main,
            side: SideStream::new(ctx, greatest, "priority")?,
            aux: SideStream::new(ctx, least, "auxiliary")?,
            aux_to_side: ctx.new_event(flags).ctx("creating an event")?,
            side_to_aux: ctx.new_event(flags).ctx("creating an event")?,
            fork: ctx.new_event(flags).ctx("creating an event")?,
            join: ctx.new_event(flags).ctx("creating an event")?,
            workspace,
        })
    }

    /// The lane's main stream.
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.main
    }

    /// The lane's highest-priority stream, for the blocked paths' critical
    /// chain (panels) beside the trailing updates on the main stream.
    pub(crate) fn side_stream(&self) -> &Arc<CudaStream> {
        &self.side.stream
    }

    /// Makes the side stream wait for everything queued on the main stream.
    pub(crate) fn side_waits_main(&self) -> Result<(), QrError> {
        wait_for(&self.side.stream, &self.main, &self.side.to_side)
    }

    /// Makes the main stream wait for everything queued on the side stream.
    pub(crate) fn main_waits_side(&self) -> Result<(), QrError> {
        wait_for(&self.main, &self.side.stream, &self.side.to_main)
    }

    /// The lane's lowest-priority stream, for work that only later steps
    /// need (the blocked paths' input scan beside the first panel).
    pub(crate) fn aux_stream(&self) -> &Arc<CudaStream> {
        &self.aux.stream
    }

    /// Makes the auxiliary stream wait for everything queued on the main
    /// stream.
    pub(crate) fn aux_waits_main(&self) -> Result<(), QrError> {
        wait_for(&self.aux.stream, &self.main, &self.aux.to_side)
    }

    /// Makes the main stream wait for everything queued on the auxiliary
    /// stream.
    pub(crate) fn main_waits_aux(&self) -> Result<(), QrError> {
        wait_for(&self.main, &self.aux.stream, &self.aux.to_main)
    }

    /// Makes the auxiliary stream wait for everything queued on the side
    /// stream.
    pub(crate) fn aux_waits_side(&self) -> Result<(), QrError> {
        wait_for(&self.aux.stream, &self.side.stream, &self.side_to_aux)
    }

    /// Makes the side stream wait for everything queued on the auxiliary
    /// stream.
    pub(crate) fn side_waits_aux(&self) -> Result<(), QrError> {
        wait_for(&self.side.stream, &self.aux.stream, &self.aux_to_side)
    }

    /// Makes this lane's main stream wait for everything queued on `engine`
    /// (the engine's stream) so far.
    pub(crate) fn fork_from(&self, engine: &CudaStream) -> Result<(), QrError> {
        wait_for(&self.main, engine, &self.fork)
    }

    /// Makes `engine` (the engine's stream) wait for everything queued on
    /// this lane's main stream so far.
    pub(crate) fn join_into(&self, engine: &CudaStream) -> Result<(), QrError> {
        wait_for(engine, &self.main, &self.join)
    }

    /// The lane's scratch.
    pub(crate) fn workspace(&self) -> MutexGuard<'_, Workspace> {
        self.workspace
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Everything long-lived that the kernels and libraries need.
#[derive(Debug)]
pub(crate) struct Engine {
    launch: Launch,
    stream: Arc<CudaStream>,
    /// The stream sets of the blocked paths; lane 0's main stream is
    /// `stream`.
    lanes: Vec<Lane>,
    /// The streams that plans running as graphs are recorded on, with
    /// lane 0's scratch (the graphs run on `stream`, in order with lane
    /// 0), so that `stream`, which callers and dropped buffers queue on,
    /// is never captured.
    capture: Lane,
    blas: CudaBlas,
    staging: Mutex<Staging>,
    graphs: Mutex<Graphs>,
    /// Held while a call queues work on the engine's streams: calls share
    /// lane 0's scratch, the capture lane and the staging buffers, and
    /// queue in the order they take it.
    queueing: Mutex<()>,
}

impl Engine {
    /// Opens device `ordinal`: checks the libraries, creates the context,
    /// stream and cuBLAS handle. Compiles nothing yet.
    pub(crate) fn new(ordinal: usize) -> Result<Arc<Self>, QrError> {
        let info = probe::probe_device(ordinal)?;
        probe::check_cublas()?;
        let ctx = CudaContext::new(ordinal).ctx("creating the CUDA context")?;
        // SAFETY: the engine orders every access itself (its main stream,
        // and the side stream that blocked.rs orders against it by events
        // and joins back before returning), so cudarc's per-buffer events
        // are not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().ctx("creating the engine's stream")?;
        let scratch = || Arc::new(Mutex::new(Workspace::default()));
        let mut lanes = vec![Lane::new(&ctx, stream.clone(), scratch())?];
        for _ in 1..MAX_LANES {
            let main = ctx.new_stream().ctx("creating a lane's stream")?;
            lanes.push(Lane::new(&ctx, main, scratch())?);
        }
        let capture = Lane::new(
            &ctx,
            ctx.new_stream().ctx("creating the capture stream")?,
            lanes[0].workspace.clone(),
        )?;
        let cublas = blas(CudaBlas::new(stream.clone()), "creating the cuBLAS handle")?;
        // Full float32 products: the default math mode, never TF32, whose
        // 10-bit mantissa would break the factor-residual gate.
        // SAFETY: the handle is live and owned by `cublas`.
        blas(
            unsafe {
                cudarc::cublas::sys::cublasSetMathMode(
                    *cublas.handle(),
                    cublasMath_t::CUBLAS_DEFAULT_MATH,
                )
            }
            .result(),
            "setting cuBLAS's math mode",
        )?;
        Ok(Arc::new(Self {
            launch: Launch::new(info, ctx, ModuleCache::new(PtxCache::from_env())),
            stream,
            lanes,
            capture,
            blas: cublas,
            staging: Mutex::new(Staging::default()),
            graphs: Mutex::new(Graphs::default()),
            queueing: Mutex::new(()),
        }))
    }

    /// The device's description.
    pub(crate) fn info(&self) -> &DeviceInfo {
        self.launch.info()
    }

    /// What the kernel launchers take: the device, context and modules.
    pub(crate) fn launch(&self) -> &Launch {
        &self.launch
    }

    /// The stream every operation is queued on.
    pub(crate) fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Lane `i` (< [`MAX_LANES`]); lane 0 queues on the engine's stream.
    pub(crate) fn lane(&self, i: usize) -> &Lane {
        &self.lanes[i]
    }

    /// The lane plans that run as graphs are recorded on (graph.rs): streams
    /// of its own, lane 0's scratch.
    pub(crate) fn capture_lane(&self) -> &Lane {
        &self.capture
    }

    /// The raw cuBLAS handle (bound to the engine's stream).
    pub(crate) fn blas_handle(&self) -> cublasHandle_t {
        *self.blas.handle()
    }

    /// The blocked paths' scratch of lane 0 (the engine's stream).
    pub(crate) fn workspace(&self) -> MutexGuard<'_, Workspace> {
        self.lanes[0].workspace()
    }

    /// Exclusive use of the engine's streams and scratch for queueing:
    /// every path of the backend that queues work on them holds this
    /// meanwhile.
    pub(crate) fn queueing(&self) -> MutexGuard<'_, ()> {
        self.queueing.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The executable graphs of the plans that run as graphs.
    pub(crate) fn graphs(&self) -> MutexGuard<'_, Graphs> {
        self.graphs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The host API's staging buffers.
    pub(crate) fn staging(&self) -> MutexGuard<'_, Staging> {
        self.staging.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for everything queued so far.
    pub(crate) fn synchronize(&self) -> Result<(), QrError> {
        self.stream.synchronize().ctx("synchronizing the stream")?;
        Ok(())
    }
}
