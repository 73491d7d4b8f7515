//! Destructors that only vtables name stay out of line in device modules.
//!
//! The frontend plugin gives the device module the vtable of every dynamic class the file
//! completes (`docs/frontend.md`), and with each vtable its destructor variants. The optimizer
//! then inlines into each class's destructor its bases' destructors and its members' (a
//! `std::map`, a `std::string`, a `std::function`), and into each deleting destructor and thunk
//! the complete one: a hierarchy's destructors grow with its depth, and the device back end and
//! `ptxas` pay for every copy (`docs/performance.md`, "The frontend plugin's vtable policy").
//! Device code reaches such a destructor only through a vtable slot (`delete` of a base pointer,
//! a host-built object's explicit destructor call), where the call's cost is a translation and
//! an indirect call anyway.
//!
//! So a destructor variant, or a thunk to one, that no other function calls directly and no
//! global but a vtable or construction vtable names (each caller being such a destructor or thunk
//! itself), of a vtable that no device code stores, is marked `noinline`: each class's destructor
//! then calls its bases' and members' instead of holding copies of them. A destructor that device
//! code calls directly, or may call once the optimizer devirtualizes a call on an object a target
//! region builds, is left to the optimizer, and so is everything it calls.

use std::collections::HashSet;
use std::ffi::{c_char, CString};

use crate::host_only::thunk_target;
use crate::ir::{users, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMAttributeFunctionIndex;
use crate::policy;
use crate::translation::Pass;

extern "C" {
    // src/shim.cpp: whether `name` is the Itanium symbol of a destructor (LLVM's demangler).
    fn omptarget_indirect_is_destructor(name: *const c_char) -> bool;
}

impl Pass<'_> {
    /// Marks `noinline` each destructor variant (and thunk to one) that the module's device code
    /// reaches only through vtables (module documentation).
    pub(crate) unsafe fn keep_vtable_destructors_out_of_line(&mut self) {
        // SAFETY: names, use lists and attributes of the module's functions; no function,
        // instruction or global is added or removed.
        unsafe {
            let mut only_in_vtables: HashSet<LLVMValueRef> = HashSet::new();
            let mut function = LLVMGetFirstFunction(self.module);
            while !function.is_null() {
                if LLVMIsDeclaration(function) == 0 && is_destructor_or_its_thunk(function) {
                    only_in_vtables.insert(function);
                }
                function = LLVMGetNextFunction(function);
            }
            // Drop, until none is left to drop, each one that something else than a vtable or a
            // function still in the set names.
            loop {
                let named_elsewhere: Vec<LLVMValueRef> = only_in_vtables
                    .iter()
                    .copied()
                    .filter(|&f| {
                        !users(f).into_iter().all(|user| policy::keeps_out_of_line(user, f, &only_in_vtables))
                    })
                    .collect();
                if named_elsewhere.is_empty() {
                    break;
                }
                for f in named_elsewhere {
                    only_in_vtables.remove(&f);
                }
            }
            let kind = |name: &str| LLVMGetEnumAttributeKindForName(name.as_ptr().cast(), name.len());
            let (noinline, alwaysinline) = (kind("noinline"), kind("alwaysinline"));
            for &f in &only_in_vtables {
                // A program's own `always_inline` stays; one already out of line needs nothing.
                if [noinline, alwaysinline]
                    .iter()
                    .any(|&k| !LLVMGetEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, k).is_null())
                {
                    continue;
                }
                let attribute = LLVMCreateEnumAttribute(self.context, noinline, 0);
                LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, attribute);
                self.summary.out_of_line_destructors += 1;
            }
        }
    }
}

/// Whether the defined `function` is a destructor (D0, D1, D2) or a thunk adjusting `this` for
/// one.
unsafe fn is_destructor_or_its_thunk(function: LLVMValueRef) -> bool {
    // SAFETY: the name of a valid function.
    let Some(name) = (unsafe { value_name_bytes(function) }) else {
        return false;
    };
    let name = thunk_target(&name).unwrap_or(name);
    if !name.starts_with(b"_Z") {
        return false;
    }
    let Ok(name) = CString::new(name) else {
        return false;
    };
    // SAFETY: a NUL-terminated string that outlives the call; the shim only reads it.
    unsafe { omptarget_indirect_is_destructor(name.as_ptr()) }
}
