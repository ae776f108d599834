//! The sums both backends take, in the same order: Neumaier's compensated sum, eight running
//! sums side by side (a CPU chunk's), and the last stage that adds partials in order.

/// Neumaier's compensated sum: the error is about `ε·Σ|v|`, whatever the number of terms,
/// for four extra flops a term. An objective's value is a sum of up to millions of terms, and
/// near a minimum the line search compares values that differ in their last digits.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompensatedSum {
    sum: f64,
    compensation: f64,
}

impl CompensatedSum {
    /// Adds `v`, carrying the rounding error of the addition in the compensation.
    #[inline(always)]
    pub fn add(&mut self, v: f64) {
        neumaier_step(&mut self.sum, &mut self.compensation, v);
    }

    /// The sum; an infinite or NaN sum is returned as it is (the compensation is NaN then).
    #[inline(always)]
    pub fn value(self) -> f64 {
        if self.sum.is_finite() {
            self.sum + self.compensation
        } else {
            self.sum
        }
    }
}

/// A sum taken one value at a time: [`CompensatedSum`], or [`CompensatedRun`].
pub trait RunningSum: Default {
    /// Adds the next value.
    fn add(&mut self, v: f64);
    /// The sum.
    fn value(self) -> f64;
}

impl RunningSum for CompensatedSum {
    #[inline(always)]
    fn add(&mut self, v: f64) {
        CompensatedSum::add(self, v);
    }
    #[inline(always)]
    fn value(self) -> f64 {
        CompensatedSum::value(self)
    }
}

impl RunningSum for CompensatedRun {
    #[inline(always)]
    fn add(&mut self, v: f64) {
        CompensatedRun::add(self, v);
    }
    #[inline(always)]
    fn value(self) -> f64 {
        CompensatedRun::value(self)
    }
}

/// How many running sums a [`CompensatedLanes`] keeps.
pub const SUM_LANES: usize = crate::lanes::TERM_LANES;

/// A compensated sum as [`CompensatedSum`], kept in [`SUM_LANES`] running sums: value `i` of a
/// run goes to sum `i mod SUM_LANES`, and [`value`](CompensatedLanes::value) adds the sums up in
/// their order. The error is the same, about `ε·Σ|v|`, but consecutive additions no longer wait
/// on each other, and eight values at once ([`add_lanes`](CompensatedLanes::add_lanes)) take
/// vector instructions. The CPU sums a chunk's terms so in every pass that takes a value (a
/// run of single values through [`CompensatedRun`]), so that the passes agree to the bit.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompensatedLanes {
    sums: [f64; SUM_LANES],
    compensations: [f64; SUM_LANES],
}

impl CompensatedLanes {
    /// Adds the run's next `SUM_LANES` values, one to each sum.
    #[inline(always)]
    pub fn add_lanes(&mut self, values: [f64; SUM_LANES]) {
        let lanes = self.sums.iter_mut().zip(self.compensations.iter_mut());
        for ((sum, compensation), v) in lanes.zip(values) {
            neumaier_step(sum, compensation, v);
        }
    }

    /// Adds `v` to sum `lane` (`< SUM_LANES`): the run's values past its last whole eight.
    #[inline(always)]
    pub fn add_to(&mut self, lane: usize, v: f64) {
        neumaier_step(&mut self.sums[lane], &mut self.compensations[lane], v);
    }

    /// The sum: the running sums added in order, compensated, with every compensation.
    #[inline(always)]
    pub fn value(self) -> f64 {
        let mut total = CompensatedSum::default();
        for sum in self.sums {
            total.add(sum);
        }
        for compensation in self.compensations {
            total.compensation += compensation;
        }
        total.value()
    }
}

/// [`CompensatedLanes`] fed one value at a time: values wait in a buffer until there are
/// eight, which go in at once (adding to one running sum at a time through a variable lane
/// index kept the sums in memory).
#[derive(Clone, Copy, Debug, Default)]
pub struct CompensatedRun {
    lanes: CompensatedLanes,
    buffer: [f64; SUM_LANES],
    waiting: usize,
}

impl CompensatedRun {
    /// Adds the run's next value.
    #[inline(always)]
    pub fn add(&mut self, v: f64) {
        self.buffer[self.waiting] = v;
        self.waiting += 1;
        if self.waiting == SUM_LANES {
            self.waiting = 0;
            self.lanes.add_lanes(self.buffer);
        }
    }

    /// The sum of the run, as [`CompensatedLanes::value`].
    #[inline(always)]
    pub fn value(mut self) -> f64 {
        for (lane, &v) in self.buffer[..self.waiting].iter().enumerate() {
            self.lanes.add_to(lane, v);
        }
        self.lanes.value()
    }
}

/// Neumaier's step on one running sum, without a branch (both corrections are formed and one
/// is kept), so that eight of them become vector instructions.
#[inline(always)]
fn neumaier_step(sum: &mut f64, compensation: &mut f64, v: f64) {
    let t = *sum + v;
    let sum_larger = (*sum - t) + v;
    let v_larger = (v - t) + *sum;
    *compensation += if sum.abs() >= v.abs() {
        sum_larger
    } else {
        v_larger
    };
    *sum = t;
}

/// The last stage of a value on either backend: the partial sums (one per GPU block or CPU
/// chunk) added in their order, compensated.
#[inline(always)]
pub fn sum_in_order(partials: impl Iterator<Item = f64>) -> f64 {
    let mut sum = CompensatedSum::default();
    for partial in partials {
        sum.add(partial);
    }
    sum.value()
}

/// The greater of `a` and `b`, NaN if either is: the step of every maximum that makes a
/// norm, on either backend, so that a norm over a vector with a NaN is NaN and no
/// convergence test passes on it (`f64::max` returns the other argument).
#[inline(always)]
pub fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || a >= b { a } else { b }
}

#[cfg(test)]
mod tests {
    use super::CompensatedSum;

    #[test]
    fn compensated_sum_keeps_what_naive_summation_loses() {
        // 1 + 10⁶ × 1e-16: naive summation never leaves 1.0.
        let mut sum = CompensatedSum::default();
        sum.add(1.0);
        for _ in 0..1_000_000 {
            sum.add(1e-16);
        }
        assert!(
            (sum.value() - (1.0 + 1e-10)).abs() < 1e-15,
            "{}",
            sum.value()
        );
        let mut infinite = CompensatedSum::default();
        infinite.add(1.0);
        infinite.add(f64::INFINITY);
        assert_eq!(infinite.value(), f64::INFINITY);
    }

    /// The lanes keep what one compensated sum keeps, eight values at once are eight added
    /// one at a time, and an infinite or NaN value comes out as it is.
    #[test]
    fn compensated_lanes_are_as_exact_and_agree_with_themselves() {
        use super::{CompensatedLanes, CompensatedRun, SUM_LANES};
        // 1 + 10⁶ × 1e-16 spread over the lanes, and 1e16 + 1 − 1e16 inside one lane; the
        // count leaves values past the last whole eight.
        let mut one_at_a_time = CompensatedRun::default();
        let mut eight_at_a_time = CompensatedLanes::default();
        let values = |i: usize| match i {
            0 => 1.0,
            8 => 1e16,
            16 => 1.0,
            24 => -1e16,
            _ => 1e-16,
        };
        let count = 1_000_003;
        for i in 0..count {
            one_at_a_time.add(values(i));
        }
        let whole = count - count % SUM_LANES;
        for block in (0..whole).step_by(SUM_LANES) {
            eight_at_a_time.add_lanes(core::array::from_fn(|l| values(block + l)));
        }
        for i in whole..count {
            eight_at_a_time.add_to(i - whole, values(i));
        }
        let expected = 2.0 + (count - 4) as f64 * 1e-16;
        let sum = one_at_a_time.value();
        assert!((sum - expected).abs() < 1e-15, "{sum} vs {expected}");
        assert_eq!(sum.to_bits(), eight_at_a_time.value().to_bits());
        let mut infinite = CompensatedRun::default();
        infinite.add(1.0);
        infinite.add(f64::INFINITY);
        assert_eq!(infinite.value(), f64::INFINITY);
        let mut nan = CompensatedRun::default();
        nan.add(f64::NAN);
        assert!(nan.value().is_nan());
    }
}
