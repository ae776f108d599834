//! GPU correctness without a GPU: the embedded PTX is self-contained, ptxas assembles it for
//! sm_70, sm_80 and sm_90 with no spills, and every launch the host makes matches the `.entry`
//! it launches in count, width and pointer-ness of every parameter.
//!
//! ptxas comes from NVIDIA's PyPI wheel (`.ci/install` puts it in `target/ptxas-venv`), or from
//! `$CUDAMIN_PTXAS`. Without it the ptxas tests print "skipped"; with
//! `CUDAMIN_REQUIRE_PTXAS=1` (CI) they fail instead. The report goes to
//! `target/tmp/ptxas-report.txt`.

use cudamin::launcher::abi::{self, Launch};
use cudamin::launcher::ptx::{self, Entry};
use cudamin::problems;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

const ARCHS: [&str; 3] = ["sm_70", "sm_80", "sm_90"];

fn embedded_ptx() -> &'static str {
    match cudamin::PTX {
        Ok(ptx) => ptx,
        Err(why) => panic!("the PTX was not built ({why}); these tests need it"),
    }
}

fn ptxas() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CUDAMIN_PTXAS") {
        return Some(PathBuf::from(path));
    }
    let lib = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/ptxas-venv/lib");
    std::fs::read_dir(lib).ok()?.flatten().find_map(|python| {
        let path = python
            .path()
            .join("site-packages/nvidia/cuda_nvcc/bin/ptxas");
        path.is_file().then_some(path)
    })
}

/// ptxas, or `None` after saying why the test is skipped.
fn ptxas_or_skip() -> Option<PathBuf> {
    let found = ptxas();
    if found.is_none() {
        assert!(
            std::env::var_os("CUDAMIN_REQUIRE_PTXAS").is_none_or(|v| v != "1"),
            "CUDAMIN_REQUIRE_PTXAS=1 but ptxas was not found; run .ci/install or set CUDAMIN_PTXAS"
        );
        eprintln!("skipped: ptxas not found (run .ci/install or set CUDAMIN_PTXAS)");
    }
    found
}

/// Resource use of one kernel, from `ptxas -v`.
#[derive(Debug, Default)]
struct KernelReport {
    registers: u32,
    stack_frame: u32,
    spill_stores: u32,
    spill_loads: u32,
}

/// Runs ptxas on the PTX file `ptx` for `arch`; panics with its message if it rejects the PTX.
fn assemble(ptxas: &PathBuf, ptx: &PathBuf, arch: &str) -> BTreeMap<String, KernelReport> {
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
        .expect("run ptxas");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "ptxas rejected the PTX for {arch}:\n{log}"
    );
    parse_report(&log)
}

fn number_before(line: &str, unit: &str) -> u32 {
    let at = line
        .find(unit)
        .unwrap_or_else(|| panic!("no `{unit}` in `{line}`"));
    line[..at]
        .split_whitespace()
        .last()
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
            let name = rest.split('\'').next().unwrap().to_owned();
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

/// The layout of `ptxas -v` for an entry that calls a device function (mgh26 calls libm's
/// `rem_pio2`): the callee's properties must not replace the entry's stack frame, and its spills
/// count against the entry.
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
    let k = &parse_report(log)["k"];
    assert_eq!(
        (k.registers, k.stack_frame, k.spill_stores, k.spill_loads),
        (77, 1168, 8, 4)
    );
}

#[test]
fn ptxas_assembles_every_arch_without_spills() {
    let Some(ptxas) = ptxas_or_skip() else { return };
    let entries = ptx::entries(embedded_ptx()).unwrap();
    let ptx = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kernels.ptx");
    std::fs::write(&ptx, embedded_ptx()).unwrap();
    let mut report = String::new();
    for arch in ARCHS {
        let kernels = assemble(&ptxas, &ptx, arch);
        report += &format!("== ptxas -arch={arch}: {} kernels\n", kernels.len());
        report += &format!(
            "{:<40} {:>9} {:>12} {:>12} {:>11}\n",
            "kernel", "registers", "stack bytes", "spill stores", "spill loads"
        );
        for (name, k) in &kernels {
            report += &format!(
                "{name:<40} {:>9} {:>12} {:>12} {:>11}\n",
                k.registers, k.stack_frame, k.spill_stores, k.spill_loads
            );
        }
        assert_eq!(
            kernels.len(),
            entries.len(),
            "{arch}: ptxas compiled a different set of entries"
        );
        for (name, k) in &kernels {
            assert_eq!(
                (k.spill_stores, k.spill_loads),
                (0, 0),
                "{arch}: `{name}` spills registers"
            );
        }
    }
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ptxas-report.txt");
    std::fs::write(&path, &report).unwrap();
    println!("{report}");
}

#[test]
fn ptx_is_self_contained_for_sm_70() {
    let ptx = embedded_ptx();
    assert_eq!(ptx::target(ptx), Some("sm_70"));
    assert_eq!(
        ptx::externs(ptx),
        Vec::<&str>::new(),
        "the PTX references external symbols"
    );
}

/// Every launch the host makes, by kernel; each kernel must always get the same argument list.
fn host_launches() -> BTreeMap<&'static str, Launch> {
    let term_launches = problems::all().flat_map(|problem| (problem.launches)());
    let mut launches = BTreeMap::new();
    for launch in term_launches.chain(abi::raw_launches()) {
        if let Some(previous) = launches.insert(launch.kernel, launch.clone()) {
            let kinds = |l: &Launch| l.args.iter().map(|a| a.param_type()).collect::<Vec<_>>();
            assert_eq!(
                kinds(&previous),
                kinds(&launch),
                "{} launched two ways",
                launch.kernel
            );
        }
    }
    launches
}

#[test]
fn every_launch_matches_its_entry_signature() {
    let entries: BTreeMap<String, Entry> = ptx::entries(embedded_ptx())
        .unwrap()
        .into_iter()
        .map(|e| (e.name.clone(), e))
        .collect();
    for (kernel, launch) in host_launches() {
        let entry = entries
            .get(kernel)
            .unwrap_or_else(|| panic!("the host launches `{kernel}`, which the PTX lacks"));
        let passed: Vec<_> = launch.args.iter().map(|a| a.param_type()).collect();
        assert_eq!(
            passed, entry.params,
            "`{kernel}`: the host's arguments do not match the .entry parameters"
        );
    }
}

#[test]
fn every_raw_kernel_has_a_launch() {
    assert_eq!(
        abi::raw_launches().len(),
        cudamin::kernels::raw::KERNELS.len()
    );
}

#[test]
fn every_entry_is_launched_by_the_host() {
    let launched = host_launches();
    for entry in ptx::entries(embedded_ptx()).unwrap() {
        assert!(
            launched.contains_key(entry.name.as_str()),
            "`{}` is in the PTX but no host code launches it",
            entry.name
        );
    }
}
