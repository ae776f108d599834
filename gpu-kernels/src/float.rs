//! [`Float`]: the precisions a small fit computes in.

use crate::dual::DualScalar;
use core::fmt::Debug;
use core::iter::Sum;
use core::ops::{AddAssign, DivAssign, MulAssign, SubAssign};

/// The numbers a small fit's Levenberg–Marquardt loop and its fold compute in: `f64`, or
/// [`Single`](crate::Single) for a batch run in single precision. Everything the loop needs
/// beyond a term's [`Real`](crate::Real): order, updates in place, sums, and the type's limits,
/// from which MINPACK's constants follow.
pub trait Float:
    DualScalar + PartialOrd + AddAssign + SubAssign + MulAssign + DivAssign + Sum + Default + Debug
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The gap between 1 and the next number: the relative precision of one rounding.
    const EPSILON: Self;
    /// The smallest positive normal number.
    const MIN_POSITIVE: Self;
    /// Not a number.
    const NAN: Self;
    /// The larger, as `f64::max` takes it (a NaN argument loses).
    fn max(self, other: Self) -> Self;
    /// The smaller, as `f64::min` takes it.
    fn min(self, other: Self) -> Self;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
    /// NaN.
    fn is_nan(self) -> bool;
}

impl Float for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const EPSILON: Self = f64::EPSILON;
    const MIN_POSITIVE: Self = f64::MIN_POSITIVE;
    const NAN: Self = f64::NAN;
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        f64::max(self, other)
    }
    #[inline(always)]
    fn min(self, other: Self) -> Self {
        f64::min(self, other)
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    #[inline(always)]
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
}
