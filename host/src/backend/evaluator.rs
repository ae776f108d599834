//! What a backend is asked to do, and how it answers: the contract between the CPU executor
//! ([`cpu`](super::cpu)), the GPU backend ([`gpu`](super::gpu)) and the layers above. Both
//! backends import it; it names one type of the GPU's, the evaluator a solver keeps its
//! vectors beside ([`Evaluator::device`]).

pub(crate) use super::mpi::add_in_order;
pub use super::mpi::{Factor, Layout, Partials, Share};
use gpu_kernels::raw::Arg;

/// Grid and block of one launch (one-dimensional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per grid.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
}

/// Launch sizes the user imposes on the term kernels instead of the occupancy API's choice.
/// The one-block kernel that sums partials keeps its single block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchOverride {
    /// Threads per block, 1 to 1024 (CUDA's limit; a kernel using many registers allows fewer,
    /// which the launcher checks per kernel). Whole warps (multiples of 32) waste no lanes.
    pub threads: Option<u32>,
    /// Blocks per grid, at least 1 (the kernels loop grid-stride over any amount of work).
    pub blocks: Option<u32>,
}

impl LaunchOverride {
    /// Refuses sizes no kernel can launch with: threads outside 1 to 1024, or 0 blocks.
    /// Whether a given kernel's registers allow the threads is checked at its launch.
    pub fn check(&self) -> Result<(), BackendError> {
        let invalid = |why: String| Err(BackendError::InvalidLaunch(why));
        if let Some(t) = self.threads
            && !(1..=1024).contains(&t)
        {
            return invalid(format!("{t} threads per block; need 1 to 1024"));
        }
        if self.blocks == Some(0) {
            return invalid("0 blocks; need at least 1".to_owned());
        }
        Ok(())
    }
}

pub use gpu_kernels::Gradient;
use gpu_kernels::StepBox;
pub use gpu_kernels::kernel::loss::{Loss, RobustLoss};

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

/// Why a backend is unavailable or failed. Every message names the cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BackendError {
    /// The cuda backend was asked for in a build without the `cuda` feature.
    #[error("the cuda backend is not compiled in: rebuild with `--features cuda`")]
    CudaNotCompiled,
    /// The cuda backend was asked for, but the build embedded no PTX; with the build's reason.
    #[error("GPU kernels not built: {0}")]
    PtxMissing(String),
    /// The driver found no usable device (or no driver); with its reason.
    #[error("no CUDA device: {0}")]
    NoDevice(String),
    /// Loading the PTX module failed; with the driver's error and its JIT log.
    #[error("the CUDA driver rejected the embedded PTX: {0}")]
    PtxRejected(String),
    /// A kernel the launcher needs, named here, is not in the loaded module.
    #[error("kernel `{0}` is not in the embedded PTX")]
    KernelMissing(String),
    /// A device allocation failed for lack of memory.
    #[error("out of device memory allocating {what} ({bytes} bytes)")]
    OutOfMemory {
        /// The buffer being allocated.
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
    },
    /// A kernel launch failed, or a kernel faulted (reported at the next synchronization).
    #[error("launch of `{kernel}` failed: {detail}")]
    Launch {
        /// The kernel launched, or the work after which the stream was synchronized (e.g.
        /// "the gradient kernels").
        kernel: String,
        /// The driver's error.
        detail: String,
    },
    /// Any other driver call failed.
    #[error("CUDA call `{call}` failed: {detail}")]
    Driver {
        /// The driver API call, e.g. `cuStreamCreate`.
        call: &'static str,
        /// The driver's error.
        detail: String,
    },
    /// A kernel was refused before launch: raw-kernel arguments or sizes that do not fit it, a
    /// block kernel on the CPU, a device vector of the wrong length.
    #[error("kernel `{kernel}` {reason}")]
    Kernel {
        /// The kernel, or the operation that was refused.
        kernel: String,
        /// Why, as a predicate completing "kernel `…`".
        reason: String,
    },
    /// A term's own code panicked during a CPU pass (a bug in its source, say an index past an
    /// array of its own; on the GPU the same bug is a kernel fault, a [`Launch`](Self::Launch)
    /// error); with the panic's message.
    #[error("a term panicked: {0}")]
    TermPanicked(String),
    /// A [`LaunchOverride`] no kernel, or not this kernel, can launch with.
    #[error("invalid launch configuration: {0}")]
    InvalidLaunch(String),
    /// An exact gradient was asked of a term whose window the exact kernels do not take; the
    /// reason names the way out. [`checked_against`] then checks against another
    /// finite-difference scheme.
    #[error("{0}")]
    ExactUnsupported(&'static str),
    /// A pass this evaluator cannot make, with the reason: term-range shares off the CPU, or
    /// the normal equations of an objective that is not a sum of squares.
    #[error("{0}")]
    Unsupported(&'static str),
    /// A finite-difference box ([`StepBounds`]) whose length is not the problem's.
    #[error("a box of {got} bounds for {n} variables")]
    BoxLength {
        /// The box's length.
        got: usize,
        /// The number of variables.
        n: usize,
    },
    /// Another process of a sharded evaluation failed: its rank and its error. Every rank
    /// returns the same error, so that all of them stop together.
    #[error("rank {rank}: {message}")]
    Rank {
        /// The rank that failed first (the lowest, when several did).
        rank: usize,
        /// Its error, as it would have printed it.
        message: String,
    },
}

impl BackendError {
    /// Whether this is a pass declined before anything ran (one the evaluator does not make,
    /// by design or for its sizes), which a caller may do without, not a failure.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::Kernel { .. }
                | Self::InvalidLaunch(_)
                | Self::ExactUnsupported(_)
                | Self::Unsupported(_)
        )
    }
}

/// Why a pass over the normal equations was refused by an evaluator of a plain sum of terms.
const NOT_A_SUM_OF_SQUARES: &str = "the normal equations need a sum of squares (a residual term)";

/// The box every finite-difference point stays in (what scipy's `approx_derivative` takes as
/// `bounds`): each variable's `[lower, upper]`, or none (the default). Near a bound a step
/// turns inward or a central stencil becomes one-sided (`gpu_kernels::fd`); exact derivatives
/// take no points and are unaffected.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepBounds {
    lower: Vec<f64>,
    upper: Vec<f64>,
}

impl StepBounds {
    /// The box `[lower[i], upper[i]]` (`±∞` for an open side).
    pub fn new(lower: &[f64], upper: &[f64]) -> Self {
        Self {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
        }
    }

    /// Whether there is no box.
    pub fn is_open(&self) -> bool {
        self.lower.is_empty()
    }

    /// The lower ends (empty without a box).
    pub fn lower(&self) -> &[f64] {
        &self.lower
    }

    /// The upper ends (empty without a box).
    pub fn upper(&self) -> &[f64] {
        &self.upper
    }

    /// As the kernels take it (empty sides: `StepBox::OPEN`).
    pub fn view(&self) -> StepBox<'_> {
        StepBox::new(&self.lower, &self.upper)
    }

    /// `self`, refused unless it is open or bounds `n` variables.
    pub fn checked(&self, n: usize) -> Result<&Self, BackendError> {
        let got = self.lower.len();
        if self.is_open() || (got == n && self.upper.len() == n) {
            Ok(self)
        } else {
            Err(BackendError::BoxLength { got, n })
        }
    }
}

/// A sum whose terms each read the variables of one piece of `x` alone, so that each piece's
/// part of `f` and `∇f` comes from that piece: a solver may evaluate a piece as soon as it has
/// written it, while the piece's vectors are still in cache (the trial sweep of L-BFGS and of
/// unbounded L-BFGS-B, `objective::trial_sweep`). Pieces are the evaluator's own chunks, so the pieces' results are
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
    fn device(&mut self) -> Option<&mut dyn super::gpu::DeviceEvaluator> {
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

/// What one pass over the terms computes, and where it writes: [`Evaluator::evaluate`]'s
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

/// One pass over the terms, as [`Evaluator::partials`] is asked for it.
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
    /// [`LeastSquaresEvaluator::normal_equations`]).
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

/// A backend's pass over the residuals of the sum of squares that its evaluator `E` evaluates:
/// what [`WithResiduals`] adds to `E`.
pub trait NormalPass<E>: Send {
    /// The number of residuals `m`.
    fn residuals(&self, sum: &E) -> usize;
    /// An [`Evaluation::Normal`] pass, through `sum`'s loaded problem.
    fn normal_equations(
        &mut self,
        sum: &mut E,
        x: &[f64],
        jacobian: Gradient,
        jtj: &mut [f64],
        jtr: &mut [f64],
    ) -> Result<f64, BackendError>;

    /// As [`Evaluator::partials`] for [`Pass::Normal`]. The default makes the whole pass one
    /// chunk, on rank 0 alone of a term-range share.
    fn normal_partials(
        &mut self,
        sum: &mut E,
        x: &[f64],
        jacobian: Gradient,
        share: Share,
    ) -> Result<Partials, BackendError> {
        Partials::whole_normal(x.len(), share, |jtj, jtr| {
            self.normal_equations(sum, x, jacobian, jtj, jtr)
        })
    }
    /// As [`Evaluator::partials`] for [`Pass::Factor`]: the residual rows, rescaled for
    /// `loss`, folded into triangles (`Layout::Triangles`).
    fn factor_partials(
        &mut self,
        sum: &mut E,
        x: &[f64],
        jacobian: Gradient,
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError>;
    /// As [`Evaluator::partials`] for [`Pass::Cost`]: the points' costs `C²ρ(r²/C²)`.
    fn cost_partials(
        &mut self,
        sum: &mut E,
        x: &[f64],
        loss: RobustLoss,
        share: Share,
    ) -> Result<Partials, BackendError>;
}

/// A sum of squares loaded on a backend: its evaluator `sum` answers for the objective, `pass`
/// for the residuals' normal equations. Both backends load least squares as this.
pub struct WithResiduals<E, P> {
    /// First, so that it is dropped first: a pass may hold buffers in `sum`'s GPU context.
    pub pass: P,
    /// The evaluator of the sum of squares itself.
    pub sum: E,
}

impl<E: Evaluator, P: NormalPass<E> + 'static> Evaluator for WithResiduals<E, P> {
    fn dim(&self) -> usize {
        self.sum.dim()
    }

    /// The sum's evaluator keeps the box; the residual passes read it there.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), BackendError> {
        self.sum.confine_steps(bounds)
    }

    fn evaluate(&mut self, x: &[f64], evaluation: Evaluation<'_>) -> Result<f64, BackendError> {
        match evaluation {
            Evaluation::Normal { jacobian, jtj, jtr } => {
                self.pass
                    .normal_equations(&mut self.sum, x, jacobian, jtj, jtr)
            }
            Evaluation::Factor {
                jacobian,
                loss,
                factor,
            } => self
                .pass
                .factor_partials(&mut self.sum, x, jacobian, loss, Share::Whole)?
                .factor_into(factor),
            Evaluation::Cost { loss } => Ok(self
                .pass
                .cost_partials(&mut self.sum, x, loss, Share::Whole)?
                .value()),
            other => self.sum.evaluate(x, other),
        }
    }

    fn partials(&mut self, x: &[f64], pass: Pass, share: Share) -> Result<Partials, BackendError> {
        match pass {
            Pass::Normal { jacobian } => {
                self.pass.normal_partials(&mut self.sum, x, jacobian, share)
            }
            Pass::Factor { jacobian, loss } => {
                self.pass
                    .factor_partials(&mut self.sum, x, jacobian, loss, share)
            }
            Pass::Cost { loss } => self.pass.cost_partials(&mut self.sum, x, loss, share),
            other => self.sum.partials(x, other, share),
        }
    }
}

impl<E: Evaluator, P: NormalPass<E> + 'static> LeastSquaresEvaluator for WithResiduals<E, P> {
    fn residuals(&self) -> usize {
        self.pass.residuals(&self.sum)
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
}

/// An argument of a raw kernel launch (see `gpu_kernels::raw`): an input slice (`In`), an
/// output buffer whose contents go to the kernel and come back (`Out`), or a scalar.
pub type RawArg<'a> = Arg<&'a [f64], &'a mut [f64], f64, u64>;

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
