//! The simulated device: global memory, launches, and the interpreter.
//!
//! Blocks run one after another. Inside a block every thread runs on its own
//! until it reaches a synchronization point (`bar.sync`, `shfl.sync`) or
//! exits; the scheduler then performs whatever synchronization every needed
//! thread has arrived at, and reports a hang (divergent barrier, shuffle with
//! missing lanes) when nothing can make progress. This serial order is one
//! valid interleaving; the race check on shared memory is what tells whether
//! the result depends on it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::counts::LaunchCounts;
use crate::parse::{
    Addr, AtomOp, Bin, Cmp, Func, Instr, LOCAL_WINDOW, MemSpace, Op, Opnd, Rnd, SHARED_WINDOW,
    ShflMode, Sreg, Ty, Un, WINDOW_SIZE,
};
use crate::{At, Counts, Launch, Module, SharedAccess, SimError, Space};

/// First address `alloc` hands out; module data lies below it.
const HEAP_BASE: u64 = 0x1_0000_0000;
/// Unmapped bytes left after every allocation, so that small overruns land
/// in no allocation and are reported instead of touching a neighbour.
const REDZONE: u64 = 256;
/// The most local memory (all frames of a thread) the simulator allows.
const LOCAL_LIMIT: usize = 512 * 1024;
/// Static plus dynamic shared memory a block may use.
const SHARED_LIMIT: u64 = 48 * 1024;

/// One simulated GPU: a loaded [`Module`] and its global memory.
#[derive(Debug)]
pub struct Device {
    module: Arc<Module>,
    mem: BTreeMap<u64, Vec<u8>>,
    next: u64,
    executed: BTreeSet<String>,
    instructions: u64,
    step_limit: u64,
    strict: bool,
    /// Per entry, what its launches cost, while counting is on.
    counts: Option<BTreeMap<String, Counts>>,
}

impl Device {
    /// A device with the module loaded: its `.global` variables are laid out
    /// (with their initial bytes) at the addresses the module was decoded for.
    pub fn new(module: Arc<Module>) -> Device {
        let mut mem = BTreeMap::new();
        for (addr, bytes) in &module.globals {
            mem.insert(*addr, bytes.clone());
        }
        Device {
            module,
            mem,
            next: HEAP_BASE,
            executed: BTreeSet::new(),
            instructions: 0,
            step_limit: u64::MAX,
            strict: false,
            counts: None,
        }
    }

    /// Allocates `bytes` of zeroed global memory, 256-byte aligned; 0 bytes
    /// gives the null address 0, as `cudaMalloc` users expect.
    pub fn alloc(&mut self, bytes: usize) -> u64 {
        if bytes == 0 {
            return 0;
        }
        let base = self.next;
        self.next = (base + bytes as u64 + REDZONE).next_multiple_of(256);
        self.mem.insert(base, vec![0; bytes]);
        base
    }

    /// Frees an allocation made by [`Device::alloc`]. Freeing 0 does nothing.
    pub fn free(&mut self, address: u64) -> Result<(), SimError> {
        if address == 0 {
            return Ok(());
        }
        if address < HEAP_BASE || self.mem.remove(&address).is_none() {
            return Err(SimError::FreeOfUnknown { address });
        }
        Ok(())
    }

    /// Whether `[address, address + bytes)` lies inside one live allocation.
    pub fn is_allocated(&mut self, address: u64, bytes: usize) -> bool {
        address >= HEAP_BASE && global_slice(&mut self.mem, address, bytes as u64).is_some()
    }

    fn host_slice(&mut self, address: u64, size: usize) -> Result<&mut [u8], SimError> {
        global_slice(&mut self.mem, address, size as u64)
            .ok_or(SimError::HostOutOfBounds { address, size })
    }

    /// Copies host bytes into global memory.
    pub fn write(&mut self, address: u64, bytes: &[u8]) -> Result<(), SimError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.host_slice(address, bytes.len())?
            .copy_from_slice(bytes);
        Ok(())
    }

    /// Copies global memory into `out`.
    pub fn read(&self, address: u64, out: &mut [u8]) -> Result<(), SimError> {
        if out.is_empty() {
            return Ok(());
        }
        let size = out.len();
        let (base, buf) = self
            .mem
            .range(..=address)
            .next_back()
            .ok_or(SimError::HostOutOfBounds { address, size })?;
        let off = (address - base) as usize;
        let src = buf
            .get(off..off + size)
            .ok_or(SimError::HostOutOfBounds { address, size })?;
        out.copy_from_slice(src);
        Ok(())
    }

    /// Copies `bytes` of global memory from `from` to `to` (device to device).
    pub fn copy(&mut self, from: u64, to: u64, bytes: usize) -> Result<(), SimError> {
        if bytes == 0 {
            return Ok(());
        }
        let mut tmp = vec![0; bytes];
        self.read(from, &mut tmp)?;
        self.write(to, &tmp)
    }

    /// Entries that were launched at least once.
    pub fn executed(&self) -> &BTreeSet<String> {
        &self.executed
    }

    /// Instructions executed so far, over all launches and threads.
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// Caps the instructions one launch may execute (all threads together),
    /// so that a kernel stuck in a loop fails with [`SimError::StepLimit`]
    /// instead of hanging. No cap unless set.
    pub fn set_step_limit(&mut self, per_launch: u64) {
        self.step_limit = per_launch;
    }

    /// In strict mode every read of an undefined register is an error, not
    /// only the uses that matter (see [`SimError::UninitializedRegister`]).
    /// LLVM's code reads undefined registers legitimately (a value that is
    /// `undef` on one path, computed on and then discarded), so this mode
    /// reports correct kernels too; it exists to find where that happens.
    pub fn set_strict_registers(&mut self, strict: bool) {
        self.strict = strict;
    }

    /// Starts counting what each entry's launches cost ([`Counts`]), from zero, or stops
    /// (`false`) and forgets the counts. Off by default: counting slows the simulator.
    pub fn count(&mut self, on: bool) {
        self.counts = on.then(BTreeMap::new);
    }

    /// The counts per entry since counting was switched on; `None` while it is off.
    pub fn counts(&self) -> Option<&BTreeMap<String, Counts>> {
        self.counts.as_ref()
    }

    /// The module this device runs.
    pub fn module(&self) -> &Arc<Module> {
        &self.module
    }

    /// Runs entry `entry` over the grid; `params` are the argument bytes in
    /// declaration order. Stops at the first error, leaving memory as the
    /// threads that ran so far left it.
    pub fn launch(
        &mut self,
        entry: &str,
        launch: Launch,
        params: &[&[u8]],
    ) -> Result<(), SimError> {
        let module = Arc::clone(&self.module);
        let fidx = module.entry(entry).ok_or_else(|| SimError::UnknownEntry {
            name: entry.to_string(),
        })?;
        let func = &module.funcs[fidx];
        let kernel = || entry.to_string();
        if params.len() != func.params.len() {
            return Err(SimError::BadParams {
                kernel: kernel(),
                why: format!(
                    "{} arguments given, {} declared",
                    params.len(),
                    func.params.len()
                ),
            });
        }
        let mut pbuf = vec![0u8; func.param_bytes as usize];
        for ((p, bytes), &(off, size)) in func.params.iter().zip(params).zip(&func.param_slots) {
            if bytes.len() != p.size_bytes {
                return Err(SimError::BadParams {
                    kernel: kernel(),
                    why: format!(
                        "parameter {} takes {} bytes, {} given",
                        p.name,
                        p.size_bytes,
                        bytes.len()
                    ),
                });
            }
            pbuf[off as usize..(off + size) as usize].copy_from_slice(bytes);
        }
        check_limits(entry, &launch, &module)?;
        let instructions_before = self.instructions;
        self.executed.insert(entry.to_string());
        let shared_bytes = module.shared_dynamic_offset + launch.dynamic_shared_bytes as u64;
        let mut launched = 0u64;
        let mut pool = Vec::new();
        let mut counting = self.counts.is_some().then(LaunchCounts::default);
        let [gx, gy, gz] = launch.grid;
        for bz in 0..gz {
            for by in 0..gy {
                for bx in 0..gx {
                    let mut blk = BlockRun {
                        module: &module,
                        kernel: entry,
                        entry: fidx as u32,
                        launch: &launch,
                        block: [bx, by, bz],
                        mem: &mut self.mem,
                        shared: vec![0; shared_bytes as usize],
                        shadow: vec![Shadow::default(); shared_bytes as usize],
                        epoch: 1,
                        count: launched,
                        limit: self.step_limit,
                        strict: self.strict,
                        counting: counting.as_mut(),
                    };
                    let r = blk.run(&pbuf, &mut pool);
                    self.instructions += blk.count - launched;
                    launched = blk.count;
                    r?;
                }
            }
        }
        if let (Some(mut launch_counts), Some(counts)) = (counting, self.counts.as_mut()) {
            let [tx, ty, tz] = launch.block;
            let block_threads = u64::from(tx * ty * tz).max(1);
            launch_counts.counts.launches = 1;
            launch_counts.counts.threads = block_threads * u64::from(gx * gy * gz);
            launch_counts.counts.instructions = self.instructions - instructions_before;
            // Barrier arrivals were counted per thread.
            launch_counts.counts.block_barriers /= block_threads;
            *counts.entry(entry.to_string()).or_default() += launch_counts.finish();
        }
        Ok(())
    }
}

fn check_limits(entry: &str, l: &Launch, module: &Module) -> Result<(), SimError> {
    let fail = |why: String| {
        Err(SimError::LaunchLimit {
            kernel: entry.to_string(),
            why,
        })
    };
    let [bx, by, bz] = l.block;
    let [gx, gy, gz] = l.grid;
    let threads = bx as u64 * by as u64 * bz as u64;
    if l.block.contains(&0) || l.grid.contains(&0) {
        return fail(format!("empty grid {:?} or block {:?}", l.grid, l.block));
    }
    if bx > 1024 || by > 1024 || bz > 64 {
        return fail(format!("block {:?} exceeds 1024 x 1024 x 64", l.block));
    }
    if threads > 1024 || threads > l.max_threads_per_block as u64 {
        return fail(format!(
            "{threads} threads per block, at most {} allowed",
            l.max_threads_per_block.min(1024)
        ));
    }
    if gx > i32::MAX as u32 || gy > 65535 || gz > 65535 {
        return fail(format!("grid {:?} exceeds 2^31-1 x 65535 x 65535", l.grid));
    }
    let entry_static = module.funcs[module.entry(entry).expect("checked")].static_shared;
    let shared = entry_static + l.dynamic_shared_bytes as u64;
    if shared > SHARED_LIMIT {
        return fail(format!(
            "{shared} bytes of shared memory, at most {SHARED_LIMIT}"
        ));
    }
    Ok(())
}

/// The slice of global memory at `[address, address+size)`, if it lies
/// inside one allocation.
fn global_slice(mem: &mut BTreeMap<u64, Vec<u8>>, address: u64, size: u64) -> Option<&mut [u8]> {
    let (base, buf) = mem.range_mut(..=address).next_back()?;
    let off = (address - base) as usize;
    buf.get_mut(off..off.checked_add(size as usize)?)
}

/// Race-check record of one shared byte.
#[derive(Clone, Copy, Debug, Default)]
struct Shadow {
    w_epoch: u32,
    writer: u32,
    w_line: u32,
    r_epoch: u32,
    /// First and a second, different reader in `r_epoch` (u32::MAX: none).
    reader: u32,
    reader2: u32,
    r_line: u32,
    r2_line: u32,
}

/// Why a thread stopped running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Ready,
    AtBar(u32),
    AtShfl,
    Exited,
}

#[derive(Debug)]
struct Frame {
    func: u32,
    pc: u32,
    regs: Vec<u64>,
    /// Whether each register holds a defined value (see `step`).
    defined: Vec<bool>,
    params: Vec<u8>,
    /// Length of the thread's local memory before this frame's depot.
    local_restore: usize,
    /// Local-space address of this frame's depot.
    depot: u64,
    /// The condition code's carry flag, `CC.CF`, of `add.cc` and its kin.
    carry: bool,
}

impl Frame {
    fn new(f: &Func, func: u32, params: Vec<u8>, local_restore: usize, depot: u64) -> Frame {
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
    fn get(&self, r: u32) -> Result<u64, Fault> {
        let r = r as usize;
        if self.defined[r] {
            Ok(self.regs[r])
        } else {
            Err(Fault::Uninit(r as u32))
        }
    }

    #[inline(always)]
    fn defined_op(&self, o: Opnd) -> bool {
        match o {
            Opnd::R(r) => self.defined[r as usize],
            _ => true,
        }
    }

    #[inline(always)]
    fn set(&mut self, r: u32, v: u64, defined: bool) {
        let r = r as usize;
        self.regs[r] = v;
        self.defined[r] = defined;
    }
}

#[derive(Debug)]
struct Thread {
    tid: [u32; 3],
    linear: u32,
    frames: Vec<Frame>,
    local: Vec<u8>,
    state: State,
}

/// What stopped a thread with an error; turned into a [`SimError`] with the
/// thread's position by the block.
#[derive(Debug)]
enum Fault {
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
enum Place {
    Global(u64),
    Shared(u64),
    Local(u64),
}

struct BlockRun<'a> {
    module: &'a Module,
    kernel: &'a str,
    entry: u32,
    launch: &'a Launch,
    block: [u32; 3],
    mem: &'a mut BTreeMap<u64, Vec<u8>>,
    shared: Vec<u8>,
    shadow: Vec<Shadow>,
    epoch: u32,
    /// Instructions executed by the launch so far, and its cap.
    count: u64,
    limit: u64,
    strict: bool,
    /// The launch's counts, when the device counts.
    counting: Option<&'a mut LaunchCounts>,
}

#[inline(always)]
fn mask(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

#[inline(always)]
fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

/// The NaN that `min`/`max` give when both operands are NaN. PTX does not
/// specify its bits; this is the all-ones quiet NaN.
const CANON_NAN_F64: u64 = 0x7fff_ffff_ffff_ffff;
/// Single precision has one NaN on NVIDIA GPUs: every NaN result is this.
const CANON_NAN_F32: u64 = 0x7fff_ffff;

/// The bits of a double-precision result. Double precision on NVIDIA GPUs
/// keeps NaN payloads, as the host FPU does, so the host's result is taken
/// as is. A NaN *created* from non-NaN operands (inf - inf, 0 * inf) may
/// differ in its bits from the GPU's; nothing in cudamin depends on them.
#[inline(always)]
fn f64r(x: f64) -> u64 {
    x.to_bits()
}

#[inline(always)]
fn f32r(x: f32) -> u64 {
    if x.is_nan() {
        CANON_NAN_F32
    } else {
        x.to_bits() as u64
    }
}

/// PTX `min`/`max` on floats: a NaN operand is ignored, and -0 < +0.
fn fminmax(a: f64, b: f64, max: bool) -> Option<f64> {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => None,
        (true, false) => Some(b),
        (false, true) => Some(a),
        _ => {
            if a == b {
                // Equal values differ at most in the sign of zero.
                let a_neg = a.is_sign_negative();
                Some(if a_neg != max { a } else { b })
            } else if (a < b) != max {
                Some(a)
            } else {
                Some(b)
            }
        }
    }
}

fn int_bin(op: Bin, ty: Ty, a: u64, b: u64) -> u64 {
    let w = ty.bits();
    let signed = matches!(ty, Ty::S(_));
    let (ua, ub) = (mask(a, w), mask(b, w));
    let (sa, sb) = (sext(a, w), sext(b, w));
    let r = match op {
        Bin::Add => ua.wrapping_add(ub),
        Bin::Sub => ua.wrapping_sub(ub),
        Bin::MulLo => ua.wrapping_mul(ub),
        Bin::MulHi => {
            if signed {
                ((sa as i128 * sb as i128) >> w) as u64
            } else {
                ((ua as u128 * ub as u128) >> w) as u64
            }
        }
        Bin::MulWide => {
            // Operands are at most 32 bits, so the product fits in 64.
            return if signed {
                mask(sa.wrapping_mul(sb) as u64, 2 * w)
            } else {
                mask(ua.wrapping_mul(ub), 2 * w)
            };
        }
        Bin::Div => {
            if ub == 0 {
                u64::MAX
            } else if signed {
                sa.wrapping_div(sb) as u64
            } else {
                ua / ub
            }
        }
        Bin::Rem => {
            if ub == 0 {
                ua
            } else if signed {
                sa.wrapping_rem(sb) as u64
            } else {
                ua % ub
            }
        }
        Bin::Shl => {
            // The shift amount is an unsigned 32-bit value, clamped to the width.
            let n = mask(b, 32);
            if n >= w as u64 { 0 } else { ua << n }
        }
        Bin::Shr => {
            let n = mask(b, 32);
            if signed {
                (sa >> n.min(63)) as u64
            } else if n >= w as u64 {
                0
            } else {
                ua >> n
            }
        }
        Bin::And => ua & ub,
        Bin::Or => ua | ub,
        Bin::Xor => ua ^ ub,
        Bin::Min => {
            if signed {
                sa.min(sb) as u64
            } else {
                ua.min(ub)
            }
        }
        Bin::Max => {
            if signed {
                sa.max(sb) as u64
            } else {
                ua.max(ub)
            }
        }
        Bin::Copysign => unreachable!("rejected when decoding"),
    };
    mask(r, w)
}

fn f64_bin(op: Bin, a: u64, b: u64) -> u64 {
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    match op {
        Bin::Add => f64r(x + y),
        Bin::Sub => f64r(x - y),
        Bin::MulLo => f64r(x * y),
        Bin::Div => f64r(x / y),
        Bin::Min | Bin::Max => fminmax(x, y, op == Bin::Max).map_or(CANON_NAN_F64, f64::to_bits),
        // PTX copies the sign of the *first* operand onto the second.
        Bin::Copysign => (b & !(1 << 63)) | (a & (1 << 63)),
        _ => unreachable!("rejected when decoding"),
    }
}

fn f32_bin(op: Bin, a: u64, b: u64) -> u64 {
    let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
    match op {
        Bin::Add => f32r(x + y),
        Bin::Sub => f32r(x - y),
        Bin::MulLo => f32r(x * y),
        Bin::Div => f32r(x / y),
        Bin::Min | Bin::Max => fminmax(x as f64, y as f64, op == Bin::Max)
            .map_or(CANON_NAN_F32, |v| (v as f32).to_bits() as u64),
        Bin::Copysign => ((b & 0x7fff_ffff) | (a & 0x8000_0000)) & 0xffff_ffff,
        _ => unreachable!("rejected when decoding"),
    }
}

fn unary(op: Un, ty: Ty, a: u64) -> u64 {
    let w = ty.bits();
    match ty {
        Ty::F64 => match op {
            Un::Neg => a ^ (1 << 63),
            Un::Abs => a & !(1 << 63),
            Un::Rcp => f64r(1.0 / f64::from_bits(a)),
            Un::Sqrt => f64r(f64::from_bits(a).sqrt()),
            _ => unreachable!("rejected when decoding"),
        },
        Ty::F32 => {
            let a = mask(a, 32);
            match op {
                Un::Neg => a ^ (1 << 31),
                Un::Abs => a & !(1 << 31),
                Un::Rcp => f32r(1.0 / f32::from_bits(a as u32)),
                Un::Sqrt => f32r(f32::from_bits(a as u32).sqrt()),
                _ => unreachable!("rejected when decoding"),
            }
        }
        _ => match op {
            Un::Not => mask(!a, w),
            Un::Neg => mask(a.wrapping_neg(), w),
            Un::Abs => mask(sext(a, w).wrapping_abs() as u64, w),
            Un::Clz => (mask(a, w).leading_zeros() - (64 - w)) as u64,
            Un::Popc => mask(a, w).count_ones() as u64,
            Un::Cnot => (mask(a, w) == 0) as u64,
            Un::Rcp | Un::Sqrt => unreachable!("rejected when decoding"),
        },
    }
}

fn setp(cmp: Cmp, ty: Ty, a: u64, b: u64) -> bool {
    use std::cmp::Ordering;
    let ord = match ty {
        Ty::F64 | Ty::F32 => {
            let (x, y) = if ty == Ty::F64 {
                (f64::from_bits(a), f64::from_bits(b))
            } else {
                (
                    f32::from_bits(a as u32) as f64,
                    f32::from_bits(b as u32) as f64,
                )
            };
            let o = x.partial_cmp(&y);
            return match cmp {
                Cmp::Num => o.is_some(),
                Cmp::Nan => o.is_none(),
                _ => {
                    let unordered = matches!(
                        cmp,
                        Cmp::Equ | Cmp::Neu | Cmp::Ltu | Cmp::Leu | Cmp::Gtu | Cmp::Geu
                    );
                    match o {
                        None => unordered,
                        Some(o) => match cmp {
                            Cmp::Eq | Cmp::Equ => o == Ordering::Equal,
                            Cmp::Ne | Cmp::Neu => o != Ordering::Equal,
                            Cmp::Lt | Cmp::Ltu => o == Ordering::Less,
                            Cmp::Le | Cmp::Leu => o != Ordering::Greater,
                            Cmp::Gt | Cmp::Gtu => o == Ordering::Greater,
                            Cmp::Ge | Cmp::Geu => o != Ordering::Less,
                            Cmp::Num | Cmp::Nan => unreachable!(),
                        },
                    }
                }
            };
        }
        Ty::S(_) => sext(a, ty.bits()).cmp(&sext(b, ty.bits())),
        _ => mask(a, ty.bits()).cmp(&mask(b, ty.bits())),
    };
    match cmp {
        Cmp::Eq => ord == Ordering::Equal,
        Cmp::Ne => ord != Ordering::Equal,
        Cmp::Lt => ord == Ordering::Less,
        Cmp::Le => ord != Ordering::Greater,
        Cmp::Gt => ord == Ordering::Greater,
        Cmp::Ge => ord != Ordering::Less,
        _ => unreachable!("rejected when decoding"),
    }
}

fn round_int(x: f64, rnd: Rnd) -> f64 {
    match rnd {
        Rnd::Rni => x.round_ties_even(),
        Rnd::Rzi => x.trunc(),
        Rnd::Rmi => x.floor(),
        Rnd::Rpi => x.ceil(),
        _ => x,
    }
}

fn cvt(dt: Ty, st: Ty, rnd: Rnd, a: u64) -> u64 {
    let is_f = |t: Ty| matches!(t, Ty::F32 | Ty::F64);
    let src_f = |a: u64| {
        if st == Ty::F64 {
            f64::from_bits(a)
        } else {
            f32::from_bits(a as u32) as f64
        }
    };
    match (is_f(dt), is_f(st)) {
        (false, false) => {
            let v = if matches!(st, Ty::S(_)) {
                sext(a, st.bits()) as u64
            } else {
                mask(a, st.bits())
            };
            mask(v, dt.bits())
        }
        (true, false) => {
            // Rust's integer-to-float `as` rounds to nearest, ties to even.
            if matches!(st, Ty::S(_)) {
                let v = sext(a, st.bits());
                if dt == Ty::F64 {
                    (v as f64).to_bits()
                } else {
                    (v as f32).to_bits() as u64
                }
            } else {
                let v = mask(a, st.bits());
                if dt == Ty::F64 {
                    (v as f64).to_bits()
                } else {
                    (v as f32).to_bits() as u64
                }
            }
        }
        (false, true) => {
            // Float to integer saturates, and NaN gives 0.
            let x = round_int(src_f(a), rnd);
            let w = dt.bits();
            if x.is_nan() {
                return 0;
            }
            if matches!(dt, Ty::S(_)) {
                let lo = -(2f64.powi(w as i32 - 1));
                let hi = 2f64.powi(w as i32 - 1) - 1.0;
                mask(x.clamp(lo, hi) as i64 as u64, w)
            } else {
                let hi = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
                if x <= 0.0 {
                    0
                } else if x >= hi as f64 {
                    hi
                } else {
                    x as u64
                }
            }
        }
        (true, true) => {
            let x = src_f(a);
            if dt == st {
                let r = round_int(x, rnd);
                if dt == Ty::F64 {
                    f64r(r)
                } else {
                    f32r(r as f32)
                }
            } else if dt == Ty::F32 {
                f32r(x as f32)
            } else {
                f64r(x)
            }
        }
    }
}

/// `a + b + carry` (or `a − b − borrow` where `sub`) on `bits`-bit integers: the result and
/// the carry (borrow) out.
fn add_with_carry(sub: bool, bits: u32, a: u64, b: u64, carry: bool) -> (u64, bool) {
    let (a, b) = (u128::from(mask(a, bits)), u128::from(mask(b, bits)));
    let c = u128::from(carry);
    if sub {
        let r = a.wrapping_sub(b).wrapping_sub(c);
        (mask(r as u64, bits), a < b + c)
    } else {
        let r = a + b + c;
        (mask(r as u64, bits), r >> bits != 0)
    }
}

/// `shf.l` or `shf.r` (`left`), `.clamp` or `.wrap`: the 64 bits `high:low` shifted by `by`
/// (at most 32 when clamped, modulo 32 when wrapped); the high word after a left shift, the
/// low word after a right shift.
fn shf(left: bool, clamp: bool, low: u32, high: u32, by: u32) -> u32 {
    let n = if clamp { by.min(32) } else { by & 31 };
    let both = (u64::from(high) << 32) | u64::from(low);
    if left {
        ((both << n) >> 32) as u32
    } else {
        (both >> n) as u32
    }
}

fn bfe(ty: Ty, a: u64, pos: u64, len: u64) -> u64 {
    let w = ty.bits() as u64;
    let signed = matches!(ty, Ty::S(_));
    let pos = pos & 0xff;
    let len = len & 0xff;
    let a = mask(a, w as u32);
    let msb = w - 1;
    let sbit = if !signed || len == 0 {
        0
    } else {
        (a >> (pos + len - 1).min(msb)) & 1
    };
    let mut d = 0u64;
    for i in 0..w {
        let bit = if i < len && pos + i <= msb {
            (a >> (pos + i)) & 1
        } else {
            sbit
        };
        d |= bit << i;
    }
    d
}

impl BlockRun<'_> {
    /// Runs the block. `threads` is a pool reused from block to block of one
    /// launch, since register files of big kernels are costly to allocate.
    fn run(&mut self, pbuf: &[u8], threads: &mut Vec<Thread>) -> Result<(), SimError> {
        let [bx, by, bz] = self.launch.block;
        let entry = &self.module.funcs[self.entry as usize];
        let depot = entry.depot as usize;
        if threads.is_empty() {
            for z in 0..bz {
                for y in 0..by {
                    for x in 0..bx {
                        let frame = Frame::new(entry, self.entry, pbuf.to_vec(), 0, 0);
                        threads.push(Thread {
                            tid: [x, y, z],
                            linear: threads.len() as u32,
                            frames: vec![frame],
                            local: vec![0; depot],
                            state: State::Ready,
                        });
                    }
                }
            }
        } else {
            for t in threads.iter_mut() {
                t.frames.truncate(1);
                let f = &mut t.frames[0];
                f.pc = 0;
                f.defined.fill(false);
                f.params.copy_from_slice(pbuf);
                t.local.clear();
                t.local.resize(depot, 0);
                t.state = State::Ready;
            }
        }
        loop {
            for th in threads.iter_mut() {
                if th.state == State::Ready {
                    self.exec(th).map_err(|f| self.error(th, f))?;
                }
            }
            if threads.iter().all(|t| t.state == State::Exited) {
                return Ok(());
            }
            if self.shuffles(threads)? {
                continue;
            }
            let first_bar = threads.iter().find_map(|t| match t.state {
                State::AtBar(id) => Some(id),
                _ => None,
            });
            if let Some(id) = first_bar
                && threads.iter().all(|t| t.state == State::AtBar(id))
            {
                for t in threads.iter_mut() {
                    t.state = State::Ready;
                    t.frames.last_mut().expect("frame").pc += 1;
                }
                self.epoch += 1;
                continue;
            }
            return Err(self.hang(threads));
        }
    }

    fn line_of(&self, th: &Thread) -> usize {
        let f = th.frames.last().expect("frame");
        self.module.funcs[f.func as usize].code[f.pc as usize].line as usize
    }

    fn at(&self, th: &Thread) -> At {
        At {
            kernel: self.kernel.to_string(),
            block: self.block,
            thread: th.tid,
            line: self.line_of(th),
        }
    }

    fn tid_of(&self, linear: u32) -> [u32; 3] {
        let [bx, by, _] = self.launch.block;
        [linear % bx, (linear / bx) % by, linear / (bx * by)]
    }

    fn error(&self, th: &Thread, f: Fault) -> SimError {
        let at = self.at(th);
        match f {
            Fault::Uninit(r) => {
                let fr = th.frames.last().expect("frame");
                SimError::UninitializedRegister {
                    at,
                    register: self.module.funcs[fr.func as usize].reg_names[r as usize].clone(),
                }
            }
            Fault::Oob {
                space,
                address,
                size,
                write,
            } => SimError::MemoryOutOfBounds {
                at,
                space,
                address,
                size,
                write,
            },
            Fault::Misaligned {
                space,
                address,
                size,
            } => SimError::Misaligned {
                at,
                space,
                address,
                size,
            },
            Fault::Race {
                address,
                first,
                write,
            } => SimError::SharedRace {
                kernel: at.kernel,
                block: at.block,
                address,
                first: SharedAccess {
                    thread: self.tid_of(first.0),
                    write: first.1,
                    line: first.2 as usize,
                },
                second: SharedAccess {
                    thread: th.tid,
                    write,
                    line: at.line,
                },
            },
            Fault::Trap => SimError::Trap { at },
            Fault::StackOverflow => SimError::StackOverflow { at },
            Fault::StepLimit => SimError::StepLimit {
                at,
                limit: self.limit,
            },
        }
    }

    /// Describes why no thread of the block can go on: the threads grouped
    /// by where they stopped, each group with its size and first thread.
    fn hang(&self, threads: &[Thread]) -> SimError {
        // (description, count, first thread), in order of first appearance.
        let mut groups: Vec<(String, usize, [u32; 3])> = Vec::new();
        for t in threads {
            let what = match t.state {
                State::AtBar(id) => format!("wait at bar.sync {id} (line {})", self.line_of(t)),
                State::AtShfl => format!("wait at shfl.sync (line {})", self.line_of(t)),
                State::Exited => "exited".to_string(),
                State::Ready => "still running".to_string(),
            };
            match groups.iter_mut().find(|g| g.0 == what) {
                Some(g) => g.1 += 1,
                None => groups.push((what, 1, t.tid)),
            }
        }
        let detail = groups
            .iter()
            .map(|(what, n, [x, y, z])| {
                format!(
                    "{n} of {} threads {what}, first ({x},{y},{z})",
                    threads.len()
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        SimError::DivergentBarrier {
            kernel: self.kernel.to_string(),
            block: self.block,
            detail,
        }
    }

    /// Performs every `shfl.sync` whose member lanes have all arrived.
    /// Returns whether any did; an error if lanes wait for lanes that
    /// cannot come.
    fn shuffles(&mut self, threads: &mut [Thread]) -> Result<bool, SimError> {
        let n = threads.len();
        let mut progressed = false;
        for w0 in (0..n).step_by(32) {
            let w1 = (w0 + 32).min(n);
            let mut arrived = 0u32;
            for (l, t) in threads[w0..w1].iter().enumerate() {
                if t.state == State::AtShfl {
                    arrived |= 1 << l;
                }
            }
            if arrived == 0 {
                continue;
            }
            // Read every waiting lane's operands.
            let mut vals = [(0u64, 0u64, 0u64, 0u64); 32];
            // Lanes whose source value `a` is defined.
            let mut a_defined = 0u32;
            let mut site = None;
            for l in 0..32 {
                if arrived & (1 << l) == 0 {
                    continue;
                }
                let t = &threads[w0 + l];
                let fr = t.frames.last().expect("frame");
                let ins = &self.module.funcs[fr.func as usize].code[fr.pc as usize];
                let Op::Shfl { a, b, c, mask, .. } = ins.op else {
                    unreachable!("waiting at a shuffle")
                };
                let sr = self.sregs(t);
                let get = |o| needed(fr, o, &sr).map_err(|f| self.error(t, f));
                vals[l] = (
                    operand(fr, a, &sr),
                    get(b)?,
                    get(c)?,
                    get(mask)? & 0xffff_ffff,
                );
                if fr.defined_op(a) {
                    a_defined |= 1 << l;
                }
                let here = (fr.func, fr.pc);
                match site {
                    None => site = Some(here),
                    Some(s) if s != here => {
                        return Err(SimError::ShuffleMaskMissingLanes {
                            at: self.at(t),
                            mask: vals[l].3 as u32,
                            missing: 0,
                        });
                    }
                    _ => {}
                }
                let missing = vals[l].3 as u32 & !arrived;
                if missing != 0 {
                    return Err(SimError::ShuffleMaskMissingLanes {
                        at: self.at(t),
                        mask: vals[l].3 as u32,
                        missing,
                    });
                }
            }
            for l in 0..32 {
                if arrived & (1 << l) == 0 {
                    continue;
                }
                let (_, b, c, _) = vals[l];
                let lane = l as i64;
                let bval = (b & 0x1f) as i64;
                let seg = ((c >> 8) & 0x1f) as i64;
                let clamp = (c & 0x1f) as i64;
                let max_lane = (lane & seg) | (clamp & !seg);
                let min_lane = lane & seg;
                let t = &mut threads[w0 + l];
                let fr = t.frames.last_mut().expect("frame");
                let ins = &self.module.funcs[fr.func as usize].code[fr.pc as usize];
                let Op::Shfl { mode, d, p, .. } = ins.op else {
                    unreachable!("waiting at a shuffle")
                };
                let (j, ok) = match mode {
                    ShflMode::Up => (lane - bval, lane - bval >= max_lane),
                    ShflMode::Down => (lane + bval, lane + bval <= max_lane),
                    ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
                    ShflMode::Idx => {
                        let j = min_lane | (bval & !seg);
                        (j, j <= max_lane)
                    }
                };
                let j = if ok { j } else { lane };
                // A source lane that did not take part gives an undefined
                // value on hardware: the lane's own bits, marked undefined.
                let (src, defined) = if (0..32).contains(&j) && arrived & (1 << j) != 0 {
                    (vals[j as usize].0, a_defined & (1 << j) != 0)
                } else {
                    (vals[l].0, false)
                };
                fr.set(d, mask(src, 32), defined);
                if let Some(p) = p {
                    fr.set(p, ok as u64, true);
                }
                fr.pc += 1;
                t.state = State::Ready;
            }
            progressed = true;
        }
        Ok(progressed)
    }

    fn sregs(&self, t: &Thread) -> Sregs {
        Sregs {
            tid: t.tid,
            ntid: self.launch.block,
            ctaid: self.block,
            nctaid: self.launch.grid,
            lane: t.linear % 32,
        }
    }

    /// Decodes an address of `space` into where it lands, checking alignment.
    fn place(&self, space: MemSpace, addr: u64, size: u32) -> Result<Place, Fault> {
        let sp = match space {
            MemSpace::Generic => {
                if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_SIZE).contains(&addr) {
                    Place::Shared(addr - SHARED_WINDOW)
                } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_SIZE).contains(&addr) {
                    Place::Local(addr - LOCAL_WINDOW)
                } else {
                    Place::Global(addr)
                }
            }
            MemSpace::Global => Place::Global(addr),
            MemSpace::Shared => Place::Shared(addr),
            MemSpace::Local => Place::Local(addr),
            MemSpace::Param => unreachable!("parameters are addressed by slot"),
        };
        if addr % size as u64 != 0 {
            let space = match sp {
                Place::Global(_) => Space::Global,
                Place::Shared(_) => Space::Shared,
                Place::Local(_) => Space::Local,
            };
            return Err(Fault::Misaligned {
                space,
                address: addr,
                size,
            });
        }
        Ok(sp)
    }

    /// Records a shared access for the race check.
    fn race(&mut self, t: u32, line: u32, off: u64, size: u32, write: bool) -> Result<(), Fault> {
        let e = self.epoch;
        for b in off..off + size as u64 {
            let s = &mut self.shadow[b as usize];
            if s.w_epoch == e && s.writer != t {
                return Err(Fault::Race {
                    address: b,
                    first: (s.writer, true, s.w_line),
                    write,
                });
            }
            if write {
                if s.r_epoch == e {
                    if s.reader != t {
                        return Err(Fault::Race {
                            address: b,
                            first: (s.reader, false, s.r_line),
                            write,
                        });
                    }
                    if s.reader2 != u32::MAX {
                        return Err(Fault::Race {
                            address: b,
                            first: (s.reader2, false, s.r2_line),
                            write,
                        });
                    }
                }
                s.w_epoch = e;
                s.writer = t;
                s.w_line = line;
            } else if s.r_epoch != e {
                s.r_epoch = e;
                s.reader = t;
                s.r_line = line;
                s.reader2 = u32::MAX;
            } else if s.reader != t && s.reader2 == u32::MAX {
                s.reader2 = t;
                s.r2_line = line;
            }
        }
        Ok(())
    }

    /// Counts `ops` double-precision operations when `ty` is f64 and the device counts.
    #[inline(always)]
    fn fp64(&mut self, ty: Ty, ops: u64) {
        if ty == Ty::F64
            && let Some(counting) = self.counting.as_deref_mut()
        {
            counting.counts.fp64_ops += ops;
        }
    }

    /// The bytes an access touches, after bounds and race checks.
    fn bytes<'m>(
        &'m mut self,
        local: &'m mut [u8],
        place: Place,
        addr: u64,
        size: u32,
        write: bool,
        who: (u32, u32),
    ) -> Result<&'m mut [u8], Fault> {
        let oob = |space| Fault::Oob {
            space,
            address: addr,
            size,
            write,
        };
        if let Some(counting) = self.counting.as_deref_mut() {
            match place {
                Place::Global(a) => counting.global(a, size, write),
                Place::Shared(_) => counting.counts.shared_bytes += u64::from(size),
                Place::Local(_) => counting.counts.local_bytes += u64::from(size),
            }
        }
        match place {
            Place::Global(a) => global_slice(self.mem, a, size as u64).ok_or(oob(Space::Global)),
            Place::Shared(off) => {
                if off
                    .checked_add(size as u64)
                    .is_none_or(|e| e > self.shared.len() as u64)
                {
                    return Err(oob(Space::Shared));
                }
                self.race(who.0, who.1, off, size, write)?;
                Ok(&mut self.shared[off as usize..(off + size as u64) as usize])
            }
            Place::Local(off) => {
                if off
                    .checked_add(size as u64)
                    .is_none_or(|e| e > local.len() as u64)
                {
                    return Err(oob(Space::Local));
                }
                Ok(&mut local[off as usize..(off + size as u64) as usize])
            }
        }
    }

    /// Runs a thread until it exits, waits at a synchronization point, or
    /// faults.
    fn exec(&mut self, th: &mut Thread) -> Result<(), Fault> {
        let module = self.module;
        let sr = self.sregs(th);
        let mut count = 0u64;
        let budget = self.limit.saturating_sub(self.count);
        let r = loop {
            if count >= budget {
                break Err(Fault::StepLimit);
            }
            let fr = th.frames.last_mut().expect("frame");
            let ins: &Instr = &module.funcs[fr.func as usize].code[fr.pc as usize];
            count += 1;
            if let Some((p, neg)) = ins.guard {
                match fr.get(p) {
                    Ok(v) if (v != 0) == neg => {
                        fr.pc += 1;
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) => break Err(e),
                }
            }
            match self.step(th, ins, &sr) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.count += count;
        r
    }

    /// Executes one instruction whose guard holds. Returns false when the
    /// thread stopped (exit or a synchronization point).
    ///
    /// Register definedness propagates like valgrind's: an operation on an
    /// undefined value gives an undefined value, and only a use that matters
    /// (a branch or guard, an address, a value leaving the registers) is an
    /// error. LLVM computes freely on `undef` values whose results end up
    /// unused, so flagging every read would report correct code.
    #[inline(always)]
    fn step(&mut self, th: &mut Thread, ins: &Instr, sr: &Sregs) -> Result<bool, Fault> {
        let module = self.module;
        let fr = th.frames.last_mut().expect("frame");
        macro_rules! v {
            ($o:expr) => {
                operand(fr, $o, sr)
            };
        }
        let strict = self.strict;
        macro_rules! def {
            ($($o:expr),+) => {
                true $(&& defined(fr, $o, strict)?)+
            };
        }
        macro_rules! need {
            ($o:expr) => {
                needed(fr, $o, sr)?
            };
        }
        match &ins.op {
            &Op::Mov { d, a, bits } => {
                let x = v!(a);
                let ok = def!(a);
                fr.set(d, mask(x, bits), ok);
            }
            &Op::Bin { op, ty, d, a, b } => {
                self.fp64(ty, 1);
                let (x, y) = (v!(a), v!(b));
                let r = match ty {
                    Ty::F64 => f64_bin(op, x, y),
                    Ty::F32 => f32_bin(op, x, y),
                    _ => int_bin(op, ty, x, y),
                };
                let ok = def!(a, b);
                fr.set(d, r, ok);
            }
            &Op::Un { op, ty, d, a } => {
                self.fp64(ty, 1);
                let x = v!(a);
                let ok = def!(a);
                fr.set(d, unary(op, ty, x), ok);
            }
            &Op::Mad {
                mode,
                ty,
                d,
                a,
                b,
                c,
            } => {
                let (x, y, z) = (v!(a), v!(b), v!(c));
                let p = int_bin(mode, ty, x, y);
                let wide = if mode == Bin::MulWide {
                    2 * ty.bits()
                } else {
                    ty.bits()
                };
                let ok = def!(a, b, c);
                fr.set(d, mask(p.wrapping_add(z), wide), ok);
            }
            &Op::Fma { ty, d, a, b, c } => {
                self.fp64(ty, 2);
                let (x, y, z) = (v!(a), v!(b), v!(c));
                let r = if ty == Ty::F64 {
                    f64r(f64::from_bits(x).mul_add(f64::from_bits(y), f64::from_bits(z)))
                } else {
                    let f = |u: u64| f32::from_bits(u as u32);
                    f32r(f(x).mul_add(f(y), f(z)))
                };
                let ok = def!(a, b, c);
                fr.set(d, r, ok);
            }
            &Op::Bfe { ty, d, a, b, c } => {
                let (x, y, z) = (v!(a), v!(b), v!(c));
                let ok = def!(a, b, c);
                fr.set(d, bfe(ty, x, y, z), ok);
            }
            &Op::Carry {
                sub,
                carry_in,
                carry_out,
                bits,
                d,
                a,
                b,
            } => {
                let (x, y) = (v!(a), v!(b));
                let ok = def!(a, b);
                let flag = carry_in && fr.carry;
                let (r, out) = add_with_carry(sub, bits, x, y, flag);
                if carry_out {
                    fr.carry = out;
                }
                fr.set(d, r, ok);
            }
            &Op::Shf {
                left,
                clamp,
                d,
                a,
                b,
                c,
            } => {
                let (x, y, z) = (v!(a), v!(b), v!(c));
                let ok = def!(a, b, c);
                fr.set(
                    d,
                    u64::from(shf(left, clamp, x as u32, y as u32, z as u32)),
                    ok,
                );
            }
            &Op::Setp { cmp, ty, d, a, b } => {
                let (x, y) = (v!(a), v!(b));
                let ok = def!(a, b);
                fr.set(d, setp(cmp, ty, x, y) as u64, ok);
            }
            &Op::Selp { bits, d, a, b, p } => {
                // Only the selected operand matters, as on hardware.
                let pick = if v!(p) != 0 { a } else { b };
                let r = v!(pick);
                let ok = def!(p, pick);
                fr.set(d, mask(r, bits), ok);
            }
            &Op::Cvt { dt, st, rnd, d, a } => {
                let x = v!(a);
                let ok = def!(a);
                fr.set(d, cvt(dt, st, rnd, x), ok);
            }
            Op::Unpack { ds, part, a } => {
                let x = v!(*a);
                let ok = def!(*a);
                for (i, r) in ds.iter().enumerate() {
                    if let Some(r) = r {
                        fr.set(*r, mask(x >> (i as u32 * part), *part), ok);
                    }
                }
            }
            Op::Pack { d, srcs, part } => {
                let mut x = 0;
                let mut ok = true;
                for (i, s) in srcs.iter().enumerate() {
                    x |= mask(v!(*s), *part) << (i as u32 * part);
                    ok &= def!(*s);
                }
                fr.set(*d, x, ok);
            }
            &Op::Cvta { to, space, d, a } => {
                let x = v!(a);
                let base = match space {
                    MemSpace::Shared => SHARED_WINDOW,
                    MemSpace::Local => LOCAL_WINDOW,
                    _ => 0,
                };
                let r = if to {
                    x.wrapping_sub(base)
                } else {
                    x.wrapping_add(base)
                };
                let ok = def!(a);
                fr.set(d, r, ok);
            }
            &Op::Depot { d } => {
                let x = fr.depot;
                fr.set(d, x, true);
            }
            &Op::Ld {
                space,
                size,
                signed,
                count,
                d,
                addr,
            } => {
                for (i, &d) in d.iter().enumerate().take(count as usize) {
                    let step = i as u32 * size;
                    let mut buf = [0u8; 8];
                    if let Addr::Param { at, .. } = addr {
                        let at = (at + step) as usize;
                        buf[..size as usize].copy_from_slice(&fr.params[at..at + size as usize]);
                    } else {
                        let a = address(fr, addr, sr)? + step as u64;
                        let place = self.place(space, a, size)?;
                        let src = self.bytes(
                            &mut th.local,
                            place,
                            a,
                            size,
                            false,
                            (th.linear, ins.line),
                        )?;
                        buf[..size as usize].copy_from_slice(src);
                    }
                    let raw = u64::from_le_bytes(buf);
                    let x = if signed {
                        sext(raw, size * 8) as u64
                    } else {
                        raw
                    };
                    fr.set(d, x, true);
                }
                fr.pc += 1;
                return Ok(true);
            }
            &Op::St {
                space,
                size,
                count,
                src,
                addr,
            } => {
                for (i, &src) in src.iter().enumerate().take(count as usize) {
                    let step = i as u32 * size;
                    let x = need!(src).to_le_bytes();
                    if let Addr::Param { at, .. } = addr {
                        let at = (at + step) as usize;
                        fr.params[at..at + size as usize].copy_from_slice(&x[..size as usize]);
                    } else {
                        let a = address(fr, addr, sr)? + step as u64;
                        let place = self.place(space, a, size)?;
                        let dst =
                            self.bytes(&mut th.local, place, a, size, true, (th.linear, ins.line))?;
                        dst.copy_from_slice(&x[..size as usize]);
                    }
                }
                fr.pc += 1;
                return Ok(true);
            }
            &Op::Atom {
                space,
                op,
                ty,
                d,
                addr,
                b,
                c,
            } => {
                let (y, z) = (need!(b), need!(c));
                let a = address(fr, addr, sr)?;
                let size = ty.bits() / 8;
                let place = self.place(space, a, size)?;
                // Atomics are exempt from the race check: they cannot race.
                let cell: &mut [u8] = match place {
                    Place::Shared(off)
                        if off
                            .checked_add(size as u64)
                            .is_some_and(|e| e <= self.shared.len() as u64) =>
                    {
                        &mut self.shared[off as usize..(off + size as u64) as usize]
                    }
                    Place::Shared(_) => {
                        return Err(Fault::Oob {
                            space: Space::Shared,
                            address: a,
                            size,
                            write: true,
                        });
                    }
                    p => self.bytes(&mut th.local, p, a, size, true, (th.linear, ins.line))?,
                };
                let mut buf = [0u8; 8];
                buf[..size as usize].copy_from_slice(cell);
                let old = u64::from_le_bytes(buf);
                let new = match (op, ty) {
                    (AtomOp::Add, Ty::F64) => f64_bin(Bin::Add, old, y),
                    (AtomOp::Add, Ty::F32) => f32_bin(Bin::Add, old, y),
                    (AtomOp::Add, _) => int_bin(Bin::Add, ty, old, y),
                    (AtomOp::Exch, _) => mask(y, ty.bits()),
                    (AtomOp::Min, _) => int_bin(Bin::Min, ty, old, y),
                    (AtomOp::Max, _) => int_bin(Bin::Max, ty, old, y),
                    (AtomOp::And, _) => int_bin(Bin::And, ty, old, y),
                    (AtomOp::Or, _) => int_bin(Bin::Or, ty, old, y),
                    (AtomOp::Xor, _) => int_bin(Bin::Xor, ty, old, y),
                    (AtomOp::Cas, _) => {
                        if old == mask(y, ty.bits()) {
                            mask(z, ty.bits())
                        } else {
                            old
                        }
                    }
                };
                cell.copy_from_slice(&new.to_le_bytes()[..size as usize]);
                let fr = th.frames.last_mut().expect("frame");
                if let Some(d) = d {
                    fr.set(d, old, true);
                }
                fr.pc += 1;
                return Ok(true);
            }
            &Op::Bra { target } => {
                fr.pc = target;
                return Ok(true);
            }
            Op::Brx { idx, targets } => {
                let i = need!(*idx) & 0xffff_ffff;
                match targets.get(i as usize) {
                    Some(&t) => fr.pc = t,
                    // An index past the table is undefined behaviour on
                    // hardware; treat it as the trap it most likely becomes.
                    None => return Err(Fault::Trap),
                }
                return Ok(true);
            }
            Op::Call { func, args, .. } => {
                let callee = &module.funcs[*func as usize];
                let mut params = vec![0u8; callee.param_bytes as usize];
                for (&(from, size), &(to, _)) in args.iter().zip(&callee.param_slots) {
                    params[to as usize..(to + size) as usize]
                        .copy_from_slice(&fr.params[from as usize..(from + size) as usize]);
                }
                let restore = th.local.len();
                let base = restore.next_multiple_of(callee.depot_align as usize);
                let top = base + callee.depot as usize;
                if top > LOCAL_LIMIT {
                    return Err(Fault::StackOverflow);
                }
                th.local.resize(top, 0);
                th.frames
                    .push(Frame::new(callee, *func, params, restore, base as u64));
                return Ok(true);
            }
            Op::Ret => {
                if th.frames.len() == 1 {
                    th.state = State::Exited;
                    return Ok(false);
                }
                let done = th.frames.pop().expect("frame");
                th.local.truncate(done.local_restore);
                let callee = &module.funcs[done.func as usize];
                let caller = th.frames.last_mut().expect("frame");
                let call = &module.funcs[caller.func as usize].code[caller.pc as usize];
                let Op::Call { rets, .. } = &call.op else {
                    unreachable!("returning to a call")
                };
                for (&(to, size), &(from, _)) in rets.iter().zip(&callee.ret_slots) {
                    caller.params[to as usize..(to + size) as usize]
                        .copy_from_slice(&done.params[from as usize..(from + size) as usize]);
                }
                caller.pc += 1;
                return Ok(true);
            }
            Op::Exit => {
                th.state = State::Exited;
                return Ok(false);
            }
            Op::Trap => return Err(Fault::Trap),
            &Op::Bar { id } => {
                if let Some(counting) = self.counting.as_deref_mut() {
                    counting.counts.block_barriers += 1;
                }
                let id = need!(id) as u32;
                th.state = State::AtBar(id);
                return Ok(false);
            }
            Op::Shfl { .. } => {
                th.state = State::AtShfl;
                return Ok(false);
            }
            Op::Nop => {}
        }
        fr.pc += 1;
        Ok(true)
    }
}

/// Values of the special registers for one thread.
struct Sregs {
    tid: [u32; 3],
    ntid: [u32; 3],
    ctaid: [u32; 3],
    nctaid: [u32; 3],
    lane: u32,
}

#[inline(always)]
fn operand(fr: &Frame, o: Opnd, sr: &Sregs) -> u64 {
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
fn defined(fr: &Frame, o: Opnd, strict: bool) -> Result<bool, Fault> {
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
fn needed(fr: &Frame, o: Opnd, sr: &Sregs) -> Result<u64, Fault> {
    if let Opnd::R(r) = o {
        fr.get(r)
    } else {
        Ok(operand(fr, o, sr))
    }
}

#[inline(always)]
fn address(fr: &Frame, a: Addr, sr: &Sregs) -> Result<u64, Fault> {
    let _ = sr;
    Ok(match a {
        Addr::Reg(r, off) => fr.get(r)?.wrapping_add(off as u64),
        Addr::Abs(v) => v,
        Addr::Param { .. } => unreachable!("parameters are addressed by slot"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_edges() {
        assert_eq!(int_bin(Bin::Shl, Ty::U(64), 1, 64), 0);
        assert_eq!(int_bin(Bin::Shl, Ty::U(64), 1, 63), 1 << 63);
        assert_eq!(int_bin(Bin::Shr, Ty::S(64), 1 << 63, 200), u64::MAX);
        assert_eq!(int_bin(Bin::Shr, Ty::U(16), 0x8000, 15), 1);
        assert_eq!(
            int_bin(Bin::MulHi, Ty::S(32), (-2i64) as u64, 3),
            0xffff_ffff
        );
        assert_eq!(int_bin(Bin::MulWide, Ty::S(16), 0xffff, 2), 0xffff_fffe);
        assert_eq!(int_bin(Bin::Div, Ty::U(64), 5, 0), u64::MAX);
        assert_eq!(
            int_bin(Bin::Div, Ty::S(32), 0x8000_0000, 0xffff_ffff),
            0x8000_0000
        );
        assert_eq!(int_bin(Bin::Min, Ty::S(16), 0xffff, 1), 0xffff);
        assert_eq!(int_bin(Bin::Min, Ty::U(16), 0xffff, 1), 1);
        assert_eq!(unary(Un::Clz, Ty::U(32), 0), 32);
        assert_eq!(unary(Un::Neg, Ty::S(16), 1), 0xffff);
        assert_eq!(bfe(Ty::S(32), 0x0000_0f00, 8, 4), 0xffff_ffff);
        assert_eq!(bfe(Ty::U(32), 0xffff_ffff, 28, 8), 0xf);
        assert_eq!(bfe(Ty::S(32), 0x8000_0000, 28, 8), 0xffff_fff8);
        assert_eq!(add_with_carry(false, 64, u64::MAX, 1, false), (0, true));
        assert_eq!(add_with_carry(false, 64, 5, 6, true), (12, false));
        assert_eq!(add_with_carry(false, 32, 0xffff_ffff, 0, true), (0, true));
        assert_eq!(add_with_carry(true, 64, 0, 1, false), (u64::MAX, true));
        assert_eq!(add_with_carry(true, 64, 7, 3, true), (3, false));
        assert_eq!(add_with_carry(true, 32, 3, 3, true), (0xffff_ffff, true));
        // Funnel shifts of high:low = 0x89abcdef:0x01234567, as the PTX ISA defines them.
        let (low, high) = (0x0123_4567, 0x89ab_cdef);
        assert_eq!(shf(true, false, low, high, 8), 0xabcd_ef01);
        assert_eq!(shf(true, false, low, high, 40), 0xabcd_ef01); // wraps to 8
        assert_eq!(shf(true, true, low, high, 40), low); // clamps to 32
        assert_eq!(shf(true, true, low, high, 0), high);
        assert_eq!(shf(false, false, low, high, 8), 0xef01_2345);
        assert_eq!(shf(false, true, low, high, 32), high);
        assert_eq!(shf(false, true, low, high, 99), high);
    }

    #[test]
    fn conversions() {
        let f = |x: f64| x.to_bits();
        assert_eq!(cvt(Ty::U(32), Ty::F64, Rnd::Rzi, f(-5.0)), 0);
        assert_eq!(cvt(Ty::U(32), Ty::F64, Rnd::Rzi, f(1e20)), 0xffff_ffff);
        assert_eq!(cvt(Ty::U(64), Ty::F64, Rnd::Rzi, f(1e20)), u64::MAX);
        assert_eq!(cvt(Ty::S(64), Ty::F64, Rnd::Rni, f(2.5)), 2);
        assert_eq!(cvt(Ty::S(64), Ty::F64, Rnd::Rmi, f(-2.5)), (-3i64) as u64);
        assert_eq!(cvt(Ty::S(32), Ty::F64, Rnd::Rpi, f(2.1)), 3);
        assert_eq!(
            cvt(Ty::U(64), Ty::S(16), Rnd::None, 0x8000),
            0xffff_ffff_ffff_8000
        );
        assert_eq!(cvt(Ty::U(16), Ty::U(64), Rnd::None, 0x1_2345), 0x2345);
        assert_eq!(cvt(Ty::F64, Ty::S(32), Rnd::Rn, 0xffff_ffff), f(-1.0));
        assert_eq!(
            cvt(Ty::F32, Ty::F64, Rnd::Rn, f(0.1)),
            0.1f32.to_bits() as u64
        );
        assert_eq!(cvt(Ty::F64, Ty::F64, Rnd::Rzi, f(-2.7)), f(-2.0));
    }

    #[test]
    fn float_edges() {
        let f = |x: f64| x.to_bits();
        let nan = f64::NAN.to_bits();
        assert_eq!(f64_bin(Bin::Min, nan, nan), CANON_NAN_F64);
        assert_eq!(f64_bin(Bin::Max, f(-0.0), f(0.0)), f(0.0));
        assert_eq!(f64_bin(Bin::Min, f(0.0), f(-0.0)), f(-0.0));
        assert_eq!(f64_bin(Bin::Copysign, f(-1.0), f(2.0)), f(-2.0));
        assert!(setp(Cmp::Ltu, Ty::F64, nan, f(1.0)));
        assert!(!setp(Cmp::Lt, Ty::F64, nan, f(1.0)));
        assert!(setp(Cmp::Ne, Ty::F64, f(1.0), f(2.0)));
        assert!(!setp(Cmp::Ne, Ty::F64, nan, f(2.0)));
        assert!(setp(Cmp::Nan, Ty::F64, nan, f(2.0)));
        assert!(setp(Cmp::Lt, Ty::S(32), 0xffff_ffff, 0));
        assert!(!setp(Cmp::Lt, Ty::U(32), 0xffff_ffff, 0));
        assert_eq!(
            f32_bin(
                Bin::Add,
                f32::INFINITY.to_bits() as u64,
                f32::NEG_INFINITY.to_bits() as u64
            ),
            CANON_NAN_F32
        );
        assert_eq!(unary(Un::Neg, Ty::F64, f(0.0)), f(-0.0));
        assert_eq!(unary(Un::Abs, Ty::F64, f(-3.0)), f(3.0));
    }
}
