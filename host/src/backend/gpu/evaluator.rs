//! A term problem on the GPU: its data uploaded once, its launches sized once, and each
//! evaluation one launch between sending `x` and bringing `f` or `∇f` back. The kernels finish
//! their sums in the same launch: the block that finishes last adds the blocks' partials
//! (`gpu_kernels::kernel::VALUE_HEAD`).

use super::abi::{Launch, TermBuffers};
use super::array::DeviceArray;
use super::driver::Buffer;
use super::launcher::Launcher;
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
use gpu_kernels::kernel::exact::exact_supported;
use gpu_kernels::kernel::{GradientWork, VALUE_HEAD};
use gpu_kernels::scheme::SCHEMES;
use std::sync::Arc;

/// A term problem on the GPU. Its data lives on the device from [`new`](GpuEvaluator::new)
/// on; an evaluation sends `x` down and brings `f` or `∇f` back. A solve whose vectors live on
/// the device passes their addresses instead: its passes read `x` and write `∇f` where they
/// lie, and bring back only `f`.
pub struct GpuEvaluator {
    n: usize,
    /// The problem's device buffers, as the term kernels take them.
    pub(super) buffers: TermBuffers,
    value_kernel: &'static str,
    value_config: LaunchConfig,
    /// The gradient kernels, in scheme-table order (`Kernels::GRADIENTS`).
    gradient_kernels: [&'static str; SCHEMES],
    /// Per scheme, in the same order, its launch size; or why the scheme cannot take this
    /// problem (the exact kernels past their window limit, or a launch size its kernel refuses).
    gradients: Vec<Result<LaunchConfig, BackendError>>,
    /// Whether the terms' window is dense: its gradient passes need the partials in `sums`.
    dense: bool,
    // Device buffers; the launches take their addresses.
    x: Buffer,
    /// The box finite-difference points stay in (lower, upper), while one is set.
    bounds: Option<(Buffer, Buffer)>,
    g: Buffer,
    /// The value, the blocks' ticket and their partials, then a dense gradient's, as
    /// `VALUE_HEAD` lays them out: every pass uses it, one after another.
    sums: Buffer,
    /// The data: uploaded here, or the array they came in on the device.
    _data: DeviceArray,
    pub(super) launcher: Arc<Launcher>,
}

impl GpuEvaluator {
    /// Uploads the problem's data, or reads them where they lie on this device, and plans
    /// every launch's size.
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
        let data_array = match problem.device_data() {
            None => DeviceArray::new(
                l.upload_values("the data", data.values())?,
                launcher.clone(),
            ),
            Some(array) if array.is_on(&launcher) => array.clone(),
            Some(_) => {
                return Err(BackendError::Foreign(
                    "the data lie on another backend's device".into(),
                ));
            }
        };
        let buffers = TermBuffers {
            x: x.address(),
            n,
            lower: 0,
            upper: 0,
            data: data_array.buffer().address(),
            data_len: problem.data_len(),
            data_rows: data.rows(),
            data_type: data.values().data_type(),
        };
        let value_config = l.config(T::VALUE, terms)?;

        // Dense gradients need `n` partials per block; size them for the largest plan.
        let work = GradientWork::of::<T>(n, data);
        let dense = matches!(work, GradientWork::Terms(_));
        let work = work.units();
        // A scheme this problem cannot use (the exact kernels past their window limit, or a
        // block size its kernel refuses) is refused when it is asked for, not here: a solve
        // that never uses it must load.
        let exact = exact_supported::<T>(n, true).map_err(BackendError::ExactUnsupported);
        let gradients: Vec<Result<LaunchConfig, BackendError>> = (Gradient::ALL.iter())
            .map(|&kind| match (kind, &exact) {
                (Gradient::Exact, Err(why)) => Err(why.clone()),
                _ => l.config(T::GRADIENTS[kind as usize], work),
            })
            .collect();
        let gradient_blocks = (gradients.iter().flatten())
            .map(|c| c.blocks as usize)
            .max()
            .unwrap_or(1);
        let blocks = gradient_blocks.max(value_config.blocks as usize);
        let dense_partials = if dense { gradient_blocks * n } else { 0 };
        let sums = l.alloc("partial sums", VALUE_HEAD + blocks + dense_partials)?;

        Ok(Self {
            n,
            buffers,
            value_kernel: T::VALUE,
            value_config,
            gradient_kernels: T::GRADIENTS,
            gradients,
            dense,
            x,
            bounds: None,
            g,
            sums,
            _data: data_array,
            launcher,
        })
    }

    /// Sends `x` to the device.
    pub(super) fn send_x(&mut self, x: &[f64]) -> Result<(), BackendError> {
        self.launcher.write(&self.x, x)
    }

    /// The term buffers with `x` at `address`.
    fn at(&self, x: u64) -> TermBuffers {
        TermBuffers { x, ..self.buffers }
    }

    /// Launches the value kernel at the device address `x` and brings `f` back.
    fn value_at(&mut self, x: u64) -> Result<f64, BackendError> {
        let launch = Launch::value_entry(self.value_kernel, self.at(x), self.sums.address());
        self.launcher.launch(&launch, self.value_config)?;
        self.read_f(self.value_kernel)
    }

    /// Launches the gradient kernel at the device address `x`, into the device address `g`;
    /// `with_value` also takes the value in the same pass, into the evaluator's `f`.
    fn gradient_at(
        &mut self,
        (x, g): (u64, u64),
        gradient: Gradient,
        with_value: bool,
    ) -> Result<(), BackendError> {
        let config = *self.gradients[gradient as usize]
            .as_ref()
            .map_err(Clone::clone)?;
        // A dense pass always sums the value: its blocks' partials follow it in `sums`.
        let values = if with_value || self.dense {
            self.sums.address()
        } else {
            0
        };
        let kernel = self.gradient_kernels[gradient as usize];
        let launch = Launch::gradient(kernel, self.at(x), g, values);
        self.launcher.launch(&launch, config)
    }

    /// Brings `f` back, after the work `after` names.
    pub(super) fn read_f(&mut self, after: &str) -> Result<f64, BackendError> {
        let mut f = [0.0];
        self.launcher.read(&mut [(&self.sums, &mut f)], after)?;
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
                self.value_at(self.x.address())
            }
            Evaluation::Gradient { gradient, g, value } => {
                self.send_x(x)?;
                let here = (self.x.address(), self.g.address());
                self.gradient_at(here, gradient, value)?;
                let mut f = [0.0];
                let reads: &mut [(&Buffer, &mut [f64])] = if value {
                    &mut [(&self.sums, &mut f), (&self.g, g)]
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

    /// Uploads the box (or lets it go); every launch takes its addresses from `buffers`.
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
        Ok(())
    }
}

impl DeviceEvaluator for GpuEvaluator {
    fn vectors(&mut self) -> Result<DeviceVectors, BackendError> {
        DeviceVectors::new(self.launcher.clone(), self.n)
    }

    fn value_on_device(&mut self, x: &DeviceVector) -> Result<f64, BackendError> {
        self.value_at(x.buffer().address())
    }

    fn gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let at = (x.buffer().address(), g.buffer().address());
        self.gradient_at(at, gradient, false)
    }

    fn value_and_gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<f64, BackendError> {
        let at = (x.buffer().address(), g.buffer().address());
        self.gradient_at(at, gradient, true)?;
        self.read_f("the gradient kernels")
    }

    /// One wait for `f` and the slope: the product is taken before either comes back.
    fn value_and_slope_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
        (d, vectors): (&DeviceVector, &mut DeviceVectors),
    ) -> Result<(f64, f64), BackendError> {
        let at = (x.buffer().address(), g.buffer().address());
        self.gradient_at(at, gradient, true)?;
        vectors.dot_unread(g, d)?;
        let mut f = [0.0];
        let slope = vectors.read_with((&self.sums, &mut f), "the gradient kernels")?;
        Ok((f[0], slope))
    }
}
