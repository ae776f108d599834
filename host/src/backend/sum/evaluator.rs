//! A sum of term problems loaded on one backend, evaluated as one problem: each pass is each
//! part's pass in the sum's order, and their results are added in that order.

use crate::backend::evaluator::{Evaluator, LeastSquaresEvaluator};
use crate::backend::gpu::{DeviceEvaluator, DeviceVector, DeviceVectors};
use crate::backend::mpi::{Partials, Share, add_in_order};
use crate::backend::pass::{Evaluation, Pass};
use crate::backend::step_bounds::StepBounds;
use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::kernel::sum_in_order;

/// The loaded parts of a [`TermSum`](super::TermSum) (`E = dyn Evaluator`) or of a
/// [`ResidualSum`](super::ResidualSum) (`E = dyn LeastSquaresEvaluator`), all on one backend.
///
/// Bits: every path adds the parts' results in the sum's order, each part's as its own
/// evaluator makes it: gradients and normal equations by plain additions, values by
/// `sum_in_order` of the parts' values. A pass's partials (MPI) are the first part's with each
/// further part's in [`Partials::further`], and finish so; `evaluate` (one process) takes the
/// parts' passes one after the other, into the outputs and one scratch vector; on the device
/// the gradients are added by `g ← g + 1·g_part`. So one process, any number of ranks and the
/// device path agree to the bit wherever the parts' own evaluators do.
pub struct SumEvaluator<E: Evaluator + ?Sized = dyn Evaluator> {
    parts: Vec<Box<E>>,
    /// A further part's outputs on the host, before they are added to the first's.
    scratch: Vec<f64>,
    /// The device's vector arithmetic and one vector for a further part's gradient, made when
    /// a solver first evaluates at device vectors.
    device: Option<(DeviceVectors, DeviceVector)>,
}

impl<E: Evaluator + ?Sized> SumEvaluator<E> {
    /// The loaded parts of a sum, in its order: at least one, all of the same `n`, all on one
    /// backend (as `Backend::load_sum` loads them).
    pub(crate) fn new(parts: Vec<Box<E>>) -> Self {
        assert!(!parts.is_empty(), "a sum of term problems has parts");
        Self {
            parts,
            scratch: Vec::new(),
            device: None,
        }
    }
}

/// A part's device, which every part has once [`Evaluator::device`] has said so.
fn on_device<E: Evaluator + ?Sized>(
    part: &mut E,
) -> Result<&mut dyn DeviceEvaluator, BackendError> {
    part.device().ok_or(BackendError::Unsupported(
        "a part of the sum is not on the device its first part is on",
    ))
}

impl<E: Evaluator + ?Sized> Evaluator for SumEvaluator<E> {
    fn dim(&self) -> usize {
        self.parts[0].dim()
    }

    /// Every part keeps the box: each takes its differences over the same variables.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), BackendError> {
        self.parts
            .iter_mut()
            .try_for_each(|part| part.confine_steps(bounds))
    }

    /// Part by part: the first writes the outputs, each further one writes `scratch` (kept
    /// from pass to pass), added to them in order; the values added as `Partials::value` adds
    /// the parts'. The same bits as finishing this sum's partials, without a vector per chunk
    /// or part (a banded first part still writes `g` in place).
    fn evaluate(&mut self, x: &[f64], evaluation: Evaluation<'_>) -> Result<f64, BackendError> {
        let (first, further) = self.parts.split_first_mut().expect("parts");
        let scratch = &mut self.scratch;
        let (first_value, values) = match evaluation {
            Evaluation::Value => (
                first.evaluate(x, Evaluation::Value)?,
                add_in_order(further.iter_mut(), scratch, &mut [], |part, _| {
                    part.evaluate(x, Evaluation::Value)
                })?,
            ),
            Evaluation::Gradient { gradient, g, value } => {
                let own = Evaluation::Gradient {
                    gradient,
                    g: &mut *g,
                    value,
                };
                (
                    first.evaluate(x, own)?,
                    add_in_order(further.iter_mut(), scratch, &mut [g], |part, out| {
                        part.evaluate(
                            x,
                            Evaluation::Gradient {
                                gradient,
                                g: out,
                                value,
                            },
                        )
                    })?,
                )
            }
            Evaluation::Normal { jacobian, jtj, jtr } => {
                let n = jtr.len();
                let own = Evaluation::Normal {
                    jacobian,
                    jtj: &mut *jtj,
                    jtr: &mut *jtr,
                };
                (
                    first.evaluate(x, own)?,
                    add_in_order(further.iter_mut(), scratch, &mut [jtj, jtr], |part, out| {
                        let (jtj, jtr) = out.split_at_mut(n * n);
                        part.evaluate(x, Evaluation::Normal { jacobian, jtj, jtr })
                    })?,
                )
            }
            Evaluation::Factor {
                jacobian,
                loss,
                factor,
            } => {
                // Triangles fold, they do not add: the parts' partials, finished as one.
                let pass = Pass::Factor { jacobian, loss };
                return parts_partials(first, further, x, pass, Share::Whole)?.factor_into(factor);
            }
            Evaluation::Cost { loss } => {
                let pass = Pass::Cost { loss };
                return Ok(parts_partials(first, further, x, pass, Share::Whole)?.value());
            }
        };
        Ok(sum_in_order(std::iter::once(first_value).chain(values)))
    }

    /// The first part's partials of `share`, and each further part's of the share of parts
    /// every rank holds whole.
    fn partials(&mut self, x: &[f64], pass: Pass, share: Share) -> Result<Partials, BackendError> {
        let (first, further) = self.parts.split_first_mut().expect("parts");
        parts_partials(first, further, x, pass, share)
    }

    /// On a device when every part is.
    fn device(&mut self) -> Option<&mut dyn DeviceEvaluator> {
        if self.parts.iter_mut().all(|part| part.device().is_some()) {
            Some(self)
        } else {
            None
        }
    }
}

/// The `first` part's partials of `share`, and each `further` part's of the share of parts
/// every rank holds whole.
fn parts_partials<E: Evaluator + ?Sized>(
    first: &mut Box<E>,
    further: &mut [Box<E>],
    x: &[f64],
    pass: Pass,
    share: Share,
) -> Result<Partials, BackendError> {
    let mut partials = first.partials(x, pass, share)?;
    for part in further {
        let part_partials = part.partials(x, pass, share.of_whole_parts())?;
        partials.further.push(part_partials);
    }
    Ok(partials)
}

impl<E: Evaluator + ?Sized> SumEvaluator<E> {
    /// The device's vectors and the further parts' gradient vector, made once.
    fn device_scratch(&mut self) -> Result<&mut (DeviceVectors, DeviceVector), BackendError> {
        if self.device.is_none() {
            let vectors = on_device(&mut *self.parts[0])?.vectors()?;
            let scratch = vectors.new_vector()?;
            self.device = Some((vectors, scratch));
        }
        Ok(self.device.as_mut().expect("made above"))
    }

    /// `∇f(x)` into `g` on the device, each part's added in order, and with `value` the
    /// parts' values added as the host adds them (else 0).
    fn gradient_on_device_parts(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
        value: bool,
    ) -> Result<f64, BackendError> {
        self.device_scratch()?;
        let (vectors, scratch) = self.device.as_mut().expect("made above");
        let mut values = Vec::with_capacity(self.parts.len());
        for (i, part) in self.parts.iter_mut().enumerate() {
            let part = on_device(&mut **part)?;
            let out = if i == 0 { &mut *g } else { &mut *scratch };
            if value {
                values.push(part.value_and_gradient_on_device(x, gradient, out)?);
            } else {
                part.gradient_on_device(x, gradient, out)?;
            }
            if i > 0 {
                vectors.add_scaled(1.0, scratch, g)?;
            }
        }
        Ok(sum_in_order(values.into_iter()))
    }
}

impl<E: Evaluator + ?Sized> DeviceEvaluator for SumEvaluator<E> {
    fn vectors(&mut self) -> Result<DeviceVectors, BackendError> {
        on_device(&mut *self.parts[0])?.vectors()
    }

    fn value_on_device(&mut self, x: &DeviceVector) -> Result<f64, BackendError> {
        let mut values = Vec::with_capacity(self.parts.len());
        for part in &mut self.parts {
            values.push(on_device(&mut **part)?.value_on_device(x)?);
        }
        Ok(sum_in_order(values.into_iter()))
    }

    fn gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        self.gradient_on_device_parts(x, gradient, g, false)
            .map(drop)
    }

    fn value_and_gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<f64, BackendError> {
        self.gradient_on_device_parts(x, gradient, g, true)
    }
}

impl LeastSquaresEvaluator for SumEvaluator<dyn LeastSquaresEvaluator> {
    /// Every part's residuals.
    fn residuals(&self) -> usize {
        self.parts.iter().map(|part| part.residuals()).sum()
    }
}
