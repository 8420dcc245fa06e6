//! A progress bar on stderr for runs of many cases, drawn only on a terminal
//! so that logs and pipes get the table alone.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `len` steps, hidden when stderr is not a terminal.
pub fn bar(len: usize) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(len as u64), draw_target());
    let style = ProgressStyle::with_template("{bar:30} {pos}/{len} [{elapsed}] {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar
}

fn draw_target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// Prints `line` on stdout without tearing the bar: the bar is cleared,
/// the line written, and the bar redrawn.
pub fn println(bar: &ProgressBar, line: &str) {
    bar.suspend(|| println!("{line}"));
}
