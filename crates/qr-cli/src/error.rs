//! What a subcommand returns: an outcome against the bar, or why it could not run.

use std::fmt;

use qr_core::QrError;

/// How a subcommand that ran to the end judged its results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every gated matrix met the project's bar (or nothing needed gating).
    MetBar,
    /// At least one gated matrix missed the bar.
    MissedBar,
}

impl Outcome {
    /// `MetBar` exactly when `met` is true.
    pub fn from_bar(met: bool) -> Self {
        if met { Self::MetBar } else { Self::MissedBar }
    }
}

/// A failure to run: bad arguments found after parsing, a backend error, I/O.
#[derive(Debug)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

impl From<QrError> for CliError {
    fn from(e: QrError) -> Self {
        Self(e.to_string())
    }
}

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        Self(e.to_string())
    }
}

impl From<serde_json::Error> for CliError {
    fn from(e: serde_json::Error) -> Self {
        Self(format!("JSON: {e}"))
    }
}
