//! The blocked driver (LAPACK `geqrf`'s structure): panel, `T`, trailing
//! update, panel after panel, on a row-major matrix held in `H`.

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
    /// The panel's reflectors as a dense `V` (unit diagonal, zeros above).
    v: Vec<f32>,
    /// The block reflector's triangular factor.
    t: Vec<f32>,
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
            v: vec![0.0; n * nb],
            t: vec![0.0; nb * nb],
            panel_scratch: vec![0.0; panel_factor_wy_scratch(nb)],
            update: vec![0.0; apply_block_reflector_left_scratch(nb, n)],
            small: Vec::new(),
        }
    }
}

/// Factors the row-major `n x n` matrix `a` into `h` and `tau`, or flags it
/// (`Info::NON_FINITE`, `h` and `tau` all NaN) when it holds a NaN or an
/// infinity. `ws` must come from [`Workspace::new`] with the same `n`.
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
    if n <= tuning.small_n {
        geqr2_row_major(n, n, h, n, tau, &mut ws.small);
    } else {
        blocked(n, h, tau, tuning, ws, par);
    }
    Info::OK
}

/// Panel after panel: factor the panel in a column-major copy, write it
/// back, form `T`, apply `Q_panel^T` to the columns on its right.
fn blocked(
    n: usize,
    h: &mut [f32],
    tau: &mut [f32],
    tuning: &Tuning,
    ws: &mut Workspace,
    par: Par,
) {
    let nb = tuning.block_for(n).min(n);
    let mut j0 = 0;
    while j0 < n {
        let k = nb.min(n - j0);
        let m = n - j0;
        let p = &mut ws.panel[..m * k];
        gather_panel(h, n, j0, k, p);
        let v = &mut ws.v[..m * k];
        panel_factor_wy(
            m,
            k,
            p,
            m,
            &mut tau[j0..j0 + k],
            v,
            m,
            &mut ws.t,
            k,
            &mut ws.panel_scratch,
            tuning.panel_leaf,
        );
        scatter_panel(p, n, j0, k, h);
        let rest = n - j0 - k;
        if rest > 0 {
            let v = MatRef::from_column_major_slice(&*v, m, k);
            let t = MatRef::from_column_major_slice(&ws.t[..k * k], k, k);
            // The row-major trailing block, built as the transpose of a
            // column-major view: faer 0.24's
            // `from_row_major_slice_with_stride_mut` swaps the strides (it
            // returns the column-major reading), so it is avoided here.
            let c = MatMut::from_column_major_slice_with_stride_mut(
                &mut h[j0 * n + j0 + k..],
                rest,
                m,
                n,
            )
            .transpose_mut();
            let par = if rest >= tuning.par_update_min_cols {
                par
            } else {
                Par::Seq
            };
            apply_block_reflector_left(v, t, c, &mut ws.update, par);
        }
        j0 += k;
    }
}

/// Copies `H[j0.., j0..j0+k]` (row-major, stride `n`) into the column-major
/// `p` (column stride `n - j0`).
fn gather_panel(h: &[f32], n: usize, j0: usize, k: usize, p: &mut [f32]) {
    let m = n - j0;
    for i in 0..m {
        let row = &h[(j0 + i) * n + j0..][..k];
        for (c, &x) in row.iter().enumerate() {
            p[c * m + i] = x;
        }
    }
}

/// The inverse of [`gather_panel`].
fn scatter_panel(p: &[f32], n: usize, j0: usize, k: usize, h: &mut [f32]) {
    let m = n - j0;
    for i in 0..m {
        let row = &mut h[(j0 + i) * n + j0..][..k];
        for (c, x) in row.iter_mut().enumerate() {
            *x = p[c * m + i];
        }
    }
}
