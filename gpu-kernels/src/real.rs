//! The numbers term functions compute with.
//!
//! A term is written once, generic over `R: Real`, and computes with [`Num<R>`]: numbers that
//! mix freely with `f64` constants on either side (`2.0 - x`, `x * 3.0`, `t / x`), with integer
//! ones as their `f64` value (`2 * x`, `x + 1`), update in place (`s += x`, `s *= 0.5`), and
//! have the elementary functions as methods (`x.exp()`, `x.powf(2.5)`, `y.atan2(x)`). `R` is
//! what each number carries, chosen by whoever evaluates the term: a plain `f64` for a value,
//! four [`Lanes`](crate::Lanes) for the CPU's batched finite differences. A term never names it.
//!
//! The functions, on a `Num` and (with [`Real`] in scope, which the prelude brings) on an `f64`
//! constant alike, computed by the same code on the CPU and in the PTX:
//! - `exp`, `exp_m1` (`eˣ − 1`), `ln`, `ln_1p` (`ln(1 + x)`), `sqrt`, `cbrt`, `abs`, `sq`;
//! - `sin`, `cos`, `tan`, `atan`, `atan2`, `tanh`, `hypot`;
//! - `erf`, `erfc`;
//! - `powi` (an integer power), `powf` (an `f64` exponent; on a `Num` a `Num` one too,
//!   `x.powf(y)`, and for a constant base `Num::constant(2.0).powf(y)`);
//! - `gaussian` (`e^(−x²/2)`, a Gaussian peak's shape);
//! - `add_product` (`s.add_product(a, b)` is `s + a·b` as written, not fused: the step of a sum
//!   of products, one operation on the reverse-mode tape where `s + a * b` records two, also
//!   when a factor is a constant such as a data value);
//! - `softplus` (`ln(1 + eˣ)`), `sigmoid` (`1/(1 + e^(−x))`), `log_sum_exp` of two
//!   (`a.log_sum_exp(b)`) and `log_sum_exp_of` a slice (`Num::log_sum_exp_of(&[a, b, c])`),
//!   stable for arguments of any size;
//! - `min` and `max` (core's on an `f64`; on a `Num` its derivatives come with the one chosen).
//!
//! In a crate that links `std`, an `f64` method std also has (`exp`, `powi`, `ln_1p`, …) is
//! std's, which may round differently: call it as `Real::exp(t)` there to get these bits.

use crate::device::Strided;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// What a [`Num`] is made of: arithmetic and the elementary functions. Implemented by `f64`,
/// [`Lanes`](crate::Lanes) and [`Dual`](crate::Dual); term code only ever writes `R: Real`.
///
/// The `f64` implementation calls the same code on every target (this crate's
/// `math` for `exp`, `libm` for the rest), so a term evaluates to the same bits
/// on the CPU as in the PTX (which has no FMA contraction either).
///
/// The required methods are the primitives, each of which an implementation differentiates
/// (or vectorizes) on its own; the provided ones are built from them, so that every `Real`
/// gets them, with exact derivatives, from one definition.
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
    /// `e^self`.
    fn exp(self) -> Self;
    /// `e^self − 1`, accurate near 0 where `exp(x) − 1.0` loses its digits.
    fn exp_m1(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// `ln(1 + self)`, accurate near 0 where `(1.0 + x).ln()` loses its digits.
    fn ln_1p(self) -> Self;
    /// The sine, in radians.
    fn sin(self) -> Self;
    /// The cosine, in radians.
    fn cos(self) -> Self;
    /// `(sin self, cos self)`, from one argument reduction where the type shares it.
    #[inline(always)]
    fn sin_cos(self) -> (Self, Self) {
        (self.sin(), self.cos())
    }
    /// The tangent, in radians.
    fn tan(self) -> Self;
    /// The arctangent, in `[−π/2, π/2]`.
    fn atan(self) -> Self;
    /// The angle of the point `(x, self)`, in `(−π, π]`.
    fn atan2(self, x: Self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The error function, `2/√π ∫₀ˣ e^(−t²) dt`.
    fn erf(self) -> Self;
    /// `1 − erf(self)`, accurate where `erf` is close to 1 (`erfc(5) ≈ 1.5e-12`).
    fn erfc(self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// The cube root (negative for a negative argument).
    fn cbrt(self) -> Self;
    /// `√(self² + other²)`, without overflow or underflow in the squares.
    fn hypot(self, other: Self) -> Self;
    /// The absolute value (differentiated as 0 at 0).
    fn abs(self) -> Self;
    /// `self^p` for a constant exponent: its derivative is `p·x^(p−1)`, defined wherever the
    /// power is (at `x ≤ 0` too), with no `ln x` in it.
    fn powf(self, p: f64) -> Self;
    /// `self^p` for an exponent that may vary: `d(x^p) = p·x^(p−1)·dx + x^p·ln(x)·dp`. A
    /// direction along which `x` (or `p`) does not move contributes nothing from its part, so a
    /// constant `p` never brings in `ln x` (no NaN at `x ≤ 0`), and where `x^p` is 0 (at `x = 0`,
    /// `p > 0`) neither does a moving one.
    fn pow(self, p: Self) -> Self;

    /// `self²`.
    #[inline(always)]
    fn sq(self) -> Self {
        self * self
    }

    /// `self^n` by repeated squaring: exact for the small powers objectives use (no_std's `f64`
    /// has no `powi`, and std's may round otherwise).
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

    /// `e^(−self²/2)`: the shape of a Gaussian peak, `exp(−((t − μ)/σ)²/2)` as
    /// `((t − mu) / s).gaussian()`. Computed as `(x² · −½).exp()`, to those bits; a recording
    /// type (the reverse-mode tape) overrides it to record one operation where those three
    /// would record three (gauss-peaks, 8 peaks: 16 of a row's 58 operations saved).
    #[inline(always)]
    fn gaussian(self) -> Self {
        (self.sq() * -0.5).exp()
    }

    /// `self + a·b`, the step of a sum of products (`model.add_product(height, shape)`),
    /// computed as written: not fused, so it has the bits of `self + a * b` on every number type.
    /// A recording type (the reverse-mode tape) overrides it to record one operation where those
    /// two would record two (gauss-peaks, 8 peaks: 42 → 34 operations a row), whichever of the
    /// three are constants: `s.add_product(Num::constant(y), t)` is one step where `s + y * t`
    /// is two (poisson-regression's row records one step fewer).
    #[inline(always)]
    fn add_product(self, a: Self, b: Self) -> Self {
        self + a * b
    }

    /// `ln(1 + e^self)`, as `max(x, 0) + ln_1p(e^(−|x|))`: no overflow for large `x`, all the
    /// digits of a tiny result for very negative `x`.
    #[inline(always)]
    fn softplus(self) -> Self {
        // max(x, 0) as x/2 + |x|/2: exact, and a branch on `value` would send every lane of
        // `Lanes` the way of lane 0. Its derivative at 0 comes out as 1/2, softplus'(0).
        let magnitude = self.abs();
        self * 0.5 + magnitude * 0.5 + (-magnitude).exp().ln_1p()
    }

    /// The logistic function `1/(1 + e^(−self))`, as `e^min(x, 0) / (1 + e^(−|x|))`: for very
    /// negative `x`, `e^(−x)` would overflow (a NaN derivative) and the tiny result lose digits.
    #[inline(always)]
    fn sigmoid(self) -> Self {
        // min(x, 0) as x/2 − |x|/2, exact and without a branch (see `softplus`).
        let magnitude = self.abs();
        (self * 0.5 - magnitude * 0.5).exp() / ((-magnitude).exp() + 1.0)
    }

    /// `ln(e^self + e^other)`, shifted by the larger: `max + ln_1p(e^(min − max))`, which
    /// neither overflows nor loses the smaller one's share.
    ///
    /// It picks the larger by [`value`](Real::value); `Lanes` and `Dual` override it to pick
    /// lane by lane, so that it stays safe for a term evaluated in lanes.
    #[inline(always)]
    fn log_sum_exp(self, other: Self) -> Self {
        let (hi, lo) = if other.value() > self.value() {
            (other, self)
        } else {
            (self, other)
        };
        if lo.value() == hi.value() && hi.value().is_infinite() {
            return hi; // ∞ − ∞ would be NaN; the sum is that infinity
        }
        hi + (lo - hi).exp().ln_1p()
    }

    /// `ln Σ e^xᵢ` over a slice: pairwise [`log_sum_exp`](Real::log_sum_exp), each step shifted
    /// by its larger argument. `−∞` (the log of an empty sum) for an empty slice.
    #[inline(always)]
    fn log_sum_exp_of(xs: &[Self]) -> Self {
        log_sum_exp_fold(xs.iter().copied())
    }

    /// A number whose value is `value` and whose derivative lanes are `lane(l)`, for a type
    /// that carries derivative lanes (a dual); `None` for the others. It lets a linear
    /// combination of seeded variables be formed directly (see `Vars::dot`): the derivative of
    /// `Σ wᵢ·xᵢ` along the seed of `xⱼ` is `wⱼ`, with no arithmetic on the lanes.
    #[inline(always)]
    fn with_lanes(value: f64, lane: impl Fn(usize) -> f64) -> Option<Self> {
        let _ = (value, lane);
        None
    }

    /// `plus + Σ_i weights.get(i)·xᵢ` (without `plus`, the sum alone) over a run of
    /// consecutive window variables from `first` to `last`, as many as the weights, as one
    /// operation, for a type that records operations (the reverse-mode tape, which knows the
    /// variables' values); `None` for the others, which sum it term by term. The sum must be
    /// summed as `Vars::dot` sums it, in four running sums, then added to `plus`. It keeps a
    /// linear model's inner loop, its intercept or offset included, one record, not `2·len`
    /// (see `Vars::dot` and `Vars::dot_row_plus`).
    #[inline(always)]
    fn linear_combination(
        plus: Option<Self>,
        first: Self,
        last: Self,
        weights: Strided<'_>,
    ) -> Option<Self> {
        let _ = (plus, first, last, weights);
        None
    }
}

/// The one definition of [`Real::log_sum_exp_of`] and [`Num::log_sum_exp_of`]: pairwise, so
/// that it is lane-safe wherever the two-argument one is.
#[inline(always)]
fn log_sum_exp_fold<R: Real>(xs: impl Iterator<Item = R>) -> R {
    xs.reduce(R::log_sum_exp)
        .unwrap_or_else(|| R::from_f64(f64::NEG_INFINITY))
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
    fn exp_m1(self) -> Self {
        libm::expm1(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        libm::log(self)
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        crate::math::ln_1p(self)
    }
    #[inline(always)]
    fn sin(self) -> Self {
        crate::math::sin(self)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        crate::math::cos(self)
    }
    #[inline(always)]
    fn sin_cos(self) -> (Self, Self) {
        crate::math::sin_cos(self)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        libm::tan(self)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        crate::math::atan(self)
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        libm::atan2(self, x)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        libm::tanh(self)
    }
    #[inline(always)]
    fn erf(self) -> Self {
        libm::erf(self)
    }
    #[inline(always)]
    fn erfc(self) -> Self {
        libm::erfc(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        crate::math::sqrt(self)
    }
    #[inline(always)]
    fn cbrt(self) -> Self {
        libm::cbrt(self)
    }
    #[inline(always)]
    fn hypot(self, other: Self) -> Self {
        libm::hypot(self, other)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        libm::fabs(self)
    }
    #[inline(always)]
    fn powf(self, p: f64) -> Self {
        libm::pow(self, p)
    }
    #[inline(always)]
    fn pow(self, p: Self) -> Self {
        libm::pow(self, p)
    }
}

/// A number in a term's computation. See the [module docs](self).
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(transparent)]
pub struct Num<R>(pub R);

impl<R: Real> Num<R> {
    /// A constant.
    #[inline(always)]
    pub fn constant(value: f64) -> Self {
        Num(R::from_f64(value))
    }

    /// `self + a·b`, to the bits of `self + a * b` (not fused); one operation on the
    /// reverse-mode tape where that would be two. See [`Real::add_product`].
    #[inline(always)]
    pub fn add_product(self, a: Self, b: Self) -> Self {
        Num(self.0.add_product(a.0, b.0))
    }

    /// The real value, for branches. Never differentiate through it.
    #[inline(always)]
    pub fn value(self) -> f64 {
        self.0.value()
    }

    /// `self^n` by repeated squaring: exact for the small powers objectives use.
    #[inline(always)]
    pub fn powi(self, n: i32) -> Self {
        Num(self.0.powi(n))
    }

    /// The smaller of the two by value (its derivatives come with it).
    #[inline(always)]
    pub fn min(self, other: Self) -> Self {
        if other.value() < self.value() {
            other
        } else {
            self
        }
    }

    /// The larger of the two by value (its derivatives come with it).
    #[inline(always)]
    pub fn max(self, other: Self) -> Self {
        if other.value() > self.value() {
            other
        } else {
            self
        }
    }

    /// `self^p`, for a constant exponent (`x.powf(2.5)`: [`Real::powf`]) or a variable one
    /// (`x.powf(y)`: [`Real::pow`], whose derivative has a `ln x` part along `y`).
    #[inline(always)]
    pub fn powf<P: Exponent<R>>(self, p: P) -> Self {
        Num(p.raise(self.0))
    }

    /// `ln Σ e^xᵢ` over a slice, stable for arguments of any size; `−∞` for an empty one (see
    /// [`Real::log_sum_exp_of`]).
    #[inline(always)]
    pub fn log_sum_exp_of(xs: &[Self]) -> Self {
        Num(log_sum_exp_fold(xs.iter().map(|x| x.0)))
    }
}

/// An exponent of [`Num::powf`]: an `f64` constant or a `Num`. A constant keeps the
/// constant-exponent rule ([`Real::powf`]), whatever the `Num` is made of.
#[diagnostic::on_unimplemented(
    message = "a power's exponent is an `f64` or a `Num`, not `{Self}`",
    label = "write `2.0`, not `2`, or use `powi` for an integer power"
)]
pub trait Exponent<R: Real>: Copy {
    /// `base^self`.
    fn raise(self, base: R) -> R;
}

impl<R: Real> Exponent<R> for f64 {
    #[inline(always)]
    fn raise(self, base: R) -> R {
        base.powf(self)
    }
}

impl<R: Real> Exponent<R> for Num<R> {
    #[inline(always)]
    fn raise(self, base: R) -> R {
        base.pow(self.0)
    }
}

/// The elementary functions of [`Real`], as methods of `Num`: `name` for one of one argument,
/// `name(other)` for one of two.
macro_rules! num_functions {
    ($($(#[$doc:meta])* $name:ident $(($other:ident))?),* $(,)?) => {
        impl<R: Real> Num<R> {
            $(
                $(#[$doc])*
                #[inline(always)]
                pub fn $name(self $(, $other: Self)?) -> Self {
                    Num(self.0.$name($($other.0)?))
                }
            )*
        }
    };
}

num_functions!(
    /// `self²`.
    sq,
    /// `e^self`.
    exp,
    /// `e^self − 1`, accurate near 0.
    exp_m1,
    /// The natural logarithm.
    ln,
    /// `ln(1 + self)`, accurate near 0.
    ln_1p,
    /// The sine, in radians.
    sin,
    /// The cosine, in radians.
    cos,
    /// The tangent, in radians.
    tan,
    /// The arctangent, in `[−π/2, π/2]`.
    atan,
    /// The angle of the point `(x, self)`, in `(−π, π]`.
    atan2(x),
    /// The hyperbolic tangent.
    tanh,
    /// The error function.
    erf,
    /// `1 − erf(self)`, accurate where `erf` is close to 1.
    erfc,
    /// The square root.
    sqrt,
    /// The cube root (negative for a negative argument).
    cbrt,
    /// `√(self² + other²)`, without overflow or underflow in the squares.
    hypot(other),
    /// The absolute value (differentiated as 0 at 0).
    abs,
    /// `e^(−self²/2)`, a Gaussian peak's shape.
    gaussian,
    /// `ln(1 + e^self)`, stable for arguments of any size.
    softplus,
    /// The logistic function `1/(1 + e^(−self))`, stable for arguments of either sign.
    sigmoid,
    /// `ln(e^self + e^other)`, stable for arguments of any size.
    log_sum_exp(other),
);

/// `Num ∘ Num`, `Num ∘ f64`, `f64 ∘ Num`, `Num ∘ i32` and `i32 ∘ Num` for one operator, and its
/// compound assignment. A constant on the left becomes a `Num` first (`c − x` is
/// `Num::constant(c) − x`, exactly); an `i32` is its `f64` value (exact), so `2 * x` is
/// `2.0 * x` to the bit (an integer literal is an `i32` unless told otherwise).
macro_rules! num_operator {
    ($($op:ident $method:ident $op_assign:ident $method_assign:ident),*) => {$(
        impl<R: Real> $op for Num<R> {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: Num<R>) -> Num<R> {
                Num(self.0.$method(rhs.0))
            }
        }
        impl<R: Real> $op<f64> for Num<R> {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: f64) -> Num<R> {
                Num(self.0.$method(rhs))
            }
        }
        impl<R: Real> $op<Num<R>> for f64 {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: Num<R>) -> Num<R> {
                Num(R::from_f64(self).$method(rhs.0))
            }
        }
        impl<R: Real> $op<i32> for Num<R> {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: i32) -> Num<R> {
                self.$method(f64::from(rhs))
            }
        }
        impl<R: Real> $op<Num<R>> for i32 {
            type Output = Num<R>;
            #[inline(always)]
            fn $method(self, rhs: Num<R>) -> Num<R> {
                f64::from(self).$method(rhs)
            }
        }
        /// `x ∘= y` is `x = x ∘ y`, to the bit, for whatever `x ∘ y` takes.
        impl<R: Real, T> $op_assign<T> for Num<R>
        where
            Num<R>: $op<T, Output = Num<R>>,
        {
            #[inline(always)]
            fn $method_assign(&mut self, rhs: T) {
                *self = (*self).$method(rhs);
            }
        }
    )*};
}

num_operator!(
    Add add AddAssign add_assign,
    Sub sub SubAssign sub_assign,
    Mul mul MulAssign mul_assign,
    Div div DivAssign div_assign
);

impl<R: Real> Neg for Num<R> {
    type Output = Num<R>;
    #[inline(always)]
    fn neg(self) -> Num<R> {
        Num(-self.0)
    }
}

impl<R: Real> From<f64> for Num<R> {
    #[inline(always)]
    fn from(value: f64) -> Self {
        Num::constant(value)
    }
}

impl<R: Real> core::iter::Sum for Num<R> {
    fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
        iter.fold(Num::constant(0.0), |a, b| a + b)
    }
}

#[cfg(test)]
mod tests;
