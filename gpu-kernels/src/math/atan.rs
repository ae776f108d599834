//! `atan` for the PTX, with no stack frame.
//!
//! `libm`'s `atan` reads a subnormal argument through a stack slot (a volatile read that raises
//! the underflow flag), which gives every kernel that calls it a stack frame. This one has none.
//! With `a = |x|`:
//! - `a < 3/16`: the Taylor series `a − a³/3 + a⁵/5 − …`, whose first omitted term is below
//!   2⁻⁶⁰ relative.
//! - `a < 41/16`: `atan a = atan c + atan t` with `c = i/8` the nearest eighth and
//!   `t = (a − c)/(1 + a·c)`, `|t| < 0.06`. `a − c` is exact (the two are within a factor of two).
//!   `atan c` is a table in two parts, to 106 bits.
//! - beyond: `π/2 − atan(1/a)`, with the rounding of `1/a` corrected to first order.
//!
//! Within one ulp of `libm`'s, checked in the tests.

use super::fma;

/// `atan(i/8) = HI[i] + LO[i]` for `i = 2..=20`, from 300-bit arithmetic (mpmath); entries 0
/// and 1 are unused.
#[rustfmt::skip]
const ATAN_EIGHTHS: [(u64, u64); 21] = [
    (0, 0), (0, 0),
    (0x3fcf5b75f92c80dd, 0x3c68ab6e3cf7afbd), (0x3fd6f61941e4def1, 0xbc7c63aae6f6e918),
    (0x3fddac670561bb4f, 0x3c7a2b7f222f65e2), (0x3fe1e00babdefeb4, 0xbc5928df287a668f),
    (0x3fe4978fa3269ee1, 0x3c72419a87f2a458), (0x3fe700a7c5784634, 0xbc78c34d25aadef6),
    (0x3fe921fb54442d18, 0x3c81a62633145c07), (0x3feb034f38649c88, 0xbc8be88d6936f833),
    (0x3fecac7c57846f9e, 0x3c80dae13ad18a6b), (0x3fee24dd44c855d1, 0x3c8f7ac612ab33d8),
    (0x3fef730bd281f69b, 0x3c7007887af0cbbd), (0x3ff04e67277a01d7, 0x3c67115496c13eb6),
    (0x3ff0d38f2c5ba09f, 0xbc9bd0dc231bfd70), (0x3ff14b1dd5f90ce1, 0xbc7212d570a63fa2),
    (0x3ff1b6e192ebbe44, 0x3c9b1b466a88828e), (0x3ff21862f3fade36, 0x3c94887628d68748),
    (0x3ff270ef55a53a25, 0xbc9a66b1af5f84fb), (0x3ff2c1a241d66dc3, 0x3c982b2d58b6a8e9),
    (0x3ff30b6d796a4da8, 0x3c96254cb03bb199),
];

/// `π/2 = PIO2_HI + PIO2_LO` to 106 bits.
const PIO2_HI: f64 = core::f64::consts::FRAC_PI_2;
const PIO2_LO: f64 = 6.123233995736766e-17;
/// Below this `a`, the series alone.
const SERIES_MAX: f64 = 3.0 / 16.0;
/// From this `a` on, `π/2 − atan(1/a)`.
const TABLE_END: f64 = 41.0 / 16.0;
/// Beyond this `a`, `1/a`'s rounding no longer shows in the result.
const RECIPROCAL_EXACT_ENOUGH: f64 = 1.0e17;

/// `atan x`, within one ulp of `libm`'s.
#[inline(always)]
pub fn atan(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() {
        return x + x;
    }
    let r = if a < TABLE_END {
        let (hi, lo) = atan_near(a);
        hi + lo
    } else {
        let inverse = 1.0 / a;
        // 1/a = inverse·(1 + e) exactly enough; atan moves by inverse·e/(1 + inverse²).
        let shift = if a < RECIPROCAL_EXACT_ENOUGH {
            let e = fma(-a, inverse, 1.0);
            inverse * e / fma(inverse, inverse, 1.0)
        } else {
            0.0
        };
        let (hi, lo) = atan_near(inverse);
        PIO2_HI - (((hi + lo) + shift) - PIO2_LO)
    };
    f64::from_bits(r.to_bits() | (x.to_bits() & (1 << 63)))
}

/// `atan a = hi + lo` for `0 ≤ a < 41/16` (see the module doc); `lo` is at most a fourth of
/// `hi`, or `hi = a` and `lo` the series' tail.
#[inline(always)]
fn atan_near(a: f64) -> (f64, f64) {
    if a < SERIES_MAX {
        return (a, a * series_tail(a * a));
    }
    // The nearest eighth, 2 ..= 20: 8a < 20.5.
    let i = (8.0 * a + 0.5) as usize;
    let c = i as f64 * 0.125;
    let t = (a - c) / fma(a, c, 1.0);
    let (hi, lo) = ATAN_EIGHTHS[i.min(20)];
    let tail = f64::from_bits(lo) + t * series_tail(t * t);
    (f64::from_bits(hi), t + tail)
}

/// `(atan t − t)/t` as a series in `z = t²`: `−z/3 + z²/5 − …`, eleven terms, enough for
/// `z < (3/16)²`.
#[inline(always)]
fn series_tail(z: f64) -> f64 {
    const C: [f64; 11] = [
        -1.0 / 3.0,
        1.0 / 5.0,
        -1.0 / 7.0,
        1.0 / 9.0,
        -1.0 / 11.0,
        1.0 / 13.0,
        -1.0 / 15.0,
        1.0 / 17.0,
        -1.0 / 19.0,
        1.0 / 21.0,
        -1.0 / 23.0,
    ];
    let mut p = C[10];
    for &c in C[..10].iter().rev() {
        p = fma(p, z, c);
    }
    z * p
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::atan;
    use crate::math::tests::{stream, ulps};

    #[test]
    fn within_one_ulp_of_libm() {
        let mut next = stream(0x9E37_79B9_7F4A_7C15);
        let mut worst = 0;
        for i in 0..2_000_000 {
            let u = next();
            let x = match i % 4 {
                0 => 6.0 * (u - 0.5),
                1 => 0.5 * u,
                // Magnitudes from 2⁻⁴⁰ to 2⁴⁰, either sign.
                2 => (if u < 0.5 { -1.0 } else { 1.0 }) * libm::exp2(80.0 * u - 40.0),
                _ => 40.0 * (u - 0.5),
            };
            let (ours, reference) = (atan(x), libm::atan(x));
            let distance = ulps(ours, reference);
            assert!(distance <= 1, "atan({x:e}) = {ours:e}, libm {reference:e}");
            worst = worst.max(distance);
        }
        assert!(worst <= 1);
    }

    #[test]
    fn special_values() {
        use core::f64::consts::{FRAC_PI_2, FRAC_PI_4};
        assert_eq!(atan(0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(atan(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(atan(1.0), FRAC_PI_4);
        assert_eq!(atan(-1.0), -FRAC_PI_4);
        assert_eq!(atan(f64::INFINITY), FRAC_PI_2);
        assert_eq!(atan(f64::NEG_INFINITY), -FRAC_PI_2);
        assert_eq!(atan(f64::MAX), FRAC_PI_2);
        assert_eq!(atan(1e300), libm::atan(1e300));
        assert!(atan(f64::NAN).is_nan());
        // Subnormal and tiny arguments are their own arctangent.
        for x in [5e-324, -5e-324, 1e-310, 1e-200, -1e-20] {
            assert_eq!(atan(x), x);
        }
        // Every table point and the edges between paths.
        for i in 0..=24 {
            let x = i as f64 / 8.0;
            assert!(ulps(atan(x), libm::atan(x)) <= 1, "{x}");
        }
        for x in [
            0.1875,
            0.18749999999999997,
            2.5625,
            2.5624999999999996,
            1e17,
            1.0000001e17,
        ] {
            assert!(ulps(atan(x), libm::atan(x)) <= 1, "{x}");
        }
    }
}
