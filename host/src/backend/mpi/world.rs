//! Data-sharded evaluation over MPI (feature `mpi`): each process of an `mpirun` job holds a
//! shard of the terms, on its own backend, and every evaluation gathers the shards' partials to
//! every rank.
//!
//! **The rule that makes the result independent of the number of ranks.** A rank evaluates
//! whole chunks of the one-process plan ([`Share`]) and hands on their partials unsummed; every
//! rank gathers all of them, concatenated in rank order, which is chunk order, and finishes them
//! with the same [`Partials`] methods one process uses. MPI's own floating-point reductions are
//! never used. So on the CPU backend `f`, `∇f` and the normal equations are the same bits for
//! any number of ranks, as for any number of threads, and the solver, which runs on every rank
//! on those bits, takes the same steps everywhere. (An evaluator that does not split its passes
//! into the plan's chunks, the GPU's, hands on one partial per rank: the same bits on every
//! rank, but a sum that depends on the number of ranks.)
//!
//! **Failures.** Every step that can fail on one rank (loading its shard, an evaluation) ends
//! in a collective that tells every rank whether all succeeded; if one did not, all return the
//! error of the lowest failing rank ([`BackendError::Rank`]), so all stop together, and the
//! command line prints it once, from rank 0.

use super::share::{Partials, Share};
use crate::backend::evaluator::{Evaluator, LeastSquaresEvaluator};
use crate::backend::pass::{Evaluation, Pass};
use crate::backend::step_bounds::StepBounds;
use crate::error::BackendError;
use mpi::collective::CommunicatorCollectives;
use mpi::datatype::PartitionMut;
use mpi::environment::Universe;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Equivalence;

/// This process's place in the MPI job it was started in. Evaluations through [`Sharded`] are
/// collective: every rank makes the same calls in the same order, as the solver on every rank
/// does.
pub struct World {
    rank: usize,
    ranks: usize,
    /// Finalizes MPI when dropped, after every [`Sharded`] evaluation.
    _universe: Universe,
}

/// Whether this process was started by an MPI launcher (`mpirun`, `srun`): the environment
/// variables Open MPI, MPICH and Slurm's PMI set in each process they start.
pub fn launched_by_mpi() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|name| std::env::var_os(name).is_some())
}

impl World {
    /// Joins the job: MPI is initialized here, once per process, and finalized when the world
    /// is dropped. `None` if MPI was initialized already.
    pub fn join() -> Option<World> {
        let universe = mpi::initialize()?;
        let world = universe.world();
        Some(World {
            rank: usize::try_from(world.rank()).unwrap_or(0),
            ranks: usize::try_from(world.size()).unwrap_or(1),
            _universe: universe,
        })
    }

    /// This process's rank, `0 .. ranks`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of processes in the job.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// The share of term ranges this rank takes of a problem every rank holds whole.
    pub fn terms_share(&self) -> Share {
        Share::Terms {
            rank: self.rank,
            ranks: self.ranks,
        }
    }

    /// Every rank's outcome of one step, agreed: `Ok` on every rank when every rank's is `Ok`,
    /// else, on every rank, the error of the lowest rank that failed. Collective.
    pub fn agree<T, E: std::fmt::Display>(&self, local: Result<T, E>) -> Result<T, BackendError> {
        let message = local.as_ref().err().map(ToString::to_string);
        match (first_failure(&comm(), message)?, local) {
            (Some(failure), _) => Err(failure),
            (None, Ok(value)) => Ok(value),
            // Not reached: this rank's own failure would have been found.
            (None, Err(e)) => Err(BackendError::Rank {
                rank: self.rank,
                message: e.to_string(),
            }),
        }
    }

    /// Checks that every rank reports the same `fingerprint` of `what` (say, a hash of the
    /// binary and of the command line), naming the first rank that differs from rank 0.
    /// Collective.
    pub fn check_same(&self, what: &str, fingerprint: u64) -> Result<(), BackendError> {
        let all = all_gather(&comm(), &[fingerprint])?;
        match all.iter().position(|&f| f != all[0]) {
            None => Ok(()),
            Some(rank) => Err(BackendError::Rank {
                rank,
                message: format!(
                    "runs a different {what} than rank 0 (fingerprint {:016x}, rank 0 {:016x}); \
                     every rank must run the same binary with the same arguments",
                    all[rank], all[0]
                ),
            }),
        }
    }

    /// Checks that every rank made the same choice of `what` among `choices` (this rank's is
    /// `choices[mine]`), naming the first rank that differs from rank 0 and both choices.
    /// Collective.
    pub fn check_same_choice(
        &self,
        what: &str,
        choices: &[&str],
        mine: usize,
    ) -> Result<(), BackendError> {
        let all = all_gather(&comm(), &[mine as u64])?;
        let name = |index: u64| choices.get(index as usize).copied().unwrap_or("?");
        match all.iter().position(|&c| c != all[0]) {
            None => Ok(()),
            Some(rank) => Err(BackendError::Rank {
                rank,
                message: format!(
                    "chose the {} {what} where rank 0 chose the {}; every rank must use the same \
                     one (pass it explicitly)",
                    name(all[rank]),
                    name(all[0])
                ),
            }),
        }
    }

    /// Returns when every rank has called it. Collective.
    pub fn barrier(&self) {
        comm().barrier();
    }

    /// `Σ value` over the ranks, exactly (integers). Collective.
    pub fn sum(&self, value: usize) -> Result<usize, BackendError> {
        let all = all_gather(&comm(), &[value as u64])?;
        let total = all.iter().try_fold(0u64, |sum, &v| sum.checked_add(v));
        total
            .and_then(|t| usize::try_from(t).ok())
            .ok_or_else(|| collective_error("the ranks' counts overflow"))
    }
}

/// `MPI_COMM_WORLD`. A handle made per call, so that the evaluators holding none stay `Send`.
fn comm() -> SimpleCommunicator {
    SimpleCommunicator::world()
}

fn collective_error(reason: &str) -> BackendError {
    BackendError::Kernel {
        kernel: "MPI gather".to_owned(),
        reason: reason.to_owned(),
    }
}

/// `local` from every rank, concatenated in rank order. Collective; every rank's `local` may
/// have a different length.
fn all_gather<T: Equivalence + Copy + Default>(
    comm: &SimpleCommunicator,
    local: &[T],
) -> Result<Vec<T>, BackendError> {
    let ranks = usize::try_from(comm.size()).unwrap_or(1);
    let mut counts = vec![0u64; ranks];
    comm.all_gather_into(&(local.len() as u64), &mut counts[..]);
    let too_many = || collective_error("a rank's part exceeds MPI's 2³¹ − 1 elements");
    let counts: Vec<i32> = counts
        .iter()
        .map(|&c| i32::try_from(c).map_err(|_| too_many()))
        .collect::<Result<_, _>>()?;
    let mut displs = Vec::with_capacity(ranks);
    let mut total = 0i32;
    for &count in &counts {
        displs.push(total);
        total = total.checked_add(count).ok_or_else(too_many)?;
    }
    let mut all = vec![T::default(); total as usize];
    let mut partition = PartitionMut::new(&mut all[..], counts, displs);
    comm.all_gather_varcount_into(local, &mut partition);
    Ok(all)
}

/// The lowest rank whose `message` is `Some`, with its message, on every rank. Collective.
fn first_failure(
    comm: &SimpleCommunicator,
    message: Option<String>,
) -> Result<Option<BackendError>, BackendError> {
    let failed = all_gather(comm, &[u8::from(message.is_some())])?;
    let Some(rank) = failed.iter().position(|&f| f != 0) else {
        return Ok(None);
    };
    // That rank sends its message; every other sends nothing.
    let own = usize::try_from(comm.rank()).ok() == Some(rank);
    let sent = if own {
        message.unwrap_or_default()
    } else {
        String::new()
    };
    let text = all_gather(comm, sent.as_bytes())?;
    Ok(Some(BackendError::Rank {
        rank,
        message: String::from_utf8_lossy(&text).into_owned(),
    }))
}

/// A backend's evaluator of this rank's shard, made collective: each evaluation gathers every
/// rank's [`Partials`] and finishes them, so every rank returns the same `f` and `∇f` (see the
/// module's rule). Wrap the evaluator of a shard loaded on any backend: a sum of terms
/// ([`Sharded::new`]) or a sum of squares with its residuals ([`Sharded::least_squares`]).
pub struct Sharded<E: Evaluator + ?Sized = dyn Evaluator> {
    shard: Box<E>,
    share: Share,
    /// The residuals of all ranks (0 for a sum that is not a sum of squares).
    residuals: usize,
    /// The box the shard keeps too: finishing a dense gradient's partials needs its spacings.
    bounds: StepBounds,
}

/// [`Share::Whole`] is taken as [`World::terms_share`]: a problem every rank holds whole; a
/// [`Share::Rows`] is this rank's.
fn rank_share(world: &World, share: Share) -> Share {
    match share {
        Share::Whole => world.terms_share(),
        Share::Rows { total, .. } => Share::Rows {
            total,
            rank: world.rank,
            ranks: world.ranks,
        },
        other => other,
    }
}

impl Sharded {
    /// `shard` holds this rank's terms: the whole problem evaluated on `share`'s term range
    /// ([`World::terms_share`]), or its rows of a data set ([`Share::Rows`]).
    pub fn new(world: &World, shard: Box<dyn Evaluator>, share: Share) -> Self {
        Sharded {
            shard,
            share: rank_share(world, share),
            residuals: 0,
            bounds: StepBounds::default(),
        }
    }
}

impl Sharded<dyn LeastSquaresEvaluator> {
    /// [`Sharded::new`] for a sum of squares, which stays one: Levenberg–Marquardt can run on
    /// it. Collective: it counts every rank's residuals.
    pub fn least_squares(
        world: &World,
        shard: Box<dyn LeastSquaresEvaluator>,
        share: Share,
    ) -> Result<Self, BackendError> {
        let share = rank_share(world, share);
        let residuals = match share {
            Share::Terms { .. } | Share::Whole => shard.residuals(),
            Share::Rows { .. } => world.sum(shard.residuals())?,
        };
        Ok(Sharded {
            shard,
            share,
            residuals,
            bounds: StepBounds::default(),
        })
    }
}

impl<E: Evaluator + ?Sized> Sharded<E> {
    /// Every rank's partials of `pass` at `x`, in rank order; or, on every rank, the first
    /// rank's failure.
    fn gather(&mut self, x: &[f64], pass: Pass) -> Result<Partials, BackendError> {
        let comm = comm();
        let local = self.shard.partials(x, pass, self.share);
        let message = local.as_ref().err().map(ToString::to_string);
        let local = match (first_failure(&comm, message)?, local) {
            (Some(failure), _) => return Err(failure),
            // Ok here: this rank's own failure would have been found.
            (None, local) => local?,
        };
        gathered(&comm, local)
    }
}

/// Every rank's `local` partials concatenated in rank order, part by part: each of a sum's
/// further parts gathered on its own, so that it finishes as one process's does. Collective;
/// every rank has the same number of parts (every rank holds the same sum).
fn gathered(comm: &SimpleCommunicator, local: Partials) -> Result<Partials, BackendError> {
    let mut partials = Partials::of_chunks(
        all_gather(comm, &local.values)?,
        all_gather(comm, &local.vectors)?,
        local.layout,
    );
    for further in local.further {
        partials.further.push(gathered(comm, further)?);
    }
    Ok(partials)
}

impl<E: Evaluator + ?Sized> Evaluator for Sharded<E> {
    fn dim(&self) -> usize {
        self.shard.dim()
    }

    fn evaluate(&mut self, x: &[f64], evaluation: Evaluation<'_>) -> Result<f64, BackendError> {
        let partials = self.gather(x, evaluation.pass())?;
        evaluation.finish(x, self.bounds.view(), &partials)
    }

    /// Every rank's shard keeps the box, as every rank's solver sets the same one.
    fn confine_steps(&mut self, bounds: &StepBounds) -> Result<(), BackendError> {
        self.shard.confine_steps(bounds)?;
        self.bounds = bounds.clone();
        Ok(())
    }
}

impl LeastSquaresEvaluator for Sharded<dyn LeastSquaresEvaluator> {
    fn residuals(&self) -> usize {
        self.residuals
    }
}
