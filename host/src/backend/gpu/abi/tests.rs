use super::*;
use gpu_kernels::terms::fit::Poly;
use gpu_kernels::terms::mgh::mgh05_beale::Mgh05;
use gpu_kernels::{ResidualTerm, terms::SeedExpSum};

/// The names derived from a registered name are the ones the registration macros give.
#[test]
fn entries_by_name_are_the_registered_ones() {
    let by_name = |entries: TermEntries, residual| TermEntries::named(&entries.name, residual);
    let term = TermEntries::of::<SeedExpSum>();
    assert_eq!(by_name(term.clone(), false), term);
    for residual in [
        TermEntries::residual::<Poly>(),
        TermEntries::residual::<ResidualTerm<Mgh05>>(),
    ] {
        assert_eq!(by_name(residual.clone(), true), residual);
        assert_eq!(
            residual.launches(),
            by_name(residual.clone(), true).launches()
        );
    }
}
