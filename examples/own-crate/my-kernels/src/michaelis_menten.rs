//! An enzyme's rate against substrate concentration, `v ≈ V·s / (K + s)` (Michaelis–Menten):
//! a nonlinear least-squares fit of `V` and `K`. A residual term: `eval` returns one point's
//! residual `v − V·s/(K + s)`, and `register_residuals!` makes the sum of their squares the
//! objective, so Levenberg–Marquardt (cudamin's `least_squares`) can read the residuals
//! themselves and BFGS can minimize the sum.

use gpu_kernels::prelude::*;

pub struct MichaelisMenten;

impl Term for MichaelisMenten {
    /// Every point reads both parameters.
    const WINDOW: Window = Window::Dense;
    /// A point's data row: `s`, then `v`.
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n == 2 && data.cols() == 2 {
            Ok(())
        } else {
            Err("MichaelisMenten fits n = 2 parameters (V, K) to data columns s and v")
        }
    }

    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(vk: Vars<'_, R>, point: &Row<'_>) -> Num<R> {
        let (s, v) = (point.get(0), point.get(1));
        v - vk[0] * s / (vk[1] + s)
    }
}

register_residuals!(MichaelisMenten, michaelis_menten);
