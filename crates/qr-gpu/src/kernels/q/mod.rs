//! Kernels of `orgqr`, `ormqr` and `qr` beside the tensor-core update:
//! every 32-column block's V and T from `(H, tau)` (reversed for `Q` where
//! the update applies `Q^T`, q.cu's header), the columns `orgqr` forms
//! directly, the result checks, `R` and a rectangular transpose.
//!
//! Launch contract (arguments in the kernels' order):
//! - `q_prepare_f32(h, tau, v, v_stride, t, q, bad, n, reverse)`: grid
//!   `batch * blocks(n)`, block `THREADS`. `v` holds [`v_floats`]`(n)` per
//!   matrix (`v_stride`), block `k`'s V at [`v_offset`]`(n, k)` as
//!   `n - 32 k` rows of 32 (the layout trailing_tc reads); `t` holds
//!   `blocks(n) * 1024` per matrix; `q` null except for `orgqr`; `bad` one
//!   int per matrix, zeroed before.
//! - `q_finish_f32(out, len, bad, cbad, info)`: grid `batch`.
//! - `q_scan_f32(c, len, cbad)`: grid `batch`.
//! - `q_upper_f32(h, r, info, n)`: grid `(slices, batch)`.
//! - `q_transpose_f32(src, dst, rows, cols)`: grid `(ceil(cols/32),
//!   ceil(rows/32), batch)`, block 256.
//! - `q_apply_f32(v, v_stride, t, c, c_stride, ld, cols, n, mode)`: grid
//!   `batch * ceil(cols / 32)`, block `THREADS`, [`apply_bytes`]`(n)` bytes
//!   of dynamic shared memory; `v` and `t` as `q_prepare_f32` writes them
//!   with `reverse` 0; `mode` an [`Apply`].

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use qr_core::{QrError, Shape};

use super::{KernelSource, grid_dim};
use crate::engine::Engine;
use crate::error::DriverContext;

const PREPARE: &str = "q_prepare_f32";
const FINISH: &str = "q_finish_f32";
const SCAN: &str = "q_scan_f32";
const UPPER: &str = "q_upper_f32";
const TRANSPOSE: &str = "q_transpose_f32";
const APPLY: &str = "q_apply_f32";

/// Threads per block of every kernel but the transpose (`Q_THREADS`).
const THREADS: u32 = 256;

pub(crate) const SOURCE: KernelSource = KernelSource {
    family: "q",
    source: concat!(include_str!("../prelude.cu"), include_str!("q.cu")),
    entries: &[PREPARE, FINISH, SCAN, UPPER, TRANSPOSE, APPLY],
    defines: &[],
};

/// Columns per block of reflectors (the update's panel width).
pub(crate) const NB: usize = 32;

/// Blocks of reflectors of an order-`n` matrix.
pub(crate) fn blocks(n: usize) -> usize {
    n.div_ceil(NB)
}

/// Offset (floats) of block `k`'s V inside one matrix's V area: block `j`
/// holds `n - 32 j` rows of 32.
pub(crate) fn v_offset(n: usize, k: usize) -> usize {
    NB * (k * n - NB / 2 * k * k.saturating_sub(1))
}

/// Floats of one matrix's V area (every block's).
pub(crate) fn v_floats(n: usize) -> usize {
    v_offset(n, blocks(n))
}

/// Device pointers of one `q_prepare_f32` launch: `h`, `tau`, `v`, `t`
/// and `bad` at matrix 0 of the launch, `q` there too or 0.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepare {
    /// H of matrix 0.
    pub h: u64,
    /// tau of matrix 0.
    pub tau: u64,
    /// V area of matrix 0 ([`v_floats`] per matrix).
    pub v: u64,
    /// T area of matrix 0 (`blocks(n) * 1024` per matrix).
    pub t: u64,
    /// Q of matrix 0 (orgqr), or 0.
    pub q: u64,
    /// One flag per matrix, zeroed before.
    pub bad: u64,
}

/// Every block's V and T of `mats` matrices of order `n` (reversed when
/// `reverse`: the update then applies `Q_k`, not `Q_k^T`), and with `ops.q`
/// the columns of Q each block forms alone.
pub(crate) fn prepare(
    engine: &Engine,
    stream: &CudaStream,
    ops: Prepare,
    n: usize,
    mats: usize,
    reverse: bool,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], PREPARE)?;
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(mats.saturating_mul(blocks(n)))?, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let (n_i, rev) = (int(n)?, i32::from(reverse));
    let v_stride = v_floats(n) as i64;
    let mut b = stream.launch_builder(&f);
    b.arg(&ops.h)
        .arg(&ops.tau)
        .arg(&ops.v)
        .arg(&v_stride)
        .arg(&ops.t)
        .arg(&ops.q)
        .arg(&ops.bad)
        .arg(&n_i)
        .arg(&rev);
    // SAFETY: for each of the `mats` matrices the kernel reads its n x n H
    // and n taus, writes its V area (v_floats(n) floats at v_stride), its
    // blocks(n) T factors of 1024 floats, its flag in `bad` and, when `q`
    // is not null, its n x n Q: all buffers the caller sized for `mats`
    // matrices from these pointers.
    unsafe { b.launch(cfg) }.ctx("launching q_prepare_f32")?;
    Ok(())
}

/// `info` of `mats` results of `len` floats each at `out`, NaN-filling the
/// failed ones (q.cu's `q_finish_f32`); `cbad` 0 for `orgqr`.
pub(crate) fn finish(
    engine: &Engine,
    stream: &CudaStream,
    (out, len): (u64, usize),
    (bad, cbad, info): (u64, u64, u64),
    mats: usize,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], FINISH)?;
    let cfg = per_matrix(mats)?;
    let len = len as i64;
    let mut b = stream.launch_builder(&f);
    b.arg(&out).arg(&len).arg(&bad).arg(&cbad).arg(&info);
    // SAFETY: `out` holds mats * len floats, `bad` (and `cbad` and `info`
    // when not null) mats ints; block m touches only matrix m's.
    unsafe { b.launch(cfg) }.ctx("launching q_finish_f32")?;
    Ok(())
}

/// `cbad[m]` = whether matrix `m` of `c` (`len` floats each) is not finite.
pub(crate) fn scan(
    engine: &Engine,
    stream: &CudaStream,
    (c, len): (u64, usize),
    cbad: u64,
    mats: usize,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], SCAN)?;
    let cfg = per_matrix(mats)?;
    let len = len as i64;
    let mut b = stream.launch_builder(&f);
    b.arg(&c).arg(&len).arg(&cbad);
    // SAFETY: `c` holds mats * len floats and `cbad` mats ints.
    unsafe { b.launch(cfg) }.ctx("launching q_scan_f32")?;
    Ok(())
}

/// `R` = the upper triangle of each `H` of `shape`, NaN where `info` is
/// not 0.
pub(crate) fn upper(
    engine: &Engine,
    stream: &CudaStream,
    shape: Shape,
    (h, r, info): (u64, u64, u64),
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], UPPER)?;
    let slices = shape
        .matrix_len()
        .div_ceil(THREADS as usize * 16)
        .clamp(1, 1024);
    let cfg = LaunchConfig {
        grid_dim: (slices as u32, grid_dim(shape.batch())?, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let n = int(shape.n())?;
    let mut b = stream.launch_builder(&f);
    b.arg(&h).arg(&r).arg(&info).arg(&n);
    // SAFETY: `h` and `r` hold batch * n * n floats, `info` batch ints.
    unsafe { b.launch(cfg) }.ctx("launching q_upper_f32")?;
    Ok(())
}

/// `dst[m] = src[m]^T` for `mats` matrices of `rows x cols`.
pub(crate) fn transpose(
    engine: &Engine,
    stream: &CudaStream,
    (src, dst): (u64, u64),
    (rows, cols): (usize, usize),
    mats: usize,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], TRANSPOSE)?;
    let cfg = LaunchConfig {
        grid_dim: (
            grid_dim(cols.div_ceil(32))?,
            grid_dim(rows.div_ceil(32))?,
            grid_dim(mats)?,
        ),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let (r, c) = (int(rows)?, int(cols)?);
    let mut b = stream.launch_builder(&f);
    b.arg(&src).arg(&dst).arg(&r).arg(&c);
    // SAFETY: `src` and `dst` each hold mats * rows * cols floats and do
    // not overlap.
    unsafe { b.launch(cfg) }.ctx("launching q_transpose_f32")?;
    Ok(())
}

/// What `q_apply_f32` does to each 32-column tile it holds (`mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Apply {
    /// `orgqr`: tile `j` of `Q`, formed from the identity's columns by
    /// `Q_j`, ..., `Q_0`.
    Form = 0,
    /// `Q C`: `Q_{K-1}` first.
    Q = 1,
    /// `Q^T C`: `Q_0^T` first.
    Qt = 2,
}

/// Static shared memory of `q_apply_f32`: eight warps' 32 x 32 partials and
/// three 32 x 33 buffers (W, `op(T) W`, T).
const APPLY_STATIC_BYTES: usize = (8 * 1024 + 3 * 32 * 33) * 4;

/// Dynamic shared memory of `q_apply_f32` for order `n`: the tile, all `n`
/// rows (rounded up to 16) of 32 floats.
pub(crate) fn apply_bytes(n: usize) -> usize {
    n.next_multiple_of(16) * NB * 4
}

/// Whether `q_apply_f32`'s tile of order `n` fits in the `optin` bytes of
/// shared memory a block may have.
pub(crate) fn apply_fits(n: usize, optin: usize) -> bool {
    apply_bytes(n) + APPLY_STATIC_BYTES <= optin
}

/// Applies every block of reflectors of `mats` matrices of order `n` (V
/// and T at `v` and `t`, from [`prepare`] without `reverse`) to the
/// `cols` columns of each `c` (`c_stride` floats apart, leading dimension
/// `ld`), 32 columns a block held in shared memory, as `mode` says.
pub(crate) fn apply(
    engine: &Engine,
    stream: &CudaStream,
    (v, t, c): (u64, u64, u64),
    (c_stride, ld, cols): (usize, usize, usize),
    n: usize,
    mats: usize,
    mode: Apply,
) -> Result<(), QrError> {
    let f = engine.function(&SOURCE, &[], APPLY)?;
    let bytes = apply_bytes(n);
    super::raise_dynamic_smem(&f, bytes, APPLY)?;
    let tiles = cols.div_ceil(NB);
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(mats.saturating_mul(tiles))?, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: bytes as u32,
    };
    let (v_stride, c_stride) = (v_floats(n) as i64, c_stride as i64);
    let (ld, cols, n_i, mode) = (int(ld)?, int(cols)?, int(n)?, mode as i32);
    let mut b = stream.launch_builder(&f);
    b.arg(&v)
        .arg(&v_stride)
        .arg(&t)
        .arg(&c)
        .arg(&c_stride)
        .arg(&ld)
        .arg(&cols)
        .arg(&n_i)
        .arg(&mode);
    // SAFETY: for each of the `mats` matrices the kernel reads its V area
    // (v_floats(n) floats at v_stride) and its blocks(n) T factors, and
    // reads and writes rows 0..n, columns 0..cols of its C (c_stride
    // floats apart, leading dimension ld), all inside buffers the caller
    // sized for `mats` matrices; its dynamic shared memory is
    // `apply_bytes(n)`, within the limit just raised (the caller checked
    // `apply_fits`).
    unsafe { b.launch(cfg) }.ctx("launching q_apply_f32")?;
    Ok(())
}

fn per_matrix(mats: usize) -> Result<LaunchConfig, QrError> {
    Ok(LaunchConfig {
        grid_dim: (grid_dim(mats)?, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    })
}

fn int(x: usize) -> Result<i32, QrError> {
    i32::try_from(x).map_err(|_| QrError::Unsupported {
        message: format!("a dimension of {x} exceeds the Q kernels' int"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v_areas_hold_each_blocks_rows() {
        for n in [1, 31, 32, 33, 64, 100, 512, 4096] {
            let mut at = 0;
            for k in 0..blocks(n) {
                assert_eq!(v_offset(n, k), at, "n {n} block {k}");
                at += (n - NB * k) * NB;
            }
            assert_eq!(v_floats(n), at);
            // trailing_tc reads V with 16-byte loads.
            assert_eq!(v_floats(n) % 4, 0);
        }
    }

    #[test]
    fn the_on_chip_tile_fits_up_to_its_limit() {
        // 227 KiB a block (sm_90): up to n = 1456.
        let optin = 232_448;
        assert!(apply_fits(512, optin));
        assert!(apply_fits(1024, optin));
        assert!(apply_fits(1456, optin));
        assert!(!apply_fits(1457, optin));
        assert!(!apply_fits(2048, optin));
        // 99 KiB (sm_86): n = 432 at most.
        assert!(apply_fits(432, 101_376));
        assert!(!apply_fits(433, 101_376));
    }
}
