//! One pass over the terms: what it computes and where it writes ([`Evaluation`]), and the
//! same question without its outputs ([`Pass`]), as the ranks of a sharded evaluation ask it.

use super::mpi::{Factor, Partials};
use crate::error::BackendError;
use gpu_kernels::kernel::loss::RobustLoss;
use gpu_kernels::{Gradient, StepBox};

/// Why a pass over the normal equations was refused by an evaluator of a plain sum of terms.
const NOT_A_SUM_OF_SQUARES: &str = "the normal equations need a sum of squares (a residual term)";

/// What one pass over the terms computes, and where it writes: [`Evaluator::evaluate`](super::Evaluator::evaluate)'s
/// question.
#[derive(Debug)]
pub enum Evaluation<'a> {
    /// `f(x)`.
    Value,
    /// `∇f(x)` into `g`, as `gradient` says; with `value`, also `f(x)` from the same pass.
    Gradient {
        /// Exact or by finite differences.
        gradient: Gradient,
        /// The gradient's `n` entries.
        g: &'a mut [f64],
        /// Whether the pass also sums the terms' values.
        value: bool,
    },
    /// A sum of squares' `Σ r²`, with `JᵀJ` (`n × n`, row-major, symmetric) into `jtj` and
    /// `Jᵀr` into `jtr`, where row `k` of `J` is `∇r_k`, exact or by finite differences as
    /// `jacobian` says. `J` is never stored.
    Normal {
        /// How the rows of `J` are computed.
        jacobian: Gradient,
        /// `JᵀJ`.
        jtj: &'a mut [f64],
        /// `Jᵀr`.
        jtr: &'a mut [f64],
    },
    /// A sum of squares' `Σ r²`, with its residual rows reduced to `R` and `Qᵀr` ([`Factor`],
    /// sized for `n` variables), rows exact or by finite differences as `jacobian` says, each
    /// rescaled for `loss` (then the value is `Σ C²ρ(r²/C²)`). Neither `J` nor `JᵀJ` is formed
    /// (unless the backend has only the normal equations, as the factor then says).
    Factor {
        /// How the rows of `J` are computed.
        jacobian: Gradient,
        /// The robust loss (scipy's `loss`, `f_scale`).
        loss: RobustLoss,
        /// `R` and `Qᵀr`.
        factor: &'a mut Factor,
    },
    /// A sum of squares under a robust loss: `Σ C²ρ(r_k²/C²)` (`Σ r²` for the linear loss).
    Cost {
        /// The loss.
        loss: RobustLoss,
    },
}

impl Evaluation<'_> {
    /// The pass this evaluation makes, without its outputs.
    pub fn pass(&self) -> Pass {
        match *self {
            Evaluation::Value => Pass::Value,
            Evaluation::Gradient {
                gradient, value, ..
            } => Pass::Gradient { gradient, value },
            Evaluation::Normal { jacobian, .. } => Pass::Normal { jacobian },
            Evaluation::Factor { jacobian, loss, .. } => Pass::Factor { jacobian, loss },
            Evaluation::Cost { loss } => Pass::Cost { loss },
        }
    }

    /// This evaluation's outputs from the partials of its [`pass`](Self::pass) at `x`, its
    /// differences taken within `bounds`, and its value.
    pub fn finish(
        self,
        x: &[f64],
        bounds: StepBox<'_>,
        partials: &Partials,
    ) -> Result<f64, BackendError> {
        match self {
            Evaluation::Value | Evaluation::Cost { .. } => Ok(partials.value()),
            Evaluation::Gradient { g, .. } => partials.gradient_into(x, bounds, g),
            Evaluation::Normal { jtj, jtr, .. } => partials.normal_into(jtj, jtr),
            Evaluation::Factor { factor, .. } => partials.factor_into(factor),
        }
    }

    /// The refusal of a normal-equations pass by an evaluator of a plain sum of terms.
    pub(crate) fn not_a_sum_of_squares() -> BackendError {
        BackendError::Unsupported(NOT_A_SUM_OF_SQUARES)
    }
}

/// One pass over the terms, as [`Evaluator::partials`](super::Evaluator::partials) is asked for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pass {
    /// `f(x)`.
    Value,
    /// `∇f(x)` as `gradient` says; with `value`, also `f(x)` from the same pass.
    Gradient {
        /// Exact or by finite differences.
        gradient: Gradient,
        /// Whether the pass also sums the terms' values.
        value: bool,
    },
    /// A sum of squares' `Σ r²`, `JᵀJ` and `Jᵀr` (see
    /// [`LeastSquaresEvaluator::normal_equations`](super::LeastSquaresEvaluator::normal_equations)).
    Normal {
        /// How the rows of `J` are computed.
        jacobian: Gradient,
    },
    /// A sum of squares' `Σ r²` and the [`Factor`] of its residual rows, rescaled for `loss`.
    /// Where a backend has no pass of its own for it, its normal equations' partials, which
    /// finish to a factor by Cholesky ([`Partials::factor_into`]); a robust loss is refused
    /// there.
    Factor {
        /// How the rows of `J` are computed.
        jacobian: Gradient,
        /// The robust loss.
        loss: RobustLoss,
    },
    /// `Σ C²ρ(r²/C²)` (see [`Evaluation::Cost`]): the value pass for the linear loss.
    Cost {
        /// The loss.
        loss: RobustLoss,
    },
}
