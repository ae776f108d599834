//! The vectors of a solver that keeps them on the device, as a [`VectorSpace`]: each operation
//! is one or two launches, in order with the evaluations, and only scalars (a dot product, a
//! norm) come back. The box passes, box_passes.rs, bring rows of partials and a few gathered
//! rows. The operations over many vectors (L-BFGS's products and its direction, the end of a
//! step) are one pass each, their vectors named by a small table of addresses copied down
//! first; each of their sums adds what the one-vector kernels add, in the same order, so both
//! give the same bits.

use super::abi::Launch;
use super::array::DeviceArray;
use super::driver::Buffer;
use super::launcher::{Launcher, thread_per_row};
use super::tables::Tables;
use crate::backend::launch::LaunchConfig;
use crate::error::{BackendError, EvalError};
use crate::linalg::vector;
use crate::space::{StepEnd, VectorSpace, combine_term_by_term, finish_step_pass_by_pass};
use gpu_kernels::kernel::{
    AIM_PARTIALS, AXPY, BOX_PATH_PARTIALS, BREAKPOINT_CHUNKS, CLIPPED_RAY_POINT,
    COMBINE_DOT_PARTIALS, DOT_PARTIALS, DOTS_PARTIALS, FREE_PARTIALS, MASKED_GRAM_PARTIALS,
    MAX_ABS_PARTIALS, NEW_PAIR_PARTIALS, NEW_PAIR_ROWS, PATH_POINT, PROJECT_AIM_PARTIALS,
    REACH_PARTIALS, STEP_END_PARTIALS, STEP_END_ROWS, TRUNCATE,
};
use std::borrow::Cow;
use std::sync::Arc;

/// An `n`-vector in device memory, made by [`DeviceVectors`].
pub struct DeviceVector(Buffer);

impl DeviceVector {
    pub(super) fn buffer(&self) -> &Buffer {
        &self.0
    }
}

/// The vector arithmetic of a solver whose vectors stay on the device.
pub struct DeviceVectors {
    n: usize,
    elementwise: LaunchConfig,
    /// The box passes' elementwise grid: the fewest threads any of their kernels allows.
    box_elementwise: LaunchConfig,
    /// Every reduction's grid (`Launcher::reduction_config`): one for all of them, so that a
    /// product has the same bits whichever kernel takes it.
    reduction: LaunchConfig,
    /// One block, for the second stage of the max-abs reduction.
    finish: LaunchConfig,
    /// Rows of one partial per block of `reduction`, as many rows as a launch has needed.
    partials: Buffer,
    /// The reductions' results, as many as a launch has needed.
    scalars: Buffer,
    /// Tables of vector addresses (and coefficients, indices) for the passes over many vectors,
    /// one per use, kept so that a solve allocates none after its first iterations; each with
    /// a host copy of what it holds, so that a table is sent only where it changed.
    tables: Tables,
    /// Rows gathered from vectors, as many as a gather has needed.
    rows_out: Option<Buffer>,
    /// An `n`-vector for a pass's intermediate (the masked Gram's `u`).
    pub(super) scratch: Option<DeviceVector>,
    launcher: Arc<Launcher>,
}

impl DeviceVectors {
    pub(super) fn new(launcher: Arc<Launcher>, n: usize) -> Result<Self, BackendError> {
        let l = &*launcher;
        let elementwise = l.config(AXPY, n)?;
        let mut box_elementwise = elementwise;
        for kernel in [PATH_POINT, TRUNCATE, CLIPPED_RAY_POINT] {
            let config = l.config(kernel, n)?;
            if config.threads < box_elementwise.threads {
                box_elementwise = config;
            }
        }
        // One grid for every reduction, so that one partials row serves each, the second
        // stage's block reads all of a row, and the fused passes sum in the one-vector
        // kernels' order.
        let reduction = l.reduction_config(
            &[
                DOT_PARTIALS,
                MAX_ABS_PARTIALS,
                DOTS_PARTIALS,
                COMBINE_DOT_PARTIALS,
                STEP_END_PARTIALS,
                MASKED_GRAM_PARTIALS,
                BOX_PATH_PARTIALS,
                FREE_PARTIALS,
                AIM_PARTIALS,
                PROJECT_AIM_PARTIALS,
                REACH_PARTIALS,
                NEW_PAIR_PARTIALS,
                BREAKPOINT_CHUNKS,
            ],
            n,
        )?;
        let finish = LaunchConfig {
            blocks: 1,
            ..l.config(MAX_ABS_PARTIALS, 1)?
        };
        Ok(Self {
            n,
            elementwise,
            box_elementwise,
            reduction,
            finish,
            partials: l.alloc(
                "reduction partials",
                STEP_END_ROWS.max(NEW_PAIR_ROWS) * reduction.blocks as usize,
            )?,
            scalars: l.alloc("reductions' results", STEP_END_ROWS)?,
            tables: Tables::default(),
            rows_out: None,
            scratch: None,
            launcher,
        })
    }

    /// `n`, the entries of every vector, for the backend's own use.
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// `n` zeros, for the backend's own use (the space's [`zeros`](VectorSpace::zeros)
    /// answers an [`EvalError`]).
    pub(crate) fn new_vector(&self) -> Result<DeviceVector, BackendError> {
        self.launcher
            .alloc("a solver vector", self.n)
            .map(DeviceVector)
    }

    /// A device copy of `x` (`n` entries), for the backend's own use.
    pub(crate) fn vector_from(&self, x: &[f64]) -> Result<DeviceVector, BackendError> {
        self.launcher.upload("a solver vector", x).map(DeviceVector)
    }

    /// A new vector with `array`'s entries, copied on the device; `None` where `array` lives
    /// on another device or has another length (the caller then copies it through the host).
    pub fn adopt(&self, array: &DeviceArray) -> Result<Option<DeviceVector>, BackendError> {
        if !array.is_on(&self.launcher) || array.len() != self.n {
            return Ok(None);
        }
        let vector = self.new_vector()?;
        self.launcher.copy(array.buffer(), &vector.0)?;
        Ok(Some(vector))
    }

    /// `v`, handed to the caller as an array that stays on the device.
    pub fn into_array(&self, v: DeviceVector) -> DeviceArray {
        DeviceArray::new(v.0, self.launcher.clone())
    }

    /// `y ← y + alpha·x`, for the backend's own use.
    pub(crate) fn add_scaled(
        &self,
        alpha: f64,
        x: &DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::axpy(self.n, alpha, x.0.address(), y.0.address());
        self.launcher.launch(&launch, self.elementwise)
    }

    /// `out ← Σ cⱼ·vⱼ` over `terms` (at least one), formed as a copy, a scaling and axpys
    /// would form it, without a product: nothing to finish or wait for.
    pub(super) fn combine(
        &mut self,
        terms: &[(f64, &DeviceVector)],
        out: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        self.launch_combination(terms, out, (0, 0))
    }

    /// The combination's launch, with `(z, partials)` for the product (both 0 for none).
    fn launch_combination(
        &mut self,
        terms: &[(f64, &DeviceVector)],
        out: &mut DeviceVector,
        (z, partials): (u64, u64),
    ) -> Result<(), BackendError> {
        // The kernel starts from the first term, passed apart; the table holds the others'
        // addresses, then every coefficient.
        let Some((first, rest)) = terms.split_first() else {
            return Err(BackendError::Kernel {
                kernel: COMBINE_DOT_PARTIALS.to_owned(),
                reason: "was asked for a combination of no terms".to_owned(),
            });
        };
        let words: Vec<f64> = (rest.iter().map(|(_, v)| address_word(v)))
            .chain(terms.iter().map(|&(c, _)| c))
            .collect();
        let table = self.table("combinations", &words)?;
        let coefficients = table + (rest.len() * size_of::<f64>()) as u64;
        let launch = Launch::combine_dot_partials(
            self.n,
            first.1.0.address(),
            table,
            coefficients,
            terms.len(),
            out.0.address(),
            z,
            partials,
        );
        self.launcher.launch(&launch, self.reduction)
    }

    /// `p ← step·p`, `g ← g_new − g`, and `[sᵀy, yᵀy, g_newᵀg_new, sᵀs, ‖g_new‖∞]`: one pass,
    /// each with the bits of the one-vector kernels' passes. Without `squared_norm`,
    /// `g_newᵀg_new` is not brought back (it reads NaN): one word less each step.
    fn step_end(
        &mut self,
        step: f64,
        p: &mut DeviceVector,
        g_new: &DeviceVector,
        g: &mut DeviceVector,
        squared_norm: bool,
    ) -> Result<[f64; STEP_END_ROWS], BackendError> {
        let partials = self.partials_rows(STEP_END_ROWS)?;
        let launch = Launch::step_end_partials(
            self.n,
            step,
            p.0.address(),
            g_new.0.address(),
            g.0.address(),
            partials,
        );
        self.launcher.launch(&launch, self.reduction)?;
        // Rows 0–3 are sums; row 4 a maximum, finished as `max_abs` finishes its own.
        let sums = STEP_END_ROWS - 1;
        self.sum_rows(sums)?;
        let blocks = self.reduction.blocks as usize;
        let max_row = partials + (sums * blocks * size_of::<f64>()) as u64;
        // The maximum's slot: its own, or g_newᵀg_new's where that is not read.
        const SQUARED_NORM: usize = 2;
        let slot = if squared_norm { sums } else { SQUARED_NORM };
        let max_slot = self.scalars.address() + (slot * size_of::<f64>()) as u64;
        let max = Launch::max_abs_partials(blocks, max_row, max_slot);
        self.launcher.launch(&max, self.finish)?;
        let mut results = [0.0; STEP_END_ROWS];
        if squared_norm {
            self.read_scalars(STEP_END_PARTIALS, &mut results)?;
        } else {
            self.read_scalars(STEP_END_PARTIALS, &mut results[..sums])?;
            results[sums] = std::mem::replace(&mut results[SQUARED_NORM], f64::NAN);
        }
        Ok(results)
    }

    /// `‖v‖∞`, NaN if any entry is NaN.
    pub(super) fn max_abs(&mut self, v: &DeviceVector) -> Result<f64, BackendError> {
        self.max_abs_of(&v.0)
    }

    /// [`max_abs`](Self::max_abs) of any buffer of `n` entries.
    fn max_abs_of(&mut self, v: &Buffer) -> Result<f64, BackendError> {
        let partials = self.partials.address();
        let first = Launch::max_abs_partials(self.n, v.address(), partials);
        self.launcher.launch(&first, self.reduction)?;
        let blocks = self.reduction.blocks as usize;
        let second = Launch::max_abs_partials(blocks, partials, self.scalars.address());
        self.launcher.launch(&second, self.finish)?;
        self.read_scalar(MAX_ABS_PARTIALS)
    }

    /// `launch` over the vectors' `n` entries, one thread per entry.
    fn elementwise(&self, launch: &Launch) -> Result<(), EvalError> {
        Ok(self.launcher.launch(launch, self.elementwise)?)
    }

    /// The sum of the first row of partials, brought back after the work `after` names.
    fn finish_sum(&mut self, after: &str) -> Result<f64, BackendError> {
        self.sum_rows(1)?;
        self.read_scalar(after)
    }

    /// The sums of the first `out.len()` rows of partials, brought back after the work `after`
    /// names.
    fn finish_sums(&mut self, after: &str, out: &mut [f64]) -> Result<(), BackendError> {
        self.sum_rows(out.len())?;
        self.read_scalars(after, out)
    }

    /// Sums each of the first `rows` rows of partials in order into the results.
    fn sum_rows(&mut self, rows: usize) -> Result<(), BackendError> {
        let blocks = self.reduction.blocks as usize;
        let launch = Launch::sum_partial_rows(
            self.partials.address(),
            blocks,
            rows,
            self.scalars.address(),
        );
        self.launcher.launch(&launch, thread_per_row(rows))
    }

    /// The launcher, for the passes of other files.
    pub(super) fn launcher(&self) -> &Arc<Launcher> {
        &self.launcher
    }

    /// `launch`, an elementwise pass of the box over the vectors.
    pub(super) fn launch_elementwise(&self, launch: &Launch) -> Result<(), BackendError> {
        self.launcher.launch(launch, self.box_elementwise)
    }

    /// `launch`, a reduction leaving one partial per block in each of its rows.
    pub(super) fn launch_reduction(&self, launch: &Launch) -> Result<(), BackendError> {
        self.launcher.launch(launch, self.reduction)
    }

    /// The first `rows` rows of partials and the partials per row, after the work `after`
    /// names.
    pub(super) fn read_partials(
        &self,
        rows: usize,
        after: &str,
    ) -> Result<(Vec<f64>, usize), BackendError> {
        let blocks = self.reduction.blocks as usize;
        // Only the rows asked for: the buffer keeps the size of the widest reduction so far
        // (the masked Gram's hundreds of rows).
        let mut read = vec![0.0; rows * blocks];
        self.launcher
            .read(&mut [(&self.partials, &mut read)], after)?;
        Ok((read, blocks))
    }

    /// The address of room for `len` gathered values, grown if no gather has needed as many.
    pub(super) fn rows_out(&mut self, len: usize) -> Result<u64, BackendError> {
        if self.rows_out.as_ref().is_none_or(|rows| rows.len() < len) {
            self.rows_out = Some(self.launcher.alloc("gathered rows", len)?);
        }
        Ok(self.rows_out.as_ref().map_or(0, Buffer::address))
    }

    /// The first `out.len()` gathered values, after the work `after` names.
    pub(super) fn read_rows_out(&self, after: &str, out: &mut [f64]) -> Result<(), BackendError> {
        self.read_rows_out_with(after, out, &mut [])
    }

    /// As [`read_rows_out`](Self::read_rows_out), with the `more` reads in the same wait.
    pub(super) fn read_rows_out_with(
        &self,
        after: &str,
        out: &mut [f64],
        more: &mut [(&Buffer, &mut [f64])],
    ) -> Result<(), BackendError> {
        let Some(rows) = &self.rows_out else {
            return self.launcher.read(more, after);
        };
        let len = out.len().min(rows.len());
        let mut reads = vec![(rows, &mut out[..len])];
        reads.extend(more.iter_mut().map(|(from, to)| (*from, &mut **to)));
        self.launcher.read(&mut reads, after)
    }

    /// The first result, after the work `after` names.
    fn read_scalar(&mut self, after: &str) -> Result<f64, BackendError> {
        let mut scalar = [0.0];
        self.read_scalars(after, &mut scalar)?;
        Ok(scalar[0])
    }

    /// The first `out.len()` results, after the work `after` names.
    fn read_scalars(&mut self, after: &str, out: &mut [f64]) -> Result<(), BackendError> {
        self.launcher.read(&mut [(&self.scalars, out)], after)
    }

    /// `aᵀb`, brought back: [`dot`](VectorSpace::dot), as the backend's own errors.
    pub(super) fn dot_read(
        &mut self,
        a: &DeviceVector,
        b: &DeviceVector,
    ) -> Result<f64, BackendError> {
        self.dot_unread(a, b)?;
        self.read_scalar(DOT_PARTIALS)
    }

    /// `aᵀb` into the first result, as [`dot`](VectorSpace::dot) sums it, left on the device
    /// for [`read_with`](Self::read_with) to bring back with another number.
    pub(super) fn dot_unread(
        &mut self,
        a: &DeviceVector,
        b: &DeviceVector,
    ) -> Result<(), BackendError> {
        let partials = self.partials.address();
        let first = Launch::dot_partials(self.n, a.0.address(), b.0.address(), partials);
        self.launcher.launch(&first, self.reduction)?;
        self.sum_rows(1)
    }

    /// The first result, and the first `out.len()` entries of `other`, in one wait for the
    /// work `after` names.
    pub(super) fn read_with(
        &mut self,
        (other, out): (&Buffer, &mut [f64]),
        after: &str,
    ) -> Result<f64, BackendError> {
        let mut scalar = [0.0];
        self.launcher
            .read(&mut [(other, out), (&self.scalars, &mut scalar)], after)?;
        Ok(scalar[0])
    }

    /// The address of `rows` rows of partials, and room for their `rows` results, grown if
    /// no launch has needed as many yet.
    pub(super) fn partials_rows(&mut self, rows: usize) -> Result<u64, BackendError> {
        let len = rows * self.reduction.blocks as usize;
        if self.partials.len() < len {
            self.partials = self.launcher.alloc("reduction partials", len)?;
        }
        if self.scalars.len() < rows {
            self.scalars = self.launcher.alloc("reductions' results", rows)?;
        }
        Ok(self.partials.address())
    }

    /// A device copy of `words` (addresses as [`address_word`]s, coefficients, indices), in
    /// the table kept for `purpose` ([`Tables::write`]).
    pub(super) fn table(
        &mut self,
        purpose: &'static str,
        words: &[f64],
    ) -> Result<u64, BackendError> {
        self.tables.write(&self.launcher, purpose, words)
    }
}

/// The space's operations, each one or two launches in order with the evaluations. What fails
/// is the backend: a [`BackendError`], carried as [`EvalError::Backend`].
impl VectorSpace for DeviceVectors {
    type Vector = DeviceVector;

    fn dim(&self) -> usize {
        self.n
    }

    fn zeros(&mut self) -> Result<DeviceVector, EvalError> {
        Ok(self.new_vector()?)
    }

    fn upload(&mut self, x: &[f64]) -> Result<DeviceVector, EvalError> {
        Ok(self.vector_from(x)?)
    }

    fn download<'v>(&'v self, v: &'v DeviceVector) -> Result<Cow<'v, [f64]>, EvalError> {
        Ok(Cow::Owned(
            self.launcher.read_new(&v.0, "a vector download")?,
        ))
    }

    fn host_vector(&mut self, v: DeviceVector) -> Result<Vec<f64>, EvalError> {
        Ok(self.download(&v)?.into_owned())
    }

    /// Summed in a fixed order: deterministic for a given launch configuration.
    fn dot(&mut self, a: &DeviceVector, b: &DeviceVector) -> Result<f64, EvalError> {
        Ok(self.dot_read(a, b)?)
    }

    /// One pass for the usual norms (∞ and 2); the others pass by pass.
    fn finish_step(
        &mut self,
        step: f64,
        p: &mut DeviceVector,
        g_new: &DeviceVector,
        g: &mut DeviceVector,
        ord: f64,
    ) -> Result<StepEnd, EvalError> {
        if ord != f64::INFINITY && ord != 2.0 {
            return finish_step_pass_by_pass(self, step, p, g_new, g, ord);
        }
        let [sy, yy, gg, ss, max_abs] = self.step_end(step, p, g_new, g, ord == 2.0)?;
        Ok(StepEnd {
            gradient_norm: if ord == 2.0 { gg.sqrt() } else { max_abs },
            step_norm: ss.sqrt(),
            sy,
            yy,
        })
    }

    /// One launch and one wait for every product.
    fn dots(
        &mut self,
        vectors: &[&DeviceVector],
        with: &[&DeviceVector],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        if vectors.is_empty() || with.is_empty() {
            return Ok(());
        }
        // Each product is its own sum, so the vectors may lie in any order: each keeps the
        // place it had in the last pass's table, and only new vectors are written.
        let (count, withs) = (vectors.len(), with.len());
        let addresses: Vec<f64> = vectors.iter().map(|v| address_word(v)).collect();
        let places = self.tables.places("products", &addresses);
        let mut words = vec![0.0; count + withs];
        for (&place, &address) in places.iter().zip(&addresses) {
            words[place] = address;
        }
        for (word, w) in words[count..].iter_mut().zip(with) {
            *word = address_word(w);
        }
        let table = self.table("products", &words)?;
        let partials = self.partials_rows(count * withs)?;
        let launch = Launch::dots_partials(self.n, table, count, withs, partials);
        self.launcher.launch(&launch, self.reduction)?;
        let mut rows = vec![0.0; count * withs];
        self.finish_sums(DOTS_PARTIALS, &mut rows)?;
        // Row `k·count + place` holds the product of the vector in that place with `with[k]`,
        // with `dot`'s bits.
        for (k, column) in rows.chunks_exact(count).enumerate() {
            for (i, &place) in places.iter().enumerate() {
                out[i * withs + k] = column[place];
            }
        }
        Ok(())
    }

    /// One pass, the combination formed as a copy, a scaling and axpys would form it.
    fn combine_dot(
        &mut self,
        terms: &[(f64, &DeviceVector)],
        out: &mut DeviceVector,
        z: &DeviceVector,
    ) -> Result<f64, EvalError> {
        if terms.is_empty() {
            combine_term_by_term(self, terms, out)?;
            return self.dot(z, out);
        }
        let partials = self.partials.address();
        self.launch_combination(terms, out, (z.0.address(), partials))?;
        Ok(self.finish_sum(COMBINE_DOT_PARTIALS)?)
    }

    fn norm(&mut self, v: &DeviceVector, ord: f64) -> Result<f64, EvalError> {
        if ord == f64::INFINITY {
            Ok(self.max_abs(v)?)
        } else if ord == 2.0 {
            Ok(self.dot(v, v)?.sqrt())
        } else {
            // Other norms are rare options: computed on the host, as scipy does.
            Ok(vector::norm(&self.download(v)?, ord))
        }
    }

    fn axpy(
        &mut self,
        alpha: f64,
        x: &DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        Ok(self.add_scaled(alpha, x, y)?)
    }

    fn scale(&mut self, alpha: f64, v: &mut DeviceVector) -> Result<(), EvalError> {
        self.elementwise(&Launch::scale(self.n, alpha, v.0.address()))
    }

    fn ray_point(
        &mut self,
        x: &DeviceVector,
        step: f64,
        p: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        let (x, p, out) = (x.0.address(), p.0.address(), out.0.address());
        self.elementwise(&Launch::ray_point(self.n, x, step, p, out))
    }

    fn difference(&mut self, new: &DeviceVector, old: &mut DeviceVector) -> Result<(), EvalError> {
        self.elementwise(&Launch::difference(
            self.n,
            new.0.address(),
            old.0.address(),
        ))
    }

    fn copy(&mut self, from: &DeviceVector, to: &mut DeviceVector) -> Result<(), EvalError> {
        Ok(self.launcher.copy(&from.0, &to.0)?)
    }
}

/// A vector's device address as a table entry: the kernels read the word as a `u64`.
pub(super) fn address_word(v: &DeviceVector) -> f64 {
    f64::from_bits(v.0.address())
}

/// A norm of a kept array, on its device: a caller needs no copy of it to report it.
impl DeviceArray {
    /// `‖a‖∞ = max |aᵢ|`, NaN if any entry is NaN, as on the host; in one pass on the device,
    /// after which one word comes back.
    pub fn max_abs(&self) -> Result<f64, BackendError> {
        if self.is_empty() {
            return Ok(0.0);
        }
        DeviceVectors::new(self.launcher().clone(), self.len())?.max_abs_of(self.buffer())
    }
}
