//! A device evaluator seen through some of its variables, the others held at fixed values
//! (`Options::fixed` on a GPU): each evaluation writes the free variables into the whole point
//! ([`Launch::place`]) and reads the free partials out of the whole gradient
//! ([`Launch::gather`]), on the device, so that a solve over the free variables keeps its
//! vectors there as a solve over all of them does.

use super::abi::Launch;
use super::driver::Buffer;
use super::launcher::thread_per_row;
use super::launcher::{Launcher, check_lengths};
use super::on_device::DeviceEvaluator;
use super::vectors::{DeviceVector, DeviceVectors, address_word};
use crate::error::BackendError;
use gpu_kernels::Gradient;
use std::sync::Arc;

/// What the device keeps of the held variables: the whole point (the fixed variables at their
/// values), the whole gradient, and the free variables' indices.
pub struct DeviceHeld {
    /// `[the whole gradient's address, the free indices…]` as `u64` words: the gather's table
    /// of one vector, and from its second word the indices both passes read.
    table: Buffer,
    point: DeviceVector,
    gradient: DeviceVector,
    free: usize,
    launcher: Arc<Launcher>,
}

impl DeviceHeld {
    /// For `inner`'s variables, at `whole` (the fixed ones' values are kept), with those of
    /// `free` (ascending, within `whole`) free.
    pub fn new(
        inner: &mut dyn DeviceEvaluator,
        whole: &[f64],
        free: &[usize],
    ) -> Result<Self, BackendError> {
        let vectors = inner.vectors()?;
        check_lengths(
            "the whole point of held variables",
            vectors.len(),
            whole.len(),
        )?;
        let ascending = free.windows(2).all(|w| w[0] < w[1]);
        if !ascending || free.last().is_some_and(|&i| i >= whole.len()) {
            return Err(BackendError::InvalidLaunch(format!(
                "the free variables' indices must ascend within the {} variables",
                whole.len()
            )));
        }
        let launcher = vectors.launcher().clone();
        let (point, gradient) = (vectors.vector_from(whole)?, vectors.new_vector()?);
        let words: Vec<f64> = std::iter::once(address_word(&gradient))
            .chain(free.iter().map(|&i| f64::from_bits(i as u64)))
            .collect();
        let table = launcher.upload("the free variables' indices", &words)?;
        Ok(DeviceHeld {
            table,
            point,
            gradient,
            free: free.len(),
            launcher,
        })
    }

    /// The free indices' address.
    fn indices(&self) -> u64 {
        self.table.address() + size_of::<u64>() as u64
    }

    /// The whole point with the free variables at `x`.
    fn write_point(&mut self, x: &DeviceVector) -> Result<(), BackendError> {
        check_lengths("the free variables", self.free, x.buffer().len())?;
        let (from, to) = (x.buffer().address(), self.point.buffer().address());
        let launch = Launch::place(self.free, self.indices(), from, to);
        self.launcher.launch(&launch, thread_per_row(self.free))
    }

    /// The whole gradient's free partials into `g`.
    fn read_gradient(&self, g: &mut DeviceVector) -> Result<(), BackendError> {
        check_lengths("the free variables' gradient", self.free, g.buffer().len())?;
        let (table, out) = (self.table.address(), g.buffer().address());
        let launch = Launch::gather(table, 1, self.indices(), self.free, out);
        self.launcher.launch(&launch, thread_per_row(self.free))
    }
}

/// `inner` over the free variables of `held`.
pub struct HeldOnDevice<'a> {
    inner: &'a mut dyn DeviceEvaluator,
    held: &'a mut DeviceHeld,
}

impl<'a> HeldOnDevice<'a> {
    pub fn new(inner: &'a mut dyn DeviceEvaluator, held: &'a mut DeviceHeld) -> Self {
        HeldOnDevice { inner, held }
    }
}

impl DeviceEvaluator for HeldOnDevice<'_> {
    /// Vectors of the free variables, on the inner evaluator's device.
    fn vectors(&mut self) -> Result<DeviceVectors, BackendError> {
        DeviceVectors::new(self.held.launcher.clone(), self.held.free)
    }

    fn value_on_device(&mut self, x: &DeviceVector) -> Result<f64, BackendError> {
        self.held.write_point(x)?;
        self.inner.value_on_device(&self.held.point)
    }

    fn gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        self.held.write_point(x)?;
        let held = &mut *self.held;
        self.inner
            .gradient_on_device(&held.point, gradient, &mut held.gradient)?;
        held.read_gradient(g)
    }

    fn value_and_gradient_on_device(
        &mut self,
        x: &DeviceVector,
        gradient: Gradient,
        g: &mut DeviceVector,
    ) -> Result<f64, BackendError> {
        self.held.write_point(x)?;
        let held = &mut *self.held;
        let f =
            (self.inner).value_and_gradient_on_device(&held.point, gradient, &mut held.gradient)?;
        held.read_gradient(g)?;
        Ok(f)
    }
}
