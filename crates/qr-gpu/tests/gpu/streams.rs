//! Work queued other than launch by launch on one stream: plans recorded
//! and replayed as CUDA graphs (beside the checks stream, beside another
//! thread's work, through the device API with new contents each call) and
//! a batch's groups on lanes of their own streams; each bitwise equal to
//! plain queueing.

use std::sync::Arc;

use libtest_mimic::Failed;
use qr_core::{Shape, geqrf};
use qr_gpu::{GpuBackend, PlanEdit, Strategy};
use qr_verify::{Case, generate};

use super::common::{gate, same_bits, same_f32_bits, same_outputs, sizes_and_cases, spec};

/// Plans run as CUDA graphs (`Schedule::graph`, on for the blocked and
/// cluster paths without the checks stream; a call is recorded the second
/// time its plan, operands and workspace are seen and replayed after): on
/// both strategies, sizes around one, two and three panels and every
/// distribution, each bitwise equal to launch-by-launch queueing (the same
/// kernels); then through the device API, two sets of buffers in turn,
/// each call with new input contents (written into its set's input), and
/// another shape in between (the workspace moves, so the recordings that
/// name it are not replayed): every call's outputs are its own input's
/// factorization.
pub(crate) fn graphs(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    for s in [Strategy::Blocked, Strategy::Cluster] {
        let on = (**g).clone().with_strategy(Some(s));
        let off = on
            .clone()
            .with_plan_edit(Some(PlanEdit::launch_by_launch()));
        let specs = sizes_and_cases(&[33, 64, 65, 97, 200, 512, 1000], (3, 300, 0.0), 20);
        same_bits(&on, &off, &specs, 2000, &format!("{s} graphs"))?;
        let small = spec(3, 200, 1.0, Case::Dense);
        let before = |round: u64| -> Result<(), Failed> {
            if round == 6 {
                // A larger shape grows the workspace between calls.
                let big = spec(2, 700, 1.0, Case::Dense);
                gate(
                    &on,
                    big.shape()?,
                    &generate(&big, 2099),
                    &format!("{s} graphs {big}"),
                )?;
            }
            Ok(())
        };
        let input = |round: u64| generate(&small, 2100 + round);
        let label = format!("{s} graphs");
        device_rounds(&on, &off, small.shape()?, 10, &input, &before, &label)?;
    }
    Ok(())
}

/// Plans recorded as graphs on one thread while another thread uploads,
/// factors (a plan without graphs), downloads and drops buffers through
/// the same engine (a dropped buffer's free is queued on the engine's
/// stream, outside any lock): no capture records the other thread's work,
/// so both threads get their own factorizations, bitwise equal to
/// launch-by-launch queueing, on every round. The first thread alternates
/// two output buffers, so each key is run on one round, recorded on a later
/// one and replayed after: two recordings while the other thread runs.
pub(crate) fn graphs_beside_another_thread(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let on = (**g).clone().with_strategy(Some(Strategy::Blocked));
    let off = on
        .clone()
        .with_plan_edit(Some(PlanEdit::launch_by_launch()));
    let (s1, s2) = (
        spec(3, 200, 1.0, Case::Dense),
        spec(4, 48, 1.0, Case::Dense),
    );
    let (sh1, sh2) = (s1.shape()?, s2.shape()?);
    let (a1, a2) = (generate(&s1, 2400), generate(&s2, 2401));
    // The other thread's shape takes the default strategy: its reference
    // comes from the same backend, alone, before the threads start.
    let small = (**g).clone();
    let (w1, w2) = (geqrf(&off, sh1, &a1)?, geqrf(&small, sh2, &a2)?);
    let recorded = || -> Result<(), String> {
        let da = on.upload(&a1).map_err(|e| e.to_string())?;
        let mut outs = [
            on.alloc_outputs(sh1).map_err(|e| e.to_string())?,
            on.alloc_outputs(sh1).map_err(|e| e.to_string())?,
        ];
        for round in 0..8 {
            let out = &mut outs[round % 2];
            on.geqrf_device(&da, out).map_err(|e| e.to_string())?;
            let mut f = qr_core::Factorization::zeroed(sh1).map_err(|e| e.to_string())?;
            let batch = f.as_batch_mut().map_err(|e| e.to_string())?;
            on.download(out, batch).map_err(|e| e.to_string())?;
            if !same_outputs(&f, &w1) {
                return Err(format!("graph thread, round {round}: differs"));
            }
        }
        Ok(())
    };
    let beside = || -> Result<(), String> {
        for round in 0..24 {
            let da = small.upload(&a2).map_err(|e| e.to_string())?;
            let mut out = small.alloc_outputs(sh2).map_err(|e| e.to_string())?;
            small
                .geqrf_device(&da, &mut out)
                .map_err(|e| e.to_string())?;
            let mut f = qr_core::Factorization::zeroed(sh2).map_err(|e| e.to_string())?;
            let batch = f.as_batch_mut().map_err(|e| e.to_string())?;
            small.download(&out, batch).map_err(|e| e.to_string())?;
            if !same_outputs(&f, &w2) {
                return Err(format!("other thread, round {round}: differs"));
            }
            // Frees queued on the engine's stream at any moment.
            for _ in 0..32 {
                drop(small.upload(&a2).map_err(|e| e.to_string())?);
            }
        }
        Ok(())
    };
    let (r1, r2) = std::thread::scope(|sc| {
        let t1 = sc.spawn(recorded);
        let t2 = sc.spawn(beside);
        let join = |t: std::thread::ScopedJoinHandle<'_, Result<(), String>>| {
            t.join().unwrap_or_else(|_| Err("a thread panicked".into()))
        };
        (join(t1), join(t2))
    });
    r1?;
    r2?;
    Ok(())
}

/// Groups of a batch on lanes of their own streams (`Tuning::batch_lanes`):
/// every distribution, batches that do and do not divide evenly (and
/// fewer matrices than lanes), each gated and bitwise equal to one lane.
/// The row split decides by a launch's tile count, which a group changes,
/// so it is off on both sides; lanes are for plans outside graphs.
pub(crate) fn batch_lanes(g: &Arc<GpuBackend>) -> Result<(), Failed> {
    let base = qr_gpu::Tuning {
        tensor_row_split: 0,
        ..qr_gpu::Tuning::default()
    };
    let one = (**g)
        .clone()
        .with_strategy(Some(Strategy::Blocked))
        .with_tuning(base.clone())
        .with_plan_edit(Some(PlanEdit::launch_by_launch()));
    for lanes in [2, 3, 4] {
        // Lanes on batches the planner keeps them from (fewer than two
        // matrices an SM), outside graphs, as the planner would plan them.
        let many = one.clone().with_plan_edit(Some(PlanEdit::schedule(
            "lanes, launch by launch",
            move |s| {
                s.graph = false;
                s.lanes = lanes;
            },
        )));
        let plan = many.plan(Shape::new(9, 200)?)?;
        if plan.blocked().map(|b| b.schedule.lanes) != Some(lanes) || plan.graph() {
            return Err(format!("{lanes} lanes not planned: {plan}").into());
        }
        let mut specs = sizes_and_cases(&[33, 64, 97, 200, 512], (9, 150, 0.0), 10);
        specs.push((spec(2, 100, 1.0, Case::Dense), 30));
        same_bits(&many, &one, &specs, 2700, &format!("{lanes} lanes"))?;
    }
    Ok(())
}

/// `rounds` device-API calls of `on` on `shape`, over two sets of buffers
/// in turn, each call with new contents (`input(round)`, written into its
/// set's input) after `before(round)`: every call's outputs must be bit
/// for bit `off`'s factorization of the same input. Returns the calls'
/// factorizations.
fn device_rounds(
    on: &GpuBackend,
    off: &GpuBackend,
    shape: qr_core::Shape,
    rounds: u64,
    input: &dyn Fn(u64) -> Vec<f32>,
    before: &dyn Fn(u64) -> Result<(), Failed>,
    label: &str,
) -> Result<Vec<qr_core::Factorization>, Failed> {
    let mut sets = Vec::new();
    for _ in 0..2 {
        let a0 = vec![0.0f32; shape.a_len()];
        sets.push((on.upload(&a0)?, on.alloc_outputs(shape)?));
    }
    let mut got = Vec::new();
    for round in 0..rounds {
        before(round)?;
        let a = input(round);
        let (da, out) = &mut sets[(round % 2) as usize];
        on.stream()
            .memcpy_htod(&a, da)
            .map_err(|e| format!("uploading: {e:?}"))?;
        on.geqrf_device(da, out)?;
        let mut f = qr_core::Factorization::zeroed(shape)?;
        on.download(out, f.as_batch_mut()?)?;
        let want = geqrf(off, shape, &a)?;
        if !same_f32_bits(&f.h, &want.h) || !same_f32_bits(&f.tau, &want.tau) || f.info != want.info
        {
            return Err(format!("{label}: device call {round} differs").into());
        }
        got.push(f);
    }
    Ok(got)
}
