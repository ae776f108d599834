//! L-BFGS-B's vector passes on host vectors: the [`BoxSpace`] of [`HostVectors`], each pass a
//! loop over the entries.

use super::{BoxSpace, BoxVectors, Breakpoint, PairSums};
use crate::error::EvalError;
use crate::linalg::vector;
use crate::space::{HostVectors, VectorSpace};
use gpu_kernels::bounds::truncated;
use gpu_kernels::bounds::{active, breakpoint, clip, is_breakpoint, projected, reach, room};
use gpu_kernels::kernel::nan_max;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Range;

fn sides(bounds: Option<&BoxVectors<Vec<f64>>>, i: usize) -> (f64, f64) {
    bounds.map_or((f64::NEG_INFINITY, f64::INFINITY), |b| {
        (b.lower[i], b.upper[i])
    })
}

impl BoxSpace for HostVectors {
    type Mask = Vec<bool>;
    type Later = BinaryHeap<Reverse<Breakpoint>>;

    fn new_mask(&mut self) -> Result<Vec<bool>, EvalError> {
        let n = self.dim();
        let mut mask = Vec::new();
        mask.try_reserve_exact(n)
            .map_err(|_| EvalError::OutOfMemory {
                what: "a mask of the solver",
                bytes: n,
            })?;
        mask.resize(n, false);
        Ok(mask)
    }

    fn projected_gradient_norm(
        &mut self,
        bounds: Option<&BoxVectors<Vec<f64>>>,
        x: &Vec<f64>,
        g: &Vec<f64>,
    ) -> Result<f64, EvalError> {
        let Some(bounds) = bounds else {
            return Ok(vector::max_abs(g));
        };
        Ok(projected_gradient_norm(&bounds.lower, &bounds.upper, x, g))
    }

    fn steepest_path(
        &mut self,
        bounds: Option<&BoxVectors<Vec<f64>>>,
        x: &Vec<f64>,
        g: &Vec<f64>,
        times: &mut Vec<f64>,
        path: &mut Vec<f64>,
    ) -> Result<f64, EvalError> {
        let n = x.len();
        let kernel = |((times, d), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
            let mut norm = 0.0;
            for ((t, d), i) in times.iter_mut().zip(d).zip(range) {
                let (lower, upper) = sides(bounds, i);
                *t = breakpoint(lower, upper, x[i], g[i]);
                *d = if *t > 0.0 { -g[i] } else { 0.0 };
                norm = nan_max(norm, projected(lower, upper, x[i], g[i]).abs());
            }
            norm
        };
        let norms = |blocks: Vec<f64>| blocks.into_iter().fold(0.0, nan_max);
        Ok(vector::blockwise(
            ((&mut times[..], &mut path[..]), 0..n),
            kernel,
            norms,
        ))
    }

    fn earliest_breakpoints(
        &mut self,
        times: &Vec<f64>,
        after: Option<Breakpoint>,
        count: usize,
    ) -> Result<(Vec<Breakpoint>, usize), EvalError> {
        Ok(vector::smallest_indexed(times.len(), count, |i| {
            breakpoint_of(times, i).filter(|&b| after.is_none_or(|after| b > after))
        }))
    }

    /// A heap, built in O(n) in storage kept from one iteration to the next. Sorting them all
    /// cost n·log n an iteration, where a path seldom passes more than a few.
    fn order_later(
        &mut self,
        times: &Vec<f64>,
        after: Breakpoint,
        later: &mut Self::Later,
    ) -> Result<(), EvalError> {
        let mut heap = std::mem::take(later).into_vec();
        heap.clear();
        heap.extend(
            (0..times.len())
                .filter_map(|i| breakpoint_of(times, i))
                .filter(|&b| b > after)
                .map(Reverse),
        );
        *later = BinaryHeap::from(heap);
        Ok(())
    }

    fn next_later(
        &mut self,
        later: &mut Self::Later,
        vectors: &[&Vec<f64>],
        count: usize,
        rows: &mut Vec<f64>,
    ) -> Result<Vec<Breakpoint>, EvalError> {
        let batch: Vec<Breakpoint> = std::iter::from_fn(|| later.pop().map(|Reverse(b)| b))
            .take(count)
            .collect();
        let indices: Vec<usize> = batch.iter().map(|&Breakpoint(_, i)| i).collect();
        rows.resize(indices.len() * vectors.len(), 0.0);
        self.gather(vectors, &indices, rows)?;
        Ok(batch)
    }

    fn gather(
        &mut self,
        vectors: &[&Vec<f64>],
        indices: &[usize],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        debug_assert_eq!(out.len(), indices.len() * vectors.len());
        let rows = out.chunks_exact_mut(vectors.len().max(1));
        for (row, &i) in rows.zip(indices) {
            for (entry, v) in row.iter_mut().zip(vectors) {
                *entry = v[i];
            }
        }
        Ok(())
    }

    fn scatter(&mut self, v: &mut Vec<f64>, entries: &[(usize, f64)]) -> Result<(), EvalError> {
        for &(i, value) in entries {
            v[i] = value;
        }
        Ok(())
    }

    fn path_point(
        &mut self,
        x: &Vec<f64>,
        t: f64,
        path: &Vec<f64>,
        cauchy: &mut Vec<f64>,
    ) -> Result<(), EvalError> {
        vector::fill_with(cauchy, x, path, |x, d| if d != 0.0 { x + t * d } else { x });
        Ok(())
    }

    fn free_variables(
        &mut self,
        bounds: &BoxVectors<Vec<f64>>,
        point: &Vec<f64>,
        free: &mut Vec<bool>,
    ) -> Result<usize, EvalError> {
        let (lower, upper) = (&bounds.lower, &bounds.upper);
        let n = point.len();
        let kernel = |(free, range): (&mut [bool], Range<usize>)| {
            for (free, i) in free.iter_mut().zip(range) {
                *free = lower[i] < point[i] && point[i] < upper[i];
            }
            free.iter().filter(|&&free| free).count()
        };
        Ok(vector::blockwise((&mut free[..], 0..n), kernel, |counts| {
            counts.iter().sum()
        }))
    }

    fn masked_gram(
        &mut self,
        columns: &[(f64, &Vec<f64>)],
        free: &Vec<bool>,
        keep: bool,
        u: &[(f64, &Vec<f64>)],
    ) -> Result<(Vec<f64>, Vec<f64>), EvalError> {
        Ok(vector::masked_gram(
            &slices(columns),
            free,
            keep,
            &slices(u),
        ))
    }

    fn projected_step(
        &mut self,
        terms: &[(f64, &Vec<f64>)],
        bounds: &BoxVectors<Vec<f64>>,
        free: &Vec<bool>,
        cauchy: &Vec<f64>,
        x: &Vec<f64>,
        g: &Vec<f64>,
        step: &mut Vec<f64>,
        target: &mut Vec<f64>,
        direction: &mut Vec<f64>,
    ) -> Result<(f64, f64), EvalError> {
        let terms = slices(terms);
        let (lower, upper) = (&bounds.lower, &bounds.upper);
        type Parts<'a> = (
            ((&'a mut [f64], &'a mut [f64]), &'a mut [f64]),
            Range<usize>,
        );
        let kernel = |(((step, target), direction), range): Parts<'_>| {
            vector::combine_block(&terms, step, range.clone());
            for ((t, &s), i) in target.iter_mut().zip(&*step).zip(range.clone()) {
                *t = if free[i] {
                    clip(lower[i], upper[i], cauchy[i] + s)
                } else {
                    cauchy[i]
                };
            }
            aim_block(Some(bounds), x, g, target, direction, range)
        };
        let n = x.len();
        Ok(vector::blockwise(
            (((&mut step[..], &mut target[..]), &mut direction[..]), 0..n),
            kernel,
            slope_and_room,
        ))
    }

    fn truncated_step(
        &mut self,
        bounds: &BoxVectors<Vec<f64>>,
        free: &Vec<bool>,
        cauchy: &Vec<f64>,
        step: &Vec<f64>,
        target: &mut Vec<f64>,
    ) -> Result<(), EvalError> {
        let (lower, upper) = (&bounds.lower, &bounds.upper);
        // The smallest reach below 1, from one pass on every core.
        let short_of_the_step = |i: usize| {
            let fraction = reach(lower[i], upper[i], free[i], cauchy[i], step[i]);
            (fraction < 1.0).then_some(Breakpoint(fraction, i))
        };
        let (met, _) = vector::smallest_indexed(step.len(), 1, short_of_the_step);
        let (alpha, first) = met
            .first()
            .map_or((1.0, None), |&Breakpoint(fraction, i)| (fraction, Some(i)));
        vector::update_indexed(target, |i, _| {
            let first = first == Some(i);
            truncated(
                lower[i], upper[i], free[i], first, cauchy[i], step[i], alpha,
            )
        });
        Ok(())
    }

    fn aim(
        &mut self,
        bounds: Option<&BoxVectors<Vec<f64>>>,
        x: &Vec<f64>,
        g: &Vec<f64>,
        target: &Vec<f64>,
        direction: &mut Vec<f64>,
    ) -> Result<(f64, f64), EvalError> {
        let kernel = |(d, range): (&mut [f64], Range<usize>)| {
            let block_target = &target[range.clone()];
            aim_block(bounds, x, g, block_target, d, range)
        };
        let len = direction.len();
        Ok(vector::blockwise(
            (&mut direction[..], 0..len),
            kernel,
            slope_and_room,
        ))
    }

    fn combined_step(
        &mut self,
        terms: &[(f64, &Vec<f64>)],
        x: &Vec<f64>,
        g: &Vec<f64>,
        direction: &mut Vec<f64>,
        target: &mut Vec<f64>,
    ) -> Result<f64, EvalError> {
        let terms = slices(terms);
        let kernel = |((d, target), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
            vector::combine_block(&terms, d, range.clone());
            for ((t, &d), i) in target.iter_mut().zip(&*d).zip(range.clone()) {
                *t = x[i] + d;
            }
            vector::serial_dot(&g[range], d)
        };
        let len = target.len();
        Ok(vector::blockwise(
            ((&mut direction[..], &mut target[..]), 0..len),
            kernel,
            vector::sum_of,
        ))
    }

    fn clipped_ray_point(
        &mut self,
        bounds: &BoxVectors<Vec<f64>>,
        x: &Vec<f64>,
        step: f64,
        d: &Vec<f64>,
        out: &mut Vec<f64>,
    ) -> Result<(), EvalError> {
        let (lower, upper) = (&bounds.lower, &bounds.upper);
        vector::update_indexed(out, |i, _| clip(lower[i], upper[i], x[i] + step * d[i]));
        Ok(())
    }

    fn active_mask(
        &mut self,
        bounds: &BoxVectors<Vec<f64>>,
        x: &Vec<f64>,
        out: &mut Vec<f64>,
    ) -> Result<(), EvalError> {
        let (lower, upper) = (&bounds.lower, &bounds.upper);
        vector::update_indexed(out, |i, _| active(lower[i], upper[i], x[i]));
        Ok(())
    }

    fn new_pair(
        &mut self,
        step: f64,
        d: &Vec<f64>,
        g_new: &Vec<f64>,
        g: &Vec<f64>,
        s: &mut Vec<f64>,
        y: &mut Vec<f64>,
    ) -> Result<PairSums, EvalError> {
        let kernel = |((s, y), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
            let mut g_new_max = 0.0;
            for ((s, y), i) in s.iter_mut().zip(y.iter_mut()).zip(range.clone()) {
                *s = step * d[i];
                *y = g_new[i] - g[i];
                g_new_max = nan_max(g_new_max, g_new[i].abs());
            }
            let g_new = &g_new[range.clone()];
            let [sy, yy] = vector::serial_dots_of([&*s, &*y], y);
            let [ss, gs] = vector::serial_dots_of([&*s, &g[range]], s);
            [sy, yy, ss, gs, vector::serial_dot(g_new, g_new), g_new_max]
        };
        let len = d.len();
        let sums = vector::blockwise(((&mut s[..], &mut y[..]), 0..len), kernel, |blocks| {
            let sum = |k: usize| vector::sum_of(blocks.iter().map(|sums| sums[k]).collect());
            let max = blocks.iter().map(|sums| sums[5]).fold(0.0, nan_max);
            [sum(0), sum(1), sum(2), sum(3), sum(4), max]
        });
        Ok(sums.into())
    }
}

/// Variable `i`'s breakpoint, where it meets one along the path (a finite positive time).
fn breakpoint_of(times: &[f64], i: usize) -> Option<Breakpoint> {
    let t = times[i];
    is_breakpoint(t).then_some(Breakpoint(t, i))
}

/// `(c, v)` terms over slices.
fn slices<'v>(terms: &[(f64, &'v Vec<f64>)]) -> Vec<(f64, &'v [f64])> {
    terms.iter().map(|&(c, v)| (c, v.as_slice())).collect()
}

/// [`BoxSpace::aim`] over the block `range` of the vectors, whose part of `target` and
/// `direction` are `target` and `direction`: the block's slope and room.
fn aim_block(
    bounds: Option<&BoxVectors<Vec<f64>>>,
    x: &[f64],
    g: &[f64],
    target: &[f64],
    direction: &mut [f64],
    range: Range<usize>,
) -> (f64, f64) {
    for ((d, &t), i) in direction.iter_mut().zip(target).zip(range.clone()) {
        *d = t - x[i];
    }
    let least_room = bounds.map_or(f64::INFINITY, |b| {
        (range.clone().zip(direction.iter()))
            .map(|(i, &d)| room(b.lower[i], b.upper[i], x[i], d))
            .fold(f64::INFINITY, f64::min)
    });
    (vector::serial_dot(&g[range], direction), least_room)
}

/// The blocks' slopes and rooms as one: the slope as [`vector::dot`] adds them, the least room.
fn slope_and_room(blocks: Vec<(f64, f64)>) -> (f64, f64) {
    let slope = vector::sum_of(blocks.iter().map(|&(slope, _)| slope).collect());
    let room = blocks
        .iter()
        .map(|&(_, room)| room)
        .fold(f64::INFINITY, f64::min);
    (slope, room)
}

/// `‖x − P(x − g)‖∞` in the box `[lower, upper]`, on every core (NaN entries of `g` are
/// skipped: callers test `g` finite first, or say what a NaN gives).
pub(crate) fn projected_gradient_norm(lower: &[f64], upper: &[f64], x: &[f64], g: &[f64]) -> f64 {
    vector::max_indexed(x.len(), |i| projected(lower[i], upper[i], x[i], g[i]).abs())
}
