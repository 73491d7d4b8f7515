//! Vtable slots of virtual functions the device does not compile.
//!
//! The frontend plugin (`compiler/frontend-plugin`) emits, in device compiles, the vtables of
//! classes whose objects the host builds. A virtual function of such a class that is not
//! `declare target` and reaches host-only code (or is `device_type(host)`) is not compiled for
//! the device: the frontend leaves it an `extern_weak` declaration, which the device link would
//! resolve to null (a call through the slot then jumps to address 0). Here each such declaration
//! a vtable names is replaced, in the vtables and wherever else the module uses it, by an
//! internal stub of the same type that says which function was called and traps: on the x86_64
//! device it writes `omptarget-indirect: <mangled name> is not compiled for the device ...` to
//! the standard error stream first; on a GPU the trap's stub is named after the function.

use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::{LLVMLinkage, LLVMValueKind};
use crate::pass::{value_name, value_name_bytes, Pass};
use crate::remarks::Kind;

/// The stub of function `f` is named this prefix followed by `f`'s name.
pub const STUB_PREFIX: &str = "__omptarget_indirect_not_on_device.";

impl Pass<'_> {
    /// Replaces every `extern_weak` function declaration that a vtable or construction vtable
    /// of the module names by a stub that reports the call and traps.
    pub(crate) unsafe fn stub_host_only_virtuals(&mut self) {
        // SAFETY: globals and constants of the module, collected before any replacement.
        unsafe {
            let mut host_only = Vec::new();
            let mut global = LLVMGetFirstGlobal(self.module);
            while !global.is_null() {
                let name = value_name_bytes(global).unwrap_or_default();
                let init = LLVMGetInitializer(global);
                if (name.starts_with(b"_ZTV") || name.starts_with(b"_ZTC")) && !init.is_null() {
                    collect_weak_declarations(init, &mut host_only, 0);
                }
                global = LLVMGetNextGlobal(global);
            }
            let prints = self.target_prints();
            for function in host_only {
                let Some(name) = value_name(function) else { continue };
                let stub = self.trap_stub(function, &name, prints);
                LLVMReplaceAllUsesWith(function, stub);
                LLVMDeleteFunction(function);
                self.summary.host_only_stubs += 1;
                self.remarks.emit(Kind::Passed, stub, c"HostOnlyVirtualStubbed", || {
                    format!(
                        "vtable slots of {name} hold a stub that traps: the function is not compiled for the \
                         device (the frontend plugin's remark says why)"
                    )
                });
            }
        }
    }

    /// Whether device code of this module can write to the standard error stream (the x86_64
    /// device, which runs in the host process).
    unsafe fn target_prints(&self) -> bool {
        // SAFETY: the module's triple is a NUL-terminated string it owns.
        unsafe {
            let triple = std::ffi::CStr::from_ptr(LLVMGetTarget(self.module));
            triple.to_bytes().starts_with(b"x86_64")
        }
    }

    /// Defines the stub that replaces `function` (named `name`): internal, of the same type.
    unsafe fn trap_stub(&mut self, function: LLVMValueRef, name: &str, prints: bool) -> LLVMValueRef {
        // SAFETY: new functions, blocks and instructions of the module's context.
        unsafe {
            let stub_name = format!("{STUB_PREFIX}{name}\0");
            let stub =
                LLVMAddFunction(self.module, stub_name.as_ptr().cast(), LLVMGlobalGetValueType(function));
            LLVMSetLinkage(stub, LLVMLinkage::LLVMInternalLinkage);
            let builder = LLVMCreateBuilderInContext(self.context);
            let entry = LLVMAppendBasicBlockInContext(self.context, stub, c"entry".as_ptr());
            LLVMPositionBuilderAtEnd(builder, entry);
            if prints {
                let message = format!(
                    "omptarget-indirect: {name} is not compiled for the device (a virtual function that is not \
                     declare target and reaches host code; -Rpass=omptarget-indirect at compile time says why), \
                     but device code called it\n"
                );
                // A pointer to the global is the global itself (opaque pointers).
                let text =
                    LLVMBuildGlobalString(builder, format!("{message}\0").as_ptr().cast(), c"".as_ptr());
                let int = LLVMInt32TypeInContext(self.context);
                let ptr = LLVMPointerTypeInContext(self.context, 0);
                let mut params = [int, ptr];
                let dprintf_type = LLVMFunctionType(int, params.as_mut_ptr(), 2, 1);
                let mut dprintf = LLVMGetNamedFunction(self.module, c"dprintf".as_ptr());
                if dprintf.is_null() {
                    dprintf = LLVMAddFunction(self.module, c"dprintf".as_ptr(), dprintf_type);
                }
                let mut args = [LLVMConstInt(int, 2, 0), text];
                LLVMBuildCall2(builder, dprintf_type, dprintf, args.as_mut_ptr(), 2, c"".as_ptr());
            }
            let void = LLVMVoidTypeInContext(self.context);
            let trap_type = LLVMFunctionType(void, std::ptr::null_mut(), 0, 0);
            let mut trap = LLVMGetNamedFunction(self.module, c"llvm.trap".as_ptr());
            if trap.is_null() {
                trap = LLVMAddFunction(self.module, c"llvm.trap".as_ptr(), trap_type);
            }
            LLVMBuildCall2(builder, trap_type, trap, std::ptr::null_mut(), 0, c"".as_ptr());
            LLVMBuildUnreachable(builder);
            LLVMDisposeBuilder(builder);
            stub
        }
    }
}

/// Adds to `found` the `extern_weak` function declarations `value` (a constant initializer)
/// names, looking through aggregates and constant expressions (bounded: vtables are shallow).
unsafe fn collect_weak_declarations(value: LLVMValueRef, found: &mut Vec<LLVMValueRef>, depth: u32) {
    // SAFETY: operand reads of constants of a valid module.
    unsafe {
        if depth > 8 {
            return;
        }
        if LLVMGetValueKind(value) == LLVMValueKind::LLVMFunctionValueKind {
            if LLVMIsDeclaration(value) != 0
                && LLVMGetLinkage(value) == LLVMLinkage::LLVMExternalWeakLinkage
                && value_name_bytes(value).is_some_and(|n| n.starts_with(b"_Z"))
                && !found.contains(&value)
            {
                found.push(value);
            }
            return;
        }
        if LLVMIsAConstant(value).is_null() || !LLVMIsAGlobalValue(value).is_null() {
            return;
        }
        for index in 0..LLVMGetNumOperands(value).max(0) as u32 {
            collect_weak_declarations(LLVMGetOperand(value, index), found, depth + 1);
        }
    }
}
