//! Forming `Q = H_0 H_1 ... H_{n-1}` from `geqrf`'s reflectors (LAPACK
//! `sorgqr` with `m = n = k`), row-major.
//!
//! Backward accumulation, as `sorgqr` does it: the last block of reflectors
//! is formed unblocked (`sorg2r`), then each earlier block `i..i+ib` is
//! applied as a compact-WY block reflector to `Q[i.., i..]`, which before
//! that application is `[[I, 0], [0, Q22]]`. Only the trailing part is ever
//! touched, so the cost is about `4/3 n^3` instead of the `2 n^3` of
//! applying every block to a full identity.

use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};
use qr_core::{Info, QrError, Reflectors};

use qr_core::all_finite;

use crate::isa::multiversion;
use crate::larft::larft_view;
use crate::tuning::QTuning;
use crate::update::for_column_chunks;
use crate::vector::axpy;

/// Scratch of one worker for `orgqr` or `ormqr` on matrices of one order,
/// reused for every matrix that worker handles.
#[derive(Debug, Default)]
pub(crate) struct QWorkspace {
    /// Dense column-major `V` of the current block (unit diagonal, zeros
    /// above), or every reflector of an unblocked right-side `ormqr`.
    pub(crate) v: Vec<f32>,
    /// The block reflector's triangular factor.
    pub(crate) t: Vec<f32>,
    /// Scratch of [`larft`].
    pub(crate) g: Vec<f32>,
    /// The products' `W` and `T W`, or the row vector of an unblocked pass.
    pub(crate) w: Vec<f32>,
    /// A transposed copy of `C`, for the passes that run faster on the
    /// other layout.
    pub(crate) c: Vec<f32>,
}

/// A zeroed buffer, or [`QrError::OutOfMemory`] instead of an abort: `ormqr`
/// sizes its scratch from a caller's `k`.
pub(crate) fn try_zeroed(len: usize) -> Result<Vec<f32>, QrError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| QrError::OutOfMemory {
        bytes: len.saturating_mul(std::mem::size_of::<f32>()),
        location: "host",
    })?;
    v.resize(len, 0.0);
    Ok(v)
}

impl QWorkspace {
    /// Scratch for a blocked pass with blocks of `nb` reflectors over
    /// matrices of order `n` whose products have `ncols` columns.
    pub(crate) fn blocked(n: usize, nb: usize, ncols: usize) -> Result<Self, QrError> {
        let nb = nb.min(n);
        let len = |a: usize, b: usize| {
            a.checked_mul(b).ok_or(QrError::OutOfMemory {
                bytes: usize::MAX,
                location: "host",
            })
        };
        Ok(Self {
            v: try_zeroed(len(n, nb)?)?,
            t: try_zeroed(nb * nb)?,
            g: try_zeroed(nb * nb)?,
            w: try_zeroed(len(2 * nb, ncols)?.max(nb))?,
            c: Vec::new(),
        })
    }

    /// Scratch for an unblocked pass: `v_len` for packed reflectors and
    /// `w_len` for one row.
    pub(crate) fn unblocked(v_len: usize, w_len: usize) -> Result<Self, QrError> {
        Ok(Self {
            v: try_zeroed(v_len)?,
            w: try_zeroed(w_len)?,
            ..Self::default()
        })
    }

    /// The same scratch with room for a transposed copy of `len` elements.
    pub(crate) fn with_copy(mut self, len: usize) -> Result<Self, QrError> {
        self.c = try_zeroed(len)?;
        Ok(self)
    }

    /// The scratch [`orgqr_matrix`] needs for order `n`.
    pub(crate) fn for_orgqr(n: usize, q: &QTuning) -> Result<Self, QrError> {
        if n <= q.orgqr_small_n {
            Self::unblocked(0, n)
        } else {
            Self::blocked(n, q.orgqr_block_for(n), n)
        }
    }
}

/// Forms the `Q` of one matrix (`h` row-major `n x n`, `n` scalars in `tau`)
/// into the row-major `q`, or fills `q` with NaN and says why. `ws` must come
/// from [`QWorkspace::for_orgqr`] with the same `n` and `qt`.
#[allow(clippy::too_many_arguments)] // the matrix, its scratch and its parallelism
pub(crate) fn orgqr_matrix(
    n: usize,
    h: &[f32],
    tau: &[f32],
    q: &mut [f32],
    qt: &QTuning,
    ws: &mut QWorkspace,
    par: Par,
    par_min: usize,
) -> Info {
    if !Reflectors::is_finite(h, tau, n) {
        q.fill(f32::NAN);
        return Info::NON_FINITE;
    }
    if n <= qt.orgqr_small_n {
        org2r_row_major(n, h, n, tau, q, n, &mut ws.w);
    } else {
        orgqr_blocked(n, h, tau, q, qt.orgqr_block_for(n), ws, par, par_min);
    }
    // Only reflectors far from geqrf's (|tau| or |v| huge) get here.
    if !all_finite(q) {
        q.fill(f32::NAN);
        return Info::OVERFLOW;
    }
    Info::OK
}

#[allow(clippy::too_many_arguments)] // the matrix, its scratch and its parallelism
fn orgqr_blocked(
    n: usize,
    h: &[f32],
    tau: &[f32],
    q: &mut [f32],
    nb: usize,
    ws: &mut QWorkspace,
    par: Par,
    par_min: usize,
) {
    let nb = nb.min(n);
    // The last block (full or partial) starts at kk and is formed unblocked.
    let kk = ((n - 1) / nb) * nb;
    org2r_row_major(
        n - kk,
        &h[kk * n + kk..],
        n,
        &tau[kk..],
        &mut q[kk * n + kk..],
        n,
        &mut ws.w,
    );
    for row in q[..kk * n].chunks_exact_mut(n) {
        row[kk..].fill(0.0);
    }
    for i in (0..kk).step_by(nb).rev() {
        let m = n - i;
        let vm = copy_v(h, n, i, nb, &mut ws.v);
        larft_view(vm, &tau[i..i + nb], &mut ws.t, nb, &mut ws.g);
        let tm = MatRef::from_column_major_slice(&ws.t[..nb * nb], nb, nb);
        // Q[i.., i..] as a row-major view (through the transpose of a
        // column-major one: see the faer note in docs/perf/qr-cpu.md).
        let c = MatMut::from_column_major_slice_with_stride_mut(&mut q[i * n + i..], m, m, n)
            .transpose_mut();
        let p = if m >= par_min { par } else { Par::Seq };
        apply_block_to_identity(vm, tm, c, &mut ws.w, p);
        for row in q[..i * n].chunks_exact_mut(n) {
            row[i..i + nb].fill(0.0);
        }
    }
}

/// `C = (I - V T V^T) [[I, 0], [0, C22]]` for the `m x m` block `C` whose
/// trailing `C22` (rows and columns `ib..`) holds the later blocks' product;
/// its first `ib` rows and columns are overwritten whatever they held. The
/// identity's rows and columns are not multiplied: `V^T` of them is `V1^T`.
fn apply_block_to_identity(
    v: MatRef<'_, f32>,
    t: MatRef<'_, f32>,
    c: MatMut<'_, f32>,
    scratch: &mut [f32],
    par: Par,
) {
    let (m, ib) = v.shape();
    let (first, rest) = scratch[..2 * ib * m].split_at_mut(2 * ib * ib);
    let (c_first, c_rest) = c.split_at_col_mut(ib);
    // Columns ..ib: [I; 0] - V (T V1^T).
    let (w, tw) = first.split_at_mut(ib * ib);
    let mut w = MatMut::from_column_major_slice_mut(w, ib, ib);
    let mut tw = MatMut::from_column_major_slice_mut(tw, ib, ib);
    for b in 0..ib {
        for a in 0..ib {
            w[(a, b)] = v[(b, a)];
        }
    }
    matmul(tw.rb_mut(), Accum::Replace, t, w.rb(), 1.0f32, Par::Seq);
    let mut c_first = c_first;
    c_first.fill(0.0);
    for d in 0..ib {
        c_first[(d, d)] = 1.0;
    }
    matmul(c_first, Accum::Add, v, tw.rb(), -1.0f32, Par::Seq);
    // Columns ib..: [0; C22] - V (T (V2^T C22)), split by columns. Each
    // chunk is multiplied through its column-major transpose `D = C^T`,
    // `D = [0, D22] - (D22 V2) T^T V^T`: faster than the row-major `C`
    // (table "orgqr / ormqr: layout" in docs/perf/qr-cpu.md).
    let v2 = v.submatrix(ib, 0, m - ib, ib);
    let apply = |c: MatMut<'_, f32>, s: &mut [f32]| {
        let mut d = c.transpose_mut();
        let rows = d.nrows();
        let (w, tw) = s[..2 * ib * rows].split_at_mut(ib * rows);
        let mut w = MatMut::from_column_major_slice_mut(w, rows, ib);
        let mut tw = MatMut::from_column_major_slice_mut(tw, rows, ib);
        matmul(
            w.rb_mut(),
            Accum::Replace,
            d.rb().submatrix(0, ib, rows, m - ib),
            v2,
            1.0f32,
            Par::Seq,
        );
        matmul(
            tw.rb_mut(),
            Accum::Replace,
            w.rb(),
            t.transpose(),
            1.0f32,
            Par::Seq,
        );
        d.rb_mut().submatrix_mut(0, 0, rows, ib).fill(0.0);
        matmul(d, Accum::Add, tw.rb(), v.transpose(), -1.0f32, Par::Seq);
    };
    for_column_chunks(c_rest, rest, 2 * ib, par.degree(), &apply);
}

/// The reflectors `i..i+nb` of the row-major `h` (order `n`) as a dense
/// `V` (`n - i` rows, unit diagonal, zeros above) in `v`, row-major, so that
/// the copy runs along `H`'s rows.
pub(crate) fn copy_v<'a>(
    h: &[f32],
    n: usize,
    i: usize,
    nb: usize,
    v: &'a mut [f32],
) -> MatRef<'a, f32> {
    let m = n - i;
    let v = &mut v[..m * nb];
    for (r, vr) in v.chunks_exact_mut(nb).enumerate() {
        let below = r.min(nb);
        vr[..below].copy_from_slice(&h[(i + r) * n + i..][..below]);
        if r < nb {
            vr[r] = 1.0;
            vr[r + 1..].fill(0.0);
        }
    }
    MatRef::from_row_major_slice(v, m, nb)
}

multiversion! {
    /// Forms `H_0 ... H_{m-1}` of the `m` reflectors stored below the
    /// diagonal of the row-major `h` (row stride `ldh`) into the row-major
    /// `m x m` block `q` (row stride `ldq`), every entry written, as LAPACK
    /// `sorg2r` does: reflector `j` (last first) is applied to the rows and
    /// columns from `j` on, which hold the product of the later ones.
    fn org2r_row_major(
        m: usize,
        h: &[f32],
        ldh: usize,
        tau: &[f32],
        q: &mut [f32],
        ldq: usize,
        w: &mut [f32],
    ) => org2r_row_major_body
}

#[inline(always)]
fn org2r_row_major_body(
    m: usize,
    h: &[f32],
    ldh: usize,
    tau: &[f32],
    q: &mut [f32],
    ldq: usize,
    w: &mut [f32],
) {
    for j in (0..m).rev() {
        let t = tau[j];
        let cols = m - j - 1;
        if t == 0.0 {
            q[j * ldq + j + 1..][..cols].fill(0.0);
            q[j * ldq + j] = 1.0;
            for i in j + 1..m {
                q[i * ldq + j] = 0.0;
            }
            continue;
        }
        if cols > 0 {
            // Row j of the columns from j+1 on is still zero, so
            // w = v^T Q[j.., j+1..] sums the rows below only. The rows are
            // swept from column c0 <= j+1, a multiple of 16, so that every
            // sweep is whole AVX-512 vectors when m is (no scalar tails):
            // columns c0..=j of the rows below j are rewritten by the
            // steps of their own reflectors later, whatever they hold now.
            let c0 = (j + 1) & !15;
            let wide = m - c0;
            let w = &mut w[..wide];
            w.fill(0.0);
            for i in j + 1..m {
                axpy(w, h[i * ldh + j], &q[i * ldq + c0..][..wide]);
            }
            for i in j + 1..m {
                axpy(&mut q[i * ldq + c0..][..wide], -t * h[i * ldh + j], w);
            }
            let w = &w[j + 1 - c0..];
            for (x, &y) in q[j * ldq + j + 1..][..cols].iter_mut().zip(w) {
                *x = -t * y;
            }
        }
        q[j * ldq + j] = 1.0 - t;
        for i in j + 1..m {
            q[i * ldq + j] = -t * h[i * ldh + j];
        }
    }
}
