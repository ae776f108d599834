//! my-kernels as PTX, checked without a GPU: it holds RobustLine's, MichaelisMenten's and BrownAlmostLinear's kernels and the shared ones
//! cudamin launches, and none of cudamin's built-in problems; every launch matches its `.entry`;
//! and ptxas assembles it for sm_70, sm_80 and sm_90 without spills. ptxas is found through
//! `$CUDAMIN_PTXAS`; `CUDAMIN_REQUIRE_PTX=1` / `CUDAMIN_REQUIRE_PTXAS=1` turn skips into failures.

use cudamin::backend::gpu::abi;
use cudamin::kernels::ResidualTerm;
use cudamin_builder::ptxas;
use my_kernels::{BrownAlmostLinear, MichaelisMenten, RobustLine};
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
fn the_ptx_holds_my_kernels_and_the_shared_ones_only() {
    let Some(ptx) = ptx_or_skip() else {
        return;
    };
    let launches: Vec<_> = abi::term_launches::<RobustLine>()
        .into_iter()
        .chain(abi::residual_launches::<MichaelisMenten>())
        .chain(abi::residual_launches::<ResidualTerm<BrownAlmostLinear>>())
        .chain(abi::vector_launches())
        .collect();
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
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("my_kernels.ptx");
    std::fs::write(&file, ptx).unwrap();
    for arch in ptxas::ARCHS {
        let kernels =
            ptxas::assemble(&ptxas_path, &file, arch).unwrap_or_else(|log| panic!("{log}"));
        print!("{}", ptxas::table(arch, &kernels));
        for (name, k) in &kernels {
            assert_eq!(
                (k.spill_stores, k.spill_loads),
                (0, 0),
                "{arch}: `{name}` spills"
            );
        }
    }
}
