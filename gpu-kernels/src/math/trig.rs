//! `sin` and `cos` with no stack frame on the GPU, the same code on the CPU.
//!
//! `libm`'s versions keep the large-argument reduction's arrays in a stack frame, hundreds of
//! bytes of local memory in every kernel that calls them. Here `x = q·π/2 + r` with
//! `|r| ≲ π/4`, `r` kept in two parts (`hi + lo`), and `sin r` or `cos r` comes from its Taylor
//! series, whose first omitted term is below 2⁻⁶⁰ relative on that interval. The reduction:
//! - `|x| ≤ π/4`: none.
//! - `|x| < 10⁶`: Cody–Waite, `π/2` in three parts, the first two of 33 bits so that their
//!   products with `q < 2²⁰` are exact.
//! - beyond: Payne–Hanek, `x·2/π` modulo 4 from a 192-bit window of the bits of `2/π`, in
//!   integer registers.
//!
//! Error under one ulp, checked against the platform's `sin` and `cos` in the tests; near a
//! zero of the result the error is absolute, below 10⁻³⁰.

use super::power_of_two;

/// `2/π` in 64-bit words after one word of zeros: bit `i` of `2/π` (its `2⁻ⁱ` digit) is bit
/// `i + 63` of the table, counted from the first word's most significant bit. From 1 600-bit
/// integer arithmetic (Machin's formula for π).
#[rustfmt::skip]
static TWO_OVER_PI: [u64; 21] = [
    0x0000000000000000, 0xa2f9836e4e441529, 0xfc2757d1f534ddc0,
    0xdb6295993c439041, 0xfe5163abdebbc561, 0xb7246e3a424dd2e0,
    0x06492eea09d1921c, 0xfe1deb1cb129a73e, 0xe88235f52ebb4484,
    0xe99c7026b45f7e41, 0x3991d639835339f4, 0x9c845f8bbdf9283b,
    0x1ff897ffde05980f, 0xef2f118b5a0a6d1f, 0x6d367ecf27cb09b7,
    0x4f463f669e5fea2d, 0x7527bac7ebe5f17b, 0x3d0739f78a5292ea,
    0x6bfb5fb11f8d5d08, 0x56033046fc7b6bab, 0xf0cfbc209af4361d,
];

/// `π/2 = PIO2_1 + PIO2_2 + PIO2_3`: 33 bits, 33 bits, then the rest rounded.
const PIO2_1: f64 = 1.5707963267341256;
const PIO2_2: f64 = 6.077100506303966e-11;
const PIO2_3: f64 = 2.0222662487959506e-21;
/// `π/2 = PIO2_HI + PIO2_LO` to 106 bits.
const PIO2_HI: f64 = core::f64::consts::FRAC_PI_2;
const PIO2_LO: f64 = 6.123233995736766e-17;
/// `2/π`, rounded.
const FRAC_2_PI: f64 = core::f64::consts::FRAC_2_PI;
/// Adding 1.5·2⁵² rounds to an integer held in the low mantissa bits.
const ROUND_SHIFT: f64 = 6755399441055744.0;
/// Below this `|x|`, Cody–Waite's quotient `q` stays under 2²⁰.
const MEDIUM: f64 = 1.0e6;

/// `sin x`, within one ulp.
#[inline(always)]
pub fn sin(x: f64) -> f64 {
    if x == 0.0 {
        return x; // keeps the sign of −0
    }
    let Some((q, hi, lo)) = reduce(x) else {
        return sin_cos_large(x).0;
    };
    let v = if q & 1 == 0 {
        sin_kernel(hi, lo)
    } else {
        cos_kernel(hi, lo)
    };
    if q & 2 == 0 { v } else { -v }
}

/// `cos x`, within one ulp.
#[inline(always)]
pub fn cos(x: f64) -> f64 {
    let Some((q, hi, lo)) = reduce(x) else {
        return sin_cos_large(x).1;
    };
    let v = if q & 1 == 0 {
        cos_kernel(hi, lo)
    } else {
        sin_kernel(hi, lo)
    };
    if q.wrapping_add(1) & 2 == 0 { v } else { -v }
}

/// `(sin x, cos x)` from one reduction, each as [`sin`] and [`cos`] give it.
#[inline(always)]
pub fn sin_cos(x: f64) -> (f64, f64) {
    if x == 0.0 {
        return (x, 1.0);
    }
    match reduce(x) {
        Some((q, hi, lo)) => placed(q, hi, lo),
        None => sin_cos_large(x),
    }
}

/// `(sin x, cos x)` for `x = q·π/2 + hi + lo`: the kernels, placed in `q`'s quadrant.
#[inline(always)]
fn placed(q: u32, hi: f64, lo: f64) -> (f64, f64) {
    let (s, c) = (sin_kernel(hi, lo), cos_kernel(hi, lo));
    match q & 3 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// [`sin_cos`] for `|x| ≥ 10⁶`, NaN and infinities. Inline, though rare: out of line, a call's
/// results come back through local memory, a stack frame in every kernel with a sine.
#[inline(always)]
fn sin_cos_large(x: f64) -> (f64, f64) {
    let (q, hi, lo) = reduce_large(x);
    placed(q, hi, lo)
}

/// `sin(hi + lo)` for `|hi| ≲ π/4`, `|lo|` below an ulp of `hi`: Taylor to `hi¹⁷`.
#[inline(always)]
fn sin_kernel(hi: f64, lo: f64) -> f64 {
    let z = hi * hi;
    let p = z
        * (-1.0 / 6.0
            + z * (1.0 / 120.0
                + z * (-1.0 / 5040.0
                    + z * (1.0 / 362880.0
                        + z * (-1.0 / 39916800.0
                            + z * (1.0 / 6227020800.0
                                + z * (-1.0 / 1307674368000.0
                                    + z * (1.0 / 355687428096000.0))))))));
    // sin(hi + lo) = sin hi + lo·cos hi, and cos hi ≈ 1 − z/2 is all lo's ulp needs.
    hi + (hi * p + lo * (1.0 - 0.5 * z))
}

/// `cos(hi + lo)` for `|hi| ≲ π/4`, `|lo|` below an ulp of `hi`: Taylor to `hi¹⁶`, with the
/// rounding of `1 − hi²/2` carried.
#[inline(always)]
fn cos_kernel(hi: f64, lo: f64) -> f64 {
    let z = hi * hi;
    let half = 0.5 * z;
    let p = (z * z)
        * (1.0 / 24.0
            + z * (-1.0 / 720.0
                + z * (1.0 / 40320.0
                    + z * (-1.0 / 3628800.0
                        + z * (1.0 / 479001600.0
                            + z * (-1.0 / 87178291200.0 + z * (1.0 / 20922789888000.0)))))));
    let w = 1.0 - half;
    // (1 − w) − half is the rounding error of w, exactly; cos(hi + lo) = cos hi − lo·sin hi.
    w + (((1.0 - w) - half) + (p - hi * lo))
}

/// `x = q·π/2 + hi + lo` with `|hi + lo| ≲ π/4`: `q` modulo 4 (in its low two bits) and the
/// remainder in two parts; `None` for `|x| ≥ 10⁶`, NaN and infinities ([`sin_cos_large`]).
#[inline(always)]
fn reduce(x: f64) -> Option<(u32, f64, f64)> {
    let a = x.abs();
    if a <= core::f64::consts::FRAC_PI_4 {
        Some((0, x, 0.0))
    } else if a < MEDIUM {
        Some(reduce_medium(x))
    } else {
        None
    }
}

/// Cody–Waite for `|x| < 10⁶`: `q = round(x·2/π)`; `x − q·PIO2_1` and `q·PIO2_2` are exact,
/// and the two subtractions after them keep their rounding errors.
#[inline(always)]
fn reduce_medium(x: f64) -> (u32, f64, f64) {
    let shifted = x * FRAC_2_PI + ROUND_SHIFT;
    // The low mantissa bits hold q in two's complement.
    let q = shifted.to_bits() as u32;
    let n = shifted - ROUND_SHIFT;
    let t = x - n * PIO2_1;
    let (h, e1) = two_sum(t, -(n * PIO2_2));
    let (hi, e2) = two_sum(h, -(n * PIO2_3));
    let (hi, lo) = two_sum(hi, e1 + e2);
    (q, hi, lo)
}

/// Payne–Hanek for `|x| ≥ 10⁶` (and NaN, infinities): with `|x| = m·2^e`, the bits of `2/π`
/// worth more than 4 in `m·2^e·2/π` are skipped, and the next 192 multiply `m` in integers.
/// The product's low 192 bits are `|x|·2/π` modulo 4, at 2¹⁹⁰ to one.
#[inline(always)]
fn reduce_large(x: f64) -> (u32, f64, f64) {
    if !x.is_finite() {
        return (0, f64::NAN, 0.0);
    }
    let bits = x.to_bits();
    let m = (bits & ((1 << 52) - 1)) | (1 << 52);
    let e = ((bits >> 52) & 0x7ff) as usize; // |x| = m·2^(e − 1075), e − 1075 ≥ −32 here
    // Bit i = e − 1076 of 2/π (the first worth less than 4) is bit e − 1013 of the table.
    let start = e - 1013;
    let (word, shift) = (start / 64, (start % 64) as u32);
    let window = |k: usize| {
        let high = TWO_OVER_PI[word + k];
        if shift == 0 {
            high
        } else {
            (high << shift) | (TWO_OVER_PI[word + k + 1] >> (64 - shift))
        }
    };
    let (a, b, c) = (window(0), window(1), window(2));
    // The low 192 bits of m·(a·2¹²⁸ + b·2⁶⁴ + c), as words l2 l1 l0.
    let (mc, mb) = (u128::from(m) * u128::from(c), u128::from(m) * u128::from(b));
    let l0 = mc as u64;
    let middle = (mc >> 64) + u128::from(mb as u64);
    let l1 = middle as u64;
    let l2 = (m.wrapping_mul(a))
        .wrapping_add((mb >> 64) as u64)
        .wrapping_add((middle >> 64) as u64);
    // q is the top two bits; the fraction f, in [0, 1), the next 128 as (high, low)·2⁻¹²⁸.
    let mut q = (l2 >> 62) as u32;
    let (mut high, mut low) = ((l2 << 2) | (l1 >> 62), (l1 << 2) | (l0 >> 62));
    let above_half = high >> 63 == 1;
    if above_half {
        // f − 1, in [−1/2, 0): its magnitude is the two's complement; q moves up one.
        q = q.wrapping_add(1);
        let (negated, carry) = (!low).overflowing_add(1);
        low = negated;
        high = (!high).wrapping_add(u64::from(carry));
    }
    // Normalized so the top bit is set: f = (top + rest·2⁻⁶⁴)·2^(−64−z).
    let z = high.leading_zeros();
    let (top, rest) = match z {
        0 => (high, low),
        64 => (low, 0),
        z => ((high << z) | (low >> (64 - z)), low << z),
    };
    let unit = power_of_two(-64 - z as i32);
    let f_hi = (top >> 11) as f64 * (2048.0 * unit);
    let f_lo = ((top & 0x7ff) as f64 + (rest >> 11) as f64 * power_of_two(-53)) * unit;
    // r = f·π/2 in two parts: the product's rounding error exactly (Dekker), then the tails.
    let (p, error) = two_product(f_hi, PIO2_HI);
    let (mut hi, mut lo) = two_sum(p, error + (f_hi * PIO2_LO + f_lo * PIO2_HI));
    if above_half {
        (hi, lo) = (-hi, -lo);
    }
    if x < 0.0 {
        (q.wrapping_neg(), -hi, -lo)
    } else {
        (q, hi, lo)
    }
}

/// `(s, e)` with `s = a + b` rounded and `s + e = a + b` exactly (Knuth).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let b_part = s - a;
    (s, (a - (s - b_part)) + (b - b_part))
}

/// `(p, e)` with `p = a·b` rounded and `p + e = a·b` exactly, without a fused multiply-add
/// (Dekker, with Veltkamp's splitting); for `|a|, |b| < 2⁹⁰⁰`.
#[inline(always)]
fn two_product(a: f64, b: f64) -> (f64, f64) {
    let split = |v: f64| {
        let c = 134217729.0 * v; // 2²⁷ + 1
        let high = c - (c - v);
        (high, v - high)
    };
    let ((ah, al), (bh, bl)) = (split(a), split(b));
    let p = a * b;
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{cos, sin, sin_cos};
    use crate::math::tests::{stream, ulps};

    /// The worst error, in ulps, of `sin`, `cos` and `sin_cos` against the platform's over
    /// `points`; `sin_cos` must be the other two to the bit.
    fn worst(points: impl Iterator<Item = f64>) -> u64 {
        let mut worst = 0;
        for x in points {
            let (s, c) = sin_cos(x);
            assert_eq!(
                (s.to_bits(), c.to_bits()),
                (sin(x).to_bits(), cos(x).to_bits()),
                "{x}"
            );
            for (ours, reference) in [(s, x.sin()), (c, x.cos())] {
                // Near a zero of the result the reduction's error is absolute.
                if (ours - reference).abs() < 1e-30 {
                    continue;
                }
                let error = ulps(ours, reference);
                assert!(error <= 1, "at {x}: {ours} vs {reference}");
                worst = worst.max(error);
            }
        }
        worst
    }

    #[test]
    fn within_one_ulp_of_the_platform_where_fits_live() {
        let mut u = stream(0x9E37_79B9_7F4A_7C15);
        assert!(worst((0..1_000_000).map(|_| 40.0 * (u() - 0.5))) <= 1);
        assert!(worst((0..200_000).map(|_| 2e6 * (u() - 0.5))) <= 1);
    }

    #[test]
    fn within_one_ulp_of_the_platform_for_huge_arguments() {
        // Log-uniform over the whole finite range, both signs: the Payne–Hanek path.
        let mut u = stream(0x2545_F491_4F6C_DD1D);
        let huge = (0..300_000).map(|i| {
            let x = 1e6 * 10f64.powf(302.0 * u());
            if i % 2 == 0 { x } else { -x }
        });
        assert!(worst(huge) <= 1);
        let edges = [
            1e6,
            1e6 + 0.5,
            1048576.0,
            1.5e6,
            1e22,
            1e300,
            f64::MAX,
            -f64::MAX,
        ];
        assert!(worst(edges.into_iter()) <= 1);
    }

    #[test]
    fn within_one_ulp_next_to_multiples_of_half_pi() {
        // Where the remainder is smallest: the reduction's hardest points.
        let mut points = std::vec::Vec::new();
        for k in 1..20_000i64 {
            let near = k as f64 * core::f64::consts::FRAC_PI_2;
            let mut x = near;
            for _ in 0..3 {
                points.push(x);
                points.push(-x);
                x = x.next_up();
            }
        }
        // 6381956970095103·2⁷⁹⁷, the double nearest a multiple of π/2 (remainder ≈ 4.7e-19).
        points.push(6381956970095103.0 * 2f64.powi(797));
        assert!(worst(points.into_iter()) <= 1);
    }

    #[test]
    fn special_values() {
        assert_eq!(sin(0.0).to_bits(), 0.0f64.to_bits());
        assert_eq!(sin(-0.0).to_bits(), (-0.0f64).to_bits());
        assert_eq!(cos(0.0), 1.0);
        assert_eq!(cos(-0.0), 1.0);
        assert_eq!(sin(1e-300), 1e-300);
        assert_eq!(sin(5e-324), 5e-324);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(sin(bad).is_nan() && cos(bad).is_nan());
            let (s, c) = sin_cos(bad);
            assert!(s.is_nan() && c.is_nan());
        }
        assert_eq!(sin_cos(-0.0).0.to_bits(), (-0.0f64).to_bits());
    }
}
