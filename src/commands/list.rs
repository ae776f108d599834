//! `cudamin list`: the built-in problems with their n rule, x0 and known minimum.

use super::print_json;
use cudamin::problems;
use std::io::Write;

#[derive(serde::Serialize)]
struct Entry {
    name: &'static str,
    title: &'static str,
    n_rule: &'static str,
    default_n: usize,
    default_points: Option<usize>,
    x0: &'static str,
    f_star: &'static str,
}

#[derive(serde::Serialize)]
struct Listing {
    problems: Vec<Entry>,
}

pub fn run(json: bool) -> anyhow::Result<()> {
    let mut out = super::stdout();
    let problems: Vec<Entry> = problems::all()
        .map(|p| Entry {
            name: p.name,
            title: p.title,
            n_rule: p.n_rule,
            default_n: p.default_n,
            default_points: p.default_points,
            x0: p.x0_rule,
            f_star: p.f_star_rule,
        })
        .collect();
    if json {
        return print_json(&Listing { problems });
    }
    for p in &problems {
        writeln!(out, "{:<16} {}", p.name, p.title)?;
        let points = p.default_points.map_or(String::new(), |d| {
            format!("; data points: --points, default {d}")
        });
        writeln!(
            out,
            "{:<16} n: {} (default {}){points}; x0: {}; f*: {}",
            "", p.n_rule, p.default_n, p.x0, p.f_star
        )?;
    }
    Ok(())
}
