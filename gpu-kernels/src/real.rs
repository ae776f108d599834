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
/// [`math`](crate::math) for `exp`, `libm` for the rest), so a term evaluates to the same bits
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
    /// is two (poisson-regression's row, 5 → 4, its gradient 15.0 → 13.0 ms at 10⁶ rows).
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
        libm::log1p(self)
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
    fn tan(self) -> Self {
        libm::tan(self)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        libm::atan(self)
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
        libm::sqrt(self)
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
mod tests {
    use super::{Num, Real};

    /// Distance in ulps between two finite doubles of any signs (±0 are 0 apart).
    fn ulps(a: f64, b: f64) -> u64 {
        // Map the bits onto a line that is monotonic in the value.
        let line = |x: f64| {
            let bits = x.to_bits() as i64;
            if bits < 0 { i64::MIN - bits } else { bits }
        };
        line(a).abs_diff(line(b))
    }

    /// Each function's f64 value against mpmath's (`mp.dps = 40`, evaluated at the exact binary
    /// value of each argument, printed to 25 digits), small, moderate and large arguments.
    #[test]
    #[allow(clippy::excessive_precision)] // mpmath's digits as printed; the compiler rounds them
    fn functions_are_within_two_ulps_of_mpmath() {
        // A function and `(x, mpmath's f(x))` points; `(a, b, f(a, b))` for two arguments.
        type Unary = (&'static str, fn(f64) -> f64, &'static [(f64, f64)]);
        type Binary = (
            &'static str,
            fn(f64, f64) -> f64,
            &'static [(f64, f64, f64)],
        );
        #[rustfmt::skip]
        let unary: [Unary; 10] = [
            ("ln_1p", Real::ln_1p, &[
                (1e-10, 9.999999999500000364355306e-11), (0.5, 4.054651081081643819780131e-1),
                (-0.75, -1.386294361119890618834464), (1e5, 1.151293546492022875342079e+1)]),
            ("exp_m1", Real::exp_m1, &[
                (-1e-12, -9.999999999994999798866478e-13), (0.5, 6.487212707001281468486508e-1),
                (-2.0, -8.646647167633873081060005e-1), (30.0, 1.068647458152346214699047e+13)]),
            ("erf", Real::erf, &[
                (1e-10, 1.12837916709551261500173e-10), (0.3, 3.28626759459127416189618e-1),
                (2.5, 9.995930479825550410604358e-1), (-1.2, -9.103139782296353683659318e-1)]),
            ("erfc", Real::erfc, &[
                (5.0, 1.537459794428034850188343e-12), (0.3, 6.71373240540872583810382e-1),
                (-1.0, 1.842700792949714869341221), (20.0, 5.395865611607900928934999e-176)]),
            ("cbrt", Real::cbrt, &[
                (-27.0, -3.0), (2.0, 1.259921049894873164767211),
                (1e-300, 1.000000000000000008353031e-100), (0.001, 1.000000000000000006938894e-1)]),
            ("softplus", Real::softplus, &[
                (40.0, 4.000000000000000000424835e+1), (-40.0, 4.248354255291588986304978e-18),
                (0.0, core::f64::consts::LN_2), (1.5, 1.701413277982752409499483),
                (-1e-3, 6.926473055599401010738429e-1), (800.0, 800.0)]),
            ("sigmoid", Real::sigmoid, &[
                (-30.0, 9.357622968839298953839563e-14), (30.0, 9.999999999999064237703116e-1),
                (0.5, 6.224593312018545646389006e-1), (-2.0, 1.192029220221175559402709e-1),
                (0.0, 0.5), (-700.0, 9.859676543759770856705373e-305)]),
            ("gaussian", Real::gaussian, &[
                (0.0, 1.0), (1.0, 6.065306597126334236037995e-1),
                (-1.5, 3.246524673583497297970681e-1), (2.5, 4.393693362340741732674768e-2),
                (-6.0, 1.522997974471262843613663e-8), (30.0, 3.693883068487256218793428e-196),
                (1e-3, 9.999995000001249999791667e-1)]),
            ("sq", Real::sq, &[(-1.5, 2.25)]),
            ("powi", |x| Real::powi(x, -3), &[(2.0, 0.125), (-0.5, -8.0)]),
        ];
        for (name, f, points) in unary {
            for &(x, expected) in points {
                let got = f(x);
                assert!(
                    ulps(got, expected) <= 2,
                    "{name}({x}) = {got:e}, mpmath {expected:e}"
                );
            }
        }
        #[rustfmt::skip]
        let binary: [Binary; 3] = [
            ("hypot", Real::hypot, &[
                (3e200, 4e200, 4.999999999999999848665611e+200), (3.0, 4.0, 5.0),
                (1e-200, 2e-200, 2.236067977499789656384144e-200),
                (-1.5, 0.25, 1.520690632574554922249921)]),
            ("pow", Real::pow, &[
                (2.5, 1.5, 3.952847075210474164998617), (0.7, -3.2, 3.131023101416267177307115),
                (10.0, -0.5, 3.162277660168379331998894e-1),
                (1e-3, 2.25, 1.778279410038922884515643e-7)]),
            ("log_sum_exp", Real::log_sum_exp, &[
                (1000.0, 1000.5, 1.000974076984180106680873e+3),
                (-1.0, 2.0, 2.048587351573742058758926),
                (0.25, 0.25, 9.431471805599453094172321e-1),
                (-800.0, -799.0, -7.98686738312481777165951e+2)]),
        ];
        for (name, f, points) in binary {
            for &(a, b, expected) in points {
                let got = f(a, b);
                assert!(
                    ulps(got, expected) <= 2,
                    "{name}({a}, {b}) = {got:e}, mpmath {expected:e}"
                );
                if name != "pow" {
                    assert_eq!(got.to_bits(), f(b, a).to_bits(), "{name} is symmetric");
                }
            }
        }
        #[rustfmt::skip]
        let slices: [(&[f64], f64); 3] = [
            (&[1.0, 2.0, 3.0], 3.40760596444438030448292),
            (&[-1000.0, 5.0, 4.5], 5.474076984180106680872997),
            (&[0.1, -0.2, 0.3, 1e-3], 1.452728189456347689296856),
        ];
        for (xs, expected) in slices {
            let got = f64::log_sum_exp_of(xs);
            assert!(
                ulps(got, expected) <= 2,
                "log_sum_exp_of({xs:?}) = {got:e}, mpmath {expected:e}"
            );
        }
        assert_eq!(f64::log_sum_exp_of(&[]), f64::NEG_INFINITY);
        assert_eq!(f64::log_sum_exp_of(&[-7.25]), -7.25);
        let inf = f64::INFINITY;
        assert_eq!(Real::log_sum_exp(-inf, -inf), -inf);
        assert_eq!(Real::log_sum_exp(inf, inf), inf);
        assert_eq!(Real::log_sum_exp(3.0, -inf), 3.0);
        assert!(Real::log_sum_exp(f64::NAN, 1.0).is_nan());
        assert!(Real::log_sum_exp(1.0, f64::NAN).is_nan());
    }

    /// `add_product` is `c + a·b` rounded twice, as written, on `f64` and `Num`: not the
    /// fused multiply-add, which keeps `a·b`'s low bits (here `−2⁻⁶⁰` where the sum is 0).
    #[test]
    fn add_product_is_the_sum_as_written() {
        let (a, b, c) = (
            1.0 + libm::ldexp(1.0, -30),
            1.0 - libm::ldexp(1.0, -30),
            -1.0,
        );
        assert_eq!(a.mul_add(b, c), -libm::ldexp(1.0, -60));
        assert_eq!(Real::add_product(c, a, b), 0.0);
        assert_eq!(Num(c).add_product(Num(a), Num(b)), Num(0.0));
    }

    /// A `Num`'s functions are the `f64` ones, to the bit (one definition for both).
    #[test]
    fn num_and_f64_constants_share_every_function() {
        let (x, y) = (0.37_f64, -1.6_f64);
        let (nx, ny) = (Num(x), Num(y));
        type OnBoth = (fn(Num<f64>) -> Num<f64>, fn(f64) -> f64);
        let unary: [OnBoth; 21] = [
            (Num::sq, Real::sq),
            (Num::exp, Real::exp),
            (Num::exp_m1, Real::exp_m1),
            (Num::ln, Real::ln),
            (Num::ln_1p, Real::ln_1p),
            (Num::sin, Real::sin),
            (Num::cos, Real::cos),
            (Num::tan, Real::tan),
            (Num::atan, Real::atan),
            (Num::tanh, Real::tanh),
            (Num::erf, Real::erf),
            (Num::erfc, Real::erfc),
            (Num::sqrt, Real::sqrt),
            (Num::cbrt, Real::cbrt),
            (Num::abs, Real::abs),
            (Num::gaussian, Real::gaussian),
            (Num::softplus, Real::softplus),
            (Num::sigmoid, Real::sigmoid),
            (|v| v.powi(-3), |v| Real::powi(v, -3)),
            (|v| v.powi(7), |v| Real::powi(v, 7)),
            (|v| v.powf(2.5), |v| Real::powf(v, 2.5)),
        ];
        for (on_num, on_f64) in unary {
            assert_eq!(on_num(nx).0.to_bits(), on_f64(x).to_bits());
        }
        assert_eq!(nx.atan2(ny).0, Real::atan2(x, y));
        assert_eq!(nx.hypot(ny).0, Real::hypot(x, y));
        assert_eq!(nx.log_sum_exp(ny).0, Real::log_sum_exp(x, y));
        assert_eq!(nx.powf(ny).0, Real::pow(x, y));
        assert_eq!(nx.powf(ny).0, Real::powf(x, y));
        assert_eq!(
            Num::log_sum_exp_of(&[nx, ny, Num(2.0)]).0,
            f64::log_sum_exp_of(&[x, y, 2.0])
        );
    }

    /// Integer literals mix as their `f64` value, on either side, in a generic term, and float
    /// literals still infer beside them.
    #[test]
    fn integer_literals_are_their_f64_value() {
        fn with_integers<R: Real>(x: &[Num<R>]) -> Num<R> {
            2 * x[0] + x[1] * 3 - 1 + x[0] / 2 - (4 - x[1]) + 1 / x[0] + 2.0 * x[1] - x[0] * 0.5
        }
        fn with_floats<R: Real>(x: &[Num<R>]) -> Num<R> {
            2.0 * x[0] + x[1] * 3.0 - 1.0 + x[0] / 2.0 - (4.0 - x[1]) + 1.0 / x[0] + 2.0 * x[1]
                - x[0] * 0.5
        }
        let x = [Num(0.3_f64), Num(-1.7)];
        assert_eq!(with_integers(&x).0.to_bits(), with_floats(&x).0.to_bits());
        let mut y = x[0];
        y += 1;
        y *= -3;
        assert_eq!(y.0, (0.3 + 1.0) * -3.0);
    }

    #[test]
    fn compound_assignment_is_the_operator() {
        let (x, c) = (Num(0.3_f64), 1.7);
        let mut y = x;
        y += x;
        y -= c;
        y *= x;
        y /= c;
        y *= 2.5;
        y /= x;
        y += 0.25;
        y -= x;
        assert_eq!(y.0, (((x.0 + x.0 - c) * x.0 / c) * 2.5 / x.0) + 0.25 - x.0);
    }

    #[test]
    fn powi_matches_repeated_multiplication() {
        let x = Num(1.3_f64);
        assert_eq!(x.powi(0).0, 1.0);
        assert_eq!(x.powi(1).0, 1.3);
        assert_eq!(x.powi(3).0, 1.3 * 1.3 * 1.3);
        assert_eq!(Num(2.0_f64).powi(-2).0, 0.25);
    }

    #[test]
    fn constants_mix_on_either_side() {
        let x = Num(0.25_f64);
        assert_eq!((2.0 - x).0, 1.75);
        assert_eq!((x - 2.0).0, -1.75);
        assert_eq!((3.0 * x).0, (x * 3.0).0);
        assert_eq!((1.0 / x).0, 4.0);
        assert_eq!((x + 1.0).0, (1.0 + x).0);
        assert_eq!((-x).0, -0.25);
    }

    #[test]
    fn functions_are_libm_s_on_every_target() {
        let x = Num(0.7_f64);
        assert_eq!(x.tan().0, libm::tan(0.7));
        assert_eq!(x.tanh().0, libm::tanh(0.7));
        assert_eq!(x.atan2(Num(-0.2)).0, libm::atan2(0.7, -0.2));
        assert_eq!(x.powf(2.5).0, libm::pow(0.7, 2.5));
        assert_eq!(Num(-3.0_f64).abs().0, 3.0);
        assert_eq!(Num(2.0_f64).min(Num(-1.0)).0, -1.0);
        assert_eq!(Num(2.0_f64).max(Num(-1.0)).0, 2.0);
        // Data constants have the same functions through `Real`.
        assert_eq!(Real::exp(0.5_f64), crate::math::exp(0.5));
    }
}
