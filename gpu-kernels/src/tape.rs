//! Reverse mode: a term evaluated once on [`Var`]s records its operations on a [`Tape`], and
//! one sweep back over the record gives its partial derivatives in every variable of its
//! window. A gradient then costs about two evaluations whatever the window's width, where
//! forward mode ([`Dual`](crate::Dual)) costs one evaluation per group of seeded variables.
//!
//! Each operation records where its operands are and its local partial derivatives, computed
//! when it runs (`∂(a·b)/∂a = b`, `∂eᵃ/∂a = eᵃ`, ...). The sweep starts from adjoint 1 at the
//! result and hands each operation's adjoint to its operands, scaled by those partials, in
//! reverse order. A linear combination of window variables (`Vars::dot`, `Vars::dot_row`, the
//! inner loop of linear models) is one operation whose weights the tape keeps, not `2w`.
//!
//! The tape has a fixed capacity, given as storage by whoever evaluates (the CPU's chunks, a GPU
//! thread's local memory), so nothing is allocated per term. A term that records more than it
//! holds goes on with correct values and marks the tape [`overflowed`](Tape::overflowed); the
//! caller then takes that term's derivatives in forward mode instead.
//!
//! The values are computed by the same code as on `f64`, so a term's value on `Var`s has the
//! bits of its plain value. The partials are the ones the duals use, applied in the other
//! order: they agree with forward mode to rounding, not to the bit.

use crate::device::Strided;
use crate::dual::{DualScalar, erf_slope};
use crate::real::Real;
use crate::term::four_sums;
use core::cell::Cell;
use core::ops::{Add, Div, Mul, Neg, Sub};

/// The index of "no operand" (a constant).
const NONE: u32 = u32::MAX;

/// One recorded operation. Its result is the variable with index `inputs + position`.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// A function of one or two operands (`b` is `NONE`, `u32::MAX`, for one), with the partials of the
    /// result in each.
    Elementary {
        /// The first operand's index.
        a: u32,
        /// The second operand's index, or `NONE`.
        b: u32,
        /// `∂result/∂a`.
        da: f64,
        /// `∂result/∂b` (unused without `b`).
        db: f64,
    },
    /// `c + a·b` over three operands, with the partials in `a` and `b` (in `c` it is 1).
    AddProduct {
        /// The first factor's index.
        a: u32,
        /// The second factor's index.
        b: u32,
        /// The addend's index.
        c: u32,
        /// `∂result/∂a`, `b`'s value.
        da: f64,
        /// `∂result/∂b`, `a`'s value.
        db: f64,
    },
    /// `plus + Σ_i weights[offset + i] · variable[first + i]` over `len` window variables,
    /// `plus` a recorded number (its partial is 1) or `NONE`.
    Linear {
        /// The first variable's index.
        first: u32,
        /// How many variables.
        len: u32,
        /// Where the weights start: in the tape's source (the data) where `in_source`, else in
        /// its weight storage.
        offset: u32,
        /// The index of the number added to the sum, or `NONE`.
        plus: u32,
        /// Whether the weights are a run of the tape's source, read where they are.
        in_source: bool,
    },
}

impl Step {
    /// A step that records nothing, for filling unused storage.
    pub const EMPTY: Step = Step::Linear {
        first: 0,
        len: 0,
        offset: 0,
        plus: NONE,
        in_source: false,
    };
}

// A GPU thread keeps its tape in local memory, 32 bytes a step (kernel/reverse.rs's sizes).
const _: () = assert!(core::mem::size_of::<Step>() == 32);

/// The record of one evaluation: the operations, in order, and the weights of its linear
/// combinations. Reused from term to term ([`Tape::start`]).
pub struct Tape<'s> {
    steps: &'s [Cell<Step>],
    weights: &'s [Cell<f64>],
    /// The window variables' values, side by side: variable `j` is `point[j]`, and operation
    /// `k`'s result is variable `point.len() + k`.
    point: &'s [f64],
    /// The data the terms read (the CPU's table, row after row; empty where none is given): a
    /// linear combination whose weights are a run of it records where they are instead of a
    /// copy (a Poisson regression's 33 weights a row, stored and loaded back in the sweep).
    source: &'s [f64],
    len: Cell<u32>,
    weights_len: Cell<u32>,
    overflowed: Cell<bool>,
}

impl<'s> Tape<'s> {
    /// A tape over caller-given storage, at most `steps.len()` operations and `weights.len()`
    /// weights of linear combinations per evaluation (weights read from `source`, the terms'
    /// data, are not copied), for terms whose window is at `point`.
    #[inline(always)]
    pub fn new(
        steps: &'s [Cell<Step>],
        weights: &'s [Cell<f64>],
        point: &'s [f64],
        source: &'s [f64],
    ) -> Self {
        Tape {
            steps,
            weights,
            point,
            source,
            len: Cell::new(0),
            weights_len: Cell::new(0),
            overflowed: Cell::new(false),
        }
    }

    /// Empties the tape for the next evaluation.
    #[inline(always)]
    pub fn start(&self) {
        self.len.set(0);
        self.weights_len.set(0);
        self.overflowed.set(false);
    }

    /// The window's variables, recorded on this tape: variable `j` at `point[j]`.
    #[inline(always)]
    pub fn variables(&self) -> impl Iterator<Item = Var<'_>> {
        (self.point.iter().enumerate()).map(|(j, &value)| Var {
            value,
            index: j as u32,
            tape: Some(self),
        })
    }

    /// How many window variables: the first operation's result is variable `inputs()`.
    #[inline(always)]
    fn inputs(&self) -> u32 {
        self.point.len() as u32
    }

    /// Whether the last evaluation recorded more than the tape holds: its derivatives are
    /// then not available here (its value is).
    #[inline(always)]
    pub fn overflowed(&self) -> bool {
        self.overflowed.get()
    }

    /// Appends `step`, returning its result's index, or `NONE` once full.
    #[inline(always)]
    fn push(&self, step: Step) -> u32 {
        let len = self.len.get();
        match self.steps.get(len as usize) {
            Some(slot) => {
                slot.set(step);
                self.len.set(len + 1);
                self.inputs() + len
            }
            None => {
                self.overflowed.set(true);
                NONE
            }
        }
    }

    /// The sweep: adds `∂result/∂xⱼ` to `window[j]` for each window variable `j` (zero it first
    /// for the partials alone; a gradient adds term after term into its sums directly).
    /// `adjoints` is scratch of at least the recorded operations' count, all zero, and is left
    /// all zero: each slot is cleared as the sweep reads it, for the next term, instead of
    /// cleared before each sweep (on the CPU that was a `memset` call per term, for five slots
    /// in a Poisson regression's row: 14 % of its gradient). Shorter scratch is an overflow.
    /// Returns whether the partials were added: not after an overflow, which adds nothing.
    #[inline(always)]
    pub fn sweep(&self, result: Var<'_>, adjoints: &mut [f64], window: &mut [f64]) -> bool {
        let (inputs, len) = (self.point.len(), self.len.get() as usize);
        // Sliced once, so that reading step `k < len` needs no check of its own.
        let Some(steps) = self.steps.get(..len) else {
            return false;
        };
        if self.overflowed() || adjoints.len() < len || window.len() < inputs {
            return false;
        }
        // Zero on entry, zero again on exit: every slot below `len` is read once, below.
        let results = &mut adjoints[..len];
        match (result.index as usize).checked_sub(inputs) {
            _ if result.index == NONE => return true,
            None => window[result.index as usize] += 1.0,
            Some(k) => results[k] = 1.0,
        }
        // What the operation just swept gave the one recorded before it, its usual operand
        // (`((t − μ)/s)²·…`): kept in a register, not stored and loaded back at once, which
        // made every step wait on the one before through memory. It is the last operation to
        // give to that adjoint, so the additions keep their order (but for an operation whose
        // two operands are that one, whose two parts are added together first).
        let mut carried = 0.0;
        for k in (0..len).rev() {
            let adjoint = results[k] + carried;
            results[k] = 0.0;
            carried = 0.0;
            let mut give = |index: u32, amount: f64| {
                let index = index as usize;
                // Operands precede their operation: an input, or an earlier result.
                if k > 0 && index == inputs + k - 1 {
                    carried += amount;
                } else if index < inputs {
                    window[index] += amount;
                } else if let Some(slot) = results.get_mut(index - inputs) {
                    *slot += amount;
                }
            };
            match steps[k].get() {
                Step::Elementary { a, b, da, db } => {
                    give(a, da * adjoint);
                    if b != NONE {
                        give(b, db * adjoint);
                    }
                }
                Step::AddProduct { a, b, c, da, db } => {
                    give(a, da * adjoint);
                    give(b, db * adjoint);
                    give(c, adjoint);
                }
                Step::Linear {
                    first,
                    len,
                    offset,
                    plus,
                    in_source,
                } => {
                    if plus != NONE {
                        give(plus, adjoint);
                    }
                    let (first, run) = (first as usize, offset as usize..(offset + len) as usize);
                    let slots = window[first..].iter_mut();
                    if in_source {
                        for (slot, w) in slots.zip(&self.source[run]) {
                            *slot += w * adjoint;
                        }
                    } else {
                        for (slot, w) in slots.zip(&self.weights[run]) {
                            *slot += w.get() * adjoint;
                        }
                    }
                }
            }
        }
        true
    }
}

/// A number of a term evaluated in reverse mode: its value, and where the tape recorded it
/// (none for a constant, which records nothing).
#[derive(Clone, Copy)]
pub struct Var<'t> {
    value: f64,
    index: u32,
    tape: Option<&'t Tape<'t>>,
}

impl core::fmt::Debug for Var<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Var({} @ {})", self.value, self.index)
    }
}

/// Where `run` starts within `source`, when it is a run of it: the same memory, so that
/// `source[offset..offset + run.len()]` reads it. Addresses compared as numbers: two slices
/// alive at once overlap only where they view the same allocation.
#[inline(always)]
fn run_offset(source: &[f64], run: &[f64]) -> Option<usize> {
    let bytes = (run.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
    let offset = bytes / size_of::<f64>();
    let inside = bytes % size_of::<f64>() == 0 && offset.checked_add(run.len())? <= source.len();
    inside.then_some(offset)
}

/// `Σ aᵢ·bᵢ` summed as [`four_sums`] sums it (element `i` into running sum `i mod 4`, the
/// last `len mod 4` into the first, then `(s₀ + s₁) + (s₂ + s₃)`), to the same bits, over
/// slices of one length, without a bounds check per element.
#[inline(always)]
fn dot_in_four_sums(a: &[f64], b: &[f64]) -> f64 {
    let mut partial = [0.0; 4];
    let (quads_a, quads_b) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail = quads_a.remainder().iter().zip(quads_b.remainder());
    for (qa, qb) in quads_a.zip(quads_b) {
        for (p, (x, w)) in partial.iter_mut().zip(qa.iter().zip(qb)) {
            *p += x * w;
        }
    }
    for (x, w) in tail {
        partial[0] += x * w;
    }
    (partial[0] + partial[1]) + (partial[2] + partial[3])
}

impl PartialEq for Var<'_> {
    /// Equal values (as `f64`s compare); where they were recorded does not count.
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<'t> Var<'t> {
    #[inline(always)]
    const fn constant(value: f64) -> Self {
        Var {
            value,
            index: NONE,
            tape: None,
        }
    }

    /// `value = f(self)` with `∂f/∂self = slope`.
    #[inline(always)]
    fn unary(self, value: f64, slope: f64) -> Self {
        match self.tape {
            Some(tape) if self.index != NONE => Var {
                value,
                index: tape.push(Step::Elementary {
                    a: self.index,
                    b: NONE,
                    da: slope,
                    db: 0.0,
                }),
                tape: Some(tape),
            },
            _ => Var::constant(value),
        }
    }

    /// `value = f(self, other)` with partials `da` and `db`; a constant operand records
    /// nothing of its own.
    #[inline(always)]
    fn binary(self, other: Self, value: f64, da: f64, db: f64) -> Self {
        match (self.index, other.index) {
            (NONE, NONE) => Var::constant(value),
            (_, NONE) => self.unary(value, da),
            (NONE, _) => other.unary(value, db),
            (a, b) => {
                let tape = self.tape.or(other.tape);
                Var {
                    value,
                    index: tape.map_or(NONE, |t| t.push(Step::Elementary { a, b, da, db })),
                    tape,
                }
            }
        }
    }
}

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
            // Read where they lie in the data, by the sweep too: nothing copied (a Poisson
            // regression's value and gradient over 10⁶ rows of 33 columns, about 3 % faster).
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
            // at a time: Poisson regression's gradient, 10⁶ rows of 33 columns, 16.4 → 14.6
            // ms. (Summed from the copies instead, it took 19.6 ms: the loads waited on the
            // copy's wider stores.)
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
        self.unary(Real::sin(self.value), Real::cos(self.value))
    }
    #[inline(always)]
    fn cos(self) -> Self {
        self.unary(Real::cos(self.value), -Real::sin(self.value))
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

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::dual::Dual;
    use crate::real::Num;
    use crate::term::{Data, Vars};
    use std::vec::Vec;

    /// Storage for a tape of `steps` operations and `weights` weights.
    fn storage(steps: usize, weights: usize) -> (Vec<Cell<Step>>, Vec<Cell<f64>>) {
        (
            (0..steps).map(|_| Cell::new(Step::EMPTY)).collect(),
            (0..weights).map(|_| Cell::new(0.0)).collect(),
        )
    }

    /// `f`'s value and gradient at `x` in reverse mode, or `None` on overflow.
    fn reverse(
        steps: usize,
        x: &[f64],
        f: impl for<'t> Fn(Vars<'_, Var<'t>>) -> Num<Var<'t>>,
    ) -> Option<(f64, Vec<f64>)> {
        reverse_over(steps, 64, x, &[], f)
    }

    /// [`reverse`] on a tape of `weights` weights whose source is `source`.
    fn reverse_over(
        steps: usize,
        weights: usize,
        x: &[f64],
        source: &[f64],
        f: impl for<'t> Fn(Vars<'_, Var<'t>>) -> Num<Var<'t>>,
    ) -> Option<(f64, Vec<f64>)> {
        let (steps, weights) = storage(steps, weights);
        let tape = Tape::new(&steps, &weights, x, source);
        tape.start();
        let vars: Vec<_> = tape.variables().collect();
        let result = f(Vars::new(&vars)).0;
        let mut gradient = std::vec![0.0; x.len()];
        let mut adjoints = std::vec![0.0; steps.len()];
        let swept = tape.sweep(result, &mut adjoints, &mut gradient);
        assert!(
            adjoints.iter().all(|&a| a == 0.0),
            "the sweep leaves its scratch zero"
        );
        swept.then_some((result.value, gradient))
    }

    /// `f`'s value and gradient at `x` in forward mode, one variable at a time.
    fn forward(x: &[f64], f: impl Fn(Vars<'_, Dual<1>>) -> Num<Dual<1>>) -> (f64, Vec<f64>) {
        let mut window: Vec<_> = x.iter().map(|&v| Dual::<1>::constant(v)).collect();
        let mut gradient = Vec::new();
        let mut value = 0.0;
        for j in 0..x.len() {
            window[j].derivatives[0] = 1.0;
            let result = f(Vars::new(&window)).0;
            window[j].derivatives[0] = 0.0;
            (value, gradient) = (
                result.value,
                [gradient, std::vec![result.derivatives[0]]].concat(),
            );
        }
        (value, gradient)
    }

    #[test]
    fn the_gradient_is_the_hand_derived_one() {
        // f = x₀·x₁ + sin(x₀)/x₂ − 3: ∂₀ = x₁ + cos(x₀)/x₂, ∂₁ = x₀, ∂₂ = −sin(x₀)/x₂².
        let x = [0.7, -1.3, 2.5];
        let (value, g) = reverse(16, &x, |v| v[0] * v[1] + v[0].sin() / v[2] - 3.0).unwrap();
        let (s, c) = (libm::sin(0.7), libm::cos(0.7));
        assert_eq!(value, 0.7 * -1.3 + s / 2.5 - 3.0);
        assert_eq!(g, [-1.3 + c / 2.5, 0.7, -s / (2.5 * 2.5)]);
    }

    /// Every function's partials, in each argument, are the duals' to rounding.
    #[test]
    fn every_function_agrees_with_forward_mode() {
        fn agree((value, g): (f64, Vec<f64>), (expected_value, expected): (f64, Vec<f64>)) {
            assert_eq!(value.to_bits(), expected_value.to_bits());
            for (a, b) in g.iter().zip(&expected) {
                assert!(
                    (a - b).abs() <= 1e-14 * b.abs().max(1.0),
                    "{g:?} vs {expected:?}"
                );
            }
        }
        // Each function once, as a generic fn both modes evaluate.
        macro_rules! each {
            ($x:expr; $(|$v:ident| $body:expr),* $(,)?) => {$({
                fn f<R: Real>($v: Vars<'_, R>) -> Num<R> {
                    $body
                }
                agree(reverse(64, $x, |v| f(v)).unwrap(), forward($x, |v| f(v)));
            })*};
        }
        each![&[0.3, 1.7];
            |v| v[0].exp() * v[1], |v| v[0].exp_m1() - v[1], |v| v[1].ln() + v[0].ln_1p(),
            |v| v[0].sin() * v[1].cos(), |v| v[0].tan() + v[1].atan(), |v| v[0].atan2(v[1]),
            |v| v[1].tanh() * v[0], |v| v[0].erf() + v[1].erfc(), |v| v[1].sqrt() * v[0].cbrt(),
            |v| v[0].hypot(v[1]), |v| (-v[0]).abs() * v[1], |v| v[1].powf(2.5) - v[0],
            |v| v[1].powf(v[0]), |v| v[0].softplus() * v[1].sigmoid(),
            |v| v[1].gaussian() * v[0], |v| ((1.5 - v[0]) / v[1]).gaussian(),
            |v| v[1].add_product(v[0], v[0].exp()), |v| v[0].add_product(v[1], v[1]),
            |v| Num::constant(0.5).add_product(v[0], v[1]) * v[1],
            |v| v[0].add_product(Num::constant(3.0), v[1]),
            |v| v[0].log_sum_exp(v[1]), |v| (2.0 - v[0]) / (v[1] * v[1] + 1.0),
            |v| v[0] / 4.0 + 1.5 * v[1] - v[0] * 0.5,
        ];
    }

    /// `rows` rows of data, `width` columns of them, and a point of `width` variables.
    fn linear_model(rows: usize, width: usize) -> (Vec<f64>, Vec<f64>) {
        let columns = (0..rows * width)
            .map(|i| libm::sin(i as f64 * 0.37))
            .collect();
        let x = (0..width).map(|j| 0.1 * libm::cos(j as f64)).collect();
        (columns, x)
    }

    /// A wide linear model under a nonlinearity, through `dot_row` (one linear step): the
    /// gradient is forward mode's to 1e-14 relative, for each row.
    #[test]
    fn a_linear_combination_is_one_step_with_its_weights() {
        let (columns, x) = linear_model(3, 33);
        let data = Data::new(&columns, 3);
        for r in 0..3 {
            let row = data.row(r);
            // 4 steps: the linear combination, exp, 2η and the difference.
            let (value, g) = reverse(4, &x, |v| {
                let eta = v.dot_row(0, row);
                eta.exp() - 2.0 * eta
            })
            .unwrap();
            let eta: f64 = (0..x.len()).map(|j| x[j] * row.get(j)).sum();
            let slope = libm::exp(eta) - 2.0;
            assert!((value - (libm::exp(eta) - 2.0 * eta)).abs() < 1e-13);
            for (j, d) in g.iter().enumerate() {
                let expected = slope * row.get(j);
                assert!(
                    (d - expected).abs() <= 1e-14 * expected.abs().max(1.0),
                    "{j}"
                );
            }
        }
    }

    /// `s + a·b` is one step whichever of the three are constants (a data value as a factor,
    /// say), with the hand-derived partials and the bits of `s + a * b`.
    #[test]
    fn add_product_records_one_step_whatever_is_constant() {
        let x = [0.7, -1.3];
        type Case = for<'a, 't> fn(Vars<'a, Var<'t>>) -> Num<Var<'t>>;
        let cases: [(Case, f64, [f64; 2]); 5] = [
            // s + a·c: ∂s = 1, ∂a = c.
            (
                |v| v[0].add_product(v[1], Num::constant(2.5)),
                0.7 + -1.3 * 2.5,
                [1.0, 2.5],
            ),
            (
                |v| v[0].add_product(Num::constant(2.5), v[1]),
                0.7 + 2.5 * -1.3,
                [1.0, 2.5],
            ),
            // c + a·b: ∂a = b, ∂b = a.
            (
                |v| Num::constant(4.0).add_product(v[0], v[1]),
                4.0 + 0.7 * -1.3,
                [-1.3, 0.7],
            ),
            // c + a·c', s + c·c'.
            (
                |v| Num::constant(4.0).add_product(v[1], Num::constant(3.0)),
                4.0 + -1.3 * 3.0,
                [0.0, 3.0],
            ),
            (
                |v| v[0].add_product(Num::constant(2.0), Num::constant(3.0)),
                0.7 + 2.0 * 3.0,
                [1.0, 0.0],
            ),
        ];
        for (f, value, gradient) in cases {
            let (v, g) = reverse(1, &x, f).expect("one step");
            assert_eq!(v.to_bits(), value.to_bits());
            assert_eq!(g, gradient);
        }
    }

    /// `dot_row_plus` is one linear step with the number it adds, recorded or constant: a
    /// Poisson regression's row, `e^η − y·η` with `η = x₀ + Σ_{j≥1} x_j·row_j`, records the
    /// step, `exp` and the difference, and its gradient is the hand-derived `(e^η − y)·(1, row)`.
    #[test]
    fn an_intercept_is_part_of_the_linear_step() {
        let (columns, x) = linear_model(3, 33);
        let data = Data::new(&columns, 3);
        for r in 0..3 {
            let row = data.row(r);
            let (value, g) = reverse(3, &x, |v| {
                let eta = v.dot_row_plus(1, row, v[0]);
                eta.exp().add_product(Num::constant(-row.get(0)), eta)
            })
            .expect("three steps");
            let eta = x[0] + (1..x.len()).map(|j| x[j] * row.get(j)).sum::<f64>();
            let slope = libm::exp(eta) - row.get(0);
            assert!((value - (libm::exp(eta) - row.get(0) * eta)).abs() < 1e-13);
            for (j, d) in g.iter().enumerate() {
                let expected = slope * if j == 0 { 1.0 } else { row.get(j) };
                assert!(
                    (d - expected).abs() <= 1e-14 * expected.abs().max(1.0),
                    "{j}"
                );
            }
            // A constant added: the sum alone is recorded, with the constant's value.
            let (value, g) =
                reverse(1, &x, |v| v.dot_row_plus(1, row, Num::constant(2.5))).expect("one step");
            let plain = Vars::new(&x).dot_row_plus(1, row, Num::constant(2.5)).0;
            assert_eq!(value.to_bits(), plain.to_bits());
            assert_eq!(g[0], 0.0);
            assert_eq!(g[1], row.get(1));
        }
    }

    /// Rows side by side in the tape's source are read where they lie: on a tape with no room
    /// for weights (which a copy would overflow) a Poisson regression's row gives the bits of
    /// the copied weights' value and gradient; a row not in the source is copied as before.
    #[test]
    fn weights_in_the_source_are_read_in_place() {
        let (columns, x) = linear_model(3, 33);
        let by_row: Vec<f64> = (0..3 * 33)
            .map(|i| columns[(i % 33) * 3 + i / 33])
            .collect();
        let data = Data::new(&columns, 3).with_rows(&by_row);
        fn row_term<'t>(row: crate::term::Row<'_>, v: Vars<'_, Var<'t>>) -> Num<Var<'t>> {
            let eta = v.dot_row_plus(1, row, v[0]);
            eta.exp().add_product(Num::constant(-row.get(0)), eta)
        }
        for r in 0..3 {
            let row = data.row(r);
            let copied = reverse_over(3, 64, &x, &[], |v| row_term(row, v)).unwrap();
            let in_place = reverse_over(3, 0, &x, &by_row, |v| row_term(row, v)).expect("in place");
            assert_eq!(in_place.0.to_bits(), copied.0.to_bits());
            let bits = |g: &[f64]| g.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&in_place.1), bits(&copied.1));
            // Another table's row is no run of this source: copied, so no room is an overflow.
            let other = by_row.clone();
            let elsewhere = Data::new(&columns, 3).with_rows(&other).row(r);
            assert!(reverse_over(3, 0, &x, &by_row, |v| row_term(elsewhere, v)).is_none());
        }
    }

    /// More operations than the tape holds: the value is still right, the sweep refuses.
    #[test]
    fn an_overflow_keeps_the_value_and_refuses_the_sweep() {
        let x = [1.0, 2.0];
        fn long<R: Real>(v: Vars<'_, R>) -> Num<R> {
            let mut s = v[0];
            for _ in 0..10 {
                s = s * v[1] + 1.0;
            }
            s
        }
        // Closures, not `long` itself: `reverse` needs a function of every tape's lifetime.
        #[allow(clippy::redundant_closure)]
        let too_short = reverse(5, &x, |v| long(v));
        assert!(too_short.is_none());
        #[allow(clippy::redundant_closure)]
        let (value, g) = reverse(20, &x, |v| long(v)).unwrap();
        assert_eq!(value, 2047.0);
        assert_eq!(g[0], 1024.0);
    }

    /// A result that does not depend on the window: zero partials; one that is a variable:
    /// a unit partial.
    #[test]
    fn constants_and_bare_variables() {
        let x = [3.0, 4.0];
        assert_eq!(
            reverse(4, &x, |_| Num::constant(2.0)).unwrap().1,
            [0.0, 0.0]
        );
        assert_eq!(reverse(4, &x, |v| v[1]).unwrap().1, [0.0, 1.0]);
    }
}
