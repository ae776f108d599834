//! What a backend is asked to do: the contract between the CPU executor
//! ([`cpu`](super::cpu)), the GPU backend ([`gpu`](super::gpu)) and the layers above. Both
//! backends implement it. It names one type of the GPU's, the evaluator a solver keeps its
//! vectors beside ([`Evaluator::device`]).

use super::gpu::DeviceEvaluator;
use super::mpi::{Factor, Layout, Partials, Share};
use super::pass::{Evaluation, Pass};
use super::step_bounds::StepBounds;
use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::kernel::loss::RobustLoss;

/// A gradient of kind `gradient` checked against a more accurate one: `compute` is called with
/// the best reference a backend takes, and returns what it made of it (with the reference
/// used), or `None` for [`Gradient::Exact`], which needs no check.
///
/// The reference is the exact gradient; where the backend does not take it (see
/// [`BackendError::ExactUnsupported`]), the first other finite-difference scheme of the table.
/// Against central differences, a forward difference's error (O(h), h = √ε) is measured well;
/// a central difference checked against forward differences gets an upper bound, forward's own
/// error.
pub fn checked_against<T>(
    gradient: Gradient,
    mut compute: impl FnMut(Gradient) -> Result<T, BackendError>,
) -> Result<Option<(Gradient, T)>, BackendError> {
    if gradient == Gradient::Exact {
        return Ok(None);
    }
    match compute(Gradient::Exact) {
        Ok(made) => Ok(Some((Gradient::Exact, made))),
        Err(BackendError::ExactUnsupported(_)) => {
            let other = Gradient::ALL
                .into_iter()
                .find(|&kind| kind != Gradient::Exact && kind != gradient);
            match other {
                Some(reference) => Ok(Some((reference, compute(reference)?))),
                None => Ok(None),
            }
        }
        Err(e) => Err(e),
    }
}

/// A sum whose terms each read the variables of one piece of `x` alone, so that each piece's
/// part of `f` and `∇f` comes from that piece: a solver may evaluate a piece as soon as it has
/// written it, while the piece's vectors are still in cache (the trial sweep of L-BFGS and of
/// unbounded L-BFGS-B, `solver::trial_sweep`). Pieces are the evaluator's own chunks, so the pieces' results are
/// the bits of its [`value_and_gradient`](Evaluator::value_and_gradient).
pub trait PieceEvaluator: Sync {
    /// The variables of a piece; piece `i` starts at `i·piece_len()` (the last may be shorter).
    fn piece_len(&self) -> usize;
    /// The value of the terms of a piece, from its variables `x` alone, and their gradient
    /// into `g` (of `x`'s length).
    fn piece(&self, x: &[f64], g: &mut [f64]) -> Result<f64, BackendError>;
    /// `f`, from the pieces' values in piece order.
    fn total(&self, values: &[f64]) -> f64 {
        gpu_kernels::kernel::sum_in_order(values.iter().copied())
    }
}

/// The value and gradient (exact, or by finite differences) of one problem loaded on a backend. A backend's
/// implementation holds the problem's data (uploaded once, for the GPU).
///
/// A backend implements one pass, [`evaluate`](Evaluator::evaluate); the value, the gradient
/// and both at once are that pass, provided here once for every backend.
pub trait Evaluator: Send {
    /// The number of variables `n`.
    fn dim(&self) -> usize;

    /// One pass over the terms at `x`: writes what `evaluation` asks for and returns its value
    /// (`f(x)`, or `Σ r²` for the normal equations; 0 for a gradient taken without it).
    fn evaluate(&mut self, x: &[f64], evaluation: Evaluation<'_>) -> Result<f64, BackendError>;

    /// Keeps the finite-difference points of every later pass within `bounds`, until called
    /// again ([`StepBounds::default`] lifts the box). A box of another length is refused.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), BackendError>;

    /// `f(x)`, the sum of the terms.
    fn value(&mut self, x: &[f64]) -> Result<f64, BackendError> {
        self.evaluate(x, Evaluation::Value)
    }

    /// `∇f(x)`, computed per term as `gradient` says, written to `g`.
    fn gradient(
        &mut self,
        x: &[f64],
        gradient: Gradient,
        g: &mut [f64],
    ) -> Result<(), BackendError> {
        let evaluation = Evaluation::Gradient {
            gradient,
            g,
            value: false,
        };
        self.evaluate(x, evaluation).map(drop)
    }

    /// `f(x)`, and `∇f(x)` into `g`, in one pass over the terms: exact derivatives and forward
    /// differences evaluate every `φ_k(x)` anyway, and the data are read once instead of twice.
    fn value_and_gradient(
        &mut self,
        x: &[f64],
        gradient: Gradient,
        g: &mut [f64],
    ) -> Result<f64, BackendError> {
        let evaluation = Evaluation::Gradient {
            gradient,
            g,
            value: true,
        };
        self.evaluate(x, evaluation)
    }

    /// The problem on its device, when it is on one: a solver may then keep its vectors there
    /// too, and evaluate at them without copies. `None` on the CPU.
    fn device(&mut self) -> Option<&mut dyn DeviceEvaluator> {
        None
    }

    /// The problem as pieces of `x` evaluated one at a time ([`PieceEvaluator`]), with
    /// `gradient`, where its terms allow it; `None` (the default) otherwise.
    fn pieces(&self, gradient: Gradient) -> Option<&dyn PieceEvaluator> {
        let _ = gradient;
        None
    }

    /// `pass` over the `share` of the terms this evaluator holds, stopped before its chunks'
    /// results are combined: what the processes of a sharded evaluation exchange.
    /// [`Evaluation::finish`] completes it; concatenated in rank order first, the ranks'
    /// partials finish to the same bits as one process's pass whenever each rank's chunks are
    /// those of the one-process plan (the CPU's are: see `backend::cpu`).
    ///
    /// The default computes the whole pass and hands it on as one chunk: right for any backend,
    /// but then the sum over ranks of a row share depends on how many there are. Of a
    /// [`Share::Terms`] (every rank holds the whole problem) rank 0 evaluates the whole pass
    /// and the others add no chunks ([`Share::evaluates_whole`]): every rank ends with the
    /// one-process result, without a speed-up. The CPU's evaluators override it with real
    /// shares.
    fn partials(&mut self, x: &[f64], pass: Pass, share: Share) -> Result<Partials, BackendError> {
        let n = self.dim();
        if !share.evaluates_whole() {
            return Ok(Partials::none(match pass {
                Pass::Value | Pass::Cost { .. } => Layout::sums(0),
                Pass::Gradient { .. } => Layout::sums(n),
                Pass::Normal { .. } => Layout::sums(n * n + n),
                Pass::Factor { .. } => Layout::Triangles { n },
            }));
        }
        match pass {
            Pass::Value => Ok(Partials::one(
                self.evaluate(x, Evaluation::Value)?,
                Vec::new(),
                Layout::sums(0),
            )),
            Pass::Cost { loss } => Ok(Partials::one(
                self.evaluate(x, Evaluation::Cost { loss })?,
                Vec::new(),
                Layout::sums(0),
            )),
            Pass::Gradient { gradient, value } => {
                let mut g = vec![0.0; n];
                let evaluation = Evaluation::Gradient {
                    gradient,
                    g: &mut g,
                    value,
                };
                let f = self.evaluate(x, evaluation)?;
                Ok(Partials::one(f, g, Layout::sums(n)))
            }
            Pass::Normal { jacobian } => Partials::whole_normal(n, share, |jtj, jtr| {
                self.evaluate(x, Evaluation::Normal { jacobian, jtj, jtr })
            }),
            Pass::Factor { jacobian, loss } => {
                let mut factor = Factor::new(n);
                let evaluation = Evaluation::Factor {
                    jacobian,
                    loss,
                    factor: &mut factor,
                };
                let f = self.evaluate(x, evaluation)?;
                Ok(Partials::one(f, factor.pack(), Layout::Triangles { n }))
            }
        }
    }
}

/// A sum of squares `f(x) = Σ_k r_k(x)²` seen through its residuals: an evaluator that also
/// makes [`Evaluation::Normal`] passes.
pub trait LeastSquaresEvaluator: Evaluator {
    /// The number of residuals `m`.
    fn residuals(&self) -> usize;

    /// One pass over the residuals: returns `Σ r_k²`, and writes `Jᵀr` into `jtr` (`n`) and
    /// `JᵀJ` into `jtj` (see [`Evaluation::Normal`]).
    fn normal_equations(
        &mut self,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError> {
        self.evaluate(x, Evaluation::Normal { jacobian, jtj, jtr })
    }
    /// One pass over the residuals: returns `Σ C²ρ(r_k²/C²)` (`Σ r_k²` for the linear loss),
    /// and writes `R` and `Qᵀr` of the rows rescaled for `loss` into `factor` (see
    /// [`Evaluation::Factor`]).
    fn factor(
        &mut self,
        x: &[f64],
        jacobian: Gradient,
        loss: RobustLoss,
        factor: &mut Factor,
    ) -> Result<f64, BackendError> {
        let evaluation = Evaluation::Factor {
            jacobian,
            loss,
            factor,
        };
        self.evaluate(x, evaluation)
    }

    /// Whether a solver that steps on the factor should take a trial point's sum of squares
    /// from a factor pass rather than the value pass: where a pass's fixed cost, a launch and
    /// a wait for its result, outweighs the factor's extra work, as on a GPU for small fits.
    /// An accepted trial then needs no second pass for its factor. The default: no.
    fn factors_trials(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference each gradient is checked against, on a backend that takes exact gradients
    /// and on one that does not.
    #[test]
    fn finite_differences_are_checked_against_the_best_reference_taken() {
        let takes_exact = |kind: Gradient| Ok(kind);
        let refuses_exact = |kind: Gradient| match kind {
            Gradient::Exact => Err(BackendError::ExactUnsupported("too wide")),
            other => Ok(other),
        };
        for scheme in [Gradient::Forward, Gradient::Central] {
            let (reference, used) = checked_against(scheme, takes_exact).unwrap().unwrap();
            assert_eq!((reference, used), (Gradient::Exact, Gradient::Exact));
        }
        let check = |scheme| checked_against(scheme, refuses_exact).unwrap().unwrap().0;
        assert_eq!(check(Gradient::Forward), Gradient::Central);
        assert_eq!(check(Gradient::Central), Gradient::Forward);
        assert_eq!(checked_against(Gradient::Exact, takes_exact).unwrap(), None);
        // Other failures are failures, not a reason to try another reference.
        let fails = |_: Gradient| -> Result<(), _> { Err(BackendError::CudaNotCompiled) };
        assert_eq!(
            checked_against(Gradient::Forward, fails),
            Err(BackendError::CudaNotCompiled)
        );
    }
}
