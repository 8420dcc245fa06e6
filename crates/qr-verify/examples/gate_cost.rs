//! Times the gate's own pieces on one dense matrix of each order given:
//! `cargo run -p qr-verify --example gate_cost --release -- 1024 4096`.
//!
//! The factorization gated is the f64 reference's, rounded to f32, computed
//! only for orders where the unblocked reference is quick; larger orders
//! time `householder_product` alone.

use std::time::Instant;

use qr_core::Shape;
use qr_verify::{Case, Spec, check, generate, geqr2_f64, householder_product};

fn main() {
    let orders: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|s| s.parse().ok())
        .collect();
    println!("threads {}", rayon::current_num_threads());
    for n in orders {
        let spec = Spec {
            batch: 1,
            n,
            cond: 1.0,
            case: Case::Dense,
        };
        let t0 = Instant::now();
        let a = generate(&spec, 1);
        let t_gen = t0.elapsed().as_secs_f64();
        // Any exact reflectors time the product the same: where the
        // reference would be slow, H is random and tau = 2 / (v^T v).
        let (h, tau) = if n <= 2048 {
            let (h, tau) = geqr2_f64(n, &a.iter().map(|&x| f64::from(x)).collect::<Vec<_>>());
            (
                h.iter().map(|&x| x as f32).collect::<Vec<_>>(),
                tau.iter().map(|&x| x as f32).collect::<Vec<_>>(),
            )
        } else {
            let tau = (0..n)
                .map(|j| {
                    let ss: f32 = (j + 1..n).map(|i| a[i * n + j].powi(2)).sum();
                    2.0 / (1.0 + ss)
                })
                .collect();
            (a.clone(), tau)
        };
        let t0 = Instant::now();
        let q = householder_product(n, &h, &tau);
        let t_q = t0.elapsed().as_secs_f64();
        std::hint::black_box(&q);
        let t0 = Instant::now();
        let report = check(Shape::new(1, n).expect("shape"), &a, &h, &tau).expect("gate");
        let t_gate = t0.elapsed().as_secs_f64();
        println!(
            "n {n:5}  generate {t_gen:8.3} s  householder_product {t_q:8.3} s  check {t_gate:8.3} s  sfr {:.3}",
            report.worst_sfr()
        );
    }
}
