//! Why no PTX was built, each reason with what to do about it.

use std::fmt;
use std::path::PathBuf;

/// Why no PTX was built. Every variant says what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PtxBuildError {
    /// The toolchain's `rustc` could not be run at all.
    ToolchainMissing {
        /// The toolchain, as [`Toolchain`](crate::Toolchain) displays it.
        toolchain: String,
        /// Why: the operating system's error, or the first line of `rustc`'s stderr.
        detail: String,
    },
    /// The toolchain is not a nightly; the NVPTX build needs unstable flags.
    NotNightly {
        /// The toolchain, as [`Toolchain`](crate::Toolchain) displays it.
        toolchain: String,
        /// Its `rustc --version`.
        version: String,
    },
    /// `core` must be compiled from source for nvptx64; rustup ships no prebuilt one.
    RustSrcMissing {
        /// The toolchain, as [`Toolchain`](crate::Toolchain) displays it.
        toolchain: String,
        /// Its sysroot, where `rust-src` was looked for.
        sysroot: PathBuf,
    },
    /// `cargo rustc` ran and failed.
    CompileFailed {
        /// The tail of its stderr.
        log: String,
    },
    /// A file could not be read or written.
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        detail: String,
    },
}

impl fmt::Display for PtxBuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ToolchainMissing { toolchain, detail } => write!(
                f,
                "toolchain `{toolchain}` is not available ({detail}); install it with `rustup toolchain install nightly --component rust-src`"
            ),
            Self::NotNightly { toolchain, version } => write!(
                f,
                "toolchain `{toolchain}` is `{version}`, but the PTX build needs a nightly rustc; install one with `rustup toolchain install nightly --component rust-src`"
            ),
            Self::RustSrcMissing { toolchain, sysroot } => write!(
                f,
                "the `rust-src` component is missing from `{}` (toolchain `{toolchain}`); add it with `rustup component add rust-src --toolchain {toolchain}`",
                sysroot.display()
            ),
            Self::CompileFailed { log } => {
                write!(f, "the nvptx64 build of the kernel crate failed:\n{log}")
            }
            Self::Io { path, detail } => write!(f, "{}: {detail}", path.display()),
        }
    }
}

impl std::error::Error for PtxBuildError {}
