//! Launcher of the register-resident panel factorization of the `blocked`
//! and `cluster` paths (`rows_per_thread` panel rows per thread, one block
//! or one thread-block cluster per matrix).

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use qr_core::QrError;

use super::PanelBuffers;
use crate::device::launch::Launch;
use crate::error::GpuError;
use crate::kernels::{KernelSource, grid_dim};

const FACTOR: &str = "panelreg_factor_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "panelreg",
    // The helpers, the whole-row kernel, the halves kernel: one source in
    // this order (tools/cudasim joins the same list).
    source: concat!(
        include_str!("../prelude.cu"),
        include_str!("panelreg_ops.cu"),
        include_str!("panelreg.cu"),
        include_str!("panelreg_halves.cu")
    ),
    entries: &[FACTOR],
    defines: &["PREG_THREADS", "PREG_RPT", "PREG_CLUSTER", "PREG_HALVES"],
};

/// Whether a launch of these parameters runs the halves kernel
/// (`PREG_HALVES`: each thread holds half the columns of twice the rows):
/// asked for, a block alone, 64 threads or more.
pub(crate) fn halves(halves: bool, threads: u32, cluster: u32) -> bool {
    halves && cluster == 0 && threads >= 64
}

/// The `-D` defines for blocks of `threads` holding `rows_per_thread` rows
/// each, `cluster` blocks per matrix (0: one block, no cluster), the
/// halves kernel where `halves` says so (twice the rows of 16 columns
/// each).
pub(crate) fn defines(
    threads: u32,
    rows_per_thread: u32,
    cluster: u32,
    halves: bool,
) -> Vec<(String, String)> {
    let halves = self::halves(halves, threads, cluster);
    let rpt = if halves {
        2 * rows_per_thread
    } else {
        rows_per_thread
    };
    vec![
        ("PREG_THREADS".to_string(), threads.to_string()),
        ("PREG_RPT".to_string(), rpt.to_string()),
        ("PREG_CLUSTER".to_string(), cluster.to_string()),
        ("PREG_HALVES".to_string(), u8::from(halves).to_string()),
    ]
}

/// Rows one block holds.
pub(crate) fn capacity(threads: u32, rows_per_thread: u32) -> usize {
    threads as usize * rows_per_thread as usize
}

/// Block size for a panel (or a cluster block's chunk) of `rows` rows: the
/// rows over `rows_per_thread`, rounded up to whole pairs of warps, at
/// least `min_threads` and at most `max_threads` (the plan's block, sized
/// for the first panel). Every warp pays the same per-reflector shuffles
/// whatever rows it holds, so later, shorter panels take smaller blocks.
pub(crate) fn threads_for_rows(
    rows: usize,
    rows_per_thread: u32,
    min_threads: u32,
    max_threads: u32,
) -> u32 {
    let t = rows
        .div_ceil(rows_per_thread.max(1) as usize)
        .next_multiple_of(64);
    (t.max(64).max(min_threads as usize) as u32).min(max_threads)
}

/// Factors the panel at column `p` (width `w`) of matrices `mat0..mat0 +
/// mats` on `stream`, one block per matrix (`cluster` 0) or a cluster of
/// `cluster` blocks per matrix splitting the panel's rows; blocks of
/// `threads_for_rows` between `min_threads` and `threads`. With `halves` a
/// block alone runs the halves kernel (`PREG_HALVES`), the same rows per
/// block.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    k: &Launch,
    stream: &CudaStream,
    threads: u32,
    min_threads: u32,
    rows_per_thread: u32,
    cluster: u32,
    n: usize,
    p: usize,
    w: usize,
    mat0: usize,
    mats: usize,
    buf: &PanelBuffers,
    halves: bool,
) -> Result<(), QrError> {
    let groups = cluster.max(1);
    let chunk = (n - p).div_ceil(groups as usize);
    let threads = threads_for_rows(chunk, rows_per_thread, min_threads, threads);
    if chunk > capacity(threads, rows_per_thread) {
        return Err(QrError::Unsupported {
            message: format!(
                "a {chunk}-row panel chunk exceeds the {} rows of a {threads}-thread register panel block",
                capacity(threads, rows_per_thread)
            ),
        });
    }
    let f = k.function(
        &SOURCE,
        &defines(threads, rows_per_thread, cluster, halves),
        FACTOR,
    )?;
    let shape = Geometry {
        n,
        p,
        w,
        mat0,
        mats,
        groups,
        threads,
    };
    // SAFETY: the buffers are sized for the whole batch by the workspace
    // (h and src: batch*n*n, zcol: batch, v: batch*n*NB, t: batch*NB*NB,
    // tau: batch*n, oflow: 0 or batch); blocks (g, b) touch only
    // matrix mat0 + b, which lies in the batch (mats is at most the grid's
    // y limit, as the caller splits launches), and each chunk fits its
    // block (checked above). The kernel's compile-time cluster size equals the grid's x
    // extent, so a cluster is one matrix.
    unsafe { launch_panel(stream, &f, FACTOR, &shape, buf) }
}

/// Where a register panel launch runs: the panel at column `p` (width `w`)
/// of an order-`n` batch, matrices `mat0..mat0 + mats`, `groups` blocks of
/// `threads` per matrix.
pub(crate) struct Geometry {
    /// Matrix order.
    pub n: usize,
    /// The panel's first column.
    pub p: usize,
    /// The panel's width.
    pub w: usize,
    /// First matrix of the launch.
    pub mat0: usize,
    /// Matrices of the launch (the grid's y extent).
    pub mats: usize,
    /// Blocks per matrix (the grid's x extent: a cluster, or 1).
    pub groups: u32,
    /// Threads per block.
    pub threads: u32,
}

/// Launches `f`, a register panel kernel with panelreg's arguments
/// (`entry` names it), on `stream`: the buffers of `buf`.
///
/// # Safety
///
/// `buf` must hold the batch's buffers at the sizes the kernels read and
/// write (panelreg's launcher), and `shape` must describe matrices of that
/// batch and blocks whose rows fit the kernel's compiled layout.
pub(crate) unsafe fn launch_panel(
    stream: &CudaStream,
    f: &CudaFunction,
    entry: &'static str,
    shape: &Geometry,
    buf: &PanelBuffers,
) -> Result<(), QrError> {
    let cfg = LaunchConfig {
        grid_dim: (shape.groups, grid_dim(shape.mats)?, 1),
        block_dim: (shape.threads, 1, 1),
        shared_mem_bytes: 0,
    };
    // The kernels' `vprev`, `tprev` and `fold` (the deleted fold's; not
    // read): null and 0.
    let (vprev, tprev, fold_i) = (0u64, 0u64, 0i32);
    let [n, p, w, m0] = [shape.n, shape.p, shape.w, shape.mat0].map(|x| x as i32);
    let mut b = stream.launch_builder(f);
    b.arg(&buf.h)
        .arg(&buf.src)
        .arg(&buf.zcol)
        .arg(&buf.v)
        .arg(&buf.t)
        .arg(&buf.tau)
        .arg(&n)
        .arg(&p)
        .arg(&w)
        .arg(&m0)
        .arg(&vprev)
        .arg(&tprev)
        .arg(&fold_i)
        .arg(&buf.oflow);
    // SAFETY: the caller's contract (above). The context is formatted only
    // on an error: a factorization launches a panel per 32 columns.
    unsafe { b.launch(cfg) }.map_err(|error| GpuError::Driver {
        context: format!("launching {entry}"),
        error,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defines_are_the_sources_in_its_order() {
        for (cluster, halves) in [(0, false), (0, true), (4, false)] {
            let d = defines(256, 2, cluster, halves);
            let names: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(names, SOURCE.defines);
        }
    }

    #[test]
    fn blocks_shrink_with_the_panel_in_warp_pairs() {
        assert_eq!(threads_for_rows(512, 2, 64, 256), 256);
        assert_eq!(threads_for_rows(480, 2, 64, 256), 256);
        assert_eq!(threads_for_rows(384, 2, 64, 256), 192);
        assert_eq!(threads_for_rows(352, 1, 64, 512), 384);
        assert_eq!(threads_for_rows(32, 2, 64, 256), 64);
        assert_eq!(threads_for_rows(32, 1, 256, 512), 256);
        assert_eq!(threads_for_rows(20, 1, 64, 32), 32);
        for rows in 1..=1024usize {
            for rpt in [1u32, 2, 4] {
                let max = rows.div_ceil(rpt as usize).max(32).next_power_of_two() as u32;
                let t = threads_for_rows(rows, rpt, 64, max);
                assert!(
                    capacity(t, rpt) >= rows,
                    "{rows} rows, {rpt} per thread: {t}"
                );
                assert!(t % 32 == 0 && t <= max);
            }
        }
    }
}
