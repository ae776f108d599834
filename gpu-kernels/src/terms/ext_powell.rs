//! MGH 22, extended Powell singular: blocks of four variables, `n` a multiple of 4.
//! `(x₀ + 10x₁)² + 5(x₂ − x₃)² + (x₁ − 2x₂)⁴ + 10(x₀ − x₃)⁴` per block.

use crate::{Data, Num, Real, Term, Vars, Window};

/// MGH 22, extended Powell singular: one term per block of four variables (see the module doc).
pub struct ExtPowell;

impl Term for ExtPowell {
    const WINDOW: Window = Window::Banded {
        stride: 4,
        width: 4,
    };
    type Local<'a> = ();
    const EVAL_IN_LANES: bool = true;

    fn prepare(_k: usize, _n: usize, _data: Data<'_>) {}

    #[inline(always)]
    fn eval<R: Real>(x: Vars<'_, R>, _: &()) -> Num<R> {
        (x[0] + x[1] * 10.0).sq()
            + (x[2] - x[3]).sq() * 5.0
            + (x[1] - x[2] * 2.0).powi(4)
            + (x[0] - x[3]).powi(4) * 10.0
    }
}

crate::register_term!(ExtPowell, ext_powell);
