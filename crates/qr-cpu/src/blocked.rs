//! The blocked driver (LAPACK `geqrf`'s structure): panel, `T`, trailing
//! update, panel after panel, on a row-major matrix held in `H`.

use faer::reborrow::ReborrowMut;
use faer::{MatMut, MatRef, Par};
use qr_core::Info;

use crate::panel::{panel_factor_wy, panel_factor_wy_scratch};
use crate::tuning::Tuning;
use crate::unblocked::{geqr2_row_major, geqr2_row_major_scratch};
use crate::update::{apply_block_reflector_left, apply_block_reflector_left_scratch};

/// Scratch of one worker, sized for one order `n` and reused for every
/// matrix that worker factors.
#[derive(Debug, Default)]
pub(crate) struct Workspace {
    /// Column-major copy of the current panel.
    panel: Vec<f32>,
    /// The reflectors of the current and of the next panel as dense `V`s
    /// (unit diagonal, zeros above).
    v: [Vec<f32>; 2],
    /// The block reflectors' triangular factors, current and next.
    t: [Vec<f32>; 2],
    /// Scratch of the panel factorization.
    panel_scratch: Vec<f32>,
    /// Scratch of the trailing update.
    update: Vec<f32>,
    /// Scratch of the unblocked small-order path.
    small: Vec<f32>,
}

impl Workspace {
    /// Scratch for matrices of order `n` under `tuning`.
    pub(crate) fn new(n: usize, tuning: &Tuning) -> Self {
        if n <= tuning.small_n {
            return Self {
                small: vec![0.0; geqr2_row_major_scratch(n, n)],
                ..Self::default()
            };
        }
        let nb = tuning.block_for(n).min(n);
        Self {
            panel: vec![0.0; n * nb],
            v: [vec![0.0; n * nb], vec![0.0; n * nb]],
            t: [vec![0.0; nb * nb], vec![0.0; nb * nb]],
            panel_scratch: vec![0.0; panel_factor_wy_scratch(nb)],
            update: vec![0.0; apply_block_reflector_left_scratch(nb, n)],
            small: Vec::new(),
        }
    }
}

/// Factors the row-major `n x n` matrix `a` into `h` and `tau`, or flags it,
/// `h` and `tau` all NaN: `Info::NON_FINITE` when it holds a NaN or an
/// infinity, `Info::OVERFLOW` when its `R` does not fit `f32` (the only
/// factor that can: `|v_i| <= 1` and `tau` is in `[0, 2]`). `ws` must come
/// from [`Workspace::new`] with the same `n`.
///
/// The `f32` pass can overflow in an intermediate (`v^T C`, `T^T W`, a
/// partial sum: up to about twice a column norm) while `R` still fits, as
/// LAPACK's `sgeqrf` does. A matrix whose pass is not finite is therefore
/// factored again scaled by `2^-s` (exact, but for entries pushed below the
/// normal range), and its `R` scaled back by `2^s`; only an `R` that then
/// overflows is `OVERFLOW`. Matrices whose first pass is finite, the normal
/// case, are untouched by this and cost one `O(n^2)` check.
pub(crate) fn factor_matrix(
    n: usize,
    a: &[f32],
    h: &mut [f32],
    tau: &mut [f32],
    tuning: &Tuning,
    ws: &mut Workspace,
    par: Par,
) -> Info {
    if !a.iter().all(|x| x.is_finite()) {
        h.fill(f32::NAN);
        tau.fill(f32::NAN);
        return Info::NON_FINITE;
    }
    h.copy_from_slice(a);
    factor_in_place(n, h, tau, tuning, ws, par);
    if all_finite(h, tau) {
        return Info::OK;
    }
    let s = down_scale_exponent(a);
    if s > 0 {
        scale_down_into(a, h, s);
        factor_in_place(n, h, tau, tuning, ws, par);
        scale_r_up(n, h, s);
        if all_finite(h, tau) {
            return Info::OK;
        }
    }
    h.fill(f32::NAN);
    tau.fill(f32::NAN);
    Info::OVERFLOW
}

/// `||A||_F` that the scaled retry brings a matrix down to (at most): every
/// intermediate of the factorization is then within a small multiple of
/// `2^100`, far below `f32::MAX` (`2^128`) at any order, while the entries
/// it pushes below the normal range are under `2^-225` of `||A||_F`.
const SCALED_NORM_EXP: i32 = 100;

fn all_finite(h: &[f32], tau: &[f32]) -> bool {
    // O(n^2) beside the O(n^3) factorization.
    qr_core::all_finite(h) && qr_core::all_finite(tau)
}

fn factor_in_place(
    n: usize,
    h: &mut [f32],
    tau: &mut [f32],
    tuning: &Tuning,
    ws: &mut Workspace,
    par: Par,
) {
    if n <= tuning.small_n {
        geqr2_row_major(n, n, h, n, tau, &mut ws.small);
    } else {
        blocked(n, h, tau, tuning, ws, par);
    }
}

/// The smallest `s >= 0` with `||A||_F 2^-s <= 2^SCALED_NORM_EXP`. The sum
/// of squares is formed in `f64`, where it cannot overflow.
fn down_scale_exponent(a: &[f32]) -> i32 {
    let ssq: f64 = a.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
    // log2 of the norm, rounded up; exact enough: one more halving is harmless.
    let e = (0.5 * ssq.log2()).ceil() as i32;
    (e - SCALED_NORM_EXP).max(0)
}

/// `h = a 2^-s`, except that a non-zero entry never becomes zero (it becomes
/// the smallest subnormal of its sign): which entries are exactly zero
/// decides `tau = 0`, and the scaled matrix keeps the same zero pattern.
fn scale_down_into(a: &[f32], h: &mut [f32], s: i32) {
    let f = 2f64.powi(-s);
    for (y, &x) in h.iter_mut().zip(a) {
        let z = (f64::from(x) * f) as f32;
        *y = if z == 0.0 && x != 0.0 {
            f32::from_bits(1).copysign(x)
        } else {
            z
        };
    }
}

/// `R = R 2^s` on and above the diagonal of the row-major `h`; an entry
/// that does not fit `f32` becomes infinite.
fn scale_r_up(n: usize, h: &mut [f32], s: i32) {
    let f = 2f64.powi(s);
    for i in 0..n {
        for x in &mut h[i * n + i..(i + 1) * n] {
            *x = (f64::from(*x) * f) as f32;
        }
    }
}

/// Panel after panel, with a look-ahead of one panel: once panel `i` is
/// factored, its block reflector is applied first to the columns of panel
/// `i + 1`, which is then factored while the rest of the trailing matrix is
/// updated. With inner parallelism the two run side by side (`rayon::join`),
/// so the serial panel hides behind the big update instead of leaving the
/// other cores idle; on one thread they run one after the other. The
/// arithmetic is the same either way.
fn blocked(
    n: usize,
    h: &mut [f32],
    tau: &mut [f32],
    tuning: &Tuning,
    ws: &mut Workspace,
    par: Par,
) {
    let nb = tuning.block_for(n).min(n);
    let leaf = tuning.panel_leaf;
    let Workspace {
        panel,
        v,
        t,
        panel_scratch,
        update,
        ..
    } = ws;
    let [v0, v1] = v;
    let [t0, t1] = t;
    let (mut v_cur, mut v_next) = (v0, v1);
    let (mut t_cur, mut t_next) = (t0, t1);
    let whole = MatMut::from_column_major_slice_mut(&mut h[..n * n], n, n).transpose_mut();
    let k0 = nb.min(n);
    let first = whole.submatrix_mut(0, 0, n, k0);
    factor_panel(
        first,
        panel,
        v_cur,
        t_cur,
        &mut tau[..k0],
        panel_scratch,
        leaf,
    );
    let mut j0 = 0;
    let mut k = k0;
    while j0 + k < n {
        let m = n - j0;
        let rest = n - j0 - k;
        let kn = nb.min(rest);
        let vm = MatRef::from_column_major_slice(&v_cur[..m * k], m, k);
        let tm = MatRef::from_column_major_slice(&t_cur[..k * k], k, k);
        // The trailing block, rows j0.. and columns j0+k.., of the row-major
        // matrix. (Built from the transposed column-major view: faer 0.24's
        // `from_row_major_slice_with_stride_mut` swaps the strides.)
        let c =
            MatMut::from_column_major_slice_with_stride_mut(&mut h[j0 * n + j0 + k..], rest, m, n)
                .transpose_mut();
        let (mut c_next, c_rest) = c.split_at_col_mut(kn);
        apply_block_reflector_left(vm, tm, c_next.rb_mut(), update, Par::Seq);
        let next = c_next.submatrix_mut(k, 0, m - k, kn);
        let tau_next = &mut tau[j0 + k..j0 + k + kn];
        let par_rest = if rest - kn >= tuning.par_update_min_cols {
            par
        } else {
            Par::Seq
        };
        let factor_next =
            || factor_panel(next, panel, v_next, t_next, tau_next, panel_scratch, leaf);
        let update_rest = || apply_block_reflector_left(vm, tm, c_rest, update, par_rest);
        match par_rest {
            Par::Seq => {
                factor_next();
                update_rest();
            }
            Par::Rayon(_) => {
                rayon::join(factor_next, update_rest);
            }
        }
        std::mem::swap(&mut v_cur, &mut v_next);
        std::mem::swap(&mut t_cur, &mut t_next);
        j0 += k;
        k = kn;
    }
}

/// Factors the `m x k` panel `a` (a view into `H`): copies it to the
/// column-major scratch `p`, factors it there into its reflectors, dense
/// `V` (in `v`, column stride `m`) and `T` (in `t`, column stride `k`), and
/// writes `R` and the reflectors back.
fn factor_panel(
    mut a: MatMut<'_, f32>,
    p: &mut [f32],
    v: &mut [f32],
    t: &mut [f32],
    tau: &mut [f32],
    scratch: &mut [f32],
    leaf: usize,
) {
    let (m, k) = a.shape();
    let p = &mut p[..m * k];
    // Row by row: `a` is a block of a row-major matrix.
    for i in 0..m {
        for c in 0..k {
            p[c * m + i] = a[(i, c)];
        }
    }
    panel_factor_wy(m, k, p, m, tau, &mut v[..m * k], m, t, k, scratch, leaf);
    for i in 0..m {
        for c in 0..k {
            a[(i, c)] = p[c * m + i];
        }
    }
}
