//! What the processes of a sharded evaluation exchange, and how one process finishes them:
//! which chunks a rank computes ([`Share`]), the partial results of a pass per chunk
//! ([`Partials`]) and how they combine ([`Layout`]). One process finishes its own passes with
//! the same code, so that any number of ranks finishes to the same bits (see `world.rs`).

use crate::error::BackendError;
use gpu_kernels::Gradient;
use gpu_kernels::StepBox;
use gpu_kernels::kernel::normal::mirror_upper;
use gpu_kernels::kernel::triangle::{
    fold_scratch_len, fold_triangle, packed_len, packed_row, triangle_len,
};
use gpu_kernels::kernel::{dense_gradient_component, sum_in_order};
use std::ops::Range;

/// Which of a pass's chunks an evaluator computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Share {
    /// All of them: one process holds and evaluates the whole problem.
    Whole,
    /// Rank `rank`'s contiguous part ([`Share::range`]) of every pass's chunks of a problem that
    /// every rank holds whole: the term ranges of a separable or banded problem.
    Terms {
        /// This process's rank, `0 .. ranks`.
        rank: usize,
        /// The number of processes.
        ranks: usize,
    },
    /// Every chunk of the rows this evaluator holds: a whole number of row blocks (see
    /// `backend::cpu::row_block`) of a dense problem of `total` rows, which sets the chunk
    /// size. Each rank of a data-sharded fit loads only such rows.
    Rows {
        /// The rows of the whole problem, on all ranks.
        total: usize,
        /// This process's rank, `0 .. ranks`: the further terms of a sum, which every rank
        /// holds whole, are split by term ranges ([`Share::of_whole_parts`]).
        rank: usize,
        /// The number of processes.
        ranks: usize,
    },
}

impl Share {
    /// Whether this process evaluates a pass it can only evaluate whole (a backend without
    /// term-range shares, the GPU's): every process but rank 0 of a [`Share::Terms`] adds no
    /// chunks, so that the ranks together add the whole pass once.
    pub fn evaluates_whole(self) -> bool {
        !matches!(self, Share::Terms { rank, .. } if rank > 0)
    }

    /// A data-sharded evaluator's rows of a problem of `total` rows, before the MPI job (if
    /// any) says which rank this is: rank 0 of 1, which `Sharded` replaces by its own.
    pub const fn rows(total: usize) -> Self {
        Share::Rows {
            total,
            rank: 0,
            ranks: 1,
        }
    }

    /// The share of a sum's further term problems (a penalty, a prior beside a data term;
    /// see `backend::sum`), which every rank holds whole: the rank's term ranges where this
    /// share is a rank's rows, else this share.
    pub fn of_whole_parts(self) -> Share {
        match self {
            Share::Rows { rank, ranks, .. } => Share::Terms { rank, ranks },
            other => other,
        }
    }

    /// This share's part of `items` chunks, blocks or terms: contiguous, in rank order, with
    /// sizes that differ by at most one.
    pub fn range(self, items: usize) -> Range<usize> {
        match self {
            Share::Terms { rank, ranks } if ranks > 0 => {
                items * rank / ranks..items * (rank + 1) / ranks
            }
            _ => 0..items,
        }
    }
}

/// How a pass's chunk vectors make its result (see [`Partials`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Each chunk's vector is its own slice of the result, which is their concatenation: a
    /// banded gradient, where each chunk owns its variables.
    Slices,
    /// Each chunk adds a vector of `len` values to the result, in chunk order; then, for a
    /// dense gradient, each component is divided by its scheme's divisor at its variable (a
    /// finite difference's spacing, 1 for exact derivatives).
    Sums {
        /// The length of each chunk's vector.
        len: usize,
        /// The scheme whose divisor divides the sums; `None` divides by nothing.
        divided_by: Option<Gradient>,
    },
    /// Each chunk's vector is the triangle its residual rows fold into, `R` packed and `Qᵀr`
    /// (`gpu_kernels::kernel::triangle`), over `n` variables; the chunks' triangles fold into
    /// the first in chunk order.
    Triangles {
        /// The number of variables.
        n: usize,
    },
}

impl Layout {
    /// Chunk vectors of `len`, added and not divided.
    pub const fn sums(len: usize) -> Self {
        Layout::Sums {
            len,
            divided_by: None,
        }
    }
}

/// A pass's results per chunk, before they are combined: the answer of
/// [`Evaluator::partials`](crate::backend::Evaluator::partials).
#[derive(Clone, Debug, PartialEq)]
pub struct Partials {
    /// One value sum per chunk, in chunk order (none when the pass sums no value).
    pub values: Vec<f64>,
    /// The chunks' vectors, end to end, in chunk order.
    pub vectors: Vec<f64>,
    /// How the vectors combine.
    pub layout: Layout,
    /// The partials of a sum's further term problems, in the sum's order, each with its own
    /// chunks and layout (empty for one term problem). Each is finished as a pass of its own
    /// and added to this one's result, in order (see `backend::sum`).
    pub further: Vec<Partials>,
}

impl Partials {
    /// One chunk: a whole pass's value and vector.
    pub fn one(value: f64, vector: Vec<f64>, layout: Layout) -> Self {
        Partials {
            values: vec![value],
            vectors: vector,
            layout,
            further: Vec::new(),
        }
    }

    /// No chunks: a rank's part of a pass that another rank evaluates whole.
    pub fn none(layout: Layout) -> Self {
        Partials {
            values: Vec::new(),
            vectors: Vec::new(),
            layout,
            further: Vec::new(),
        }
    }

    /// A whole normal-equations pass over `n` parameters as one chunk: `pass` writes `JᵀJ`
    /// and `Jᵀr` into the slices it is given and returns `Σ r²`. No chunks, and no pass, where
    /// `share` leaves it to another rank ([`Share::evaluates_whole`]).
    pub fn whole_normal(
        n: usize,
        share: Share,
        pass: impl FnOnce(&mut [f64], &mut [f64]) -> Result<f64, BackendError>,
    ) -> Result<Self, BackendError> {
        if !share.evaluates_whole() {
            return Ok(Partials::none(Layout::sums(n * n + n)));
        }
        let mut vector = vec![0.0; n * n + n];
        let (jtj, jtr) = vector.split_at_mut(n * n);
        let sum_of_squares = pass(jtj, jtr)?;
        Ok(Partials::one(
            sum_of_squares,
            vector,
            Layout::sums(n * n + n),
        ))
    }

    /// Partials of one term problem: chunk `values` and `vectors` combining as `layout` says.
    pub fn of_chunks(values: Vec<f64>, vectors: Vec<f64>, layout: Layout) -> Self {
        Partials {
            values,
            vectors,
            layout,
            further: Vec::new(),
        }
    }

    /// The value: the chunks' values added in order, compensated, as each chunk adds its
    /// terms. Of a sum, each part's value so, then the parts' values added in the sum's order
    /// by the same compensated sum: what a sum evaluated part by part gives (`backend::sum`).
    pub fn value(&self) -> f64 {
        let own = sum_in_order(self.values.iter().copied());
        if self.further.is_empty() {
            return own;
        }
        sum_in_order(std::iter::once(own).chain(self.further.iter().map(Partials::value)))
    }

    /// The gradient at `x`, written to `g`; returns [`value`](Self::value). A sum's further
    /// parts are each finished into a vector of their own and added to `g` in order.
    pub fn gradient_into(
        &self,
        x: &[f64],
        bounds: StepBox<'_>,
        g: &mut [f64],
    ) -> Result<f64, BackendError> {
        self.own_gradient_into(x, bounds, g)?;
        add_in_order(&self.further, &mut Vec::new(), &mut [g], |part, out| {
            part.gradient_into(x, bounds, out)
        })?;
        Ok(self.value())
    }

    /// This part's own gradient, without its further parts.
    fn own_gradient_into(
        &self,
        x: &[f64],
        bounds: StepBox<'_>,
        g: &mut [f64],
    ) -> Result<(), BackendError> {
        match self.layout {
            Layout::Slices => {
                self.check(self.vectors.len() == g.len(), g.len())?;
                g.copy_from_slice(&self.vectors);
            }
            Layout::Sums { len, divided_by } => {
                self.check(len == g.len() && self.vectors.len() % len.max(1) == 0, len)?;
                for (i, gi) in g.iter_mut().enumerate() {
                    let parts = self.vectors.iter().skip(i).step_by(len).copied();
                    let interval = bounds.interval(i);
                    let divisor = divided_by.map_or(1.0, |kind| kind.divisor(x[i], interval));
                    *gi = dense_gradient_component(divisor, parts);
                }
            }
            Layout::Triangles { n } => self.check(false, triangle_len(n))?,
        }
        Ok(())
    }

    /// The normal equations, `JᵀJ` (`n × n`, symmetric, from the chunks' upper triangles) and
    /// `Jᵀr`, each added in chunk order; returns `Σ r²`. A sum's further parts are each
    /// finished on their own and added, in order.
    pub fn normal_into(&self, jtj: &mut [f64], jtr: &mut [f64]) -> Result<f64, BackendError> {
        self.own_normal_into(jtj, jtr)?;
        let n = jtr.len();
        add_in_order(
            &self.further,
            &mut Vec::new(),
            &mut [jtj, jtr],
            |part, out| {
                let (part_jtj, part_jtr) = out.split_at_mut(n * n);
                part.normal_into(part_jtj, part_jtr)
            },
        )?;
        Ok(self.value())
    }

    /// This part's own normal equations, without its further parts.
    fn own_normal_into(&self, jtj: &mut [f64], jtr: &mut [f64]) -> Result<(), BackendError> {
        let n = jtr.len();
        let len = n * n + n;
        let whole = self.layout == Layout::sums(len) && self.vectors.len() % len.max(1) == 0;
        self.check(whole && jtj.len() == n * n, len)?;
        jtj.fill(0.0);
        jtr.fill(0.0);
        for chunk in self.vectors.chunks_exact(len) {
            let (part_jtj, part_jtr) = chunk.split_at(n * n);
            for (total, part) in jtj.iter_mut().zip(part_jtj) {
                *total += part;
            }
            for (total, part) in jtr.iter_mut().zip(part_jtr) {
                *total += part;
            }
        }
        mirror_upper(jtj, n);
        Ok(())
    }

    /// The least-squares factor of the residual rows (see [`Factor`]), into `factor` (sized for
    /// `n` variables by [`Factor::new`]); returns `Σ r²`. Chunk triangles fold in chunk order,
    /// then a sum's further parts' in the sum's order: the rows of every part, stacked.
    pub fn factor_into(&self, factor: &mut Factor) -> Result<f64, BackendError> {
        let n = factor.qtr.len();
        self.check(factor.r.len() == n * n, n * n)?;
        let mut folded = Folded::new(n);
        for part in std::iter::once(self).chain(&self.further) {
            part.own_triangles(n, &mut folded)?;
        }
        factor.unpack(&folded.finish());
        Ok(self.value())
    }

    /// Folds this part's own triangles (not its further parts') into `folded`.
    fn own_triangles(&self, n: usize, folded: &mut Folded) -> Result<(), BackendError> {
        let len = triangle_len(n);
        let triangles = self.layout == Layout::Triangles { n };
        self.check(triangles && self.vectors.len() % len.max(1) == 0, len)?;
        for chunk in self.vectors.chunks_exact(len) {
            folded.fold(chunk);
        }
        Ok(())
    }

    fn check(&self, fits: bool, len: usize) -> Result<(), BackendError> {
        if fits {
            Ok(())
        } else {
            Err(BackendError::Kernel {
                kernel: "partials".to_owned(),
                reason: format!(
                    "of {} values ({:?}) do not make a result of {len}",
                    self.vectors.len(),
                    self.layout
                ),
            })
        }
    }
}

/// The least squares of a pass's residual rows reduced to `n × n`: `J = Q·R` over every
/// residual row, `R` upper triangular, and `Qᵀr`, the residuals' part in the span of `J`'s
/// columns. What Levenberg–Marquardt steps on: `JᵀJ = RᵀR` and `Jᵀr = Rᵀ(Qᵀr)`, without
/// `JᵀJ`'s squared condition number.
#[derive(Clone, Debug, PartialEq)]
pub struct Factor {
    /// `R`, `n × n` row-major, zero below the diagonal.
    pub r: Vec<f64>,
    /// `Qᵀr`, `n` values.
    pub qtr: Vec<f64>,
}

impl Factor {
    /// Zeros for `n` variables.
    pub fn new(n: usize) -> Self {
        Factor {
            r: vec![0.0; n * n],
            qtr: vec![0.0; n],
        }
    }

    /// [`new`](Self::new), or `None` where its `n²` entries do not fit in memory.
    pub fn try_new(n: usize) -> Option<Self> {
        Some(Factor {
            r: crate::linalg::try_zeros(n.checked_mul(n)?)?,
            qtr: crate::linalg::try_zeros(n)?,
        })
    }

    /// Whether every entry of `R` and `Qᵀr` is finite: Jacobian rows with a NaN or an
    /// infinity leave one that is not.
    pub fn is_finite(&self) -> bool {
        self.r.iter().chain(&self.qtr).all(|v| v.is_finite())
    }

    /// The normal equations the factor stands for: `JᵀJ = RᵀR` (`n × n`, row-major) into
    /// `jtj`, `Jᵀr = Rᵀ(Qᵀr)` into `jtr`.
    pub fn normal_equations_into(&self, jtj: &mut [f64], jtr: &mut [f64]) {
        let n = self.qtr.len();
        let r = |i: usize, j: usize| self.r[i * n + j];
        for a in 0..n {
            for b in 0..n {
                jtj[a * n + b] = (0..=a.min(b)).map(|k| r(k, a) * r(k, b)).sum();
            }
            jtr[a] = (0..=a).map(|k| r(k, a) * self.qtr[k]).sum();
        }
    }

    /// The packed triangle (`gpu_kernels::kernel::triangle`) of `R` and `Qᵀr`, as a pass's
    /// chunks hold them: what [`unpack`](Self::unpack) reads.
    pub fn pack(&self) -> Vec<f64> {
        let n = self.qtr.len();
        let mut packed = Vec::with_capacity(triangle_len(n));
        for i in 0..n {
            packed.extend_from_slice(&self.r[i * n + i..(i + 1) * n]);
        }
        packed.extend_from_slice(&self.qtr);
        packed
    }

    /// `R` and `Qᵀr` from a packed triangle (`gpu_kernels::kernel::triangle`) of this
    /// factor's size: the inverse of [`pack`](Self::pack).
    pub fn unpack(&mut self, packed: &[f64]) {
        let n = self.qtr.len();
        self.r.fill(0.0);
        for i in 0..n {
            let row = &packed[packed_row(i, n)..packed_row(i, n) + n - i];
            self.r[i * n + i..(i + 1) * n].copy_from_slice(row);
        }
        self.qtr.copy_from_slice(&packed[packed_len(n)..]);
    }
}

/// Triangles folded one into the next, in order.
struct Folded {
    /// The triangle so far; `None` before the first, which is taken as it is.
    packed: Option<Vec<f64>>,
    /// For [`fold_triangle`].
    scratch: Vec<f64>,
    /// The number of variables.
    n: usize,
}

impl Folded {
    /// No triangle yet, for `n` variables.
    fn new(n: usize) -> Self {
        Folded {
            packed: None,
            scratch: vec![0.0; fold_scratch_len(n)],
            n,
        }
    }

    /// The folded triangle: zeros where there were no rows.
    fn finish(self) -> Vec<f64> {
        (self.packed).unwrap_or_else(|| vec![0.0; triangle_len(self.n)])
    }

    fn fold(&mut self, triangle: &[f64]) {
        match &mut self.packed {
            None => self.packed = Some(triangle.to_vec()),
            Some(packed) => {
                let n = self.n;
                let (r, qtr) = packed.split_at_mut(packed_len(n));
                let (other, other_qtr) = triangle.split_at(packed_len(n));
                fold_triangle(r, qtr, other, other_qtr, &mut self.scratch);
            }
        }
    }
}

/// `outputs += ` each of `parts`' results, in order: `make` writes a part's into `scratch`
/// (resized to the `outputs`' lengths, end to end, once there is a part) and returns what it
/// returns, which is collected. How a sum's parts are added, finished from partials or
/// evaluated one by one (`backend::sum`), so that both add in the same order.
pub(crate) fn add_in_order<P, V>(
    parts: impl IntoIterator<Item = P>,
    scratch: &mut Vec<f64>,
    outputs: &mut [&mut [f64]],
    mut make: impl FnMut(P, &mut [f64]) -> Result<V, BackendError>,
) -> Result<Vec<V>, BackendError> {
    let len = outputs.iter().map(|output| output.len()).sum();
    let mut made = Vec::new();
    for part in parts {
        scratch.resize(len, 0.0);
        made.push(make(part, scratch)?);
        let mut rest = &scratch[..];
        for output in outputs.iter_mut() {
            let (part_output, after) = rest.split_at(output.len());
            for (total, p) in output.iter_mut().zip(part_output) {
                *total += p;
            }
            rest = after;
        }
    }
    Ok(made)
}
