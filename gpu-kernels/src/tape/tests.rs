extern crate std;
use super::*;
use crate::dual::Dual;
use crate::real::Num;
use crate::real::Real;
use crate::term::{Data, Vars};
use std::vec::Vec;

/// Storage for a tape of `steps` operations and `weights` weights.
fn storage(steps: usize, weights: usize) -> (Vec<Cell<Step>>, Vec<Cell<f64>>) {
    (
        (0..steps).map(|_| Cell::new(Step::EMPTY)).collect(),
        (0..weights).map(|_| Cell::new(0.0)).collect(),
    )
}

/// `f`'s value and gradient at `x` in reverse mode, or `None` on overflow.
fn reverse(
    steps: usize,
    x: &[f64],
    f: impl for<'t> Fn(Vars<'_, Var<'t>>) -> Num<Var<'t>>,
) -> Option<(f64, Vec<f64>)> {
    reverse_over(steps, 64, x, &[], f)
}

/// [`reverse`] on a tape of `weights` weights whose source is `source`.
fn reverse_over(
    steps: usize,
    weights: usize,
    x: &[f64],
    source: &[f64],
    f: impl for<'t> Fn(Vars<'_, Var<'t>>) -> Num<Var<'t>>,
) -> Option<(f64, Vec<f64>)> {
    let (steps, weights) = storage(steps, weights);
    let tape = Tape::new(&steps, &weights, x, source);
    tape.start();
    let vars: Vec<_> = tape.variables().collect();
    let result = f(Vars::new(&vars)).0;
    let mut gradient = std::vec![0.0; x.len()];
    let mut adjoints = std::vec![0.0; steps.len()];
    let swept = tape.sweep(result, &mut adjoints, &mut gradient);
    assert!(
        adjoints.iter().all(|&a| a == 0.0),
        "the sweep leaves its scratch zero"
    );
    swept.then_some((result.value, gradient))
}

/// `f`'s value and gradient at `x` in forward mode, one variable at a time.
fn forward(x: &[f64], f: impl Fn(Vars<'_, Dual<1>>) -> Num<Dual<1>>) -> (f64, Vec<f64>) {
    let mut window: Vec<_> = x.iter().map(|&v| Dual::<1>::constant(v)).collect();
    let mut gradient = Vec::new();
    let mut value = 0.0;
    for j in 0..x.len() {
        window[j].derivatives[0] = 1.0;
        let result = f(Vars::new(&window)).0;
        window[j].derivatives[0] = 0.0;
        (value, gradient) = (
            result.value,
            [gradient, std::vec![result.derivatives[0]]].concat(),
        );
    }
    (value, gradient)
}

#[test]
fn the_gradient_is_the_hand_derived_one() {
    // f = x₀·x₁ + sin(x₀)/x₂ − 3: ∂₀ = x₁ + cos(x₀)/x₂, ∂₁ = x₀, ∂₂ = −sin(x₀)/x₂².
    let x = [0.7, -1.3, 2.5];
    let (value, g) = reverse(16, &x, |v| v[0] * v[1] + v[0].sin() / v[2] - 3.0).unwrap();
    let (s, c) = (libm::sin(0.7), libm::cos(0.7));
    assert_eq!(value, 0.7 * -1.3 + s / 2.5 - 3.0);
    assert_eq!(g, [-1.3 + c / 2.5, 0.7, -s / (2.5 * 2.5)]);
}

/// Every function's partials, in each argument, are the duals' to rounding.
#[test]
fn every_function_agrees_with_forward_mode() {
    fn agree((value, g): (f64, Vec<f64>), (expected_value, expected): (f64, Vec<f64>)) {
        assert_eq!(value.to_bits(), expected_value.to_bits());
        for (a, b) in g.iter().zip(&expected) {
            assert!(
                (a - b).abs() <= 1e-14 * b.abs().max(1.0),
                "{g:?} vs {expected:?}"
            );
        }
    }
    // Each function once, as a generic fn both modes evaluate.
    macro_rules! each {
        ($x:expr; $(|$v:ident| $body:expr),* $(,)?) => {$({
            fn f<R: Real>($v: Vars<'_, R>) -> Num<R> {
                $body
            }
            agree(reverse(64, $x, |v| f(v)).unwrap(), forward($x, |v| f(v)));
        })*};
    }
    each![&[0.3, 1.7];
        |v| v[0].exp() * v[1], |v| v[0].exp_m1() - v[1], |v| v[1].ln() + v[0].ln_1p(),
        |v| v[0].sin() * v[1].cos(), |v| v[0].tan() + v[1].atan(), |v| v[0].atan2(v[1]),
        |v| v[1].tanh() * v[0], |v| v[0].erf() + v[1].erfc(), |v| v[1].sqrt() * v[0].cbrt(),
        |v| v[0].hypot(v[1]), |v| (-v[0]).abs() * v[1], |v| v[1].powf(2.5) - v[0],
        |v| v[1].powf(v[0]), |v| v[0].softplus() * v[1].sigmoid(),
        |v| v[1].gaussian() * v[0], |v| ((1.5 - v[0]) / v[1]).gaussian(),
        |v| v[1].add_product(v[0], v[0].exp()), |v| v[0].add_product(v[1], v[1]),
        |v| Num::constant(0.5).add_product(v[0], v[1]) * v[1],
        |v| v[0].add_product(Num::constant(3.0), v[1]),
        |v| v[0].log_sum_exp(v[1]), |v| (2.0 - v[0]) / (v[1] * v[1] + 1.0),
        |v| v[0] / 4.0 + 1.5 * v[1] - v[0] * 0.5,
    ];
}

/// `rows` rows of data, `width` columns of them, and a point of `width` variables.
fn linear_model(rows: usize, width: usize) -> (Vec<f64>, Vec<f64>) {
    let columns = (0..rows * width)
        .map(|i| libm::sin(i as f64 * 0.37))
        .collect();
    let x = (0..width).map(|j| 0.1 * libm::cos(j as f64)).collect();
    (columns, x)
}

/// A wide linear model under a nonlinearity, through `dot_row` (one linear step): the
/// gradient is forward mode's to 1e-14 relative, for each row.
#[test]
fn a_linear_combination_is_one_step_with_its_weights() {
    let (columns, x) = linear_model(3, 33);
    let data = Data::new(&columns, 3);
    for r in 0..3 {
        let row = data.row(r);
        // 4 steps: the linear combination, exp, 2η and the difference.
        let (value, g) = reverse(4, &x, |v| {
            let eta = v.dot_row(0, row);
            eta.exp() - 2.0 * eta
        })
        .unwrap();
        let eta: f64 = (0..x.len()).map(|j| x[j] * row.get(j)).sum();
        let slope = libm::exp(eta) - 2.0;
        assert!((value - (libm::exp(eta) - 2.0 * eta)).abs() < 1e-13);
        for (j, d) in g.iter().enumerate() {
            let expected = slope * row.get(j);
            assert!(
                (d - expected).abs() <= 1e-14 * expected.abs().max(1.0),
                "{j}"
            );
        }
    }
}

/// `s + a·b` is one step whichever of the three are constants (a data value as a factor,
/// say), with the hand-derived partials and the bits of `s + a * b`.
#[test]
fn add_product_records_one_step_whatever_is_constant() {
    let x = [0.7, -1.3];
    type Case = for<'a, 't> fn(Vars<'a, Var<'t>>) -> Num<Var<'t>>;
    let cases: [(Case, f64, [f64; 2]); 5] = [
        // s + a·c: ∂s = 1, ∂a = c.
        (
            |v| v[0].add_product(v[1], Num::constant(2.5)),
            0.7 + -1.3 * 2.5,
            [1.0, 2.5],
        ),
        (
            |v| v[0].add_product(Num::constant(2.5), v[1]),
            0.7 + 2.5 * -1.3,
            [1.0, 2.5],
        ),
        // c + a·b: ∂a = b, ∂b = a.
        (
            |v| Num::constant(4.0).add_product(v[0], v[1]),
            4.0 + 0.7 * -1.3,
            [-1.3, 0.7],
        ),
        // c + a·c', s + c·c'.
        (
            |v| Num::constant(4.0).add_product(v[1], Num::constant(3.0)),
            4.0 + -1.3 * 3.0,
            [0.0, 3.0],
        ),
        (
            |v| v[0].add_product(Num::constant(2.0), Num::constant(3.0)),
            0.7 + 2.0 * 3.0,
            [1.0, 0.0],
        ),
    ];
    for (f, value, gradient) in cases {
        let (v, g) = reverse(1, &x, f).expect("one step");
        assert_eq!(v.to_bits(), value.to_bits());
        assert_eq!(g, gradient);
    }
}

/// `dot_row_plus` is one linear step with the number it adds, recorded or constant: a
/// Poisson regression's row, `e^η − y·η` with `η = x₀ + Σ_{j≥1} x_j·row_j`, records the
/// step, `exp` and the difference, and its gradient is the hand-derived `(e^η − y)·(1, row)`.
#[test]
fn an_intercept_is_part_of_the_linear_step() {
    let (columns, x) = linear_model(3, 33);
    let data = Data::new(&columns, 3);
    for r in 0..3 {
        let row = data.row(r);
        let (value, g) = reverse(3, &x, |v| {
            let eta = v.dot_row_plus(1, row, v[0]);
            eta.exp().add_product(Num::constant(-row.get(0)), eta)
        })
        .expect("three steps");
        let eta = x[0] + (1..x.len()).map(|j| x[j] * row.get(j)).sum::<f64>();
        let slope = libm::exp(eta) - row.get(0);
        assert!((value - (libm::exp(eta) - row.get(0) * eta)).abs() < 1e-13);
        for (j, d) in g.iter().enumerate() {
            let expected = slope * if j == 0 { 1.0 } else { row.get(j) };
            assert!(
                (d - expected).abs() <= 1e-14 * expected.abs().max(1.0),
                "{j}"
            );
        }
        // A constant added: the sum alone is recorded, with the constant's value.
        let (value, g) =
            reverse(1, &x, |v| v.dot_row_plus(1, row, Num::constant(2.5))).expect("one step");
        let plain = Vars::new(&x).dot_row_plus(1, row, Num::constant(2.5)).0;
        assert_eq!(value.to_bits(), plain.to_bits());
        assert_eq!(g[0], 0.0);
        assert_eq!(g[1], row.get(1));
    }
}

/// Rows side by side in the tape's source are read where they lie: on a tape with no room
/// for weights (which a copy would overflow) a Poisson regression's row gives the bits of
/// the copied weights' value and gradient; a row not in the source is copied as before.
#[test]
fn weights_in_the_source_are_read_in_place() {
    let (columns, x) = linear_model(3, 33);
    let by_row: Vec<f64> = (0..3 * 33)
        .map(|i| columns[(i % 33) * 3 + i / 33])
        .collect();
    let data = Data::new(&columns, 3).with_rows(&by_row);
    fn row_term<'t>(row: crate::term::Row<'_>, v: Vars<'_, Var<'t>>) -> Num<Var<'t>> {
        let eta = v.dot_row_plus(1, row, v[0]);
        eta.exp().add_product(Num::constant(-row.get(0)), eta)
    }
    for r in 0..3 {
        let row = data.row(r);
        let copied = reverse_over(3, 64, &x, &[], |v| row_term(row, v)).unwrap();
        let in_place = reverse_over(3, 0, &x, &by_row, |v| row_term(row, v)).expect("in place");
        assert_eq!(in_place.0.to_bits(), copied.0.to_bits());
        let bits = |g: &[f64]| g.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&in_place.1), bits(&copied.1));
        // Another table's row is no run of this source: copied, so no room is an overflow.
        let other = by_row.clone();
        let elsewhere = Data::new(&columns, 3).with_rows(&other).row(r);
        assert!(reverse_over(3, 0, &x, &by_row, |v| row_term(elsewhere, v)).is_none());
    }
}

/// More operations than the tape holds: the value is still right, the sweep refuses.
#[test]
fn an_overflow_keeps_the_value_and_refuses_the_sweep() {
    let x = [1.0, 2.0];
    fn long<R: Real>(v: Vars<'_, R>) -> Num<R> {
        let mut s = v[0];
        for _ in 0..10 {
            s = s * v[1] + 1.0;
        }
        s
    }
    // Closures, not `long` itself: `reverse` needs a function of every tape's lifetime.
    #[allow(clippy::redundant_closure)]
    let too_short = reverse(5, &x, |v| long(v));
    assert!(too_short.is_none());
    #[allow(clippy::redundant_closure)]
    let (value, g) = reverse(20, &x, |v| long(v)).unwrap();
    assert_eq!(value, 2047.0);
    assert_eq!(g[0], 1024.0);
}

/// A result that does not depend on the window: zero partials; one that is a variable:
/// a unit partial.
#[test]
fn constants_and_bare_variables() {
    let x = [3.0, 4.0];
    assert_eq!(
        reverse(4, &x, |_| Num::constant(2.0)).unwrap().1,
        [0.0, 0.0]
    );
    assert_eq!(reverse(4, &x, |v| v[1]).unwrap().1, [0.0, 1.0]);
}
