//! Kernel argument lists. Every launch in cudamin passes one of the lists built here, so the
//! PTX signature test, which calls the same builders, covers every launch site.
//!
//! Parameters are 64-bit scalars (pointers, `usize`, `f64`) or, for raw kernels' slices, a
//! 16-byte `(address, length)` struct; the launcher passes each as one or two `u64` words.

use crate::launcher::ptx::ParamType;
use gpu_kernels::kernel::{DENSE_FINISH_CENTRAL, DENSE_FINISH_FORWARD, SUM_PARTIALS};
use gpu_kernels::raw::{RawKernel, RawParam};
use gpu_kernels::{Central, FdScheme, Forward, Kernels};

/// Grid and block of one launch (one-dimensional).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub blocks: u32,
    pub threads: u32,
}

/// Launch sizes the user imposes on the term kernels instead of the occupancy API's choice.
/// The one-block kernel that sums partials keeps its single block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LaunchOverride {
    /// Threads per block: a multiple of 32 (the block reductions work in whole warps), at most
    /// 1024.
    pub threads: Option<u32>,
    /// Blocks per grid, at least 1 (the kernels loop grid-stride over any amount of work).
    pub blocks: Option<u32>,
}

impl LaunchOverride {
    pub fn check(&self) -> Result<(), crate::BackendError> {
        let invalid = |why: String| Err(crate::BackendError::InvalidLaunch(why));
        if let Some(t) = self.threads
            && (t == 0 || t % 32 != 0 || t > 1024)
        {
            return invalid(format!(
                "{t} threads per block; need a multiple of 32, at most 1024"
            ));
        }
        if self.blocks == Some(0) {
            return invalid("0 blocks; need at least 1".to_owned());
        }
        Ok(())
    }
}

/// One kernel argument: a device address, an integer or a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KernelArg {
    /// A device pointer (`*const f64` / `*mut f64` in the kernel).
    Ptr(u64),
    /// A `usize` in the kernel.
    U64(u64),
    /// An `f64` in the kernel.
    F64(f64),
    /// A raw kernel's slice: `SliceArg { ptr, len }`, passed by value.
    Slice { ptr: u64, len: u64 },
}

impl KernelArg {
    /// The value as the driver copies it: the first word, or both for a slice.
    pub fn words(self) -> [u64; 2] {
        match self {
            KernelArg::Ptr(v) | KernelArg::U64(v) => [v, 0],
            KernelArg::F64(v) => [v.to_bits(), 0],
            KernelArg::Slice { ptr, len } => [ptr, len],
        }
    }

    /// The PTX parameter this argument must land in.
    pub fn param_type(self) -> ParamType {
        match self {
            KernelArg::Ptr(_) => ParamType {
                bits: 64,
                float: false,
                ptr: true,
            },
            KernelArg::U64(_) => ParamType {
                bits: 64,
                float: false,
                ptr: false,
            },
            KernelArg::F64(_) => ParamType {
                bits: 64,
                float: true,
                ptr: false,
            },
            KernelArg::Slice { .. } => ParamType {
                bits: 128,
                float: false,
                ptr: false,
            },
        }
    }
}

fn count(n: usize) -> KernelArg {
    KernelArg::U64(n as u64)
}

/// Device buffers of a loaded term problem, by address.
#[derive(Clone, Copy, Debug)]
pub struct TermBuffers {
    pub x: u64,
    pub n: usize,
    pub data: u64,
    pub data_len: usize,
    pub data_rows: usize,
}

impl TermBuffers {
    /// `(x, n, data, data_len, data_rows, out)`: the signature of a term's kernels.
    fn args(self, out: u64) -> Vec<KernelArg> {
        vec![
            KernelArg::Ptr(self.x),
            count(self.n),
            KernelArg::Ptr(self.data),
            count(self.data_len),
            count(self.data_rows),
            KernelArg::Ptr(out),
        ]
    }
}

/// The gradient kernel of a term for a scheme, and the dense finishing kernel that goes with it.
pub trait SchemeKernels: FdScheme {
    fn gradient_kernel<T: Kernels>() -> &'static str;
    const DENSE_FINISH: &'static str;
}

impl SchemeKernels for Forward {
    fn gradient_kernel<T: Kernels>() -> &'static str {
        T::GRADIENT_FORWARD
    }
    const DENSE_FINISH: &'static str = DENSE_FINISH_FORWARD;
}

impl SchemeKernels for Central {
    fn gradient_kernel<T: Kernels>() -> &'static str {
        T::GRADIENT_CENTRAL
    }
    const DENSE_FINISH: &'static str = DENSE_FINISH_CENTRAL;
}

/// One launch: a kernel and its arguments, always built together here.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    pub kernel: &'static str,
    pub args: Vec<KernelArg>,
}

impl Launch {
    /// A term's value kernel: one partial sum per block into `partials`.
    pub fn value<T: Kernels>(buffers: TermBuffers, partials: u64) -> Launch {
        Launch {
            kernel: T::VALUE,
            args: buffers.args(partials),
        }
    }

    /// [`SUM_PARTIALS`]: `out[0] = Σ partials[..blocks]`.
    pub fn sum_partials(partials: u64, blocks: usize, out: u64) -> Launch {
        Launch {
            kernel: SUM_PARTIALS,
            args: vec![KernelArg::Ptr(partials), count(blocks), KernelArg::Ptr(out)],
        }
    }

    /// A term's gradient kernel: the gradient (banded) or per-block partials (dense) into `out`.
    pub fn gradient<T: Kernels, S: SchemeKernels>(buffers: TermBuffers, out: u64) -> Launch {
        Launch {
            kernel: S::gradient_kernel::<T>(),
            args: buffers.args(out),
        }
    }

    /// The dense gradient's second stage.
    pub fn dense_finish<S: SchemeKernels>(
        x: u64,
        n: usize,
        partials: u64,
        blocks: usize,
        g: u64,
    ) -> Launch {
        Launch {
            kernel: S::DENSE_FINISH,
            args: vec![
                KernelArg::Ptr(x),
                count(n),
                KernelArg::Ptr(partials),
                count(blocks),
                KernelArg::Ptr(g),
            ],
        }
    }
}

impl Launch {
    /// A raw kernel with its arguments, which must be one per parameter, of the matching kind
    /// (`Slice` for `In` and `Out`). `None` if they are not.
    pub fn raw(kernel: &RawKernel, args: Vec<KernelArg>) -> Option<Launch> {
        let fits = |(param, arg): (&RawParam, &KernelArg)| {
            matches!(
                (param, arg),
                (RawParam::In | RawParam::Out, KernelArg::Slice { .. })
                    | (RawParam::F64, KernelArg::F64(_))
                    | (RawParam::U64, KernelArg::U64(_))
            )
        };
        let matches =
            args.len() == kernel.params.len() && kernel.params.iter().zip(&args).all(fits);
        matches.then_some(Launch {
            kernel: kernel.name,
            args,
        })
    }
}

/// A launch of every raw kernel in `gpu-kernels`, with placeholder arguments of the kinds its
/// registration declares. The PTX signature test checks each against its `.entry`.
pub fn raw_launches() -> Vec<Launch> {
    gpu_kernels::raw::KERNELS
        .iter()
        .filter_map(|kernel| {
            let args = kernel
                .params
                .iter()
                .map(|p| match p {
                    RawParam::In | RawParam::Out => KernelArg::Slice { ptr: 1, len: 1 },
                    RawParam::F64 => KernelArg::F64(0.0),
                    RawParam::U64 => KernelArg::U64(0),
                })
                .collect();
            Launch::raw(kernel, args)
        })
        .collect()
}

/// Every launch a term problem makes, with placeholder addresses. The PTX signature test
/// checks each against its `.entry`.
pub fn term_launches<T: Kernels>() -> Vec<Launch> {
    let b = TermBuffers {
        x: 1,
        n: 1,
        data: 2,
        data_len: 1,
        data_rows: 1,
    };
    vec![
        Launch::value::<T>(b, 3),
        Launch::sum_partials(3, 1, 4),
        Launch::gradient::<T, Forward>(b, 3),
        Launch::gradient::<T, Central>(b, 3),
        Launch::dense_finish::<Forward>(1, 1, 3, 1, 4),
        Launch::dense_finish::<Central>(1, 1, 3, 1, 4),
    ]
}
