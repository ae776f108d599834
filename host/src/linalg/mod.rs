//! Host-memory linear algebra the solver and the built-in problems (in the `cudamin` crate)
//! share: the `n`-vector kernels (`vector`) and a dense Cholesky factorization. Rayon-parallel
//! and deterministic: results never depend on the number of threads.

mod memory;
pub(crate) mod svd;
pub(crate) mod vector;

pub use memory::{MemoryLimit, MemoryRoom, available_memory, memory_room};
pub use vector::max_abs as inf_norm;

use ndarray::ArrayView2;
use rayon::prelude::*;
use vector::{PARALLEL_MIN_LEN, dot};

/// From this dimension on, rows are processed in parallel (a row then holds enough work to
/// outweigh the scheduling).
pub(crate) const PARALLEL_MIN_DIM: usize = 256;

/// [`cholesky_into`] a new buffer.
pub(crate) fn cholesky(h: ArrayView2<'_, f64>) -> Result<Vec<f64>, String> {
    let n = h.nrows();
    let mut l = vec![0.0; n * n];
    cholesky_into(h, &mut l)?;
    Ok(l)
}

/// The Cholesky factor `L` of the symmetric `h` (`H = L Lᵀ`), by rows, `n×n` with zeros above
/// the diagonal, into `l` (`n²` values); fails at the first pivot that is not positive, i.e. iff
/// `h` is not positive definite. Kept by rows, each entry is a dot product of two contiguous row
/// prefixes; the rows below a pivot are independent of each other and go in parallel.
pub fn cholesky_into(h: ArrayView2<'_, f64>, l: &mut [f64]) -> Result<(), String> {
    let n = h.nrows();
    assert_eq!(l.len(), n * n, "the factor's buffer holds n² values");
    for j in 0..n {
        let (done, below) = l.split_at_mut((j + 1) * n);
        let row_j = &mut done[j * n..];
        let pivot = h[[j, j]] - dot(&row_j[..j], &row_j[..j]);
        if pivot.is_nan() || pivot <= 0.0 {
            return Err(format!("Cholesky pivot {j} is {pivot:e}"));
        }
        let l_jj = pivot.sqrt();
        row_j[j] = l_jj;
        let row_j = &row_j[..j];
        let fill_column_j = |(offset, row_i): (usize, &mut [f64])| {
            let i = j + 1 + offset;
            row_i[j] = (h[[i, j]] - dot(&row_i[..j], row_j)) / l_jj;
        };
        if n < PARALLEL_MIN_DIM {
            below.chunks_mut(n).enumerate().for_each(fill_column_j);
        } else {
            below.par_chunks_mut(n).enumerate().for_each(fill_column_j);
        }
    }
    Ok(())
}

/// Solves `L y = b` in place (`b` becomes `y`), `L` lower triangular by rows, `n × n`.
pub fn solve_lower(l: &[f64], b: &mut [f64]) {
    let n = b.len();
    for i in 0..n {
        let row = &l[i * n..i * n + i];
        b[i] = (b[i] - dot(row, &b[..i])) / l[i * n + i];
    }
}

/// Solves `Lᵀ x = b` in place (`b` becomes `x`), `L` as [`solve_lower`] takes it.
pub(crate) fn solve_lower_transposed(l: &[f64], b: &mut [f64]) {
    let n = b.len();
    for i in (0..n).rev() {
        let known: f64 = (i + 1..n).map(|j| l[j * n + i] * b[j]).sum();
        b[i] = (b[i] - known) / l[i * n + i];
    }
}

/// Solves `H x = b` in place, `L` the Cholesky factor of `H` ([`cholesky`]).
pub(crate) fn cholesky_solve(l: &[f64], b: &mut [f64]) {
    solve_lower(l, b);
    solve_lower_transposed(l, b);
}

/// `len` zeros, or `None` where the allocation would fail (`vec!` would abort the process) or
/// would not fit in the room the tightest memory limit leaves ([`memory_room`]): on Linux an
/// allocation far past physical memory succeeds, and the process is killed when it is touched.
pub fn try_zeros(len: usize) -> Option<Vec<f64>> {
    fits_in_memory(len)?;
    // Zeroed by the allocator: a long vector comes as fresh pages that read as zeros, each
    // mapped at its first write, by the pass that writes it (on every core), with no pass of
    // zeros first; one that is never written (a reference gradient an exact solve does not
    // need) costs no page faults at all.
    bytemuck::allocation::try_zeroed_slice_box(len)
        .ok()
        .map(Vec::from)
}

/// A copy of `x`, or `None` as for [`try_zeros`]. Written once, on every core for a long
/// vector (no zeros first).
pub(crate) fn try_copy(x: &[f64]) -> Option<Vec<f64>> {
    try_filled(x.len(), |values| {
        if x.len() < PARALLEL_MIN_LEN {
            values.extend_from_slice(x);
        } else {
            values.par_extend(x.par_iter().copied());
        }
    })
}

/// An empty vector with room for `len`, filled by `fill`, where memory allows (see
/// [`try_zeros`]). The first write to each page maps it: `fill` writes a long vector on every
/// core, so that it is mapped in parallel rather than by one thread.
fn try_filled(len: usize, fill: impl FnOnce(&mut Vec<f64>)) -> Option<Vec<f64>> {
    fits_in_memory(len)?;
    let mut values = Vec::new();
    values.try_reserve_exact(len).ok()?;
    fill(&mut values);
    debug_assert_eq!(values.len(), len);
    Some(values)
}

/// Requests below this many bytes are not checked: reading the limits (files under /proc and
/// the cgroup's) costs more than making such a vector, and a batch of small fits makes many.
const UNCHECKED_BYTES: usize = 1 << 24;

/// `Some` where `len` f64 fit in the room the tightest memory limit leaves ([`memory_room`]);
/// always for fewer than [`UNCHECKED_BYTES`].
pub(crate) fn fits_in_memory(len: usize) -> Option<()> {
    let bytes = len.checked_mul(size_of::<f64>())?;
    if bytes < UNCHECKED_BYTES {
        return Some(());
    }
    (!available_memory().is_some_and(|available| bytes > available)).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// Short and long vectors (zero-filled serially, and on every core) hold exactly `len`
    /// zeros; a length past memory is `None`, not an abort.
    #[test]
    fn try_zeros_gives_zeros_or_none() {
        for len in [0, 7, PARALLEL_MIN_LEN + 5] {
            let v = try_zeros(len).unwrap();
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x.to_bits() == 0));
        }
        assert!(try_zeros(usize::MAX / 8).is_none());
    }

    /// A copy holds `x`'s bits in order, short (one thread) or long (every core).
    #[test]
    fn try_copy_copies_in_order() {
        for len in [0, 7, PARALLEL_MIN_LEN + 5] {
            let x: Vec<f64> = (0..len).map(|i| (i as f64).sin() - 0.5).collect();
            let copy = try_copy(&x).unwrap();
            assert_eq!(copy.len(), len);
            assert!(copy.iter().zip(&x).all(|(a, b)| a.to_bits() == b.to_bits()));
        }
    }

    #[test]
    fn cholesky_in_parallel_agrees_on_a_large_spd_matrix() {
        let n = PARALLEL_MIN_DIM + 5;
        // Diagonally dominant, hence SPD; flipping one diagonal entry makes it indefinite.
        let mut h = Array2::from_shape_fn((n, n), |(i, j)| if i == j { n as f64 } else { 0.5 });
        assert!(cholesky(h.view()).is_ok());
        h[[n - 1, n - 1]] = -1.0;
        assert!(
            cholesky(h.view())
                .unwrap_err()
                .contains(&format!("pivot {}", n - 1))
        );
    }
}
