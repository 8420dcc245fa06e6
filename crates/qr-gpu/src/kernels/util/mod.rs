//! Batch-wide helpers: non-finite and overflow detection, NaN fill and
//! transposes.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use qr_core::{QrError, Shape};

use super::{KernelSource, grid_dim};
use crate::engine::Engine;
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

/// Slices per matrix of the scanning kernels: at most 64 Ki elements per
/// block (one block per matrix left 2 x 4096 scanning for 27 ms on an
/// H200, docs/perf/qr-gpu.md), and enough blocks for four per SM where the
/// matrices allow 2 Ki elements or more per block (one block per matrix
/// scanned 40 x 176 in 19 us, eight threads' loads in flight per SM).
fn slices(shape: Shape, sm_count: u32) -> u32 {
    let len = shape.matrix_len();
    let fill = (4 * sm_count as usize)
        .div_ceil(shape.batch().max(1))
        .min(len.div_ceil(2048));
    fill.max(len.div_ceil(1 << 16)).clamp(1, 65_535) as u32
}

/// `info[b] = 1` for every matrix of `a` holding a NaN or an infinity, else 0.
pub(crate) fn nonfinite(engine: &Engine, shape: Shape, a: u64, info: u64) -> Result<(), QrError> {
    nonfinite_zcol(engine, shape, a, info, 0)
}

/// As [`nonfinite`], and when `zcol` is not 0 (a buffer of `batch` ints),
/// `zcol[b]` = one past the last column of matrix `b` with a non-zero entry
/// (0 for a zero matrix): the blocked path's per-call skip of exactly-zero
/// trailing columns.
pub(crate) fn nonfinite_zcol(
    engine: &Engine,
    shape: Shape,
    a: u64,
    info: u64,
    zcol: u64,
) -> Result<(), QrError> {
    engine.memset_u32(info, 0, shape.batch())?;
    if zcol != 0 {
        engine.memset_u32(zcol, 0, shape.batch())?;
    }
    let f = engine.function(&SOURCE, &[], NONFINITE)?;
    let n = shape.n() as i32;
    let cfg = LaunchConfig {
        grid_dim: (
            grid_dim(shape.batch())?,
            slices(shape, engine.info().sm_count),
            1,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = engine.stream().launch_builder(&f);
    b.arg(&a).arg(&info).arg(&zcol).arg(&n);
    // SAFETY: `a` holds batch * n * n floats, `info` (and `zcol` when not
    // null) batch ints (the caller's buffers, checked against `shape`, or the
    // workspace); each block reads its slice of its matrix and writes only
    // that matrix's entries.
    unsafe { b.launch(cfg) }.ctx("launching util_nonfinite_f32")?;
    Ok(())
}

/// `info[b] = 2` (`Info::OVERFLOW`) for every matrix with `info[b] == 0`
/// whose `h` or `tau` holds a NaN or an infinity: a finite input whose
/// factors do not fit `f32`.
pub(crate) fn overflow(
    engine: &Engine,
    shape: Shape,
    h: u64,
    tau: u64,
    info: u64,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], OVERFLOW)?;
    let n = shape.n() as i32;
    let cfg = LaunchConfig {
        grid_dim: (
            grid_dim(shape.batch())?,
            slices(shape, engine.info().sm_count),
            1,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = engine.stream().launch_builder(&f);
    b.arg(&h).arg(&tau).arg(&info).arg(&n);
    // SAFETY: `h` holds batch * n * n floats, `tau` batch * n and `info`
    // batch ints (the caller's buffers, checked against `shape`); each block
    // reads its slice of its matrix and writes only that matrix's info.
    unsafe { b.launch(cfg) }.ctx("launching util_overflow_f32")?;
    Ok(())
}

/// Fills `h` and `tau` of every matrix with a non-zero `info` with NaN.
pub(crate) fn nanfill(
    engine: &Engine,
    shape: Shape,
    h: u64,
    tau: u64,
    info: u64,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], NANFILL)?;
    let n = shape.n() as i32;
    let per_matrix = shape.matrix_len().div_ceil(256 * 8).clamp(1, 64);
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(shape.batch())?, per_matrix as u32, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = engine.stream().launch_builder(&f);
    b.arg(&h).arg(&tau).arg(&info).arg(&n);
    // SAFETY: `h` holds batch * n * n floats, `tau` batch * n and `info`
    // batch ints; the kernel stays within them.
    unsafe { b.launch(cfg) }.ctx("launching util_nanfill_f32")?;
    Ok(())
}

/// `dst[b] = src[b]^T` for every matrix (row-major <-> column-major).
pub(crate) fn transpose(engine: &Engine, shape: Shape, src: u64, dst: u64) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], TRANSPOSE)?;
    let n = shape.n() as i32;
    let tiles = grid_dim(shape.n().div_ceil(32))?;
    let cfg = LaunchConfig {
        grid_dim: (tiles, tiles, grid_dim(shape.batch())?),
        block_dim: (32, 8, 1),
        shared_mem_bytes: 0,
    };
    let mut b = engine.stream().launch_builder(&f);
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
        let at = |b, n| slices(Shape::new(b, n).unwrap(), 132);
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
