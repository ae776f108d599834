//! Sharing a problem's passes between processes. `share.rs` is what the ranks exchange and how
//! any process finishes it, compiled in every build, since one process finishes its own passes
//! the same way; `world.rs` (feature `mpi`) is the MPI job itself: each process holds a shard of
//! the terms and every evaluation gathers the shards' partials to every rank.

mod share;
#[cfg(feature = "mpi")]
mod world;

pub(crate) use share::add_in_order;
pub use share::{Factor, Layout, Partials, Share};
#[cfg(feature = "mpi")]
pub use world::{Sharded, World, launched_by_mpi};
