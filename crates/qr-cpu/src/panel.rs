//! Panel factorization: Householder QR of a tall column-major block.
//!
//! The blocked driver copies each panel (the current `nb` columns from the
//! diagonal down) into a column-major scratch, where every reflector's norm,
//! dot products and updates run along contiguous columns of length `m`.

use crate::isa::multiversion;
use crate::reflector::reflect_contiguous;
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
        let (left, right) = p.split_at_mut((j + 1) * ldp);
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
