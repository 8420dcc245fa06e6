//! The GPU peers, from qr-gpu: cuSOLVER's `Sgeqrf` looped over the batch (as
//! PyTorch's `geqrf` does) and cuBLAS's `SgeqrfBatched`, both on device 0
//! and timed with device events like our GPU backend.

use qr_core::Backend;
use qr_gpu::peers::{CublasBatchedBackend, CusolverBackend};

use crate::error::CliError;

/// The GPU peer called `name`.
pub fn peer(name: &str) -> Result<Box<dyn Backend>, CliError> {
    let peer: Box<dyn Backend> = match name {
        "cusolver" => Box::new(CusolverBackend::new(0)?),
        "cublas-batched" => Box::new(CublasBatchedBackend::new(0)?),
        other => {
            return Err(CliError(format!(
                "unknown GPU peer `{other}` (known: cusolver, cublas-batched)"
            )));
        }
    };
    Ok(peer)
}
