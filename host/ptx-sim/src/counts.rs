//! What launches cost, as the simulator can count it: instructions, double-precision
//! operations, memory traffic by space, barriers. The counts are per entry and summed over
//! every launch since counting was switched on ([`Device::count`](crate::Device::count)).
//!
//! Global traffic is counted twice. `global_*_bytes` is what the threads asked for, access
//! by access. `global_sectors_*` counts the distinct 32-byte sectors a launch touched: what a
//! GPU moves from DRAM when each sector is fetched once, as a streaming kernel's data are.

use std::collections::HashSet;
use std::ops::AddAssign;

/// Bytes in a memory sector, the unit a GPU's L2 and DRAM move.
pub const SECTOR_BYTES: u64 = 32;

/// The counts of one entry's launches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Launches.
    pub launches: u64,
    /// Threads over all launches.
    pub threads: u64,
    /// Instructions executed, all threads together.
    pub instructions: u64,
    /// Double-precision floating-point operations: a fused multiply-add counts 2, every other
    /// f64 arithmetic instruction 1.
    pub fp64_ops: u64,
    /// Bytes the threads loaded from global memory.
    pub global_read_bytes: u64,
    /// Bytes the threads stored to global memory (atomics included).
    pub global_write_bytes: u64,
    /// Distinct 32-byte global sectors each launch read, summed over launches.
    pub global_sectors_read: u64,
    /// Distinct 32-byte global sectors each launch wrote, summed over launches.
    pub global_sectors_written: u64,
    /// Bytes loaded from and stored to local memory (a thread's stack).
    pub local_bytes: u64,
    /// Bytes loaded from and stored to shared memory.
    pub shared_bytes: u64,
    /// Barriers the blocks passed (`bar.sync`, once per block each time).
    pub block_barriers: u64,
}

impl AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.launches += o.launches;
        self.threads += o.threads;
        self.instructions += o.instructions;
        self.fp64_ops += o.fp64_ops;
        self.global_read_bytes += o.global_read_bytes;
        self.global_write_bytes += o.global_write_bytes;
        self.global_sectors_read += o.global_sectors_read;
        self.global_sectors_written += o.global_sectors_written;
        self.local_bytes += o.local_bytes;
        self.shared_bytes += o.shared_bytes;
        self.block_barriers += o.block_barriers;
    }
}

/// One launch's counts while it runs: the totals, and the sectors touched so far.
#[derive(Debug, Default)]
pub(crate) struct LaunchCounts {
    pub counts: Counts,
    sectors_read: HashSet<u64>,
    sectors_written: HashSet<u64>,
}

impl LaunchCounts {
    /// A global access of `size` bytes at `address`.
    pub fn global(&mut self, address: u64, size: u32, write: bool) {
        let (bytes, sectors) = if write {
            (
                &mut self.counts.global_write_bytes,
                &mut self.sectors_written,
            )
        } else {
            (&mut self.counts.global_read_bytes, &mut self.sectors_read)
        };
        *bytes += u64::from(size);
        let last = address + u64::from(size.max(1)) - 1;
        for sector in address / SECTOR_BYTES..=last / SECTOR_BYTES {
            sectors.insert(sector);
        }
    }

    /// The launch's counts, its distinct sectors included.
    pub fn finish(mut self) -> Counts {
        self.counts.global_sectors_read = self.sectors_read.len() as u64;
        self.counts.global_sectors_written = self.sectors_written.len() as u64;
        self.counts
    }
}
