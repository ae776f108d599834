//! `--plot FILE.svg` (plotters): how a solve converged, and for a fit, the data against the
//! model and the residuals.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

/// One iteration as the observer saw it.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub nit: usize,
    pub fun: f64,
    pub grad_norm: f64,
}

/// A fit's panels draw at most this many points (evenly spaced in the data's order), which
/// keeps a million-point fit's SVG small: see [`drawn`].
const DRAWN_POINTS: usize = 2_000;

/// The indices of the points a fit's panels draw, out of `len`.
pub fn drawn(len: usize) -> impl Iterator<Item = usize> {
    (0..len).step_by(len.div_ceil(DRAWN_POINTS).max(1))
}

/// The points of a fit's panels (those of [`drawn`]).
pub struct FitPanels<'a> {
    pub x: &'a [f64],
    pub y: &'a [f64],
    /// The model at each `x`.
    pub model: &'a [f64],
}

/// Writes the convergence plot of `history` (`f − f_final` and `‖∇f‖∞` against the iteration,
/// log scale) to `path`, with the fit's panels below it when there is one.
pub fn write(
    path: &Path,
    title: &str,
    history: &[Step],
    f_final: f64,
    fit: Option<FitPanels<'_>>,
) -> anyhow::Result<()> {
    let height = if fit.is_some() { 1200 } else { 500 };
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE)?;
    match fit {
        None => convergence(&root, title, history, f_final)?,
        Some(panels) => {
            let areas = root.split_evenly((3, 1));
            convergence(&areas[0], title, history, f_final)?;
            data_and_model(&areas[1], &panels)?;
            residuals(&areas[2], &panels)?;
        }
    }
    root.present()
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    Ok(())
}

type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// The positive, finite values of a series, against the iteration.
fn positive(history: &[Step], value: impl Fn(&Step) -> f64) -> Vec<(f64, f64)> {
    history
        .iter()
        .map(|s| (s.nit as f64, value(s)))
        .filter(|(_, v)| v.is_finite() && *v > 0.0)
        .collect()
}

fn convergence<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    history: &[Step],
    f_final: f64,
) -> Drawn<DB> {
    let gap = positive(history, |s| s.fun - f_final);
    let grad = positive(history, |s| s.grad_norm);
    let (low, high) = log_span(gap.iter().chain(&grad).map(|p| p.1));
    let last = history.last().map_or(1, |s| s.nit.max(1)) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..last, (low..high).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc("log scale")
        .y_label_formatter(&|v| format!("{v:.0e}"))
        .draw()?;
    for (series, label, color) in [(gap, "f − f_final", BLUE), (grad, "‖∇f‖∞", RED)] {
        chart
            .draw_series(LineSeries::new(series, color.stroke_width(2)))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    legend(&mut chart)
}

/// The series' labels, boxed, in the chart's upper right corner.
fn legend<'a, DB: DrawingBackend + 'a, X: Ranged, Y: Ranged>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
) -> Drawn<DB> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
}

/// The axes of a fit panel.
type Panel<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A fit panel: `caption` over axes spanning `x` and `y`, labelled `x` and `y_desc`.
fn panel<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    y_desc: &str,
) -> Result<Panel<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    chart.configure_mesh().x_desc("x").y_desc(y_desc).draw()?;
    Ok(chart)
}

/// The log axis of positive `values`: a factor 2 past each end, within `[f64::MIN_POSITIVE,
/// f64::MAX / 4]` (plotters counts the decades between the ends, and a zero or infinite end
/// never stops its count), `(1e-16, 1)` with none.
fn log_span(values: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let low = values.clone().fold(f64::INFINITY, f64::min);
    let high = values.fold(0.0, f64::max);
    if low <= high {
        let limit = |v: f64| v.clamp(f64::MIN_POSITIVE, f64::MAX / 4.0);
        let low = limit(low / 2.0);
        (low, limit(high * 2.0).max(4.0 * low))
    } else {
        (1e-16, 1.0)
    }
}

/// `(min, max)` of `values`, widened a little (and made non-empty), within `±f64::MAX / 4`:
/// plotters divides the axis by its width, and an infinite one (data from −1e308 to 1e308) never
/// finishes placing its ticks.
fn span(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    const LIMIT: f64 = f64::MAX / 4.0;
    let (low, high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    if low > high {
        // No values.
        return 0.0..1.0;
    }
    let (low, high) = (low.clamp(-LIMIT, LIMIT), high.clamp(-LIMIT, LIMIT));
    // One value: a width that shows at its magnitude (1 around 0, 5% of it far from 0).
    let pad = if low < high {
        0.05 * (high - low)
    } else {
        (0.05 * low.abs()).max(1.0)
    };
    low - pad..high + pad
}

fn data_and_model<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panels: &FitPanels<'_>,
) -> Drawn<DB> {
    let (x, y, model) = (panels.x, panels.y, panels.model);
    let (xs, ys) = (
        span(x.iter().copied()),
        span(y.iter().chain(model).copied()),
    );
    let mut chart = panel(area, "data and model", xs, ys, "y")?;
    let points = (0..x.len()).map(|i| Circle::new((x[i], y[i]), 2, BLUE.mix(0.5).filled()));
    chart
        .draw_series(points)?
        .label("data")
        .legend(|(x, y)| Circle::new((x + 10, y), 3, BLUE.filled()));
    let mut curve: Vec<(f64, f64)> = x.iter().copied().zip(model.iter().copied()).collect();
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    chart
        .draw_series(LineSeries::new(curve, RED.stroke_width(2)))?
        .label("model")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED));
    legend(&mut chart)
}

fn residuals<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panels: &FitPanels<'_>,
) -> Drawn<DB> {
    let (x, y, model) = (panels.x, panels.y, panels.model);
    let residual = |i: usize| y[i] - model[i];
    let (xs, ys) = (span(x.iter().copied()), span((0..x.len()).map(residual)));
    let mut chart = panel(area, "residuals y − model", xs, ys, "y − model")?;
    chart.draw_series(
        (0..x.len()).map(|i| Circle::new((x[i], residual(i)), 2, BLACK.mix(0.5).filled())),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{log_span, span};

    /// Every axis is finite and wider than zero, whatever the values: none, one, equal, or
    /// spread past `f64::MAX` in width (data from −1e308 to 1e308, an infinite model value).
    #[test]
    fn axes_are_finite_and_not_empty() {
        let cases: [&[f64]; 6] = [
            &[],
            &[f64::NAN],
            &[2.0],
            &[1e300, 1e300],
            &[-1e308, 1e308, 0.0],
            &[0.0, f64::INFINITY],
        ];
        for values in cases {
            let axis = span(values.iter().copied());
            let width = axis.end - axis.start;
            assert!(width.is_finite() && width > 0.0, "{values:?}: {axis:?}");
        }
        assert_eq!(span([1.0, 3.0].into_iter()), 0.9..3.1);
    }

    /// The log axis stays positive and finite at both ends of the doubles, and is `(1e-16, 1)`
    /// with no values.
    #[test]
    fn log_axes_are_positive_and_finite() {
        let cases: [&[f64]; 4] = [&[], &[5e-324], &[f64::MAX], &[5e-324, f64::MAX]];
        for values in cases {
            let (low, high) = log_span(values.iter().copied());
            assert!(low > 0.0 && high.is_finite() && low < high, "{values:?}");
        }
        assert_eq!(log_span([1e-3, 10.0].into_iter()), (5e-4, 20.0));
        assert_eq!(log_span([].into_iter()), (1e-16, 1.0));
    }
}
