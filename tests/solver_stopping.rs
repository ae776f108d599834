//! How runs end, for both methods: scipy's statuses and messages, the observer, and objectives
//! that are not finite or not consistent.

mod solver_common;

use cudamin::{EvalError, Objective};
use cudamin::{Iterate, Method, Options, Status, minimize_with_observer};
use solver_common::*;
use std::ops::ControlFlow;

const METHODS: [Method; 2] = [Method::Bfgs, Method::Lbfgs];
const PRECISION_LOSS: &str = "Desired error not necessarily achieved due to precision loss.";

#[test]
fn maxiter_0_returns_x0_after_one_evaluation() {
    for method in METHODS {
        let options = Options {
            maxiter: Some(0),
            ..Options::default()
        };
        let result = solve_rosenbrock2(method, &options).unwrap();
        assert_eq!(result.x, [-1.2, 1.0]);
        assert_eq!(result.status, Status::MaxIter);
        assert_eq!(result.status.code(), 1);
        assert!(!result.success);
        assert_eq!(
            result.message,
            "Maximum number of iterations has been exceeded."
        );
        assert_eq!((result.nit, result.nfev, result.njev), (0, 1, 1));
        assert!((result.fun - 24.2).abs() < 1e-12);
        assert!((result.jac[0] + 215.6).abs() < 1e-9 && (result.jac[1] + 88.0).abs() < 1e-9);
    }
}

#[test]
fn maxiter_caps_the_iterations() {
    for method in METHODS {
        let options = Options {
            maxiter: Some(7),
            ..Options::default()
        };
        let result = solve_rosenbrock2(method, &options).unwrap();
        assert_eq!((result.status, result.nit), (Status::MaxIter, 7));
    }
}

#[test]
fn the_observer_sees_every_iteration_and_can_stop_the_run() {
    for method in METHODS {
        let mut seen = Vec::new();
        let mut observer = |it: &Iterate<'_>| {
            seen.push((it.nit, it.fun, it.grad_norm, it.x().unwrap().to_vec()));
            if it.nit == 3 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let options = Options::default();
        let result = minimize_with_observer(
            &mut Rosenbrock { n: 2 },
            &[-1.2, 1.0],
            method,
            &options,
            &mut observer,
        )
        .unwrap();
        assert_eq!(result.status, Status::Stopped);
        assert_eq!(result.status.code(), 99);
        assert!(!result.success);
        assert_eq!(result.message, "`callback` raised `StopIteration`.");
        assert_eq!(result.nit, 3);
        assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3]);
        let (_, fun, grad_norm, x) = seen.last().unwrap();
        assert_eq!((*fun, x.as_slice()), (result.fun, result.x.as_slice()));
        assert_eq!(*grad_norm, inf_norm(&result.jac));
        assert!(seen.windows(2).all(|w| w[1].1 < w[0].1), "f decreases");
    }
}

/// Returns NaN for the value, and optionally the gradient, everywhere.
struct NanEverywhere {
    gradient_too: bool,
}

impl Objective for NanEverywhere {
    fn dim(&self) -> usize {
        2
    }

    fn value(&mut self, _: &[f64]) -> Result<f64, EvalError> {
        Ok(f64::NAN)
    }

    fn gradient(&mut self, _: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        g.fill(if self.gradient_too { f64::NAN } else { 1.0 });
        Ok(())
    }
}

#[test]
fn nan_at_x0_is_status_3() {
    for method in METHODS {
        for gradient_too in [true, false] {
            let result = solve(
                &mut NanEverywhere { gradient_too },
                &[1.0, 2.0],
                method,
                &Options::default(),
            )
            .unwrap();
            assert_eq!(result.status, Status::NanEncountered, "{method:?}");
            assert_eq!(result.status.code(), 3);
            assert_eq!(result.message, "NaN result encountered.");
            assert!(!result.success);
            assert_eq!((result.nit, result.nfev, result.njev), (0, 1, 1));
            assert_eq!(result.x, [1.0, 2.0]);
        }
    }
}

/// `Σ wᵢ(xᵢ − 1)²`, but NaN (value and gradient) once any `xᵢ > 1.5`.
struct NanBeyondWall {
    nan_evaluations: usize,
}

impl NanBeyondWall {
    const WEIGHTS: [f64; 2] = [10.0, 3.0];

    fn beyond(x: &[f64]) -> bool {
        x.iter().any(|&x| x > 1.5)
    }
}

impl Objective for NanBeyondWall {
    fn dim(&self) -> usize {
        2
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        if Self::beyond(x) {
            self.nan_evaluations += 1;
            return Ok(f64::NAN);
        }
        Ok(x.iter()
            .zip(Self::WEIGHTS)
            .map(|(x, w)| w * (x - 1.0).powi(2))
            .sum())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        let beyond = Self::beyond(x);
        for ((g, x), w) in g.iter_mut().zip(x).zip(Self::WEIGHTS) {
            *g = if beyond {
                f64::NAN
            } else {
                2.0 * w * (x - 1.0)
            };
        }
        Ok(())
    }
}

#[test]
fn a_nan_region_shrinks_the_step_and_the_run_still_converges() {
    for method in METHODS {
        let mut objective = NanBeyondWall { nan_evaluations: 0 };
        // The first trial step, of length 1.01 along −g = (6, 0), ends at x₁ = 1.71.
        let result = solve(&mut objective, &[0.7, 1.0], method, &Options::default()).unwrap();
        assert!(
            objective.nan_evaluations > 0,
            "{method:?}: the wall was never hit"
        );
        assert_eq!(result.status, Status::Success, "{method:?}");
        assert!(
            result.x.iter().all(|&x| (x - 1.0).abs() < 1e-5),
            "{method:?}: {:?}",
            result.x
        );
        assert!(result.fun.is_finite() && result.jac.iter().all(|g| g.is_finite()));
    }
}

/// A constant value with a gradient that claims descent: no step decreases f.
struct LyingGradient;

impl Objective for LyingGradient {
    fn dim(&self) -> usize {
        2
    }

    fn value(&mut self, _: &[f64]) -> Result<f64, EvalError> {
        Ok(1.0)
    }

    fn gradient(&mut self, _: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        g.fill(1.0);
        Ok(())
    }
}

#[test]
fn no_possible_descent_is_status_2() {
    for method in METHODS {
        let result = solve(&mut LyingGradient, &[0.0, 0.0], method, &Options::default()).unwrap();
        assert_eq!(result.status, Status::PrecisionLoss);
        assert_eq!(result.status.code(), 2);
        assert_eq!(result.message, PRECISION_LOSS);
        assert!(!result.success);
        assert_eq!(result.nit, 0);
        assert_eq!(result.x, [0.0, 0.0]);
        // Both searches ran: Moré–Thuente, then the fallback.
        assert!(result.nfev > 20, "{}", result.nfev);
    }
}

/// `Σ wᵢ(xᵢ − cᵢ)²` plus deterministic noise of size 1e-8 in the value only: near `c` the
/// noise hides the decrease, and gtol = 1e-12 cannot be reached.
struct Noisy;

impl Noisy {
    const WEIGHTS: [f64; 3] = [1.0, 10.0, 100.0];
    const MINIMIZER: [f64; 3] = [0.1, -0.3, 0.7];
}

impl Objective for Noisy {
    fn dim(&self) -> usize {
        3
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        let bits = x.iter().fold(0u64, |h, v| h.rotate_left(17) ^ v.to_bits());
        let noise = symmetric(&mut SplitMix64::new(bits));
        let terms = x.iter().zip(Self::WEIGHTS).zip(Self::MINIMIZER);
        Ok(terms.map(|((x, w), c)| w * (x - c).powi(2)).sum::<f64>() + 1e-8 * noise)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        let terms = g.iter_mut().zip(x).zip(Self::WEIGHTS).zip(Self::MINIMIZER);
        for (((g, x), w), c) in terms {
            *g = 2.0 * w * (x - c);
        }
        Ok(())
    }
}

#[test]
fn a_noisy_objective_ends_in_precision_loss() {
    for method in METHODS {
        // L-BFGS's `ftol` rule off, which would otherwise end it with success as the noise
        // flattens the decrease.
        let options = Options {
            gtol: 1e-12,
            ftol: 0.0,
            ..Options::default()
        };
        let result = solve(&mut Noisy, &[1.0, -2.0, 0.5], method, &options).unwrap();
        assert_eq!(result.status, Status::PrecisionLoss, "{method:?}");
        assert_eq!(result.message, PRECISION_LOSS);
        assert!(inf_norm(&result.jac) > options.gtol);
        // As close as the noise allows: wᵢ(xᵢ − cᵢ)² ≲ 1e-8, |xᵢ − cᵢ| ≲ 1e-4.
        let error = result
            .x
            .iter()
            .zip(Noisy::MINIMIZER)
            .map(|(x, c)| (x - c).abs());
        assert!(
            error.fold(0.0, f64::max) < 1e-4,
            "{method:?}: {:?}",
            result.x
        );
    }
}

/// `10⁶ + Σ wᵢ(xᵢ − cᵢ)²`: a minimum on a large value, as a sum of many terms has one. Once
/// `Σ wᵢ(xᵢ − cᵢ)²` falls below half an ulp of 10⁶ (5.8e-11), `f` no longer changes at all,
/// while the gradient, exact, still says where the minimum is.
struct OnAPlateau;

impl Objective for OnAPlateau {
    fn dim(&self) -> usize {
        3
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        let terms = x.iter().zip(Noisy::WEIGHTS).zip(Noisy::MINIMIZER);
        Ok(1e6 + terms.map(|((x, w), c)| w * (x - c).powi(2)).sum::<f64>())
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        Noisy.gradient(x, g)
    }
}

/// Where `f` cannot show a decrease, the steps pass on their slopes: BFGS reaches gtol, and
/// L-BFGS, asked for a gtol beyond its last step, ends when a step leaves `f` unchanged, which
/// its `ftol` rule (L-BFGS-B's) counts as converged even at `ftol = 0`. Under scipy's rules BFGS
/// ended here in precision loss at ‖g‖∞ 2.4e-7: the first step that left `f` unchanged made its
/// next first trial step 0.
#[test]
fn a_decrease_below_the_rounding_of_f_passes_on_the_slopes() {
    // (method, gtol, status, the ‖g‖∞ reached at most)
    for (method, gtol, status, gtol_reached) in [
        (Method::Bfgs, 1e-9, Status::Success, 1e-9),
        (Method::Lbfgs, 1e-11, Status::RelativeReduction, 1e-10),
    ] {
        let options = Options {
            gtol,
            ftol: 0.0,
            ..Options::default()
        };
        let result = solve(&mut OnAPlateau, &[1.0, -2.0, 0.5], method, &options).unwrap();
        assert_eq!(result.status, status, "{method:?}: {result:?}");
        assert!(result.success);
        assert!(inf_norm(&result.jac) <= gtol_reached, "{method:?}");
        assert_eq!(result.fun, 1e6);
        // |xᵢ − cᵢ| = |gᵢ|/(2wᵢ).
        for (x, c) in result.x.iter().zip(Noisy::MINIMIZER) {
            assert!(
                (x - c).abs() <= gtol_reached / 2.0,
                "{method:?}: {:?}",
                result.x
            );
        }
    }
}

/// `+∞` everywhere: the line search has nothing finite to decrease from.
struct InfiniteValue;

impl Objective for InfiniteValue {
    fn dim(&self) -> usize {
        1
    }

    fn value(&mut self, _: &[f64]) -> Result<f64, EvalError> {
        Ok(f64::INFINITY)
    }

    fn gradient(&mut self, _: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        g.fill(1.0);
        Ok(())
    }
}

#[test]
fn an_infinite_value_at_x0_is_status_2() {
    for method in METHODS {
        let result = solve(&mut InfiniteValue, &[0.0], method, &Options::default()).unwrap();
        assert_eq!((result.status, result.nit), (Status::PrecisionLoss, 0));
    }
}

/// Fails on the `fail_at`-th value evaluation.
struct FailingBackend {
    values: usize,
    fail_at: usize,
}

impl Objective for FailingBackend {
    fn dim(&self) -> usize {
        2
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        self.values += 1;
        if self.values == self.fail_at {
            return Err(EvalError::Failed("device lost".into()));
        }
        Rosenbrock { n: 2 }.value(x)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        Rosenbrock { n: 2 }.gradient(x, g)
    }
}

#[test]
fn an_evaluation_error_is_propagated() {
    for method in METHODS {
        for fail_at in [1, 5] {
            let mut objective = FailingBackend { values: 0, fail_at };
            let error =
                solve(&mut objective, &[-1.2, 1.0], method, &Options::default()).unwrap_err();
            assert_eq!(
                error.to_string(),
                "objective evaluation failed: device lost"
            );
        }
    }
}

/// A bowl lifted to f ≈ 5·10⁵, as a sum over many data rows is: near its minimum a step
/// reduces f by less than `ftol` relative to f long before ‖∇f‖∞ reaches 1e-5.
struct LiftedBowl;

impl LiftedBowl {
    const LIFT: f64 = 5e5;
    const WEIGHTS: [f64; 4] = [1e4, 3e4, 1e5, 2e5];
}

impl Objective for LiftedBowl {
    fn dim(&self) -> usize {
        Self::WEIGHTS.len()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        let bowl: f64 = x
            .iter()
            .zip(Self::WEIGHTS)
            .map(|(x, w)| w * (x - 1.0).powi(2))
            .sum();
        Ok(Self::LIFT + bowl)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        for ((g, x), w) in g.iter_mut().zip(x).zip(Self::WEIGHTS) {
            *g = 2.0 * w * (x - 1.0);
        }
        Ok(())
    }
}

/// L-BFGS ends by scipy L-BFGS-B's `ftol` rule, with its status 0 and message (scipy 1.17.1's
/// L-BFGS-B ends this run so too, after 11 iterations, f − 5·10⁵ = 5.1e-8), at the first
/// step whose reduction `f_k − f_{k+1}` is at most `ftol·max(|f_k|, |f_{k+1}|, 1)`; BFGS, like
/// scipy's, has no such rule and goes on to `gtol`; `ftol = 0` lets L-BFGS go on too.
#[test]
fn lbfgs_stops_on_the_relative_reduction_of_f() {
    let x0 = [0.0, 2.0, -1.0, 0.5];
    let options = Options::default();
    assert_eq!(options.ftol, 1e7 * f64::EPSILON);
    let mut values = Vec::new();
    let mut observer = |it: &Iterate<'_>| {
        values.push(it.fun);
        ControlFlow::Continue(())
    };
    let result =
        minimize_with_observer(&mut LiftedBowl, &x0, Method::Lbfgs, &options, &mut observer)
            .unwrap();
    assert_eq!(result.status, Status::RelativeReduction);
    assert_eq!((result.status.code(), result.success), (0, true));
    assert_eq!(
        result.message,
        "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"
    );
    assert!(cudamin::plumbing::inf_norm(&result.jac) > options.gtol);
    let mut f_previous = LiftedBowl.value(&x0).unwrap();
    for (k, &f) in values.iter().enumerate() {
        let met = f_previous - f <= options.ftol * f_previous.abs().max(f.abs()).max(1.0);
        assert_eq!(met, k + 1 == values.len(), "iteration {}", k + 1);
        f_previous = f;
    }
    // Stopped near the minimum, as far as f's digits can tell: f − 5·10⁵ is ~1e-3 there.
    assert!(result.fun - LiftedBowl::LIFT < 1e-2, "{}", result.fun);

    for (method, ftol) in [(Method::Bfgs, options.ftol), (Method::Lbfgs, 0.0)] {
        let options = Options {
            ftol,
            ..Options::default()
        };
        let result = solve(&mut LiftedBowl, &x0, method, &options).unwrap();
        assert_ne!(result.status, Status::RelativeReduction, "{method:?}");
    }
}

/// The lifted bowl with a reference gradient off by `offset` in its first partial.
struct ClaimedLiftedBowl {
    offset: f64,
}

impl Objective for ClaimedLiftedBowl {
    fn dim(&self) -> usize {
        LiftedBowl.dim()
    }

    fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
        LiftedBowl.value(x)
    }

    fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
        LiftedBowl.gradient(x, g)
    }

    fn reference_gradient(
        &mut self,
        x: &[f64],
        into: &mut [f64],
    ) -> Result<Option<cudamin::Gradient>, EvalError> {
        LiftedBowl.gradient(x, into)?;
        into[0] += self.offset;
        Ok(Some(cudamin::Gradient::Exact))
    }
}

/// An end by the `ftol` rule is a success while the gradient's claimed error is at most gtol,
/// as an end by `gtol` is, or under a tenth of the gradient's norm there (the gradient is then
/// resolved, and its directions descend as the exact one's would); otherwise `f`'s stall along
/// directions made from a gradient that wrong proves nothing.
#[test]
fn an_ftol_end_needs_a_gradient_resolved_or_within_gtol() {
    let x0 = [0.0, 2.0, -1.0, 0.5];
    let options = Options::default();
    for method in [Method::Lbfgs, Method::LbfgsB] {
        let exact = solve(
            &mut ClaimedLiftedBowl { offset: 0.0 },
            &x0,
            method,
            &options,
        )
        .unwrap();
        assert_eq!(exact.status, Status::RelativeReduction);
        let norm = cudamin::plumbing::inf_norm(&exact.jac);
        // The stall is far from gtol, so that the two tests differ.
        assert!(norm > 1e3 * options.gtol, "{method:?}: {norm}");
        for (offset, status) in [
            (0.5 * options.gtol, Status::RelativeReduction),
            (2.0 * options.gtol, Status::RelativeReduction),
            (0.09 * norm, Status::RelativeReduction),
            (0.11 * norm, Status::PrecisionLoss),
            (2.0 * norm, Status::PrecisionLoss),
        ] {
            let mut objective = ClaimedLiftedBowl { offset };
            let result = solve(&mut objective, &x0, method, &options).unwrap();
            assert_eq!(result.status, status, "{method:?}, error {offset}");
            assert_eq!(result.success, status.success());
            assert!((result.jac_error.unwrap().estimate - offset).abs() <= 1e-12 * norm);
        }
    }
}

#[test]
fn a_negative_or_nan_ftol_is_refused() {
    for ftol in [-1e-9, f64::NAN] {
        let options = Options {
            ftol,
            ..Options::default()
        };
        let error = solve(&mut LiftedBowl, &[0.0; 4], Method::Lbfgs, &options).unwrap_err();
        assert!(
            error.to_string().starts_with("invalid option ftol = "),
            "{error}"
        );
    }
}

/// The same converged run is a success only while the gradient's claimed error is at most
/// gtol; above it, or NaN, it is scipy's status 2, with the estimate reported.
#[test]
fn success_needs_a_gradient_error_within_gtol() {
    let options = Options::default();
    for method in METHODS {
        for (claimed_error, status) in [
            (0.0, Status::Success),
            (0.5 * options.gtol, Status::Success),
            (2.0 * options.gtol, Status::PrecisionLoss),
            (f64::NAN, Status::PrecisionLoss),
        ] {
            let mut objective = Claimed {
                offset: vec![claimed_error, 0.0, 0.0],
            };
            let result = solve(&mut objective, &[0.0, 3.0, -2.0], method, &options).unwrap();
            assert!(result.x.iter().all(|v| (v - 2.0).abs() < 1e-6));
            assert_eq!(result.status, status, "{method:?}, error {claimed_error}");
            assert_eq!(result.success, status.success());
            assert_eq!(result.message, status.message());
            let reported = result.jac_error.unwrap().estimate;
            assert!(
                (reported - claimed_error).abs() <= 1e-12
                    || reported.is_nan() && claimed_error.is_nan()
            );
        }
    }
}

/// gtol = 0 is scipy's "no gradient test": the solve goes on until its other rules end it (with
/// ftol = 0 too, when a step no longer lowers `f`), here at Rosenbrock's minimum to the last
/// bits of `f`.
#[test]
fn gtol_0_runs_until_the_other_rules_end_it() {
    for method in [Method::Bfgs, Method::Lbfgs, Method::LbfgsB] {
        let options = Options {
            gtol: 0.0,
            ftol: 0.0,
            ..Options::default()
        };
        let result = solve(&mut Rosenbrock { n: 2 }, &[-1.2, 1.0], method, &options).unwrap();
        println!(
            "{method:?}: status {:?} f {:e} nit {}",
            result.status, result.fun, result.nit
        );
        assert!(result.fun <= 1e-20, "{method:?}: f {:e}", result.fun);
    }
}
