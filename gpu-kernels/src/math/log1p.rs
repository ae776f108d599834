//! `ln(1 + x)` for the PTX, with no stack frame.
//!
//! `libm`'s `log1p` reads a subnormal argument through a stack slot, as its `atan` does (see
//! `atan.rs`). This one has none. `u = 1 + x` is rounded, and `c`, the part of `1 + x` lost to
//! that rounding, is kept exactly (Fast2Sum), so `ln(1 + x) = ln u + c/u` to first order.
//! Then `u = 2^k·m` with `m` in `[√2/2, √2)`, `f = m − 1` (exact), and with `s = f/(2 + f)`,
//! `ln m = 2s + 2s³/3 + 2s⁵/5 + …`, written as `f − f²/2 + s·(f²/2 + R)` so that the large
//! terms are exact: `R = 2s²/3 + 2s⁴/5 + …`, ten terms, the first omitted below 2⁻⁶⁰ relative.
//! `k·ln 2` is in two parts, the first with 21 trailing zero bits so `k` times it is exact.
//!
//! Within one ulp of `libm`'s, checked in the tests.

/// `ln 2 = LN2_HI + LN2_LO`, `LN2_HI` with 21 trailing zero bits (mpmath, 300 bits).
const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;
/// Below this `|x|`, `ln(1 + x)` rounds to `x`.
const TINY: f64 = 5.551115123125783e-17; // 2⁻⁵⁴
/// `√2`, rounded.
const SQRT_2: f64 = core::f64::consts::SQRT_2;

/// `ln(1 + x)`, within one ulp of `libm`'s: NaN below −1, −∞ at −1.
#[inline(always)]
pub fn ln_1p(x: f64) -> f64 {
    if !(x > -1.0 && x < f64::INFINITY) {
        return ln_1p_edge(x);
    }
    if x.abs() < TINY {
        return x;
    }
    let u = 1.0 + x;
    // 1 + x = u + c exactly: Fast2Sum, the larger addend first.
    let c = if x.abs() <= 1.0 {
        (1.0 - u) + x
    } else {
        (x - u) + 1.0
    };
    // u = 2^k·m with m in [√2/2, √2); u ≥ 2⁻⁵³ is normal.
    let bits = u.to_bits();
    let mut k = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let mut m = f64::from_bits((bits & ((1 << 52) - 1)) | (1023 << 52));
    if m >= SQRT_2 {
        m *= 0.5;
        k += 1;
    }
    let kf = k as f64;
    let f = m - 1.0;
    let correction = c / u;
    let s = f / (2.0 + f);
    let z = s * s;
    let half_f_squared = 0.5 * f * f;
    let r = z * series(z);
    kf * LN2_HI - ((half_f_squared - (s * (half_f_squared + r) + (kf * LN2_LO + correction))) - f)
}

/// `R/z`, `R = Σ_{j ≥ 1} 2z^j/(2j + 1)`, ten terms, for `z = s² ≤ 0.0295`.
#[inline(always)]
fn series(z: f64) -> f64 {
    const C: [f64; 10] = [
        2.0 / 3.0,
        2.0 / 5.0,
        2.0 / 7.0,
        2.0 / 9.0,
        2.0 / 11.0,
        2.0 / 13.0,
        2.0 / 15.0,
        2.0 / 17.0,
        2.0 / 19.0,
        2.0 / 21.0,
    ];
    let mut p = C[9];
    for &c in C[..9].iter().rev() {
        p = super::fma(p, z, c);
    }
    p
}

/// `ln(1 + x)` for NaN, `x ≤ −1` and `+∞`.
#[cold]
fn ln_1p_edge(x: f64) -> f64 {
    if x == -1.0 {
        f64::NEG_INFINITY
    } else if x < -1.0 {
        f64::NAN
    } else {
        x + x // NaN stays NaN, +∞ stays +∞
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::ln_1p;
    use crate::math::tests::{stream, ulps};

    #[test]
    fn within_one_ulp_of_libm() {
        let mut next = stream(0x2545_F491_4F6C_DD1D);
        for i in 0..2_000_000 {
            let u = next();
            let x = match i % 4 {
                0 => 4.0 * u - 1.0,
                1 => u - 0.5,
                // Magnitudes from 2⁻⁶⁰ to 2⁶⁰, positive, and small negatives.
                2 => libm::exp2(120.0 * u - 60.0),
                _ => -libm::exp2(-60.0 * u),
            };
            if x <= -1.0 {
                continue;
            }
            let (ours, reference) = (ln_1p(x), libm::log1p(x));
            assert!(
                ulps(ours, reference) <= 1,
                "ln_1p({x:e}) = {ours:e}, libm {reference:e}"
            );
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(ln_1p(0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(ln_1p(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(ln_1p(-1.0), f64::NEG_INFINITY);
        assert!(ln_1p(-1.5).is_nan());
        assert!(ln_1p(f64::NAN).is_nan());
        assert!(ln_1p(f64::NEG_INFINITY).is_nan());
        assert_eq!(ln_1p(f64::INFINITY), f64::INFINITY);
        assert_eq!(ln_1p(f64::MAX), libm::log1p(f64::MAX));
        assert_eq!(ln_1p(core::f64::consts::E - 1.0), 1.0);
        for x in [5e-324, -5e-324, 1e-310, 1e-200, -1e-20] {
            assert_eq!(ln_1p(x), x);
        }
        let just_above_minus_one = f64::from_bits((-1.0f64).to_bits() - 1);
        let (ours, reference) = (
            ln_1p(just_above_minus_one),
            libm::log1p(just_above_minus_one),
        );
        assert!(ulps(ours, reference) <= 1);
        for x in [
            1.0,
            2.0,
            0.41421356237309503,
            1e16,
            1e300,
            -0.5,
            -0.9999999999999999,
        ] {
            assert!(ulps(ln_1p(x), libm::log1p(x)) <= 1, "{x}");
        }
    }
}
