//! How the host knows a batch kernel: its name, its residual term's registration then a
//! suffix, and its parameters, the same for every batch kernel.

use crate::raw::RawParam;

/// The end of a batch kernel's name by least squares: its residual term's registered name,
/// then this (`fit_gauss_2d_batch`). The host finds a kernel crate's batch kernels by it and
/// checks that a model runs its own term's.
pub const SUFFIX: &str = "_batch";

/// The same for a batch kernel by Poisson likelihood (`fit_gauss_2d_poisson_batch`).
pub const POISSON_SUFFIX: &str = "_poisson_batch";

/// Whether `kernel` is named `term` then `suffix`, in a `const` context.
pub const fn is_named(kernel: &str, term: &str, suffix: &str) -> bool {
    let (kernel, term, suffix) = (kernel.as_bytes(), term.as_bytes(), suffix.as_bytes());
    if kernel.len() != term.len() + suffix.len() {
        return false;
    }
    let mut i = 0;
    while i < kernel.len() {
        let expected = if i < term.len() {
            term[i]
        } else {
            suffix[i - term.len()]
        };
        if kernel[i] != expected {
            return false;
        }
        i += 1;
    }
    true
}

/// The parameters of every batch kernel and of its block form, in order (see
/// [`batch_kernel!`](crate::batch_kernel)).
pub const PARAMS: &[RawParam] = {
    use crate::raw::Arg::{F64, In, Out, U64};
    &[
        In(()),
        In(()),
        In(()),
        Out(()),
        U64(()),
        U64(()),
        F64(()),
        F64(()),
        F64(()),
        F64(()),
        U64(()),
        U64(()),
    ]
};

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch kernel is its term's by name alone: the whole name, the term's then the suffix.
    #[test]
    fn a_kernel_is_named_after_its_terms_registration() {
        assert!(is_named("fit_gauss_2d_batch", "fit_gauss_2d", SUFFIX));
        assert!(is_named(
            "fit_gauss_2d_poisson_batch",
            "fit_gauss_2d",
            POISSON_SUFFIX
        ));
        assert!(!is_named(
            "fit_gauss_2d_poisson_batch",
            "fit_gauss_2d",
            SUFFIX
        ));
        assert!(!is_named(
            "fit_gauss_2d_elliptic_batch",
            "fit_gauss_2d",
            SUFFIX
        ));
        assert!(!is_named(
            "fit_gauss_2d_batch",
            "fit_gauss_2d_elliptic",
            SUFFIX
        ));
        assert!(!is_named("fit_gauss_2e_batch", "fit_gauss_2d", SUFFIX));
    }
}
