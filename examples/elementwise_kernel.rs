//! The seeds' elementwise Numba kernel, `out[i] = x[i]² + 2·x[i] + 1`, as a cudamin grid
//! kernel. In Python:
//!
//! ```python
//! @cuda.jit
//! def kernel(x, out):
//!     for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
//!         out[i] = x[i] ** 2 + 2 * x[i] + 1
//! kernel[blocks, threads](x, out)
//! ```
//!
//! The Rust kernel is `gpu-kernels/src/raw/examples.rs`'s `square_plus_two_x_plus_one`, a safe
//! function of its thread: the same source runs as PTX on the GPU and over rayon on the CPU.
//! Its arguments travel as `RawArg::In` (copied to the device) and `RawArg::Out` (copied there
//! and back), as Numba copies host arrays.
//!
//! `cargo run --release --example elementwise_kernel [n]`

use cudamin::kernels::raw::examples::SQUARE_PLUS_TWO_X_PLUS_ONE;
use cudamin::{BackendChoice, LaunchConfig, RawArg};
use std::process::ExitCode;

mod common;

fn main() -> ExitCode {
    common::report(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = common::size_argument(1_000_000)?;
    let (backend, why) = cudamin::backend(BackendChoice::Auto)?;
    println!("backend  {} ({why})", backend.name());
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 1e-3).sin() * 4.0).collect();
    let mut out = vec![f64::NAN; n];
    // Fewer threads than elements: each thread takes every 64·256-th element.
    let config = LaunchConfig {
        blocks: 64,
        threads: 256,
    };
    backend.launch_raw(
        &SQUARE_PLUS_TWO_X_PLUS_ONE,
        config,
        &mut [RawArg::In(&x), RawArg::Out(&mut out)],
    )?;
    // x² + 2x + 1 = (x + 1)², up to the rounding of the two forms.
    let worst = x
        .iter()
        .zip(&out)
        .map(|(x, o)| (o - (x + 1.0) * (x + 1.0)).abs() / (x + 1.0).powi(2).max(1.0))
        .fold(0.0, f64::max);
    println!(
        "n        {n}, {} blocks × {} threads",
        config.blocks, config.threads
    );
    println!("out[..3] {:?}", &out[..3.min(n)]);
    println!("max relative difference from (x + 1)²: {worst:.1e}");
    if worst > 1e-14 {
        return Err(format!("out differs from (x + 1)² by {worst:.1e}").into());
    }
    Ok(())
}
