//! The simulated device: global memory, launches, and the interpreter.
//!
//! Blocks run one after another. Inside a block every thread runs on its own
//! until it reaches a synchronization point (`bar.sync`, `shfl.sync`) or
//! exits; the scheduler then performs whatever synchronization every needed
//! thread has arrived at, and reports a hang (divergent barrier, shuffle with
//! missing lanes) when nothing can make progress. This serial order is one
//! valid interleaving; the race check on shared memory is what tells whether
//! the result depends on it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::counts::LaunchCounts;
use crate::parse::{
    Addr, AtomOp, Bin, Cmp, Func, Instr, LOCAL_WINDOW, MemSpace, Op, Opnd, Rnd, SHARED_WINDOW,
    ShflMode, Sreg, Ty, Un, WINDOW_SIZE,
};
use crate::{At, Counts, Launch, Module, SharedAccess, SimError, Space};

mod arith;
mod block;
mod state;
mod step;

use arith::*;
use state::*;

/// First address `alloc` hands out; module data lies below it.
const HEAP_BASE: u64 = 0x1_0000_0000;
/// Unmapped bytes left after every allocation, so that small overruns land
/// in no allocation and are reported instead of touching a neighbour.
const REDZONE: u64 = 256;
/// The most local memory (all frames of a thread) the simulator allows.
const LOCAL_LIMIT: usize = 512 * 1024;
/// Static plus dynamic shared memory a block may use.
const SHARED_LIMIT: u64 = 48 * 1024;

/// One simulated GPU: a loaded [`Module`] and its global memory.
#[derive(Debug)]
pub struct Device {
    module: Arc<Module>,
    mem: BTreeMap<u64, Vec<u8>>,
    next: u64,
    executed: BTreeSet<String>,
    instructions: u64,
    step_limit: u64,
    strict: bool,
    /// Per entry, what its launches cost, while counting is on.
    counts: Option<BTreeMap<String, Counts>>,
}

impl Device {
    /// A device with the module loaded: its `.global` variables are laid out
    /// (with their initial bytes) at the addresses the module was decoded for.
    pub fn new(module: Arc<Module>) -> Device {
        let mut mem = BTreeMap::new();
        for (addr, bytes) in &module.globals {
            mem.insert(*addr, bytes.clone());
        }
        Device {
            module,
            mem,
            next: HEAP_BASE,
            executed: BTreeSet::new(),
            instructions: 0,
            step_limit: u64::MAX,
            strict: false,
            counts: None,
        }
    }

    /// Allocates `bytes` of zeroed global memory, 256-byte aligned; 0 bytes
    /// gives the null address 0, as `cudaMalloc` users expect.
    pub fn alloc(&mut self, bytes: usize) -> u64 {
        if bytes == 0 {
            return 0;
        }
        let base = self.next;
        self.next = (base + bytes as u64 + REDZONE).next_multiple_of(256);
        self.mem.insert(base, vec![0; bytes]);
        base
    }

    /// Frees an allocation made by [`Device::alloc`]. Freeing 0 does nothing.
    pub fn free(&mut self, address: u64) -> Result<(), SimError> {
        if address == 0 {
            return Ok(());
        }
        if address < HEAP_BASE || self.mem.remove(&address).is_none() {
            return Err(SimError::FreeOfUnknown { address });
        }
        Ok(())
    }

    /// Whether `[address, address + bytes)` lies inside one live allocation.
    pub fn is_allocated(&mut self, address: u64, bytes: usize) -> bool {
        address >= HEAP_BASE && global_slice(&mut self.mem, address, bytes as u64).is_some()
    }

    fn host_slice(&mut self, address: u64, size: usize) -> Result<&mut [u8], SimError> {
        global_slice(&mut self.mem, address, size as u64)
            .ok_or(SimError::HostOutOfBounds { address, size })
    }

    /// Copies host bytes into global memory.
    pub fn write(&mut self, address: u64, bytes: &[u8]) -> Result<(), SimError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.host_slice(address, bytes.len())?
            .copy_from_slice(bytes);
        Ok(())
    }

    /// Copies global memory into `out`.
    pub fn read(&self, address: u64, out: &mut [u8]) -> Result<(), SimError> {
        if out.is_empty() {
            return Ok(());
        }
        let size = out.len();
        let (base, buf) = self
            .mem
            .range(..=address)
            .next_back()
            .ok_or(SimError::HostOutOfBounds { address, size })?;
        let off = (address - base) as usize;
        let src = buf
            .get(off..off + size)
            .ok_or(SimError::HostOutOfBounds { address, size })?;
        out.copy_from_slice(src);
        Ok(())
    }

    /// Copies `bytes` of global memory from `from` to `to` (device to device).
    pub fn copy(&mut self, from: u64, to: u64, bytes: usize) -> Result<(), SimError> {
        if bytes == 0 {
            return Ok(());
        }
        let mut tmp = vec![0; bytes];
        self.read(from, &mut tmp)?;
        self.write(to, &tmp)
    }

    /// Entries that were launched at least once.
    pub fn executed(&self) -> &BTreeSet<String> {
        &self.executed
    }

    /// Instructions executed so far, over all launches and threads.
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// Caps the instructions one launch may execute (all threads together),
    /// so that a kernel stuck in a loop fails with [`SimError::StepLimit`]
    /// instead of hanging. No cap unless set.
    pub fn set_step_limit(&mut self, per_launch: u64) {
        self.step_limit = per_launch;
    }

    /// In strict mode every read of an undefined register is an error, not
    /// only the uses that matter (see [`SimError::UninitializedRegister`]).
    /// LLVM's code reads undefined registers legitimately (a value that is
    /// `undef` on one path, computed on and then discarded), so this mode
    /// reports correct kernels too; it exists to find where that happens.
    pub fn set_strict_registers(&mut self, strict: bool) {
        self.strict = strict;
    }

    /// Starts counting what each entry's launches cost ([`Counts`]), from zero, or stops
    /// (`false`) and forgets the counts. Off by default: counting slows the simulator.
    pub fn count(&mut self, on: bool) {
        self.counts = on.then(BTreeMap::new);
    }

    /// The counts per entry since counting was switched on; `None` while it is off.
    pub fn counts(&self) -> Option<&BTreeMap<String, Counts>> {
        self.counts.as_ref()
    }

    /// The module this device runs.
    pub fn module(&self) -> &Arc<Module> {
        &self.module
    }

    /// Runs entry `entry` over the grid; `params` are the argument bytes in
    /// declaration order. Stops at the first error, leaving memory as the
    /// threads that ran so far left it.
    pub fn launch(
        &mut self,
        entry: &str,
        launch: Launch,
        params: &[&[u8]],
    ) -> Result<(), SimError> {
        let module = Arc::clone(&self.module);
        let fidx = module.entry(entry).ok_or_else(|| SimError::UnknownEntry {
            name: entry.to_string(),
        })?;
        let func = &module.funcs[fidx];
        let kernel = || entry.to_string();
        if params.len() != func.params.len() {
            return Err(SimError::BadParams {
                kernel: kernel(),
                why: format!(
                    "{} arguments given, {} declared",
                    params.len(),
                    func.params.len()
                ),
            });
        }
        let mut pbuf = vec![0u8; func.param_bytes as usize];
        for ((p, bytes), &(off, size)) in func.params.iter().zip(params).zip(&func.param_slots) {
            if bytes.len() != p.size_bytes {
                return Err(SimError::BadParams {
                    kernel: kernel(),
                    why: format!(
                        "parameter {} takes {} bytes, {} given",
                        p.name,
                        p.size_bytes,
                        bytes.len()
                    ),
                });
            }
            pbuf[off as usize..(off + size) as usize].copy_from_slice(bytes);
        }
        check_limits(entry, &launch, &module)?;
        let instructions_before = self.instructions;
        self.executed.insert(entry.to_string());
        let shared_bytes = module.shared_dynamic_offset + launch.dynamic_shared_bytes as u64;
        let mut launched = 0u64;
        let mut pool = Vec::new();
        let mut counting = self.counts.is_some().then(LaunchCounts::default);
        let [gx, gy, gz] = launch.grid;
        for bz in 0..gz {
            for by in 0..gy {
                for bx in 0..gx {
                    let mut blk = BlockRun {
                        module: &module,
                        kernel: entry,
                        entry: fidx as u32,
                        launch: &launch,
                        block: [bx, by, bz],
                        mem: &mut self.mem,
                        shared: vec![0; shared_bytes as usize],
                        shadow: vec![Shadow::default(); shared_bytes as usize],
                        epoch: 1,
                        count: launched,
                        limit: self.step_limit,
                        strict: self.strict,
                        counting: counting.as_mut(),
                    };
                    let r = blk.run(&pbuf, &mut pool);
                    self.instructions += blk.count - launched;
                    launched = blk.count;
                    r?;
                }
            }
        }
        if let (Some(mut launch_counts), Some(counts)) = (counting, self.counts.as_mut()) {
            let [tx, ty, tz] = launch.block;
            let block_threads = u64::from(tx * ty * tz).max(1);
            launch_counts.counts.launches = 1;
            launch_counts.counts.threads = block_threads * u64::from(gx * gy * gz);
            launch_counts.counts.instructions = self.instructions - instructions_before;
            // Barrier arrivals were counted per thread.
            launch_counts.counts.block_barriers /= block_threads;
            *counts.entry(entry.to_string()).or_default() += launch_counts.finish();
        }
        Ok(())
    }
}

fn check_limits(entry: &str, l: &Launch, module: &Module) -> Result<(), SimError> {
    let fail = |why: String| {
        Err(SimError::LaunchLimit {
            kernel: entry.to_string(),
            why,
        })
    };
    let [bx, by, bz] = l.block;
    let [gx, gy, gz] = l.grid;
    let threads = bx as u64 * by as u64 * bz as u64;
    if l.block.contains(&0) || l.grid.contains(&0) {
        return fail(format!("empty grid {:?} or block {:?}", l.grid, l.block));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return fail(format!("block {:?} exceeds 1024 x 1024 x 64", l.block));
    }
    if threads > 1024 || threads > l.max_threads_per_block as u64 {
        return fail(format!(
            "{threads} threads per block, at most {} allowed",
            l.max_threads_per_block.min(1024)
        ));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return fail(format!("grid {:?} exceeds 2^31-1 x 65535 x 65535", l.grid));
    }
    let entry_static = module.funcs[module.entry(entry).expect("checked")].static_shared;
    let shared = entry_static + l.dynamic_shared_bytes as u64;
    if shared > SHARED_LIMIT {
        return fail(format!(
            "{shared} bytes of shared memory, at most {SHARED_LIMIT}"
        ));
    }
    Ok(())
}

/// The slice of global memory at `[address, address+size)`, if it lies
/// inside one allocation.
fn global_slice(mem: &mut BTreeMap<u64, Vec<u8>>, address: u64, size: u64) -> Option<&mut [u8]> {
    let (base, buf) = mem.range_mut(..=address).next_back()?;
    let off = (address - base) as usize;
    buf.get_mut(off..off.checked_add(size as usize)?)
}
