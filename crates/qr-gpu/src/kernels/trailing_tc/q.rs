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
//! - `q_finish_f32(out, len, bad, cbad, obad, info)`: grid `(batch,
//!   slices)`; `obad` null only with one slice (the block scans itself).
//! - `q_scan_f32(c, len, flag)`: grid `(batch, slices)`, `flag` zeroed
//!   before.
//! - `q_upper_f32(h, r, info, n)`: grid `(slices, batch)`.
//! - `q_transpose_f32(src, dst, rows, cols)`: grid `(ceil(cols/32),
//!   ceil(rows/32), batch)`, block 256.
//! - `q_apply_f32(v, v_stride, t, c, c_stride, ld, cols, n, mode)`: grid
//!   `batch * ceil(cols / 32) * Q_CLUSTER`, block `THREADS`,
//!   [`apply_bytes`]`(n, Q_CLUSTER)` bytes of dynamic shared memory; `v`
//!   and `t` as `q_prepare_f32` writes them with `reverse` 0; `mode` an
//!   [`Apply`].
//!
//! One define, `Q_CLUSTER` (1, 2, 4 or 8): the blocks of a cluster that
//! share one tile's rows in `q_apply_f32`; the other kernels ignore it and
//! are loaded with 1.

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use qr_core::{QrError, Shape};

use crate::device::launch::Launch;
use crate::error::DriverContext;
use crate::kernels::{KernelSource, grid_dim, util};

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
    defines: &["Q_CLUSTER"],
};

/// The module's defines: `cluster` blocks a tile in `q_apply_f32`.
pub(crate) fn defines(cluster: u32) -> Vec<(String, String)> {
    vec![("Q_CLUSTER".to_string(), cluster.to_string())]
}

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
    k: &Launch,
    stream: &CudaStream,
    ops: Prepare,
    n: usize,
    mats: usize,
    reverse: bool,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &defines(1), PREPARE)?;
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
/// failed ones (q.cu's `q_finish_f32`); `cbad` 0 for `orgqr`. Matrices
/// long enough for several slices (`util::slices`) are scanned first by
/// [`scan`] into `obad` (`mats` ints, zeroed by the caller), so that a few
/// large results spread over the device; shorter ones are scanned by the
/// finishing block itself, in one launch.
pub(crate) fn finish(
    k: &Launch,
    stream: &CudaStream,
    (out, len): (u64, usize),
    (bad, cbad, obad, info): (u64, u64, u64, u64),
    mats: usize,
) -> Result<(), QrError> {
    let slices = util::slices(mats, len, k.info().sm_count);
    let obad = if slices > 1 {
        scan(k, stream, (out, len), obad, mats)?;
        obad
    } else {
        0
    };
    let f = k.function(&SOURCE, &defines(1), FINISH)?;
    let cfg = sliced(mats, slices)?;
    let len = len as i64;
    let mut b = stream.launch_builder(&f);
    b.arg(&out)
        .arg(&len)
        .arg(&bad)
        .arg(&cbad)
        .arg(&obad)
        .arg(&info);
    // SAFETY: `out` holds mats * len floats, `bad` (and `cbad`, `obad` and
    // `info` when not null) mats ints; block (m, s) writes only slice s of
    // matrix m's result and, for s = 0, info[m]. With one slice a matrix
    // (obad null) its block scans the whole result itself.
    unsafe { b.launch(cfg) }.ctx("launching q_finish_f32")?;
    Ok(())
}

/// `flag[m]` = 1 where matrix `m` of `c` (`len` floats each) is not
/// finite; the `mats` flags are zeroed by the caller.
pub(crate) fn scan(
    k: &Launch,
    stream: &CudaStream,
    (c, len): (u64, usize),
    flag: u64,
    mats: usize,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &defines(1), SCAN)?;
    let cfg = sliced(mats, util::slices(mats, len, k.info().sm_count))?;
    let len = len as i64;
    let mut b = stream.launch_builder(&f);
    b.arg(&c).arg(&len).arg(&flag);
    // SAFETY: `c` holds mats * len floats and `flag` mats ints; block (m,
    // s) reads slice s of matrix m and may raise flag[m] only.
    unsafe { b.launch(cfg) }.ctx("launching q_scan_f32")?;
    Ok(())
}

/// `R` = the upper triangle of each `H` of `shape`, NaN where `info` is
/// not 0.
pub(crate) fn upper(
    k: &Launch,
    stream: &CudaStream,
    shape: Shape,
    (h, r, info): (u64, u64, u64),
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &defines(1), UPPER)?;
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
    k: &Launch,
    stream: &CudaStream,
    (src, dst): (u64, u64),
    (rows, cols): (usize, usize),
    mats: usize,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &defines(1), TRANSPOSE)?;
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
/// three 32 x 33 buffers (W twice, `op(T) W`).
const APPLY_STATIC_BYTES: usize = (8 * 1024 + 3 * 32 * 33) * 4;

/// Rows of a tile one block of a `cluster` holds: `n / cluster` rounded up
/// to whole 16-row slabs.
fn share(n: usize, cluster: u32) -> usize {
    n.div_ceil(cluster.max(1) as usize).next_multiple_of(16)
}

/// Dynamic shared memory of `q_apply_f32` for order `n` over `cluster`
/// blocks a tile: a block's rows of the tile (32 floats each), then T
/// (32 x 33).
pub(crate) fn apply_bytes(n: usize, cluster: u32) -> usize {
    (share(n, cluster) * NB + 32 * 33) * 4
}

/// The fewest blocks of a cluster (1, 2, 4 or 8, at most `most`) among
/// which `q_apply_f32`'s tile of order `n` fits the `optin` bytes of shared
/// memory a block may have, or `None` where it does not fit over `most`.
pub(crate) fn apply_cluster(n: usize, optin: usize, most: u32) -> Option<u32> {
    [1, 2, 4, 8]
        .into_iter()
        .filter(|&c| c <= most)
        .find(|&c| apply_bytes(n, c) + APPLY_STATIC_BYTES <= optin)
}

/// Applies every block of reflectors of `mats` matrices of order `n` (V
/// and T at `v` and `t`, from [`prepare`] without `reverse`) to the
/// `cols` columns of each `c` (`c_stride` floats apart, leading dimension
/// `ld`), 32 columns a tile held in the shared memory of a cluster of
/// `cluster` blocks (from [`apply_cluster`]), as `mode` says.
pub(crate) fn apply(
    k: &Launch,
    stream: &CudaStream,
    (v, t): (u64, u64),
    (c, (c_stride, ld, cols)): (u64, (usize, usize, usize)),
    (n, mats, cluster): (usize, usize, u32),
    mode: Apply,
) -> Result<(), QrError> {
    let f = k.function(&SOURCE, &defines(cluster), APPLY)?;
    let bytes = apply_bytes(n, cluster);
    crate::kernels::raise_dynamic_smem(&f, bytes, APPLY)?;
    let tiles = cols.div_ceil(NB);
    let blocks = mats.saturating_mul(tiles).saturating_mul(cluster as usize);
    let cfg = LaunchConfig {
        grid_dim: (grid_dim(blocks)?, 1, 1),
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
    // `apply_bytes(n, cluster)`, within the limit just raised (the caller
    // checked `apply_cluster`). The grid is `cluster` consecutive blocks per
    // tile and the kernel's compile-time cluster size is `cluster`, so a
    // cluster is one tile and divides the grid.
    unsafe { b.launch(cfg) }.ctx("launching q_apply_f32")?;
    Ok(())
}

/// Matrices on x (whose limit is 2^31 - 1 rather than y's 65535), slices
/// of each on y.
fn sliced(mats: usize, slices: u32) -> Result<LaunchConfig, QrError> {
    Ok(LaunchConfig {
        grid_dim: (grid_dim(mats)?, slices, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    })
}

fn int(x: usize) -> Result<i32, QrError> {
    crate::kernels::kernel_int(x, "Q")
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
    fn the_on_chip_tile_takes_the_fewest_blocks_it_fits() {
        // 227 KiB a block (sm_90): one block up to n = 1424, clusters past.
        let optin = 232_448;
        assert_eq!(apply_cluster(512, optin, 8), Some(1));
        assert_eq!(apply_cluster(1024, optin, 8), Some(1));
        assert_eq!(apply_cluster(1424, optin, 8), Some(1));
        assert_eq!(apply_cluster(1425, optin, 8), Some(2));
        assert_eq!(apply_cluster(2048, optin, 8), Some(2));
        assert_eq!(apply_cluster(4096, optin, 8), Some(4));
        assert_eq!(apply_cluster(8 * 1424, optin, 8), Some(8));
        assert_eq!(apply_cluster(8 * 1424 + 1, optin, 8), None);
        // Without clusters (before sm_90) one block or none; 0: never.
        assert_eq!(apply_cluster(1425, optin, 1), None);
        assert_eq!(apply_cluster(4096, optin, 2), None);
        assert_eq!(apply_cluster(32, optin, 0), None);
        // 99 KiB (sm_86): n = 400 at most.
        assert_eq!(apply_cluster(400, 101_376, 1), Some(1));
        assert_eq!(apply_cluster(401, 101_376, 1), None);
        // Every block of a cluster holds whole slabs and the tile.
        for n in [1, 15, 17, 1000, 1425, 4095, 4096] {
            for c in [1, 2, 4, 8] {
                assert_eq!(share(n, c) % 16, 0);
                assert!(share(n, c) * c as usize >= n);
            }
        }
    }
}
