//! `--backend auto|cpu|gpu` and `--plan`: which backend a subcommand runs on.

use clap::{Args, ValueEnum};
use qr_core::Backend;
use qr_cpu::CpuBackend;
use qr_gpu::{GpuBackend, Strategy};

use crate::error::CliError;

/// Where to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// The GPU when one is usable, else the CPU (the first line says which and why).
    Auto,
    /// The pure-Rust CPU reference.
    Cpu,
    /// The CUDA engine on device 0 (an error when there is none).
    Gpu,
}

/// The backend options shared by `suite` and `check`.
#[derive(Clone, Debug, Args)]
pub struct BackendOpts {
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    pub backend: BackendKind,
    /// Force this GPU strategy instead of the planner's choice (see `qr plan`).
    #[arg(long, value_name = "STRATEGY")]
    pub plan: Option<String>,
}

/// A backend and the one line that says what it is and why it was chosen.
pub struct Selected {
    /// The backend to run on.
    pub backend: Box<dyn Backend>,
    /// Printed as the first line of a subcommand's output.
    pub reason: String,
}

impl std::fmt::Debug for Selected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selected")
            .field("backend", &self.backend.name())
            .field("reason", &self.reason)
            .finish()
    }
}

/// Builds the backend `opts` asks for.
pub fn select(opts: &BackendOpts) -> Result<Selected, CliError> {
    let strategy = opts.plan.as_deref().map(parse_strategy).transpose()?;
    match (opts.backend, strategy) {
        (BackendKind::Cpu, Some(_)) => Err(CliError(
            "--plan forces a GPU strategy; it has no meaning with --backend cpu".into(),
        )),
        (BackendKind::Cpu, None) => Ok(cpu("asked for".into())),
        (BackendKind::Gpu, strategy) => gpu(strategy),
        (BackendKind::Auto, None) => {
            let choice = qr_rs::best_backend();
            Ok(Selected {
                backend: choice.backend,
                reason: format!("auto picked {}", choice.reason),
            })
        }
        // A forced strategy only exists on a GPU: use one if present, else
        // say that the CPU runs and the strategy was not applied.
        (BackendKind::Auto, Some(strategy)) => match qr_gpu::probe() {
            Ok(_) => gpu(Some(strategy)).map(|s| Selected {
                reason: format!("auto picked {}", s.reason),
                ..s
            }),
            Err(why) => Ok(cpu(format!(
                "auto picked it: no usable GPU ({why}), so --plan is not applied"
            ))),
        },
    }
}

/// The GPU engine on device 0, with `strategy` forced when given.
pub fn gpu(strategy: Option<Strategy>) -> Result<Selected, CliError> {
    let device = qr_gpu::probe().map_err(|e| CliError(format!("--backend gpu: {e}")))?;
    let forced = strategy
        .as_ref()
        .map_or_else(String::new, |s| format!(", strategy {s} forced"));
    let backend = GpuBackend::new(0)?.with_strategy(strategy);
    Ok(Selected {
        backend: Box::new(backend),
        reason: format!("gpu: {device}{forced}"),
    })
}

fn cpu(why: String) -> Selected {
    let backend = CpuBackend::new();
    Selected {
        reason: format!("{} ({why})", backend.describe()),
        backend: Box::new(backend),
    }
}

/// Parses a `--plan`/`--strategy` value with the GPU crate's own names.
pub fn parse_strategy(s: &str) -> Result<Strategy, CliError> {
    s.parse::<Strategy>()
        .map_err(|e| CliError(format!("strategy `{s}`: {e}")))
}
