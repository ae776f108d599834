//! BFGS, as scipy's `method='BFGS'`, without scipy's `O(n³)` update.
//!
//! The inverse Hessian `H` is the usual BFGS matrix, held in one of two forms:
//!
//! - **implicit**: `H₀` and every curvature pair so far; `H·g` by the two-loop recursion,
//!   `O(n·k)` at iteration `k`. Cheap while `k ≪ n`, which is where most large problems end.
//! - **dense**: the `n×n` matrix; `H·g` and the rank-two update in `O(n²)`.
//!
//! A run starts implicit and switches to dense once the implicit products have cost as much, in
//! total, as building the dense matrix would: the ski-rental rule (rent until the rent paid equals
//! the purchase price). With a fixed rent and price it never pays more than twice the better
//! choice in hindsight; here both grow with `k`, so it is a heuristic with the same intent:
//! short runs never pay for the matrix, long runs stop paying the growing rent. Counted in
//! multiply-adds:
//!
//! - an implicit product with `k` pairs: `4n·k` (two dot products and two axpys per pair) plus
//!   `n` for copying `g` and applying the identity, or `n²` for a user's `H₀`;
//! - building the dense matrix from `k` pairs: `n²` for `H₀`, then `3n²` per pair (`H·y` and
//!   the rank-two update).
//!
//! With `H₀ = I` the switch comes at `k ≈ 1.5n` (with a user's `H₀`, at `k ≈ n`), where an
//! implicit product costs `6n²` against `4n²` for a dense iteration. The pairs then take
//! `16·n·k ≈ 24n²` bytes, three times the matrix; they are dropped once it is built.
//!
//! The dense form is only used while `n²` doubles fit in 2 GiB (`n ≤ 16384`). Beyond that, BFGS
//! stays implicit and its pairs grow by `16n` bytes an iteration: for long runs at that size,
//! L-BFGS is the method. There, for a term problem on a GPU, the pairs and every other vector
//! live on the device (see `workspace`); below it the matrix and the vectors are on the host.

use super::dense::{self, bfgs_update, matvec};
use super::line_search::Evaluated;
use super::options::{Options, check_start_of_len};
use super::quasi_newton::{self, InverseHessian, Taken, Trial};
use super::result::{Iterate, OptimizeResult, SolveError, invalid_option};
use super::start::Start;
use super::two_loop::{CurvaturePair, two_loop};
use super::workspace::{HostWorkspace, Workspace};
use crate::linalg::try_zeros;
use crate::linalg::vector::{dot, map_in_place};
use crate::objective::{EvalError, Objective};
use crate::space::{StepEnd, VectorSpace};
use ndarray::Array2;
use std::collections::VecDeque;
use std::ops::ControlFlow;

/// The most memory the dense inverse Hessian may take: 2 GiB, `n ≤ 16384`.
const DENSE_MEMORY_CAP_BYTES: usize = 2 << 30;

/// Minimizes `objective` from `x0` by BFGS. See [`super::minimize`].
pub fn minimize(
    objective: &mut dyn Objective,
    x0: &[f64],
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
) -> Result<OptimizeResult, SolveError> {
    minimize_with(
        objective,
        Start::Host(x0),
        options,
        observer,
        Switch::SKI_RENTAL,
    )
}

/// [`minimize`] from `x0` where it lies, turning dense by `switch`.
pub(super) fn minimize_with(
    objective: &mut dyn Objective,
    x0: Start<'_>,
    options: &Options,
    observer: &mut dyn FnMut(&Iterate<'_>) -> ControlFlow<()>,
    switch: Switch,
) -> Result<OptimizeResult, SolveError> {
    check_start_of_len(objective, x0.len(), options)?;
    let n = x0.len();
    let h0 = options
        .hess_inv0
        .as_ref()
        .map(|h| initial_matrix(h, n))
        .transpose()?;
    check_hess_inv_fits(n, options)?;
    // Past the dense limit BFGS stays implicit (see the module docs); for a term problem on a
    // GPU its pairs then live on the device too. Below it, the n×n matrix is on the host, and
    // so are the vectors.
    if h0.is_none()
        && !dense_fits(n)
        && let Some(on_device) = super::workspace::device_of(objective, n)?
    {
        let mut workspace = super::workspace::DeviceWorkspace::new(on_device)?;
        let mut hessian = ImplicitBfgs::new();
        return quasi_newton::run(&mut workspace, x0, options, None, observer, &mut hessian);
    }
    let mut hessian = BfgsInverseHessian::new(n, h0, switch);
    let mut workspace = HostWorkspace::new(objective);
    let mut result = quasi_newton::run(&mut workspace, x0, options, None, observer, &mut hessian)?;
    if options.return_hess_inv {
        let dense = hessian.into_dense().ok_or(SolveError::OutOfMemory {
            what: "hess_inv, the dense n×n inverse Hessian",
            bytes: n.saturating_mul(n).saturating_mul(size_of::<f64>()),
        })?;
        result.hess_inv = Some(dense);
    }
    Ok(result)
}

/// Checks a user's `hess_inv0` and returns the matrix to start from (its symmetric part).
fn initial_matrix(h: &Array2<f64>, n: usize) -> Result<Array2<f64>, SolveError> {
    if h.dim() != (n, n) {
        let (rows, columns) = h.dim();
        let value = format!("a {rows}×{columns} matrix with n = {n}");
        return Err(invalid_option("hess_inv0", value, "must be n×n"));
    }
    dense::symmetric_positive_definite(h).map_err(SolveError::NotPositiveDefinite)
}

/// Multiply-adds of one implicit product with `pairs` pairs, from a dense `H₀` or the identity.
fn implicit_product_cost(n: usize, pairs: usize, dense_h0: bool) -> f64 {
    let n = n as f64;
    let h0 = if dense_h0 { n * n } else { n };
    4.0 * n * pairs as f64 + h0
}

/// Multiply-adds of building the dense matrix from `pairs` pairs.
fn materialization_cost(n: usize, pairs: usize) -> f64 {
    let n = n as f64;
    n * n * (1.0 + 3.0 * pairs as f64)
}

/// Refuses `return_hess_inv` where the `n×n` matrix would exceed the dense cap (2 GiB), before
/// a solve, not after it: `n` counts every variable, held ones too (their rows are zeros).
pub(super) fn check_hess_inv_fits(n: usize, options: &Options) -> Result<(), SolveError> {
    if options.return_hess_inv && !dense_fits(n) {
        let reason = "the n×n hess_inv would exceed 2 GiB";
        return Err(invalid_option(
            "return_hess_inv",
            format!("true with n = {n}"),
            reason,
        ));
    }
    Ok(())
}

fn dense_fits(n: usize) -> bool {
    let bytes = n
        .checked_mul(n)
        .and_then(|entries| entries.checked_mul(size_of::<f64>()));
    bytes.is_some_and(|bytes| bytes <= DENSE_MEMORY_CAP_BYTES)
}

/// When to switch from the implicit to the dense form: once the implicit products have cost
/// `work_ratio` times what building the dense matrix would.
#[derive(Clone, Copy, Debug)]
pub(super) struct Switch {
    work_ratio: f64,
}

impl Switch {
    pub(super) const SKI_RENTAL: Switch = Switch { work_ratio: 1.0 };
}

/// The BFGS inverse Hessian, implicit or dense (see the module docs).
struct BfgsInverseHessian {
    n: usize,
    /// `H₀`; `None` is the identity. Dropped once dense.
    h0: Option<Array2<f64>>,
    form: Form,
    switch: Switch,
    /// Multiply-adds spent on implicit products so far.
    implicit_work: f64,
    /// `H₀·v` in the implicit form, `H·y` in the dense one.
    scratch: Vec<f64>,
}

enum Form {
    Implicit(ImplicitBfgs<Vec<f64>>),
    Dense(Array2<f64>),
}

/// The implicit form: every curvature pair so far, applied by the two-loop recursion.
struct ImplicitBfgs<V> {
    pairs: VecDeque<CurvaturePair<V>>,
    alphas: Vec<f64>,
}

impl<V> ImplicitBfgs<V> {
    fn new() -> Self {
        Self {
            pairs: VecDeque::new(),
            alphas: Vec::new(),
        }
    }

    /// `p ← H·g`, with `apply_h0` doing `v ← H₀·v`.
    fn product<W: Workspace<Vector = V>>(
        &mut self,
        workspace: &mut W,
        g: &V,
        p: &mut V,
        apply_h0: impl FnOnce(&mut W::Space, &mut V) -> Result<(), EvalError>,
    ) -> Result<(), EvalError> {
        let space = workspace.space_mut();
        space.copy(g, p)?;
        two_loop(space, &self.pairs, p, &mut self.alphas, apply_h0)
    }

    /// Appends the pair `(s, y)` with `sy = sᵀy`, taking the vectors themselves and giving
    /// back new zeros.
    fn push<W: Workspace<Vector = V>>(
        &mut self,
        workspace: &mut W,
        s: &mut V,
        y: &mut V,
        sy: f64,
    ) -> Result<(), EvalError> {
        let rho = rho(sy);
        let mut pair = CurvaturePair {
            s: workspace.space_mut().zeros()?,
            y: workspace.space_mut().zeros()?,
            rho,
        };
        std::mem::swap(s, &mut pair.s);
        std::mem::swap(y, &mut pair.y);
        self.pairs.push_back(pair);
        Ok(())
    }
}

/// `ρ = 1/yᵀs`, with scipy's guard against dividing by zero: it takes ρ = 1000 and updates all
/// the same.
fn rho(ys: f64) -> f64 {
    if ys == 0.0 { 1000.0 } else { 1.0 / ys }
}

/// With `H₀ = I`, on any workspace (the form BFGS keeps on a GPU).
impl<W: Workspace> InverseHessian<W> for ImplicitBfgs<W::Vector> {
    fn direction(
        &mut self,
        workspace: &mut W,
        g: &W::Vector,
        p: &mut W::Vector,
        _: Option<Trial<'_, W::Vector>>,
    ) -> Result<(f64, Option<Evaluated>), EvalError> {
        self.product(workspace, g, p, |_, _| Ok(()))?;
        workspace.space_mut().scale(-1.0, p)?;
        Ok((workspace.space_mut().dot(g, p)?, None))
    }

    fn update(
        &mut self,
        workspace: &mut W,
        s: &mut W::Vector,
        y: &mut W::Vector,
        end: &StepEnd,
        _: Taken,
    ) -> Result<(), EvalError> {
        self.push(workspace, s, y, end.sy)
    }
}

impl BfgsInverseHessian {
    fn new(n: usize, h0: Option<Array2<f64>>, switch: Switch) -> Self {
        Self {
            n,
            h0,
            form: Form::Implicit(ImplicitBfgs::new()),
            switch,
            implicit_work: 0.0,
            scratch: vec![0.0; n],
        }
    }

    fn switch_to_dense_if_due(&mut self) {
        let Form::Implicit(implicit) = &self.form else {
            return;
        };
        let price = self.switch.work_ratio * materialization_cost(self.n, implicit.pairs.len());
        if self.implicit_work >= price && dense_fits(self.n) {
            // The dense form only saves time: where its n² values cannot be allocated, BFGS
            // goes on implicitly.
            let pairs = &implicit.pairs;
            if let Some(dense) =
                dense_from_pairs(self.n, self.h0.as_ref(), pairs, &mut self.scratch)
            {
                (self.form, self.h0) = (Form::Dense(dense), None);
            }
        }
    }

    /// The dense `H`, for `hess_inv`; `None` where it cannot be allocated.
    fn into_dense(mut self) -> Option<Array2<f64>> {
        match self.form {
            Form::Dense(h) => Some(h),
            Form::Implicit(implicit) => {
                dense_from_pairs(self.n, self.h0.as_ref(), &implicit.pairs, &mut self.scratch)
            }
        }
    }
}

/// The dense `H`: `H₀` (`None`: the identity) with the updates of `pairs` applied in order,
/// `O(k·n²)`, or `None` where its `n²` values cannot be allocated. `scratch` has length `n`.
fn dense_from_pairs(
    n: usize,
    h0: Option<&Array2<f64>>,
    pairs: &VecDeque<CurvaturePair<Vec<f64>>>,
    scratch: &mut [f64],
) -> Option<Array2<f64>> {
    let mut h = Array2::from_shape_vec((n, n), try_zeros(n.checked_mul(n)?)?).ok()?;
    match h0 {
        Some(h0) => h.assign(h0),
        None => h.diag_mut().fill(1.0),
    }
    for pair in pairs {
        bfgs_update(&mut h, &pair.s, &pair.y, pair.rho, scratch);
    }
    Some(h)
}

impl InverseHessian<HostWorkspace<'_>> for BfgsInverseHessian {
    fn direction(
        &mut self,
        workspace: &mut HostWorkspace<'_>,
        g: &Vec<f64>,
        p: &mut Vec<f64>,
        _: Option<Trial<'_, Vec<f64>>>,
    ) -> Result<(f64, Option<Evaluated>), EvalError> {
        self.switch_to_dense_if_due();
        match &mut self.form {
            Form::Implicit(implicit) => {
                let pairs = implicit.pairs.len();
                let (h0, scratch) = (&self.h0, &mut self.scratch);
                implicit.product(workspace, g, p, |_, v| {
                    if let Some(h0) = h0 {
                        matvec(h0, v, scratch);
                        v.copy_from_slice(scratch);
                    }
                    Ok(())
                })?;
                self.implicit_work += implicit_product_cost(self.n, pairs, h0.is_some());
            }
            Form::Dense(h) => matvec(h, g, p),
        }
        map_in_place(p, |v| -v);
        Ok((dot(g, p), None))
    }

    fn update(
        &mut self,
        workspace: &mut HostWorkspace<'_>,
        s: &mut Vec<f64>,
        y: &mut Vec<f64>,
        end: &StepEnd,
        _: Taken,
    ) -> Result<(), EvalError> {
        let sy = end.sy;
        match &mut self.form {
            Form::Implicit(implicit) => implicit.push(workspace, s, y, sy),
            Form::Dense(h) => {
                bfgs_update(h, s, y, rho(sy), &mut self.scratch);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::HostVectors;
    use ndarray::array;

    /// scipy's `rosen`, with its gradient.
    struct Rosenbrock(usize);

    impl Objective for Rosenbrock {
        fn dim(&self) -> usize {
            self.0
        }

        fn value(&mut self, x: &[f64]) -> Result<f64, EvalError> {
            Ok(x.windows(2)
                .map(|w| 100.0 * (w[1] - w[0] * w[0]).powi(2) + (1.0 - w[0]).powi(2))
                .sum())
        }

        fn gradient(&mut self, x: &[f64], g: &mut [f64]) -> Result<(), EvalError> {
            g.fill(0.0);
            for (i, w) in x.windows(2).enumerate() {
                let t = w[1] - w[0] * w[0];
                g[i] += -400.0 * w[0] * t - 2.0 * (1.0 - w[0]);
                g[i + 1] += 200.0 * t;
            }
            Ok(())
        }
    }

    const DENSE_FROM_THE_START: Switch = Switch { work_ratio: 0.0 };
    const IMPLICIT_THROUGHOUT: Switch = Switch {
        work_ratio: f64::INFINITY,
    };

    fn run(n: usize, options: &Options, switch: Switch) -> OptimizeResult {
        let x0 = vec![0.0; n];
        let mut observer = |_: &Iterate<'_>| ControlFlow::Continue(());
        minimize_with(
            &mut Rosenbrock(n),
            Start::Host(&x0),
            options,
            &mut observer,
            switch,
        )
        .unwrap()
    }

    fn assert_close(a: &[f64], b: &[f64], rtol: f64) {
        for (a, b) in a.iter().zip(b) {
            assert!(
                (a - b).abs() <= rtol * a.abs().max(b.abs()).max(1e-3),
                "{a} vs {b}"
            );
        }
    }

    /// The two forms hold the same matrix, so every policy follows the same iterates (to
    /// rounding), including the one that switches partway; and after `mid_run` iterations (past
    /// the ski-rental switch) they return the same `hess_inv`. Only mid-run: across runs, the
    /// update amplifies rounding-level differences in the pairs (on Rosenbrock n = 10, from
    /// 1e-11 of the largest entry at iteration 20 to 2e-8 at 50), while from the same pairs
    /// both forms agree to 1e-14 (the test below).
    fn assert_forms_agree(n: usize, options: &Options, mid_run: usize) {
        let runs = |options: &Options| {
            [
                DENSE_FROM_THE_START,
                IMPLICIT_THROUGHOUT,
                Switch::SKI_RENTAL,
            ]
            .map(|switch| run(n, options, switch))
        };
        let [dense, others @ ..] = runs(options);
        assert!(dense.success);
        for other in &others {
            assert_eq!(
                (dense.nit, dense.nfev, dense.njev),
                (other.nit, other.nfev, other.njev)
            );
            assert_close(&dense.x, &other.x, 1e-10);
            assert_close(&[dense.fun], &[other.fun], 1e-10);
        }

        let options = Options {
            maxiter: Some(mid_run),
            return_hess_inv: true,
            ..options.clone()
        };
        let [dense, others @ ..] = runs(&options);
        let dense_h = dense.hess_inv.unwrap_or_default();
        let largest = dense_h.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
        for other in others {
            let difference = &dense_h - &other.hess_inv.unwrap_or_default();
            assert!(
                difference.iter().all(|d| d.abs() <= 1e-10 * largest),
                "{difference}"
            );
        }
    }

    #[test]
    fn implicit_and_dense_forms_give_the_same_iterates() {
        // 61 iterations; the ski-rental run switches to dense at k = 16.
        assert_forms_agree(10, &Options::default(), 20);
    }

    #[test]
    fn implicit_and_dense_forms_agree_from_a_users_hess_inv0() {
        let n = 6;
        let h0 = Array2::from_shape_fn(
            (n, n),
            |(i, j)| if i == j { 0.5 + 0.1 * i as f64 } else { 0.02 },
        );
        assert_forms_agree(
            n,
            &Options {
                hess_inv0: Some(h0),
                ..Options::default()
            },
            15,
        );
    }

    #[test]
    fn the_dense_matrix_built_from_pairs_is_the_two_loop_operator() {
        let n = 3;
        let h0 = array![[2.0, 0.3, 0.0], [0.3, 1.0, 0.1], [0.0, 0.1, 0.5]];
        let pairs: VecDeque<CurvaturePair<Vec<f64>>> = [
            ([0.5, -0.2, 0.1], [1.0, 0.1, 0.3]),
            ([-0.1, 0.4, 0.2], [0.2, 0.5, 0.6]),
        ]
        .into_iter()
        .map(|(s, y)| CurvaturePair {
            rho: 1.0 / dot(&s, &y),
            s: s.to_vec(),
            y: y.to_vec(),
        })
        .collect();
        let dense = dense_from_pairs(n, Some(&h0), &pairs, &mut [0.0; 3]).unwrap();
        let mut space = HostVectors::new(n);
        for j in 0..n {
            let mut column = vec![0.0; n];
            column[j] = 1.0;
            let mut scratch = [0.0; 3];
            two_loop(&mut space, &pairs, &mut column, &mut Vec::new(), |_, v| {
                matvec(&h0, v, &mut scratch);
                v.copy_from_slice(&scratch);
                Ok(())
            })
            .unwrap();
            assert_close(
                &column,
                dense
                    .column(j)
                    .as_slice()
                    .unwrap_or(&dense.column(j).to_vec()),
                1e-14,
            );
        }
    }

    #[test]
    fn ski_rental_switches_after_about_one_and_a_half_n_pairs() {
        let switch_point = |n: usize, dense_h0: bool| {
            let mut work = 0.0;
            (0..).find(|&k| {
                let due = work >= materialization_cost(n, k);
                work += implicit_product_cost(n, k, dense_h0);
                due
            })
        };
        assert_eq!(switch_point(10, false), Some(16));
        let k = switch_point(1000, false).unwrap_or(0) as f64;
        assert!((1.45e3..1.6e3).contains(&k), "{k}");
        let k = switch_point(1000, true).unwrap_or(0) as f64;
        assert!((0.9e3..1.1e3).contains(&k), "{k}");
        assert!(dense_fits(16_384) && !dense_fits(16_385) && !dense_fits(usize::MAX));
    }
}
