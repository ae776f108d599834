//! Exact gradients from the term's own source: each term is evaluated on [`Dual`]s, which carry
//! a few derivatives with every value (forward-mode differentiation). One evaluation gives the
//! term's partial derivatives in that many of its variables; a window of `w` variables on `L`
//! lanes takes `⌈w / L⌉` evaluations, each about as costly as a few values. Banded windows
//! take [`EXACT_LANES`]; dense ones more where registers allow (sixteen on the CPU, eight in
//! the GPU's gradient kernels and Gram sums, `EXACT_LANES` where its triangle kernels fold).
//! There is no step to choose and no truncation error: the result is the derivative of the
//! computed function, rounded like any other arithmetic.
//!
//! The work is divided as for finite differences ([`GradientWork`](super::GradientWork)):
//! banded and separable windows by variable groups, each gathering the terms that touch it
//! (no atomics, the same bits for any number of threads), dense windows by terms, whose
//! per-variable contributions the backends reduce.

use super::terms_meeting;
use crate::dual::{Dual, DualScalar};
use crate::lanes::{Lanes, TERM_LANES};
use crate::term::{Data, Term, Vars, Window};

/// Derivative directions per evaluation of a banded window: variables seeded at once.
pub const EXACT_LANES: usize = 4;

/// The widest banded window the exact gradient takes (its window lives in a fixed array).
pub const EXACT_BANDED_WIDTH_MAX: usize = 16;

/// The widest dense window the GPU's exact gradient takes: a block keeps the window as duals
/// in shared memory, sized for this width. The CPU takes any width.
pub const EXACT_DENSE_WIDTH_MAX_GPU: usize = 64;

/// Whether the exact gradient takes term `T` with `n` variables: a banded window of at most
/// [`EXACT_BANDED_WIDTH_MAX`] variables, and on the GPU (`gpu`) a dense window of at most
/// [`EXACT_DENSE_WIDTH_MAX_GPU`]. The reason names the way out when it does not.
pub fn exact_supported<T: Term>(n: usize, gpu: bool) -> Result<(), &'static str> {
    match T::WINDOW {
        Window::Banded { width, .. } if width > EXACT_BANDED_WIDTH_MAX => Err(
            "exact gradients take banded windows of at most 16 variables; use finite differences",
        ),
        Window::Dense if gpu && n > EXACT_DENSE_WIDTH_MAX_GPU => Err(
            "exact gradients on the GPU take dense windows of at most 64 variables; use finite differences or the CPU",
        ),
        _ => Ok(()),
    }
}

/// A window of duals seeded along variables `first .. first + L` (those that exist): each of
/// them carries derivative 1 in its own lane, every other variable is a constant.
#[inline(always)]
fn seed<const L: usize, S: DualScalar>(window: &mut [Dual<L, S>], first: usize, on: bool) {
    let lanes = L.min(window.len() - first);
    for lane in 0..lanes {
        window[first + lane].derivatives[lane] = S::from_f64(if on { 1.0 } else { 0.0 });
    }
}

/// `φ` on `window` with variables `first .. first + L` seeded: its value and its
/// partial derivatives in those variables (lanes past the window's end are 0). `window`
/// holds the window's values as constants, and is left so.
#[inline(always)]
pub fn eval_seeded<T: Term, const L: usize, S: DualScalar>(
    local: &T::Local<'_>,
    window: &mut [Dual<L, S>],
    first: usize,
) -> Dual<L, S> {
    Seeded::new(window, first).eval::<T>(local)
}

/// A window of duals seeded along variables `first .. first + L` for as long as this is held,
/// and constants again when it is dropped: many terms evaluated at one seeding (the CPU's
/// dense gradient) pay for seeding once.
pub struct Seeded<'w, const L: usize, S: DualScalar = f64> {
    window: &'w mut [Dual<L, S>],
    first: usize,
}

impl<'w, const L: usize, S: DualScalar> Seeded<'w, L, S> {
    /// Seeds `window` (holding constants) along `first .. first + L`.
    #[inline(always)]
    pub fn new(window: &'w mut [Dual<L, S>], first: usize) -> Self {
        seed(window, first, true);
        Seeded { window, first }
    }

    /// `φ` on the seeded window: its value and its partial derivatives in the seeded
    /// variables.
    #[inline(always)]
    pub fn eval<T: Term>(&self, local: &T::Local<'_>) -> Dual<L, S> {
        T::eval(Vars::seeded(self.window, self.first), local).0
    }
}

impl<const L: usize, S: DualScalar> Drop for Seeded<'_, L, S> {
    #[inline(always)]
    fn drop(&mut self) {
        seed(self.window, self.first, false);
    }
}

/// A dense window seeded for every group of `L` variables at once, as the GPU keeps it: one
/// copy shared by a block's threads, read-only, in place of a seeded copy per thread.
/// `constants` holds the window as constant duals; `seeds` holds each variable again, variable
/// `j` carrying the unit lane `j % L`. The group from `first` reads its variables from
/// `seeds[first ..]` and the rest from `constants`, so one pair serves every group.
#[derive(Clone, Copy)]
pub struct SeedRuns<'s, const L: usize> {
    constants: &'s [Dual<L>],
    seeds: &'s [Dual<L>],
}

impl<'s, const L: usize> SeedRuns<'s, L> {
    /// The f64s of the pair, `constants` then `seeds`: the value at `i` of the window `x`.
    /// Whoever fills the pair's memory writes these, `2·x.len()·(L + 1)` of them.
    #[inline(always)]
    pub fn layout_value(x: &[f64], i: usize) -> f64 {
        let (dual, part) = (i / (L + 1), i % (L + 1));
        let j = dual % x.len();
        if part == 0 {
            x[j]
        } else if dual >= x.len() && part - 1 == j % L {
            1.0
        } else {
            0.0
        }
    }

    /// The pair over memory laid out by [`layout_value`](Self::layout_value).
    #[inline(always)]
    pub fn new(constants: &'s [Dual<L>], seeds: &'s [Dual<L>]) -> Self {
        SeedRuns { constants, seeds }
    }

    /// The window's width.
    #[inline(always)]
    pub fn width(&self) -> usize {
        self.constants.len()
    }

    /// `φ` with variables `first .. first + L` seeded (those that exist), as
    /// [`eval_seeded`], to the bit.
    #[inline(always)]
    pub fn eval<T: Term>(&self, local: &T::Local<'_>, first: usize) -> Dual<L> {
        let end = (first + L).min(self.seeds.len());
        let vars = Vars::seeded_by(self.constants, first, &self.seeds[first..end]);
        T::eval(vars, local).0
    }
}

/// `values` as constant duals, into `window` (same length).
#[inline(always)]
pub fn fill_constants<const L: usize, S: DualScalar>(window: &mut [Dual<L, S>], values: &[S]) {
    for (w, &v) in window.iter_mut().zip(values) {
        *w = Dual::constant_of(v);
    }
}

/// The exact gradient over one group of variables, `[group·stride, group·stride + g.len())`,
/// of a banded or separable window (as [`banded_group_gradient`](super::banded_group_gradient)
/// for finite differences). With `value`, returns `φ_group(x)`, the value of the term the group
/// owns, so that a value taken in the same pass counts every term once; else 0.
#[inline(always)]
pub fn banded_group_gradient_exact<T: Term>(
    group: usize,
    x: &[f64],
    data: Data<'_>,
    g: &mut [f64],
    value: bool,
) -> f64 {
    // The window lives in an array sized for the term's (constant) width, so that on the GPU
    // its entries stay in registers: every index below is then known at compile time. Windows
    // of one or two variables carry two derivative lanes, not four (fewer wasted lanes).
    let (_, width) = T::WINDOW.stride_width(x.len());
    match width {
        0..=2 => banded_exact_in::<T, 2, 2>(group, x, data, g, value),
        3..=4 => banded_exact_in::<T, 4, EXACT_LANES>(group, x, data, g, value),
        5..=8 => banded_exact_in::<T, 8, EXACT_LANES>(group, x, data, g, value),
        _ => banded_exact_in::<T, EXACT_BANDED_WIDTH_MAX, EXACT_LANES>(group, x, data, g, value),
    }
}

/// [`banded_group_gradient_exact`] with the window in an array of `W ≥ width` duals of `L`
/// lanes.
#[inline(always)]
fn banded_exact_in<T: Term, const W: usize, const L: usize>(
    group: usize,
    x: &[f64],
    data: Data<'_>,
    g: &mut [f64],
    value: bool,
) -> f64 {
    let n = x.len();
    let (stride, width) = T::WINDOW.stride_width(n);
    let first = group * stride;
    let mut storage = [Dual::constant(0.0); W];
    let window = &mut storage[..width];
    if width <= stride {
        // Disjoint windows: the group's variables belong to term `group` alone (past its
        // width, to no term), so its derivatives are the group's gradient as they stand.
        let local = T::prepare(group, n, data);
        fill_constants(window, &x[first..first + width]);
        let mut owned = 0.0;
        for lo in (0..width).step_by(L) {
            let result = eval_seeded::<T, L, _>(&local, window, lo);
            let lanes = L.min(width - lo);
            g[lo..lo + lanes].copy_from_slice(&result.derivatives[..lanes]);
            if lo == 0 {
                owned = result.value;
            }
        }
        g[width..].fill(0.0);
        return if value { owned } else { 0.0 };
    }
    let end = first + g.len();
    g.fill(0.0);
    let mut owned = 0.0;
    for k in terms_meeting(first..end, stride, width, T::terms(n, data)) {
        let local = T::prepare(k, n, data);
        let offset = stride * k;
        fill_constants(window, &x[offset..offset + width]);
        // Seed the window's variables that lie in this group, L at a time.
        let (seeded_lo, seeded_hi) = (first.max(offset), end.min(offset + width));
        let mut lo = seeded_lo;
        while lo < seeded_hi {
            let result = eval_seeded::<T, L, _>(&local, window, lo - offset);
            for i in lo..seeded_hi.min(lo + L) {
                g[i - first] += result.derivatives[i - lo];
            }
            if value && k == group && lo == seeded_lo {
                owned = result.value;
            }
            lo += L;
        }
    }
    owned
}

/// The widest window whose terms go side by side ([`terms_in_lanes`]).
pub const LANES_WIDTH_MAX: usize = 4;

/// Whether the CPU may evaluate term `T` [`TERM_LANES`] terms at a time, one per lane (its
/// exact gradient, [`disjoint_exact_in_lanes`], and its value,
/// [`values_in_lanes`](super::values_in_lanes)): a separable or disjoint banded window of at
/// most [`LANES_WIDTH_MAX`] variables, an `eval` that may run on lanes
/// ([`Term::EVAL_IN_LANES`]), and nothing of a term's own to prepare (a zero-sized `Local`,
/// which every term then shares).
pub const fn terms_in_lanes<T: Term>() -> bool {
    let narrow = match T::WINDOW {
        Window::Separable => true,
        Window::Banded { stride, width } => width <= stride && width <= LANES_WIDTH_MAX,
        Window::Dense => false,
    };
    narrow && T::EVAL_IN_LANES && core::mem::size_of::<T::Local<'static>>() == 0
}

/// Variable `j` of the windows of terms `first .. first + TERM_LANES`, term `first + l` in
/// lane `l`, for windows `stride` apart.
#[inline(always)]
pub(super) fn window_in_lanes(
    x: &[f64],
    first: usize,
    stride: usize,
    j: usize,
) -> Lanes<TERM_LANES> {
    let mut values = [0.0; TERM_LANES];
    for (l, value) in values.iter_mut().enumerate() {
        *value = x[(first + l) * stride + j];
    }
    Lanes(values)
}

/// The exact gradient over groups `first .. first + TERM_LANES` of a window for which
/// [`terms_in_lanes`] holds, their terms evaluated side by side on [`Dual`]s over [`Lanes`]:
/// the groups' part of `∇f` into `g` (`TERM_LANES` whole groups) and the terms' values. Each
/// lane computes what [`banded_group_gradient_exact`] computes for its group, to the bit.
#[inline(always)]
pub fn disjoint_exact_in_lanes<T: Term>(
    first: usize,
    x: &[f64],
    data: Data<'_>,
    g: &mut [f64],
) -> [f64; TERM_LANES] {
    let (_, width) = T::WINDOW.stride_width(x.len());
    match width {
        0..=2 => disjoint_lanes_in::<T, 2>(first, x, data, g),
        _ => disjoint_lanes_in::<T, 4>(first, x, data, g),
    }
}

/// [`disjoint_exact_in_lanes`] with `W ≥ width` derivative lanes, one per window variable.
#[inline(always)]
fn disjoint_lanes_in<T: Term, const W: usize>(
    first: usize,
    x: &[f64],
    data: Data<'_>,
    g: &mut [f64],
) -> [f64; TERM_LANES] {
    let n = x.len();
    let (stride, width) = T::WINDOW.stride_width(n);
    // Zero-sized: the one value every term's preparation gives.
    let local = T::prepare(first, n, data);
    let mut storage = [Dual::<W, Lanes<TERM_LANES>>::constant_of(Lanes::splat(0.0)); W];
    let window = &mut storage[..width];
    for (j, variable) in window.iter_mut().enumerate() {
        variable.value = window_in_lanes(x, first, stride, j);
        variable.derivatives[j] = Lanes::splat(1.0);
    }
    let result = T::eval(Vars::new(window), &local).0;
    for (l, group_g) in g.chunks_exact_mut(stride).enumerate() {
        for (j, gj) in group_g.iter_mut().enumerate() {
            *gj = if j < width {
                result.derivatives[j].0[l]
            } else {
                0.0
            };
        }
    }
    result.value.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::real::{Num, Real};

    /// Chained Rosenbrock-like pairs with an extra coupling, to exercise overlapping windows of
    /// width 3 and stride 1: φ_k = (x_{k+2} − x_k·x_{k+1})² + sin(x_k).
    struct Triples;

    impl Term for Triples {
        const WINDOW: Window = Window::Banded {
            stride: 1,
            width: 3,
        };
        type Local<'a> = ();
        fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
        fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
            (x[2] - x[0] * x[1]).sq() + x[0].sin()
        }
    }

    #[test]
    fn banded_exact_gradient_is_the_hand_derived_one() {
        let x = [0.3, -1.2, 0.7, 2.0, -0.5, 1.1];
        let n = x.len();
        let mut expected = [0.0; 6];
        for k in 0..n - 2 {
            let r = x[k + 2] - x[k] * x[k + 1];
            expected[k] += -2.0 * r * x[k + 1] + Real::cos(x[k]);
            expected[k + 1] += -2.0 * r * x[k];
            expected[k + 2] += 2.0 * r;
        }
        let mut g = [0.0; 6];
        let mut f = 0.0;
        for (i, gi) in g.iter_mut().enumerate() {
            f += banded_group_gradient_exact::<Triples>(
                i,
                &x,
                Data::EMPTY,
                core::slice::from_mut(gi),
                true,
            );
        }
        for (a, b) in g.iter().zip(expected) {
            assert!(
                (a - b).abs() <= 1e-14 * b.abs().max(1.0),
                "{g:?} vs {expected:?}"
            );
        }
        let value: f64 = (0..n - 2)
            .map(|k| (x[k + 2] - x[k] * x[k + 1]).powi(2) + Real::sin(x[k]))
            .sum();
        assert!((f - value).abs() <= 1e-14 * value.abs());
    }

    /// Every rule of the duals, on one variable: a separable term that may run on lanes.
    struct EveryRule;

    impl Term for EveryRule {
        const WINDOW: Window = Window::Separable;
        type Local<'a> = ();
        const EVAL_IN_LANES: bool = true;
        fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
        fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
            let v = x[0];
            let bounded = v.tanh() * 0.5; // in (−0.5, 0.5)
            v.exp() * 1e-3
                + (v.sq() + 1.0).ln()
                + v.sin() * v.cos()
                + bounded.tan()
                + v.atan()
                + v.atan2(Num::constant(0.7) - v)
                + (v.abs() + 2.0).sqrt() / (v.sq() + 3.0)
                + (v.abs() + 1.0).powf(1.5)
                + v.powi(3)
                - 2.0 / (1.0 + v.sq())
        }
    }

    /// A disjoint banded window narrower than its stride (the last variable of each group
    /// belongs to no term).
    struct GappedTriples;

    impl Term for GappedTriples {
        const WINDOW: Window = Window::Banded {
            stride: 4,
            width: 3,
        };
        type Local<'a> = ();
        const EVAL_IN_LANES: bool = true;
        fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
        fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
            (x[2] - x[0] * x[1]).sq() + (x[0] - 1.0).exp() + x[1].abs()
        }
    }

    /// Terms side by side give each group what one group at a time gives it, and each term the
    /// value it has alone, to the bit: at ordinary points, at 0 (|x|' = 0), and where `exp`
    /// overflows in some lanes and not others.
    #[test]
    fn terms_in_lanes_are_the_one_at_a_time_gradient_to_the_bit() {
        fn check<T: Term>(x: &[f64]) {
            let n = x.len();
            let (stride, _) = T::WINDOW.stride_width(n);
            assert!(terms_in_lanes::<T>());
            for first in (0..n / stride)
                .step_by(TERM_LANES)
                .take_while(|f| (f + TERM_LANES) * stride <= n)
            {
                let mut lanes = [0.0; TERM_LANES * 4];
                let g = &mut lanes[..TERM_LANES * stride];
                let values = disjoint_exact_in_lanes::<T>(first, x, Data::EMPTY, g);
                let values_alone = super::super::values_in_lanes::<T>(first, x, Data::EMPTY);
                for l in 0..TERM_LANES {
                    let group = first + l;
                    let alone = super::super::term_value::<T>(group, x, Data::EMPTY);
                    assert_eq!(values_alone[l].to_bits(), alone.to_bits(), "term {group}");
                    let mut one = [f64::NAN; 4];
                    let one = &mut one[..stride];
                    let value = banded_group_gradient_exact::<T>(group, x, Data::EMPTY, one, true);
                    assert_eq!(
                        values[l].to_bits(),
                        value.to_bits(),
                        "value of group {group}"
                    );
                    let side_by_side = &g[l * stride..(l + 1) * stride];
                    for (a, b) in side_by_side.iter().zip(one.iter()) {
                        assert_eq!(a.to_bits(), b.to_bits(), "gradient of group {group}");
                    }
                }
            }
        }
        let mut x: [f64; 64] = core::array::from_fn(|i| ((i * 37) % 29) as f64 / 7.0 - 2.0);
        check::<EveryRule>(&x);
        x[3] = 0.0;
        x[9] = 720.0; // e^{720} overflows: ∞ in this lane, finite in the others
        x[10] = -750.0;
        check::<EveryRule>(&x);
        check::<GappedTriples>(&x);
    }

    #[cfg(feature = "builtin")]
    #[test]
    fn which_terms_go_side_by_side() {
        assert!(terms_in_lanes::<crate::terms::seed_expsum::SeedExpSum>());
        assert!(terms_in_lanes::<crate::terms::rosenbrock::ExtRosenbrock>());
        assert!(terms_in_lanes::<crate::terms::ext_powell::ExtPowell>());
        // Overlapping windows, dense windows, and a term that did not say it may run on lanes.
        assert!(!terms_in_lanes::<crate::terms::rosenbrock::ChainedRosenbrock>());
        assert!(!terms_in_lanes::<crate::terms::lsq_expsin::LsqExpSin>());
        assert!(!terms_in_lanes::<Triples>());
    }
}
