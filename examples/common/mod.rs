//! What the examples share: a size from the command line, and a one-line error on failure.

use std::process::ExitCode;

/// The first argument as a size, or `default` without one.
pub fn size_argument(default: usize) -> Result<usize, String> {
    match std::env::args().nth(1) {
        Some(text) => text
            .parse()
            .map_err(|e| format!("the size must be a whole number, not `{text}` ({e})")),
        None => Ok(default),
    }
}

/// Exit status 0 for a checked result, else 1 after one line on stderr.
pub fn report(outcome: Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}
