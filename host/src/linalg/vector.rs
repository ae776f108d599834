//! Kernels on `n`-vectors (`[f64]`), rayon-parallel for long vectors.
//!
//! Results never depend on thread scheduling: parallel reductions split a vector into a fixed
//! number of blocks and add the block sums in order, so a solve is bitwise reproducible.

use rayon::prelude::*;

/// Below this length a parallel pass costs more in scheduling than it saves.
const PARALLEL_MIN_LEN: usize = 1 << 15;
/// The number of blocks of a parallel reduction (more than any core count we target, so that
/// the work balances).
const REDUCTION_BLOCKS: usize = 64;

/// `aᵀb`.
pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    if a.len() < PARALLEL_MIN_LEN {
        return serial_dot(a, b);
    }
    let block = a.len().div_ceil(REDUCTION_BLOCKS);
    let mut sums = [0.0; REDUCTION_BLOCKS];
    sums.par_iter_mut()
        .zip(a.par_chunks(block).zip(b.par_chunks(block)))
        .for_each(|(sum, (a, b))| *sum = serial_dot(a, b));
    sums.iter().sum()
}

fn serial_dot(a: &[f64], b: &[f64]) -> f64 {
    // Four independent running sums, so that consecutive additions need not wait on each other.
    let mut sums = [0.0; 4];
    let (a4, b4) = (a.chunks_exact(4), b.chunks_exact(4));
    let tail: f64 = a4
        .remainder()
        .iter()
        .zip(b4.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a4.zip(b4) {
        for ((sum, x), y) in sums.iter_mut().zip(x).zip(y) {
            *sum += x * y;
        }
    }
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// `‖v‖₂`.
pub(crate) fn norm2(v: &[f64]) -> f64 {
    dot(v, v).sqrt()
}

/// scipy's `vecnorm(v, ord)`: max `|vᵢ|` for `ord = ∞`, min `|vᵢ|` for `ord = −∞`, else
/// `(Σ|vᵢ|^ord)^(1/ord)`. NaN if any entry is NaN (`f64::max` alone would skip it).
pub(crate) fn norm(v: &[f64], ord: f64) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    let abs = v.iter().map(|x| x.abs());
    if ord == f64::INFINITY {
        abs.fold(0.0, f64::max)
    } else if ord == f64::NEG_INFINITY {
        abs.fold(f64::INFINITY, f64::min)
    } else if ord == 2.0 {
        norm2(v)
    } else {
        abs.map(|a| a.powf(ord)).sum::<f64>().powf(ord.recip())
    }
}

/// `out[i] ← f(a[i], b[i])`.
pub(crate) fn fill_with(out: &mut [f64], a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64 + Sync) {
    debug_assert!(out.len() == a.len() && a.len() == b.len());
    let kernel = |(o, (a, b)): (&mut [f64], (&[f64], &[f64]))| {
        for ((o, &a), &b) in o.iter_mut().zip(a).zip(b) {
            *o = f(a, b);
        }
    };
    if out.len() < PARALLEL_MIN_LEN {
        kernel((out, (a, b)));
    } else {
        let block = out.len().div_ceil(REDUCTION_BLOCKS);
        out.par_chunks_mut(block)
            .zip(a.par_chunks(block).zip(b.par_chunks(block)))
            .for_each(kernel);
    }
}

/// `out[i] ← f(out[i], a[i])`.
pub(crate) fn update_with(out: &mut [f64], a: &[f64], f: impl Fn(f64, f64) -> f64 + Sync) {
    debug_assert_eq!(out.len(), a.len());
    let kernel = |(o, a): (&mut [f64], &[f64])| {
        for (o, &a) in o.iter_mut().zip(a) {
            *o = f(*o, a);
        }
    };
    if out.len() < PARALLEL_MIN_LEN {
        kernel((out, a));
    } else {
        let block = out.len().div_ceil(REDUCTION_BLOCKS);
        out.par_chunks_mut(block)
            .zip(a.par_chunks(block))
            .for_each(kernel);
    }
}

/// `v[i] ← f(v[i])`.
pub(crate) fn map_in_place(v: &mut [f64], f: impl Fn(f64) -> f64 + Sync) {
    let kernel = |v: &mut [f64]| v.iter_mut().for_each(|x| *x = f(*x));
    if v.len() < PARALLEL_MIN_LEN {
        kernel(v);
    } else {
        let block = v.len().div_ceil(REDUCTION_BLOCKS);
        v.par_chunks_mut(block).for_each(kernel);
    }
}

/// The index of the first entry that is NaN or infinite (scanned on every core for long
/// vectors).
pub(crate) fn first_non_finite(v: &[f64]) -> Option<usize> {
    if v.len() < PARALLEL_MIN_LEN {
        v.iter().position(|x| !x.is_finite())
    } else {
        v.par_iter().position_first(|x| !x.is_finite())
    }
}

/// `n` zeros in memory the process has already touched, page by page, on every core. Fresh
/// memory is mapped at its first write, one page fault per page; on the H100 machine (a VM)
/// copying 80 MB into a fresh vector took 85 ms, into a touched one 12 ms. For vectors coming
/// back from the GPU.
#[cfg(feature = "cuda")]
pub(crate) fn touched_zeros(n: usize) -> Vec<f64> {
    let mut v = vec![0.0; n];
    map_in_place(&mut v, |_| 0.0);
    v
}

/// `y ← y + a·x`.
pub(crate) fn axpy(a: f64, x: &[f64], y: &mut [f64]) {
    update_with(y, x, |y, x| y + a * x);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ramp(n: usize, scale: f64) -> Vec<f64> {
        (0..n).map(|i| scale * ((i % 17) as f64 - 8.0)).collect()
    }

    #[test]
    fn dot_agrees_with_the_naive_sum_serially_and_in_parallel() {
        for n in [0, 3, 4, 1001, PARALLEL_MIN_LEN + 7] {
            let (a, b) = (ramp(n, 0.5), ramp(n, -0.25));
            let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert!(
                (dot(&a, &b) - naive).abs() <= 1e-12 * naive.abs().max(1.0),
                "n = {n}"
            );
        }
    }

    #[test]
    fn norms_follow_scipy_vecnorm() {
        let v = [3.0, -4.0, 0.5];
        assert_eq!(norm(&v, f64::INFINITY), 4.0);
        assert_eq!(norm(&v, f64::NEG_INFINITY), 0.5);
        assert!((norm(&v, 2.0) - 25.25f64.sqrt()).abs() < 1e-15);
        assert!((norm(&v, 1.0) - 7.5).abs() < 1e-15);
        assert!((norm(&v, 3.0) - (27.0f64 + 64.0 + 0.125).cbrt()).abs() < 1e-13);
        assert!(norm(&[1.0, f64::NAN], f64::INFINITY).is_nan());
    }

    #[test]
    fn elementwise_kernels_cover_every_entry_in_parallel() {
        let n = PARALLEL_MIN_LEN * 2 + 3;
        let (a, b) = (ramp(n, 1.0), ramp(n, 2.0));
        let mut out = vec![0.0; n];
        fill_with(&mut out, &a, &b, |a, b| a + b);
        assert!(out.iter().zip(&a).all(|(o, a)| *o == 3.0 * a));
        axpy(-3.0, &a, &mut out);
        assert!(out.iter().all(|&o| o == 0.0));
        map_in_place(&mut out, |x| x + 1.0);
        assert!(out.iter().all(|&o| o == 1.0));
    }
}
