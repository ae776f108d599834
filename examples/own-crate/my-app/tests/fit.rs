//! MichaelisMenten's least squares on the CPU: the normal equations the kernels accumulate from
//! the residual's exact derivatives are the hand-derived `JᵀJ` and `Jᵀr`, and
//! Levenberg–Marquardt recovers the parameters of noiseless data.

use cudamin::kernels::SumOfSquares;
use cudamin::{Backend, Gradient, LeastSquaresEvaluator, TermObjective, TermProblem};
use cudamin::{LmOptions, least_squares};
use my_kernels::MichaelisMenten;

/// Columns `s` and `v` for `points` substrate values on [0.1, 10), rates from `(V, K)`.
fn rates(points: usize, vk: [f64; 2]) -> (Vec<f64>, Vec<f64>) {
    let s: Vec<f64> = (0..points)
        .map(|j| 0.1 + 9.9 * j as f64 / points as f64)
        .collect();
    let v = s.iter().map(|s| vk[0] * s / (vk[1] + s)).collect();
    (s, v)
}

fn objective(s: &[f64], v: &[f64]) -> TermObjective<dyn LeastSquaresEvaluator> {
    // s, v and the weights w = 1/σ, all 1.
    let columns = [s, v, &vec![1.0; s.len()]].concat();
    let problem =
        TermProblem::<SumOfSquares<MichaelisMenten>>::with_data(2, columns, s.len()).unwrap();
    TermObjective::new(
        Backend::Cpu.load_least_squares(problem).unwrap(),
        Gradient::Exact,
    )
}

#[test]
fn the_jacobians_triangle_is_the_hand_derived_ones() {
    use cudamin::LeastSquaresObjective;
    use cudamin::{Factor, RobustLoss};
    let (s, v) = rates(700, [2.5, 1.2]);
    let at = [1.7, 0.6];
    // r = v − V·s/(K + s): ∂r/∂V = −s/(K + s), ∂r/∂K = V·s/(K + s)².
    let (mut jtj, mut jtr, mut sum) = ([0.0; 4], [0.0; 2], 0.0);
    for (&s, &v) in s.iter().zip(&v) {
        let r = v - at[0] * s / (at[1] + s);
        let row = [-s / (at[1] + s), at[0] * s / (at[1] + s).powi(2)];
        for a in 0..2 {
            jtr[a] += row[a] * r;
            for b in 0..2 {
                jtj[2 * a + b] += row[a] * row[b];
            }
        }
        sum += r * r;
    }
    let mut objective = objective(&s, &v);
    let mut factor = Factor::new(2);
    let got_sum = objective
        .factor(&at, RobustLoss::default(), &mut factor)
        .unwrap();
    // J = Q·R: JᵀJ = RᵀR and Jᵀr = Rᵀ(Qᵀr), R upper triangular.
    let r = &factor.r;
    assert_eq!(r[2], 0.0, "R is upper triangular: {r:?}");
    let got_jtj = [
        r[0] * r[0],
        r[0] * r[1],
        r[1] * r[0],
        r[1] * r[1] + r[3] * r[3],
    ];
    let q = &factor.qtr;
    let got_jtr = [r[0] * q[0], r[1] * q[0] + r[3] * q[1]];
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1.0);
    assert!(close(got_sum, sum), "Σr² {got_sum} vs {sum}");
    for i in 0..4 {
        assert!(close(got_jtj[i], jtj[i]), "JᵀJ {got_jtj:?} vs {jtj:?}");
    }
    for i in 0..2 {
        assert!(close(got_jtr[i], jtr[i]), "Jᵀr {got_jtr:?} vs {jtr:?}");
    }
}

#[test]
fn levenberg_marquardt_recovers_noiseless_rates() {
    let truth = [2.5, 1.2];
    let (s, v) = rates(1000, truth);
    let mut objective = objective(&s, &v);
    let result = least_squares(&mut objective, &[1.0, 1.0], &LmOptions::default()).unwrap();
    assert!(result.success, "{}", result.message);
    for (got, want) in result.x.iter().zip(truth) {
        assert!(
            (got - want).abs() <= 1e-8 * want,
            "{:?} vs {truth:?}",
            result.x
        );
    }
}
