use super::*;
use crate::space::HostVectors;

/// A pair's products as a step's pass takes them, the `g₊` being `g`.
fn products(s: &[f64], y: &[f64], g: &[f64]) -> PairProducts {
    PairProducts {
        sy: vector::dot(s, y),
        yy: vector::dot(y, y),
        ss: vector::dot(s, s),
        gg: Some(vector::dot(g, g)),
    }
}

/// A pair pushed with its step's products known (as the unbounded step's pass takes them)
/// gets its `y`'s products from differences of gradient products: they agree with those
/// of a memory that takes every product directly to 1e-12 of the vectors' norms; where `y`
/// is too short for a difference, the products are taken directly. A pair whose `g₊ᵀg₊`
/// the push takes itself (L-BFGS's) is derived alike.
#[test]
fn products_from_differences_are_those_taken_directly() {
    let n = 53;
    let mut space = HostVectors::new(n);
    let gradient = |t: usize| -> Vec<f64> {
        (0..n)
            .map(|i| ((t * n + i) as f64 * 0.29).sin() * 10.0 / (t + 1) as f64)
            .collect()
    };
    for gg_known in [true, false] {
        let mut from_differences: Memory<Vec<f64>> = Memory::new(3);
        let mut direct: Memory<Vec<f64>> = Memory::new(3);
        let mut g = gradient(0);
        let mut differenced = 0;
        for t in 1..10 {
            // The last step is one whose `y` is tiny against the gradients.
            let g_new: Vec<f64> = if t == 9 {
                g.iter()
                    .enumerate()
                    .map(|(i, v)| v + 1e-4 * ((i as f64).cos()))
                    .collect()
            } else {
                gradient(t)
            };
            let s: Vec<f64> = (0..n).map(|i| ((t * n + i) as f64 * 0.53).cos()).collect();
            let y: Vec<f64> = g_new.iter().zip(&g).map(|(a, b)| a - b).collect();
            let held: Vec<f64> = (from_differences.columns())
                .map(|v| vector::dot(v, &s))
                .collect();
            let mut sums = products(&s, &y, &g_new);
            let known = from_differences.pairs_dot_gradient.is_some()
                && sums.yy
                    >= DERIVED_MIN_SQUARED_RATIO
                        * (vector::dot(&g, &g) + vector::dot(&g_new, &g_new));
            differenced += usize::from(known);
            if !gg_known {
                sums.gg = None;
            }
            let pair = |s_with_held| Pair {
                s: s.clone(),
                y: y.clone(),
                products: sums,
                s_with_held,
                g_new: None,
            };
            (from_differences.push(&mut space, pair(Some(held)), &g_new, None)).unwrap();
            direct.push(&mut space, pair(None), &g_new, None).unwrap();
            let scale = vector::dot(&g_new, &g_new) + vector::dot(&g, &g) + n as f64;
            for (name, a, b) in [
                ("ss", &from_differences.ss, &direct.ss),
                ("sy", &from_differences.sy, &direct.sy),
                ("yy", &from_differences.yy, &direct.yy),
            ] {
                for (a, b) in a.iter().zip(b) {
                    assert!((a - b).abs() <= 1e-12 * scale, "{name} at {t}: {a} vs {b}");
                }
            }
            g = g_new;
        }
        assert_eq!(
            differenced, 7,
            "every push but the first and the short `y`'s"
        );
    }
}

/// The products a memory keeps as pairs come and go past its capacity are, bit for bit,
/// those of its pairs computed afresh, `Yᵀg` and `Sᵀg` (and the path's) too.
#[test]
fn kept_products_are_those_of_the_pairs() {
    let n = 37;
    let mut space = HostVectors::new(n);
    let mut memory = Memory::new(4);
    for pair in 0..9 {
        let s: Vec<f64> = (0..n)
            .map(|i| ((pair * n + i) as f64 * 0.37).sin())
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| ((pair * n + i) as f64 * 0.11).cos() + 2.0)
            .collect();
        let g: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin()).collect();
        let d: Vec<f64> = g.iter().map(|v| -v * (pair % 3) as f64).collect();
        let new = Pair {
            products: products(&s, &y, &g),
            s,
            y,
            s_with_held: None,
            g_new: None,
        };
        let path = (pair % 2 == 0).then_some(&d);
        memory.push(&mut space, new, &g, path).unwrap();
        let k = memory.len();
        let with_g = memory.known_pairs_dot().unwrap().to_vec();
        let with_d = memory.pairs_dot_path().map(<[f64]>::to_vec);
        assert_eq!(with_d.is_some(), pair % 2 == 0);
        for j in 0..k {
            assert_eq!(with_g[j], vector::dot(memory.y(j), &g));
            assert_eq!(with_g[k + j], vector::dot(memory.s(j), &g));
            if let Some(with_d) = &with_d {
                assert_eq!(with_d[j], vector::dot(memory.y(j), &d));
                assert_eq!(with_d[k + j], vector::dot(memory.s(j), &d));
            }
        }
        for i in 0..k {
            for j in 0..k {
                let (si, sj, yi, yj) = (memory.s(i), memory.s(j), memory.y(i), memory.y(j));
                assert_eq!(memory.ss(i, j), vector::dot(si, sj));
                assert_eq!(memory.sy(i, j), vector::dot(si, yj));
                assert_eq!(memory.yy(i, j), vector::dot(yi, yj));
            }
        }
    }
}
