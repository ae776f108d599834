//! An enzyme's rate against substrate concentration, `v ≈ V·s / (K + s)` (Michaelis–Menten):
//! a nonlinear least-squares fit of `V` and `K`. A residual term: `eval` returns one point's
//! weighted residual `w·(v − V·s/(K + s))`, and `register_residuals!` makes the sum of their
//! squares the objective, so Levenberg–Marquardt (cudamin's `least_squares`) can read the
//! residuals themselves and BFGS can minimize the sum. Its data rows are the fit layout
//! (`s`, `v`, and the weight `w = 1/σ`, 1 for unweighted points), as cudamin's built-in models
//! read theirs: so `my-py` can offer it to Python's `curve_fit` with `sigma`, and its batch
//! kernel to `curve_fit_batch`.

use gpu_kernels::prelude::*;

pub struct MichaelisMenten;

impl Term for MichaelisMenten {
    /// Every point reads both parameters.
    const WINDOW: Window = Window::Dense;
    /// A point's data row: `s`, `v`, then its weight `w`.
    type Local<'a> = Row<'a>;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if n == 2 && data.cols() == 3 {
            Ok(())
        } else {
            Err("MichaelisMenten fits n = 2 parameters (V, K) to data columns s, v and w = 1/σ")
        }
    }

    #[inline(always)]
    fn prepare(k: usize, _n: usize, data: Data<'_>) -> Row<'_> {
        data.row(k)
    }

    fn eval<R: Real>(vk: Vars<'_, R>, point: &Row<'_>) -> Num<R> {
        let (s, v, w) = (point.get(0), point.get(1), point.get(2));
        w * (v - vk[0] * s / (vk[1] + s))
    }
}

register_residuals!(MichaelisMenten, michaelis_menten);
// Many small fits at once (`curve_fit_batch`): the whole Levenberg–Marquardt loop of one fit
// per GPU thread or CPU task. Its name is the registration's with `_batch`.
batch_kernel!(MICHAELIS_MENTEN_BATCH = michaelis_menten_batch(MichaelisMenten));
