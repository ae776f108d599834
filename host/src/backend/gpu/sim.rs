//! The simulated driver: the embedded PTX run by `cudamin-ptx-sim` on the CPU.
//!
//! Everything above the [`Driver`] seam runs unchanged: the same launch plans, argument lists,
//! buffers and copies as on a GPU, and the same PTX, interpreted instruction by instruction with
//! CUDA's block and warp semantics and compute-sanitizer's checks. It is slow and exact: for
//! CI without a GPU, a user's own tests, and debugging a kernel. `auto` never picks it.
//!
//! A kernel's fault (an out-of-bounds access, a race, a divergent barrier, a trap) poisons the
//! device as a fault poisons a CUDA context: the launch itself returns, and the fault surfaces
//! at the next call that waits ([`Driver::read`]) and at every call after it, as [`BackendError::Launch`] naming the kernel, block, thread and address.

use super::abi::KernelArg;
use super::driver::{Buffer, Driver, KernelCounts, KernelLimits, ModuleLoads};
use crate::backend::launch::LaunchConfig;
use crate::error::BackendError;
use cudamin_ptx_sim::{Device, Launch, Module, SimError};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// The device the simulator models: few multiprocessors and small blocks, so that the problems
/// of a test span several blocks, and grid-stride loops turn more than once, as they do on a
/// GPU with data a thousand times larger.
const MULTIPROCESSORS: u32 = 4;
/// The block size the simulator suggests (the occupancy API's role on a GPU).
const SUGGESTED_THREADS: u32 = 128;
/// Instructions one launch may execute, all threads together, before it is stopped as a hang
/// (about half a minute of interpretation).
const STEP_LIMIT: u64 = 2_000_000_000;

/// Every entry any simulated device of this process executed, for the test that checks that
/// every shipped entry ran.
static EXECUTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The entries the simulated devices of this process have executed so far.
pub fn simulated_entries() -> BTreeSet<String> {
    EXECUTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// A simulated device with the module loaded.
pub(crate) struct SimDriver {
    state: Mutex<State>,
    summary: String,
    module_load_seconds: f64,
}

struct State {
    device: Device,
    /// The first kernel fault, which every later waiting call reports.
    fault: Option<String>,
}

impl SimDriver {
    /// Parses `ptx` and loads it on a fresh simulated device.
    pub(crate) fn open(ptx: &str) -> Result<Self, BackendError> {
        let start = Instant::now();
        let module = Module::parse(ptx).map_err(|e| BackendError::PtxRejected(e.to_string()))?;
        let entries = module.entries().count();
        let mut device = Device::new(Arc::new(module));
        device.set_step_limit(STEP_LIMIT);
        Ok(Self {
            state: Mutex::new(State {
                device,
                fault: None,
            }),
            summary: format!(
                "PTX simulator (cudamin-ptx-sim: {entries} entries, {MULTIPROCESSORS} modelled \
                 multiprocessors; exact and slow)"
            ),
            module_load_seconds: start.elapsed().as_secs_f64(),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while the lock was held left plain data; the fault it may have hidden is
        // reported by whatever waits next.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    /// The fault that poisoned the device, as the error of the work `after` names.
    fn check(&self, after: &str) -> Result<(), BackendError> {
        match &self.fault {
            None => Ok(()),
            Some(detail) => Err(BackendError::Launch {
                kernel: after.to_owned(),
                detail: detail.clone(),
            }),
        }
    }
}

/// An out-of-range copy: the launcher checks lengths, so this is an addressing bug above it.
fn bad_copy(call: &'static str) -> impl Fn(SimError) -> BackendError {
    move |e| BackendError::Driver {
        call,
        detail: e.to_string(),
    }
}

fn bytes_of(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

impl Driver for SimDriver {
    fn summary(&self) -> &str {
        &self.summary
    }

    fn count_kernels(&self, on: bool) -> bool {
        self.state().device.count(on);
        true
    }

    fn kernel_counts(&self) -> Option<BTreeMap<String, KernelCounts>> {
        self.state().device.counts().cloned()
    }

    fn module_loads(&self) -> ModuleLoads {
        ModuleLoads {
            count: 1,
            seconds: self.module_load_seconds,
        }
    }

    fn multiprocessors(&self) -> u32 {
        MULTIPROCESSORS
    }

    fn limits(&self, kernel: &str) -> Result<KernelLimits, BackendError> {
        let state = self.state();
        if state.device.module().params(kernel).is_none() {
            return Err(BackendError::KernelMissing(kernel.to_owned()));
        }
        Ok(KernelLimits {
            max_threads: 1024,
            registers: 0,
            suggested_threads: SUGGESTED_THREADS,
            resident_blocks: MULTIPROCESSORS,
        })
    }

    fn alloc(&self, what: &'static str, len: usize) -> Result<u64, BackendError> {
        // The simulated device's memory is the host's: a buffer past it is the device's out
        // of memory, not an abort in the allocator.
        crate::linalg::fits_in_memory(len).ok_or(BackendError::OutOfMemory {
            what,
            bytes: len.saturating_mul(size_of::<f64>()),
        })?;
        Ok(self.state().device.alloc(len * size_of::<f64>()))
    }

    fn free(&self, address: u64, _len: usize) {
        // Only a `Buffer` frees, once; an unknown address here would be the launcher's bug,
        // and a drop cannot report it.
        let _ = self.state().device.free(address);
    }

    fn is_simulated(&self) -> bool {
        true
    }

    fn check_foreign(&self, address: u64, len: usize, _sync: bool) -> Result<(), BackendError> {
        let bytes = len.saturating_mul(size_of::<f64>());
        if len > 0 && !self.state().device.is_allocated(address, bytes) {
            return Err(BackendError::Foreign(format!(
                "{bytes} bytes at {address:#x} are not in one of the simulator's arrays"
            )));
        }
        Ok(())
    }

    fn write(&self, to: &Buffer, at: usize, values: &[f64]) -> Result<(), BackendError> {
        if values.is_empty() {
            return Ok(());
        }
        let mut state = self.state();
        state.check("an earlier launch")?;
        let bytes = bytes_of(values);
        state
            .device
            .write(to.address() + (at * size_of::<f64>()) as u64, &bytes)
            .map_err(bad_copy("write"))
    }

    fn read(&self, reads: &mut [(&Buffer, &mut [f64])], after: &str) -> Result<(), BackendError> {
        let state = self.state();
        state.check(after)?;
        for (from, out) in reads.iter_mut() {
            if out.is_empty() {
                continue;
            }
            let mut bytes = vec![0; size_of_val(*out)];
            state
                .device
                .read(from.address(), &mut bytes)
                .map_err(bad_copy("read"))?;
            for (value, chunk) in out.iter_mut().zip(bytes.chunks_exact(size_of::<f64>())) {
                *value = f64::from_le_bytes(chunk.try_into().expect("8-byte chunks"));
            }
        }
        Ok(())
    }

    fn copy(&self, from: &Buffer, to: &Buffer) -> Result<(), BackendError> {
        if from.is_empty() {
            return Ok(());
        }
        let mut state = self.state();
        state.check("an earlier launch")?;
        let bytes = from.len() * size_of::<f64>();
        state
            .device
            .copy(from.address(), to.address(), bytes)
            .map_err(bad_copy("copy"))
    }

    fn launch(
        &self,
        kernel: &str,
        config: LaunchConfig,
        args: &[KernelArg],
    ) -> Result<(), BackendError> {
        let mut state = self.state();
        if state.fault.is_some() {
            // A poisoned device runs nothing more; the next wait reports why.
            return Ok(());
        }
        let params: Vec<Vec<u8>> = args
            .iter()
            .map(|arg| match *arg {
                KernelArg::Slice { .. } => {
                    arg.words().iter().flat_map(|w| w.to_le_bytes()).collect()
                }
                _ => arg.words()[0].to_le_bytes().to_vec(),
            })
            .collect();
        let params: Vec<&[u8]> = params.iter().map(Vec::as_slice).collect();
        let launch = Launch {
            grid: [config.blocks, 1, 1],
            block: [config.threads, 1, 1],
            dynamic_shared_bytes: 0,
            max_threads_per_block: 1024,
        };
        let fault = match state.device.launch(kernel, launch, &params) {
            Ok(()) => None,
            // Refused before it ran, as cuLaunchKernel refuses.
            Err(
                e @ (SimError::LaunchLimit { .. }
                | SimError::BadParams { .. }
                | SimError::UnknownEntry { .. }),
            ) => {
                return Err(BackendError::Launch {
                    kernel: kernel.to_owned(),
                    detail: e.to_string(),
                });
            }
            Err(fault) => Some(fault.to_string()),
        };
        state.fault = fault;
        EXECUTED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(kernel.to_owned());
        Ok(())
    }
}
