//! CUDA graphs for launch-bound plans (the plan's `Schedule::graph`): a plan's launch
//! sequence for given operands is recorded once by stream capture and
//! replayed as one graph launch, so the device runs the chain of small
//! dependent kernels without a launch gap between each.
//!
//! A recording is kept per (plan, operand addresses, workspace addresses):
//! exactly what the same call would queue again, every kernel reading the
//! operands' current contents, so replaying it is queueing it. Nothing
//! about an input's contents is recorded: the zero-column and non-finite
//! decisions are taken on the device during each replay. A key is
//! recorded only the second time it is seen, so callers whose operands
//! move on every call keep launching kernel by kernel.
//!
//! Whatever is queued on a stream while it is being captured is recorded
//! instead of run, from whichever thread: a buffer dropped by another
//! thread (its free is queued on its stream) or a caller's own kernel
//! would land in the graph. So the engine's stream is never captured: a
//! graph plan's first run queues on lane 0 (the engine's stream) as any
//! plan does, its recording on the streams of `Engine::capture_lane`,
//! which only recordings use (under the engine's queueing lock) and which
//! share lane 0's scratch, and the graph is launched on the engine's
//! stream, in order with lane 0's other work.

use cudarc::driver::sys::{self, CUstreamCaptureMode};
use cudarc::driver::{CudaStream, result};
use qr_core::QrError;

use crate::error::DriverContext;
use crate::factor::engine::Lane;
use crate::plan::Plan;

/// Most keys remembered at once (the least recently used is dropped first):
/// a benchmark or a training step cycles through a few dozen buffers.
const KEPT: usize = 64;

/// What a recording depends on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    /// The plan (from the shape and the device).
    pub plan: Plan,
    /// Input, H, tau and info.
    pub operands: [u64; 4],
    /// The workspace's buffers (`Workspace::addresses`).
    pub workspace: [u64; 10],
}

/// An instantiated graph, destroyed on drop.
#[derive(Debug)]
struct Exec(sys::CUgraphExec);

// SAFETY: a CUgraphExec is a driver handle usable from any thread; the
// engine serializes every use of it behind the cache's mutex.
unsafe impl Send for Exec {}

impl Drop for Exec {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuGraphInstantiate and is dropped
        // once; launches already queued keep what they need.
        let _ = unsafe { result::graph::exec_destroy(self.0) };
    }
}

/// A captured graph, destroyed on drop (its instantiation is separate).
struct Captured(sys::CUgraph);

impl Drop for Captured {
    fn drop(&mut self) {
        // SAFETY: the handle came from cuStreamEndCapture and is dropped once.
        let _ = unsafe { result::graph::destroy(self.0) };
    }
}

/// The keys seen lately, most recent last, with their recordings once
/// they have one.
#[derive(Debug, Default)]
pub(crate) struct Graphs {
    kept: Vec<(Key, Option<Exec>)>,
}

impl Graphs {
    /// Runs `queue` (which queues a whole factorization on a lane's main
    /// stream and on streams it joins back into it) for `key`: on `run`
    /// (lane 0, the engine's stream) launch by launch the first time the
    /// key is seen (which also compiles the kernels and sizes the scratch,
    /// neither of which may happen inside a capture), recorded on
    /// `record` (sharing `run`'s scratch) and launched on `run`'s stream
    /// as a graph the second time, replayed there after.
    pub(crate) fn run(
        &mut self,
        (run, record): (&Lane, &Lane),
        key: Key,
        queue: &mut dyn FnMut(&Lane) -> Result<(), QrError>,
    ) -> Result<(), QrError> {
        let stream = run.stream();
        let Some(at) = self.kept.iter().position(|(k, _)| *k == key) else {
            queue(run)?;
            if self.kept.len() == KEPT {
                self.kept.remove(0);
            }
            self.kept.push((key, None));
            return Ok(());
        };
        let (key, exec) = self.kept.remove(at);
        let exec = match exec {
            Some(e) => e,
            None => {
                let captured = capture(record.stream(), &mut || queue(record))?;
                // The captured kernels keep their streams' priorities as node
                // priorities, which the graph honours only with this flag:
                // without it the panels lost their precedence over the bulk
                // updates (60 x 1024 4464 -> 5190 us, H200).
                let flags =
                    sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
                // SAFETY: the captured graph is live.
                let e = unsafe { result::graph::instantiate(captured.0, flags) }
                    .ctx("instantiating a captured factorization")?;
                Exec(e)
            }
        };
        // SAFETY: the executable graph is live, recorded with this key's
        // operands and lane 0's scratch, which only work on `stream` uses.
        let launched = unsafe { result::graph::launch(exec.0, stream.cu_stream()) };
        self.kept.push((key, Some(exec)));
        launched.ctx("launching a factorization's graph")?;
        Ok(())
    }
}

/// Captures what `queue` queues on `stream` (and on the streams it forks
/// and joins back) as a graph, ending the capture whatever `queue` returns.
fn capture(
    stream: &CudaStream,
    queue: &mut dyn FnMut() -> Result<(), QrError>,
) -> Result<Captured, QrError> {
    stream
        .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .ctx("beginning a stream capture")?;
    let queued = queue();
    // SAFETY: the stream is capturing (begun just above, on this thread).
    let ended = unsafe { result::stream::end_capture(stream.cu_stream()) };
    let graph = ended.ctx("ending a stream capture")?;
    let captured = Captured(graph);
    queued?;
    if captured.0.is_null() {
        return Err(QrError::Unsupported {
            message: "the stream capture of a factorization produced no graph".into(),
        });
    }
    Ok(captured)
}
