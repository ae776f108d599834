use super::{Num, Real};

/// Distance in ulps between two finite doubles of any signs (±0 are 0 apart).
fn ulps(a: f64, b: f64) -> u64 {
    // Map the bits onto a line that is monotonic in the value.
    let line = |x: f64| {
        let bits = x.to_bits() as i64;
        if bits < 0 { i64::MIN - bits } else { bits }
    };
    line(a).abs_diff(line(b))
}

/// Each function's f64 value against mpmath's (`mp.dps = 40`, evaluated at the exact binary
/// value of each argument, printed to 25 digits), small, moderate and large arguments.
#[test]
#[allow(clippy::excessive_precision)] // mpmath's digits as printed; the compiler rounds them
fn functions_are_within_two_ulps_of_mpmath() {
    // A function and `(x, mpmath's f(x))` points; `(a, b, f(a, b))` for two arguments.
    type Unary = (&'static str, fn(f64) -> f64, &'static [(f64, f64)]);
    type Binary = (
        &'static str,
        fn(f64, f64) -> f64,
        &'static [(f64, f64, f64)],
    );
    #[rustfmt::skip]
    let unary: [Unary; 10] = [
        ("ln_1p", Real::ln_1p, &[
            (1e-10, 9.999999999500000364355306e-11), (0.5, 4.054651081081643819780131e-1),
            (-0.75, -1.386294361119890618834464), (1e5, 1.151293546492022875342079e+1)]),
        ("exp_m1", Real::exp_m1, &[
            (-1e-12, -9.999999999994999798866478e-13), (0.5, 6.487212707001281468486508e-1),
            (-2.0, -8.646647167633873081060005e-1), (30.0, 1.068647458152346214699047e+13)]),
        ("erf", Real::erf, &[
            (1e-10, 1.12837916709551261500173e-10), (0.3, 3.28626759459127416189618e-1),
            (2.5, 9.995930479825550410604358e-1), (-1.2, -9.103139782296353683659318e-1)]),
        ("erfc", Real::erfc, &[
            (5.0, 1.537459794428034850188343e-12), (0.3, 6.71373240540872583810382e-1),
            (-1.0, 1.842700792949714869341221), (20.0, 5.395865611607900928934999e-176)]),
        ("cbrt", Real::cbrt, &[
            (-27.0, -3.0), (2.0, 1.259921049894873164767211),
            (1e-300, 1.000000000000000008353031e-100), (0.001, 1.000000000000000006938894e-1)]),
        ("softplus", Real::softplus, &[
            (40.0, 4.000000000000000000424835e+1), (-40.0, 4.248354255291588986304978e-18),
            (0.0, core::f64::consts::LN_2), (1.5, 1.701413277982752409499483),
            (-1e-3, 6.926473055599401010738429e-1), (800.0, 800.0)]),
        ("sigmoid", Real::sigmoid, &[
            (-30.0, 9.357622968839298953839563e-14), (30.0, 9.999999999999064237703116e-1),
            (0.5, 6.224593312018545646389006e-1), (-2.0, 1.192029220221175559402709e-1),
            (0.0, 0.5), (-700.0, 9.859676543759770856705373e-305)]),
        ("gaussian", Real::gaussian, &[
            (0.0, 1.0), (1.0, 6.065306597126334236037995e-1),
            (-1.5, 3.246524673583497297970681e-1), (2.5, 4.393693362340741732674768e-2),
            (-6.0, 1.522997974471262843613663e-8), (30.0, 3.693883068487256218793428e-196),
            (1e-3, 9.999995000001249999791667e-1)]),
        ("sq", Real::sq, &[(-1.5, 2.25)]),
        ("powi", |x| Real::powi(x, -3), &[(2.0, 0.125), (-0.5, -8.0)]),
    ];
    for (name, f, points) in unary {
        for &(x, expected) in points {
            let got = f(x);
            assert!(
                ulps(got, expected) <= 2,
                "{name}({x}) = {got:e}, mpmath {expected:e}"
            );
        }
    }
    #[rustfmt::skip]
    let binary: [Binary; 3] = [
        ("hypot", Real::hypot, &[
            (3e200, 4e200, 4.999999999999999848665611e+200), (3.0, 4.0, 5.0),
            (1e-200, 2e-200, 2.236067977499789656384144e-200),
            (-1.5, 0.25, 1.520690632574554922249921)]),
        ("pow", Real::pow, &[
            (2.5, 1.5, 3.952847075210474164998617), (0.7, -3.2, 3.131023101416267177307115),
            (10.0, -0.5, 3.162277660168379331998894e-1),
            (1e-3, 2.25, 1.778279410038922884515643e-7)]),
        ("log_sum_exp", Real::log_sum_exp, &[
            (1000.0, 1000.5, 1.000974076984180106680873e+3),
            (-1.0, 2.0, 2.048587351573742058758926),
            (0.25, 0.25, 9.431471805599453094172321e-1),
            (-800.0, -799.0, -7.98686738312481777165951e+2)]),
    ];
    for (name, f, points) in binary {
        for &(a, b, expected) in points {
            let got = f(a, b);
            assert!(
                ulps(got, expected) <= 2,
                "{name}({a}, {b}) = {got:e}, mpmath {expected:e}"
            );
            if name != "pow" {
                assert_eq!(got.to_bits(), f(b, a).to_bits(), "{name} is symmetric");
            }
        }
    }
    #[rustfmt::skip]
    let slices: [(&[f64], f64); 3] = [
        (&[1.0, 2.0, 3.0], 3.40760596444438030448292),
        (&[-1000.0, 5.0, 4.5], 5.474076984180106680872997),
        (&[0.1, -0.2, 0.3, 1e-3], 1.452728189456347689296856),
    ];
    for (xs, expected) in slices {
        let got = f64::log_sum_exp_of(xs);
        assert!(
            ulps(got, expected) <= 2,
            "log_sum_exp_of({xs:?}) = {got:e}, mpmath {expected:e}"
        );
    }
    assert_eq!(f64::log_sum_exp_of(&[]), f64::NEG_INFINITY);
    assert_eq!(f64::log_sum_exp_of(&[-7.25]), -7.25);
    let inf = f64::INFINITY;
    assert_eq!(Real::log_sum_exp(-inf, -inf), -inf);
    assert_eq!(Real::log_sum_exp(inf, inf), inf);
    assert_eq!(Real::log_sum_exp(3.0, -inf), 3.0);
    assert!(Real::log_sum_exp(f64::NAN, 1.0).is_nan());
    assert!(Real::log_sum_exp(1.0, f64::NAN).is_nan());
}

/// `add_product` is `c + a·b` rounded twice, as written, on `f64` and `Num`: not the
/// fused multiply-add, which keeps `a·b`'s low bits (here `−2⁻⁶⁰` where the sum is 0).
#[test]
fn add_product_is_the_sum_as_written() {
    let (a, b, c) = (
        1.0 + libm::ldexp(1.0, -30),
        1.0 - libm::ldexp(1.0, -30),
        -1.0,
    );
    assert_eq!(a.mul_add(b, c), -libm::ldexp(1.0, -60));
    assert_eq!(Real::add_product(c, a, b), 0.0);
    assert_eq!(Num(c).add_product(Num(a), Num(b)), Num(0.0));
}

/// A `Num`'s functions are the `f64` ones, to the bit (one definition for both).
#[test]
fn num_and_f64_constants_share_every_function() {
    let (x, y) = (0.37_f64, -1.6_f64);
    let (nx, ny) = (Num(x), Num(y));
    type OnBoth = (fn(Num<f64>) -> Num<f64>, fn(f64) -> f64);
    let unary: [OnBoth; 21] = [
        (Num::sq, Real::sq),
        (Num::exp, Real::exp),
        (Num::exp_m1, Real::exp_m1),
        (Num::ln, Real::ln),
        (Num::ln_1p, Real::ln_1p),
        (Num::sin, Real::sin),
        (Num::cos, Real::cos),
        (Num::tan, Real::tan),
        (Num::atan, Real::atan),
        (Num::tanh, Real::tanh),
        (Num::erf, Real::erf),
        (Num::erfc, Real::erfc),
        (Num::sqrt, Real::sqrt),
        (Num::cbrt, Real::cbrt),
        (Num::abs, Real::abs),
        (Num::gaussian, Real::gaussian),
        (Num::softplus, Real::softplus),
        (Num::sigmoid, Real::sigmoid),
        (|v| v.powi(-3), |v| Real::powi(v, -3)),
        (|v| v.powi(7), |v| Real::powi(v, 7)),
        (|v| v.powf(2.5), |v| Real::powf(v, 2.5)),
    ];
    for (on_num, on_f64) in unary {
        assert_eq!(on_num(nx).0.to_bits(), on_f64(x).to_bits());
    }
    assert_eq!(nx.atan2(ny).0, Real::atan2(x, y));
    assert_eq!(nx.hypot(ny).0, Real::hypot(x, y));
    assert_eq!(nx.log_sum_exp(ny).0, Real::log_sum_exp(x, y));
    assert_eq!(nx.powf(ny).0, Real::pow(x, y));
    assert_eq!(nx.powf(ny).0, Real::powf(x, y));
    assert_eq!(
        Num::log_sum_exp_of(&[nx, ny, Num(2.0)]).0,
        f64::log_sum_exp_of(&[x, y, 2.0])
    );
}

/// Integer literals mix as their `f64` value, on either side, in a generic term, and float
/// literals still infer beside them.
#[test]
fn integer_literals_are_their_f64_value() {
    fn with_integers<R: Real>(x: &[Num<R>]) -> Num<R> {
        2 * x[0] + x[1] * 3 - 1 + x[0] / 2 - (4 - x[1]) + 1 / x[0] + 2.0 * x[1] - x[0] * 0.5
    }
    fn with_floats<R: Real>(x: &[Num<R>]) -> Num<R> {
        2.0 * x[0] + x[1] * 3.0 - 1.0 + x[0] / 2.0 - (4.0 - x[1]) + 1.0 / x[0] + 2.0 * x[1]
            - x[0] * 0.5
    }
    let x = [Num(0.3_f64), Num(-1.7)];
    assert_eq!(with_integers(&x).0.to_bits(), with_floats(&x).0.to_bits());
    let mut y = x[0];
    y += 1;
    y *= -3;
    assert_eq!(y.0, (0.3 + 1.0) * -3.0);
}

#[test]
fn compound_assignment_is_the_operator() {
    let (x, c) = (Num(0.3_f64), 1.7);
    let mut y = x;
    y += x;
    y -= c;
    y *= x;
    y /= c;
    y *= 2.5;
    y /= x;
    y += 0.25;
    y -= x;
    assert_eq!(y.0, (((x.0 + x.0 - c) * x.0 / c) * 2.5 / x.0) + 0.25 - x.0);
}

#[test]
fn powi_matches_repeated_multiplication() {
    let x = Num(1.3_f64);
    assert_eq!(x.powi(0).0, 1.0);
    assert_eq!(x.powi(1).0, 1.3);
    assert_eq!(x.powi(3).0, 1.3 * 1.3 * 1.3);
    assert_eq!(Num(2.0_f64).powi(-2).0, 0.25);
}

#[test]
fn constants_mix_on_either_side() {
    let x = Num(0.25_f64);
    assert_eq!((2.0 - x).0, 1.75);
    assert_eq!((x - 2.0).0, -1.75);
    assert_eq!((3.0 * x).0, (x * 3.0).0);
    assert_eq!((1.0 / x).0, 4.0);
    assert_eq!((x + 1.0).0, (1.0 + x).0);
    assert_eq!((-x).0, -0.25);
}

#[test]
fn functions_are_libm_s_on_every_target() {
    let x = Num(0.7_f64);
    assert_eq!(x.tan().0, libm::tan(0.7));
    assert_eq!(x.tanh().0, libm::tanh(0.7));
    assert_eq!(x.atan2(Num(-0.2)).0, libm::atan2(0.7, -0.2));
    assert_eq!(x.powf(2.5).0, libm::pow(0.7, 2.5));
    assert_eq!(Num(-3.0_f64).abs().0, 3.0);
    assert_eq!(Num(2.0_f64).min(Num(-1.0)).0, -1.0);
    assert_eq!(Num(2.0_f64).max(Num(-1.0)).0, 2.0);
    // Data constants have the same functions through `Real`.
    assert_eq!(Real::exp(0.5_f64), crate::math::exp(0.5));
}
