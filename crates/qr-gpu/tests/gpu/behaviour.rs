//! The GPU rows of docs/RELIABILITY.md's behaviour table, each strategy
//! forced in turn (every one of `Strategy::ALL`, at the orders of a short
//! list that its plan accepts): non-finite entries, special matrices,
//! `n = 1`, empty batches, overflow, poisoned outputs and LAPACK's recipe.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{Backend, BatchMut, BatchRef, Factorization, Info, Shape, geqrf};
use qr_gpu::{DeviceFactorization, GpuBackend, Strategy};
use qr_verify::{Case, LAPACK_THRESH, LapackType, Spec, generate, lapack_ratios};

use super::BoxedTest;
use super::common::{gate, same_f32_bits, spec};

/// A signalling NaN with a payload: no arithmetic produces it, so an output
/// element still holding it was never written.
pub(crate) const POISON: u32 = 0x7fa0_dead;
/// The `info` written before a call.
pub(crate) const INFO_POISON: i32 = -99;

/// Orders tried on every strategy (those its plan rejects are skipped).
const ORDERS: [usize; 5] = [1, 2, 33, 120, 513];

/// `g` with `s` forced.
fn forced(g: &GpuBackend, s: Strategy) -> GpuBackend {
    g.clone().with_strategy(Some(s))
}

/// The orders of `orders` at which `b`'s forced strategy accepts a batch of
/// `batch`.
fn supported(b: &GpuBackend, batch: usize, orders: &[usize]) -> Vec<usize> {
    orders
        .iter()
        .copied()
        .filter(|&n| Shape::new(batch, n).is_ok_and(|sh| b.plan(sh).is_ok()))
        .collect()
}

/// Matrix `m` of a batch of order `n`: its `H` and `tau` ranges.
fn parts(n: usize, m: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
    (m * n * n..(m + 1) * n * n, m * n..(m + 1) * n)
}

/// Matrix `m` of `f` is flagged `want` and NaN-filled.
fn flagged(f: &Factorization, n: usize, m: usize, want: Info, what: &str) -> Result<(), Failed> {
    let (hm, tm) = parts(n, m);
    if f.info[m] != want {
        return Err(format!("{what}: matrix {m} info {}, want {want}", f.info[m]).into());
    }
    if !f.h[hm].iter().chain(&f.tau[tm]).all(|x| x.is_nan()) {
        return Err(format!("{what}: flagged matrix {m} is not NaN-filled").into());
    }
    Ok(())
}

/// Matrices `ms` of `f` and `base` agree bit for bit, `info` included.
fn same_matrices(
    f: &Factorization,
    base: &Factorization,
    n: usize,
    ms: &[usize],
    what: &str,
) -> Result<(), Failed> {
    for &m in ms {
        let (hm, tm) = parts(n, m);
        if f.info[m] != base.info[m]
            || !same_f32_bits(&f.h[hm.clone()], &base.h[hm])
            || !same_f32_bits(&f.tau[tm.clone()], &base.tau[tm])
        {
            return Err(format!("{what}: matrix {m} changed beside a flagged one").into());
        }
    }
    Ok(())
}

/// NaN, signalling NaN and infinities flag only their own matrix; the
/// others come back bit for bit as in a run where the bad entries are not.
fn non_finite_flags_only_its_matrix(g: &GpuBackend, s: Strategy) -> Result<(), Failed> {
    let b = forced(g, s);
    for n in supported(&b, 4, &ORDERS) {
        let sp = spec(4, n, 1.0, Case::Dense);
        let shape = sp.shape()?;
        let clean = generate(&sp, 21 + n as u64);
        let len = n * n;
        let mut a = clean.clone();
        a[len + len / 2] = f32::NAN;
        a[len] = f32::INFINITY;
        a[3 * len + len - 1] = f32::from_bits(0x7f80_0001);
        a[3 * len] = f32::NEG_INFINITY;
        let f = geqrf(&b, shape, &a)?;
        let base = geqrf(&b, shape, &clean)?;
        let what = format!("{s} {sp}");
        if !base.all_ok() {
            return Err(format!("{what}: clean batch info {:?}", base.info).into());
        }
        for m in [1, 3] {
            flagged(&f, n, m, Info::NON_FINITE, &what)?;
        }
        same_matrices(&f, &base, n, &[0, 2], &what)?;
    }
    Ok(())
}

/// Zero: `H = 0`, `tau = +0`. Identity and an upper-triangular matrix:
/// `H = A` bit for bit, `tau = 0`. A dense neighbour meets the bar.
fn special_matrices(g: &GpuBackend, s: Strategy) -> Result<(), Failed> {
    let b = forced(g, s);
    for n in supported(&b, 4, &ORDERS[1..]) {
        let len = n * n;
        let upper = generate(&spec(1, n, 1.0, Case::Upper), 31);
        let dense = generate(&spec(1, n, 1.0, Case::Dense), 32);
        let mut a = vec![0.0f32; 4 * len];
        for i in 0..n {
            a[len + i * n + i] = 1.0;
        }
        a[2 * len..3 * len].copy_from_slice(&upper);
        a[3 * len..].copy_from_slice(&dense);
        let shape = Shape::new(4, n)?;
        let f = geqrf(&b, shape, &a)?;
        let what = format!("{s} n={n}");
        if !f.all_ok() {
            return Err(format!("{what}: info {:?}", f.info).into());
        }
        let (h0, t0) = parts(n, 0);
        if !f.h[h0].iter().all(|&x| x == 0.0) || !f.tau[t0].iter().all(|x| x.to_bits() == 0) {
            return Err(format!("{what}: zero matrix: H not 0 or tau not +0").into());
        }
        for (m, name) in [(1, "identity"), (2, "upper-triangular")] {
            let (hm, tm) = parts(n, m);
            if !same_f32_bits(&f.h[hm.clone()], &a[hm]) || !f.tau[tm].iter().all(|&t| t == 0.0) {
                return Err(format!("{what}: {name} matrix not returned unchanged").into());
            }
        }
        let (h3, t3) = parts(n, 3);
        let report = qr_verify::check(Shape::new(1, n)?, &dense, &f.h[h3], &f.tau[t3])?;
        if !report.meets_bar() {
            return Err(format!("{what}: dense neighbour misses the bar").into());
        }
    }
    Ok(())
}

/// `n = 1`: `H = A` bit for bit (`-0`, subnormals, the extremes), `tau = +0`;
/// a NaN is `NON_FINITE`.
fn order_one(g: &GpuBackend, s: Strategy) -> Result<(), Failed> {
    let b = forced(g, s);
    let a = [
        -0.0,
        0.0,
        1.0,
        -3.5,
        1e-40,
        -f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        f32::NAN,
    ];
    let shape = Shape::new(a.len(), 1)?;
    if b.plan(shape).is_err() {
        return Ok(());
    }
    let f = geqrf(&b, shape, &a)?;
    let last = a.len() - 1;
    flagged(&f, 1, last, Info::NON_FINITE, &format!("{s} n=1"))?;
    if f.info[..last].iter().any(|i| !i.is_ok())
        || !same_f32_bits(&f.h[..last], &a[..last])
        || !f.tau[..last].iter().all(|t| t.to_bits() == 0)
    {
        return Err(format!(
            "{s} n=1: info {:?}, h {:?}, tau {:?} for a {a:?}",
            f.info, f.h, f.tau
        )
        .into());
    }
    Ok(())
}

/// `batch = 0` or `n = 0`, through the host and the device-resident API:
/// `Ok`, every `info` `OK`.
fn empty_batches(g: &GpuBackend, s: Strategy) -> Result<(), Failed> {
    let b = forced(g, s);
    for (batch, n) in [(0, 0), (0, 9), (5, 0), (0, 200)] {
        let shape = Shape::new(batch, n)?;
        let what = format!("{s} {batch}x{n}");
        let mut info = vec![Info(INFO_POISON); batch];
        let out = BatchMut::new(shape, &mut [], &mut [], &mut info)?;
        b.geqrf_into(BatchRef::new(shape, &[])?, out)
            .map_err(|e| format!("{what}, host API: {e}"))?;
        if !info.iter().all(|i| i.is_ok()) {
            return Err(format!("{what}, host API: info {info:?}").into());
        }
        let da = b.upload(&[])?;
        let mut dev = poisoned_outputs(&b, shape)?;
        b.geqrf_device(&da, &mut dev)
            .map_err(|e| format!("{what}, device API: {e}"))?;
        let f = read_back(&b, &dev)?;
        if !f.all_ok() {
            return Err(format!("{what}, device API: info {:?}", f.info).into());
        }
    }
    Ok(())
}

/// A finite matrix whose `R` does not fit `f32` is `OVERFLOW`, NaN-filled;
/// its neighbours come back bit for bit as without it; a matrix with column
/// norms of `f32::MAX / (8n)` still factors to the bar.
fn overflow_flagged(g: &GpuBackend, s: Strategy) -> Result<(), Failed> {
    let b = forced(g, s);
    let max = f32::MAX;
    for n in supported(&b, 3, &ORDERS[1..]) {
        let sp = spec(3, n, 1.0, Case::Dense);
        let shape = sp.shape()?;
        let clean = generate(&sp, 41 + n as u64);
        let len = n * n;
        let mut a = clean.clone();
        if n == 2 {
            a[len..2 * len].copy_from_slice(&[max, 1.0, max, 1.0]);
        } else {
            // Column 0 of matrix 1: norm MAX sqrt(n) / 2 > MAX.
            for i in 0..n {
                a[len + i * n] = max / 2.0;
            }
        }
        let f = geqrf(&b, shape, &a)?;
        let base = geqrf(&b, shape, &clean)?;
        let what = format!("{s} {sp}");
        flagged(&f, n, 1, Info::OVERFLOW, &what)?;
        if !f.info[0].is_ok() || !f.info[2].is_ok() {
            return Err(format!("{what}: info {:?}", f.info).into());
        }
        same_matrices(&f, &base, n, &[0, 2], &what)?;

        // Just inside: the largest column norm scaled to MAX / (8n).
        let col_norm = (0..n)
            .map(|j| {
                (0..n)
                    .map(|i| f64::from(clean[i * n + j]).powi(2))
                    .sum::<f64>()
                    .sqrt()
            })
            .fold(0.0, f64::max);
        let scale = f64::from(max) / (8 * n) as f64 / col_norm;
        let big: Vec<f32> = clean
            .iter()
            .map(|&x| (f64::from(x) * scale) as f32)
            .collect();
        gate(&b, shape, &big, &format!("{what} at column norm MAX/(8n)"))?;
    }
    Ok(())
}

/// Device outputs of `shape` prefilled with [`POISON`] and [`INFO_POISON`].
pub(crate) fn poisoned_outputs(
    b: &GpuBackend,
    shape: Shape,
) -> Result<DeviceFactorization, Failed> {
    poisoned_parts(b, shape, shape.a_len(), shape.tau_len(), shape.info_len())
}

/// Device outputs labelled `shape` with buffers of the given lengths (at
/// least 1: CUDA allocates no empty buffer), prefilled with poison.
pub(crate) fn poisoned_parts(
    b: &GpuBackend,
    shape: Shape,
    h: usize,
    tau: usize,
    info: usize,
) -> Result<DeviceFactorization, Failed> {
    let floats = |len: usize| vec![f32::from_bits(POISON); len.max(1)];
    Ok(DeviceFactorization {
        shape,
        h: b.upload(&floats(h))?,
        tau: b.upload(&floats(tau))?,
        info: b
            .stream()
            .clone_htod(&vec![INFO_POISON; info.max(1)])
            .map_err(|e| format!("uploading info: {e:?}"))?,
    })
}

/// Downloads `dev` (of `dev.shape`) into fresh host buffers.
pub(crate) fn read_back(
    b: &GpuBackend,
    dev: &DeviceFactorization,
) -> Result<Factorization, Failed> {
    let mut f = Factorization::zeroed(dev.shape)?;
    f.info.fill(Info(INFO_POISON));
    b.download(dev, f.as_batch_mut()?)?;
    Ok(f)
}

/// Device-resident calls into poisoned device outputs write every element
/// (fresh buffers each time, so no earlier call's results can hide a gap),
/// and agree bit for bit with the host API.
fn poisoned_outputs_are_written(g: &GpuBackend, s: Strategy) -> Result<(), Failed> {
    let b = forced(g, s);
    let orders = [1, 2, 31, 32, 33, 65, 120, 200, 257, 513];
    for (i, n) in supported(&b, 3, &orders).into_iter().enumerate() {
        let case = Case::ALL_QR_V2[i % Case::ALL_QR_V2.len()];
        let sp = spec(3, n, 1.0, case);
        let shape = sp.shape()?;
        let a = generate(&sp, 51 + i as u64);
        let da = b.upload(&a)?;
        let mut dev = poisoned_outputs(&b, shape)?;
        b.geqrf_device(&da, &mut dev)?;
        let f = read_back(&b, &dev)?;
        let what = format!("{s} {sp}");
        if let Some(at) = f.h.iter().chain(&f.tau).position(|x| x.to_bits() == POISON) {
            return Err(format!("{what}: output element {at} (H then tau) never written").into());
        }
        if !f.all_ok() {
            return Err(format!("{what}: info {:?}", f.info).into());
        }
        let host = geqrf(&b, shape, &a)?;
        if !same_f32_bits(&f.h, &host.h) || !same_f32_bits(&f.tau, &host.tau) {
            return Err(format!("{what}: device and host API disagree").into());
        }
    }
    Ok(())
}

/// LAPACK's recipe (`xCHKQR`): its eight types at orders 1..=64 (two
/// matrices each) and 512 (one each), all in one batch per order; both
/// ratios below 30 on every matrix. Prints the worst ratios per type.
fn lapack_recipe(g: &GpuBackend, s: Strategy) -> Result<(), Failed> {
    let b = forced(g, s);
    let mut worst = [[(0.0f64, 0.0f64); 2]; 8];
    for n in (1..=64).chain([512]) {
        let per = if n == 512 { 1 } else { 2 };
        let shape = Shape::new(per * LapackType::ALL.len(), n)?;
        if b.plan(shape).is_err() {
            continue;
        }
        let a: Vec<f32> = LapackType::ALL
            .iter()
            .flat_map(|&t| {
                let sp = Spec {
                    batch: per,
                    n,
                    cond: 0.0,
                    case: Case::Lapack(t),
                };
                generate(&sp, 1000 + n as u64)
            })
            .collect();
        let f = geqrf(&b, shape, &a)?;
        if !f.all_ok() {
            return Err(format!("{s} LAPACK types n={n}: info {:?}", f.info).into());
        }
        let ratios: Vec<(f64, f64)> = std::thread::scope(|sc| {
            let jobs: Vec<_> = (0..shape.batch())
                .map(|m| {
                    let (hm, tm) = parts(n, m);
                    let (a, h, tau) = (&a[hm.clone()], &f.h[hm], &f.tau[tm]);
                    sc.spawn(move || lapack_ratios(n, a, h, tau))
                })
                .collect();
            jobs.into_iter()
                .map(|j| j.join().unwrap_or((f64::NAN, f64::NAN)))
                .collect()
        });
        for (m, (res, orth)) in ratios.into_iter().enumerate() {
            let t = m / per;
            // NaN fails, as in LAPACK's `ratio < THRESH`.
            if !(res < LAPACK_THRESH && orth < LAPACK_THRESH) {
                return Err(format!(
                    "{s} {} n={n} matrix {m}: ratios {res:.3}, {orth:.3} (threshold 30)",
                    Case::Lapack(LapackType::ALL[t])
                )
                .into());
            }
            let w = &mut worst[t][usize::from(n == 512)];
            *w = (w.0.max(res), w.1.max(orth));
        }
    }
    for (t, [small, big]) in LapackType::ALL.iter().zip(worst) {
        println!(
            "{s} {:16} n = 1..64: {:.3} {:.3}; n = 512: {:.3} {:.3}",
            Case::Lapack(*t).to_string(),
            small.0,
            small.1,
            big.0,
            big.1
        );
    }
    Ok(())
}

/// One trial per row and strategy, named `<strategy>_<row>`.
pub(crate) fn trials() -> Vec<(String, BoxedTest)> {
    type Row = fn(&GpuBackend, Strategy) -> Result<(), Failed>;
    let rows: [(&str, Row); 7] = [
        (
            "non_finite_flags_only_its_matrix",
            non_finite_flags_only_its_matrix,
        ),
        ("special_matrices", special_matrices),
        ("order_one", order_one),
        ("empty_batches", empty_batches),
        ("overflow_flagged", overflow_flagged),
        ("poisoned_outputs_are_written", poisoned_outputs_are_written),
        ("lapack_recipe", lapack_recipe),
    ];
    let mut t: Vec<(String, BoxedTest)> = Vec::new();
    for s in Strategy::ALL {
        for (name, row) in rows {
            t.push((
                format!("{s}_{name}"),
                Box::new(move |g: &Arc<GpuBackend>| row(g, s)),
            ));
        }
    }
    t
}
