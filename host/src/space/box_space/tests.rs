use super::*;
use crate::linalg::vector;
use crate::space::HostVectors;

/// The host's one-pass unbounded step equals the default's two passes (a combination, then
/// the ray's point at 1), the route of a space without its own, bit for bit.
#[test]
fn the_one_pass_step_equals_the_default() {
    for n in [5, 3 * vector::PARALLEL_MIN_LEN + 7] {
        let mut host = HostVectors::new(n);
        let ramp =
            |scale: f64| -> Vec<f64> { (0..n).map(|i| scale * ((i % 11) as f64 - 5.5)).collect() };
        let (x, g, v) = (ramp(0.3), ramp(-1.7), ramp(0.01));
        let terms = [(-0.25, &g), (3.5, &v), (-1e-3, &x)];
        let mut fused = (host.zeros().unwrap(), host.zeros().unwrap());
        let slope = host
            .combined_step(&terms, &x, &g, &mut fused.0, &mut fused.1)
            .unwrap();
        let mut separate = (host.zeros().unwrap(), host.zeros().unwrap());
        let default_slope = host.combine_dot(&terms, &mut separate.0, &g).unwrap();
        host.ray_point(&x, 1.0, &separate.0, &mut separate.1)
            .unwrap();
        assert_eq!(slope.to_bits(), default_slope.to_bits());
        assert_eq!(fused, separate);
    }
}
