//! The decoded form the interpreter runs: types, operands, operations, instructions and
//! functions, with registers as indices and labels as positions.

use crate::Param;
use std::collections::BTreeMap;

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

pub(super) fn ty_of(s: &str) -> Option<Ty> {
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
