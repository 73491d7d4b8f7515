//! A kernel launch as LLVM 19's AMDGPU plugin builds it for clang's OpenMP kernels, as pure
//! functions over bytes: the kernel argument segment (explicit arguments, then code object v5's
//! implicit arguments) and the AQL kernel dispatch packet. The backend only copies the results
//! into kernarg memory and the queue.

use crate::error::{HsaError, Result};

use crate::sys::{self, KernelDispatchPacket, Signal};

/// Code object v5's hidden kernel arguments as LLVM's AMDGPU plugin lays them out
/// (`AMDGPUImplicitArgsTy`; the `hidden_*` arguments of AMDGPUUsage's code object v5 metadata,
/// which `cargo xtask build` checks against every kernel clang emits). The plugin sets the named
/// fields; the rest stays zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ImplicitArgs {
    /// `hidden_block_count_x`: workgroups in X.
    pub block_count_x: u32,
    /// `hidden_block_count_y`.
    pub block_count_y: u32,
    /// `hidden_block_count_z`.
    pub block_count_z: u32,
    /// `hidden_group_size_x`: work-items per workgroup in X.
    pub group_size_x: u16,
    /// `hidden_group_size_y`.
    pub group_size_y: u16,
    /// `hidden_group_size_z`.
    pub group_size_z: u16,
    /// Remainders, global offsets and the like: zero for OpenMP.
    pub unused0: [u8; 46],
    /// `hidden_grid_dims`: dimensions of the launch.
    pub grid_dims: u16,
    /// Zero.
    pub unused1: [u8; 54],
    /// `hidden_dynamic_lds_size`: dynamic LDS bytes per workgroup.
    pub dynamic_lds_size: u32,
    /// Zero.
    pub unused2: [u8; 132],
}

/// `sizeof(AMDGPUImplicitArgsTy)`.
pub const IMPLICIT_ARGS_SIZE: usize = 256;

const _: () = assert!(std::mem::size_of::<ImplicitArgs>() == IMPLICIT_ARGS_SIZE);
const _: () = assert!(std::mem::offset_of!(ImplicitArgs, group_size_x) == 12);
const _: () = assert!(std::mem::offset_of!(ImplicitArgs, grid_dims) == 64);
const _: () = assert!(std::mem::offset_of!(ImplicitArgs, dynamic_lds_size) == 120);

impl ImplicitArgs {
    /// The implicit arguments of a one-dimensional launch of `geometry`.
    pub fn for_launch(geometry: &Geometry) -> Self {
        ImplicitArgs {
            block_count_x: geometry.blocks,
            block_count_y: 1,
            block_count_z: 1,
            group_size_x: geometry.threads as u16,
            group_size_y: 1,
            group_size_z: 1,
            grid_dims: 1,
            dynamic_lds_size: geometry.dynamic_lds,
            ..bytemuck::Zeroable::zeroed()
        }
    }
}

/// The stack LLVM's plugin gives kernels whose call stack size is not known statically
/// (`AMDGPUDeviceTy::StackSize`, 16 KiB).
pub const DEFAULT_STACK_SIZE: u32 = 16 * 1024;

/// What the kernel descriptor's symbol says about a kernel (`HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSegments {
    /// `KERNEL_OBJECT`: the kernel descriptor's address.
    pub kernel_object: u64,
    /// `KERNARG_SEGMENT_SIZE`: explicit and implicit argument bytes.
    pub kernarg_size: u32,
    /// `GROUP_SEGMENT_SIZE`: static LDS bytes.
    pub group_size: u32,
    /// `PRIVATE_SEGMENT_SIZE`: scratch bytes per work-item.
    pub private_size: u32,
    /// `DYNAMIC_CALLSTACK`: the stack size is not known statically (recursion, indirect calls).
    pub dynamic_callstack: bool,
}

/// A one-dimensional launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Workgroups (teams).
    pub blocks: u32,
    /// Work-items per workgroup (threads).
    pub threads: u32,
    /// Dynamic LDS bytes per workgroup the program asked for.
    pub dynamic_lds: u32,
}

/// The kernel argument segment: the explicit arguments (one 8-byte slot each, as clang's
/// OpenMP kernels take them, `dyn_ptr` first), then for code object v5 and later the implicit
/// arguments, each set only where the segment has room for it (the compiler trims unused
/// trailing implicit arguments); everything else zero. A segment smaller than the explicit
/// arguments means the kernel does not take these arguments: an error, as in LLVM.
pub fn kernarg_segment(
    args: &[u64],
    segment_size: u32,
    code_object_version: u8,
    geometry: &Geometry,
) -> Result<Vec<u8>> {
    let explicit = args.len() * 8;
    let size = segment_size as usize;
    if size < explicit {
        return Err(HsaError::InvalidLaunch(format!(
            "{} arguments ({explicit} bytes) for a kernel whose argument segment has {size} bytes",
            args.len()
        )));
    }
    let mut segment = vec![0u8; size];
    for (slot, arg) in segment.chunks_exact_mut(8).zip(args) {
        slot.copy_from_slice(&arg.to_le_bytes());
    }
    if code_object_version < 5 {
        // Code object v4's hidden arguments (global offsets, ...) are all zero for OpenMP.
        return Ok(segment);
    }
    // The compiler trims unused trailing implicit arguments, at argument boundaries.
    let implicit = &mut segment[explicit..];
    let room = implicit.len().min(IMPLICIT_ARGS_SIZE);
    implicit[..room].copy_from_slice(&bytemuck::bytes_of(&ImplicitArgs::for_launch(geometry))[..room]);
    Ok(segment)
}

/// The dispatch packet's first 32 bits, stored last and atomically to publish it: a kernel
/// dispatch with system-scope acquire and release fences, one dimension.
pub fn header_word() -> u32 {
    let header = (sys::PACKET_TYPE_KERNEL_DISPATCH << sys::PACKET_HEADER_TYPE)
        | (sys::FENCE_SCOPE_SYSTEM << sys::PACKET_HEADER_ACQUIRE_FENCE_SCOPE)
        | (sys::FENCE_SCOPE_SYSTEM << sys::PACKET_HEADER_RELEASE_FENCE_SCOPE);
    let setup = 1u16 << sys::KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS;
    header as u32 | (setup as u32) << 16
}

/// The dispatch packet, header and setup left 0 (see [`header_word`]), as LLVM's
/// `AMDGPUQueueTy::pushKernelLaunch` fills it: grid size in work-items, LDS = the kernel's static
/// LDS plus the dynamic LDS asked for, scratch = the kernel's, or at least `stack_size` when its
/// call stack is dynamic.
pub fn dispatch_packet(
    kernel: &KernelSegments,
    geometry: &Geometry,
    kernarg_address: u64,
    stack_size: u32,
    completion_signal: Signal,
) -> Result<KernelDispatchPacket> {
    let workgroup_size = u16::try_from(geometry.threads)
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| HsaError::InvalidLaunch(format!("{} threads per workgroup", geometry.threads)))?;
    let grid_size = geometry.blocks.checked_mul(geometry.threads).filter(|&g| g > 0).ok_or_else(|| {
        HsaError::InvalidLaunch(format!(
            "{} workgroups of {} work-items do not fit a 32-bit grid",
            geometry.blocks, geometry.threads
        ))
    })?;
    let group_segment_size = kernel
        .group_size
        .checked_add(geometry.dynamic_lds)
        .ok_or_else(|| HsaError::InvalidLaunch(format!("{} bytes of dynamic LDS", geometry.dynamic_lds)))?;
    let private_segment_size =
        if kernel.dynamic_callstack { kernel.private_size.max(stack_size) } else { kernel.private_size };
    Ok(KernelDispatchPacket {
        header: 0,
        setup: 0,
        workgroup_size_x: workgroup_size,
        workgroup_size_y: 1,
        workgroup_size_z: 1,
        reserved0: 0,
        grid_size_x: grid_size,
        grid_size_y: 1,
        grid_size_z: 1,
        private_segment_size,
        group_segment_size,
        kernel_object: kernel.kernel_object,
        kernarg_address,
        reserved2: 0,
        completion_signal,
    })
}

/// The packet's 64 bytes as the packet processor reads them (little-endian).
pub fn packet_bytes(packet: &KernelDispatchPacket) -> [u8; 64] {
    bytemuck::cast(*packet)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KERNEL: KernelSegments = KernelSegments {
        kernel_object: 0x7f12_3456_7000,
        kernarg_size: 3 * 8 + IMPLICIT_ARGS_SIZE as u32,
        group_size: 0x100,
        private_size: 0x40,
        dynamic_callstack: false,
    };
    const GEOMETRY: Geometry = Geometry { blocks: 416, threads: 256, dynamic_lds: 0x20 };

    #[test]
    fn header_is_a_one_dimensional_kernel_dispatch_with_system_fences() {
        // type 2 | acquire system (2 << 9) | release system (2 << 11); setup 1 dimension.
        assert_eq!(header_word(), 0x0001_1402);
    }

    #[test]
    fn packet_bytes_match_the_aql_layout() {
        let packet = dispatch_packet(
            &KERNEL,
            &GEOMETRY,
            0x7f00_0000_2000,
            DEFAULT_STACK_SIZE,
            Signal { handle: 0x55aa },
        )
        .unwrap();
        // The struct is the C layout, and the bytes are its memory image.
        // SAFETY: a plain-old-data repr(C) struct of 64 bytes without padding.
        let raw: [u8; 64] = unsafe { std::mem::transmute(packet) };
        let bytes = packet_bytes(&packet);
        assert_eq!(raw, bytes);
        #[rustfmt::skip]
        let expected: [u8; 64] = [
            0x00, 0x00, 0x00, 0x00,             // header, setup (published separately)
            0x00, 0x01, 0x01, 0x00, 0x01, 0x00, // workgroup 256 x 1 x 1
            0x00, 0x00,                         // reserved0
            0x00, 0xa0, 0x01, 0x00,             // grid x: 416 * 256 = 0x1a000 work-items
            0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, // grid y, z
            0x40, 0x00, 0x00, 0x00,             // private segment: the kernel's 0x40
            0x20, 0x01, 0x00, 0x00,             // group segment: 0x100 static + 0x20 dynamic
            0x00, 0x70, 0x56, 0x34, 0x12, 0x7f, 0x00, 0x00, // kernel object
            0x00, 0x20, 0x00, 0x00, 0x00, 0x7f, 0x00, 0x00, // kernarg address
            0, 0, 0, 0, 0, 0, 0, 0,             // reserved2
            0xaa, 0x55, 0, 0, 0, 0, 0, 0,       // completion signal
        ];
        assert_eq!(bytes, expected);
    }

    #[test]
    fn dynamic_call_stacks_get_at_least_the_default_stack() {
        let dynamic = KernelSegments { dynamic_callstack: true, ..KERNEL };
        let packet = dispatch_packet(&dynamic, &GEOMETRY, 0, DEFAULT_STACK_SIZE, Signal::default()).unwrap();
        assert_eq!(packet.private_segment_size, 16 * 1024);
        let big = KernelSegments { private_size: 64 * 1024, ..dynamic };
        let packet = dispatch_packet(&big, &GEOMETRY, 0, DEFAULT_STACK_SIZE, Signal::default()).unwrap();
        assert_eq!(packet.private_segment_size, 64 * 1024);
    }

    #[test]
    fn impossible_geometries_are_errors() {
        for geometry in [
            Geometry { blocks: 1 << 20, threads: 1 << 13, dynamic_lds: 0 },
            Geometry { threads: 70_000, ..GEOMETRY },
            Geometry { threads: 0, ..GEOMETRY },
            Geometry { blocks: 0, ..GEOMETRY },
            Geometry { dynamic_lds: u32::MAX, ..GEOMETRY },
        ] {
            assert!(dispatch_packet(&KERNEL, &geometry, 0, 0, Signal::default()).is_err(), "{geometry:?}");
        }
    }

    #[test]
    fn kernarg_segment_of_a_code_object_v5_kernel() {
        let args = [u64::MAX, 0x1111_2222_3333_4444, 7];
        let segment = kernarg_segment(&args, KERNEL.kernarg_size, 5, &GEOMETRY).unwrap();
        assert_eq!(segment.len(), 24 + 256);
        assert_eq!(segment[..8], [0xff; 8], "dyn_ptr first");
        assert_eq!(segment[8..16], 0x1111_2222_3333_4444u64.to_le_bytes());
        assert_eq!(segment[16..24], 7u64.to_le_bytes());
        let implicit = &segment[24..];
        #[rustfmt::skip]
        let head: [u8; 18] = [
            0xa0, 0x01, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, // block counts 416, 1, 1
            0x00, 0x01, 1, 0, 1, 0,                   // group sizes 256, 1, 1
        ];
        assert_eq!(implicit[..18], head);
        assert_eq!(implicit[64..66], [1, 0], "grid dims");
        assert_eq!(implicit[120..124], [0x20, 0, 0, 0], "dynamic LDS");
        let set: Vec<usize> = (0..18).chain(64..66).chain(120..124).collect();
        for (i, b) in implicit.iter().enumerate() {
            if !set.contains(&i) {
                assert_eq!(*b, 0, "implicit byte {i} is zero");
            }
        }
    }

    #[test]
    fn trimmed_implicit_arguments_are_set_only_where_there_is_room() {
        // The compiler kept 72 bytes of implicit arguments: up to and including GridDims.
        let segment = kernarg_segment(&[1], 8 + 72, 5, &GEOMETRY).unwrap();
        assert_eq!(segment.len(), 80);
        assert_eq!(segment[8..12], 416u32.to_le_bytes());
        assert_eq!(segment[8 + 64..8 + 66], [1, 0]);
        // No implicit arguments at all.
        assert_eq!(kernarg_segment(&[1, 2], 16, 5, &GEOMETRY).unwrap().len(), 16);
    }

    #[test]
    fn code_object_v4_hidden_arguments_stay_zero() {
        let segment = kernarg_segment(&[9], 8 + 56, 4, &GEOMETRY).unwrap();
        assert_eq!(segment[..8], 9u64.to_le_bytes());
        assert!(segment[8..].iter().all(|&b| b == 0), "global offsets 0, nothing else used");
    }

    #[test]
    fn more_arguments_than_the_kernel_takes_is_an_error() {
        let err = kernarg_segment(&[1, 2, 3], 16, 5, &GEOMETRY).unwrap_err();
        assert!(err.to_string().contains("3 arguments (24 bytes)"), "{err}");
    }
}
