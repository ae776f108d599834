//! A dense quadratic `½xᵀAx − bᵀx` with `A` symmetric, one term per row:
//! `x_k·(½·A_k·x − b_k)`. Data: the `n` columns of `A`, then `b` (so `n + 1` columns of `n`
//! rows). Every term reads all of `x`: this is the dense path's test bed.

use crate::{Data, Num, Real, Strided, Term, Vars, Window};

/// The dense quadratic `½xᵀAx − bᵀx`, one term per row of `A` (see the module doc).
pub struct Quadratic;

/// Row `k` of `A` (column `k`, by symmetry), `b_k`, and `k`.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    a: Strided<'a>,
    b: f64,
    k: usize,
}

impl Term for Quadratic {
    const WINDOW: Window = Window::Dense;
    type Local<'a> = Row<'a>;
    const EVAL_IN_LANES: bool = true;

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        if data.rows() != n || data.cols() != n + 1 {
            Err("quadratic data must be A (n columns of n) followed by b")
        } else {
            Ok(())
        }
    }

    #[inline(always)]
    fn prepare<'a>(k: usize, n: usize, data: Data<'a>) -> Row<'a> {
        Row {
            a: data.col(k),
            b: data.col(n).get(k),
            k,
        }
    }

    fn eval<R: Real>(x: Vars<'_, R>, row: &Row<'_>) -> Num<R> {
        let mut ax = Num::constant(0.0);
        let mut add = |j: usize, a: f64| ax += x[j] * a;
        // f64 side by side (the CPU's data) as a slice, which the compiler vectorizes.
        match row.a.contiguous() {
            Some(a) => a.iter().enumerate().for_each(|(j, &a)| add(j, a)),
            None => row.a.iter().enumerate().for_each(|(j, a)| add(j, a)),
        }
        x[row.k] * (ax * 0.5 - row.b)
    }
}

crate::register_term!(Quadratic, quadratic);
