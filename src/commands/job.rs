//! The MPI job a command runs in: one process alone, or a rank of `mpirun -np N cudamin …`
//! (feature `mpi`). The commands ask this module, never MPI: whether to print (rank 0 only),
//! which rows of a data file to load, how to make a loaded shard's evaluator collective, and
//! how every rank agrees that a step succeeded everywhere.

use cudamin::plumbing::Share;
use cudamin::problems::Loaded;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether this process prints: false on every rank but 0.
static PRINTS: AtomicBool = AtomicBool::new(true);

/// Whether this process prints its report, progress and errors: rank 0, or a process alone.
pub fn prints() -> bool {
    PRINTS.load(Ordering::Relaxed)
}

/// This process's place: alone, or a rank of an MPI job.
pub struct Job {
    #[cfg(feature = "mpi")]
    world: Option<cudamin::plumbing::mpi::World>,
}

impl Job {
    /// Joins the MPI job when the process was started by an MPI launcher (and the build has
    /// the `mpi` feature); otherwise the process is alone.
    pub fn join() -> Job {
        #[cfg(feature = "mpi")]
        {
            use cudamin::plumbing::mpi::{World, launched_by_mpi};
            let world = launched_by_mpi().then(World::join).flatten();
            if let Some(world) = &world {
                PRINTS.store(world.rank() == 0, Ordering::Relaxed);
            }
            Job { world }
        }
        #[cfg(not(feature = "mpi"))]
        {
            Job {}
        }
    }

    /// Checks that every rank runs the same binary with the same arguments. Collective.
    pub fn check_ranks_agree(&self) -> anyhow::Result<()> {
        #[cfg(feature = "mpi")]
        if let Some(world) = &self.world {
            world.check_same("binary or command line", fingerprint())?;
        }
        Ok(())
    }

    /// Checks that every rank chose the same backend (`Backend::name`): ranks on different
    /// backends would combine partials laid out differently (issue 25's fifth bug). Collective.
    pub fn check_same_backend(&self, backend: &str) -> anyhow::Result<()> {
        #[cfg(feature = "mpi")]
        if let Some(world) = &self.world {
            const BACKENDS: [&str; 3] = ["cpu", "cuda", "sim"];
            let mine = BACKENDS.iter().position(|&b| b == backend);
            let mine = mine.unwrap_or(BACKENDS.len());
            world.check_same_choice("backend", &BACKENDS, mine)?;
        }
        let _ = backend;
        Ok(())
    }

    /// Waits until every rank is here: the last step of every rank, so that none exits (and
    /// has the launcher stop the others) before rank 0 has printed. Collective.
    pub fn finish(&self) {
        #[cfg(feature = "mpi")]
        if let Some(world) = &self.world {
            world.barrier();
        }
    }

    /// The number of processes: 1 alone.
    pub fn ranks(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(world) = &self.world {
            return world.ranks();
        }
        1
    }

    /// `local`, once every rank has succeeded at the same step; else, on every rank, the error
    /// of the lowest rank that failed. Alone, `local` itself.
    pub fn agree<T>(&self, local: anyhow::Result<T>) -> anyhow::Result<T> {
        #[cfg(feature = "mpi")]
        if let Some(world) = &self.world {
            let local = local.map_err(|e| one_line(&e));
            return Ok(world.agree(local)?);
        }
        local
    }

    /// The rows of a dense problem of `total` rows and `n` parameters this process loads: all
    /// of them alone, else this rank's whole row blocks. Errors when there are fewer blocks than
    /// ranks.
    pub fn rows(&self, n: usize, total: usize) -> anyhow::Result<Range<usize>> {
        #[cfg(feature = "mpi")]
        if let Some(world) = &self.world {
            use cudamin::plumbing::cpu::{rank_rows, row_block};
            return rank_rows(n, total, world.rank(), world.ranks()).ok_or_else(|| {
                let block = row_block(n, total);
                anyhow::anyhow!(
                    "{total} rows make {} blocks of {block}; {} ranks need a block each: \
                     run at most {} ranks",
                    total.div_ceil(block),
                    world.ranks(),
                    total.div_ceil(block)
                )
            });
        }
        let _ = n;
        Ok(0..total)
    }

    /// The whole problem: alone, `shard` itself; in a job, `shard` (this rank's, of `share`)
    /// gathering every rank's partials at each evaluation. Collective.
    pub fn evaluator(&self, shard: Loaded, share: Share) -> anyhow::Result<Loaded> {
        #[cfg(feature = "mpi")]
        if let Some(world) = &self.world {
            use cudamin::plumbing::mpi::Sharded;
            return Ok(match shard {
                Loaded::Sum(sum) => Loaded::Sum(Box::new(Sharded::new(world, sum, share))),
                Loaded::SumOfSquares(squares) => {
                    Loaded::SumOfSquares(Box::new(Sharded::least_squares(world, squares, share)?))
                }
            });
        }
        let _ = share;
        Ok(shard)
    }
}

/// An error and its causes on one line, as `main` prints them.
#[cfg(feature = "mpi")]
fn one_line(err: &anyhow::Error) -> String {
    let causes: Vec<String> = err.chain().map(|c| c.to_string()).collect();
    causes.join(": ").replace('\n', " ")
}

/// A hash of this binary's bytes and of the command line: ranks that differ in either are
/// refused at start. (The std hasher is deterministic for one build, which is all this needs:
/// different builds differ in their bytes anyway.)
#[cfg(feature = "mpi")]
fn fingerprint() -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let binary = std::env::current_exe().and_then(std::fs::read);
    binary.map_err(|e| e.kind()).hash(&mut hasher);
    std::env::args_os()
        .skip(1)
        .for_each(|a| a.hash(&mut hasher));
    hasher.finish()
}
