//! Tests of the launch plans against a driver that only answers limits: which kernels a load
//! plans, and when a refusal surfaces; and of the order in which a device array's memory is
//! freed. No PTX runs here (tests/gpu.rs runs it, on the simulator or a device).

use super::abi::KernelArg;
use super::driver::{Buffer, Driver, KernelLimits, ModuleLoads};
use super::{DeviceArray, GpuEvaluator, Launcher, load_least_squares};
use crate::backend::evaluator::Evaluator;
use crate::backend::launch::{LaunchConfig, LaunchOverride};
use crate::backend::{Gradient, LeastSquaresEvaluator, TermProblem};
use crate::error::BackendError;
use gpu_kernels::LeastSquares;
use gpu_kernels::terms::ExtRosenbrock;
use gpu_kernels::terms::mgh::Mgh01;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A device whose exact-scheme kernels (a dense exact pass needs many registers) take at most
/// 256 threads per block, as on a GPU, and whose other kernels take 1024. It records the
/// kernels launched, the frees and the waits for the whole device, and runs none of them.
#[derive(Default)]
struct LimitsOnly {
    next: AtomicU64,
    launched: Mutex<Vec<String>>,
    memory: Mutex<Vec<&'static str>>,
}

impl Driver for LimitsOnly {
    fn summary(&self) -> &str {
        "limits only"
    }

    fn module_loads(&self) -> ModuleLoads {
        ModuleLoads::default()
    }

    fn multiprocessors(&self) -> u32 {
        2
    }

    fn limits(&self, kernel: &str) -> Result<KernelLimits, BackendError> {
        let (max_threads, registers) = if kernel.ends_with("_exact") {
            (256, 255)
        } else {
            (1024, 64)
        };
        Ok(KernelLimits {
            max_threads,
            registers,
            suggested_threads: 128,
            resident_blocks: 2,
        })
    }

    fn alloc(&self, _what: &'static str, len: usize) -> Result<u64, BackendError> {
        Ok(0x1000 + self.next.fetch_add(8 * len as u64 + 256, Ordering::Relaxed))
    }

    fn free(&self, _address: u64, _len: usize) {
        self.memory.lock().unwrap().push("free");
    }

    fn settle(&self) {
        self.memory.lock().unwrap().push("settle");
    }

    fn check_foreign(&self, _address: u64, _len: usize, _sync: bool) -> Result<(), BackendError> {
        Ok(())
    }

    fn write(&self, _to: &Buffer, _at: usize, _values: &[f64]) -> Result<(), BackendError> {
        Ok(())
    }

    fn read(&self, _: &mut [(&Buffer, &mut [f64])], _after: &str) -> Result<(), BackendError> {
        Ok(())
    }

    fn copy(&self, _from: &Buffer, _to: &Buffer) -> Result<(), BackendError> {
        Ok(())
    }

    fn launch(&self, kernel: &str, _: LaunchConfig, _: &[KernelArg]) -> Result<(), BackendError> {
        self.launched.lock().unwrap().push(kernel.to_owned());
        Ok(())
    }
}

fn launcher(threads: u32) -> (Arc<LimitsOnly>, Arc<Launcher>) {
    let driver = Arc::new(LimitsOnly::default());
    let launch = LaunchOverride {
        threads: Some(threads),
        blocks: None,
    };
    (driver.clone(), Arc::new(Launcher::new(driver, launch)))
}

/// Issue 25's second bug: `--threads 1024` refused every problem whose exact kernel cannot run
/// 1024 threads, although a central-difference solve never launches it.
#[test]
fn a_block_size_the_exact_kernel_refuses_stops_only_exact_gradients() {
    let (driver, launcher) = launcher(1024);
    let problem = TermProblem::<ExtRosenbrock>::new(8).unwrap();
    let mut evaluator = GpuEvaluator::new(launcher, problem).unwrap();
    let x = [0.5; 8];
    let mut g = [0.0; 8];
    evaluator.gradient(&x, Gradient::Central, &mut g).unwrap();
    assert!(
        (driver.launched.lock().unwrap().iter()).any(|k| k == "ext_rosenbrock_gradient_central")
    );
    let err = evaluator.gradient(&x, Gradient::Exact, &mut g).unwrap_err();
    assert!(matches!(err, BackendError::InvalidLaunch(_)), "{err:?}");
    assert!(
        err.to_string().contains("ext_rosenbrock_gradient_exact"),
        "{err}"
    );
}

/// The same for the normal-equations pass: its three kernels were all planned at load.
#[test]
fn a_block_size_the_exact_normal_kernel_refuses_stops_only_exact_jacobians() {
    let (_, launcher) = launcher(1024);
    let problem = TermProblem::<LeastSquares<Mgh01>>::new(2).unwrap();
    let mut residuals = load_least_squares(launcher, problem).unwrap();
    let (mut jtj, mut jtr) = ([0.0; 4], [0.0; 2]);
    let x = [-1.2, 1.0];
    (residuals.normal_equations(&x, Gradient::Forward, &mut jtj, &mut jtr)).unwrap();
    let err = (residuals.normal_equations(&x, Gradient::Exact, &mut jtj, &mut jtr)).unwrap_err();
    assert!(matches!(err, BackendError::InvalidLaunch(_)), "{err:?}");
}

/// Block sizes every kernel takes still load and run every scheme.
#[test]
fn a_block_size_every_kernel_takes_plans_every_scheme() {
    let (driver, launcher) = launcher(256);
    let problem = TermProblem::<ExtRosenbrock>::new(8).unwrap();
    let mut evaluator = GpuEvaluator::new(launcher, problem).unwrap();
    let mut g = [0.0; 8];
    for scheme in Gradient::ALL {
        evaluator.gradient(&[0.5; 8], scheme, &mut g).unwrap();
    }
    assert_eq!(driver.launched.lock().unwrap().len(), Gradient::ALL.len());
}

/// A free is queued behind cudamin's own work. An array another library may have read
/// (`wait`, as CUDA's array interface calls it) waits for the whole device before its free;
/// one only cudamin used, and its clones while one lives, do not.
#[test]
fn a_lent_array_waits_for_the_device_before_its_memory_goes() {
    let (driver, launcher) = launcher(128);
    let memory = || std::mem::take(&mut *driver.memory.lock().unwrap());
    drop(DeviceArray::upload(&launcher, &[1.0, 2.0]).unwrap());
    assert_eq!(memory(), ["free"]);
    let lent = DeviceArray::upload(&launcher, &[1.0, 2.0]).unwrap();
    let clone = lent.clone();
    clone.wait().unwrap();
    drop(clone);
    assert_eq!(memory(), [""; 0]);
    drop(lent);
    assert_eq!(memory(), ["settle", "free"]);
}
