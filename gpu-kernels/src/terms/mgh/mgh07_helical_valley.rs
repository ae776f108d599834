//! MGH 7, helical valley: `n = 3`, `m = 3`.
//! `f₁ = 10(x₃ − 10θ(x₁, x₂))`, `f₂ = 10(√(x₁² + x₂²) − 1)`, `f₃ = x₃`, where `θ` is the angle
//! of `(x₁, x₂)` in turns: `arctan(x₂/x₁)/2π`, plus ½ when `x₁ < 0`.

use crate::least_squares::{Residuals, exactly};
use crate::{Num, Real, Vars};

/// MGH 7, helical valley: see the module doc.
pub struct Mgh07;

/// `θ(x₁, x₂)`. The paper leaves `x₁ = 0` undefined; like MINPACK, take the limit from
/// `x₁ > 0`: ±¼ by the sign of `x₂`.
fn turns<R: Real>(x1: Num<R>, x2: Num<R>) -> Num<R> {
    let principal = || (x2 / x1).atan() * (0.5 / core::f64::consts::PI);
    if x1.value() > 0.0 {
        principal()
    } else if x1.value() < 0.0 {
        principal() + 0.5
    } else {
        Num::constant(if x2.value() < 0.0 { -0.25 } else { 0.25 })
    }
}

impl Residuals for Mgh07 {
    fn count(_n: usize) -> usize {
        3
    }

    fn check(n: usize) -> Result<(), &'static str> {
        exactly(n, 3)
    }

    fn residual<R: Real>(i: usize, x: Vars<'_, R>) -> Num<R> {
        match i {
            0 => (x[2] - turns(x[0], x[1]) * 10.0) * 10.0,
            1 => ((x[0].sq() + x[1].sq()).sqrt() - 1.0) * 10.0,
            _ => x[2],
        }
    }
}

crate::register_residuals!(by_index Mgh07, mgh07);
