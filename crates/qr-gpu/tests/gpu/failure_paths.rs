//! The GPU's failure paths and concurrency (docs/RELIABILITY.md): device
//! out-of-memory, device-resident buffers that do not match their shape,
//! outputs of another shape, and engines used from several threads.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{Backend, Factorization, Info, QrError, Shape, geqrf};
use qr_gpu::GpuBackend;
use qr_verify::{Case, generate};

use super::behaviour::{INFO_POISON, POISON, poisoned_outputs, poisoned_parts, read_back};
use super::common::{gate, same_f32_bits, spec};

/// A normal batch through both APIs still meets the bar.
fn still_works(g: &GpuBackend, what: &str) -> Result<(), Failed> {
    let sp = spec(3, 200, 1.0, Case::Dense);
    let shape = sp.shape()?;
    let a = generate(&sp, 61);
    gate(g, shape, &a, &format!("{what}, then {sp}"))?;
    let da = g.upload(&a)?;
    let mut dev = g.alloc_outputs(shape)?;
    g.geqrf_device(&da, &mut dev)?;
    let f = read_back(g, &dev)?;
    let host = geqrf(g, shape, &a)?;
    if !f.all_ok() || !same_f32_bits(&f.h, &host.h) || !same_f32_bits(&f.tau, &host.tau) {
        return Err(format!("{what}: the device API disagrees with the host API after").into());
    }
    Ok(())
}

/// Outputs larger than the device's memory are `OutOfMemory` on `"device"`;
/// a host-API call made while the device is full fails with an error (or
/// factors correctly); the same backend then factors normally.
fn device_out_of_memory(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let n = 1024;
    let batch = g.device().total_mem / (n * n * 4) + 1;
    let shape = Shape::new(batch, n)?;
    match g.alloc_outputs(shape) {
        Err(QrError::OutOfMemory {
            location: "device", ..
        }) => {}
        Err(e) => return Err(format!("outputs of {shape}: {e}, want OutOfMemory").into()),
        Ok(_) => {
            return Err(format!("outputs of {shape} fit {} bytes", g.device().total_mem).into());
        }
    }
    still_works(g, "after an unallocatable batch")?;

    // Fill the device, then ask for a batch whose staging cannot fit.
    let mut hog = Vec::new();
    for chunk in [8192usize, 1024, 128] {
        while hog.len() < 100_000 {
            match g.alloc_outputs(Shape::new(1, chunk)?) {
                Ok(d) => hog.push(d),
                Err(QrError::OutOfMemory { .. }) => break,
                Err(e) => return Err(format!("filling the device: {e}").into()),
            }
        }
    }
    let sp = spec(2, 2048, 1.0, Case::Dense);
    let a = generate(&sp, 62);
    match geqrf(&**g, sp.shape()?, &a) {
        Ok(f) => {
            let report = qr_verify::check(sp.shape()?, &a, &f.h, &f.tau)?;
            if !f.all_ok() || !report.meets_bar() {
                return Err(format!("{sp} on a full device: returned Ok but wrong").into());
            }
            println!("{sp} on a full device: factored");
        }
        Err(e) => println!("{sp} on a full device: {e}"),
    }
    drop(hog);
    g.stream()
        .synchronize()
        .map_err(|e| format!("synchronizing: {e:?}"))?;
    still_works(g, "after a call on a full device")
}

/// `geqrf_device` with a buffer shorter than its shape needs returns
/// `LengthMismatch` naming it and writes nothing; buffers longer than the
/// shape are fine.
fn device_api_rejects_short_buffers(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let shape = Shape::new(3, 40)?;
    let (a_len, t_len, i_len) = (shape.a_len(), shape.tau_len(), shape.info_len());
    let a = generate(&spec(3, 40, 1.0, Case::Dense), 63);
    let da = g.upload(&a)?;
    let short_a = g.upload(&a[..a_len - 1])?;
    let cases = [
        ("a", &short_a, (a_len, t_len, i_len)),
        ("h", &da, (a_len - 1, t_len, i_len)),
        ("tau", &da, (a_len, t_len - 1, i_len)),
        ("info", &da, (a_len, t_len, i_len - 1)),
    ];
    for (buffer, input, (h, tau, info)) in cases {
        let mut dev = poisoned_parts(g, shape, h, tau, info)?;
        match g.geqrf_device(input, &mut dev) {
            Err(QrError::LengthMismatch { what, .. }) if what == buffer => {}
            other => return Err(format!("short {buffer}: {other:?}, want LengthMismatch").into()),
        }
        // Nothing was launched: every element still holds the poison.
        let s = g.stream();
        let hh = s.clone_dtoh(&dev.h).map_err(|e| format!("{e:?}"))?;
        let th = s.clone_dtoh(&dev.tau).map_err(|e| format!("{e:?}"))?;
        let ih = s.clone_dtoh(&dev.info).map_err(|e| format!("{e:?}"))?;
        let untouched = hh.iter().chain(&th).all(|x| x.to_bits() == POISON)
            && ih.iter().all(|&i| i == INFO_POISON);
        if !untouched {
            return Err(format!("short {buffer}: outputs were written").into());
        }
    }
    // Longer buffers than the shape needs: factored, the tail untouched.
    let mut dev = poisoned_parts(g, shape, a_len + 7, t_len + 3, i_len + 2)?;
    g.geqrf_device(&da, &mut dev)?;
    let f = read_back(g, &dev)?;
    let host = geqrf(&**g, shape, &a)?;
    if !same_f32_bits(&f.h, &host.h) || !same_f32_bits(&f.tau, &host.tau) || !f.all_ok() {
        return Err("longer device buffers: wrong result".into());
    }
    let s = g.stream();
    let hh = s.clone_dtoh(&dev.h).map_err(|e| format!("{e:?}"))?;
    let th = s.clone_dtoh(&dev.tau).map_err(|e| format!("{e:?}"))?;
    let ih = s.clone_dtoh(&dev.info).map_err(|e| format!("{e:?}"))?;
    let tail_untouched = hh[a_len..]
        .iter()
        .chain(&th[t_len..])
        .all(|x| x.to_bits() == POISON)
        && ih[i_len..].iter().all(|&i| i == INFO_POISON);
    if !tail_untouched {
        return Err("longer device buffers: written beyond the shape".into());
    }
    Ok(())
}

/// `download` into host outputs of another shape, or from device buffers
/// shorter than their shape, is an error (never a panic) and leaves the host
/// outputs untouched.
fn device_api_download_checks_lengths(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let shape = Shape::new(3, 40)?;
    let dev = poisoned_outputs(g, shape)?;
    for other in [Shape::new(2, 40)?, Shape::new(3, 41)?] {
        let mut f = Factorization::zeroed(other)?;
        if g.download(&dev, f.as_batch_mut()?).is_ok() {
            return Err(format!("downloading {shape} into {other} succeeded").into());
        }
        if !f.h.iter().chain(&f.tau).all(|&x| x == 0.0) || !f.all_ok() {
            return Err(format!("downloading {shape} into {other} wrote outputs").into());
        }
    }
    let mut short = poisoned_parts(g, shape, shape.a_len() - 1, shape.tau_len(), 3)?;
    short.shape = shape;
    let mut f = Factorization::zeroed(shape)?;
    if g.download(&short, f.as_batch_mut()?).is_ok() {
        return Err("downloading from a too-short device H succeeded".into());
    }
    Ok(())
}

/// The host API with outputs of another shape is an error and leaves the
/// outputs untouched.
fn outputs_of_another_shape(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let shape = Shape::new(2, 8)?;
    let a = generate(&spec(2, 8, 1.0, Case::Dense), 64);
    let input = qr_core::BatchRef::new(shape, &a)?;
    for (batch, n) in [(3, 8), (1, 8), (2, 9), (2, 7), (8, 4)] {
        let other = Shape::new(batch, n)?;
        let mut f = Factorization::zeroed(other)?;
        f.h.fill(f32::from_bits(POISON));
        f.tau.fill(f32::from_bits(POISON));
        f.info.fill(Info(INFO_POISON));
        if g.geqrf_into(input, f.as_batch_mut()?).is_ok() {
            return Err(format!("input {shape}, outputs {other}: accepted").into());
        }
        let untouched = f.h.iter().chain(&f.tau).all(|x| x.to_bits() == POISON)
            && f.info.iter().all(|&i| i == Info(INFO_POISON));
        if !untouched {
            return Err(format!("input {shape}, outputs {other}: outputs written").into());
        }
    }
    Ok(())
}

/// Two engines (two `GpuBackend::new`), each driven from its own thread at
/// the same time, and one engine shared by two threads: every result is
/// bit for bit the serial one.
fn engines_in_threads(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let cases: Vec<(Shape, Vec<f32>)> = [
        (3, 33, Case::Dense),
        (3, 200, Case::Mixed),
        (2, 513, Case::Dense),
        (1, 1000, Case::Mixed),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (batch, n, case))| {
        let sp = spec(batch, n, 1.0, case);
        Ok((sp.shape()?, generate(&sp, 70 + i as u64)))
    })
    .collect::<Result<_, QrError>>()?;
    let serial: Vec<Factorization> = cases
        .iter()
        .map(|(shape, a)| geqrf(&**g, *shape, a))
        .collect::<Result<_, _>>()?;
    let other = GpuBackend::new(0)?;
    let run = |b: &GpuBackend, who: &str, offset: usize| -> Result<(), String> {
        for round in 0..4 {
            for k in 0..cases.len() {
                let i = (k + offset + round) % cases.len();
                let (shape, a) = &cases[i];
                let f = geqrf(b, *shape, a).map_err(|e| format!("{who}: {e}"))?;
                if f.info != serial[i].info
                    || !same_f32_bits(&f.h, &serial[i].h)
                    || !same_f32_bits(&f.tau, &serial[i].tau)
                {
                    return Err(format!("{who}, round {round}: {shape} differs from serial"));
                }
            }
        }
        Ok(())
    };
    let pairs: [(&GpuBackend, &GpuBackend, &str); 2] = [
        (&**g, &other, "two engines"),
        (&**g, &**g, "one engine, two threads"),
    ];
    for (x, y, what) in pairs {
        let (rx, ry) = std::thread::scope(|sc| {
            let tx = sc.spawn(|| run(x, &format!("{what}, thread 0"), 0));
            let ty = sc.spawn(|| run(y, &format!("{what}, thread 1"), 1));
            let join = |t: std::thread::ScopedJoinHandle<'_, Result<(), String>>| {
                t.join()
                    .unwrap_or_else(|_| Err(format!("{what}: a thread panicked")))
            };
            (join(tx), join(ty))
        });
        rx?;
        ry?;
    }
    Ok(())
}

/// 70,000 matrices (more than a grid's y or z dimension holds) of orders 2
/// and 8: the planner's choice factors them all; a forced strategy factors
/// them or says it cannot (`Unsupported`), never returns wrong results.
fn many_small_matrices(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for n in [2, 8] {
        let sp = spec(70_000, n, 1.0, Case::Dense);
        let shape = sp.shape()?;
        let a = generate(&sp, 65);
        gate(&**g, shape, &a, &format!("{sp}, planned"))?;
        for s in qr_gpu::Strategy::ALL {
            let b = (**g).clone().with_strategy(Some(s));
            match geqrf(&b, shape, &a) {
                Err(QrError::Unsupported { .. }) => {}
                Err(e) => return Err(format!("{s} {sp}: {e}").into()),
                Ok(_) => gate(&b, shape, &a, &format!("{s} {sp}"))?,
            }
        }
    }
    Ok(())
}

/// The plain trials of this file.
pub(crate) const TRIALS: [(&str, super::Test); 6] = [
    ("many_small_matrices", many_small_matrices),
    ("device_out_of_memory", device_out_of_memory),
    (
        "device_api_rejects_short_buffers",
        device_api_rejects_short_buffers,
    ),
    (
        "device_api_download_checks_lengths",
        device_api_download_checks_lengths,
    ),
    ("outputs_of_another_shape", outputs_of_another_shape),
    ("engines_in_threads", engines_in_threads),
];
