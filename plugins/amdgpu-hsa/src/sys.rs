//! The raw HSA ABI this plugin uses, written once (model: LLVM's `amdgpu/dynamic_hsa/`): handle
//! types, the enum values and struct layouts of `hsa.h` / `hsa_ext_amd.h` (ROCm; each comment
//! names the header's identifier), and the table of exactly the functions called, resolved from
//! `libhsa-runtime64.so.1` at start-up. The values are checked against the real headers by the
//! test `hsa_headers` (it compiles a C file printing them with clang 19).

use std::ffi::{c_char, c_void};

/// `hsa_status_t`.
pub type Status = u32;
/// `HSA_STATUS_SUCCESS`.
pub const STATUS_SUCCESS: Status = 0x0;
/// `HSA_STATUS_INFO_BREAK`: an iteration callback stopped the iteration on purpose.
pub const STATUS_INFO_BREAK: Status = 0x1;
/// `HSA_STATUS_ERROR_INVALID_SYMBOL_NAME`: `hsa_executable_get_symbol_by_name` found no symbol.
pub const STATUS_ERROR_INVALID_SYMBOL_NAME: Status = 0x1013;

macro_rules! handle_types {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, bytemuck::Pod, bytemuck::Zeroable)]
        pub struct $name {
            /// The runtime's opaque handle.
            pub handle: u64,
        }
    )*};
}

handle_types! {
    /// `hsa_agent_t`.
    Agent;
    /// `hsa_isa_t`.
    Isa;
    /// `hsa_signal_t`.
    Signal;
    /// `hsa_amd_memory_pool_t`.
    MemoryPool;
    /// `hsa_executable_t`.
    Executable;
    /// `hsa_executable_symbol_t`.
    ExecutableSymbol;
    /// `hsa_code_object_reader_t`.
    CodeObjectReader;
    /// `hsa_loaded_code_object_t`.
    LoadedCodeObject;
}

/// `hsa_signal_value_t` (64-bit in the large model).
pub type SignalValue = i64;

/// `hsa_agent_info_t` and `hsa_amd_agent_info_t` values, with the type each answers in.
pub mod agent_info {
    /// `HSA_AGENT_INFO_NAME`: `char[64]`, e.g. `gfx90a`.
    pub const NAME: u32 = 0;
    /// `HSA_AGENT_INFO_FEATURE`: `hsa_agent_feature_t` bit mask.
    pub const FEATURE: u32 = 2;
    /// `HSA_AGENT_INFO_WAVEFRONT_SIZE`: `uint32_t`.
    pub const WAVEFRONT_SIZE: u32 = 6;
    /// `HSA_AGENT_INFO_WORKGROUP_MAX_SIZE`: `uint32_t`.
    pub const WORKGROUP_MAX_SIZE: u32 = 8;
    /// `HSA_AGENT_INFO_GRID_MAX_SIZE`: `uint32_t`.
    pub const GRID_MAX_SIZE: u32 = 10;
    /// `HSA_AGENT_INFO_QUEUE_MIN_SIZE`: `uint32_t`.
    pub const QUEUE_MIN_SIZE: u32 = 13;
    /// `HSA_AGENT_INFO_QUEUE_MAX_SIZE`: `uint32_t`.
    pub const QUEUE_MAX_SIZE: u32 = 14;
    /// `HSA_AGENT_INFO_DEVICE`: `hsa_device_type_t`.
    pub const DEVICE: u32 = 17;
    /// `HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT`: `uint32_t`.
    pub const COMPUTE_UNIT_COUNT: u32 = 0xA002;
    /// `HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU`: `uint32_t`.
    pub const MAX_WAVES_PER_CU: u32 = 0xA00A;
    /// `HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY`: `uint64_t`, Hz of the steady clock.
    pub const TIMESTAMP_FREQUENCY: u32 = 0xA016;
}

/// `HSA_DEVICE_TYPE_CPU` (`hsa_device_type_t`).
pub const DEVICE_TYPE_CPU: u32 = 0;
/// `HSA_DEVICE_TYPE_GPU`.
pub const DEVICE_TYPE_GPU: u32 = 1;
/// `HSA_AGENT_FEATURE_KERNEL_DISPATCH` (`hsa_agent_feature_t`).
pub const AGENT_FEATURE_KERNEL_DISPATCH: u32 = 1;

/// `HSA_ISA_INFO_NAME_LENGTH` (`hsa_isa_info_t`): `uint32_t`, with the NUL.
pub const ISA_INFO_NAME_LENGTH: u32 = 0;
/// `HSA_ISA_INFO_NAME`: `char[NAME_LENGTH]`, e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
pub const ISA_INFO_NAME: u32 = 1;

/// `hsa_amd_memory_pool_info_t` values.
pub mod pool_info {
    /// `HSA_AMD_MEMORY_POOL_INFO_SEGMENT`: `hsa_amd_segment_t`.
    pub const SEGMENT: u32 = 0;
    /// `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`: `uint32_t` of `hsa_amd_memory_pool_global_flag_t`.
    pub const GLOBAL_FLAGS: u32 = 1;
    /// `HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED`: `bool`.
    pub const RUNTIME_ALLOC_ALLOWED: u32 = 5;
}

/// `HSA_AMD_SEGMENT_GLOBAL` (`hsa_amd_segment_t`).
pub const SEGMENT_GLOBAL: u32 = 0;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT`: the pool kernel arguments come from.
pub const GLOBAL_FLAG_KERNARG_INIT: u32 = 1;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED`: coherent with the host during a kernel.
pub const GLOBAL_FLAG_FINE_GRAINED: u32 = 2;
/// `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED`: device memory, coherent at dispatch edges.
pub const GLOBAL_FLAG_COARSE_GRAINED: u32 = 4;

/// `hsa_executable_symbol_info_t` values.
pub mod symbol_info {
    /// `HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE`: `uint32_t`.
    pub const VARIABLE_SIZE: u32 = 9;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE`: `uint32_t`, explicit and
    /// implicit arguments together.
    pub const KERNEL_KERNARG_SEGMENT_SIZE: u32 = 11;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE`: `uint32_t`, static LDS bytes.
    pub const KERNEL_GROUP_SEGMENT_SIZE: u32 = 13;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE`: `uint32_t`, scratch per item.
    pub const KERNEL_PRIVATE_SEGMENT_SIZE: u32 = 14;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK`: `bool`.
    pub const KERNEL_DYNAMIC_CALLSTACK: u32 = 15;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS`: `uint64_t`.
    pub const VARIABLE_ADDRESS: u32 = 21;
    /// `HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`: `uint64_t`, the kernel descriptor's address.
    pub const KERNEL_OBJECT: u32 = 22;
}

/// `HSA_PROFILE_FULL` (`hsa_profile_t`).
pub const PROFILE_FULL: u32 = 1;
/// `HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO`: what LLVM's plugin creates executables with.
pub const DEFAULT_FLOAT_ROUNDING_MODE_ZERO: u32 = 1;
/// `HSA_QUEUE_TYPE_MULTI` (`hsa_queue_type_t`).
pub const QUEUE_TYPE_MULTI: u32 = 0;
/// `HSA_SIGNAL_CONDITION_EQ` (`hsa_signal_condition_t`).
pub const SIGNAL_CONDITION_EQ: u32 = 0;
/// `HSA_WAIT_STATE_BLOCKED` (`hsa_wait_state_t`).
pub const WAIT_STATE_BLOCKED: u32 = 0;

/// `HSA_PACKET_TYPE_KERNEL_DISPATCH` (`hsa_packet_type_t`).
pub const PACKET_TYPE_KERNEL_DISPATCH: u16 = 2;
/// `HSA_PACKET_HEADER_TYPE`: bit offset of the type in the header.
pub const PACKET_HEADER_TYPE: u16 = 0;
/// `HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE`: bit offset.
pub const PACKET_HEADER_ACQUIRE_FENCE_SCOPE: u16 = 9;
/// `HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE`: bit offset.
pub const PACKET_HEADER_RELEASE_FENCE_SCOPE: u16 = 11;
/// `HSA_FENCE_SCOPE_SYSTEM` (`hsa_fence_scope_t`).
pub const FENCE_SCOPE_SYSTEM: u16 = 2;
/// `HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS`: bit offset of the dimension count in `setup`.
pub const KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS: u16 = 0;

/// `hsa_queue_t` (large model).
#[repr(C)]
#[derive(Debug)]
pub struct Queue {
    /// `type`.
    pub queue_type: u32,
    /// `features`.
    pub features: u32,
    /// `base_address`: the ring of 64-byte packets.
    pub base_address: *mut c_void,
    /// `doorbell_signal`.
    pub doorbell_signal: Signal,
    /// `size`: packets in the ring, a power of two.
    pub size: u32,
    /// `reserved1`.
    pub reserved1: u32,
    /// `id`.
    pub id: u64,
}

/// `hsa_kernel_dispatch_packet_t` (large model): one 64-byte AQL packet.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KernelDispatchPacket {
    /// `header`: written last, atomically, with `setup`, to publish the packet.
    pub header: u16,
    /// `setup`: dimensions.
    pub setup: u16,
    /// `workgroup_size_x`.
    pub workgroup_size_x: u16,
    /// `workgroup_size_y`.
    pub workgroup_size_y: u16,
    /// `workgroup_size_z`.
    pub workgroup_size_z: u16,
    /// `reserved0`.
    pub reserved0: u16,
    /// `grid_size_x`: work-items, not workgroups.
    pub grid_size_x: u32,
    /// `grid_size_y`.
    pub grid_size_y: u32,
    /// `grid_size_z`.
    pub grid_size_z: u32,
    /// `private_segment_size`: scratch bytes per work-item.
    pub private_segment_size: u32,
    /// `group_segment_size`: LDS bytes per workgroup.
    pub group_segment_size: u32,
    /// `kernel_object`: the kernel descriptor's address.
    pub kernel_object: u64,
    /// `kernarg_address`.
    pub kernarg_address: u64,
    /// `reserved2`.
    pub reserved2: u64,
    /// `completion_signal`.
    pub completion_signal: Signal,
}

const _: () = assert!(std::mem::size_of::<KernelDispatchPacket>() == 64);
const _: () = assert!(std::mem::offset_of!(KernelDispatchPacket, grid_size_x) == 12);
const _: () = assert!(std::mem::offset_of!(KernelDispatchPacket, kernel_object) == 32);
const _: () = assert!(std::mem::offset_of!(KernelDispatchPacket, completion_signal) == 56);
const _: () = assert!(std::mem::size_of::<Queue>() == 40);

/// `hsa_iterate_agents` / `hsa_agent_iterate_isas` / `hsa_amd_agent_iterate_memory_pools`
/// callbacks: `(item, data) -> hsa_status_t`.
pub type IterateCallback<T> = unsafe extern "C" fn(T, *mut c_void) -> Status;
/// `hsa_queue_create`'s error callback.
pub type QueueErrorCallback = unsafe extern "C" fn(Status, *mut Queue, *mut c_void);

vendor_library::vendor_functions! {
    /// The HSA functions this plugin calls, resolved from `libhsa-runtime64.so.1` (signatures
    /// from `hsa.h` / `hsa_ext_amd.h`); the library stays loaded while this lives.
    pub struct Functions {
        init = "hsa_init": fn() -> Status;
        shut_down = "hsa_shut_down": fn() -> Status;
        status_string = "hsa_status_string": fn(Status, *mut *const c_char) -> Status;
        iterate_agents = "hsa_iterate_agents": fn(IterateCallback<Agent>, *mut c_void) -> Status;
        agent_get_info = "hsa_agent_get_info": fn(Agent, u32, *mut c_void) -> Status;
        agent_iterate_isas = "hsa_agent_iterate_isas": fn(Agent, IterateCallback<Isa>, *mut c_void) -> Status;
        isa_get_info_alt = "hsa_isa_get_info_alt": fn(Isa, u32, *mut c_void) -> Status;
        agent_iterate_memory_pools = "hsa_amd_agent_iterate_memory_pools": fn(Agent, IterateCallback<MemoryPool>, *mut c_void) -> Status;
        memory_pool_get_info = "hsa_amd_memory_pool_get_info": fn(MemoryPool, u32, *mut c_void) -> Status;
        memory_pool_allocate = "hsa_amd_memory_pool_allocate": fn(MemoryPool, usize, u32, *mut *mut c_void) -> Status;
        memory_pool_free = "hsa_amd_memory_pool_free": fn(*mut c_void) -> Status;
        agents_allow_access = "hsa_amd_agents_allow_access": fn(u32, *const Agent, *const u32, *const c_void) -> Status;
        memory_copy = "hsa_memory_copy": fn(*mut c_void, *const c_void, usize) -> Status;
        signal_create = "hsa_signal_create": fn(SignalValue, u32, *const Agent, *mut Signal) -> Status;
        signal_destroy = "hsa_signal_destroy": fn(Signal) -> Status;
        signal_store_relaxed = "hsa_signal_store_relaxed": fn(Signal, SignalValue) -> ();
        signal_wait_scacquire = "hsa_signal_wait_scacquire": fn(Signal, u32, SignalValue, u64, u32) -> SignalValue;
        queue_create = "hsa_queue_create": fn(Agent, u32, u32, Option<QueueErrorCallback>, *mut c_void, u32, u32, *mut *mut Queue) -> Status;
        queue_destroy = "hsa_queue_destroy": fn(*mut Queue) -> Status;
        queue_add_write_index_relaxed = "hsa_queue_add_write_index_relaxed": fn(*const Queue, u64) -> u64;
        queue_load_read_index_scacquire = "hsa_queue_load_read_index_scacquire": fn(*const Queue) -> u64;
        code_object_reader_create_from_memory = "hsa_code_object_reader_create_from_memory": fn(*const c_void, usize, *mut CodeObjectReader) -> Status;
        code_object_reader_destroy = "hsa_code_object_reader_destroy": fn(CodeObjectReader) -> Status;
        executable_create_alt = "hsa_executable_create_alt": fn(u32, u32, *const c_char, *mut Executable) -> Status;
        executable_load_agent_code_object = "hsa_executable_load_agent_code_object": fn(Executable, Agent, CodeObjectReader, *const c_char, *mut LoadedCodeObject) -> Status;
        executable_freeze = "hsa_executable_freeze": fn(Executable, *const c_char) -> Status;
        executable_validate = "hsa_executable_validate": fn(Executable, *mut u32) -> Status;
        executable_destroy = "hsa_executable_destroy": fn(Executable) -> Status;
        executable_get_symbol_by_name = "hsa_executable_get_symbol_by_name": fn(Executable, *const c_char, *const Agent, *mut ExecutableSymbol) -> Status;
        executable_symbol_get_info = "hsa_executable_symbol_get_info": fn(ExecutableSymbol, u32, *mut c_void) -> Status;
    }
}
