//! Checks of the built artifacts: PTX text, cubins, AMDGPU code objects, bitcode, linked images.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, ensure, Context, Result};
use object::elf;
use object::read::elf::{FileHeader, SectionTable, Sym, SymbolTable};
use object::Endianness;

use crate::cmd;
use crate::llvm::Llvm;
use crate::tools::Tools;

pub use omptarget_indirect_abi::{
    DEVICE_ENVIRONMENT, FPTR_INDEX as INDEX, FPTR_MAP_P as MAP_P, FPTR_MAP_SIZE as MAP_SIZE, TRANSLATE,
};
use omptarget_indirect_abi::{EXTENDS_TYPE_OF, SAME_TYPE_AS};
/// Every global the device runtime defines, all weak.
pub const GLOBALS: [&str; 3] = [MAP_P, MAP_SIZE, INDEX];
/// The function and every global: what each image must define exactly once.
pub const SYMBOLS: [&str; 4] = [TRANSLATE, MAP_P, MAP_SIZE, INDEX];
/// Every symbol of the device library an image holds: [`SYMBOLS`] and the device environment.
pub const IMAGE_SYMBOLS: [&str; 5] = [TRANSLATE, MAP_P, MAP_SIZE, INDEX, DEVICE_ENVIRONMENT];

const EF_AMDGPU_MACH: u32 = 0x0ff;
const ELFOSABI_AMDGPU_HSA: u8 = 64;
/// `e_ident[EI_ABIVERSION]` of code object v5.
const ELFABIVERSION_AMDGPU_HSA_V5: u8 = 3;

/// The `EF_AMDGPU_MACH_*` value of `gfx`, if known (the AMDGPU plugin's table).
pub fn amdgpu_mach(gfx: &str) -> Option<u32> {
    amdgpu_hsa::code_object::mach_of_processor(gfx)
}

/// Comma-separated list of the processors [`amdgpu_mach`] knows.
pub fn known_gfxs() -> String {
    amdgpu_hsa::code_object::processors().collect::<Vec<_>>().join(", ")
}

/// The PTX declares every global `.weak .global`, the function `.visible .func`, and nothing
/// external but the DeviceRTL's device environment, in the constant space where the DeviceRTL
/// defines it (a panic path would show up as `.extern .func`).
pub fn check_ptx(path: &Path) -> Result<()> {
    let ptx = String::from_utf8(cmd::read(path)?).context("PTX is not UTF-8")?;
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    for global in GLOBALS {
        ensure!(
            lines.iter().any(|l| l.starts_with(".weak .global") && declares(l, global)),
            "{}: {global} is not declared `.weak .global`",
            path.display()
        );
    }
    ensure!(
        lines.iter().any(|l| l.starts_with(".visible .func") && l.contains(TRANSLATE)),
        "{}: {TRANSLATE} is not a `.visible .func`",
        path.display()
    );
    ensure!(
        lines.iter().any(|l| l.starts_with(".extern .const") && declares(l, DEVICE_ENVIRONMENT)),
        "{}: {DEVICE_ENVIRONMENT} is not referred to as `.extern .const` (the DeviceRTL defines it there)",
        path.display()
    );
    if let Some(ext) = lines.iter().find(|l| l.starts_with(".extern") && !declares(l, DEVICE_ENVIRONMENT)) {
        bail!("{}: external reference `{ext}`", path.display());
    }
    Ok(())
}

fn declares(line: &str, name: &str) -> bool {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|word| word == name)
}

/// Registers ptxas allocated to the translation function in `cubin` (from `cuobjdump -elf`).
pub fn cubin_registers(tools: &Tools, cubin: &Path) -> Result<u32> {
    function_registers(tools, cubin, TRANSLATE)
}

/// Registers ptxas allocated to `function` in `cubin` (from `cuobjdump -elf`).
pub fn function_registers(tools: &Tools, cubin: &Path, function: &str) -> Result<u32> {
    let dump = cmd::stdout(Command::new(tools.cuobjdump()).arg("-elf").arg(cubin))?;
    registers_in_elf_dump(&dump, function)
        .with_context(|| format!("{}: no register count for {function} in cuobjdump -elf", cubin.display()))
}

/// `register count:N` on the `function: <name>(` line of `cuobjdump -elf`'s output.
pub fn registers_in_elf_dump(dump: &str, function: &str) -> Option<u32> {
    let prefix = format!("function: {function}(");
    dump.lines()
        .filter(|l| l.contains(&prefix))
        .find_map(|l| l.split("register count:").nth(1)?.trim().parse().ok())
}

/// Binding and visibility of one ELF symbol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolInfo {
    /// `STB_*`.
    pub bind: u8,
    /// `STV_*`.
    pub visibility: u8,
    /// Defined in a section (not `SHN_UNDEF`).
    pub defined: bool,
}

/// Header fields and the named symbols of an ELF file (all definitions of each, from `.symtab`).
pub struct ElfSummary {
    /// `e_machine`.
    pub machine: u16,
    /// `e_ident[EI_OSABI]`.
    pub os_abi: u8,
    /// `e_ident[EI_ABIVERSION]`.
    pub abi_version: u8,
    /// `e_flags`.
    pub flags: u32,
    /// `(name, every symbol table entry with that name)` for each requested name.
    pub symbols: Vec<(String, Vec<SymbolInfo>)>,
}

impl ElfSummary {
    /// The entries named `name`, empty if none (or not requested).
    pub fn symbol(&self, name: &str) -> &[SymbolInfo] {
        self.symbols.iter().find(|(n, _)| n == name).map(|(_, s)| s.as_slice()).unwrap_or(&[])
    }

    /// Fails unless each of `names` is defined exactly once.
    pub fn expect_defined_once(&self, what: &str, names: &[&str]) -> Result<()> {
        for name in names {
            let defined = self.symbol(name).iter().filter(|s| s.defined).count();
            ensure!(defined == 1, "{what}: {name} is defined {defined} times, expected once");
        }
        Ok(())
    }
}

/// A 64-bit ELF file as every reader here starts it: header, byte order, sections, `.symtab`.
struct Elf<'data> {
    header: &'data elf::FileHeader64<Endianness>,
    endian: Endianness,
    sections: SectionTable<'data, elf::FileHeader64<Endianness>>,
    table: SymbolTable<'data, elf::FileHeader64<Endianness>>,
}

impl<'data> Elf<'data> {
    fn parse(data: &'data [u8]) -> Result<Self> {
        let header = elf::FileHeader64::<Endianness>::parse(data).context("not a 64-bit ELF file")?;
        let endian = header.endian()?;
        let sections = header.sections(endian, data)?;
        let table = sections.symbols(endian, data, elf::SHT_SYMTAB)?;
        Ok(Elf { header, endian, sections, table })
    }
}

/// The names of the symbols that `data`'s relocations refer to (`SHT_REL` and `SHT_RELA`): what
/// a cubin's code reads or calls, after device LTO has inlined and dropped the functions.
pub fn relocated_symbols(data: &[u8]) -> Result<std::collections::BTreeSet<String>> {
    use object::read::elf::SectionHeader as _;
    let Elf { endian, sections, table, .. } = Elf::parse(data)?;
    let mut indices = Vec::new();
    for section in sections.iter() {
        if let Some((rel, _)) = section.rel(endian, data)? {
            indices.extend(rel.iter().map(|r| r.r_sym(endian)));
        }
        if let Some((rela, _)) = section.rela(endian, data)? {
            indices.extend(rela.iter().map(|r| r.r_sym(endian, false)));
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for index in indices.into_iter().filter(|&i| i != 0) {
        let symbol = table.symbol(object::SymbolIndex(index as usize))?;
        names.insert(String::from_utf8_lossy(symbol.name(endian, table.strings())?).into_owned());
    }
    Ok(names)
}

/// What the binding tables of a linked NVPTX image's Fortran type descriptors lead to, slot by
/// slot: how many procedure slots lead to a procedure's own definition, and the names of those
/// that lead to a trap (a binding's stub, or a weak definition no other unit's copy replaced).
pub struct BindingSlots {
    /// Procedure slots that lead to a procedure's own definition.
    pub resolved: usize,
    /// The functions the other procedure slots lead to, each a trap.
    pub trapping: Vec<String>,
}

/// [`BindingSlots`] of the cubin `data`. NVPTX keeps the first copy of a type descriptor its link
/// meets (no comdats), so this reads what the link kept: each type descriptor the image defines
/// globally or weakly (`_Q...EXdtX<type>`, in `.nv.global.init`) leads, through the relocation of
/// its first word, to its binding table (a local of that section), and the relocations inside
/// the table to functions are its procedure slots.
pub fn nvptx_binding_slots(data: &[u8]) -> Result<BindingSlots> {
    use object::read::elf::{Rel as _, Rela as _, SectionHeader as _};
    let Elf { endian, sections, table, .. } = Elf::parse(data)?;
    let Some((init, _)) = sections.section_by_name(endian, b".nv.global.init") else {
        return Ok(BindingSlots { resolved: 0, trapping: Vec::new() });
    };
    // Offset in `.nv.global.init` -> the symbol its relocation names.
    let mut targets = std::collections::BTreeMap::new();
    for section in sections.iter() {
        if section.sh_info(endian) as usize != init.0 {
            continue;
        }
        if let Some((rela, _)) = section.rela(endian, data)? {
            targets.extend(rela.iter().map(|r| (r.r_offset(endian), r.r_sym(endian, false) as usize)));
        }
        if let Some((rel, _)) = section.rel(endian, data)? {
            targets.extend(rel.iter().map(|r| (r.r_offset(endian), r.r_sym(endian) as usize)));
        }
    }
    let symbol = |index: usize| table.symbol(object::SymbolIndex(index));
    let name_of = |sym: &elf::Sym64<Endianness>| -> Result<String> {
        Ok(String::from_utf8_lossy(sym.name(endian, table.strings())?).into_owned())
    };
    let mut slots = BindingSlots { resolved: 0, trapping: Vec::new() };
    for descriptor in table.iter() {
        let name = descriptor.name(endian, table.strings())?;
        let kept = matches!(descriptor.st_bind(), elf::STB_GLOBAL | elf::STB_WEAK);
        let is_descriptor = omptarget_indirect_abi::is_fortran_type_descriptor(name);
        if !kept || !is_descriptor || descriptor.st_shndx(endian) as usize != init.0 {
            continue;
        }
        let Some(&bindings) = targets.get(&descriptor.st_value(endian)) else { continue };
        let bindings = symbol(bindings)?;
        let start = bindings.st_value(endian);
        for (_, &target) in targets.range(start..start + bindings.st_size(endian)) {
            let procedure = symbol(target)?;
            if procedure.st_type() != elf::STT_FUNC {
                continue;
            }
            let procedure_name = name_of(procedure)?;
            // NVPTX spells the stub's dots `_$_`: its stem is what both spellings share.
            if procedure_name.starts_with(omptarget_indirect_abi::UNBOUND_BINDING_STUB)
                || procedure.st_bind() == elf::STB_WEAK
            {
                slots.trapping.push(procedure_name);
            } else {
                slots.resolved += 1;
            }
        }
    }
    Ok(slots)
}

/// Parses a 64-bit ELF file and collects the symbols named in `names`.
pub fn elf_summary(data: &[u8], names: &[&str]) -> Result<ElfSummary> {
    let Elf { header, endian, table, .. } = Elf::parse(data)?;
    let mut symbols: Vec<(String, Vec<SymbolInfo>)> =
        names.iter().map(|n| (n.to_string(), Vec::new())).collect();
    for sym in table.iter() {
        let name = sym.name(endian, table.strings())?;
        if let Some((_, found)) = symbols.iter_mut().find(|(n, _)| n.as_bytes() == name) {
            found.push(SymbolInfo {
                bind: sym.st_bind(),
                visibility: sym.st_visibility(),
                defined: sym.st_shndx(endian) != elf::SHN_UNDEF,
            });
        }
    }
    let ident = header.e_ident();
    Ok(ElfSummary {
        machine: header.e_machine(endian),
        os_abi: ident.os_abi,
        abi_version: ident.abi_version,
        flags: header.e_flags(endian),
        symbols,
    })
}

/// The dispatch tables (vtables, construction vtables, Fortran type descriptors:
/// [`omptarget_indirect_abi::is_dispatch_table`]) an ELF image defines: what a device image must
/// hold for virtual and type-bound calls on objects the host built.
pub fn defined_vtables(data: &[u8]) -> Result<Vec<String>> {
    let Elf { endian, table, .. } = Elf::parse(data)?;
    let mut found = Vec::new();
    for sym in table.iter() {
        let name = sym.name(endian, table.strings())?;
        if omptarget_indirect_abi::is_dispatch_table(name) && sym.st_shndx(endian) != elf::SHN_UNDEF {
            found.push(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(found)
}

/// The symbols `data` (an ELF file) uses without defining them, weak references left out: what
/// its link or its loader must find elsewhere.
pub fn undefined_symbols(data: &[u8]) -> Result<std::collections::BTreeSet<String>> {
    symbols_where(data, |defined, bind| !defined && bind == elf::STB_GLOBAL)
}

/// The global and weak symbols `data` (an ELF file) defines.
pub fn defined_symbols(data: &[u8]) -> Result<std::collections::BTreeSet<String>> {
    symbols_where(data, |defined, bind| defined && matches!(bind, elf::STB_GLOBAL | elf::STB_WEAK))
}

/// The named symbols of `data` for which `wanted(defined, binding)` holds.
fn symbols_where(
    data: &[u8],
    wanted: impl Fn(bool, u8) -> bool,
) -> Result<std::collections::BTreeSet<String>> {
    let Elf { endian, table, .. } = Elf::parse(data)?;
    let mut found = std::collections::BTreeSet::new();
    for sym in table.iter() {
        let name = sym.name(endian, table.strings())?;
        if !name.is_empty() && wanted(sym.st_shndx(endian) != elf::SHN_UNDEF, sym.st_bind()) {
            found.insert(String::from_utf8_lossy(name).into_owned());
        }
    }
    Ok(found)
}

/// What a GPU's device link resolves, read from the real libraries: every symbol LLVM 22's nvptx
/// DeviceRTL defines, the C math functions libdevice defines (`__nv_sin` for `sin`), and CUDA's
/// PTX system calls (`malloc`, `free`, `vprintf`, `__assertfail`). An x86_64 device image that
/// needs anything else would not link for a GPU, though it loads on the x86_64 device (the host
/// process resolves it).
pub struct GpuProvided(std::collections::BTreeSet<String>);

impl GpuProvided {
    /// Reads the symbol tables of the newest release's DeviceRTL and of libdevice with that
    /// release's `llvm-nm`.
    pub fn read(tools: &Tools) -> Result<GpuProvided> {
        let newest = tools.of(Llvm::reference());
        let llvm_nm = newest.llvm_nm.as_deref().context("the newest release's llvm-nm is not listed")?;
        let device_rtl =
            newest.device_rtl.as_deref().context("the newest release has no DeviceRTL built from source")?;
        let defined = |bitcode: &Path| -> Result<Vec<String>> {
            let listing = cmd::stdout(
                Command::new(llvm_nm).args(["--defined-only", "--just-symbol-name"]).arg(bitcode),
            )?;
            Ok(listing.lines().map(str::to_string).collect())
        };
        let mut names: std::collections::BTreeSet<String> =
            ["malloc", "free", "vprintf", "__assertfail"].iter().map(|s| s.to_string()).collect();
        names.extend(defined(&device_rtl.join("nvptx64-nvidia-cuda/libomptarget-nvptx.bc"))?);
        for name in defined(&tools.cuda.join("nvvm/libdevice/libdevice.10.bc"))? {
            if let Some(c_name) = name.strip_prefix("__nv_") {
                names.insert(c_name.to_string());
            }
        }
        Ok(GpuProvided(names))
    }

    /// What of `undefined` (an x86_64 device image's [`undefined_symbols`]) a GPU would not
    /// provide. What code generation for the x86_64 device alone asks for is left out, as GPU
    /// compiles ask for their own flavours instead: the host OpenMP runtime's entry points
    /// (`__kmpc_fork_call`, `__kmpc_reduce_nowait`, ...: GPU code calls the DeviceRTL's
    /// `__kmpc_parallel_51`), exception handling (GPU compiles have none), the C++ ABI's
    /// type-info vtables (`_ZTVN10__cxxabiv1...`: RTTI), the global `operator new` and `delete`
    /// (clang's OpenMP `<new>` defines them in GPU compiles), `memcpy`, `memmove` and `memset`
    /// (inline code on GPUs) and `dprintf` (the trap stub's message).
    pub fn missing<'a>(&self, undefined: &'a std::collections::BTreeSet<String>) -> Vec<&'a str> {
        const X86_64_ONLY: &[&str] = &[
            "__gxx_personality_v0",
            "__cxa_begin_catch",
            "__cxa_end_catch",
            "__cxa_bad_cast",
            "_ZSt9terminatev",
            "_Unwind_Resume",
            "memcpy",
            "memmove",
            "memset",
            "dprintf",
        ];
        undefined
            .iter()
            .map(|name| name.split('@').next().unwrap_or(name))
            .filter(|name| !self.0.contains(*name))
            .filter(|name| {
                let allocation = ["_Znw", "_Zna", "_Zdl", "_Zda"].iter().any(|p| name.starts_with(p));
                !(name.starts_with("__kmpc_")
                    || name.starts_with("_ZTVN10__cxxabiv1")
                    || allocation
                    || X86_64_ONLY.contains(name))
            })
            .collect()
    }
}

/// An amdgcn object of ours: AMDGPU machine, HSA code object v5, `gfx` in `e_flags`, both
/// globals weak and not hidden, the function global, and code with no calls and no stack.
pub fn check_amdgcn_object(tools: &Tools, path: &Path, gfx: &str) -> Result<String> {
    let what = path.display();
    let elf = elf_summary(&cmd::read(path)?, &IMAGE_SYMBOLS)?;
    ensure!(elf.machine == elf::EM_AMDGPU, "{what}: e_machine {} is not EM_AMDGPU (224)", elf.machine);
    ensure!(elf.os_abi == ELFOSABI_AMDGPU_HSA, "{what}: OS/ABI {} is not AMDGPU_HSA", elf.os_abi);
    ensure!(
        elf.abi_version == ELFABIVERSION_AMDGPU_HSA_V5,
        "{what}: ABI version {} is not code object v5 (3)",
        elf.abi_version
    );
    let want = amdgpu_mach(gfx).with_context(|| format!("unknown processor {gfx}"))?;
    let mach = elf.flags & EF_AMDGPU_MACH;
    ensure!(mach == want, "{what}: e_flags processor {mach:#x}, expected {gfx} ({want:#x})");
    // Cross-check the table above against LLVM's own decoding of the flags.
    let header = cmd::stdout(Command::new(&tools.llvm_readelf).arg("-h").arg(path))?;
    ensure!(
        header.lines().any(|l| l.trim_start().starts_with("Flags:") && declares(l, gfx)),
        "{what}: llvm-readelf does not decode the flags as {gfx}"
    );
    for global in GLOBALS {
        match elf.symbol(global) {
            [s] if s.defined && s.bind == elf::STB_WEAK && s.visibility != elf::STV_HIDDEN => {}
            found => bail!("{what}: {global} must be one weak, non-hidden definition, found {found:?}"),
        }
    }
    match elf.symbol(TRANSLATE) {
        [s] if s.defined && s.bind == elf::STB_GLOBAL && s.visibility != elf::STV_HIDDEN => {}
        found => bail!("{what}: {TRANSLATE} must be one global, non-hidden definition, found {found:?}"),
    }
    match elf.symbol(DEVICE_ENVIRONMENT) {
        [s] if !s.defined => {}
        found => bail!("{what}: {DEVICE_ENVIRONMENT} must be referred to, not defined (the DeviceRTL defines it), found {found:?}"),
    }
    // A call (s_swappc/s_call) would make the backend assume recursion and a dynamic stack, in
    // any function; a scratch or buffer access means the function uses private memory, which the
    // translation (on every indirect call's path) must not. Fortran's type inquiries may: the
    // backend sizes their fixed stack as it does any spill.
    let asm = cmd::stdout(Command::new(&tools.llvm_objdump).args(["-d", "--no-show-raw-insn"]).arg(path))?;
    let mut function = String::new();
    for line in asm.lines() {
        if let Some(label) = line.strip_suffix(">:").and_then(|l| l.split_once(" <")) {
            function = label.1.to_string();
            continue;
        }
        let may_spill = [SAME_TYPE_AS, EXTENDS_TYPE_OF].contains(&function.as_str());
        let forbidden: &[&str] = if may_spill {
            &["s_swappc", "s_call_b64"]
        } else {
            &["s_swappc", "s_call_b64", "scratch_", "buffer_"]
        };
        if forbidden.iter().any(|f| line.contains(f)) {
            bail!("{what}: {function} uses calls or private memory: `{}`", line.trim());
        }
    }
    Ok(format!(
        "EM_AMDGPU, code object v5, {gfx} ({want:#x}), weak visible globals, no calls, no stack in the translation"
    ))
}

/// LLVM 19 reads the bitcode, and it defines the function and every global; it defines the
/// device environment weakly where `defines_environment` (x86_64), else only declares it.
pub fn check_bitcode(tools: &Tools, path: &Path, defines_environment: bool) -> Result<()> {
    let ir = cmd::stdout(Command::new(&tools.llvm_dis).arg(path).arg("-o").arg("-"))?;
    let linkage = if defines_environment { "weak" } else { "external" };
    ensure!(
        ir.lines().any(|l| l.starts_with(&format!("@{DEVICE_ENVIRONMENT} = {linkage} "))),
        "{}: @{DEVICE_ENVIRONMENT} is not `{linkage}`",
        path.display()
    );
    for global in GLOBALS {
        ensure!(
            ir.lines().any(|l| l.starts_with(&format!("@{global} = weak "))),
            "{}: no weak definition of @{global}",
            path.display()
        );
    }
    ensure!(
        ir.lines().any(|l| l.starts_with("define ") && l.contains(&format!("@{TRANSLATE}("))),
        "{}: no definition of @{TRANSLATE}",
        path.display()
    );
    Ok(())
}

/// The offload symbols of a device image, sorted by name.
pub struct OffloadSymbols {
    /// 8-byte global objects clang 19 made for `declare target indirect` functions
    /// (`__omp_offloading_<id>_<function>_l<line>`, holding the function's device address).
    pub indirect: Vec<String>,
    /// Kernels (`__omp_offloading_<id>_<function>_l<line>`).
    pub kernels: Vec<String>,
}

/// Reads [`OffloadSymbols`] from a cubin's `.symtab`: our globals are excluded, and so are
/// the kernels' environment objects (which are not 8 bytes and not global).
pub fn offload_symbols(data: &[u8]) -> Result<OffloadSymbols> {
    let Elf { endian, table, .. } = Elf::parse(data)?;
    let mut found = OffloadSymbols { indirect: Vec::new(), kernels: Vec::new() };
    for sym in table.iter() {
        let name = String::from_utf8_lossy(sym.name(endian, table.strings())?).into_owned();
        if !name.starts_with("__omp_offloading_") || GLOBALS.contains(&name.as_str()) {
            continue;
        }
        let defined = sym.st_shndx(endian) != elf::SHN_UNDEF;
        match sym.st_type() {
            elf::STT_FUNC if defined => found.kernels.push(name),
            elf::STT_OBJECT if defined && sym.st_bind() == elf::STB_GLOBAL && sym.st_size(endian) == 8 => {
                found.indirect.push(name)
            }
            _ => {}
        }
    }
    found.indirect.sort();
    found.kernels.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD_PTX: &str = "\
.version 7.8
.target sm_90
.weak .global .align 8 .b8 __omp_offloading_fptr_map_p[8];
.weak .global .align 8 .b8 __omp_offloading_fptr_map_size[8];
.weak .global .align 8 .b8 __omp_offloading_fptr_index[48];
.extern .const .align 8 .b8 __omp_rtl_device_environment[48];
.visible .func  (.param .b64 func_retval0) __kmpc_target_translate_fptr(
";

    /// Writes `ptx` to a file of its own (tests run in parallel in one process, so neither the
    /// name nor the directory may be shared between calls) and checks it.
    fn check_text(ptx: &str) -> Result<()> {
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("xtask-ptx-{}-{call}.ptx", std::process::id()));
        std::fs::write(&path, ptx)?;
        let result = check_ptx(&path);
        let _ = std::fs::remove_file(&path);
        result
    }

    #[test]
    fn ptx_check_accepts_the_expected_declarations() {
        check_text(GOOD_PTX).unwrap();
    }

    #[test]
    fn ptx_check_rejects_external_calls_and_strong_globals() {
        let with_extern = format!("{GOOD_PTX}.extern .func _ZN4core9panicking18panic_bounds_check();\n");
        assert!(check_text(&with_extern).unwrap_err().to_string().contains("external reference"));
        let strong = GOOD_PTX.replace(
            ".weak .global .align 8 .b8 __omp_offloading_fptr_map_size",
            ".visible .global .align 8 .b8 __omp_offloading_fptr_map_size",
        );
        assert!(check_text(&strong).is_err());
        let hidden_fn = GOOD_PTX.replace(".visible .func", ".func");
        assert!(check_text(&hidden_fn).is_err());
        // A prefix of a name does not count as the name.
        let prefix = GOOD_PTX.replace("__omp_offloading_fptr_map_p[8]", "__omp_offloading_fptr_map_px[8]");
        assert!(check_text(&prefix).is_err());
        let no_index = GOOD_PTX.replace(".weak .global .align 8 .b8 __omp_offloading_fptr_index[48];\n", "");
        assert!(check_text(&no_index).unwrap_err().to_string().contains("__omp_offloading_fptr_index"));
        // The DeviceRTL's environment: referred to in the constant space, never defined or
        // referred to in another space (nvlink refuses that).
        let global_space = GOOD_PTX.replace(".extern .const", ".extern .global");
        assert!(check_text(&global_space).unwrap_err().to_string().contains(DEVICE_ENVIRONMENT));
        let defined = GOOD_PTX.replace(".extern .const", ".weak .const");
        assert!(check_text(&defined).unwrap_err().to_string().contains(DEVICE_ENVIRONMENT));
    }

    #[test]
    fn amdgpu_processor_table_knows_the_defaults() {
        for gfx in packaging::target_record::AMD.default_archs {
            assert!(amdgpu_mach(gfx).is_some(), "{gfx}");
        }
        assert_eq!(amdgpu_mach("gfx90a"), Some(0x3f));
        assert_eq!(amdgpu_mach("gfx9000"), None);
    }
}
