//! The `f64` gates of the `Q` operations, per matrix, as qr-core's crate
//! documentation states them (`eps = 2^-23`, `||.||_1` the largest absolute
//! column sum):
//!
//! - `orgqr`: `qerr = ||Q - Q64||_1 / (n eps)` and
//!   `orth = ||Q^T Q - I||_1 / (n eps)` of the returned `Q`;
//! - `ormqr`: `||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)` for each
//!   [`ApplyQ`] applied;
//! - `qr`: `recon = ||A - Q R||_1 / (n eps ||A||_1)`, `orth` and `qerr` of
//!   its `Q`, and `split`: how many entries of `Q`, `R` and `info` differ,
//!   bit for bit, from `geqrf` followed by `orgqr` (with `R = triu(H)`).
//!
//! `Q64` is this crate's own [`householder_product`](crate::householder) of
//! the reflectors the operation was given (for `qr`, those of the backend's
//! own `geqrf`), so each gate measures the operation alone, not the
//! factorization before it. Every product is a faer `f64` product of the
//! widened `f32` outputs. A NaN or an infinity in a result that should be
//! finite makes its value NaN or infinite, which fails (MAGMA's habit).
//!
//! A matrix whose `info` is not OK is not measured: it is listed with its
//! code and no values, and it neither passes the gate nor meets the bar,
//! since the suites' inputs are finite. A caller that plants a NaN on
//! purpose reads [`OpMatrixGate::info`] instead.

mod measure;
mod orgqr;
mod ormqr;
mod qr;
#[cfg(test)]
mod tests;

use qr_core::{ApplyQ, Info, Operation};

use crate::gate::{GateReport, ORTH_BAR, ORTH_GATE, SFR_BAR, SFR_GATE, nan_max};

pub use orgqr::check_orgqr;
pub use ormqr::{Applied, check_ormqr};
pub use qr::{QrOutputs, check_qr, differing};

/// One quantity a gate measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Metric {
    /// `geqrf`'s scaled factor residual `||R - Q^T A||_1 / (n eps ||A||_1)`.
    Sfr,
    /// `||Q^T Q - I||_1 / (n eps)`: of `Q64` for `geqrf`, of the returned
    /// `Q` for `orgqr` and `qr`.
    Orth,
    /// `||Q - Q64||_1 / (n eps)`.
    Qerr,
    /// `||A - Q R||_1 / (n eps ||A||_1)` of `qr`'s outputs.
    Recon,
    /// `||op(Q) C - op(Q64) C||_1 / (n eps ||C||_1)` (left) or the same
    /// with `C op(Q)` (right).
    Apply(ApplyQ),
    /// Entries of `qr`'s `Q`, `R` and `info` that are not bit for bit those
    /// of `geqrf` then `orgqr` (NaN matches NaN whatever its payload).
    Split,
}

impl Metric {
    /// What the gate of `op` measures, in the order of
    /// [`OpMatrixGate::values`]. `ormqr` is gated for all four
    /// [`ApplyQ`], whichever one `op` names.
    pub fn of(op: Operation) -> Vec<Metric> {
        match op {
            Operation::Geqrf => vec![Metric::Sfr, Metric::Orth],
            Operation::Orgqr => vec![Metric::Qerr, Metric::Orth],
            Operation::Ormqr(_) => ApplyQ::ALL.iter().map(|&a| Metric::Apply(a)).collect(),
            Operation::Qr => vec![Metric::Recon, Metric::Orth, Metric::Qerr, Metric::Split],
        }
    }

    /// Short name for tables and JSON: `sfr`, `orth`, `qerr`, `recon`,
    /// `split`, or the product (`Q^T C`).
    pub fn name(self) -> String {
        match self {
            Metric::Sfr => "sfr".into(),
            Metric::Orth => "orth".into(),
            Metric::Qerr => "qerr".into(),
            Metric::Recon => "recon".into(),
            Metric::Apply(op) => op.to_string(),
            Metric::Split => "split".into(),
        }
    }

    /// The project's bar: 25 for `orth`, 0 for `split`, 5 for the errors.
    pub fn bar(self) -> f64 {
        match self {
            Metric::Orth => ORTH_BAR,
            Metric::Split => 0.0,
            _ => SFR_BAR,
        }
    }

    /// The contract's gate: 100 for `orth`, 0 for `split`, 20 for the
    /// errors (the contract gives them the bar of `sfr`, so the gate of
    /// `sfr` too).
    pub fn gate(self) -> f64 {
        match self {
            Metric::Orth => ORTH_GATE,
            Metric::Split => 0.0,
            _ => SFR_GATE,
        }
    }
}

/// What a gate measured on one matrix.
#[derive(Clone, Debug, PartialEq)]
pub struct OpMatrixGate {
    /// The operation's status of the matrix.
    pub info: Info,
    /// One value per metric of the report, in its order; empty when
    /// `info` is not OK (the matrix was not measured).
    pub values: Vec<f64>,
}

impl OpMatrixGate {
    fn not_measured(info: Info) -> Self {
        Self {
            info,
            values: Vec::new(),
        }
    }

    fn within(&self, metrics: &[Metric], limit: fn(Metric) -> f64) -> bool {
        self.info.is_ok()
            && self.values.len() == metrics.len()
            && self
                .values
                .iter()
                .zip(metrics)
                .all(|(&v, &m)| v <= limit(m))
    }
}

/// A gate's measurements of every matrix of one or more batches.
#[derive(Clone, Debug, PartialEq)]
pub struct OpReport {
    /// What each matrix's values are.
    pub metrics: Vec<Metric>,
    /// One entry per matrix, in order.
    pub matrices: Vec<OpMatrixGate>,
}

impl OpReport {
    /// An empty report of `metrics`.
    pub fn new(metrics: Vec<Metric>) -> Self {
        Self {
            metrics,
            matrices: Vec::new(),
        }
    }

    /// `geqrf`'s [`GateReport`] as `sfr` and `orth` values, matrices whose
    /// `info` is not OK left unmeasured. `info` has one entry per matrix.
    pub fn from_geqrf(report: &GateReport, info: &[Info]) -> Self {
        let matrices = report
            .matrices
            .iter()
            .zip(info)
            .map(|(g, &info)| match info.is_ok() {
                true => OpMatrixGate {
                    info,
                    values: vec![g.sfr, g.orth],
                },
                false => OpMatrixGate::not_measured(info),
            })
            .collect();
        Self {
            metrics: Metric::of(Operation::Geqrf),
            matrices,
        }
    }

    /// The largest value of `metric` over the measured matrices (NaN if
    /// any is NaN or the report has no such metric; 0 with none measured).
    pub fn worst(&self, metric: Metric) -> f64 {
        let Some(k) = self.metrics.iter().position(|&m| m == metric) else {
            return f64::NAN;
        };
        nan_max(
            self.matrices
                .iter()
                .filter_map(|m| m.values.get(k).copied()),
        )
    }

    /// Matrices with a non-OK `info`, which were not measured.
    pub fn not_measured(&self) -> usize {
        self.matrices.iter().filter(|m| !m.info.is_ok()).count()
    }

    /// Every matrix measured and within the contract's gate.
    pub fn passes_gate(&self) -> bool {
        self.matrices
            .iter()
            .all(|m| m.within(&self.metrics, Metric::gate))
    }

    /// Every matrix measured and within the project's bar.
    pub fn meets_bar(&self) -> bool {
        self.matrices
            .iter()
            .all(|m| m.within(&self.metrics, Metric::bar))
    }

    /// Appends another report's matrices (several inputs of one case).
    ///
    /// # Panics
    ///
    /// If the two reports measure different metrics: their values could
    /// not be read together.
    pub fn extend(&mut self, other: OpReport) {
        assert_eq!(self.metrics, other.metrics, "reports of different gates");
        self.matrices.extend(other.matrices);
    }
}
