//! Forward against reverse mode for the exact gradient of dense terms, on the CPU: one value,
//! the exact gradient with the term forced forward (duals of 16 lanes), and forced reverse (the
//! tape), side by side, at window widths 16, 33 and 64, for the Poisson regression (`e^η − y·η`
//! over a linear predictor) and lsq-expsin (`(θ₀e^{−θ₁t} + Σ θₖ sin(kt) − y)²`), 10⁶ rows each.
//! After the run it prints each gradient's cost in values from criterion's medians, which is
//! where `Differentiation::Auto`'s widths come from.
//!
//! `cargo bench --bench modes`

mod common;

use common::median_ns;
use criterion::{Criterion, criterion_group};
use cudamin::kernels::terms::{LsqExpSin, PoissonRegression};
use cudamin::kernels::{Data, Differentiation, Num, Real, Term, Vars, Window};
use cudamin::problems::{lsq_expsin_data, poisson_data};
use cudamin::{Backend, Gradient, TermProblem};
use std::marker::PhantomData;
use std::time::Duration;

const ROWS: usize = 1_000_000;
const WIDTHS: [usize; 3] = [16, 33, 64];

/// A mode a term is forced into.
trait Mode {
    const MODE: Differentiation;
    const NAME: &'static str;
}

struct Forward;
struct Reverse;

impl Mode for Forward {
    const MODE: Differentiation = Differentiation::Forward;
    const NAME: &'static str = "forward";
}

impl Mode for Reverse {
    const MODE: Differentiation = Differentiation::Reverse;
    const NAME: &'static str = "reverse";
}

/// Term `T`, differentiated in mode `M` whatever its own choice.
struct Forced<T, M>(PhantomData<(T, M)>);

impl<T: Term, M: Mode> Term for Forced<T, M> {
    const WINDOW: Window = T::WINDOW;
    type Local<'a> = T::Local<'a>;
    const EVAL_IN_LANES: bool = T::EVAL_IN_LANES;
    const DIFFERENTIATION: Differentiation = M::MODE;

    fn terms(n: usize, data: Data<'_>) -> usize {
        T::terms(n, data)
    }

    fn check(n: usize, data: Data<'_>) -> Result<(), &'static str> {
        T::check(n, data)
    }

    fn prepare<'a>(k: usize, n: usize, data: Data<'a>) -> T::Local<'a> {
        T::prepare(k, n, data)
    }

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, local: &T::Local<'_>) -> Num<R> {
        T::eval(x, local)
    }
}

cudamin::kernels::register_term!(Forced<PoissonRegression, Forward>, poisson_forward);
cudamin::kernels::register_term!(Forced<PoissonRegression, Reverse>, poisson_reverse);
cudamin::kernels::register_term!(Forced<LsqExpSin, Forward>, lsq_expsin_forward);
cudamin::kernels::register_term!(Forced<LsqExpSin, Reverse>, lsq_expsin_reverse);

/// The value and the gradient in both modes of one term at one width, into `c`.
fn bench_width<F, R>(c: &mut Criterion, name: &str, width: usize, data: (Vec<f64>, usize))
where
    F: cudamin::kernels::Kernels + 'static,
    R: cudamin::kernels::Kernels + 'static,
{
    let (values, rows) = data;
    let x: Vec<f64> = (0..width).map(|j| 0.01 * (j as f64).cos()).collect();
    let mut g = vec![0.0; width];
    let mut group = c.benchmark_group(format!("modes/{name}/{width}"));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    let problem = TermProblem::<F>::with_data(width, values.clone(), rows).unwrap();
    let mut forward = Backend::Cpu.load(problem).unwrap();
    let problem = TermProblem::<R>::with_data(width, values, rows).unwrap();
    let mut reverse = Backend::Cpu.load(problem).unwrap();
    group.bench_function("value", |b| b.iter(|| forward.value(&x).unwrap()));
    for (mode, evaluator) in [("forward", &mut forward), ("reverse", &mut reverse)] {
        group.bench_function(format!("gradient_{mode}"), |b| {
            b.iter(|| evaluator.gradient(&x, Gradient::Exact, &mut g).unwrap())
        });
    }
    group.finish();
}

fn modes(c: &mut Criterion) {
    for width in WIDTHS {
        let data = poisson_data(width, ROWS).unwrap();
        bench_width::<Forced<PoissonRegression, Forward>, Forced<PoissonRegression, Reverse>>(
            c, "poisson", width, data,
        );
        let data = lsq_expsin_data(width, ROWS).unwrap();
        bench_width::<Forced<LsqExpSin, Forward>, Forced<LsqExpSin, Reverse>>(
            c,
            "lsq-expsin",
            width,
            data,
        );
    }
}

fn report() {
    println!("\nexact gradient / value, 10⁶ rows (criterion medians; target <= 3):");
    for name in ["poisson", "lsq-expsin"] {
        for width in WIDTHS {
            let group = format!("modes_{name}_{width}");
            let Some(value) = median_ns(&group, "value") else {
                continue;
            };
            let cost =
                |mode: &str| median_ns(&group, &format!("gradient_{mode}")).map(|g| g / value);
            let (Some(forward), Some(reverse)) = (cost(Forward::NAME), cost(Reverse::NAME)) else {
                continue;
            };
            println!(
                "  {name:<11} w = {width:<3} value {:>8.3} ms   forward {forward:>5.2}   reverse {reverse:>5.2}",
                value / 1e6
            );
        }
    }
}

criterion_group!(benches, modes);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report();
}
