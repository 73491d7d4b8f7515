//! The image anchor ([`IMAGE_ANCHOR`]): one offload entry that makes libomptarget load the device
//! image of a shared library with no OpenMP entry of its own (a class library: its image holds
//! the device copies of its classes, which the program's device code calls through the table).
//! libomptarget skips the images of a registration without entries.
//!
//! Device modules define the anchor (weak, zero, 8 bytes); host modules that record vtables
//! ([`crate::host_vtables`]) give it an entry (flags 0: a `declare target` variable of 8 bytes)
//! whose host variable, entry and name are one hidden COMDAT group, so each shared object (and
//! the executable) registers exactly one.

use std::ffi::CString;

use omptarget_indirect_abi::IMAGE_ANCHOR;

use crate::ir::keep;
use crate::llvm::comdat::{LLVMGetOrInsertComdat, LLVMSetComdat};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::{LLVMLinkage, LLVMVisibility};
use crate::offload_entries::{entry_name_string, ENTRIES_SECTION, ENTRY_ALIGNMENT};
use crate::translation::Pass;

impl Pass<'_> {
    /// The step that gives a device module the image anchor ([`define_in_device`]), counted in the
    /// summary.
    pub(crate) unsafe fn define_image_anchor(&mut self) {
        // SAFETY: the pass's module is valid and only the pass accesses it.
        self.summary.image_anchor = unsafe { define_in_device(self.module) };
    }
}

/// Defines the anchor in a device module (weak, protected, zero, in `llvm.compiler.used`), unless
/// the module has it. Returns whether it added it.
///
/// # Safety
/// `module` must be a valid device module that no one else accesses during the call.
unsafe fn define_in_device(module: LLVMModuleRef) -> bool {
    let name = CString::new(IMAGE_ANCHOR).expect("no NUL in the anchor's name");
    // SAFETY: a lookup and new globals in a valid module.
    unsafe {
        if !LLVMGetNamedGlobal(module, name.as_ptr()).is_null() {
            return false;
        }
        let context = LLVMGetModuleContext(module);
        let i64_type = LLVMInt64TypeInContext(context);
        let anchor =
            LLVMAddGlobalInAddressSpace(module, i64_type, name.as_ptr(), globals_address_space(module));
        LLVMSetInitializer(anchor, LLVMConstInt(i64_type, 0, 0));
        LLVMSetLinkage(anchor, LLVMLinkage::LLVMWeakODRLinkage);
        LLVMSetVisibility(anchor, LLVMVisibility::LLVMProtectedVisibility);
        LLVMSetAlignment(anchor, 8);
        keep(module, context, &[anchor]);
        true
    }
}

/// Adds the anchor's host variable and offload entry to a host module, unless it has them.
///
/// # Safety
/// `module` must be a valid host module that no one else accesses during the call.
pub unsafe fn register_in_host(module: LLVMModuleRef) {
    let name = CString::new(IMAGE_ANCHOR).expect("no NUL in the anchor's name");
    // SAFETY: a lookup and new globals in a valid module.
    unsafe {
        if !LLVMGetNamedGlobal(module, name.as_ptr()).is_null() {
            return;
        }
        let context = LLVMGetModuleContext(module);
        let group = LLVMGetOrInsertComdat(module, name.as_ptr());
        let in_group = |global: LLVMValueRef, linkage: LLVMLinkage| {
            LLVMSetLinkage(global, linkage);
            LLVMSetComdat(global, group);
        };
        let i64_type = LLVMInt64TypeInContext(context);
        let anchor = LLVMAddGlobal(module, i64_type, name.as_ptr());
        LLVMSetInitializer(anchor, LLVMConstInt(i64_type, 0, 0));
        in_group(anchor, LLVMLinkage::LLVMLinkOnceODRLinkage);
        LLVMSetVisibility(anchor, LLVMVisibility::LLVMHiddenVisibility);
        LLVMSetAlignment(anchor, 8);

        let entry_name = entry_name_string(module, IMAGE_ANCHOR);
        in_group(entry_name, LLVMLinkage::LLVMPrivateLinkage);

        let init = entry(context, anchor, entry_name);
        let entry_symbol = CString::new(format!(".offloading.entry.{IMAGE_ANCHOR}")).expect("no NUL");
        let entry = LLVMAddGlobal(module, LLVMTypeOf(init), entry_symbol.as_ptr());
        LLVMSetInitializer(entry, init);
        LLVMSetGlobalConstant(entry, 1);
        in_group(entry, LLVMLinkage::LLVMLinkOnceODRLinkage);
        LLVMSetVisibility(entry, LLVMVisibility::LLVMHiddenVisibility);
        LLVMSetSection(entry, ENTRIES_SECTION.as_ptr());
        LLVMSetAlignment(entry, ENTRY_ALIGNMENT);
        keep(module, context, &[entry]);
    }
}

/// The entry of a global variable of 8 bytes, as clang writes it: LLVM 19's `__tgt_offload_entry`
/// `{ptr addr, ptr name, i64 size, i32 flags, i32 reserved}`.
#[cfg(not(offload_entries_v1))]
unsafe fn entry(context: LLVMContextRef, address: LLVMValueRef, name: LLVMValueRef) -> LLVMValueRef {
    // SAFETY: constants of a valid context.
    unsafe {
        let i32_type = LLVMInt32TypeInContext(context);
        let i64_type = LLVMInt64TypeInContext(context);
        let mut fields = [
            address,
            name,
            LLVMConstInt(i64_type, 8, 0),
            LLVMConstInt(i32_type, 0, 0),
            LLVMConstInt(i32_type, 0, 0),
        ];
        LLVMConstStructInContext(context, fields.as_mut_ptr(), fields.len() as u32, 0)
    }
}

/// The entry of a global variable of 8 bytes, as clang writes it: LLVM 21+'s `{u64 reserved, u16
/// version 1, u16 kind 1 (OpenMP), u32 flags, ptr addr, ptr name, u64 size, u64 data, ptr aux}`.
#[cfg(offload_entries_v1)]
unsafe fn entry(context: LLVMContextRef, address: LLVMValueRef, name: LLVMValueRef) -> LLVMValueRef {
    // SAFETY: constants of a valid context.
    unsafe {
        let i16_type = LLVMInt16TypeInContext(context);
        let i32_type = LLVMInt32TypeInContext(context);
        let i64_type = LLVMInt64TypeInContext(context);
        let mut fields = [
            LLVMConstInt(i64_type, 0, 0),
            LLVMConstInt(i16_type, 1, 0),
            LLVMConstInt(i16_type, 1, 0),
            LLVMConstInt(i32_type, 0, 0),
            address,
            name,
            LLVMConstInt(i64_type, 8, 0),
            LLVMConstInt(i64_type, 0, 0),
            LLVMConstPointerNull(LLVMPointerTypeInContext(context, 0)),
        ];
        LLVMConstStructInContext(context, fields.as_mut_ptr(), fields.len() as u32, 0)
    }
}

/// The address space of the module's global variables (`G<n>` of its data layout: 1 on amdgcn,
/// 0 where the layout says nothing).
unsafe fn globals_address_space(module: LLVMModuleRef) -> u32 {
    // SAFETY: the layout string of a valid module, NUL-terminated and owned by it.
    let layout = unsafe { std::ffi::CStr::from_ptr(LLVMGetDataLayoutStr(module)) };
    layout
        .to_str()
        .unwrap_or_default()
        .split('-')
        .find_map(|component| component.strip_prefix('G')?.parse().ok())
        .unwrap_or(0)
}
