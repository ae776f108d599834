//! Parses the PTX that cudamin ships (files named in `PTX_SIM_CORPUS`,
//! separated by colons), checks that every entry decodes, and runs the
//! vector kernels. Every entry runs with its real arguments in the root
//! package's tests/gpu.rs (and a kernel crate's own in its template test),
//! which the launch ABI keeps in step with the kernels.

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

use cudamin_ptx_sim::{Device, Launch};

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
