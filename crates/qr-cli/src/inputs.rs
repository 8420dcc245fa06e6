//! The ranking's list of inputs and the timing options that size it.

use std::time::Duration;

use clap::Args;
use qr_core::BenchOptions;
use qr_verify::suite::input_seed;
use qr_verify::{RunOptions, Spec, generate};

use crate::error::CliError;

/// How a case is sized and timed (DESIGN section 2: about 256 MiB of inputs,
/// at most 50, repetitions until the mean is known to 1% or the budget ends).
#[derive(Clone, Debug, Args)]
pub struct TimingOpts {
    /// Seed of the inputs; input `i` of a case is generated from a seed derived from it and `i`.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Seconds of timed repetitions per backend and case, once the fewest are done.
    #[arg(long, default_value_t = 4.0, value_name = "SECONDS")]
    pub budget: f64,
    /// Total size of a case's list of inputs, in MiB.
    #[arg(long, default_value_t = 256, value_name = "MIB")]
    pub list_mib: usize,
    /// Most inputs in a case's list.
    #[arg(long, default_value_t = 50, value_name = "N")]
    pub max_inputs: usize,
}

impl TimingOpts {
    /// The suite runner's options, with each case's batch capped at `max_batch`.
    pub fn run_options(&self, max_batch: Option<usize>) -> Result<RunOptions, CliError> {
        let budget = Duration::try_from_secs_f64(self.budget)
            .map_err(|_| CliError(format!("--budget {}: not a duration", self.budget)))?;
        if self.max_inputs == 0 {
            return Err(CliError("--max-inputs must be at least 1".into()));
        }
        if max_batch == Some(0) {
            return Err(CliError("--max-batch must be at least 1".into()));
        }
        Ok(RunOptions {
            seed: self.seed,
            max_batch,
            bench: BenchOptions {
                budget,
                ..BenchOptions::default()
            },
            list_bytes: self.list_mib.saturating_mul(1 << 20),
            max_inputs: self.max_inputs,
        })
    }
}

/// How many inputs of `input_bytes` each the list holds: as many as fit in
/// `list_bytes`, at least one, at most `max_inputs` (the suite runner's rule).
pub fn list_len(input_bytes: usize, opts: &RunOptions) -> usize {
    (opts.list_bytes / input_bytes.max(1)).clamp(1, opts.max_inputs.max(1))
}

/// The list of inputs of `spec`, seeded as the suite runner seeds it, so
/// that `qr bench` and `qr suite` time the same matrices.
pub fn input_list(spec: &Spec, opts: &RunOptions) -> Result<Vec<Vec<f32>>, CliError> {
    let shape = spec.shape()?;
    let count = list_len(shape.a_bytes(), opts);
    Ok((0..count)
        .map(|i| generate(spec, input_seed(opts.seed, i)))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(list_bytes: usize, max_inputs: usize) -> RunOptions {
        RunOptions {
            list_bytes,
            max_inputs,
            ..RunOptions::default()
        }
    }

    #[test]
    fn list_follows_the_ranking_rule() {
        // 640 x 512 x 512 f32 is 640 MiB: more than the list, still one input.
        assert_eq!(list_len(640 << 20, &opts(256 << 20, 50)), 1);
        assert_eq!(list_len(16 << 20, &opts(256 << 20, 50)), 16);
        assert_eq!(list_len(4096, &opts(256 << 20, 50)), 50);
        assert_eq!(list_len(0, &opts(0, 0)), 1);
    }

    #[test]
    fn lists_are_seeded_like_the_suite() {
        let spec: Spec = "2,8,1,dense".parse().unwrap();
        let o = opts(2 * 8 * 8 * 4 * 3, 50);
        let list = input_list(&spec, &o).unwrap();
        assert_eq!(list.len(), 3);
        assert_eq!(list[1], generate(&spec, input_seed(0, 1)));
        assert_ne!(list[0], list[1]);
    }

    #[test]
    fn bad_timing_options_are_errors() {
        let t = TimingOpts {
            seed: 0,
            budget: -1.0,
            list_mib: 1,
            max_inputs: 1,
        };
        assert!(t.run_options(None).is_err());
        let t = TimingOpts { budget: 1.0, ..t };
        assert!(t.run_options(Some(0)).is_err());
        assert_eq!(t.run_options(Some(3)).unwrap().max_batch, Some(3));
    }
}
