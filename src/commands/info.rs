//! `cudamin info`: what the binary can run on. The embedded PTX (kernels, target), whether
//! a GPU answers, and if not, why, and the PTX simulator.

use super::print_json;
use cudamin::BackendChoice;
use cudamin::plumbing::gpu::ptx;
use std::io::Write;

#[derive(serde::Serialize)]
struct Info {
    version: &'static str,
    ptx_embedded: bool,
    /// Why there is no PTX, when there is none.
    ptx_reason: Option<&'static str>,
    ptx_target: Option<String>,
    kernels: Vec<String>,
    cuda_feature: bool,
    gpu: bool,
    /// The device, or the driver's reason there is none.
    gpu_reason: String,
    /// What `--backend sim` runs on, or why it cannot (no PTX embedded).
    simulator: String,
    cpu_threads: usize,
}

pub fn run(json: bool) -> anyhow::Result<()> {
    let mut out = super::stdout();
    let (kernels, ptx_target) = match cudamin::PTX {
        Ok(text) => (
            ptx::entries(text)
                .map_err(anyhow::Error::msg)?
                .into_iter()
                .map(|e| e.name)
                .collect(),
            ptx::target(text).map(str::to_owned),
        ),
        Err(_) => (Vec::new(), None),
    };
    let (gpu, gpu_reason) = match cudamin::backend(BackendChoice::Cuda) {
        Ok((_, why)) => (true, why),
        Err(err) => (false, err.to_string()),
    };
    let simulator = match cudamin::backend(BackendChoice::Simulated) {
        Ok((backend, _)) => format!(
            "--backend sim: {}; never chosen by auto",
            backend.device_summary().unwrap_or_default()
        ),
        Err(err) => err.to_string(),
    };
    let info = Info {
        version: env!("CARGO_PKG_VERSION"),
        ptx_embedded: cudamin::PTX.is_ok(),
        ptx_reason: cudamin::PTX.err(),
        ptx_target,
        kernels,
        cuda_feature: cfg!(feature = "cuda"),
        gpu,
        gpu_reason,
        simulator,
        cpu_threads: cudamin::plumbing::cpu::threads(),
    };
    if json {
        return print_json(&info);
    }
    match info.ptx_reason {
        None => writeln!(
            out,
            "PTX        embedded, target {}, {} kernels: {}",
            info.ptx_target.as_deref().unwrap_or("?"),
            info.kernels.len(),
            info.kernels.join(", ")
        )?,
        Some(why) => writeln!(out, "PTX        GPU kernels not built: {why}")?,
    }
    writeln!(
        out,
        "cuda       feature {}",
        if info.cuda_feature { "on" } else { "off" }
    )?;
    writeln!(
        out,
        "GPU        {}: {}",
        if info.gpu { "yes" } else { "no" },
        info.gpu_reason
    )?;
    writeln!(out, "simulator  {}", info.simulator)?;
    if info.gpu {
        writeln!(
            out,
            "kernels    each compiled for the device on its first launch (`eval` times it), \
             then held in the driver's compute cache"
        )?;
    }
    writeln!(out, "CPU        {} threads", info.cpu_threads)?;
    Ok(())
}
