//! Static metrics of the translation on every built sm (no GPU needed): registers and SASS
//! instruction count of our `__kmpc_target_translate_fptr` next to LLVM 19's
//! `__llvm_omp_indirect_call_lookup` (from Debian's DeviceRTL bitcode of the same sm), both
//! compiled the same way (`llc-19 -O3`, `ptxas -c` of CUDA 11.8) and read with `cuobjdump`.
//! Ours must not use more registers: the function is inlined into, or called from, user kernels.
//!
//! And the hit path ([`crate::hit_path`]) on sm_90 (PTX) and gfx90a (AMDGPU assembly, both from
//! `llc-19 -O3`): instructions and dependent global loads of a translation whose key is found,
//! ours (one index probe) against LLVM's binary search of a 4K-entry table (12 rounds). Ours must
//! stay within [`HIT_PATH_LIMITS`], what it measured when the limits were set.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{ensure, Context, Result};

use crate::cmd;
use crate::dist::Dist;
use crate::hit_path::{Function, HitPath, Isa};
use crate::images::{self, TRANSLATE};
use crate::llvm_lookup::{llvm_lookup_bitcode, LLVM_LOOKUP};
use crate::offload::{OffloadTarget, Vendor};
use crate::tools::Tools;

/// Entries of the table the binary search's hit path is counted for, and its rounds.
const SEARCHED_ENTRIES: u32 = 4096;
/// The most instructions and dependent global loads our hit path may take, per target: what it
/// measured when these were set (the hit path must not grow).
pub const HIT_PATH_LIMITS: [(&str, HitPath); 2] = [
    ("sm_90", HitPath { instructions: 33, dependent_loads: 2 }),
    ("gfx90a", HitPath { instructions: 56, dependent_loads: 3 }),
];

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
        [("ours", dist.nvptx_dir(sm).join("device_rtl.bc"), TRANSLATE), ("llvm", llvm_bc, LLVM_LOOKUP)]
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

/// The hit paths of ours and of LLVM 19's lookup on `target` (`sm_90` or `gfx90a`), compiled
/// under `work`.
pub fn hit_paths(tools: &Tools, dist: &Dist, target: &str, work: &Path) -> Result<(HitPath, HitPath)> {
    fs::create_dir_all(work)?;
    let (isa, ours_bc) = if OffloadTarget::of_arch(target).vendor() == Vendor::Nvidia {
        (Isa::Ptx, dist.nvptx_dir(target).join("device_rtl.bc"))
    } else {
        (Isa::Amdgcn, dist.amdgcn_dir(target).join("device_rtl.bc"))
    };
    let llvm_bc = llvm_lookup_bitcode(tools, target, work)?;
    let mut measured = Vec::new();
    for (name, bitcode, function) in [("ours", ours_bc, TRANSLATE), ("llvm", llvm_bc, LLVM_LOOKUP)] {
        let asm = work.join(format!("{name}.{}", if isa == Isa::Ptx { "ptx" } else { "s" }));
        tools.compile_ptx(&bitcode, target, &asm)?;
        let f = Function::parse(isa, &fs::read_to_string(&asm)?, function)?;
        let loads = f.global_loads();
        let path = if name == "ours" {
            // The index probe: key and value in one 16-byte load, the last one before the loop
            // of further probes (16-byte header loads come before it).
            let wide: Vec<usize> = loads
                .iter()
                .copied()
                .filter(|&l| ["v2.u64", "dwordx4"].iter().any(|w| f.insn(l).opcode.contains(w)))
                .collect();
            let further = wide.iter().copied().find(|&l| f.in_loop(l));
            let probe = wide
                .iter()
                .copied()
                .filter(|&l| !f.in_loop(l) && further.is_none_or(|next| f.reaches(l, next)))
                .next_back()
                .with_context(|| format!("{}: no 16-byte probe", asm.display()))?;
            vec![probe]
        } else {
            let key = loads.iter().copied().find(|&l| f.in_loop(l)).context("no search loop")?;
            let value =
                loads.iter().copied().find(|&l| l > key && f.reaches(key, l)).context("no value load")?;
            let rounds = SEARCHED_ENTRIES.trailing_zeros() as usize;
            std::iter::repeat_n(key, rounds).chain([value]).collect()
        };
        measured.push(f.hit_path(&path).with_context(|| format!("{}: {function}", asm.display()))?);
    }
    Ok((measured[0], measured[1]))
}

/// Measures every sm, and the hit paths on sm_90 and gfx90a; writes
/// `target/bench/static_metrics.csv`; fails if ours uses more registers than LLVM's anywhere or
/// its hit path grew past [`HIT_PATH_LIMITS`]. Returns the summary line.
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
    csv.push_str("target,function,hit_path_instructions,dependent_global_loads\n");
    for (target, limit) in HIT_PATH_LIMITS {
        let (ours, llvm) =
            hit_paths(tools, dist, target, &workspace.join("target/metrics/hit-path").join(target))?;
        let _ = writeln!(csv, "{target},{TRANSLATE},{},{}", ours.instructions, ours.dependent_loads);
        let _ = writeln!(
            csv,
            "{target},{LLVM_LOOKUP} ({SEARCHED_ENTRIES}),{},{}",
            llvm.instructions, llvm.dependent_loads
        );
        ensure!(
            ours.instructions <= limit.instructions && ours.dependent_loads <= limit.dependent_loads,
            "{target}: the hit path grew to {} instructions and {} dependent loads (limit {} and {})",
            ours.instructions,
            ours.dependent_loads,
            limit.instructions,
            limit.dependent_loads
        );
        summary.push(format!(
            "{target} hit path: ours {} instructions / {} dependent loads, LLVM 19 at {SEARCHED_ENTRIES} entries {} / {}",
            ours.instructions, ours.dependent_loads, llvm.instructions, llvm.dependent_loads
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
