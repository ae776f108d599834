//! The launcher: a [`Driver`] with the user's launch sizes, and the checks every launch gets.
//! Safe code; the evaluator, the normal-equations pass and the device vectors all go through
//! it.

use super::abi::{KernelArg, Launch};
use super::driver::{Buffer, Driver, KernelCounts, host_zeros};
use crate::backend::launch::{LaunchConfig, LaunchOverride, RawArg};
use crate::error::BackendError;
use gpu_kernels::Values;
use gpu_kernels::raw::RawKernel;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A device with cudamin's kernels loaded, shared by the evaluators and vectors it made.
pub struct Launcher {
    driver: Arc<dyn Driver>,
    launch: LaunchOverride,
    counts: TrafficCounts,
}

/// What a device has been asked to do so far, counted where every call passes: the cost of a
/// solve that grows with round trips and copies rather than with arithmetic, and the same on
/// the simulator as on a GPU. Its waits and writes are what a device path must keep from
/// growing with `n`: past the earliest breakpoints, a Cauchy walk that fetched each one alone
/// made L-BFGS-B far slower on a GPU than on the CPU. (Frees, which wait on CUDA too, are not
/// counted: a solve frees what it allocated.)
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Kernel launches and copies on the device: enqueued, not waited for.
    pub launches: u64,
    /// Copies to the host, each of which waits for all earlier work.
    pub waits: u64,
    /// Copies to the device: a CUDA device waits for the stream at each (before a small one is
    /// staged, after a large one).
    pub writes: u64,
    /// Device allocations (a solve's vectors, tables and scratch).
    pub allocations: u64,
    /// Words (`f64`) copied to the device.
    pub words_to_device: u64,
    /// Words copied to the host.
    pub words_to_host: u64,
    /// Modules the driver has loaded: on a device, one per kernel on its first launch; on the
    /// simulator, the whole PTX once.
    pub modules_loaded: u64,
}

impl std::ops::Sub for Traffic {
    type Output = Traffic;

    /// The traffic between two readings, the earlier one subtracted (the counts only grow; a
    /// later reading subtracted gives zeros, not a panic).
    fn sub(self, earlier: Traffic) -> Traffic {
        Traffic {
            launches: self.launches.saturating_sub(earlier.launches),
            waits: self.waits.saturating_sub(earlier.waits),
            writes: self.writes.saturating_sub(earlier.writes),
            allocations: self.allocations.saturating_sub(earlier.allocations),
            words_to_device: self.words_to_device.saturating_sub(earlier.words_to_device),
            words_to_host: self.words_to_host.saturating_sub(earlier.words_to_host),
            modules_loaded: self.modules_loaded.saturating_sub(earlier.modules_loaded),
        }
    }
}

/// [`Traffic`]'s counters, shared by every thread using the launcher.
#[derive(Default)]
struct TrafficCounts {
    launches: AtomicU64,
    waits: AtomicU64,
    writes: AtomicU64,
    allocations: AtomicU64,
    words_to_device: AtomicU64,
    words_to_host: AtomicU64,
}

/// Adds `by` to a counter; the counts are statistics, ordered with nothing.
fn count(counter: &AtomicU64, by: usize) {
    counter.fetch_add(by as u64, Ordering::Relaxed);
}

impl Launcher {
    /// Launches on `driver`, with `launch` (checked by the caller) overriding the sizes.
    pub(crate) fn new(driver: Arc<dyn Driver>, launch: LaunchOverride) -> Self {
        Self {
            driver,
            launch,
            counts: TrafficCounts::default(),
        }
    }

    /// The launches, waits, allocations and copies asked of the device so far.
    pub fn traffic(&self) -> Traffic {
        let c = &self.counts;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Traffic {
            launches: get(&c.launches),
            waits: get(&c.waits),
            writes: get(&c.writes),
            allocations: get(&c.allocations),
            words_to_device: get(&c.words_to_device),
            words_to_host: get(&c.words_to_host),
            modules_loaded: self.driver.module_loads().count,
        }
    }

    /// Seconds the driver has spent loading kernels so far (the JIT compilation of each one
    /// launched, unless the driver's compute cache held it).
    pub fn module_load_seconds(&self) -> f64 {
        self.driver.module_loads().seconds
    }

    /// Starts counting each kernel's cost, from zero, or stops; whether the driver counts (the
    /// simulator alone does).
    pub fn count_kernels(&self, on: bool) -> bool {
        self.driver.count_kernels(on)
    }

    /// The counts per kernel since counting started; `None` while it is off.
    pub fn kernel_counts(&self) -> Option<BTreeMap<String, KernelCounts>> {
        self.driver.kernel_counts()
    }

    /// The device, e.g. "NVIDIA A100-SXM4-40GB (sm_80, 108 SMs, 39.4 GiB)".
    pub fn device_summary(&self) -> &str {
        self.driver.summary()
    }

    /// Whether the device is the PTX simulator.
    pub(super) fn is_simulated(&self) -> bool {
        self.driver.is_simulated()
    }

    /// Waits until all work queued so far is complete.
    pub(super) fn wait(&self) -> Result<(), BackendError> {
        self.driver.wait()
    }

    /// Waits until all work on the device is complete, another library's too
    /// ([`Driver::settle`]).
    pub(super) fn settle(&self) {
        self.driver.settle()
    }

    /// Refuses `threads` per block where `kernel` cannot run them: the limit depends on the
    /// kernel's registers (a kernel using 80 registers cannot launch 1024 threads).
    fn check_threads(&self, kernel: &str, threads: u32) -> Result<(), BackendError> {
        let limits = self.driver.limits(kernel)?;
        if threads > limits.max_threads {
            return Err(BackendError::InvalidLaunch(format!(
                "{threads} threads per block: kernel `{kernel}` uses {} registers per thread, so \
                 this device runs at most {} threads in one of its blocks",
                limits.registers, limits.max_threads
            )));
        }
        Ok(())
    }

    /// A configuration for `kernel` over `work` items: the occupancy API's block size for the
    /// kernel's register use (whole warps), and no more blocks than are resident at once (the
    /// kernels loop grid-stride) nor than the work needs; or what the user's
    /// [`LaunchOverride`] says, if this kernel can run it.
    pub(super) fn config(&self, kernel: &str, work: usize) -> Result<LaunchConfig, BackendError> {
        self.config_within(kernel, work, u32::MAX)
    }

    /// As [`config`](Launcher::config), with at most `cap` threads per block (whole warps)
    /// unless the user's [`LaunchOverride`] says otherwise: for a kernel correct at any block
    /// size that does its best work at `cap` or fewer.
    pub(super) fn config_within(
        &self,
        kernel: &str,
        work: usize,
        cap: u32,
    ) -> Result<LaunchConfig, BackendError> {
        let limits = self.driver.limits(kernel)?;
        let threads = match self.launch.threads {
            Some(threads) => {
                self.check_threads(kernel, threads)?;
                threads
            }
            None => (limits.suggested_threads.min(cap) / 32 * 32).max(32),
        };
        let needed = work.div_ceil(threads as usize).max(1);
        let resident = limits.resident_blocks.max(self.driver.multiprocessors()) as usize;
        Ok(LaunchConfig {
            blocks: self.launch.blocks.unwrap_or(needed.min(resident) as u32),
            threads,
        })
    }

    /// One configuration for several reduction `kernels` over `work` items, so that each sums
    /// in the same order: [`REDUCTION_THREADS`] per block (fewer if one of them cannot run as
    /// many) and [`REDUCTION_BLOCKS_PER_SM`] blocks per multiprocessor, at most what the work
    /// needs; or what the user's [`LaunchOverride`] says, if every kernel can run it. Streaming
    /// reductions need many loads in flight, more than the kernels' own occupancy answers keep
    /// to read at full memory bandwidth.
    pub(super) fn reduction_config(
        &self,
        kernels: &[&str],
        work: usize,
    ) -> Result<LaunchConfig, BackendError> {
        let threads = match self.launch.threads {
            Some(threads) => {
                for kernel in kernels {
                    self.check_threads(kernel, threads)?;
                }
                threads
            }
            None => kernels
                .iter()
                .try_fold(REDUCTION_THREADS, |threads, kernel| {
                    let allowed = self.driver.limits(kernel)?.max_threads / 32 * 32;
                    Ok::<_, BackendError>(threads.min(allowed))
                })?
                .max(32),
        };
        let needed = work.div_ceil(threads as usize).max(1);
        let most = REDUCTION_BLOCKS_PER_SM * self.driver.multiprocessors() as usize;
        Ok(LaunchConfig {
            blocks: self.launch.blocks.unwrap_or(needed.min(most) as u32),
            threads,
        })
    }

    /// Enqueues one launch.
    pub(super) fn launch(&self, launch: &Launch, config: LaunchConfig) -> Result<(), BackendError> {
        count(&self.counts.launches, 1);
        self.driver.launch(&launch.kernel, config, &launch.args)
    }

    /// `len` zeros on the device.
    pub(super) fn alloc(&self, what: &'static str, len: usize) -> Result<Buffer, BackendError> {
        count(&self.counts.allocations, 1);
        let address = self.driver.alloc(what, len)?;
        Ok(Buffer::new(address, len, self.driver.clone()))
    }

    /// `len` f64 from `address`, memory another library allocated on this device, read where
    /// they lie ([`Driver::check_foreign`]).
    pub(super) fn foreign(
        &self,
        address: u64,
        len: usize,
        synchronize: bool,
    ) -> Result<Buffer, BackendError> {
        self.driver.check_foreign(address, len, synchronize)?;
        Ok(Buffer::foreign(address, len, self.driver.clone()))
    }

    /// A device copy of `values`.
    pub(super) fn upload(
        &self,
        what: &'static str,
        values: &[f64],
    ) -> Result<Buffer, BackendError> {
        let buffer = self.alloc(what, values.len())?;
        self.write(&buffer, values)?;
        Ok(buffer)
    }

    /// A device copy of a data table's values, as they are stored: f32 values two to a word,
    /// in memory order, so the device reads them as the f32s they are.
    pub(super) fn upload_values(
        &self,
        what: &'static str,
        values: Values<'_>,
    ) -> Result<Buffer, BackendError> {
        match values {
            Values::F64(values) => self.upload(what, values),
            Values::F32(values) => {
                let mut words = host_zeros(values.len().div_ceil(2))?;
                for (word, pair) in words.iter_mut().zip(values.chunks(2)) {
                    let mut bytes = [0; 8];
                    for (to, value) in bytes.chunks_mut(4).zip(pair) {
                        to.copy_from_slice(&value.to_ne_bytes());
                    }
                    *word = f64::from_ne_bytes(bytes);
                }
                self.upload(what, &words)
            }
        }
    }

    /// `to ← values`; `values` may change once this returns.
    pub(super) fn write(&self, to: &Buffer, values: &[f64]) -> Result<(), BackendError> {
        check_lengths("a copy to the device", to.len(), values.len())?;
        self.write_at(to, 0, values)
    }

    /// `to[at..at + values.len()] ← values`, refused past `to`'s end.
    pub(super) fn write_at(
        &self,
        to: &Buffer,
        at: usize,
        values: &[f64],
    ) -> Result<(), BackendError> {
        if at
            .checked_add(values.len())
            .is_none_or(|end| end > to.len())
        {
            return Err(BackendError::Kernel {
                kernel: "a copy to the device".to_owned(),
                reason: format!(
                    "got {} entries at {at} for a buffer of {}",
                    values.len(),
                    to.len()
                ),
            });
        }
        // An empty copy is no copy (the driver returns at once).
        count(&self.counts.writes, usize::from(!values.is_empty()));
        count(&self.counts.words_to_device, values.len());
        self.driver.write(to, at, values)
    }

    /// Each `out ←` the first `out.len()` entries of `from`, after all earlier work (whose fault
    /// `after` names).
    pub(super) fn read(
        &self,
        reads: &mut [(&Buffer, &mut [f64])],
        after: &str,
    ) -> Result<(), BackendError> {
        for (from, out) in reads.iter() {
            if out.len() > from.len() {
                return Err(BackendError::Kernel {
                    kernel: "a copy from the device".to_owned(),
                    reason: format!("asked {} entries of a buffer of {}", out.len(), from.len()),
                });
            }
        }
        count(&self.counts.waits, 1);
        count(
            &self.counts.words_to_host,
            reads.iter().map(|(_, out)| out.len()).sum(),
        );
        self.driver.read(reads, after)
    }

    /// `from` in new host memory, after all earlier work (whose fault `after` names).
    pub(super) fn read_new(&self, from: &Buffer, after: &str) -> Result<Vec<f64>, BackendError> {
        count(&self.counts.waits, 1);
        count(&self.counts.words_to_host, from.len());
        self.driver.read_new(from, after)
    }

    /// `to ← from`, on the device.
    pub(super) fn copy(&self, from: &Buffer, to: &Buffer) -> Result<(), BackendError> {
        check_lengths("a copy on the device", to.len(), from.len())?;
        count(&self.counts.launches, 1);
        self.driver.copy(from, to)
    }

    /// Runs a raw kernel: uploads its slices, launches it, copies its outputs back and waits.
    /// Arguments were checked against the kernel's parameters by the caller.
    pub fn launch_raw(
        &self,
        kernel: &RawKernel,
        config: LaunchConfig,
        args: &mut [RawArg<'_>],
    ) -> Result<(), BackendError> {
        self.launch_raw_after(kernel, config, Vec::new(), args, Outputs::Uploaded)
    }

    /// As [`launch_raw`](Self::launch_raw), the kernel's first arguments `leading` (slices
    /// already on the device), then `args`, whose outputs start as `outputs` says.
    pub(super) fn launch_raw_after(
        &self,
        kernel: &RawKernel,
        config: LaunchConfig,
        leading: Vec<KernelArg>,
        args: &mut [RawArg<'_>],
        outputs: Outputs,
    ) -> Result<(), BackendError> {
        self.check_threads(kernel.name, config.threads)?;
        let buffers = args
            .iter()
            .map(|arg| match (arg, outputs) {
                (RawArg::In(values), _) => self.upload("a raw kernel input", values).map(Some),
                (RawArg::Out(values), Outputs::Uploaded) => {
                    self.upload("a raw kernel output", values).map(Some)
                }
                (RawArg::Out(values), Outputs::Written) => {
                    self.alloc("a raw kernel output", values.len()).map(Some)
                }
                (RawArg::F64(_) | RawArg::U64(_), _) => Ok(None),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let kernel_args = leading
            .into_iter()
            .chain(
                args.iter()
                    .zip(&buffers)
                    .map(|(arg, buffer)| match (arg, buffer) {
                        (RawArg::F64(v), _) => KernelArg::F64(*v),
                        (RawArg::U64(v), _) => KernelArg::U64(*v),
                        (_, buffer) => slice(buffer),
                    }),
            )
            .collect();
        let launch = Launch::raw(kernel, kernel_args).ok_or_else(|| BackendError::Kernel {
            kernel: kernel.name.to_owned(),
            reason: "was given arguments that do not match its parameters".to_owned(),
        })?;
        self.launch(&launch, config)?;
        let mut outputs: Vec<(&Buffer, &mut [f64])> = args
            .iter_mut()
            .zip(&buffers)
            .filter_map(|(arg, buffer)| match (arg, buffer) {
                (RawArg::Out(values), Some(buffer)) => Some((buffer, &mut **values)),
                _ => None,
            })
            .collect();
        // Waits for the kernel even when it has no outputs, so that its fault is reported here.
        self.read(&mut outputs, kernel.name)
    }
}

/// The slice argument of `buffer`: empty for none.
pub(super) fn slice(buffer: &Option<Buffer>) -> KernelArg {
    KernelArg::Slice {
        ptr: buffer.as_ref().map_or(0, Buffer::address),
        len: buffer.as_ref().map_or(0, |b| b.len() as u64),
    }
}

/// What a raw kernel's output buffers hold on the device when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outputs {
    /// The host's values, uploaded: the kernel may read them, as Numba's copied arrays.
    Uploaded,
    /// Zeros, nothing uploaded: the kernel writes every value it is read back for.
    Written,
}

/// Threads per block of the vector reductions ([`Launcher::reduction_config`]).
const REDUCTION_THREADS: u32 = 512;
/// Blocks per multiprocessor of the vector reductions: 1024 threads each, which kernels of up to
/// 64 registers (the fused passes) all hold at once; more blocks would lengthen the second
/// stage, one thread adding every block's partial in order.
const REDUCTION_BLOCKS_PER_SM: usize = 2;

/// Refuses a copy between a buffer and a slice of different lengths, or a launch on a vector of
/// the wrong length (`buffer`: the length expected).
pub(super) fn check_lengths(what: &str, buffer: usize, other: usize) -> Result<(), BackendError> {
    if buffer == other {
        Ok(())
    } else {
        Err(BackendError::Kernel {
            kernel: what.to_owned(),
            reason: format!("got {other} entries for a buffer of {buffer}"),
        })
    }
}

/// A thread for each of `rows` rows of partials, whole warps, as few blocks as that takes.
pub(super) fn thread_per_row(rows: usize) -> LaunchConfig {
    let warps = rows.div_ceil(32) as u32;
    LaunchConfig {
        blocks: warps.div_ceil(32),
        threads: 32 * warps.min(32),
    }
}
