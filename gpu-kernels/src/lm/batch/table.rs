//! A batch's tables, made where its kernel runs: each fit's predictors, observations and
//! weights laid out as its term reads them, from the columns as the user holds them. So only
//! the columns cross to a GPU: predictors that every fit shares cross once, not once a fit, and
//! weights of 1 not at all.

use crate::device::weight;
use crate::raw::{Out, Thread};

/// Writes each fit's table into `table`: fit `f` has the points `offsets[f] .. offsets[f + 1]`
/// of `N = y.len()`, and its table starts at `cols · offsets[f]`, `cols = predictors + 2`: its
/// predictors column after column, then its `y`, then its weights `1/σ` (1 where `sigma` is
/// empty). `x` holds the `predictors` columns end to end: all of `N` values, a value per
/// point, or all of `M` values that every fit shares, where every fit has `M` points. A fit
/// whose points do not match `x` gets NaN predictors, and fails alone. One thread per fit: a
/// fit's table is its own contiguous run.
pub fn batch_table(
    thread: Thread,
    x: &[f64],
    y: &[f64],
    sigma: &[f64],
    offsets: &[f64],
    table: Out<'_>,
    predictors: u64,
) {
    let (k, total) = (predictors as usize, y.len());
    let cols = k + 2;
    let fits = offsets.len().saturating_sub(1);
    for f in thread.grid_stride(fits) {
        let (first, end) = (offsets[f] as usize, offsets[f + 1] as usize);
        let Some(m) = end.checked_sub(first).filter(|_| end <= total) else {
            continue;
        };
        if cols * end > table.len() {
            continue;
        }
        let per_point = x.len() == k * total;
        let shared = !per_point && x.len() == k * m;
        let base = cols * first;
        for c in 0..k {
            for j in 0..m {
                let value = match (per_point, shared) {
                    (true, _) => x[c * total + first + j],
                    (false, true) => x[c * m + j],
                    (false, false) => f64::NAN,
                };
                table.set(base + c * m + j, value);
            }
        }
        for j in 0..m {
            let i = first + j;
            table.set(base + k * m + j, y[i]);
            let w = sigma.get(i).map_or(1.0, |&s| weight(s));
            table.set(base + (k + 1) * m + j, w);
        }
    }
}

crate::grid_kernel!(
    BATCH_TABLE = batch_table(
        x: In,
        y: In,
        sigma: In,
        offsets: In,
        table: Out,
        predictors: U64
    )
);
