//! Shared helpers of the integration tests: a backend built on the crate's
//! own `f64` reference, and one-call generate-factor-gate.

#![allow(dead_code)] // each test target uses a different subset

use qr_core::{Backend, BatchMut, BatchRef, Factorization, Info, QrError, Shape, geqrf};
use qr_verify::{GateReport, Spec, check, generate, geqr2_f64};

/// The textbook `f64` `geqr2` rounded to `f32`: a correct factorization that
/// shares no code with qr-cpu, for tests of the gate itself.
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
