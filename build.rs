//! Compiles `gpu-kernels` to PTX and embeds it (see `ptx-builder`). Without a nightly toolchain
//! or `rust-src` the build still succeeds, with a warning, and the binary runs CPU-only.

fn main() {
    let kernels = ptx_builder::PtxBuilder::new("gpu-kernels").arch("sm_70");
    if let Err(err) = kernels.build_for_build_script("kernels") {
        // Only reached with CUDAMIN_REQUIRE_PTX=1: a missing PTX is then an error.
        eprintln!("GPU kernels not built: {err}");
        std::process::exit(1);
    }
}
