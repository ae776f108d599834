//! Exact derivatives in reverse mode (see [`tape`](crate::tape)): a term evaluated once on
//! [`Var`]s records its operations, and one sweep back gives its partials in every variable of
//! its window. The exact scheme takes a dense term so when [`reverse_mode`] says, and falls back
//! to forward mode for a term whose record does not fit its tape.

use super::normal::{ExactRow, JacobianRow};
use crate::real::Real;
use crate::tape::{Step, Tape, Var};
use crate::term::{Data, Differentiation, Term, Vars, Window};
use core::cell::Cell;

/// Operations a tape holds on the CPU (one tape per worker thread, reused by its chunks).
pub const TAPE_STEPS_CPU: usize = 4096;
/// Weights of linear combinations a tape holds on the CPU.
pub const TAPE_WEIGHTS_CPU: usize = 4096;
/// Under [`Differentiation::Auto`], the narrowest dense window the CPU takes in reverse mode:
/// up to 16 variables, one evaluation on duals of 16 lanes (`DENSE_LANES`) covers the window and
/// costs about a value; from 33 on, reverse mode is the cheaper (BENCHMARKS.md, "Reverse mode
/// for dense terms").
pub const REVERSE_MIN_WIDTH_CPU: usize = 17;

/// Whether the CPU's exact scheme differentiates term `T`, at window width `width`, in reverse
/// mode: dense windows only (a banded window, at most 16 variables, stays on duals in
/// registers), as the term asks ([`Term::DIFFERENTIATION`]), and under `Auto` from the width at
/// which reverse mode was measured faster. The GPU differentiates forward only: a thread's tape
/// would live in local memory, where its window of duals no longer does.
pub const fn reverse_mode<T: Term>(width: usize) -> bool {
    if !matches!(T::WINDOW, Window::Dense) {
        return false;
    }
    match T::DIFFERENTIATION {
        Differentiation::Forward => false,
        Differentiation::Reverse => true,
        Differentiation::Auto => width >= REVERSE_MIN_WIDTH_CPU,
    }
}

/// Tape storage of `S` operations and `W` weights, for a CPU worker thread.
pub struct TapeStorage<const S: usize, const W: usize> {
    steps: [Cell<Step>; S],
    weights: [Cell<f64>; W],
}

impl<const S: usize, const W: usize> TapeStorage<S, W> {
    /// Empty storage.
    #[inline(always)]
    pub fn new() -> Self {
        TapeStorage {
            steps: [const { Cell::new(Step::EMPTY) }; S],
            weights: [const { Cell::new(0.0) }; W],
        }
    }

    /// A tape over this storage, for terms whose window is at `point` and whose data are
    /// `source` (see [`Tape::new`]).
    #[inline(always)]
    pub fn tape<'s>(&'s self, point: &'s [f64], source: &'s [f64]) -> Tape<'s> {
        Tape::new(&self.steps, &self.weights, point, source)
    }
}

impl<const S: usize, const W: usize> Default for TapeStorage<S, W> {
    fn default() -> Self {
        Self::new()
    }
}

/// `window[j]` as variable `j` of `tape` (as long as its point).
#[inline(always)]
pub fn fill_variables<'t>(window: &mut [Var<'t>], tape: &'t Tape<'t>) {
    for (w, variable) in window.iter_mut().zip(tape.variables()) {
        *w = variable;
    }
}

/// Term `T` (prepared as `local`) on `window`, the variables of `tape` ([`fill_variables`]),
/// in reverse mode: its value, and whether its partials were added to `partials` (one per
/// window variable); they are not when its record overflowed the tape, or `adjoints` (scratch
/// of the tape's operations, all zero, left so: [`Tape::sweep`]).
#[inline(always)]
pub fn eval_reverse<T: Term>(
    local: &T::Local<'_>,
    tape: &Tape<'_>,
    window: &[Var<'_>],
    adjoints: &mut [f64],
    partials: &mut [f64],
) -> (f64, bool) {
    tape.start();
    let result = T::eval(Vars::new(window), local).0;
    let swept = tape.sweep(result, adjoints, partials);
    (Real::value(result), swept)
}

/// A term's gradient (a residual's Jacobian row) in reverse mode, over a dense window (every
/// term's window is `x`, filled into `window` once); a term whose record overflows the tape is
/// taken by `forward` instead, and counted.
pub struct ReverseRow<'w, 't, const L: usize> {
    tape: &'t Tape<'t>,
    window: &'w [Var<'t>],
    adjoints: &'w mut [f64],
    forward: ExactRow<'w, L>,
    /// How many terms overflowed the tape, so far.
    pub overflows: usize,
}

impl<'w, 't, const L: usize> ReverseRow<'w, 't, L> {
    /// Rows from `tape`, whose variables `window` holds ([`fill_variables`]), with `adjoints`
    /// scratch of the tape's operations (all zero), and `forward` for terms that overflow it.
    #[inline(always)]
    pub fn new(
        tape: &'t Tape<'t>,
        window: &'w [Var<'t>],
        adjoints: &'w mut [f64],
        forward: ExactRow<'w, L>,
    ) -> Self {
        ReverseRow {
            tape,
            window,
            adjoints,
            forward,
            overflows: 0,
        }
    }
}

impl<const L: usize> ReverseRow<'_, '_, L> {
    /// Term `k`'s partials added to `acc` (its window's sums), and its value: the dense
    /// gradient's step, without a row in between. `scratch` (the window's width) holds the
    /// forward row of a term that overflows the tape.
    #[inline(always)]
    pub fn add_gradient<T: Term>(
        &mut self,
        k: usize,
        x: &[f64],
        data: Data<'_>,
        acc: &mut [f64],
        scratch: &mut [f64],
    ) -> f64 {
        let local = T::prepare(k, x.len(), data);
        match eval_reverse::<T>(&local, self.tape, self.window, self.adjoints, acc) {
            (value, true) => value,
            (_, false) => {
                self.overflows += 1;
                let value = self.forward.row::<T>(k, x, data, scratch);
                for (a, d) in acc.iter_mut().zip(scratch.iter()) {
                    *a += d;
                }
                value
            }
        }
    }
}

impl<const L: usize> JacobianRow for ReverseRow<'_, '_, L> {
    #[inline(always)]
    fn row<T: Term>(&mut self, k: usize, x: &[f64], data: Data<'_>, row: &mut [f64]) -> f64 {
        let local = T::prepare(k, x.len(), data);
        row.fill(0.0);
        match eval_reverse::<T>(&local, self.tape, self.window, self.adjoints, row) {
            (value, true) => value,
            (_, false) => {
                self.overflows += 1;
                self.forward.row::<T>(k, x, data, row)
            }
        }
    }
}
