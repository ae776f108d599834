//! A PTX simulator: runs the PTX that cudamin's builder emits on the CPU, with
//! CUDA's grid, block and warp semantics, and with the checks that
//! compute-sanitizer makes (memcheck, racecheck on shared memory, synccheck,
//! uninitialized registers).
//!
//! The PTX is parsed once into a [`Module`] whose instructions are pre-decoded
//! (registers resolved to indices, labels to instruction positions), so the
//! interpreter never looks at strings while it runs. A [`Device`] holds global
//! memory and launches entries of one module.
//!
//! Anything the parser does not understand is refused with a [`ParseError`]
//! naming the line and the text: a simulator that guesses would hide exactly
//! the differences it exists to find.
//!
//! # Memory
//!
//! A generic address tells its space by where it lies: global allocations
//! start at `0x1_0000_0000` (module `.global` data at `0x1000_0000`), the
//! block's shared memory is the window at `0x7e00_0000_0000` and the thread's
//! local memory the window at `0x7f00_0000_0000`; `cvta` adds or subtracts
//! the window base. Every allocation is followed by an unmapped red zone.
//!
//! # Checks
//!
//! * memcheck: each access lies in one global allocation, in the block's
//!   shared memory, or in the thread's live local frames, and is aligned to
//!   its size ([`SimError::MemoryOutOfBounds`], [`SimError::Misaligned`]);
//! * racecheck: two threads of a block touching one shared byte between two
//!   `bar.sync`, one of them writing ([`SimError::SharedRace`]; atomics exempt);
//! * synccheck: a `bar.sync` that not all threads of the block reach, or a
//!   `shfl.sync` whose member mask names lanes that never arrive;
//! * undefined registers: definedness propagates through arithmetic and is
//!   an error where it matters ([`SimError::UninitializedRegister`]).
//!
//! # Floating point
//!
//! Double-precision `.rn` arithmetic, `fma.rn`, `rcp.rn`, `sqrt.rn` and the
//! conversions are IEEE-exact, as on the GPU. Other rounding modes and the
//! approximate instructions are refused. NaN payloads propagate as on the
//! host; NaNs made from non-NaN operands may differ in their bits.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod counts;
mod exec;
mod parse;

use std::collections::HashMap;
use std::fmt;

pub use counts::{Counts, SECTOR_BYTES};
pub use exec::Device;

/// A kernel parameter as declared in an `.entry` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// The parameter's name in the PTX.
    pub name: String,
    /// Size in bytes that the launch must supply.
    pub size_bytes: usize,
    /// Alignment of the parameter in the parameter space.
    pub align: usize,
}

/// Launch configuration of one kernel launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// Number of blocks in x, y and z.
    pub grid: [u32; 3],
    /// Number of threads per block in x, y and z.
    pub block: [u32; 3],
    /// Bytes of dynamic (`.extern .shared`) shared memory per block.
    pub dynamic_shared_bytes: u32,
    /// The most threads a block may have for this kernel: 1024, or the figure
    /// the driver reports for a kernel whose register use limits it.
    pub max_threads_per_block: u32,
}

/// A PTX text that could not be parsed or decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// 1-based line of the offending statement.
    pub line: usize,
    /// The statement's text.
    pub text: String,
    /// Why it was refused.
    pub why: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PTX line {}: {}: `{}`", self.line, self.why, self.text)
    }
}

impl std::error::Error for ParseError {}

/// A parsed and pre-decoded PTX module. Immutable once built, so one module
/// can back any number of devices and threads.
#[derive(Debug)]
pub struct Module {
    pub(crate) funcs: Vec<parse::Func>,
    pub(crate) by_name: HashMap<String, usize>,
    /// Module-scope `.global` variables: (address, initial bytes).
    pub(crate) globals: Vec<(u64, Vec<u8>)>,
    /// Offset of the dynamic shared window: the static `.shared` variables
    /// lie below it.
    pub(crate) shared_dynamic_offset: u64,
}

impl Module {
    /// Parses PTX text and decodes every function in it.
    pub fn parse(ptx: &str) -> Result<Module, ParseError> {
        parse::parse_module(ptx)
    }

    /// Names of the `.entry` kernels, in the order of the PTX.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.funcs
            .iter()
            .filter(|f| f.is_entry)
            .map(|f| f.name.as_str())
    }

    /// The declared parameters of an entry, or `None` if there is no such entry.
    pub fn params(&self, entry: &str) -> Option<&[Param]> {
        let f = &self.funcs[*self.by_name.get(entry)?];
        f.is_entry.then_some(f.params.as_slice())
    }

    pub(crate) fn entry(&self, name: &str) -> Option<usize> {
        let &i = self.by_name.get(name)?;
        self.funcs[i].is_entry.then_some(i)
    }
}

/// A memory space, as named in errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Device global memory.
    Global,
    /// The block's shared memory.
    Shared,
    /// The thread's local memory (stack frames).
    Local,
    /// Kernel or function parameters.
    Param,
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::Local => "local",
            Space::Param => "param",
        })
    }
}

/// Where in a launch something happened: kernel, block, thread, PTX line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct At {
    /// The entry that was launched.
    pub kernel: String,
    /// Block index (x, y, z).
    pub block: [u32; 3],
    /// Thread index within the block (x, y, z).
    pub thread: [u32; 3],
    /// 1-based PTX line of the instruction.
    pub line: usize,
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [bx, by, bz] = self.block;
        let [tx, ty, tz] = self.thread;
        write!(
            f,
            "kernel {} block ({bx},{by},{bz}) thread ({tx},{ty},{tz}) line {}",
            self.kernel, self.line
        )
    }
}

/// One access of a shared-memory race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedAccess {
    /// Thread index within the block.
    pub thread: [u32; 3],
    /// Whether it was a write.
    pub write: bool,
    /// PTX line of the access.
    pub line: usize,
}

impl fmt::Display for SharedAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.thread;
        let what = if self.write { "write" } else { "read" };
        write!(f, "{what} by thread ({x},{y},{z}) at line {}", self.line)
    }
}

/// Everything that can go wrong on a simulated device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// An access outside every allocation of its space.
    MemoryOutOfBounds {
        /// Where it happened.
        at: At,
        /// The space accessed.
        space: Space,
        /// The address (generic or space address, as the instruction used it).
        address: u64,
        /// Access size in bytes.
        size: u32,
        /// Whether it was a write.
        write: bool,
    },
    /// An access not aligned to its size.
    Misaligned {
        /// Where it happened.
        at: At,
        /// The space accessed.
        space: Space,
        /// The address.
        address: u64,
        /// Access size in bytes.
        size: u32,
    },
    /// Two threads of a block touched the same shared byte between two
    /// barriers, at least one of them writing.
    SharedRace {
        /// The kernel.
        kernel: String,
        /// The block.
        block: [u32; 3],
        /// Shared-space address of the byte.
        address: u64,
        /// The earlier access.
        first: SharedAccess,
        /// The later access.
        second: SharedAccess,
    },
    /// A `bar.sync` that not every thread of the block reached.
    DivergentBarrier {
        /// The kernel.
        kernel: String,
        /// The block.
        block: [u32; 3],
        /// What the threads were doing instead.
        detail: String,
    },
    /// A `shfl.sync` whose member mask names lanes that never joined it.
    ShuffleMaskMissingLanes {
        /// Where it happened (the first waiting lane).
        at: At,
        /// The member mask.
        mask: u32,
        /// Lanes named in the mask that did not arrive.
        missing: u32,
    },
    /// An undefined register value used where it matters: as a guard or
    /// branch index, an address, a value stored to memory or passed on, or a
    /// shuffle or barrier operand. Arithmetic on undefined values only
    /// propagates undefinedness (LLVM does it with `undef`); the register
    /// named is the one used, which may have inherited its undefinedness.
    /// [`Device::set_strict_registers`] reports every read instead.
    UninitializedRegister {
        /// Where it happened.
        at: At,
        /// The register's PTX name.
        register: String,
    },
    /// The kernel executed `trap`.
    Trap {
        /// Where it happened.
        at: At,
    },
    /// The launch configuration exceeds a CUDA limit.
    LaunchLimit {
        /// The kernel.
        kernel: String,
        /// Which limit.
        why: String,
    },
    /// No entry of that name in the module.
    UnknownEntry {
        /// The name asked for.
        name: String,
    },
    /// Wrong number or sizes of kernel arguments.
    BadParams {
        /// The kernel.
        kernel: String,
        /// What was wrong.
        why: String,
    },
    /// `free` of an address that is not the start of a live allocation.
    FreeOfUnknown {
        /// The address.
        address: u64,
    },
    /// A host-side read, write or copy outside the allocations.
    HostOutOfBounds {
        /// The address.
        address: u64,
        /// Bytes asked for.
        size: usize,
    },
    /// Thread-local memory (frames of nested calls) grew past its limit.
    StackOverflow {
        /// Where it happened.
        at: At,
    },
    /// The launch executed more instructions than [`Device::set_step_limit`]
    /// allows: most likely a loop that never ends.
    StepLimit {
        /// The thread that was running when the cap was reached.
        at: At,
        /// The cap.
        limit: u64,
    },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::MemoryOutOfBounds {
                at,
                space,
                address,
                size,
                write,
            } => {
                let what = if *write { "write" } else { "read" };
                write!(
                    f,
                    "out-of-bounds {space} {what} of {size} bytes at {address:#x}: {at}"
                )
            }
            SimError::Misaligned {
                at,
                space,
                address,
                size,
            } => write!(
                f,
                "misaligned {space} access of {size} bytes at {address:#x}: {at}"
            ),
            SimError::SharedRace {
                kernel,
                block,
                address,
                first,
                second,
            } => {
                let [x, y, z] = block;
                write!(
                    f,
                    "shared-memory race at shared address {address:#x} in kernel {kernel} \
                     block ({x},{y},{z}): {first}, then {second}, with no barrier between"
                )
            }
            SimError::DivergentBarrier {
                kernel,
                block,
                detail,
            } => {
                let [x, y, z] = block;
                write!(
                    f,
                    "divergent barrier in kernel {kernel} block ({x},{y},{z}): {detail}"
                )
            }
            SimError::ShuffleMaskMissingLanes { at, mask, missing } => write!(
                f,
                "shfl.sync with member mask {mask:#010x} but lanes {missing:#010x} never joined: {at}"
            ),
            SimError::UninitializedRegister { at, register } => {
                write!(f, "read of uninitialized register {register}: {at}")
            }
            SimError::Trap { at } => write!(f, "trap: {at}"),
            SimError::LaunchLimit { kernel, why } => {
                write!(f, "launch of {kernel} exceeds a limit: {why}")
            }
            SimError::UnknownEntry { name } => write!(f, "no entry named {name}"),
            SimError::BadParams { kernel, why } => {
                write!(f, "bad arguments for {kernel}: {why}")
            }
            SimError::FreeOfUnknown { address } => {
                write!(f, "free of {address:#x}, which is not a live allocation")
            }
            SimError::HostOutOfBounds { address, size } => write!(
                f,
                "host access of {size} bytes at {address:#x} is outside every allocation"
            ),
            SimError::StackOverflow { at } => write!(f, "local memory exhausted: {at}"),
            SimError::StepLimit { at, limit } => {
                write!(f, "more than {limit} instructions in one launch: {at}")
            }
        }
    }
}

impl std::error::Error for SimError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_and_device_can_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Module>();
        send_sync::<Device>();
        send_sync::<SimError>();
        send_sync::<ParseError>();
    }

    #[test]
    fn entries_and_params() {
        let m = Module::parse(
            ".version 7.0\n.target sm_70\n.address_size 64\n\
             .visible .entry k(\n.param .u64 k_a,\n.param .align 8 .b8 k_b[16],\n.param .f64 k_c,\n.param .u32 k_d,\n.param .u64 .ptr .align 1 k_e\n)\n{\nret;\n}\n",
        )
        .expect("parses");
        assert_eq!(m.entries().collect::<Vec<_>>(), ["k"]);
        let p = m.params("k").expect("entry");
        let sizes: Vec<_> = p
            .iter()
            .map(|p| (p.name.as_str(), p.size_bytes, p.align))
            .collect();
        assert_eq!(
            sizes,
            [
                ("k_a", 8, 8),
                ("k_b", 16, 8),
                ("k_c", 8, 8),
                ("k_d", 4, 4),
                ("k_e", 8, 8)
            ]
        );
        assert!(m.params("nope").is_none());
    }
}
