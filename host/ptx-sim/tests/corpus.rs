//! Parses the PTX that cudamin ships (files named in `PTX_SIM_CORPUS`,
//! separated by colons) and checks that every entry decodes.

use cudamin_ptx_sim::Module;

#[test]
#[ignore = "needs PTX_SIM_CORPUS"]
fn corpus_parses() {
    let files = std::env::var("PTX_SIM_CORPUS").expect("PTX_SIM_CORPUS names PTX files");
    let mut total = 0;
    for path in files.split(':').filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(path).expect("corpus file readable");
        let module = Module::parse(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
        let n = module.entries().count();
        for e in module.entries() {
            assert!(module.params(e).is_some());
        }
        println!("{path}: {n} entries decoded");
        assert!(n > 0, "{path} has no entries");
        total += n;
    }
    println!("{total} entries in all");
}

fn corpus_module() -> Option<std::sync::Arc<Module>> {
    let files = std::env::var("PTX_SIM_CORPUS").ok()?;
    let path = files.split(':').find(|p| p.ends_with("kernels.ptx"))?;
    let text = std::fs::read_to_string(path).ok()?;
    Some(std::sync::Arc::new(Module::parse(&text).expect("parses")))
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn read_f64s(dev: &Device, addr: u64, n: usize) -> Vec<f64> {
    let mut b = vec![0u8; n * 8];
    dev.read(addr, &mut b).expect("read");
    b.chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

use cudamin_ptx_sim::{Device, Launch, SimError};

fn launch(grid: u32, block: u32) -> Launch {
    Launch {
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        dynamic_shared_bytes: 0,
        max_threads_per_block: 1024,
    }
}

/// Runs cudamin's vector kernels on small inputs and checks the results.
#[test]
#[ignore = "needs PTX_SIM_CORPUS"]
fn corpus_vector_kernels_run() {
    let module = corpus_module().expect("PTX_SIM_CORPUS names kernels.ptx");
    let mut dev = Device::new(module);
    let n = 1000usize;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    let y: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
    let dx = dev.alloc(n * 8);
    let dy = dev.alloc(n * 8);
    dev.write(dx, &f64s(&x)).expect("write");
    dev.write(dy, &f64s(&y)).expect("write");
    let nb = (n as u64).to_le_bytes();
    // y += 2 x
    let a = 2.0f64.to_le_bytes();
    let (px, py) = (dx.to_le_bytes(), dy.to_le_bytes());
    let start = std::time::Instant::now();
    let before = dev.instructions();
    dev.launch("cudamin_axpy", launch(4, 128), &[&nb, &a, &px, &py])
        .unwrap_or_else(|e| panic!("{e}"));
    let got = read_f64s(&dev, dy, n);
    for i in 0..n {
        assert_eq!(got[i], y[i] + 2.0 * x[i], "axpy[{i}]");
    }
    // Partial dot products, one per block, then their sum.
    let blocks = 3u32;
    let dp = dev.alloc(blocks as usize * 8);
    let pp = dp.to_le_bytes();
    dev.launch(
        "cudamin_dot_partials",
        launch(blocks, 256),
        &[&nb, &px, &px, &pp],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let partials = read_f64s(&dev, dp, blocks as usize);
    let total: f64 = partials.iter().sum();
    let want: f64 = x.iter().map(|v| v * v).sum();
    assert!((total - want).abs() <= 1e-9 * want, "{total} vs {want}");
    let ds = dev.alloc(8);
    let bb = (blocks as u64).to_le_bytes();
    let one = 1u64.to_le_bytes();
    let ps = ds.to_le_bytes();
    dev.launch(
        "cudamin_sum_partial_rows",
        launch(1, 32),
        &[&pp, &bb, &one, &ps],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let s = read_f64s(&dev, ds, 1)[0];
    assert!((s - want).abs() <= 1e-9 * want, "{s} vs {want}");
    let count = dev.instructions() - before;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{count} instructions in {secs:.3} s: {:.1} M instructions/s",
        count as f64 / secs / 1e6
    );
    assert_eq!(dev.executed().len(), 3);
}

/// Launches every entry of the corpus with made-up arguments: each pointer
/// gets its own 256 KiB buffer of small positive numbers, each integer a
/// small count, each float 0.5. The kernels' real argument meanings are the
/// host's business; this catches what the simulator cannot execute and what
/// the checks say about the kernels themselves. Prints one line per failure.
#[test]
#[ignore = "needs PTX_SIM_CORPUS"]
fn corpus_every_entry_runs_on_made_up_arguments() {
    let files = std::env::var("PTX_SIM_CORPUS").expect("PTX_SIM_CORPUS names PTX files");
    let mut failures = Vec::new();
    let mut traps = Vec::new();
    let mut runs = 0;
    for path in files.split(':').filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(path).expect("corpus file readable");
        let module = std::sync::Arc::new(Module::parse(&text).expect("parses"));
        let decls: Vec<(String, bool)> = text
            .lines()
            .filter(|l| l.trim_start().starts_with(".param"))
            .map(|l| {
                let name = l
                    .trim()
                    .trim_end_matches(',')
                    .split_whitespace()
                    .last()
                    .unwrap_or("");
                (name.to_string(), l.contains(".ptr"))
            })
            .collect();
        let is_ptr = |n: &str| decls.iter().any(|(d, p)| d == n && *p);
        let is_f64 = |n: &str| {
            text.lines()
                .any(|l| l.contains(".param .f64") && l.trim().trim_end_matches(',').ends_with(n))
        };
        let entries: Vec<String> = module.entries().map(str::to_string).collect();
        for entry in entries {
            let mut dev = Device::new(module.clone());
            let params = module.params(&entry).expect("entry").to_vec();
            let mut args: Vec<Vec<u8>> = Vec::new();
            let buffer = |dev: &mut Device| {
                let n = 32 * 1024;
                let a = dev.alloc(n * 8);
                let vals: Vec<f64> = (0..n).map(|i| 0.5 + (i % 7) as f64 * 0.25).collect();
                dev.write(a, &f64s(&vals)).expect("write");
                a
            };
            for p in &params {
                if is_ptr(&p.name) {
                    args.push(buffer(&mut dev).to_le_bytes().to_vec());
                } else if p.size_bytes == 16 {
                    // A by-value slice: pointer and length.
                    let mut b = buffer(&mut dev).to_le_bytes().to_vec();
                    b.extend(4u64.to_le_bytes());
                    args.push(b);
                } else if is_f64(&p.name) {
                    args.push(0.5f64.to_le_bytes()[..p.size_bytes].to_vec());
                } else {
                    // Counts of 4 (by-value aggregates get 4 in every word).
                    let words = 4u64.to_le_bytes().repeat(p.size_bytes.div_ceil(8));
                    args.push(words[..p.size_bytes].to_vec());
                }
            }
            let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            runs += 1;
            match dev.launch(&entry, launch(2, 256), &refs) {
                Ok(()) => {}
                // Made-up sizes trip the kernels' own argument checks
                // (Rust panics become `trap`); that is the kernel working.
                Err(e @ SimError::Trap { .. }) => traps.push(format!("{path}: {e}")),
                Err(e) => failures.push(format!("{path}: {e}")),
            }
        }
    }
    for f in &traps {
        println!("trap {f}");
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    println!(
        "{} of {runs} entries ran cleanly, {} trapped",
        runs - failures.len() - traps.len(),
        traps.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Interpretation speed on a corpus kernel (run with `--release`).
#[test]
#[ignore = "needs PTX_SIM_CORPUS"]
fn corpus_speed() {
    let module = corpus_module().expect("PTX_SIM_CORPUS names kernels.ptx");
    let mut dev = Device::new(module);
    let n = 1 << 20;
    let x: Vec<f64> = (0..n).map(|i| (i % 13) as f64 * 0.5).collect();
    let dx = dev.alloc(n * 8);
    dev.write(dx, &f64s(&x)).expect("write");
    let blocks = 80u32;
    let dp = dev.alloc(blocks as usize * 8);
    let (nb, px, pp) = ((n as u64).to_le_bytes(), dx.to_le_bytes(), dp.to_le_bytes());
    let start = std::time::Instant::now();
    dev.launch(
        "cudamin_dot_partials",
        launch(blocks, 256),
        &[&nb, &px, &px, &pp],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let secs = start.elapsed().as_secs_f64();
    let total: f64 = read_f64s(&dev, dp, blocks as usize).iter().sum();
    let want: f64 = x.iter().map(|v| v * v).sum();
    assert!((total - want).abs() <= 1e-12 * want, "{total} vs {want}");
    let count = dev.instructions();
    println!(
        "cudamin_dot_partials, 2^20 elements, 80 x 256 threads: {count} instructions in {secs:.3} s = {:.1} M instructions/s",
        count as f64 / secs / 1e6
    );
}

/// Launches every term entry (`(x, n, data, data_len, data_rows, out,
/// values)`) over 600 data rows, so that reductions run with many active
/// warps, searching for an `n` and a row width the term accepts (a term
/// rejects others with `trap`). Reports which entries found none. With
/// `PTX_SIM_STRICT` set, every read of an undefined register counts.
#[test]
#[ignore = "needs PTX_SIM_CORPUS"]
fn corpus_term_entries_run_with_many_rows() {
    let files = std::env::var("PTX_SIM_CORPUS").expect("PTX_SIM_CORPUS names PTX files");
    let rows = 600u64;
    let mut clean = 0;
    let mut never = Vec::new();
    let mut failures = Vec::new();
    for path in files.split(':').filter(|p| !p.is_empty()) {
        let text = std::fs::read_to_string(path).expect("corpus file readable");
        let module = std::sync::Arc::new(Module::parse(&text).expect("parses"));
        let entries: Vec<String> = module
            .entries()
            .filter(|e| module.params(e).map(<[_]>::len) == Some(7))
            .map(str::to_string)
            .collect();
        let strict = std::env::var_os("PTX_SIM_STRICT").is_some();
        'entry: for entry in entries {
            for n in 1..=12u64 {
                for width in 1..=6u64 {
                    let mut dev = Device::new(module.clone());
                    dev.set_strict_registers(strict);
                    let mut buf = |len: u64| {
                        let a = dev.alloc(len as usize * 8);
                        let vals: Vec<f64> =
                            (0..len).map(|i| 0.5 + (i % 7) as f64 * 0.125).collect();
                        dev.write(a, &f64s(&vals)).expect("write");
                        a
                    };
                    let x = buf(n);
                    let data = buf(rows * width);
                    let out = buf(3 * (n * n + n));
                    let values = buf(3);
                    let args = [
                        x.to_le_bytes(),
                        n.to_le_bytes(),
                        data.to_le_bytes(),
                        (rows * width).to_le_bytes(),
                        rows.to_le_bytes(),
                        out.to_le_bytes(),
                        values.to_le_bytes(),
                    ];
                    let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
                    match dev.launch(&entry, launch(3, 256), &refs) {
                        Ok(()) => {
                            clean += 1;
                            continue 'entry;
                        }
                        Err(SimError::Trap { .. }) => {}
                        Err(e) => {
                            failures.push(format!("{entry} (n {n}, width {width}): {e}"));
                            continue 'entry;
                        }
                    }
                }
            }
            never.push(entry);
        }
    }
    println!("{clean} term entries ran cleanly over {rows} rows");
    println!("no accepted shape found for: {never:?}");
    for f in &failures {
        println!("FAIL {f}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
