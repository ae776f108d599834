//! A block's run: the scheduler that steps each thread to its next synchronization point,
//! performs barriers and shuffles, places and race-checks memory accesses, and turns faults
//! into errors that name the thread and the line.

use super::*;

impl BlockRun<'_> {
    /// Runs the block. `threads` is a pool reused from block to block of one
    /// launch, since register files of big kernels are costly to allocate.
    pub(super) fn run(&mut self, pbuf: &[u8], threads: &mut Vec<Thread>) -> Result<(), SimError> {
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

    pub(super) fn line_of(&self, th: &Thread) -> usize {
        let f = th.frames.last().expect("frame");
        self.module.funcs[f.func as usize].code[f.pc as usize].line as usize
    }

    pub(super) fn at(&self, th: &Thread) -> At {
        At {
            kernel: self.kernel.to_string(),
            block: self.block,
            thread: th.tid,
            line: self.line_of(th),
        }
    }

    pub(super) fn tid_of(&self, linear: u32) -> [u32; 3] {
        let [bx, by, _] = self.launch.block;
        [linear % bx, (linear / bx) % by, linear / (bx * by)]
    }

    pub(super) fn error(&self, th: &Thread, f: Fault) -> SimError {
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
    pub(super) fn hang(&self, threads: &[Thread]) -> SimError {
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
    pub(super) fn shuffles(&mut self, threads: &mut [Thread]) -> Result<bool, SimError> {
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

    pub(super) fn sregs(&self, t: &Thread) -> Sregs {
        Sregs {
            tid: t.tid,
            ntid: self.launch.block,
            ctaid: self.block,
            nctaid: self.launch.grid,
            lane: t.linear % 32,
        }
    }

    /// Decodes an address of `space` into where it lands, checking alignment.
    pub(super) fn place(&self, space: MemSpace, addr: u64, size: u32) -> Result<Place, Fault> {
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
    pub(super) fn race(
        &mut self,
        t: u32,
        line: u32,
        off: u64,
        size: u32,
        write: bool,
    ) -> Result<(), Fault> {
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
    pub(super) fn fp64(&mut self, ty: Ty, ops: u64) {
        if ty == Ty::F64
            && let Some(counting) = self.counting.as_deref_mut()
        {
            counting.counts.fp64_ops += ops;
        }
    }

    /// The bytes an access touches, after bounds and race checks.
    pub(super) fn bytes<'m>(
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
    pub(super) fn exec(&mut self, th: &mut Thread) -> Result<(), Fault> {
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
}
