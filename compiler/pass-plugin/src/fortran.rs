//! Fortran procedures made indirect through the `omptarget_indirect` module (host modules).
//!
//! No flang emits `declare target ... indirect` yet (flang 22 stops at the clause). A program
//! names each procedure that device code calls through a procedure pointer with a variable of the
//! module's type, declared target:
//!
//! ```fortran
//! use omptarget_indirect, only: indirect
//! type(indirect) :: twice_indirect = indirect(twice)
//! !$omp declare target(twice_indirect)
//! ```
//!
//! flang then defines the variable in the host module, holding the host address of `twice`, and
//! in the device module, holding the device address, and gives it an offload entry (flag 0, 8
//! bytes). Here, in the host module, that entry gets a twin with flag `0x08` (indirect) whose
//! address is the host procedure's: the offload runtime reads the variable's device copy, whose
//! first word is the device procedure's address, and pairs the two in its indirect-call table,
//! as it does for clang's `indirect` entries. Host and device agree by construction (one variable,
//! one name), a procedure that does not exist is flang's own error, and a holder left out of
//! `declare target` or without a procedure is this pass's error. A procedure that already has an
//! indirect entry in the module (once flang lowers the clause) gets no second one.

use std::ffi::CString;

use crate::ir::{keep, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::offload_entries::{copy_entry, offload_entries, Entry, INDIRECT};

/// The LLVM name flang gives the derived type `indirect` of module `omptarget_indirect`.
pub const HOLDER_TYPE: &str = "_QMomptarget_indirectTindirect";

extern "C" {
    fn omptarget_indirect_error(module: LLVMModuleRef, message: *const u8);
}

/// Adds the indirect entries of the module's `omptarget_indirect` holders and reports holders
/// that cannot have one as compile errors. Returns how many entries it added.
///
/// # Safety
/// `module` must be a valid host module that no one else accesses during the call.
pub unsafe fn add_indirect_entries(module: LLVMModuleRef) -> usize {
    // SAFETY: globals of the module, read before the new entries are added after them.
    unsafe {
        let entries = offload_entries(module);
        let mut added = Vec::new();
        let mut global = LLVMGetFirstGlobal(module);
        while !global.is_null() {
            if LLVMIsDeclaration(global) == 0 && is_holder(global) {
                match holder_entry(module, global, &entries) {
                    Ok(Some(entry)) => added.push(entry),
                    Ok(None) => {}
                    Err(why) => error(module, global, &why),
                }
            }
            global = LLVMGetNextGlobal(global);
        }
        if !added.is_empty() {
            keep(module, LLVMGetModuleContext(module), &added);
        }
        added.len()
    }
}

/// The indirect twin of `holder`'s entry, added to the module; None when the procedure already
/// has an indirect entry.
unsafe fn holder_entry(
    module: LLVMModuleRef,
    holder: LLVMValueRef,
    entries: &[Entry],
) -> Result<Option<LLVMValueRef>, String> {
    // SAFETY: `holder` is a defined global of the module; the entries are the module's.
    unsafe {
        let init = LLVMGetInitializer(holder);
        let procedure = if init.is_null() || LLVMIsNull(init) != 0 {
            None
        } else {
            Some(LLVMGetOperand(init, 0)).filter(|p| !LLVMIsAFunction(*p).is_null())
        };
        let procedure = procedure.ok_or("names no procedure: initialize it, `indirect(<procedure>)`")?;
        let entry = entries.iter().find(|e| e.address == holder && e.flags & INDIRECT == 0).ok_or(
            "is not declare target: add `!$omp declare target(<it>)`, so that the device has it too",
        )?;
        if entries.iter().any(|e| e.address == procedure && e.flags & INDIRECT != 0) {
            return Ok(None);
        }
        let flags_type = LLVMTypeOf(LLVMGetOperand(entry.init, entry.layout.flags));
        let flags = LLVMConstInt(flags_type, entry.flags | INDIRECT, 0);
        let mut name = value_name_bytes(entry.global).unwrap_or_default().to_vec();
        name.extend_from_slice(b".indirect");
        let name = CString::new(name).map_err(|_| "has an entry whose name holds a NUL")?;
        let fields = [(entry.layout.flags, flags), (entry.layout.address, procedure)];
        Ok(Some(copy_entry(module, entry, &fields, &name)))
    }
}

/// Whether `global` is a variable of the holder type.
unsafe fn is_holder(global: LLVMValueRef) -> bool {
    // SAFETY: type queries on a valid global.
    unsafe {
        let value_type = LLVMGlobalGetValueType(global);
        if LLVMGetTypeKind(value_type) != crate::llvm::LLVMTypeKind::LLVMStructTypeKind {
            return false;
        }
        let name = LLVMGetStructName(value_type);
        if name.is_null() {
            return false;
        }
        let name = std::ffi::CStr::from_ptr(name).to_bytes();
        // flang's name, or LLVM's renaming of it when a module links two (`<name>.0`).
        name.strip_prefix(HOLDER_TYPE.as_bytes()).is_some_and(|rest| {
            rest.is_empty() || (rest[0] == b'.' && rest[1..].iter().all(u8::is_ascii_digit))
        })
    }
}

/// Reports `why` about `holder` as a compile error.
unsafe fn error(module: LLVMModuleRef, holder: LLVMValueRef, why: &str) {
    // SAFETY: a valid global's name; the message is copied by the diagnostic before returning.
    unsafe {
        let name = String::from_utf8_lossy(&value_name_bytes(holder).unwrap_or_default()).into_owned();
        let message = format!("omptarget-indirect: `{name}` ({HOLDER_TYPE}) {why}");
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        omptarget_indirect_error(module, message.as_ptr().cast());
    }
}
