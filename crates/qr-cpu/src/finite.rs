//! Finiteness checks that vectorize: `Iterator::all(is_finite)` stops at the
//! first failure and so runs one element at a time, which on the `O(n^2)`
//! checks around `orgqr` cost a tenth of a 176 x 176 `Q` (measured with
//! `perf`). An integer OR over "exponent all ones" flags has no early exit
//! and no floating-point reassociation to forbid vector code (even SSE2).

/// The exponent bits of an `f32`: all ones for an infinity or a NaN.
const EXP: u32 = 0x7f80_0000;

/// `true` when every element of `x` is finite.
#[inline]
pub(crate) fn all_finite(x: &[f32]) -> bool {
    non_finite_flags(x) == 0
}

/// Non-zero when some element of `x` is an infinity or a NaN.
#[inline]
fn non_finite_flags(x: &[f32]) -> u32 {
    x.iter()
        .fold(0u32, |acc, v| acc | u32::from(v.to_bits() & EXP == EXP))
}

/// [`qr_core::Reflectors::is_finite`], vectorized: `tau` and the entries
/// of `h` (row-major `n x n`) strictly below the diagonal.
pub(crate) fn reflectors_finite(h: &[f32], tau: &[f32], n: usize) -> bool {
    all_finite(&tau[..n])
        && h.chunks_exact(n)
            .enumerate()
            .fold(0u32, |acc, (i, row)| acc | non_finite_flags(&row[..i]))
            == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use qr_core::Reflectors;

    #[test]
    fn agrees_with_the_contracts_check() {
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            -0.0,
            1e-45,
        ];
        for n in [1usize, 2, 5, 33] {
            for pos in 0..n * n + n {
                for s in specials {
                    let mut h = vec![0.5f32; n * n];
                    let mut tau = vec![1.0f32; n];
                    if pos < n * n {
                        h[pos] = s;
                    } else {
                        tau[pos - n * n] = s;
                    }
                    assert_eq!(
                        reflectors_finite(&h, &tau, n),
                        Reflectors::is_finite(&h, &tau, n),
                        "n={n} pos={pos} {s}"
                    );
                    assert_eq!(all_finite(&h), h.iter().all(|x| x.is_finite()));
                }
            }
        }
    }
}
