//! The passes of a step within a box, L-BFGS-B's, on a solver's device vectors: the
//! [`BoxSpace`] of the GPU. Each is one launch; the truncation takes two and a cut, the masked
//! Gram a combination for `u` then one pass, the earliest breakpoints their runs then a gather
//! of the chosen ones. All run in order with the evaluations. Their reductions leave rows of
//! one partial per block, brought back and finished here: sums in block order by
//! `sum_in_order`, as the device's dot products are finished, so a slope has `dot`'s bits;
//! maxima and minima in any order.
//!
//! The earliest breakpoints are chosen on the host from what the device tells of runs of
//! consecutive times ([`earliest_runs`]) and the times of the runs that hold them: about
//! `32·√(n·count)` bytes across, not the `8n` of the times. A Cauchy path that goes past them
//! takes the next batches the same way, counting only the times after the last breakpoint held
//! (`picks_later_breakpoints`); only a path past a large share of them has the rest sorted on
//! the device ([`gpu_kernels::sort`]), then read in order a batch at a time: the times never
//! cross to the host.

use super::abi::Launch;
use super::driver::Buffer;
use super::launcher::thread_per_row;
use super::vectors::{DeviceVector, DeviceVectors, address_word};
use crate::error::{BackendError, EvalError};
use crate::space::{BoxSpace, BoxVectors, Breakpoint, PairSums, VectorSpace};
use gpu_kernels::bounds::is_breakpoint_after;
use gpu_kernels::kernel::{
    AIM_PARTIALS, BOX_PATH_PARTIALS, BREAKPOINT_CHUNKS, FREE_PARTIALS, GATHER,
    MASKED_GRAM_PARTIALS, NEW_PAIR_PARTIALS, NEW_PAIR_ROWS, PROJECT_AIM_PARTIALS, REACH_PARTIALS,
    SORT_STEP, SORT_TILES, nan_max, sum_in_order,
};
use gpu_kernels::sort::{SORT_TILE, SortLaunch, sort_launches};

/// The shortest run of times [`BoxSpace::earliest_breakpoints`] asks the device about: a warp
/// takes each run, and a shorter one would leave some of its lanes idle.
const RUN_MIN_LEN: usize = 32;

/// The most entries one scatter launch writes: its table of two words an entry then holds
/// 1 MB at most, where the whole scatter of a path past every breakpoint at `n = 10⁷` took 256 MB.
const SCATTER_MOST: usize = 1 << 16;

/// A Cauchy walk's breakpoints past the earliest, sorted on the device: their times (`∞` past
/// the last) and their variables as `u64` words, and how many the walk has read. Kept from one
/// iteration to the next, `2n` words at most.
#[derive(Default)]
pub struct DeviceLater {
    keys: Option<Buffer>,
    indices: Option<Buffer>,
    read: usize,
}

/// The box's addresses, both 0 without one (no finite side).
fn addresses(bounds: Option<&BoxVectors<DeviceVector>>) -> (u64, u64) {
    bounds.map_or((0, 0), |b| (address(&b.lower), address(&b.upper)))
}

fn address(v: &DeviceVector) -> u64 {
    v.buffer().address()
}

impl BoxSpace for DeviceVectors {
    type Mask = DeviceVector;
    type Later = DeviceLater;

    fn new_mask(&mut self) -> Result<DeviceVector, EvalError> {
        Ok(self.new_vector()?)
    }

    fn projected_gradient_norm(
        &mut self,
        bounds: Option<&BoxVectors<DeviceVector>>,
        x: &DeviceVector,
        g: &DeviceVector,
    ) -> Result<f64, EvalError> {
        Ok(match bounds {
            None => self.max_abs(g)?,
            bounds => self.box_path(bounds, x, g, (0, 0))?,
        })
    }

    fn steepest_path(
        &mut self,
        bounds: Option<&BoxVectors<DeviceVector>>,
        x: &DeviceVector,
        g: &DeviceVector,
        times: &mut DeviceVector,
        path: &mut DeviceVector,
    ) -> Result<f64, EvalError> {
        Ok(self.box_path(bounds, x, g, (address(times), address(path)))?)
    }

    fn earliest_breakpoints(
        &mut self,
        times: &DeviceVector,
        after: Option<Breakpoint>,
        count: usize,
    ) -> Result<(Vec<Breakpoint>, usize), EvalError> {
        let n = self.dim();
        // Runs of about √(n / count) times: the runs' summaries and the chosen runs' times
        // then cross in about as many bytes each.
        let chunk = (((n / count.max(1)) as f64).sqrt().ceil() as usize).max(RUN_MIN_LEN);
        // Every breakpoint's time is positive: after time 0 is all of them.
        let Breakpoint(after_time, after_index) = after.unwrap_or(Breakpoint(0.0, 0));
        let (least, counts) = self.breakpoint_chunks(times, chunk, (after_time, after_index))?;
        // Whole numbers below 2⁵³: exact in any order.
        let total = counts.iter().sum::<f64>() as usize;
        let indices: Vec<usize> = (earliest_runs(&least, &counts, count).into_iter())
            .flat_map(|run| run * chunk..(run * chunk + chunk).min(n))
            .collect();
        let mut values = vec![0.0; indices.len()];
        self.gather(&[times], &indices, &mut values)?;
        let mut found: Vec<Breakpoint> = (indices.iter().zip(&values))
            .filter(|&(&i, &t)| is_breakpoint_after(t, i, (after_time, after_index)))
            .map(|(&i, &t)| Breakpoint(t, i))
            .collect();
        found.sort_unstable();
        found.truncate(count);
        Ok((found, total))
    }

    fn picks_later_breakpoints(&self) -> bool {
        true
    }

    /// Sorted on the device ([`gpu_kernels::sort`]): each tile of entries in a block's shared
    /// memory, then the merges of longer runs, about `½·log²(n / 1024)` launches and no wait.
    fn order_later(
        &mut self,
        times: &DeviceVector,
        after: Breakpoint,
        later: &mut DeviceLater,
    ) -> Result<(), EvalError> {
        let n = self.dim();
        let launcher = self.launcher().clone();
        let made = |slot: &mut Option<Buffer>| match slot {
            Some(buffer) => Ok::<_, BackendError>(buffer.address()),
            None => Ok(slot
                .insert(launcher.alloc("ordered breakpoints", n)?)
                .address()),
        };
        let (keys, indices) = (made(&mut later.keys)?, made(&mut later.indices)?);
        later.read = 0;
        let Breakpoint(after_time, after_index) = after;
        let tile_threads = (SORT_TILE / 2) as u32;
        let tiles = launcher.config_within(SORT_TILES, n.div_ceil(2), tile_threads)?;
        let steps = launcher.config(SORT_STEP, n.next_power_of_two() / 2)?;
        let mut plan = Vec::new();
        sort_launches(n, |launch| plan.push(launch));
        for launch in plan {
            match launch {
                SortLaunch::Tiles { start } => {
                    let times = if start { address(times) } else { 0 };
                    let launch =
                        Launch::sort_tiles(n, times, after_time, after_index, keys, indices);
                    launcher.launch(&launch, tiles)?;
                }
                SortLaunch::Step(step) => {
                    let flip = usize::from(step.flip);
                    let launch = Launch::sort_step(n, step.half, flip, keys, indices);
                    launcher.launch(&launch, steps)?;
                }
            }
        }
        Ok(())
    }

    /// One gather of the rows, whose indices the kernel reads where the order left them, and
    /// one wait for the rows, times and indices.
    fn next_later(
        &mut self,
        later: &mut DeviceLater,
        vectors: &[&DeviceVector],
        count: usize,
        rows: &mut Vec<f64>,
    ) -> Result<Vec<Breakpoint>, EvalError> {
        rows.clear();
        let at = later.read;
        let count = count.min(self.dim().saturating_sub(at));
        let views = (later.keys.as_ref()).zip(later.indices.as_ref());
        let Some((keys, indices)) =
            views.and_then(|(k, i)| k.view(at, count).zip(i.view(at, count)))
        else {
            return Ok(Vec::new());
        };
        if count == 0 || vectors.is_empty() {
            return Ok(Vec::new());
        }
        let words: Vec<f64> = vectors.iter().map(|v| address_word(v)).collect();
        let table = self.table("gathered rows", &words)?;
        let width = vectors.len();
        let out = self.rows_out(count * width)?;
        let launch = Launch::gather(table, width, indices.address(), count, out);
        self.launcher()
            .launch(&launch, thread_per_row(count * width))?;
        let (mut times, mut variables) = (vec![0.0; count], vec![0.0; count]);
        rows.resize(count * width, 0.0);
        self.read_rows_out_with(
            GATHER,
            rows,
            &mut [(&keys, &mut times), (&indices, &mut variables)],
        )?;
        // Past the last breakpoint the entries' times are ∞.
        let found = times.iter().take_while(|t| t.is_finite()).count();
        later.read = if found < count {
            self.dim()
        } else {
            at + count
        };
        rows.truncate(found * width);
        Ok((times.iter().zip(&variables).take(found))
            .map(|(&t, &i)| Breakpoint(t, i.to_bits() as usize))
            .collect())
    }

    /// `out[r·k + j] ← vectors[j][indices[r]]` (`k` vectors).
    fn gather(
        &mut self,
        vectors: &[&DeviceVector],
        indices: &[usize],
        out: &mut [f64],
    ) -> Result<(), EvalError> {
        let len = vectors.len() * indices.len();
        if len == 0 {
            return Ok(());
        }
        // One table: the vectors' addresses, then the indices.
        let words: Vec<f64> = (vectors.iter().map(|v| address_word(v)))
            .chain(indices.iter().map(|&i| f64::from_bits(i as u64)))
            .collect();
        let table = self.table("gathered rows", &words)?;
        let indices_at = table + (vectors.len() * size_of::<f64>()) as u64;
        let rows = self.rows_out(len)?;
        let launch = Launch::gather(table, vectors.len(), indices_at, indices.len(), rows);
        self.launcher().launch(&launch, thread_per_row(len))?;
        Ok(self.read_rows_out(GATHER, out)?)
    }

    /// In launches of at most `SCATTER_MOST` entries, so that the table each one writes
    /// stays small: a path that passes every breakpoint scatters all `n` variables.
    fn scatter(&mut self, v: &mut DeviceVector, entries: &[(usize, f64)]) -> Result<(), EvalError> {
        for entries in entries.chunks(SCATTER_MOST) {
            let words: Vec<f64> = (entries.iter())
                .flat_map(|&(i, value)| [f64::from_bits(i as u64), value])
                .collect();
            let table = self.table("scattered entries", &words)?;
            let launch = Launch::scatter(address(v), table, entries.len());
            (self.launcher()).launch(&launch, thread_per_row(entries.len()))?;
        }
        Ok(())
    }

    fn path_point(
        &mut self,
        x: &DeviceVector,
        t: f64,
        path: &DeviceVector,
        cauchy: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        let launch = Launch::path_point(self.dim(), address(x), t, address(path), address(cauchy));
        Ok(self.launch_elementwise(&launch)?)
    }

    fn free_variables(
        &mut self,
        bounds: &BoxVectors<DeviceVector>,
        point: &DeviceVector,
        free: &mut DeviceVector,
    ) -> Result<usize, EvalError> {
        let (n, (lower, upper)) = (self.dim(), addresses(Some(bounds)));
        let [counts] = self.reduce(FREE_PARTIALS, |partials| {
            Launch::free_partials(n, lower, upper, address(point), address(free), partials)
        })?;
        // Whole numbers below 2⁵³: exact in any order.
        Ok(counts.iter().sum::<f64>() as usize)
    }

    /// One launch, in tiles of columns, each product `a ≤ b` taken once (the matrix is
    /// symmetric by construction); `u`'s combination is formed first in a kept scratch vector,
    /// then taken as one more column.
    fn masked_gram(
        &mut self,
        columns: &[(f64, &DeviceVector)],
        free: &DeviceVector,
        keep: bool,
        u: &[(f64, &DeviceVector)],
    ) -> Result<(Vec<f64>, Vec<f64>), EvalError> {
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
                None => self.new_vector()?,
            };
            let made = self.combine(u, &mut combined);
            let combined = self.scratch.insert(combined);
            made?;
            address(combined)
        };
        let words: Vec<f64> = columns.iter().map(|&(_, v)| address_word(v)).collect();
        let table = self.table("gram columns", &words)?;
        let triangle = width * (width + 1) / 2;
        let rows = triangle + if combined == 0 { 0 } else { width };
        let partials = self.partials_rows(rows)?;
        let (n, mask, keep) = (self.dim(), address(free), usize::from(keep));
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

    /// The combination's own pass, then the projection's.
    fn projected_step(
        &mut self,
        terms: &[(f64, &DeviceVector)],
        bounds: &BoxVectors<DeviceVector>,
        free: &DeviceVector,
        cauchy: &DeviceVector,
        x: &DeviceVector,
        g: &DeviceVector,
        step: &mut DeviceVector,
        target: &mut DeviceVector,
        direction: &mut DeviceVector,
    ) -> Result<(f64, f64), EvalError> {
        self.combine(terms, step)?;
        let (n, (lower, upper)) = (self.dim(), addresses(Some(bounds)));
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

    /// Two reductions: the least fraction of the step any free variable takes to its bound,
    /// then, where it is below 1, the lowest index that has it; then the cut.
    fn truncated_step(
        &mut self,
        bounds: &BoxVectors<DeviceVector>,
        free: &DeviceVector,
        cauchy: &DeviceVector,
        step: &DeviceVector,
        target: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        let (n, (lower, upper)) = (self.dim(), addresses(Some(bounds)));
        let (free, cauchy, step) = (address(free), address(cauchy), address(step));
        let mut reach = |alpha: f64| -> Result<[Vec<f64>; 2], BackendError> {
            self.reduce(REACH_PARTIALS, |partials| {
                Launch::reach_partials(n, lower, upper, free, cauchy, step, alpha, partials)
            })
        };
        let alpha = minimum(&reach(f64::NAN)?[0]);
        let first = if alpha < 1.0 {
            let first = minimum(&reach(alpha)?[1]);
            // The variable that gave the least fraction has it; if none does (NaN in the
            // step), an index cast from ∞ would cut at a wrong place: refuse instead.
            let found = first < n as f64; // false for ∞ and NaN
            if !found {
                return Err(BackendError::Kernel {
                    kernel: REACH_PARTIALS.to_owned(),
                    reason: format!("found no variable reaching the fraction {alpha} of the step"),
                }
                .into());
            }
            first as usize
        } else {
            n
        };
        let (alpha, target) = (alpha.min(1.0), address(target));
        let launch = Launch::truncate(n, lower, upper, free, cauchy, step, alpha, first, target);
        Ok(self.launch_elementwise(&launch)?)
    }

    fn aim(
        &mut self,
        bounds: Option<&BoxVectors<DeviceVector>>,
        x: &DeviceVector,
        g: &DeviceVector,
        target: &DeviceVector,
        direction: &mut DeviceVector,
    ) -> Result<(f64, f64), EvalError> {
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let [slopes, rooms] = self.reduce(AIM_PARTIALS, |partials| {
            let (x, g, target, direction) =
                (address(x), address(g), address(target), address(direction));
            Launch::aim_partials(n, lower, upper, x, g, target, direction, partials)
        })?;
        Ok((sum(&slopes), minimum(&rooms)))
    }

    fn clipped_ray_point(
        &mut self,
        bounds: &BoxVectors<DeviceVector>,
        x: &DeviceVector,
        step: f64,
        d: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        let (n, (lower, upper)) = (self.dim(), addresses(Some(bounds)));
        let (x, d, out) = (address(x), address(d), address(out));
        let launch = Launch::clipped_ray_point(n, lower, upper, x, step, d, out);
        Ok(self.launch_elementwise(&launch)?)
    }

    fn active_mask(
        &mut self,
        bounds: &BoxVectors<DeviceVector>,
        x: &DeviceVector,
        out: &mut DeviceVector,
    ) -> Result<(), EvalError> {
        let (n, (lower, upper)) = (self.dim(), addresses(Some(bounds)));
        let launch = Launch::active_mask(n, lower, upper, address(x), address(out));
        Ok(self.launch_elementwise(&launch)?)
    }

    fn new_pair(
        &mut self,
        step: f64,
        d: &DeviceVector,
        g_new: &DeviceVector,
        g: &DeviceVector,
        s: &mut DeviceVector,
        y: &mut DeviceVector,
    ) -> Result<PairSums, EvalError> {
        let n = self.dim();
        let (d, g_new, g) = (address(d), address(g_new), address(g));
        let (s, y) = (address(s), address(y));
        let rows: [Vec<f64>; NEW_PAIR_ROWS] = self.reduce(NEW_PAIR_PARTIALS, |partials| {
            Launch::new_pair_partials(n, step, d, g_new, g, s, y, partials)
        })?;
        let [sy, yy, ss, gs, gg, max] = rows;
        let sums = [
            sum(&sy),
            sum(&yy),
            sum(&ss),
            sum(&gs),
            sum(&gg),
            maximum(&max),
        ];
        Ok(sums.into())
    }
}

/// The device's own steps of the passes above.
impl DeviceVectors {
    /// The projected gradient's ∞-norm at `(x, g)`, and the steepest-descent path's times and
    /// path where their addresses `out` are not 0.
    fn box_path(
        &mut self,
        bounds: Option<&BoxVectors<DeviceVector>>,
        x: &DeviceVector,
        g: &DeviceVector,
        (times, path): (u64, u64),
    ) -> Result<f64, BackendError> {
        let (n, (lower, upper)) = (self.dim(), addresses(bounds));
        let (x, g) = (address(x), address(g));
        let [norms] = self.reduce(BOX_PATH_PARTIALS, |partials| {
            Launch::box_path_partials(n, lower, upper, x, g, times, path, partials)
        })?;
        Ok(maximum(&norms))
    }

    /// For each run of `chunk` consecutive `times` (the last one shorter), in order: its least
    /// breakpoint time (`∞` for none) and how many breakpoints it holds, of those after
    /// breakpoint `after` (a time and an index).
    fn breakpoint_chunks(
        &mut self,
        times: &DeviceVector,
        chunk: usize,
        after: (f64, usize),
    ) -> Result<(Vec<f64>, Vec<f64>), BackendError> {
        let n = self.dim();
        let chunks = n.div_ceil(chunk);
        let out = self.rows_out(2 * chunks)?;
        let launch = Launch::breakpoint_chunks(n, address(times), chunk, after.0, after.1, out);
        self.launch_reduction(&launch)?;
        let mut rows = vec![0.0; 2 * chunks];
        self.read_rows_out(BREAKPOINT_CHUNKS, &mut rows)?;
        let counts = rows.split_off(chunks);
        Ok((rows, counts))
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

/// The greatest of a row of partials, NaN if any is.
fn maximum(row: &[f64]) -> f64 {
    row.iter().copied().fold(0.0, nan_max)
}

/// The least of a row of partials.
fn minimum(row: &[f64]) -> f64 {
    row.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Which runs of consecutive times hold the `count` earliest breakpoints, from each run's
/// least breakpoint time (`least`) and how many it holds (`counts`), in increasing order: the
/// `count` runs that come first by (least time, position), among those that hold any.
///
/// Why these suffice: take a breakpoint `b` in a run `r` that is not chosen. Since `r` holds
/// one, `count` runs were chosen, and each chosen run `q` comes before `r`, so its least
/// breakpoint is before `b` in [`Breakpoint`]'s order: its time is below `b`'s, or equal with
/// `q` before `r` and so every index of `q` below `b`'s. Thus `count` breakpoints precede `b`,
/// and `b` is not among the earliest `count`.
fn earliest_runs(least: &[f64], counts: &[f64], count: usize) -> Vec<usize> {
    // (least time, run), in the order of breakpoints (time, then index).
    let mut runs: Vec<Breakpoint> = (0..least.len())
        .filter(|&r| counts[r] > 0.0)
        .map(|r| Breakpoint(least[r], r))
        .collect();
    runs.sort_unstable();
    runs.truncate(count);
    let mut chosen: Vec<usize> = runs.into_iter().map(|Breakpoint(_, r)| r).collect();
    chosen.sort_unstable();
    chosen
}
