//! L-BFGS-B's generalized Cauchy point: the projected steepest-descent path and its
//! breakpoints, walked in order as far as the quadratic model keeps decreasing along it.

use super::compact::Compact;
use super::{StepBuffers, sized};
use crate::linalg::vector;
use crate::solver::bounds::Bounds;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

/// Breakpoints and the projected steepest-descent path at `(x, g)`, into `buffers.times` (when
/// each variable meets its bound along `−g`) and `buffers.path` (`−g`, 0 where a variable
/// cannot move); returns the projected gradient's ∞-norm there, taken in the same pass (the
/// value of [`Bounds::projected_gradient_norm`]).
pub(super) fn steepest_path(
    x: &[f64],
    g: &[f64],
    bounds: &Bounds,
    buffers: &mut StepBuffers,
) -> f64 {
    let n = x.len();
    let times = sized(&mut buffers.times, n);
    let d = sized(&mut buffers.path, n);
    let kernel = |((times, d), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        let mut norm = 0.0;
        for ((t, d), i) in times.iter_mut().zip(d).zip(range) {
            *t = bounds.breakpoint(i, x[i], g[i]);
            *d = if *t > 0.0 { -g[i] } else { 0.0 };
            norm = f64::max(norm, bounds.projected(i, x[i], g[i]).abs());
        }
        norm
    };
    let norms = |blocks: Vec<f64>| blocks.into_iter().fold(0.0, f64::max);
    vector::blockwise(((&mut times[..], &mut d[..]), 0..n), kernel, norms)
}

/// The generalized Cauchy point (Byrd et al., Algorithm CP), written to `buffers.cauchy`, and
/// `c = Wᵀ(x_cp − x)`. The path is `buffers.path` where the memory took its products for this
/// point, else made here.
pub(super) fn cauchy_point(
    x: &[f64],
    g: &[f64],
    bounds: &Bounds,
    compact: &Compact<'_>,
    buffers: &mut StepBuffers,
) -> Vec<f64> {
    let n = x.len();
    let width = compact.width();
    let theta = compact.theta();
    // The path and `Wᵀd`: from the pass that took in the newest pair, where it took them for
    // this point.
    let mut p = match compact.memory.pairs_dot_path() {
        Some(products) => compact.w_products(products),
        None => {
            steepest_path(x, g, bounds, buffers);
            compact.w_transpose(&buffers.path)
        }
    };
    let cauchy = sized(&mut buffers.cauchy, n);
    vector::update_indexed(cauchy, |i, _| x[i]);
    let (times, d) = (&buffers.times, &mut buffers.path);
    let mut w = vec![0.0; width];
    let mut c = vec![0.0; width];
    let mut slope = -vector::dot(d, d);
    let mut curvature = -theta * slope - vector::dot(&p, &compact.m_times(&p));
    let curvature_floor = f64::EPSILON * curvature;
    if slope == 0.0 || curvature <= 0.0 {
        return c;
    }
    let mut breaks = Breakpoints::new(times, std::mem::take(&mut buffers.breaks));
    let mut step_to_minimum = -slope / curvature;
    let mut t_old = 0.0;
    // Whether the path passed every breakpoint: only then may it have no direction left.
    let mut passed_all = true;
    while let Some(Breakpoint(t, b)) = breaks.pop() {
        let dt = t - t_old;
        if step_to_minimum < dt {
            passed_all = false;
            break;
        }
        let bound = if d[b] > 0.0 {
            bounds.upper[b]
        } else {
            bounds.lower[b]
        };
        cauchy[b] = bound;
        let z = bound - x[b];
        for (cj, pj) in c.iter_mut().zip(&p) {
            *cj += dt * pj;
        }
        compact.w_row(b, &mut w);
        let mw = compact.m_times(&w);
        let gb = g[b];
        slope += dt * curvature + gb * gb + theta * gb * z - gb * vector::dot(&mw, &c);
        curvature -=
            theta * gb * gb + 2.0 * gb * vector::dot(&mw, &p) + gb * gb * vector::dot(&mw, &w);
        curvature = curvature.max(curvature_floor);
        for (pj, wj) in p.iter_mut().zip(&w) {
            *pj += gb * wj;
        }
        d[b] = 0.0;
        step_to_minimum = -slope / curvature;
        t_old = t;
        if slope >= 0.0 {
            step_to_minimum = 0.0;
            break;
        }
    }
    // Every variable at a bound: the path ends there (the model's minimum along it is moot).
    let step_to_minimum = if passed_all && vector::max_abs(d) == 0.0 {
        0.0
    } else {
        step_to_minimum.max(0.0)
    };
    let t = t_old + step_to_minimum;
    vector::update_indexed(
        cauchy,
        |i, at| if d[i] != 0.0 { x[i] + t * d[i] } else { at },
    );
    for (cj, pj) in c.iter_mut().zip(&p) {
        *cj += step_to_minimum * pj;
    }
    buffers.breaks = breaks.into_storage();
    c
}

/// How many of the earliest breakpoints one parallel pass picks out: the path usually stops
/// after a few, at the model's minimum along it.
const EARLY_BREAKPOINTS: usize = 64;

/// The breakpoints in the order the path meets them: the earliest [`EARLY_BREAKPOINTS`] from one
/// pass on every core, then, only where the path goes on past them, a heap of the rest (built
/// in O(n), in storage kept from one iteration to the next). Sorting them all cost n·log n an
/// iteration; a heap of them all, built every iteration, was the step's largest serial part.
pub(super) struct Breakpoints<'t> {
    times: &'t [f64],
    /// The earliest, the latest of them first (taken from the end).
    early: Vec<Breakpoint>,
    /// The latest of the earliest: the rest come after it.
    last_early: Option<Breakpoint>,
    /// Whether there are more than `early` held.
    more: bool,
    /// The rest, once the path has passed the earliest.
    rest: Option<BinaryHeap<Reverse<Breakpoint>>>,
    storage: Vec<Reverse<Breakpoint>>,
}

impl<'t> Breakpoints<'t> {
    /// The breakpoints of `times`: each variable's finite positive time to its bound.
    fn new(times: &'t [f64], storage: Vec<Reverse<Breakpoint>>) -> Self {
        let (mut early, total) =
            vector::smallest_indexed(times.len(), EARLY_BREAKPOINTS, |i| breakpoint(times, i));
        let more = total > early.len();
        let last_early = early.last().copied();
        early.reverse();
        Breakpoints {
            times,
            early,
            last_early,
            more,
            rest: None,
            storage,
        }
    }

    /// The next breakpoint the path meets.
    fn pop(&mut self) -> Option<Breakpoint> {
        if self.rest.is_none() {
            let next = self.early.pop();
            if next.is_some() || !self.more {
                return next;
            }
            // Past the earliest: the breakpoints after the last of them.
            let mut storage = std::mem::take(&mut self.storage);
            storage.clear();
            let last = self.last_early;
            storage.extend(
                (0..self.times.len())
                    .filter_map(|i| breakpoint(self.times, i))
                    .filter(|&b| Some(b) > last)
                    .map(Reverse),
            );
            self.rest = Some(BinaryHeap::from(storage));
        }
        self.rest.as_mut()?.pop().map(|Reverse(b)| b)
    }

    /// The storage, for the next iteration's heap.
    fn into_storage(self) -> Vec<Reverse<Breakpoint>> {
        self.rest.map_or(self.storage, BinaryHeap::into_vec)
    }
}

/// Variable `i`'s breakpoint, where it meets one along the path (a finite positive time).
pub(super) fn breakpoint(times: &[f64], i: usize) -> Option<Breakpoint> {
    let t = times[i];
    (t > 0.0 && t.is_finite()).then_some(Breakpoint(t, i))
}

/// A variable's breakpoint `t` (along the Cauchy path, or the fraction of the subspace step
/// that meets its bound) and its index, ordered by `t`, then by index (`total_cmp`: the
/// breakpoints are never NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Breakpoint(pub(super) f64, pub(super) usize);

impl Eq for Breakpoint {}

impl PartialOrd for Breakpoint {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Breakpoint {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The breakpoints come out in order of time, then index, past the earliest few too, and
    /// without the variables that never meet a bound (time 0 or ∞); ties and all. Long enough
    /// to be picked out on every core.
    #[test]
    fn breakpoints_come_in_the_order_the_path_meets_them() {
        let n = 3 * vector::PARALLEL_MIN_LEN + 5;
        let times: Vec<f64> = (0..n)
            .map(|i| match i % 7 {
                0 => 0.0,
                1 => f64::INFINITY,
                _ => ((i * 7919) % 4099) as f64 * 0.25,
            })
            .collect();
        let mut expected: Vec<Breakpoint> = (0..n).filter_map(|i| breakpoint(&times, i)).collect();
        expected.sort();
        for storage in [Vec::new(), vec![Reverse(Breakpoint(1.0, 3)); 5]] {
            let mut breaks = Breakpoints::new(&times, storage);
            let met: Vec<Breakpoint> = std::iter::from_fn(|| breaks.pop()).collect();
            assert_eq!(met.len(), expected.len());
            assert!(met == expected, "out of order");
            assert!(met.len() > EARLY_BREAKPOINTS && met[0].0 > 0.0);
        }
    }
}
