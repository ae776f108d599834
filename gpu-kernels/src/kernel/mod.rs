//! What one GPU thread (or one CPU task) does, written once for both backends.
//!
//! - Value: `φ_k(x)` for a term, summed by a grid-stride loop and a block reduction on the GPU,
//!   by fixed chunks on the CPU.
//! - Gradient, banded and separable windows: a *gather*. Variables are grouped by stride;
//!   whoever owns a group visits the few terms whose window holds one of its variables, and
//!   accumulates their differences in ascending term order. No atomics, `O(K·w)` work, and the
//!   same bits whatever the number of threads.
//! - Gradient, dense windows: each term is prepared once, then differenced for every variable;
//!   the GPU reduces each variable's differences over a block, the CPU over a chunk, and a
//!   second stage sums the per-block (per-chunk) partials in block order.
//!
//! `device::entry` wraps these in PTX entry points; [`register_term!`](crate::register_term)
//! emits them for a term.

pub mod exact;
pub mod gram;
pub mod loss;
pub mod normal;
mod registration;
pub mod reverse;
mod sums;
pub mod triangle;

pub use registration::{IndexedKernels, Kernels, ResidualKernels};
pub use sums::{
    CompensatedLanes, CompensatedRun, CompensatedSum, RunningSum, SUM_LANES, nan_max, sum_in_order,
};

use crate::fd::{FdScheme, StepBox};
use crate::lanes::{LANES, Lanes, TERM_LANES};
use crate::term::{Data, Term, Vars, Window};

// The shared kernels' entry names, from their table (`shared`).
crate::__shared_kernels! { @rows names () }
/// The rows of [`NEW_PAIR_PARTIALS`]' partials: five sums, then one maximum.
pub const NEW_PAIR_ROWS: usize = 6;
/// The widest group of vectors [`DOTS_PARTIALS`] sums in one sweep over the rows (one running
/// sum per vector in registers, the shared vector read once per group), and the group of terms
/// whose loads [`COMBINE_DOT_PARTIALS`] has in flight together.
pub const DOTS_SWEEP: usize = 8;
/// The columns of a tile of [`MASKED_GRAM_PARTIALS`]: a sweep over the rows takes the
/// products of two tiles, `GRAM_TILE²` running sums in registers (at 4, the kernel's registers
/// stay within what the reductions' 512-thread blocks allow).
pub const GRAM_TILE: usize = 4;
/// The rows of [`STEP_END_PARTIALS`]'s partials: four sums, then one maximum.
pub const STEP_END_ROWS: usize = 5;

/// The slots before the per-block partials in a term pass's `values` buffer: `values[0]`
/// receives the value (every block's partial added in block order by the block that finishes
/// last, in the same launch), `values[1]` is that launch's ticket (a u64 counter, 0 between
/// launches), and `values[VALUE_HEAD + b]` is block `b`'s partial. A dense gradient pass keeps
/// its blocks' `n` partials of `∇f` after them, block `b`'s from `VALUE_HEAD + gridDim + b·n`.
pub const VALUE_HEAD: usize = 2;

/// The window of term `k`.
#[inline(always)]
pub fn window<T: Term, V>(x: &[V], k: usize) -> &[V] {
    let n = x.len();
    let (_, width) = T::WINDOW.stride_width(n);
    let offset = T::WINDOW.offset(k, n);
    &x[offset..offset + width]
}

/// `φ_k(x)`.
#[inline(always)]
pub fn term_value<T: Term>(k: usize, x: &[f64], data: Data<'_>) -> f64 {
    let local = T::prepare(k, x.len(), data);
    T::eval(Vars::new(window::<T, _>(x, k)), &local).0
}

/// `Σ φ_k(x)` over `terms` in the running sum `S`: the partial sum of a value that one GPU
/// thread makes ([`CompensatedSum`]) or one CPU chunk ([`CompensatedRun`]).
#[inline(always)]
pub fn value_partial<T: Term, S: RunningSum>(
    terms: impl Iterator<Item = usize>,
    x: &[f64],
    data: Data<'_>,
) -> f64 {
    let mut sum = S::default();
    for k in terms {
        sum.add(term_value::<T>(k, x, data));
    }
    sum.value()
}

/// The values of terms `first .. first + TERM_LANES` of a term for which
/// [`exact::terms_in_lanes`] holds, evaluated side by side on [`Lanes`], term `first + l` in
/// lane `l`: each what [`term_value`] gives it, to the bit.
#[inline(always)]
pub fn values_in_lanes<T: Term>(first: usize, x: &[f64], data: Data<'_>) -> [f64; TERM_LANES] {
    let n = x.len();
    let (stride, width) = T::WINDOW.stride_width(n);
    // Zero-sized: the one value every term's preparation gives.
    let local = T::prepare(first, n, data);
    let mut storage = [Lanes::splat(0.0); exact::LANES_WIDTH_MAX];
    let window = &mut storage[..width];
    for (j, variable) in window.iter_mut().enumerate() {
        *variable = exact::window_in_lanes(x, first, stride, j);
    }
    T::eval(Vars::new(window), &local).0.0
}

/// How a gradient's work is divided, by the term's window. Both backends hand out these units:
/// GPU threads (and blocks), or CPU chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradientWork {
    /// A banded or separable window: `groups` groups of `stride` variables (the last may be
    /// shorter), each owning its variables' part of `∇f` (see [`banded_group_gradient`]).
    Groups {
        /// The number of groups, `⌈n / stride⌉`.
        groups: usize,
        /// Variables per group: the window's stride (1 for a separable window).
        stride: usize,
    },
    /// A dense window: `terms` terms, each adding a difference to every variable's partial
    /// sum, which a second stage finishes (see [`DenseTerm`], [`dense_gradient_component`]).
    Terms(usize),
}

impl GradientWork {
    /// The work of term `T`'s gradient with `n` variables and `data`.
    #[inline(always)]
    pub fn of<T: Term>(n: usize, data: Data<'_>) -> Self {
        match T::WINDOW {
            Window::Dense => GradientWork::Terms(T::terms(n, data)),
            Window::Separable | Window::Banded { .. } => {
                let (stride, _) = T::WINDOW.stride_width(n);
                GradientWork::Groups {
                    groups: n.div_ceil(stride),
                    stride,
                }
            }
        }
    }

    /// How many units: groups or terms.
    #[inline(always)]
    pub fn units(self) -> usize {
        match self {
            GradientWork::Groups { groups, .. } => groups,
            GradientWork::Terms(terms) => terms,
        }
    }
}

/// The terms `k < terms` of a banded window, `[stride·k, stride·k + width)`, that meet the
/// variables `group` (not empty), in ascending `k`.
#[inline(always)]
pub(crate) fn terms_meeting(
    group: core::ops::Range<usize>,
    stride: usize,
    width: usize,
    terms: usize,
) -> core::ops::RangeInclusive<usize> {
    let k_lo = (group.start + 1).saturating_sub(width).div_ceil(stride);
    let k_hi = ((group.end - 1) / stride).min(terms - 1);
    k_lo..=k_hi
}

/// The gradient over one group of variables, `[group·stride, group·stride + g.len())`, for a
/// banded or separable window, its difference points within `bounds`. `g` is the group's slice
/// of the gradient.
///
/// Group `g` owns term `g` (the one whose window starts in it), when there is one: with
/// `value`, the return is that term's `φ_g(x)`, so that a value taken in the same pass sums
/// every term once (free for forward differences, one more evaluation for central ones); else 0.
#[inline(always)]
pub fn banded_group_gradient<T: Term, S: FdScheme>(
    group: usize,
    x: &[f64],
    data: Data<'_>,
    bounds: StepBox<'_>,
    g: &mut [f64],
    value: bool,
) -> f64 {
    let n = x.len();
    let (stride, width) = T::WINDOW.stride_width(n);
    let first = group * stride;
    if width <= stride {
        // Disjoint windows: the group's variables belong to term `group` alone (past its
        // width, to no term), so each derivative is one difference.
        let local = T::prepare(group, n, data);
        let win = &x[first..first + width];
        let base = S::base::<T>(win, &local);
        for (j, gj) in g.iter_mut().enumerate() {
            *gj = if j < width {
                let steps = S::steps(win[j], bounds.interval(first + j));
                S::difference::<T>(win, j, &local, base, steps) / steps.spacing
            } else {
                0.0
            };
        }
        return if value {
            S::value::<T>(win, &local, base)
        } else {
            0.0
        };
    }
    // Overlapping windows: gather the differences of every term [stride·k, stride·k + width)
    // that meets [first, end), in ascending k, then divide by the spacing.
    let end = first + g.len();
    g.fill(0.0);
    let mut owned = 0.0;
    for k in terms_meeting(first..end, stride, width, T::terms(n, data)) {
        let local = T::prepare(k, n, data);
        let offset = stride * k;
        let win = &x[offset..offset + width];
        let base = S::base::<T>(win, &local);
        for i in first.max(offset)..end.min(offset + width) {
            let steps = S::steps(x[i], bounds.interval(i));
            g[i - first] += S::difference::<T>(win, i - offset, &local, base, steps);
        }
        if value && k == group {
            owned = S::value::<T>(win, &local, base);
        }
    }
    for (i, gi) in (first..end).zip(g.iter_mut()) {
        *gi /= S::steps(x[i], bounds.interval(i)).spacing;
    }
    owned
}

/// A dense term, prepared once and ready to be differenced in every variable.
pub struct DenseTerm<'a, T: Term> {
    local: T::Local<'a>,
    base: f64,
}

impl<'a, T: Term> DenseTerm<'a, T> {
    /// Term `k` at `x`: its `prepare`, and scheme `S`'s base (`φ_k(x)` for forward
    /// differences).
    #[inline(always)]
    pub fn prepare<S: FdScheme>(k: usize, x: &[f64], data: Data<'a>) -> Self {
        let local = T::prepare(k, x.len(), data);
        DenseTerm {
            base: S::base::<T>(x, &local),
            local,
        }
    }

    /// The term's differences in variables `first .. first + LANES` within `bounds` (see
    /// [`FdScheme::differences_in_lanes`]); `lanes` holds `x`, splatted.
    #[inline(always)]
    pub fn differences_in_lanes<S: FdScheme>(
        &self,
        lanes: &mut [Lanes],
        first: usize,
        bounds: StepBox<'_>,
    ) -> [f64; LANES] {
        S::differences_in_lanes::<T>(lanes, first, bounds, &self.local, self.base)
    }

    /// The term's difference in variable `i` within `bounds`, not yet divided by the spacing.
    #[inline(always)]
    pub fn difference<S: FdScheme>(&self, x: &[f64], i: usize, bounds: StepBox<'_>) -> f64 {
        let steps = S::steps(x[i], bounds.interval(i));
        S::difference::<T>(x, i, &self.local, self.base, steps)
    }

    /// `φ_k(x)`, for a value taken in the same pass (see [`FdScheme::value`]).
    #[inline(always)]
    pub fn value<S: FdScheme>(&self, x: &[f64]) -> f64 {
        S::value::<T>(x, &self.local, self.base)
    }
}

/// The dense gradient's second stage for one variable: its partial sums (one per block or
/// chunk), added in the order given, over `divisor`: the spacing of the variable's step for
/// finite differences, 1 for exact derivatives.
#[inline(always)]
pub fn dense_gradient_component(divisor: f64, partials: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0;
    for partial in partials {
        sum += partial;
    }
    sum / divisor
}
