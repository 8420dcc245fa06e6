//! `qr plan`: the GPU plan for a shape, on this machine's GPU or on a
//! modelled board (`--device-model`, no GPU needed), or why there is no GPU
//! to plan for.

use clap::Args;
use qr_core::Shape;
use qr_gpu::{DeviceInfo, GpuBackend, Planner, Tuning};

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
    /// Plan for this modelled board instead of the machine's GPU (none
    /// needed), with the default tuning: a100, rtx-a6000, l40s, h100, h200,
    /// b200 or rtx-5090.
    #[arg(long, value_name = "BOARD")]
    pub device_model: Option<String>,
}

/// Lowercase letters and digits of `s`, so that `RTX 5090` is `rtx5090`.
fn squeeze(s: &str) -> String {
    s.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The modelled board `name` names (its letters and digits within one
/// board's name, and no other's).
fn model(name: &str) -> Result<DeviceInfo, CliError> {
    let want = squeeze(name);
    let models = DeviceInfo::models();
    let names: Vec<&str> = models.iter().map(|d| d.name.as_str()).collect();
    let mut found = models
        .iter()
        .filter(|d| !want.is_empty() && squeeze(&d.name).contains(&want));
    match (found.next(), found.next()) {
        (Some(d), None) => Ok(d.clone()),
        _ => Err(CliError(format!(
            "--device-model {name}: not one of the modelled boards ({})",
            names.join(", ")
        ))),
    }
}

/// Runs `qr plan`. Without a device it prints the probe's reason and
/// succeeds: having no GPU is an answer, not a failure of the command.
pub fn run(args: &PlanArgs) -> Result<Outcome, CliError> {
    let shape = Shape::new(args.batch, args.n)?;
    let strategy = args.strategy.as_deref().map(parse_strategy).transpose()?;
    if let Some(name) = &args.device_model {
        let device = model(name)?;
        let tuning = Tuning::default();
        let planner = Planner::new(&device, &tuning, strategy);
        println!("device: {device} (modelled, no GPU used)");
        print(&planner, shape, args.op)?;
        return Ok(Outcome::MetBar);
    }
    let device = match qr_gpu::probe() {
        Ok(device) => device,
        Err(why) => {
            println!("no GPU to plan for: {why}");
            return Ok(Outcome::MetBar);
        }
    };
    println!("device: {device}");
    let backend = GpuBackend::new(0)?.with_strategy(strategy);
    print(&backend.planner(), shape, args.op)?;
    Ok(Outcome::MetBar)
}

/// Prints what `op` launches for `shape` under `planner`.
fn print(planner: &Planner<'_>, shape: Shape, op: OpArg) -> Result<(), CliError> {
    match op {
        OpArg::Geqrf => {
            let plan = planner.plan(shape)?;
            println!("plan for {shape}: {plan}");
            println!("launches: {}", plan.parameters());
        }
        op => println!("{}", planner.describe_op(shape, op.operation())?),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boards_are_named_by_their_letters_and_digits() {
        assert_eq!(model("h100").unwrap().name, "H100 SXM 80GB");
        assert_eq!(model("RTX-5090").unwrap().name, "RTX 5090");
        assert_eq!(model("a6000").unwrap().name, "RTX A6000");
        assert!(model("h").is_err(), "H100 and H200 both match");
        assert!(model("v100").is_err());
        assert!(model("").is_err());
    }
}
