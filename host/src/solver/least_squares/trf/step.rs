//! One trust-region step of the trust-region-reflective method, in its scaled variables, as
//! scipy's `trf` takes it with `tr_solver='exact'` (Branch, Coleman & Li 1999): the model, its
//! trust-region minimizer by the SVD, and the choice between that step cut short at the first
//! bound, its reflection off that bound, and the scaled gradient step.
//!
//! scipy takes the SVD of the `(m + n) × n` matrix `[J·D; diag(√c)]` and `Uᵀ[f; 0]`. Here
//! `J = Q·R` ([`Factor`]): `[R·D; diag(√c)]` has the same singular values and `V`, and
//! `Uᵀ[Qᵀf; 0]` is the same vector, so every number the step needs comes from the `2n × n`
//! matrix.

use crate::backend::Factor;
use crate::linalg::svd::svd;
use crate::linalg::vector::{dot, norm2 as norm};
use crate::solver::bounds::Bounds;

/// The quadratic model of the cost in the scaled variables `p̂` (a step `p = d∘p̂`): its value
/// is `½‖J·D·p̂‖² + ½ p̂ᵀdiag(c)p̂ + ĝᵀp̂`, where `D = diag(d)`, `d = √v∘s` from Coleman and
/// Li's scaling `v` and the variables' scale `s` (`x_scale`), `ĝ = d∘g` and `c = g∘dv∘s` (the
/// scaling's curvature, never negative).
pub(super) struct ScaledModel<'a> {
    /// `R` of `J`, `n × n` row-major.
    r: &'a [f64],
    d: Vec<f64>,
    c: Vec<f64>,
    g_h: Vec<f64>,
    /// The singular values of `[R·D; diag(√c)]`, largest first.
    s: Vec<f64>,
    /// Their right singular vectors, `n × n` row-major, by columns.
    v: Vec<f64>,
    /// `Uᵀ[Qᵀf; 0]`, in the same order.
    uf: Vec<f64>,
    /// The number of residuals (the rank test's scale, as scipy's).
    m: usize,
}

/// What [`ScaledModel::step`] chose: the step, in the variables and scaled, and the reduction
/// of the model it predicts.
pub(super) struct Step {
    pub x: Vec<f64>,
    pub scaled: Vec<f64>,
    pub predicted_reduction: f64,
}

impl<'a> ScaledModel<'a> {
    /// The model at a point whose residual pass gave `factor` and the gradient `g`, with the
    /// scaling `(v, dv)` (`v` already in the scaled variables where `dv ≠ 0`) and the
    /// variables' `scale`; `m` residuals.
    pub fn new(
        factor: &'a Factor,
        g: &[f64],
        (v, dv): (&[f64], &[f64]),
        scale: &[f64],
        m: usize,
    ) -> Self {
        let n = g.len();
        let r = &factor.r[..];
        let d: Vec<f64> = v.iter().zip(scale).map(|(v, s)| v.sqrt() * s).collect();
        let c: Vec<f64> = (g.iter().zip(dv).zip(scale))
            .map(|((g, dv), s)| g * dv * s)
            .collect();
        let g_h = g.iter().zip(&d).map(|(g, d)| g * d).collect();
        let mut augmented = vec![0.0; 2 * n * n];
        for i in 0..n {
            for j in i..n {
                augmented[i * n + j] = r[i * n + j] * d[j];
            }
            augmented[(n + i) * n + i] = c[i].sqrt();
        }
        let decomposition = svd(&augmented, 2 * n, n);
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| decomposition.values[b].total_cmp(&decomposition.values[a]));
        let s: Vec<f64> = order.iter().map(|&k| decomposition.values[k]).collect();
        let v = (0..n * n)
            .map(|index| decomposition.v[index / n * n + order[index % n]])
            .collect();
        // Uᵀ[Qᵀf; 0]: column k of U·Σ against Qᵀf, over σ_k. Where σ_k = 0 the component
        // never counts (the step uses σ_k·uf_k, and no Gauss–Newton step is taken).
        let uf = (order.iter().zip(&s))
            .map(|(&k, &sigma)| {
                if sigma == 0.0 {
                    return 0.0;
                }
                let column = (0..n).map(|i| decomposition.u_sigma[i * n + k] * factor.qtr[i]);
                column.sum::<f64>() / sigma
            })
            .collect();
        ScaledModel {
            r,
            d,
            c,
            g_h,
            s,
            v,
            uf,
            m,
        }
    }

    /// `d∘p̂`: a scaled step in the variables.
    pub fn unscale(&self, scaled: &[f64]) -> Vec<f64> {
        scaled.iter().zip(&self.d).map(|(p, d)| p * d).collect()
    }

    /// `R·D·p̂` (whose norm is `‖J·D·p̂‖`).
    fn jacobian_times(&self, scaled: &[f64]) -> Vec<f64> {
        let n = scaled.len();
        let p = self.unscale(scaled);
        (0..n)
            .map(|i| (i..n).map(|j| self.r[i * n + j] * p[j]).sum())
            .collect()
    }

    /// The model's value at `p̂` (0 at `p̂ = 0`).
    fn value(&self, scaled: &[f64]) -> f64 {
        let jp = self.jacobian_times(scaled);
        let curvature = dot(&jp, &jp) + weighted_dot(&self.c, scaled, scaled);
        0.5 * curvature + dot(scaled, &self.g_h)
    }

    /// The model along `p̂₀ + t·ŝ` as `a·t² + b·t + c` (`p̂₀ = 0` where `from` is `None`).
    fn along(&self, direction: &[f64], from: Option<&[f64]>) -> (f64, f64, f64) {
        let js = self.jacobian_times(direction);
        let a = 0.5 * (dot(&js, &js) + weighted_dot(&self.c, direction, direction));
        let mut b = dot(&self.g_h, direction);
        let Some(from) = from else {
            return (a, b, 0.0);
        };
        let jf = self.jacobian_times(from);
        b += dot(&jf, &js) + weighted_dot(&self.c, from, direction);
        let c =
            0.5 * dot(&jf, &jf) + dot(&self.g_h, from) + 0.5 * weighted_dot(&self.c, from, from);
        (a, b, c)
    }

    /// The model's minimizer within `‖p̂‖ ≤ Δ`, and the damping `α` that gives it: the
    /// Gauss–Newton step where `J·D` has full rank and the step fits, else `α` found by a
    /// safeguarded Newton iteration on `‖p̂(α)‖ = Δ` (at most 10 steps, to 1 % of `Δ`, from
    /// `alpha`, the last step's), and the step scaled onto the boundary.
    pub fn trust_region_minimizer(&self, delta: f64, alpha: f64) -> (Vec<f64>, f64) {
        let n = self.s.len();
        let s = &self.s;
        let suf: Vec<f64> = s.iter().zip(&self.uf).map(|(s, uf)| s * uf).collect();
        let full_rank = self.m >= n && s[n - 1] > f64::EPSILON * self.m as f64 * s[0];
        if full_rank {
            let step = self.combine(|k| -self.uf[k] / s[k]);
            if norm(&step) <= delta {
                return (step, 0.0);
            }
        }
        let phi_and_derivative = |alpha: f64| {
            let (mut norm_sq, mut slope) = (0.0, 0.0);
            for k in 0..n {
                let denominator = s[k] * s[k] + alpha;
                norm_sq += (suf[k] / denominator).powi(2);
                slope += suf[k] * suf[k] / denominator.powi(3);
            }
            let p_norm = norm_sq.sqrt();
            (p_norm - delta, -slope / p_norm)
        };
        let mut upper = norm(&suf) / delta;
        let mut lower = if full_rank {
            let (phi, phi_prime) = phi_and_derivative(0.0);
            -phi / phi_prime
        } else {
            0.0
        };
        let restart = |lower: f64, upper: f64| (0.001 * upper).max((lower * upper).sqrt());
        let mut alpha = if !full_rank && alpha == 0.0 {
            restart(lower, upper)
        } else {
            alpha
        };
        for _ in 0..10 {
            if alpha < lower || alpha > upper {
                alpha = restart(lower, upper);
            }
            let (phi, phi_prime) = phi_and_derivative(alpha);
            if phi < 0.0 {
                upper = alpha;
            }
            let ratio = phi / phi_prime;
            lower = lower.max(alpha - ratio);
            alpha -= (phi + delta) * ratio / delta;
            if phi.abs() < 0.01 * delta {
                break;
            }
        }
        let mut step = self.combine(|k| -suf[k] / (s[k] * s[k] + alpha));
        let to_boundary = delta / norm(&step);
        step.iter_mut().for_each(|p| *p *= to_boundary);
        (step, alpha)
    }

    /// `Σ_k coefficient(k)·v_k`.
    fn combine(&self, coefficient: impl Fn(usize) -> f64) -> Vec<f64> {
        let n = self.s.len();
        let coefficients: Vec<f64> = (0..n).map(coefficient).collect();
        (0..n)
            .map(|i| dot(&self.v[i * n..(i + 1) * n], &coefficients))
            .collect()
    }

    /// The step from `x` for the trust region `Δ` (`theta` the fraction of the way to a bound
    /// a step may go): the model's minimizer `p̂` where `x + d∘p̂` stays in the box; else the
    /// best of three, by the model: `p̂` cut at its first bound and pulled back by `theta`, its
    /// reflection off that bound (the best point along it, within the trust region and short of
    /// the next bound), and the scaled gradient step.
    pub fn step(
        &self,
        x: &[f64],
        bounds: &Bounds,
        scaled: Vec<f64>,
        delta: f64,
        theta: f64,
    ) -> Step {
        let step = self.unscale(&scaled);
        let at = |step: &[f64]| -> Vec<f64> { x.iter().zip(step).map(|(x, p)| x + p).collect() };
        if bounds.contain(&at(&step)) {
            let predicted_reduction = -self.value(&scaled);
            return Step {
                x: step,
                scaled,
                predicted_reduction,
            };
        }
        let (to_bound, hits) = bounds.step_to_bound(x, &step);
        let mut reflected_h: Vec<f64> = (scaled.iter().zip(&hits))
            .map(|(&p, &hit)| if hit { -p } else { p })
            .collect();
        let reflected = self.unscale(&reflected_h);
        let cut_h: Vec<f64> = scaled.iter().map(|p| p * to_bound).collect();
        let on_bound = at(&self.unscale(&cut_h));
        let (_, to_trust_region) = trust_region_crossings(&cut_h, &reflected_h, delta);
        let (to_next_bound, _) = bounds.step_to_bound(&on_bound, &reflected);
        let stride = to_next_bound.min(to_trust_region);
        let (stride_lower, stride_upper) = if stride > 0.0 {
            let upper = if stride == to_next_bound {
                theta * to_next_bound
            } else {
                to_trust_region
            };
            ((1.0 - theta) * to_bound / stride, upper)
        } else {
            (0.0, -1.0)
        };
        let reflected_value = if stride_lower <= stride_upper {
            let (a, b, c) = self.along(&reflected_h, Some(&cut_h));
            let (t, value) = minimize_quadratic(a, b, c, stride_lower, stride_upper);
            for (r, p) in reflected_h.iter_mut().zip(&cut_h) {
                *r = *r * t + p;
            }
            value
        } else {
            f64::INFINITY
        };
        let cut_h: Vec<f64> = cut_h.iter().map(|p| p * theta).collect();
        let cut_value = self.value(&cut_h);
        let mut gradient_h: Vec<f64> = self.g_h.iter().map(|g| -g).collect();
        let to_trust_region = delta / norm(&gradient_h);
        let (to_bound, _) = bounds.step_to_bound(x, &self.unscale(&gradient_h));
        let longest = if to_bound < to_trust_region {
            theta * to_bound
        } else {
            to_trust_region
        };
        let (a, b, _) = self.along(&gradient_h, None);
        let (t, gradient_value) = minimize_quadratic(a, b, 0.0, 0.0, longest);
        gradient_h.iter_mut().for_each(|g| *g *= t);
        let (scaled, value) = if cut_value < reflected_value && cut_value < gradient_value {
            (cut_h, cut_value)
        } else if reflected_value < cut_value && reflected_value < gradient_value {
            (reflected_h, reflected_value)
        } else {
            (gradient_h, gradient_value)
        };
        Step {
            x: self.unscale(&scaled),
            scaled,
            predicted_reduction: -value,
        }
    }
}

/// Where the line `p + t·s` crosses the sphere `‖·‖ = Δ`, `p` inside it: the two `t`, the
/// smaller first (computed without cancellation).
fn trust_region_crossings(p: &[f64], s: &[f64], delta: f64) -> (f64, f64) {
    let a = dot(s, s);
    let b = dot(p, s);
    // `p` is inside up to rounding; a rounding outside would make the root complex.
    let c = (dot(p, p) - delta * delta).min(0.0);
    let root = (b * b - a * c).sqrt();
    let q = -(b + root.copysign(b));
    let (t1, t2) = (q / a, c / q);
    if t1 < t2 { (t1, t2) } else { (t2, t1) }
}

/// The minimum of `a·t² + b·t + c` over `[lower, upper]`: the point and the value (the first
/// of the ends and the interior extremum that attains it).
fn minimize_quadratic(a: f64, b: f64, c: f64, lower: f64, upper: f64) -> (f64, f64) {
    let mut candidates = vec![lower, upper];
    if a != 0.0 {
        let extremum = -0.5 * b / a;
        if lower < extremum && extremum < upper {
            candidates.push(extremum);
        }
    }
    candidates
        .into_iter()
        .map(|t| (t, t * (a * t + b) + c))
        .fold((f64::NAN, f64::INFINITY), |best, candidate| {
            if candidate.1 < best.1 || best.0.is_nan() {
                candidate
            } else {
                best
            }
        })
}

/// `Σ w_i·a_i·b_i`.
fn weighted_dot(w: &[f64], a: &[f64], b: &[f64]) -> f64 {
    (w.iter().zip(a).zip(b)).map(|((w, a), b)| w * a * b).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_minimum_of_a_quadratic_on_an_interval() {
        // t² − 2t on [0, 3]: the interior minimum t = 1, value −1.
        assert_eq!(minimize_quadratic(1.0, -2.0, 0.0, 0.0, 3.0), (1.0, -1.0));
        // On [2, 3] the lower end; a concave one, −t², at the farther end.
        assert_eq!(minimize_quadratic(1.0, -2.0, 0.0, 2.0, 3.0), (2.0, 0.0));
        assert_eq!(minimize_quadratic(-1.0, 0.0, 5.0, -1.0, 2.0), (2.0, 1.0));
    }

    #[test]
    fn a_line_crosses_the_trust_region_at_both_ends() {
        // From the origin along (1, 0) in the unit circle: −1 and 1. From (0.6, 0) along
        // (0, 1): ±0.8.
        assert_eq!(
            trust_region_crossings(&[0.0, 0.0], &[1.0, 0.0], 1.0),
            (-1.0, 1.0)
        );
        let (t1, t2) = trust_region_crossings(&[0.6, 0.0], &[0.0, 1.0], 1.0);
        assert!((t1 + 0.8).abs() < 1e-15 && (t2 - 0.8).abs() < 1e-15);
    }
}
