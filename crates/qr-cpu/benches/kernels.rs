//! Micro-benchmarks of the factorization's steps and of the whole backend.
//!
//! `cargo bench -p qr-cpu` (one-thread figures: `RAYON_NUM_THREADS=1`).
//! The ranked benchmark is `qr bench`; these isolate one step each so that
//! a tuning change can be attributed.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use faer::{MatMut, MatRef, Par};
use qr_core::{Backend, BatchRef, Factorization, Shape};
use qr_cpu::CpuBackend;
use qr_cpu::kernels::{
    apply_block_reflector_left, apply_block_reflector_left_scratch, larft, larft_scratch,
    panel_factor, panel_factor_wy, panel_factor_wy_scratch,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

fn randn(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len)
        .map(|_| rng.sample::<f32, _>(StandardNormal))
        .collect()
}

/// A factored `m x k` panel as the dense `V` and its `tau`.
fn reflectors(m: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    let mut p = randn(m * k, 1);
    let mut tau = vec![0.0; k];
    panel_factor(m, k, &mut p, m, &mut tau);
    for c in 0..k {
        p[c * m..c * m + c].fill(0.0);
        p[c * m + c] = 1.0;
    }
    (p, tau)
}

fn panels(c: &mut Criterion) {
    let mut g = c.benchmark_group("panel");
    for (m, k) in [(176usize, 32usize), (512, 32), (1024, 64), (2048, 64)] {
        let a = randn(m * k, 2);
        g.throughput(Throughput::Elements((m * k) as u64));
        g.bench_with_input(
            BenchmarkId::new("column-loop", format!("{m}x{k}")),
            &a,
            |b, a| {
                let (mut p, mut tau) = (a.clone(), vec![0.0; k]);
                b.iter(|| {
                    p.copy_from_slice(a);
                    panel_factor(m, k, &mut p, m, &mut tau);
                    black_box(&p);
                });
            },
        );
        for leaf in [8usize, 16] {
            let id = BenchmarkId::new(format!("recursive-leaf{leaf}"), format!("{m}x{k}"));
            g.bench_with_input(id, &a, |b, a| {
                let (mut p, mut tau) = (a.clone(), vec![0.0; k]);
                let (mut v, mut t) = (vec![0.0; m * k], vec![0.0; k * k]);
                let mut s = vec![0.0; panel_factor_wy_scratch(k)];
                b.iter(|| {
                    p.copy_from_slice(a);
                    panel_factor_wy(
                        m, k, &mut p, m, &mut tau, &mut v, m, &mut t, k, &mut s, leaf,
                    );
                    black_box(&t);
                });
            });
        }
    }
    g.finish();
}

fn larfts(c: &mut Criterion) {
    let mut g = c.benchmark_group("larft");
    for (m, k) in [(512usize, 32usize), (2048, 64)] {
        let (v, tau) = reflectors(m, k);
        g.bench_function(format!("{m}x{k}"), |b| {
            let (mut t, mut s) = (vec![0.0; k * k], vec![0.0; larft_scratch(k)]);
            b.iter(|| {
                larft(m, k, &v, m, &tau, &mut t, k, &mut s);
                black_box(&t);
            });
        });
    }
    g.finish();
}

fn updates(c: &mut Criterion) {
    let mut g = c.benchmark_group("trailing-update");
    for (m, k) in [(512usize, 32usize), (1024, 32), (1024, 64), (2048, 64)] {
        let (v, tau) = reflectors(m, k);
        let mut t = vec![0.0; k * k];
        larft(
            m,
            k,
            &v,
            m,
            &tau,
            &mut t,
            k,
            &mut vec![0.0; larft_scratch(k)],
        );
        let ncols = m - k;
        let c0 = randn(m * m, 3);
        g.throughput(Throughput::Elements((4 * m * k * ncols) as u64));
        g.bench_function(format!("{m}x{ncols}-k{k}"), |b| {
            let mut cbuf = c0.clone();
            let mut s = vec![0.0; apply_block_reflector_left_scratch(k, ncols)];
            b.iter(|| {
                // Row-major trailing block of an m x m matrix, as the driver has it.
                let cm =
                    MatMut::from_column_major_slice_with_stride_mut(&mut cbuf[k..], ncols, m, m)
                        .transpose_mut();
                apply_block_reflector_left(
                    MatRef::from_column_major_slice(&v, m, k),
                    MatRef::from_column_major_slice(&t, k, k),
                    cm,
                    &mut s,
                    Par::Seq,
                );
                black_box(&cbuf);
            });
        });
    }
    g.finish();
}

fn whole(c: &mut Criterion) {
    let mut g = c.benchmark_group("geqrf");
    g.sample_size(10);
    let backend = CpuBackend::new();
    for (batch, n) in [
        (20usize, 32usize),
        (40, 176),
        (8, 512),
        (1, 1024),
        (1, 2048),
    ] {
        let shape = Shape::new(batch, n).unwrap();
        let a = randn(shape.a_len(), 4);
        let mut out = Factorization::zeroed(shape).unwrap();
        g.throughput(Throughput::Elements(batch as u64));
        g.bench_function(format!("{batch}x{n}"), |b| {
            b.iter(|| {
                let view = BatchRef::new(shape, &a).unwrap();
                backend
                    .geqrf_into(view, out.as_batch_mut().unwrap())
                    .unwrap();
                black_box(&out.h);
            });
        });
    }
    g.finish();
}

criterion_group!(benches, panels, larfts, updates, whole);
criterion_main!(benches);
