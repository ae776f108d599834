//! How a number reads in an error message, for every crate that writes one.

/// A number in a message: as `{}` shows it where that is short, in exponent form (`1e200`,
/// `2.5e-300`) where `{}` would write hundreds of digits.
pub struct Shown(pub f64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let magnitude = self.0.abs();
        if self.0 == 0.0 || !self.0.is_finite() || (1e-5..1e16).contains(&magnitude) {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:e}", self.0)
        }
    }
}
