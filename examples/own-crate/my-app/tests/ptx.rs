//! my-kernels as PTX, checked without a GPU: every term registered in my-kernels (found by
//! its entries' names, so a new term is checked without a line here) and the shared kernels
//! cudamin launches are launched with the parameters their `.entry` takes, and the PTX holds
//! nothing else; and ptxas assembles each entry's module for sm_70, sm_80 and sm_90 (a batch
//! kernel for sm_90 alone, `ptxas::archs_of`) without spills (but a bounded few in a batch
//! kernel, `ptxas::spills_allowed`). ptxas is
//! found through `$CUDAMIN_PTXAS`; `CUDAMIN_REQUIRE_PTX=1` / `CUDAMIN_REQUIRE_PTXAS=1` turn
//! skips into failures.

use cudamin::plumbing::gpu::{abi, ptx};
use cudamin_builder::ptxas;
use std::path::Path;

cudamin::include_ptx!("my_kernels");

fn required(variable: &str) -> bool {
    std::env::var_os(variable).is_some_and(|v| v == "1")
}

/// The PTX, or `None` after saying why the test is skipped.
fn ptx_or_skip() -> Option<&'static str> {
    match PTX {
        Ok(ptx) => Some(ptx),
        Err(why) => {
            assert!(!required("CUDAMIN_REQUIRE_PTX"), "no PTX: {why}");
            eprintln!("skipped: no PTX ({why})");
            None
        }
    }
}

#[test]
fn every_entry_is_a_registered_kernel_launched_as_it_takes() {
    let Some(ptx) = ptx_or_skip() else {
        return;
    };
    let terms = abi::registered_terms(ptx).unwrap();
    let names: Vec<_> = terms.iter().map(|term| &term.name).collect();
    println!("registered terms: {names:?}");
    let launches = abi::registered_launches(ptx).unwrap();
    if let Err(problems) = abi::check_launches(ptx, &launches) {
        panic!("launches and PTX disagree:\n{}", problems.join("\n"));
    }
}

#[test]
fn ptxas_assembles_it_for_every_arch_without_spills() {
    let Some(ptx) = ptx_or_skip() else {
        return;
    };
    let Some(ptxas_path) = ptxas::find(Path::new(env!("CARGO_MANIFEST_DIR"))) else {
        assert!(
            !required("CUDAMIN_REQUIRE_PTXAS"),
            "ptxas not found: set CUDAMIN_PTXAS"
        );
        eprintln!("skipped: ptxas not found (set CUDAMIN_PTXAS)");
        return;
    };
    // Each entry's own module, as the driver loads it: ptxas then assembles a batch kernel
    // for sm_90 alone (`ptxas::archs_of`), and the modules on every core.
    let modules = ptx::modules(ptx).unwrap();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("entry-modules");
    let report = ptxas::assemble_entries(&ptxas_path, &dir, &modules.all())
        .unwrap_or_else(|why| panic!("{why}"));
    print!("{report}");
}
