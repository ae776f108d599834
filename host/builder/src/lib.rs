//! Compiles a `#![no_std]` Rust kernel crate to one self-contained PTX file, with the NVPTX
//! backend of a stock nightly rustc. This is the role `cuda_builder::CudaBuilder` plays for
//! Rust-CUDA, without its custom codegen backend.
//!
//! The recipe: the kernel crate is an ordinary `rlib` (so host code can call the same functions)
//! and is built once more as a `cdylib` for `nvptx64-nvidia-cuda`, with `-Zbuild-std=core` and fat
//! LTO, so that `--emit=asm` writes the whole LTO module (kernels, `core`, `libm`) as one PTX
//! with no `.extern` references. `-Clinker=true` turns the bitcode-link step, whose linker is not
//! shipped by rustup, into a no-op.
//!
//! A build script calls [`PtxBuilder::build_for_build_script`]. When the machine cannot build PTX
//! (no nightly, no `rust-src`) the host build still succeeds: a `cargo:warning` says what is
//! missing and how to get it, and the generated constant carries the reason instead of the PTX.
//!
//! In the `build.rs` of a crate whose kernels live in `./kernels`:
//!
//! ```no_run
//! cudamin_builder::PtxBuilder::new("kernels").build_for_build_script("kernels").unwrap();
//! ```
//!
//! and in its `lib.rs`, `include!(concat!(env!("OUT_DIR"), "/kernels.rs"));`, which defines
//! `pub const PTX: Result<&str, &str>`: the PTX text, or why it was not built.

#![warn(missing_docs)]

mod error;
pub mod ptxas;

pub use error::PtxBuildError;

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The one target this builder compiles for.
pub const NVPTX_TARGET: &str = "nvptx64-nvidia-cuda";

/// Which toolchain compiles the kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Toolchain {
    /// The toolchain running the build script (`$CARGO`, `$RUSTC`), else `cargo`/`rustc` on
    /// PATH; when that is not a nightly (a user's crate is usually built with stable), rustup's
    /// `nightly` if it is installed.
    Current,
    /// A rustup toolchain by name, run as `rustup run NAME cargo ...`.
    Rustup(String),
    /// Explicit `cargo` and `rustc` binaries.
    Paths {
        /// The `cargo` binary.
        cargo: PathBuf,
        /// The `rustc` binary, a nightly.
        rustc: PathBuf,
    },
}

impl fmt::Display for Toolchain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Current => f.write_str(&current_toolchain_name()),
            Self::Rustup(name) => f.write_str(name),
            Self::Paths { rustc, .. } => write!(f, "{}", rustc.display()),
        }
    }
}

fn current_toolchain_name() -> String {
    std::env::var("RUSTUP_TOOLCHAIN").unwrap_or_else(|_| "current".to_owned())
}

/// Builder for one kernel crate's PTX.
#[derive(Debug, Clone)]
pub struct PtxBuilder {
    crate_dir: PathBuf,
    arch: String,
    toolchain: Toolchain,
    target_dir: Option<PathBuf>,
    features: Vec<String>,
}

impl PtxBuilder {
    /// `crate_dir` holds the kernel crate's `Cargo.toml`. Relative paths are taken from the
    /// current directory, which for a build script is the package's manifest directory.
    pub fn new(crate_dir: impl Into<PathBuf>) -> Self {
        Self {
            crate_dir: crate_dir.into(),
            arch: "sm_70".to_owned(),
            toolchain: Toolchain::Current,
            target_dir: None,
            features: Vec::new(),
        }
    }

    /// Cargo features of the kernel crate to enable in the PTX build.
    pub fn features<S: Into<String>>(mut self, features: impl IntoIterator<Item = S>) -> Self {
        self.features = features.into_iter().map(Into::into).collect();
        self
    }

    /// The virtual architecture, `sm_70` by default. Always explicit: without it rustc emits
    /// `.target sm_30`, which ptxas rejects for f64 atomics. The driver JITs sm_70 PTX forward.
    pub fn arch(mut self, arch: impl Into<String>) -> Self {
        self.arch = arch.into();
        self
    }

    /// The toolchain that compiles the kernels, [`Toolchain::Current`] by default.
    pub fn toolchain(mut self, toolchain: Toolchain) -> Self {
        self.toolchain = toolchain;
        self
    }

    /// Where the nvptx build keeps its artifacts and its PTX. Defaults to `target/nvptx` next to
    /// the kernel crate's workspace target dir, or for a build script, `nvptx` in the host
    /// build's target dir. It is always separate from the host build's own artifacts, so the two
    /// builds never share a lock or flags.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.target_dir = Some(dir.into());
        self
    }

    /// The kernel crate's sources, for `cargo:rerun-if-changed`.
    pub fn watched_paths(&self) -> [PathBuf; 2] {
        [
            self.crate_dir.join("src"),
            self.crate_dir.join("Cargo.toml"),
        ]
    }

    /// Checks the toolchain (see [`Toolchain::Current`] for the nightly fallback), then
    /// compiles the crate and writes the PTX to `out`.
    pub fn build(&self, out: &Path) -> Result<(), PtxBuildError> {
        let resolved;
        let this = match self.check_toolchain() {
            Ok(()) => self,
            Err(err @ PtxBuildError::NotNightly { .. }) if self.toolchain == Toolchain::Current => {
                resolved = self
                    .clone()
                    .toolchain(Toolchain::Rustup("nightly".to_owned()));
                // Keep the first error when rustup has no usable nightly either: it names
                // the toolchain the user is running.
                resolved.check_toolchain().map_err(|_| err)?;
                &resolved
            }
            Err(err) => return Err(err),
        };
        this.compile(out)
    }

    /// Builds the PTX where cargo expects the cdylib's output (`deps/<lib name>.ptx` in the
    /// nvptx target dir), then copies it to `out`. With the output where cargo looks for it and
    /// the same arguments each time, cargo finds the build fresh: every build of the host (each
    /// profile, each feature set, each package that embeds these kernels) then reuses the PTX
    /// instead of compiling it again.
    fn compile(&self, out: &Path) -> Result<(), PtxBuildError> {
        let target_dir = self
            .target_dir
            .clone()
            .unwrap_or_else(|| self.crate_dir.join("..").join("target").join("nvptx"));
        let manifest = self.crate_dir.join("Cargo.toml");
        let io = |path: &Path| {
            let path = path.to_owned();
            move |e: std::io::Error| PtxBuildError::Io {
                path,
                detail: e.to_string(),
            }
        };
        let lib = lib_name(&fs::read_to_string(&manifest).map_err(io(&manifest))?);
        let Some(lib) = lib else {
            return Err(PtxBuildError::CompileFailed {
                log: format!("{} names no package", manifest.display()),
            });
        };
        let emitted = (target_dir.join(NVPTX_TARGET))
            .join("release")
            .join("deps")
            .join(format!("{lib}.ptx"));
        self.cargo_rustc(&target_dir, &emitted)?;
        fs::copy(&emitted, out).map_err(io(out))?;
        let ptx = fs::read_to_string(out).map_err(io(out))?;
        if !ptx.contains(".entry") {
            return Err(PtxBuildError::CompileFailed {
                log: format!(
                    "{} has no .entry: the crate defines no kernels",
                    out.display()
                ),
            });
        }
        Ok(())
    }

    /// `cargo rustc` of the kernel crate for nvptx, its PTX emitted to `emitted`.
    fn cargo_rustc(&self, target_dir: &Path, emitted: &Path) -> Result<(), PtxBuildError> {
        let mut cmd = self.tool("cargo");
        cmd.current_dir(&self.crate_dir)
            .args([
                "rustc",
                "--release",
                "--target",
                NVPTX_TARGET,
                "-Zbuild-std=core",
            ])
            .args(["--crate-type", "cdylib", "--target-dir"])
            .arg(target_dir);
        if !self.features.is_empty() {
            cmd.arg("--features").arg(self.features.join(","));
        }
        cmd.arg("--")
            .arg(format!("--emit=asm={}", emitted.display()))
            .arg("-Clinker=true");
        // Flags and profile are set here, not taken from the caller's workspace, so the PTX is
        // the same whatever profile the host is built with.
        let rustflags = [
            "-Zunstable-options",
            "-Cpanic=immediate-abort",
            &format!("-Ctarget-cpu={}", self.arch),
            "-Cllvm-args=-inline-threshold=1000",
        ];
        cmd.env("CARGO_ENCODED_RUSTFLAGS", rustflags.join("\x1f"));
        for (key, value) in [
            ("LTO", "fat"),
            ("CODEGEN_UNITS", "1"),
            ("PANIC", "abort"),
            ("OPT_LEVEL", "3"),
            ("DEBUG", "false"),
            ("DEBUG_ASSERTIONS", "false"),
            ("OVERFLOW_CHECKS", "false"),
            ("INCREMENTAL", "false"),
        ] {
            cmd.env(format!("CARGO_PROFILE_RELEASE_{key}"), value);
        }
        let output = run(&mut cmd).map_err(|detail| PtxBuildError::ToolchainMissing {
            toolchain: self.toolchain.to_string(),
            detail,
        })?;
        if !output.status.success() {
            return Err(PtxBuildError::CompileFailed {
                log: tail(&output.stderr, 40),
            });
        }
        Ok(())
    }

    /// For build scripts: builds `$OUT_DIR/{name}.ptx` and writes `$OUT_DIR/{name}.rs`, which
    /// defines `pub const PTX: Result<&str, &str>`: the PTX, or the reason there is none, which
    /// is also printed as a `cargo:warning`. Set `CUDAMIN_REQUIRE_PTX=1` to make a failed PTX
    /// build fail the build instead (CI does). `CUDAMIN_PTX_TOOLCHAIN=NAME` picks a rustup
    /// toolchain other than the current one.
    pub fn build_for_build_script(mut self, name: &str) -> Result<(), PtxBuildError> {
        for path in self.watched_paths() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
        println!("cargo:rerun-if-env-changed=CUDAMIN_PTX_TOOLCHAIN");
        println!("cargo:rerun-if-env-changed=CUDAMIN_REQUIRE_PTX");
        if let Some(name) = std::env::var_os("CUDAMIN_PTX_TOOLCHAIN") {
            self.toolchain = Toolchain::Rustup(name.to_string_lossy().into_owned());
        }
        let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_else(|| ".".into()));
        if self.target_dir.is_none() {
            // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out: one nvptx build serves
            // every profile and every package of the host build (the PTX's flags are fixed).
            let target = out_dir.ancestors().nth(4).unwrap_or(&out_dir);
            self.target_dir = Some(target.join("nvptx"));
        }
        let ptx_path = out_dir.join(format!("{name}.ptx"));
        let source = match self.build(&ptx_path) {
            Ok(()) => format!(
                "/// The kernels, as PTX for `{}` (built by cudamin-builder).\npub const PTX: ::core::result::Result<&str, &str> = Ok(include_str!({:?}));\n",
                self.arch,
                ptx_path.display().to_string()
            ),
            Err(err) => {
                if std::env::var_os("CUDAMIN_REQUIRE_PTX").is_some_and(|v| v == "1") {
                    return Err(err);
                }
                let kernels = self.crate_dir.display();
                println!(
                    "cargo:warning=GPU kernels NOT built from {kernels}: the program will run on the CPU only."
                );
                for line in err.to_string().lines() {
                    println!("cargo:warning=  {line}");
                }
                println!(
                    "cargo:warning=  Set CUDAMIN_REQUIRE_PTX=1 to make this an error instead."
                );
                unavailable_source(&err)
            }
        };
        let rs_path = out_dir.join(format!("{name}.rs"));
        fs::write(&rs_path, source).map_err(|e| PtxBuildError::Io {
            path: rs_path,
            detail: e.to_string(),
        })
    }

    fn check_toolchain(&self) -> Result<(), PtxBuildError> {
        let toolchain = self.toolchain.to_string();
        let rustc = |args: &[&str]| -> Result<String, PtxBuildError> {
            let output = run(self.tool("rustc").args(args)).map_err(|detail| {
                PtxBuildError::ToolchainMissing {
                    toolchain: toolchain.clone(),
                    detail,
                }
            })?;
            if !output.status.success() {
                // The first line says why (rustup may follow it with a backtrace).
                let stderr = String::from_utf8_lossy(&output.stderr);
                let why = stderr
                    .lines()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("no message");
                return Err(PtxBuildError::ToolchainMissing {
                    toolchain: toolchain.clone(),
                    detail: why.trim().to_owned(),
                });
            }
            Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
        };
        let version = rustc(&["--version"])?;
        if !(version.contains("-nightly") || version.contains("-dev")) {
            return Err(PtxBuildError::NotNightly { toolchain, version });
        }
        let sysroot = PathBuf::from(rustc(&["--print", "sysroot"])?);
        if !sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .is_file()
        {
            return Err(PtxBuildError::RustSrcMissing { toolchain, sysroot });
        }
        Ok(())
    }

    /// A command for `cargo` or `rustc` of the chosen toolchain, in an environment cleaned of
    /// everything an enclosing cargo sets for its build script, so the nvptx build takes no
    /// host flags, target dir or wrapper from it.
    fn tool(&self, tool: &str) -> Command {
        let mut cmd = match &self.toolchain {
            Toolchain::Current => {
                let var = if tool == "cargo" { "CARGO" } else { "RUSTC" };
                Command::new(std::env::var_os(var).unwrap_or_else(|| OsString::from(tool)))
            }
            Toolchain::Rustup(name) => {
                let mut cmd = Command::new("rustup");
                cmd.args(["run", name, tool]);
                cmd
            }
            Toolchain::Paths { cargo, rustc } => {
                Command::new(if tool == "cargo" { cargo } else { rustc })
            }
        };
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let keep = matches!(&*key, "CARGO_HOME" | "CARGO_MAKEFLAGS");
            let cargo_set = key.starts_with("CARGO_")
                || key.starts_with("RUSTC")
                || matches!(
                    &*key,
                    "RUSTFLAGS" | "RUSTDOCFLAGS" | "TARGET" | "HOST" | "OUT_DIR"
                );
            if cargo_set && !keep {
                cmd.env_remove(&*key);
            }
        }
        match &self.toolchain {
            // Keep the enclosing build's compiler: it is the current toolchain's rustc.
            Toolchain::Current => {
                if let Some(rustc) = std::env::var_os("RUSTC") {
                    cmd.env("RUSTC", rustc);
                }
            }
            Toolchain::Rustup(_) => {
                cmd.env_remove("RUSTUP_TOOLCHAIN");
            }
            Toolchain::Paths { rustc, .. } => {
                cmd.env("RUSTC", rustc);
            }
        }
        cmd
    }
}

/// The generated constant when no PTX could be built.
fn unavailable_source(err: &PtxBuildError) -> String {
    let reason = err.to_string();
    let first_line = reason.lines().next().unwrap_or_default();
    format!(
        "/// The kernels were not built; this is why.\npub const PTX: ::core::result::Result<&str, &str> = Err({first_line:?});\n"
    )
}

/// The library's crate name from a `Cargo.toml`: `[lib]`'s `name`, or else `[package]`'s with
/// `-` read as `_`, as cargo names it.
fn lib_name(manifest: &str) -> Option<String> {
    let (mut section, mut package, mut lib) = ("", None, None);
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
            continue;
        }
        let Some(value) = line.strip_prefix("name") else {
            continue;
        };
        let Some(value) = value.trim_start().strip_prefix('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"').to_owned();
        match section {
            "[package]" => package = Some(value.replace('-', "_")),
            "[lib]" => lib = Some(value),
            _ => {}
        }
    }
    lib.or(package)
}

fn run(cmd: &mut Command) -> Result<Output, String> {
    cmd.output()
        .map_err(|e| format!("could not run {:?}: {e}", cmd.get_program()))
}

fn tail(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Mutex, MutexGuard};

    /// Tests in this module that write an executable or start a process hold this lock.
    /// Without it, a sibling test thread can fork while a fake `rustc` is still open for
    /// writing; the child inherits that descriptor until it execs, and running the fake
    /// then fails with ETXTBSY ("Text file busy"), as it once did in CI.
    fn spawn_lock() -> MutexGuard<'static, ()> {
        static SPAWN: Mutex<()> = Mutex::new(());
        SPAWN
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A directory of its own for one test, removed when the test ends (pass or fail), so
    /// repeated test runs do not pile folders up in the temp dir.
    struct ScratchDir(PathBuf);

    impl ScratchDir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!(
                "cudamin-builder-test-{}-{name}",
                std::process::id()
            ));
            fs::create_dir_all(&dir).unwrap();
            ScratchDir(dir)
        }
    }

    impl std::ops::Deref for ScratchDir {
        type Target = Path;
        fn deref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for ScratchDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn missing_rustup_toolchain_is_reported_not_panicked() {
        let _spawning = spawn_lock();
        let dir = ScratchDir::new("missing");
        let err = PtxBuilder::new(&*dir)
            .toolchain(Toolchain::Rustup("cudamin-no-such-toolchain".into()))
            .build(&dir.join("k.ptx"))
            .unwrap_err();
        assert!(
            matches!(err, PtxBuildError::ToolchainMissing { .. }),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.contains("cudamin-no-such-toolchain"), "{message}");
        assert!(
            message.contains("rustup toolchain install nightly"),
            "{message}"
        );
    }

    /// A fake `rustc` that prints what we tell it, to simulate toolchains we do not have.
    #[cfg(unix)]
    fn fake_rustc(dir: &Path, version: &str, sysroot: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join("rustc");
        let script = format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; else echo '{}'; fi\n",
            sysroot.display()
        );
        fs::write(&path, script).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[cfg(unix)]
    fn check_with_fake_rustc(version: &str, sysroot: &Path) -> Result<(), PtxBuildError> {
        let _spawning = spawn_lock();
        let dir = ScratchDir::new(&version.replace([' ', '(', ')'], "_"));
        let rustc = fake_rustc(&dir, version, sysroot);
        PtxBuilder::new(&*dir)
            .toolchain(Toolchain::Paths {
                cargo: dir.join("cargo"),
                rustc,
            })
            .check_toolchain()
    }

    #[cfg(unix)]
    #[test]
    fn stable_toolchain_is_reported_as_not_nightly() {
        let err =
            check_with_fake_rustc("rustc 1.95.0 (59807616e 2026-04-14)", Path::new("/nowhere"))
                .unwrap_err();
        assert!(matches!(err, PtxBuildError::NotNightly { .. }), "{err:?}");
        assert!(err.to_string().contains("needs a nightly rustc"));
    }

    #[cfg(unix)]
    #[test]
    fn missing_rust_src_is_reported_with_the_fix() {
        let sysroot = ScratchDir::new("empty-sysroot");
        let err = check_with_fake_rustc("rustc 1.97.0-nightly (e50aa6fba 2026-05-19)", &sysroot)
            .unwrap_err();
        assert!(
            matches!(err, PtxBuildError::RustSrcMissing { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("rustup component add rust-src"));
    }

    #[test]
    fn unavailable_source_is_a_valid_err_constant() {
        let err = PtxBuildError::RustSrcMissing {
            toolchain: "nightly".into(),
            sysroot: PathBuf::from("/x \"quoted\""),
        };
        let source = unavailable_source(&err);
        assert!(source.contains("pub const PTX: ::core::result::Result<&str, &str> = Err(\""));
        assert!(
            source.contains(r#"\"quoted\""#),
            "the reason must be escaped: {source}"
        );
    }

    #[test]
    fn the_lib_name_is_cargos() {
        let package = "[package]\nname = \"my-kernels\"\nversion = \"0.1.0\"\n\n[dependencies]\n";
        assert_eq!(lib_name(package).as_deref(), Some("my_kernels"));
        let lib =
            "[package]\nname = \"my-kernels\"\n[lib]\nname = \"kernels\"\n[features]\nname = []\n";
        assert_eq!(lib_name(lib).as_deref(), Some("kernels"));
        assert_eq!(lib_name("[workspace]\n"), None);
    }
}
