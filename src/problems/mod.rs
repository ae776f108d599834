//! The built-in problems the command line knows by name: a registered term, the rule for `n`,
//! the starting point, generated data, and the known minimum where there is one. The command
//! line, the Python module, the examples and the benches share this catalog; your own crate
//! needs none of it.

mod builtin;
pub mod fit;
pub mod fit_batch;
mod mgh;
mod on_data;
mod problem;
pub mod random;

pub use on_data::OnData;
pub use problem::{Instance, LoadError, Loaded, Problem, Size, Solvable};

pub use builtin::{
    LSQ_EXPSIN_SEED, MATMUL_COLUMNS, MATMUL_SEED, POISSON_LAMBDA, POISSON_SEED, QUADRATIC_SEED,
    lsq_expsin_data, lsq_expsin_theta_true, matmul_data, poisson_data, poisson_penalty,
    poisson_theta_true, quadratic_data,
};

/// Every built-in problem, in `cudamin list` order.
pub fn all() -> impl Iterator<Item = &'static Problem> {
    builtin::PROBLEMS.iter().chain(mgh::PROBLEMS)
}

/// The built-in problem called `name`.
pub fn find(name: &str) -> Result<&'static Problem, LoadError> {
    all()
        .find(|p| p.name == name)
        .ok_or_else(|| LoadError::UnknownProblem {
            name: name.to_owned(),
            known: all().map(|p| p.name).collect::<Vec<_>>().join(", "),
        })
}
