//! GPU correctness without a GPU: the embedded PTX is self-contained, ptxas assembles each
//! entry's module (what a device loads) for sm_70, sm_80 and sm_90 with no spills (the batch
//! kernels for sm_90, and a bounded few spills) and no stack frame (but in the batch kernels
//! and [`STACK_FRAMES`]), every launch the host makes matches the `.entry` it launches in
//! count, width and pointer-ness of every parameter, and the f32 batch functions divide
//! nothing in f64.
//!
//! ptxas comes from NVIDIA's PyPI wheel (`.ci/install` puts it in `target/ptxas-venv`), or from
//! `$CUDAMIN_PTXAS`. Without it the ptxas tests print "skipped"; with
//! `CUDAMIN_REQUIRE_PTXAS=1` (CI) they fail instead. The report goes to
//! `target/tmp/ptxas-report.txt`.

use cudamin::plumbing::gpu::abi::{self, Launch};
use cudamin::plumbing::gpu::ptx;
use cudamin::{Backend, problems};
use cudamin_builder::ptxas;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn embedded_ptx() -> &'static str {
    match cudamin::PTX {
        Ok(ptx) => ptx,
        Err(why) => panic!("the PTX was not built ({why}); these tests need it"),
    }
}

/// ptxas, or `None` after saying why the test is skipped.
fn ptxas_or_skip() -> Option<PathBuf> {
    let found = ptxas::find(Path::new(env!("CARGO_MANIFEST_DIR")));
    if found.is_none() {
        assert!(
            std::env::var_os("CUDAMIN_REQUIRE_PTXAS").is_none_or(|v| v != "1"),
            "CUDAMIN_REQUIRE_PTXAS=1 but ptxas was not found; run .ci/install or set CUDAMIN_PTXAS"
        );
        eprintln!("skipped: ptxas not found (run .ci/install or set CUDAMIN_PTXAS)");
    }
    found
}

/// Every launch the host makes (term problems, fit models, raw kernels, the solver's vector
/// kernels), one per kernel; a kernel launched two ways fails the test.
fn host_launches() -> Vec<Launch> {
    // Each problem's launches, from a small CPU instance of it.
    let term_launches = problems::all().flat_map(|problem| {
        let points = problem.default_points.map(|_| 100);
        let instance = problem.instantiate(&Backend::Cpu, None, points).unwrap();
        instance.launches
    });
    let mut launches = BTreeMap::new();
    let model_launches = problems::fit::MODELS
        .iter()
        .flat_map(|model| model.launches());
    for launch in term_launches
        .chain(model_launches)
        .chain(abi::raw_launches())
        .chain(abi::vector_launches())
    {
        if let Some(previous) = launches.insert(launch.kernel.clone(), launch.clone()) {
            let kinds = |l: &Launch| l.args.iter().map(|a| a.param_type()).collect::<Vec<_>>();
            assert_eq!(
                kinds(&previous),
                kinds(&launch),
                "{} launched two ways",
                launch.kernel
            );
        }
    }
    launches.into_values().collect()
}

#[test]
fn every_launch_matches_its_entry_and_every_entry_is_launched() {
    if let Err(problems) = abi::check_launches(embedded_ptx(), &host_launches()) {
        panic!("host launches and PTX disagree:\n{}", problems.join("\n"));
    }
    // Every raw kernel, and the block form of each that has one.
    let kernels = cudamin::kernels::terms::RAW_KERNELS;
    let blocks = kernels.iter().filter(|k| k.block.is_some()).count();
    assert_eq!(abi::raw_launches().len(), kernels.len() + blocks);
}

/// What a kernel crate's own test checks (the own-crate template's tests/ptx.rs): the launches
/// derived from the PTX's entry names alone explain every entry of this PTX too, but the raw
/// kernels that are no term's batch kernels (the examples).
#[test]
fn launches_derived_from_the_entry_names_explain_every_term_kernel() {
    let ptx = embedded_ptx();
    let derived = abi::registered_launches(ptx).unwrap();
    let derived_names: BTreeSet<_> = derived.iter().map(|l| l.kernel.clone()).collect();
    let others: Vec<_> = (abi::raw_launches().into_iter())
        .filter(|l| !derived_names.contains(&l.kernel))
        .collect();
    if let Some(batch) = others.iter().find(|l| l.kernel.ends_with("_batch")) {
        panic!(
            "`{}` is not named after its term's registration, so an own crate's test would not find it",
            batch.kernel
        );
    }
    let launches: Vec<_> = derived.iter().cloned().chain(others.clone()).collect();
    if let Err(problems) = abi::check_launches(ptx, &launches) {
        panic!(
            "derived launches and PTX disagree:\n{}",
            problems.join("\n")
        );
    }
    // The same kernels as the host's own launches, with the same parameters.
    let host: BTreeMap<_, _> = (host_launches().into_iter())
        .map(|launch| (launch.kernel.clone(), launch))
        .collect();
    for launch in &derived {
        let kinds = |l: &Launch| l.args.iter().map(|a| a.param_type()).collect::<Vec<_>>();
        let Some(made) = host.get(&launch.kernel) else {
            panic!(
                "`{}` is derived but the host never launches it",
                launch.kernel
            );
        };
        assert_eq!(kinds(made), kinds(launch), "{}", launch.kernel);
    }
    assert_eq!(derived.len() + others.len(), host.len());
}

/// ptxas assembles each entry's module, as the cust driver loads them (the entry, the
/// functions it calls, the module's variables; see [`ptx::modules`]), for the architectures
/// [`ptxas::archs_of`] gives it, with no spills but a bounded few in the batch kernels: so each
/// module is self-contained, and together they are every entry.
#[test]
fn ptxas_assembles_every_arch_without_spills() {
    let Some(ptxas_path) = ptxas_or_skip() else {
        return;
    };
    let ptx = embedded_ptx();
    let modules = ptx::modules(ptx).unwrap();
    let names: Vec<String> = ptx::entries(ptx)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(modules.entries().collect::<Vec<_>>(), names);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("entry-modules");
    let report = ptxas::assemble_entries(&ptxas_path, &dir, &modules.all())
        .unwrap_or_else(|why| panic!("{why}"));
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ptxas-report.txt");
    std::fs::write(&path, &report).unwrap();
    println!("{report}");
    let framed = stack_frames_beyond_their_bounds(&report);
    assert!(framed.is_empty(), "stack frames: {framed:?}");
}

/// The entries of cudamin's PTX that keep a stack frame, with its bound in bytes: two test
/// problems' exact gradients, neither a fit model nor an MGH problem. A batch kernel keeps
/// its MINPACK memory on the stack by design, within [`BATCH_STACK`]. Every other entry keeps
/// none: a stack frame is local memory, which a kernel reads at DRAM's pace.
const STACK_FRAMES: [(&str, u32); 2] = [
    ("rosenbrock_gradient_exact", 48),
    ("matmul_squares_gradient_exact", 672),
];

/// The bound on a batch kernel's stack frame, its block form's too, in bytes.
const BATCH_STACK: u32 = 4608;

/// `(arch, entry, bytes)` for each entry of a ptxas report (`ptxas::table`s) whose stack frame
/// is larger than [`STACK_FRAMES`] allows it.
fn stack_frames_beyond_their_bounds(report: &str) -> Vec<(String, String, u32)> {
    let mut arch = "";
    let mut beyond = Vec::new();
    for line in report.lines() {
        if let Some(heading) = line.strip_prefix("== ptxas -arch=") {
            arch = heading.split(':').next().unwrap_or("");
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(&name), Some(stack)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        let Ok(stack) = stack.parse::<u32>() else {
            continue; // the column headings
        };
        let allowed = match ptxas::is_batch_kernel(name) {
            true => BATCH_STACK,
            false => (STACK_FRAMES.iter())
                .find(|(entry, _)| *entry == name)
                .map_or(0, |&(_, bytes)| bytes),
        };
        if stack > allowed {
            beyond.push((arch.to_owned(), name.to_owned(), stack));
        }
    }
    beyond
}

#[test]
fn stack_frames_are_read_from_the_report() {
    let report = "== ptxas -arch=sm_90: 5 kernels\n\
        kernel registers stack bytes spill stores spill loads\n\
        fit_expsin_value 40 0 0 0\n\
        mgh07_cost 40 8 0 0\n\
        rosenbrock_gradient_exact 80 48 0 0\n\
        fit_expsin_batch 255 4200 800 800\n\
        fit_poly_batch_block 255 6200 800 800\n";
    let beyond = |name: &str, bytes| ("sm_90".to_owned(), name.to_owned(), bytes);
    assert_eq!(
        stack_frames_beyond_their_bounds(report),
        [
            beyond("mgh07_cost", 8),
            beyond("fit_poly_batch_block", 6200)
        ]
    );
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

/// The single-precision batch code divides nothing in f64. A GeForce or T4-class card runs
/// f64 at 1/32 to 1/64 of f32's rate, and a `div.rn.f64` is many f64 instructions: a series'
/// coefficients computed where constants would do once cost the f32 Poisson fits more than
/// their own work (BENCHMARKS.md). A function is the f32 path's where its (mangled) name holds
/// the `Single` type; f32 code inlined into an entry, which serves both precisions, is not
/// seen.
#[test]
fn single_precision_code_divides_nothing_in_f64() {
    let ptx = embedded_ptx();
    let starts: Vec<usize> = (ptx
        .match_indices("\n.func")
        .chain(ptx.match_indices("\n.visible")))
    .map(|(at, _)| at + 1)
    .chain([ptx.len()])
    .collect::<BTreeSet<_>>()
    .into_iter()
    .collect();
    let functions = starts.windows(2).map(|w| &ptx[w[0]..w[1]]);
    // The name is on the first line, after the return value's parameter where there is one.
    let name = |f: &&str| {
        f.lines()
            .next()
            .unwrap_or_default()
            .contains("6single6Single")
    };
    let single: Vec<&str> = functions.filter(name).collect();
    assert!(single.len() > 10, "found {} f32 functions", single.len());
    let dividing: Vec<&str> = (single.iter())
        .filter(|f| f.contains("div.rn.f64") || f.contains("rcp.rn.f64"))
        .map(|f| f.lines().next().unwrap_or_default())
        .collect();
    assert_eq!(dividing, Vec::<&str>::new());
}
