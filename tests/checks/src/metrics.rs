//! Static metrics of the translation on every built sm (no GPU needed): registers and SASS
//! instruction count of our `__kmpc_target_translate_fptr` next to LLVM 19's
//! `__llvm_omp_indirect_call_lookup` (from Debian's DeviceRTL bitcode of the same sm), both
//! compiled the same way (`llc-19 -O3`, `ptxas -c` of CUDA 11.8) and read with `cuobjdump`.
//! Ours must not use more registers: the function is inlined into, or called from, user kernels.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::gpu_bundle::{llvm_lookup_bitcode, LLVM_LOOKUP};
use crate::images::{self, TRANSLATE};
use crate::tools::Tools;

/// Registers and SASS instructions of one function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metrics {
    /// `cuobjdump -elf`'s register count.
    pub registers: u32,
    /// Instructions in `cuobjdump -sass`, the trailing `BRA` self-loop and `NOP` padding excluded.
    pub instructions: u32,
}

/// Compiles both functions for `sm` under `work` and measures them: (ours, LLVM's).
pub fn measure(tools: &Tools, dist: &Dist, sm: &str, work: &Path) -> Result<(Metrics, Metrics)> {
    fs::create_dir_all(work)?;
    let llvm_bc = llvm_lookup_bitcode(tools, sm, work)?;
    let mut measured = Vec::new();
    for (name, bitcode, function) in
        [("ours", dist.nvptx_dir(sm).join("device_rtl.bc"), TRANSLATE), ("llvm19", llvm_bc, LLVM_LOOKUP)]
    {
        let ptx = work.join(format!("{name}.ptx"));
        tools.compile_ptx(&bitcode, sm, &ptx)?;
        let cubin = work.join(format!("{name}.cubin"));
        cmd::output(
            Command::new(tools.ptxas()).arg(format!("-arch={sm}")).arg("-c").arg("-o").arg(&cubin).arg(&ptx),
        )?;
        let sass = cmd::stdout(Command::new(tools.cuobjdump()).arg("-sass").arg(&cubin))?;
        measured.push(Metrics {
            registers: images::function_registers(tools, &cubin, function)?,
            instructions: instructions(&sass, function)
                .with_context(|| format!("{}: no SASS for {function}", cubin.display()))?,
        });
    }
    Ok((measured[0], measured[1]))
}

/// Instructions of `function` in `cuobjdump -sass` (lines `/*0010*/ OP ... ;` after its
/// `Function : <name>` header), without the end-of-function `BRA` to itself and `NOP` padding.
fn instructions(sass: &str, function: &str) -> Option<u32> {
    let header = format!("Function : {function}");
    let start = sass.lines().position(|l| l.trim() == header)?;
    let body: Vec<&str> =
        sass.lines().skip(start + 1).take_while(|l| !l.trim_start().starts_with("Function :")).collect();
    let ops: Vec<&str> = body
        .iter()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix("/*")?;
            let (offset, op) = rest.split_once("*/")?;
            (offset.len() == 4 && offset.chars().all(|c| c.is_ascii_hexdigit())).then_some(op.trim())
        })
        .collect();
    let mut n = ops.len();
    while n > 0 && (ops[n - 1].starts_with("NOP") || ops[n - 1].starts_with("BRA")) {
        n -= 1;
    }
    Some(n as u32)
}

/// Measures every sm, writes `target/bench/static_metrics.csv`, fails if ours uses more
/// registers than LLVM's anywhere. Returns the summary line.
pub fn run(workspace: &Path, tools: &Tools, dist: &Dist, sms: &[String]) -> Result<String> {
    let mut csv = String::from("sm,function,registers,sass_instructions\n");
    let mut summary = Vec::new();
    for sm in sms {
        let (ours, llvm) = measure(tools, dist, sm, &workspace.join("target/metrics").join(sm))?;
        let _ = writeln!(csv, "{sm},{TRANSLATE},{},{}", ours.registers, ours.instructions);
        let _ = writeln!(csv, "{sm},{LLVM_LOOKUP},{},{}", llvm.registers, llvm.instructions);
        ensure!(
            ours.registers <= llvm.registers,
            "{sm}: {TRANSLATE} uses {} registers, LLVM 19's {LLVM_LOOKUP} {}",
            ours.registers,
            llvm.registers
        );
        summary.push(format!(
            "{sm}: ours {} regs / {} SASS, LLVM 19 {} regs / {} SASS",
            ours.registers, ours.instructions, llvm.registers, llvm.instructions
        ));
    }
    let dir = workspace.join("target/bench");
    fs::create_dir_all(&dir)?;
    fs::write(dir.join("static_metrics.csv"), csv)?;
    Ok(summary.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SASS: &str = "\
\tcode for sm_90
\t\tFunction : f
\t.headerflags\t@\"EF_CUDA_SM90\"
        /*0000*/                   ISETP.NE.U32.AND P0, PT, R4, RZ, PT ;  /* 0x000000ff0400720c */
                                                                          /* 0x000fda0003f05070 */
        /*0010*/               @!P0 RET.REL.NODEC R20 0x0 ;              /* 0x0000000014008950 */
        /*0020*/                   BRA 0x20;                             /* 0xfffffffc00fc7947 */
        /*0030*/                   NOP;                                  /* 0x0000000000007918 */
\t\tFunction : g
        /*0000*/                   RET.REL.NODEC R20 0x0 ;               /* 0x0000000014007950 */
";

    #[test]
    fn counts_the_named_function_without_padding() {
        assert_eq!(instructions(SASS, "f"), Some(2));
        assert_eq!(instructions(SASS, "g"), Some(1));
        assert_eq!(instructions(SASS, "h"), None);
    }

    #[test]
    fn reads_the_register_count_of_the_named_function() {
        let dump =
            "Function properties\nfunction: other(0) register count:40\nfunction: f(0) register count:24 \n";
        assert_eq!(images::registers_in_elf_dump(dump, "f"), Some(24));
        assert_eq!(images::registers_in_elf_dump(dump, "g"), None);
    }
}
