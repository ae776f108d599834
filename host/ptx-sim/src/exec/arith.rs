//! The arithmetic of single instructions on raw register bits: integer and floating-point
//! operations, comparisons, conversions, shifts and bit fields, as the GPU computes them.

use super::*;

#[inline(always)]
pub(super) fn mask(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

#[inline(always)]
pub(super) fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

/// The NaN that `min`/`max` give when both operands are NaN. PTX does not
/// specify its bits; this is the all-ones quiet NaN.
pub(super) const CANON_NAN_F64: u64 = 0x7fff_ffff_ffff_ffff;
/// Single precision has one NaN on NVIDIA GPUs: every NaN result is this.
pub(super) const CANON_NAN_F32: u64 = 0x7fff_ffff;

/// The bits of a double-precision result. Double precision on NVIDIA GPUs
/// keeps NaN payloads, as the host FPU does, so the host's result is taken
/// as is. A NaN *created* from non-NaN operands (inf - inf, 0 * inf) may
/// differ in its bits from the GPU's; nothing in cudamin depends on them.
#[inline(always)]
pub(super) fn f64r(x: f64) -> u64 {
    x.to_bits()
}

#[inline(always)]
pub(super) fn f32r(x: f32) -> u64 {
    if x.is_nan() {
        CANON_NAN_F32
    } else {
        x.to_bits() as u64
    }
}

/// PTX `min`/`max` on floats: a NaN operand is ignored, and -0 < +0.
pub(super) fn fminmax(a: f64, b: f64, max: bool) -> Option<f64> {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => None,
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ => {
            if a == b {
                // Equal values differ at most in the sign of zero.
                let a_neg = a.is_sign_negative();
                Some(if a_neg != max { a } else { b })
            } else if (a < b) != max {
                Some(a)
            } else {
                Some(b)
            }
        }
    }
}

pub(super) fn int_bin(op: Bin, ty: Ty, a: u64, b: u64) -> u64 {
    let w = ty.bits();
    let signed = matches!(ty, Ty::S(_));
    let (ua, ub) = (mask(a, w), mask(b, w));
    let (sa, sb) = (sext(a, w), sext(b, w));
    let r = match op {
        Bin::Add => ua.wrapping_add(ub),
        Bin::Sub => ua.wrapping_sub(ub),
        Bin::MulLo => ua.wrapping_mul(ub),
        Bin::MulHi => {
            if signed {
                ((sa as i128 * sb as i128) >> w) as u64
            } else {
                ((ua as u128 * ub as u128) >> w) as u64
            }
        }
        Bin::MulWide => {
            // Operands are at most 32 bits, so the product fits in 64.
            return if signed {
                mask(sa.wrapping_mul(sb) as u64, 2 * w)
            } else {
                mask(ua.wrapping_mul(ub), 2 * w)
            };
        }
        Bin::Div => {
            if ub == 0 {
                u64::MAX
            } else if signed {
                sa.wrapping_div(sb) as u64
            } else {
                ua / ub
            }
        }
        Bin::Rem => {
            if ub == 0 {
                ua
            } else if signed {
                sa.wrapping_rem(sb) as u64
            } else {
                ua % ub
            }
        }
        Bin::Shl => {
            // The shift amount is an unsigned 32-bit value, clamped to the width.
            let n = mask(b, 32);
            if n >= w as u64 { 0 } else { ua << n }
        }
        Bin::Shr => {
            let n = mask(b, 32);
            if signed {
                (sa >> n.min(63)) as u64
            } else if n >= w as u64 {
                0
            } else {
                ua >> n
            }
        }
        Bin::And => ua & ub,
        Bin::Or => ua | ub,
        Bin::Xor => ua ^ ub,
        Bin::Min => {
            if signed {
                sa.min(sb) as u64
            } else {
                ua.min(ub)
            }
        }
        Bin::Max => {
            if signed {
                sa.max(sb) as u64
            } else {
                ua.max(ub)
            }
        }
        Bin::Copysign => unreachable!("rejected when decoding"),
    };
    mask(r, w)
}

pub(super) fn f64_bin(op: Bin, a: u64, b: u64) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    match op {
        Bin::Add => f64r(x + y),
        Bin::Sub => f64r(x - y),
        Bin::MulLo => f64r(x * y),
        Bin::Div => f64r(x / y),
        Bin::Min | Bin::Max => fminmax(x, y, op == Bin::Max).map_or(CANON_NAN_F64, f64::to_bits),
        // PTX copies the sign of the *first* operand onto the second.
        Bin::Copysign => (b & !(1 << 63)) | (a & (1 << 63)),
        _ => unreachable!("rejected when decoding"),
    }
}

pub(super) fn f32_bin(op: Bin, a: u64, b: u64) -> u64 {
    let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
    match op {
        Bin::Add => f32r(x + y),
        Bin::Sub => f32r(x - y),
        Bin::MulLo => f32r(x * y),
        Bin::Div => f32r(x / y),
        Bin::Min | Bin::Max => fminmax(x as f64, y as f64, op == Bin::Max)
            .map_or(CANON_NAN_F32, |v| (v as f32).to_bits() as u64),
        Bin::Copysign => ((b & 0x7fff_ffff) | (a & 0x8000_0000)) & 0xffff_ffff,
        _ => unreachable!("rejected when decoding"),
    }
}

pub(super) fn unary(op: Un, ty: Ty, a: u64) -> u64 {
    let w = ty.bits();
    match ty {
        Ty::F64 => match op {
            Un::Neg => a ^ (1 << 63),
            Un::Abs => a & !(1 << 63),
            Un::Rcp => f64r(1.0 / f64::from_bits(a)),
            Un::Sqrt => f64r(f64::from_bits(a).sqrt()),
            _ => unreachable!("rejected when decoding"),
        },
        Ty::F32 => {
            let a = mask(a, 32);
            match op {
                Un::Neg => a ^ (1 << 31),
                Un::Abs => a & !(1 << 31),
                Un::Rcp => f32r(1.0 / f32::from_bits(a as u32)),
                Un::Sqrt => f32r(f32::from_bits(a as u32).sqrt()),
                _ => unreachable!("rejected when decoding"),
            }
        }
        _ => match op {
            Un::Not => mask(!a, w),
            Un::Neg => mask(a.wrapping_neg(), w),
            Un::Abs => mask(sext(a, w).wrapping_abs() as u64, w),
            Un::Clz => (mask(a, w).leading_zeros() - (64 - w)) as u64,
            Un::Popc => mask(a, w).count_ones() as u64,
            Un::Cnot => (mask(a, w) == 0) as u64,
            Un::Rcp | Un::Sqrt => unreachable!("rejected when decoding"),
        },
    }
}

pub(super) fn setp(cmp: Cmp, ty: Ty, a: u64, b: u64) -> bool {
    use std::cmp::Ordering;
    let ord = match ty {
        Ty::F64 | Ty::F32 => {
            let (x, y) = if ty == Ty::F64 {
                (f64::from_bits(a), f64::from_bits(b))
            } else {
                (
                    f32::from_bits(a as u32) as f64,
                    f32::from_bits(b as u32) as f64,
                )
            };
            let o = x.partial_cmp(&y);
            return match cmp {
                Cmp::Num => o.is_some(),
                Cmp::Nan => o.is_none(),
                _ => {
                    let unordered = matches!(
                        cmp,
                        Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu
                    );
                    match o {
                        None => unordered,
                        Some(o) => match cmp {
                            Cmp::Eq | Cmp::Equ => o == Ordering::Equal,
                            Cmp::Ne | Cmp::Neu => o != Ordering::Equal,
                            Cmp::Lt | Cmp::Ltu => o == Ordering::Less,
                            Cmp::Le | Cmp::Leu => o != Ordering::Greater,
                            Cmp::Gt | Cmp::Gtu => o == Ordering::Greater,
                            Cmp::Ge | Cmp::Geu => o != Ordering::Less,
                            Cmp::Num | Cmp::Nan => unreachable!(),
                        },
                    }
                }
            };
        }
        Ty::S(_) => sext(a, ty.bits()).cmp(&sext(b, ty.bits())),
        _ => mask(a, ty.bits()).cmp(&mask(b, ty.bits())),
    };
    match cmp {
        Cmp::Eq => ord == Ordering::Equal,
        Cmp::Ne => ord != Ordering::Equal,
        Cmp::Lt => ord == Ordering::Less,
        Cmp::Le => ord != Ordering::Greater,
        Cmp::Gt => ord == Ordering::Greater,
        Cmp::Ge => ord != Ordering::Less,
        _ => unreachable!("rejected when decoding"),
    }
}

pub(super) fn round_int(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rni => x.round_ties_even(),
        Rnd::Rzi => x.trunc(),
        Rnd::Rmi => x.floor(),
        Rnd::Rpi => x.ceil(),
        _ => x,
    }
}

pub(super) fn cvt(dt: Ty, st: Ty, rnd: Rnd, a: u64) -> u64 {
    let is_f = |t: Ty| matches!(t, Ty::F32 | Ty::F64);
    let src_f = |a: u64| {
        if st == Ty::F64 {
            f64::from_bits(a)
        } else {
            f32::from_bits(a as u32) as f64
        }
    };
    match (is_f(dt), is_f(st)) {
        (false, false) => {
            let v = if matches!(st, Ty::S(_)) {
                sext(a, st.bits()) as u64
            } else {
                mask(a, st.bits())
            };
            mask(v, dt.bits())
        }
        (true, false) => {
            // Rust's integer-to-float `as` rounds to nearest, ties to even.
            if matches!(st, Ty::S(_)) {
                let v = sext(a, st.bits());
                if dt == Ty::F64 {
                    (v as f64).to_bits()
                } else {
                    (v as f32).to_bits() as u64
                }
            } else {
                let v = mask(a, st.bits());
                if dt == Ty::F64 {
                    (v as f64).to_bits()
                } else {
                    (v as f32).to_bits() as u64
                }
            }
        }
        (false, true) => {
            // Float to integer saturates, and NaN gives 0.
            let x = round_int(src_f(a), rnd);
            let w = dt.bits();
            if x.is_nan() {
                return 0;
            }
            if matches!(dt, Ty::S(_)) {
                let lo = -(2f64.powi(w as i32 - 1));
                let hi = 2f64.powi(w as i32 - 1) - 1.0;
                mask(x.clamp(lo, hi) as i64 as u64, w)
            } else {
                let hi = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
                if x <= 0.0 {
                    0
                } else if x >= hi as f64 {
                    hi
                } else {
                    x as u64
                }
            }
        }
        (true, true) => {
            let x = src_f(a);
            if dt == st {
                let r = round_int(x, rnd);
                if dt == Ty::F64 {
                    f64r(r)
                } else {
                    f32r(r as f32)
                }
            } else if dt == Ty::F32 {
                f32r(x as f32)
            } else {
                f64r(x)
            }
        }
    }
}

/// `a + b + carry` (or `a − b − borrow` where `sub`) on `bits`-bit integers: the result and
/// the carry (borrow) out.
pub(super) fn add_with_carry(sub: bool, bits: u32, a: u64, b: u64, carry: bool) -> (u64, bool) {
    let (a, b) = (u128::from(mask(a, bits)), u128::from(mask(b, bits)));
    let c = u128::from(carry);
    if sub {
        let r = a.wrapping_sub(b).wrapping_sub(c);
        (mask(r as u64, bits), a < b + c)
    } else {
        let r = a + b + c;
        (mask(r as u64, bits), r >> bits != 0)
    }
}

/// `shf.l` or `shf.r` (`left`), `.clamp` or `.wrap`: the 64 bits `high:low` shifted by `by`
/// (at most 32 when clamped, modulo 32 when wrapped); the high word after a left shift, the
/// low word after a right shift.
pub(super) fn shf(left: bool, clamp: bool, low: u32, high: u32, by: u32) -> u32 {
    let n = if clamp { by.min(32) } else { by & 31 };
    let both = (u64::from(high) << 32) | u64::from(low);
    if left {
        ((both << n) >> 32) as u32
    } else {
        (both >> n) as u32
    }
}

pub(super) fn bfe(ty: Ty, a: u64, pos: u64, len: u64) -> u64 {
    let w = ty.bits() as u64;
    let signed = matches!(ty, Ty::S(_));
    let pos = pos & 0xff;
    let len = len & 0xff;
    let a = mask(a, w as u32);
    let msb = w - 1;
    let sbit = if !signed || len == 0 {
        0
    } else {
        (a >> (pos + len - 1).min(msb)) & 1
    };
    let mut d = 0u64;
    for i in 0..w {
        let bit = if i < len && pos + i <= msb {
            (a >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    pub(super) fn integer_edges() {
        assert_eq!(int_bin(Bin::Shl, Ty::U(64), 1, 64), 0);
        assert_eq!(int_bin(Bin::Shl, Ty::U(64), 1, 63), 1 << 63);
        assert_eq!(int_bin(Bin::Shr, Ty::S(64), 1 << 63, 200), u64::MAX);
        assert_eq!(int_bin(Bin::Shr, Ty::U(16), 0x8000, 15), 1);
        assert_eq!(
            int_bin(Bin::MulHi, Ty::S(32), (-2i64) as u64, 3),
            0xffff_ffff
        );
        assert_eq!(int_bin(Bin::MulWide, Ty::S(16), 0xffff, 2), 0xffff_fffe);
        assert_eq!(int_bin(Bin::Div, Ty::U(64), 5, 0), u64::MAX);
        assert_eq!(
            int_bin(Bin::Div, Ty::S(32), 0x8000_0000, 0xffff_ffff),
            0x8000_0000
        );
        assert_eq!(int_bin(Bin::Min, Ty::S(16), 0xffff, 1), 0xffff);
        assert_eq!(int_bin(Bin::Min, Ty::U(16), 0xffff, 1), 1);
        assert_eq!(unary(Un::Clz, Ty::U(32), 0), 32);
        assert_eq!(unary(Un::Neg, Ty::S(16), 1), 0xffff);
        assert_eq!(bfe(Ty::S(32), 0x0000_0f00, 8, 4), 0xffff_ffff);
        assert_eq!(bfe(Ty::U(32), 0xffff_ffff, 28, 8), 0xf);
        assert_eq!(bfe(Ty::S(32), 0x8000_0000, 28, 8), 0xffff_fff8);
        assert_eq!(add_with_carry(false, 64, u64::MAX, 1, false), (0, true));
        assert_eq!(add_with_carry(false, 64, 5, 6, true), (12, false));
        assert_eq!(add_with_carry(false, 32, 0xffff_ffff, 0, true), (0, true));
        assert_eq!(add_with_carry(true, 64, 0, 1, false), (u64::MAX, true));
        assert_eq!(add_with_carry(true, 64, 7, 3, true), (3, false));
        assert_eq!(add_with_carry(true, 32, 3, 3, true), (0xffff_ffff, true));
        // Funnel shifts of high:low = 0x89abcdef:0x01234567, as the PTX ISA defines them.
        let (low, high) = (0x0123_4567, 0x89ab_cdef);
        assert_eq!(shf(true, false, low, high, 8), 0xabcd_ef01);
        assert_eq!(shf(true, false, low, high, 40), 0xabcd_ef01); // wraps to 8
        assert_eq!(shf(true, true, low, high, 40), low); // clamps to 32
        assert_eq!(shf(true, true, low, high, 0), high);
        assert_eq!(shf(false, false, low, high, 8), 0xef01_2345);
        assert_eq!(shf(false, true, low, high, 32), high);
        assert_eq!(shf(false, true, low, high, 99), high);
    }

    #[test]
    pub(super) fn conversions() {
        let f = |x: f64| x.to_bits();
        assert_eq!(cvt(Ty::U(32), Ty::F64, Rnd::Rzi, f(-5.0)), 0);
        assert_eq!(cvt(Ty::U(32), Ty::F64, Rnd::Rzi, f(1e20)), 0xffff_ffff);
        assert_eq!(cvt(Ty::U(64), Ty::F64, Rnd::Rzi, f(1e20)), u64::MAX);
        assert_eq!(cvt(Ty::S(64), Ty::F64, Rnd::Rni, f(2.5)), 2);
        assert_eq!(cvt(Ty::S(64), Ty::F64, Rnd::Rmi, f(-2.5)), (-3i64) as u64);
        assert_eq!(cvt(Ty::S(32), Ty::F64, Rnd::Rpi, f(2.1)), 3);
        assert_eq!(
            cvt(Ty::U(64), Ty::S(16), Rnd::None, 0x8000),
            0xffff_ffff_ffff_8000
        );
        assert_eq!(cvt(Ty::U(16), Ty::U(64), Rnd::None, 0x1_2345), 0x2345);
        assert_eq!(cvt(Ty::F64, Ty::S(32), Rnd::Rn, 0xffff_ffff), f(-1.0));
        assert_eq!(
            cvt(Ty::F32, Ty::F64, Rnd::Rn, f(0.1)),
            0.1f32.to_bits() as u64
        );
        assert_eq!(cvt(Ty::F64, Ty::F64, Rnd::Rzi, f(-2.7)), f(-2.0));
    }

    #[test]
    pub(super) fn float_edges() {
        let f = |x: f64| x.to_bits();
        let nan = f64::NAN.to_bits();
        assert_eq!(f64_bin(Bin::Min, nan, nan), CANON_NAN_F64);
        assert_eq!(f64_bin(Bin::Max, f(-0.0), f(0.0)), f(0.0));
        assert_eq!(f64_bin(Bin::Min, f(0.0), f(-0.0)), f(-0.0));
        assert_eq!(f64_bin(Bin::Copysign, f(-1.0), f(2.0)), f(-2.0));
        assert!(setp(Cmp::Ltu, Ty::F64, nan, f(1.0)));
        assert!(!setp(Cmp::Lt, Ty::F64, nan, f(1.0)));
        assert!(setp(Cmp::Ne, Ty::F64, f(1.0), f(2.0)));
        assert!(!setp(Cmp::Ne, Ty::F64, nan, f(2.0)));
        assert!(setp(Cmp::Nan, Ty::F64, nan, f(2.0)));
        assert!(setp(Cmp::Lt, Ty::S(32), 0xffff_ffff, 0));
        assert!(!setp(Cmp::Lt, Ty::U(32), 0xffff_ffff, 0));
        assert_eq!(
            f32_bin(
                Bin::Add,
                f32::INFINITY.to_bits() as u64,
                f32::NEG_INFINITY.to_bits() as u64
            ),
            CANON_NAN_F32
        );
        assert_eq!(unary(Un::Neg, Ty::F64, f(0.0)), f(-0.0));
        assert_eq!(unary(Un::Abs, Ty::F64, f(-3.0)), f(3.0));
    }
}
