//! Small tables of words on the device: the vector addresses, coefficients and indices that
//! the passes over many vectors read. Each use keeps one table, with a host copy of what it
//! holds, so that a launch sends only the words that changed since the last one.

use super::driver::Buffer;
use super::launcher::Launcher;
use crate::error::BackendError;

/// The tables kept so far, one per use.
#[derive(Default)]
pub(super) struct Tables(Vec<KeptTable>);

/// A table of words on the device and a host copy of them.
struct KeptTable {
    purpose: &'static str,
    buffer: Buffer,
    held: Vec<f64>,
}

/// The fewest words a kept table holds: L-BFGS's direction at its default memory of 10 pairs
/// names 21 vectors and their 21 coefficients, its products up to 23 vectors.
const TABLE_WORDS: usize = 64;

impl Tables {
    /// The device address of a copy of `words`, in the table kept for `purpose`. Of the
    /// words, only the span that differs from what the table holds is written, in one copy.
    /// A table holds at least [`TABLE_WORDS`] words, so that an L-BFGS memory filling up
    /// never outgrows its tables; one that is too short is replaced by one of the next power
    /// of two words.
    pub fn write(
        &mut self,
        launcher: &Launcher,
        purpose: &'static str,
        words: &[f64],
    ) -> Result<u64, BackendError> {
        let found = self.0.iter().position(|t| t.purpose == purpose);
        let at = match found {
            Some(at) if self.0[at].buffer.len() >= words.len() => at,
            found => {
                let len = words.len().next_power_of_two().max(TABLE_WORDS);
                let table = KeptTable {
                    purpose,
                    buffer: launcher.alloc("a table of vectors", len)?,
                    held: vec![0.0; len],
                };
                match found {
                    Some(at) => self.0[at] = table,
                    None => self.0.push(table),
                }
                found.unwrap_or(self.0.len() - 1)
            }
        };
        let KeptTable { buffer, held, .. } = &mut self.0[at];
        let held = &mut held[..words.len()];
        if let Some((first, end)) = changed_span(held, words) {
            // The write is ordered after the launches that read this table before.
            launcher.write_at(buffer, first, &words[first..end])?;
            held[first..end].copy_from_slice(&words[first..end]);
        }
        Ok(buffer.address())
    }

    /// Where each of `words` goes among the first `words.len()` places of `purpose`'s table:
    /// the place that holds it already where one does, else the first free one. A pass whose
    /// sums do not depend on the order of its vectors (each product is its own) lays its
    /// table out this way, so that a growing list of vectors rewrites only its new ones.
    pub fn places(&self, purpose: &'static str, words: &[f64]) -> Vec<usize> {
        let held = (self.0.iter().find(|t| t.purpose == purpose)).map_or(&[][..], |t| &t.held);
        stable_places(held, words)
    }
}

/// The first and one past the last index where `words` and `held` differ, bit for bit (an
/// address word may be a NaN's pattern); `None` where they agree.
fn changed_span(held: &[f64], words: &[f64]) -> Option<(usize, usize)> {
    let differs = |&i: &usize| words[i].to_bits() != held[i].to_bits();
    let first = (0..words.len()).find(differs)?;
    let last = (0..words.len()).rfind(differs).unwrap_or(first);
    Some((first, last + 1))
}

/// [`Tables::places`] against the words a table holds.
fn stable_places(held: &[f64], words: &[f64]) -> Vec<usize> {
    let held = &held[..held.len().min(words.len())];
    let mut taken = vec![false; words.len()];
    let mut places: Vec<Option<usize>> = (words.iter())
        .map(|word| {
            let at = (0..held.len()).find(|&p| !taken[p] && held[p].to_bits() == word.to_bits())?;
            taken[at] = true;
            Some(at)
        })
        .collect();
    let mut free = (0..words.len()).filter(|&p| !taken[p]);
    for place in &mut places {
        if place.is_none() {
            *place = free.next();
        }
    }
    places.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(values: &[u64]) -> Vec<f64> {
        values.iter().map(|&v| f64::from_bits(v)).collect()
    }

    #[test]
    fn words_keep_their_places_and_new_ones_fill_the_gaps() {
        // Held [a, b, c, c]; new [a, d, b, e, c]: a, b and c stay, d and e take 3 and 4.
        let held = words(&[10, 11, 12, 12]);
        let new = words(&[10, 13, 11, 14, 12]);
        assert_eq!(stable_places(&held, &new), vec![0, 3, 1, 4, 2]);
        // A word held twice keeps both places; only places below the new length count.
        assert_eq!(
            stable_places(&held, &words(&[12, 10, 12, 11])),
            vec![2, 0, 3, 1]
        );
        assert_eq!(stable_places(&held, &words(&[12, 12])), vec![0, 1]);
        assert_eq!(stable_places(&[], &words(&[7, 8, 9])), vec![0, 1, 2]);
    }

    #[test]
    fn only_the_span_that_changed_is_sent() {
        let held = words(&[1, 2, 3, 4, 5]);
        assert_eq!(changed_span(&held, &words(&[1, 2, 3, 4, 5])), None);
        assert_eq!(changed_span(&held, &words(&[1, 9, 3, 9, 5])), Some((1, 4)));
        assert_eq!(changed_span(&held[..3], &words(&[1, 2, 8])), Some((2, 3)));
    }
}
