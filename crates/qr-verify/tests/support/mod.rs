//! Shared helpers of the integration tests: a backend built on the crate's
//! own `f64` reference, and one-call generate-factor-gate.

#![allow(dead_code)] // each test target uses a different subset

use qr_core::{
    ApplyQ, Backend, BatchMut, BatchRef, Factorization, Info, QrError, Reflectors, Shape, Side,
    Transpose, geqrf,
};
use qr_verify::{GateReport, Spec, check, generate, geqr2_f64, householder_product};

/// The textbook `f64` `geqr2` rounded to `f32`, and `Q` as this crate's own
/// `f64` product rounded to `f32`: correct outputs that share no code with
/// qr-cpu, for tests of the gates and the runner themselves.
#[derive(Debug)]
pub struct Reference;

impl Backend for Reference {
    fn name(&self) -> &str {
        "reference-f64"
    }

    fn geqrf_into(&self, a: BatchRef<'_>, mut out: BatchMut<'_>) -> Result<(), QrError> {
        let n = a.shape().n();
        for (m, (h, tau, info)) in a.matrices().zip(out.matrices_mut()) {
            let wide: Vec<f64> = m.iter().map(|&x| f64::from(x)).collect();
            let (hr, tr) = geqr2_f64(n, &wide);
            h.iter_mut().zip(hr).for_each(|(o, x)| *o = x as f32);
            tau.iter_mut().zip(tr).for_each(|(o, x)| *o = x as f32);
            *info = Info::OK;
        }
        Ok(())
    }

    fn orgqr_into(
        &self,
        f: Reflectors<'_>,
        q: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let n = f.shape().n();
        Shape::check_len("q", f.shape().a_len(), q.len())?;
        for (((h, tau), qb), i) in f.matrices().zip(q.chunks_exact_mut(n * n)).zip(info) {
            let q64 = householder_product(n, h, tau);
            qb.iter_mut().zip(q64).for_each(|(o, x)| *o = x as f32);
            *i = reflector_info(h, tau, n, qb);
        }
        Ok(())
    }

    fn ormqr_into(
        &self,
        f: Reflectors<'_>,
        op: ApplyQ,
        k: usize,
        c: &mut [f32],
        info: &mut [Info],
    ) -> Result<(), QrError> {
        let n = f.shape().n();
        ApplyQ::check(f.shape(), k, c.len(), info.len())?;
        if n * k == 0 {
            return Ok(());
        }
        for (((h, tau), cb), i) in f.matrices().zip(c.chunks_exact_mut(n * k)).zip(info) {
            let q = householder_product(n, h, tau);
            let qe = |i: usize, j: usize| match op.transpose {
                Transpose::No => q[i * n + j],
                Transpose::Yes => q[j * n + i],
            };
            let src: Vec<f64> = cb.iter().map(|&x| f64::from(x)).collect();
            for (x, o) in cb.iter_mut().enumerate() {
                *o = match op.side {
                    Side::Left => (0..n)
                        .map(|l| qe(x / k, l) * src[l * k + x % k])
                        .sum::<f64>(),
                    Side::Right => (0..n)
                        .map(|l| src[(x / n) * n + l] * qe(l, x % n))
                        .sum::<f64>(),
                } as f32;
            }
            *i = reflector_info(h, tau, n, cb);
        }
        Ok(())
    }
}

/// The contract's `info` for a result computed from `(h, tau)`: NaN
/// reflectors poison the result.
fn reflector_info(h: &[f32], tau: &[f32], n: usize, out: &mut [f32]) -> Info {
    if Reflectors::is_finite(h, tau, n) {
        Info::OK
    } else {
        out.fill(f32::NAN);
        Info::NON_FINITE
    }
}

/// The backend under test.
pub fn cpu() -> qr_cpu::CpuBackend {
    qr_cpu::CpuBackend::new()
}

/// A generated batch, its factorization by `backend` and its gate.
pub struct Run {
    pub shape: Shape,
    pub a: Vec<f32>,
    pub f: Factorization,
    pub report: GateReport,
}

pub fn run(backend: &dyn Backend, spec: &Spec, seed: u64) -> Run {
    let a = generate(spec, seed);
    run_on(backend, spec.shape().expect("valid spec"), a)
}

pub fn run_on(backend: &dyn Backend, shape: Shape, a: Vec<f32>) -> Run {
    let f = geqrf(backend, shape, &a).expect("factorization runs");
    let report = check(shape, &a, &f.h, &f.tau).expect("lengths match");
    Run {
        shape,
        a,
        f,
        report,
    }
}

/// A one-line account of a report for assertion messages.
pub fn describe(report: &GateReport) -> String {
    format!(
        "worst sfr {:.3}, worst orth {:.3} over {} matrices",
        report.worst_sfr(),
        report.worst_orth(),
        report.matrices.len()
    )
}

/// A one-line account of an operation's report for assertion messages.
pub fn describe_op(report: &qr_verify::OpReport) -> String {
    let worst: Vec<String> = report
        .metrics
        .iter()
        .map(|&m| format!("{} {:.3}", m.name(), report.worst(m)))
        .collect();
    format!(
        "worst {} over {} matrices ({} not measured)",
        worst.join(", "),
        report.matrices.len(),
        report.not_measured()
    )
}
