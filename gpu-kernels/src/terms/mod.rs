//! The built-in term functions, one file each. Each file is what a user writes for a new
//! objective: a [`Term`](crate::Term) implementation and one `register_term!` line.

pub mod seed_expsum;

pub use seed_expsum::SeedExpSum;
