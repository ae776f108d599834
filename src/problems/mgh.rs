//! The Moré–Garbow–Hillstrom test problems (ACM TOMS 7(1), 1981) as built-ins `mgh-1` …
//! `mgh-35`: the paper's starting points, its minima (refined where the paper gives 6 digits),
//! and the documented local minima where a descent method legitimately stops.
//! Facts: ../shared/reference/problems.md.

use super::problem::{Instance, LoadError, Problem, Size, load, load_least_squares, repeating};
use cudamin_host::Backend;
use cudamin_host::TermProblem;
use gpu_kernels::terms::mgh::{
    Mgh01, Mgh02, Mgh03, Mgh04, Mgh05, Mgh07, Mgh08, Mgh09, Mgh12, Mgh13, Mgh14, Mgh16, Mgh18,
    Mgh20, Mgh23, Mgh24, Mgh25, Mgh26, Mgh30, Mgh31, Mgh35,
};
use gpu_kernels::terms::{ExtPowell, ExtRosenbrock};
use gpu_kernels::{Kernels, LeastSquares, ResidualKernels, ResidualTerm, Residuals};

/// Sets term `T` up with `n` variables (checked before `x0` is built), the known minimum and the
/// local minima where a descent method may stop.
fn instance<T: Kernels + 'static>(
    backend: &Backend,
    n: usize,
    x0: impl FnOnce(usize) -> Vec<f64>,
    f_star: Option<f64>,
    alternative_minima: &'static [f64],
) -> Result<Instance, LoadError> {
    let problem = TermProblem::<T>::new(n)?;
    Ok(Instance {
        alternative_minima,
        ..load(backend, problem, x0(n), f_star)?
    })
}

/// [`instance`] for the sum of squares of residuals `P`, loaded with its residuals.
fn residuals<P: Residuals + 'static>(
    backend: &Backend,
    n: usize,
    x0: impl FnOnce(usize) -> Vec<f64>,
    f_star: Option<f64>,
    alternative_minima: &'static [f64],
) -> Result<Instance, LoadError>
where
    ResidualTerm<P>: ResidualKernels,
{
    let problem = TermProblem::<LeastSquares<P>>::new(n)?;
    Ok(Instance {
        alternative_minima,
        ..load_least_squares(backend, problem, x0(n), f_star)?
    })
}

pub(super) static PROBLEMS: &[Problem] = &[
    Problem::new("mgh-1", "Rosenbrock (MGH 1)", |backend, Size { n, .. }| {
            residuals::<Mgh01>(backend, n, |_| vec![-1.2, 1.0], Some(0.0), &[])
        })
        .n("n = 2", 2)
        .x0("(-1.2, 1)")
        .f_star("0 at (1, 1)"),
    Problem::new("mgh-2", "Freudenstein and Roth (MGH 2)", |backend, Size { n, .. }| {
            residuals::<Mgh02>(
                backend,
                n,
                |_| vec![0.5, -2.0],
                Some(0.0),
                &[48.9842536792],
            )
        })
        .n("n = 2", 2)
        .x0("(0.5, -2)")
        .f_star("0 at (5, 4); a local minimum 48.9842536792 near (11.4128, -0.8968), where BFGS from x0 ends"),
    Problem::new("mgh-3", "Powell badly scaled (MGH 3)", |backend, Size { n, .. }| {
            residuals::<Mgh03>(backend, n, |_| vec![0.0, 1.0], Some(0.0), &[])
        })
        .n("n = 2", 2)
        .x0("(0, 1)")
        .f_star("0 at ≈ (1.098159e-5, 9.106147)"),
    Problem::new("mgh-4", "Brown badly scaled (MGH 4)", |backend, Size { n, .. }| {
            residuals::<Mgh04>(backend, n, |_| vec![1.0, 1.0], Some(0.0), &[])
        })
        .n("n = 2", 2)
        .x0("(1, 1)")
        .f_star("0 at (1e6, 2e-6)"),
    Problem::new("mgh-5", "Beale (MGH 5)", |backend, Size { n, .. }| {
            residuals::<Mgh05>(backend, n, |_| vec![1.0, 1.0], Some(0.0), &[])
        })
        .n("n = 2", 2)
        .x0("(1, 1)")
        .f_star("0 at (3, 0.5)"),
    Problem::new("mgh-7", "helical valley (MGH 7)", |backend, Size { n, .. }| {
            residuals::<Mgh07>(backend, n, |_| vec![-1.0, 0.0, 0.0], Some(0.0), &[])
        })
        .n("n = 3", 3)
        .x0("(-1, 0, 0)")
        .f_star("0 at (1, 0, 0)"),
    Problem::new("mgh-8", "Bard (MGH 8)", |backend, Size { n, .. }| {
            residuals::<Mgh08>(
                backend,
                n,
                |_| vec![1.0; 3],
                Some(8.2148773066e-3),
                &[],
            )
        })
        .n("n = 3", 3)
        .x0("(1, 1, 1)")
        .f_star("8.2148773066e-3 at ≈ (0.0824106, 1.1330361, 2.3436952); 17.4286... as x2, x3 -> -inf (asymptotic)"),
    Problem::new("mgh-9", "Gaussian (MGH 9)", |backend, Size { n, .. }| {
            residuals::<Mgh09>(
                backend,
                n,
                |_| vec![0.4, 1.0, 0.0],
                Some(1.1279327696e-8),
                &[],
            )
        })
        .n("n = 3", 3)
        .x0("(0.4, 1, 0)")
        .f_star("1.1279327696e-8 at ≈ (0.3989561, 1.0000191, 0)"),
    Problem::new("mgh-12", "Box three-dimensional (MGH 12)", |backend, Size { n, .. }| {
            residuals::<Mgh12>(backend, n, |_| vec![0.0, 10.0, 20.0], Some(0.0), &[])
        })
        .n("n = 3", 3)
        .x0("(0, 10, 20)")
        .f_star("0 at (1, 10, 1), also at (10, 1, -1) and wherever x1 = x2, x3 = 0"),
    Problem::new("mgh-13", "Powell singular (MGH 13)", |backend, Size { n, .. }| {
            residuals::<Mgh13>(
                backend,
                n,
                |_| vec![3.0, -1.0, 0.0, 1.0],
                Some(0.0),
                &[],
            )
        })
        .n("n = 4", 4)
        .x0("(3, -1, 0, 1)")
        .f_star("0 at the origin (singular Hessian)"),
    Problem::new("mgh-14", "Wood (MGH 14)", |backend, Size { n, .. }| {
            residuals::<Mgh14>(
                backend,
                n,
                |_| vec![-3.0, -1.0, -3.0, -1.0],
                Some(0.0),
                &[],
            )
        })
        .n("n = 4", 4)
        .x0("(-3, -1, -3, -1)")
        .f_star("0 at (1, 1, 1, 1)"),
    Problem::new("mgh-16", "Brown and Dennis (MGH 16)", |backend, Size { n, .. }| {
            residuals::<Mgh16>(
                backend,
                n,
                |_| vec![25.0, 5.0, -5.0, -1.0],
                Some(8.5822201626e4),
                &[],
            )
        })
        .n("n = 4", 4)
        .x0("(25, 5, -5, -1)")
        .f_star("85822.201626 at ≈ (-11.594440, 13.203630, -0.403439, 0.236779)"),
    Problem::new("mgh-18", "Biggs EXP6 (MGH 18)", |backend, Size { n, .. }| {
            residuals::<Mgh18>(
                backend,
                n,
                |_| vec![1.0, 2.0, 1.0, 1.0, 1.0, 1.0],
                Some(0.0),
                &[5.65565e-3],
            )
        })
        .n("n = 6", 6)
        .x0("(1, 2, 1, 1, 1, 1)")
        .f_star("0 at (1, 10, 1, 5, 4, 3); the paper's local value 5.65565e-3, where BFGS from x0 stops at gtol 1e-5 (a tighter gtol goes on to 0); 0.306367 as x2 -> inf, x4 -> -inf (asymptotic)"),
    Problem::new("mgh-20", "Watson (MGH 20)", |backend, Size { n, .. }| {
            let f_star = match n {
                6 => Some(2.2876700536e-3),
                9 => Some(1.3997601381e-6),
                _ => None,
            };
            residuals::<Mgh20>(backend, n, |n| vec![0.0; n], f_star, &[])
        })
        .n("2 <= n <= 31 (the paper: 6, 9, 12)", 6)
        .x0("0 everywhere")
        .f_star("2.2876700536e-3 (n = 6), 1.3997601381e-6 (n = 9)"),
    Problem::new("mgh-21", "extended Rosenbrock (MGH 21): ext-rosenbrock at the paper's size", |backend, Size { n, .. }| {
            instance::<ExtRosenbrock>(backend, n, |n| repeating(&[-1.2, 1.0], n), Some(0.0), &[])
        })
        .n("n even, >= 2", 10)
        .x0("(-1.2, 1, -1.2, 1, ...)")
        .f_star("0 at (1, ..., 1)"),
    Problem::new("mgh-22", "extended Powell singular (MGH 22): ext-powell at the paper's size", |backend, Size { n, .. }| {
            let x0 = |n: usize| repeating(&[3.0, -1.0, 0.0, 1.0], n);
            instance::<ExtPowell>(backend, n, x0, Some(0.0), &[])
        })
        .n("n a multiple of 4", 12)
        .x0("(3, -1, 0, 1, 3, -1, 0, 1, ...)")
        .f_star("0 at the origin (singular Hessian)"),
    Problem::new("mgh-23", "penalty function I (MGH 23)", |backend, Size { n, .. }| {
            let f_star = match n {
                4 => Some(2.2499775009e-5),
                10 => Some(7.0876514671e-5),
                _ => None,
            };
            let x0 = |n: usize| (1..=n).map(|j| j as f64).collect();
            residuals::<Mgh23>(backend, n, x0, f_star, &[])
        })
        .n("n >= 1 (the paper: 4, 10)", 4)
        .x0("(1, 2, ..., n)")
        .f_star("2.2499775009e-5 (n = 4), 7.0876514671e-5 (n = 10)"),
    Problem::new("mgh-24", "penalty function II (MGH 24)", |backend, Size { n, .. }| {
            let f_star = (n == 4).then_some(9.3762930074e-6);
            residuals::<Mgh24>(backend, n, |n| vec![0.5; n], f_star, &[])
        })
        .n("n >= 1 (the paper: 4, 10)", 4)
        .x0("0.5 everywhere")
        .f_star("9.3762930074e-6 (n = 4)"),
    Problem::new("mgh-25", "variably dimensioned (MGH 25)", |backend, Size { n, .. }| {
            let x0 = |n: usize| (1..=n).map(|j| 1.0 - j as f64 / n as f64).collect();
            residuals::<Mgh25>(backend, n, x0, Some(0.0), &[])
        })
        .n("n >= 1", 10)
        .x0("x_j = 1 - j/n")
        .f_star("0 at (1, ..., 1)"),
    Problem::new("mgh-26", "trigonometric (MGH 26)", |backend, Size { n, .. }| {
            let alternative_minima: &[f64] = if n == 10 { &[2.795056e-5] } else { &[] };
            let x0 = |n: usize| vec![1.0 / n as f64; n];
            residuals::<Mgh26>(backend, n, x0, Some(0.0), alternative_minima)
        })
        .n("n >= 1", 10)
        .x0("1/n everywhere")
        .f_star("0 at the origin (and its shifts by 2π); for n = 10 a local minimum 2.795056e-5, where BFGS from x0 ends"),
    Problem::new("mgh-30", "Broyden tridiagonal (MGH 30)", |backend, Size { n, .. }| {
            residuals::<Mgh30>(backend, n, |n| vec![-1.0; n], Some(0.0), &[])
        })
        .n("n >= 1", 10)
        .x0("-1 everywhere")
        .f_star("0 at a root of the system"),
    Problem::new("mgh-31", "Broyden banded (MGH 31)", |backend, Size { n, .. }| {
            residuals::<Mgh31>(backend, n, |n| vec![-1.0; n], Some(0.0), &[])
        })
        .n("n >= 1", 10)
        .x0("-1 everywhere")
        .f_star("0 at a root of the system"),
    Problem::new("mgh-35", "Chebyquad (MGH 35), m = n", |backend, Size { n, .. }| {
            let f_star = match n {
                1..=7 | 9 => Some(0.0),
                8 => Some(3.5168737257e-3),
                // The paper's 6.50395e-3, refined here by BFGS to ‖∇F‖∞ = 2e-9.
                10 => Some(6.5039548009e-3),
                _ => None,
            };
            let x0 = |n: usize| (1..=n).map(|j| j as f64 / (n + 1) as f64).collect();
            residuals::<Mgh35>(backend, n, x0, f_star, &[])
        })
        .n("n >= 1", 8)
        .x0("x_j = j/(n + 1)")
        .f_star("0 for n <= 7 and n = 9; 3.5168737257e-3 (n = 8); 6.5039548009e-3 (n = 10)"),
];
