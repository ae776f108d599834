//! An objective whose problem lives in device memory, seen by a solver that keeps its vectors
//! there too: evaluations at vectors that never leave the device.

use super::EvalError;
use super::box_space::{BoxSpace, BoxVectors, Breakpoint, PairSums};
use super::space::{
    HostVectors, StepEnd, VectorSpace, combine_term_by_term, finish_step_pass_by_pass,
};
use crate::backend::Gradient;
use crate::backend::gpu::DeviceEvaluator;
use crate::linalg::vector;
use gpu_kernels::bounds::is_breakpoint;
use std::borrow::Cow;

pub use crate::backend::checked_against;
pub(super) use crate::backend::gpu::DeviceHeld;
use crate::backend::gpu::{DeviceBox, HeldOnDevice};
pub use crate::backend::gpu::{DeviceVector, DeviceVectors};

/// A term objective's GPU evaluator, or the view of it through the free variables of a solve
/// that holds some fixed, with its gradient scheme (see [`Objective::device`]).
///
/// [`Objective::device`]: super::Objective::device
pub struct OnDevice<'a> {
    evaluator: Evaluating<'a>,
    gradient: Gradient,
}

/// What evaluates: a term objective's evaluator, or one seen through held variables.
enum Evaluating<'a> {
    Lent(&'a mut dyn DeviceEvaluator),
    Held(HeldOnDevice<'a>),
}

impl<'a> OnDevice<'a> {
    pub(super) fn new(evaluator: &'a mut dyn DeviceEvaluator, gradient: Gradient) -> Self {
        Self {
            evaluator: Evaluating::Lent(evaluator),
            gradient,
        }
    }

    fn evaluator(&mut self) -> &mut dyn DeviceEvaluator {
        match &mut self.evaluator {
            Evaluating::Lent(evaluator) => &mut **evaluator,
            Evaluating::Held(held) => held,
        }
    }

    /// This evaluator seen through the free variables `free` of the whole point `whole`, with
    /// what the device keeps for that in `kept`: made at the first call, `Some(None)` where the
    /// device could not (not tried again). `None` for an evaluator seen so already (a solve
    /// holds variables once) and where the device cannot keep them.
    pub(super) fn through_free(
        self,
        kept: &'a mut Option<Option<DeviceHeld>>,
        whole: &[f64],
        free: &[usize],
    ) -> Option<OnDevice<'a>> {
        let Evaluating::Lent(evaluator) = self.evaluator else {
            return None;
        };
        let held = kept
            .get_or_insert_with(|| DeviceHeld::new(&mut *evaluator, whole, free).ok())
            .as_mut()?;
        Some(OnDevice {
            evaluator: Evaluating::Held(HeldOnDevice::new(evaluator, held)),
            gradient: self.gradient,
        })
    }

    /// The vector arithmetic on the same device, in order with the evaluations.
    pub fn vectors(&mut self) -> Result<DeviceVectors, EvalError> {
        Ok(self.evaluator().vectors()?)
    }

    /// How the gradient is computed.
    pub fn gradient_kind(&self) -> Gradient {
        self.gradient
    }

    /// `f(x)`.
    pub fn value(&mut self, x: &DeviceVector) -> Result<f64, EvalError> {
        Ok(self.evaluator().value_on_device(x)?)
    }

    /// `∇f(x)` into `g`, computed as `kind` says.
    pub fn gradient_as(
        &mut self,
        kind: Gradient,
        x: &DeviceVector,
        g: &mut DeviceVector,
    ) -> Result<(), crate::backend::BackendError> {
        self.evaluator().gradient_on_device(x, kind, g)
    }

    /// `∇f(x)` into `g`.
    pub fn gradient(&mut self, x: &DeviceVector, g: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(self.gradient_as(self.gradient, x, g)?)
    }

    /// `f(x)`, and `∇f(x)` into `g`, in one pass.
    pub fn value_and_gradient(
        &mut self,
        x: &DeviceVector,
        g: &mut DeviceVector,
    ) -> Result<f64, EvalError> {
        let gradient = self.gradient;
        Ok(self
            .evaluator()
            .value_and_gradient_on_device(x, gradient, g)?)
    }
}

/// The inherent operations answer [`BackendError`](crate::backend::BackendError)s; the space's,
/// the solver's [`EvalError`]s.
impl VectorSpace for DeviceVectors {
    type Vector = DeviceVector;

    fn dim(&self) -> usize {
        DeviceVectors::dim(self)
    }

    fn zeros(&mut self) -> Result<DeviceVector, EvalError> {
        Ok(DeviceVectors::zeros(self)?)
    }

    fn upload(&mut self, x: &[f64]) -> Result<DeviceVector, EvalError> {
        Ok(DeviceVectors::upload(self, x)?)
    }

    fn download<'v>(&'v self, v: &'v DeviceVector) -> Result<Cow<'v, [f64]>, EvalError> {
        Ok(Cow::Owned(DeviceVectors::download(self, v)?))
    }

    fn host_vector(&mut self, v: DeviceVector) -> Result<Vec<f64>, EvalError> {
        Ok(VectorSpace::download(self, &v)?.into_owned())
    }

    fn dot(&mut self, a: &DeviceVector, b: &DeviceVector) -> Result<f64, EvalError> {
        Ok(DeviceVectors::dot(self, a, b)?)
    }

    /// One pass for the usual norms (∞ and 2); the others pass by pass.
    fn finish_step(
        &mut self,
        step: f64,
        p: &mut DeviceVector,
        g_new: &DeviceVector,
        g: &mut DeviceVector,
        ord: f64,
    ) -> Result<StepEnd, EvalError> {
        if ord != f64::INFINITY && ord != 2.0 {
            return finish_step_pass_by_pass(self, step, p, g_new, g, ord);
        }
        let [sy, yy, gg, ss, max_abs] = DeviceVectors::step_end(self, step, p, g_new, g)?;
        Ok(StepEnd {
            gradient_norm: if ord == 2.0 { gg.sqrt() } else { max_abs },
            step_norm: ss.sqrt(),
            sy,
            yy,
        })
    }

    fn dots(
        &mut self,
        vectors: &[&DeviceVector],
        with: &[&DeviceVector],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        let mut column = vec![0.0; vectors.len()];
        for (j, w) in with.iter().enumerate() {
            DeviceVectors::dots(self, vectors, w, &mut column)?;
            for (i, &product) in column.iter().enumerate() {
                out[i * with.len() + j] = product;
            }
        }
        Ok(())
    }

    fn combine_dot(
        &mut self,
        terms: &[(f64, &DeviceVector)],
        out: &mut DeviceVector,
        z: &DeviceVector,
    ) -> Result<f64, EvalError> {
        if terms.is_empty() {
            combine_term_by_term(self, terms, out)?;
            return VectorSpace::dot(self, z, out);
        }
        Ok(DeviceVectors::combine_dot(self, terms, out, z)?)
    }

    fn norm(&mut self, v: &DeviceVector, ord: f64) -> Result<f64, EvalError> {
        if ord == f64::INFINITY {
            Ok(DeviceVectors::max_abs(self, v)?)
        } else if ord == 2.0 {
            Ok(DeviceVectors::dot(self, v, v)?.sqrt())
        } else {
            // Other norms are rare options: computed on the host, as scipy does.
            Ok(vector::norm(&VectorSpace::download(self, v)?, ord))
        }
    }

    fn axpy(
        &mut self,
        alpha: f64,
        x: &DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        Ok(DeviceVectors::axpy(self, alpha, x, y)?)
    }

    fn scale(&mut self, alpha: f64, v: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(DeviceVectors::scale(self, alpha, v)?)
    }

    fn ray_point(
        &mut self,
        x: &DeviceVector,
        step: f64,
        p: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        Ok(DeviceVectors::ray_point(self, x, step, p, out)?)
    }

    fn difference(&mut self, new: &DeviceVector, old: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(DeviceVectors::difference(self, new, old)?)
    }

    fn copy(&mut self, from: &DeviceVector, to: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(DeviceVectors::copy(self, from, to)?)
    }
}

/// The box as the device's passes take it.
fn device_box(bounds: Option<&BoxVectors<DeviceVector>>) -> DeviceBox<'_> {
    bounds.map(|b| (&b.lower, &b.upper))
}

/// The shortest run of times [`BoxSpace::earliest_breakpoints`] asks the device about: a warp
/// takes each run, and a shorter one would leave some of its lanes idle.
const RUN_MIN_LEN: usize = 32;

/// Which runs of consecutive times hold the `count` earliest breakpoints, from each run's
/// least breakpoint time (`least`) and how many it holds (`counts`), in increasing order: the
/// `count` runs that come first by (least time, position), among those that hold any.
///
/// Why these suffice: take a breakpoint `b` in a run `r` that is not chosen. Since `r` holds
/// one, `count` runs were chosen, and each chosen run `q` comes before `r`, so its least
/// breakpoint is before `b` in [`Breakpoint`]'s order: its time is below `b`'s, or equal with
/// `q` before `r` and so every index of `q` below `b`'s. Thus `count` breakpoints precede `b`,
/// and `b` is not among the earliest `count`.
fn earliest_runs(least: &[f64], counts: &[f64], count: usize) -> Vec<usize> {
    // (least time, run), in the order of breakpoints (time, then index).
    let mut runs: Vec<Breakpoint> = (0..least.len())
        .filter(|&r| counts[r] > 0.0)
        .map(|r| Breakpoint(least[r], r))
        .collect();
    runs.sort_unstable();
    runs.truncate(count);
    let mut chosen: Vec<usize> = runs.into_iter().map(|Breakpoint(_, r)| r).collect();
    chosen.sort_unstable();
    chosen
}

/// The passes run on the device. The earliest breakpoints are chosen on the host from what
/// the device tells of runs of consecutive times (`earliest_runs`) and the times of the runs
/// that hold them: about `32·√(n·count)` bytes across, not the `8n` of the times (at n = 10⁶
/// and 64 breakpoints, about 0.3 MB for 8 MB). Every breakpoint after the earliest, needed only
/// where the Cauchy path goes past them, is found on the host from a copy of the times.
impl BoxSpace for DeviceVectors {
    type Mask = DeviceVector;

    fn new_mask(&mut self) -> Result<DeviceVector, EvalError> {
        Ok(DeviceVectors::zeros(self)?)
    }

    fn projected_gradient_norm(
        &mut self,
        bounds: Option<&BoxVectors<DeviceVector>>,
        x: &DeviceVector,
        g: &DeviceVector,
    ) -> Result<f64, EvalError> {
        Ok(match bounds {
            None => DeviceVectors::max_abs(self, g)?,
            box_ => DeviceVectors::box_path(self, device_box(box_), x, g, None)?,
        })
    }

    fn steepest_path(
        &mut self,
        bounds: Option<&BoxVectors<DeviceVector>>,
        x: &DeviceVector,
        g: &DeviceVector,
        times: &mut DeviceVector,
        path: &mut DeviceVector,
    ) -> Result<f64, EvalError> {
        let out = Some((times, path));
        Ok(DeviceVectors::box_path(
            self,
            device_box(bounds),
            x,
            g,
            out,
        )?)
    }

    fn earliest_breakpoints(
        &mut self,
        times: &DeviceVector,
        count: usize,
    ) -> Result<(Vec<Breakpoint>, usize), EvalError> {
        let n = self.dim();
        // Runs of about √(n / count) times: the runs' summaries and the chosen runs' times
        // then cross in about as many bytes each.
        let chunk = (((n / count.max(1)) as f64).sqrt().ceil() as usize).max(RUN_MIN_LEN);
        let (least, counts) = DeviceVectors::breakpoint_chunks(self, times, chunk)?;
        // Whole numbers below 2⁵³: exact in any order.
        let total = counts.iter().sum::<f64>() as usize;
        let indices: Vec<usize> = (earliest_runs(&least, &counts, count).into_iter())
            .flat_map(|run| run * chunk..(run * chunk + chunk).min(n))
            .collect();
        let mut values = vec![0.0; indices.len()];
        DeviceVectors::gather(self, &[times], &indices, &mut values)?;
        let mut found: Vec<Breakpoint> = (indices.iter().zip(&values))
            .filter(|&(_, &t)| is_breakpoint(t))
            .map(|(&i, &t)| Breakpoint(t, i))
            .collect();
        found.sort_unstable();
        found.truncate(count);
        Ok((found, total))
    }

    fn breakpoints_after(
        &mut self,
        times: &DeviceVector,
        after: Breakpoint,
        out: &mut Vec<Breakpoint>,
    ) -> Result<(), EvalError> {
        let times = DeviceVectors::download(self, times)?;
        HostVectors::new(times.len()).breakpoints_after(&times, after, out)
    }

    fn gather(
        &mut self,
        vectors: &[&DeviceVector],
        indices: &[usize],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        Ok(DeviceVectors::gather(self, vectors, indices, out)?)
    }

    fn scatter(&mut self, v: &mut DeviceVector, entries: &[(usize, f64)]) -> Result<(), EvalError> {
        Ok(DeviceVectors::scatter(self, v, entries)?)
    }

    fn path_point(
        &mut self,
        x: &DeviceVector,
        t: f64,
        path: &DeviceVector,
        cauchy: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        Ok(DeviceVectors::path_point(self, x, t, path, cauchy)?)
    }

    fn free_variables(
        &mut self,
        bounds: &BoxVectors<DeviceVector>,
        point: &DeviceVector,
        free: &mut DeviceVector,
    ) -> Result<usize, EvalError> {
        let bounds = device_box(Some(bounds));
        Ok(DeviceVectors::free_variables(self, bounds, point, free)?)
    }

    fn masked_gram(
        &mut self,
        columns: &[(f64, &DeviceVector)],
        free: &DeviceVector,
        keep: bool,
        u: &[(f64, &DeviceVector)],
    ) -> Result<(Vec<f64>, Vec<f64>), EvalError> {
        Ok(DeviceVectors::masked_gram(self, columns, (free, keep), u)?)
    }

    fn projected_step(
        &mut self,
        terms: &[(f64, &DeviceVector)],
        bounds: &BoxVectors<DeviceVector>,
        free: &DeviceVector,
        cauchy: &DeviceVector,
        x: &DeviceVector,
        g: &DeviceVector,
        step: &mut DeviceVector,
        target: &mut DeviceVector,
        direction: &mut DeviceVector,
    ) -> Result<(f64, f64), EvalError> {
        // The combination's own pass, then the projection's.
        DeviceVectors::combine(self, terms, step)?;
        let along = (free, cauchy, &*step);
        let bounds = device_box(Some(bounds));
        Ok(DeviceVectors::project_aim(
            self, bounds, along, x, g, target, direction,
        )?)
    }

    fn truncated_step(
        &mut self,
        bounds: &BoxVectors<DeviceVector>,
        free: &DeviceVector,
        cauchy: &DeviceVector,
        step: &DeviceVector,
        target: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        let bounds = device_box(Some(bounds));
        Ok(DeviceVectors::truncated_step(
            self,
            bounds,
            (free, cauchy, step),
            target,
        )?)
    }

    fn aim(
        &mut self,
        bounds: Option<&BoxVectors<DeviceVector>>,
        x: &DeviceVector,
        g: &DeviceVector,
        target: &DeviceVector,
        direction: &mut DeviceVector,
    ) -> Result<(f64, f64), EvalError> {
        Ok(DeviceVectors::aim(
            self,
            device_box(bounds),
            x,
            g,
            target,
            direction,
        )?)
    }

    fn clipped_ray_point(
        &mut self,
        bounds: &BoxVectors<DeviceVector>,
        x: &DeviceVector,
        step: f64,
        d: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        let bounds = device_box(Some(bounds));
        Ok(DeviceVectors::clipped_ray_point(
            self, bounds, x, step, d, out,
        )?)
    }

    fn new_pair(
        &mut self,
        step: f64,
        d: &DeviceVector,
        g_new: &DeviceVector,
        g: &DeviceVector,
        s: &mut DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<PairSums, EvalError> {
        Ok(DeviceVectors::new_pair(self, step, (d, g_new, g), s, y)?.into())
    }
}
