//! `qr check`: factor one case and print the gate values of every matrix.

use std::time::Instant;

use clap::Args;
use qr_core::geqrf;
use qr_verify::suite::input_seed;
use qr_verify::{Spec, check, diag_r_mismatch, generate};

use crate::error::{CliError, Outcome};
use crate::select::{BackendOpts, select};
use crate::suite::verdict;
use crate::table::{Table, fmt_gate, fmt_time};

/// Arguments of `qr check`.
#[derive(Clone, Debug, Args)]
pub struct CheckArgs {
    /// The case, `batch,n,cond,case` (e.g. `16,512,2,dense`).
    #[arg(long)]
    pub spec: Spec,
    #[command(flatten)]
    pub backend: BackendOpts,
    /// Seed; the batch is the first input `qr suite` would generate from it.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also compare `|diag R|` with nalgebra's float64 QR (slow for large n).
    #[arg(long)]
    pub oracle: bool,
}

/// Runs `qr check`.
pub fn run(args: &CheckArgs) -> Result<Outcome, CliError> {
    let selected = select(&args.backend)?;
    println!("backend: {}", selected.reason);
    let spec = args.spec;
    let shape = spec.shape()?;
    let a = generate(&spec, input_seed(args.seed, 0));
    let started = Instant::now();
    let f = geqrf(selected.backend.as_ref(), shape, &a)?;
    let elapsed = started.elapsed();
    println!(
        "spec {spec}, seed {}: factored in {} (one call, wall clock, untuned)",
        args.seed,
        fmt_time(elapsed)
    );
    let report = check(shape, &a, &f.h, &f.tau)?;
    let mut columns = vec![
        ("matrix", 6),
        ("info", 4),
        ("sfr", 9),
        ("orth", 9),
        ("recon", 9),
        ("leakage", 9),
        ("bar", 4),
    ];
    if args.oracle {
        columns.push(("|diag R| mismatch", 17));
    }
    let table = Table::new(&columns);
    println!("{}", table.header());
    let len = shape.matrix_len();
    let mut all_ok = true;
    for (b, (g, info)) in report.matrices.iter().zip(&f.info).enumerate() {
        let ok = info.is_ok() && g.meets_bar();
        all_ok &= ok;
        let mut cells = vec![
            b.to_string(),
            info.0.to_string(),
            fmt_gate(g.sfr),
            fmt_gate(g.orth),
            fmt_gate(g.recon),
            fmt_gate(g.leakage),
            verdict(g.passes_gate(), g.meets_bar()).to_string(),
        ];
        if args.oracle {
            let m = b * len..(b + 1) * len;
            let mismatch = diag_r_mismatch(shape.n(), &a[m.clone()], &f.h[m]);
            cells.push(format!("{mismatch:.2e}"));
        }
        println!("{}", table.row(&cells));
    }
    // The codes' meanings (NON_FINITE, OVERFLOW, ...), once per flagged matrix.
    for (b, info) in f.info.iter().enumerate().filter(|(_, i)| !i.is_ok()) {
        println!("matrix {b}: info {info}");
    }
    println!(
        "worst sfr {}, worst orth {}: {}",
        fmt_gate(report.worst_sfr()),
        fmt_gate(report.worst_orth()),
        if all_ok {
            "every matrix meets the bar"
        } else {
            "some matrix misses the bar or was not factored"
        }
    );
    Ok(Outcome::from_bar(all_ok))
}
