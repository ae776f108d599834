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
pub mod normal;

use crate::fd::FdScheme;
use crate::lanes::{LANES, Lanes, TERM_LANES};
use crate::scheme::SCHEMES;
use crate::term::{Data, Term, Vars, Window};

/// Sums the value kernel's per-block partials in block order ([`sum_in_order`]). Launch one
/// thread.
pub const SUM_PARTIALS: &str = "cudamin_sum_partials";
crate::__schemes! { @rows finish_names () }
/// Sums `blocks` per-block partial vectors in block order: the normal equations' second stage.
pub const SUM_BLOCKS: &str = "cudamin_sum_blocks";
/// `y ← y + α·x`, for a solver whose vectors stay on the device.
pub const AXPY: &str = "cudamin_axpy";
/// `v ← α·v`.
pub const SCALE: &str = "cudamin_scale";
/// `out ← x + step·p`.
pub const RAY_POINT: &str = "cudamin_ray_point";
/// `old ← new − old`.
pub const DIFFERENCE: &str = "cudamin_difference";
/// One partial sum of `Σ a_i·b_i` per block; [`SUM_PARTIALS`] adds them.
pub const DOT_PARTIALS: &str = "cudamin_dot_partials";
/// One partial `max |v_i|` per block (NaN if any is NaN); launched again with one block on
/// the partials, it gives `‖v‖∞`.
pub const MAX_ABS_PARTIALS: &str = "cudamin_max_abs_partials";

/// The PTX entry points of a registered term. Implemented by
/// [`register_term!`](crate::register_term); the host launches kernels by these names.
pub trait Kernels: Term {
    /// The name the term was registered under.
    const NAME: &'static str;
    /// `(x, n, data, data_len, data_rows, out, values)`: one partial sum per block into
    /// `values`; `out` unused.
    const VALUE: &'static str;
    /// Per gradient scheme, in the table's order (`Gradient::ALL`):
    /// `(x, n, data, data_len, data_rows, out, values)`, the gradient (banded) or one partial
    /// gradient per block (dense) into `out`; unless `values` is null, the value's per-block
    /// partials, from the same pass.
    const GRADIENTS: [&'static str; SCHEMES];
}

/// Neumaier's compensated sum: the error is about `ε·Σ|v|`, whatever the number of terms,
/// for four extra flops a term. An objective's value is a sum of up to millions of terms, and
/// near a minimum the line search compares values that differ in their last digits.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompensatedSum {
    sum: f64,
    compensation: f64,
}

impl CompensatedSum {
    /// Adds `v`, carrying the rounding error of the addition in the compensation.
    #[inline(always)]
    pub fn add(&mut self, v: f64) {
        neumaier_step(&mut self.sum, &mut self.compensation, v);
    }

    /// The sum; an infinite or NaN sum is returned as it is (the compensation is NaN then).
    #[inline(always)]
    pub fn value(self) -> f64 {
        if self.sum.is_finite() {
            self.sum + self.compensation
        } else {
            self.sum
        }
    }
}

/// A sum taken one value at a time: [`CompensatedSum`], or [`CompensatedRun`].
pub trait RunningSum: Default {
    /// Adds the next value.
    fn add(&mut self, v: f64);
    /// The sum.
    fn value(self) -> f64;
}

impl RunningSum for CompensatedSum {
    #[inline(always)]
    fn add(&mut self, v: f64) {
        CompensatedSum::add(self, v);
    }
    #[inline(always)]
    fn value(self) -> f64 {
        CompensatedSum::value(self)
    }
}

impl RunningSum for CompensatedRun {
    #[inline(always)]
    fn add(&mut self, v: f64) {
        CompensatedRun::add(self, v);
    }
    #[inline(always)]
    fn value(self) -> f64 {
        CompensatedRun::value(self)
    }
}

/// How many running sums a [`CompensatedLanes`] keeps.
pub const SUM_LANES: usize = crate::lanes::TERM_LANES;

/// A compensated sum as [`CompensatedSum`], kept in [`SUM_LANES`] running sums: value `i` of a
/// run goes to sum `i mod SUM_LANES`, and [`value`](CompensatedLanes::value) adds the sums up in
/// their order. The error is the same, about `ε·Σ|v|`, but consecutive additions no longer wait
/// on each other, and eight values at once ([`add_lanes`](CompensatedLanes::add_lanes)) take
/// vector instructions. The CPU sums a chunk's terms so in every pass that takes a value (a
/// run of single values through [`CompensatedRun`]), so that the passes agree to the bit.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompensatedLanes {
    sums: [f64; SUM_LANES],
    compensations: [f64; SUM_LANES],
}

impl CompensatedLanes {
    /// Adds the run's next `SUM_LANES` values, one to each sum.
    #[inline(always)]
    pub fn add_lanes(&mut self, values: [f64; SUM_LANES]) {
        let lanes = self.sums.iter_mut().zip(self.compensations.iter_mut());
        for ((sum, compensation), v) in lanes.zip(values) {
            neumaier_step(sum, compensation, v);
        }
    }

    /// Adds `v` to sum `lane` (`< SUM_LANES`): the run's values past its last whole eight.
    #[inline(always)]
    pub fn add_to(&mut self, lane: usize, v: f64) {
        neumaier_step(&mut self.sums[lane], &mut self.compensations[lane], v);
    }

    /// The sum: the running sums added in order, compensated, with every compensation.
    #[inline(always)]
    pub fn value(self) -> f64 {
        let mut total = CompensatedSum::default();
        for sum in self.sums {
            total.add(sum);
        }
        for compensation in self.compensations {
            total.compensation += compensation;
        }
        total.value()
    }
}

/// [`CompensatedLanes`] fed one value at a time: values wait in a buffer until there are
/// eight, which go in at once (adding to one running sum at a time through a variable lane
/// index kept the sums in memory: lsq-expsin's value and gradient pass took 16 % longer).
#[derive(Clone, Copy, Debug, Default)]
pub struct CompensatedRun {
    lanes: CompensatedLanes,
    buffer: [f64; SUM_LANES],
    waiting: usize,
}

impl CompensatedRun {
    /// Adds the run's next value.
    #[inline(always)]
    pub fn add(&mut self, v: f64) {
        self.buffer[self.waiting] = v;
        self.waiting += 1;
        if self.waiting == SUM_LANES {
            self.waiting = 0;
            self.lanes.add_lanes(self.buffer);
        }
    }

    /// The sum of the run, as [`CompensatedLanes::value`].
    #[inline(always)]
    pub fn value(mut self) -> f64 {
        for (lane, &v) in self.buffer[..self.waiting].iter().enumerate() {
            self.lanes.add_to(lane, v);
        }
        self.lanes.value()
    }
}

/// Neumaier's step on one running sum, without a branch (both corrections are formed and one
/// is kept), so that eight of them become vector instructions.
#[inline(always)]
fn neumaier_step(sum: &mut f64, compensation: &mut f64, v: f64) {
    let t = *sum + v;
    let sum_larger = (*sum - t) + v;
    let v_larger = (v - t) + *sum;
    *compensation += if sum.abs() >= v.abs() {
        sum_larger
    } else {
        v_larger
    };
    *sum = t;
}

/// The window of term `k`.
#[inline(always)]
pub fn window<T: Term>(x: &[f64], k: usize) -> &[f64] {
    let n = x.len();
    let (_, width) = T::WINDOW.stride_width(n);
    let offset = T::WINDOW.offset(k, n);
    &x[offset..offset + width]
}

/// `φ_k(x)`.
#[inline(always)]
pub fn term_value<T: Term>(k: usize, x: &[f64], data: Data<'_>) -> f64 {
    let local = T::prepare(k, x.len(), data);
    T::eval(Vars::new(window::<T>(x, k)), &local).0
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

/// The last stage of a value on either backend: the partial sums (one per GPU block or CPU
/// chunk) added in their order, compensated.
#[inline(always)]
pub fn sum_in_order(partials: impl Iterator<Item = f64>) -> f64 {
    let mut sum = CompensatedSum::default();
    for partial in partials {
        sum.add(partial);
    }
    sum.value()
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
/// banded or separable window. `g` is the group's slice of the gradient.
///
/// Group `g` owns term `g` (the one whose window starts in it), when there is one: with
/// `value`, the return is that term's `φ_g(x)`, so that a value taken in the same pass sums
/// every term once (free for forward differences, one more evaluation for central ones); else 0.
#[inline(always)]
pub fn banded_group_gradient<T: Term, S: FdScheme>(
    group: usize,
    x: &[f64],
    data: Data<'_>,
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
                let steps = S::steps(win[j]);
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
            let steps = S::steps(x[i]);
            g[i - first] += S::difference::<T>(win, i - offset, &local, base, steps);
        }
        if value && k == group {
            owned = S::value::<T>(win, &local, base);
        }
    }
    for (i, gi) in (first..end).zip(g.iter_mut()) {
        *gi /= S::steps(x[i]).spacing;
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

    /// The term's differences in variables `first .. first + LANES` (see
    /// [`FdScheme::differences_in_lanes`]); `lanes` holds `x`, splatted.
    #[inline(always)]
    pub fn differences_in_lanes<S: FdScheme>(
        &self,
        lanes: &mut [Lanes],
        first: usize,
    ) -> [f64; LANES] {
        S::differences_in_lanes::<T>(lanes, first, &self.local, self.base)
    }

    /// The term's difference in variable `i`, not yet divided by the spacing.
    #[inline(always)]
    pub fn difference<S: FdScheme>(&self, x: &[f64], i: usize) -> f64 {
        S::difference::<T>(x, i, &self.local, self.base, S::steps(x[i]))
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

/// Emits the PTX entry points of a [`Term`] and implements [`Kernels`] for it.
///
/// ```ignore
/// register_term!(SeedExpSum, seed_expsum);
/// // PTX: seed_expsum_value, seed_expsum_gradient_{exact,forward,central}
/// ```
#[macro_export]
macro_rules! register_term {
    ($term:ty, $name:ident) => {
        impl $crate::kernel::Kernels for $term {
            $crate::__kernel_names!($name);
        }
        $crate::__term_entries!($term, $name);
    };
}

/// Registers a residual term `T` (its `eval` returns the residual `r_k`): emits the PTX entry
/// points of its objective [`SumOfSquares<T>`](crate::SumOfSquares), which then implements
/// [`Kernels`], and implements [`ResidualKernels`] for `T`. A registration in a user's crate
/// goes through here, since `SumOfSquares` is not that crate's type.
///
/// ```ignore
/// register_residuals!(ExpDecay, exp_decay);
/// // PTX: exp_decay_value, exp_decay_gradient_{exact,forward,central}, of Σ r_k²;
/// //      exp_decay_normal_{exact,forward,central}, the residuals' normal equations
/// ```
#[macro_export]
macro_rules! register_residuals {
    ($residual:ty, $name:ident) => {
        impl $crate::kernel::ResidualKernels for $residual {
            $crate::__kernel_names!($name);
            $crate::__schemes! { @rows normal_names ($name) }
        }
        $crate::__term_entries!($crate::SumOfSquares<$residual>, $name);
        $crate::__schemes! { @rows normal_entries ($residual, $name) }
    };
}

/// The residual terms registered with [`register_residuals!`](crate::register_residuals): the
/// entry points of their sum of squares, under the name given.
pub trait ResidualKernels: Term {
    /// As [`Kernels::NAME`].
    const NAME: &'static str;
    /// As [`Kernels::VALUE`].
    const VALUE: &'static str;
    /// As [`Kernels::GRADIENTS`].
    const GRADIENTS: [&'static str; SCHEMES];
    /// Per gradient scheme, in the table's order: `(x, n, data, data_len, data_rows, out,
    /// values)`, the normal equations' first stage (see [`normal`]) with the scheme's Jacobian
    /// rows: per block, `JᵀJ` (`n × n`, upper triangle) then `Jᵀr` into `out` (`n² + n` values a
    /// block), `Σ r²` into `values`.
    const NORMALS: [&'static str; SCHEMES];
}

impl<T: ResidualKernels> Kernels for crate::SumOfSquares<T> {
    const NAME: &'static str = T::NAME;
    const VALUE: &'static str = T::VALUE;
    const GRADIENTS: [&'static str; SCHEMES] = T::GRADIENTS;
}

/// The entry-point names of a term registered as `$name`.
#[doc(hidden)]
#[macro_export]
macro_rules! __kernel_names {
    ($name:ident) => {
        const NAME: &'static str = stringify!($name);
        const VALUE: &'static str = concat!(stringify!($name), "_value");
        $crate::__schemes! { @rows gradient_names ($name) }
    };
}

/// The PTX entry points of term `$term`, named after `$name`.
#[doc(hidden)]
#[macro_export]
macro_rules! __term_entries {
    ($term:ty, $name:ident) => {
        $crate::__term_entry!(
            concat!(stringify!($name), "_value"),
            $crate::device::entry::value::<$term>
        );
        $crate::__schemes! { @rows gradient_entries ($term, $name) }
    };
}

#[cfg(test)]
mod tests {
    use super::CompensatedSum;

    #[test]
    fn compensated_sum_keeps_what_naive_summation_loses() {
        // 1 + 10⁶ × 1e-16: naive summation never leaves 1.0.
        let mut sum = CompensatedSum::default();
        sum.add(1.0);
        for _ in 0..1_000_000 {
            sum.add(1e-16);
        }
        assert!(
            (sum.value() - (1.0 + 1e-10)).abs() < 1e-15,
            "{}",
            sum.value()
        );
        let mut infinite = CompensatedSum::default();
        infinite.add(1.0);
        infinite.add(f64::INFINITY);
        assert_eq!(infinite.value(), f64::INFINITY);
    }

    /// The lanes keep what one compensated sum keeps, eight values at once are eight added
    /// one at a time, and an infinite or NaN value comes out as it is.
    #[test]
    fn compensated_lanes_are_as_exact_and_agree_with_themselves() {
        use super::{CompensatedLanes, CompensatedRun, SUM_LANES};
        // 1 + 10⁶ × 1e-16 spread over the lanes, and 1e16 + 1 − 1e16 inside one lane; the
        // count leaves values past the last whole eight.
        let mut one_at_a_time = CompensatedRun::default();
        let mut eight_at_a_time = CompensatedLanes::default();
        let values = |i: usize| match i {
            0 => 1.0,
            8 => 1e16,
            16 => 1.0,
            24 => -1e16,
            _ => 1e-16,
        };
        let count = 1_000_003;
        for i in 0..count {
            one_at_a_time.add(values(i));
        }
        let whole = count - count % SUM_LANES;
        for block in (0..whole).step_by(SUM_LANES) {
            eight_at_a_time.add_lanes(core::array::from_fn(|l| values(block + l)));
        }
        for i in whole..count {
            eight_at_a_time.add_to(i - whole, values(i));
        }
        let expected = 2.0 + (count - 4) as f64 * 1e-16;
        let sum = one_at_a_time.value();
        assert!((sum - expected).abs() < 1e-15, "{sum} vs {expected}");
        assert_eq!(sum.to_bits(), eight_at_a_time.value().to_bits());
        let mut infinite = CompensatedRun::default();
        infinite.add(1.0);
        infinite.add(f64::INFINITY);
        assert_eq!(infinite.value(), f64::INFINITY);
        let mut nan = CompensatedRun::default();
        nan.add(f64::NAN);
        assert!(nan.value().is_nan());
    }
}
