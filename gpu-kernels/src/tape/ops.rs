//! A [`Var`]'s arithmetic: the operators, and the functions of [`Real`], each recording one
//! step with its local partial derivatives.

use super::{NONE, Step, Var, dot_in_four_sums, run_offset};
use crate::device::Strided;
use crate::dual::{DualScalar, erf_slope};
use crate::real::Real;
use crate::term::four_sums;
use core::ops::{Add, Div, Mul, Neg, Sub};

impl Add for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: Self) -> Self {
        self.binary(rhs, self.value + rhs.value, 1.0, 1.0)
    }
}

impl Sub for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: Self) -> Self {
        self.binary(rhs, self.value - rhs.value, 1.0, -1.0)
    }
}

impl Mul for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: Self) -> Self {
        self.binary(rhs, self.value * rhs.value, rhs.value, self.value)
    }
}

impl Div for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: Self) -> Self {
        let quotient = self.value / rhs.value;
        self.binary(rhs, quotient, 1.0 / rhs.value, -quotient / rhs.value)
    }
}

impl Neg for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self.unary(-self.value, -1.0)
    }
}

impl Add<f64> for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn add(self, rhs: f64) -> Self {
        self.unary(self.value + rhs, 1.0)
    }
}

impl Sub<f64> for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, rhs: f64) -> Self {
        self.unary(self.value - rhs, 1.0)
    }
}

impl Mul<f64> for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, rhs: f64) -> Self {
        self.unary(self.value * rhs, rhs)
    }
}

impl Div<f64> for Var<'_> {
    type Output = Self;
    #[inline(always)]
    fn div(self, rhs: f64) -> Self {
        self.unary(self.value / rhs, 1.0 / rhs)
    }
}

impl Real for Var<'_> {
    #[inline(always)]
    fn from_f64(value: f64) -> Self {
        Var::constant(value)
    }
    /// One [`Step::Linear`] over the run of window variables, its weights kept on the tape (or
    /// where they are, a run of the tape's source), and `plus` in the same step.
    #[inline(always)]
    fn linear_combination(
        plus: Option<Self>,
        first: Self,
        last: Self,
        weights: Strided<'_>,
    ) -> Option<Self> {
        let tape = first.tape?;
        let len = weights.len();
        let is_window_run = first.index != NONE
            && last.index.checked_sub(first.index) == Some(len as u32 - 1)
            && last.index < tape.inputs();
        if !is_window_run {
            return None;
        }
        let values = &tape.point[first.index as usize..=last.index as usize];
        // `plus + sum` as `Num` adds them, to the same bits.
        let with_plus = |sum: f64| plus.map_or(sum, |p| p.value + sum);
        let linear = |offset: u32, in_source: bool| Step::Linear {
            first: first.index,
            len: len as u32,
            offset,
            plus: plus.map_or(NONE, |p| p.index),
            in_source,
        };
        let contiguous = weights.contiguous();
        let in_source = contiguous.and_then(|run| {
            let offset = run_offset(tape.source, run)?;
            Some((u32::try_from(offset).ok()?, run))
        });
        if let Some((offset, run)) = in_source {
            // Read where they lie in the data, by the sweep too: nothing copied.
            return Some(Var {
                value: with_plus(dot_in_four_sums(values, run)),
                index: tape.push(linear(offset, true)),
                tape: Some(tape),
            });
        }
        let offset = tape.weights_len.get();
        let slots = tape.weights.get(offset as usize..offset as usize + len);
        let sum = match (slots, contiguous) {
            // Weights side by side (the CPU's rows) are copied in one loop and summed with the
            // point in another, both over slices, which the compiler reads several values at a
            // time, where one loop reading the window's `Var`s (24 bytes apart) went one weight
            // at a time. (Summing from the copies is slower: the loads wait on the copy's wider
            // stores.)
            (Some(slots), Some(weights)) => {
                for (slot, &w) in slots.iter().zip(weights) {
                    slot.set(w);
                }
                dot_in_four_sums(values, weights)
            }
            (Some(slots), None) => four_sums(len, 0.0, |i| {
                let w = weights.get(i);
                slots[i].set(w);
                values[i] * w
            }),
            (None, _) => {
                tape.overflowed.set(true);
                let sum = four_sums(len, 0.0, |i| values[i] * weights.get(i));
                return Some(Var::constant(with_plus(sum)));
            }
        };
        tape.weights_len.set(offset + len as u32);
        Some(Var {
            value: with_plus(sum),
            index: tape.push(linear(offset, false)),
            tape: Some(tape),
        })
    }
    #[inline(always)]
    fn value(self) -> f64 {
        self.value
    }
    #[inline(always)]
    fn exp(self) -> Self {
        let e = Real::exp(self.value);
        self.unary(e, e)
    }
    /// One operand, not two (`x·x` would record `x` twice): one step fewer to sweep, with the
    /// same bits (`a·2x` is `a·x + a·x`: doubling is exact).
    #[inline(always)]
    fn sq(self) -> Self {
        self.unary(self.value * self.value, 2.0 * self.value)
    }
    /// One step, not three (`sq`, `· −½`, `exp`), with the default's value to the bit.
    #[inline(always)]
    fn gaussian(self) -> Self {
        let e = Real::exp(self.value * self.value * -0.5);
        self.unary(e, -self.value * e)
    }
    /// One operation whatever is recorded: a [`Step::AddProduct`] where all three are, else one
    /// step over the two or one that are (`s + a·c` with `c` a constant, a data value say, is
    /// one step, not a product and a sum), with the default's value bits.
    #[inline(always)]
    fn add_product(self, a: Self, b: Self) -> Self {
        let value = self.value + a.value * b.value;
        match (self.tape, self.index, a.index, b.index) {
            (_, NONE, _, _) => a.binary(b, value, b.value, a.value),
            (_, _, _, NONE) => self.binary(a, value, 1.0, b.value),
            (_, _, NONE, _) => self.binary(b, value, 1.0, a.value),
            (Some(tape), c, a_index, b_index) => Var {
                value,
                index: tape.push(Step::AddProduct {
                    a: a_index,
                    b: b_index,
                    c,
                    da: b.value,
                    db: a.value,
                }),
                tape: Some(tape),
            },
            (None, ..) => Var::constant(value),
        }
    }
    #[inline(always)]
    fn exp_m1(self) -> Self {
        self.unary(Real::exp_m1(self.value), Real::exp(self.value))
    }
    #[inline(always)]
    fn ln(self) -> Self {
        self.unary(Real::ln(self.value), 1.0 / self.value)
    }
    #[inline(always)]
    fn ln_1p(self) -> Self {
        self.unary(Real::ln_1p(self.value), 1.0 / (self.value + 1.0))
    }
    #[inline(always)]
    fn sin(self) -> Self {
        let (sin, cos) = Real::sin_cos(self.value);
        self.unary(sin, cos)
    }
    #[inline(always)]
    fn cos(self) -> Self {
        let (sin, cos) = Real::sin_cos(self.value);
        self.unary(cos, -sin)
    }
    #[inline(always)]
    fn tan(self) -> Self {
        let t = Real::tan(self.value);
        self.unary(t, t * t + 1.0)
    }
    #[inline(always)]
    fn atan(self) -> Self {
        self.unary(
            Real::atan(self.value),
            1.0 / (self.value * self.value + 1.0),
        )
    }
    #[inline(always)]
    fn atan2(self, x: Self) -> Self {
        let (y, xv) = (self.value, x.value);
        let r2 = xv * xv + y * y;
        self.binary(x, Real::atan2(y, xv), xv / r2, -y / r2)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        let t = Real::tanh(self.value);
        self.unary(t, -(t * t) + 1.0)
    }
    #[inline(always)]
    fn erf(self) -> Self {
        self.unary(Real::erf(self.value), erf_slope(self.value))
    }
    #[inline(always)]
    fn erfc(self) -> Self {
        self.unary(Real::erfc(self.value), -erf_slope(self.value))
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        let s = Real::sqrt(self.value);
        self.unary(s, 0.5 / s)
    }
    #[inline(always)]
    fn cbrt(self) -> Self {
        let c = Real::cbrt(self.value);
        self.unary(c, 1.0 / (3.0 * c * c))
    }
    #[inline(always)]
    fn hypot(self, other: Self) -> Self {
        let h = Real::hypot(self.value, other.value);
        self.binary(other, h, self.value / h, other.value / h)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.unary(Real::abs(self.value), self.value.abs_slope())
    }
    #[inline(always)]
    fn powf(self, p: f64) -> Self {
        self.unary(
            Real::powf(self.value, p),
            Real::powf(self.value, p - 1.0) * p,
        )
    }
    #[inline(always)]
    fn pow(self, p: Self) -> Self {
        // As the duals' rule: with a constant exponent, `powf`'s slope and no `ln x`; the
        // `ln x` part is 0 where the power is.
        let value = Real::pow(self.value, p.value);
        let along_x = p.value * Real::pow(self.value, p.value - 1.0);
        let along_p = if value == 0.0 {
            0.0
        } else {
            value * Real::ln(self.value)
        };
        self.binary(p, value, along_x, along_p)
    }
}
