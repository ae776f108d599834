//! The chunk plan: how a pass's work is cut into chunks whose sizes depend on the problem
//! alone (never on the number of threads), and the one place chunks are handed to rayon.

use crate::backend::mpi::Share;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::{Mutex, PoisonError};

/// Terms per chunk of a separable or banded problem's value.
pub(super) const VALUE_CHUNK: usize = 4096;
/// Variable groups per chunk of a banded gradient.
pub(super) const GROUP_CHUNK: usize = 4096;
/// Rows (terms) per chunk of a dense problem, unless [`PARTIAL_VALUES`] or [`MAX_DENSE_CHUNKS`]
/// asks for more. Small
/// enough that a data set of a few thousand rows still splits across the ranks of an MPI job;
/// large enough that a chunk's fixed cost (its partial vector) is noise.
pub(super) const ROW_CHUNK: usize = 1024;
/// At most this many chunks per dense pass, however many rows: the chunks' partials are what
/// the ranks of an MPI job exchange at every evaluation, so their number is bounded by the plan
/// (`4096·n` values for a gradient), not by the data, while there are still many more chunks
/// than cores.
pub(super) const MAX_DENSE_CHUNKS: usize = 4096;
/// A dense pass keeps one vector of partial sums per chunk (`n` for a gradient, `n² + n` for
/// the normal equations): chunks grow so that the partials stay within `2²⁰` values (8 MiB).
pub(super) const PARTIAL_VALUES: usize = 1 << 20;

/// A pass of at most this many chunks runs them on the calling thread. Handing a pass to the
/// pool costs a wake-up and a wait across threads, more than a few chunks' work.
pub(super) const SERIAL_MAX_CHUNKS: usize = 4;

/// `work` on each of a pass's chunks, results in chunk order: on every core, or on this
/// thread for a pass of at most [`SERIAL_MAX_CHUNKS`] chunks (the same bits either way).
///
/// Generic on this side only. The chunks reach rayon through [`on_every_core`], which is not
/// generic, so rayon's machinery is compiled once. Generic all the way down, it was compiled
/// again for every term, scheme and pass, and was most of the code the built-in problems
/// compiled to. Each chunk is thousands of terms: the call through `dyn` and the two locks
/// per chunk cost nothing measurable.
pub(super) fn each_chunk<C: Send, R: Send>(
    chunks: Vec<C>,
    work: impl Fn(C) -> R + Sync + Send,
) -> Vec<R> {
    if chunks.len() <= SERIAL_MAX_CHUNKS {
        return chunks.into_iter().map(work).collect();
    }
    let slots: Vec<Mutex<Slot<C, R>>> = (chunks.into_iter())
        .map(|chunk| Mutex::new(Slot::Chunk(chunk)))
        .collect();
    on_every_core(slots.len(), &|i| {
        let mut slot = slots[i].lock().unwrap_or_else(PoisonError::into_inner);
        if let Slot::Chunk(chunk) = std::mem::replace(&mut *slot, Slot::Taken) {
            // The lock is held while the chunk works: no other thread touches slot `i`.
            *slot = Slot::Done(work(chunk));
        }
    });
    (slots.into_iter())
        .filter_map(|slot| match slot.into_inner() {
            Ok(Slot::Done(result)) => Some(result),
            // Unreachable: rayon runs every index once, or hands a panic on.
            _ => None,
        })
        .collect()
}

/// A chunk waiting for its work, taken, or its result.
enum Slot<C, R> {
    Chunk(C),
    Taken,
    Done(R),
}

/// `work(i)` for each `i < len`, spread over rayon's threads.
fn on_every_core(len: usize, work: &(dyn Fn(usize) + Sync)) {
    (0..len).into_par_iter().for_each(work);
}

/// Rows per chunk of a dense problem's value and gradient, for `n` variables and `rows` rows in
/// the whole problem: a multiple of [`ROW_CHUNK`].
pub(super) fn dense_chunk(n: usize, rows: usize) -> usize {
    let max_chunks = (PARTIAL_VALUES / n.max(1)).min(MAX_DENSE_CHUNKS);
    ROW_CHUNK * grown(rows.div_ceil(ROW_CHUNK), max_chunks)
}

/// The factor by which chunks grow so that `chunks` of them become at most `max_chunks`.
fn grown(chunks: usize, max_chunks: usize) -> usize {
    chunks.div_ceil(max_chunks.max(1)).max(1)
}

/// Rows per chunk of the normal equations, for `n` parameters and `rows` rows (residuals) in
/// the whole problem: a multiple of the value's and gradient's chunk, so that a block of these
/// rows is whole chunks of every pass. The rank of a data-sharded fit holds whole blocks.
pub fn row_block(n: usize, rows: usize) -> usize {
    let chunk = dense_chunk(n, rows);
    chunk * grown(rows.div_ceil(chunk), PARTIAL_VALUES / (n * n + n).max(1))
}

/// The rows that rank `rank` of `ranks` holds of a dense problem of `rows` rows: its share of
/// the [`row_block`]s. `None` when there are fewer blocks than ranks, so that some rank would
/// hold nothing.
pub fn rank_rows(n: usize, rows: usize, rank: usize, ranks: usize) -> Option<Range<usize>> {
    let block = row_block(n, rows);
    let blocks = rows.div_ceil(block);
    if blocks < ranks {
        return None;
    }
    let mine = Share::Terms { rank, ranks }.range(blocks);
    Some(mine.start * block..(mine.end * block).min(rows))
}

/// The number of worker threads (`RAYON_NUM_THREADS`, else one per core).
pub fn threads() -> usize {
    rayon::current_num_threads()
}
