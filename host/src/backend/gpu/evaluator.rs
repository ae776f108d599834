//! A term problem on the GPU: its data uploaded once, its launches planned once, and each
//! evaluation a few launches between sending `x` and bringing `f` or `∇f` back.

use super::abi::{Launch, TermBuffers};
use super::driver::Buffer;
use super::launcher::{Launcher, SINGLE_THREAD};
use super::on_device::DeviceEvaluator;
use super::vectors::{DeviceVector, DeviceVectors};
use crate::backend::evaluator::Evaluator;
use crate::backend::launch::LaunchConfig;
use crate::backend::pass::Evaluation;
use crate::backend::problem::TermProblem;
use crate::backend::step_bounds::StepBounds;
use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::Kernels;
use gpu_kernels::kernel::GradientWork;
use gpu_kernels::kernel::exact::exact_supported;
use gpu_kernels::scheme::SCHEMES;
use std::sync::Arc;

/// A term problem's gradient kernels, one per scheme, and where they write.
struct GradientTargets {
    /// The kernels, in scheme-table order (`Kernels::GRADIENTS`).
    entries: [&'static str; SCHEMES],
    /// Each scheme's launch configuration, or why it cannot run.
    configs: Vec<Result<LaunchConfig, BackendError>>,
    g: u64,
    /// Dense windows: the per-block partial sums, finished into `g` by a second kernel.
    partials: Option<u64>,
    /// The value's per-block partials, when a gradient pass also takes the value.
    values: u64,
    /// Where the value's sum goes.
    f: u64,
}

impl GradientTargets {
    /// Every scheme's launches on the term buffers `b`.
    fn plans(
        &self,
        b: TermBuffers,
        launcher: &Launcher,
    ) -> Vec<Result<GradientPlan, BackendError>> {
        (Gradient::ALL.iter().zip(&self.configs))
            .map(|(&kind, config)| {
                let config = config.as_ref().map_err(Clone::clone)?;
                self.plan(kind, b, launcher, *config)
            })
            .collect()
    }

    fn plan(
        &self,
        kind: Gradient,
        b: TermBuffers,
        launcher: &Launcher,
        config: LaunchConfig,
    ) -> Result<GradientPlan, BackendError> {
        let out = self.partials.unwrap_or(self.g);
        let finish = match self.partials {
            None => None,
            Some(partials) => {
                let blocks = config.blocks as usize;
                let finish = Launch::dense_finish(kind, b, partials, blocks, self.g);
                let config = launcher.config(&finish.kernel, b.n)?;
                Some((finish, config))
            }
        };
        let kernel = self.entries[kind as usize];
        Ok(GradientPlan {
            kernel: Launch::gradient(kernel, b, out, 0),
            with_value: Launch::gradient(kernel, b, out, self.values),
            value_sum: Launch::sum_partials(self.values, config.blocks as usize, self.f),
            config,
            finish,
        })
    }
}

/// The launches of one gradient scheme, built once per problem.
struct GradientPlan {
    kernel: Launch,
    /// The same pass, also writing the value's partials; `value_sum` adds them up.
    with_value: Launch,
    value_sum: Launch,
    config: LaunchConfig,
    /// The dense second stage; banded gradients need none.
    finish: Option<(Launch, LaunchConfig)>,
}

/// A term problem on the GPU. Its data lives on the device from [`new`](GpuEvaluator::new)
/// on; an evaluation sends `x` down and brings `f` or `∇f` back.
pub struct GpuEvaluator {
    n: usize,
    /// The problem's device buffers, as the term kernels take them.
    pub(super) buffers: TermBuffers,
    value: (Launch, LaunchConfig),
    sum: (Launch, LaunchConfig),
    /// Per scheme, in the table's order; or why the scheme cannot take this problem (the exact
    /// kernels past their window limit, or a launch size its kernels refuse).
    gradients: Vec<Result<GradientPlan, BackendError>>,
    /// What the gradient launches are planned from, to plan them again for a new box.
    targets: GradientTargets,
    // Device buffers; the launches above hold their addresses.
    x: Buffer,
    /// The box finite-difference points stay in (lower, upper), while one is set.
    bounds: Option<(Buffer, Buffer)>,
    g: Buffer,
    pub(super) f: Buffer,
    _data: Buffer,
    _value_partials: Buffer,
    _gradient_partials: Buffer,
    _gradient_value_partials: Buffer,
    pub(super) launcher: Arc<Launcher>,
}

impl GpuEvaluator {
    /// Uploads the problem's data and plans every launch.
    pub fn new<T: Kernels>(
        launcher: Arc<Launcher>,
        problem: TermProblem<T>,
    ) -> Result<Self, BackendError> {
        let l = &*launcher;
        let n = problem.n();
        let terms = problem.terms();
        let data = problem.data();
        let x = l.alloc("x", n)?;
        let g = l.alloc("the gradient", n)?;
        let f = l.alloc("the value", 1)?;
        let data_buffer = l.upload_values("the data", data.values())?;
        let buffers = TermBuffers {
            x: x.address(),
            n,
            lower: 0,
            upper: 0,
            data: data_buffer.address(),
            data_len: data.values().len(),
            data_rows: data.rows(),
            data_type: data.values().data_type(),
        };

        let value_config = l.config(T::VALUE, terms)?;
        let value_partials = l.alloc("value partial sums", value_config.blocks as usize)?;
        let value = (
            Launch::value::<T>(buffers, value_partials.address()),
            value_config,
        );
        let sum = (
            Launch::sum_partials(
                value_partials.address(),
                value_config.blocks as usize,
                f.address(),
            ),
            SINGLE_THREAD,
        );

        // Dense gradients need `n` partials per block; size them for the largest plan.
        let work = GradientWork::of::<T>(n, data);
        let dense = matches!(work, GradientWork::Terms(_));
        let work = work.units();
        // A scheme this problem cannot use (the exact kernels past their window limit, or a
        // block size its kernel refuses) is refused when it is asked for, not here: a solve
        // that never uses it must load.
        let exact = exact_supported::<T>(n, true).map_err(BackendError::ExactUnsupported);
        let configs: Vec<Result<LaunchConfig, BackendError>> = (Gradient::ALL.iter())
            .map(|&kind| match (kind, &exact) {
                (Gradient::Exact, Err(why)) => Err(why.clone()),
                _ => l.config(T::GRADIENTS[kind as usize], work),
            })
            .collect();
        let partial_blocks = configs
            .iter()
            .flatten()
            .map(|c| c.blocks)
            .max()
            .unwrap_or(1) as usize;
        let gradient_partials = l.alloc(
            "gradient partial sums",
            if dense { partial_blocks * n } else { 0 },
        )?;
        let gradient_value_partials = l.alloc("value partial sums", partial_blocks)?;
        let targets = GradientTargets {
            entries: T::GRADIENTS,
            configs,
            g: g.address(),
            partials: dense.then(|| gradient_partials.address()),
            values: gradient_value_partials.address(),
            f: f.address(),
        };
        let gradients = targets.plans(buffers, l);

        Ok(Self {
            n,
            buffers,
            value,
            sum,
            gradients,
            targets,
            x,
            bounds: None,
            g,
            f,
            _data: data_buffer,
            _value_partials: value_partials,
            _gradient_partials: gradient_partials,
            _gradient_value_partials: gradient_value_partials,
            launcher,
        })
    }

    /// Sends `x` to the device.
    pub(super) fn send_x(&mut self, x: &[f64]) -> Result<(), BackendError> {
        self.launcher.write(&self.x, x)
    }

    /// Copies a device vector into the evaluator's `x`, which the planned launches read.
    fn take_x(&mut self, x: &DeviceVector) -> Result<(), BackendError> {
        self.launcher.copy(x.buffer(), &self.x)
    }

    /// Launches the value kernels on the evaluator's `x` and brings `f` back.
    fn value_at_x(&mut self) -> Result<f64, BackendError> {
        let l = &self.launcher;
        l.launch(&self.value.0, self.value.1)?;
        l.launch(&self.sum.0, self.sum.1)?;
        let after = self.value.0.kernel.clone(); // a constant's name: no allocation
        self.read_f(&after)
    }

    /// Launches the gradient kernels on the evaluator's `x`, into its `g`; `with_value` also
    /// takes the value in the same pass, into its `f`.
    fn gradient_at_x(&mut self, gradient: Gradient, with_value: bool) -> Result<(), BackendError> {
        let plan = self.gradients[gradient as usize]
            .as_ref()
            .map_err(Clone::clone)?;
        let l = &self.launcher;
        l.launch(
            if with_value {
                &plan.with_value
            } else {
                &plan.kernel
            },
            plan.config,
        )?;
        if let Some((finish, config)) = &plan.finish {
            l.launch(finish, *config)?;
        }
        if with_value {
            l.launch(&plan.value_sum, SINGLE_THREAD)?;
        }
        Ok(())
    }

    /// Brings `f` back, after the work `after` names.
    pub(super) fn read_f(&mut self, after: &str) -> Result<f64, BackendError> {
        let mut f = [0.0];
        self.launcher.read(&mut [(&self.f, &mut f)], after)?;
        Ok(f[0])
    }
}

impl Evaluator for GpuEvaluator {
    fn dim(&self) -> usize {
        self.n
    }

    fn evaluate(&mut self, x: &[f64], evaluation: Evaluation<'_>) -> Result<f64, BackendError> {
        match evaluation {
            Evaluation::Value => {
                self.send_x(x)?;
                self.value_at_x()
            }
            Evaluation::Gradient { gradient, g, value } => {
                self.send_x(x)?;
                self.gradient_at_x(gradient, value)?;
                let mut f = [0.0];
                let reads: &mut [(&Buffer, &mut [f64])] = if value {
                    &mut [(&self.f, &mut f), (&self.g, g)]
                } else {
                    &mut [(&self.g, g)]
                };
                self.launcher.read(reads, "the gradient kernels")?;
                Ok(f[0])
            }
            Evaluation::Normal { .. } | Evaluation::Factor { .. } | Evaluation::Cost { .. } => {
                Err(Evaluation::not_a_sum_of_squares())
            }
        }
    }

    fn device(&mut self) -> Option<&mut dyn DeviceEvaluator> {
        Some(self)
    }

    /// Uploads the box (or lets it go) and plans the gradient launches again with its
    /// addresses; the residual passes take them from `buffers` at each launch.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), BackendError> {
        let bounds = bounds.checked(self.n)?;
        self.bounds = if bounds.is_open() {
            None
        } else {
            let l = &self.launcher;
            let lower = l.upload("the finite-difference box", bounds.lower())?;
            let upper = l.upload("the finite-difference box", bounds.upper())?;
            Some((lower, upper))
        };
        let (lower, upper) = match &self.bounds {
            Some((lower, upper)) => (lower.address(), upper.address()),
            None => (0, 0),
        };
        self.buffers.lower = lower;
        self.buffers.upper = upper;
        self.gradients = self.targets.plans(self.buffers, &self.launcher);
        Ok(())
    }
}

impl DeviceEvaluator for GpuEvaluator {
    fn vectors(&mut self) -> Result<DeviceVectors, BackendError> {
        DeviceVectors::new(self.launcher.clone(), self.n)
    }

    fn value_on_device(&mut self, x: &DeviceVector) -> Result<f64, BackendError> {
        self.take_x(x)?;
        self.value_at_x()
    }

    fn gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        self.take_x(x)?;
        self.gradient_at_x(gradient, false)?;
        self.launcher.copy(&self.g, g.buffer())
    }

    fn value_and_gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<f64, BackendError> {
        self.take_x(x)?;
        self.gradient_at_x(gradient, true)?;
        self.launcher.copy(&self.g, g.buffer())?;
        self.read_f("the gradient kernels")
    }
}
