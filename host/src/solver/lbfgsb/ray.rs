//! L-BFGS-B's line: the ray from the iterate toward the step's target, within the box.

use super::Solver;
use crate::objective::EvalError;
use crate::solver::line_search::{Line, PreEvaluated};
use crate::solver::workspace::Workspace;
use crate::space::{BoxSpace, VectorSpace};

/// The line `x + α·d` within the box: at `α = 1` exactly the target `x̄` where one was
/// written, and every point clipped into the box (rounding would otherwise put a point on a
/// bound a hair outside).
pub(super) struct BoxRay<'r, 's, W: Workspace> {
    pub(super) solver: &'r mut Solver<'s, W>,
    pub(super) origin: &'r W::Vector,
    pub(super) direction: &'r W::Vector,
    /// `x̄`; `None` after the unbounded step's trial sweep, whose line has no box: there
    /// `x + 1·d` is `x̄`'s bits.
    pub(super) target: Option<&'r W::Vector>,
    pub(super) point: &'r mut W::Vector,
    pub(super) gradient: &'r mut W::Vector,
    /// The trial `point` and `gradient` hold from before the search (the trial sweep's).
    pub(super) pre_evaluated: PreEvaluated,
}

impl<W> BoxRay<'_, '_, W>
where
    W: Workspace,
    W::Space: BoxSpace,
{
    fn move_to(&mut self, step: f64) -> Result<(), EvalError> {
        let Solver {
            workspace, box_, ..
        } = &mut *self.solver;
        let space = workspace.space_mut();
        let (origin, direction) = (self.origin, self.direction);
        if step == 1.0
            && let Some(target) = self.target
        {
            return space.copy(target, self.point);
        }
        match box_ {
            // Nothing to clip to: the box's two vectors need no reading.
            None => space.ray_point(origin, step, direction, self.point),
            Some(box_) => space.clipped_ray_point(box_, origin, step, direction, self.point),
        }
    }
}

impl<W> Line for BoxRay<'_, '_, W>
where
    W: Workspace,
    W::Space: BoxSpace,
{
    fn value(&mut self, step: f64) -> Result<f64, EvalError> {
        self.pre_evaluated.release();
        self.move_to(step)?;
        self.solver.nfev += 1;
        self.solver.workspace.value(self.point)
    }

    fn slope(&mut self) -> Result<f64, EvalError> {
        self.solver.njev += 1;
        let workspace = &mut *self.solver.workspace;
        workspace.gradient(self.point, self.gradient)?;
        workspace.space_mut().dot(self.gradient, self.direction)
    }

    fn value_and_slope(&mut self, step: f64) -> Result<(f64, f64), EvalError> {
        if let Some(known) = self.pre_evaluated.take(step) {
            self.solver.nfev += 1;
            self.solver.njev += 1;
            return Ok(known);
        }
        self.move_to(step)?;
        self.solver.nfev += 1;
        self.solver.njev += 1;
        (self.solver.workspace).value_and_slope(self.point, self.gradient, self.direction)
    }
}
