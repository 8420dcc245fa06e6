//! qr-gpu's own error, which keeps driver, library and compiler detail (the
//! full NVRTC log) and converts into qr-core's [`QrError`].

use std::fmt;

use cudarc::cublas::result::CublasError;
use cudarc::cusolver::result::CusolverError;
use cudarc::driver::DriverError;
use qr_core::QrError;

/// What went wrong inside the CUDA engine.
#[derive(Debug)]
#[non_exhaustive]
pub enum GpuError {
    /// A CUDA driver call failed; `context` names the operation.
    Driver {
        /// The operation that failed.
        context: String,
        /// The driver's error.
        error: DriverError,
    },
    /// NVRTC rejected a kernel source.
    Compile {
        /// Kernel family that failed to compile.
        family: &'static str,
        /// The options it was compiled with (defines, architecture).
        options: Vec<String>,
        /// The complete compiler log.
        log: String,
    },
    /// A cuBLAS call failed.
    Blas {
        /// The operation that failed.
        context: &'static str,
        /// cuBLAS's status.
        error: CublasError,
    },
    /// A cuSOLVER call failed.
    Solver {
        /// The operation that failed.
        context: &'static str,
        /// cuSOLVER's status.
        error: CusolverError,
    },
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Driver { context, error } => write!(f, "{context}: {error:?}"),
            Self::Compile {
                family,
                options,
                log,
            } => write!(
                f,
                "NVRTC could not compile kernel family `{family}` with {options:?}:\n{log}"
            ),
            Self::Blas { context, error } => write!(f, "{context}: cuBLAS {error:?}"),
            Self::Solver { context, error } => write!(f, "{context}: cuSOLVER {error:?}"),
        }
    }
}

impl std::error::Error for GpuError {}

impl From<GpuError> for QrError {
    fn from(e: GpuError) -> Self {
        QrError::Backend {
            backend: "gpu".to_string(),
            message: e.to_string(),
        }
    }
}

/// Attaches a context string to a driver result.
pub(crate) trait DriverContext<T> {
    /// Maps a driver error into [`GpuError::Driver`] with `context`.
    fn ctx(self, context: &str) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn ctx(self, context: &str) -> Result<T, GpuError> {
        self.map_err(|error| GpuError::Driver {
            context: context.to_string(),
            error,
        })
    }
}

/// Maps a cuBLAS result into [`GpuError::Blas`].
pub(crate) fn blas<T>(r: Result<T, CublasError>, context: &'static str) -> Result<T, GpuError> {
    r.map_err(|error| GpuError::Blas { context, error })
}

/// Maps a cuSOLVER result into [`GpuError::Solver`].
pub(crate) fn solver<T>(r: Result<T, CusolverError>, context: &'static str) -> Result<T, GpuError> {
    r.map_err(|error| GpuError::Solver { context, error })
}
