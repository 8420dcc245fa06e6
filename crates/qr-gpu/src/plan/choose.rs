//! The planner: the strategy for a shape on a device (or a forced one,
//! checked), then the launch parameters that strategy takes there.

use qr_core::{QrError, Shape};

use super::fit::{has_clusters, panel_fit_rows, smem_fit_n};
use super::smem_layout::smem_layout;
use super::{Blocked, Meeting, Panel, Plan, Route, Schedule, Strategy, TensorUpdate, Update};
use crate::device::probe::DeviceInfo;
use crate::kernels::{panel, trailing_tc};
use crate::tuning::Tuning;

/// Fewest L2 capacities of input a batch needs for the tensor-core update's
/// L2 eviction priorities (`Tuning::tensor_l2_hints`): a smaller batch's
/// trailing matrices stay in L2 from one step to the next, and evicting its
/// stores first would send the next step to DRAM. A rule from the traffic
/// argument (docs/PERF.md, `tensor_l2_hints`), not a measured choice:
/// 640 x 512, 60 x 1024, 8 x 2048 and 2 x 4096 are 2.1 to 10.7 L2s of
/// 60 MiB, 40 x 352 a third of one.
const L2_HINTS_MIN_L2: u64 = 2;

/// Fewest rows per block of a row-split tile (`Tuning::tensor_row_split`):
/// shorter shares would spend more on the cluster's meeting than their
/// rows take (docs/PERF.md, `tensor_row_split`).
const ROW_SPLIT_MIN_ROWS: usize = 128;

/// Cluster size for `shape` on `device`: the largest power of two up to
/// `tuning.cluster_max_blocks` that the batch leaves SMs for, with at least
/// `tuning.cluster_min_rows` rows per block, and enough blocks to hold a
/// panel in their shared memory. `None` when no cluster size fits.
fn cluster_size(shape: Shape, device: &DeviceInfo, tuning: &Tuning) -> Option<u32> {
    let n = shape.n().max(1);
    let max = tuning.cluster_max_blocks.clamp(1, 8) as usize;
    let need = n.div_ceil(panel_fit_rows(device).max(1));
    if need > max {
        return None;
    }
    let fill =
        (device.sm_count * tuning.cluster_blocks_per_sm.max(1)) as usize / shape.batch().max(1);
    let by_rows = n / tuning.cluster_min_rows.max(1);
    let mut k = 2;
    while k * 2 <= max.min(fill).min(by_rows) {
        k *= 2;
    }
    Some(k.max(need.next_power_of_two()).min(max) as u32).filter(|&k| k >= need as u32)
}

/// Whether `cluster` is the choice for few matrices: a panel too tall for
/// one block needs one; otherwise the cluster must have at least
/// `Tuning::cluster_min_blocks` blocks of fewer than
/// `Tuning::cluster_max_block_rows` rows each, or the one-barrier panel
/// of a block alone is faster (table "few matrices").
fn cluster_pays(shape: Shape, device: &DeviceInfo, tuning: &Tuning) -> bool {
    let Some(k) = cluster_size(shape, device, tuning) else {
        return false;
    };
    let n = shape.n();
    n > panel_fit_rows(device)
        || (k >= tuning.cluster_min_blocks
            && n.div_ceil(k as usize) < tuning.cluster_max_block_rows)
}

/// Warps per tensor-update block: 4 once the first trailing update (after
/// one 32-column panel) fills the SMs' resident 8-warp blocks
/// `Tuning::tensor_warps4_min_waves` times over (with that many waves the
/// smaller blocks' finer grain wins, with few the 8-warp blocks' wider row
/// split does), else 8.
fn tensor_warps(shape: Shape, device: &DeviceInfo, tuning: &Tuning) -> u32 {
    let tiles = shape.n().saturating_sub(32).div_ceil(trailing_tc::BN);
    let blocks = shape.batch().saturating_mul(tiles);
    let slots = (device.sm_count * trailing_tc::resident_blocks(8)).max(1) as usize;
    let waves = u64::from(tuning.tensor_warps4_min_waves);
    if blocks as u64 >= (slots as u64).saturating_mul(waves) {
        4
    } else {
        8
    }
}

/// Chooses (or checks a forced) strategy for `shape` on `device`.
pub fn plan(
    shape: Shape,
    device: &DeviceInfo,
    tuning: &Tuning,
    forced: Option<Strategy>,
) -> Result<Plan, QrError> {
    let n = shape.n();
    let smem_n = smem_fit_n(device);
    let panel_rows = panel_fit_rows(device);
    let (strategy, reason) = match forced {
        Some(s) => (s, "forced by the caller".to_string()),
        None if n <= smem_n.min(tuning.smem_max_n) => (
            Strategy::Smem,
            format!(
                "n <= {} fits one block's shared memory",
                smem_n.min(tuning.smem_max_n)
            ),
        ),
        None if has_clusters(device)
            && n > smem_n.min(tuning.smem_max_n)
            && shape.batch() * 2 <= device.sm_count as usize
            && n >= 2 * tuning.cluster_min_rows
            && cluster_pays(shape, device, tuning) =>
        {
            (
                Strategy::Cluster,
                format!(
                    "{} matrices leave SMs idle: each panel's rows split over a cluster",
                    shape.batch()
                ),
            )
        }
        None if n <= panel_rows => (
            Strategy::Blocked,
            format!("a {n}-row panel fits one block's shared memory (<= {panel_rows} rows)"),
        ),
        None => (
            Strategy::Large,
            format!("a {n}-row panel exceeds one block's {panel_rows} rows"),
        ),
    };
    let route = match strategy {
        Strategy::Smem => {
            if n > smem_n {
                let why = format!("holds the whole matrix in shared memory: n = {n} > {smem_n}");
                return Err(refused(Strategy::Smem, &why, device));
            }
            Route::Small(smem_layout(shape, device, tuning))
        }
        _ => Route::Blocked(blocked(shape, strategy, device, tuning)?),
    };
    Ok(Plan {
        shape,
        forced: forced.is_some(),
        route,
        reason,
    })
}

/// Why `strategy` cannot run on `device`: it `why`.
fn refused(strategy: Strategy, why: &str, device: &DeviceInfo) -> QrError {
    QrError::Unsupported {
        message: format!(
            "strategy {strategy} cannot run on {}: it {why}",
            device.name
        ),
    }
}

/// The panel loop of a blocked `strategy` for `shape` on `device`, or why
/// that strategy cannot run there.
fn blocked(
    shape: Shape,
    strategy: Strategy,
    device: &DeviceInfo,
    tuning: &Tuning,
) -> Result<Blocked, QrError> {
    let n = shape.n();
    let panel_rows = panel_fit_rows(device);
    let tensor = tuning.tensor_trailing && device.compute_capability >= (8, 0);
    let (meeting, panel) = match strategy {
        Strategy::Blocked => {
            if n > panel_rows {
                let why = format!("holds a whole panel in one block: n = {n} > {panel_rows} rows");
                return Err(refused(Strategy::Blocked, &why, device));
            }
            (Meeting::Alone, alone_panel(shape, device, tuning, tensor))
        }
        Strategy::Cluster => {
            if !has_clusters(device) {
                let why = "needs thread-block clusters (sm_90+)";
                return Err(refused(Strategy::Cluster, why, device));
            }
            let k = cluster_size(shape, device, tuning).ok_or_else(|| QrError::Unsupported {
                message: format!(
                    "a {n}-row panel does not fit the shared memory of a {}-block cluster on {}",
                    tuning.cluster_max_blocks, device.name
                ),
            })?;
            let panel = match tuning.reg_panel_threads_for(n.div_ceil(k as usize)) {
                Some(threads) => Panel::Registers {
                    threads,
                    rows_per_thread: tuning.reg_panel_rows_per_thread,
                    min_threads: 64,
                    halves: false,
                },
                None => Panel::Shared {
                    threads: tuning.cluster_panel_threads,
                    pipelined: false,
                    fold: false,
                },
            };
            (Meeting::Cluster(k), panel)
        }
        // `plan` routes `Smem` to the whole-matrix kernel, never here.
        Strategy::Large | Strategy::Smem => {
            if !device.cooperative_launch {
                return Err(refused(
                    Strategy::Large,
                    "needs cooperative launches",
                    device,
                ));
            }
            let (min_rows, max_rows) = tuning.large_rows_per_block;
            let max_rows = max_rows.min(panel_rows).max(1);
            let fewest = n.div_ceil(max_rows).max(1);
            let most = n.div_ceil(min_rows.max(1)).max(fewest);
            let fill = (device.sm_count as usize).div_ceil(shape.batch().max(1));
            let panel = Panel::Shared {
                threads: tuning.large_panel_threads,
                pipelined: false,
                fold: false,
            };
            (Meeting::Global(fill.clamp(fewest, most) as u32), panel)
        }
    };
    let update = if tensor {
        Update::Tensor(TensorUpdate {
            warps: tensor_warps(shape, device, tuning),
            stage_depth: tuning.tensor_stage_depth,
            l2_hints: if shape.a_bytes() as u64 >= L2_HINTS_MIN_L2 * device.l2_bytes as u64 {
                tuning.tensor_l2_hints
            } else {
                0
            },
            row_split: if has_clusters(device) {
                tuning.tensor_row_split
            } else {
                0
            },
            row_split_min_rows: ROW_SPLIT_MIN_ROWS,
        })
    } else {
        Update::Sgemm
    };
    // The writers check H and tau themselves: the register panel and the
    // tensor-core update (the folding panel does not check).
    let fused_checks = tensor && matches!(panel, Panel::Registers { .. });
    // Out of place (the tensor-core update reads the input), the scan may
    // run beside the first steps on the auxiliary stream.
    let checks_aside = tensor
        && tuning
            .checks_aside_min_l2
            .is_some_and(|l2s| shape.a_bytes() as u64 >= u64::from(l2s) * device.l2_bytes as u64);
    // Graphs: the chains of the blocked and cluster paths on the tensor-core
    // update (cuBLAS and cooperative launches stay outside them), not beside
    // the low-priority checks stream (forked inside the capture, it was not
    // faster: docs/PERF.md). Graph node priorities (graph.rs) came with
    // CUDA 11.7.
    let graph = device.driver_version >= 11070
        && !matches!(meeting, Meeting::Global(_))
        && tensor
        && !checks_aside;
    // Look-ahead: the panels on the priority stream ahead of the bulk
    // updates, where there is a next panel and no cooperative launch.
    let ahead = tensor && meeting.kernel() != panel::Meeting::Global && n > panel::NB;
    // Lanes: batches of several matrices per SM outside graphs (a graph's
    // key holds lane 0's scratch only), on the tensor-core update (the
    // SGEMM update queues on the cuBLAS handle's stream, the engine's, not
    // on a lane's).
    let lanes = if meeting == Meeting::Alone
        && tensor
        && !graph
        && (shape.batch() as u64)
            >= u64::from(tuning.batch_lanes_min_batch_per_sm) * u64::from(device.sm_count)
    {
        tuning
            .batch_lanes
            .clamp(1, super::MAX_LANES as u32)
            .min(shape.batch().max(1) as u32)
    } else {
        1
    };
    Ok(Blocked {
        meeting,
        panel,
        update,
        schedule: Schedule {
            graph,
            ahead,
            lanes,
            fused_checks,
            checks_aside,
        },
    })
}

/// The panel kernel of a block alone (`blocked`): the shared-memory panel
/// (pipelined or folding where that pays) or the register panel.
fn alone_panel(shape: Shape, device: &DeviceInfo, tuning: &Tuning, tensor: bool) -> Panel {
    let n = shape.n();
    // At most one matrix per SM: each panel block has its SM alone.
    let alone = shape.batch() <= device.sm_count as usize;
    let tall = alone && n >= tuning.blocked_tall_panel_rows;
    let threads = if tall {
        tuning.blocked_tall_panel_threads
    } else {
        tuning.blocked_panel_threads
    };
    // A block alone on its SM: the pipelined loop pays where its warps are
    // too few to hide the row loop's latency.
    let pipelined = alone && threads <= tuning.panel_pipeline_max_threads;
    // Alone too: the fold's extra shared memory is free there, and its
    // launch saved is on the chain; where the fold and the panel fit a
    // block's shared memory together, and the kernel's W pass (4 x 4
    // blocks on 64 threads at a time) fits the block.
    let fold_variant = panel::Variant {
        fold: true,
        ..Default::default()
    };
    let fold_bytes = n * panel::NB * 4
        + fold_variant.fold_bytes(panel::Meeting::Alone, threads, n)
        + panel::FOLD_STATIC_BYTES;
    let fold = tuning.panel_fold_min_n.is_some_and(|min| n >= min)
        && alone
        && fold_bytes <= device.smem_per_block_optin;
    // The register panel: for tall panels of a block alone with the tall
    // panels' block size (as many rows per thread as that takes), and
    // elsewhere where the shared-memory panel does not fold. The folding
    // shared-memory panel was faster below the tall panels (40 x 176), the
    // register panel without a fold from them on (40 x 352, one row per
    // thread; table "register panel"). The register panel does not fold.
    let reg = if fold && !tall {
        None
    } else {
        tuning.reg_panel_for(n, tall)
    };
    match reg {
        // Halves: register panels of one row per thread (a block alone on
        // tall panels, 40 x 352): each thread holds 16 columns of two rows
        // instead, so the transposing butterfly sums 16 partials over half
        // a warp (15 exchanges instead of 31; SASS of the hot loop, NVRTC
        // 13.5, 384 threads: 613 instructions per two steps against 712).
        // Faster on the H100 (40 x 352 499 against 543 us, 40 x 512 872.0
        // against 956.4; docs/PERF.md, "Two rows a thread by halves"). Not
        // at two rows a thread (the kernel's 128 registers spill, NVRTC
        // 13.5).
        Some((threads, rows_per_thread)) => Panel::Registers {
            threads,
            rows_per_thread,
            min_threads: if alone {
                tuning.reg_panel_alone_min_threads
            } else {
                64
            },
            halves: rows_per_thread == 1,
        },
        None => {
            let v = panel::Variant { pipelined, fold }.effective(panel::Meeting::Alone, threads);
            Panel::Shared {
                threads,
                pipelined: v.pipelined,
                // The fold replaces the update launch between two panels,
                // which only the tensor-core update has.
                fold: v.fold && tensor,
            }
        }
    }
}
