//! `qr plan`: the GPU plan for a shape, or why there is no GPU to plan for.

use clap::Args;
use qr_core::Shape;
use qr_gpu::GpuBackend;

use crate::error::{CliError, Outcome};
use crate::select::parse_strategy;
use crate::suite::OpArg;

/// Arguments of `qr plan`.
#[derive(Clone, Debug, Args)]
pub struct PlanArgs {
    /// Order of each matrix.
    #[arg(long)]
    pub n: usize,
    /// Matrices in the batch.
    #[arg(long)]
    pub batch: usize,
    /// Force this strategy instead of the planner's choice.
    #[arg(long, value_name = "STRATEGY")]
    pub strategy: Option<String>,
    /// The operation whose launches to print.
    #[arg(long, value_enum, default_value = "geqrf")]
    pub op: OpArg,
}

/// Runs `qr plan`. Without a device it prints the probe's reason and
/// succeeds: having no GPU is an answer, not a failure of the command.
pub fn run(args: &PlanArgs) -> Result<Outcome, CliError> {
    let shape = Shape::new(args.batch, args.n)?;
    let strategy = args.strategy.as_deref().map(parse_strategy).transpose()?;
    let device = match qr_gpu::probe() {
        Ok(device) => device,
        Err(why) => {
            println!("no GPU to plan for: {why}");
            return Ok(Outcome::MetBar);
        }
    };
    println!("device: {device}");
    let backend = GpuBackend::new(0)?.with_strategy(strategy);
    match args.op {
        OpArg::Geqrf => println!("plan for {shape}: {}", backend.plan(shape)?),
        op => println!("{}", backend.describe_op(shape, op.operation())?),
    }
    Ok(Outcome::MetBar)
}
