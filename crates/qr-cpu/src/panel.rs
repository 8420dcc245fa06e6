//! Panel factorization: Householder QR of a tall column-major block.
//!
//! The blocked driver copies each panel (the current `nb` columns from the
//! diagonal down) into a column-major scratch, where every reflector's norm,
//! dot products and updates run along contiguous columns of length `m`.

use faer::linalg::matmul::matmul;
use faer::reborrow::{Reborrow, ReborrowMut};
use faer::{Accum, MatMut, MatRef, Par};

use crate::isa::multiversion;
use crate::larft::larft;
use crate::reflector::reflect_contiguous;
use crate::update::apply_block_reflector_left;
use crate::vector::{axpy, dot};

multiversion! {
    /// Factors the `m x k` column-major panel `p` (column stride `ldp`) in
    /// place into `geqrf` form (`R` on and above the diagonal, `v[1..]`
    /// below) with `min(m, k)` scalars in `tau`, one column at a time.
    ///
    /// # Panics
    /// If `ldp < m`, `p` is shorter than the panel or `tau` shorter than
    /// `min(m, k)`.
    pub fn panel_factor(m: usize, k: usize, p: &mut [f32], ldp: usize, tau: &mut [f32])
        => panel_factor_body
}

#[inline(always)]
pub(crate) fn panel_factor_body(m: usize, k: usize, p: &mut [f32], ldp: usize, tau: &mut [f32]) {
    let kk = m.min(k);
    if kk == 0 {
        return;
    }
    assert!(ldp >= m, "column stride {ldp} below the row count {m}");
    assert!(p.len() >= (k - 1) * ldp + m, "panel buffer too short");
    assert!(tau.len() >= kk, "tau shorter than min(m, k)");
    for j in 0..kk {
        let (left, right) = p.split_at_mut(((j + 1) * ldp).min(p.len()));
        let col = &mut left[j * ldp + j..j * ldp + m];
        let t = reflect_contiguous(col);
        tau[j] = t;
        if t == 0.0 {
            continue;
        }
        let v = &col[1..];
        for c in 0..k - j - 1 {
            let ac = &mut right[c * ldp + j..c * ldp + m];
            let (head, tail) = ac.split_first_mut().expect("column has a diagonal entry");
            let s = t * (*head + dot(v, tail));
            *head -= s;
            axpy(tail, -s, v);
        }
    }
}

/// Scratch, in `f32`s, that [`panel_factor_wy`] needs for `k` columns.
pub fn panel_factor_wy_scratch(k: usize) -> usize {
    2 * k * k
}

/// Factors the `m x k` column-major panel `p` (column stride `ldp`, `m >= k`)
/// like [`panel_factor`], and also returns its compact-WY form: the dense
/// `V` in `v` (`m x k`, column stride `ldv`, unit diagonal, zeros above) and
/// the upper triangular `T` in `t` (`k x k`, column stride `ldt`).
///
/// Panels wider than `leaf` columns are split in two (Elmroth and
/// Gustavson's recursive QR): factor the left half, apply its block
/// reflector to the right half with matrix products, factor the right half,
/// and join the two `T`s with `T12 = -T1 (V1^T V2) T2`. Most of the panel's
/// flops then run in faer's products instead of column-by-column loops.
/// Leaves use the column loop and [`larft`](crate::kernels::larft). The
/// reflectors are the same as the column loop's, to rounding.
///
/// # Panics
/// If `m < k`, a stride is below its column length, or a buffer is shorter
/// than the sizes say.
#[allow(clippy::too_many_arguments)] // LAPACK's argument list, strides included
pub fn panel_factor_wy(
    m: usize,
    k: usize,
    p: &mut [f32],
    ldp: usize,
    tau: &mut [f32],
    v: &mut [f32],
    ldv: usize,
    t: &mut [f32],
    ldt: usize,
    scratch: &mut [f32],
    leaf: usize,
) {
    if k == 0 {
        return;
    }
    assert!(
        m >= k && ldp >= m && ldv >= m && ldt >= k,
        "inconsistent panel sizes"
    );
    assert!(p.len() >= (k - 1) * ldp + m && v.len() >= (k - 1) * ldv + m);
    assert!(t.len() >= (k - 1) * ldt + k && scratch.len() >= panel_factor_wy_scratch(k));
    if k <= leaf.max(1) {
        panel_factor(m, k, p, ldp, tau);
        for c in 0..k {
            let col = &mut v[c * ldv..c * ldv + m];
            col[..c].fill(0.0);
            col[c] = 1.0;
            col[c + 1..].copy_from_slice(&p[c * ldp + c + 1..c * ldp + m]);
        }
        larft(m, k, v, ldv, tau, t, ldt, scratch);
        return;
    }
    // Split at a multiple of 8 when possible, so leaves stay vector-friendly.
    let k1 = if k >= 16 {
        (k / 2).div_ceil(8) * 8
    } else {
        k / 2
    };
    let k2 = k - k1;
    panel_factor_wy(m, k1, p, ldp, tau, v, ldv, t, ldt, scratch, leaf);
    {
        let v1 = MatRef::from_column_major_slice_with_stride(&v[..(k1 - 1) * ldv + m], m, k1, ldv);
        let t1 =
            MatRef::from_column_major_slice_with_stride(&t[..(k1 - 1) * ldt + k1], k1, k1, ldt);
        let c = MatMut::from_column_major_slice_with_stride_mut(
            &mut p[k1 * ldp..(k - 1) * ldp + m],
            m,
            k2,
            ldp,
        );
        apply_block_reflector_left(v1, t1, c, scratch, Par::Seq);
    }
    // The right half: rows k1.. of columns k1.., its V and T in place.
    let (v_left, v_right) = v.split_at_mut(k1 * ldv);
    let (t_left, t_right) = t.split_at_mut(k1 * ldt);
    panel_factor_wy(
        m - k1,
        k2,
        &mut p[k1 * ldp + k1..],
        ldp,
        &mut tau[k1..],
        &mut v_right[k1..],
        ldv,
        &mut t_right[k1..],
        ldt,
        scratch,
        leaf,
    );
    for c in 0..k2 {
        v_right[c * ldv..c * ldv + k1].fill(0.0);
    }
    // T12 = -T1 (V1^T V2) T2, with V2 zero in its first k1 rows.
    let (x, y) = scratch[..2 * k1 * k2].split_at_mut(k1 * k2);
    let mut x = MatMut::from_column_major_slice_mut(x, k1, k2);
    let mut y = MatMut::from_column_major_slice_mut(y, k1, k2);
    let v1b = MatRef::from_column_major_slice_with_stride(
        &v_left[k1..(k1 - 1) * ldv + m],
        m - k1,
        k1,
        ldv,
    );
    let v2b = MatRef::from_column_major_slice_with_stride(
        &v_right[k1..(k2 - 1) * ldv + m],
        m - k1,
        k2,
        ldv,
    );
    matmul(
        x.rb_mut(),
        Accum::Replace,
        v1b.transpose(),
        v2b,
        1.0f32,
        Par::Seq,
    );
    let t1 =
        MatRef::from_column_major_slice_with_stride(&t_left[..(k1 - 1) * ldt + k1], k1, k1, ldt);
    matmul(y.rb_mut(), Accum::Replace, t1, x.rb(), 1.0f32, Par::Seq);
    // T2 and T12 share columns of `t`, so the product goes through `x`
    // (free again once `y` holds T1 X) and is copied into place.
    let t2 = MatRef::from_column_major_slice_with_stride(
        &t_right[k1..(k2 - 1) * ldt + k1 + k2],
        k2,
        k2,
        ldt,
    );
    matmul(x.rb_mut(), Accum::Replace, y.rb(), t2, -1.0f32, Par::Seq);
    for c in 0..k2 {
        for r in 0..k1 {
            t_right[c * ldt + r] = x[(r, c)];
        }
    }
    for c in 0..k1 {
        t_left[c * ldt + k1..c * ldt + k].fill(0.0);
    }
}
