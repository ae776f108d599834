//! Which device a process opens: one per local rank of an MPI job, so that the ranks on a
//! node with several GPUs do not all share device 0.
//!
//! `CUDAMIN_DEVICE` names the device outright. Otherwise the process's rank on its node, as
//! the MPI launcher or the batch system tells it, picks device `local_rank mod devices`; a
//! process alone opens device 0.

/// The variables launchers set to a process's rank on its node, in the order they are read:
/// Open MPI, Slurm, MPICH (Hydra), MVAPICH2.
const LOCAL_RANK_VARIABLES: [&str; 4] = [
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
    "MPI_LOCALRANKID",
    "MV2_COMM_WORLD_LOCAL_RANK",
];

/// The device ordinal to open among `devices`, from the environment `var` reads; or why the
/// environment asks for one that does not exist.
pub(crate) fn choose(devices: u32, var: impl Fn(&str) -> Option<String>) -> Result<u32, String> {
    if devices == 0 {
        return Err("the driver reports no devices".to_owned());
    }
    if let Some(text) = var("CUDAMIN_DEVICE") {
        return match text.trim().parse::<u32>() {
            Ok(ordinal) if ordinal < devices => Ok(ordinal),
            _ => Err(format!(
                "CUDAMIN_DEVICE={text}: expected a device number below {devices}"
            )),
        };
    }
    let local_rank = LOCAL_RANK_VARIABLES
        .iter()
        .find_map(|name| var(name)?.trim().parse::<u32>().ok());
    Ok(local_rank.map_or(0, |rank| rank % devices))
}

#[cfg(test)]
mod tests {
    use super::choose;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            (pairs.iter())
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        }
    }

    /// Issue 25's fourth bug: every rank opened device 0.
    #[test]
    fn ranks_on_a_node_take_a_device_each() {
        for (rank, expected) in [("0", 0), ("1", 1), ("3", 3), ("5", 1)] {
            let vars = [("OMPI_COMM_WORLD_LOCAL_RANK", rank)];
            assert_eq!(choose(4, env(&vars)), Ok(expected), "local rank {rank}");
        }
        assert_eq!(choose(2, env(&[("SLURM_LOCALID", "3")])), Ok(1));
        assert_eq!(choose(8, env(&[])), Ok(0), "a process alone");
    }

    #[test]
    fn cudamin_device_overrides_the_rank() {
        let vars = [("CUDAMIN_DEVICE", "2"), ("OMPI_COMM_WORLD_LOCAL_RANK", "1")];
        assert_eq!(choose(4, env(&vars)), Ok(2));
        let err = choose(2, env(&[("CUDAMIN_DEVICE", "2")])).unwrap_err();
        assert!(
            err.contains("CUDAMIN_DEVICE=2") && err.contains("below 2"),
            "{err}"
        );
        assert!(choose(2, env(&[("CUDAMIN_DEVICE", "gpu0")])).is_err());
        assert!(choose(0, env(&[])).is_err());
    }
}
