//! Checks for the command-line parsers (`Spec`, `Case`, `Set` from
//! strings, and `parse_shape`, behind `qr bench --shapes BATCHxN`): no
//! panic, `Display` round-trips, an accepted `Spec` always has a valid shape,
//! an accepted shape is exactly what a plain model of `Shape::new` accepts,
//! and generating a small accepted `Spec` gives finite values, the same bits
//! twice, and (except `mixed`) a prefix independent of the batch size.

use std::str::FromStr;

use qr_verify::{Case, Set, Spec, format_shape, generate, parse_shape};

/// Specs are only generated up to this many elements.
const MAX_GENERATED: usize = 1 << 12;

/// Checks `data` as a string (lossily decoded, so every input is one).
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    round_trips::<Case>(&text);
    round_trips::<Set>(&text);
    if let Some(spec) = round_trips::<Spec>(&text) {
        check_spec(&spec, data.len() as u64);
    }
    check_shape(&text);
}

/// `parse_shape` accepts `text` exactly when the model below does, with the
/// same sizes, and its printed form parses back to the same shape.
fn check_shape(text: &str) {
    let model = shape_model(text);
    match parse_shape(text) {
        Ok(shape) => {
            assert_eq!(Some((shape.batch(), shape.n())), model, "`{text}` accepted");
            let printed = format_shape(shape);
            assert_eq!(
                parse_shape(&printed).ok(),
                Some(shape),
                "`{text}` printed as `{printed}`"
            );
        }
        Err(e) => {
            assert_eq!(model, None, "`{text}` rejected: {e}");
            assert!(!e.to_string().is_empty(), "`{text}`: empty error message");
        }
    }
}

/// A model of the shape grammar and of `Shape::new`'s limits, in `u128`
/// arithmetic that cannot overflow for `usize` operands: both counts
/// `usize`, `n * n` a `usize` (even for an empty batch), and
/// `batch * n * n * 4` and `batch * 4` at most `isize::MAX`.
fn shape_model(text: &str) -> Option<(usize, usize)> {
    let (b, n) = text.trim().split_once('x')?;
    let (b, n): (usize, usize) = (b.parse().ok()?, n.parse().ok()?);
    let limit = isize::MAX as u128;
    let (bw, nw) = (b as u128, n as u128);
    // n * n fits u128; times batch may not, so compare by division.
    let per = nw * nw;
    let elems_ok = per <= usize::MAX as u128 && (per == 0 || bw <= limit / 4 / per);
    (elems_ok && bw * 4 <= limit).then_some((b, n))
}

/// Parses `text`; when it parses, the printed form parses to the same value.
fn round_trips<T>(text: &str) -> Option<T>
where
    T: FromStr + std::fmt::Display + PartialEq + std::fmt::Debug,
    T::Err: std::fmt::Display,
{
    match text.parse::<T>() {
        Ok(v) => {
            let printed = v.to_string();
            match printed.parse::<T>() {
                Ok(again) => assert_eq!(again, v, "`{text}` printed as `{printed}`"),
                Err(e) => panic!("`{text}` parsed, but its printed form `{printed}` does not: {e}"),
            }
            Some(v)
        }
        Err(e) => {
            assert!(!e.to_string().is_empty(), "`{text}`: empty error message");
            None
        }
    }
}

fn check_spec(spec: &Spec, seed: u64) {
    let shape = spec.shape().expect("an accepted spec has a valid shape");
    assert!(
        spec.cond.is_finite() && spec.cond >= 0.0,
        "{spec}: cond accepted"
    );
    if shape.a_len() > MAX_GENERATED {
        return;
    }
    let a = generate(spec, seed);
    assert_eq!(a.len(), shape.a_len(), "{spec}: generated length");
    assert!(
        a.iter().all(|x| x.is_finite()),
        "{spec}: non-finite value generated"
    );
    let again = generate(spec, seed);
    assert!(
        a.iter()
            .zip(&again)
            .all(|(x, y)| x.to_bits() == y.to_bits()),
        "{spec}: same seed, different bits"
    );
    if spec.case != Case::Mixed && spec.batch > 1 {
        let shorter = Spec {
            batch: spec.batch - 1,
            ..*spec
        };
        let prefix = generate(&shorter, seed);
        assert!(
            prefix
                .iter()
                .zip(&a)
                .all(|(x, y)| x.to_bits() == y.to_bits()),
            "{spec}: the first {} matrices depend on the batch size",
            shorter.batch
        );
    }
}
