//! Turning fuzzer bytes into structured inputs.
//!
//! The fuzz targets and the corpus replay test decode the same bytes with
//! this one reader, so a corpus file means the same input in both. Reads
//! past the end yield zeros: every byte string is a valid input, and
//! libFuzzer's mutations (truncation, insertion) stay meaningful.

/// A cursor over fuzzer bytes.
#[derive(Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Reads from `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    /// The next byte, or 0 once the input is exhausted.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    /// The next 4 bytes, little-endian, zero-padded.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next 8 bytes, little-endian, zero-padded.
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    /// A value in `0..bound` (`bound > 0`) from one byte when `bound <= 256`.
    pub fn below(&mut self, bound: usize) -> usize {
        debug_assert!(bound > 0);
        if bound <= 256 {
            usize::from(self.u8()) % bound
        } else {
            (self.u32() as usize) % bound
        }
    }

    /// A size chosen to reach the interesting places of `usize` arithmetic:
    /// small values, powers of two and their neighbours (where products
    /// overflow), and raw 64-bit values.
    pub fn size(&mut self) -> usize {
        match self.u8() % 4 {
            0 | 1 => usize::from(self.u8()),
            2 => {
                let exp = u32::from(self.u8()) % usize::BITS;
                let delta = i64::from(self.u8() as i8);
                let base = 1usize << exp;
                if delta < 0 {
                    base.saturating_sub(delta.unsigned_abs() as usize)
                } else {
                    base.saturating_add(delta as usize)
                }
            }
            _ => self.u64() as usize,
        }
    }

    /// An `f32` drawn to hit every class of bit pattern: raw bits (any NaN
    /// payload, signalling NaNs included), the named specials, subnormals,
    /// and normals of any exponent with a short mantissa.
    pub fn f32_any(&mut self) -> f32 {
        match self.u8() % 8 {
            0 => f32::from_bits(self.u32()),
            1 => SPECIALS[self.below(SPECIALS.len())],
            2 => {
                // A subnormal: exponent field 0, mantissa non-zero.
                let m = (self.u32() & 0x007f_ffff).max(1);
                let sign = u32::from(self.u8() & 1) << 31;
                f32::from_bits(sign | m)
            }
            3 => {
                // A normal of any exponent.
                let e = u32::from(self.u8()).clamp(1, 254);
                let m = u32::from(self.u8()) << 15;
                let sign = u32::from(self.u8() & 1) << 31;
                f32::from_bits(sign | (e << 23) | m)
            }
            _ => f32::from(self.u8() as i8) / 16.0,
        }
    }

    /// An `f32` that is finite, with the same spread of magnitudes as
    /// [`Reader::f32_any`].
    pub fn f32_finite(&mut self) -> f32 {
        let x = self.f32_any();
        if x.is_finite() { x } else { 0.0 }
    }
}

/// Bit patterns worth trying everywhere.
pub const SPECIALS: [f32; 16] = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    f32::NAN,
    // A signalling NaN (quiet bit clear) and a negative NaN with a payload.
    f32::from_bits(0x7f80_0001),
    f32::from_bits(0xffc0_1234),
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    f32::MIN,
    f32::MIN_POSITIVE,
    f32::from_bits(1),
    f32::EPSILON,
    1.0e30,
    1.0e-30,
];

/// A small deterministic generator for filling the bulk of a matrix from a
/// seed in the input, so that short inputs still make large matrices.
#[derive(Debug)]
pub struct SplitMix(u64);

impl SplitMix {
    /// Starts from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[-1, 1)`, with 24 random bits.
    pub fn next_unit(&mut self) -> f32 {
        ((self.next_u64() >> 40) as f32) / (1u64 << 23) as f32 - 1.0
    }
}
