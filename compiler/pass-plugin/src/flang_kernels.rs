//! flang's kernels on the x86_64 device of an offload runtime that calls kernels with one
//! argument array (libomptarget 23's host plugin: `void kernel(void **args)`, `args[i]` pointing
//! to argument `i`).
//!
//! clang compiles an x86_64 target region to that signature. flang builds every target region
//! as a GPU kernel, `void kernel(T0 a0, ..., ptr dyn_ptr)`, whose entry block hands its last
//! parameter, the launch environment, to `__kmpc_target_init`; libomptarget 22 called such a
//! kernel with each argument in its place (libffi), libomptarget 23 passes the array as the first
//! argument, and the kernel reads garbage. So in flang's x86_64 device modules each such kernel
//! is renamed and made internal, and a function of the kernel's own name and the runtime's
//! signature takes its place in the offload entry: it loads each argument through the array and
//! calls the kernel with a null launch environment (the x86_64 device library's
//! `__kmpc_target_init` reads none).

use std::ffi::CString;

use crate::ir::value_name;
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMLinkage;
use crate::translation::Pass;

/// The suffix of the kernel's own body once its name is the adapter's.
const BODY_SUFFIX: &str = ".flang_kernel";

/// Whether `module` needs the adapters: an x86_64 device module built by flang for a runtime of
/// this plugin's release whose host plugin passes one argument array.
///
/// # Safety
/// `module` must be a valid module.
unsafe fn needs_adapters(module: LLVMModuleRef) -> bool {
    if !cfg!(host_kernels_take_argument_array) {
        return false;
    }
    // SAFETY: valid module (caller); the triple is NUL-terminated.
    let triple = unsafe { std::ffi::CStr::from_ptr(LLVMGetTarget(module)) }.to_bytes();
    // SAFETY: as above.
    triple.starts_with(b"x86_64") && unsafe { built_by_flang(module) }
}

/// Whether `module`'s `llvm.ident` names flang.
///
/// # Safety
/// `module` must be a valid module.
unsafe fn built_by_flang(module: LLVMModuleRef) -> bool {
    // SAFETY: named metadata of a valid module, read through the C API's accessors.
    unsafe {
        let name = c"llvm.ident";
        let count = LLVMGetNamedMetadataNumOperands(module, name.as_ptr());
        if count == 0 {
            return false;
        }
        let mut operands = vec![std::ptr::null_mut(); count as usize];
        LLVMGetNamedMetadataOperands(module, name.as_ptr(), operands.as_mut_ptr());
        operands.into_iter().any(|node| {
            if LLVMGetMDNodeNumOperands(node) == 0 {
                return false;
            }
            let mut first = [std::ptr::null_mut()];
            LLVMGetMDNodeOperands(node, first.as_mut_ptr());
            let mut len = 0;
            let text = LLVMGetMDString(first[0], &mut len);
            !text.is_null()
                && std::slice::from_raw_parts(text.cast::<u8>(), len as usize)
                    .windows(5)
                    .any(|w| w == b"flang")
        })
    }
}

/// The kernels of `module` built as GPU kernels: defined functions with a kernel environment
/// (`<name>_kernel_environment`) and at least one parameter (the launch environment, last).
///
/// # Safety
/// `module` must be a valid module.
unsafe fn gpu_style_kernels(module: LLVMModuleRef) -> Vec<LLVMValueRef> {
    let mut kernels = Vec::new();
    // SAFETY: iteration over a valid module's functions.
    unsafe {
        let mut function = LLVMGetFirstFunction(module);
        while !function.is_null() {
            if LLVMIsDeclaration(function) == 0 && LLVMCountParams(function) >= 1 {
                if let Some(name) = value_name(function) {
                    let environment = CString::new(format!("{name}_kernel_environment"));
                    if environment.is_ok_and(|e| !LLVMGetNamedGlobal(module, e.as_ptr()).is_null()) {
                        kernels.push(function);
                    }
                }
            }
            function = LLVMGetNextFunction(function);
        }
    }
    kernels
}

impl Pass<'_> {
    /// The step that gives a device module adapters of the runtime's signature for flang's x86_64
    /// kernels ([`adapt_to_argument_array`]), counted in the summary.
    pub(crate) unsafe fn adapt_flang_kernels(&mut self) {
        // SAFETY: the pass's module is valid and only the pass accesses it.
        self.summary.adapted_kernels = unsafe { adapt_to_argument_array(self.module) };
    }
}

/// Gives every GPU-style kernel of a flang x86_64 device module an adapter of the runtime's
/// signature (see the module documentation). Returns how many kernels it adapted.
///
/// # Safety
/// `module` must be a valid module that no one else accesses during the call.
unsafe fn adapt_to_argument_array(module: LLVMModuleRef) -> usize {
    // SAFETY: valid module (caller).
    if !unsafe { needs_adapters(module) } {
        return 0;
    }
    // SAFETY: handles from `module`; each kernel is renamed before its adapter takes its name.
    unsafe {
        let kernels = gpu_style_kernels(module);
        let context = LLVMGetModuleContext(module);
        let ptr = LLVMPointerTypeInContext(context, 0);
        let i64_type = LLVMInt64TypeInContext(context);
        let void = LLVMVoidTypeInContext(context);
        for &kernel in &kernels {
            let Some(name) = value_name(kernel) else { continue };
            let Ok(body_name) = CString::new(format!("{name}{BODY_SUFFIX}")) else { continue };
            let Ok(adapter_name) = CString::new(name) else { continue };
            let kernel_type = LLVMGlobalGetValueType(kernel);
            let count = LLVMCountParamTypes(kernel_type) as usize;
            let mut params = vec![std::ptr::null_mut(); count];
            LLVMGetParamTypes(kernel_type, params.as_mut_ptr());
            let mut array_param = [ptr];
            let adapter_type = LLVMFunctionType(void, array_param.as_mut_ptr(), 1, 0);
            let adapter = LLVMAddFunction(module, c"".as_ptr(), adapter_type);
            // The offload entry and every other user now name the adapter.
            LLVMReplaceAllUsesWith(kernel, adapter);
            LLVMSetValueName2(kernel, body_name.as_ptr(), body_name.as_bytes().len());
            LLVMSetValueName2(adapter, adapter_name.as_ptr(), adapter_name.as_bytes().len());
            LLVMSetLinkage(adapter, LLVMGetLinkage(kernel));
            LLVMSetVisibility(adapter, LLVMGetVisibility(kernel));
            LLVMSetLinkage(kernel, LLVMLinkage::LLVMInternalLinkage);
            let builder = LLVMCreateBuilderInContext(context);
            LLVMPositionBuilderAtEnd(
                builder,
                LLVMAppendBasicBlockInContext(context, adapter, c"entry".as_ptr()),
            );
            let array = LLVMGetParam(adapter, 0);
            let mut args = Vec::with_capacity(count);
            for (i, &param) in params.iter().enumerate().take(count - 1) {
                let mut index = [LLVMConstInt(i64_type, i as u64, 0)];
                let slot = LLVMBuildInBoundsGEP2(builder, ptr, array, index.as_mut_ptr(), 1, c"".as_ptr());
                let storage = LLVMBuildLoad2(builder, ptr, slot, c"".as_ptr());
                args.push(LLVMBuildLoad2(builder, param, storage, c"".as_ptr()));
            }
            // The launch environment: none on this device.
            args.push(LLVMConstNull(params[count - 1]));
            LLVMBuildCall2(builder, kernel_type, kernel, args.as_mut_ptr(), count as u32, c"".as_ptr());
            LLVMBuildRetVoid(builder);
            LLVMDisposeBuilder(builder);
        }
        kernels.len()
    }
}
