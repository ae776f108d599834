//! Compiles `gpu-kernels` with cudamin's built-in problems to PTX and embeds it (see
//! `cudamin-builder`). Without a nightly toolchain or `rust-src` the build still succeeds, with a
//! warning, and the binary runs CPU-only. A crate that depends on cudamin for its own kernels
//! turns the `builtin-kernels` feature off and builds its own PTX instead.

fn main() {
    if std::env::var_os("CARGO_FEATURE_BUILTIN_KERNELS").is_none() {
        let out =
            std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let source = "/// The `builtin-kernels` feature is off: cudamin's own PTX is not built.\n\
                      pub const PTX: ::core::result::Result<&str, &str> = \
                      Err(\"cudamin was built without its builtin-kernels feature\");\n";
        if let Err(err) = std::fs::write(out.join("kernels.rs"), source) {
            eprintln!("could not write kernels.rs: {err}");
            std::process::exit(1);
        }
        return;
    }
    let kernels = cudamin_builder::PtxBuilder::new("gpu-kernels")
        .arch("sm_70")
        .features(["builtin"]);
    if let Err(err) = kernels.build_for_build_script("kernels") {
        // Only reached with CUDAMIN_REQUIRE_PTX=1: a missing PTX is then an error.
        eprintln!("GPU kernels not built: {err}");
        std::process::exit(1);
    }
}
