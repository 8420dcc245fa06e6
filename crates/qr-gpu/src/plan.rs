//! Plans: which strategy factors a shape on a device, with its launch
//! parameters. A plan can be printed and forced, so that every strategy can
//! be tested on its own.

use std::fmt;
use std::str::FromStr;

use qr_core::{QrError, Shape};

use crate::kernels::{panel, smem};
use crate::probe::DeviceInfo;
use crate::tuning::Tuning;

/// Static shared memory of the kernels, kept free of the dynamic allocation
/// (the panel kernel's reduction scratch and T; an upper bound checked
/// against the compiled kernel when it loads).
pub(crate) const STATIC_SMEM_RESERVE: usize = 20 * 1024;

/// How a batch is factored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Unblocked Householder, one block per matrix, whole matrix in shared memory.
    Smem,
    /// Compact WY with 32-column panels: one block per matrix factors each
    /// panel in shared memory, cuBLAS applies it to the trailing matrix.
    Blocked,
    /// As `Blocked`, with each panel's rows split over several blocks per
    /// matrix (for panels too tall for one block's shared memory).
    Large,
}

impl Strategy {
    /// Every strategy.
    pub const ALL: [Strategy; 3] = [Strategy::Smem, Strategy::Blocked, Strategy::Large];

    /// The name used by `FromStr`/`Display`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Smem => "smem",
            Self::Blocked => "blocked",
            Self::Large => "large",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Strategy {
    type Err = QrError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|st| st.name() == s)
            .ok_or_else(|| QrError::Unsupported {
                message: format!("unknown GPU strategy `{s}` (expected smem, blocked or large)"),
            })
    }
}

/// Launch parameters of the panel paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PanelPlan {
    /// Threads per panel block.
    pub threads: u32,
    /// Blocks per matrix sharing each panel's rows (1 on `Blocked`).
    pub groups: u32,
}

/// The strategy and launch parameters chosen for one shape on one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The shape planned for.
    pub shape: Shape,
    /// The strategy.
    pub strategy: Strategy,
    /// Whether the strategy was forced rather than chosen.
    pub forced: bool,
    /// `Smem`: threads per column.
    pub tpc: u32,
    /// `Smem`: threads per block.
    pub threads: u32,
    /// `Blocked`/`Large`: panel launch parameters.
    pub panel: PanelPlan,
    /// Why this strategy.
    pub reason: String,
}

impl Plan {
    /// The `-D` defines this plan compiles its kernels with.
    pub fn defines(&self) -> Vec<(String, String)> {
        match self.strategy {
            Strategy::Smem => smem::defines(self.tpc),
            Strategy::Blocked | Strategy::Large => panel::defines(self.panel.threads),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.forced { "forced" } else { "chosen" };
        match self.strategy {
            Strategy::Smem => write!(
                f,
                "{} ({how}) for {}: {} threads, {} per column, {} KiB shared memory; {}",
                self.strategy,
                self.shape,
                self.threads,
                self.tpc,
                smem::smem_bytes(self.shape.n()).div_ceil(1024),
                self.reason
            ),
            _ => write!(
                f,
                "{} ({how}) for {}: 32-column panels, {} block(s) of {} threads per matrix; {}",
                self.strategy, self.shape, self.panel.groups, self.panel.threads, self.reason
            ),
        }
    }
}

/// Largest `n` whose whole matrix fits one block's shared memory.
pub fn smem_fit_n(device: &DeviceInfo) -> usize {
    let budget = device.smem_per_block_optin.saturating_sub(1024);
    let mut n = 0;
    while smem::smem_bytes(n + 1) <= budget {
        n += 1;
    }
    n
}

/// Largest panel height (rows) one block can hold in shared memory.
pub fn panel_fit_rows(device: &DeviceInfo) -> usize {
    device
        .smem_per_block_optin
        .saturating_sub(STATIC_SMEM_RESERVE)
        / panel::ROW_BYTES
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
        None if n <= panel_rows => (
            Strategy::Blocked,
            format!("a {n}-row panel fits one block's shared memory (<= {panel_rows} rows)"),
        ),
        None => (
            Strategy::Large,
            format!("a {n}-row panel exceeds one block's {panel_rows} rows"),
        ),
    };
    let mut p = Plan {
        shape,
        strategy,
        forced: forced.is_some(),
        tpc: 1,
        threads: 32,
        panel: PanelPlan {
            threads: tuning.blocked_panel_threads,
            groups: 1,
        },
        reason,
    };
    match strategy {
        Strategy::Smem => {
            if n > smem_n {
                return Err(QrError::Unsupported {
                    message: format!(
                        "strategy smem needs the whole matrix in shared memory: n = {n} > {smem_n} on {}",
                        device.name
                    ),
                });
            }
            p.tpc = tuning.smem_tpc_for(n);
            p.threads = (n.max(1) * p.tpc as usize).next_multiple_of(32).min(1024) as u32;
        }
        Strategy::Blocked => {
            if n > panel_rows {
                return Err(QrError::Unsupported {
                    message: format!(
                        "strategy blocked holds a whole panel in one block: n = {n} > {panel_rows} rows on {}",
                        device.name
                    ),
                });
            }
        }
        Strategy::Large => {
            if !device.cooperative_launch {
                return Err(QrError::Unsupported {
                    message: format!(
                        "strategy large needs cooperative launches, which {} lacks",
                        device.name
                    ),
                });
            }
            let (min_rows, max_rows) = tuning.large_rows_per_block;
            let max_rows = max_rows.min(panel_rows).max(1);
            let fewest = n.div_ceil(max_rows).max(1);
            let most = n.div_ceil(min_rows.max(1)).max(fewest);
            let fill = (device.sm_count as usize).div_ceil(shape.batch().max(1));
            p.panel = PanelPlan {
                threads: tuning.large_panel_threads,
                groups: fill.clamp(fewest, most) as u32,
            };
        }
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "test H200".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            smem_per_block_optin: 232_448,
            smem_per_sm: 233_472,
            l2_bytes: 60 << 20,
            total_mem: 140 << 30,
            cooperative_launch: true,
            driver_version: 13000,
        }
    }

    #[test]
    fn strategies_parse_and_print() {
        for s in Strategy::ALL {
            assert_eq!(s.to_string().parse::<Strategy>().unwrap(), s);
        }
        assert!("tiled".parse::<Strategy>().is_err());
    }

    #[test]
    fn dispatch_follows_the_device_limits() {
        let d = h200();
        let t = Tuning::default();
        let at = |b, n| plan(Shape::new(b, n).unwrap(), &d, &t, None).unwrap();
        assert_eq!(at(20, 32).strategy, Strategy::Smem);
        assert_eq!(at(40, 176).strategy, Strategy::Smem);
        assert_eq!(at(40, 352).strategy, Strategy::Blocked);
        assert_eq!(at(60, 1024).strategy, Strategy::Blocked);
        assert_eq!(at(8, 2048).strategy, Strategy::Large);
        let big = at(2, 4096);
        assert_eq!(big.strategy, Strategy::Large);
        assert!(big.panel.groups >= 2);
        assert!((230..=240).contains(&smem_fit_n(&d)));
    }

    #[test]
    fn forced_strategies_are_checked() {
        let d = h200();
        let t = Tuning::default();
        let s = Shape::new(1, 300).unwrap();
        assert!(plan(s, &d, &t, Some(Strategy::Smem)).is_err());
        let p = plan(s, &d, &t, Some(Strategy::Large)).unwrap();
        assert!(p.forced && p.panel.groups >= 1);
        assert!(p.to_string().starts_with("large (forced)"));
        let tall = Shape::new(1, 4096).unwrap();
        assert!(plan(tall, &d, &t, Some(Strategy::Blocked)).is_err());
    }

    #[test]
    fn smem_blocks_are_whole_warps_of_whole_groups() {
        let d = h200();
        let t = Tuning::default();
        for n in [1, 2, 31, 32, 33, 65, 120, 176, 230] {
            let p = plan(Shape::new(3, n).unwrap(), &d, &t, Some(Strategy::Smem)).unwrap();
            assert_eq!(p.threads % 32, 0);
            assert_eq!(p.threads % p.tpc, 0);
            assert!(p.threads <= 1024);
            assert_eq!(
                p.defines(),
                vec![("SMEM_TPC".to_string(), p.tpc.to_string())]
            );
        }
    }

    #[test]
    fn plan_defines_are_the_ones_the_sources_check() {
        let d = h200();
        let t = Tuning::default();
        for (n, s, src) in [
            (100, Strategy::Smem, &smem::SOURCE),
            (300, Strategy::Blocked, &panel::SOURCE),
            (3000, Strategy::Large, &panel::SOURCE),
        ] {
            let p = plan(Shape::new(2, n).unwrap(), &d, &t, Some(s)).unwrap();
            let defines = p.defines();
            let names: Vec<&str> = defines.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(names, src.defines.to_vec(), "{s}");
        }
    }
}
