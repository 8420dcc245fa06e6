//! Batch-wide helpers: non-finite and overflow detection, NaN fill and
//! transposes.

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use qr_core::{QrError, Shape};

use super::{KernelSource, grid_dim};
use crate::device::launch::Launch;
use crate::error::DriverContext;

const NONFINITE: &str = "util_nonfinite_f32";
const OVERFLOW: &str = "util_overflow_f32";
const NANFILL: &str = "util_nanfill_f32";
const TRANSPOSE: &str = "util_transpose_f32";

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "util",
    source: concat!(include_str!("../prelude.cu"), include_str!("util.cu")),
    entries: &[NONFINITE, OVERFLOW, NANFILL, TRANSPOSE],
    defines: &[],
};

/// Slices per matrix of the scanning kernels (here and Q's finish): at most 64 Ki elements per
/// block (one block per matrix left 2 x 4096 scanning for 27 ms on an
/// H200, docs/history/qr-gpu-sessions.md), and enough blocks for four per SM where the
/// matrices allow 2 Ki elements or more per block (one block per matrix
/// scanned 40 x 176 in 19 us, eight threads' loads in flight per SM).
pub(crate) fn slices(batch: usize, len: usize, sm_count: u32) -> u32 {
    let fill = (4 * sm_count as usize)
        .div_ceil(batch.max(1))
        .min(len.div_ceil(2048));
    fill.max(len.div_ceil(1 << 16)).clamp(1, 65_535) as u32
}

/// `info[b] = 1` for every matrix of `a` holding a NaN or an infinity, else 0,
/// queued on `stream`.
pub(crate) fn nonfinite(
    k: &Launch,
    stream: &CudaStream,
    shape: Shape,
    a: u64,
    info: u64,
) -> Result<(), QrError> {
    k.memset_u32(stream, info, 0, shape.batch())?;
    scan(k, stream, shape, a, info, 0)
}

/// As [`nonfinite`], and `zcol[b]` (a buffer of `batch` ints) = one past
/// the last column of matrix `b` with a non-zero entry (0 for a zero
/// matrix): the blocked path's per-call skip of exactly-zero trailing
/// columns. The buffers are zeroed on `stream` (a lane's main stream) and
/// the scan runs on a stream the caller has ordered after them. With
/// `marks`, the `batch` ints after `zcol` (the writers' overflow marks) are
/// zeroed with it.
pub(crate) fn zero_nonfinite_zcol(
    k: &Launch,
    stream: &CudaStream,
    shape: Shape,
    info: u64,
    zcol: u64,
    marks: bool,
) -> Result<(), QrError> {
    let words = if marks { 2 } else { 1 } * shape.batch();
    k.memset_u32(stream, info, 0, shape.batch())?;
    k.memset_u32(stream, zcol, 0, words)
}

/// The scan of [`zero_nonfinite_zcol`]'s buffers (`zcol` 0: info only) on
/// `stream`.
pub(crate) fn scan(
    k: &Launch,
    stream: &CudaStream,
    shape: Shape,
    a: u64,
    info: u64,
    zcol: u64,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &[], NONFINITE)?;
    let n = shape.n() as i32;
    let cfg = LaunchConfig {
        grid_dim: (
            grid_dim(shape.batch())?,
            slices(shape.batch(), shape.matrix_len(), k.info().sm_count),
            1,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(&f);
    b.arg(&a).arg(&info).arg(&zcol).arg(&n);
    // SAFETY: `a` holds batch * n * n floats, `info` (and `zcol` when not
    // null) batch ints (the caller's buffers, checked against `shape`, or the
    // workspace); each block reads its slice of its matrix and writes only
    // that matrix's entries.
    unsafe { b.launch(cfg) }.ctx("launching util_nonfinite_f32")?;
    Ok(())
}

/// Rows, columns (half-open ranges) of H and the range of tau that one
/// overflow check covers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region {
    /// Rows of H.
    pub rows: (usize, usize),
    /// Columns of H.
    pub cols: (usize, usize),
    /// Entries of tau.
    pub taus: (usize, usize),
}

/// `info[b] = 2` (`Info::OVERFLOW`) for every matrix with `info[b] == 0`
/// whose `h` or `tau` holds a NaN or an infinity in `region` (a finite
/// input whose factors do not fit `f32`), on `stream`. The region's entries
/// must be final, so that part of the check may run beside the rest of the
/// factorization.
pub(crate) fn overflow_in(
    k: &Launch,
    stream: &CudaStream,
    shape: Shape,
    (h, tau, info): (u64, u64, u64),
    region: Region,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &[], OVERFLOW)?;
    let n = shape.n();
    let (rows, cols) = (
        region.rows.1.saturating_sub(region.rows.0),
        region.cols.1.saturating_sub(region.cols.0),
    );
    if region.rows.1 > n || region.cols.1 > n || region.taus.1 > n {
        return Err(QrError::Unsupported {
            message: format!("overflow check region {region:?} outside an order-{n} matrix"),
        });
    }
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let cfg = LaunchConfig {
        grid_dim: (
            grid_dim(shape.batch())?,
            slices(shape.batch(), rows * cols, k.info().sm_count),
            1,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let int = |x: usize| x as i32;
    let (n, r0, r1, c0, c1, t0, t1) = (
        int(n),
        int(region.rows.0),
        int(region.rows.1),
        int(region.cols.0),
        int(region.cols.1),
        int(region.taus.0),
        int(region.taus.1),
    );
    let mut b = stream.launch_builder(&f);
    b.arg(&h)
        .arg(&tau)
        .arg(&info)
        .arg(&n)
        .arg(&r0)
        .arg(&r1)
        .arg(&c0)
        .arg(&c1)
        .arg(&t0)
        .arg(&t1);
    // SAFETY: `h` holds batch * n * n floats, `tau` batch * n and `info`
    // batch ints (the caller's buffers, checked against `shape`); the region
    // lies within n x n and n (checked above); each block reads its slice of
    // its matrix's region and writes only that matrix's info.
    unsafe { b.launch(cfg) }.ctx("launching util_overflow_f32")?;
    Ok(())
}

/// Fills `h` and `tau` of every matrix with a non-zero `info` with NaN, on
/// `stream`; with `oflow` (not 0: the writers' overflow marks), a marked
/// matrix of finite input is set to info 2 and filled too.
pub(crate) fn nanfill(
    k: &Launch,
    stream: &CudaStream,
    shape: Shape,
    (h, tau): (u64, u64),
    info: u64,
    oflow: u64,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &[], NANFILL)?;
    let n = shape.n() as i32;
    let per_matrix = shape.matrix_len().div_ceil(256 * 8).clamp(1, 64);
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(shape.batch())?, per_matrix as u32, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(&f);
    b.arg(&h).arg(&tau).arg(&info).arg(&oflow).arg(&n);
    // SAFETY: `h` holds batch * n * n floats, `tau` batch * n, `info`
    // batch ints and `oflow` batch ints or is null; the kernel stays within
    // them.
    unsafe { b.launch(cfg) }.ctx("launching util_nanfill_f32")?;
    Ok(())
}

/// `dst[b] = src[b]^T` for every matrix (row-major <-> column-major),
/// queued on `stream`.
pub(crate) fn transpose(
    k: &Launch,
    stream: &CudaStream,
    shape: Shape,
    src: u64,
    dst: u64,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &[], TRANSPOSE)?;
    let n = shape.n() as i32;
    let tiles = grid_dim(shape.n().div_ceil(32))?;
    let cfg = LaunchConfig {
        grid_dim: (tiles, tiles, grid_dim(shape.batch())?),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let mut b = stream.launch_builder(&f);
    b.arg(&src).arg(&dst).arg(&n);
    // SAFETY: both buffers hold batch * n * n floats and do not overlap.
    unsafe { b.launch(cfg) }.ctx("launching util_transpose_f32")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_fill_the_device_and_bound_each_block() {
        let at = |b, n| slices(b, Shape::new(b, n).unwrap().matrix_len(), 132);
        assert_eq!(at(640, 512), 4);
        assert_eq!(at(60, 1024), 16);
        assert_eq!(at(2, 4096), 264);
        assert_eq!(at(40, 176), 14);
        assert_eq!(at(20, 32), 1);
        for (b, n) in [(1, 1), (40, 176), (3, 70_000), (100_000, 8)] {
            let s = at(b, n) as usize;
            let len = Shape::new(b, n).unwrap().matrix_len();
            assert!((1..=65_535).contains(&s));
            assert!(len.div_ceil(s) <= 1 << 16 || s == 65_535);
        }
    }
}
