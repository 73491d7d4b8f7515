//! `libomptarget.rtl.amdgpu.so`: the AMDGPU plugin over the ROCm HSA runtime, loaded at run time
//! (`amdgpu_hsa::sys`, `amdgpu_hsa::runtime`); without it, or without a GPU agent, the plugin reports 0 devices.
//!
//! Devices are the GPU agents. Device memory comes from each agent's coarse-grained global pool,
//! kernel arguments and copy staging from the host's kernarg and fine-grained pools; copies are
//! `hsa_memory_copy` through the staging buffer. Images are code objects whose target ID must
//! match the agent (`amdgpu_hsa::code_object`), loaded reader -> executable -> agent -> freeze; kernels are
//! found by `<name>.kd`, globals by name. Launches follow LLVM 19's plugin (`amdgpu_hsa::dispatch`): the
//! kernel's segment sizes from its descriptor symbol, `dyn_ptr` and code object v5 implicit
//! arguments, one AQL packet on the device's queue, and a wait on its completion signal. The
//! function-pointer map is installed by the core (also into LLVM 18+'s device environment).
//!
//! Nothing here has run on AMD hardware: the project has no AMD GPU. What runs is listed in
//! docs/plugins.md ("What has run where").
#![deny(missing_docs)]

pub use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use amdgpu_hsa::code_object::{self, TargetId};
use amdgpu_hsa::dispatch::{self, Geometry, KernelSegments};
use amdgpu_hsa::runtime::{self as hsa, Runtime};
use amdgpu_hsa::sys::{self as hsa_sys, Agent, Executable, MemoryPool, Signal};
use host_table::image::DeviceImage;
use host_table::rtl_interface::AllocKind;
use plugin_core::environment::DeviceLimits;
use plugin_core::symbol_name;
use plugin_core::{Backend, DeviceInfo, DeviceSymbol, Launch, PluginError, Result};

/// Threads per workgroup without a `thread_limit` (LLVM's AMDGPU `GV_Default_WG_Size`).
const DEFAULT_THREADS: u32 = 256;
/// Packets per queue (LLVM's `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE` default), clamped to the
/// agent's limits.
const QUEUE_SIZE: u32 = 512;
/// Bytes of the pinned staging buffer host<->device copies go through.
const STAGING_SIZE: usize = 8 << 20;
/// How long one wait on a completion signal blocks before the queue's error flag is looked at
/// (a hint in the system timestamp's unit, nanoseconds on ROCm).
const WAIT_SLICE: u64 = 100_000_000;
/// Bytes of the DeviceRTL's global memory pool (`__omp_rtl_device_memory_pool`, device
/// `malloc`) an image gets when it has one: LLVM's AMDGPU plugin's default heap size.
const MEMORY_POOL_BYTES: u64 = 512 << 20;

/// One GPU agent.
struct Gpu {
    agent: Agent,
    target: TargetId,
    device_pool: MemoryPool,
    info: DeviceInfo,
    queue_size: u32,
    /// Created by `init_device` (or the first launch); dropped after a queue error.
    queue: Mutex<Option<GpuQueue>>,
}

/// A device's AQL queue and the signal its dispatches complete.
struct GpuQueue {
    queue: *mut hsa_sys::Queue,
    /// Set by the runtime's error callback (its `data`), so boxed: the address must not move.
    error: Box<AtomicU32>,
    completion: Signal,
}

/// The host pools kernel arguments and copy staging come from.
struct HostPools {
    kernarg: MemoryPool,
    fine_grained: MemoryPool,
}

/// The AMDGPU backend.
pub struct Amdgpu {
    gpus: Vec<Gpu>,
    gpu_agents: Vec<Agent>,
    host: Option<HostPools>,
    /// The pinned staging buffer (address), allocated on first copy.
    staging: Mutex<Option<u64>>,
    /// Last: every HSA object above is destroyed (in `Drop`) before the runtime shuts down.
    hsa: Runtime,
}

/// A kernel: its descriptor's segments and its image's code object version.
pub struct Kernel {
    segments: KernelSegments,
    code_object_version: u8,
}

/// An executable loaded on one device.
pub struct LoadedImage {
    executable: Executable,
    device: i32,
    code_object_version: u8,
}

// SAFETY: the queue pointer is used only under its device's mutex; HSA objects may be used from
// any thread.
unsafe impl Send for Gpu {}
// SAFETY: as above.
unsafe impl Sync for Gpu {}

/// The queue error callback: records the status for the waiting launch. Must not unwind.
unsafe extern "C" fn on_queue_error(status: hsa_sys::Status, _queue: *mut hsa_sys::Queue, data: *mut c_void) {
    if !data.is_null() {
        // SAFETY: `data` is the queue's boxed error flag, alive until the queue is destroyed.
        unsafe { &*data.cast::<AtomicU32>() }.store(status.max(1), Ordering::Release);
    }
}

impl Amdgpu {
    fn describe_gpu(hsa: &Runtime, agent: Agent) -> Result<Gpu> {
        let name = hsa.agent_name(agent)?;
        let isas = hsa.isa_names(agent)?;
        let target = isas
            .iter()
            .find_map(|isa| TargetId::from_isa_name(isa))
            .ok_or_else(|| PluginError::Backend(format!("GPU agent {name}: no known ISA among {isas:?}")))?;
        let mut device_pool = None;
        for pool in hsa.memory_pools(agent)? {
            if hsa.pool_has(pool, hsa_sys::GLOBAL_FLAG_COARSE_GRAINED)? {
                device_pool = Some(pool);
                break;
            }
        }
        let device_pool = device_pool.ok_or_else(|| {
            PluginError::Backend(format!("GPU agent {name} has no coarse-grained global pool"))
        })?;
        let u32_info = |attribute| {
            // SAFETY: every attribute asked for below is documented as a uint32_t.
            unsafe { hsa.agent_info::<u32>(agent, attribute) }
        };
        use hsa_sys::agent_info as info;
        let compute_units = u32_info(info::COMPUTE_UNIT_COUNT)?;
        // LLVM falls back to 0 where an older runtime lacks the attribute.
        // SAFETY: TIMESTAMP_FREQUENCY is a uint64_t.
        let clock_hz = unsafe { hsa.agent_info::<u64>(agent, info::TIMESTAMP_FREQUENCY) }.unwrap_or(0);
        let (queue_min, queue_max) = (u32_info(info::QUEUE_MIN_SIZE)?, u32_info(info::QUEUE_MAX_SIZE)?);
        let max_threads_per_block = u32_info(info::WORKGROUP_MAX_SIZE)?.max(1);
        Ok(Gpu {
            agent,
            target,
            device_pool,
            info: DeviceInfo {
                limits: DeviceLimits {
                    max_threads_per_block,
                    // The grid limit counts work-items; LLVM's `GV_Max_Teams` divides it by the
                    // largest workgroup.
                    max_blocks: u32_info(info::GRID_MAX_SIZE)? / max_threads_per_block,
                    warp_size: u32_info(info::WAVEFRONT_SIZE)?,
                    multiprocessors: compute_units,
                    default_threads: DEFAULT_THREADS,
                },
                clock_hz,
                hardware_parallelism: compute_units as u64 * u32_info(info::MAX_WAVES_PER_CU)? as u64,
                memory_pool_bytes: MEMORY_POOL_BYTES,
            },
            queue_size: QUEUE_SIZE.clamp(queue_min.max(1), queue_max.max(1)).next_power_of_two(),
            queue: Mutex::new(None),
        })
    }

    fn find_host_pools(hsa: &Runtime, agents: &[Agent]) -> Result<HostPools> {
        let (mut kernarg, mut fine_grained) = (None, None);
        for &agent in agents {
            // SAFETY: DEVICE is a hsa_device_type_t (u32).
            if unsafe { hsa.agent_info::<u32>(agent, hsa_sys::agent_info::DEVICE) }?
                != hsa_sys::DEVICE_TYPE_CPU
            {
                continue;
            }
            for pool in hsa.memory_pools(agent)? {
                if kernarg.is_none() && hsa.pool_has(pool, hsa_sys::GLOBAL_FLAG_KERNARG_INIT)? {
                    kernarg = Some(pool);
                }
                if fine_grained.is_none() && hsa.pool_has(pool, hsa_sys::GLOBAL_FLAG_FINE_GRAINED)? {
                    fine_grained = Some(pool);
                }
            }
        }
        match (kernarg, fine_grained) {
            (Some(kernarg), Some(fine_grained)) => Ok(HostPools { kernarg, fine_grained }),
            _ => Err(PluginError::Backend("no host kernarg and fine-grained memory pools".into())),
        }
    }

    fn host(&self) -> Result<&HostPools> {
        self.host.as_ref().ok_or_else(|| PluginError::Backend("no host memory pools".into()))
    }

    /// Runs `f` with the device's queue, creating it if needed.
    fn with_queue<T>(&self, device: i32, f: impl FnOnce(&GpuQueue) -> Result<T>) -> Result<T> {
        let gpu = &self.gpus[device as usize];
        let mut slot = gpu.queue.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let error = Box::new(AtomicU32::new(0));
            let data = (&*error as *const AtomicU32).cast_mut().cast();
            // SAFETY: `data` is the boxed flag `on_queue_error` stores to, kept with the queue.
            let queue = unsafe { self.hsa.create_queue(gpu.agent, gpu.queue_size, on_queue_error, data) }?;
            let completion = match self.hsa.signal(0) {
                Ok(signal) => signal,
                Err(err) => {
                    // SAFETY: created above, nothing submitted.
                    let _ = unsafe { self.hsa.destroy_queue(queue) };
                    return Err(err.into());
                }
            };
            *slot = Some(GpuQueue { queue, error, completion });
        }
        let queue = slot.as_ref().expect("created above");
        let result = f(queue);
        if queue.error.load(Ordering::Acquire) != 0 {
            // A failed queue accepts nothing more: the next launch gets a fresh one.
            let failed = slot.take().expect("present");
            self.destroy_queue(failed);
        }
        result
    }

    fn destroy_queue(&self, queue: GpuQueue) {
        // SAFETY: every dispatch on it completed or failed (launches wait under the device lock).
        let _ = unsafe { self.hsa.destroy_queue(queue.queue) };
        let _ = self.hsa.destroy_signal(queue.completion);
    }

    /// Publishes one dispatch packet on `queue` and waits for it.
    fn dispatch(&self, queue: &GpuQueue, packet: &hsa_sys::KernelDispatchPacket) -> Result<()> {
        let q = queue.queue;
        self.hsa.store_relaxed(queue.completion, 1);
        // SAFETY: a live queue of this runtime, used under the device's queue lock.
        let index = unsafe { self.hsa.reserve_packet(q) };
        // SAFETY: as above; `size` and `base_address` are constant for the queue's life.
        let (size, base) = unsafe { ((*q).size as u64, (*q).base_address.cast::<u8>()) };
        // SAFETY: as above. Launches are synchronous, so at most this packet is outstanding and
        // the wait ends as soon as the packet processor has read the previous one.
        while index.wrapping_sub(unsafe { self.hsa.read_index(q) }) >= size {
            std::hint::spin_loop();
        }
        // SAFETY: the slot is inside the ring (index masked by size - 1, a power of two), owned
        // by this writer until the header is published.
        let slot = unsafe { base.add(((index & (size - 1)) * 64) as usize) };
        let bytes = dispatch::packet_bytes(packet);
        // SAFETY: the slot's 64 bytes are writable; the header word goes last (below).
        unsafe { std::ptr::copy_nonoverlapping(bytes[4..].as_ptr(), slot.add(4), 60) };
        // SAFETY: packets are 64-byte aligned, so the first word is an aligned u32 the packet
        // processor reads atomically; release orders the body before it.
        unsafe { &*slot.cast::<AtomicU32>() }.store(dispatch::header_word(), Ordering::Release);
        // SAFETY: a live queue's doorbell signal.
        self.hsa.store_relaxed(unsafe { (*q).doorbell_signal }, index as i64);
        loop {
            if self.hsa.wait_zero(queue.completion, WAIT_SLICE) == 0 {
                return Ok(());
            }
            let status = queue.error.load(Ordering::Acquire);
            if status != 0 {
                return Err(PluginError::Backend(format!(
                    "the kernel failed on its HSA queue (hsa_status_t {status:#x}); the queue is replaced"
                )));
            }
        }
    }

    /// The staging buffer, allocated on first use.
    fn with_staging<T>(&self, f: impl FnOnce(u64) -> Result<T>) -> Result<T> {
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        let buffer = match *staging {
            Some(buffer) => buffer,
            None => {
                let buffer = self.hsa.allocate(self.host()?.fine_grained, STAGING_SIZE, &self.gpu_agents)?;
                *staging = Some(buffer);
                buffer
            }
        };
        f(buffer)
    }

    fn kernel_segments(&self, image: &LoadedImage, kernel: &str) -> Result<Option<KernelSegments>> {
        let agent = self.gpus[image.device as usize].agent;
        let Some(symbol) =
            self.hsa.symbol(image.executable, &symbol_name(&format!("{kernel}.kd"))?, agent)?
        else {
            return Ok(None);
        };
        use hsa_sys::symbol_info as info;
        // SAFETY: each attribute's documented type is the one asked for (uint64_t, uint32_t, bool).
        unsafe {
            Ok(Some(KernelSegments {
                kernel_object: self.hsa.symbol_info::<u64>(symbol, info::KERNEL_OBJECT)?,
                kernarg_size: self.hsa.symbol_info::<u32>(symbol, info::KERNEL_KERNARG_SEGMENT_SIZE)?,
                group_size: self.hsa.symbol_info::<u32>(symbol, info::KERNEL_GROUP_SEGMENT_SIZE)?,
                private_size: self.hsa.symbol_info::<u32>(symbol, info::KERNEL_PRIVATE_SEGMENT_SIZE)?,
                dynamic_callstack: self.hsa.symbol_info::<bool>(symbol, info::KERNEL_DYNAMIC_CALLSTACK)?,
            }))
        }
    }
}

impl Backend for Amdgpu {
    type Image = LoadedImage;
    type Kernel = Kernel;
    const NAME: &'static str = "amdgpu";

    fn init() -> Result<Self> {
        let hsa = Runtime::load(hsa::LIBRARY)?;
        let agents = hsa.agents()?;
        let mut gpus = Vec::new();
        for &agent in &agents {
            // SAFETY: DEVICE is a hsa_device_type_t, FEATURE a hsa_agent_feature_t mask (u32).
            let (kind, features) = unsafe {
                (
                    hsa.agent_info::<u32>(agent, hsa_sys::agent_info::DEVICE)?,
                    hsa.agent_info::<u32>(agent, hsa_sys::agent_info::FEATURE)?,
                )
            };
            if kind == hsa_sys::DEVICE_TYPE_GPU && features & hsa_sys::AGENT_FEATURE_KERNEL_DISPATCH != 0 {
                gpus.push(Self::describe_gpu(&hsa, agent)?);
            }
        }
        let host = if gpus.is_empty() { None } else { Some(Self::find_host_pools(&hsa, &agents)?) };
        Ok(Amdgpu {
            gpu_agents: gpus.iter().map(|g| g.agent).collect(),
            gpus,
            host,
            staging: Mutex::new(None),
            hsa,
        })
    }

    fn device_count(&self) -> i32 {
        self.gpus.len() as i32
    }

    fn check_image(&self, image: &DeviceImage<'_>, _arch: Option<&str>) -> Result<()> {
        if let Some(triple) = image.triple.as_deref().filter(|t| !t.starts_with("amdgcn")) {
            return Err(PluginError::InvalidImage(format!("packaged for {triple}, not amdgcn")));
        }
        let target = code_object::target_id(image.bytes).map_err(|e| PluginError::InvalidImage(e.0))?;
        let mut reasons = Vec::new();
        for gpu in &self.gpus {
            match target.check_runs_on(&gpu.target) {
                Ok(()) => return Ok(()),
                Err(why) => reasons.push(why),
            }
        }
        Err(PluginError::InvalidImage(format!(
            "code object for {target} runs on no device: {}",
            reasons.join("; ")
        )))
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.with_queue(device, |_| Ok(()))
    }

    fn device_info(&self, device: i32) -> Option<DeviceInfo> {
        Some(self.gpus[device as usize].info)
    }

    fn load_image(&self, device: i32, bytes: &[u8]) -> Result<LoadedImage> {
        let gpu = &self.gpus[device as usize];
        let target = code_object::target_id(bytes).map_err(|e| PluginError::InvalidImage(e.0))?;
        target.check_runs_on(&gpu.target).map_err(PluginError::InvalidImage)?;
        let code_object_version =
            code_object::code_object_version(bytes).map_err(|e| PluginError::InvalidImage(e.0))?;
        let executable = self.hsa.load_executable(gpu.agent, bytes)?;
        Ok(LoadedImage { executable, device, code_object_version })
    }

    fn unload_image(&self, _device: i32, image: LoadedImage) -> Result<()> {
        // SAFETY: the core unloads under the device's launch gate after withdrawing the image's
        // kernel handles and globals, so none of its kernels runs or can be launched.
        Ok(unsafe { self.hsa.destroy_executable(image.executable) }?)
    }

    fn kernel(&self, image: &LoadedImage, kernel: &str) -> Result<Option<Kernel>> {
        let Some(segments) = self.kernel_segments(image, kernel)? else {
            return Ok(None);
        };
        Ok(Some(Kernel { segments, code_object_version: image.code_object_version }))
    }

    fn global(&self, image: &LoadedImage, name: &str) -> Result<Option<DeviceSymbol>> {
        let agent = self.gpus[image.device as usize].agent;
        let Some(symbol) = self.hsa.symbol(image.executable, &symbol_name(name)?, agent)? else {
            return Ok(None);
        };
        use hsa_sys::symbol_info as info;
        // SAFETY: VARIABLE_ADDRESS is a uint64_t, VARIABLE_SIZE a uint32_t.
        let (addr, size) = unsafe {
            (
                self.hsa.symbol_info::<u64>(symbol, info::VARIABLE_ADDRESS)?,
                self.hsa.symbol_info::<u32>(symbol, info::VARIABLE_SIZE)?,
            )
        };
        Ok(Some(DeviceSymbol { addr, size: Some(size as u64), writable: true }))
    }

    fn alloc(&self, device: i32, size: usize, kind: AllocKind) -> Result<u64> {
        let size = size.max(1);
        match kind {
            // Host memory every GPU can access, as LLVM's plugin gives both kinds.
            AllocKind::Host | AllocKind::Shared => {
                Ok(self.hsa.allocate(self.host()?.fine_grained, size, &self.gpu_agents)?)
            }
            AllocKind::Device => {
                let gpu = &self.gpus[device as usize];
                Ok(self.hsa.allocate(gpu.device_pool, size, &[gpu.agent])?)
            }
        }
    }

    fn free(&self, _device: i32, ptr: u64, _kind: AllocKind) -> Result<()> {
        // SAFETY: libomptarget frees only what `alloc` returned, once.
        Ok(unsafe { self.hsa.free(ptr) }?)
    }

    fn write(&self, _device: i32, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.with_staging(|staging| {
            for (i, chunk) in src.chunks(STAGING_SIZE).enumerate() {
                // SAFETY: the staging buffer is host memory of STAGING_SIZE bytes, used under its lock.
                unsafe { std::ptr::copy_nonoverlapping(chunk.as_ptr(), staging as *mut u8, chunk.len()) };
                // SAFETY: `dst` is device memory or a loaded global of at least `src.len()` bytes
                // (the caller's contract); the staging buffer is a pool allocation.
                unsafe { self.hsa.copy(dst + (i * STAGING_SIZE) as u64, staging, chunk.len()) }?;
            }
            Ok(())
        })
    }

    fn read(&self, _device: i32, dst: &mut [u8], src: u64) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.with_staging(|staging| {
            for (i, chunk) in dst.chunks_mut(STAGING_SIZE).enumerate() {
                // SAFETY: as in `write`, the other way round.
                unsafe { self.hsa.copy(staging, src + (i * STAGING_SIZE) as u64, chunk.len()) }?;
                // SAFETY: the copy completed; the staging buffer holds `chunk.len()` bytes.
                unsafe {
                    std::ptr::copy_nonoverlapping(staging as *const u8, chunk.as_mut_ptr(), chunk.len())
                };
            }
            Ok(())
        })
    }

    fn launch(&self, device: i32, kernel: &Kernel, launch: &Launch<'_>) -> Result<()> {
        let geometry = Geometry {
            blocks: launch.blocks,
            threads: launch.threads,
            dynamic_lds: launch.dynamic_shared_bytes,
        };
        let segment = dispatch::kernarg_segment(
            launch.args,
            kernel.segments.kernarg_size,
            kernel.code_object_version,
            &geometry,
        )?;
        let kernargs = self.hsa.allocate(self.host()?.kernarg, segment.len().max(1), &self.gpu_agents)?;
        // SAFETY: kernarg memory is host memory of at least `segment.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(segment.as_ptr(), kernargs as *mut u8, segment.len()) };
        let result = self.with_queue(device, |queue| {
            let packet = dispatch::dispatch_packet(
                &kernel.segments,
                &geometry,
                kernargs,
                dispatch::DEFAULT_STACK_SIZE,
                queue.completion,
            )?;
            self.dispatch(queue, &packet)
        });
        // SAFETY: the dispatch completed (or never started); nothing reads the arguments now.
        let freed = unsafe { self.hsa.free(kernargs) };
        result.and(freed.map_err(PluginError::from))
    }
}

impl Drop for Amdgpu {
    fn drop(&mut self) {
        for gpu in &self.gpus {
            if let Some(queue) = gpu.queue.lock().unwrap_or_else(|e| e.into_inner()).take() {
                self.destroy_queue(queue);
            }
        }
        if let Some(staging) = self.staging.lock().unwrap_or_else(|e| e.into_inner()).take() {
            // SAFETY: allocated by `with_staging`; no copy runs during drop.
            let _ = unsafe { self.hsa.free(staging) };
        }
        // `hsa` shuts the runtime down when it is dropped, after this.
    }
}

// SAFETY: an executable handle may be used and destroyed from any thread.
unsafe impl Send for LoadedImage {}

plugin_core::export_plugin!(Amdgpu);
