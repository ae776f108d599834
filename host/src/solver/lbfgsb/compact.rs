//! L-BFGS-B's compact form of the quasi-Newton matrix, `B = θI − W·M·Wᵀ`, over the pairs of
//! the memory L-BFGS keeps too, and the subspace step's correction solved with it.

use crate::linalg::{self, vector};
use crate::objective::EvalError;
use crate::solver::memory::Memory;
use crate::space::VectorSpace;
use ndarray::ArrayView2;

/// `[Yᵀv, Sᵀv]` for the pairs of `memory`, in one pass (kept nowhere, unlike
/// [`Memory::pairs_dot`]'s).
pub(super) fn pairs_with<S: VectorSpace>(
    space: &mut S,
    memory: &Memory<S::Vector>,
    v: &S::Vector,
) -> Result<Vec<f64>, EvalError> {
    let columns: Vec<&S::Vector> = memory.columns().collect();
    let mut out = vec![0.0; columns.len()];
    space.dots(&columns, &[v], &mut out)?;
    Ok(out)
}

/// The compact form of one iteration: `B = θI − W·M·Wᵀ`, `W`'s rows on demand and `M`, the
/// inverse of the middle matrix `[[−D, Lᵀ], [L, θ·SᵀS]]` (`D` the diagonal of `SᵀY`, `L` its
/// strict lower triangle), held as the Cholesky factor of `T = θ·SᵀS + L·D⁻¹·Lᵀ` (Byrd, Lu,
/// Nocedal & Zhu, §4; the Fortran's `formt`), never inverted.
pub(super) struct Compact<'m, V> {
    pub(super) memory: &'m Memory<V>,
    /// The Cholesky factor of `T = θ·SᵀS + L·D⁻¹·Lᵀ`, `k × k` by rows.
    t_factor: Vec<f64>,
}

impl<'m, V> Compact<'m, V> {
    /// The compact form of `memory`'s pairs; `None` where `T` is not numerically positive
    /// definite: the memory is to be refreshed, as the Fortran code does.
    pub(super) fn new(memory: &'m Memory<V>) -> Option<Self> {
        let k = memory.len();
        let t: Vec<f64> = (0..k * k)
            .map(|at| {
                let (i, j) = (at / k, at % k);
                let l_d_lt: f64 = (0..i.min(j))
                    .map(|m| memory.sy(i, m) * memory.sy(j, m) / memory.sy(m, m))
                    .sum();
                memory.theta() * memory.ss(i, j) + l_d_lt
            })
            .collect();
        let t = ArrayView2::from_shape((k, k), &t).ok()?;
        Some(Compact {
            memory,
            t_factor: linalg::cholesky(t).ok()?,
        })
    }

    /// `2k`.
    pub(super) fn width(&self) -> usize {
        2 * self.memory.len()
    }

    pub(super) fn theta(&self) -> f64 {
        self.memory.theta()
    }

    /// `W`'s column `j` over the pair vector it is made of ([`Memory::columns`]): 1 for a `y`,
    /// `θ` for an `s`.
    pub(super) fn column_scale(&self, j: usize) -> f64 {
        if j < self.memory.len() {
            1.0
        } else {
            self.theta()
        }
    }

    /// `W`'s columns scaled by `coefficients` (`2k`): `(cⱼ, yⱼ)`, then `(θ·c_{k+j}, sⱼ)`, so
    /// that `Σ cᵢ·vᵢ` over them is `W·coefficients`.
    pub(super) fn columns<'c>(
        &'c self,
        coefficients: &'c [f64],
    ) -> impl Iterator<Item = (f64, &'c V)> {
        let pairs = self.memory.columns().zip(coefficients).enumerate();
        pairs.map(|(j, (v, &c))| (self.column_scale(j) * c, v))
    }

    /// `Wᵀv` (`2k`): `[yⱼᵀv …, θ·sⱼᵀv …]`, in one pass.
    pub(super) fn w_transpose<S: VectorSpace<Vector = V>>(
        &self,
        space: &mut S,
        v: &V,
    ) -> Result<Vec<f64>, EvalError> {
        Ok(self.w_products(&pairs_with(space, self.memory, v)?))
    }

    /// `Wᵀg` for the current gradient `g`: from the products the newest pair's pass took with
    /// it, where it took them for this point.
    pub(super) fn w_gradient<S: VectorSpace<Vector = V>>(
        &self,
        space: &mut S,
        g: &V,
    ) -> Result<Vec<f64>, EvalError> {
        match self.memory.known_pairs_dot() {
            Some(known) => Ok(self.w_products(known)),
            None => self.w_transpose(space, g),
        }
    }

    /// `Wᵀv` from `[Yᵀv, Sᵀv]` as a pair's pass made them (`2k`).
    pub(super) fn w_products(&self, products: &[f64]) -> Vec<f64> {
        let scaled = products.iter().enumerate();
        scaled.map(|(j, p)| p * self.column_scale(j)).collect()
    }

    /// `WᵀW = [[YᵀY, θ·YᵀS], [θ·SᵀY, θ²·SᵀS]]`, `2k × 2k`, from the kept products.
    pub(super) fn gram(&self) -> Vec<f64> {
        let width = self.width();
        let mut gram = self.memory.pair_gram();
        for (at, entry) in gram.iter_mut().enumerate() {
            *entry *= self.column_scale(at / width) * self.column_scale(at % width);
        }
        gram
    }

    /// `M·v`: `[a; b]` solving `[[−D, Lᵀ], [L, θ·SᵀS]]·[a; b] = v`, by block elimination:
    /// `b = T⁻¹·(v₂ + L·D⁻¹·v₁)`, `a = D⁻¹·(Lᵀ·b − v₁)` (the Fortran's `bmv`).
    pub(super) fn m_times(&self, v: &[f64]) -> Vec<f64> {
        let memory = self.memory;
        let k = memory.len();
        let (v1, v2) = v.split_at(k);
        let sy = |i: usize, j: usize| memory.sy(i, j);
        let mut b: Vec<f64> = (0..k)
            .map(|i| v2[i] + (0..i).map(|j| sy(i, j) * v1[j] / sy(j, j)).sum::<f64>())
            .collect();
        linalg::cholesky_solve(&self.t_factor, &mut b);
        let mut ab: Vec<f64> = (0..k)
            .map(|i| ((i + 1..k).map(|j| sy(j, i) * b[j]).sum::<f64>() - v1[i]) / sy(i, i))
            .collect();
        ab.extend(b);
        ab
    }
}

/// The coefficients `v` of the subspace step's correction: `d = −r/θ − W·v` over the free
/// variables, `v = K⁻¹·WᵀZ·r/θ²`, `K = [[−D, Lᵀ], [L, θ·SᵀS]] − WᵀZ·ZᵀW/θ` (Sherman–Morrison–
/// Woodbury on the reduced model, with the middle matrix itself rather than its inverse), from
/// `wz_r = WᵀZ·r`, `free_gram = WᵀZ·ZᵀW` and `bound_gram = WᵀA·AᵀW` (`A` the variables at a
/// bound). `K` is solved as the Fortran's `formk` factors it: its leading block is `−P`,
/// `P = D + YᵀZ·ZᵀY/θ` positive definite, and the Schur complement
/// `θ·SᵀA·AᵀS + Cᵀ·P⁻¹·C` (`C` the off-diagonal block) is positive definite too, so two
/// Cholesky factorizations, where forming `I − M·WᵀZ·ZᵀW/θ` from an inverted middle matrix
/// lost every digit on a badly scaled problem. `None` where either is not numerically positive
/// definite (the memory is to be refreshed).
pub(super) fn correction<V>(
    compact: &Compact<'_, V>,
    wz_r: &[f64],
    free_gram: &[f64],
    bound_gram: &[f64],
) -> Option<Vec<f64>> {
    let memory = compact.memory;
    let (k, theta) = (memory.len(), compact.theta());
    let width = 2 * k;
    let free = |a: usize, b: usize| free_gram[a * width + b] / theta;
    let sy = |i: usize, j: usize| memory.sy(i, j);
    let square = |f: &dyn Fn(usize, usize) -> f64| -> Vec<f64> {
        (0..k * k).map(|at| f(at / k, at % k)).collect()
    };
    let factor = |m: Vec<f64>| {
        let view = ArrayView2::from_shape((k, k), &m).ok()?;
        linalg::cholesky(view).ok()
    };
    // P = D + YᵀZ·ZᵀY/θ; C = Lᵀ − YᵀZ·ZᵀS (W's S half is θS); the last block θ·SᵀA·AᵀS.
    let p_factor = factor(square(&|i, j| {
        free(i, j) + if i == j { sy(i, i) } else { 0.0 }
    }))?;
    let c = square(&|i, j| if j > i { sy(j, i) } else { 0.0 } - free(i, k + j));
    // P⁻¹·C, a column at a time.
    let mut p_inv_c = vec![0.0; k * k];
    for j in 0..k {
        let mut column: Vec<f64> = (0..k).map(|i| c[i * k + j]).collect();
        linalg::cholesky_solve(&p_factor, &mut column);
        for (i, value) in column.into_iter().enumerate() {
            p_inv_c[i * k + j] = value;
        }
    }
    let schur = square(&|i, j| {
        bound_gram[(k + i) * width + k + j] / theta
            + (0..k)
                .map(|m| c[m * k + i] * p_inv_c[m * k + j])
                .sum::<f64>()
    });
    let schur_factor = factor(schur)?;
    // K·[a; b] = [r₁; r₂]: b = Schur⁻¹·(r₂ + Cᵀ·P⁻¹·r₁), a = P⁻¹·(C·b − r₁).
    let scale = theta * theta;
    let (r1, r2): (Vec<f64>, Vec<f64>) = (
        wz_r[..k].iter().map(|r| r / scale).collect(),
        wz_r[k..].iter().map(|r| r / scale).collect(),
    );
    let mut p_inv_r1 = r1.clone();
    linalg::cholesky_solve(&p_factor, &mut p_inv_r1);
    let mut b: Vec<f64> = (0..k)
        .map(|i| r2[i] + (0..k).map(|m| c[m * k + i] * p_inv_r1[m]).sum::<f64>())
        .collect();
    linalg::cholesky_solve(&schur_factor, &mut b);
    let mut a: Vec<f64> = (0..k)
        .map(|i| vector::dot(&c[i * k..(i + 1) * k], &b) - r1[i])
        .collect();
    linalg::cholesky_solve(&p_factor, &mut a);
    Some(a.into_iter().chain(b).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solver::memory::{Pair, PairProducts};
    use crate::space::HostVectors;

    /// The middle matrix `[[−D, Lᵀ], [L, θ·SᵀS]]` of `memory`, `2k × 2k` by rows.
    fn middle(memory: &Memory<Vec<f64>>) -> Vec<f64> {
        let k = memory.len();
        let width = 2 * k;
        let mut middle = vec![0.0; width * width];
        for i in 0..k {
            for j in 0..k {
                middle[i * width + j] = if i == j { -memory.sy(i, i) } else { 0.0 };
                middle[i * width + k + j] = if j > i { memory.sy(j, i) } else { 0.0 };
                middle[(k + i) * width + j] = if i > j { memory.sy(i, j) } else { 0.0 };
                middle[(k + i) * width + k + j] = memory.theta() * memory.ss(i, j);
            }
        }
        middle
    }

    /// Row `i` of `W = [Y  θS]` into `w`.
    fn w_row(compact: &Compact<'_, Vec<f64>>, i: usize, w: &mut [f64]) {
        let memory = compact.memory;
        let k = memory.len();
        for j in 0..k {
            w[j] = memory.y(j)[i];
            w[k + j] = compact.theta() * memory.s(j)[i];
        }
    }

    /// `a·v` for a square `a` by rows.
    fn times(a: &[f64], v: &[f64]) -> Vec<f64> {
        a.chunks(v.len()).map(|row| vector::dot(row, v)).collect()
    }

    /// A memory of `count` pairs `(s, y)` made by `pair(t)`, pushed with every product
    /// taken directly.
    fn memory_of(
        capacity: usize,
        count: usize,
        pair: impl Fn(usize) -> (Vec<f64>, Vec<f64>),
    ) -> Memory<Vec<f64>> {
        let mut memory = Memory::new(capacity);
        for t in 0..count {
            let (s, y) = pair(t);
            let g: Vec<f64> = (0..s.len()).map(|i| (i as f64 * 0.3).cos()).collect();
            let products = PairProducts {
                sy: vector::dot(&s, &y),
                yy: vector::dot(&y, &y),
                ss: vector::dot(&s, &s),
                gg: Some(vector::dot(&g, &g)),
            };
            let pair = Pair {
                s,
                y,
                products,
                s_with_held: None,
                g_new: None,
            };
            let mut space = HostVectors::new(g.len());
            memory.push(&mut space, pair, &g, None).unwrap();
        }
        memory
    }

    /// `M·v` solves the middle matrix's system, and the correction `K`'s, on pairs of a
    /// convex quadratic with curvatures spread over six orders of magnitude: each solution
    /// put back into its matrix gives the right-hand side to 1e-9 of the terms' size.
    #[test]
    fn the_compact_forms_solves_hold() {
        let n = 40;
        let curvature: Vec<f64> = (0..n)
            .map(|i| 10f64.powf(6.0 * i as f64 / n as f64))
            .collect();
        let memory = memory_of(5, 7, |pair| {
            let s: Vec<f64> = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.61).sin())
                .collect();
            let y = s.iter().zip(&curvature).map(|(s, c)| s * c).collect();
            (s, y)
        });
        let compact = Compact::new(&memory).expect("positive definite");
        let (width, theta) = (compact.width(), compact.theta());
        let middle = middle(&memory);
        let v: Vec<f64> = (0..width).map(|i| (i as f64 * 1.7).sin()).collect();
        let back = times(&middle, &compact.m_times(&v));
        for (b, v) in back.iter().zip(&v) {
            assert!((b - v).abs() <= 1e-9, "M·v: {b} vs {v}");
        }
        // Every third variable at a bound.
        let mut free_gram = vec![0.0; width * width];
        let mut bound_gram = vec![0.0; width * width];
        let mut row = vec![0.0; width];
        for i in 0..n {
            w_row(&compact, i, &mut row);
            let gram = if i % 3 == 0 {
                &mut bound_gram
            } else {
                &mut free_gram
            };
            for a in 0..width {
                for b in 0..width {
                    gram[a * width + b] += row[a] * row[b];
                }
            }
        }
        let correction = correction(&compact, &v, &free_gram, &bound_gram).unwrap();
        let k_matrix: Vec<f64> = (middle.iter().zip(&free_gram))
            .map(|(m, f)| m - f / theta)
            .collect();
        let back = times(&k_matrix, &correction);
        let abs = |v: &[f64]| v.iter().map(|v| v.abs()).collect::<Vec<f64>>();
        let size = times(&abs(&k_matrix), &abs(&correction));
        for ((b, v), size) in back.iter().zip(&v).zip(&size) {
            let expected = v / (theta * theta);
            assert!(
                (b - expected).abs() <= 1e-9 * size,
                "K·v: {b} vs {expected}"
            );
        }
    }

    /// `gram`, from the kept products, is `WᵀW` summed over `W`'s rows, past a dropped pair.
    #[test]
    fn the_gram_matrix_is_w_transpose_w() {
        let n = 37;
        let memory = memory_of(4, 9, |pair| {
            let s = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.37).sin())
                .collect();
            let y = (0..n)
                .map(|i| ((pair * n + i) as f64 * 0.11).cos() + 2.0)
                .collect();
            (s, y)
        });
        // Pairs of any sign: the Gram matrix needs no factor.
        let compact = Compact {
            memory: &memory,
            t_factor: Vec::new(),
        };
        let (gram, width) = (compact.gram(), compact.width());
        let mut row = vec![0.0; width];
        let mut from_rows = vec![0.0; width * width];
        for i in 0..n {
            w_row(&compact, i, &mut row);
            for p in 0..width {
                for q in 0..width {
                    from_rows[p * width + q] += row[p] * row[q];
                }
            }
        }
        for (x, y) in gram.iter().zip(&from_rows) {
            assert!((x - y).abs() <= 1e-12 * x.abs().max(1.0), "{x} vs {y}");
        }
    }
}
