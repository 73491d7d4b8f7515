//! The AMDGPU plugin's assumptions (this crate's code objects and dispatch layouts), checked against the code objects clang 19 really writes (the
//! end-to-end programs' gfx90a images): the target ID the plugin matches agents with, each
//! kernel's descriptor symbol and OpenMP environment, the segment sizes HSA will report from the
//! descriptor, and the kernel argument layout `dispatch::kernarg_segment` fills (compared with
//! the code object metadata's own offsets for every `hidden_*` argument it sets).

use std::mem::offset_of;
use std::path::{Path, PathBuf};
use std::process::Command;

use amdgpu_hsa::code_object;
use amdgpu_hsa::dispatch::{self, Geometry, ImplicitArgs};
use anyhow::{bail, ensure, Context, Result};
use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym};
use object::Endianness;
use plugin_core::environment::{
    DeviceMemoryPool, DeviceMemoryPoolTracking, KernelConfig, DEVICE_ENVIRONMENT,
    DEVICE_ENVIRONMENT_V19_SIZE, DEVICE_MEMORY_POOL, DEVICE_MEMORY_POOL_TRACKER, KERNEL_ENVIRONMENT_SIZE,
};

/// The images to check, `:`-separated (`scripts/test.sh` sets it once it has built them).
const IMAGES_ENV: &str = "OMPTARGET_INDIRECT_GFX90A_IMAGES";
/// `llvm-readelf` of LLVM 19, which prints the code object metadata.
const READELF_ENV: &str = "OMPTARGET_INDIRECT_LLVM_READELF";

#[test]
#[ignore = "needs the end-to-end programs' gfx90a images: scripts/test.sh builds them and runs this"]
fn clang_gfx90a_images_meet_the_plugins_assumptions() {
    let images = std::env::var_os(IMAGES_ENV).unwrap_or_else(|| panic!("set {IMAGES_ENV}"));
    let readelf = PathBuf::from(std::env::var_os(READELF_ENV).unwrap_or_else(|| panic!("set {READELF_ENV}")));
    let images: Vec<PathBuf> = std::env::split_paths(&images).collect();
    assert!(!images.is_empty(), "{IMAGES_ENV} names no image");
    let mut reductions = 0;
    for image in &images {
        reductions += check_image(&readelf, image).unwrap_or_else(|e| panic!("{e:#}"));
    }
    assert!(reductions > 0, "no gfx90a kernel declares a cross-team reduction (tests/e2e/table.c has one)");
    println!("checked {} images; kernels with a reduction buffer: {reductions}", images.len());
}

/// One argument of a kernel's metadata.
#[derive(Debug, Default, Clone)]
struct Arg {
    offset: usize,
    size: usize,
    value_kind: String,
}

/// What the code object metadata says about one kernel.
#[derive(Debug, Default, Clone)]
struct KernelMeta {
    name: String,
    symbol: String,
    kernarg_segment_size: usize,
    group_segment_fixed_size: u32,
    private_segment_fixed_size: u32,
    args: Vec<Arg>,
}

/// Parses the `amdhsa.kernels` list of `llvm-readelf --notes` (YAML: kernels at indent 2, their
/// keys at 4, arguments at 6, argument keys at 8).
fn parse_kernels(notes: &str) -> Result<Vec<KernelMeta>> {
    let mut kernels: Vec<KernelMeta> = Vec::new();
    for line in notes.lines() {
        let indent = line.len() - line.trim_start().len();
        let text = line.trim_start();
        let (is_item, text) = match text.strip_prefix("- ") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let Some((key, value)) = text.split_once(':') else { continue };
        let value = value.trim();
        let number = || value.parse::<usize>().with_context(|| format!("{key}: {value:?} is not a number"));
        match (indent, is_item) {
            (2, true) => kernels.push(KernelMeta::default()),
            (6, true) => {
                let kernel = kernels.last_mut().context("argument outside a kernel")?;
                kernel.args.push(Arg::default());
            }
            _ => {}
        }
        let Some(kernel) = kernels.last_mut() else { continue };
        match (indent, is_item) {
            (2, true) | (4, false) => match key {
                ".name" => kernel.name = value.to_string(),
                ".symbol" => kernel.symbol = value.to_string(),
                ".kernarg_segment_size" => kernel.kernarg_segment_size = number()?,
                ".group_segment_fixed_size" => kernel.group_segment_fixed_size = number()? as u32,
                ".private_segment_fixed_size" => kernel.private_segment_fixed_size = number()? as u32,
                _ => {}
            },
            (6, true) | (8, false) => {
                let Some(arg) = kernel.args.last_mut() else { continue };
                match key {
                    ".offset" => arg.offset = number()?,
                    ".size" => arg.size = number()?,
                    ".value_kind" => arg.value_kind = value.to_string(),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    Ok(kernels)
}

/// Address, size and contents of defined symbol `name`.
fn symbol<'d>(data: &'d [u8], name: &str) -> Result<Option<(u64, u64, &'d [u8])>> {
    let header = elf::FileHeader64::<Endianness>::parse(data)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, data)?;
    let table = sections.symbols(endian, data, elf::SHT_SYMTAB)?;
    for sym in table.iter() {
        if sym.name(endian, table.strings())? != name.as_bytes() || sym.st_shndx(endian) == elf::SHN_UNDEF {
            continue;
        }
        let section = sections.section(object::SectionIndex(sym.st_shndx(endian) as usize))?;
        let (value, size) = (sym.st_value(endian), sym.st_size(endian));
        let contents: &[u8] = if section.sh_type(endian) == elf::SHT_NOBITS {
            &[]
        } else {
            let bytes = section.data(endian, data).map_err(|_| anyhow::anyhow!("section data"))?;
            let start = (value - section.sh_addr(endian)) as usize;
            bytes.get(start..start + size as usize).context("symbol outside its section")?
        };
        return Ok(Some((value, size, contents)));
    }
    Ok(None)
}

/// Checks one clang 19 amdgcn OpenMP image; how many of its kernels declare a cross-team
/// reduction (and so get a launch environment and reduction buffer from the plugin).
fn check_image(readelf: &Path, path: &Path) -> Result<usize> {
    let what = path.display();
    let data = std::fs::read(path).with_context(|| format!("cannot read {what}"))?;
    let target = code_object::target_id(&data).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    let version = code_object::code_object_version(&data).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;
    ensure!(version == 5, "{what}: code object v{version}, clang 19 writes v5");
    let agent = code_object::TargetId::from_isa_name(&format!(
        "amdgcn-amd-amdhsa--{}:sramecc+:xnack-",
        target.processor
    ))
    .context("agent ISA name")?;
    target.check_runs_on(&agent).map_err(|e| anyhow::anyhow!("{what}: {e}"))?;

    match symbol(&data, DEVICE_ENVIRONMENT)? {
        Some((_, size, _)) if size == DEVICE_ENVIRONMENT_V19_SIZE as u64 => {}
        found => {
            bail!("{what}: {DEVICE_ENVIRONMENT} should be {DEVICE_ENVIRONMENT_V19_SIZE} bytes: {found:?}")
        }
    }
    // The DeviceRTL's memory pool, which the plugin fills at load (docs/plugins.md).
    for (name, size) in [
        (DEVICE_MEMORY_POOL, std::mem::size_of::<DeviceMemoryPool>()),
        (DEVICE_MEMORY_POOL_TRACKER, std::mem::size_of::<DeviceMemoryPoolTracking>()),
    ] {
        match symbol(&data, name)? {
            Some((_, found, _)) if found == size as u64 => {}
            found => bail!("{what}: {name} should be {size} bytes: {found:?}"),
        }
    }
    let out = Command::new(readelf).arg("--notes").arg(path).output().context("cannot run llvm-readelf")?;
    ensure!(out.status.success(), "llvm-readelf --notes {what} failed");
    let notes = String::from_utf8_lossy(&out.stdout);
    let kernels = parse_kernels(&notes)?;
    ensure!(!kernels.is_empty(), "{what}: no kernels in the code object metadata");
    let mut reductions = 0;
    for kernel in &kernels {
        let name = &kernel.name;
        ensure!(kernel.symbol == format!("{name}.kd"), "{what}: {name}'s descriptor is {}", kernel.symbol);
        // HSA reports the segment sizes from the kernel descriptor (amd_kernel_code: group
        // segment at 0, private at 4, kernarg at 8): they must be the metadata's.
        let (_, kd_size, kd) =
            symbol(&data, &kernel.symbol)?.with_context(|| format!("{what}: no {}", kernel.symbol))?;
        ensure!(kd_size == 64, "{what}: {} has {kd_size} bytes, a kernel descriptor 64", kernel.symbol);
        let u32_at = |o: usize| u32::from_le_bytes(kd[o..o + 4].try_into().expect("4 bytes"));
        ensure!(
            (u32_at(0), u32_at(4), u32_at(8) as usize)
                == (
                    kernel.group_segment_fixed_size,
                    kernel.private_segment_fixed_size,
                    kernel.kernarg_segment_size
                ),
            "{what}: {name}'s descriptor and metadata disagree on segment sizes"
        );
        let env = format!("{name}_kernel_environment");
        let config = match symbol(&data, &env)? {
            Some((_, size, bytes)) if size == KERNEL_ENVIRONMENT_SIZE as u64 => {
                KernelConfig::from_kernel_environment(bytes)
                    .map_err(|e| anyhow::anyhow!("{what}: {env}: {e}"))?
            }
            found => bail!("{what}: {env} should be {KERNEL_ENVIRONMENT_SIZE} bytes: {found:?}"),
        };
        reductions += usize::from(config.reduction_buffer_size().is_some());
        check_kernarg_layout(kernel).with_context(|| format!("{what}: kernel {name}"))?;
    }
    Ok(reductions)
}

/// The explicit arguments are 8-byte slots from 0 (`dyn_ptr` first), the implicit ones follow,
/// and every implicit argument the plugin sets lands where the metadata puts it.
fn check_kernarg_layout(kernel: &KernelMeta) -> Result<()> {
    let explicit: Vec<&Arg> = kernel.args.iter().filter(|a| !a.value_kind.starts_with("hidden_")).collect();
    for (i, arg) in explicit.iter().enumerate() {
        ensure!(
            arg.offset == 8 * i && arg.size == 8,
            "explicit argument {i} is not the 8-byte slot {}",
            8 * i
        );
    }
    let hidden_start = 8 * explicit.len();
    let geometry = Geometry { blocks: 0x0102_0304, threads: 0x0506, dynamic_lds: 0x0708_090a };
    let args: Vec<u64> = (0..explicit.len() as u64).map(|i| 0x1111_1111_1111_1111 * (i + 1)).collect();
    let segment = dispatch::kernarg_segment(&args, kernel.kernarg_segment_size as u32, 5, &geometry)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    ensure!(segment.len() == kernel.kernarg_segment_size, "segment of {} bytes", segment.len());
    let expected: [(&str, usize, u64); 8] = [
        ("hidden_block_count_x", offset_of!(ImplicitArgs, block_count_x), geometry.blocks as u64),
        ("hidden_block_count_y", offset_of!(ImplicitArgs, block_count_y), 1),
        ("hidden_block_count_z", offset_of!(ImplicitArgs, block_count_z), 1),
        ("hidden_group_size_x", offset_of!(ImplicitArgs, group_size_x), geometry.threads as u64),
        ("hidden_group_size_y", offset_of!(ImplicitArgs, group_size_y), 1),
        ("hidden_group_size_z", offset_of!(ImplicitArgs, group_size_z), 1),
        ("hidden_grid_dims", offset_of!(ImplicitArgs, grid_dims), 1),
        ("hidden_dynamic_lds_size", offset_of!(ImplicitArgs, dynamic_lds_size), geometry.dynamic_lds as u64),
    ];
    let mut seen = 0;
    for (kind, offset, value) in expected {
        let Some(arg) = kernel.args.iter().find(|a| a.value_kind == kind) else { continue };
        seen += 1;
        ensure!(
            arg.offset == hidden_start + offset,
            "{kind} at {}, the plugin writes it at {}",
            arg.offset,
            hidden_start + offset
        );
        let mut bytes = [0u8; 8];
        bytes[..arg.size].copy_from_slice(&segment[arg.offset..arg.offset + arg.size]);
        ensure!(
            u64::from_le_bytes(bytes) == value,
            "{kind} holds {:#x}, expected {value:#x}",
            u64::from_le_bytes(bytes)
        );
    }
    ensure!(seen >= 7, "only {seen} of the implicit arguments the plugin sets are in the metadata");
    for arg in &explicit {
        let value = u64::from_le_bytes(segment[arg.offset..arg.offset + 8].try_into().expect("8 bytes"));
        ensure!(value == args[arg.offset / 8], "explicit slot {} holds {value:#x}", arg.offset / 8);
    }
    Ok(())
}

mod metadata {
    use super::*;

    #[test]
    fn parses_readelf_metadata() {
        let notes = "amdhsa.kernels:
  - .agpr_count:     0
    .args:
      - .address_space:  generic
        .name:           dyn_ptr
        .offset:         0
        .size:           8
        .value_kind:     global_buffer
      - .offset:         8
        .size:           4
        .value_kind:     hidden_block_count_x
    .group_segment_fixed_size: 16
    .kernarg_segment_size: 264
    .name:           k
    .private_segment_fixed_size: 32
    .symbol:         k.kd
amdhsa.target:   amdgcn-amd-amdhsa--gfx90a
";
        let kernels = parse_kernels(notes).unwrap();
        assert_eq!(kernels.len(), 1);
        let k = &kernels[0];
        assert_eq!((k.name.as_str(), k.symbol.as_str(), k.kernarg_segment_size), ("k", "k.kd", 264));
        assert_eq!((k.group_segment_fixed_size, k.private_segment_fixed_size), (16, 32));
        assert_eq!(k.args.len(), 2);
        assert_eq!(
            (k.args[1].offset, k.args[1].size, k.args[1].value_kind.as_str()),
            (8, 4, "hidden_block_count_x")
        );
    }
}
