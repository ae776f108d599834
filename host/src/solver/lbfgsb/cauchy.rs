//! L-BFGS-B's generalized Cauchy point: the projected steepest-descent path and its
//! breakpoints, walked in order as far as the quadratic model keeps decreasing along it. The
//! walk is the host's; the passes over the vectors, and the few rows of them it reads, are the
//! space's.

use super::compact::Compact;
use super::{StepBuffers, made};
use crate::linalg::vector::dot;
use crate::objective::EvalError;
use crate::space::{BoxSpace, BoxVectors, Breakpoint};

/// Breakpoints and the projected steepest-descent path at `(x, g)`, into `buffers.times` (when
/// each variable meets its bound along `−g`) and `buffers.path` (`−g`, 0 where a variable
/// cannot move); returns the projected gradient's ∞-norm there, taken in the same pass.
pub(super) fn steepest_path<S: BoxSpace>(
    space: &mut S,
    bounds: Option<&BoxVectors<S::Vector>>,
    x: &S::Vector,
    g: &S::Vector,
    buffers: &mut StepBuffers<S>,
) -> Result<f64, EvalError> {
    let times = made(&mut buffers.times, || space.zeros())?;
    let path = made(&mut buffers.path, || space.zeros())?;
    space.steepest_path(bounds, x, g, times, path)
}

/// The generalized Cauchy point (Byrd et al., Algorithm CP), written to `buffers.cauchy`, and
/// `c = Wᵀ(x_cp − x)`. The path is `buffers.path` where the memory took its products for this
/// point, else made here.
pub(super) fn cauchy_point<S: BoxSpace>(
    space: &mut S,
    x: &S::Vector,
    g: &S::Vector,
    bounds: Option<&BoxVectors<S::Vector>>,
    compact: &Compact<'_, S::Vector>,
    buffers: &mut StepBuffers<S>,
) -> Result<Vec<f64>, EvalError> {
    let width = compact.width();
    let theta = compact.theta();
    // The path and `Wᵀd`: from the pass that took in the newest pair, where it took them for
    // this point.
    let mut p = match compact.memory.pairs_dot_path() {
        Some(products) => compact.w_products(products),
        None => {
            steepest_path(space, bounds, x, g, buffers)?;
            let path = made(&mut buffers.path, || space.zeros())?;
            compact.w_transpose(space, path)?
        }
    };
    let cauchy = made(&mut buffers.cauchy, || space.zeros())?;
    let times = made(&mut buffers.times, || space.zeros())?;
    let d = made(&mut buffers.path, || space.zeros())?;
    let mut w = vec![0.0; width];
    let mut c = vec![0.0; width];
    let mut slope = -space.dot(d, d)?;
    let mut curvature = -theta * slope - dot(&p, &compact.m_times(&p));
    let curvature_floor = f64::EPSILON * curvature;
    if slope == 0.0 || curvature <= 0.0 {
        space.copy(x, cauchy)?;
        return Ok(c);
    }
    // Each breakpoint's row: `x`, `g`, the bounds, then `W`'s unscaled columns.
    // Without bounds no variable meets one: the path has no breakpoints.
    let rows = bounds.map(|bounds| {
        let mut rows: Vec<&S::Vector> = vec![x, g, &bounds.lower, &bounds.upper];
        rows.extend(compact.memory.columns());
        rows
    });
    let mut breaks = Breakpoints::new(space, times, rows, std::mem::take(&mut buffers.later))?;
    let mut step_to_minimum = -slope / curvature;
    let mut t_old = 0.0;
    // Whether the path passed every breakpoint: only then may it have no direction left.
    let mut passed_all = true;
    // The variables the path took to a bound, and that bound.
    let mut met = Vec::new();
    while let Some((Breakpoint(t, b), row)) = breaks.pop(space)? {
        let dt = t - t_old;
        if step_to_minimum < dt {
            passed_all = false;
            break;
        }
        let [xb, gb, lower, upper] = [row[0], row[1], row[2], row[3]];
        // The path is `−g` here: up where `g` is negative.
        let bound = if gb < 0.0 { upper } else { lower };
        met.push((b, bound));
        let z = bound - xb;
        for (cj, pj) in c.iter_mut().zip(&p) {
            *cj += dt * pj;
        }
        for (j, (wj, &v)) in w.iter_mut().zip(&row[4..]).enumerate() {
            *wj = compact.column_scale(j) * v;
        }
        let mw = compact.m_times(&w);
        slope += dt * curvature + gb * gb + theta * gb * z - gb * dot(&mw, &c);
        curvature -= theta * gb * gb + 2.0 * gb * dot(&mw, &p) + gb * gb * dot(&mw, &w);
        curvature = curvature.max(curvature_floor);
        for (pj, wj) in p.iter_mut().zip(&w) {
            *pj += gb * wj;
        }
        step_to_minimum = -slope / curvature;
        t_old = t;
        if slope >= 0.0 {
            step_to_minimum = 0.0;
            break;
        }
    }
    buffers.later = breaks.into_later();
    // The variables at their bounds leave the path.
    let left: Vec<(usize, f64)> = met.iter().map(|&(b, _)| (b, 0.0)).collect();
    space.scatter(d, &left)?;
    // Every variable at a bound: the path ends there (the model's minimum along it is moot).
    let step_to_minimum = if passed_all && space.norm(d, f64::INFINITY)? == 0.0 {
        0.0
    } else {
        step_to_minimum.max(0.0)
    };
    let t = t_old + step_to_minimum;
    for (cj, pj) in c.iter_mut().zip(&p) {
        *cj += step_to_minimum * pj;
    }
    space.path_point(x, t, d, cauchy)?;
    space.scatter(cauchy, &met)?;
    Ok(c)
}

/// How many of the earliest breakpoints one pass picks out (with their rows, in one gather):
/// the path usually stops after a few, at the model's minimum along it.
const EARLY_BREAKPOINTS: usize = 64;

/// Past the earliest, each gather of rows brings this many times more breakpoints than the one
/// before, up to [`MOST_ROWS_A_GATHER`]: a path that goes on past the earliest may pass them
/// all (a bound that binds half the variables at once). A gather per breakpoint is a launch and
/// a wait each on a GPU, which made such a solve far slower there than on the CPU.
const GATHER_GROWTH: usize = 4;

/// The most breakpoints whose rows one gather brings (with 24 vectors a row, 12.6 MB).
const MOST_ROWS_A_GATHER: usize = 1 << 16;

/// Where the space picks later breakpoints batch by batch ([`BoxSpace::picks_later_breakpoints`]),
/// it does so while they number at most `n` over this; past it, the space puts the rest in
/// order ([`BoxSpace::order_later`]). Each pick crosses about `32·√(n·count)` bytes: with
/// batches growing fourfold, the picks up to `n / 64` cross about `8n` bytes together, no more
/// than one pass of the order reads.
const PICKED_SHARE: usize = 64;

/// The breakpoints in the order the path meets them, each with its row of the vectors the walk
/// reads: the earliest [`EARLY_BREAKPOINTS`] from one pass, then, only where the path goes on
/// past them, a growing batch at a time with the batch's rows in one gather. A GPU's space
/// picks the first batches as it picked the earliest ([`PICKED_SHARE`]); the rest the space
/// puts in order once, in storage kept from one iteration to the next.
struct Breakpoints<'v, S: BoxSpace> {
    times: &'v S::Vector,
    /// The vectors a breakpoint's row is read from (none: there are no breakpoints).
    rows: Vec<&'v S::Vector>,
    /// The batch held (first the earliest), in order, and its rows, one after another.
    batch: Vec<Breakpoint>,
    batch_rows: Vec<f64>,
    /// How many of the batch the path has met.
    met: usize,
    /// How many breakpoints the batches held so far.
    held: usize,
    /// Whether there are more breakpoints than the earliest (all after the last of them).
    more: bool,
    /// Whether the rest are in `later`, in order.
    ordered: bool,
    later: S::Later,
}

impl<'v, S: BoxSpace> Breakpoints<'v, S> {
    /// The breakpoints of `times` (each variable's finite positive time to its bound), with
    /// rows of `rows` (`None`: no variable has a bound).
    fn new(
        space: &mut S,
        times: &'v S::Vector,
        rows: Option<Vec<&'v S::Vector>>,
        later: S::Later,
    ) -> Result<Self, EvalError> {
        let mut breaks = Breakpoints {
            times,
            rows: rows.unwrap_or_default(),
            batch: Vec::new(),
            batch_rows: Vec::new(),
            met: 0,
            held: 0,
            more: false,
            ordered: false,
            later,
        };
        if breaks.rows.is_empty() {
            return Ok(breaks);
        }
        let (early, total) = space.earliest_breakpoints(times, None, EARLY_BREAKPOINTS)?;
        breaks.more = total > early.len();
        breaks.hold(space, early)?;
        Ok(breaks)
    }

    /// The next breakpoint the path meets, and its row.
    fn pop(&mut self, space: &mut S) -> Result<Option<(Breakpoint, &[f64])>, EvalError> {
        if self.met == self.batch.len() && !self.next_batch(space)? {
            return Ok(None);
        }
        let width = self.rows.len();
        let (next, at) = (self.batch[self.met], self.met * width);
        self.met += 1;
        Ok(Some((next, &self.batch_rows[at..at + width])))
    }

    /// Takes the next batch: picked by the space where it picks them and few are held yet,
    /// else the next of the rest in order (put in order after the last held, on the first
    /// call); false where there are none left.
    fn next_batch(&mut self, space: &mut S) -> Result<bool, EvalError> {
        let size = (self.batch.len() * GATHER_GROWTH).clamp(EARLY_BREAKPOINTS, MOST_ROWS_A_GATHER);
        if !self.ordered {
            let Some(&last) = self.batch.last().filter(|_| self.more) else {
                return Ok(false);
            };
            if space.picks_later_breakpoints() && self.held + size <= space.dim() / PICKED_SHARE {
                let (batch, after) = space.earliest_breakpoints(self.times, Some(last), size)?;
                self.more = after > batch.len();
                if batch.is_empty() {
                    return Ok(false);
                }
                self.hold(space, batch)?;
                return Ok(true);
            }
            space.order_later(self.times, last, &mut self.later)?;
            self.ordered = true;
        }
        let batch = space.next_later(&mut self.later, &self.rows, size, &mut self.batch_rows)?;
        if batch.is_empty() {
            return Ok(false);
        }
        self.held += batch.len();
        self.batch = batch;
        self.met = 0;
        Ok(true)
    }

    /// Holds `batch` (in order) and its rows, none of it met yet.
    fn hold(&mut self, space: &mut S, batch: Vec<Breakpoint>) -> Result<(), EvalError> {
        let indices: Vec<usize> = batch.iter().map(|&Breakpoint(_, i)| i).collect();
        self.batch_rows.resize(indices.len() * self.rows.len(), 0.0);
        space.gather(&self.rows, &indices, &mut self.batch_rows)?;
        self.held += batch.len();
        self.batch = batch;
        self.met = 0;
        Ok(())
    }

    /// The storage of the rest, for the next iteration's walk.
    fn into_later(self) -> S::Later {
        self.later
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::HostVectors;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// The breakpoints come out in order of time, then index, past the earliest few too, and
    /// without the variables that never meet a bound (time 0 or ∞); ties and all; each with its
    /// row; the rows come in few gathers, growing. Long enough to be picked out on every core.
    #[test]
    fn breakpoints_come_in_the_order_the_path_meets_them() {
        let n = 4 * crate::linalg::vector::PARALLEL_MIN_LEN + 5;
        let times: Vec<f64> = (0..n)
            .map(|i| match i % 7 {
                0 => 0.0,
                1 => f64::INFINITY,
                _ => ((i * 7919) % 4099) as f64 * 0.25,
            })
            .collect();
        let index: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let mut expected: Vec<Breakpoint> = (0..n)
            .filter(|&i| times[i] > 0.0 && times[i].is_finite())
            .map(|i| Breakpoint(times[i], i))
            .collect();
        expected.sort();
        let mut space = HostVectors::new(n);
        let mut storage = BinaryHeap::from(vec![Reverse(Breakpoint(1.0, 3)); 5]);
        for _ in 0..2 {
            let rows = Some(vec![&index, &times]);
            let mut breaks = Breakpoints::new(&mut space, &times, rows, storage).unwrap();
            let mut met = Vec::new();
            // A batch's first breakpoint met: its rows came in one gather.
            let mut batches = Vec::new();
            while let Some((b, row)) = breaks.pop(&mut space).unwrap() {
                assert_eq!(row, [b.1 as f64, b.0]);
                if breaks.met == 1 {
                    batches.push(breaks.batch.len());
                }
                met.push(b);
            }
            // 64, then 4 times more each gather up to 2¹⁶ (met here), then what is left.
            let mut sizes = vec![EARLY_BREAKPOINTS];
            let mut left = expected.len() - EARLY_BREAKPOINTS;
            while left > 0 {
                let size = (sizes[sizes.len() - 1] * GATHER_GROWTH).min(MOST_ROWS_A_GATHER);
                sizes.push(size.min(left));
                left -= size.min(left);
            }
            assert!(sizes.contains(&MOST_ROWS_A_GATHER));
            assert_eq!(batches, sizes);
            storage = breaks.into_later();
            assert_eq!(met.len(), expected.len());
            assert!(met == expected, "out of order");
            assert!(met.len() > EARLY_BREAKPOINTS && met[0].0 > 0.0);
        }
    }
}
