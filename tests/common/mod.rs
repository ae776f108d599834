//! Measures shared by the integration tests.
#![allow(dead_code)] // each test crate uses a different subset

pub mod cli;

/// `max(‖v‖∞, 1)`: what gradient errors are measured relative to.
pub fn gradient_scale(v: &[f64]) -> f64 {
    v.iter().fold(1.0_f64, |m, x| m.max(x.abs()))
}

/// `max_i |g_i − exact_i| / max(‖exact‖∞, 1)`.
pub fn relative_error(g: &[f64], exact: &[f64]) -> f64 {
    g.iter()
        .zip(exact)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
        / gradient_scale(exact)
}
