//! Elementary functions written for this crate where `libm`'s are slow for the kernels' needs.
//!
//! [`exp`] is on the hot path of every data fit: the dense finite-difference gradient evaluates
//! a term `n + 1` times. It is table-driven (Tang's method): `x = (64·k + j)·ln2/128 + r` with
//! `|r| ≤ ln2/256`, so `eˣ = 2^k · 2^(j/128) · eʳ`, with `eʳ` from a degree-5 polynomial. Error
//! under one ulp (checked against the platform's `exp` in the tests), no branches on the common
//! path, and the same code on the CPU and in the PTX.
//!
//! [`atan`] and [`ln_1p`] are `libm`'s on the CPU and this crate's in the PTX, where `libm`'s
//! give every kernel that calls them a stack frame (a subnormal argument's volatile read).

// The PTX's own `atan` and `ln_1p`; the CPU builds them for their tests alone.
#[cfg(any(target_arch = "nvptx64", test))]
mod atan;
#[cfg(any(target_arch = "nvptx64", test))]
mod log1p;
mod trig;

pub use trig::{cos, sin, sin_cos};

/// `atan x`: `libm`'s on the CPU, to its bits; on the GPU this crate's (`atan.rs`), within
/// one ulp of it and with no stack frame.
#[inline(always)]
pub fn atan(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    let r = atan::atan(x);
    #[cfg(not(target_arch = "nvptx64"))]
    let r = libm::atan(x);
    r
}

/// `ln(1 + x)`: `libm`'s on the CPU, to its bits; on the GPU this crate's (`log1p.rs`),
/// within one ulp of it and with no stack frame.
#[inline(always)]
pub fn ln_1p(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    let r = log1p::ln_1p(x);
    #[cfg(not(target_arch = "nvptx64"))]
    let r = libm::log1p(x);
    r
}

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

/// `√x`, correctly rounded, by the target's own instruction: `sqrt.rn.f64` in the PTX, and on
/// the CPU the one the build's features choose (AVX's `vsqrtsd` where it has AVX). libm's is a
/// software loop in the PTX, and on x86 an SSE instruction in inline assembly, which stalls
/// beside AVX-512 code. Every square root in the kernels is this one; the bits are libm's.
#[inline(always)]
pub fn sqrt(x: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    let root = core::f64::math::sqrt(x);
    #[cfg(not(target_arch = "nvptx64"))]
    let root = f64::sqrt(x);
    root
}

/// `a·b + c` with one rounding: `fma.rn.f64` in the PTX, and on the CPU `libm`'s, to the
/// same bits (the CPU uses it in tests alone).
#[cfg(any(target_arch = "nvptx64", test))]
#[inline(always)]
pub(crate) fn fma(a: f64, b: f64, c: f64) -> f64 {
    #[cfg(target_arch = "nvptx64")]
    let r = core::f64::math::mul_add(a, b, c);
    #[cfg(not(target_arch = "nvptx64"))]
    let r = libm::fma(a, b, c);
    r
}

/// `√x` in single precision, correctly rounded, by the target's instruction as [`sqrt`].
#[inline(always)]
pub fn sqrt_f32(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    let root = core::f32::math::sqrt(x);
    #[cfg(not(target_arch = "nvptx64"))]
    let root = f32::sqrt(x);
    root
}

/// `2^(j/128)`, `j = 0..128`, each correctly rounded (computed with 60-digit decimals).
#[rustfmt::skip]
const EXP2_TABLE_BITS: [u64; 128] = [
    0x3ff0000000000000, 0x3ff0163da9fb3335, 0x3ff02c9a3e778061, 0x3ff04315e86e7f85,
    0x3ff059b0d3158574, 0x3ff0706b29ddf6de, 0x3ff0874518759bc8, 0x3ff09e3ecac6f383,
    0x3ff0b5586cf9890f, 0x3ff0cc922b7247f7, 0x3ff0e3ec32d3d1a2, 0x3ff0fb66affed31b,
    0x3ff11301d0125b51, 0x3ff12abdc06c31cc, 0x3ff1429aaea92de0, 0x3ff15a98c8a58e51,
    0x3ff172b83c7d517b, 0x3ff18af9388c8dea, 0x3ff1a35beb6fcb75, 0x3ff1bbe084045cd4,
    0x3ff1d4873168b9aa, 0x3ff1ed5022fcd91d, 0x3ff2063b88628cd6, 0x3ff21f49917ddc96,
    0x3ff2387a6e756238, 0x3ff251ce4fb2a63f, 0x3ff26b4565e27cdd, 0x3ff284dfe1f56381,
    0x3ff29e9df51fdee1, 0x3ff2b87fd0dad990, 0x3ff2d285a6e4030b, 0x3ff2ecafa93e2f56,
    0x3ff306fe0a31b715, 0x3ff32170fc4cd831, 0x3ff33c08b26416ff, 0x3ff356c55f929ff1,
    0x3ff371a7373aa9cb, 0x3ff38cae6d05d866, 0x3ff3a7db34e59ff7, 0x3ff3c32dc313a8e5,
    0x3ff3dea64c123422, 0x3ff3fa4504ac801c, 0x3ff4160a21f72e2a, 0x3ff431f5d950a897,
    0x3ff44e086061892d, 0x3ff46a41ed1d0057, 0x3ff486a2b5c13cd0, 0x3ff4a32af0d7d3de,
    0x3ff4bfdad5362a27, 0x3ff4dcb299fddd0d, 0x3ff4f9b2769d2ca7, 0x3ff516daa2cf6642,
    0x3ff5342b569d4f82, 0x3ff551a4ca5d920f, 0x3ff56f4736b527da, 0x3ff58d12d497c7fd,
    0x3ff5ab07dd485429, 0x3ff5c9268a5946b7, 0x3ff5e76f15ad2148, 0x3ff605e1b976dc09,
    0x3ff6247eb03a5585, 0x3ff6434634ccc320, 0x3ff6623882552225, 0x3ff68155d44ca973,
    0x3ff6a09e667f3bcd, 0x3ff6c012750bdabf, 0x3ff6dfb23c651a2f, 0x3ff6ff7df9519484,
    0x3ff71f75e8ec5f74, 0x3ff73f9a48a58174, 0x3ff75feb564267c9, 0x3ff780694fde5d3f,
    0x3ff7a11473eb0187, 0x3ff7c1ed0130c132, 0x3ff7e2f336cf4e62, 0x3ff80427543e1a12,
    0x3ff82589994cce13, 0x3ff8471a4623c7ad, 0x3ff868d99b4492ed, 0x3ff88ac7d98a6699,
    0x3ff8ace5422aa0db, 0x3ff8cf3216b5448c, 0x3ff8f1ae99157736, 0x3ff9145b0b91ffc6,
    0x3ff93737b0cdc5e5, 0x3ff95a44cbc8520f, 0x3ff97d829fde4e50, 0x3ff9a0f170ca07ba,
    0x3ff9c49182a3f090, 0x3ff9e86319e32323, 0x3ffa0c667b5de565, 0x3ffa309bec4a2d33,
    0x3ffa5503b23e255d, 0x3ffa799e1330b358, 0x3ffa9e6b5579fdbf, 0x3ffac36bbfd3f37a,
    0x3ffae89f995ad3ad, 0x3ffb0e07298db666, 0x3ffb33a2b84f15fb, 0x3ffb59728de5593a,
    0x3ffb7f76f2fb5e47, 0x3ffba5b030a1064a, 0x3ffbcc1e904bc1d2, 0x3ffbf2c25bd71e09,
    0x3ffc199bdd85529c, 0x3ffc40ab5fffd07a, 0x3ffc67f12e57d14b, 0x3ffc8f6d9406e7b5,
    0x3ffcb720dcef9069, 0x3ffcdf0b555dc3fa, 0x3ffd072d4a07897c, 0x3ffd2f87080d89f2,
    0x3ffd5818dcfba487, 0x3ffd80e316c98398, 0x3ffda9e603db3285, 0x3ffdd321f301b460,
    0x3ffdfc97337b9b5f, 0x3ffe264614f5a129, 0x3ffe502ee78b3ff6, 0x3ffe7a51fbc74c83,
    0x3ffea4afa2a490da, 0x3ffecf482d8e67f1, 0x3ffefa1bee615a27, 0x3fff252b376bba97,
    0x3fff50765b6e4540, 0x3fff7bfdad9cbe14, 0x3fffa7c1819e90d8, 0x3fffd3c22b8f71f1,
];

/// 128/ln 2.
const INV_LN2_128: f64 = 184.6649652337873;
/// ln 2/128 = LN2_128_HI + LN2_128_LO; HI has 32 trailing zero bits, so `n·HI` is exact.
const LN2_128_HI: f64 = 0.005415208637714386;
const LN2_128_LO: f64 = 3.710410186743494e-9;
/// Adding 1.5·2⁵² rounds to an integer held in the low mantissa bits.
const ROUND_SHIFT: f64 = 6755399441055744.0;
/// Above this, `eˣ` overflows; below `UNDERFLOW`, it is 0 even as a subnormal.
const OVERFLOW: f64 = 709.782712893384;
const UNDERFLOW: f64 = -745.1332191019412;

/// `eˣ`, within one ulp.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    if !(x > UNDERFLOW && x < OVERFLOW) {
        return exp_out_of_range(x);
    }
    let (mantissa, k) = exp_parts(x);
    scale_by_power_of_two(mantissa, k)
}

/// Beyond this `|x|`, `exp_lanes` hands a lane to [`exp`]: within it `eˣ = m·2^k` with `k` a
/// normal exponent (`|x|·128/ln 2 < 2⁷·1021`), so one multiplication scales it.
const LANES_RANGE: f64 = 708.0;

/// `eˣ` in every lane, to the bits [`exp`] gives each. Lanes with `|x| ≤ 708` (all but
/// overflow, deep underflow and NaN) go through a path without branches, which the compiler
/// turns into vector instructions across lanes; the others through [`exp`] itself.
#[inline(always)]
pub fn exp_lanes<const L: usize>(x: [f64; L]) -> [f64; L] {
    let mut out = [0.0; L];
    for (o, &v) in out.iter_mut().zip(&x) {
        // For a lane outside the range this is some finite number, replaced below.
        let (mantissa, k) = exp_parts(v);
        *o = mantissa * power_of_two(k.clamp(-1022, 1023));
    }
    for (o, &v) in out.iter_mut().zip(&x) {
        let vector_path = v.abs() <= LANES_RANGE; // false for NaN
        if !vector_path {
            *o = exp(v);
        }
    }
    out
}

/// `(m, k)` with `eˣ = m·2^k` and `m` in `[2^(−1/256), 2^(1+1/256)]`, for finite `x` in the
/// range of [`exp`]; any other `x` gives some finite pair (no panic, no branch).
#[inline(always)]
fn exp_parts(x: f64) -> (f64, i32) {
    let shifted = x * INV_LN2_128 + ROUND_SHIFT;
    let n = shifted.to_bits() as i64 as i32; // the integer nearest x·128/ln 2 (|n| < 2¹⁷)
    let nf = shifted - ROUND_SHIFT;
    let r = (x - nf * LN2_128_HI) - nf * LN2_128_LO;
    let j = (n & 127) as usize;
    let k = n >> 7;
    // eʳ − 1 = r + r²/2 + r³/6 + r⁴/24 + r⁵/120; the next term is below 2⁻⁶⁰ relative.
    // Estrin's grouping, (r²·(½ + r/6) + r⁴·(1/24 + r/120)): its two halves are independent,
    // so the chain a row of a term waits on is shorter than Horner's four dependent steps.
    let r2 = r * r;
    let poly = r + (r2 * (0.5 + r * (1.0 / 6.0)) + (r2 * r2) * (1.0 / 24.0 + r * (1.0 / 120.0)));
    let t = f64::from_bits(EXP2_TABLE_BITS[j]);
    (t + t * poly, k)
}

/// `2^e` for a normal exponent `e` in `[-1022, 1023]`.
#[inline(always)]
fn power_of_two(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `v·2^k` for `k` in `[-1080, 1024]`, exact unless the result is subnormal.
#[inline(always)]
fn scale_by_power_of_two(v: f64, k: i32) -> f64 {
    if (-1022..=1023).contains(&k) {
        v * power_of_two(k)
    } else if k > 0 {
        v * power_of_two(1023) * power_of_two(k - 1023)
    } else {
        // Two steps, so that only the last multiplication rounds into the subnormals.
        v * power_of_two(k + 1000) * power_of_two(-1000)
    }
}

#[cold]
fn exp_out_of_range(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x >= OVERFLOW {
        f64::INFINITY
    } else {
        0.0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    extern crate std;
    use super::exp;

    /// Distance in ulps between two finite doubles of the same sign.
    pub(crate) fn ulps(a: f64, b: f64) -> u64 {
        assert!(a.signum() == b.signum(), "{a} vs {b}");
        a.abs().to_bits().abs_diff(b.abs().to_bits())
    }

    /// A fixed pseudo-random stream in `[0, 1)` (xorshift), the same on every run.
    pub(crate) fn stream(mut state: u64) -> impl FnMut() -> f64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    #[test]
    fn within_one_ulp_of_the_platform_exp() {
        // A fixed pseudo-random sweep of the whole finite range, dense near 0 where fits live.
        let mut next = stream(0x9E37_79B9_7F4A_7C15);
        let mut worst = 0;
        for i in 0..2_000_000 {
            let u = next();
            let x = if i % 2 == 0 {
                -745.0 + 1454.7 * u
            } else {
                40.0 * (u - 0.5)
            };
            let (ours, reference) = (exp(x), std::primitive::f64::exp(x));
            if reference > f64::MIN_POSITIVE {
                worst = worst.max(ulps(ours, reference));
            } else {
                // Subnormal results: absolute error within one subnormal step.
                assert!(
                    (ours - reference).abs() <= 4.9e-324,
                    "exp({x}) = {ours}, expected {reference}"
                );
            }
        }
        assert!(worst <= 1, "worst error {worst} ulps");
    }

    /// Every lane of `exp_lanes` is `exp` of it, to the bit: lanes in range, out of range
    /// (overflow, underflow, subnormal results), at the edges of the vector path, and NaN, mixed
    /// in one call.
    #[test]
    fn lanes_are_the_scalar_exp_to_the_bit() {
        use super::exp_lanes;
        let mut next = stream(0x2545_F491_4F6C_DD1D);
        let edges = [
            708.0,
            -708.0,
            708.0000001,
            -708.0000001,
            709.78,
            -745.0,
            -740.0,
            710.0,
            -746.0,
            0.0,
            -0.0,
        ];
        for round in 0..100_000 {
            let mut x = [0.0; 8];
            for (l, v) in x.iter_mut().enumerate() {
                let u = next();
                *v = match (round + l) % 4 {
                    0 => 40.0 * (u - 0.5),
                    1 => -760.0 + 1480.0 * u,
                    2 => edges[(round + l) % edges.len()],
                    _ => 1e-3 * (u - 0.5),
                };
            }
            if round % 97 == 0 {
                x[round % 8] = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][round % 3];
            }
            let lanes = exp_lanes(x);
            for (lane, v) in lanes.iter().zip(x) {
                let scalar = exp(v);
                assert!(
                    lane.to_bits() == scalar.to_bits() || lane.is_nan() && scalar.is_nan(),
                    "exp_lanes({v}) = {lane}, exp = {scalar}"
                );
            }
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(1.0), core::f64::consts::E);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(710.0), f64::INFINITY);
        assert_eq!(exp(-746.0), 0.0);
        assert_eq!(exp(709.7), std::primitive::f64::exp(709.7));
        assert!(exp(-740.0) > 0.0);
    }
}
