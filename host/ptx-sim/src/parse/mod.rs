//! PTX text → pre-decoded functions.
//!
//! Two steps: a scanner cuts the text into statements, labels and scope
//! braces (dropping comments), then a decoder turns each statement into an
//! [`Instr`] with registers resolved to indices. Labels are resolved after a
//! function body is complete, since branches may jump forward.
//!
//! `scan` cuts; this file lays out the module's symbols and walks its
//! functions; `decl` reads headers and literals, `body` a function's
//! statements and operands, `op` each instruction's operation; `ir` is what
//! they produce.

use std::collections::{BTreeMap, HashMap};

use crate::{Module, Param, ParseError};

mod body;
mod decl;
mod ir;
mod op;
mod scan;

use body::*;
use decl::*;
pub(crate) use ir::*;
use op::*;
use scan::*;

/// Where module-scope `.global` variables are laid out. Below the first
/// allocation the device hands out, so their addresses are fixed at parse
/// time and instructions can carry them as immediates.
pub(crate) const GLOBAL_DATA_BASE: u64 = 0x1000_0000;
/// Generic addresses of the block's shared memory start here.
pub(crate) const SHARED_WINDOW: u64 = 0x7e00_0000_0000;
/// Generic addresses of a thread's local memory start here.
pub(crate) const LOCAL_WINDOW: u64 = 0x7f00_0000_0000;
/// Size of the shared and local generic windows.
pub(crate) const WINDOW_SIZE: u64 = 0x0100_0000_0000;

/// Parses a whole module.
pub(crate) fn parse_module(src: &str) -> Result<Module, ParseError> {
    let items = scan(src)?;
    let mut syms: HashMap<String, ModSym> = HashMap::new();
    let mut globals = Vec::new();
    let mut next_global = GLOBAL_DATA_BASE;
    let mut shared_top = 0u64;
    let mut shared_max_align = 16u64;
    let mut extern_shared: Vec<String> = Vec::new();
    let mut funcs: Vec<Func> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    // (function index, body item range)
    let mut bodies: Vec<(usize, usize, usize)> = Vec::new();

    let mut k = 0;
    while k < items.len() {
        match &items[k] {
            Item::Stmt(s, line) => {
                let line = *line;
                let first = s.split_whitespace().next().unwrap_or("");
                let words: Vec<&str> = s.split_whitespace().collect();
                if matches!(first, ".version" | ".target" | ".file" | ".pragma") {
                    k += 1;
                    continue;
                }
                if first == ".address_size" {
                    if words.get(1) != Some(&"64") {
                        return Err(err(line, s, "only 64-bit addressing is simulated"));
                    }
                    k += 1;
                    continue;
                }
                if words.contains(&".entry") || words.contains(&".func") {
                    let h = parse_header(s, line)?;
                    let has_body = matches!(items.get(k + 1), Some(Item::Open(_)));
                    let idx = match by_name.get(&h.name) {
                        Some(&i) => i,
                        None => {
                            let mut off = 0u32;
                            let mut slot = |d: &ParamDecl| {
                                off = off.next_multiple_of(d.align.max(1));
                                let s = (off, d.size);
                                off += d.size;
                                s
                            };
                            let param_slots: Vec<_> = h.params.iter().map(&mut slot).collect();
                            let ret_slots: Vec<_> = h.rets.iter().map(&mut slot).collect();
                            funcs.push(Func {
                                name: h.name.clone(),
                                is_entry: h.is_entry,
                                defined: false,
                                line,
                                params: h
                                    .params
                                    .iter()
                                    .map(|d| Param {
                                        name: d.name.clone(),
                                        size_bytes: d.size as usize,
                                        align: d.align as usize,
                                    })
                                    .collect(),
                                param_slots,
                                ret_names: h.rets.iter().map(|d| d.name.clone()).collect(),
                                ret_slots,
                                param_bytes: off,
                                reg_names: Vec::new(),
                                depot: 0,
                                depot_align: 1,
                                code: Vec::new(),
                                shared_used: BTreeMap::new(),
                                static_shared: 0,
                            });
                            let i = funcs.len() - 1;
                            by_name.insert(h.name.clone(), i);
                            syms.insert(h.name.clone(), ModSym::Func(i as u32));
                            i
                        }
                    };
                    if has_body {
                        if funcs[idx].defined {
                            return Err(err(line, s, "function defined twice"));
                        }
                        funcs[idx].defined = true;
                        funcs[idx].line = line;
                        // Find the matching close brace.
                        let mut depth = 0;
                        let mut j = k + 1;
                        loop {
                            match items.get(j) {
                                Some(Item::Open(_)) => depth += 1,
                                Some(Item::Close(_)) => {
                                    depth -= 1;
                                    if depth == 0 {
                                        break;
                                    }
                                }
                                Some(_) => {}
                                None => return Err(err(line, s, "function body not closed")),
                            }
                            j += 1;
                        }
                        bodies.push((idx, k + 2, j));
                        k = j + 1;
                    } else {
                        k += 1;
                    }
                    continue;
                }
                // Module-scope variables.
                let mut ws: Vec<&str> = words.clone();
                ws.retain(|w| !matches!(*w, ".visible" | ".weak" | ".common"));
                let is_extern = ws.first() == Some(&".extern");
                if is_extern {
                    ws.remove(0);
                }
                match ws.first() {
                    Some(&".global") | Some(&".shared") => {
                        let (decl_text, init) = match s.find('=') {
                            Some(p) => (&s[..p], Some(&s[p + 1..])),
                            None => (s.as_str(), None),
                        };
                        let is_shared = ws[0] == ".shared";
                        let (name, size, align) = var_decl(decl_text, line)?;
                        if is_shared {
                            if init.is_some() {
                                return Err(err(line, s, "initialized .shared variable"));
                            }
                            shared_max_align = shared_max_align.max(align);
                            if is_extern || size.is_none() {
                                extern_shared.push(name.clone());
                            } else {
                                shared_top = shared_top.next_multiple_of(align);
                                syms.insert(name, ModSym::Shared(shared_top, size.unwrap_or(0)));
                                shared_top += size.unwrap_or(0);
                            }
                        } else {
                            if is_extern {
                                return Err(err(line, s, "external .global variable"));
                            }
                            let size = size.ok_or_else(|| err(line, s, "unsized .global"))?;
                            let mut bytes = vec![0u8; size as usize];
                            if let Some(init) = init {
                                let elem = elem_bytes(decl_text)
                                    .ok_or_else(|| err(line, s, "cannot read the element type"))?;
                                let body = init
                                    .trim()
                                    .strip_prefix('{')
                                    .and_then(|r| r.strip_suffix('}'))
                                    .unwrap_or(init.trim());
                                for (n, v) in split_top(body).into_iter().enumerate() {
                                    let v = parse_imm(v)
                                        .ok_or_else(|| err(line, s, "cannot read initializer"))?;
                                    let at = n * elem;
                                    if at + elem > bytes.len() {
                                        return Err(err(line, s, "initializer too long"));
                                    }
                                    bytes[at..at + elem].copy_from_slice(&v.to_le_bytes()[..elem]);
                                }
                            }
                            next_global = next_global.next_multiple_of(align.max(256));
                            syms.insert(name, ModSym::Global(next_global));
                            globals.push((next_global, bytes));
                            next_global += size.max(1);
                        }
                    }
                    _ => return Err(err(line, s, "unknown module-scope statement")),
                }
                k += 1;
            }
            Item::Label(l, line) => return Err(err(*line, l, "label outside a function")),
            Item::Open(line) | Item::Close(line) => {
                return Err(err(*line, "{", "brace outside a function"));
            }
        }
    }
    let shared_dynamic_offset = shared_top.next_multiple_of(shared_max_align);
    for name in extern_shared {
        syms.insert(name, ModSym::Shared(shared_dynamic_offset, 0));
    }
    for (idx, from, to) in bodies {
        decode_body(&mut funcs, idx, &items[from..to], &syms)?;
    }
    // Every call must reach a defined function with matching parameters.
    for f in &funcs {
        for ins in &f.code {
            if let Op::Call { func, args, rets } = &ins.op {
                let g = &funcs[*func as usize];
                let ok_args = args.len() == g.param_slots.len()
                    && args.iter().zip(&g.param_slots).all(|(a, b)| a.1 == b.1);
                let ok_rets = rets.len() == g.ret_slots.len()
                    && rets.iter().zip(&g.ret_slots).all(|(a, b)| a.1 == b.1);
                if !g.defined || !ok_args || !ok_rets {
                    return Err(err(
                        ins.line as usize,
                        &format!("call {}", g.name),
                        "call to an undefined function or with mismatched parameters",
                    ));
                }
            }
        }
    }
    // Static shared bytes per entry: the variables it or any function it
    // calls (transitively) names.
    for i in 0..funcs.len() {
        if !funcs[i].is_entry {
            continue;
        }
        let mut seen = vec![false; funcs.len()];
        let mut todo = vec![i];
        let mut used = BTreeMap::new();
        while let Some(f) = todo.pop() {
            if std::mem::replace(&mut seen[f], true) {
                continue;
            }
            used.extend(funcs[f].shared_used.iter().map(|(a, b)| (*a, *b)));
            for ins in &funcs[f].code {
                if let Op::Call { func, .. } = ins.op {
                    todo.push(func as usize);
                }
            }
        }
        funcs[i].static_shared = used.values().sum();
    }
    Ok(Module {
        funcs,
        by_name,
        globals,
        shared_dynamic_offset,
    })
}

fn elem_bytes(decl: &str) -> Option<usize> {
    decl.split_whitespace()
        .filter_map(|w| w.strip_prefix('.').and_then(ty_of))
        .map(|t| t.bits().div_ceil(8) as usize)
        .next()
}

/// Reads `… .align A .type name[N]`: name, size (None for `[]`), alignment.
fn var_decl(decl: &str, line: usize) -> Result<(String, Option<u64>, u64), ParseError> {
    let words: Vec<&str> = decl.split_whitespace().collect();
    let bad = || err(line, decl, "cannot read variable declaration");
    let elem = elem_bytes(decl).ok_or_else(bad)? as u64;
    let mut align = elem;
    if let Some(p) = words.iter().position(|w| *w == ".align") {
        align = words
            .get(p + 1)
            .and_then(|a| a.parse().ok())
            .ok_or_else(bad)?;
    }
    let name = words.last().ok_or_else(bad)?;
    Ok(match name.find('[') {
        Some(p) => {
            let n = &name[p + 1..name.len() - 1];
            let size = if n.is_empty() {
                None
            } else {
                Some(n.parse::<u64>().map_err(|_| bad())? * elem)
            };
            (name[..p].to_string(), size, align)
        }
        None => (name.to_string(), Some(elem), align),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immediates() {
        assert_eq!(parse_imm("42"), Some(42));
        assert_eq!(parse_imm("-1"), Some(u64::MAX));
        assert_eq!(parse_imm("0x1f"), Some(31));
        assert_eq!(parse_imm("010"), Some(8));
        assert_eq!(parse_imm("0"), Some(0));
        assert_eq!(parse_imm("0d3FF0000000000000"), Some(1f64.to_bits()));
        assert_eq!(parse_imm("0f3F800000"), Some(1f32.to_bits() as u64));
        assert_eq!(parse_imm("9223372036854775807"), Some(i64::MAX as u64));
        assert_eq!(parse_imm("1.5"), None);
        assert_eq!(parse_imm("0d3FF"), None);
    }

    #[test]
    fn scanner_keeps_operand_braces_and_scopes_apart() {
        let items = scan(
            "// c\n{ .reg .b32 lo, hi;\nmov.b64 {lo, hi}, %rd1; /* x; */ }\n$L_x: .branchtargets a, b;\n.version 7.0\n.target sm_70\n",
        )
        .expect("scans");
        let shape: Vec<String> = items
            .iter()
            .map(|i| match i {
                Item::Open(_) => "{".to_string(),
                Item::Close(_) => "}".to_string(),
                Item::Label(l, _) => format!("{l}:"),
                Item::Stmt(s, line) => format!("{line} {s}"),
            })
            .collect();
        assert_eq!(
            shape,
            [
                "{",
                "2 .reg .b32 lo, hi",
                "3 mov.b64 {lo, hi}, %rd1",
                "}",
                "$L_x:",
                "4 .branchtargets a, b",
                "5 .version 7.0",
                "6 .target sm_70",
            ]
        );
    }

    #[test]
    fn splitting_respects_nesting() {
        assert_eq!(split_top("a, {b, c}, [d+1]"), ["a", "{b, c}", "[d+1]"]);
        assert_eq!(split_top(""), Vec::<&str>::new());
    }
}
