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

use core::cell::Cell;

mod ops;

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
    /// cleared before each sweep (on the CPU that was a `memset` call per term, costly for short
    /// tapes). Shorter scratch is an overflow.
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

#[cfg(test)]
mod tests;
