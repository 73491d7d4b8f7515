//! Every HSA value and layout in `amdgpu_hsa::sys`, compared with ROCm's own headers
//! (`/usr/include/hsa/hsa.h`, `hsa_ext_amd.h`, Debian's libhsa-runtime-dev, installed by
//! `scripts/setup.sh`): a C program compiled by clang 19 prints each header expression, and the
//! test compares it with the Rust value written for it.

use std::mem::{offset_of, size_of};
use std::path::Path;
use std::process::Command;

use amdgpu_hsa::sys::{self, agent_info, pool_info, symbol_info, KernelDispatchPacket, Queue};

/// `(C expression, our value)`.
fn expectations() -> Vec<(&'static str, u64)> {
    let p = |f: usize| f as u64;
    vec![
        ("HSA_STATUS_SUCCESS", sys::STATUS_SUCCESS as u64),
        ("HSA_STATUS_INFO_BREAK", sys::STATUS_INFO_BREAK as u64),
        ("HSA_STATUS_ERROR_INVALID_SYMBOL_NAME", sys::STATUS_ERROR_INVALID_SYMBOL_NAME as u64),
        ("HSA_AGENT_INFO_NAME", agent_info::NAME as u64),
        ("HSA_AGENT_INFO_FEATURE", agent_info::FEATURE as u64),
        ("HSA_AGENT_INFO_WAVEFRONT_SIZE", agent_info::WAVEFRONT_SIZE as u64),
        ("HSA_AGENT_INFO_WORKGROUP_MAX_SIZE", agent_info::WORKGROUP_MAX_SIZE as u64),
        ("HSA_AGENT_INFO_GRID_MAX_SIZE", agent_info::GRID_MAX_SIZE as u64),
        ("HSA_AGENT_INFO_QUEUE_MIN_SIZE", agent_info::QUEUE_MIN_SIZE as u64),
        ("HSA_AGENT_INFO_QUEUE_MAX_SIZE", agent_info::QUEUE_MAX_SIZE as u64),
        ("HSA_AGENT_INFO_DEVICE", agent_info::DEVICE as u64),
        ("HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT", agent_info::COMPUTE_UNIT_COUNT as u64),
        ("HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU", agent_info::MAX_WAVES_PER_CU as u64),
        // HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY (0xA016) is newer than Debian's ROCm 5.2 headers;
        // its value is LLVM's (dynamic_hsa/hsa_ext_amd.h), and a runtime without it makes the
        // plugin fall back to a clock frequency of 0, as LLVM's does.
        ("HSA_DEVICE_TYPE_CPU", sys::DEVICE_TYPE_CPU as u64),
        ("HSA_DEVICE_TYPE_GPU", sys::DEVICE_TYPE_GPU as u64),
        ("HSA_AGENT_FEATURE_KERNEL_DISPATCH", sys::AGENT_FEATURE_KERNEL_DISPATCH as u64),
        ("HSA_ISA_INFO_NAME_LENGTH", sys::ISA_INFO_NAME_LENGTH as u64),
        ("HSA_ISA_INFO_NAME", sys::ISA_INFO_NAME as u64),
        ("HSA_AMD_MEMORY_POOL_INFO_SEGMENT", pool_info::SEGMENT as u64),
        ("HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS", pool_info::GLOBAL_FLAGS as u64),
        ("HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED", pool_info::RUNTIME_ALLOC_ALLOWED as u64),
        ("HSA_AMD_SEGMENT_GLOBAL", sys::SEGMENT_GLOBAL as u64),
        ("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT", sys::GLOBAL_FLAG_KERNARG_INIT as u64),
        ("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED", sys::GLOBAL_FLAG_FINE_GRAINED as u64),
        ("HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED", sys::GLOBAL_FLAG_COARSE_GRAINED as u64),
        ("HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE", symbol_info::VARIABLE_SIZE as u64),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE",
            symbol_info::KERNEL_KERNARG_SEGMENT_SIZE as u64,
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE",
            symbol_info::KERNEL_GROUP_SEGMENT_SIZE as u64,
        ),
        (
            "HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE",
            symbol_info::KERNEL_PRIVATE_SEGMENT_SIZE as u64,
        ),
        ("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK", symbol_info::KERNEL_DYNAMIC_CALLSTACK as u64),
        ("HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS", symbol_info::VARIABLE_ADDRESS as u64),
        ("HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT", symbol_info::KERNEL_OBJECT as u64),
        ("HSA_PROFILE_FULL", sys::PROFILE_FULL as u64),
        ("HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO", sys::DEFAULT_FLOAT_ROUNDING_MODE_ZERO as u64),
        ("HSA_QUEUE_TYPE_MULTI", sys::QUEUE_TYPE_MULTI as u64),
        ("HSA_SIGNAL_CONDITION_EQ", sys::SIGNAL_CONDITION_EQ as u64),
        ("HSA_WAIT_STATE_BLOCKED", sys::WAIT_STATE_BLOCKED as u64),
        ("HSA_PACKET_TYPE_KERNEL_DISPATCH", sys::PACKET_TYPE_KERNEL_DISPATCH as u64),
        ("HSA_PACKET_HEADER_TYPE", sys::PACKET_HEADER_TYPE as u64),
        ("HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE", sys::PACKET_HEADER_ACQUIRE_FENCE_SCOPE as u64),
        ("HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE", sys::PACKET_HEADER_RELEASE_FENCE_SCOPE as u64),
        ("HSA_FENCE_SCOPE_SYSTEM", sys::FENCE_SCOPE_SYSTEM as u64),
        ("HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS", sys::KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS as u64),
        // Every enum is passed as a 32-bit value.
        ("sizeof(hsa_status_t)", size_of::<sys::Status>() as u64),
        ("sizeof(hsa_agent_info_t)", 4),
        ("sizeof(hsa_executable_symbol_info_t)", 4),
        ("sizeof(hsa_signal_value_t)", size_of::<sys::SignalValue>() as u64),
        ("sizeof(hsa_agent_t)", size_of::<sys::Agent>() as u64),
        ("sizeof(hsa_signal_t)", size_of::<sys::Signal>() as u64),
        ("sizeof(hsa_amd_memory_pool_t)", size_of::<sys::MemoryPool>() as u64),
        ("sizeof(hsa_executable_symbol_t)", size_of::<sys::ExecutableSymbol>() as u64),
        ("sizeof(hsa_queue_t)", size_of::<Queue>() as u64),
        ("offsetof(hsa_queue_t, base_address)", p(offset_of!(Queue, base_address))),
        ("offsetof(hsa_queue_t, doorbell_signal)", p(offset_of!(Queue, doorbell_signal))),
        ("offsetof(hsa_queue_t, size)", p(offset_of!(Queue, size))),
        ("offsetof(hsa_queue_t, id)", p(offset_of!(Queue, id))),
        ("sizeof(hsa_kernel_dispatch_packet_t)", size_of::<KernelDispatchPacket>() as u64),
        ("offsetof(hsa_kernel_dispatch_packet_t, setup)", p(offset_of!(KernelDispatchPacket, setup))),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, workgroup_size_x)",
            p(offset_of!(KernelDispatchPacket, workgroup_size_x)),
        ),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, workgroup_size_z)",
            p(offset_of!(KernelDispatchPacket, workgroup_size_z)),
        ),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, grid_size_x)",
            p(offset_of!(KernelDispatchPacket, grid_size_x)),
        ),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, grid_size_z)",
            p(offset_of!(KernelDispatchPacket, grid_size_z)),
        ),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, private_segment_size)",
            p(offset_of!(KernelDispatchPacket, private_segment_size)),
        ),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, group_segment_size)",
            p(offset_of!(KernelDispatchPacket, group_segment_size)),
        ),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, kernel_object)",
            p(offset_of!(KernelDispatchPacket, kernel_object)),
        ),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, kernarg_address)",
            p(offset_of!(KernelDispatchPacket, kernarg_address)),
        ),
        ("offsetof(hsa_kernel_dispatch_packet_t, reserved2)", p(offset_of!(KernelDispatchPacket, reserved2))),
        (
            "offsetof(hsa_kernel_dispatch_packet_t, completion_signal)",
            p(offset_of!(KernelDispatchPacket, completion_signal)),
        ),
    ]
}

#[test]
fn values_and_layouts_match_the_rocm_headers() {
    let header = Path::new("/usr/include/hsa/hsa_ext_amd.h");
    assert!(
        header.is_file(),
        "{} is missing: run scripts/setup.sh (Debian package libhsa-runtime-dev)",
        header.display()
    );
    let expectations = expectations();
    let mut c = String::from("#include <stddef.h>\n#include <stdio.h>\n#include <hsa/hsa.h>\n#include <hsa/hsa_ext_amd.h>\nint main(void) {\n");
    for (expr, _) in &expectations {
        c.push_str(&format!("  printf(\"%llu\\n\", (unsigned long long)({expr}));\n"));
    }
    c.push_str("  return 0;\n}\n");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hsa_headers");
    std::fs::create_dir_all(&dir).unwrap();
    let (source, exe) = (dir.join("values.c"), dir.join("values"));
    std::fs::write(&source, c).unwrap();
    // Any C compiler reads the headers: the system's `cc`, which Rust's own links need too.
    let built = Command::new("cc").arg(&source).arg("-o").arg(&exe).output().expect("cc");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    let out = Command::new(&exe).output().unwrap();
    let printed: Vec<u64> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(printed.len(), expectations.len());
    let wrong: Vec<String> = expectations
        .iter()
        .zip(&printed)
        .filter(|((_, ours), theirs)| ours != *theirs)
        .map(|((expr, ours), theirs)| format!("{expr}: header {theirs}, ours {ours}"))
        .collect();
    assert!(wrong.is_empty(), "differs from the ROCm headers:\n{}", wrong.join("\n"));
}
