//! MINPACK's dense steps for Levenberg–Marquardt, on the `n × n` triangle of a residual pass
//! (`J = Q·R`) instead of the `m × n` Jacobian: the column-pivoted QR of `R` (`qrfac`) is
//! MINPACK's pivoted QR of `J` (orthogonal transformations keep every column norm and every
//! trailing norm the pivoting reads), then the damping `λ` by Moré's safeguarded Newton
//! iteration (`lmpar`) and the damped least-squares solve by Givens rotations (`qrsolv`).
//! Written from the algorithms' descriptions in Moré (1978) and the MINPACK documentation.
//!
//! Matrices are `n × n`, row-major: `a[i * n + j]` is row `i`, column `j`. No step allocates:
//! the caller lends the memory, so a GPU thread runs them as the host does. Every step is
//! generic over its precision ([`Float`]); MINPACK's constants follow from the type's limits.

// The loops index rows and columns of one matrix and its vectors at once, as the algorithms
// are written; iterators over one of them would hide which entry meets which.
#![allow(clippy::needless_range_loop)]

use crate::float::Float;

/// `‖v‖₂`: the root of the squares' sum, as MINPACK's `enorm` sums entries of middling size;
/// scaled by the largest entry where a square would overflow or the sum lose its digits to
/// underflow.
pub fn norm2<F: Float>(v: impl Iterator<Item = F> + Clone) -> F {
    let squares: F = v.clone().map(|x| x * x).sum();
    if squares.is_finite() && squares > F::MIN_POSITIVE / F::EPSILON {
        return squares.sqrt();
    }
    let largest = v.clone().fold(F::ZERO, |m, x| m.max(x.abs()));
    if largest == F::ZERO || !largest.is_finite() {
        return largest;
    }
    largest * v.map(|x| (x / largest) * (x / largest)).sum::<F>().sqrt()
}

/// `‖D·v‖`.
pub fn scaled_norm<F: Float>(diag: &[F], v: &[F]) -> F {
    norm2(diag.iter().zip(v).map(|(&d, &v)| d * v))
}

/// The values of the memory [`PivotedQr::new`] borrows for `n` variables.
pub const fn qr_len(n: usize) -> usize {
    n * n + 6 * n
}

/// The column-pivoted QR of a residual pass's `R`: `R·P = Q₂·S`, where `S` (the upper
/// triangle of `s`) is MINPACK's `R` of `J`, `P` moves column `ipvt[j]` to place `j`, and
/// `qtf = Q₂ᵀ·(Qᵀr)`. The strict lower triangle of `s` is scratch for `qrsolv`.
pub struct PivotedQr<'a, F = f64> {
    s: &'a mut [F],
    ipvt: &'a mut [usize],
    qtf: &'a mut [F],
    /// Five vectors of `n` for the steps' work.
    work: &'a mut [F],
}

impl<'a, F: Float> PivotedQr<'a, F> {
    /// Factors `r` (`n × n`), carrying `qtr` along, in `memory` ([`qr_len`]`(n)` values) and
    /// `ipvt` (`n`). Householder reflections with the column of largest remaining norm first
    /// (the first such column on a tie), norms downdated and recomputed when cancellation has
    /// taken most of their digits, as `qrfac` does.
    #[inline(never)]
    pub fn new(r: &[F], qtr: &[F], memory: &'a mut [F], ipvt: &'a mut [usize]) -> Self {
        let n = qtr.len();
        let (a, rest) = memory[..qr_len(n)].split_at_mut(n * n);
        let (qtf, work) = rest.split_at_mut(n);
        let ipvt = &mut ipvt[..n];
        a.copy_from_slice(&r[..n * n]);
        qtf.copy_from_slice(qtr);
        let column_norm = |a: &[F], j: usize, from: usize| norm2((from..n).map(|i| a[i * n + j]));
        let (rdiag, rest) = work.split_at_mut(n);
        let wa = &mut rest[..n];
        for j in 0..n {
            rdiag[j] = column_norm(a, j, 0);
            wa[j] = rdiag[j];
            ipvt[j] = j;
        }
        for j in 0..n {
            let kmax = (j + 1..n).fold(j, |best, k| if rdiag[k] > rdiag[best] { k } else { best });
            if kmax != j {
                for i in 0..n {
                    a.swap(i * n + j, i * n + kmax);
                }
                rdiag[kmax] = rdiag[j];
                wa[kmax] = wa[j];
                ipvt.swap(j, kmax);
            }
            let mut ajnorm = column_norm(a, j, j);
            if ajnorm != F::ZERO {
                if a[j * n + j] < F::ZERO {
                    ajnorm = -ajnorm;
                }
                for i in j..n {
                    a[i * n + j] /= ajnorm;
                }
                a[j * n + j] += F::ONE;
                for k in j + 1..n {
                    let sum: F = (j..n).map(|i| a[i * n + j] * a[i * n + k]).sum();
                    let temp = sum / a[j * n + j];
                    for i in j..n {
                        a[i * n + k] -= temp * a[i * n + j];
                    }
                    if rdiag[k] != F::ZERO {
                        let ratio = a[j * n + k] / rdiag[k];
                        rdiag[k] *= (F::ONE - ratio * ratio).max(F::ZERO).sqrt();
                        let kept = rdiag[k] / wa[k];
                        if (kept * kept) * 0.05 <= F::EPSILON {
                            rdiag[k] = column_norm(a, k, j + 1);
                            wa[k] = rdiag[k];
                        }
                    }
                }
                // qtf ← (I − v·vᵀ/v_j)·qtf, v the reflection's vector in column j.
                let sum: F = (j..n).map(|i| a[i * n + j] * qtf[i]).sum();
                let temp = -sum / a[j * n + j];
                for i in j..n {
                    qtf[i] += a[i * n + j] * temp;
                }
            }
            rdiag[j] = -ajnorm;
        }
        for j in 0..n {
            a[j * n + j] = rdiag[j];
        }
        PivotedQr {
            s: a,
            ipvt,
            qtf,
            work,
        }
    }

    /// `S·(Pᵀ·p)`'s norm: `‖J·p‖`, with `J·p = Q·Q₂·S·Pᵀp`.
    pub fn jacobian_times_norm(&mut self, p: &[F]) -> F {
        let n = p.len();
        let product = &mut self.work[..n];
        product.fill(F::ZERO);
        for j in 0..n {
            let pj = p[self.ipvt[j]];
            for (i, out) in product.iter_mut().enumerate().take(j + 1) {
                *out += self.s[i * n + j] * pj;
            }
        }
        norm2(product.iter().copied())
    }

    /// MINPACK's gradient test: the largest `|cos|` of the angle between `r` and a column of
    /// `J`, `|(Jᵀr)_l| / (‖J_l‖·‖r‖)`, over the nonzero columns (`column_norms`, by original
    /// index); 0 when `fnorm = 0`.
    pub fn gradient_cosine(&self, column_norms: &[F], fnorm: F) -> F {
        let n = self.qtf.len();
        if fnorm == F::ZERO {
            return F::ZERO;
        }
        let mut gnorm = F::ZERO;
        for j in 0..n {
            let l = self.ipvt[j];
            if column_norms[l] != F::ZERO {
                let sum: F = (0..=j)
                    .map(|i| self.s[i * n + j] * (self.qtf[i] / fnorm))
                    .sum();
                let cosine = (sum / column_norms[l]).abs();
                if cosine.is_nan() {
                    return F::NAN;
                }
                gnorm = gnorm.max(cosine);
            }
        }
        gnorm
    }

    /// MINPACK's `lmpar`: the damping `λ ≥ 0` whose step `p`, the least-squares solution of
    /// `[J; √λ·D]·p ≈ [−r; 0]`, has `‖D·p‖` within 10 % of `delta` (or `λ = 0`, the
    /// Gauss–Newton step, when that step is shorter), by Moré's safeguarded Newton iteration
    /// on `φ(λ) = ‖D·p(λ)‖ − Δ` from the previous `par`, at most 10 steps. A rank-deficient `S`
    /// gets its least-squares Gauss–Newton step (the trailing components zero). Writes `p`
    /// into `step` and returns `λ`.
    pub fn lmpar(&mut self, diag: &[F], delta: F, par: F, step: &mut [F]) -> F {
        let par = self.damping(diag, delta, par, step);
        // MINPACK solves with `+qtf`, for `−p`.
        for p in step.iter_mut() {
            *p = -*p;
        }
        par
    }

    /// [`lmpar`](Self::lmpar) with MINPACK's sign: writes `−p`.
    #[inline(never)]
    fn damping(&mut self, diag: &[F], delta: F, par: F, step: &mut [F]) -> F {
        let n = diag.len();
        let (s, ipvt, qtf) = (&mut *self.s, &*self.ipvt, &*self.qtf);
        let (wa1, rest) = self.work.split_at_mut(n);
        let (wa2, rest) = rest.split_at_mut(n);
        let (sdiag, rest) = rest.split_at_mut(n);
        // The Gauss–Newton direction; for a singular S, a least-squares one.
        wa1.copy_from_slice(qtf);
        let nsing = (0..n).find(|&j| s[j * n + j] == F::ZERO).unwrap_or(n);
        wa1[nsing..].fill(F::ZERO);
        for j in (0..nsing).rev() {
            wa1[j] /= s[j * n + j];
            let temp = wa1[j];
            for i in 0..j {
                wa1[i] -= s[i * n + j] * temp;
            }
        }
        for j in 0..n {
            step[ipvt[j]] = wa1[j];
        }
        for j in 0..n {
            wa2[j] = diag[j] * step[j];
        }
        let mut dxnorm = norm2(wa2.iter().copied());
        let mut fp = dxnorm - delta;
        if fp <= delta * 0.1 {
            return F::ZERO;
        }
        // The lower bound parl from the Newton step, when S has full rank.
        let mut parl = F::ZERO;
        if nsing == n {
            for j in 0..n {
                let l = ipvt[j];
                wa1[j] = diag[l] * (wa2[l] / dxnorm);
            }
            for j in 0..n {
                let sum: F = (0..j).map(|i| s[i * n + j] * wa1[i]).sum();
                wa1[j] = (wa1[j] - sum) / s[j * n + j];
            }
            let temp = norm2(wa1.iter().copied());
            parl = fp / delta / temp / temp;
        }
        // The upper bound paru from the scaled gradient.
        for j in 0..n {
            let sum: F = (0..=j).map(|i| s[i * n + j] * qtf[i]).sum();
            wa1[j] = sum / diag[ipvt[j]];
        }
        let gnorm = norm2(wa1.iter().copied());
        let mut paru = gnorm / delta;
        if paru == F::ZERO {
            paru = F::MIN_POSITIVE / delta.min(F::from_f64(0.1));
        }
        let mut par = par.max(parl).min(paru);
        if par == F::ZERO {
            par = gnorm / dxnorm;
        }
        sdiag.fill(F::ZERO);
        for iteration in 1..=10 {
            if par == F::ZERO {
                par = F::MIN_POSITIVE.max(paru * 0.001);
            }
            let root = par.sqrt();
            for (w, &d) in wa1.iter_mut().zip(diag) {
                *w = root * d;
            }
            qrsolv(s, ipvt, qtf, wa1, step, sdiag, rest);
            for ((w, &d), &x) in wa2.iter_mut().zip(diag).zip(&*step) {
                *w = d * x;
            }
            dxnorm = norm2(wa2.iter().copied());
            let previous = fp;
            fp = dxnorm - delta;
            if fp.abs() <= delta * 0.1
                || (parl == F::ZERO && fp <= previous && previous < F::ZERO)
                || iteration == 10
            {
                break;
            }
            // Newton's correction, through the triangle qrsolv left in s's lower part.
            for j in 0..n {
                let l = ipvt[j];
                wa1[j] = diag[l] * (wa2[l] / dxnorm);
            }
            for j in 0..n {
                wa1[j] /= sdiag[j];
                let temp = wa1[j];
                for i in j + 1..n {
                    wa1[i] -= s[i * n + j] * temp;
                }
            }
            let temp = norm2(wa1.iter().copied());
            let parc = fp / delta / temp / temp;
            if fp > F::ZERO {
                parl = parl.max(par);
            } else if fp < F::ZERO {
                paru = paru.min(par);
            }
            par = parl.max(par + parc);
        }
        par
    }
}

/// MINPACK's `qrsolv`: the least-squares solution `x` of `[J; D̂]·x ≈ [r; 0]` (`D̂ = dhat`,
/// diagonal) from `S`, `P` and `qtf`: Givens rotations eliminate `PᵀD̂P` against `S`, leaving
/// the lower-triangular `T` with `TᵀT = SᵀS + PᵀD̂²P` in `s`'s strict lower triangle and
/// `sdiag`; `S`'s upper triangle and diagonal are kept. A singular `T` gets a least-squares
/// solution. As MINPACK, solves with `+qtf`: `x` is minus the step. `work` holds two vectors.
#[inline(never)]
fn qrsolv<F: Float>(
    s: &mut [F],
    ipvt: &[usize],
    qtf: &[F],
    dhat: &[F],
    x: &mut [F],
    sdiag: &mut [F],
    work: &mut [F],
) {
    let n = dhat.len();
    let (diagonal, rest) = work.split_at_mut(n);
    let wa = &mut rest[..n];
    wa.copy_from_slice(qtf);
    for j in 0..n {
        for i in j + 1..n {
            s[i * n + j] = s[j * n + i];
        }
        diagonal[j] = s[j * n + j];
    }
    for j in 0..n {
        let l = ipvt[j];
        if dhat[l] != F::ZERO {
            sdiag[j..].fill(F::ZERO);
            sdiag[j] = dhat[l];
            let mut qtbpj = F::ZERO;
            for k in j..n {
                if sdiag[k] == F::ZERO {
                    continue;
                }
                let skk = s[k * n + k];
                let (sin, cos) = givens(skk, sdiag[k]);
                s[k * n + k] = cos * skk + sin * sdiag[k];
                let temp = cos * wa[k] + sin * qtbpj;
                qtbpj = -sin * wa[k] + cos * qtbpj;
                wa[k] = temp;
                for i in k + 1..n {
                    let temp = cos * s[i * n + k] + sin * sdiag[i];
                    sdiag[i] = -sin * s[i * n + k] + cos * sdiag[i];
                    s[i * n + k] = temp;
                }
            }
        }
        sdiag[j] = s[j * n + j];
        s[j * n + j] = diagonal[j];
    }
    let nsing = (0..n).find(|&j| sdiag[j] == F::ZERO).unwrap_or(n);
    wa[nsing..].fill(F::ZERO);
    for j in (0..nsing).rev() {
        let sum: F = (j + 1..nsing).map(|i| s[i * n + j] * wa[i]).sum();
        wa[j] = (wa[j] - sum) / sdiag[j];
    }
    for j in 0..n {
        x[ipvt[j]] = wa[j];
    }
}

/// The rotation `(sin, cos)` that maps `(a, b)` to `(ρ, 0)`, as MINPACK forms it: from the
/// smaller of `a/b` and `b/a`, so that no square overflows.
#[inline(always)]
fn givens<F: Float>(a: F, b: F) -> (F, F) {
    // `½ / √(¼ + ¼·t²)`, the products in MINPACK's order.
    let half_over = |t: F| F::from_f64(0.5) / (t * 0.25 * t + 0.25).sqrt();
    if a.abs() < b.abs() {
        let cotan = a / b;
        let sin = half_over(cotan);
        (sin, sin * cotan)
    } else {
        let tan = b / a;
        let cos = half_over(tan);
        (cos * tan, cos)
    }
}
