//! The exact residual rows of one pass of a small fit: each row's value and derivatives, on
//! duals. Where the window of duals lives is the pass's main memory traffic, so each target
//! keeps it where it is cheapest. A CPU core seeds it once per pass, all `n ≤ L` parameters
//! at once, and reads it at every row. A GPU thread builds it afresh in each evaluation from
//! the parameters: every index is then a constant, and the window stays in registers instead
//! of the thread's local memory. Both give the same values, to the bit.

use super::PARAMS_MAX;
use crate::Dual;
use crate::float::Float;
use crate::term::{Data, Term, Vars, Window};

/// The rows of a pass at the parameters `x` (the first `n ≤` [`PARAMS_MAX`]; the rest 0), `L`
/// lanes an evaluation.
pub(super) struct ExactRows<'x, F: Float, const L: usize> {
    x: &'x [F; PARAMS_MAX],
    n: usize,
    /// The window seeded along every parameter, kept for the pass: on the CPU, where `n ≤ L`.
    seeded: Option<[Dual<L, F>; PARAMS_MAX]>,
}

impl<'x, F: Float, const L: usize> ExactRows<'x, F, L> {
    #[inline(always)]
    pub(super) fn new(x: &'x [F; PARAMS_MAX], n: usize) -> Self {
        const { assert!(2 * L >= PARAMS_MAX, "a row takes at most two evaluations") };
        let seeded = (!cfg!(target_arch = "nvptx64") && n <= L).then(|| seeded(x, 0));
        ExactRows { x, n, seeded }
    }

    /// Residual `term` of `T`; its derivative in each parameter `j < n` is handed to
    /// `put(j, derivative)`, where it goes straight to its place: no row passes through memory.
    #[inline(always)]
    pub(super) fn row<T: Term>(
        &self,
        term: usize,
        data: Data<'_>,
        mut put: impl FnMut(usize, F),
    ) -> F {
        // A residual of a fit reads every parameter: a window that moves with the term would
        // number its derivatives by their place in it, not by parameter.
        const {
            assert!(
                matches!(T::WINDOW, Window::Dense),
                "a batch fit's term is dense"
            )
        };
        let (x, n) = (self.x, self.n);
        let local = T::prepare(term, n, data);
        if let Some(window) = &self.seeded {
            return evaluate::<T, F, L>(window, 0, n, &local, &mut put);
        }
        // The two evaluations written out, not a loop: a loop kept `first`, and so the window,
        // in memory.
        let residual = evaluate::<T, F, L>(&seeded(x, 0), 0, n, &local, &mut put);
        match L < n {
            true => evaluate::<T, F, L>(&seeded(x, L), L, n, &local, &mut put),
            false => residual,
        }
    }
}

/// The window at `x`, seeded along parameters `first .. first + L`.
#[inline(always)]
fn seeded<F: Float, const L: usize>(x: &[F; PARAMS_MAX], first: usize) -> [Dual<L, F>; PARAMS_MAX] {
    let mut window = [Dual::<L, F>::constant_of(F::ZERO); PARAMS_MAX];
    for (i, dual) in window.iter_mut().enumerate() {
        dual.value = x[i];
        if (first..first + L).contains(&i) {
            dual.derivatives[i - first] = F::ONE;
        }
    }
    window
}

/// One evaluation of a row on `window`, seeded from `first`: the residual, and its derivatives
/// in parameters `first .. first + L`, below `n`, handed to `put`.
#[inline(always)]
fn evaluate<T: Term, F: Float, const L: usize>(
    window: &[Dual<L, F>; PARAMS_MAX],
    first: usize,
    n: usize,
    local: &T::Local<'_>,
    put: &mut impl FnMut(usize, F),
) -> F {
    let result = T::eval(Vars::seeded(&window[..n], first), local).0;
    for (lane, &derivative) in result.derivatives.iter().enumerate() {
        if first + lane < n {
            put(first + lane, derivative);
        }
    }
    result.value
}
