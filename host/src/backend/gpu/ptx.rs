//! Reading PTX text: the `.entry` signatures, the target, stray `.extern`s, and the module of
//! each entry. Used by `cudamin info`, by the test that checks every launch against the PTX,
//! and by the cust driver, which loads one entry's module at a time.

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

/// A PTX module cut into top-level items, from which [`module`](EntryModules::module) builds
/// one self-contained module per `.entry`.
///
/// Why: a device JIT-compiles a whole module when it loads it, and the embedded PTX holds
/// every kernel of every built-in problem and model (slow with an empty driver cache). A solve
/// launches a handful of them; loading each entry's module on its first launch costs that
/// handful.
///
/// An entry's module is everything outside the functions and entries (the header, the
/// module-scope `.global`, `.const` and `.shared` variables, in their order), the `.func`s it
/// calls directly or through each other (and any a variable's initializer names), and the
/// entry itself. The variables are read-only tables and per-block scratch, so a copy of them
/// per module behaves as the one copy did.
#[derive(Clone, Debug)]
pub struct EntryModules {
    text: String,
    items: Vec<Item>,
}

#[derive(Clone, Debug)]
struct Item {
    kind: ItemKind,
    /// Byte range in `text`, whole lines.
    range: std::ops::Range<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ItemKind {
    /// Header and variables: in every module.
    Shared,
    /// A `.func`'s declaration or definition: in the modules that name it.
    Function(String),
    /// An `.entry`: in its own module.
    Entry(String),
}

/// Cuts `ptx` into its items; an error names what does not parse (unbalanced braces, an item
/// without a name, no entries).
pub fn modules(ptx: &str) -> Result<EntryModules, String> {
    let mut items: Vec<Item> = Vec::new();
    let mut open: Option<(ItemKind, usize, bool)> = None; // kind, start, body seen
    let mut depth = 0usize;
    let mut at = 0;
    for line in ptx.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let code = line.split("//").next().unwrap_or_default();
        if open.is_none() {
            let kind = item_kind(code.trim_start());
            match kind {
                Some(Ok(kind)) => open = Some((kind, start, false)),
                Some(Err(why)) => return Err(why),
                None => {
                    push_shared(&mut items, start..at);
                    continue;
                }
            }
        }
        let (kind, item_start, body) = open.as_mut().expect("an item is open");
        for c in code.chars() {
            match c {
                '{' => {
                    depth += 1;
                    *body = true;
                }
                '}' => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| format!("an unmatched `}}` at byte {start}"))?;
                }
                _ => {}
            }
        }
        let declaration_ends = !*body && code.trim_end().ends_with(';');
        if depth == 0 && (*body || declaration_ends) {
            let kind = std::mem::replace(kind, ItemKind::Shared);
            items.push(Item {
                kind,
                range: *item_start..at,
            });
            open = None;
        }
    }
    if let Some((kind, ..)) = open {
        return Err(format!("{kind:?} is not closed at the end of the PTX"));
    }
    if !items.iter().any(|i| matches!(i.kind, ItemKind::Entry(_))) {
        return Err("the PTX has no `.entry`".to_owned());
    }
    Ok(EntryModules {
        text: ptx.to_owned(),
        items,
    })
}

/// Appends `range` to the shared item before it, or starts one.
fn push_shared(items: &mut Vec<Item>, range: std::ops::Range<usize>) {
    match items.last_mut() {
        Some(last) if last.kind == ItemKind::Shared && last.range.end == range.start => {
            last.range.end = range.end;
        }
        _ => items.push(Item {
            kind: ItemKind::Shared,
            range,
        }),
    }
}

/// The kind of the item a top-level line starts: `None` for a line of the shared text.
fn item_kind(line: &str) -> Option<Result<ItemKind, String>> {
    let mut words = line.split_whitespace().peekable();
    while words
        .peek()
        .is_some_and(|w| matches!(*w, ".visible" | ".weak" | ".extern"))
    {
        words.next();
    }
    let directive = *words.peek()?;
    let rest = line[line.find(directive)? + directive.len()..].trim_start();
    let name = |rest: &str| {
        // A `.func` may declare its return value first: `.func (.param .b64 r) name(`.
        let rest = match rest.strip_prefix('(') {
            Some(after) => after
                .split_once(')')
                .map_or("", |(_, tail)| tail)
                .trim_start(),
            None => rest,
        };
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '(' || c == ';')
            .unwrap_or(rest.len());
        match &rest[..end] {
            "" => Err(format!("a `{directive}` without a name: `{}`", line.trim())),
            name => Ok(name.to_owned()),
        }
    };
    match directive {
        ".entry" => Some(name(rest).map(ItemKind::Entry)),
        ".func" => Some(name(rest).map(ItemKind::Function)),
        _ => None,
    }
}

/// Whether `name` occurs in `text` as a whole identifier.
fn names(text: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '.');
    text.match_indices(name)
        .any(|(at, _)| !text[..at].ends_with(ident) && !text[at + name.len()..].starts_with(ident))
}

impl EntryModules {
    /// The entries' names, in file order.
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.items.iter().filter_map(|item| match &item.kind {
            ItemKind::Entry(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// Each entry with its module, in file order: what `cudamin_builder::ptxas::assemble_entries`
    /// takes.
    pub fn all(&self) -> Vec<(&str, String)> {
        (self.entries())
            .filter_map(|entry| Some((entry, self.module(entry)?)))
            .collect()
    }

    /// The self-contained module of `entry`, or `None` if the PTX has no such entry.
    pub fn module(&self, entry: &str) -> Option<String> {
        let text = |item: &Item| &self.text[item.range.clone()];
        let this = (self.items.iter()).find(|i| i.kind == ItemKind::Entry(entry.to_owned()))?;
        // The functions it needs: named by the entry or the shared text, or by a function
        // needed already, until no more are found.
        let mut roots: Vec<&str> = vec![text(this)];
        roots.extend(
            (self.items.iter())
                .filter(|i| i.kind == ItemKind::Shared)
                .map(text),
        );
        let mut needed: Vec<&str> = Vec::new();
        while let Some(root) = roots.pop() {
            for item in &self.items {
                if let ItemKind::Function(name) = &item.kind
                    && !needed.contains(&name.as_str())
                    && names(root, name)
                {
                    needed.push(name);
                    roots.extend(
                        (self.items.iter())
                            .filter(|i| i.kind == item.kind)
                            .map(text),
                    );
                }
            }
        }
        let mut module = String::new();
        for item in &self.items {
            let keep = match &item.kind {
                ItemKind::Shared => true,
                ItemKind::Function(name) => needed.contains(&name.as_str()),
                ItemKind::Entry(_) => std::ptr::eq(item, this),
            };
            if keep {
                module += text(item);
            }
        }
        Some(module)
    }
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

    /// Two entries, a function one of them calls through another, a function with a return
    /// value, a forward declaration, variables and a comment with a brace.
    const TWO_ENTRIES: &str = ".version 7.0\n.target sm_70\n.address_size 64\n\n\
        .shared .align 8 .f64 scratch[32];\n\
        .func inner\n(\n\t.param .b64 inner_param_0\n)\n;\n\
        .global .align 8 .b8 table[8] = {0, 0, 0, 0, 0, 0, 248, 127};\n\
        .func (.param .b64 func_retval0) outer(\n\t.param .b64 outer_param_0\n)\n{\n\
        \tcall.uni inner, (outer_param_0); // a brace: {\n\tret;\n}\n\
        .func inner(\n\t.param .b64 inner_param_0\n)\n{\n\tret;\n}\n\
        .func unused()\n{\n\tret;\n}\n\
        .visible .entry calls(\n\t.param .u64 calls_param_0\n)\n.maxntid 256, 1, 1\n{\n\
        \tcall.uni (r), outer, (calls_param_0);\n\tret;\n}\n\
        .visible .entry alone()\n{\n\t{\n\tret;\n\t}\n}\n";

    #[test]
    fn each_entry_gets_the_functions_it_calls_and_the_shared_text() {
        let modules = modules(TWO_ENTRIES).unwrap();
        assert_eq!(modules.entries().collect::<Vec<_>>(), ["calls", "alone"]);
        let calls = modules.module("calls").unwrap();
        for part in [
            "scratch[32]",
            "table[8]",
            "func inner\n(",
            "outer(",
            "inner(",
            "entry calls(",
        ] {
            assert!(calls.contains(part), "{part} missing from:\n{calls}");
        }
        assert!(
            !calls.contains("unused") && !calls.contains("alone"),
            "{calls}"
        );
        let alone = modules.module("alone").unwrap();
        assert!(alone.contains("scratch[32]") && alone.contains("entry alone()"));
        assert!(!alone.contains(".func"), "{alone}");
        // Each module reads as a module with one entry, and the entries split out are the
        // signatures of the whole.
        assert_eq!(entries(&calls).unwrap(), entries(TWO_ENTRIES).unwrap()[..1]);
        assert_eq!(modules.module("missing"), None);
    }

    #[test]
    fn unreadable_ptx_is_refused() {
        assert!(
            modules(".version 7.0\n")
                .unwrap_err()
                .contains("no `.entry`")
        );
        let open = ".visible .entry k()\n{\n\tret;\n";
        assert!(modules(open).unwrap_err().contains("not closed"));
    }
}
