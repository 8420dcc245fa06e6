//! Errors for misuse and unavailable backends.

use std::fmt;

/// Why a call did not run. Numerical trouble in one matrix is not an error:
/// it is that matrix's [`Info`](crate::Info) code.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QrError {
    /// A buffer's length does not match the shape.
    LengthMismatch {
        /// Which buffer (`"a"`, `"h"`, `"tau"`, `"info"`).
        what: &'static str,
        /// Elements the shape asks for.
        expected: usize,
        /// Elements given.
        actual: usize,
    },
    /// `batch * n * n * 4` bytes does not fit in `isize`.
    SizeOverflow {
        /// Requested batch size.
        batch: usize,
        /// Requested order.
        n: usize,
    },
    /// Memory for `bytes` could not be reserved (host or device).
    OutOfMemory {
        /// Bytes requested.
        bytes: usize,
        /// Where (`"host"`, `"device"`).
        location: &'static str,
    },
    /// The backend cannot run here (no device, no driver, unsupported
    /// architecture); `reason` says which.
    Unavailable {
        /// Backend name.
        backend: String,
        /// Why it is unavailable.
        reason: String,
    },
    /// The backend failed while running (driver, compiler, library error);
    /// `message` keeps the full detail, such as a compiler log.
    Backend {
        /// Backend name.
        backend: String,
        /// What failed.
        message: String,
    },
    /// An argument is outside what the call supports (e.g. a forced plan that
    /// cannot handle the shape).
    Unsupported {
        /// What was asked and why it cannot be done.
        message: String,
    },
}

impl fmt::Display for QrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LengthMismatch {
                what,
                expected,
                actual,
            } => write!(
                f,
                "buffer `{what}` has {actual} elements, the shape needs {expected}"
            ),
            Self::SizeOverflow { batch, n } => write!(
                f,
                "a batch of {batch} matrices of order {n} does not fit in memory addresses"
            ),
            Self::OutOfMemory { bytes, location } => {
                write!(f, "could not reserve {bytes} bytes of {location} memory")
            }
            Self::Unavailable { backend, reason } => {
                write!(f, "backend `{backend}` is unavailable: {reason}")
            }
            Self::Backend { backend, message } => {
                write!(f, "backend `{backend}` failed: {message}")
            }
            Self::Unsupported { message } => write!(f, "unsupported: {message}"),
        }
    }
}

impl std::error::Error for QrError {}
