//! Numba-style raw kernels: write the kernel body yourself, launch it with a grid and block
//! size, like `kernel[blocks, threads](args)` in Numba or cust's `launch!`.
//!
//! Two kinds:
//! - **Grid kernels** use only their thread index (no shared memory, no barriers). They are
//!   safe Rust functions of a [`Thread`] and their arguments, so the CPU executor can run them
//!   too: it supplies the thread index. Register with [`grid_kernel!`](crate::grid_kernel).
//! - **Block kernels** use shared memory and `Block::sync`. They exist only in the PTX
//!   (mark them `#[cfg(target_arch = "nvptx64")]`); the CPU backend refuses them. Register with
//!   [`block_kernel!`](crate::block_kernel).
//!
//! Arguments ([`Arg`]) are slices of f64 (read-only), output buffers
//! ([`Out`], which any thread may set or add to), `f64` and `u64` scalars.

#[cfg(feature = "builtin")]
pub mod examples;

pub use crate::device::Out;

/// One argument of a raw kernel, in any of its forms; the same four kinds throughout:
/// - [`RawParam`], the kind a kernel declares (its registration builds the list);
/// - `RawArg` (in cudamin's host crate), what a launch passes: input slices, output buffers,
///   scalars;
/// - [`CpuArg`], what the CPU executor hands each thread of a grid kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arg<In, Output, F, U> {
    /// `&[f64]`, read-only. On the GPU, one 16-byte `.param` (address, length).
    In(In),
    /// An output buffer ([`Out`] in the kernel). On the GPU, one 16-byte `.param`.
    Out(Output),
    /// An `f64` scalar.
    F64(F),
    /// A `u64` scalar.
    U64(U),
}

/// The kind of one raw-kernel parameter.
pub type RawParam = Arg<(), (), (), ()>;

/// An argument as the CPU executor hands it to a grid kernel.
pub type CpuArg<'a> = Arg<&'a [f64], Out<'a>, f64, u64>;

impl<I, O, F, U> Arg<I, O, F, U> {
    /// Which of the four kinds this is.
    pub fn kind(&self) -> RawParam {
        match self {
            Arg::In(_) => Arg::In(()),
            Arg::Out(_) => Arg::Out(()),
            Arg::F64(_) => Arg::F64(()),
            Arg::U64(_) => Arg::U64(()),
        }
    }
}

/// A registered raw kernel: its PTX entry name, parameters, and how the CPU runs it.
#[derive(Clone, Copy, Debug)]
pub struct RawKernel {
    /// The `.entry` name (the kernel function's name).
    pub name: &'static str,
    /// The kind of each parameter, in order; a launch's arguments must match them.
    pub params: &'static [RawParam],
    /// The CPU entry of a grid kernel: one thread's work. `None` for block kernels, which need
    /// shared memory or barriers and run only on the GPU.
    pub cpu: Option<fn(Thread, &[CpuArg<'_>])>,
    /// The same work with a block of threads per task, on the GPU only, where a grid kernel
    /// has such a form (a batch kernel's, for fits of many points): its own entry, taking the
    /// same parameters.
    pub block: Option<&'static RawKernel>,
}

/// A thread of a grid kernel: its index in the grid and the grid's size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thread {
    index: usize,
    threads: usize,
}

impl Thread {
    /// Thread `index` of a grid of `threads` (what an executor supplies).
    pub fn new(index: usize, threads: usize) -> Self {
        Thread { index, threads }
    }

    /// The calling GPU thread.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn current() -> Self {
        Thread::new(
            crate::device::global_thread_idx(),
            crate::device::grid_threads(),
        )
    }

    /// This thread's index in the grid: Numba's `cuda.grid(1)`.
    #[inline(always)]
    pub fn index(&self) -> usize {
        self.index
    }

    /// Threads in the grid: Numba's `cuda.gridsize(1)`.
    #[inline(always)]
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The indices `0..n` this thread handles in a grid-stride loop.
    #[inline(always)]
    pub fn grid_stride(&self, n: usize) -> core::iter::StepBy<core::ops::Range<usize>> {
        (self.index..n).step_by(self.threads.max(1))
    }
}

/// A thread of a block kernel: block-level indices, barriers, and shared memory (through
/// [`shared_array!`](crate::shared_array)). GPU-only.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
pub struct Block(());

#[cfg(target_arch = "nvptx64")]
impl Block {
    #[doc(hidden)]
    pub fn current() -> Self {
        Block(())
    }
    /// `threadIdx.x`.
    pub fn thread_idx(&self) -> usize {
        crate::device::thread_idx()
    }
    /// `blockIdx.x`.
    pub fn block_idx(&self) -> usize {
        crate::device::block_idx()
    }
    /// `blockDim.x`.
    pub fn block_dim(&self) -> usize {
        crate::device::block_dim()
    }
    /// This thread as a grid thread (index in the grid, grid size).
    pub fn thread(&self) -> Thread {
        Thread::current()
    }
    /// `__syncthreads()`: every thread of the block must reach it.
    pub fn sync(&self) {
        crate::device::sync_threads()
    }
}

/// Registers a grid kernel: `grid_kernel!(NAME = function(arg: In, out: Out, a: F64, k: U64))`
/// declares `pub static NAME: RawKernel` and, in the PTX, the entry `function` that calls
/// `function(Thread::current(), args...)`.
#[macro_export]
macro_rules! grid_kernel {
    ($name:ident = $function:ident($($arg:ident: $kind:ident),* $(,)?)) => {
        #[doc = concat!(
            "The grid kernel `", stringify!($function),
            "`, registered to launch on the GPU or the CPU."
        )]
        pub static $name: $crate::raw::RawKernel = $crate::raw::RawKernel {
            name: stringify!($function),
            params: &[$($crate::raw::Arg::$kind(())),*],
            cpu: Some(|thread, args| {
                let mut args = args.iter();
                $(let Some(&$crate::__raw_cpu_pattern!($kind, $arg)) = args.next() else { return };)*
                $function(thread, $($arg),*)
            }),
            block: None,
        };
        $crate::__raw_entry!($function, $crate::raw::Thread::current(), $($arg: $kind),*);
    };
}

/// Registers a block kernel: as [`grid_kernel!`](crate::grid_kernel), but the function takes a
/// `Block` and exists only in the PTX; `NAME.cpu` is `None`.
#[macro_export]
macro_rules! block_kernel {
    ($name:ident = $function:ident($($arg:ident: $kind:ident),* $(,)?)) => {
        #[doc = concat!(
            "The block kernel `", stringify!($function), "`, registered to launch on the GPU only."
        )]
        pub static $name: $crate::raw::RawKernel = $crate::raw::RawKernel {
            name: stringify!($function),
            params: &[$($crate::raw::Arg::$kind(())),*],
            cpu: None,
            block: None,
        };
        $crate::__raw_entry!($function, $crate::raw::Block::current(), $($arg: $kind),*);
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __raw_cpu_pattern {
    (In, $arg:ident) => {
        $crate::raw::CpuArg::In($arg)
    };
    (Out, $arg:ident) => {
        $crate::raw::CpuArg::Out($arg)
    };
    (F64, $arg:ident) => {
        $crate::raw::CpuArg::F64($arg)
    };
    (U64, $arg:ident) => {
        $crate::raw::CpuArg::U64($arg)
    };
}
