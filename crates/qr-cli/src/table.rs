//! Fixed-width text tables printed row by row, and the number formats they use.
//!
//! Widths are fixed up front so that a row can be printed as soon as its
//! case finishes, which matters for runs that take minutes.

use std::time::Duration;

/// A column: header and width (at least the header's). The first column is
/// left-aligned, the rest right-aligned.
#[derive(Clone, Debug)]
pub struct Table {
    columns: Vec<(String, usize)>,
}

impl Table {
    /// A table with these `(header, minimum width)` columns.
    pub fn new(columns: &[(&str, usize)]) -> Self {
        Self {
            columns: columns
                .iter()
                .map(|&(h, w)| (h.to_string(), w.max(h.chars().count())))
                .collect(),
        }
    }

    /// The header line.
    pub fn header(&self) -> String {
        let cells: Vec<&str> = self.columns.iter().map(|(h, _)| h.as_str()).collect();
        self.row(&cells)
    }

    /// One line with `cells` in the columns' order (a cell wider than its
    /// column pushes the rest right rather than being cut).
    pub fn row<S: AsRef<str>>(&self, cells: &[S]) -> String {
        let mut line = String::new();
        for (i, ((_, width), cell)) in self.columns.iter().zip(cells).enumerate() {
            let cell = cell.as_ref();
            if i == 0 {
                line.push_str(&format!("{cell:<width$}"));
            } else {
                line.push_str(&format!("  {cell:>width$}"));
            }
        }
        line.trim_end().to_string()
    }
}

/// A time in the unit that keeps three significant digits readable.
pub fn fmt_time(d: Duration) -> String {
    fmt_seconds(d.as_secs_f64())
}

/// [`fmt_time`] for seconds held in an `f64` (NaN prints as `-`).
pub fn fmt_seconds(s: f64) -> String {
    if !s.is_finite() {
        return "-".into();
    }
    if s >= 1.0 {
        format!("{s:.3} s")
    } else if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.2} us", s * 1e6)
    }
}

/// A scaled gate value (`sfr`, `orth`): two decimals, exponent form when large.
pub fn fmt_gate(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        "inf".into()
    } else if x.abs() >= 1e4 {
        format!("{x:.2e}")
    } else {
        format!("{x:.2}")
    }
}

/// A ratio such as `peer / ours`.
pub fn fmt_ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}x")
    } else {
        "-".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_align_under_headers() {
        let t = Table::new(&[("case", 6), ("time", 8)]);
        assert_eq!(t.header(), "case        time");
        assert_eq!(t.row(&["a", "1 s"]), "a            1 s");
        assert_eq!(t.row(&["toolongcase", "1"]), "toolongcase         1");
    }

    #[test]
    fn number_formats() {
        assert_eq!(fmt_seconds(2.5), "2.500 s");
        assert_eq!(fmt_seconds(0.0123), "12.300 ms");
        assert_eq!(fmt_seconds(42.4e-6), "42.40 us");
        assert_eq!(fmt_seconds(f64::NAN), "-");
        assert_eq!(fmt_gate(0.123), "0.12");
        assert_eq!(fmt_gate(f64::NAN), "NaN");
        assert_eq!(fmt_gate(f64::INFINITY), "inf");
        assert_eq!(fmt_gate(123456.0), "1.23e5");
        assert_eq!(fmt_ratio(3.0), "3.00x");
        assert_eq!(fmt_ratio(f64::NAN), "-");
    }
}
