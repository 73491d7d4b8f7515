//! The driver's calls as methods of [`Driver`] that each return a [`Result`]: status codes and
//! out-pointers stay here, callers see values and [`DriverError`]s. A machine without the driver
//! gets an error from [`Driver::load`], never a crash.

use std::ffi::{c_char, c_void, CStr};

use crate::error::{DriverError, Result};

use crate::sys::{
    CuDevice, CuDevicePtr, CuHandle, CuResult, Driver, CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NO_DEVICE,
    CUDA_SUCCESS, CU_EVENT_DEFAULT, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_MEM_ATTACH_GLOBAL,
};

impl Driver {
    /// Loads `libcuda.so.1` (or `library`) and resolves every function, then calls `cuInit`.
    pub fn load(library: &CStr) -> Result<Driver> {
        let driver = Driver::open(library).map_err(|cause| DriverError::Unusable {
            library: library.to_string_lossy().into_owned(),
            runtime: "NVIDIA driver",
            cause,
        })?;
        // SAFETY: resolved function, flags must be 0.
        driver.check("cuInit", unsafe { (driver.init)(0) })?;
        Ok(driver)
    }

    fn error_name(&self, code: CuResult) -> String {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: out pointer valid; the driver returns a static string or fails.
        if unsafe { (self.get_error_name)(code, &mut name) } == CUDA_SUCCESS && !name.is_null() {
            // SAFETY: static NUL-terminated string from the driver.
            return unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned();
        }
        format!("CUresult {code}")
    }

    fn check(&self, call: &'static str, code: CuResult) -> Result<()> {
        if code == CUDA_SUCCESS {
            Ok(())
        } else {
            Err(DriverError::Call { call, status: self.error_name(code) })
        }
    }

    /// Number of devices; 0 when the driver says there are none.
    pub fn device_count(&self) -> Result<i32> {
        let mut n = 0;
        // SAFETY: valid out pointer.
        let code = unsafe { (self.device_get_count)(&mut n) };
        if code == CUDA_ERROR_NO_DEVICE {
            return Ok(0);
        }
        self.check("cuDeviceGetCount", code)?;
        Ok(n)
    }

    /// The device handle of ordinal `ordinal`.
    pub fn device(&self, ordinal: i32) -> Result<CuDevice> {
        let mut dev = 0;
        // SAFETY: valid out pointer.
        self.check("cuDeviceGet", unsafe { (self.device_get)(&mut dev, ordinal) })?;
        Ok(dev)
    }

    /// One integer attribute of a device.
    pub fn attribute(&self, dev: CuDevice, attribute: i32) -> Result<i32> {
        let mut value = 0;
        // SAFETY: valid out pointer.
        self.check("cuDeviceGetAttribute", unsafe {
            (self.device_get_attribute)(&mut value, attribute, dev)
        })?;
        Ok(value)
    }

    /// Retains the device's primary context.
    pub fn retain_primary_context(&self, dev: CuDevice) -> Result<CuHandle> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        self.check("cuDevicePrimaryCtxRetain", unsafe { (self.primary_ctx_retain)(&mut ctx, dev) })?;
        Ok(ctx)
    }

    /// Releases a primary context retained by [`Driver::retain_primary_context`].
    pub fn release_primary_context(&self, dev: CuDevice) -> Result<()> {
        // SAFETY: plain call.
        self.check("cuDevicePrimaryCtxRelease", unsafe { (self.primary_ctx_release)(dev) })
    }

    /// Makes `ctx` current on the calling thread.
    ///
    /// # Safety
    /// `ctx` is a context from [`Driver::retain_primary_context`] of this driver, still retained.
    pub unsafe fn set_current(&self, ctx: CuHandle) -> Result<()> {
        // SAFETY: a context from retain_primary_context.
        self.check("cuCtxSetCurrent", unsafe { (self.ctx_set_current)(ctx) })
    }

    /// Waits for all work of the current context.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: plain call.
        self.check("cuCtxSynchronize", unsafe { (self.ctx_synchronize)() })
    }

    /// Loads a cubin or (NUL-terminated) PTX image into the current context.
    pub fn load_module(&self, image: &[u8]) -> Result<CuHandle> {
        let mut module = std::ptr::null_mut();
        // SAFETY: `image` is readable; the driver reads at most its ELF size / up to NUL.
        let code = unsafe {
            (self.module_load_data_ex)(
                &mut module,
                image.as_ptr().cast(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        self.check("cuModuleLoadDataEx", code)?;
        Ok(module)
    }

    /// Unloads a module.
    ///
    /// # Safety
    /// `module` is a module from [`Driver::load_module`] of this driver, not yet unloaded.
    pub unsafe fn unload_module(&self, module: CuHandle) -> Result<()> {
        // SAFETY: a module from load_module, unloaded once.
        self.check("cuModuleUnload", unsafe { (self.module_unload)(module) })
    }

    /// Kernel `name` of `module`, `None` if absent.
    ///
    /// # Safety
    /// `module` is a loaded module of this driver.
    pub unsafe fn function(&self, module: CuHandle, name: &CStr) -> Result<Option<CuHandle>> {
        let mut f = std::ptr::null_mut();
        // SAFETY: valid module, name and out pointer.
        let code = unsafe { (self.module_get_function)(&mut f, module, name.as_ptr()) };
        if code == CUDA_ERROR_NOT_FOUND {
            return Ok(None);
        }
        self.check("cuModuleGetFunction", code)?;
        Ok(Some(f))
    }

    /// Address and size of global `name` of `module`, `None` if absent.
    ///
    /// # Safety
    /// `module` is a loaded module of this driver.
    pub unsafe fn global(&self, module: CuHandle, name: &CStr) -> Result<Option<(CuDevicePtr, usize)>> {
        let (mut ptr, mut size) = (0, 0);
        // SAFETY: valid module, name and out pointers.
        let code = unsafe { (self.module_get_global)(&mut ptr, &mut size, module, name.as_ptr()) };
        if code == CUDA_ERROR_NOT_FOUND {
            return Ok(None);
        }
        self.check("cuModuleGetGlobal", code)?;
        Ok(Some((ptr, size)))
    }

    /// The most threads per block kernel `f` can be launched with.
    ///
    /// # Safety
    /// `f` is a kernel of a loaded module of this driver.
    pub unsafe fn max_threads_per_block(&self, f: CuHandle) -> Result<u32> {
        let mut value = 0;
        // SAFETY: a live function handle and a valid out pointer.
        self.check("cuFuncGetAttribute", unsafe {
            (self.func_get_attribute)(&mut value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f)
        })?;
        Ok(value.max(0) as u32)
    }

    /// `cuMemAllocHost`: page-locked host memory the device can access.
    pub fn alloc_host(&self, size: usize) -> Result<CuDevicePtr> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        self.check("cuMemAllocHost", unsafe { (self.mem_alloc_host)(&mut ptr, size) })?;
        Ok(ptr as CuDevicePtr)
    }

    /// `cuMemFreeHost`.
    pub fn free_host(&self, ptr: CuDevicePtr) -> Result<()> {
        // SAFETY: a pointer from alloc_host (the caller's registry says so).
        self.check("cuMemFreeHost", unsafe { (self.mem_free_host)(ptr as *mut c_void) })
    }

    /// `cuMemAllocManaged` (attached globally): memory host and device both address.
    pub fn alloc_managed(&self, size: usize) -> Result<CuDevicePtr> {
        let mut ptr = 0;
        // SAFETY: valid out pointer.
        self.check("cuMemAllocManaged", unsafe {
            (self.mem_alloc_managed)(&mut ptr, size, CU_MEM_ATTACH_GLOBAL)
        })?;
        Ok(ptr)
    }

    /// A new event of the current context (`CU_EVENT_DEFAULT`: timing enabled).
    pub fn event(&self) -> Result<CuHandle> {
        let mut event = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        self.check("cuEventCreate", unsafe { (self.event_create)(&mut event, CU_EVENT_DEFAULT) })?;
        Ok(event)
    }

    /// Records `event` on the default stream.
    ///
    /// # Safety
    /// `event` is a live event of this driver's current context.
    pub unsafe fn record(&self, event: CuHandle) -> Result<()> {
        // SAFETY: a live event; the null stream is the default stream.
        self.check("cuEventRecord", unsafe { (self.event_record)(event, std::ptr::null_mut()) })
    }

    /// Milliseconds the device took from `start` to `end`, once `end` completed.
    ///
    /// # Safety
    /// Both are live events of this driver, recorded.
    pub unsafe fn elapsed_ms(&self, start: CuHandle, end: CuHandle) -> Result<f32> {
        // SAFETY: a live, recorded event.
        self.check("cuEventSynchronize", unsafe { (self.event_synchronize)(end) })?;
        let mut ms = 0.0;
        // SAFETY: live recorded events and a valid out pointer.
        self.check("cuEventElapsedTime", unsafe { (self.event_elapsed_time)(&mut ms, start, end) })?;
        Ok(ms)
    }

    /// Destroys an event.
    ///
    /// # Safety
    /// `event` is a live event of this driver, destroyed once.
    pub unsafe fn destroy_event(&self, event: CuHandle) -> Result<()> {
        // SAFETY: the caller's contract.
        self.check("cuEventDestroy", unsafe { (self.event_destroy)(event) })
    }

    /// `cuMemAlloc` in the current context.
    pub fn alloc(&self, size: usize) -> Result<CuDevicePtr> {
        let mut ptr = 0;
        // SAFETY: valid out pointer.
        self.check("cuMemAlloc", unsafe { (self.mem_alloc)(&mut ptr, size) })?;
        Ok(ptr)
    }

    /// `cuMemFree`.
    pub fn free(&self, ptr: CuDevicePtr) -> Result<()> {
        // SAFETY: a pointer from alloc (libomptarget's contract).
        self.check("cuMemFree", unsafe { (self.mem_free)(ptr) })
    }

    /// (free, total) device memory of the current context.
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        let (mut free, mut total) = (0, 0);
        // SAFETY: valid out pointers.
        self.check("cuMemGetInfo", unsafe { (self.mem_get_info)(&mut free, &mut total) })?;
        Ok((free, total))
    }

    /// Synchronous host-to-device copy.
    pub fn write(&self, dst: CuDevicePtr, src: &[u8]) -> Result<()> {
        // SAFETY: `src` readable; `dst` is device memory of at least src.len() bytes by contract.
        self.check("cuMemcpyHtoD", unsafe { (self.memcpy_htod)(dst, src.as_ptr().cast(), src.len()) })
    }

    /// Synchronous device-to-host copy.
    pub fn read(&self, dst: &mut [u8], src: CuDevicePtr) -> Result<()> {
        // SAFETY: `dst` writable; `src` is device memory of at least dst.len() bytes by contract.
        self.check("cuMemcpyDtoH", unsafe { (self.memcpy_dtoh)(dst.as_mut_ptr().cast(), src, dst.len()) })
    }

    /// Launches `f` on the default stream of the current context with `params` (one pointer per
    /// kernel parameter, each to its value).
    ///
    /// # Safety
    /// `f` is a kernel of a loaded module, and `params` holds one pointer per kernel parameter, each
    /// to a value of that parameter's type and size.
    pub unsafe fn launch(
        &self,
        f: CuHandle,
        blocks: u32,
        threads: u32,
        shared: u32,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        // SAFETY: `params` holds one valid pointer per kernel parameter (the caller's contract,
        // checked against the image's kernel by libomptarget's argument count).
        let code = unsafe {
            (self.launch_kernel)(
                f,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                shared,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.check("cuLaunchKernel", code)
    }
}
