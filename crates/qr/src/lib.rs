//! qr-rs: batched Householder QR of square `f32` matrices in the exact LAPACK
//! `geqrf` form, on whatever backend the machine has.
//!
//! The contract (layout, the `(H, tau)` convention, the gate, `info` codes)
//! is documented once, in [`qr_core`], and re-exported here. [`best_backend`]
//! is the one call a program needs to pick a backend at run time:
//!
//! ```
//! let choice = qr_rs::best_backend();
//! println!("{}", choice.reason);
//! let shape = qr_rs::Shape::new(2, 3)?;
//! let a = [4.0, 1.0, 2.0, 0.5, 3.0, 1.0, 0.0, 1.0, 5.0,
//!          1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
//! let f = qr_rs::geqrf(choice.backend.as_ref(), shape, &a)?;
//! assert!(f.all_ok());
//! # Ok::<(), qr_rs::QrError>(())
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub use qr_core::*;
pub use qr_cpu::CpuBackend;
pub use qr_gpu::GpuBackend;

/// A backend chosen by [`best_backend`], with the reason for the choice.
pub struct Choice {
    /// The backend to use.
    pub backend: Box<dyn Backend>,
    /// One line saying what was picked and why (e.g. why there is no GPU).
    pub reason: String,
}

impl std::fmt::Debug for Choice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Choice")
            .field("backend", &self.backend.name())
            .field("reason", &self.reason)
            .finish()
    }
}

/// The fastest backend present: the GPU engine on device 0 when the probe
/// finds a usable CUDA device, otherwise the CPU reference. Never panics; on
/// a machine without CUDA it returns the CPU backend and says why.
pub fn best_backend() -> Choice {
    let gpu = qr_gpu::probe()
        .and_then(|device| qr_gpu::GpuBackend::new(0).map(|backend| (device, backend)));
    match gpu {
        Ok((device, backend)) => Choice {
            backend: Box::new(backend),
            reason: format!("gpu: {device}"),
        },
        Err(why) => {
            let cpu = CpuBackend::new();
            Choice {
                reason: format!("cpu ({}): no usable GPU: {why}", cpu.describe()),
                backend: Box::new(cpu),
            }
        }
    }
}
