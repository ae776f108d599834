//! What the criterion benches share: reading back criterion's estimates for their reports.

/// criterion's median estimate for one benchmark, in nanoseconds.
pub fn median_ns(group: &str, function: &str) -> Option<f64> {
    let path = format!("target/criterion/{group}/{function}/new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let estimates: serde_json::Value = serde_json::from_str(&text).ok()?;
    estimates["median"]["point_estimate"].as_f64()
}
