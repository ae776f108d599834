//! `mpirun -np N cudamin …` (feature `mpi`): the same bits for any N, and as one process, for a
//! dense fit (rows sharded) and a banded problem (term ranges; one process alone sweeps
//! L-BFGS's trials: there the same iterations, checked, and the last bits differ); one clear
//! error and a prompt exit from every rank when one rank fails or the ranks disagree.
//!
//! Needs Open MPI's `mpirun` (Debian: openmpi-bin), which `.ci/install` installs.
#![cfg(feature = "mpi")]

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

/// Every rank of every job here must be done by then; a hang is a failure.
const DEADLINE: Duration = Duration::from_secs(120);

/// One job at a time: ranks waiting in a collective spin, and jobs run side by side on a
/// 2-core machine would take turns at crawling.
static ONE_JOB: Mutex<()> = Mutex::new(());

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_cudamin")
}

/// Runs `command` to its end within [`DEADLINE`], killing it (and failing) past it.
fn run(mut command: Command) -> (Output, Duration) {
    let _alone = ONE_JOB
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let start = Instant::now();
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the command (is mpirun installed?)");
    let pid = child.id();
    // Waiting reads both pipes as they fill, on a thread of its own, so the deadline holds.
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || sender.send(child.wait_with_output()));
    match receiver.recv_timeout(DEADLINE) {
        Ok(output) => (output.expect("output"), start.elapsed()),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("{command:?} still ran after {DEADLINE:?}: a rank hangs");
        }
    }
}

/// `mpirun` with `np` ranks of `cudamin args`, any user (root in CI containers), more ranks
/// than cores allowed.
fn mpirun(np: usize, args: &[&str]) -> Command {
    let mut command = Command::new("mpirun");
    command
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        // Containers often forbid the cross-memory attach of Open MPI's shared-memory transport.
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        // One thread per rank: the ranks share two cores (the bits do not depend on it).
        .env("RAYON_NUM_THREADS", "1")
        .args(["--oversubscribe", "-np", &np.to_string(), binary()])
        .args(args);
    command
}

/// The one JSON object a successful run printed (rank 0 alone prints).
fn report((out, _): (Output, Duration), what: &str) -> Value {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{what} failed: {stderr}");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{what}: stdout is not one JSON object ({e}): {stderr}"))
}

/// `report[field]` as numbers, bit for bit (serde_json reads back the shortest representation
/// it wrote exactly), flattening arrays of arrays.
fn bits(report: &Value, field: &str) -> Vec<u64> {
    fn walk(v: &Value, out: &mut Vec<u64>) {
        match v {
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Number(n) => out.push(n.as_f64().unwrap().to_bits()),
            other => panic!("not a number: {other}"),
        }
    }
    let mut out = Vec::new();
    walk(&report[field], &mut out);
    out
}

fn data_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mpi");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A CSV of `rows` points of expsin with θ = (2, 0.5, 0.3, −0.2, …) and deterministic noise;
/// row `bad`, if any, has `oops` for y.
fn expsin_csv(name: &str, rows: usize, bad: Option<usize>) -> PathBuf {
    let mut text = String::from("x,y\n");
    for k in 0..rows {
        let x = 10.0 * k as f64 / rows as f64;
        let mut y = 2.0 * (-0.5 * x).exp();
        for (j, amplitude) in [0.3, -0.2, 0.1, 0.05].iter().enumerate() {
            y += amplitude * ((j + 2) as f64 * x).sin();
        }
        let noise = 0.01 * (k as f64 * 12.9898).sin();
        if bad == Some(k) {
            text += &format!("{x},oops\n");
        } else {
            text += &format!("{x},{}\n", y + noise);
        }
    }
    let path = data_dir().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The fields that must not depend on the number of ranks.
const FIT_FIELDS: [&str; 8] = [
    "x",
    "stderr",
    "pcov",
    "rss",
    "grad_inf_norm",
    "nit",
    "nfev",
    "njev",
];

/// Dense fits, rows sharded: 5000 rows are 5 blocks of 1024, split 2/2/1 over 3 ranks. LM with
/// exact Jacobians (each block's rows folded into a triangle, the triangles folded in block
/// order), and L-BFGS with forward differences (the dense
/// gradient's chunk sums divided by the spacing, and its error check against exact).
#[test]
fn a_dense_fit_gives_the_same_bits_on_any_number_of_ranks() {
    let csv = expsin_csv("expsin-5000.csv", 5000, None);
    let csv = csv.to_str().unwrap();
    let fits: [&[&str]; 2] = [&[], &["--method", "lbfgs", "--grad", "forward"]];
    for options in fits {
        let mut args = vec![
            "fit",
            csv,
            "--model",
            "expsin",
            "--backend",
            "cpu",
            "--json",
        ];
        args.extend(options);
        let alone = report(run(cmd(&args)), "the one-process fit");
        assert_eq!(alone["points"], 5000);
        let theta0 = alone["x"][0].as_f64().unwrap();
        assert!((theta0 - 2.0).abs() < 1e-3, "θ0 = {theta0}: {alone}");
        for np in [1, 2, 3] {
            let sharded = report(run(mpirun(np, &args)), &format!("the fit on {np} ranks"));
            for field in FIT_FIELDS {
                assert_eq!(
                    bits(&sharded, field),
                    bits(&alone, field),
                    "{options:?}, {np} ranks: `{field}` differs from one process's"
                );
            }
            assert_eq!(sharded["points"], 5000);
        }
    }
}

/// Solves `args` in one process and under `mpirun` on each of `ranks`, and checks that every
/// run reports one process's bits; returns the last sharded report.
fn same_bits_on_ranks(args: &[&str], ranks: &[usize]) -> Value {
    let alone = report(run(cmd(args)), "the one-process solve");
    assert_eq!(alone["status"], 0, "{}", alone["message"]);
    let mut last = Value::Null;
    for &np in ranks {
        let sharded = report(run(mpirun(np, args)), &format!("the solve on {np} ranks"));
        same_bits(&sharded, &alone, &format!("{np} ranks against one process"));
        last = sharded;
    }
    last
}

/// That `report` has `reference`'s bits in every field a solve reports.
fn same_bits(report: &Value, reference: &Value, what: &str) {
    for field in ["x", "fun", "grad_inf_norm", "nit", "nfev", "njev"] {
        assert_eq!(
            bits(report, field),
            bits(reference, field),
            "{what}: `{field}` differs"
        );
    }
}

/// A banded problem, term ranges: extended Rosenbrock at n = 100 000 has 13 chunks of its
/// value and of its gradient's variable groups. Every number of ranks gives the same bits. One
/// process alone sweeps L-BFGS's first trials (the objective comes in pieces; a sharded one
/// does not), whose products are summed piece by piece: the same steps to the same answer,
/// which differs in the last bits.
#[test]
fn a_banded_problem_gives_the_same_bits_on_any_number_of_ranks() {
    let args = [
        "solve",
        "ext-rosenbrock",
        "--n",
        "100000",
        "--method",
        "lbfgs",
        "--backend",
        "cpu",
        "--json",
    ];
    let one_rank = report(run(mpirun(1, &args)), "the solve on 1 rank");
    for np in [2, 3] {
        let sharded = report(run(mpirun(np, &args)), &format!("the solve on {np} ranks"));
        same_bits(&sharded, &one_rank, &format!("{np} ranks against 1"));
    }
    let alone = report(run(cmd(&args)), "the one-process solve");
    for field in ["status", "nit", "nfev", "njev"] {
        assert_eq!(
            alone[field], one_rank[field],
            "`{field}` alone and on 1 rank"
        );
    }
    let (f_alone, f_ranks) = (
        alone["fun"].as_f64().unwrap(),
        one_rank["fun"].as_f64().unwrap(),
    );
    assert!((f_alone - f_ranks).abs() <= 1e-6 * f_ranks.abs().max(1e-12));
    let x = |report: &Value| -> Vec<f64> {
        let entries = report["x"].as_array().unwrap();
        entries.iter().map(|v| v.as_f64().unwrap()).collect()
    };
    for (a, b) in x(&alone).iter().zip(x(&one_rank)) {
        assert!((a - b).abs() <= 1e-9, "x alone {a}, on 1 rank {b}");
    }
}

/// An objective of two terms, term ranges: the penalized Poisson regression, a dense data
/// term over 20 000 rows (20 chunks) plus a separable penalty (one chunk, which the last rank
/// takes). Each part's partials are gathered on their own and finished as one process's.
#[test]
fn a_sum_of_terms_gives_the_same_bits_on_any_number_of_ranks() {
    let args = [
        "solve",
        "poisson-regression",
        "--n",
        "9",
        "--points",
        "20000",
        "--method",
        "lbfgs",
        "--backend",
        "cpu",
        "--json",
    ];
    same_bits_on_ranks(&args, &[2, 3]);
}

/// The GPU path under MPI, on the simulator: every rank holds the problem and rank 0
/// evaluates it whole (the GPU takes no term shares), so any number of ranks ends with one
/// process's bits. Issue 25's third bug: `solve` under MPI on a GPU failed, because the GPU
/// evaluator refused term shares.
#[test]
fn a_banded_problem_on_the_simulated_gpu_gives_the_same_bits_on_any_number_of_ranks() {
    let args = [
        "solve",
        "ext-rosenbrock",
        "--n",
        "2000",
        "--method",
        "lbfgs",
        "--backend",
        "sim",
        "--json",
    ];
    let sharded = same_bits_on_ranks(&args, &[2]);
    let reason = sharded["backend_reason"].as_str().unwrap();
    assert!(reason.contains("rank 0 evaluates the problem"), "{reason}");
}

/// Ranks that chose different backends (auto finds a GPU on one and not on another) are
/// refused, naming both: their partials are laid out differently (issue 25's fifth bug).
/// Without a GPU on one rank the CLI cannot be made to choose so; this runs the collective
/// check itself, in [`rank_choosing_its_backend_by_rank`] under `mpirun`.
#[test]
fn ranks_that_chose_different_backends_are_refused() {
    let mut command = mpirun(2, &[]);
    command.args(["--ignored", "--exact", "rank_choosing_its_backend_by_rank"]);
    // `mpirun(…)` starts the cudamin binary; this job starts this test binary instead.
    let test_binary = std::env::current_exe().unwrap();
    let args: Vec<_> = command
        .get_args()
        .map(|a| {
            if a == binary() {
                test_binary.as_os_str()
            } else {
                a
            }
        })
        .map(ToOwned::to_owned)
        .collect();
    let mut job = Command::new("mpirun");
    job.envs(command.get_envs().filter_map(|(k, v)| Some((k, v?))));
    job.args(args);
    let (out, _) = run(job);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("1 passed"), "{stdout}");
}

/// One rank's part of [`ranks_that_chose_different_backends_are_refused`].
#[test]
#[ignore = "a rank of ranks_that_chose_different_backends_are_refused, run under mpirun"]
fn rank_choosing_its_backend_by_rank() {
    use cudamin::plumbing::mpi::World;
    let world = World::join().expect("run under mpirun");
    let choices = ["cpu", "cuda", "sim"];
    let mine = [0, 2][world.rank() % 2];
    let err = world
        .check_same_choice("backend", &choices, mine)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("rank 1") && err.contains("the sim backend where rank 0 chose the cpu"),
        "{err}"
    );
    assert!(world.check_same_choice("backend", &choices, 1).is_ok());
}

fn cmd(args: &[&str]) -> Command {
    let mut command = Command::new(binary());
    command.args(args);
    command
}

/// Runs a job that must fail; returns its stderr, after checking that exactly one line was
/// printed (by rank 0), nothing went to stdout, nobody panicked, and it ended promptly.
fn one_error(command: Command) -> String {
    let (out, took) = run(command);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "should fail: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "one error line, from rank 0: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
    stderr
}

/// Row 3000 is rank 1's (rows 2048..5000 of 2 ranks): rank 1 fails to load, and every rank
/// ends with rank 1's error, printed once.
#[test]
fn a_rank_with_a_bad_shard_stops_every_rank_with_one_message() {
    let csv = expsin_csv("expsin-bad-row.csv", 5000, Some(3000));
    let args = [
        "fit",
        csv.to_str().unwrap(),
        "--model",
        "expsin",
        "--backend",
        "cpu",
    ];
    let stderr = one_error(mpirun(2, &args));
    assert!(
        stderr.contains("rank 1: ") && stderr.contains("line 3002, column `y`: `oops`"),
        "{stderr}"
    );
    // Rank 0's rows are fine on their own: the error is the shard's, not the whole file's
    // read on rank 0.
    assert!(!stderr.contains("rank 0"), "{stderr}");
}

/// Ranks started with different arguments (here, data files) are refused before any work.
#[test]
fn ranks_that_disagree_on_the_command_are_refused_at_start() {
    let a = expsin_csv("expsin-a.csv", 2048, None);
    let b = expsin_csv("expsin-b.csv", 2048, None);
    let mut command = mpirun(1, &["fit", a.to_str().unwrap(), "--model", "expsin"]);
    command.args([
        ":",
        "-np",
        "1",
        binary(),
        "fit",
        b.to_str().unwrap(),
        "--model",
        "expsin",
    ]);
    let stderr = one_error(command);
    assert!(
        stderr.contains("rank 1: runs a different binary or command line than rank 0"),
        "{stderr}"
    );
}

/// More ranks than row blocks: refused, naming how many ranks the data allows.
#[test]
fn more_ranks_than_row_blocks_are_refused() {
    let csv = expsin_csv("expsin-1500.csv", 1500, None);
    let stderr = one_error(mpirun(
        3,
        &["fit", csv.to_str().unwrap(), "--model", "expsin"],
    ));
    assert!(stderr.contains("run at most 2 ranks"), "{stderr}");
}
