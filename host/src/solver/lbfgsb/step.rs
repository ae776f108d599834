//! L-BFGS-B's step from the Cauchy point: the unbounded quasi-Newton step, the subspace step
//! with its projection into the box, the line toward the target (`aim`), and the new pair's
//! pass, each one fused pass over the vectors.

use super::cauchy::Breakpoint;
use super::compact::{Compact, correction, pairs_with};
use super::{StepBuffers, sized};
use crate::linalg::vector;
use crate::solver::bounds::Bounds;
use crate::solver::memory::{DirectionProducts, Memory};
use std::borrow::Cow;
use std::ops::Range;

/// Without bounds, with pairs: every variable free and the Cauchy point `x` itself, so the
/// subspace step is the quasi-Newton step `d = −H·g`, `H = B⁻¹` (as the Fortran code skips the
/// Cauchy point there). It is formed as L-BFGS forms it, from the compact inverse form
/// ([`quasi_newton::inverse_coefficients`]: triangular solves with `R`, the upper triangle of
/// `SᵀY`), which needs no factorization, rather than by Sherman–Morrison–Woodbury on `B` (the
/// bounded step's route; with the middle matrix inverted by Gauss–Jordan, as it once was, that
/// lost every digit on Brown's badly scaled function, mgh-4, stopping at f = 1.9·10¹¹ after 65
/// iterations where scipy and L-BFGS reach 10⁻¹⁵ in 13). Writes `d = −γg − S·w + γY·u`
/// (`γ = 1/θ`) to `direction` and `x̄ = x + d` to `target`, and returns its slope `gᵀd`, in one
/// pass over the pairs ([`aim`]'s arithmetic without its pass), and, where `Sᵀg` and `Yᵀg`
/// came from the pairs' pass, the direction's products with the pairs, from the pairs' own
/// ([`DirectionProducts`]).
pub(super) fn unbounded_step(
    x: &[f64],
    g: &[f64],
    memory: &Memory<Vec<f64>>,
    target: &mut [f64],
    direction: &mut [f64],
) -> (f64, Option<DirectionProducts>) {
    let with_g = match memory.known_pairs_dot() {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(pairs_with(memory, g)),
    };
    let step = memory.inverse_step(&with_g);
    let mut terms: Vec<(f64, &[f64])> = vec![(-step.gamma, g)];
    terms.extend((step.coefficients.iter().copied()).zip(memory.columns().map(Vec::as_slice)));
    let kernel = |((d, target), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        vector::combine_block(&terms, d, range.clone());
        for ((t, &d), i) in target.iter_mut().zip(&*d).zip(range.clone()) {
            *t = x[i] + d;
        }
        vector::serial_dot(&g[range], d)
    };
    let len = target.len();
    let slope = vector::blockwise(((direction, target), 0..len), kernel, vector::sum_of);
    (slope, memory.direction_products(&step))
}

/// How [`subspace_step`] left its target.
pub(super) enum Target {
    /// Aimed at in the pass that wrote it: the line toward it is in `direction`, with its
    /// slope and room, [`aim`]'s bits.
    Aimed(f64, f64),
    /// Written without the line ([`aim`] is to make it): the Cauchy point, or a truncated step.
    Unaimed,
}

/// The subspace step from the Cauchy point `buffers.cauchy` (the direct primal method, with
/// version 3.0's projection), written to `target`: the model's minimizer over the variables
/// free at the Cauchy point, projected into the box, or truncated at the first bound where the
/// projection is not a descent direction. The projection's pass also aims at it (`direction`,
/// as [`aim`]), which is final where it is a descent direction. `None` where the
/// [`correction`] cannot be formed.
#[allow(clippy::too_many_arguments)]
pub(super) fn subspace_step(
    x: &[f64],
    g: &[f64],
    bounds: &Bounds,
    compact: &Compact<'_>,
    buffers: &mut StepBuffers,
    c: &[f64],
    target: &mut [f64],
    direction: &mut [f64],
) -> Option<Target> {
    let (n, width, theta) = (x.len(), compact.width(), compact.theta());
    let cauchy = &buffers.cauchy;
    // The variables strictly inside their bounds at the Cauchy point, as a mask of bytes that
    // the vector passes read, and how many, in one pass.
    let is_free = sized(&mut buffers.is_free, n);
    let kernel = |(is_free, range): (&mut [bool], Range<usize>)| {
        for (free, i) in is_free.iter_mut().zip(range) {
            *free = bounds.lower[i] < cauchy[i] && cauchy[i] < bounds.upper[i];
        }
        is_free.iter().filter(|&&free| free).count()
    };
    let free = vector::blockwise((&mut is_free[..], 0..n), kernel, |counts| {
        counts.iter().sum()
    });
    let is_free = &buffers.is_free;
    if free == 0 {
        target.copy_from_slice(cauchy);
        return Some(Target::Unaimed);
    }
    // The reduced gradient r = Zᵀ(u − W·M·c), u = g + θ(x_cp − x), is never formed: the
    // correction needs WᵀZ·r = WᵀZ·u − ZᵀW·WᵀZ·M·c, and the step is −r/θ − W·v. WᵀZ·u and
    // ZᵀW·WᵀZ are sums over the free rows: taken over them where they are at most half, else
    // as the sums over every row less those over the rows at a bound. Over every row they need
    // no pass: Wᵀu = Wᵀg + θ·c, and WᵀW comes from the pairs' products.
    let direct = 2 * free <= n;
    let ones = vec![1.0; width];
    let columns: Vec<(f64, &[f64])> = compact.columns(&ones).collect();
    let u = [(1.0, g), (theta, &cauchy[..]), (-theta, x)];
    let (kept_gram, kept_u) = vector::masked_gram(&columns, is_free, direct, &u);
    // The Gram matrices over the free rows and over the rows at a bound: one is the kept one,
    // the other the whole less it (the correction needs both).
    let gram = compact.gram();
    let rest: Vec<f64> = (gram.iter().zip(&kept_gram))
        .map(|(all, kept)| all - kept)
        .collect();
    let (wz_zw, bound_gram, wz_u) = if direct {
        (kept_gram, rest, kept_u)
    } else {
        let wg = compact.w_gradient(g);
        let wz_u = (wg.iter().zip(c).zip(&kept_u)).map(|((wg, c), kept)| wg + theta * c - kept);
        (rest, kept_gram, wz_u.collect())
    };
    let mc = compact.m_times(c);
    let wz_r: Vec<f64> = (0..width)
        .map(|a| wz_u[a] - vector::dot(&wz_zw[a * width..(a + 1) * width], &mc))
        .collect();
    let v = correction(compact, &wz_r, &wz_zw, &bound_gram)?;
    // The step over the free variables: −r/θ − W·v = −u/θ + W·(M·c/θ − v).
    let coefficients: Vec<f64> = mc.iter().zip(&v).map(|(mc, v)| mc / theta - v).collect();
    let mut terms: Vec<(f64, &[f64])> = vec![(-1.0 / theta, g), (-1.0, cauchy), (1.0, x)];
    terms.extend(compact.columns(&coefficients));
    // The step, its projection into the box from the Cauchy point, and the line toward the
    // projection (`aim`'s work: one pass less where the projection is kept), in one pass.
    let step = sized(&mut buffers.step, n);
    type Parts<'a> = (
        ((&'a mut [f64], &'a mut [f64]), &'a mut [f64]),
        Range<usize>,
    );
    let kernel = |(((step, projected), direction), range): Parts<'_>| {
        vector::combine_block(&terms, step, range.clone());
        for ((p, &s), i) in projected.iter_mut().zip(&*step).zip(range.clone()) {
            *p = if is_free[i] {
                bounds.clip(i, cauchy[i] + s)
            } else {
                cauchy[i]
            };
        }
        aim_block(x, g, projected, direction, Some(bounds), range)
    };
    let (slope, room) = vector::blockwise(
        (((&mut step[..], &mut target[..]), direction), 0..n),
        kernel,
        slope_and_room,
    );
    if slope <= 0.0 {
        return Some(Target::Aimed(slope, room));
    }
    let (step, projected) = (&buffers.step, target);
    // Truncate at the first bound the step meets: the smallest reach below 1 (the lowest
    // index among equals), from one pass on every core.
    let reach = |i: usize| {
        let reach = if is_free[i] {
            bounds.room(i, cauchy[i], step[i]).min(1.0)
        } else {
            1.0
        };
        (reach < 1.0).then_some(Breakpoint(reach, i))
    };
    let (met, _) = vector::smallest_indexed(n, 1, reach);
    let (alpha, first) = met
        .first()
        .map_or((1.0, None), |&Breakpoint(reach, i)| (reach, Some(i)));
    vector::update_indexed(projected, |i, _| {
        if !is_free[i] {
            cauchy[i]
        } else if first == Some(i) {
            if step[i] > 0.0 {
                bounds.upper[i]
            } else {
                bounds.lower[i]
            }
        } else {
            cauchy[i] + alpha * step[i]
        }
    });
    Some(Target::Unaimed)
}

/// The line toward the step's target `x̄`: `d ← x̄ − x`, its slope `gᵀd` (the bits of
/// [`vector::dot`]) and, within `bounds`, the multiple of `d` at which it first leaves the box
/// (`∞`: never), in one pass.
pub(super) fn aim(
    x: &[f64],
    g: &[f64],
    target: &[f64],
    direction: &mut [f64],
    bounds: Option<&Bounds>,
) -> (f64, f64) {
    let kernel = |(d, range): (&mut [f64], Range<usize>)| {
        let block_target = &target[range.clone()];
        aim_block(x, g, block_target, d, bounds, range)
    };
    let len = direction.len();
    vector::blockwise((direction, 0..len), kernel, slope_and_room)
}

/// [`aim`] over the block `range` of the vectors, whose part of `target` and `direction` are
/// `target` and `direction`: the block's slope and room.
pub(super) fn aim_block(
    x: &[f64],
    g: &[f64],
    target: &[f64],
    direction: &mut [f64],
    bounds: Option<&Bounds>,
    range: Range<usize>,
) -> (f64, f64) {
    for ((d, &t), i) in direction.iter_mut().zip(target).zip(range.clone()) {
        *d = t - x[i];
    }
    let room = bounds.map_or(f64::INFINITY, |b| {
        (range.clone().zip(direction.iter()))
            .map(|(i, &d)| b.room(i, x[i], d))
            .fold(f64::INFINITY, f64::min)
    });
    (vector::serial_dot(&g[range], direction), room)
}

/// The blocks' slopes and rooms as one: the slope as [`vector::dot`] adds them, the least room.
pub(super) fn slope_and_room(blocks: Vec<(f64, f64)>) -> (f64, f64) {
    let slope = vector::sum_of(blocks.iter().map(|&(slope, _)| slope).collect());
    let room = blocks
        .iter()
        .map(|&(_, room)| room)
        .fold(f64::INFINITY, f64::min);
    (slope, room)
}

/// What [`new_pair`] sums (each product the bits of [`vector::dot`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct PairSums {
    pub(super) sy: f64,
    pub(super) yy: f64,
    pub(super) ss: f64,
    /// `gᵀs`, the step's slope.
    pub(super) gs: f64,
    /// `g₊ᵀg₊`.
    pub(super) gg: f64,
    /// `‖g₊‖∞`.
    pub(super) g_new_max: f64,
}

/// The new pair from the step `step·d` that took the gradient from `g` to `g_new`:
/// `s ← step·d` and `y ← g_new − g`, with their products, in one pass.
pub(super) fn new_pair(
    step: f64,
    d: &[f64],
    g_new: &[f64],
    g: &[f64],
    s: &mut [f64],
    y: &mut [f64],
) -> PairSums {
    let kernel = |((s, y), range): ((&mut [f64], &mut [f64]), Range<usize>)| {
        let mut g_new_max = 0.0;
        for ((s, y), i) in s.iter_mut().zip(y.iter_mut()).zip(range.clone()) {
            *s = step * d[i];
            *y = g_new[i] - g[i];
            g_new_max = f64::max(g_new_max, g_new[i].abs());
        }
        let g_new = &g_new[range.clone()];
        let [sy, yy] = vector::serial_dots_of([&*s, &*y], y);
        let [ss, gs] = vector::serial_dots_of([&*s, &g[range]], s);
        [sy, yy, ss, gs, vector::serial_dot(g_new, g_new), g_new_max]
    };
    let len = d.len();
    vector::blockwise(((s, y), 0..len), kernel, |blocks| {
        let sum = |k: usize| vector::sum_of(blocks.iter().map(|sums| sums[k]).collect());
        let max = blocks.iter().map(|sums| sums[5]).fold(0.0, f64::max);
        [sum(0), sum(1), sum(2), sum(3), sum(4), max]
    })
    .into()
}

impl From<[f64; 6]> for PairSums {
    fn from([sy, yy, ss, gs, gg, g_new_max]: [f64; 6]) -> Self {
        PairSums {
            sy,
            yy,
            ss,
            gs,
            gg,
            g_new_max,
        }
    }
}
