//! Robust losses for least squares, with scipy's definitions (`least_squares(loss=…,
//! f_scale=…)`): the cost is `½·Σ C²·ρ(r_k²/C²)` (`C = f_scale`), and each point's residual and
//! Jacobian row are rescaled so that Gauss–Newton on the rescaled rows is Gauss–Newton on that
//! cost, the way scipy applies a loss: `J_k ← √s·J_k`, `r_k ← ρ'·r_k/√s`, with
//! `s = max(ρ' + 2ρ''·z, ε)` at `z = r_k²/C²`. Rescaling is per row, so it happens in the pass
//! that makes the rows, and `J` is still never stored.

/// `ρ(z)` of a robust loss, `z` the squared residual over `C²`. The kinds are defined here once
/// ([`Loss::ALL`], names and `ρ` below); everything else derives from this table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Loss {
    /// `ρ(z) = z`: ordinary least squares.
    #[default]
    Linear,
    /// `ρ(z) = 2(√(1 + z) − 1)`: a smooth approximation of the absolute value (L1) for large
    /// residuals.
    SoftL1,
    /// `ρ(z) = z` for `z ≤ 1`, `2√z − 1` above: quadratic for small residuals, linear for large.
    Huber,
    /// `ρ(z) = ln(1 + z)`: grows logarithmically; outliers weigh little.
    Cauchy,
    /// `ρ(z) = arctan(z)`: bounded; an outlier's cost is at most `π/2·C²`.
    Arctan,
}

impl Loss {
    /// Every loss, in scipy's order.
    pub const ALL: [Loss; 5] = [
        Loss::Linear,
        Loss::SoftL1,
        Loss::Huber,
        Loss::Cauchy,
        Loss::Arctan,
    ];

    /// scipy's name (`loss='soft_l1'`).
    pub const fn name(self) -> &'static str {
        match self {
            Loss::Linear => "linear",
            Loss::SoftL1 => "soft_l1",
            Loss::Huber => "huber",
            Loss::Cauchy => "cauchy",
            Loss::Arctan => "arctan",
        }
    }

    /// `ρ` in a line, for a command line's help.
    pub const fn help(self) -> &'static str {
        match self {
            Loss::Linear => "ρ(z) = z: least squares",
            Loss::SoftL1 => "ρ(z) = 2(√(1+z) − 1): smooth L1",
            Loss::Huber => "ρ(z) = z up to 1, then 2√z − 1",
            Loss::Cauchy => "ρ(z) = ln(1 + z)",
            Loss::Arctan => "ρ(z) = arctan(z): bounded",
        }
    }

    /// The loss named `name` (scipy's names), if any.
    pub fn from_name(name: &str) -> Option<Loss> {
        Loss::ALL.into_iter().find(|loss| loss.name() == name)
    }

    /// The loss's place in [`Loss::ALL`]: how a kernel argument names it.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The loss at `index` in [`Loss::ALL`] ([`index`](Loss::index) round trips); the linear
    /// loss past the end.
    pub fn from_index(index: usize) -> Loss {
        Loss::ALL.get(index).copied().unwrap_or_default()
    }

    /// `(ρ(z), ρ'(z), ρ''(z))` for `z ≥ 0`.
    #[inline(always)]
    pub fn rho(self, z: f64) -> (f64, f64, f64) {
        match self {
            Loss::Linear => (z, 1.0, 0.0),
            Loss::SoftL1 => {
                let t = 1.0 + z;
                let root = crate::math::sqrt(t);
                (2.0 * (root - 1.0), 1.0 / root, -0.5 / (t * root))
            }
            Loss::Huber if z <= 1.0 => (z, 1.0, 0.0),
            Loss::Huber => {
                let root = crate::math::sqrt(z);
                (2.0 * root - 1.0, 1.0 / root, -0.5 / (z * root))
            }
            Loss::Cauchy => {
                let t = 1.0 + z;
                (crate::math::ln_1p(z), 1.0 / t, -1.0 / (t * t))
            }
            Loss::Arctan => {
                let t = 1.0 + z * z;
                (crate::math::atan(z), 1.0 / t, -2.0 * z / (t * t))
            }
        }
    }
}

/// A loss with its scale `C` (scipy's `f_scale`): residuals below `C` count as inliers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RobustLoss {
    /// `ρ`.
    pub loss: Loss,
    /// `C > 0`.
    pub f_scale: f64,
}

impl Default for RobustLoss {
    fn default() -> Self {
        RobustLoss {
            loss: Loss::Linear,
            f_scale: 1.0,
        }
    }
}

impl RobustLoss {
    /// Whether this is ordinary least squares (any `C`: `C²·ρ(r²/C²) = r²`).
    pub fn is_linear(self) -> bool {
        self.loss == Loss::Linear
    }

    /// A point's cost times two, `C²·ρ(r²/C²)` (`r²` for the linear loss).
    #[inline(always)]
    pub fn cost(self, r: f64) -> f64 {
        let c2 = self.f_scale * self.f_scale;
        c2 * self.loss.rho(r * r / c2).0
    }

    /// Rescales a point's Jacobian `row` in place as scipy does (see the module doc) and
    /// returns its rescaled residual and its cost times two, `C²·ρ(r²/C²)`.
    #[inline(always)]
    pub fn rescale(self, r: f64, row: &mut [f64]) -> (f64, f64) {
        if self.is_linear() {
            return (r, r * r);
        }
        let c2 = self.f_scale * self.f_scale;
        let z = r * r / c2;
        let (rho, d1, d2) = self.loss.rho(z);
        let scale = crate::math::sqrt((d1 + 2.0 * d2 * z).max(f64::EPSILON));
        for entry in row.iter_mut() {
            *entry *= scale;
        }
        (r * d1 / scale, c2 * rho)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derivatives_are_those_of_rho() {
        for loss in Loss::ALL {
            for z in [0.1, 0.7, 1.5, 4.0, 30.0] {
                let h = 1e-6 * z;
                let (_, d1, d2) = loss.rho(z);
                let (up, d1_up, _) = loss.rho(z + h);
                let (down, d1_down, _) = loss.rho(z - h);
                let first = (up - down) / (2.0 * h);
                let second = (d1_up - d1_down) / (2.0 * h);
                assert!(
                    (first - d1).abs() <= 1e-7 * d1.abs().max(1e-3),
                    "{loss:?} ρ' at {z}"
                );
                assert!(
                    (second - d2).abs() <= 1e-6 * d2.abs().max(1e-3),
                    "{loss:?} ρ'' at {z}"
                );
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for loss in Loss::ALL {
            assert_eq!(Loss::from_name(loss.name()), Some(loss));
        }
        assert_eq!(Loss::from_name("l2"), None);
        for loss in Loss::ALL {
            assert_eq!(Loss::from_index(loss.index()), loss);
        }
    }
}
