//! The HSA runtime as `Result`-returning calls over [`sys::Functions`]: status codes become
//! [`HsaError`]s with the runtime's own description, out-parameters become return values.
//! Handles stay plain `Copy` values; the backend owns what it creates and destroys it.

use std::ffi::{c_char, c_void, CStr};

use vendor_library::VendorError;

use crate::error::{HsaError, Result};
use crate::sys::{self, Agent, Executable, ExecutableSymbol, Isa, MemoryPool, Signal, Status};

/// The library LLVM's AMDGPU plugin loads.
pub const LIBRARY: &CStr = c"libhsa-runtime64.so.1";

/// An initialised HSA runtime; `hsa_shut_down` on drop.
pub struct Runtime {
    f: sys::Functions,
}

/// Collects every item an HSA iteration function hands its callback.
unsafe extern "C" fn collect<T>(item: T, data: *mut c_void) -> Status {
    // SAFETY: `data` is the `Vec<T>` the iterating caller passed, alive for the call.
    unsafe { &mut *data.cast::<Vec<T>>() }.push(item);
    sys::STATUS_SUCCESS
}

impl Runtime {
    /// Loads `library`, resolves every function, and calls `hsa_init`. Without the library, or
    /// without a GPU driver (`/dev/kfd`), this is an error and nothing stays loaded.
    pub fn load(library: &CStr) -> Result<Runtime> {
        let f = sys::Functions::open(library).map_err(|cause| VendorError::Unusable {
            library: library.to_string_lossy().into_owned(),
            runtime: "ROCm HSA runtime",
            cause,
        })?;
        // SAFETY: resolved function without arguments.
        let status = unsafe { (f.init)() };
        if status != sys::STATUS_SUCCESS {
            return Err(VendorError::Call { call: "hsa_init", status: describe(&f, status) }.into());
        }
        Ok(Runtime { f })
    }

    fn check(&self, call: &'static str, status: Status) -> Result<()> {
        match status {
            sys::STATUS_SUCCESS | sys::STATUS_INFO_BREAK => Ok(()),
            _ => Err(VendorError::Call { call, status: describe(&self.f, status) }.into()),
        }
    }

    /// All agents (CPUs and GPUs), in the runtime's order.
    pub fn agents(&self) -> Result<Vec<Agent>> {
        let mut agents = Vec::<Agent>::new();
        // SAFETY: `collect::<Agent>` matches the callback type; `agents` outlives the call.
        let status =
            unsafe { (self.f.iterate_agents)(collect::<Agent>, (&mut agents as *mut Vec<Agent>).cast()) };
        self.check("hsa_iterate_agents", status)?;
        Ok(agents)
    }

    /// Agent attribute `attribute` of type `T` (the type the header documents for it).
    ///
    /// # Safety
    /// `T` is the attribute's documented type (or a type of the same size and validity).
    pub unsafe fn agent_info<T: Default>(&self, agent: Agent, attribute: u32) -> Result<T> {
        let mut value = T::default();
        // SAFETY: `value` has the size the runtime writes for `attribute` (caller's contract).
        let status = unsafe { (self.f.agent_get_info)(agent, attribute, (&mut value as *mut T).cast()) };
        self.check("hsa_agent_get_info", status)?;
        Ok(value)
    }

    /// `HSA_AGENT_INFO_NAME`.
    pub fn agent_name(&self, agent: Agent) -> Result<String> {
        let mut name = [0u8; 64];
        // SAFETY: the attribute is `char[64]`.
        let status =
            unsafe { (self.f.agent_get_info)(agent, sys::agent_info::NAME, name.as_mut_ptr().cast()) };
        self.check("hsa_agent_get_info", status)?;
        Ok(c_string(&name))
    }

    /// The ISA names of `agent` (`amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`).
    pub fn isa_names(&self, agent: Agent) -> Result<Vec<String>> {
        let mut isas = Vec::<Isa>::new();
        // SAFETY: `collect::<Isa>` matches the callback type; `isas` outlives the call.
        let status = unsafe {
            (self.f.agent_iterate_isas)(agent, collect::<Isa>, (&mut isas as *mut Vec<Isa>).cast())
        };
        self.check("hsa_agent_iterate_isas", status)?;
        let mut names = Vec::with_capacity(isas.len());
        for isa in isas {
            let mut length = 0u32;
            // SAFETY: NAME_LENGTH is a uint32_t.
            let status = unsafe {
                (self.f.isa_get_info_alt)(isa, sys::ISA_INFO_NAME_LENGTH, (&mut length as *mut u32).cast())
            };
            self.check("hsa_isa_get_info_alt", status)?;
            let mut name = vec![0u8; length as usize + 1];
            // SAFETY: NAME writes `length` bytes; the buffer has one more.
            let status =
                unsafe { (self.f.isa_get_info_alt)(isa, sys::ISA_INFO_NAME, name.as_mut_ptr().cast()) };
            self.check("hsa_isa_get_info_alt", status)?;
            names.push(c_string(&name));
        }
        Ok(names)
    }

    /// The memory pools of `agent`.
    pub fn memory_pools(&self, agent: Agent) -> Result<Vec<MemoryPool>> {
        let mut pools = Vec::<MemoryPool>::new();
        // SAFETY: `collect::<MemoryPool>` matches the callback type; `pools` outlives the call.
        let status = unsafe {
            (self.f.agent_iterate_memory_pools)(
                agent,
                collect::<MemoryPool>,
                (&mut pools as *mut Vec<MemoryPool>).cast(),
            )
        };
        self.check("hsa_amd_agent_iterate_memory_pools", status)?;
        Ok(pools)
    }

    /// Whether `pool` is a global pool the runtime allocates from, with all of `flags`.
    pub fn pool_has(&self, pool: MemoryPool, flags: u32) -> Result<bool> {
        let (mut segment, mut global_flags, mut allowed) = (u32::MAX, 0u32, false);
        for (attribute, value) in [
            (sys::pool_info::SEGMENT, (&mut segment as *mut u32).cast::<c_void>()),
            (sys::pool_info::GLOBAL_FLAGS, (&mut global_flags as *mut u32).cast()),
            (sys::pool_info::RUNTIME_ALLOC_ALLOWED, (&mut allowed as *mut bool).cast()),
        ] {
            // SAFETY: SEGMENT is an enum (u32), GLOBAL_FLAGS a uint32_t, RUNTIME_ALLOC_ALLOWED a bool.
            let status = unsafe { (self.f.memory_pool_get_info)(pool, attribute, value) };
            self.check("hsa_amd_memory_pool_get_info", status)?;
        }
        Ok(segment == sys::SEGMENT_GLOBAL && allowed && global_flags & flags == flags)
    }

    /// Allocates `size` bytes from `pool` and lets `agents` access them.
    pub fn allocate(&self, pool: MemoryPool, size: usize, agents: &[Agent]) -> Result<u64> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: valid pool and out pointer; flags must be 0.
        self.check("hsa_amd_memory_pool_allocate", unsafe {
            (self.f.memory_pool_allocate)(pool, size, 0, &mut ptr)
        })?;
        // SAFETY: `ptr` was just allocated; `agents` is a valid array; null flags are allowed.
        let status = unsafe {
            (self.f.agents_allow_access)(agents.len() as u32, agents.as_ptr(), std::ptr::null(), ptr)
        };
        if let Err(err) = self.check("hsa_amd_agents_allow_access", status) {
            // SAFETY: allocated above, freed once on this failure path.
            unsafe { (self.f.memory_pool_free)(ptr) };
            return Err(err);
        }
        Ok(ptr as u64)
    }

    /// Frees memory from [`Runtime::allocate`].
    ///
    /// # Safety
    /// `ptr` came from [`Runtime::allocate`] and is not used after this.
    pub unsafe fn free(&self, ptr: u64) -> Result<()> {
        // SAFETY: a pool allocation (caller's contract).
        self.check("hsa_amd_memory_pool_free", unsafe { (self.f.memory_pool_free)(ptr as *mut c_void) })
    }

    /// `hsa_memory_copy`: a synchronous copy between memory the runtime knows (pool allocations,
    /// loaded globals).
    ///
    /// # Safety
    /// `dst` and `src` are valid for `size` bytes and known to the runtime.
    pub unsafe fn copy(&self, dst: u64, src: u64, size: usize) -> Result<()> {
        // SAFETY: the caller's contract.
        self.check("hsa_memory_copy", unsafe {
            (self.f.memory_copy)(dst as *mut c_void, src as *const c_void, size)
        })
    }

    /// A signal with initial value `value`, waited on by any agent.
    pub fn signal(&self, value: i64) -> Result<Signal> {
        let mut signal = Signal::default();
        // SAFETY: no consumer list; valid out pointer.
        self.check("hsa_signal_create", unsafe {
            (self.f.signal_create)(value, 0, std::ptr::null(), &mut signal)
        })?;
        Ok(signal)
    }

    /// Destroys a signal from [`Runtime::signal`].
    pub fn destroy_signal(&self, signal: Signal) -> Result<()> {
        // SAFETY: a signal this runtime created; destroying an unknown handle is an error status.
        self.check("hsa_signal_destroy", unsafe { (self.f.signal_destroy)(signal) })
    }

    /// Sets `signal` to `value` (the doorbell's "packet N is ready").
    pub fn store_relaxed(&self, signal: Signal, value: i64) {
        // SAFETY: a live signal.
        unsafe { (self.f.signal_store_relaxed)(signal, value) }
    }

    /// Waits up to about `timeout_ns` for `signal` to reach 0; its value then.
    pub fn wait_zero(&self, signal: Signal, timeout_ns: u64) -> i64 {
        // SAFETY: a live signal; EQ and BLOCKED are valid enumerators.
        unsafe {
            (self.f.signal_wait_scacquire)(
                signal,
                sys::SIGNAL_CONDITION_EQ,
                0,
                timeout_ns,
                sys::WAIT_STATE_BLOCKED,
            )
        }
    }

    /// An AQL queue of `size` packets on `agent`; `on_error` gets `data` when the queue fails.
    ///
    /// # Safety
    /// `data` is what `on_error` expects and stays valid until the queue is destroyed.
    pub unsafe fn create_queue(
        &self,
        agent: Agent,
        size: u32,
        on_error: sys::QueueErrorCallback,
        data: *mut c_void,
    ) -> Result<*mut sys::Queue> {
        let mut queue = std::ptr::null_mut();
        // SAFETY: valid agent and out pointer; UINT32_MAX segment sizes mean "no limit given" as
        // LLVM's plugin passes them; `data` outlives the queue (caller's contract).
        let status = unsafe {
            (self.f.queue_create)(
                agent,
                size,
                sys::QUEUE_TYPE_MULTI,
                Some(on_error),
                data,
                u32::MAX,
                u32::MAX,
                &mut queue,
            )
        };
        self.check("hsa_queue_create", status)?;
        Ok(queue)
    }

    /// Destroys a queue.
    ///
    /// # Safety
    /// `queue` came from [`Runtime::create_queue`], has no packet in flight and is not used after.
    pub unsafe fn destroy_queue(&self, queue: *mut sys::Queue) -> Result<()> {
        // SAFETY: the caller's contract.
        self.check("hsa_queue_destroy", unsafe { (self.f.queue_destroy)(queue) })
    }

    /// Reserves the next packet slot of `queue`; its index.
    ///
    /// # Safety
    /// `queue` is a live queue of this runtime.
    pub unsafe fn reserve_packet(&self, queue: *const sys::Queue) -> u64 {
        // SAFETY: the caller's contract.
        unsafe { (self.f.queue_add_write_index_relaxed)(queue, 1) }
    }

    /// The index of the next packet the packet processor will read.
    ///
    /// # Safety
    /// `queue` is a live queue of this runtime.
    pub unsafe fn read_index(&self, queue: *const sys::Queue) -> u64 {
        // SAFETY: the caller's contract.
        unsafe { (self.f.queue_load_read_index_scacquire)(queue) }
    }

    /// Reader -> executable -> load for `agent` -> freeze -> validate, as LLVM's plugin loads a
    /// code object. On failure everything created is destroyed again.
    pub fn load_executable(&self, agent: Agent, code_object: &[u8]) -> Result<Executable> {
        let mut reader = sys::CodeObjectReader::default();
        // SAFETY: `code_object` is readable; the reader only reads it while it lives (until the
        // end of this function).
        self.check("hsa_code_object_reader_create_from_memory", unsafe {
            (self.f.code_object_reader_create_from_memory)(
                code_object.as_ptr().cast(),
                code_object.len(),
                &mut reader,
            )
        })?;
        let mut executable = Executable::default();
        let empty: *const c_char = c"".as_ptr();
        // SAFETY: valid enumerators, empty options, valid out pointer.
        let created = self.check("hsa_executable_create_alt", unsafe {
            (self.f.executable_create_alt)(
                sys::PROFILE_FULL,
                sys::DEFAULT_FLOAT_ROUNDING_MODE_ZERO,
                empty,
                &mut executable,
            )
        });
        let was_created = created.is_ok();
        let loaded = created.and_then(|()| {
            let mut object = sys::LoadedCodeObject::default();
            // SAFETY: live executable, agent and reader; empty options.
            self.check("hsa_executable_load_agent_code_object", unsafe {
                (self.f.executable_load_agent_code_object)(executable, agent, reader, empty, &mut object)
            })?;
            // SAFETY: live executable.
            self.check("hsa_executable_freeze", unsafe { (self.f.executable_freeze)(executable, empty) })?;
            let mut invalid = 0u32;
            // SAFETY: live executable, valid out pointer.
            self.check("hsa_executable_validate", unsafe {
                (self.f.executable_validate)(executable, &mut invalid)
            })?;
            if invalid != 0 {
                return Err(HsaError::InvalidExecutable(invalid));
            }
            Ok(())
        });
        let destroyed = self.check(
            "hsa_code_object_reader_destroy",
            // SAFETY: the reader is not used after this; the executable keeps what it loaded.
            unsafe { (self.f.code_object_reader_destroy)(reader) },
        );
        match loaded.and(destroyed) {
            Ok(()) => Ok(executable),
            Err(err) => {
                if was_created {
                    // SAFETY: created above, destroyed once on this failure path.
                    let _ = unsafe { self.destroy_executable(executable) };
                }
                Err(err)
            }
        }
    }

    /// Destroys an executable and frees what it loaded.
    ///
    /// # Safety
    /// `executable` came from [`Runtime::load_executable`]; no kernel of it runs, and none of its
    /// symbols is used after this.
    pub unsafe fn destroy_executable(&self, executable: Executable) -> Result<()> {
        // SAFETY: the caller's contract.
        self.check("hsa_executable_destroy", unsafe { (self.f.executable_destroy)(executable) })
    }

    /// Symbol `name` of `executable` for `agent`, `None` if it has none.
    pub fn symbol(
        &self,
        executable: Executable,
        name: &CStr,
        agent: Agent,
    ) -> Result<Option<ExecutableSymbol>> {
        let mut symbol = ExecutableSymbol::default();
        // SAFETY: live handles, NUL-terminated name, valid out pointer.
        let status =
            unsafe { (self.f.executable_get_symbol_by_name)(executable, name.as_ptr(), &agent, &mut symbol) };
        if status == sys::STATUS_ERROR_INVALID_SYMBOL_NAME {
            return Ok(None);
        }
        self.check("hsa_executable_get_symbol_by_name", status)?;
        Ok(Some(symbol))
    }

    /// Symbol attribute `attribute` of type `T`.
    ///
    /// # Safety
    /// `T` is the attribute's documented type (or a type of the same size and validity).
    pub unsafe fn symbol_info<T: Default>(&self, symbol: ExecutableSymbol, attribute: u32) -> Result<T> {
        let mut value = T::default();
        // SAFETY: `value` has the size the runtime writes for `attribute` (caller's contract).
        let status =
            unsafe { (self.f.executable_symbol_get_info)(symbol, attribute, (&mut value as *mut T).cast()) };
        self.check("hsa_executable_symbol_get_info", status)?;
        Ok(value)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: hsa_init succeeded in `load`; each successful init is paired with one shut-down.
        unsafe { (self.f.shut_down)() };
    }
}

/// The runtime's description of `status`.
fn describe(f: &sys::Functions, status: Status) -> String {
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: valid out pointer; the runtime answers with a static string (it does so even before
    // hsa_init succeeds).
    if unsafe { (f.status_string)(status, &mut text) } == sys::STATUS_SUCCESS && !text.is_null() {
        // SAFETY: static NUL-terminated string from the runtime.
        return unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned();
    }
    format!("hsa_status_t {status:#x}")
}

/// The text of a NUL-padded C string buffer.
fn c_string(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}
