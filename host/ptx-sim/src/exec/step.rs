//! One instruction executed by one thread.

use super::*;

impl BlockRun<'_> {
    /// Executes one instruction whose guard holds. Returns false when the
    /// thread stopped (exit or a synchronization point).
    ///
    /// Register definedness propagates like valgrind's: an operation on an
    /// undefined value gives an undefined value, and only a use that matters
    /// (a branch or guard, an address, a value leaving the registers) is an
    /// error. LLVM computes freely on `undef` values whose results end up
    /// unused, so flagging every read would report correct code.
    #[inline(always)]
    pub(super) fn step(&mut self, th: &mut Thread, ins: &Instr, sr: &Sregs) -> Result<bool, Fault> {
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
