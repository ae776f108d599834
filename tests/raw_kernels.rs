//! Numba-style raw kernels on the CPU backend: the grid kernel runs from the same source as
//! its PTX and matches plain Rust exactly; the shared-memory kernel is refused.

use cudamin::LaunchConfig;
use cudamin::kernels::raw::examples::{DOT_SHARED, SQUARE_PLUS_TWO_X_PLUS_ONE};
use cudamin::{Backend, BackendError, RawArg};

fn inputs(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (i as f64 * 0.37).sin() * 3.0 - 0.5)
        .collect()
}

#[test]
fn grid_kernel_matches_plain_rust_exactly() {
    let x = inputs(10_001);
    let expected: Vec<f64> = x.iter().map(|v| v * v + 2.0 * v + 1.0).collect();
    // Fewer threads than elements, so the grid-stride loop does several rounds.
    for config in [
        LaunchConfig {
            blocks: 4,
            threads: 256,
        },
        LaunchConfig {
            blocks: 40,
            threads: 256,
        },
    ] {
        let mut out = vec![f64::NAN; x.len()];
        Backend::Cpu
            .launch_raw(
                &SQUARE_PLUS_TWO_X_PLUS_ONE,
                config,
                &mut [RawArg::In(&x), RawArg::Out(&mut out)],
            )
            .unwrap();
        assert_eq!(out, expected, "config {config:?}");
    }
}

#[test]
fn block_kernel_is_refused_on_the_cpu() {
    let x = inputs(64);
    let mut out = [0.0];
    let err = Backend::Cpu
        .launch_raw(
            &DOT_SHARED,
            LaunchConfig {
                blocks: 1,
                threads: 64,
            },
            &mut [RawArg::In(&x), RawArg::In(&x), RawArg::Out(&mut out)],
        )
        .unwrap_err();
    assert!(matches!(err, BackendError::Kernel { .. }), "{err:?}");
    assert!(
        err.to_string().contains("runs only on the cuda backend"),
        "{err}"
    );
}

#[test]
fn mismatched_arguments_and_bad_configs_are_errors() {
    let x = inputs(8);
    let mut out = vec![0.0; 8];
    let config = LaunchConfig {
        blocks: 1,
        threads: 32,
    };
    let swapped = Backend::Cpu.launch_raw(
        &SQUARE_PLUS_TWO_X_PLUS_ONE,
        config,
        &mut [RawArg::Out(&mut out), RawArg::In(&x)],
    );
    assert!(swapped.unwrap_err().to_string().contains("do not match"));
    let missing =
        Backend::Cpu.launch_raw(&SQUARE_PLUS_TWO_X_PLUS_ONE, config, &mut [RawArg::In(&x)]);
    assert!(missing.is_err());
    let no_threads = LaunchConfig {
        blocks: 1,
        threads: 0,
    };
    let err = Backend::Cpu
        .launch_raw(
            &SQUARE_PLUS_TWO_X_PLUS_ONE,
            no_threads,
            &mut [RawArg::In(&x), RawArg::Out(&mut out)],
        )
        .unwrap_err();
    assert!(err.to_string().contains("cannot launch"), "{err}");
}
