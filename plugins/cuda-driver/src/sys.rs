//! The raw CUDA driver ABI: the types, values and functions of `cuda.h` that the plugin and the
//! GPU tests use, resolved at run time from `libcuda.so.1` (model: LLVM's `dynamic_cuda`). No
//! call is made here; [`crate::driver`] makes them.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `CUresult`.
pub type CuResult = c_int;
/// `CUdevice`.
pub type CuDevice = c_int;
/// `CUcontext`, `CUmodule`, `CUfunction`, `CUstream`, `CUevent`: opaque handles.
pub type CuHandle = *mut c_void;
/// `CUdeviceptr`.
pub type CuDevicePtr = u64;

/// `CUDA_SUCCESS`.
pub const CUDA_SUCCESS: CuResult = 0;
/// `CUDA_ERROR_NO_DEVICE`: cuInit's answer on a machine with the driver but no GPU.
pub const CUDA_ERROR_NO_DEVICE: CuResult = 100;
/// `CUDA_ERROR_NOT_FOUND`: a named symbol is not in the module.
pub const CUDA_ERROR_NOT_FOUND: CuResult = 500;

/// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: the most threads per block a kernel can be
/// launched with (its `maxntid`, or what its register use allows).
pub const CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;
/// `CU_MEM_ATTACH_GLOBAL`: managed memory any stream may access, as LLVM's plugin allocates it.
pub const CU_MEM_ATTACH_GLOBAL: c_uint = 1;
/// `CU_EVENT_DEFAULT`.
pub const CU_EVENT_DEFAULT: c_uint = 0;

/// `CUdevice_attribute` values used (cuda.h).
pub mod attr {
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub const MAX_THREADS_PER_BLOCK: i32 = 1;
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X`.
    pub const MAX_GRID_DIM_X: i32 = 5;
    /// `CU_DEVICE_ATTRIBUTE_WARP_SIZE`.
    pub const WARP_SIZE: i32 = 10;
    /// `CU_DEVICE_ATTRIBUTE_CLOCK_RATE` (kHz).
    pub const CLOCK_RATE: i32 = 13;
    /// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
    pub const MULTIPROCESSOR_COUNT: i32 = 16;
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR`.
    pub const MAX_THREADS_PER_MULTIPROCESSOR: i32 = 39;
    /// `CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS`: the device reads and writes pageable host
    /// memory coherently (HMM, or an ATS system), as unified shared memory needs.
    pub const PAGEABLE_MEMORY_ACCESS: i32 = 88;
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
    pub const COMPUTE_CAPABILITY_MAJOR: i32 = 75;
    /// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR`.
    pub const COMPUTE_CAPABILITY_MINOR: i32 = 76;
}

vendor_library::vendor_functions! {
    /// The driver functions, resolved from `libcuda.so.1`; the library stays loaded while this
    /// lives (the plugin's whole lifetime).
    pub struct Driver {
        init = "cuInit": fn(c_uint) -> CuResult;
        device_get_count = "cuDeviceGetCount": fn(*mut c_int) -> CuResult;
        device_get = "cuDeviceGet": fn(*mut CuDevice, c_int) -> CuResult;
        device_get_attribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, CuDevice) -> CuResult;
        primary_ctx_retain = "cuDevicePrimaryCtxRetain": fn(*mut CuHandle, CuDevice) -> CuResult;
        primary_ctx_release = "cuDevicePrimaryCtxRelease_v2": fn(CuDevice) -> CuResult;
        ctx_set_current = "cuCtxSetCurrent": fn(CuHandle) -> CuResult;
        ctx_synchronize = "cuCtxSynchronize": fn() -> CuResult;
        module_load_data_ex = "cuModuleLoadDataEx": fn(*mut CuHandle, *const c_void, c_uint, *mut c_int, *mut *mut c_void) -> CuResult;
        module_unload = "cuModuleUnload": fn(CuHandle) -> CuResult;
        module_get_function = "cuModuleGetFunction": fn(*mut CuHandle, CuHandle, *const c_char) -> CuResult;
        module_get_global = "cuModuleGetGlobal_v2": fn(*mut CuDevicePtr, *mut usize, CuHandle, *const c_char) -> CuResult;
        func_get_attribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, CuHandle) -> CuResult;
        mem_alloc = "cuMemAlloc_v2": fn(*mut CuDevicePtr, usize) -> CuResult;
        mem_free = "cuMemFree_v2": fn(CuDevicePtr) -> CuResult;
        mem_alloc_host = "cuMemAllocHost_v2": fn(*mut *mut c_void, usize) -> CuResult;
        mem_free_host = "cuMemFreeHost": fn(*mut c_void) -> CuResult;
        mem_alloc_managed = "cuMemAllocManaged": fn(*mut CuDevicePtr, usize, c_uint) -> CuResult;
        mem_get_info = "cuMemGetInfo_v2": fn(*mut usize, *mut usize) -> CuResult;
        memcpy_htod = "cuMemcpyHtoD_v2": fn(CuDevicePtr, *const c_void, usize) -> CuResult;
        memcpy_dtoh = "cuMemcpyDtoH_v2": fn(*mut c_void, CuDevicePtr, usize) -> CuResult;
        launch_kernel = "cuLaunchKernel": fn(CuHandle, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CuHandle, *mut *mut c_void, *mut *mut c_void) -> CuResult;
        event_create = "cuEventCreate": fn(*mut CuHandle, c_uint) -> CuResult;
        event_record = "cuEventRecord": fn(CuHandle, CuHandle) -> CuResult;
        event_synchronize = "cuEventSynchronize": fn(CuHandle) -> CuResult;
        event_elapsed_time = "cuEventElapsedTime": fn(*mut f32, CuHandle, CuHandle) -> CuResult;
        event_destroy = "cuEventDestroy_v2": fn(CuHandle) -> CuResult;
        get_error_name = "cuGetErrorName": fn(CuResult, *mut *const c_char) -> CuResult;
    }
}
