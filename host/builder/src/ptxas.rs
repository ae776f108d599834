//! Offline checks of a built PTX with NVIDIA's `ptxas`, for tests: it assembles the PTX for a
//! real architecture and reports each kernel's registers, stack frame and spills. No GPU is
//! needed; `ptxas` comes from NVIDIA's PyPI wheel `nvidia-cuda-nvcc-cu12` (cudamin's
//! `.ci/install` puts it in `target/ptxas-venv`) or from a CUDA toolkit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// The architectures cudamin's PTX is checked for: Volta, Ampere, Hopper.
pub const ARCHS: [&str; 3] = ["sm_70", "sm_80", "sm_90"];

/// Whether `entry` is a batch kernel (`gpu_kernels::batch_kernel!`): its name ends in `_batch`,
/// or in `_batch_block` for its block form.
pub fn is_batch_kernel(entry: &str) -> bool {
    entry.ends_with("_batch") || entry.ends_with("_batch_block")
}

/// The architectures of [`ARCHS`] that the tests assemble `entry` for. A batch kernel holds a
/// whole Levenberg–Marquardt loop twice, and ptxas takes far longer over it than over any
/// other entry. So it is assembled for Hopper alone, the architecture of the hardware runs,
/// unless `CUDAMIN_PTXAS_ALL_ARCHS=1` asks for all three. Every other entry gets all three.
pub fn archs_of(entry: &str) -> &'static [&'static str] {
    let all = std::env::var_os("CUDAMIN_PTXAS_ALL_ARCHS").is_some_and(|v| v == "1");
    if is_batch_kernel(entry) && !all {
        &ARCHS[2..]
    } else {
        &ARCHS
    }
}

/// The bytes of spills, stored and loaded alike, that entry `entry` may have. A batch kernel
/// (`gpu_kernels::batch_kernel!`, its name ending in `_batch`, or its block form's in
/// `_batch_block`) runs a whole fit's Levenberg–Marquardt loop per thread, its MINPACK memory
/// on the stack by design, and holds the loop twice, in `f64` and in `f32`, each a function:
/// at 255 registers they spill a few hundred bytes together (BENCHMARKS.md lists them).
/// Bounded, so that it cannot grow unseen; every other entry may spill nothing.
pub fn spills_allowed(entry: &str) -> u32 {
    if is_batch_kernel(entry) { 960 } else { 0 }
}

/// Whether `kernel`'s spills are within [`spills_allowed`] for entry `entry`, or why not.
pub fn check_spills(arch: &str, entry: &str, kernel: &KernelReport) -> Result<(), String> {
    let allowed = spills_allowed(entry);
    if kernel.spill_stores <= allowed && kernel.spill_loads <= allowed {
        return Ok(());
    }
    Err(format!(
        "{arch}: `{entry}` spills registers ({} B stored, {} B loaded; {allowed} B allowed)",
        kernel.spill_stores, kernel.spill_loads
    ))
}

/// `$CUDAMIN_PTXAS`, else the ptxas of a `target/ptxas-venv` under `root`, if either exists.
pub fn find(root: &Path) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CUDAMIN_PTXAS") {
        return Some(PathBuf::from(path));
    }
    let lib = root.join("target/ptxas-venv/lib");
    std::fs::read_dir(lib).ok()?.flatten().find_map(|python| {
        let path = python
            .path()
            .join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
        path.is_file().then_some(path)
    })
}

/// Resource use of one kernel, from `ptxas -v`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KernelReport {
    /// Registers per thread.
    pub registers: u32,
    /// The entry's own stack frame (local memory), not its callees', in bytes.
    pub stack_frame: u32,
    /// Spills of the entry and of the device functions it calls, in bytes stored.
    pub spill_stores: u32,
    /// The same spills, in bytes loaded back.
    pub spill_loads: u32,
}

/// Assembles the PTX file `ptx` for `arch` (`-v --warn-on-spills
/// --warn-on-local-memory-usage`); returns each entry's report, or ptxas's log if it refuses.
pub fn assemble(
    ptxas: &Path,
    ptx: &Path,
    arch: &str,
) -> Result<BTreeMap<String, KernelReport>, String> {
    let output = Command::new(ptxas)
        .args([
            &format!("-arch={arch}"),
            "-v",
            "--warn-on-spills",
            "--warn-on-local-memory-usage",
            "-o",
            "/dev/null",
        ])
        .arg(ptx)
        .output()
        .map_err(|e| format!("could not run {}: {e}", ptxas.display()))?;
    let log = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(format!("ptxas rejected the PTX for {arch}:\n{log}"));
    }
    Ok(parse_report(&log))
}

/// Assembles each entry's own module (`(entry, PTX text)`, as a device loads it) for the
/// architectures [`archs_of`] gives the entry, on every core, into files under `dir`. Checks
/// that each module holds its entry alone and that no entry spills more than
/// [`check_spills`] allows. Returns the reports as [`table`]s, one per architecture, or why not.
pub fn assemble_entries(
    ptxas: &Path,
    dir: &Path,
    modules: &[(&str, String)],
) -> Result<String, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for (entry, module) in modules {
        let path = dir.join(format!("{entry}.ptx"));
        std::fs::write(&path, module).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push((*entry, path));
    }
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let mut report = String::new();
    for arch in ARCHS {
        let files: Vec<_> = (files.iter())
            .filter(|(entry, _)| archs_of(entry).contains(&arch))
            .collect();
        let next = AtomicUsize::new(0);
        let found = Mutex::new(Ok(BTreeMap::new()));
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    while let Some(&&(entry, ref path)) =
                        files.get(next.fetch_add(1, Ordering::Relaxed))
                    {
                        let one = assemble_one(ptxas, entry, path, arch);
                        let mut found = found.lock().unwrap_or_else(PoisonError::into_inner);
                        match (&mut *found, one) {
                            (Ok(all), Ok(report)) => _ = all.insert(entry.to_owned(), report),
                            (Ok(_), Err(why)) => *found = Err(why),
                            (Err(_), _) => return,
                        }
                    }
                });
            }
        });
        let kernels = found.into_inner().unwrap_or_else(PoisonError::into_inner)?;
        report += &table(arch, &kernels);
        if kernels.len() != files.len() {
            return Err(format!("{arch}: an entry is missing from the reports"));
        }
        for (name, k) in &kernels {
            check_spills(arch, name, k)?;
        }
    }
    Ok(report)
}

/// Entry `entry`'s report from its module's file `path`, assembled for `arch`.
fn assemble_one(
    ptxas: &Path,
    entry: &str,
    path: &Path,
    arch: &str,
) -> Result<KernelReport, String> {
    let found =
        assemble(ptxas, path, arch).map_err(|log| format!("the module of `{entry}`: {log}"))?;
    match found.get(entry) {
        Some(&report) if found.len() == 1 => Ok(report),
        _ => Err(format!(
            "{arch}: the module of `{entry}` has entries {:?}",
            found.keys().collect::<Vec<_>>()
        )),
    }
}

/// A table of `kernels`' reports, one line each, under a heading for `arch`.
pub fn table(arch: &str, kernels: &BTreeMap<String, KernelReport>) -> String {
    let mut table = format!("== ptxas -arch={arch}: {} kernels\n", kernels.len());
    table += &format!(
        "{:<40} {:>9} {:>12} {:>12} {:>11}\n",
        "kernel", "registers", "stack bytes", "spill stores", "spill loads"
    );
    for (name, k) in kernels {
        table += &format!(
            "{name:<40} {:>9} {:>12} {:>12} {:>11}\n",
            k.registers, k.stack_frame, k.spill_stores, k.spill_loads
        );
    }
    table
}

fn number_before(line: &str, unit: &str) -> u32 {
    line.find(unit)
        .and_then(|at| line[..at].split_whitespace().last())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Each entry's registers, its own stack frame, and the spills of the entry and of the device
/// functions it calls (e.g. libm's argument reduction), whose properties follow the entry's.
fn parse_report(log: &str) -> BTreeMap<String, KernelReport> {
    let mut kernels = BTreeMap::new();
    let mut current: Option<String> = None;
    let mut in_callee = false;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_owned();
            kernels.insert(name.clone(), KernelReport::default());
            current = Some(name);
        } else if let Some(function) = line.split("Function properties for ").nth(1) {
            in_callee = current.as_deref() != Some(function.trim());
        } else if let Some(report) = current.as_ref().and_then(|k| kernels.get_mut(k)) {
            if line.contains("bytes stack frame") {
                if !in_callee {
                    report.stack_frame = number_before(line, "bytes stack frame");
                }
                report.spill_stores += number_before(line, "bytes spill stores");
                report.spill_loads += number_before(line, "bytes spill loads");
            } else if line.contains("Used ") && line.contains("registers") {
                report.registers = number_before(line, "registers");
            }
        }
    }
    kernels
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The layout of `ptxas -v` for an entry that calls a device function (mgh26 calls libm's
    /// `rem_pio2`): the callee's properties must not replace the entry's stack frame, and its
    /// spills count against the entry.
    #[test]
    fn report_keeps_the_entrys_stack_and_counts_its_callees_spills() {
        let log = "\
ptxas info    : Compiling entry function 'k' for 'sm_70'
ptxas info    : Function properties for k
    1168 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 77 registers, used 1 barriers, 1168 bytes cumulative stack size
ptxas info    : Function properties for callee
    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads
";
        let k = parse_report(log)["k"];
        assert_eq!(
            (k.registers, k.stack_frame, k.spill_stores, k.spill_loads),
            (77, 1168, 8, 4)
        );
    }
}
