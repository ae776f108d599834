//! L-BFGS's first trial in one sweep over its vectors, where the objective evaluates by pieces
//! ([`PieceEvaluator`]); L-BFGS-B's too without bounds, where its step is L-BFGS's.
//!
//! An L-BFGS iteration reads its `2m` stored vectors twice: to form the direction
//! `p = Σ cⱼ·vⱼ`, and, after the line search, to take the new gradient's products with them,
//! which the next direction needs. The two reads cannot share a pass, since the second needs
//! `g₊ = ∇f(x + p)`, which needs all of `p`; unless `f` is a sum of terms that each read one
//! piece of `x` alone. Then one sweep does both for the line search's first trial: piece by
//! piece, it forms `p`, the trial point `x₊ = x + p`, `f` and `g₊` on the piece, and `g₊`'s
//! products with the stored vectors while their piece is still in cache. Where the line search
//! takes that trial (L-BFGS tries the step 1 first, and mostly takes it), the iteration has
//! read the vectors once. Fused, in pieces small enough to stay in cache, this is markedly
//! faster than the two passes (`combine_dot`, `dots`).
//!
//! `p`, `x₊`, `f(x₊)` and `g₊` are the bits of the separate passes (the same combination per
//! entry, `x + 1·p`, and the evaluator's own chunks as pieces); the products are summed piece
//! by piece, so they differ from the separate passes' in the last bits.

use crate::backend::{BackendError, PieceEvaluator};
use crate::error::EvalError;
use crate::linalg::vector;
use rayon::prelude::*;

/// What [`trial_sweep`] measures at the trial point `x₊ = x + p`.
#[derive(Clone, Debug)]
pub(crate) struct TrialSweep {
    /// `f(x₊)`.
    pub value: f64,
    /// `gᵀp`, the slope at `x`.
    pub slope0: f64,
    /// `g₊ᵀp`, the slope at `x₊`.
    pub slope: f64,
    /// `vᵀg₊` for each `v` of the sweep's `with`, in order.
    pub with: Vec<f64>,
    /// `gᵀg₊`.
    pub gradients: f64,
    /// `g₊ᵀg₊`.
    pub gg: f64,
}

/// Piece `index`'s parts of the sweep's outputs, `p`, `x₊` and `g₊`.
struct Piece<'v> {
    index: usize,
    p: &'v mut [f64],
    x_trial: &'v mut [f64],
    g_trial: &'v mut [f64],
}

/// One piece's results: its value, then its products in [`trial_sweep`]'s order.
struct PieceSums {
    value: f64,
    products: Vec<f64>,
}

/// `p ← Σ cᵢ·vᵢ` over `terms` (as `vector::combine_dot` forms it), `x₊ ← x + p`, `f(x₊)` and
/// `g₊ ← ∇f(x₊)` by `pieces`, and the products of `g₊` with each of `with`, `g`, `p` and itself,
/// with `gᵀp`: one sweep, piece by piece. `buffers` are `[p, x₊, g₊]`, overwritten.
pub(crate) fn trial_sweep(
    pieces: &dyn PieceEvaluator,
    terms: &[(f64, &[f64])],
    x: &[f64],
    g: &[f64],
    buffers: [&mut [f64]; 3],
    with: &[&[f64]],
) -> Result<TrialSweep, EvalError> {
    let [p, x_trial, g_trial] = buffers;
    let len = pieces.piece_len().max(1);
    let sweep = |piece: Piece<'_>| {
        let Piece {
            index,
            p,
            x_trial,
            g_trial,
        } = piece;
        let range = index * len..index * len + p.len();
        vector::combine_block(terms, p, range.clone());
        for ((trial, &x), &p) in x_trial.iter_mut().zip(&x[range.clone()]).zip(&*p) {
            *trial = x + p;
        }
        let value = pieces.piece(x_trial, g_trial)?;
        let g = &g[range.clone()];
        let mut vectors = vector::blocks_of(with, range);
        vectors.extend([g, &*p, &*g_trial]);
        let mut products = vector::serial_dots(&vectors, &[&*g_trial]);
        products.push(vector::serial_dot(g, p));
        Ok::<_, BackendError>(PieceSums { value, products })
    };
    let split = (p.chunks_mut(len).zip(x_trial.chunks_mut(len)))
        .zip(g_trial.chunks_mut(len))
        .enumerate()
        .map(|(index, ((p, x_trial), g_trial))| Piece {
            index,
            p,
            x_trial,
            g_trial,
        });
    let sums: Vec<PieceSums> = if x.len() < vector::PARALLEL_MIN_LEN {
        split.map(sweep).collect::<Result<_, _>>()?
    } else {
        let split: Vec<Piece<'_>> = split.collect();
        split.into_par_iter().map(sweep).collect::<Result<_, _>>()?
    };
    let values: Vec<f64> = sums.iter().map(|piece| piece.value).collect();
    let mut products = vector::sum_blocks(sums.into_iter().map(|piece| piece.products).collect());
    let slope0 = products.pop().unwrap_or_default();
    let gg = products.pop().unwrap_or_default();
    let slope = products.pop().unwrap_or_default();
    let gradients = products.pop().unwrap_or_default();
    Ok(TrialSweep {
        value: pieces.total(&values),
        slope0,
        slope,
        with: products,
        gradients,
        gg,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuEvaluator;
    use crate::backend::{Evaluator, Gradient, TermProblem};
    use gpu_kernels::terms::{ExtRosenbrock, SeedExpSum};

    /// The sweep's direction, trial point, value and gradient are the separate passes' bits
    /// (`combine_dot`, `x + 1·p`, `value_and_gradient`); its products agree with `dot`'s to
    /// rounding. Pieces of two variables per group and of one, several of them (in parallel)
    /// with a short last one, and a problem of one piece (on this thread).
    #[test]
    fn a_sweep_is_the_separate_passes() {
        fn check<T: gpu_kernels::Term + gpu_kernels::Kernels + 'static>(n: usize) {
            let mut evaluator = CpuEvaluator::new(TermProblem::<T>::new(n).unwrap());
            let ramp = |a: f64, b: f64| -> Vec<f64> {
                (0..n)
                    .map(|i| a * ((i * 37 % 101) as f64 / 50.0 - 1.0) + b)
                    .collect()
            };
            let (x, g, u, v) = (
                ramp(0.5, 0.2),
                ramp(-1.5, 0.1),
                ramp(0.3, -0.4),
                ramp(2.0, 0.0),
            );
            let terms: Vec<(f64, &[f64])> = vec![(-0.7, &g), (0.25, &u), (-0.125, &v)];
            let with: Vec<&[f64]> = vec![&u, &v];
            let [mut p, mut x_trial, mut g_trial] = [vec![0.0; n], vec![0.0; n], vec![0.0; n]];
            let pieces = evaluator
                .pieces(Gradient::Exact)
                .expect("terms side by side");
            assert!(n > pieces.piece_len() || n < vector::PARALLEL_MIN_LEN);
            let buffers = [&mut p[..], &mut x_trial[..], &mut g_trial[..]];
            let sweep = trial_sweep(pieces, &terms, &x, &g, buffers, &with).unwrap();

            let mut p_alone = vec![0.0; n];
            let slope0 = vector::combine_dot(&terms, &mut p_alone, &g);
            let x_alone: Vec<f64> = x.iter().zip(&p_alone).map(|(x, p)| x + 1.0 * p).collect();
            let mut g_alone = vec![0.0; n];
            let value =
                (evaluator.value_and_gradient(&x_alone, Gradient::Exact, &mut g_alone)).unwrap();
            assert_eq!(p, p_alone);
            assert_eq!(x_trial, x_alone);
            let bits = |v: &[f64]| -> Vec<u64> { v.iter().map(|v| v.to_bits()).collect() };
            assert_eq!(bits(&g_trial), bits(&g_alone));
            assert_eq!(sweep.value.to_bits(), value.to_bits());
            let close = |a: f64, b: f64, what: &str| {
                assert!(
                    (a - b).abs() <= 1e-13 * b.abs().max(1.0),
                    "{what}: {a} vs {b}"
                );
            };
            close(sweep.slope0, slope0, "gᵀp");
            close(sweep.slope, vector::dot(&g_alone, &p_alone), "g₊ᵀp");
            close(sweep.gradients, vector::dot(&g, &g_alone), "gᵀg₊");
            close(sweep.gg, vector::dot(&g_alone, &g_alone), "g₊ᵀg₊");
            for (product, w) in sweep.with.iter().zip(&with) {
                close(*product, vector::dot(w, &g_alone), "vᵀg₊");
            }
        }
        check::<ExtRosenbrock>(5 * 8192 - 1000);
        check::<SeedExpSum>(3 * 4096 + 17);
        check::<ExtRosenbrock>(1000);
    }

    /// Only exact gradients of terms that read their own window alone come in pieces.
    #[test]
    fn only_local_exact_gradients_come_in_pieces() {
        let evaluator = CpuEvaluator::new(TermProblem::<ExtRosenbrock>::new(100).unwrap());
        assert!(evaluator.pieces(Gradient::Exact).is_some());
        assert!(evaluator.pieces(Gradient::Central).is_none());
        let chained = TermProblem::<gpu_kernels::terms::ChainedRosenbrock>::new(100).unwrap();
        assert!(CpuEvaluator::new(chained).pieces(Gradient::Exact).is_none());
    }
}
