//! PTX text → pre-decoded functions.
//!
//! Two steps: a scanner cuts the text into statements, labels and scope
//! braces (dropping comments), then a decoder turns each statement into an
//! [`Instr`] with registers resolved to indices. Labels are resolved after a
//! function body is complete, since branches may jump forward.

use std::collections::{BTreeMap, HashMap};

use crate::{Module, Param, ParseError};

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

/// A scalar type as PTX instructions name it; `.bN` behaves as `.uN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    U(u8),
    S(u8),
    F32,
    F64,
    Pred,
}

impl Ty {
    pub(crate) fn bits(self) -> u32 {
        match self {
            Ty::U(b) | Ty::S(b) => b as u32,
            Ty::F32 => 32,
            Ty::F64 => 64,
            Ty::Pred => 1,
        }
    }
}

fn ty_of(s: &str) -> Option<Ty> {
    Some(match s {
        "b8" | "u8" => Ty::U(8),
        "b16" | "u16" => Ty::U(16),
        "b32" | "u32" => Ty::U(32),
        "b64" | "u64" => Ty::U(64),
        "s8" => Ty::S(8),
        "s16" => Ty::S(16),
        "s32" => Ty::S(32),
        "s64" => Ty::S(64),
        "f32" => Ty::F32,
        "f64" => Ty::F64,
        "pred" => Ty::Pred,
        _ => return None,
    })
}

/// A special register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sreg {
    Tid(u8),
    Ntid(u8),
    Ctaid(u8),
    Nctaid(u8),
    Laneid,
    Warpsize,
}

/// An instruction operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Opnd {
    R(u32),
    I(u64),
    S(Sreg),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bin {
    Add,
    Sub,
    MulLo,
    MulHi,
    MulWide,
    Div,
    Rem,
    Shl,
    Shr,
    And,
    Or,
    Xor,
    Min,
    Max,
    Copysign,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Un {
    Not,
    Neg,
    Abs,
    Clz,
    Popc,
    Cnot,
    Rcp,
    Sqrt,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Equ,
    Neu,
    Ltu,
    Leu,
    Gtu,
    Geu,
    Num,
    Nan,
}

/// Rounding modifier of `cvt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rnd {
    None,
    Rn,
    Rz,
    Rm,
    Rp,
    Rni,
    Rzi,
    Rmi,
    Rpi,
}

/// The state space an `ld`/`st`/`atom`/`cvta` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemSpace {
    Generic,
    Global,
    Shared,
    Local,
    Param,
}

/// An address operand: `[reg+off]`, `[symbol+off]` or a parameter slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Addr {
    /// Register plus byte offset.
    Reg(u32, i64),
    /// An address known when parsing (a symbol or an immediate).
    Abs(u64),
    /// A byte range of the frame's parameter buffer: start, end of the
    /// parameter it lies in (for bounds), and the accessed offset.
    Param { at: u32, slot_end: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ShflMode {
    Up,
    Down,
    Bfly,
    Idx,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AtomOp {
    Add,
    Exch,
    Min,
    Max,
    And,
    Or,
    Xor,
    Cas,
}

/// A decoded operation. Register operands are indices into the frame's
/// register file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Op {
    Mov {
        d: u32,
        a: Opnd,
        bits: u32,
    },
    Bin {
        op: Bin,
        ty: Ty,
        d: u32,
        a: Opnd,
        b: Opnd,
    },
    Un {
        op: Un,
        ty: Ty,
        d: u32,
        a: Opnd,
    },
    /// `mad.lo`/`mad.hi`/`mad.wide` on integers.
    Mad {
        mode: Bin,
        ty: Ty,
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
    },
    Fma {
        ty: Ty,
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
    },
    Bfe {
        ty: Ty,
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
    },
    /// `add`/`sub` with the carry flag: `d = a ± b ± CF` where `carry_in`, the carry (for
    /// `sub`, the borrow) written to `CF` where `carry_out`.
    Carry {
        sub: bool,
        carry_in: bool,
        carry_out: bool,
        bits: u32,
        d: u32,
        a: Opnd,
        b: Opnd,
    },
    /// `shf.{l,r}.{wrap,clamp}.b32`: a funnel shift of `b:a` (`b` the high word) by `c`.
    Shf {
        left: bool,
        clamp: bool,
        d: u32,
        a: Opnd,
        b: Opnd,
        c: Opnd,
    },
    Setp {
        cmp: Cmp,
        ty: Ty,
        d: u32,
        a: Opnd,
        b: Opnd,
    },
    Selp {
        bits: u32,
        d: u32,
        a: Opnd,
        b: Opnd,
        p: Opnd,
    },
    Cvt {
        dt: Ty,
        st: Ty,
        rnd: Rnd,
        d: u32,
        a: Opnd,
    },
    /// `mov.bN {a, b, …}, x`: split into parts of `part` bits (`None` = `_`).
    Unpack {
        ds: Vec<Option<u32>>,
        part: u32,
        a: Opnd,
    },
    /// `mov.bN x, {a, b, …}`.
    Pack {
        d: u32,
        srcs: Vec<Opnd>,
        part: u32,
    },
    Cvta {
        to: bool,
        space: MemSpace,
        d: u32,
        a: Opnd,
    },
    /// Local-space address of this frame's `__local_depot`.
    Depot {
        d: u32,
    },
    /// `count` elements of `size` bytes (1, or 2 and 4 for `.v2`/`.v4`), one after another
    /// from `addr`, into `d[..count]`.
    Ld {
        space: MemSpace,
        size: u32,
        signed: bool,
        count: u8,
        d: [u32; 4],
        addr: Addr,
    },
    /// `src[..count]` stored as `count` elements of `size` bytes from `addr`.
    St {
        space: MemSpace,
        size: u32,
        count: u8,
        src: [Opnd; 4],
        addr: Addr,
    },
    Atom {
        space: MemSpace,
        op: AtomOp,
        ty: Ty,
        d: Option<u32>,
        addr: Addr,
        b: Opnd,
        c: Opnd,
    },
    Bra {
        target: u32,
    },
    Brx {
        idx: Opnd,
        targets: Vec<u32>,
    },
    Call {
        func: u32,
        args: Vec<(u32, u32)>,
        rets: Vec<(u32, u32)>,
    },
    Ret,
    Exit,
    Trap,
    Bar {
        id: Opnd,
    },
    Shfl {
        mode: ShflMode,
        d: u32,
        p: Option<u32>,
        a: Opnd,
        b: Opnd,
        c: Opnd,
        mask: Opnd,
    },
    Nop,
}

/// One decoded instruction with its guard predicate and source line.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Instr {
    /// Guard: register and whether it is negated (`@!%p`).
    pub guard: Option<(u32, bool)>,
    pub op: Op,
    pub line: u32,
}

/// A decoded `.entry` or `.func`.
#[derive(Debug)]
pub(crate) struct Func {
    pub name: String,
    pub is_entry: bool,
    pub defined: bool,
    pub line: usize,
    /// Declared parameters (for an entry, what a launch supplies).
    pub params: Vec<Param>,
    /// (offset, size) of each parameter in the frame's parameter buffer.
    pub param_slots: Vec<(u32, u32)>,
    /// Names of the return values.
    pub ret_names: Vec<String>,
    /// (offset, size) of each return value in the parameter buffer.
    pub ret_slots: Vec<(u32, u32)>,
    /// Bytes of the frame's parameter buffer (params, returns, call slots).
    pub param_bytes: u32,
    pub reg_names: Vec<String>,
    /// Bytes of this function's `.local` depot and its alignment.
    pub depot: u64,
    pub depot_align: u64,
    pub code: Vec<Instr>,
    /// Shared variables named in this function's body: offset → size.
    pub shared_used: BTreeMap<u64, u64>,
    /// For an entry: bytes of static shared memory it and its callees use,
    /// as the driver would count them for the launch limit.
    pub static_shared: u64,
}

/// A scanned piece of PTX.
#[derive(Debug)]
enum Item {
    Open(usize),
    Close(usize),
    Label(String, usize),
    Stmt(String, usize),
}

fn err(line: usize, text: &str, why: impl Into<String>) -> ParseError {
    ParseError {
        line,
        text: text.trim().to_string(),
        why: why.into(),
    }
}

/// Cuts PTX into statements, labels and braces, dropping comments.
fn scan(src: &str) -> Result<Vec<Item>, ParseError> {
    let b = src.as_bytes();
    let mut items = Vec::new();
    let mut i = 0;
    let mut line = 1;
    // Skips a comment at `i` if there is one; returns whether it did.
    let skip_comment = |i: &mut usize, line: &mut usize| -> Result<bool, ParseError> {
        if b[*i] == b'/' && b.get(*i + 1) == Some(&b'/') {
            while *i < b.len() && b[*i] != b'\n' {
                *i += 1;
            }
            Ok(true)
        } else if b[*i] == b'/' && b.get(*i + 1) == Some(&b'*') {
            let start = *line;
            *i += 2;
            while *i < b.len() && !(b[*i] == b'*' && b.get(*i + 1) == Some(&b'/')) {
                if b[*i] == b'\n' {
                    *line += 1;
                }
                *i += 1;
            }
            if *i >= b.len() {
                return Err(err(start, "/*", "unterminated comment"));
            }
            *i += 2;
            Ok(true)
        } else {
            Ok(false)
        }
    };
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if skip_comment(&mut i, &mut line)? {
            continue;
        }
        if c == b'{' {
            items.push(Item::Open(line));
            i += 1;
            continue;
        }
        if c == b'}' {
            items.push(Item::Close(line));
            i += 1;
            continue;
        }
        // A statement or a label.
        let start_line = line;
        let mut text = String::new();
        let mut braces = 0i32;
        let mut parens = 0i32;
        loop {
            if i >= b.len() {
                return Err(err(start_line, &text, "statement without `;`"));
            }
            if skip_comment(&mut i, &mut line)? {
                text.push(' ');
                continue;
            }
            let c = b[i];
            match c {
                b'\n' if is_line_directive(&text) => {
                    items.push(Item::Stmt(text.trim().to_string(), start_line));
                    break;
                }
                b'\n' => {
                    line += 1;
                    text.push(' ');
                }
                b';' if braces == 0 && parens == 0 => {
                    i += 1;
                    items.push(Item::Stmt(text.trim().to_string(), start_line));
                    break;
                }
                b':' if braces == 0
                    && parens == 0
                    && !text.trim().is_empty()
                    && !text.trim().contains(char::is_whitespace) =>
                {
                    i += 1;
                    items.push(Item::Label(text.trim().to_string(), start_line));
                    break;
                }
                b'{' if braces == 0
                    && parens == 0
                    && text
                        .split_whitespace()
                        .any(|w| w == ".entry" || w == ".func") =>
                {
                    // A function header ends where its body begins.
                    items.push(Item::Stmt(text.trim().to_string(), start_line));
                    break;
                }
                b'{' => {
                    braces += 1;
                    text.push('{');
                }
                b'}' => {
                    braces -= 1;
                    if braces < 0 {
                        return Err(err(start_line, &text, "unbalanced `}`"));
                    }
                    text.push('}');
                }
                b'(' => {
                    parens += 1;
                    text.push('(');
                }
                b')' => {
                    parens -= 1;
                    text.push(')');
                }
                _ => text.push(c as char),
            }
            i += 1;
        }
    }
    Ok(items)
}

/// Directives that end at the end of their line rather than at a `;`.
fn is_line_directive(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    matches!(
        first,
        ".version" | ".target" | ".address_size" | ".file" | ".loc"
    )
}

/// A module-scope symbol.
#[derive(Clone, Copy, Debug)]
enum ModSym {
    Global(u64),
    /// Offset in the shared window and size (0 for the dynamic window).
    Shared(u64, u64),
    Func(u32),
}

/// A name visible inside a function body.
#[derive(Clone, Copy, Debug)]
enum Local {
    Reg(u32, u32),
    Param { off: u32, size: u32 },
    Depot,
}

fn parse_int(s: &str) -> Option<u64> {
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
fn parse_imm(s: &str) -> Option<u64> {
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
fn split_top(s: &str) -> Vec<&str> {
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
struct ParamDecl {
    name: String,
    size: u32,
    align: u32,
}

fn parse_param_decl(s: &str) -> Option<ParamDecl> {
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
struct Header {
    is_entry: bool,
    name: String,
    rets: Vec<ParamDecl>,
    params: Vec<ParamDecl>,
}

fn parse_header(s: &str, line: usize) -> Result<Header, ParseError> {
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

/// Decoding state of one function body.
struct Ctx<'a> {
    syms: &'a HashMap<String, ModSym>,
    scopes: Vec<HashMap<String, Local>>,
    reg_names: Vec<String>,
    param_bytes: u32,
    depot_name: Option<String>,
    depot: u64,
    depot_align: u64,
    labels: HashMap<String, u32>,
    tables: HashMap<String, Vec<String>>,
    /// Branches to patch: (instruction, label or table name, line).
    fixups: Vec<(usize, String, usize)>,
    code: Vec<Instr>,
    /// Shared variables the body names: offset → size. A cell because
    /// operands are decoded through shared references.
    shared_used: std::cell::RefCell<BTreeMap<u64, u64>>,
}

impl Ctx<'_> {
    fn lookup(&self, name: &str) -> Option<Local> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn declare(&mut self, name: String, v: Local) {
        self.scopes.last_mut().expect("scope").insert(name, v);
    }

    fn new_reg(&mut self, name: String, bits: u32) {
        let idx = self.reg_names.len() as u32;
        self.reg_names.push(name.clone());
        self.declare(name, Local::Reg(idx, bits));
    }
}

fn decode_body(
    funcs: &mut [Func],
    idx: usize,
    items: &[Item],
    syms: &HashMap<String, ModSym>,
) -> Result<(), ParseError> {
    let f = &funcs[idx];
    let mut top = HashMap::new();
    for (p, &(off, size)) in f.params.iter().zip(&f.param_slots) {
        top.insert(p.name.clone(), Local::Param { off, size });
    }
    let mut cx = Ctx {
        syms,
        scopes: vec![top],
        reg_names: Vec::new(),
        param_bytes: f.param_bytes,
        depot_name: None,
        depot: 0,
        depot_align: 1,
        labels: HashMap::new(),
        tables: HashMap::new(),
        fixups: Vec::new(),
        code: Vec::new(),
        shared_used: Default::default(),
    };
    // Return-value names are not in `params`; rebuild them from the header.
    for (n, &(off, size)) in funcs[idx].ret_names.iter().zip(&funcs[idx].ret_slots) {
        cx.declare(n.clone(), Local::Param { off, size });
    }
    let mut pending_label: Option<String> = None;
    for item in items {
        match item {
            Item::Open(_) => cx.scopes.push(HashMap::new()),
            Item::Close(line) => {
                if cx.scopes.len() <= 1 {
                    return Err(err(*line, "}", "unbalanced `}`"));
                }
                cx.scopes.pop();
            }
            Item::Label(l, _) => {
                cx.labels.insert(l.clone(), cx.code.len() as u32);
                pending_label = Some(l.clone());
            }
            Item::Stmt(s, line) => {
                let label = pending_label.take();
                decode_stmt(&mut cx, s, *line, label)?;
            }
        }
    }
    // A function falling off its end returns.
    cx.code.push(Instr {
        guard: None,
        op: Op::Ret,
        line: 0,
    });
    for (at, name, line) in std::mem::take(&mut cx.fixups) {
        let resolve = |l: &str| {
            cx.labels
                .get(l)
                .copied()
                .ok_or_else(|| err(line, l, "unknown label"))
        };
        match &mut cx.code[at].op {
            Op::Bra { target } => *target = resolve(&name)?,
            Op::Brx { targets, .. } => {
                let t = cx
                    .tables
                    .get(&name)
                    .ok_or_else(|| err(line, &name, "unknown .branchtargets table"))?;
                *targets = t.iter().map(|l| resolve(l)).collect::<Result<_, _>>()?;
            }
            _ => unreachable!("only branches are patched"),
        }
    }
    let f = &mut funcs[idx];
    f.code = cx.code;
    f.reg_names = cx.reg_names;
    f.param_bytes = cx.param_bytes;
    f.depot = cx.depot;
    f.depot_align = cx.depot_align;
    f.shared_used = cx.shared_used.into_inner();
    Ok(())
}

fn decode_stmt(
    cx: &mut Ctx,
    s: &str,
    line: usize,
    label: Option<String>,
) -> Result<(), ParseError> {
    let bad = |why: &str| err(line, s, why);
    let first = s.split_whitespace().next().unwrap_or("");
    match first {
        ".reg" => {
            let rest = s[4..].trim();
            let (tyw, names) = rest
                .split_once(char::is_whitespace)
                .ok_or_else(|| bad("cannot read .reg"))?;
            let ty = tyw
                .strip_prefix('.')
                .and_then(ty_of)
                .ok_or_else(|| bad("unknown register type"))?;
            let bits = match ty {
                Ty::Pred => 1,
                t => t.bits().max(16),
            };
            for n in split_top(names) {
                if let Some(p) = n.find('<') {
                    let count: u32 = n[p + 1..]
                        .strip_suffix('>')
                        .and_then(|c| c.parse().ok())
                        .ok_or_else(|| bad("cannot read register count"))?;
                    let base = &n[..p];
                    for i in 0..count {
                        cx.new_reg(format!("{base}{i}"), bits);
                    }
                } else {
                    cx.new_reg(n.to_string(), bits);
                }
            }
            Ok(())
        }
        ".local" => {
            let (name, size, align) = var_decl(s, line)?;
            if cx.depot_name.is_some() {
                return Err(bad("more than one .local variable in a function"));
            }
            cx.depot = size.ok_or_else(|| bad("unsized .local"))?;
            cx.depot_align = align.max(1);
            cx.depot_name = Some(name.clone());
            cx.declare(name, Local::Depot);
            Ok(())
        }
        ".param" => {
            let d = parse_param_decl(s).ok_or_else(|| bad("cannot read .param"))?;
            let off = cx.param_bytes.next_multiple_of(d.align.max(1));
            cx.param_bytes = off + d.size;
            cx.declare(d.name, Local::Param { off, size: d.size });
            Ok(())
        }
        ".pragma" | ".loc" | ".file" => Ok(()),
        ".branchtargets" => {
            let label = label.ok_or_else(|| bad(".branchtargets without a label"))?;
            let names = split_top(s[".branchtargets".len()..].trim())
                .into_iter()
                .map(str::to_string)
                .collect();
            cx.tables.insert(label, names);
            Ok(())
        }
        _ if first.starts_with('.') => Err(bad("unknown directive in a function")),
        _ => {
            let ins = decode_instr(cx, s, line)?;
            cx.code.push(ins);
            Ok(())
        }
    }
}

fn decode_instr(cx: &mut Ctx, s: &str, line: usize) -> Result<Instr, ParseError> {
    let bad = |why: &str| err(line, s, why);
    let mut rest = s.trim();
    let mut guard = None;
    if let Some(g) = rest.strip_prefix('@') {
        let (p, r) = g
            .split_once(char::is_whitespace)
            .ok_or_else(|| bad("guard without instruction"))?;
        let (neg, p) = match p.strip_prefix('!') {
            Some(p) => (true, p),
            None => (false, p),
        };
        match cx.lookup(p) {
            Some(Local::Reg(r, 1)) => guard = Some((r, neg)),
            _ => return Err(bad("guard is not a predicate register")),
        }
        rest = r.trim();
    }
    let (opcode, operands) = match rest.split_once(char::is_whitespace) {
        Some((o, r)) => (o, r.trim()),
        None => (rest, ""),
    };
    let parts: Vec<&str> = opcode.split('.').collect();
    let ops = split_top(operands);
    let op = decode_op(cx, &parts, &ops, line, s)?;
    Ok(Instr {
        guard,
        op,
        line: line as u32,
    })
}

/// The operation of one instruction; `parts` is the opcode split at dots.
fn decode_op(
    cx: &mut Ctx,
    parts: &[&str],
    ops: &[&str],
    line: usize,
    s: &str,
) -> Result<Op, ParseError> {
    let bad = |why: &str| err(line, s, why);
    let nops = |n: usize| -> Result<(), ParseError> {
        if ops.len() == n {
            Ok(())
        } else {
            Err(err(line, s, format!("expected {n} operands")))
        }
    };
    let last_ty = || {
        parts
            .last()
            .and_then(|t| ty_of(t))
            .ok_or_else(|| bad("missing or unknown type suffix"))
    };
    let mods = &parts[1..];
    let has = |m: &str| mods.contains(&m);
    // Float rounding: only round-to-nearest is modelled (and is what
    // LLVM emits); anything else is refused rather than computed wrongly.
    let check_float_mods = |allowed: &[&str]| -> Result<(), ParseError> {
        for m in &mods[..mods.len().saturating_sub(1)] {
            if !allowed.contains(m) {
                return Err(err(line, s, format!("unsupported modifier .{m}")));
            }
        }
        Ok(())
    };
    let reg = |cx: &Ctx, name: &str| -> Result<u32, ParseError> {
        match cx.lookup(name) {
            Some(Local::Reg(r, _)) => Ok(r),
            _ => Err(err(line, s, format!("`{name}` is not a register"))),
        }
    };
    let opnd = |cx: &Ctx, o: &str| -> Result<Opnd, ParseError> { operand(cx, o, line, s) };
    let op = match parts[0] {
        "mov" => {
            nops(2)?;
            let ty = last_ty()?;
            if ops[0].starts_with('{') {
                let ds = brace_list(ops[0])
                    .iter()
                    .map(|n| {
                        if *n == "_" {
                            Ok(None)
                        } else {
                            reg(cx, n).map(Some)
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let part = ty.bits() / ds.len() as u32;
                Op::Unpack {
                    part,
                    a: opnd(cx, ops[1])?,
                    ds,
                }
            } else if ops[1].starts_with('{') {
                let srcs = brace_list(ops[1])
                    .iter()
                    .map(|n| opnd(cx, n))
                    .collect::<Result<Vec<_>, _>>()?;
                let part = ty.bits() / srcs.len() as u32;
                Op::Pack {
                    d: reg(cx, ops[0])?,
                    srcs,
                    part,
                }
            } else if matches!(cx.lookup(ops[1]), Some(Local::Depot)) {
                Op::Depot {
                    d: reg(cx, ops[0])?,
                }
            } else {
                Op::Mov {
                    d: reg(cx, ops[0])?,
                    a: opnd(cx, ops[1])?,
                    bits: ty.bits(),
                }
            }
        }
        // Integer add and subtract through the carry flag: `add.cc`, `addc{.cc}` and the same
        // for `sub` (LLVM's 128-bit arithmetic).
        "add" | "sub" | "addc" | "subc" if has("cc") || parts[0].ends_with('c') => {
            nops(3)?;
            let ty = last_ty()?;
            if !matches!(ty, Ty::U(32 | 64) | Ty::S(32 | 64)) {
                return Err(bad("carry arithmetic takes 32- and 64-bit integers"));
            }
            if mods.len() != usize::from(has("cc")) + 1 {
                return Err(bad("carry arithmetic takes .cc and a type alone"));
            }
            Op::Carry {
                sub: parts[0].starts_with("sub"),
                carry_in: parts[0].ends_with('c'),
                carry_out: has("cc"),
                bits: ty.bits(),
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
                b: opnd(cx, ops[2])?,
            }
        }
        "add" | "sub" | "mul" | "div" | "rem" | "and" | "or" | "xor" | "shl" | "shr" | "min"
        | "max" | "copysign" => {
            nops(3)?;
            let ty = last_ty()?;
            let float = matches!(ty, Ty::F32 | Ty::F64);
            let op = match parts[0] {
                "add" => Bin::Add,
                "sub" => Bin::Sub,
                "mul" if float => Bin::MulLo,
                "mul" if has("lo") => Bin::MulLo,
                "mul" if has("hi") => Bin::MulHi,
                "mul" if has("wide") => Bin::MulWide,
                "div" => Bin::Div,
                "rem" => Bin::Rem,
                "and" => Bin::And,
                "or" => Bin::Or,
                "xor" => Bin::Xor,
                "shl" => Bin::Shl,
                "shr" => Bin::Shr,
                "min" => Bin::Min,
                "max" => Bin::Max,
                "copysign" => Bin::Copysign,
                _ => return Err(bad("mul needs .lo, .hi or .wide")),
            };
            if float {
                if matches!(
                    op,
                    Bin::Rem | Bin::And | Bin::Or | Bin::Xor | Bin::Shl | Bin::Shr
                ) {
                    return Err(bad("operation not defined on floats"));
                }
                check_float_mods(&["rn"])?;
            } else {
                if op == Bin::Copysign {
                    return Err(bad("copysign on an integer type"));
                }
                check_float_mods(&["lo", "hi", "wide"])?;
                if matches!(ty, Ty::Pred) && !matches!(op, Bin::And | Bin::Or | Bin::Xor) {
                    return Err(bad("operation not defined on predicates"));
                }
                if op == Bin::MulWide && ty.bits() > 32 {
                    return Err(bad("mul.wide of a 64-bit type"));
                }
            }
            Op::Bin {
                op,
                ty,
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
                b: opnd(cx, ops[2])?,
            }
        }
        "mad" | "fma" => {
            nops(4)?;
            let ty = last_ty()?;
            let (d, a, b, c) = (
                reg(cx, ops[0])?,
                opnd(cx, ops[1])?,
                opnd(cx, ops[2])?,
                opnd(cx, ops[3])?,
            );
            if matches!(ty, Ty::F32 | Ty::F64) {
                check_float_mods(&["rn"])?;
                if !has("rn") {
                    return Err(bad("fused multiply-add needs .rn"));
                }
                Op::Fma { ty, d, a, b, c }
            } else {
                check_float_mods(&["lo", "hi", "wide"])?;
                let mode = if has("lo") {
                    Bin::MulLo
                } else if has("hi") {
                    Bin::MulHi
                } else if has("wide") {
                    Bin::MulWide
                } else {
                    return Err(bad("mad needs .lo, .hi or .wide"));
                };
                Op::Mad {
                    mode,
                    ty,
                    d,
                    a,
                    b,
                    c,
                }
            }
        }
        "neg" | "abs" | "not" | "clz" | "popc" | "cnot" | "rcp" | "sqrt" => {
            nops(2)?;
            let ty = last_ty()?;
            let op = match parts[0] {
                "neg" => Un::Neg,
                "abs" => Un::Abs,
                "not" => Un::Not,
                "clz" => Un::Clz,
                "popc" => Un::Popc,
                "cnot" => Un::Cnot,
                "rcp" => Un::Rcp,
                _ => Un::Sqrt,
            };
            if matches!(op, Un::Rcp | Un::Sqrt) {
                if !has("rn") || !matches!(ty, Ty::F32 | Ty::F64) {
                    return Err(bad("only .rn reciprocals and square roots are simulated"));
                }
                check_float_mods(&["rn"])?;
            } else {
                check_float_mods(&[])?;
            }
            Op::Un {
                op,
                ty,
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
            }
        }
        "bfe" => {
            nops(4)?;
            Op::Bfe {
                ty: last_ty()?,
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
                b: opnd(cx, ops[2])?,
                c: opnd(cx, ops[3])?,
            }
        }
        "shf" => {
            nops(4)?;
            if parts.len() != 4 || parts[3] != "b32" {
                return Err(bad("shf needs .l or .r, .wrap or .clamp, and .b32"));
            }
            let left = match parts[1] {
                "l" => true,
                "r" => false,
                _ => return Err(bad("shf needs .l or .r")),
            };
            let clamp = match parts[2] {
                "clamp" => true,
                "wrap" => false,
                _ => return Err(bad("shf needs .wrap or .clamp")),
            };
            Op::Shf {
                left,
                clamp,
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
                b: opnd(cx, ops[2])?,
                c: opnd(cx, ops[3])?,
            }
        }
        "setp" => {
            nops(3)?;
            if parts.len() != 3 {
                return Err(bad("setp with a boolean combination is not simulated"));
            }
            if ops[0].contains('|') {
                return Err(bad("setp with two destinations is not simulated"));
            }
            let cmp = match parts[1] {
                "eq" => Cmp::Eq,
                "ne" => Cmp::Ne,
                "lt" | "lo" => Cmp::Lt,
                "le" | "ls" => Cmp::Le,
                "gt" | "hi" => Cmp::Gt,
                "ge" | "hs" => Cmp::Ge,
                "equ" => Cmp::Equ,
                "neu" => Cmp::Neu,
                "ltu" => Cmp::Ltu,
                "leu" => Cmp::Leu,
                "gtu" => Cmp::Gtu,
                "geu" => Cmp::Geu,
                "num" => Cmp::Num,
                "nan" => Cmp::Nan,
                _ => return Err(bad("unknown comparison")),
            };
            let ty = last_ty()?;
            let float = matches!(ty, Ty::F32 | Ty::F64);
            if !float
                && matches!(
                    cmp,
                    Cmp::Equ
                        | Cmp::Neu
                        | Cmp::Ltu
                        | Cmp::Leu
                        | Cmp::Gtu
                        | Cmp::Geu
                        | Cmp::Num
                        | Cmp::Nan
                )
            {
                return Err(bad("unordered comparison of integers"));
            }
            Op::Setp {
                cmp,
                ty,
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
                b: opnd(cx, ops[2])?,
            }
        }
        "selp" => {
            nops(4)?;
            Op::Selp {
                bits: last_ty()?.bits(),
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
                b: opnd(cx, ops[2])?,
                p: opnd(cx, ops[3])?,
            }
        }
        "cvt" => {
            nops(2)?;
            if parts.len() < 3 {
                return Err(bad("cvt needs two types"));
            }
            let dt = ty_of(parts[parts.len() - 2]).ok_or_else(|| bad("unknown cvt type"))?;
            let st = ty_of(parts[parts.len() - 1]).ok_or_else(|| bad("unknown cvt type"))?;
            let mut rnd = Rnd::None;
            for m in &parts[1..parts.len() - 2] {
                rnd = match *m {
                    "rn" => Rnd::Rn,
                    "rz" => Rnd::Rz,
                    "rm" => Rnd::Rm,
                    "rp" => Rnd::Rp,
                    "rni" => Rnd::Rni,
                    "rzi" => Rnd::Rzi,
                    "rmi" => Rnd::Rmi,
                    "rpi" => Rnd::Rpi,
                    _ => return Err(bad("unsupported cvt modifier")),
                };
            }
            let df = matches!(dt, Ty::F32 | Ty::F64);
            let sf = matches!(st, Ty::F32 | Ty::F64);
            // Only the rounding modes whose results Rust computes exactly.
            let ok = match (df, sf) {
                (false, false) => rnd == Rnd::None,
                (true, false) => rnd == Rnd::Rn,
                (false, true) => matches!(rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi),
                (true, true) => {
                    if dt == st {
                        matches!(rnd, Rnd::Rni | Rnd::Rzi | Rnd::Rmi | Rnd::Rpi)
                    } else if dt == Ty::F32 {
                        rnd == Rnd::Rn
                    } else {
                        rnd == Rnd::None
                    }
                }
            };
            if !ok || matches!(dt, Ty::Pred) || matches!(st, Ty::Pred) {
                return Err(bad("unsupported cvt rounding or types"));
            }
            Op::Cvt {
                dt,
                st,
                rnd,
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
            }
        }
        "cvta" => {
            nops(2)?;
            let to = has("to");
            let space = if has("global") {
                MemSpace::Global
            } else if has("shared") {
                MemSpace::Shared
            } else if has("local") {
                MemSpace::Local
            } else {
                return Err(bad("unsupported cvta space"));
            };
            if parts.last() != Some(&"u64") {
                return Err(bad("only 64-bit cvta is simulated"));
            }
            // `cvta.shared.u64 %rd, symbol` takes the symbol's shared address.
            Op::Cvta {
                to,
                space,
                d: reg(cx, ops[0])?,
                a: opnd(cx, ops[1])?,
            }
        }
        "ld" | "st" => {
            nops(2)?;
            let mut space = MemSpace::Generic;
            let mut count = 1u8;
            for m in mods {
                match *m {
                    "global" => space = MemSpace::Global,
                    "shared" => space = MemSpace::Shared,
                    "local" => space = MemSpace::Local,
                    "param" => space = MemSpace::Param,
                    "v2" => count = 2,
                    "v4" => count = 4,
                    "volatile" | "nc" | "weak" | "relaxed" | "ca" | "cg" | "cs" | "lu" | "cv"
                    | "wb" | "wt" | "cta" | "gpu" | "sys" => {}
                    m if ty_of(m).is_some() => {}
                    _ => return Err(bad("unsupported ld/st modifier")),
                }
            }
            let ty = last_ty()?;
            if ty == Ty::Pred {
                return Err(bad("ld/st of a predicate"));
            }
            let size = ty.bits() / 8;
            let (data, addr_text) = if parts[0] == "ld" {
                (ops[0], ops[1])
            } else {
                (ops[1], ops[0])
            };
            let addr = address(cx, addr_text, space, size * count as u32, line, s)?;
            // A vector's elements, `{a, b}`; a scalar's one operand.
            let elements: Vec<&str> = if count == 1 {
                vec![data]
            } else {
                let inner = data
                    .strip_prefix('{')
                    .and_then(|d| d.strip_suffix('}'))
                    .ok_or_else(|| bad("a vector ld/st needs `{…}` operands"))?;
                inner.split(',').map(str::trim).collect()
            };
            if elements.len() != count as usize {
                return Err(bad(
                    "a vector ld/st's operand count does not match its width",
                ));
            }
            if parts[0] == "ld" {
                let mut d = [0; 4];
                for (slot, e) in d.iter_mut().zip(&elements) {
                    *slot = reg(cx, e)?;
                }
                Op::Ld {
                    space,
                    size,
                    signed: matches!(ty, Ty::S(_)),
                    count,
                    d,
                    addr,
                }
            } else {
                let mut src = [Opnd::I(0); 4];
                for (slot, e) in src.iter_mut().zip(&elements) {
                    *slot = opnd(cx, e)?;
                }
                Op::St {
                    space,
                    size,
                    count,
                    src,
                    addr,
                }
            }
        }
        "atom" | "red" => {
            let is_atom = parts[0] == "atom";
            let mut space = MemSpace::Generic;
            let mut op = None;
            for m in mods {
                match *m {
                    "global" => space = MemSpace::Global,
                    "shared" => space = MemSpace::Shared,
                    "relaxed" | "gpu" | "sys" | "cta" => {}
                    "add" => op = Some(AtomOp::Add),
                    "exch" => op = Some(AtomOp::Exch),
                    "min" => op = Some(AtomOp::Min),
                    "max" => op = Some(AtomOp::Max),
                    "and" => op = Some(AtomOp::And),
                    "or" => op = Some(AtomOp::Or),
                    "xor" => op = Some(AtomOp::Xor),
                    "cas" => op = Some(AtomOp::Cas),
                    m if ty_of(m).is_some() => {}
                    _ => return Err(bad("unsupported atom modifier")),
                }
            }
            let op = op.ok_or_else(|| bad("atom without an operation"))?;
            let ty = last_ty()?;
            let float = matches!(ty, Ty::F32 | Ty::F64);
            if float && op != AtomOp::Add && op != AtomOp::Exch || ty.bits() < 32 {
                return Err(bad("unsupported atom type"));
            }
            let n = usize::from(is_atom) + 2 + usize::from(op == AtomOp::Cas);
            nops(n)?;
            let o = &ops[usize::from(is_atom)..];
            Op::Atom {
                space,
                op,
                ty,
                d: if is_atom {
                    Some(reg(cx, ops[0])?)
                } else {
                    None
                },
                addr: address(cx, o[0], space, ty.bits() / 8, line, s)?,
                b: opnd(cx, o[1])?,
                c: if op == AtomOp::Cas {
                    opnd(cx, o[2])?
                } else {
                    Opnd::I(0)
                },
            }
        }
        "bra" => {
            nops(1)?;
            cx.fixups.push((cx.code.len(), ops[0].to_string(), line));
            Op::Bra { target: 0 }
        }
        "brx" => {
            nops(2)?;
            if parts.get(1) != Some(&"idx") {
                return Err(bad("unsupported brx"));
            }
            cx.fixups.push((cx.code.len(), ops[1].to_string(), line));
            Op::Brx {
                idx: opnd(cx, ops[0])?,
                targets: Vec::new(),
            }
        }
        "call" => decode_call(cx, ops, line, s)?,
        "ret" => Op::Ret,
        "exit" => Op::Exit,
        "trap" => Op::Trap,
        "membar" | "fence" => Op::Nop,
        "bar" | "barrier" => {
            if !has("sync") && !(parts[0] == "bar" && parts.len() == 1) || ops.len() != 1 {
                return Err(bad("only `bar.sync id` is simulated"));
            }
            Op::Bar {
                id: opnd(cx, ops[0])?,
            }
        }
        "shfl" => {
            nops(5)?;
            if !has("sync") || parts.last() != Some(&"b32") {
                return Err(bad("only shfl.sync.*.b32 is simulated"));
            }
            let mode = if has("up") {
                ShflMode::Up
            } else if has("down") {
                ShflMode::Down
            } else if has("bfly") {
                ShflMode::Bfly
            } else if has("idx") {
                ShflMode::Idx
            } else {
                return Err(bad("unknown shfl mode"));
            };
            let (d, p) = match ops[0].split_once('|') {
                Some((d, p)) => (reg(cx, d.trim())?, Some(reg(cx, p.trim())?)),
                None => (reg(cx, ops[0])?, None),
            };
            Op::Shfl {
                mode,
                d,
                p,
                a: opnd(cx, ops[1])?,
                b: opnd(cx, ops[2])?,
                c: opnd(cx, ops[3])?,
                mask: opnd(cx, ops[4])?,
            }
        }
        _ => return Err(bad("unknown instruction")),
    };
    Ok(op)
}

fn brace_list(s: &str) -> Vec<&str> {
    let inner = s.trim().trim_start_matches('{').trim_end_matches('}');
    inner.split(',').map(str::trim).collect()
}

fn sreg(name: &str) -> Option<Sreg> {
    let dim = |d: &str| match d {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    };
    if let Some((base, d)) = name.split_once('.') {
        let d = dim(d)?;
        return Some(match base {
            "%tid" => Sreg::Tid(d),
            "%ntid" => Sreg::Ntid(d),
            "%ctaid" => Sreg::Ctaid(d),
            "%nctaid" => Sreg::Nctaid(d),
            _ => return None,
        });
    }
    match name {
        "%laneid" => Some(Sreg::Laneid),
        "WARP_SZ" => Some(Sreg::Warpsize),
        _ => None,
    }
}

fn operand(cx: &Ctx, o: &str, line: usize, s: &str) -> Result<Opnd, ParseError> {
    if let Some(l) = cx.lookup(o) {
        return match l {
            Local::Reg(r, _) => Ok(Opnd::R(r)),
            _ => Err(err(line, s, format!("`{o}` cannot be used as a value"))),
        };
    }
    if let Some(r) = sreg(o) {
        return Ok(Opnd::S(r));
    }
    if let Some(v) = parse_imm(o) {
        return Ok(Opnd::I(v));
    }
    match cx.syms.get(o) {
        Some(ModSym::Global(a)) => Ok(Opnd::I(*a)),
        Some(&ModSym::Shared(a, size)) => {
            cx.shared_used.borrow_mut().insert(a, size);
            Ok(Opnd::I(a))
        }
        _ => Err(err(line, s, format!("unknown operand `{o}`"))),
    }
}

/// Decodes `[base+off]` for an access of `size` bytes in `space`.
fn address(
    cx: &Ctx,
    text: &str,
    space: MemSpace,
    size: u32,
    line: usize,
    s: &str,
) -> Result<Addr, ParseError> {
    let bad = |why: &str| err(line, s, why);
    let inner = text
        .trim()
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| bad("cannot read address"))?
        .trim();
    let (base, off) = match inner.find('+') {
        Some(p) => (
            inner[..p].trim(),
            parse_int(inner[p + 1..].trim()).ok_or_else(|| bad("cannot read address offset"))?
                as i64,
        ),
        None => (inner, 0),
    };
    match cx.lookup(base) {
        Some(Local::Reg(r, _)) => {
            if space == MemSpace::Param {
                return Err(bad("parameter access through a register"));
            }
            Ok(Addr::Reg(r, off))
        }
        Some(Local::Param {
            off: at,
            size: psize,
        }) => {
            if space != MemSpace::Param {
                return Err(bad("parameter named outside ld.param/st.param"));
            }
            if off < 0 || off as u64 + size as u64 > psize as u64 {
                return Err(bad("parameter access outside the parameter"));
            }
            Ok(Addr::Param {
                at: at + off as u32,
                slot_end: at + psize,
            })
        }
        Some(Local::Depot) => Err(bad("direct access to the local depot")),
        None => {
            if let Some(v) = parse_int(base) {
                return Ok(Addr::Abs(v.wrapping_add(off as u64)));
            }
            match (cx.syms.get(base), space) {
                (Some(ModSym::Global(a)), MemSpace::Global | MemSpace::Generic) => {
                    Ok(Addr::Abs(a.wrapping_add(off as u64)))
                }
                (Some(&ModSym::Shared(a, size)), MemSpace::Shared) => {
                    cx.shared_used.borrow_mut().insert(a, size);
                    Ok(Addr::Abs(a.wrapping_add(off as u64)))
                }
                (Some(&ModSym::Shared(a, size)), MemSpace::Generic) => {
                    cx.shared_used.borrow_mut().insert(a, size);
                    Ok(Addr::Abs((SHARED_WINDOW + a).wrapping_add(off as u64)))
                }
                _ => Err(bad(&format!(
                    "unknown address base `{base}` for this space"
                ))),
            }
        }
    }
}

fn decode_call(cx: &mut Ctx, ops: &[&str], line: usize, s: &str) -> Result<Op, ParseError> {
    let bad = |why: &str| err(line, s, why);
    // Operands: [(rets),] func [, (args)] [, proto]
    let mut i = 0;
    let mut rets_text = None;
    if ops.first().is_some_and(|o| o.starts_with('(')) {
        rets_text = Some(ops[0]);
        i = 1;
    }
    let fname = ops.get(i).ok_or_else(|| bad("call without a target"))?;
    let args_text = ops.get(i + 1).copied();
    if ops.len() > i + 2 {
        return Err(bad("indirect calls are not simulated"));
    }
    let func = match cx.syms.get(*fname) {
        Some(ModSym::Func(f)) => *f,
        _ => return Err(bad("call to an unknown function")),
    };
    let slots = |cx: &Ctx, t: Option<&str>| -> Result<Vec<(u32, u32)>, ParseError> {
        let Some(t) = t else { return Ok(Vec::new()) };
        let inner = t
            .trim()
            .strip_prefix('(')
            .and_then(|t| t.strip_suffix(')'))
            .ok_or_else(|| bad("cannot read call parameter list"))?;
        inner
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(|n| match cx.lookup(n) {
                Some(Local::Param { off, size }) => Ok((off, size)),
                _ => Err(bad("call argument is not a .param")),
            })
            .collect()
    };
    Ok(Op::Call {
        func,
        args: slots(cx, args_text)?,
        rets: slots(cx, rets_text)?,
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
