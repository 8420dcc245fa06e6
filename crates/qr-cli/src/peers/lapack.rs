//! LAPACK `sgeqrf` through the system OpenBLAS as a peer (feature `lapack`).
//!
//! This is the reference implementation of the contract itself, so its
//! output is exact `geqrf` form (transposed back to row-major). OpenBLAS has
//! its own thread pool: the `-batch` configuration sets it to one thread
//! and runs matrices on rayon; `-inner` gives OpenBLAS every core and runs
//! the matrices in order. The thread count is process-wide state, set at
//! the start of each call; `qr bench` runs one backend at a time.
#![allow(unsafe_code)]

use std::os::raw::c_int;

use qr_core::{Backend, BatchMut, BatchRef, QrError};

use super::{Spread, for_each_matrix, transpose_into};

// Linking the system libopenblas here also provides `sgeqrf_`, which the
// `lapack` crate declares but does not link.
#[link(name = "openblas")]
unsafe extern "C" {
    /// OpenBLAS's thread-count setter (in every OpenBLAS build).
    fn openblas_set_num_threads(num_threads: c_int);
}

/// OpenBLAS's `sgeqrf` on every matrix, spread over the cores as [`Spread`] says.
#[derive(Clone, Debug)]
pub struct LapackPeer {
    spread: Spread,
    name: String,
}

impl LapackPeer {
    /// The peer in configuration `spread` (named `lapack-batch`, `lapack-inner`).
    pub fn new(spread: Spread) -> Self {
        Self {
            spread,
            name: format!("lapack-{}", spread.suffix()),
        }
    }
}

impl Backend for LapackPeer {
    fn name(&self) -> &str {
        &self.name
    }

    fn describe(&self) -> String {
        match self.spread {
            Spread::Batch => "OpenBLAS sgeqrf, 1 thread per matrix, rayon across the batch".into(),
            Spread::Inner => "OpenBLAS sgeqrf, matrices in order, OpenBLAS threads inside".into(),
        }
    }

    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError> {
        let n = a.shape().n();
        let n_i32 = i32::try_from(n).map_err(|_| QrError::Unsupported {
            message: format!("LAPACK takes 32-bit sizes; n = {n} is too large"),
        })?;
        let threads = match self.spread {
            Spread::Batch => 1,
            Spread::Inner => rayon::current_num_threads(),
        };
        // SAFETY: a plain setter with no preconditions; OpenBLAS reads the
        // value at its next parallel region.
        unsafe { openblas_set_num_threads(c_int::try_from(threads).unwrap_or(1)) };
        let failed = std::sync::atomic::AtomicI32::new(0);
        for_each_matrix(a, out, self.spread, |a, h, tau| {
            let info = sgeqrf(n, n_i32, a, h, tau);
            if info != 0 {
                failed.store(info, std::sync::atomic::Ordering::Relaxed);
            }
        });
        match failed.into_inner() {
            0 => Ok(()),
            info => Err(QrError::Backend {
                backend: self.name.clone(),
                message: format!("sgeqrf returned info = {info}"),
            }),
        }
    }
}

/// Factors the row-major `a` with `sgeqrf` into row-major `h` and `tau`;
/// returns LAPACK's `info`.
fn sgeqrf(n: usize, n_i32: i32, a: &[f32], h: &mut [f32], tau: &mut [f32]) -> i32 {
    let mut col_major = vec![0.0f32; n * n];
    transpose_into(n, a, &mut col_major);
    let lda = n_i32.max(1);
    let (mut info, mut query) = (0, [0.0f32]);
    // SAFETY: lwork = -1 is a workspace query: LAPACK writes the optimal
    // size to `query[0]` and touches nothing else; `a` is n x n with lda >= n.
    unsafe {
        lapack::sgeqrf(
            n_i32,
            n_i32,
            &mut col_major,
            lda,
            tau,
            &mut query,
            -1,
            &mut info,
        );
    }
    if info != 0 {
        return info;
    }
    let lwork = (query[0] as usize).max(n.max(1));
    let mut work = vec![0.0f32; lwork];
    let lwork_i32 = i32::try_from(lwork).unwrap_or(i32::MAX);
    // SAFETY: `col_major` holds n x n with lda >= max(1, n), `tau` holds n,
    // `work` holds lwork >= max(1, n) elements, as sgeqrf requires.
    unsafe {
        lapack::sgeqrf(
            n_i32,
            n_i32,
            &mut col_major,
            lda,
            tau,
            &mut work,
            lwork_i32,
            &mut info,
        );
    }
    transpose_into(n, &col_major, h);
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::test_support::assert_peer_meets_bar;

    #[test]
    fn lapack_output_is_geqrf_form() {
        for n in [1, 2, 31, 64, 129] {
            assert_peer_meets_bar(&LapackPeer::new(Spread::Batch), n);
            assert_peer_meets_bar(&LapackPeer::new(Spread::Inner), n);
        }
    }
}
