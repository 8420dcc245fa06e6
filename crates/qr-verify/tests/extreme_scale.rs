//! Inputs at the ends of the f32 normal range factor to the gate: norms are
//! scaled, never squared into overflow or underflow.

mod support;

use qr_core::Shape;
use qr_verify::{Case, Spec, generate};
use support::{cpu, describe, run_on};

fn scaled_dense(n: usize, batch: usize, scale: f32, seed: u64) -> Vec<f32> {
    let spec = Spec {
        batch,
        n,
        cond: 0.0,
        case: Case::Dense,
    };
    generate(&spec, seed)
        .into_iter()
        .map(|x| x * scale)
        .collect()
}

#[test]
fn tiny_and_huge_randn_meet_the_bar() {
    for scale in [1e-30f32, 1e30] {
        for n in [1, 2, 31, 64, 65, 200, 512] {
            let a = scaled_dense(n, 3, scale, n as u64);
            assert!(
                a.iter().all(|x| x.is_normal() || *x == 0.0),
                "inputs in the normal range"
            );
            let r = run_on(&cpu(), Shape::new(3, n).unwrap(), a);
            assert!(r.f.all_ok(), "{scale:e} n {n}: {:?}", r.f.info);
            assert!(
                r.report.meets_bar(),
                "{scale:e} n {n}: {}",
                describe(&r.report)
            );
            // R carries the scale: |R_00| is the first column's norm.
            let r00 = r.f.h[0].abs();
            assert!(
                r00 > scale * 0.01 && r00 < scale * 100.0 * (n as f32).sqrt(),
                "{scale:e}: {r00:e}"
            );
        }
    }
}

#[test]
fn lapack_tiny_and_huge_meet_the_bar() {
    for case in [
        Case::Lapack(qr_verify::LapackType::Tiny),
        Case::Lapack(qr_verify::LapackType::Huge),
    ] {
        for n in [2, 40, 130] {
            let spec = Spec {
                batch: 2,
                n,
                cond: 0.0,
                case,
            };
            let r = support::run(&cpu(), &spec, 5);
            assert!(r.report.meets_bar(), "{spec}: {}", describe(&r.report));
        }
    }
}
