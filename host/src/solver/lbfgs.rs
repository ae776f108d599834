//! L-BFGS: the inverse Hessian from the last `m` curvature pairs (Nocedal & Wright,
//! Algorithm 7.5), with BFGS's line search and stopping rules. Memory is `2m + 5` vectors of
//! length `n`, allocated as the first `m` pairs arrive; after that an iteration allocates nothing.
//! The vectors live where the objective computes: on the GPU for a term problem loaded there,
//! so that an iteration moves only scalars between host and device.
//!
//! - `H₀ = γI` with `γ = sᵀy / yᵀy` of the newest pair (`γ = 1` before the first one; the line
//!   search's first-step scaling then sets the length of the first step).
//! - A pair with `sᵀy ≤ ε·yᵀy` (`ε` the machine epsilon) is skipped. A strong Wolfe step has
//!   `sᵀy ≥ (1 − c2)·|gᵀs| > 0`, so this only drops pairs whose curvature was lost to rounding:
//!   they would make `H` indefinite or `γ` meaningless.

use super::options::{Options, check_start, invalid_option};
use super::quasi_newton::{self, InverseHessian};
use super::result::{Iterate, OptimizeResult, SolveError};
use super::two_loop::{CurvaturePair, two_loop};
use super::workspace::{HostWorkspace, Workspace};
use crate::objective::{EvalError, Objective};
use std::collections::VecDeque;
use std::ops::ControlFlow;

/// Minimizes `objective` from `x0` by L-BFGS with `options.memory` pairs. See
/// [`super::minimize`].
pub fn minimize(
    objective: &mut dyn Objective,
    x0: &[f64],
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    check_start(objective, x0, options)?;
    if options.memory == 0 {
        return Err(invalid_option("memory", 0, "must be at least 1"));
    }
    #[cfg(feature = "cuda")]
    if x0.len() >= super::workspace::DEVICE_MIN_LEN
        && let Some((evaluator, fd)) = objective.cuda()
    {
        let n = x0.len();
        let mut workspace = super::workspace::DeviceWorkspace::new(evaluator, fd, n)?;
        let mut hessian = LimitedMemory::new(options.memory);
        return quasi_newton::run(&mut workspace, x0, options, observer, &mut hessian);
    }
    let mut hessian = LimitedMemory::new(options.memory);
    quasi_newton::run(
        &mut HostWorkspace::new(objective),
        x0,
        options,
        observer,
        &mut hessian,
    )
}

/// The last `memory` pairs, oldest first, and `γ`.
struct LimitedMemory<V> {
    memory: usize,
    pairs: VecDeque<CurvaturePair<V>>,
    gamma: f64,
    alphas: Vec<f64>,
}

impl<V> LimitedMemory<V> {
    fn new(memory: usize) -> Self {
        // No `with_capacity(memory)`: `memory` may be huge; the deque grows to at most it.
        Self {
            memory,
            pairs: VecDeque::new(),
            gamma: 1.0,
            alphas: Vec::new(),
        }
    }

    /// Appends the pair `(s, y, ρ)`, taking `s` and `y` themselves and giving back the oldest
    /// pair's buffers once memory is full (new zeros before).
    fn store<W: Workspace<Vector = V>>(
        &mut self,
        workspace: &mut W,
        s: &mut V,
        y: &mut V,
        rho: f64,
    ) -> Result<(), EvalError> {
        let recycled = if self.pairs.len() < self.memory {
            None
        } else {
            self.pairs.pop_front()
        };
        let mut pair = match recycled {
            Some(oldest) => oldest,
            None => CurvaturePair {
                s: workspace.zeros()?,
                y: workspace.zeros()?,
                rho,
            },
        };
        std::mem::swap(s, &mut pair.s);
        std::mem::swap(y, &mut pair.y);
        pair.rho = rho;
        self.pairs.push_back(pair);
        Ok(())
    }
}

impl<W: Workspace> InverseHessian<W> for LimitedMemory<W::Vector> {
    fn direction(
        &mut self,
        workspace: &mut W,
        g: &W::Vector,
        p: &mut W::Vector,
    ) -> Result<(), EvalError> {
        workspace.copy(g, p)?;
        let gamma = self.gamma;
        two_loop(workspace, &self.pairs, p, &mut self.alphas, |w, v| {
            w.scale(gamma, v)
        })?;
        workspace.scale(-1.0, p)
    }

    fn update(
        &mut self,
        workspace: &mut W,
        s: &mut W::Vector,
        y: &mut W::Vector,
        sy: f64,
        yy: f64,
    ) -> Result<(), EvalError> {
        if sy.is_nan() || sy <= f64::EPSILON * yy {
            // Curvature lost to rounding (see the module docs): keep the pairs we have.
            return Ok(());
        }
        self.store(workspace, s, y, 1.0 / sy)?;
        self.gamma = sy / yy;
        Ok(())
    }
}
