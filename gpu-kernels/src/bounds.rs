//! One variable's box `lower ≤ x ≤ upper` (`±∞` where a side has none): the scalar questions a
//! bounded quasi-Newton step asks of it, once for the host's passes and the device's kernels.

/// `v` moved into `[lower, upper]`.
#[inline(always)]
pub fn clip(lower: f64, upper: f64, v: f64) -> f64 {
    v.max(lower).min(upper)
}

/// When a variable at `x` meets its bound along `−g·t`: `∞` if never, 0 if at once.
#[inline(always)]
pub fn breakpoint(lower: f64, upper: f64, x: f64, g: f64) -> f64 {
    if g < 0.0 && upper.is_finite() {
        (x - upper) / g
    } else if g > 0.0 && lower.is_finite() {
        (x - lower) / g
    } else {
        f64::INFINITY
    }
}

/// Whether a time from [`breakpoint`] is a breakpoint of the Cauchy path: one the path meets
/// after its start (not 0: cannot move; not `∞`: never meets a bound).
#[inline(always)]
pub fn is_breakpoint(t: f64) -> bool {
    t > 0.0 && t.is_finite()
}

/// Whether variable `i`'s time `t` is a breakpoint that comes after breakpoint `after` (a time
/// and an index) in the path's order: by time, then by index. `after = (0, _)` passes every
/// breakpoint.
#[inline(always)]
pub fn is_breakpoint_after(t: f64, i: usize, after: (f64, usize)) -> bool {
    is_breakpoint(t) && (t > after.0 || (t == after.0 && i > after.1))
}

/// Which bound `x` is at: −1 its lower, 1 its upper, 0 neither (at equal bounds, its lower);
/// scipy's `active_mask`.
#[inline(always)]
pub fn active(lower: f64, upper: f64, x: f64) -> f64 {
    if x == lower {
        -1.0
    } else if x == upper {
        1.0
    } else {
        0.0
    }
}

/// The projected gradient's entry `x − P(x − g)` (sign aside): `g` where the variable may move
/// along `−g`, what is left to its bound where that is nearer; NaN where `g` is NaN.
#[inline(always)]
pub fn projected(lower: f64, upper: f64, x: f64, g: f64) -> f64 {
    if g < 0.0 {
        (x - upper).max(g)
    } else if g >= 0.0 {
        (x - lower).min(g)
    } else {
        g
    }
}

/// How far along `d` a variable may go from `x` within its bounds, as a multiple of `d`: `∞`
/// where it never meets one (`d = 0`, or that side unbounded), 0 where it is already on (or
/// past) the bound it moves toward (told by the sign of the room against `d`'s, which a product
/// of two tiny values would lose to underflow).
#[inline(always)]
pub fn room(lower: f64, upper: f64, x: f64, d: f64) -> f64 {
    let room = if d < 0.0 {
        lower - x
    } else if d > 0.0 {
        upper - x
    } else {
        return f64::INFINITY;
    };
    if !room.is_finite() {
        f64::INFINITY
    } else if room * d.signum() <= 0.0 {
        0.0
    } else {
        room / d
    }
}

/// How far a variable may follow the subspace step `d` from the Cauchy point `x`, as a fraction
/// of the step: `min(room, 1)` for a free variable, 1 for one held at its bound (it does not
/// move).
#[inline(always)]
pub fn reach(lower: f64, upper: f64, free: bool, x: f64, d: f64) -> f64 {
    if free {
        room(lower, upper, x, d).min(1.0)
    } else {
        1.0
    }
}

/// A variable of the step cut at the fraction `alpha` (the least [`reach`]): a held one (not
/// `free`) stays at `x`, the `first` to meet its bound lands on it exactly (rounding would
/// leave it a hair inside or out), the other free ones move `alpha·d`.
#[inline(always)]
pub fn truncated(
    lower: f64,
    upper: f64,
    free: bool,
    first: bool,
    x: f64,
    d: f64,
    alpha: f64,
) -> f64 {
    if !free {
        x
    } else if first {
        if d > 0.0 { upper } else { lower }
    } else {
        x + alpha * d
    }
}
