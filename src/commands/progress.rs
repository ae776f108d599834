//! Progress on stderr for `solve` and `fit` (indicatif).

use cudamin::Iterate;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::{self, IsTerminal, Write};
use std::time::{Duration, Instant};

/// Progress on stderr, for solves that last: from one second in, the iteration, f, ‖∇f‖, the
/// evaluations and the elapsed time. On a terminal an indicatif line redrawn in place;
/// elsewhere (with `--progress`), a plain line at most once a second, which logs can keep.
pub struct Progress {
    shown: Shown,
    start: Instant,
    last_line: Option<Instant>,
}

enum Shown {
    Off,
    Bar(ProgressBar),
    Lines,
}

impl Progress {
    /// `asked`: `--progress`; `json`: `--json`, which turns progress off unless asked.
    pub fn new(asked: bool, json: bool) -> Self {
        let terminal = io::stderr().is_terminal();
        let shown = if !super::job::prints() {
            Shown::Off
        } else if terminal && (asked || !json) {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
                bar.set_style(style);
            }
            Shown::Bar(bar)
        } else if asked {
            Shown::Lines
        } else {
            Shown::Off
        };
        Progress {
            shown,
            start: Instant::now(),
            last_line: None,
        }
    }

    pub fn show(&mut self, it: &Iterate<'_>) {
        let second = Duration::from_secs(1);
        if self.start.elapsed() < second {
            return;
        }
        let state = format!(
            "nit {}  f {:.9e}  ‖∇f‖ {:.3e}  nfev {}  njev {}",
            it.nit, it.fun, it.grad_norm, it.nfev, it.njev
        );
        match &self.shown {
            Shown::Off => {}
            Shown::Bar(bar) => {
                bar.set_message(state);
                bar.tick();
            }
            Shown::Lines => {
                if self.last_line.is_none_or(|t| t.elapsed() >= second) {
                    // Progress is a courtesy: a stderr that cannot be written does not end the solve.
                    let seconds = self.start.elapsed().as_secs_f64();
                    let _ = writeln!(io::stderr(), "[{seconds:.1} s] {state}");
                    self.last_line = Some(Instant::now());
                }
            }
        }
    }

    /// Leaves the bar's last state on screen, when it showed one.
    pub fn finish(&self) {
        if let Shown::Bar(bar) = &self.shown
            && self.start.elapsed() >= Duration::from_secs(1)
        {
            bar.abandon();
        }
    }
}
