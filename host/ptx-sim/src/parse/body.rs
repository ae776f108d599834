//! A function body decoded: its statements become instructions with registers resolved to
//! indices, its operands and addresses read, and its labels patched once the body is complete.

use super::*;

/// Decoding state of one function body.
pub(super) struct Ctx<'a> {
    pub(super) syms: &'a HashMap<String, ModSym>,
    pub(super) scopes: Vec<HashMap<String, Local>>,
    pub(super) reg_names: Vec<String>,
    pub(super) param_bytes: u32,
    pub(super) depot_name: Option<String>,
    pub(super) depot: u64,
    pub(super) depot_align: u64,
    pub(super) labels: HashMap<String, u32>,
    pub(super) tables: HashMap<String, Vec<String>>,
    /// Branches to patch: (instruction, label or table name, line).
    pub(super) fixups: Vec<(usize, String, usize)>,
    pub(super) code: Vec<Instr>,
    /// Shared variables the body names: offset → size. A cell because
    /// operands are decoded through shared references.
    pub(super) shared_used: std::cell::RefCell<BTreeMap<u64, u64>>,
}

impl Ctx<'_> {
    pub(super) fn lookup(&self, name: &str) -> Option<Local> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    pub(super) fn declare(&mut self, name: String, v: Local) {
        self.scopes.last_mut().expect("scope").insert(name, v);
    }

    pub(super) fn new_reg(&mut self, name: String, bits: u32) {
        let idx = self.reg_names.len() as u32;
        self.reg_names.push(name.clone());
        self.declare(name, Local::Reg(idx, bits));
    }
}

pub(super) fn decode_body(
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

pub(super) fn decode_stmt(
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

pub(super) fn decode_instr(cx: &mut Ctx, s: &str, line: usize) -> Result<Instr, ParseError> {
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

pub(super) fn brace_list(s: &str) -> Vec<&str> {
    let inner = s.trim().trim_start_matches('{').trim_end_matches('}');
    inner.split(',').map(str::trim).collect()
}

pub(super) fn sreg(name: &str) -> Option<Sreg> {
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

pub(super) fn operand(cx: &Ctx, o: &str, line: usize, s: &str) -> Result<Opnd, ParseError> {
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
pub(super) fn address(
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

pub(super) fn decode_call(
    cx: &mut Ctx,
    ops: &[&str],
    line: usize,
    s: &str,
) -> Result<Op, ParseError> {
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
