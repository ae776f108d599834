//! One instruction's operation, decoded from its opcode parts and operands.

use super::*;

/// The operation of one instruction; `parts` is the opcode split at dots.
pub(super) fn decode_op(
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
