use super::gram::GRAM_TILE;
use super::*;

fn ramp(n: usize, scale: f64) -> Vec<f64> {
    (0..n).map(|i| scale * ((i % 17) as f64 - 8.0)).collect()
}

#[test]
fn dot_agrees_with_the_naive_sum_serially_and_in_parallel() {
    for n in [0, 3, 4, 1001, PARALLEL_MIN_LEN + 7] {
        let (a, b) = (ramp(n, 0.5), ramp(n, -0.25));
        let naive: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!(
            (dot(&a, &b) - naive).abs() <= 1e-12 * naive.abs().max(1.0),
            "n = {n}"
        );
    }
}

#[test]
fn norms_follow_scipy_vecnorm() {
    let v = [3.0, -4.0, 0.5];
    assert_eq!(norm(&v, f64::INFINITY), 4.0);
    assert_eq!(norm(&v, f64::NEG_INFINITY), 0.5);
    assert!((norm(&v, 2.0) - 25.25f64.sqrt()).abs() < 1e-15);
    assert!((norm(&v, 1.0) - 7.5).abs() < 1e-15);
    assert!((norm(&v, 3.0) - (27.0f64 + 64.0 + 0.125).cbrt()).abs() < 1e-13);
    assert!(norm(&[1.0, f64::NAN], f64::INFINITY).is_nan());
}

/// The fused passes give exactly what the separate ones give, serially and in parallel;
/// the parallel ∞-norm sees a NaN anywhere.
#[test]
fn fused_passes_equal_the_separate_ones() {
    for n in [5, PARALLEL_MIN_LEN * 3 + 5] {
        let (x, z) = (ramp(n, 0.3), ramp(n, -1.7));
        let (mut fused, mut separate) = (ramp(n, 0.9), ramp(n, 0.9));
        let sum = axpy_dot(-0.37, &x, &mut fused, &z);
        axpy(-0.37, &x, &mut separate);
        assert_eq!(fused, separate);
        assert_eq!(sum.to_bits(), dot(&z, &separate).to_bits());
        let mut v = ramp(n, -2.0);
        assert_eq!(norm(&v, f64::INFINITY), 16.0);
        v[n - 2] = f64::NAN;
        assert!(norm(&v, f64::INFINITY).is_nan());
    }
}

/// The end-of-step pass writes s and y and sums exactly what the separate passes give.
#[test]
fn finish_step_equals_the_separate_passes() {
    for n in [7, PARALLEL_MIN_LEN * 2 + 9] {
        let (mut p, g_new, mut g) = (ramp(n, 0.7), ramp(n, -0.2), ramp(n, 0.05));
        let (mut s, mut y) = (p.clone(), g.clone());
        map_in_place(&mut s, |v| 0.31 * v);
        update_with(&mut y, &g_new, |old, new| new - old);
        let sums = finish_step(0.31, &mut p, &g_new, &mut g);
        assert_eq!((&p, &g), (&s, &y));
        let expected = StepSums {
            gradient_max_abs: norm(&g_new, f64::INFINITY),
            ss: dot(&s, &s),
            sy: dot(&s, &y),
            yy: dot(&y, &y),
        };
        let bits = |s: StepSums| [s.gradient_max_abs, s.ss, s.sy, s.yy].map(f64::to_bits);
        assert_eq!(bits(sums), bits(expected));
        // A NaN anywhere in g₊, in the lanes or the tail, is the norm's: n − 1 lies past
        // the last whole four of its block (7 % 4 = 3; the parallel n's last block has
        // 970 entries of 1025-entry blocks, 970 % 4 = 2).
        for at in [0, n - 1] {
            let mut g_nan = g_new.clone();
            g_nan[at] = f64::NAN;
            let (mut p, mut g) = (ramp(n, 0.7), ramp(n, 0.05));
            assert!(
                finish_step(0.31, &mut p, &g_nan, &mut g)
                    .gradient_max_abs
                    .is_nan()
            );
        }
    }
}

/// `dots` of any shape (every sweep size, with a tail past the last four) are [`dot`]'s
/// bits.
#[test]
fn dots_of_every_shape_are_dots_bits() {
    for n in [0, 14, PARALLEL_MIN_LEN + 6] {
        let all: Vec<Vec<f64>> = (0..14).map(|i| ramp(n, 0.3 + i as f64)).collect();
        let all: Vec<&[f64]> = all.iter().map(Vec::as_slice).collect();
        for count in 1..=9 {
            for k in 1..=5 {
                let (vectors, with) = (&all[..count], &all[9..9 + k]);
                let mut products = vec![f64::NAN; count * k];
                dots(vectors, with, &mut products);
                for (i, v) in vectors.iter().enumerate() {
                    for (j, w) in with.iter().enumerate() {
                        let (got, want) = (products[i * k + j], dot(v, w));
                        assert_eq!(got.to_bits(), want.to_bits(), "{count}×{k}, n {n}");
                    }
                }
            }
        }
    }
}

/// The one-pass products and combination give exactly what separate passes give.
#[test]
fn dots_and_combine_equal_the_separate_passes() {
    for n in [0, 9, PARALLEL_MIN_LEN * 2 + 11] {
        let vectors: Vec<Vec<f64>> = (0..5).map(|i| ramp(n, 0.3 + i as f64)).collect();
        let with = [ramp(n, -0.7), ramp(n, 1.9)];
        let vectors: Vec<&[f64]> = vectors.iter().map(Vec::as_slice).collect();
        let with: Vec<&[f64]> = with.iter().map(Vec::as_slice).collect();
        let mut products = vec![f64::NAN; vectors.len() * with.len()];
        dots(&vectors, &with, &mut products);
        for (i, v) in vectors.iter().enumerate() {
            for (j, w) in with.iter().enumerate() {
                assert_eq!(products[i * 2 + j].to_bits(), dot(v, w).to_bits());
            }
        }
        let coefficients = [-0.25, 3.5, 0.1, -7.0, 1.0 / 3.0];
        let terms: Vec<(f64, &[f64])> = coefficients.into_iter().zip(vectors).collect();
        let z = ramp(n, -0.6);
        let mut combined = vec![f64::NAN; n];
        let sum = combine_dot(&terms, &mut combined, &z);
        let mut separate = terms[0].1.to_vec();
        map_in_place(&mut separate, |v| terms[0].0 * v);
        for &(c, v) in &terms[1..] {
            axpy(c, v, &mut separate);
        }
        assert_eq!(combined, separate);
        assert_eq!(sum.to_bits(), dot(&z, &separate).to_bits());
        assert_eq!(combine_dot(&[], &mut combined, &z), 0.0);
        assert!(combined.iter().all(|&v| v == 0.0));
    }
}

/// The indexed maximum: the serial fold below the parallel length, and the same value from
/// fixed blocks above it.
#[test]
fn indexed_maxima() {
    for n in [0, 9, PARALLEL_MIN_LEN * 2 + 11] {
        let term = |i: usize| ((i % 7) as f64 - 3.0) * 0.25;
        let peak = (0..n).map(term).fold(0.0, f64::max);
        assert_eq!(max_indexed(n, term), peak);
    }
    assert!(max_indexed(3, |i| [1.0, f64::NAN, 2.0][i]).is_nan());
    assert!(max_indexed(3, |i| [1.0, 2.0, f64::NAN][i]).is_nan());
}

/// `smallest_indexed` picks the same keys, in order, as a sort of all of them.
#[test]
fn smallest_indexed_is_a_sorted_prefix_whatever_the_blocks() {
    for n in [13, PARALLEL_MIN_LEN * 2 + 11] {
        // Keys that repeat, and indices without one.
        let key = |i: usize| (i % 5 != 2).then_some(((i * 7919) % 1013, i));
        let mut expected: Vec<_> = (0..n).filter_map(key).collect();
        let keys = expected.len();
        expected.sort_unstable();
        for count in [0, 1, 40] {
            let (smallest, total) = smallest_indexed(n, count, key);
            assert_eq!(total, keys);
            assert_eq!(
                smallest,
                expected[..count.min(keys)],
                "n {n}, count {count}"
            );
        }
    }
}

/// `masked_gram` sums `wᵢwᵢᵀ` and `uᵢ·wᵢ` over the kept rows alone, symmetric to the bit:
/// against the sums written out row by row, to rounding, on both sides of a mask, short and
/// long (tiles filled and not).
#[test]
fn masked_gram_sums_the_kept_rows() {
    for n in [13, 3 * GRAM_TILE + 5, PARALLEL_MIN_LEN * 2 + 11] {
        let wave = |i: usize, k: f64| (i as f64 * 0.37 + k).sin() * 2.0 + k * 0.1;
        let vectors: Vec<Vec<f64>> = (0..5)
            .map(|k| (0..n).map(|i| wave(i, k as f64)).collect())
            .collect();
        let columns: Vec<(f64, &[f64])> = [1.0, 2.5, -0.5]
            .into_iter()
            .zip(vectors.iter().map(Vec::as_slice))
            .collect();
        let u: Vec<(f64, &[f64])> = vec![(0.5, &vectors[3]), (-2.0, &vectors[4])];
        let mask: Vec<bool> = (0..n).map(|i| i % 3 != 1).collect();
        for keep in [true, false] {
            let (gram, with_u) = masked_gram(&columns, &mask, keep, &u);
            let (mut outer, mut products) = ([0.0; 9], [0.0; 3]);
            for i in (0..n).filter(|&i| mask[i] == keep) {
                let w: Vec<f64> = columns.iter().map(|(c, v)| c * v[i]).collect();
                let ui = 0.5 * vectors[3][i] + -2.0 * vectors[4][i];
                for a in 0..3 {
                    for b in 0..3 {
                        outer[a * 3 + b] += w[a] * w[b];
                    }
                    products[a] += ui * w[a];
                }
            }
            let close = |got: f64, want: f64| (got - want).abs() <= 1e-12 * want.abs().max(1.0);
            for a in 0..3 {
                for b in 0..3 {
                    assert!(close(gram[a * 3 + b], outer[a * 3 + b]), "n {n} ({a}, {b})");
                    assert_eq!(gram[a * 3 + b].to_bits(), gram[b * 3 + a].to_bits());
                }
                assert!(close(with_u[a], products[a]), "n {n} {a}");
            }
        }
    }
}

/// The first NaN or infinity is found wherever it is, serially and block-wise: alone, in a
/// block's last entry, behind a later one, and in the short last block.
#[test]
fn first_non_finite_finds_the_first() {
    for n in [10, PARALLEL_MIN_LEN * 3 + 5] {
        let clean = ramp(n, 1.5);
        assert_eq!(first_non_finite(&clean), None);
        let block = n.div_ceil(REDUCTION_BLOCKS);
        for (first, later) in [
            (0, None),
            (block - 1, Some(n - 1)),
            (n - 1, None),
            (7, Some(8)),
        ] {
            for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
                let mut v = clean.clone();
                v[first] = bad;
                if let Some(later) = later {
                    v[later] = f64::NAN;
                }
                assert_eq!(
                    first_non_finite(&v),
                    Some(first),
                    "n = {n}, {bad} at {first}"
                );
            }
        }
    }
}

#[test]
fn elementwise_kernels_cover_every_entry_in_parallel() {
    let n = PARALLEL_MIN_LEN * 2 + 3;
    let (a, b) = (ramp(n, 1.0), ramp(n, 2.0));
    let mut out = vec![0.0; n];
    fill_with(&mut out, &a, &b, |a, b| a + b);
    assert!(out.iter().zip(&a).all(|(o, a)| *o == 3.0 * a));
    axpy(-3.0, &a, &mut out);
    assert!(out.iter().all(|&o| o == 0.0));
    map_in_place(&mut out, |x| x + 1.0);
    assert!(out.iter().all(|&o| o == 1.0));
}
