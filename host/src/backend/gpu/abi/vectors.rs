//! The argument lists of the vector kernels, which a solver whose vectors stay on the device
//! launches, and of L-BFGS-B's box passes; [`vector_launches`] launches each once for the PTX
//! signature test.

use super::KernelArg::{F64, Ptr};
use super::{KernelArg, Launch, count};
use gpu_kernels::kernel::{
    AIM_PARTIALS, AXPY, BOX_PATH_PARTIALS, BREAKPOINT_CHUNKS, CLIPPED_RAY_POINT,
    COMBINE_DOT_PARTIALS, DIFFERENCE, DOT_PARTIALS, DOTS_PARTIALS, FREE_PARTIALS, GATHER,
    MASKED_GRAM_PARTIALS, MAX_ABS_PARTIALS, NEW_PAIR_PARTIALS, PATH_POINT, PLACE,
    PROJECT_AIM_PARTIALS, RAY_POINT, REACH_PARTIALS, SCALE, SCATTER, STEP_END_PARTIALS,
    SUM_PARTIAL_ROWS, TRUNCATE,
};

/// The vector kernels of a solver whose vectors stay on the device; vectors by address.
impl Launch {
    /// `y ← y + alpha·x`.
    pub fn axpy(n: usize, alpha: f64, x: u64, y: u64) -> Launch {
        Launch::of(AXPY, vec![count(n), F64(alpha), Ptr(x), Ptr(y)])
    }

    /// `v ← alpha·v`.
    pub fn scale(n: usize, alpha: f64, v: u64) -> Launch {
        Launch::of(SCALE, vec![count(n), F64(alpha), Ptr(v)])
    }

    /// `out ← x + step·p`.
    pub fn ray_point(n: usize, x: u64, step: f64, p: u64, out: u64) -> Launch {
        Launch::of(
            RAY_POINT,
            vec![count(n), Ptr(x), F64(step), Ptr(p), Ptr(out)],
        )
    }

    /// `old ← new − old`.
    pub fn difference(n: usize, new: u64, old: u64) -> Launch {
        Launch::of(DIFFERENCE, vec![count(n), Ptr(new), Ptr(old)])
    }

    /// One partial sum of `a·b` per block into `partials`.
    pub fn dot_partials(n: usize, a: u64, b: u64, partials: u64) -> Launch {
        Launch::of(DOT_PARTIALS, vec![count(n), Ptr(a), Ptr(b), Ptr(partials)])
    }

    /// One partial `max |v_i|` per block into `partials`.
    pub fn max_abs_partials(n: usize, v: u64, partials: u64) -> Launch {
        Launch::of(MAX_ABS_PARTIALS, vec![count(n), Ptr(v), Ptr(partials)])
    }

    /// One row of partial sums per vector of `table` (`vectors` addresses), each against
    /// `with`, into `partials` (row `j` at `j·blocks`).
    pub fn dots_partials(n: usize, table: u64, vectors: usize, with: u64, partials: u64) -> Launch {
        Launch::of(
            DOTS_PARTIALS,
            vec![
                count(n),
                Ptr(table),
                count(vectors),
                Ptr(with),
                Ptr(partials),
            ],
        )
    }

    /// `out ← Σ cⱼ·vⱼ` over the `terms` vectors of `table` and the coefficients at
    /// `coefficients`, with one partial sum of `zᵀout` per block into `partials` (`z` and
    /// `partials` both 0: the combination alone).
    pub fn combine_dot_partials(
        n: usize,
        table: u64,
        coefficients: u64,
        terms: usize,
        out: u64,
        z: u64,
        partials: u64,
    ) -> Launch {
        Launch::of(
            COMBINE_DOT_PARTIALS,
            vec![
                count(n),
                Ptr(table),
                Ptr(coefficients),
                count(terms),
                Ptr(out),
                Ptr(z),
                Ptr(partials),
            ],
        )
    }

    /// `p ← step·p`, `g ← g_new − g`, and the step's five rows of partials into `partials`.
    pub fn step_end_partials(
        n: usize,
        step: f64,
        p: u64,
        g_new: u64,
        g: u64,
        partials: u64,
    ) -> Launch {
        Launch::of(
            STEP_END_PARTIALS,
            vec![
                count(n),
                F64(step),
                Ptr(p),
                Ptr(g_new),
                Ptr(g),
                Ptr(partials),
            ],
        )
    }

    /// `out[j] = Σ` row `j` of `rows` rows of `blocks` partials.
    pub fn sum_partial_rows(partials: u64, blocks: usize, rows: usize, out: u64) -> Launch {
        Launch::of(
            SUM_PARTIAL_ROWS,
            vec![Ptr(partials), count(blocks), count(rows), Ptr(out)],
        )
    }

    /// The Gram matrix of the `vectors` of `table` and their products with `u` (none where it
    /// is 0), over the rows where `mask` is nonzero (`keep`) or zero (not `keep`): one row of
    /// partials per product.
    pub fn masked_gram_partials(
        n: usize,
        table: u64,
        vectors: usize,
        u: u64,
        (mask, keep): (u64, bool),
        partials: u64,
    ) -> Launch {
        Launch::of(
            MASKED_GRAM_PARTIALS,
            vec![
                count(n),
                Ptr(table),
                count(vectors),
                Ptr(u),
                Ptr(mask),
                count(usize::from(keep)),
                Ptr(partials),
            ],
        )
    }
}

/// The box passes of a step within bounds (`gpu_kernels::device::box_entry`); a box is
/// `(lower, upper)` addresses, both 0 for one with no finite side.
impl Launch {
    /// The steepest-descent path's `times` and `path` (not written where both are 0) and the
    /// partials of the projected gradient's ∞-norm.
    pub fn box_path_partials(
        n: usize,
        (lower, upper): (u64, u64),
        x: u64,
        g: u64,
        (times, path): (u64, u64),
        partials: u64,
    ) -> Launch {
        let args = vec![Ptr(x), Ptr(g), Ptr(times), Ptr(path), Ptr(partials)];
        Launch::boxed(BOX_PATH_PARTIALS, n, (lower, upper), args)
    }

    /// `out ← x + t·path` where `path ≠ 0`, else `x`.
    pub fn path_point(n: usize, x: u64, t: f64, path: u64, out: u64) -> Launch {
        Launch::of(
            PATH_POINT,
            vec![count(n), Ptr(x), F64(t), Ptr(path), Ptr(out)],
        )
    }

    /// The free mask at `point` and the partials of its count.
    pub fn free_partials(
        n: usize,
        bounds: (u64, u64),
        point: u64,
        free: u64,
        partials: u64,
    ) -> Launch {
        let args = vec![Ptr(point), Ptr(free), Ptr(partials)];
        Launch::boxed(FREE_PARTIALS, n, bounds, args)
    }

    /// `direction ← target − x`, and the partials of its slope and room.
    pub fn aim_partials(
        n: usize,
        bounds: (u64, u64),
        x: u64,
        g: u64,
        target: u64,
        direction: u64,
        partials: u64,
    ) -> Launch {
        let args = vec![Ptr(x), Ptr(g), Ptr(target), Ptr(direction), Ptr(partials)];
        Launch::boxed(AIM_PARTIALS, n, bounds, args)
    }

    /// The projection of `cauchy + step` over the free variables into `target`, then
    /// [`aim_partials`](Launch::aim_partials)' work.
    pub fn project_aim_partials(
        n: usize,
        bounds: (u64, u64),
        (free, cauchy, step): (u64, u64, u64),
        (x, g): (u64, u64),
        (target, direction): (u64, u64),
        partials: u64,
    ) -> Launch {
        let args = [free, cauchy, step, x, g, target, direction, partials].map(Ptr);
        Launch::boxed(PROJECT_AIM_PARTIALS, n, bounds, args.to_vec())
    }

    /// The partials of the least fraction of `step` the free variables may follow, and of the
    /// least index whose fraction is `alpha`.
    pub fn reach_partials(
        n: usize,
        bounds: (u64, u64),
        (free, cauchy, step): (u64, u64, u64),
        alpha: f64,
        partials: u64,
    ) -> Launch {
        let args = vec![Ptr(free), Ptr(cauchy), Ptr(step), F64(alpha), Ptr(partials)];
        Launch::boxed(REACH_PARTIALS, n, bounds, args)
    }

    /// `target ← cauchy + alpha·step` over the free variables, the bound at `first`.
    pub fn truncate(
        n: usize,
        bounds: (u64, u64),
        (free, cauchy, step): (u64, u64, u64),
        alpha: f64,
        first: usize,
        target: u64,
    ) -> Launch {
        let args = vec![
            Ptr(free),
            Ptr(cauchy),
            Ptr(step),
            F64(alpha),
            count(first),
            Ptr(target),
        ];
        Launch::boxed(TRUNCATE, n, bounds, args)
    }

    /// `out ← P(x + step·d)`.
    pub fn clipped_ray_point(
        n: usize,
        bounds: (u64, u64),
        x: u64,
        step: f64,
        d: u64,
        out: u64,
    ) -> Launch {
        let args = vec![Ptr(x), F64(step), Ptr(d), Ptr(out)];
        Launch::boxed(CLIPPED_RAY_POINT, n, bounds, args)
    }

    /// `s ← step·d`, `y ← g_new − g`, and the pair's six rows of partials.
    pub fn new_pair_partials(
        n: usize,
        step: f64,
        (d, g_new, g): (u64, u64, u64),
        (s, y): (u64, u64),
        partials: u64,
    ) -> Launch {
        let vectors = [d, g_new, g, s, y, partials].map(Ptr);
        let mut args = vec![count(n), F64(step)];
        args.extend(vectors);
        Launch::of(NEW_PAIR_PARTIALS, args)
    }

    /// Each `chunk`-long run of the `n` `times`: its least breakpoint into `out[c]`, how many
    /// into `out[⌈n / chunk⌉ + c]`.
    pub fn breakpoint_chunks(n: usize, times: u64, chunk: usize, out: u64) -> Launch {
        Launch::of(
            BREAKPOINT_CHUNKS,
            vec![count(n), Ptr(times), count(chunk), Ptr(out)],
        )
    }

    /// `out[r·vectors + j] ← vⱼ[indices[r]]` over the `vectors` addresses of `table`.
    pub fn gather(table: u64, vectors: usize, indices: u64, rows: usize, out: u64) -> Launch {
        Launch::of(
            GATHER,
            vec![
                Ptr(table),
                count(vectors),
                Ptr(indices),
                count(rows),
                Ptr(out),
            ],
        )
    }

    /// `to[indices[r]] ← from[r]` for the `rows` indices at `indices`.
    pub fn place(rows: usize, indices: u64, from: u64, to: u64) -> Launch {
        Launch::of(PLACE, vec![count(rows), Ptr(indices), Ptr(from), Ptr(to)])
    }

    /// `v[index] ← value` for the `pairs` pairs at `entries`.
    pub fn scatter(v: u64, entries: u64, pairs: usize) -> Launch {
        Launch::of(SCATTER, vec![Ptr(v), Ptr(entries), count(pairs)])
    }

    /// `(n, lower, upper, args…)`.
    fn boxed(
        kernel: &'static str,
        n: usize,
        (lower, upper): (u64, u64),
        args: Vec<KernelArg>,
    ) -> Launch {
        let mut all = vec![count(n), Ptr(lower), Ptr(upper)];
        all.extend(args);
        Launch::of(kernel, all)
    }
}

/// A launch of every vector kernel, with placeholder arguments, for the PTX signature test.
pub fn vector_launches() -> Vec<Launch> {
    vec![
        Launch::axpy(1, 1.0, 1, 2),
        Launch::scale(1, 1.0, 1),
        Launch::ray_point(1, 1, 1.0, 2, 3),
        Launch::difference(1, 1, 2),
        Launch::dot_partials(1, 1, 2, 3),
        Launch::max_abs_partials(1, 1, 2),
        Launch::sum_partials(1, 1, 2),
        Launch::dots_partials(1, 1, 1, 2, 3),
        Launch::combine_dot_partials(1, 1, 2, 1, 3, 4, 5),
        Launch::step_end_partials(1, 1.0, 1, 2, 3, 4),
        Launch::sum_partial_rows(1, 1, 1, 2),
        Launch::masked_gram_partials(1, 1, 1, 2, (3, true), 4),
        Launch::box_path_partials(1, (1, 2), 3, 4, (5, 6), 7),
        Launch::path_point(1, 1, 1.0, 2, 3),
        Launch::free_partials(1, (1, 2), 3, 4, 5),
        Launch::aim_partials(1, (1, 2), 3, 4, 5, 6, 7),
        Launch::project_aim_partials(1, (1, 2), (3, 4, 5), (6, 7), (8, 9), 10),
        Launch::reach_partials(1, (1, 2), (3, 4, 5), 0.5, 6),
        Launch::truncate(1, (1, 2), (3, 4, 5), 0.5, 0, 6),
        Launch::clipped_ray_point(1, (1, 2), 3, 1.0, 4, 5),
        Launch::new_pair_partials(1, 1.0, (1, 2, 3), (4, 5), 6),
        Launch::breakpoint_chunks(1, 2, 1, 3),
        Launch::gather(1, 1, 2, 1, 3),
        Launch::scatter(1, 2, 1),
        Launch::place(1, 1, 2, 3),
    ]
}
