//! RobustLine's gradient on the CPU, at random points: the exact gradient (from `eval` on dual
//! numbers) matches the hand-derived one to rounding, and central differences to their
//! truncation error.

use cudamin::{Backend, Gradient, TermProblem};
use my_kernels::RobustLine;

/// xorshift64 uniforms on [lo, hi): a fixed seed, the same points every run.
fn uniforms(seed: u64) -> impl FnMut(f64, f64) -> f64 {
    let mut state = seed;
    move |lo, hi| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// ∂/∂(a, b) of Σ 2(√(1 + r²) − 1) with r = y − a − b·t: −2r/√(1 + r²) · (1, t).
fn hand_derived(ab: [f64; 2], t: &[f64], y: &[f64]) -> [f64; 2] {
    let mut g = [0.0; 2];
    for (&t, &y) in t.iter().zip(y) {
        let r = y - ab[0] - ab[1] * t;
        let d = -2.0 * r / (1.0 + r * r).sqrt();
        g[0] += d;
        g[1] += d * t;
    }
    g
}

/// max |a − b| over max(‖b‖∞, 1).
fn relative_error(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(1.0, |m: f64, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .fold(0.0, |m: f64, (a, b)| m.max((a - b).abs()))
        / scale
}

#[test]
fn exact_gradient_matches_the_hand_derived_one_and_central_differences() {
    let mut uniform = uniforms(0x9e37_79b9_7f4a_7c15);
    for case in 0..50 {
        let points = 1 + (uniform(0.0, 2000.0) as usize);
        let t: Vec<f64> = (0..points).map(|_| uniform(-10.0, 10.0)).collect();
        let y: Vec<f64> = (0..points).map(|_| uniform(-20.0, 20.0)).collect();
        let ab = [uniform(-5.0, 5.0), uniform(-5.0, 5.0)];
        let columns = [t.as_slice(), y.as_slice()].concat();
        let problem = TermProblem::<RobustLine>::with_data(2, columns, points).unwrap();
        let mut evaluator = Backend::Cpu.load(problem).unwrap();
        let truth = hand_derived(ab, &t, &y);
        for (gradient, tol) in [(Gradient::Exact, 1e-12), (Gradient::Central, 1e-6)] {
            let mut g = [f64::NAN; 2];
            evaluator.gradient(&ab, gradient, &mut g).unwrap();
            let err = relative_error(&g, &truth);
            assert!(
                err <= tol,
                "case {case} ({points} points, a, b = {ab:?}), {gradient:?}: relative error {err:.2e}"
            );
        }
    }
}
