//! Fixes the device link needs, whatever the program: on amdgcn the C++ ABI's traps for pure
//! virtual and deleted functions, which no AMDGPU device library defines; on the x86_64 device
//! weak type_info references, which the image's link cannot resolve where a shared library
//! loaded later defines them; local variables out of comdat groups; and the trapping bodies the
//! stubs of `crate::host_only` share.

use crate::ir::value_name_bytes;
use crate::llvm::comdat::{LLVMGetComdat, LLVMSetComdat};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMLinkage;
use crate::translation::Pass;

impl Pass<'_> {
    /// On amdgcn, defines `__cxa_pure_virtual` and `__cxa_deleted_virtual` where the module names
    /// them without a definition (the vtable of a class with a pure virtual or deleted function):
    /// no AMDGPU device library here defines them (the nvptx DeviceRTL does), and the device link
    /// would refuse a vtable this project emitted. Weak, so that a program's own definition wins;
    /// the C++ runtime calls them only for a call that is undefined behaviour: they trap.
    pub(crate) unsafe fn define_abi_traps(&mut self) {
        // SAFETY: the module's target string and functions; a body is given to a declaration only.
        unsafe {
            let target = std::ffi::CStr::from_ptr(LLVMGetTarget(self.module)).to_bytes();
            if !target.starts_with(b"amdgcn") {
                return;
            }
            for name in [c"__cxa_pure_virtual", c"__cxa_deleted_virtual"] {
                let function = LLVMGetNamedFunction(self.module, name.as_ptr());
                if function.is_null() || LLVMIsDeclaration(function) == 0 {
                    continue;
                }
                self.build_trap_body(function, None);
                LLVMSetLinkage(function, LLVMLinkage::LLVMWeakAnyLinkage);
                self.summary.host_only_stubs += 1;
            }
        }
    }

    /// Takes the module's variables of internal or private linkage out of their comdat groups.
    /// flang 24 gives a module's named constants (`_QM<module>EC<name>`) internal linkage in a
    /// comdat of their own name in every unit that uses them; the linker keeps one unit's group
    /// of each name and discards the others, whose code still refers to their own copy by its
    /// section (ld: "defined in discarded section", the module in a static archive at `-O0`). A
    /// local variable has no other unit's copy to be merged with: out of the group, each unit
    /// keeps its own, which only it refers to.
    pub(crate) unsafe fn ungroup_local_variables(&mut self) {
        // SAFETY: reads of the module's globals and comdat removals, none added or removed.
        unsafe {
            let mut global = LLVMGetFirstGlobal(self.module);
            while !global.is_null() {
                let local = matches!(
                    LLVMGetLinkage(global),
                    LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
                );
                if local && LLVMIsDeclaration(global) == 0 && !LLVMGetComdat(global).is_null() {
                    LLVMSetComdat(global, core::ptr::null_mut());
                    self.summary.ungrouped_locals += 1;
                }
                global = LLVMGetNextGlobal(global);
            }
        }
    }

    /// On the x86_64 device, makes the module's declarations of type_info objects (`_ZTI*`) weak.
    /// The vtables this project emits name their classes' type_info, and a base class's is
    /// defined where its key function is: in a shared library the program may load with `dlopen`
    /// only later, which the device image's link cannot see (a strong reference stops it). The
    /// image, loaded at the first target region, binds them to the host program's (GPU device
    /// code has no RTTI).
    pub(crate) unsafe fn weaken_type_info_references(&mut self) {
        // SAFETY: reads and linkage changes of the module's global declarations.
        unsafe {
            if !self.on_x86_64() {
                return;
            }
            let mut global = LLVMGetFirstGlobal(self.module);
            while !global.is_null() {
                if LLVMIsDeclaration(global) != 0
                    && value_name_bytes(global).is_some_and(|n| n.starts_with(b"_ZTI"))
                    && LLVMGetLinkage(global) == LLVMLinkage::LLVMExternalLinkage
                {
                    LLVMSetLinkage(global, LLVMLinkage::LLVMExternalWeakLinkage);
                    self.summary.weakened_type_info += 1;
                }
                global = LLVMGetNextGlobal(global);
            }
        }
    }

    /// Ends the block `builder` is at with `llvm.trap` and `unreachable`.
    pub(crate) unsafe fn build_trap(&self, builder: LLVMBuilderRef) {
        // SAFETY: a builder positioned in a function of the module; the intrinsic is declared once.
        unsafe {
            let void = LLVMVoidTypeInContext(self.context);
            let trap_type = LLVMFunctionType(void, std::ptr::null_mut(), 0, 0);
            let trap = self.declared(c"llvm.trap", trap_type);
            LLVMBuildCall2(builder, trap_type, trap, std::ptr::null_mut(), 0, c"".as_ptr());
            LLVMBuildUnreachable(builder);
        }
    }

    /// Gives the declaration `function` a body that reports `message` (if any) where the device
    /// can, then traps: the x86_64 device writes it to the standard error stream; NVPTX hands it
    /// to CUDA's `__assertfail`, which prints it with the block and thread before the kernel
    /// stops; AMDGPU traps alone (its DeviceRTL's `vprintf` prints nothing without LLVM's GPU
    /// libc, which OpenMP programs do not link).
    pub(crate) unsafe fn build_trap_body(&self, function: LLVMValueRef, message: Option<&str>) {
        // SAFETY: new blocks and instructions of the module's context, in a function that has none.
        unsafe {
            let builder = LLVMCreateBuilderInContext(self.context);
            let entry = LLVMAppendBasicBlockInContext(self.context, function, c"entry".as_ptr());
            LLVMPositionBuilderAtEnd(builder, entry);
            if let Some(message) = message {
                let target = std::ffi::CStr::from_ptr(LLVMGetTarget(self.module)).to_bytes();
                if self.on_x86_64() {
                    self.build_dprintf(builder, message);
                } else if target.starts_with(b"nvptx") {
                    self.build_assertfail(builder, message.trim_end());
                }
            }
            self.build_trap(builder);
            LLVMDisposeBuilder(builder);
        }
    }

    /// Builds `dprintf(2, "%s", message)` at the builder's position: the message holds a symbol
    /// name, which is data.
    unsafe fn build_dprintf(&self, builder: LLVMBuilderRef, message: &str) {
        // SAFETY: new constants and a call of the module's context at the builder's position.
        unsafe {
            // A pointer to a global is the global itself (opaque pointers).
            let format = LLVMBuildGlobalString(builder, c"%s".as_ptr(), c"".as_ptr());
            let text = self.global_string(builder, message);
            let int = LLVMInt32TypeInContext(self.context);
            let ptr = LLVMPointerTypeInContext(self.context, 0);
            let mut params = [int, ptr];
            let dprintf_type = LLVMFunctionType(int, params.as_mut_ptr(), 2, 1);
            let dprintf = self.declared(c"dprintf", dprintf_type);
            let mut args = [LLVMConstInt(int, 2, 0), format, text];
            LLVMBuildCall2(builder, dprintf_type, dprintf, args.as_mut_ptr(), 3, c"".as_ptr());
        }
    }

    /// Builds CUDA's `__assertfail(message, file, line, function, 1)` at the builder's position:
    /// a PTX system call that prints `file:line: function: block: [...], thread: [...] Assertion
    /// `message` failed.` once the kernel stops, where `printf` output before a trap may be lost.
    unsafe fn build_assertfail(&self, builder: LLVMBuilderRef, message: &str) {
        // SAFETY: new constants and a call of the module's context at the builder's position.
        unsafe {
            let text = self.global_string(builder, message);
            let file = LLVMBuildGlobalString(builder, c"omptarget-indirect".as_ptr(), c"".as_ptr());
            let place = LLVMBuildGlobalString(builder, c"device code".as_ptr(), c"".as_ptr());
            let int = LLVMInt32TypeInContext(self.context);
            let size = LLVMInt64TypeInContext(self.context);
            let ptr = LLVMPointerTypeInContext(self.context, 0);
            let void = LLVMVoidTypeInContext(self.context);
            let mut params = [ptr, ptr, int, ptr, size];
            let assertfail_type = LLVMFunctionType(void, params.as_mut_ptr(), 5, 0);
            let assertfail = self.declared(c"__assertfail", assertfail_type);
            let mut args = [text, file, LLVMConstInt(int, 0, 0), place, LLVMConstInt(size, 1, 0)];
            LLVMBuildCall2(builder, assertfail_type, assertfail, args.as_mut_ptr(), 5, c"".as_ptr());
        }
    }

    /// A constant string of the module holding `text`, at the builder's position.
    unsafe fn global_string(&self, builder: LLVMBuilderRef, text: &str) -> LLVMValueRef {
        let text = std::ffi::CString::new(text.replace('\0', "")).unwrap_or_default();
        // SAFETY: a new constant of the module's context; the name is NUL-terminated.
        unsafe { LLVMBuildGlobalString(builder, text.as_ptr(), c"".as_ptr()) }
    }

    /// The module's function `name`, declared with `function_type` where the module lacks it.
    unsafe fn declared(&self, name: &std::ffi::CStr, function_type: LLVMTypeRef) -> LLVMValueRef {
        // SAFETY: a lookup, and a new declaration, in the module.
        unsafe {
            let known = LLVMGetNamedFunction(self.module, name.as_ptr());
            if known.is_null() {
                LLVMAddFunction(self.module, name.as_ptr(), function_type)
            } else {
                known
            }
        }
    }
}
