//! Objectives made of several terms (`TermSum`, `ResidualSum`): the sum's value, gradient and
//! normal equations against hand-derived ones and against the whole problem it splits, on the
//! CPU and on the simulated GPU; L-BFGS with the solver's vectors kept on the device.

mod common;

use common::relative_error;
use cudamin::kernels::kernel::AXPY;
use cudamin::kernels::prelude::*;
use cudamin::kernels::terms::SeedExpSum;
use cudamin::kernels::terms::fit::ExpSin;
use cudamin::kernels::{L2Penalty, SumOfSquares, Term};
use cudamin::plumbing::gpu::simulated_entries;
use cudamin::plumbing::{Pass, Share};
use cudamin::{Backend, BackendChoice, Evaluator, ResidualSum, TermProblem};
use cudamin::{Gradient, Method, OnBackend, Options, Status, TermObjective};
use cudamin::{LmOptions, least_squares, minimize};

fn simulator() -> Backend {
    cudamin::backend(BackendChoice::Simulated).unwrap().0
}

/// `L2Penalty` data: every weight `w`, every centre `c`.
fn penalty(n: usize, w: f64, c: f64) -> TermProblem<L2Penalty> {
    TermProblem::with_data(n, [vec![w; n], vec![c; n]].concat(), n).unwrap()
}

/// Σ xᵢ² + e^{xᵢ} + ½·w·(xᵢ − c)², its gradient 2x + eˣ + w·(x − c) by hand.
#[test]
fn a_penalty_beside_a_term_adds_its_value_and_gradient() {
    let (n, w, c) = (37, 2.0, 1.0);
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
    let f_hand: f64 = x
        .iter()
        .map(|&x| x * x + x.exp() + 0.5 * w * (x - c) * (x - c))
        .sum();
    let g_hand: Vec<f64> = x.iter().map(|&x| 2.0 * x + x.exp() + w * (x - c)).collect();
    for backend in [Backend::Cpu, simulator()] {
        let sum = TermProblem::<SeedExpSum>::new(n)
            .unwrap()
            .plus(penalty(n, w, c));
        let mut evaluator = backend.load_sum(sum.unwrap()).unwrap();
        let f = evaluator.value(&x).unwrap();
        assert!(
            (f - f_hand).abs() <= 1e-13 * f_hand.abs(),
            "{f} against {f_hand}"
        );
        for kind in Gradient::ALL {
            let mut g = vec![f64::NAN; n];
            let f_too = evaluator.value_and_gradient(&x, kind, &mut g).unwrap();
            assert_eq!(
                f_too.to_bits(),
                f.to_bits(),
                "{kind:?}: one pass, one value"
            );
            let allowed = if kind == Gradient::Exact { 1e-13 } else { 1e-6 };
            let error = relative_error(&g, &g_hand);
            assert!(
                error <= allowed,
                "{} {kind:?}: error {error:e}",
                backend.name()
            );
        }
    }
}

/// A sum's parts must share `n`; the refusal names both terms.
#[test]
fn a_part_of_another_size_is_refused() {
    let sum = TermProblem::<SeedExpSum>::new(4)
        .unwrap()
        .plus(penalty(5, 1.0, 0.0));
    let message = sum.unwrap_err().to_string();
    assert_eq!(
        message,
        "l2_penalty has n = 5 variables; the sum it is added to (seed_expsum, ...) has 4"
    );
}

/// One process evaluates a sum part by part; MPI finishes its partials. Both give the same
/// bits: values, every gradient scheme (banded parts of several chunks), normal equations.
#[test]
fn a_sum_evaluated_part_by_part_is_its_partials_finished() {
    let n = 10_000;
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).cos()).collect();
    let sum = TermProblem::<SeedExpSum>::new(n)
        .unwrap()
        .plus(penalty(n, 0.5, 1.0));
    let sum = sum
        .unwrap()
        .plus(TermProblem::<SeedExpSum>::new(n).unwrap());
    let mut evaluator = Backend::Cpu.load_sum(sum.unwrap()).unwrap();
    let whole = |evaluator: &mut Box<dyn Evaluator>, pass| {
        evaluator.partials(&x, pass, Share::Whole).unwrap()
    };
    let f = evaluator.value(&x).unwrap();
    assert_eq!(
        f.to_bits(),
        whole(&mut evaluator, Pass::Value).value().to_bits()
    );
    for gradient in Gradient::ALL {
        let mut g = vec![0.0; n];
        let f_too = evaluator.value_and_gradient(&x, gradient, &mut g).unwrap();
        let partials = whole(
            &mut evaluator,
            Pass::Gradient {
                gradient,
                value: true,
            },
        );
        let mut g_finished = vec![0.0; n];
        let f_finished = partials
            .gradient_into(&x, cudamin::kernels::StepBox::OPEN, &mut g_finished)
            .unwrap();
        assert_eq!(f_too.to_bits(), f_finished.to_bits(), "{gradient:?}");
        assert!(
            g.iter()
                .zip(&g_finished)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
    }
    let p = 4;
    let at = [1.4, 0.35, 0.28, -0.02];
    let halves = ResidualSum::of_residuals(expsin(p, 0..700)).plus(expsin(p, 700..1500));
    let mut split = Backend::Cpu
        .load_least_squares_sum(halves.unwrap())
        .unwrap();
    let (mut jtj, mut jtr) = (vec![0.0; p * p], vec![0.0; p]);
    let s = split
        .normal_equations(&at, Gradient::Exact, &mut jtj, &mut jtr)
        .unwrap();
    let pass = Pass::Normal {
        jacobian: Gradient::Exact,
    };
    let partials = split.partials(&at, pass, Share::Whole).unwrap();
    let (mut jtj_finished, mut jtr_finished) = (vec![0.0; p * p], vec![0.0; p]);
    let s_finished = partials
        .normal_into(&mut jtj_finished, &mut jtr_finished)
        .unwrap();
    assert_eq!(s.to_bits(), s_finished.to_bits());
    assert_eq!((jtj, jtr), (jtj_finished, jtr_finished));
}

/// expsin's data at `rows` points: columns t, y, w = 1.
fn expsin_columns(rows: std::ops::Range<usize>) -> (Vec<f64>, usize) {
    let t: Vec<f64> = rows.clone().map(|j| 0.01 * j as f64).collect();
    let y: Vec<f64> = (t.iter())
        .map(|&t| 1.5 * (-0.4 * t).exp() + 0.3 * (2.0 * t).sin() + 0.01 * (37.0 * t).cos())
        .collect();
    let len = t.len();
    ([t, y, vec![1.0; len]].concat(), len)
}

fn expsin(n: usize, rows: std::ops::Range<usize>) -> TermProblem<SumOfSquares<ExpSin>> {
    let (values, len) = expsin_columns(rows);
    TermProblem::with_data(n, values, len).unwrap()
}

/// A data term split into two parts (rows 0..700 and 700..1500) is the whole problem: value,
/// gradients and the normal equations agree to rounding, on the CPU and the simulator.
#[test]
fn a_data_term_split_in_two_parts_is_the_whole() {
    let n = 4;
    let x = [1.4, 0.35, 0.28, -0.02];
    for backend in [Backend::Cpu, simulator()] {
        let mut whole = backend.load_least_squares(expsin(n, 0..1500)).unwrap();
        let halves = ResidualSum::of_residuals(expsin(n, 0..700)).plus(expsin(n, 700..1500));
        let mut split = backend.load_least_squares_sum(halves.unwrap()).unwrap();
        assert_eq!(split.residuals(), 1500);
        let (f_whole, f_split) = (whole.value(&x).unwrap(), split.value(&x).unwrap());
        assert!(
            (f_whole - f_split).abs() <= 1e-13 * f_whole,
            "{f_whole} {f_split}"
        );
        for kind in Gradient::ALL {
            let (mut g_whole, mut g_split) = (vec![0.0; n], vec![0.0; n]);
            whole.gradient(&x, kind, &mut g_whole).unwrap();
            split.gradient(&x, kind, &mut g_split).unwrap();
            let error = relative_error(&g_split, &g_whole);
            assert!(error <= 1e-10, "{} {kind:?}: {error:e}", backend.name());
            let (mut jtj_whole, mut jtr_whole) = (vec![0.0; n * n], vec![0.0; n]);
            let (mut jtj_split, mut jtr_split) = (vec![0.0; n * n], vec![0.0; n]);
            let s_whole =
                (whole.normal_equations(&x, kind, &mut jtj_whole, &mut jtr_whole)).unwrap();
            let s_split =
                (split.normal_equations(&x, kind, &mut jtj_split, &mut jtr_split)).unwrap();
            assert!((s_whole - s_split).abs() <= 1e-13 * s_whole);
            assert!(
                relative_error(&jtj_split, &jtj_whole) <= 1e-10,
                "{kind:?} JᵀJ"
            );
            assert!(
                relative_error(&jtr_split, &jtr_whole) <= 1e-10,
                "{kind:?} Jᵀr"
            );
        }
    }
}

/// Ridge residuals `√λ·xₖ`, one per variable: a test's own residual term.
struct Ridge;

impl Term for Ridge {
    const WINDOW: Window = Window::Separable;
    type Local<'a> = ();
    fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}
    fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
        x[0] * RIDGE_LAMBDA.sqrt()
    }
}

const RIDGE_LAMBDA: f64 = 0.5;

cudamin::kernels::register_residuals!(Ridge, test_ridge);

/// Levenberg–Marquardt on a fit with ridge residuals beside it (CPU): the sum's normal
/// equations are the fit's plus `λI` and `λx`, by hand; LM ends where BFGS does.
#[test]
fn levenberg_marquardt_takes_a_fit_with_ridge_residuals() {
    let n = 4;
    let ridged = ResidualSum::of_residuals(expsin(n, 0..1500))
        .plus(TermProblem::<SumOfSquares<Ridge>>::new(n).unwrap())
        .unwrap();
    let mut sum = Backend::Cpu.load_least_squares_sum(ridged).unwrap();
    let mut fit = Backend::Cpu.load_least_squares(expsin(n, 0..1500)).unwrap();
    assert_eq!(sum.residuals(), 1500 + n);
    let x = [1.4, 0.35, 0.28, -0.02];
    let (mut jtj, mut jtr) = (vec![0.0; n * n], vec![0.0; n]);
    let (mut jtj_fit, mut jtr_fit) = (vec![0.0; n * n], vec![0.0; n]);
    let s = sum.normal_equations(&x, Gradient::Exact, &mut jtj, &mut jtr);
    let s_fit = fit.normal_equations(&x, Gradient::Exact, &mut jtj_fit, &mut jtr_fit);
    let ridge_squares: f64 = x.iter().map(|x| RIDGE_LAMBDA * x * x).sum();
    assert!((s.unwrap() - s_fit.unwrap() - ridge_squares).abs() <= 1e-12);
    for i in 0..n {
        jtj_fit[i * n + i] += RIDGE_LAMBDA;
        jtr_fit[i] += RIDGE_LAMBDA * x[i];
    }
    assert!(relative_error(&jtj, &jtj_fit) <= 1e-14);
    assert!(relative_error(&jtr, &jtr_fit) <= 1e-14);

    let mut objective = TermObjective::new(sum, Gradient::Exact);
    let lm = least_squares(&mut objective, &[1.0; 4], &LmOptions::default()).unwrap();
    assert!(lm.success, "{}", lm.message);
    // The same minimum by another method: BFGS on Σr² to a gradient of 1e-9.
    let options = Options {
        gtol: 1e-9,
        ..Options::default()
    };
    let bfgs = minimize(&mut objective, &[1.0; 4], Method::Bfgs, &options).unwrap();
    assert_eq!(bfgs.status, Status::Success, "{}", bfgs.message);
    let error = relative_error(&lm.x, &bfgs.x);
    assert!(error <= 1e-6, "LM {:?}, BFGS {:?}", lm.x, bfgs.x);
}

/// L-BFGS on seed-expsum plus a penalty at n = 2¹⁵, where the solver keeps its vectors on the
/// device: the sum is on the device when its parts are, the further part's gradient is added
/// there (`cudamin_axpy`), and the minimum is the one Newton's method finds per variable for
/// 4x + eˣ − 2 = 0.
#[test]
fn a_sum_on_the_simulated_gpu_keeps_the_solvers_vectors_on_the_device() {
    let n = 1 << 15;
    let load = |backend: &Backend| {
        let sum = TermProblem::<SeedExpSum>::new(n)
            .unwrap()
            .plus(penalty(n, 2.0, 1.0));
        TermObjective::new(backend.load_sum(sum.unwrap()).unwrap(), Gradient::Exact)
    };
    let mut on_gpu = load(&simulator());
    assert!(
        on_gpu.device().unwrap().is_some(),
        "every part is on the device"
    );
    let options = Options::default();
    let gpu = minimize(&mut on_gpu, &vec![0.5; n], Method::Lbfgs, &options).unwrap();
    assert!(
        simulated_entries().contains(AXPY),
        "the solver's vectors stayed on the device"
    );
    let cpu = minimize(
        &mut load(&Backend::Cpu),
        &vec![0.5; n],
        Method::Lbfgs,
        &options,
    )
    .unwrap();
    let mut root: f64 = 0.0;
    for _ in 0..50 {
        root -= (4.0 * root + root.exp() - 2.0) / (4.0 + root.exp());
    }
    for result in [&gpu, &cpu] {
        assert!(matches!(
            result.status,
            Status::Success | Status::RelativeReduction
        ));
        let worst = result
            .x
            .iter()
            .map(|x| (x - root).abs())
            .fold(0.0, f64::max);
        assert!(worst <= 1e-4, "|x − x*|∞ = {worst:e}");
    }
    let f_star = n as f64 * (root * root + root.exp() + (root - 1.0) * (root - 1.0));
    assert!(
        (gpu.fun - f_star).abs() <= 1e-9 * f_star,
        "{} against {f_star}",
        gpu.fun
    );
}
