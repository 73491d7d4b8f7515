//! One offload entry per indirect function, host and device alike.
//!
//! clang names an indirect function's entry after the function's *declaration*: its file, its
//! unqualified name and its line (`__omp_offloading_<device>_<file>_twice_l2`). Every
//! instantiation of a function template, and every overload declared on one line, gets the same
//! name: the host module keeps one entry (the first), the device module renames the others'
//! globals (`..._l2.1`), so only one of them reaches the device table and a pointer to another
//! stops on the device (a host address).
//!
//! Here each gets a name of its own, the same on both sides, from the function's symbol:
//! `__omp_offloading_indirect_<symbol>` (with a hash of the source file's name before the
//! symbol when the function has internal linkage: two files may each have one of that name).
//!
//! - **Device modules**: each global clang made for an indirect function (`__omp_offloading_*`,
//!   holding a function's address) gets a twin of the new name beside it (weak, protected:
//!   every file that defines an inline function defines it). clang's own stays, so a host
//!   compiled without this plugin still finds what it names; weak when the function is inline
//!   (two files' device compiles of one header define it, and clang makes it strong).
//! - **Host modules**: each indirect entry clang named so is renamed, and each function the
//!   frontend plugin marked indirect (annotation [`ANNOTATION`], host compiles) that has no entry
//!   gets one, a copy of another indirect entry of the module with its address and name.

use std::collections::HashSet;
use std::ffi::CString;

use crate::ir::{keep, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::{LLVMLinkage, LLVMVisibility};
use crate::offload_entries::{
    copy_entry, entry_name_string, offload_entries, string_of, with_fields, Entry, INDIRECT,
};
use crate::translation::Pass;

/// The prefix clang gives the names of its entries of indirect functions (and kernels).
const CLANG_PREFIX: &[u8] = b"__omp_offloading_";

/// The prefix of the names given here.
pub const PREFIX: &str = "__omp_offloading_indirect_";

/// The annotation the frontend plugin puts on each indirect function in host compiles
/// (`llvm.global.annotations`).
pub const ANNOTATION: &[u8] = b"omptarget_indirect";

/// The name of `function`'s entry in `module` (host or device: both compile the same file).
unsafe fn entry_name(module: LLVMModuleRef, function: LLVMValueRef) -> Option<String> {
    // SAFETY: the names of a valid module and function.
    unsafe {
        let symbol = String::from_utf8(value_name_bytes(function)?.to_vec()).ok()?;
        let local = matches!(
            LLVMGetLinkage(function),
            LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
        );
        if !local {
            return Some(format!("{PREFIX}{symbol}"));
        }
        let mut length = 0usize;
        let file = LLVMGetSourceFileName(module, &mut length);
        let file =
            if file.is_null() { &[][..] } else { std::slice::from_raw_parts(file.cast::<u8>(), length) };
        Some(format!("{PREFIX}{:016x}_{symbol}", fnv1a(file)))
    }
}

/// 64-bit FNV-1a: a stable hash of a file name, the same in the host and the device compile.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// The function `value` is, through pointer casts; None for anything else.
unsafe fn function_of(mut value: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: operand reads of valid constants.
    unsafe {
        while !value.is_null() && !LLVMIsAConstantExpr(value).is_null() && LLVMGetNumOperands(value) == 1 {
            value = LLVMGetOperand(value, 0);
        }
        (!value.is_null() && !LLVMIsAFunction(value).is_null()).then_some(value)
    }
}

/// Whether `function` is defined by every file that uses it (inline, a template instance).
unsafe fn defined_by_every_user(function: LLVMValueRef) -> bool {
    // SAFETY: the linkage of a valid function.
    unsafe {
        use LLVMLinkage::*;
        matches!(
            LLVMGetLinkage(function),
            LLVMLinkOnceAnyLinkage | LLVMLinkOnceODRLinkage | LLVMWeakAnyLinkage | LLVMWeakODRLinkage
        )
    }
}

impl Pass<'_> {
    /// The step that gives a device module the twins of clang's indirect-function globals
    /// ([`name_device_globals`]), counted in the summary.
    pub(crate) unsafe fn name_device_globals(&mut self) {
        // SAFETY: the pass's module is valid and only the pass accesses it.
        self.summary.indirect_entries = unsafe { name_device_globals(self.module) };
    }
}

/// Device module: the twin of each of clang's indirect-function globals (and clang's own made weak
/// where the function is inline). Returns how many twins it added.
///
/// # Safety
/// `module` must be a valid device module that no one else accesses during the call.
unsafe fn name_device_globals(module: LLVMModuleRef) -> usize {
    // SAFETY: the module's globals, read before the twins are added.
    unsafe {
        let mut found = Vec::new();
        let mut global = LLVMGetFirstGlobal(module);
        while !global.is_null() {
            let init = LLVMGetInitializer(global);
            if value_name_bytes(global)
                .is_some_and(|n| n.starts_with(CLANG_PREFIX) && !n.starts_with(PREFIX.as_bytes()))
                && LLVMIsDeclaration(global) == 0
                && !init.is_null()
            {
                if let Some(function) = function_of(init) {
                    found.push((global, init, function));
                }
            }
            global = LLVMGetNextGlobal(global);
        }
        let mut added = Vec::new();
        for (global, init, function) in found {
            // An inline function or template instance is defined by every file that uses it, and
            // so is clang's global of it: strong, two files' would collide in the device link.
            // Weak, not ODR: clang gives one name to several instances.
            if defined_by_every_user(function) && LLVMGetLinkage(global) == LLVMLinkage::LLVMExternalLinkage {
                LLVMSetLinkage(global, LLVMLinkage::LLVMWeakAnyLinkage);
            }
            let Some(name) = entry_name(module, function).and_then(|n| CString::new(n).ok()) else {
                continue;
            };
            if !LLVMGetNamedGlobal(module, name.as_ptr()).is_null() {
                continue;
            }
            let twin = LLVMAddGlobalInAddressSpace(
                module,
                LLVMTypeOf(init),
                name.as_ptr(),
                LLVMGetPointerAddressSpace(LLVMTypeOf(global)),
            );
            LLVMSetInitializer(twin, init);
            LLVMSetGlobalConstant(twin, 1);
            let local = matches!(
                LLVMGetLinkage(function),
                LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
            );
            LLVMSetLinkage(
                twin,
                if local { LLVMLinkage::LLVMExternalLinkage } else { LLVMLinkage::LLVMWeakODRLinkage },
            );
            LLVMSetVisibility(twin, LLVMVisibility::LLVMProtectedVisibility);
            LLVMSetAlignment(twin, LLVMGetAlignment(global));
            added.push(twin);
        }
        if !added.is_empty() {
            keep(module, LLVMGetModuleContext(module), &added);
        }
        added.len()
    }
}

/// Host module: renames clang's indirect entries and adds the missing ones. Returns how many
/// entries it renamed or added.
///
/// # Safety
/// `module` must be a valid host module that no one else accesses during the call.
pub unsafe fn name_host_entries(module: LLVMModuleRef) -> usize {
    // SAFETY: the module's entries and annotations, read before any is replaced.
    unsafe {
        let entries = offload_entries(module);
        let mut named: HashSet<LLVMValueRef> = HashSet::new();
        let mut template: Option<Entry> = None;
        let mut changed = 0;
        for entry in &entries {
            let Some(function) = function_of(entry.address) else { continue };
            if entry.flags & INDIRECT == 0 || !entry.name().is_some_and(|n| n.starts_with(CLANG_PREFIX)) {
                continue;
            }
            let Some(name) = entry_name(module, function) else { continue };
            template = Some(rename(module, entry, &name));
            named.insert(function);
            changed += 1;
        }
        let Some(template) = template else { return changed };
        let mut added = Vec::new();
        for function in annotated_functions(module) {
            if LLVMIsDeclaration(function) != 0 || !named.insert(function) {
                continue;
            }
            let Some(name) = entry_name(module, function) else { continue };
            let Ok(symbol) = CString::new(format!(".offloading.entry.{name}")) else { continue };
            let fields = [
                (template.layout.address, function),
                (template.layout.name, entry_name_string(module, &name)),
            ];
            added.push(copy_entry(module, &template, &fields, &symbol));
        }
        if !added.is_empty() {
            keep(module, LLVMGetModuleContext(module), &added);
        }
        changed + added.len()
    }
}

/// The entry `entry`, named `name`: its initializer points to a new string, and its global is
/// called `.offloading.entry.<name>` (as clang calls them). Returns it as it is now.
unsafe fn rename(module: LLVMModuleRef, entry: &Entry, name: &str) -> Entry {
    // SAFETY: a valid entry of `module`; the new initializer has the old one's type.
    unsafe {
        let init = with_fields(entry.init, &[(entry.layout.name, entry_name_string(module, name))]);
        LLVMSetInitializer(entry.global, init);
        let symbol = format!(".offloading.entry.{name}");
        LLVMSetValueName2(entry.global, symbol.as_ptr().cast(), symbol.len());
        Entry { init, ..*entry }
    }
}

/// The functions `llvm.global.annotations` annotates with [`ANNOTATION`].
unsafe fn annotated_functions(module: LLVMModuleRef) -> Vec<LLVMValueRef> {
    // SAFETY: reads of the annotations array's constant operands.
    unsafe {
        let annotations = LLVMGetNamedGlobal(module, c"llvm.global.annotations".as_ptr());
        if annotations.is_null() || LLVMGetInitializer(annotations).is_null() {
            return Vec::new();
        }
        let array = LLVMGetInitializer(annotations);
        let mut found = Vec::new();
        for i in 0..LLVMGetNumOperands(array).max(0) as u32 {
            let annotation = LLVMGetOperand(array, i);
            if LLVMGetNumOperands(annotation) < 2 {
                continue;
            }
            let Some(function) = function_of(LLVMGetOperand(annotation, 0)) else { continue };
            if string_of(LLVMGetOperand(annotation, 1)).as_deref() == Some(ANNOTATION) {
                found.push(function);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn file_hashes_are_fnv1a() {
        assert_eq!(super::fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
