//! Reading PTX text: the `.entry` signatures, the target, stray `.extern`s. Used by
//! `cudamin info` and by the test that checks every launch against the PTX.

/// The type of one kernel parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamType {
    /// Width in bits (of the whole array, for a `.b8 name[16]` struct parameter).
    pub bits: u32,
    /// `.f32` / `.f64` rather than an integer or untyped `.b` parameter.
    pub float: bool,
    /// Declared `.ptr` (LLVM marks pointer parameters so).
    pub ptr: bool,
}

/// One `.entry` (kernel) of a PTX module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The kernel's name, as launched.
    pub name: String,
    /// Its parameters, in order.
    pub params: Vec<ParamType>,
}

/// All `.entry` signatures, in file order.
pub fn entries(ptx: &str) -> Result<Vec<Entry>, String> {
    let mut found = Vec::new();
    let mut rest = ptx;
    while let Some(at) = rest.find(".entry ") {
        rest = &rest[at + ".entry ".len()..];
        let open = rest.find('(').ok_or("`.entry` without a parameter list")?;
        let close = rest
            .find(')')
            .ok_or("unterminated `.entry` parameter list")?;
        let name = rest[..open].trim().to_owned();
        let params = rest[open + 1..close]
            .split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|p| {
                param_type(p).ok_or_else(|| format!("{name}: unreadable parameter `{}`", p.trim()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        found.push(Entry { name, params });
        rest = &rest[close..];
    }
    Ok(found)
}

/// `.param .u64 .ptr .align 1 name` → 64 bits, integer, pointer;
/// `.param .align 8 .b8 name[16]` (a struct passed by value) → 128 bits, integer.
fn param_type(decl: &str) -> Option<ParamType> {
    let tokens: Vec<&str> = decl.split_whitespace().collect();
    if tokens.first() != Some(&".param") {
        return None;
    }
    let ty = tokens
        .iter()
        .skip(1)
        .find(|t| t.len() > 2 && t.starts_with('.') && *t != &".ptr" && *t != &".align")?;
    let (kind, bits) = ty[1..].split_at(1);
    let element_bits: u32 = bits.parse().ok()?;
    let name = tokens.last()?;
    let elements: u32 = match name.split_once('[') {
        Some((_, count)) => count.strip_suffix(']')?.parse().ok()?,
        None => 1,
    };
    let bits = element_bits * elements;
    let ptr = tokens.contains(&".ptr");
    match kind {
        "u" | "s" | "b" => Some(ParamType {
            bits,
            float: false,
            ptr,
        }),
        "f" => Some(ParamType {
            bits,
            float: true,
            ptr,
        }),
        _ => None,
    }
}

/// The `.target` line's architecture, e.g. `sm_70`.
pub fn target(ptx: &str) -> Option<&str> {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .map(str::trim)
}

/// Lines declaring `.extern` symbols: a self-contained module has none.
pub fn externs(ptx: &str) -> Vec<&str> {
    ptx.lines()
        .filter(|l| l.trim_start().starts_with(".extern"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\
        .visible .entry k_value(\n\t.param .u64 .ptr .align 1 k_value_param_0,\n\t.param .u64 k_value_param_1,\n\
        \t.param .f64 k_value_param_2,\n\t.param .align 8 .b8 k_value_param_3[16]\n)\n{\n}\n\
        .visible .entry none()\n{\n}\n";

    #[test]
    fn reads_entries_and_target() {
        let e = entries(SAMPLE).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].name, "k_value");
        assert_eq!(
            e[0].params,
            vec![
                ParamType {
                    bits: 64,
                    float: false,
                    ptr: true
                },
                ParamType {
                    bits: 64,
                    float: false,
                    ptr: false
                },
                ParamType {
                    bits: 64,
                    float: true,
                    ptr: false
                },
                ParamType {
                    bits: 128,
                    float: false,
                    ptr: false
                },
            ]
        );
        assert!(e[1].params.is_empty());
        assert_eq!(target(SAMPLE), Some("sm_70"));
        assert!(externs(SAMPLE).is_empty());
    }
}
