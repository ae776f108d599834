//! Kernel argument lists. Every launch in cudamin passes one of the lists built here, so the
//! PTX signature test, which calls the same builders, covers every launch site. A term's
//! launches are built from its entry names ([`TermEntries`]), which come either from its type
//! (what the evaluators launch) or from the names of a PTX's entries ([`registered_launches`]:
//! a kernel crate's test checks every term it registered without naming one).
//!
//! Parameters are 64-bit scalars (pointers, `usize`, `f64`) or, for raw kernels' slices, a
//! 16-byte `(address, length)` struct; the launcher passes each as one or two `u64` words.

use super::ptx::ParamType;
use gpu_kernels::kernel::gram::Reduction;
use gpu_kernels::kernel::loss::RobustLoss;
use gpu_kernels::lm::batch;
use gpu_kernels::raw::{Arg, RawKernel, RawParam};
use gpu_kernels::scheme::SCHEMES;
use gpu_kernels::{DataType, Gradient, Kernels, ResidualKernels, SumOfSquares};
use std::borrow::Cow;
use std::collections::BTreeSet;

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
    Slice {
        /// The device address of the first element.
        ptr: u64,
        /// The number of `f64` elements.
        len: u64,
    },
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
    /// The evaluation point, `n` f64.
    pub x: u64,
    /// The number of variables.
    pub n: usize,
    /// The box finite-difference points stay in: `n` lower ends, or 0 for no box.
    pub lower: u64,
    /// Its `n` upper ends, or 0 for no box.
    pub upper: u64,
    /// The problem's data, column-major, `data_len` values of `data_type`.
    pub data: u64,
    /// The number of data values.
    pub data_len: usize,
    /// The rows per data column.
    pub data_rows: usize,
    /// How the data values are stored.
    pub data_type: DataType,
}

impl TermBuffers {
    /// `(x, n, lower, upper, data, data_len, data_rows, data_type, out, values)`: the signature
    /// of a term's kernels.
    fn args(self, out: u64, values: u64) -> Vec<KernelArg> {
        vec![
            KernelArg::Ptr(self.x),
            count(self.n),
            KernelArg::Ptr(self.lower),
            KernelArg::Ptr(self.upper),
            KernelArg::Ptr(self.data),
            count(self.data_len),
            count(self.data_rows),
            count(self.data_type.index()),
            KernelArg::Ptr(out),
            KernelArg::Ptr(values),
        ]
    }

    /// `(x, n, lower, upper, data, data_len, data_rows, data_type, loss, f_scale, out, values)`:
    /// the signature of a residual term's least-squares kernels, `loss` carrying the reduction.
    fn loss_args(
        self,
        (loss, reduction): (RobustLoss, Reduction),
        out: u64,
        values: u64,
    ) -> Vec<KernelArg> {
        let mut args = self.args(out, values);
        let index = reduction.with_loss(loss.loss.index());
        args.splice(8..8, [count(index), KernelArg::F64(loss.f_scale)]);
        args
    }
}

/// One launch: a kernel and its arguments, always built together here.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// The `.entry` name of the kernel: a constant for every launch a backend makes, a
    /// string derived from a PTX's entry names for [`registered_launches`].
    pub kernel: Cow<'static, str>,
    /// Its arguments, in the order of its parameters.
    pub args: Vec<KernelArg>,
}

impl Launch {
    fn of(kernel: impl Into<Cow<'static, str>>, args: Vec<KernelArg>) -> Launch {
        Launch {
            kernel: kernel.into(),
            args,
        }
    }

    /// A term's value kernel `kernel` (`Kernels::VALUE`): the value into `sums[0]`, by way
    /// of one partial per block (`gpu_kernels::kernel::VALUE_HEAD` lays `sums` out).
    pub fn value_entry(
        kernel: impl Into<Cow<'static, str>>,
        buffers: TermBuffers,
        sums: u64,
    ) -> Launch {
        Launch::term_entry(kernel, buffers, 0, sums)
    }

    /// Any of a term's kernels, by entry name: the value and gradient
    /// kernels all take `(x, n, lower, upper, data, data_len, data_rows, data_type, out,
    /// values)`.
    fn term_entry(
        kernel: impl Into<Cow<'static, str>>,
        buffers: TermBuffers,
        out: u64,
        values: u64,
    ) -> Launch {
        Launch::of(kernel, buffers.args(out, values))
    }

    /// A term's gradient kernel `kernel` (one of `Kernels::GRADIENTS`): the gradient into
    /// `out`. With `values` not 0, the same pass sums the value there, as
    /// [`value_entry`](Self::value_entry) does; a dense window needs `values`, for its blocks'
    /// partials.
    pub fn gradient(kernel: &'static str, buffers: TermBuffers, out: u64, values: u64) -> Launch {
        Launch::term_entry(kernel, buffers, out, values)
    }
}

/// The least-squares kernels of a residual term (Levenberg–Marquardt).
impl Launch {
    /// A residual term's triangle kernel `kernel` (one of `ResidualKernels::TRIANGLES`): the
    /// rows rescaled for `loss` reduced by `reduction` into one packed triangle (or Gram
    /// matrix) per block in `out`, the per-block costs into `values`.
    pub fn triangle(
        kernel: impl Into<Cow<'static, str>>,
        buffers: TermBuffers,
        loss: (RobustLoss, Reduction),
        out: u64,
        values: u64,
    ) -> Launch {
        Launch::of(kernel, buffers.loss_args(loss, out, values))
    }

    /// A residual term's cost kernel `kernel` (`ResidualKernels::COST`): the per-block costs
    /// under `loss` into `values`.
    pub fn cost(
        kernel: impl Into<Cow<'static, str>>,
        buffers: TermBuffers,
        loss: RobustLoss,
        values: u64,
    ) -> Launch {
        Launch::of(
            kernel,
            buffers.loss_args((loss, Reduction::Fold), 0, values),
        )
    }
}

/// Checks `launches` against the `.entry` signatures of `ptx`: every launch must find its
/// entry with the parameters it passes (count, width, pointer-ness), and every entry must be
/// launched by one of them. Returns every mismatch found.
pub fn check_launches(ptx: &str, launches: &[Launch]) -> Result<(), Vec<String>> {
    let entries = super::ptx::entries(ptx).map_err(|e| vec![e])?;
    let mut problems = Vec::new();
    for launch in launches {
        let passed: Vec<_> = launch.args.iter().map(|a| a.param_type()).collect();
        match entries.iter().find(|e| e.name == launch.kernel) {
            None => problems.push(format!(
                "`{}` is launched but not in the PTX",
                launch.kernel
            )),
            Some(entry) if entry.params != passed => problems.push(format!(
                "`{}`: the launch passes {passed:?}, the .entry takes {:?}",
                launch.kernel, entry.params
            )),
            Some(_) => {}
        }
    }
    for entry in &entries {
        if !launches.iter().any(|l| l.kernel == entry.name) {
            problems.push(format!(
                "`{}` is in the PTX but nothing launches it",
                entry.name
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

impl Launch {
    /// A raw kernel with its arguments, which must be one per parameter, of the matching kind
    /// (`Slice` for `In` and `Out`). `None` if they are not.
    pub fn raw(kernel: &RawKernel, args: Vec<KernelArg>) -> Option<Launch> {
        let fits = |(param, arg): (&RawParam, &KernelArg)| {
            matches!(
                (param, arg),
                (Arg::In(()) | Arg::Out(()), KernelArg::Slice { .. })
                    | (Arg::F64(()), KernelArg::F64(_))
                    | (Arg::U64(()), KernelArg::U64(_))
            )
        };
        let matches =
            args.len() == kernel.params.len() && kernel.params.iter().zip(&args).all(fits);
        matches.then(|| Launch::of(kernel.name, args))
    }
}

/// A launch of every raw kernel in `gpu-kernels`, with placeholder arguments of the kinds its
/// registration declares. The PTX signature test checks each against its `.entry`.
pub fn raw_launches() -> Vec<Launch> {
    let with_blocks = (gpu_kernels::terms::RAW_KERNELS.iter().copied())
        .flat_map(|kernel| [Some(kernel), kernel.block].into_iter().flatten());
    with_blocks
        .filter_map(|kernel| Launch::raw(kernel, placeholder_args(kernel.params)))
        .collect()
}

/// Placeholder arguments of the kinds `params` declares.
fn placeholder_args(params: &[RawParam]) -> Vec<KernelArg> {
    (params.iter())
        .map(|p| match p {
            Arg::In(()) | Arg::Out(()) => KernelArg::Slice { ptr: 1, len: 1 },
            Arg::F64(()) => KernelArg::F64(0.0),
            Arg::U64(()) => KernelArg::U64(0),
        })
        .collect()
}

/// The batch kernels of a residual term registered as `name` that `entries` hold, with their
/// block forms: each named `name` and a suffix (`gpu_kernels::lm::batch::SUFFIX`,
/// `POISSON_SUFFIX`), then `_block` for the block form, by the convention of
/// `gpu_kernels::batch_kernel!`, which gives them all [`batch::PARAMS`].
fn batch_launches<'a>(
    name: &'a str,
    entries: &'a BTreeSet<&str>,
) -> impl Iterator<Item = Launch> + 'a {
    [batch::SUFFIX, batch::POISSON_SUFFIX]
        .into_iter()
        .flat_map(move |suffix| [format!("{name}{suffix}"), format!("{name}{suffix}_block")])
        .filter(|entry| entries.contains(entry.as_str()))
        .map(|entry| Launch::of(entry, placeholder_args(batch::PARAMS)))
}

/// Term buffers at placeholder addresses, for the signature test's launches.
const PLACEHOLDER_BUFFERS: TermBuffers = TermBuffers {
    x: 1,
    n: 1,
    lower: 6,
    upper: 7,
    data: 2,
    data_len: 1,
    data_rows: 1,
    data_type: DataType::F64,
};

/// Every launch a term problem makes, with placeholder addresses. The PTX signature test
/// checks each against its `.entry`.
pub fn term_launches<T: Kernels>() -> Vec<Launch> {
    TermEntries::of::<T>().launches()
}

/// Every launch a residual term's sum of squares makes: its term launches, its triangle
/// launches (one per scheme) and its cost launch.
pub fn residual_launches<T: ResidualKernels>() -> Vec<Launch> {
    TermEntries::residual::<T>().launches()
}

/// The entry names of one registered term: its value and gradient kernels and, for a residual
/// term, its least-squares kernels. Whether they come from the term's type or from the name it
/// was registered under, [`launches`](Self::launches) builds the same launches from them.
#[derive(Clone, Debug, PartialEq)]
pub struct TermEntries {
    /// The name the term was registered under.
    pub name: Cow<'static, str>,
    value: Cow<'static, str>,
    gradients: [Cow<'static, str>; SCHEMES],
    least_squares: Option<LeastSquaresEntries>,
}

/// A residual term's least-squares entry names: its triangle kernels, one per scheme, and its
/// cost kernel.
#[derive(Clone, Debug, PartialEq)]
struct LeastSquaresEntries {
    triangles: [Cow<'static, str>; SCHEMES],
    cost: Cow<'static, str>,
}

impl TermEntries {
    /// The entries of term `T`, from its registration.
    pub fn of<T: Kernels>() -> Self {
        TermEntries {
            name: T::NAME.into(),
            value: T::VALUE.into(),
            gradients: T::GRADIENTS.map(Cow::Borrowed),
            least_squares: None,
        }
    }

    /// The entries of residual term `T`: its sum of squares' and its least-squares kernels.
    pub fn residual<T: ResidualKernels>() -> Self {
        TermEntries {
            least_squares: Some(LeastSquaresEntries {
                triangles: T::TRIANGLES.map(Cow::Borrowed),
                cost: T::COST.into(),
            }),
            ..TermEntries::of::<SumOfSquares<T>>()
        }
    }

    /// The entries `register_term!(.., name)` emits, or with `residual`
    /// `register_residuals!(.., name)`: `name_value`, `name_gradient_<scheme>` for each scheme
    /// of the table, and for a residual term `name_triangle_<scheme>` and `name_cost`.
    pub fn named(name: &str, residual: bool) -> Self {
        let per_scheme = |kernel: &str| {
            Gradient::ALL.map(|kind| format!("{name}_{kernel}_{}", kind.name()).into())
        };
        TermEntries {
            name: name.to_owned().into(),
            value: format!("{name}_value").into(),
            gradients: per_scheme("gradient"),
            least_squares: residual.then(|| LeastSquaresEntries {
                triangles: per_scheme("triangle"),
                cost: format!("{name}_cost").into(),
            }),
        }
    }

    /// Every launch a problem of this term makes, with placeholder addresses, for checking
    /// against the PTX ([`check_launches`]).
    pub fn launches(&self) -> Vec<Launch> {
        let b = PLACEHOLDER_BUFFERS;
        let mut launches = vec![Launch::value_entry(self.value.clone(), b, 3)];
        for kind in Gradient::ALL {
            let gradient = self.gradients[kind as usize].clone();
            launches.push(Launch::term_entry(gradient, b, 3, 5));
        }
        if let Some(entries) = &self.least_squares {
            let loss = RobustLoss::default();
            launches.extend((entries.triangles.iter()).map(|triangle| {
                Launch::triangle(triangle.clone(), b, (loss, Reduction::Fold), 3, 5)
            }));
            launches.push(Launch::cost(entries.cost.clone(), b, loss, 5));
        }
        launches
    }
}

/// The terms registered in `ptx`, found by their entry names: a term registered as `name`
/// has `name_value` and `name_gradient_<scheme>` entries, and a residual term also
/// `name_triangle_<scheme>`. A name with a value entry and no gradient entry is no term.
pub fn registered_terms(ptx: &str) -> Result<Vec<TermEntries>, String> {
    let entries = super::ptx::entries(ptx)?;
    let names: BTreeSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let has_any = |name: &str, kernel: &str| {
        (Gradient::ALL.iter())
            .any(|kind| names.contains(format!("{name}_{kernel}_{}", kind.name()).as_str()))
    };
    Ok(names
        .iter()
        .filter_map(|entry| entry.strip_suffix("_value"))
        .filter(|name| has_any(name, "gradient"))
        .map(|name| TermEntries::named(name, has_any(name, "triangle")))
        .collect())
}

/// Every launch the host would make on a kernel crate's `ptx`, derived from its entry names:
/// those of each term it registered ([`registered_terms`]) and of the kernels every kernel
/// crate's PTX holds (sums, vector kernels and `batch_table`), and of each residual term's
/// batch kernels (`gpu_kernels::batch_kernel!`). [`check_launches`] then reports any launch
/// that does not match its entry and any entry that none of them explains (another raw kernel:
/// add its [`Launch::raw`]).
pub fn registered_launches(ptx: &str) -> Result<Vec<Launch>, String> {
    let mut launches = vector_launches();
    // Every kernel crate's batch kernels read tables that `batch_table` lays out.
    let table = &batch::BATCH_TABLE;
    launches.push(Launch::of(table.name, placeholder_args(table.params)));
    let entries = super::ptx::entries(ptx)?;
    let names: BTreeSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    for term in registered_terms(ptx)? {
        launches.extend(term.launches());
        if term.least_squares.is_some() {
            launches.extend(batch_launches(&term.name, &names));
        }
    }
    let mut seen = BTreeSet::new();
    launches.retain(|launch| seen.insert(launch.kernel.clone()));
    Ok(launches)
}

mod vectors;

pub use vectors::vector_launches;

#[cfg(test)]
mod tests;
