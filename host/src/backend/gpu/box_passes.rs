//! The passes of a step within a box (L-BFGS-B's) on a solver's device vectors: one launch
//! each (the truncation two and a cut; the masked Gram a combination for `u`, then one pass;
//! the earliest breakpoints' runs, then a gather of the chosen ones), in order with the
//! evaluations. Their reductions leave rows of one partial per block, brought back and finished
//! here: sums in block order by `sum_in_order`, as the device's dot products are finished (a
//! slope has `dot`'s bits), maxima and minima in any order. A box is `(lower, upper)`, or `None`
//! for one with no finite side.

use super::abi::Launch;
use super::vectors::{DeviceVector, DeviceVectors, address_word, thread_per_row};
use crate::backend::error::BackendError;
use gpu_kernels::kernel::{
    AIM_PARTIALS, BOX_PATH_PARTIALS, BREAKPOINT_CHUNKS, FREE_PARTIALS, GATHER,
    MASKED_GRAM_PARTIALS, NEW_PAIR_PARTIALS, NEW_PAIR_ROWS, PROJECT_AIM_PARTIALS, REACH_PARTIALS,
    sum_in_order,
};

/// A box on the device: the lower and upper bounds.
pub type DeviceBox<'b> = Option<(&'b DeviceVector, &'b DeviceVector)>;

/// The box's addresses, both 0 without one.
fn addresses(bounds: DeviceBox<'_>) -> (u64, u64) {
    bounds.map_or((0, 0), |(lower, upper)| (address(lower), address(upper)))
}

fn address(v: &DeviceVector) -> u64 {
    v.buffer().address()
}

impl DeviceVectors {
    /// The steepest-descent path's `(times, path)` where given, and the projected gradient's
    /// ∞-norm at `(x, g)`.
    pub(crate) fn box_path(
        &mut self,
        bounds: DeviceBox<'_>,
        x: &DeviceVector,
        g: &DeviceVector,
        out: Option<(&mut DeviceVector, &mut DeviceVector)>,
    ) -> Result<f64, BackendError> {
        let (times, path) = out.map_or((0, 0), |(times, path)| (address(times), address(path)));
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let (x, g) = (address(x), address(g));
        let [norms] = self.reduce(BOX_PATH_PARTIALS, |partials| {
            Launch::box_path_partials(n, lower, upper, x, g, times, path, partials)
        })?;
        Ok(maximum(&norms))
    }

    /// `out ← x + t·path` where `path ≠ 0`, else `x`.
    pub(crate) fn path_point(
        &mut self,
        x: &DeviceVector,
        t: f64,
        path: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let launch = Launch::path_point(self.dim(), address(x), t, address(path), address(out));
        self.launch_elementwise(&launch)
    }

    /// `free ←` 1 where `point` lies strictly inside the box, else 0; how many.
    pub(crate) fn free_variables(
        &mut self,
        bounds: DeviceBox<'_>,
        point: &DeviceVector,
        free: &mut DeviceVector,
    ) -> Result<usize, BackendError> {
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let [counts] = self.reduce(FREE_PARTIALS, |partials| {
            Launch::free_partials(n, lower, upper, address(point), address(free), partials)
        })?;
        // Whole numbers below 2⁵³: exact in any order.
        Ok(counts.iter().sum::<f64>() as usize)
    }

    /// `direction ← target − x`, its slope and its room to the box.
    pub(crate) fn aim(
        &mut self,
        bounds: DeviceBox<'_>,
        x: &DeviceVector,
        g: &DeviceVector,
        target: &DeviceVector,
        direction: &mut DeviceVector,
    ) -> Result<(f64, f64), BackendError> {
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let [slopes, rooms] = self.reduce(AIM_PARTIALS, |partials| {
            let (x, g, target, direction) =
                (address(x), address(g), address(target), address(direction));
            Launch::aim_partials(n, lower, upper, x, g, target, direction, partials)
        })?;
        Ok((sum(&slopes), minimum(&rooms)))
    }

    /// `target ← P(cauchy + step)` over the free variables (`cauchy` elsewhere), then
    /// [`aim`](Self::aim) at it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn project_aim(
        &mut self,
        bounds: DeviceBox<'_>,
        (free, cauchy, step): (&DeviceVector, &DeviceVector, &DeviceVector),
        x: &DeviceVector,
        g: &DeviceVector,
        target: &mut DeviceVector,
        direction: &mut DeviceVector,
    ) -> Result<(f64, f64), BackendError> {
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let (free, cauchy, step) = (address(free), address(cauchy), address(step));
        let (x, g) = (address(x), address(g));
        let (target, direction) = (address(target), address(direction));
        let [slopes, rooms] = self.reduce(PROJECT_AIM_PARTIALS, |partials| {
            Launch::project_aim_partials(
                n, lower, upper, free, cauchy, step, x, g, target, direction, partials,
            )
        })?;
        Ok((sum(&slopes), minimum(&rooms)))
    }

    /// `step` from `cauchy` cut where the first free variable meets its bound (the lowest
    /// index among equals): `target ← cauchy + α·step` over the free variables, that bound at
    /// that variable, `cauchy` elsewhere.
    pub(crate) fn truncated_step(
        &mut self,
        bounds: DeviceBox<'_>,
        (free, cauchy, step): (&DeviceVector, &DeviceVector, &DeviceVector),
        target: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let (free, cauchy, step) = (address(free), address(cauchy), address(step));
        let mut reach = |alpha: f64| -> Result<[Vec<f64>; 2], BackendError> {
            self.reduce(REACH_PARTIALS, |partials| {
                Launch::reach_partials(n, lower, upper, free, cauchy, step, alpha, partials)
            })
        };
        // The least fraction; then, where it is below 1, the first variable that has it.
        let alpha = minimum(&reach(f64::NAN)?[0]);
        let first = if alpha < 1.0 {
            let first = minimum(&reach(alpha)?[1]);
            // The variable that gave the least fraction has it.
            debug_assert!(first < n as f64, "no variable reaches {alpha}");
            first as usize
        } else {
            n
        };
        let (alpha, target) = (alpha.min(1.0), address(target));
        let launch = Launch::truncate(n, lower, upper, free, cauchy, step, alpha, first, target);
        self.launch_elementwise(&launch)
    }

    /// `out ← P(x + step·d)`.
    pub(crate) fn clipped_ray_point(
        &mut self,
        bounds: DeviceBox<'_>,
        x: &DeviceVector,
        step: f64,
        d: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), BackendError> {
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let (x, d, out) = (address(x), address(d), address(out));
        let launch = Launch::clipped_ray_point(n, lower, upper, x, step, d, out);
        self.launch_elementwise(&launch)
    }

    /// `s ← step·d`, `y ← g_new − g`, and `[sᵀy, yᵀy, sᵀs, gᵀs, g_newᵀg_new, ‖g_new‖∞]`.
    pub(crate) fn new_pair(
        &mut self,
        step: f64,
        (d, g_new, g): (&DeviceVector, &DeviceVector, &DeviceVector),
        s: &mut DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<[f64; NEW_PAIR_ROWS], BackendError> {
        let n = self.dim();
        let (d, g_new, g) = (address(d), address(g_new), address(g));
        let (s, y) = (address(s), address(y));
        let rows: [Vec<f64>; NEW_PAIR_ROWS] = self.reduce(NEW_PAIR_PARTIALS, |partials| {
            Launch::new_pair_partials(n, step, d, g_new, g, s, y, partials)
        })?;
        let [sy, yy, ss, gs, gg, max] = rows;
        Ok([
            sum(&sy),
            sum(&yy),
            sum(&ss),
            sum(&gs),
            sum(&gg),
            maximum(&max),
        ])
    }

    /// For each run of `chunk` consecutive `times` (the last one shorter), in order: its least
    /// breakpoint time (`∞` for none) and how many breakpoints it holds.
    pub(crate) fn breakpoint_chunks(
        &mut self,
        times: &DeviceVector,
        chunk: usize,
    ) -> Result<(Vec<f64>, Vec<f64>), BackendError> {
        let n = self.dim();
        let chunks = n.div_ceil(chunk);
        let out = self.rows_out(2 * chunks)?;
        let launch = Launch::breakpoint_chunks(n, address(times), chunk, out);
        self.launch_reduction(&launch)?;
        let mut rows = vec![0.0; 2 * chunks];
        self.read_rows_out(BREAKPOINT_CHUNKS, &mut rows)?;
        let counts = rows.split_off(chunks);
        Ok((rows, counts))
    }

    /// `out[r·k + j] ← vectors[j][indices[r]]` (`k` vectors).
    pub(crate) fn gather(
        &mut self,
        vectors: &[&DeviceVector],
        indices: &[usize],
        out: &mut [f64],
    ) -> Result<(), BackendError> {
        let len = vectors.len() * indices.len();
        if len == 0 {
            return Ok(());
        }
        // One table: the vectors' addresses, then the indices (two tables of one length
        // would share a buffer).
        let words: Vec<f64> = (vectors.iter().map(|v| address_word(v)))
            .chain(indices.iter().map(|&i| f64::from_bits(i as u64)))
            .collect();
        let table = self.table(&words)?;
        let indices_at = table + (vectors.len() * size_of::<f64>()) as u64;
        let rows = self.rows_out(len)?;
        let launch = Launch::gather(table, vectors.len(), indices_at, indices.len(), rows);
        self.launcher().launch(&launch, thread_per_row(len))?;
        self.read_rows_out(GATHER, out)
    }

    /// `v[i] ← value` for each `(i, value)` of `entries` (distinct indices).
    pub(crate) fn scatter(
        &mut self,
        v: &mut DeviceVector,
        entries: &[(usize, f64)],
    ) -> Result<(), BackendError> {
        if entries.is_empty() {
            return Ok(());
        }
        let words: Vec<f64> = (entries.iter())
            .flat_map(|&(i, value)| [f64::from_bits(i as u64), value])
            .collect();
        let table = self.table(&words)?;
        let launch = Launch::scatter(address(v), table, entries.len());
        self.launcher()
            .launch(&launch, thread_per_row(entries.len()))
    }

    /// The Gram matrix of the rows where `mask[i] ≠ 0` is `keep`, `Σ wᵢ·wᵢᵀ` with
    /// `wᵢ = [c₀·v₀[i], …]` for `columns = [(c₀, v₀), …]`, and `Σ uᵢ·wᵢ` with `uᵢ = Σ aₜ·uₜ[i]`
    /// (formed first in a kept scratch vector, then taken as one more column): one launch, in
    /// tiles of columns, each product `a ≤ b` taken once (the matrix is symmetric by
    /// construction).
    pub(crate) fn masked_gram(
        &mut self,
        columns: &[(f64, &DeviceVector)],
        (mask, keep): (&DeviceVector, bool),
        u: &[(f64, &DeviceVector)],
    ) -> Result<(Vec<f64>, Vec<f64>), BackendError> {
        let width = columns.len();
        let (mut gram, mut with_u) = (vec![0.0; width * width], vec![0.0; width]);
        if width == 0 {
            return Ok((gram, with_u));
        }
        let combined = if u.is_empty() {
            0
        } else {
            let mut combined = match self.scratch.take() {
                Some(v) => v,
                None => self.zeros()?,
            };
            let made = self.combine(u, &mut combined);
            let combined = self.scratch.insert(combined);
            made?;
            address(combined)
        };
        let words: Vec<f64> = columns.iter().map(|&(_, v)| address_word(v)).collect();
        let table = self.table(&words)?;
        let triangle = width * (width + 1) / 2;
        let rows = triangle + if combined == 0 { 0 } else { width };
        let partials = self.partials_rows(rows)?;
        let (n, mask, keep) = (self.dim(), address(mask), usize::from(keep));
        let launch = Launch::masked_gram_partials(n, table, width, combined, mask, keep, partials);
        self.launch_reduction(&launch)?;
        let (all, blocks) = self.read_partials(rows, MASKED_GRAM_PARTIALS)?;
        let row = |r: usize| sum(&all[r * blocks..(r + 1) * blocks]);
        let scale = |a: usize| columns[a].0;
        for b in 0..width {
            for a in 0..=b {
                let product = scale(a) * scale(b) * row(b * (b + 1) / 2 + a);
                gram[a * width + b] = product;
                gram[b * width + a] = product;
            }
        }
        if combined != 0 {
            for (a, out) in with_u.iter_mut().enumerate() {
                *out = scale(a) * row(triangle + a);
            }
        }
        Ok((gram, with_u))
    }

    /// The `R` rows of partials of the reduction `launch(partials)` makes, brought back.
    fn reduce<const R: usize>(
        &mut self,
        kernel: &str,
        launch: impl FnOnce(u64) -> Launch,
    ) -> Result<[Vec<f64>; R], BackendError> {
        let partials = self.partials_rows(R)?;
        self.launch_reduction(&launch(partials))?;
        let (all, blocks) = self.read_partials(R, kernel)?;
        Ok(std::array::from_fn(|row| {
            all[row * blocks..(row + 1) * blocks].to_vec()
        }))
    }
}

/// The sum of a row of partials in block order, as the device's dot products are finished.
fn sum(row: &[f64]) -> f64 {
    sum_in_order(row.iter().copied())
}

/// The greatest of a row of partials (none are NaN).
fn maximum(row: &[f64]) -> f64 {
    row.iter().copied().fold(0.0, f64::max)
}

/// The least of a row of partials.
fn minimum(row: &[f64]) -> f64 {
    row.iter().copied().fold(f64::INFINITY, f64::min)
}
