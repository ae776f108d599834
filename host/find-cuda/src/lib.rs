//! cudamin's stand-in for `find_cuda_helper`, the build-time helper of `cust_raw` (the CUDA
//! driver bindings under cust), put in its place by `[patch.crates-io]` in cudamin's workspace
//! and in the own-crate template.
//!
//! cust links one library, the driver's `libcuda`. The published helper looks only for a CUDA
//! *toolkit* layout (a `lib64` under `CUDA_LIBRARY_PATH`, `/opt/cuda` or `/usr/local/cuda*`)
//! and otherwise panics with "Could not find a cuda installation", so a machine with the driver
//! and no toolkit (the usual GPU server, or Debian's `libcuda1`) could not build the `cuda`
//! feature without an environment variable. This one looks for `libcuda` itself, in the places
//! drivers and toolkits put it, and when there is none says what to install.

use std::env;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Environment variables that name where CUDA is, in the order they are read.
const ROOT_VARIABLES: [&str; 3] = ["CUDA_PATH", "CUDA_ROOT", "CUDA_TOOLKIT_ROOT_DIR"];

/// Called by `cust_raw`'s build script: links `libcuda`, or stops the build with the reason.
pub fn include_cuda() {
    println!("cargo:rerun-if-env-changed=CUDA_LIBRARY_PATH");
    for variable in ROOT_VARIABLES {
        println!("cargo:rerun-if-env-changed={variable}");
    }
    if env::var_os("DOCS_RS").is_some() {
        return;
    }
    let roots = ROOT_VARIABLES
        .iter()
        .filter_map(|variable| env::var_os(variable).map(PathBuf::from))
        .collect();
    let candidates = candidate_dirs(env::var_os("CUDA_LIBRARY_PATH").as_deref(), roots);
    match candidates.iter().find_map(|dir| libcuda_in(dir)) {
        Some(Found { dir, file }) => {
            println!("cargo:rustc-link-search=native={}", dir.display());
            if file == "libcuda.so" {
                println!("cargo:rustc-link-lib=dylib=cuda");
            } else {
                // Only the driver's versioned name (no `-dev` symlink): link that file by name.
                println!("cargo:rustc-link-lib=dylib:+verbatim={file}");
            }
        }
        None => {
            let searched: Vec<String> =
                candidates.iter().map(|d| d.display().to_string()).collect();
            panic!(
                "the `cuda` feature needs the NVIDIA driver's libcuda.so, which is not in {}. \
                 Install the driver (on Debian: the non-free package libcuda1), or set \
                 CUDA_LIBRARY_PATH to the directory that holds libcuda.so; or build without \
                 the `cuda` feature, and cudamin runs on the CPU.",
                searched.join(", ")
            );
        }
    }
}

/// Where `libcuda` may be, best first: what the user named (`library_path`, as
/// `CUDA_LIBRARY_PATH`), the dynamic linker's cache (where the driver's copy is), the usual
/// library directories, then toolkits (`roots` from the environment, then the usual places),
/// whose `stubs` copy links but cannot run without a driver.
fn candidate_dirs(library_path: Option<&OsStr>, roots: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(paths) = library_path {
        for dir in env::split_paths(paths) {
            dirs.push(dir.join("lib64"));
            dirs.push(dir);
        }
    }
    dirs.extend(linker_cache_dirs());
    for dir in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/wsl/lib",
    ] {
        dirs.push(PathBuf::from(dir));
    }
    let usual = ["/usr/local/cuda", "/opt/cuda"].map(PathBuf::from);
    for root in roots.into_iter().chain(usual) {
        dirs.push(root.join("lib64"));
        dirs.push(root.join("lib64/stubs"));
    }
    dirs.dedup();
    dirs
}

/// The directories of the `libcuda` entries in `ldconfig -p`'s cache, if ldconfig runs.
fn linker_cache_dirs() -> Vec<PathBuf> {
    let Ok(output) = Command::new("ldconfig").arg("-p").output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.trim_start().starts_with("libcuda.so"))
        .filter_map(|line| line.rsplit("=> ").next())
        .filter_map(|path| Path::new(path.trim()).parent().map(Path::to_owned))
        .collect()
}

/// A `libcuda` the linker can use.
struct Found {
    dir: PathBuf,
    file: &'static str,
}

fn libcuda_in(dir: &Path) -> Option<Found> {
    ["libcuda.so", "libcuda.so.1"]
        .into_iter()
        .find(|file| dir.join(file).is_file())
        .map(|file| Found {
            dir: dir.to_owned(),
            file,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_either_name_and_prefers_the_unversioned_one() {
        let dir = env::temp_dir().join(format!("find-cuda-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(libcuda_in(&dir).is_none());
        std::fs::write(dir.join("libcuda.so.1"), b"").unwrap();
        assert_eq!(libcuda_in(&dir).map(|f| f.file), Some("libcuda.so.1"));
        std::fs::write(dir.join("libcuda.so"), b"").unwrap();
        assert_eq!(libcuda_in(&dir).map(|f| f.file), Some("libcuda.so"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_library_path_comes_first_and_toolkits_last() {
        let dirs = candidate_dirs(
            Some(OsStr::new("/first:/second")),
            vec![PathBuf::from("/toolkit")],
        );
        assert_eq!(dirs[0], PathBuf::from("/first/lib64"));
        assert_eq!(dirs[1], PathBuf::from("/first"));
        assert_eq!(dirs[2], PathBuf::from("/second/lib64"));
        let toolkit = dirs
            .iter()
            .position(|d| d == Path::new("/toolkit/lib64"))
            .unwrap();
        let system = dirs
            .iter()
            .position(|d| d == Path::new("/usr/lib64"))
            .unwrap();
        assert!(system < toolkit, "{dirs:?}");
    }
}
