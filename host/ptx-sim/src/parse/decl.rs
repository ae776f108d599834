//! Module-scope pieces: the symbols a body may name, literals, and function headers with
//! their parameters.

use super::*;

/// A module-scope symbol.
#[derive(Clone, Copy, Debug)]
pub(super) enum ModSym {
    Global(u64),
    /// Offset in the shared window and size (0 for the dynamic window).
    Shared(u64, u64),
    Func(u32),
}

/// A name visible inside a function body.
#[derive(Clone, Copy, Debug)]
pub(super) enum Local {
    Reg(u32, u32),
    Param { off: u32, size: u32 },
    Depot,
}

pub(super) fn parse_int(s: &str) -> Option<u64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let s = s.strip_suffix('U').unwrap_or(s);
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<u64>().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Parses an immediate: integer, `0dXXXXXXXXXXXXXXXX` or `0fXXXXXXXX`.
pub(super) fn parse_imm(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0d").or_else(|| s.strip_prefix("0D")) {
        if h.len() == 16 {
            return u64::from_str_radix(h, 16).ok();
        }
        return None;
    }
    if let Some(h) = s.strip_prefix("0f").or_else(|| s.strip_prefix("0F")) {
        if h.len() == 8 {
            return u64::from_str_radix(h, 16).ok();
        }
        return None;
    }
    parse_int(s)
}

/// Splits at commas that are outside braces, brackets and parentheses.
pub(super) fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '{' | '[' | '(' => depth += 1,
            '}' | ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

/// A parameter declaration: `.param [.align N] .type [.ptr …] name[\[N\]]`.
pub(super) struct ParamDecl {
    pub(super) name: String,
    pub(super) size: u32,
    pub(super) align: u32,
}

pub(super) fn parse_param_decl(s: &str) -> Option<ParamDecl> {
    let words: Vec<&str> = s.split_whitespace().collect();
    if words.first() != Some(&".param") && words.first() != Some(&".reg") {
        return None;
    }
    let mut align = 0;
    let mut elem = 0;
    let mut name = None;
    let mut pointer = false;
    let mut i = 1;
    while i < words.len() {
        let w = words[i];
        if w == ".align" {
            // After `.ptr`, `.align` is the pointee's alignment, not the
            // parameter's.
            let a = words.get(i + 1)?.parse().ok()?;
            if !pointer {
                align = a;
            }
            i += 2;
            continue;
        }
        if w == ".ptr" {
            pointer = true;
            i += 1;
            continue;
        }
        if w == ".global" || w == ".shared" || w == ".local" || w == ".const" {
            i += 1;
            continue;
        }
        if let Some(t) = w.strip_prefix('.').and_then(ty_of) {
            elem = t.bits().div_ceil(8);
            i += 1;
            continue;
        }
        name = Some(w);
        i += 1;
    }
    let name = name?;
    let (name, count) = match name.find('[') {
        Some(p) => {
            let n: u32 = name[p + 1..].strip_suffix(']')?.parse().ok()?;
            (&name[..p], n)
        }
        None => (name, 1),
    };
    if elem == 0 {
        return None;
    }
    Some(ParamDecl {
        name: name.to_string(),
        size: elem * count,
        align: if align == 0 { elem } else { align },
    })
}

/// A function header: `[.visible|.weak|.extern] (.entry|.func) [(rets)] name (params) [perf directives]`.
pub(super) struct Header {
    pub(super) is_entry: bool,
    pub(super) name: String,
    pub(super) rets: Vec<ParamDecl>,
    pub(super) params: Vec<ParamDecl>,
}

pub(super) fn parse_header(s: &str, line: usize) -> Result<Header, ParseError> {
    let bad = |why: &str| err(line, s, why);
    let kw_pos = s
        .find(".entry")
        .map(|p| (p, true, 6))
        .or_else(|| s.find(".func").map(|p| (p, false, 5)))
        .ok_or_else(|| bad("expected .entry or .func"))?;
    let (p, is_entry, len) = kw_pos;
    let mut rest = s[p + len..].trim_start();
    let mut rets = Vec::new();
    // Grabs a parenthesized list from the start of `rest`.
    let take_list = |rest: &mut &str| -> Result<Vec<ParamDecl>, ParseError> {
        let close = rest
            .find(')')
            .ok_or_else(|| bad("unclosed parameter list"))?;
        let inner = &rest[1..close];
        *rest = rest[close + 1..].trim_start();
        split_top(inner)
            .into_iter()
            .filter(|d| !d.is_empty())
            .map(|d| parse_param_decl(d).ok_or_else(|| bad("cannot read parameter declaration")))
            .collect()
    };
    if rest.starts_with('(') {
        rets = take_list(&mut rest)?;
    }
    let name_end = rest
        .find(|c: char| c == '(' || c.is_whitespace())
        .unwrap_or(rest.len());
    let name = rest[..name_end].to_string();
    if name.is_empty() {
        return Err(bad("function without a name"));
    }
    rest = rest[name_end..].trim_start();
    let params = if rest.starts_with('(') {
        take_list(&mut rest)?
    } else {
        Vec::new()
    };
    // Whatever follows are performance directives (.maxntid and the like),
    // which do not change what the code computes.
    for w in rest.split_whitespace() {
        if w.starts_with('.')
            && ![
                ".maxntid",
                ".reqntid",
                ".minnctapersm",
                ".maxnreg",
                ".noreturn",
            ]
            .contains(&w)
        {
            return Err(bad("unknown function directive"));
        }
    }
    Ok(Header {
        is_entry,
        name,
        rets,
        params,
    })
}
