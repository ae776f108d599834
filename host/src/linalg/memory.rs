//! How much more memory this process may take, and which limit says so. Three limits can
//! refuse an allocation on Linux, and the tightest one counts:
//!
//! - the memory the machine has free (`MemAvailable`): past it, Linux grants the allocation
//!   and kills the process when the pages are touched;
//! - the cgroup's memory limit (`memory.max − memory.current`, or cgroup v1's pair), which a
//!   container or a batch scheduler sets;
//! - the address-space limit (`ulimit -v`, `RLIMIT_AS`), less the address space the process
//!   already holds (`VmSize`): past it, the allocator fails.
//!
//! Each is read from `/proc` and `/sys`; one that cannot be read (another OS) plays no part.

use std::fmt;

/// Which limit leaves the least room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryLimit {
    /// The machine's free memory (`MemAvailable` in `/proc/meminfo`).
    Available,
    /// The cgroup's memory limit.
    Cgroup,
    /// The process's address-space limit (`ulimit -v`).
    AddressSpace,
}

impl fmt::Display for MemoryLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryLimit::Available => "the machine's available memory",
            MemoryLimit::Cgroup => "the cgroup's memory limit",
            MemoryLimit::AddressSpace => "the address-space limit (ulimit -v)",
        })
    }
}

/// The room left under the tightest limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRoom {
    /// Bytes this process may still allocate.
    pub bytes: usize,
    /// The limit that leaves that little.
    pub limit: MemoryLimit,
}

impl fmt::Display for MemoryRoom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:.3} GB left under {}",
            self.bytes as f64 / 1e9,
            self.limit
        )
    }
}

/// The room left under the tightest limit this process can read; `None` where it can read none.
pub fn memory_room() -> Option<MemoryRoom> {
    let rooms = [
        (MemoryLimit::Available, available()),
        (MemoryLimit::Cgroup, cgroup()),
        (MemoryLimit::AddressSpace, address_space()),
    ];
    (rooms.into_iter())
        .filter_map(|(limit, bytes)| {
            Some(MemoryRoom {
                bytes: bytes?,
                limit,
            })
        })
        .min_by_key(|room| room.bytes)
}

/// Bytes this process may still allocate ([`memory_room`]'s), `None` where no limit can be read.
pub fn available_memory() -> Option<usize> {
    memory_room().map(|room| room.bytes)
}

/// `MemAvailable`, in bytes.
fn available() -> Option<usize> {
    kib_field(
        &std::fs::read_to_string("/proc/meminfo").ok()?,
        "MemAvailable:",
    )
}

/// What the cgroup's limit leaves: v2's `memory.max − memory.current`, else v1's
/// `memory.limit_in_bytes − memory.usage_in_bytes`. "max" (no limit) does not parse.
fn cgroup() -> Option<usize> {
    let read = |file: &str| -> Option<usize> {
        let text = std::fs::read_to_string(format!("/sys/fs/cgroup/{file}")).ok()?;
        text.trim().parse().ok()
    };
    let pairs = [
        ("memory.max", "memory.current"),
        (
            "memory/memory.limit_in_bytes",
            "memory/memory.usage_in_bytes",
        ),
    ];
    pairs.iter().find_map(|(max, current)| {
        let max = read(max)?;
        // cgroup v1 writes "no limit" as a number near 2⁶³.
        (max < 1 << 60).then(|| max.saturating_sub(read(current).unwrap_or(0)))
    })
}

/// What `RLIMIT_AS`'s soft limit leaves above the address space already mapped (`VmSize`).
fn address_space() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft: usize = line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?; // "unlimited" does not parse
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    Some(soft.saturating_sub(kib_field(&status, "VmSize:").unwrap_or(0)))
}

/// The value of a `/proc` line `NAME   123 kB`, in bytes.
fn kib_field(text: &str, name: &str) -> Option<usize> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    let kib: usize = line[name.len()..].split_whitespace().next()?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_read_in_bytes() {
        let text = "VmPeak:\t  10 kB\nVmSize:\t    3892 kB\n";
        assert_eq!(kib_field(text, "VmSize:"), Some(3892 * 1024));
        assert_eq!(kib_field(text, "VmRSS:"), None);
    }

    /// On Linux the machine's free memory can always be read, so some limit is found, and it
    /// is no more than that memory: read before and after, as other processes change it
    /// meanwhile (the two readings bound it unless it rose and fell again between them).
    #[test]
    #[cfg(target_os = "linux")]
    fn the_room_is_at_most_the_free_memory() {
        let before = available().unwrap();
        let room = memory_room().expect("/proc/meminfo");
        assert!(room.bytes <= before.max(available().unwrap()));
        assert!(room.to_string().contains(" GB left under "));
    }
}
