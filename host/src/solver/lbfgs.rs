//! L-BFGS: the inverse Hessian from the last `m` curvature pairs (Nocedal & Wright,
//! Algorithm 7.5), with BFGS's line search and stopping rules. Memory is `2m + 5` vectors of
//! length `n`, allocated as the first `m` pairs arrive; after that an iteration allocates nothing.
//!
//! - `H₀ = γI` with `γ = sᵀy / yᵀy` of the newest pair (`γ = 1` before the first one; the line
//!   search's first-step scaling then sets the length of the first step).
//! - A pair with `sᵀy ≤ ε·yᵀy` (`ε` the machine epsilon) is skipped. A strong Wolfe step has
//!   `sᵀy ≥ (1 − c2)·|gᵀs| > 0`, so this only drops pairs whose curvature was lost to rounding:
//!   they would make `H` indefinite or `γ` meaningless.

use super::quasi_newton::{self, InverseHessian};
use super::two_loop::{CurvaturePair, two_loop};
use super::vector::{dot, map_in_place};
use super::{Iterate, OptimizeResult, Options, SolveError, check_start, invalid_option};
use crate::objective::Objective;
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
    let mut hessian = LimitedMemory::new(options.memory);
    quasi_newton::run(objective, x0, options, observer, &mut hessian)
}

/// The last `memory` pairs, oldest first, and `γ`.
struct LimitedMemory {
    memory: usize,
    pairs: VecDeque<CurvaturePair>,
    gamma: f64,
    alphas: Vec<f64>,
}

impl LimitedMemory {
    fn new(memory: usize) -> Self {
        // No `with_capacity(memory)`: `memory` may be huge; the deque grows to at most it.
        Self {
            memory,
            pairs: VecDeque::new(),
            gamma: 1.0,
            alphas: Vec::new(),
        }
    }

    /// Appends the pair `(s, y, ρ)`, reusing the oldest pair's storage once memory is full.
    fn store(&mut self, s: &[f64], y: &[f64], rho: f64) {
        let recycled = if self.pairs.len() < self.memory {
            None
        } else {
            self.pairs.pop_front()
        };
        let pair = match recycled {
            Some(mut oldest) => {
                oldest.s.copy_from_slice(s);
                oldest.y.copy_from_slice(y);
                oldest.rho = rho;
                oldest
            }
            None => CurvaturePair {
                s: s.to_vec(),
                y: y.to_vec(),
                rho,
            },
        };
        self.pairs.push_back(pair);
    }
}

impl InverseHessian for LimitedMemory {
    fn direction(&mut self, g: &[f64], p: &mut [f64]) {
        p.copy_from_slice(g);
        let gamma = self.gamma;
        two_loop(&self.pairs, p, &mut self.alphas, |v| {
            map_in_place(v, |v| gamma * v)
        });
        map_in_place(p, |v| -v);
    }

    fn update(&mut self, s: &[f64], y: &[f64]) {
        let (sy, yy) = (dot(s, y), dot(y, y));
        if sy.is_nan() || sy <= f64::EPSILON * yy {
            // Curvature lost to rounding (see the module docs): keep the pairs we have.
            return;
        }
        self.store(s, y, 1.0 / sy);
        self.gamma = sy / yy;
    }
}
