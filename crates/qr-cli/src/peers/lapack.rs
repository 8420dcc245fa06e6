//! LAPACK `sgeqrf`, `sorgqr` and `sormqr` through the system OpenBLAS as a
//! peer (feature `lapack`).
//!
//! This is the reference implementation of the contract itself, so its
//! output is exact `geqrf` form (transposed back to row-major), and its
//! `orgqr`/`ormqr` take `(H, tau)` as ours do. OpenBLAS has
//! its own thread pool: the `-batch` configuration sets it to one thread
//! and runs matrices on rayon; `-inner` gives OpenBLAS every core and runs
//! the matrices in order. The thread count is process-wide state, set at
//! the start of each call; `qr bench` runs one backend at a time.
#![allow(unsafe_code)]

use std::os::raw::c_int;

use std::sync::atomic::{AtomicI32, Ordering};

use qr_core::{ApplyQ, Backend, BatchMut, BatchRef, Info, QrError, Reflectors, Side, Transpose};
use rayon::prelude::*;

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
            Spread::Batch => {
                "OpenBLAS sgeqrf/sorgqr/sormqr, 1 thread per matrix, rayon across the batch".into()
            }
            Spread::Inner => {
                "OpenBLAS sgeqrf/sorgqr/sormqr, matrices in order, OpenBLAS threads inside".into()
            }
        }
    }

    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError> {
        let n = a.shape().n();
        let n_i32 = lapack_size(n)?;
        self.set_threads();
        let failed = AtomicI32::new(0);
        for_each_matrix(a, out, self.spread, |a, h, tau| {
            let info = sgeqrf(n, n_i32, a, h, tau);
            if info != 0 {
                failed.store(info, Ordering::Relaxed);
            }
        });
        self.check("sgeqrf", failed)
    }

    fn orgqr_into(
        &self,
        f: Reflectors<'_>,
        q: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = f.shape();
        qr_core::Shape::check_len("q", shape.a_len(), q.len())?;
        qr_core::Shape::check_len("info", shape.info_len(), info.len())?;
        let n = shape.n();
        let n_i32 = lapack_size(n)?;
        self.set_threads();
        let failed = AtomicI32::new(0);
        self.for_each_reflectors(f, q, n * n, info, |h, tau, q| {
            let code = sorgqr(n, n_i32, h, tau, q);
            if code != 0 {
                failed.store(code, Ordering::Relaxed);
            }
        });
        self.check("sorgqr", failed)
    }

    fn ormqr_into(
        &self,
        f: Reflectors<'_>,
        op: ApplyQ,
        k: usize,
        c: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = f.shape();
        ApplyQ::check(shape, k, c.len(), info.len())?;
        let n = shape.n();
        let (n_i32, k_i32) = (lapack_size(n)?, lapack_size(k)?);
        self.set_threads();
        let failed = AtomicI32::new(0);
        self.for_each_reflectors(f, c, n * k, info, |h, tau, c| {
            let code = sormqr(op, n, n_i32, k_i32, h, tau, c);
            if code != 0 {
                failed.store(code, Ordering::Relaxed);
            }
        });
        self.check("sormqr", failed)
    }
}

impl LapackPeer {
    /// OpenBLAS's threads for this configuration, set before each call.
    fn set_threads(&self) {
        let threads = match self.spread {
            Spread::Batch => 1,
            Spread::Inner => rayon::current_num_threads(),
        };
        // SAFETY: a plain setter with no preconditions; OpenBLAS reads the
        // value at its next parallel region.
        unsafe { openblas_set_num_threads(c_int::try_from(threads).unwrap_or(1)) };
    }

    /// A LAPACK `info` other than 0 is a misuse of LAPACK by this peer.
    fn check(&self, routine: &str, failed: AtomicI32) -> Result<(), QrError> {
        match failed.into_inner() {
            0 => Ok(()),
            info => Err(QrError::Backend {
                backend: self.name.clone(),
                message: format!("{routine} returned info = {info}"),
            }),
        }
    }

    /// Runs `apply(h_b, tau_b, out_b)` for every matrix of `f`, `out` cut
    /// into pieces of `chunk`, spread as the configuration says. Reflectors
    /// holding a NaN or an infinity are not passed to LAPACK: that matrix
    /// gets `Info::NON_FINITE` and NaN, as the contract says.
    fn for_each_reflectors<F>(
        &self,
        f: Reflectors<'_>,
        out: &mut [f32],
        chunk: usize,
        info: &mut [Info],
        apply: F,
    ) where
        F: Fn(&[f32], &[f32], &mut [f32]) + Sync,
    {
        let n = f.shape().n();
        let one = |b: usize, out: &mut [f32], info: &mut Info| {
            let (h, tau) = (
                &f.h()[b * n * n..(b + 1) * n * n],
                &f.tau()[b * n..(b + 1) * n],
            );
            if Reflectors::is_finite(h, tau, n) {
                apply(h, tau, out);
                *info = Info::OK;
            } else {
                out.fill(f32::NAN);
                *info = Info::NON_FINITE;
            }
        };
        if n == 0 {
            return;
        }
        if chunk == 0 {
            // k = 0: nothing to compute, but the reflectors are still judged.
            info.iter_mut()
                .enumerate()
                .for_each(|(b, i)| one(b, &mut [], i));
            return;
        }
        match self.spread {
            Spread::Batch => out
                .par_chunks_mut(chunk)
                .zip(info.par_iter_mut())
                .enumerate()
                .for_each(|(b, (o, i))| one(b, o, i)),
            Spread::Inner => out
                .chunks_mut(chunk)
                .zip(info.iter_mut())
                .enumerate()
                .for_each(|(b, (o, i))| one(b, o, i)),
        }
    }
}

/// `n` as LAPACK's 32-bit integer, or why not.
fn lapack_size(n: usize) -> Result<i32, QrError> {
    i32::try_from(n).map_err(|_| QrError::Unsupported {
        message: format!("LAPACK takes 32-bit sizes; {n} is too large"),
    })
}

/// `sorgqr` of the row-major reflectors `h` into the row-major `q`;
/// returns LAPACK's `info`.
fn sorgqr(n: usize, n_i32: i32, h: &[f32], tau: &[f32], q: &mut [f32]) -> i32 {
    let mut col_major = vec![0.0f32; n * n];
    transpose_into(n, h, &mut col_major);
    let lda = n_i32.max(1);
    let (mut info, mut query) = (0, [0.0f32]);
    // SAFETY: lwork = -1 is a workspace query: LAPACK writes the optimal
    // size to `query[0]` and touches nothing else.
    unsafe {
        lapack::sorgqr(
            n_i32,
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
    // SAFETY: `col_major` is n x n with lda >= max(1, n), `tau` holds
    // k = n values, `work` holds lwork >= max(1, n), as sorgqr requires.
    unsafe {
        lapack::sorgqr(
            n_i32,
            n_i32,
            n_i32,
            &mut col_major,
            lda,
            tau,
            &mut work,
            i32::try_from(lwork).unwrap_or(i32::MAX),
            &mut info,
        );
    }
    transpose_into(n, &col_major, q);
    info
}

/// `sormqr` on the row-major `c` (`n x k` on the left, `k x n` on the
/// right) without transposing it: row-major `C` is column-major `C^T`, and
/// `op(Q) C = (C^T op(Q)^T)^T`, `C op(Q) = (op(Q)^T C^T)^T`, so LAPACK
/// applies the other side and the other transpose to the buffer as it is.
/// Returns LAPACK's `info`.
fn sormqr(
    op: ApplyQ,
    n: usize,
    n_i32: i32,
    k_i32: i32,
    h: &[f32],
    tau: &[f32],
    c: &mut [f32],
) -> i32 {
    let mut col_major = vec![0.0f32; n * n];
    transpose_into(n, h, &mut col_major);
    let trans = match op.transpose {
        Transpose::No => b'T',
        Transpose::Yes => b'N',
    };
    // (side, rows, cols) of the column-major C^T LAPACK sees.
    let (side, m, cols) = match op.side {
        Side::Left => (b'R', k_i32, n_i32),
        Side::Right => (b'L', n_i32, k_i32),
    };
    let (lda, ldc) = (n_i32.max(1), m.max(1));
    let (mut info, mut query) = (0, [0.0f32]);
    // SAFETY: lwork = -1 is a workspace query: LAPACK writes the optimal
    // size to `query[0]` and touches nothing else.
    unsafe {
        lapack::sormqr(
            side, trans, m, cols, n_i32, &col_major, lda, tau, c, ldc, &mut query, -1, &mut info,
        );
    }
    if info != 0 {
        return info;
    }
    let lwork = (query[0] as usize)
        .max(n.max(1))
        .max(usize::try_from(m.max(cols)).unwrap_or(1));
    let mut work = vec![0.0f32; lwork];
    // SAFETY: the reflectors are n x n with lda >= max(1, n) and k = n
    // (n being the order of Q on the side applied), `c` holds m x cols with
    // ldc >= max(1, m), `work` holds lwork >= the workspace LAPACK asked for
    // and at least max(1, m, cols), as sormqr requires.
    unsafe {
        lapack::sormqr(
            side,
            trans,
            m,
            cols,
            n_i32,
            &col_major,
            lda,
            tau,
            c,
            ldc,
            &mut work,
            i32::try_from(lwork).unwrap_or(i32::MAX),
            &mut info,
        );
    }
    info
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

    #[test]
    fn lapack_q_operations_meet_the_gates() {
        use qr_core::{orgqr, ormqr};
        use qr_verify::q_gate::Applied;
        use qr_verify::{Case, Spec, check_orgqr, check_ormqr, generate, randn_matrices};
        for spread in [Spread::Batch, Spread::Inner] {
            let peer = LapackPeer::new(spread);
            for (n, k) in [(1, 1), (5, 0), (33, 7), (70, 70)] {
                let spec = Spec {
                    batch: 3,
                    n,
                    cond: 2.0,
                    case: Case::Mixed,
                };
                let shape = spec.shape().unwrap();
                let a = generate(&spec, 4);
                let f = qr_core::geqrf(&peer, shape, &a).unwrap();
                let refl = Reflectors::new(shape, &f.h, &f.tau).unwrap();
                let q = orgqr(&peer, shape, &f.h, &f.tau).unwrap();
                let r = check_orgqr(refl, &q.data, &q.info).unwrap();
                assert!(r.meets_bar(), "orgqr n={n}: {r:?}");
                let c = randn_matrices(3, n * k, 9);
                for op in ApplyQ::ALL {
                    let x = ormqr(&peer, shape, &f.h, &f.tau, op, k, &c).unwrap();
                    let applied = [Applied {
                        op,
                        out: &x.data,
                        info: &x.info,
                    }];
                    let r = check_ormqr(refl, k, &c, &applied).unwrap();
                    assert!(r.meets_bar(), "{op} n={n} k={k}: {r:?}");
                }
            }
        }
    }

    #[test]
    fn non_finite_reflectors_are_flagged_not_passed_to_lapack() {
        let shape = qr_core::Shape::new(2, 3).unwrap();
        let mut h = vec![0.0f32; 18];
        h[9 + 3] = f32::NAN; // matrix 1, (1, 0)
        let tau = vec![0.0f32; 6];
        let q = qr_core::orgqr(&LapackPeer::new(Spread::Batch), shape, &h, &tau).unwrap();
        assert_eq!(q.info, [Info::OK, Info::NON_FINITE]);
        assert_eq!(q.data[..9], [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
        assert!(q.data[9..].iter().all(|x| x.is_nan()));
    }
}
