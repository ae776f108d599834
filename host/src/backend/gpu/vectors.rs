//! The vectors of a solver that keeps them on the device: each operation is one or two
//! launches, in order with the evaluations, and only scalars (a dot product, a norm) come
//! back.

use super::abi::Launch;
use super::driver::Buffer;
use super::launcher::{Launcher, SINGLE_THREAD};
use crate::backend::evaluator::{BackendError, LaunchConfig};
use gpu_kernels::kernel::{AXPY, DOT_PARTIALS, MAX_ABS_PARTIALS};
use std::sync::Arc;

/// An `n`-vector in device memory, made by [`DeviceVectors`].
pub struct DeviceVector(Buffer);

impl DeviceVector {
    pub(super) fn buffer(&self) -> &Buffer {
        &self.0
    }
}

/// The vector arithmetic of a solver whose vectors stay on the device.
pub struct DeviceVectors {
    n: usize,
    elementwise: LaunchConfig,
    reduction: LaunchConfig,
    /// One block, for the second stage of the max-abs reduction.
    finish: LaunchConfig,
    partials: Buffer,
    scalar: Buffer,
    launcher: Arc<Launcher>,
}

impl DeviceVectors {
    pub(super) fn new(launcher: Arc<Launcher>, n: usize) -> Result<Self, BackendError> {
        let l = &*launcher;
        let elementwise = l.config(AXPY, n)?;
        let dot = l.config(DOT_PARTIALS, n)?;
        let max = l.config(MAX_ABS_PARTIALS, n)?;
        // Both reductions take the smaller grid, so that one partials buffer serves both and
        // the second stage's block reads all of them.
        let reduction = LaunchConfig {
            blocks: dot.blocks.min(max.blocks),
            threads: dot.threads.min(max.threads),
        };
        let finish = LaunchConfig {
            blocks: 1,
            ..l.config(MAX_ABS_PARTIALS, 1)?
        };
        Ok(Self {
            n,
            elementwise,
            reduction,
            finish,
            partials: l.alloc("reduction partials", reduction.blocks as usize)?,
            scalar: l.alloc("a reduction's result", 1)?,
            launcher,
        })
    }

    /// `n`, the length of every vector.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// `n` zeros.
    pub(crate) fn zeros(&mut self) -> Result<DeviceVector, BackendError> {
        self.launcher
            .alloc("a solver vector", self.n)
            .map(DeviceVector)
    }

    /// A device copy of `x` (`n` entries).
    pub(crate) fn upload(&mut self, x: &[f64]) -> Result<DeviceVector, BackendError> {
        self.launcher.upload("a solver vector", x).map(DeviceVector)
    }

    /// `v` in host memory.
    pub(crate) fn download(&self, v: &DeviceVector, host: &mut [f64]) -> Result<(), BackendError> {
        self.launcher.read(&mut [(&v.0, host)], "a vector download")
    }

    /// `to ← from`.
    pub(crate) fn copy(
        &mut self,
        from: &DeviceVector,
        to: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        self.launcher.copy(&from.0, &to.0)
    }

    /// `y ← y + alpha·x`.
    pub(crate) fn axpy(
        &mut self,
        alpha: f64,
        x: &DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::axpy(self.n, alpha, x.0.address(), y.0.address());
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `v ← alpha·v`.
    pub(crate) fn scale(&mut self, alpha: f64, v: &mut DeviceVector) -> Result<(), BackendError> {
        let launch = Launch::scale(self.n, alpha, v.0.address());
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `out ← x + step·p`.
    pub(crate) fn ray_point(
        &mut self,
        x: &DeviceVector,
        step: f64,
        p: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::ray_point(self.n, x.0.address(), step, p.0.address(), out.0.address());
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `old ← new − old`.
    pub(crate) fn difference(
        &mut self,
        new: &DeviceVector,
        old: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::difference(self.n, new.0.address(), old.0.address());
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `aᵀb`, summed in a fixed order (deterministic for a given launch configuration).
    pub(crate) fn dot(&mut self, a: &DeviceVector, b: &DeviceVector) -> Result<f64, BackendError> {
        let partials = self.partials.address();
        let first = Launch::dot_partials(self.n, a.0.address(), b.0.address(), partials);
        self.launcher.launch(&first, self.reduction)?;
        let blocks = self.reduction.blocks as usize;
        let second = Launch::sum_partials(partials, blocks, self.scalar.address());
        self.launcher.launch(&second, SINGLE_THREAD)?;
        self.read_scalar(DOT_PARTIALS)
    }

    /// `‖v‖∞`, NaN if any entry is NaN.
    pub(crate) fn max_abs(&mut self, v: &DeviceVector) -> Result<f64, BackendError> {
        let partials = self.partials.address();
        let first = Launch::max_abs_partials(self.n, v.0.address(), partials);
        self.launcher.launch(&first, self.reduction)?;
        let blocks = self.reduction.blocks as usize;
        let second = Launch::max_abs_partials(blocks, partials, self.scalar.address());
        self.launcher.launch(&second, self.finish)?;
        self.read_scalar(MAX_ABS_PARTIALS)
    }

    /// Brings the reduction's result back, after the work `after` names.
    fn read_scalar(&mut self, after: &str) -> Result<f64, BackendError> {
        let mut scalar = [0.0];
        self.launcher
            .read(&mut [(&self.scalar, &mut scalar)], after)?;
        Ok(scalar[0])
    }
}
