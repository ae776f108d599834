//! Compiles `my-kernels` to PTX, which `src/main.rs` embeds. The builder finds a nightly
//! toolchain with `rust-src` (rustup's `nightly` when you build with stable); without one the
//! build still succeeds, with a warning that says what to install, and the app runs on the CPU.
//! `CUDAMIN_REQUIRE_PTX=1` makes that an error.

fn main() {
    let kernels = cudamin_builder::PtxBuilder::new("../my-kernels");
    if let Err(err) = kernels.build_for_build_script("my_kernels") {
        eprintln!("GPU kernels not built: {err}");
        std::process::exit(1);
    }
}
