//! `gpu-test`: the program of the GPU bundle (`cargo xtask gpu-test` builds it into
//! `target/gpu-bundle/bin/`). It needs only an NVIDIA driver: the driver is loaded at run time,
//! kernels and images come from the bundle's folders.
//!
//! ```text
//! gpu-test probe                       GPUs present (exit 3 when none), GPU 0's sm, multiprocessors
//!                                      and whether it reads pageable host memory
//! gpu-test lookup      [--bundle DIR]  test 1: the device lookup on random tables
//! gpu-test plugin-abi  [--bundle DIR]  test 2: the CUDA plugin through its C ABI
//! gpu-test bench       [--bundle DIR] [--out DIR]   the translation benchmark
//! ```
//! `--bundle` defaults to the folder above the one holding this program.

mod bench;
mod cuda;
mod lookup;
mod measurements;
mod plot;
mod plugin_abi;

use std::path::PathBuf;
use std::process::ExitCode;

use cuda::Gpu;

/// Exit status when there is no GPU: the bundle script reports "built, not run".
const NO_GPU: u8 = 3;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("gpu-test: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

fn option(args: &[String], name: &str) -> Option<PathBuf> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(PathBuf::from)
}

fn run(args: &[String]) -> cuda::Result<ExitCode> {
    let command = args.first().map(String::as_str).unwrap_or("");
    let bundle = match option(args, "--bundle") {
        Some(dir) => dir,
        None => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            exe.parent().and_then(|bin| bin.parent()).ok_or("cannot find the bundle folder")?.to_path_buf()
        }
    };
    if !matches!(command, "probe" | "lookup" | "plugin-abi" | "bench") {
        return Err(format!("unknown command {command:?}: expected probe, lookup, plugin-abi or bench"));
    }
    let Some(gpu) = Gpu::open()? else {
        println!("no NVIDIA GPU (no libcuda.so.1, or it reports no device)");
        return Ok(ExitCode::from(NO_GPU));
    };
    let print = |lines: Vec<String>| lines.iter().for_each(|l| println!("  {l}"));
    match command {
        "probe" => {
            let count = gpu.driver.device_count().map_err(|e| e.to_string())?;
            println!(
                "{count} GPU(s); GPU 0: sm_{}, {} multiprocessors, pageable memory access: {}",
                gpu.sm,
                gpu.sms,
                if gpu.pageable_memory { "yes" } else { "no" }
            )
        }
        "lookup" => print(lookup::run(&gpu, &bundle)?),
        "plugin-abi" => print(plugin_abi::run(&gpu, &bundle)?),
        _ => {
            let out = option(args, "--out").unwrap_or_else(|| bundle.join("results"));
            let rows = bench::run(&gpu, &bundle)?;
            let release = bundle.join("kernels/llvm_lookup.release");
            let llvm = std::fs::read_to_string(&release)
                .map_err(|e| format!("cannot read {}: {e}", release.display()))?;
            print!("{}", bench::write(&rows, llvm.trim(), &out)?);
            println!("written: {}/gpu_bench.{{txt,csv,png}}", out.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}
