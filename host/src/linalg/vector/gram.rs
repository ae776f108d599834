//! The Gram matrix of the rows a mask keeps, which L-BFGS-B's subspace step reads.

use super::{PARALLEL_MIN_LEN, REDUCTION_BLOCKS, serial_dots, sum_blocks};
use rayon::prelude::*;
use std::ops::Range;

/// The kept rows [`masked_gram`] packs at a time: their tile stays in the core's cache.
pub(super) const GRAM_TILE: usize = 512;

/// `wᵢ = [c₀·v₀[i], c₁·v₁[i], …]` for `columns = [(c₀, v₀), …]` and `uᵢ = Σ aₜ·uₜ[i]` over
/// `u = [(a₀, u₀), …]` (formed as [`combine_block`](super::combine_block) forms an entry), `Σ wᵢ·wᵢᵀ` (`w × w`, row-major,
/// `w = columns.len()`, symmetric to the bit) and `Σ uᵢ·wᵢ`. The kept rows are packed into
/// tiles of [`GRAM_TILE`] and each tile's sums taken as [`dots`](super::dots) takes them, on vector lanes
/// rather than row by row; the tiles' sums are added in
/// order, and long vectors sum [`REDUCTION_BLOCKS`](super::REDUCTION_BLOCKS) fixed blocks on every core, added in order,
/// so the result does not depend on the thread count. The work is in the kept rows alone.
pub(crate) fn masked_gram(
    columns: &[(f64, &[f64])],
    mask: &[bool],
    keep: bool,
    u: &[(f64, &[f64])],
) -> (Vec<f64>, Vec<f64>) {
    let width = columns.len();
    debug_assert!(columns.iter().chain(u).all(|(_, v)| v.len() == mask.len()));
    // The tile holds the kept rows' `w` by column, then their `u`.
    let sums_over = |rows: Range<usize>| {
        let mut sums = vec![0.0; width * (width + 1)];
        let mut tile = vec![0.0; (width + 1) * GRAM_TILE];
        let mut filled = 0;
        let flush = |tile: &[f64], filled: usize, sums: &mut [f64]| {
            let packed: Vec<&[f64]> = (tile.chunks_exact(GRAM_TILE))
                .map(|column| &column[..filled])
                .collect();
            let products = serial_dots(&packed[..width], &packed);
            for (sum, product) in sums.iter_mut().zip(products) {
                *sum += product;
            }
        };
        for i in rows.filter(|&i| mask[i] == keep) {
            for (column, (c, v)) in tile.chunks_exact_mut(GRAM_TILE).zip(columns) {
                column[filled] = c * v[i];
            }
            tile[width * GRAM_TILE + filled] = u.split_first().map_or(0.0, |((a0, u0), rest)| {
                rest.iter().fold(a0 * u0[i], |ui, (a, v)| ui + a * v[i])
            });
            filled += 1;
            if filled == GRAM_TILE {
                flush(&tile, filled, &mut sums);
                filled = 0;
            }
        }
        if filled > 0 {
            flush(&tile, filled, &mut sums);
        }
        sums
    };
    let len = mask.len();
    let sums = if len < PARALLEL_MIN_LEN {
        sums_over(0..len)
    } else {
        let block = len.div_ceil(REDUCTION_BLOCKS);
        let blocks: Vec<Vec<f64>> = (0..len.div_ceil(block))
            .into_par_iter()
            .map(|b| sums_over(b * block..((b + 1) * block).min(len)))
            .collect();
        sum_blocks(blocks)
    };
    // Row `a` of the sums is `wₐ`'s products with every column, then with `u`.
    let gram = (0..width * width)
        .map(|q| sums[(q / width) * (width + 1) + q % width])
        .collect();
    let with_u = (0..width).map(|a| sums[a * (width + 1) + width]).collect();
    (gram, with_u)
}
