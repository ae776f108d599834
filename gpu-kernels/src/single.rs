//! [`Single`]: an `f32` for fits run in single precision.

use crate::dual::DualScalar;
use crate::float::Float;
use crate::real::Real;
use core::iter::Sum;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// An `f32` as a term's [`Real`] and as the LM loop's [`Float`], for many small fits run in
/// single precision (`dtype=float32`, Gpufit's default): fp32 runs at 2× fp64 on a data-centre
/// GPU and at 32–64× on a GeForce or a T4.
///
/// Arithmetic is `f32`'s; the elementary functions are libm's single-precision ones, the same
/// code on the CPU and in the PTX, so both give the same bits. `f64` constants in a term
/// (`x * 0.5`, `t - 3.0`) are rounded to `f32` where they meet a `Single`.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
#[repr(transparent)]
pub struct Single(pub f32);

/// The arithmetic operator `$op` (with its assigning twin) on two `Single`s and on a `Single`
/// and an `f64` constant, rounded to `f32` first.
macro_rules! arithmetic {
    ($($trait:ident :: $method:ident, $assign:ident :: $assign_method:ident, $op:tt;)*) => {$(
        impl $trait for Single {
            type Output = Single;
            #[inline(always)]
            fn $method(self, other: Single) -> Single {
                Single(self.0 $op other.0)
            }
        }
        impl $trait<f64> for Single {
            type Output = Single;
            #[inline(always)]
            fn $method(self, other: f64) -> Single {
                Single(self.0 $op other as f32)
            }
        }
        impl $assign for Single {
            #[inline(always)]
            fn $assign_method(&mut self, other: Single) {
                self.0 = self.0 $op other.0;
            }
        }
    )*};
}

arithmetic! {
    Add::add, AddAssign::add_assign, +;
    Sub::sub, SubAssign::sub_assign, -;
    Mul::mul, MulAssign::mul_assign, *;
    Div::div, DivAssign::div_assign, /;
}

impl Neg for Single {
    type Output = Single;
    #[inline(always)]
    fn neg(self) -> Single {
        Single(-self.0)
    }
}

impl Sum for Single {
    #[inline(always)]
    fn sum<I: Iterator<Item = Single>>(iter: I) -> Single {
        Single(iter.map(|s| s.0).sum())
    }
}

/// The `Real` functions of one argument, each libm's single-precision one (`sqrt` the
/// target's instruction).
macro_rules! unary {
    ($($method:ident => $function:path,)*) => {$(
        #[inline(always)]
        fn $method(self) -> Self {
            Single($function(self.0))
        }
    )*};
}

impl Real for Single {
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        Single(value as f32)
    }
    #[inline(always)]
    fn value(self) -> f64 {
        f64::from(self.0)
    }
    unary! {
        exp => libm::expf,
        exp_m1 => libm::expm1f,
        ln => libm::logf,
        ln_1p => libm::log1pf,
        sin => libm::sinf,
        cos => libm::cosf,
        tan => libm::tanf,
        atan => libm::atanf,
        tanh => libm::tanhf,
        erf => libm::erff,
        erfc => libm::erfcf,
        sqrt => crate::math::sqrt_f32,
        cbrt => libm::cbrtf,
        abs => libm::fabsf,
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        Single(libm::atan2f(self.0, x.0))
    }
    #[inline(always)]
    fn hypot(self, other: Self) -> Self {
        Single(libm::hypotf(self.0, other.0))
    }
    #[inline(always)]
    fn powf(self, p: f64) -> Self {
        Single(libm::powf(self.0, p as f32))
    }
    #[inline(always)]
    fn pow(self, p: Self) -> Self {
        Single(libm::powf(self.0, p.0))
    }
}

impl DualScalar for Single {
    const ONE_POINT: bool = true;
    #[inline(always)]
    fn abs_slope(self) -> Self {
        Single::from_f64(self.value().abs_slope())
    }
    #[inline(always)]
    fn scale_nonzero(self, weight: Self) -> Self {
        if self.0 == 0.0 {
            Single(0.0)
        } else {
            self * weight
        }
    }
}

impl Float for Single {
    const ZERO: Self = Single(0.0);
    const ONE: Self = Single(1.0);
    const EPSILON: Self = Single(f32::EPSILON);
    const MIN_POSITIVE: Self = Single(f32::MIN_POSITIVE);
    const NAN: Self = Single(f32::NAN);
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        Single(f32::max(self.0, other.0))
    }
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        Single(f32::min(self.0, other.0))
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        self.0.is_finite()
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        self.0.is_nan()
    }
}
