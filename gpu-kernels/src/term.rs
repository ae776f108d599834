//! The objective model: `f(x) = Σ_{k<K} φ(k, x[W(k)], data)`.
//!
//! A [`Term`] is the function `φ`. It declares which variables each term reads (its
//! [`Window`]), may read read-only [`Data`], and splits its work in two:
//! [`prepare`](Term::prepare) does everything that does not depend on `x` (once per term per
//! launch), [`eval`](Term::eval) does the rest. The finite-difference gradient calls `eval`
//! once per perturbed variable, so expensive x-independent work (say, `sin(k·t_j)` in a data
//! fit) belongs in `prepare`.

pub use crate::data::{Data, Row};
use crate::device::{Elements, Strided, as_nums};
use crate::real::{Num, Real};
use core::ops::{Add, Index};

/// Which variables term `k` reads: `x[offset(k) .. offset(k) + width]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// Term `k` reads `x[k]` only (`K = n`).
    Separable,
    /// Term `k` reads `x[stride·k .. stride·k + width]` (`K = (n − width)/stride + 1`).
    /// Extended Rosenbrock is `{ stride: 2, width: 2 }`, chained Rosenbrock `{ stride: 1, width: 2 }`.
    Banded {
        /// How far each term's window starts from the previous term's, in variables.
        stride: usize,
        /// How many consecutive variables each term reads.
        width: usize,
    },
    /// Every term reads all of `x`; `K` is the number of data rows unless the term says otherwise.
    Dense,
}

impl Window {
    /// `(stride, width)` for `n` variables. A dense window is one term-wide band of width `n`.
    #[inline(always)]
    pub const fn stride_width(self, n: usize) -> (usize, usize) {
        match self {
            Window::Separable => (1, 1),
            Window::Banded { stride, width } => (stride, width),
            Window::Dense => (0, n),
        }
    }

    /// First variable of term `k`'s window.
    #[inline(always)]
    pub const fn offset(self, k: usize, n: usize) -> usize {
        self.stride_width(n).0 * k
    }

    /// Whether `n` variables tile into whole windows.
    pub const fn check(self, n: usize) -> Result<(), &'static str> {
        match self {
            Window::Separable | Window::Dense if n == 0 => Err("n must be at least 1"),
            Window::Separable | Window::Dense => Ok(()),
            Window::Banded { stride, width } => {
                if stride == 0 || width == 0 {
                    Err("a banded window needs stride >= 1 and width >= 1")
                } else if n < width {
                    Err("n is smaller than one window")
                } else if (n - width) % stride != 0 {
                    Err(
                        "n does not tile into whole windows: (n - width) must be a multiple of the stride",
                    )
                } else {
                    Ok(())
                }
            }
        }
    }

    /// The default term count: one per window position, or one per data row when dense.
    pub const fn default_terms(self, n: usize, data: Data<'_>) -> usize {
        match self {
            Window::Separable => n,
            Window::Banded { stride, width } => {
                if n < width || stride == 0 {
                    0
                } else {
                    (n - width) / stride + 1
                }
            }
            Window::Dense => data.rows(),
        }
    }
}

/// The variables one term sees: its window of `x`, with at most one of them perturbed.
///
/// `x[j]` is the window's `j`-th variable, a [`Num`]. The finite-difference kernels hand `eval`
/// the same window with one variable replaced, instead of copying the window for every
/// perturbation.
#[derive(Clone, Copy, Debug)]
pub struct Vars<'a, R> {
    x: &'a [Num<R>],
    bumped_at: usize,
    bumped: Num<R>,
    /// Where the window's derivative seeds start, for the exact kernels: variable
    /// `seeded + l` carries the unit lane `l`, every other variable none. `usize::MAX` when the
    /// window is not seeded that way.
    seeded: usize,
    /// The seeded variables `seeded ..`, when they are held apart from `x` (which then holds
    /// them as constants): the GPU keeps one window of constants per block and one run of
    /// seeded variables per seeding, in shared memory, instead of a seeded copy per thread.
    /// Empty otherwise.
    seeds: &'a [Num<R>],
}

impl<'a, R: Copy> Vars<'a, R> {
    /// The window as it is. Panics (traps on the GPU) on an empty window, which no
    /// [`Window`] produces.
    #[inline(always)]
    pub fn new(x: &'a [R]) -> Self {
        let x = as_nums(x);
        Vars {
            x,
            bumped_at: usize::MAX,
            bumped: x[0],
            seeded: usize::MAX,
            seeds: &[],
        }
    }

    /// The window of the exact kernels: constants, except that variable `first + l` carries
    /// the unit derivative lane `l` for every lane of `R`. Only `kernel::exact` seeds windows.
    #[inline(always)]
    pub(crate) fn seeded(x: &'a [R], first: usize) -> Self {
        Vars {
            seeded: first,
            ..Vars::new(x)
        }
    }

    /// The window of constants `x` with variables `first .. first + seeds.len()` read from
    /// `seeds` instead: as [`seeded`](Self::seeded), where `seeds` carry the unit lanes.
    #[inline(always)]
    pub(crate) fn seeded_by(x: &'a [R], first: usize, seeds: &'a [R]) -> Self {
        Vars {
            seeded: first,
            seeds: as_nums(seeds),
            ..Vars::new(x)
        }
    }

    /// The window with variable `j` replaced by `value`.
    #[inline(always)]
    pub fn with(x: &'a [R], j: usize, value: R) -> Self {
        Vars {
            x: as_nums(x),
            bumped_at: j,
            bumped: Num(value),
            seeded: usize::MAX,
            seeds: &[],
        }
    }

    /// The window's width.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Whether the window is empty (never, for a [`Window`]'s).
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }
}

impl<R: Real> Vars<'_, R> {
    /// `Σ_i x[start + i]·weights[i]`: the inner loop of linear models.
    #[inline(always)]
    pub fn dot(&self, start: usize, weights: &[f64]) -> Num<R> {
        self.weighted_sum(None, start, Strided::new(weights, 0, 1, weights.len()))
    }

    /// `Σ_i x[start + i]·weights.get(i)`, for weights read from the data where they lie: a
    /// column ([`Data::col`]), stored as f64 or f32.
    #[inline(always)]
    pub fn dot_col(&self, start: usize, weights: Strided<'_>) -> Num<R> {
        self.weighted_sum(None, start, weights)
    }

    /// `Σ_{i ≥ start} x[i]·row.get(i)`: the window from `start` on, weighted by the same
    /// columns of a data row. For a model whose column `i` multiplies parameter `i`, read in
    /// place: nothing is copied out of the data first.
    ///
    /// NaN, as [`Row::get`] reads, if one of those columns is past the data.
    #[inline(always)]
    pub fn dot_row(&self, start: usize, row: Row<'_>) -> Num<R> {
        self.weighted_sum(None, start, row.columns(start, self.x.len() - start))
    }

    /// `plus + Σ_{i ≥ start} x[i]·row.get(i)`: [`dot_row`](Self::dot_row) with an intercept
    /// (`x.dot_row_plus(1, row, x[0])`) or an offset (a data column, a term of the model)
    /// added, to the bits of `plus + x.dot_row(start, row)`. In reverse mode the addition is
    /// part of the one recorded step, where written out it is a step of its own.
    #[inline(always)]
    pub fn dot_row_plus(&self, start: usize, row: Row<'_>, plus: Num<R>) -> Num<R> {
        self.weighted_sum(Some(plus), start, row.columns(start, self.x.len() - start))
    }

    /// `Σ_i x[start + i]·weights.get(i)`, over the view's elements. Weights side by side (a
    /// row of the CPU's row-after-row data) are read as a slice, which the compiler loads
    /// several at a time; the sum is the same, to the bit.
    #[inline(always)]
    fn weighted_sum(&self, plus: Option<Num<R>>, start: usize, weights: Strided<'_>) -> Num<R> {
        let len = weights.len();
        if self.bumped_at == usize::MAX && len > 0 {
            // A recording number type (reverse mode) keeps the sum as one operation.
            let (first, last) = (self.x[start].0, self.x[start + len - 1].0);
            if let Some(sum) = R::linear_combination(plus.map(|p| p.0), first, last, weights) {
                return Num(sum);
            }
        }
        // One loop per way the weights are stored, the way matched once here, not per weight.
        let sum = match (weights.contiguous(), weights.elements()) {
            (Some(slice), _) => self.weighted_sum_of(start, slice.len(), |i| match slice.get(i) {
                Some(&w) => w,
                None => f64::NAN,
            }),
            (None, Elements::F64(view)) => self.weighted_sum_of(start, len, |i| view.get(i)),
            (None, Elements::F32(view)) => self.weighted_sum_of(start, len, |i| view.get(i)),
        };
        plus.map_or(sum, |p| p + sum)
    }

    /// `Σ_{i < len} x[start + i]·weight(i)`.
    ///
    /// The loop runs over the unperturbed window, in four partial sums so the additions do not
    /// wait on each other; a perturbed variable in range then enters as the correction
    /// `(x'_j − x_j)·w_j`. That keeps the loop free of per-element checks, and the difference a
    /// finite-difference gradient takes is then formed from the step itself.
    #[inline(always)]
    fn weighted_sum_of(
        &self,
        start: usize,
        len: usize,
        weight: impl Fn(usize) -> f64 + Copy,
    ) -> Num<R> {
        let x = &self.x[start..start + len];
        if self.seeded != usize::MAX {
            // A seeded window (exact derivatives): the sum's lane l is the weight of the
            // variable seeded with it. The value is summed as below, to the same bits; the
            // lanes come out as the loop below would make them (w·1 plus zeros), without the
            // `len × lanes` multiplications.
            let value = four_sums(len, 0.0, |i| x[i].0.value() * weight(i));
            let lane = |l: usize| {
                let i = self.seeded + l;
                if (start..start + len).contains(&i) {
                    weight(i - start)
                } else {
                    0.0
                }
            };
            if let Some(sum) = R::with_lanes(value, lane) {
                return Num(sum);
            }
        }
        let sum = four_sums(len, Num::constant(0.0), |i| x[i] * weight(i));
        match self.bumped_at.checked_sub(start) {
            Some(j) if j < len => sum + (self.bumped - x[j]) * weight(j),
            _ => sum,
        }
    }
}

/// `Σ_{i<len} term(i)` in four running sums, so that consecutive additions need not wait on
/// each other, combined as `(s₀ + s₁) + (s₂ + s₃)`: one summation order for every number type.
#[inline(always)]
pub(crate) fn four_sums<A: Copy + Add<Output = A>>(
    len: usize,
    zero: A,
    term: impl Fn(usize) -> A,
) -> A {
    let mut partial = [zero; 4];
    let whole = len - len % 4;
    for base in (0..whole).step_by(4) {
        for (l, p) in partial.iter_mut().enumerate() {
            *p = *p + term(base + l);
        }
    }
    for i in whole..len {
        partial[0] = partial[0] + term(i);
    }
    (partial[0] + partial[1]) + (partial[2] + partial[3])
}

impl<R> Index<usize> for Vars<'_, R> {
    type Output = Num<R>;
    #[inline(always)]
    fn index(&self, j: usize) -> &Num<R> {
        // The first test folds away where nothing is bumped (the value and exact kernels):
        // for a `j` it cannot bound, the compiler would otherwise keep `Vars` in memory so
        // that `&self.bumped` has an address.
        if self.bumped_at != usize::MAX && j == self.bumped_at {
            &self.bumped
        } else if let Some(seed) = self.seeds.get(j.wrapping_sub(self.seeded)) {
            seed
        } else {
            &self.x[j]
        }
    }
}

/// How the exact gradient differentiates a dense term ([`Term::DIFFERENTIATION`]).
///
/// Forward mode evaluates the term on duals that carry a few derivatives each, one
/// evaluation per group of variables: cheap for a narrow window, `⌈w/16⌉` evaluations on the
/// CPU (`⌈w/4⌉` on the GPU) for a wide one. Reverse mode evaluates it once while recording its
/// operations and sweeps the record back once: about two evaluations at any width, plus the
/// record's memory traffic. A term whose record exceeds the tape (4096 operations) is
/// differentiated forward instead. The mode is the CPU's: the GPU differentiates forward only,
/// since a thread's tape would live in local memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Differentiation {
    /// Reverse mode from the width at which it was measured faster; forward below it.
    Auto,
    /// Always forward mode (duals).
    Forward,
    /// Always reverse mode (a tape), unless the record overflows it.
    Reverse,
}

/// One term of a sum objective. Implement it in a file under `terms/`, then register it with
/// [`register_term!`](crate::register_term) to get its GPU kernels. No `unsafe` needed.
pub trait Term {
    /// Which variables each term reads.
    const WINDOW: Window;

    /// What [`prepare`](Term::prepare) hands to [`eval`](Term::eval): the term's values that do
    /// not depend on `x`. Use `()` when there are none, `usize` to pass the term index on, or
    /// slices borrowed from the data (lifetime `'a`).
    type Local<'a>: Copy;

    /// Whether the CPU executor may evaluate this term on [`Lanes`](crate::Lanes): several
    /// points per call of `eval`, each lane its own. A dense window's finite-difference
    /// gradient then takes four perturbed points per call; a separable or disjoint banded
    /// window (at most four variables) with nothing to prepare per term (a zero-sized
    /// [`Local`](Term::Local), such as `()`) has its exact gradient and its value taken eight
    /// terms per call, which vectorizes across them. Set it only when `eval` never branches on
    /// [`Real::value`] of a variable (branching on data is fine): all lanes would take lane 0's
    /// branch.
    ///
    /// A term evaluated on lanes is best `#[inline(always)]` (see [`eval`](Term::eval)): out of
    /// line, its lanes go through memory at every call.
    const EVAL_IN_LANES: bool = false;

    /// How the exact gradient differentiates a dense term: [`Differentiation::Auto`] (the
    /// default) takes reverse mode from the width at which it was measured faster, forward
    /// mode below; the other two force one. A banded or separable window (at most 16
    /// variables) is always differentiated forward.
    const DIFFERENTIATION: Differentiation = Differentiation::Auto;

    /// The number of terms `K` for `n` variables. Like [`check`](Term::check), it may see the
    /// data's [`shape`](Data::shape) alone.
    #[inline(always)]
    fn terms(n: usize, data: Data<'_>) -> usize {
        Self::WINDOW.default_terms(n, data)
    }

    /// Rejects an `n` (or data) the term cannot work with, beyond what its window rules out (the
    /// host checks [`Window::check`] first). The default accepts everything. Where the data
    /// lie on a device, `data` is their [`shape`](Data::shape): rows and columns, every value
    /// NaN: check the shape there, and values only where they are not NaN.
    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        let _ = (n, data);
        Ok(())
    }

    /// x-independent work for term `k`, done once per term per kernel launch.
    ///
    /// Mark it `#[inline(always)]` when it reads `data`: it is not generic, so the compiler
    /// keeps it in your crate and every pass pays a call per term for it, and the table's
    /// shape it reads (`data.row`) is then worked out again for every term instead of once per
    /// pass.
    fn prepare<'a>(k: usize, n: usize, data: Data<'a>) -> Self::Local<'a>;

    /// The term's value at `x`, the term's window. Compute with `x[j]` and `f64` constants
    /// freely (see [`Num`]); return the result.
    ///
    /// Every pass calls `eval` once per term (or per perturbation) in its inner loop. For a
    /// term of more than a few operations, the compiler may keep it out of line where several
    /// passes call it; `#[inline(always)]` on your `eval` keeps each loop whole.
    fn eval<R: Real>(x: Vars<'_, R>, local: &Self::Local<'_>) -> Num<R>;
}

#[cfg(test)]
mod tests;
