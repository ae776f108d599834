//! The number type term functions are written in.
//!
//! Terms are generic over [`Real`] rather than hard-wired to `f64`, so that the same source can
//! later be evaluated on dual numbers (forward-mode derivatives) without being rewritten.

use core::ops::{Add, Div, Mul, Neg, Sub};

/// A real number as a term function sees it: arithmetic, mixed arithmetic with `f64`
/// constants, and the elementary functions the built-in objectives need.
///
/// The `f64` implementation calls the same code on every target (this crate's [`math`](crate::math)
/// for `exp`, `libm` for the rest), so a term evaluates to the same bits on the CPU as in the PTX
/// (which has no FMA contraction either).
pub trait Real:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + Add<f64, Output = Self>
    + Sub<f64, Output = Self>
    + Mul<f64, Output = Self>
    + Div<f64, Output = Self>
{
    /// A constant.
    fn from_f64(value: f64) -> Self;
    /// The real value, for branches (e.g. "if x₁ < 0"). Never differentiate through it.
    fn value(self) -> f64;
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn sqrt(self) -> Self;
    fn atan(self) -> Self;

    /// `self²`.
    #[inline(always)]
    fn sq(self) -> Self {
        self * self
    }

    /// `self^n` by repeated squaring: exact for the small powers objectives use.
    #[inline(always)]
    fn powi(self, n: i32) -> Self {
        let mut base = if n < 0 {
            Self::from_f64(1.0) / self
        } else {
            self
        };
        let mut e = n.unsigned_abs();
        let mut acc = Self::from_f64(1.0);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc * base;
            }
            base = base * base;
            e >>= 1;
        }
        acc
    }
}

impl Real for f64 {
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        value
    }
    #[inline(always)]
    fn value(self) -> f64 {
        self
    }
    #[inline(always)]
    fn exp(self) -> Self {
        crate::math::exp(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        libm::log(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        libm::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        libm::cos(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        libm::sqrt(self)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        libm::atan(self)
    }
}

#[cfg(test)]
mod tests {
    use super::Real;

    #[test]
    fn powi_matches_repeated_multiplication() {
        let x = 1.3_f64;
        assert_eq!(Real::powi(x, 0), 1.0);
        assert_eq!(Real::powi(x, 1), x);
        assert_eq!(Real::powi(x, 3), x * x * x);
        assert_eq!(Real::powi(2.0_f64, -2), 0.25);
    }
}
