//! What a block's run holds: each thread's frames and registers, the shared memory's race
//! records, faults, and the reads of operands and addresses.

use super::*;

/// Race-check record of one shared byte.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Shadow {
    pub(super) w_epoch: u32,
    pub(super) writer: u32,
    pub(super) w_line: u32,
    pub(super) r_epoch: u32,
    /// First and a second, different reader in `r_epoch` (u32::MAX: none).
    pub(super) reader: u32,
    pub(super) reader2: u32,
    pub(super) r_line: u32,
    pub(super) r2_line: u32,
}

/// Why a thread stopped running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    Ready,
    AtBar(u32),
    AtShfl,
    Exited,
}

#[derive(Debug)]
pub(super) struct Frame {
    pub(super) func: u32,
    pub(super) pc: u32,
    pub(super) regs: Vec<u64>,
    /// Whether each register holds a defined value (see `step`).
    pub(super) defined: Vec<bool>,
    pub(super) params: Vec<u8>,
    /// Length of the thread's local memory before this frame's depot.
    pub(super) local_restore: usize,
    /// Local-space address of this frame's depot.
    pub(super) depot: u64,
    /// The condition code's carry flag, `CC.CF`, of `add.cc` and its kin.
    pub(super) carry: bool,
}

impl Frame {
    pub(super) fn new(
        f: &Func,
        func: u32,
        params: Vec<u8>,
        local_restore: usize,
        depot: u64,
    ) -> Frame {
        Frame {
            func,
            pc: 0,
            regs: vec![0; f.reg_names.len()],
            defined: vec![false; f.reg_names.len()],
            params,
            local_restore,
            depot,
            carry: false,
        }
    }

    /// A register's value, which must be defined.
    #[inline(always)]
    pub(super) fn get(&self, r: u32) -> Result<u64, Fault> {
        let r = r as usize;
        if self.defined[r] {
            Ok(self.regs[r])
        } else {
            Err(Fault::Uninit(r as u32))
        }
    }

    #[inline(always)]
    pub(super) fn defined_op(&self, o: Opnd) -> bool {
        match o {
            Opnd::R(r) => self.defined[r as usize],
            _ => true,
        }
    }

    #[inline(always)]
    pub(super) fn set(&mut self, r: u32, v: u64, defined: bool) {
        let r = r as usize;
        self.regs[r] = v;
        self.defined[r] = defined;
    }
}

#[derive(Debug)]
pub(super) struct Thread {
    pub(super) tid: [u32; 3],
    pub(super) linear: u32,
    pub(super) frames: Vec<Frame>,
    pub(super) local: Vec<u8>,
    pub(super) state: State,
}

/// What stopped a thread with an error; turned into a [`SimError`] with the
/// thread's position by the block.
#[derive(Debug)]
pub(super) enum Fault {
    Uninit(u32),
    Oob {
        space: Space,
        address: u64,
        size: u32,
        write: bool,
    },
    Misaligned {
        space: Space,
        address: u64,
        size: u32,
    },
    Race {
        address: u64,
        first: (u32, bool, u32),
        write: bool,
    },
    Trap,
    StackOverflow,
    StepLimit,
}

/// Where an access lands after window decoding.
pub(super) enum Place {
    Global(u64),
    Shared(u64),
    Local(u64),
}

pub(super) struct BlockRun<'a> {
    pub(super) module: &'a Module,
    pub(super) kernel: &'a str,
    pub(super) entry: u32,
    pub(super) launch: &'a Launch,
    pub(super) block: [u32; 3],
    pub(super) mem: &'a mut BTreeMap<u64, Vec<u8>>,
    pub(super) shared: Vec<u8>,
    pub(super) shadow: Vec<Shadow>,
    pub(super) epoch: u32,
    /// Instructions executed by the launch so far, and its cap.
    pub(super) count: u64,
    pub(super) limit: u64,
    pub(super) strict: bool,
    /// The launch's counts, when the device counts.
    pub(super) counting: Option<&'a mut LaunchCounts>,
}

/// Values of the special registers for one thread.
pub(super) struct Sregs {
    pub(super) tid: [u32; 3],
    pub(super) ntid: [u32; 3],
    pub(super) ctaid: [u32; 3],
    pub(super) nctaid: [u32; 3],
    pub(super) lane: u32,
}

#[inline(always)]
pub(super) fn operand(fr: &Frame, o: Opnd, sr: &Sregs) -> u64 {
    match o {
        Opnd::R(r) => fr.regs[r as usize],
        Opnd::I(v) => v,
        Opnd::S(s) => u64::from(match s {
            Sreg::Tid(i) => sr.tid[i as usize],
            Sreg::Ntid(i) => sr.ntid[i as usize],
            Sreg::Ctaid(i) => sr.ctaid[i as usize],
            Sreg::Nctaid(i) => sr.nctaid[i as usize],
            Sreg::Laneid => sr.lane,
            Sreg::Warpsize => 32,
        }),
    }
}

/// Whether an operand is defined; in strict mode an undefined one is an
/// error on the spot.
#[inline(always)]
pub(super) fn defined(fr: &Frame, o: Opnd, strict: bool) -> Result<bool, Fault> {
    match o {
        Opnd::R(r) if !fr.defined[r as usize] => {
            if strict {
                Err(Fault::Uninit(r))
            } else {
                Ok(false)
            }
        }
        _ => Ok(true),
    }
}

/// An operand whose value is used where an undefined one is an error.
#[inline(always)]
pub(super) fn needed(fr: &Frame, o: Opnd, sr: &Sregs) -> Result<u64, Fault> {
    if let Opnd::R(r) = o {
        fr.get(r)
    } else {
        Ok(operand(fr, o, sr))
    }
}

#[inline(always)]
pub(super) fn address(fr: &Frame, a: Addr, sr: &Sregs) -> Result<u64, Fault> {
    let _ = sr;
    Ok(match a {
        Addr::Reg(r, off) => fr.get(r)?.wrapping_add(off as u64),
        Addr::Abs(v) => v,
        Addr::Param { .. } => unreachable!("parameters are addressed by slot"),
    })
}
