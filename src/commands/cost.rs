//! `cudamin eval PROBLEM --backend sim --cost`: what each pass's kernels cost, counted on the
//! simulator, and the time those counts model on an H100 at 10⁷ points. `cudamin fit DATA
//! --batch COLUMN --backend sim --cost` does the same for a batch of fits, per fit, at 10⁷
//! fits. It needs no GPU, so the GPU work can be steered between device runs.
//!
//! The simulator counts, per kernel: instructions, f64 operations, bytes per memory space, and
//! the distinct 32-byte sectors of global memory each launch touched. The sectors are what a
//! GPU moves from DRAM when each is fetched once, as a streaming kernel's data are. A kernel's
//! modelled time is the largest of three: its sectors' bytes plus its local-memory bytes over
//! the H100's bandwidth (local bytes as if they missed the caches, an upper bound), its f64
//! work over its f64 rate, and its instructions over its issue rate; plus a launch latency. A
//! pass adds a host wait per copy back. The counts are taken at the instance's size and
//! scaled per point, so fixed costs (a reduction over blocks) are overstated at small sizes.
//! The model is a guide to calibrate against hardware runs, not a measurement.

use super::{Setup, print_json};
use anyhow::bail;
use cudamin::{Backend, Factor, Gradient, KernelCounts, Loss, RobustLoss, SECTOR_BYTES, Traffic};
use std::io::Write;

/// The H100 SXM's memory bandwidth, bytes per second (its datasheet).
const H100_BYTES_PER_S: f64 = 3.35e12;
/// The H100 SXM's f64 rate without tensor cores, operations per second (its datasheet).
const H100_FP64_PER_S: f64 = 33.5e12;
/// The H100 SXM's instruction issue rate, thread instructions per second: 132
/// multiprocessors, 4 schedulers each issuing one 32-thread warp instruction per cycle, at
/// 1.98 GHz.
const H100_ISSUE_PER_S: f64 = 132.0 * 4.0 * 32.0 * 1.98e9;
/// Modelled cost of one launch, seconds: an assumption, to calibrate on hardware runs.
const LAUNCH_S: f64 = 4e-6;
/// Modelled cost of one host wait (a copy back that waits for the stream), seconds: an
/// assumption, to calibrate on hardware runs.
const WAIT_S: f64 = 10e-6;
/// Modelled rate of a copy between host memory and an H100, bytes a second each way: an
/// assumption (PCIe 5 from pageable memory), to calibrate on hardware runs.
const COPY_BYTES_PER_S: f64 = 25e9;
/// Ordinary least squares, the loss `cudamin fit` uses by default.
const LINEAR: RobustLoss = RobustLoss {
    loss: Loss::Linear,
    f_scale: 1.0,
};
/// The size the model reports at: points of a pass, or fits of a batch.
const MODEL_POINTS: f64 = 1e7;

/// One kernel's share of one pass, per point.
#[derive(serde::Serialize)]
struct KernelCost {
    kernel: String,
    pass: &'static str,
    launches: u64,
    global_bytes_per_point: f64,
    dram_bytes_per_point: f64,
    local_bytes_per_point: f64,
    shared_bytes_per_point: f64,
    barriers_per_point: f64,
    instructions_per_point: f64,
    fp64_ops_per_point: f64,
    data_bytes_per_point: f64,
    modelled_h100_ms_at_1e7: f64,
}

/// One pass: its kernels, its host waits, and its modelled time.
#[derive(serde::Serialize)]
struct PassCost {
    pass: &'static str,
    launches: u64,
    waits: u64,
    modelled_h100_ms_at_1e7: f64,
}

#[derive(serde::Serialize)]
struct Cost {
    points: usize,
    passes: Vec<KernelCost>,
    totals: Vec<PassCost>,
    /// A Levenberg–Marquardt iteration: one factor pass and one trial's value.
    modelled_h100_lm_iteration_ms_at_1e7: Option<f64>,
}

#[derive(serde::Serialize)]
struct CostReport<'a> {
    problem: &'a str,
    n: usize,
    backend: &'static str,
    cost: Cost,
}

/// What `fit --batch --cost` reports: the batch's kernels per fit, and the rate they model.
#[derive(serde::Serialize)]
struct BatchCostReport<'a> {
    model: &'a str,
    fits: usize,
    dtype: &'a str,
    backend: &'static str,
    kernels: Vec<KernelCost>,
    launches: u64,
    waits: u64,
    /// `f64` words copied to the device and back, per fit.
    words_to_device_per_fit: f64,
    words_to_host_per_fit: f64,
    /// The kernels and waits alone.
    modelled_h100_ms_at_1e7: f64,
    modelled_h100_fits_per_s: f64,
    /// The copies, at [`COPY_BYTES_PER_S`]; and the rate from host memory, copies included.
    modelled_h100_copy_ms_at_1e7: f64,
    modelled_h100_fits_per_s_from_host: f64,
}

/// Runs `fit`, a batch of `fits` fits of `model` in `dtype` on `backend`, which must be the
/// simulator, and reports what its kernels cost per fit and the rate they model on an H100 at
/// 10⁷ fits (`json`: as JSON). `data_bytes` is the size of the batch's table.
pub fn batch(
    backend: &Backend,
    (model, dtype): (&str, &str),
    (fits, data_bytes): (usize, usize),
    json: bool,
    fit: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    start_counting(backend)?;
    let fits = fits.max(1);
    let mut counter = Counter {
        backend,
        points: fits,
        data_bytes_per_point: data_bytes as f64 / fits as f64,
        kernels: Vec::new(),
        totals: Vec::new(),
    };
    let before = backend.traffic().unwrap_or_default();
    let ms = counter.pass("batch", fit)?;
    let copied = backend.traffic().unwrap_or_default() - before;
    backend.count_kernels(false);
    if counter.kernels.is_empty() {
        bail!(
            "--cost counts the batch kernel, and these fits ran one at a time on the CPU \
             (bounds, a robust loss or more than 8 parameters)"
        );
    }
    let total = &counter.totals[0];
    let per_fit = |words: u64| words as f64 / fits as f64;
    let words = per_fit(copied.words_to_device + copied.words_to_host);
    let copy_ms = words * size_of::<f64>() as f64 * MODEL_POINTS / COPY_BYTES_PER_S * 1e3;
    let report = BatchCostReport {
        model,
        fits,
        dtype,
        backend: backend.name(),
        launches: total.launches,
        waits: total.waits,
        kernels: counter.kernels,
        words_to_device_per_fit: per_fit(copied.words_to_device),
        words_to_host_per_fit: per_fit(copied.words_to_host),
        modelled_h100_ms_at_1e7: ms,
        modelled_h100_fits_per_s: MODEL_POINTS / (ms * 1e-3),
        modelled_h100_copy_ms_at_1e7: copy_ms,
        modelled_h100_fits_per_s_from_host: MODEL_POINTS / ((ms + copy_ms) * 1e-3),
    };
    if json {
        return print_json(&report);
    }
    let mut out = super::stdout();
    writeln!(
        out,
        "model     {} ({fits} fits, {dtype}) on the simulator; per fit, and modelled on an H100 \
         at 10⁷ fits",
        report.model
    )?;
    print_kernels(&mut out, &report.kernels)?;
    writeln!(
        out,
        "batch                {} launches, {} waits: {:.1} ms modelled, {:.3e} fits/s",
        report.launches, report.waits, ms, report.modelled_h100_fits_per_s
    )?;
    writeln!(
        out,
        "copies               {:.1} words to the device, {:.1} back, per fit: {:.1} ms \
         modelled, {:.3e} fits/s from host memory",
        report.words_to_device_per_fit,
        report.words_to_host_per_fit,
        copy_ms,
        report.modelled_h100_fits_per_s_from_host
    )?;
    Ok(())
}

/// Starts the simulator's counts on `backend`; an error off the simulator.
fn start_counting(backend: &Backend) -> anyhow::Result<()> {
    if !backend.count_kernels(true) {
        bail!("--cost counts on the simulator: add --backend sim");
    }
    Ok(())
}

/// Counts the passes of the problem `setup` loaded and reports them (`json`: as JSON).
pub fn run(problem: &str, setup: Setup, fd: Gradient, json: bool) -> anyhow::Result<()> {
    let Setup {
        instance, backend, ..
    } = setup;
    start_counting(&backend)?;
    let x = instance.x0;
    let n = x.len();
    let points = instance.terms.max(1);
    let data_bytes_per_point = instance.data_bytes as f64 / points as f64;
    let mut loaded = instance.evaluator;
    let mut g = vec![0.0; n];
    let mut counter = Counter {
        backend: &backend,
        points,
        data_bytes_per_point,
        kernels: Vec::new(),
        totals: Vec::new(),
    };
    counter.pass("value", || loaded.as_sum().value(&x).map(drop))?;
    counter.pass("value_and_gradient", || {
        loaded.as_sum().value_and_gradient(&x, fd, &mut g).map(drop)
    })?;
    let mut lm_iteration = None;
    if let Some(squares) = loaded.least_squares() {
        let mut factor = Factor::new(n);
        let factor_ms = counter.pass("factor", || {
            squares.factor(&x, fd, LINEAR, &mut factor).map(drop)
        })?;
        let value_ms = counter.totals[0].modelled_h100_ms_at_1e7;
        lm_iteration = Some(factor_ms + value_ms);
    }
    backend.count_kernels(false);
    let report = CostReport {
        problem,
        n,
        backend: backend.name(),
        cost: Cost {
            points,
            passes: counter.kernels,
            totals: counter.totals,
            modelled_h100_lm_iteration_ms_at_1e7: lm_iteration,
        },
    };
    if json {
        return print_json(&report);
    }
    print_table(&report)
}

/// Runs passes one at a time and keeps what each cost.
struct Counter<'b> {
    backend: &'b Backend,
    points: usize,
    data_bytes_per_point: f64,
    kernels: Vec<KernelCost>,
    totals: Vec<PassCost>,
}

impl Counter<'_> {
    /// Runs `call` with fresh counts, records its kernels as pass `pass`, and returns its
    /// modelled milliseconds at 10⁷ points.
    fn pass<E: Into<anyhow::Error>>(
        &mut self,
        pass: &'static str,
        call: impl FnOnce() -> Result<(), E>,
    ) -> anyhow::Result<f64> {
        self.backend.count_kernels(true);
        let before = self.traffic();
        call().map_err(Into::into)?;
        let traffic = self.traffic() - before;
        let counts = self.backend.kernel_counts().unwrap_or_default();
        let per = |v: u64| v as f64 / self.points as f64;
        let mut total_ms = traffic.waits as f64 * WAIT_S * 1e3;
        for (kernel, c) in counts {
            let ms = modelled_ms(&c, self.points);
            total_ms += ms;
            self.kernels.push(KernelCost {
                kernel,
                pass,
                launches: c.launches,
                global_bytes_per_point: per(c.global_read_bytes + c.global_write_bytes),
                dram_bytes_per_point: per(dram_bytes(&c)),
                local_bytes_per_point: per(c.local_bytes),
                shared_bytes_per_point: per(c.shared_bytes),
                barriers_per_point: per(c.block_barriers),
                instructions_per_point: per(c.instructions),
                fp64_ops_per_point: per(c.fp64_ops),
                data_bytes_per_point: self.data_bytes_per_point,
                modelled_h100_ms_at_1e7: ms,
            });
        }
        self.totals.push(PassCost {
            pass,
            launches: traffic.launches,
            waits: traffic.waits,
            modelled_h100_ms_at_1e7: total_ms,
        });
        Ok(total_ms)
    }

    fn traffic(&self) -> Traffic {
        self.backend.traffic().unwrap_or_default()
    }
}

/// The bytes a GPU moves to and from DRAM for these counts: each distinct sector once.
fn dram_bytes(c: &KernelCounts) -> u64 {
    (c.global_sectors_read + c.global_sectors_written) * SECTOR_BYTES
}

/// A kernel's modelled H100 milliseconds at 10⁷ points: its memory, its f64 work or its
/// instructions, whichever takes longest, scaled from `points`, plus its launches.
fn modelled_ms(c: &KernelCounts, points: usize) -> f64 {
    let scale = MODEL_POINTS / points as f64;
    let memory = (dram_bytes(c) + c.local_bytes) as f64 * scale / H100_BYTES_PER_S;
    let work = c.fp64_ops as f64 * scale / H100_FP64_PER_S;
    let issue = c.instructions as f64 * scale / H100_ISSUE_PER_S;
    (memory.max(work).max(issue) + c.launches as f64 * LAUNCH_S) * 1e3
}

fn print_table(report: &CostReport<'_>) -> anyhow::Result<()> {
    let mut out = super::stdout();
    let cost = &report.cost;
    writeln!(
        out,
        "problem   {} (n = {}, {} points) on the simulator; per point, and modelled on an H100 \
         at 10⁷ points",
        report.problem, report.n, cost.points
    )?;
    print_kernels(&mut out, &cost.passes)?;
    for t in &cost.totals {
        writeln!(
            out,
            "{:<20} {} launches, {} waits: {:.4} ms modelled",
            t.pass, t.launches, t.waits, t.modelled_h100_ms_at_1e7
        )?;
    }
    if let Some(ms) = cost.modelled_h100_lm_iteration_ms_at_1e7 {
        writeln!(
            out,
            "LM iteration         {ms:.4} ms modelled (a factor pass and a trial value)"
        )?;
    }
    Ok(())
}

/// The kernels' table: a header, then a line per kernel of a pass.
fn print_kernels(out: &mut impl Write, kernels: &[KernelCost]) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:<20} {:<36} {:>8} {:>8} {:>7} {:>7} {:>8} {:>9} {:>9}",
        "pass", "kernel", "DRAM B", "data B", "local B", "barrier", "instr", "f64 ops", "H100 ms"
    )?;
    for k in kernels {
        writeln!(
            out,
            "{:<20} {:<36} {:>8.1} {:>8.1} {:>7.1} {:>7.3} {:>8.0} {:>9.1} {:>9.4}",
            k.pass,
            k.kernel,
            k.dram_bytes_per_point,
            k.data_bytes_per_point,
            k.local_bytes_per_point,
            k.barriers_per_point,
            k.instructions_per_point,
            k.fp64_ops_per_point,
            k.modelled_h100_ms_at_1e7
        )?;
    }
    Ok(())
}
