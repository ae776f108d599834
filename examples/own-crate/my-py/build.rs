//! Compiles `my-kernels` to PTX for `src/lib.rs` to embed, as my-app's build script does.

fn main() {
    let built =
        cudamin_builder::PtxBuilder::new("../my-kernels").build_for_build_script("my_kernels");
    if let Err(err) = built {
        eprintln!("GPU kernels not built: {err}");
        std::process::exit(1);
    }
}
