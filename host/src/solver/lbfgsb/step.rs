//! L-BFGS-B's step from the Cauchy point: the unbounded quasi-Newton step (with the line
//! search's first trial, where the objective evaluates by pieces), and the subspace step with
//! its projection into the box, each one pass of the space (with the products the subspace
//! step needs from another).

use super::compact::{Compact, correction, pairs_with};
use super::{StepBuffers, made};
use crate::linalg::vector;
use crate::objective::EvalError;
use crate::solver::memory::{DirectionProducts, Memory};
use crate::solver::quasi_newton::Trial;
use crate::solver::trial_sweep::TrialSweep;
use crate::solver::workspace::Workspace;
use crate::space::{BoxSpace, BoxVectors};
use std::borrow::Cow;

/// Without bounds, with pairs: every variable free and the Cauchy point `x` itself, so the
/// subspace step is the quasi-Newton step `d = −H·g`, `H = B⁻¹` (as the Fortran code skips the
/// Cauchy point there). It is formed as L-BFGS forms it, from the compact inverse form
/// ([`quasi_newton::inverse_coefficients`]: triangular solves with `R`, the upper triangle of
/// `SᵀY`), which needs no factorization, rather than by Sherman–Morrison–Woodbury on `B` (the
/// bounded step's route; with the middle matrix inverted by Gauss–Jordan, as it once was, that
/// lost every digit on Brown's badly scaled function, mgh-4, stopping at f = 1.9·10¹¹ after 65
/// iterations where scipy and L-BFGS reach 10⁻¹⁵ in 13). Writes `d = −γg − S·w + γY·u`
/// (`γ = 1/θ`) to `direction`, and either evaluates the line search's first trial `x + d` in
/// the same sweep (where the workspace can, [`Workspace::trial_sweep`]: into `trial`'s point
/// and gradient, `target` left as it was) or writes `x̄ = x + d` to `target` in the same pass
/// ([`BoxSpace::combined_step`]); with the slope `gᵀd` and, where `Sᵀg` and `Yᵀg` came from
/// the pairs' pass, the direction's products with the pairs, from the pairs' own
/// ([`DirectionProducts`]).
///
/// [`quasi_newton::inverse_coefficients`]: crate::solver::quasi_newton::inverse_coefficients
pub(super) fn unbounded_step<W>(
    workspace: &mut W,
    g: &W::Vector,
    memory: &Memory<W::Vector>,
    direction: &mut W::Vector,
    target: &mut W::Vector,
    trial: Trial<'_, W::Vector>,
) -> Result<Unbounded, EvalError>
where
    W: Workspace,
    W::Space: BoxSpace,
{
    let space = workspace.space_mut();
    let with_g = match memory.known_pairs_dot() {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(pairs_with(space, memory, g)?),
    };
    let step = memory.inverse_step(&with_g);
    let products = memory.direction_products(&step);
    let mut terms: Vec<(f64, &W::Vector)> = vec![(-step.gamma, g)];
    terms.extend((step.coefficients.iter().copied()).zip(memory.columns()));
    let columns: Vec<&W::Vector> = memory.columns().collect();
    let buffers = [&mut *direction, trial.point, trial.gradient];
    // As L-BFGS's: an evaluation that fails at `x + d` is left to the line search, which meets
    // it there where it evaluates there at all.
    if let Ok(Some(sweep)) = workspace.trial_sweep(&terms, trial.x, g, buffers, &columns) {
        return Ok(Unbounded {
            slope: sweep.slope0,
            products,
            swept: Some(sweep),
        });
    }
    let space = workspace.space_mut();
    let slope = space.combined_step(&terms, trial.x, g, direction, target)?;
    Ok(Unbounded {
        slope,
        products,
        swept: None,
    })
}

/// What [`unbounded_step`] made besides the direction.
pub(super) struct Unbounded {
    /// `gᵀd`.
    pub slope: f64,
    /// `d`'s products with the pairs, where they are known without a pass.
    pub products: Option<DirectionProducts>,
    /// What the trial sweep measured at `x + d`, where it evaluated that trial.
    pub swept: Option<TrialSweep>,
}

/// How [`subspace_step`] left its target.
pub(super) enum Target {
    /// Aimed at in the pass that wrote it: the line toward it is in `direction`, with its
    /// slope and room, [`BoxSpace::aim`]'s bits.
    Aimed(f64, f64),
    /// Written without the line ([`BoxSpace::aim`] is to make it): the Cauchy point, or a
    /// truncated step.
    Unaimed,
}

/// The subspace step from the Cauchy point `buffers.cauchy` (the direct primal method, with
/// version 3.0's projection), written to `target`: the model's minimizer over the variables
/// free at the Cauchy point, projected into the box, or truncated at the first bound where the
/// projection is not a descent direction. The projection's pass also aims at it (`direction`,
/// as [`BoxSpace::aim`]), which is final where it is a descent direction. `None` where the
/// [`correction`] cannot be formed.
#[allow(clippy::too_many_arguments)]
pub(super) fn subspace_step<S: BoxSpace>(
    space: &mut S,
    x: &S::Vector,
    g: &S::Vector,
    bounds: &BoxVectors<S::Vector>,
    compact: &Compact<'_, S::Vector>,
    buffers: &mut StepBuffers<S>,
    c: &[f64],
    target: &mut S::Vector,
    direction: &mut S::Vector,
) -> Result<Option<Target>, EvalError> {
    let (width, theta) = (compact.width(), compact.theta());
    let cauchy = made(&mut buffers.cauchy, || space.zeros())?;
    // The variables strictly inside their bounds at the Cauchy point, and how many.
    let is_free = made(&mut buffers.free, || space.new_mask())?;
    let free = space.free_variables(bounds, cauchy, is_free)?;
    if free == 0 {
        space.copy(cauchy, target)?;
        return Ok(Some(Target::Unaimed));
    }
    // The reduced gradient r = Zᵀ(u − W·M·c), u = g + θ(x_cp − x), is never formed: the
    // correction needs WᵀZ·r = WᵀZ·u − ZᵀW·WᵀZ·M·c, and the step is −r/θ − W·v. WᵀZ·u and
    // ZᵀW·WᵀZ are sums over the free rows: taken over them where they are at most half, else
    // as the sums over every row less those over the rows at a bound. Over every row they need
    // no pass: Wᵀu = Wᵀg + θ·c, and WᵀW comes from the pairs' products.
    let direct = 2 * free <= space.dim();
    let ones = vec![1.0; width];
    let columns: Vec<(f64, &S::Vector)> = compact.columns(&ones).collect();
    let u = [(1.0, g), (theta, &*cauchy), (-theta, x)];
    let (kept_gram, kept_u) = space.masked_gram(&columns, is_free, direct, &u)?;
    // The Gram matrices over the free rows and over the rows at a bound: one is the kept one,
    // the other the whole less it (the correction needs both).
    let gram = compact.gram();
    let rest: Vec<f64> = (gram.iter().zip(&kept_gram))
        .map(|(all, kept)| all - kept)
        .collect();
    let (wz_zw, bound_gram, wz_u) = if direct {
        (kept_gram, rest, kept_u)
    } else {
        let wg = compact.w_gradient(space, g)?;
        let wz_u = (wg.iter().zip(c).zip(&kept_u)).map(|((wg, c), kept)| wg + theta * c - kept);
        (rest, kept_gram, wz_u.collect())
    };
    let mc = compact.m_times(c);
    let wz_r: Vec<f64> = (0..width)
        .map(|a| wz_u[a] - vector::dot(&wz_zw[a * width..(a + 1) * width], &mc))
        .collect();
    let Some(v) = correction(compact, &wz_r, &wz_zw, &bound_gram) else {
        return Ok(None);
    };
    // The step over the free variables: −r/θ − W·v = −u/θ + W·(M·c/θ − v).
    let coefficients: Vec<f64> = mc.iter().zip(&v).map(|(mc, v)| mc / theta - v).collect();
    let mut terms: Vec<(f64, &S::Vector)> = vec![(-1.0 / theta, g), (-1.0, cauchy), (1.0, x)];
    terms.extend(compact.columns(&coefficients));
    // The step, its projection into the box from the Cauchy point, and the line toward the
    // projection (`aim`'s work: one pass less where the projection is kept), in one pass.
    let step = made(&mut buffers.step, || space.zeros())?;
    let (slope, room) = space.projected_step(
        &terms, bounds, is_free, cauchy, x, g, step, target, direction,
    )?;
    if slope <= 0.0 {
        return Ok(Some(Target::Aimed(slope, room)));
    }
    space.truncated_step(bounds, is_free, cauchy, step, target)?;
    Ok(Some(Target::Unaimed))
}
