//! Running the `cudamin` binary as a user does, for the tests of the command line.

use serde_json::Value;
use std::process::{Command, Output};

/// Runs `cudamin args` with the environment variables `env` set.
pub fn cudamin_in(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cudamin"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run cudamin")
}

pub fn cudamin(args: &[&str]) -> Output {
    cudamin_in(&[], args)
}

/// Runs a `--json` command that must succeed and returns its one JSON object.
pub fn json(args: &[&str]) -> Value {
    json_in(&[], args)
}

/// [`json`] with the environment variables `env` set.
pub fn json_in(env: &[(&str, &str)], args: &[&str]) -> Value {
    let out = cudamin_in(env, args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cudamin {args:?} failed: {stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e})"))
}

/// Runs a command that must fail with a one-line error and no panic; returns that line.
pub fn one_line_error(args: &[&str]) -> String {
    let out = cudamin(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "cudamin {args:?} should fail");
    assert!(
        !stderr.contains("panicked"),
        "cudamin {args:?} panicked: {stderr}"
    );
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "cudamin {args:?}: not one line: {stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "cudamin {args:?} printed to stdout on error"
    );
    stderr
}

pub fn f64_of(v: &Value, field: &str) -> f64 {
    v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("`{field}` is not a number in {v}"))
}
