//! The `Backend` trait every implementation provides on host memory.

use std::time::{Duration, Instant};

use crate::q::{ApplyQ, Matrices, QrFactors, Reflectors, upper_triangle};
use crate::{BatchMut, BatchRef, Info, QrError, Shape};

/// A batched Householder QR implementation working on host memory:
/// `geqrf`, and `Q` formed (`orgqr`), applied (`ormqr`) or returned with `R`
/// (`qr`) from its result.
///
/// Object-safe, so the suite and the CLI hold a `Box<dyn Backend>`. Outputs
/// are caller-owned as in LAPACK; [`geqrf`], [`orgqr`], [`ormqr`] and [`qr`]
/// are the allocating conveniences. The `Q` operations have defaults that
/// answer [`QrError::Unsupported`]: backends that only factor (the
/// benchmark peers) keep them; the CPU and GPU engines implement them.
pub trait Backend: Send + Sync {
    /// Short stable name (`"cpu"`, `"gpu"`), used in reports and errors.
    fn name(&self) -> &str;

    /// One line saying what this backend runs on (threads, device, plan).
    fn describe(&self) -> String {
        self.name().to_string()
    }

    /// Factors every matrix of `a` into `out`, as the crate documentation
    /// specifies. A matrix that cannot be factored gets a non-zero
    /// [`Info`] and the rest of the batch is still factored. Returns `Err`
    /// only for misuse or backend failure, in which case `out` holds no
    /// meaningful values.
    fn geqrf_into(&self, a: BatchRef<'_>, out: BatchMut<'_>) -> Result<(), QrError>;

    /// Forms `Q = H_0 H_1 ... H_{n-1}` of every matrix of `f` into `q`
    /// (`batch * n * n`, row-major), as LAPACK `sorgqr` with `m = n = k`.
    /// `info` gets one code per matrix: [`Info::NON_FINITE`] where the
    /// reflectors hold a NaN or an infinity, [`Info::OVERFLOW`] where finite
    /// reflectors give a non-finite `Q` (possible only with `tau` or `v`
    /// far from what `geqrf` returns); such a matrix's `Q` is NaN.
    fn orgqr_into(
        &self,
        f: Reflectors<'_>,
        q: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let _ = (f, q, info);
        Err(self.no_q_operations())
    }

    /// Applies `op(Q)` of every matrix of `f` to the matching matrix of `c`
    /// in place, as LAPACK `sormqr`: `c` holds `batch` matrices of `n x k`
    /// ([`Side::Left`](crate::Side::Left)) or `k x n`
    /// ([`Side::Right`](crate::Side::Right)), row-major; `k = 0` is an empty
    /// product. `info` as for [`Backend::orgqr_into`], with
    /// [`Info::OVERFLOW`] only where a finite `C` gives a non-finite product;
    /// a matrix whose result is not computed is NaN in `c`. A NaN in `c`
    /// itself is not an `info`: it stays in that matrix's product, as in
    /// LAPACK.
    fn ormqr_into(
        &self,
        f: Reflectors<'_>,
        op: ApplyQ,
        k: usize,
        c: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let _ = (f, op, k, c, info);
        Err(self.no_q_operations())
    }

    /// `A = Q R` for every matrix of `a` (torch `linalg.qr`, mode
    /// "reduced"): `q` and `r` are `batch * n * n`, row-major; `R` is
    /// `geqrf`'s (zero below the diagonal) and `Q` is `orgqr` of `geqrf`'s
    /// reflectors, bit for bit. `info` is `geqrf`'s; a matrix that was not
    /// factored has NaN in both. The default runs [`Backend::geqrf_into`]
    /// then [`Backend::orgqr_into`].
    fn qr_into(
        &self,
        a: BatchRef<'_>,
        q: &mut [f32],
        r: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let shape = a.shape();
        QrFactors::check(shape, q.len(), r.len(), info.len())?;
        let mut f = Factorization::zeroed(shape)?;
        self.geqrf_into(a, f.as_batch_mut()?)?;
        upper_triangle(shape, &f.h, &f.info, r);
        self.orgqr_into(Reflectors::new(shape, &f.h, &f.tau)?, q, info)?;
        info.copy_from_slice(&f.info);
        Ok(())
    }

    /// Readies what factoring batches of `shapes` will need, so that a
    /// first call does not wait on it (the GPU engine compiles its kernels
    /// here). Optional: calls work without it. The default has nothing to
    /// ready.
    fn prepare(&self, shapes: &[Shape]) -> Result<(), QrError> {
        let _ = shapes;
        Ok(())
    }

    /// Times the factorization of each batch in `inputs` (all of `shape`)
    /// with the backend's own clock, as [`BenchOptions`] says. The default
    /// times [`Backend::geqrf_into`] with a host clock; a device backend
    /// overrides it to time device-resident data with device events.
    fn bench(
        &self,
        shape: Shape,
        inputs: &[&[f32]],
        opts: &BenchOptions,
    ) -> Result<BenchTiming, QrError> {
        bench_on_host(self, shape, inputs, opts)
    }

    /// Times `op` over each batch in `inputs`, as [`Backend::bench`] times
    /// `geqrf`. For the `Q` operations each input is first factored
    /// (untimed) and `orgqr` / `ormqr` are timed from its `(H, tau)`;
    /// `ormqr` applies `op(Q)` to the input itself (`k = n`). The default
    /// uses a host clock; a device backend overrides it.
    fn bench_op(
        &self,
        op: Operation,
        shape: Shape,
        inputs: &[&[f32]],
        opts: &BenchOptions,
    ) -> Result<BenchTiming, QrError> {
        match op {
            Operation::Geqrf => self.bench(shape, inputs, opts),
            _ => bench_q_on_host(self, op, shape, inputs, opts),
        }
    }

    /// The error the `Q` operations' defaults return.
    #[doc(hidden)]
    fn no_q_operations(&self) -> QrError {
        QrError::Unsupported {
            message: format!(
                "backend `{}` only factors: it does not form or apply Q",
                self.name()
            ),
        }
    }
}

/// One of the operations a [`Backend`] offers, for timing and reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `A -> (H, tau)`.
    Geqrf,
    /// `(H, tau) -> Q`.
    Orgqr,
    /// `(H, tau), C -> op(Q) C` or `C op(Q)`.
    Ormqr(ApplyQ),
    /// `A -> (Q, R)`.
    Qr,
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Geqrf => f.write_str("geqrf"),
            Self::Orgqr => f.write_str("orgqr"),
            Self::Ormqr(op) => write!(f, "ormqr ({op})"),
            Self::Qr => f.write_str("qr"),
        }
    }
}

/// How [`Backend::bench`] repeats and stops.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Untimed passes over all inputs before timing.
    pub warmup: usize,
    /// Fewest timed repetitions.
    pub min_reps: usize,
    /// Most timed repetitions.
    pub max_reps: usize,
    /// Stop once the standard error of the mean is below this fraction of
    /// the mean (and `min_reps` are done).
    pub target_rel_error: f64,
    /// Stop once this much time has been spent timing (after `min_reps`).
    pub budget: Duration,
    /// Bytes written between repetitions to evict caches (0 = none).
    pub flush_bytes: usize,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            warmup: 1,
            min_reps: 3,
            max_reps: 50,
            target_rel_error: 0.01,
            budget: Duration::from_secs(4),
            flush_bytes: 64 << 20,
        }
    }
}

/// Result of [`Backend::bench`]: time per input (one input = one batch).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchTiming {
    /// Mean over repetitions of (time of one pass over all inputs / inputs).
    pub mean: Duration,
    /// Median of the same per-repetition values.
    pub median: Duration,
    /// Standard error of the mean, as a fraction of the mean.
    pub rel_error: f64,
    /// Timed repetitions.
    pub reps: usize,
    /// What clock measured it (`"host"`, `"cuda-events"`).
    pub clock: &'static str,
}

impl BenchTiming {
    /// Summarises per-repetition times (seconds per input).
    pub fn from_samples(samples: &[f64], clock: &'static str) -> Self {
        let reps = samples.len();
        let mean = samples.iter().sum::<f64>() / reps.max(1) as f64;
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = match reps {
            0 => 0.0,
            r if r % 2 == 1 => sorted[r / 2],
            r => 0.5 * (sorted[r / 2 - 1] + sorted[r / 2]),
        };
        let rel_error = if reps < 2 || mean <= 0.0 {
            f64::INFINITY
        } else {
            let var = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / (reps - 1) as f64;
            (var / reps as f64).sqrt() / mean
        };
        Self {
            mean: Duration::from_secs_f64(mean),
            median: Duration::from_secs_f64(median),
            rel_error,
            reps,
            clock,
        }
    }

    /// Whether `samples` are enough to stop under `opts`.
    pub fn should_stop(samples: &[f64], started: Instant, opts: &BenchOptions) -> bool {
        let reps = samples.len();
        if reps >= opts.max_reps {
            return true;
        }
        if reps < opts.min_reps.max(1) {
            return false;
        }
        started.elapsed() >= opts.budget
            || Self::from_samples(samples, "host").rel_error < opts.target_rel_error
    }
}

fn bench_on_host<B: Backend + ?Sized>(
    backend: &B,
    shape: Shape,
    inputs: &[&[f32]],
    opts: &BenchOptions,
) -> Result<BenchTiming, QrError> {
    let views = inputs
        .iter()
        .map(|a| BatchRef::new(shape, a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut outs = views
        .iter()
        .map(|_| Factorization::zeroed(shape))
        .collect::<Result<Vec<_>, _>>()?;
    let pass = |outs: &mut [Factorization]| -> Result<(), QrError> {
        for (a, o) in views.iter().zip(outs.iter_mut()) {
            backend.geqrf_into(*a, o.as_batch_mut()?)?;
        }
        Ok(())
    };
    time_on_host(opts, views.len(), || pass(&mut outs))
}

/// Host timing of the `Q` operations: every input factored once, untimed,
/// then `op` timed from those factors.
fn bench_q_on_host<B: Backend + ?Sized>(
    backend: &B,
    op: Operation,
    shape: Shape,
    inputs: &[&[f32]],
    opts: &BenchOptions,
) -> Result<BenchTiming, QrError> {
    let views = inputs
        .iter()
        .map(|a| BatchRef::new(shape, a))
        .collect::<Result<Vec<_>, _>>()?;
    let mut factors = Vec::with_capacity(views.len());
    for a in &views {
        let mut f = Factorization::zeroed(shape)?;
        backend.geqrf_into(*a, f.as_batch_mut()?)?;
        factors.push(f);
    }
    let mut out = try_alloc(shape.a_len(), 0.0f32)?;
    let mut r = try_alloc(shape.a_len(), 0.0f32)?;
    let mut info = try_alloc(shape.info_len(), Info::OK)?;
    let pass = || -> Result<(), QrError> {
        for (a, f) in views.iter().zip(&factors) {
            let refl = Reflectors::new(shape, &f.h, &f.tau)?;
            match op {
                Operation::Geqrf => {
                    return Err(QrError::Unsupported {
                        message: "geqrf is timed by Backend::bench".into(),
                    });
                }
                Operation::Orgqr => backend.orgqr_into(refl, &mut out, &mut info)?,
                Operation::Ormqr(apply) => {
                    out.copy_from_slice(a.as_slice());
                    backend.ormqr_into(refl, apply, shape.n(), &mut out, &mut info)?
                }
                Operation::Qr => backend.qr_into(*a, &mut out, &mut r, &mut info)?,
            }
        }
        Ok(())
    };
    time_on_host(opts, views.len(), pass)
}

/// Host timing of `pass` (one pass over `inputs` inputs) as
/// [`Backend::bench`]'s default does it: warm-up passes, then timed passes
/// until [`BenchTiming::should_stop`], `opts.flush_bytes` written before
/// each so that every repetition starts with the inputs evicted. Returns
/// the time per input. Peers with their own kind of operation time it
/// through this, so that every column of a table is timed alike.
pub fn time_on_host(
    opts: &BenchOptions,
    inputs: usize,
    mut pass: impl FnMut() -> Result<(), QrError>,
) -> Result<BenchTiming, QrError> {
    let mut flush = try_alloc(opts.flush_bytes / 4, 0.0f32)?;
    for _ in 0..opts.warmup {
        pass()?;
    }
    let mut samples = Vec::new();
    let started = Instant::now();
    let mut round = 0u32;
    while !BenchTiming::should_stop(&samples, started, opts) {
        round += 1;
        // Writing a buffer larger than the last-level cache evicts the inputs,
        // so every repetition starts cold, as the ranking's method asks.
        flush.fill(round as f32);
        std::hint::black_box(&*flush);
        let t0 = Instant::now();
        pass()?;
        samples.push(t0.elapsed().as_secs_f64() / inputs.max(1) as f64);
    }
    Ok(BenchTiming::from_samples(&samples, "host"))
}

/// Owned outputs of a batched factorization, as [`geqrf`] returns them.
#[derive(Clone, Debug, PartialEq)]
pub struct Factorization {
    /// The shape factored.
    pub shape: Shape,
    /// `R` on and above the diagonal, the reflectors' `v[1..]` below; row-major.
    pub h: Vec<f32>,
    /// `n` scalar factors per matrix.
    pub tau: Vec<f32>,
    /// One status per matrix.
    pub info: Vec<Info>,
}

impl Factorization {
    /// Outputs for `shape`, zero-filled, allocated fallibly: a size that
    /// cannot be reserved is [`QrError::OutOfMemory`], never an abort.
    pub fn zeroed(shape: Shape) -> Result<Self, QrError> {
        Ok(Self {
            shape,
            h: try_alloc(shape.a_len(), 0.0)?,
            tau: try_alloc(shape.tau_len(), 0.0)?,
            info: try_alloc(shape.info_len(), Info::OK)?,
        })
    }

    /// A mutable view for [`Backend::geqrf_into`].
    pub fn as_batch_mut(&mut self) -> Result<BatchMut<'_>, QrError> {
        BatchMut::new(self.shape, &mut self.h, &mut self.tau, &mut self.info)
    }

    /// `true` when every matrix was factored.
    pub fn all_ok(&self) -> bool {
        self.info.iter().all(|i| i.is_ok())
    }
}

/// Allocates `len` copies of `value`, reporting failure instead of aborting.
pub(crate) fn try_alloc<T: Clone>(len: usize, value: T) -> Result<Vec<T>, QrError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| QrError::OutOfMemory {
        bytes: len.saturating_mul(std::mem::size_of::<T>()),
        location: "host",
    })?;
    v.resize(len, value);
    Ok(v)
}

/// Factors `a` (a batch of `shape`) with `backend`, allocating the outputs.
///
/// ```
/// # use qr_core::{geqrf, Backend, BatchRef, BatchMut, QrError, Shape, Info};
/// # struct Identity;
/// # impl Backend for Identity {
/// #     fn name(&self) -> &str { "doc" }
/// #     fn geqrf_into(&self, a: BatchRef<'_>, mut out: BatchMut<'_>) -> Result<(), QrError> {
/// #         let (h, tau, info) = out.parts();
/// #         h.copy_from_slice(a.as_slice()); tau.fill(0.0); info.fill(Info::OK); Ok(())
/// #     }
/// # }
/// let shape = Shape::new(1, 2)?;
/// let f = geqrf(&Identity, shape, &[1.0, 2.0, 0.0, 3.0])?;
/// assert_eq!(f.tau.len(), 2);
/// # Ok::<(), QrError>(())
/// ```
pub fn geqrf(backend: &dyn Backend, shape: Shape, a: &[f32]) -> Result<Factorization, QrError> {
    let view = BatchRef::new(shape, a)?;
    let mut f = Factorization::zeroed(shape)?;
    backend.geqrf_into(view, f.as_batch_mut()?)?;
    Ok(f)
}

/// Forms `Q` of every matrix of `(h, tau)` (a batch of `shape`, as
/// [`geqrf`] returns it) with `backend`, allocating the result.
pub fn orgqr(
    backend: &dyn Backend,
    shape: Shape,
    h: &[f32],
    tau: &[f32],
) -> Result<Matrices, QrError> {
    let f = Reflectors::new(shape, h, tau)?;
    let mut data = try_alloc(shape.a_len(), 0.0)?;
    let mut info = try_alloc(shape.info_len(), Info::OK)?;
    backend.orgqr_into(f, &mut data, &mut info)?;
    Ok(Matrices {
        rows: shape.n(),
        cols: shape.n(),
        data,
        info,
    })
}

/// Applies `op(Q)` of `(h, tau)` to a copy of `c` (`batch` matrices of
/// `n x k` for [`Side::Left`](crate::Side::Left), `k x n` for
/// [`Side::Right`](crate::Side::Right)) with `backend`.
pub fn ormqr(
    backend: &dyn Backend,
    shape: Shape,
    h: &[f32],
    tau: &[f32],
    op: ApplyQ,
    k: usize,
    c: &[f32],
) -> Result<Matrices, QrError> {
    let f = Reflectors::new(shape, h, tau)?;
    ApplyQ::check(shape, k, c.len(), shape.info_len())?;
    let mut data = try_alloc(c.len(), 0.0)?;
    data.copy_from_slice(c);
    let mut info = try_alloc(shape.info_len(), Info::OK)?;
    backend.ormqr_into(f, op, k, &mut data, &mut info)?;
    let (rows, cols) = match op.side {
        crate::Side::Left => (shape.n(), k),
        crate::Side::Right => (k, shape.n()),
    };
    Ok(Matrices {
        rows,
        cols,
        data,
        info,
    })
}

/// `A = Q R` of every matrix of `a` with `backend`, allocating `Q` and `R`.
pub fn qr(backend: &dyn Backend, shape: Shape, a: &[f32]) -> Result<QrFactors, QrError> {
    let view = BatchRef::new(shape, a)?;
    let mut out = QrFactors::zeroed(shape)?;
    backend.qr_into(view, &mut out.q, &mut out.r, &mut out.info)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_statistics() {
        let t = BenchTiming::from_samples(&[1.0, 3.0, 2.0], "host");
        assert_eq!(t.mean, Duration::from_secs(2));
        assert_eq!(t.median, Duration::from_secs(2));
        assert!((t.rel_error - (1.0f64 / 3.0).sqrt() / 2.0).abs() < 1e-12);
        assert_eq!(
            BenchTiming::from_samples(&[1.0, 4.0], "host").median,
            Duration::from_secs_f64(2.5)
        );
    }

    #[test]
    fn huge_allocation_is_an_error() {
        let shape = Shape::new(1 << 20, 1 << 14).unwrap();
        assert!(matches!(
            Factorization::zeroed(shape),
            Err(QrError::OutOfMemory { .. })
        ));
    }
}
