//! A host module's offload entries, as clang writes them: one constant struct per entry in the
//! entries section, in LLVM 19's layout or LLVM 20+'s.

use std::ffi::CStr;

use crate::llvm::core::*;
use crate::llvm::prelude::*;

/// `OMP_DECLARE_TARGET_INDIRECT`, the entry flag of an indirect function.
pub(crate) const INDIRECT: u64 = 0x08;

/// Where clang puts a host module's offload entries, and their names.
#[cfg(not(offload_entries_v1))]
pub(crate) const ENTRIES_SECTION: &std::ffi::CStr = c"omp_offloading_entries";
#[cfg(not(offload_entries_v1))]
pub(crate) const ENTRY_NAMES_SECTION: Option<&std::ffi::CStr> = None;
#[cfg(not(offload_entries_v1))]
pub(crate) const ENTRY_ALIGNMENT: u32 = 1;
#[cfg(offload_entries_v1)]
pub(crate) const ENTRIES_SECTION: &std::ffi::CStr = c"llvm_offload_entries";
#[cfg(offload_entries_v1)]
pub(crate) const ENTRY_NAMES_SECTION: Option<&std::ffi::CStr> = Some(c".llvm.rodata.offloading");
#[cfg(offload_entries_v1)]
pub(crate) const ENTRY_ALIGNMENT: u32 = 8;

/// Where the fields an entry is read and rewritten by lie in each entry layout.
#[derive(Clone, Copy)]
pub(crate) struct Layout {
    pub(crate) address: u32,
    pub(crate) name: u32,
    pub(crate) flags: u32,
}

impl Layout {
    /// LLVM 20+ (`{u64 reserved, u16 version, u16 kind, u32 flags, ptr address, ptr name, u64
    /// size, u64 data, ptr aux}`), or LLVM 19 and older (`{ptr address, ptr name, u64 size, i32
    /// flags, i32 reserved}`), told apart by the number of fields.
    fn of(fields: u32) -> Option<Layout> {
        match fields {
            9 => Some(Layout { address: 4, name: 5, flags: 3 }),
            5 => Some(Layout { address: 0, name: 1, flags: 3 }),
            _ => None,
        }
    }
}

/// An offload entry of the module.
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) global: LLVMValueRef,
    pub(crate) init: LLVMValueRef,
    pub(crate) layout: Layout,
    pub(crate) address: LLVMValueRef,
    pub(crate) flags: u64,
}

impl Entry {
    /// The entry's name (the device symbol it pairs with), if it points to a constant string.
    pub(crate) unsafe fn name(&self) -> Option<Vec<u8>> {
        // SAFETY: an operand of the entry's constant initializer.
        unsafe { string_of(LLVMGetOperand(self.init, self.layout.name)) }
    }
}

/// The bytes (without the final NUL) of the constant string global `value` is or points to
/// through constant casts.
pub(crate) unsafe fn string_of(mut value: LLVMValueRef) -> Option<Vec<u8>> {
    // SAFETY: operand and initializer reads of valid constants.
    unsafe {
        while !value.is_null() && LLVMIsAGlobalVariable(value).is_null() && LLVMGetNumOperands(value) >= 1 {
            value = LLVMGetOperand(value, 0);
        }
        if value.is_null() || LLVMIsAGlobalVariable(value).is_null() {
            return None;
        }
        let text = LLVMGetInitializer(value);
        if text.is_null() || LLVMIsAConstantDataSequential(text).is_null() || LLVMIsConstantString(text) == 0
        {
            return None;
        }
        let mut length = 0usize;
        let bytes = LLVMGetAsString(text, &mut length);
        let bytes = std::slice::from_raw_parts(bytes.cast::<u8>(), length);
        Some(bytes.strip_suffix(b"\0").unwrap_or(bytes).to_vec())
    }
}

/// A new entry global named `symbol`, a copy of `template` (same linkage, section and alignment)
/// with the fields at the given indices of its initializer replaced.
pub(crate) unsafe fn copy_entry(
    module: LLVMModuleRef,
    template: &Entry,
    replaced: &[(u32, LLVMValueRef)],
    symbol: &CStr,
) -> LLVMValueRef {
    // SAFETY: `template` is an entry of `module`; the replacements have the fields' types.
    unsafe {
        let init = with_fields(template.init, replaced);
        let entry = LLVMAddGlobal(module, LLVMTypeOf(init), symbol.as_ptr());
        LLVMSetInitializer(entry, init);
        LLVMSetGlobalConstant(entry, 1);
        LLVMSetLinkage(entry, LLVMGetLinkage(template.global));
        LLVMSetSection(entry, LLVMGetSection(template.global));
        LLVMSetAlignment(entry, LLVMGetAlignment(template.global));
        entry
    }
}

/// `init` (a constant struct) with the fields at the given indices replaced.
pub(crate) unsafe fn with_fields(init: LLVMValueRef, replaced: &[(u32, LLVMValueRef)]) -> LLVMValueRef {
    // SAFETY: operands of a constant struct; the replacements have the fields' types.
    unsafe {
        let count = LLVMCountStructElementTypes(LLVMTypeOf(init));
        let mut fields: Vec<LLVMValueRef> = (0..count).map(|i| LLVMGetOperand(init, i)).collect();
        for &(index, value) in replaced {
            fields[index as usize] = value;
        }
        let struct_type = LLVMTypeOf(init);
        if LLVMGetStructName(struct_type).is_null() {
            LLVMConstStructInContext(
                LLVMGetTypeContext(struct_type),
                fields.as_mut_ptr(),
                count,
                LLVMIsPackedStruct(struct_type),
            )
        } else {
            LLVMConstNamedStruct(struct_type, fields.as_mut_ptr(), count)
        }
    }
}

/// A new private constant holding `name`, NUL-terminated, where clang keeps entry names.
pub(crate) unsafe fn entry_name_string(module: LLVMModuleRef, name: &str) -> LLVMValueRef {
    // SAFETY: a new global of a valid module.
    unsafe {
        let context = LLVMGetModuleContext(module);
        let text = LLVMConstStringInContext2(context, name.as_ptr().cast(), name.len(), 0);
        let global = LLVMAddGlobal(module, LLVMTypeOf(text), c".omptarget_indirect.entry_name".as_ptr());
        LLVMSetInitializer(global, text);
        LLVMSetGlobalConstant(global, 1);
        LLVMSetLinkage(global, crate::llvm::LLVMLinkage::LLVMPrivateLinkage);
        LLVMSetUnnamedAddress(global, crate::llvm::LLVMUnnamedAddr::LLVMGlobalUnnamedAddr);
        if let Some(section) = ENTRY_NAMES_SECTION {
            LLVMSetSection(global, section.as_ptr());
        }
        global
    }
}

/// The module's offload entries: constant globals in an offload entry section.
pub(crate) unsafe fn offload_entries(module: LLVMModuleRef) -> Vec<Entry> {
    // SAFETY: reads of the module's globals and their constant initializers.
    unsafe {
        let mut entries = Vec::new();
        let mut global = LLVMGetFirstGlobal(module);
        while !global.is_null() {
            let section = LLVMGetSection(global);
            let in_entries = !section.is_null()
                && matches!(
                    std::ffi::CStr::from_ptr(section).to_bytes(),
                    b"llvm_offload_entries" | b"omp_offloading_entries"
                );
            let init = if in_entries { LLVMGetInitializer(global) } else { std::ptr::null_mut() };
            if !init.is_null()
                && LLVMGetTypeKind(LLVMTypeOf(init)) == crate::llvm::LLVMTypeKind::LLVMStructTypeKind
            {
                let layout = Layout::of(LLVMCountStructElementTypes(LLVMTypeOf(init)));
                if let Some(layout) = layout {
                    let flags = LLVMGetOperand(init, layout.flags);
                    entries.push(Entry {
                        global,
                        init,
                        layout,
                        address: LLVMGetOperand(init, layout.address),
                        flags: if LLVMIsAConstantInt(flags).is_null() {
                            0
                        } else {
                            LLVMConstIntGetZExtValue(flags)
                        },
                    });
                }
            }
            global = LLVMGetNextGlobal(global);
        }
        entries
    }
}
