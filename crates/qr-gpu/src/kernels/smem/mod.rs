//! Launcher of the whole-matrix shared-memory kernel (strategy `smem`).

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use qr_core::{QrError, Shape};

use super::{KernelSource, grid_dim};
use crate::device::launch::Launch;
use crate::error::DriverContext;

const ONE_BARRIER: &str = "smem_onebarrier_f32";
const REGISTERS: &str = "smem_registers_f32";
const WARP: &str = "smem_warp_f32";

/// Largest order of the warp kernel: one column per lane.
pub(crate) const WARP_MAX_N: usize = 32;

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "smem",
    source: concat!(include_str!("../prelude.cu"), include_str!("smem.cu")),
    entries: &[ONE_BARRIER, REGISTERS, WARP],
    defines: &["SMEM_TPC", "SMEM_ROWS", "SMEM_WARP"],
};

/// Dynamic shared memory for one `n x n` matrix with the odd leading
/// dimension, and the one-barrier kernel's two pivot columns and two rows
/// of sums.
pub(crate) fn smem_bytes(n: usize) -> usize {
    matrix_bytes(n, n | 1)
}

/// `smem_bytes` for leading dimension `lda`.
pub(crate) fn matrix_bytes(n: usize, lda: usize) -> usize {
    (n * lda + 4 * n) * std::mem::size_of::<f32>()
}

/// The one-barrier kernel's conflict-free leading dimension for `tpc`
/// threads per column: the least lda >= n with lda = 32 / tpc modulo
/// 64 / tpc, so that the tpc consecutive rows a warp reads of its 32 / tpc
/// adjacent columns start 32 / tpc banks apart (smem.cu's header). With
/// one thread per column a warp reads one row: any lda works.
pub(crate) fn padded_lda(n: usize, tpc: u32) -> usize {
    let tpc = tpc.clamp(1, 32) as usize;
    if tpc == 1 {
        return n.max(1);
    }
    let (rem, modulus) = (32 / tpc, 64 / tpc);
    n + (rem + modulus - n % modulus) % modulus
}

/// The `-D` defines of this family for `tpc` threads per column, `rows`
/// rows per thread of the register kernel (0 when it is not used) and the
/// warp kernel compiled in (`warp`: only for the plans that launch it, as
/// its unrolled steps double the module's compile time, NVRTC 13.5).
pub(crate) fn defines(tpc: u32, rows: u32, warp: bool) -> Vec<(String, String)> {
    vec![
        ("SMEM_TPC".to_string(), tpc.to_string()),
        ("SMEM_ROWS".to_string(), rows.to_string()),
        ("SMEM_WARP".to_string(), u8::from(warp).to_string()),
    ]
}

/// Largest block of the register kernel with `rows` rows per thread: whole
/// warps of threads holding the rows and about 40 registers more
/// (`SMEM_REG_THREADS` in smem.cu).
pub(crate) fn register_threads(rows: u32) -> u32 {
    (65_536 / (rows.max(1) + 40) / 32 * 32).min(1024)
}

/// Dynamic shared memory of the register kernel: its four buffers of two
/// steps each, `rows * tpc` floats long.
pub(crate) fn register_bytes(tpc: u32, rows: u32) -> usize {
    8 * (rows * tpc) as usize * std::mem::size_of::<f32>()
}

/// The whole-matrix kernel's launch parameters (an `smem` plan's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Threads per column.
    pub tpc: u32,
    /// Threads per block.
    pub threads: u32,
    /// Rows per thread of the register kernel, 0 for shared memory.
    pub rows: u32,
    /// Leading dimension of the matrix in shared memory.
    pub lda: u32,
    /// One warp per matrix, every column in its lanes' registers.
    pub warp: bool,
}

/// Factors every matrix of `a` (of `shape`) into `h`, `tau` and `info`
/// (device pointers) on `stream`: the kernel flags and NaN-fills
/// non-finite inputs and overflowed outputs itself, so no batch-wide
/// helper runs beside it.
pub(crate) fn launch(
    k: &Launch,
    stream: &CudaStream,
    (shape, g): (Shape, Geometry),
    (a, h, tau, info): (u64, u64, u64, u64),
) -> Result<(), QrError> {
    let Geometry {
        tpc,
        threads,
        rows,
        lda,
        warp,
    } = g;
    let n = shape.n();
    let lda = lda as usize;
    if warp && (n > WARP_MAX_N || threads != 32) {
        return Err(QrError::Unsupported {
            message: format!(
                "the smem warp kernel takes matrices of order <= {WARP_MAX_N} in blocks of \
                 32 threads (n = {n}, {threads} threads)"
            ),
        });
    }
    let (entry, smem) = match rows {
        _ if warp => (WARP, 0),
        1.. => (REGISTERS, register_bytes(tpc, rows)),
        0 => (ONE_BARRIER, matrix_bytes(n, lda)),
    };
    let f = k.function(&SOURCE, &defines(tpc, rows, warp), entry)?;
    super::raise_dynamic_smem(&f, smem, entry)?;
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(shape.batch())?, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: smem as u32,
    };
    let int = |x| super::kernel_int(x, "smem");
    let (n, lda, ldg) = (int(n)?, int(lda)?, int(n)?);
    let mstride = (shape.n() * shape.n()) as i64;
    // Whole matrices: row stride and tau stride n, `corner` 0 (smem.cu).
    let corner = 0i32;
    let mut b = stream.launch_builder(&f);
    b.arg(&a).arg(&h).arg(&tau).arg(&info);
    b.arg(&n)
        .arg(&lda)
        .arg(&mstride)
        .arg(&ldg)
        .arg(&ldg)
        .arg(&corner);
    // SAFETY: matrix b's n x n block at a / h + b * n^2 lies within the
    // batch * n^2 floats of `a` and `h`, its tau at tau + b * n within
    // batch * n, `info` holds batch ints; the block size is a multiple of
    // `tpc` and the dynamic shared memory is what the chosen kernel expects
    // (the matrix's padded size, or the register kernel's buffers), whose
    // block of n * tpc threads holding `rows` rows each covers the matrix
    // (the planner's `smem_registers` check); the warp kernel's one warp
    // holds a column of n <= 32 rows per lane (checked above).
    unsafe { b.launch(cfg) }.ctx(&format!("launching {entry}"))?;
    Ok(())
}
