//! Optimization remarks through the C++ shim (the C API has none): `-Rpass=omptarget-indirect`
//! shows each rewrite, `-Rpass-missed=` each indirect call left alone and why,
//! `-Rpass-analysis=` a count per function.

use std::ffi::CString;

use crate::llvm::prelude::{LLVMContextRef, LLVMValueRef};

/// Which `-Rpass*` flag shows a remark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// `-Rpass=`: a transformation that was done.
    Passed = 0,
    /// `-Rpass-missed=`: one that was not, and why.
    Missed = 1,
    /// `-Rpass-analysis=`: facts, here counts.
    Analysis = 2,
}

extern "C" {
    fn omptarget_indirect_remark_enabled(context: LLVMContextRef, kind: u32) -> bool;
    fn omptarget_indirect_remark(kind: u32, anchor: LLVMValueRef, name: *const u8, message: *const u8);
}

/// Emits remarks of one context, asking LLVM once per kind whether anyone listens.
pub struct Remarks {
    enabled: [bool; 3],
}

impl Remarks {
    /// The remarks of `context`.
    ///
    /// # Safety
    /// `context` must be a valid LLVM context.
    pub unsafe fn new(context: LLVMContextRef) -> Remarks {
        let enabled = [Kind::Passed, Kind::Missed, Kind::Analysis].map(|kind| {
            // SAFETY: `context` is valid (precondition); the shim only reads its diagnostic handler.
            unsafe { omptarget_indirect_remark_enabled(context, kind as u32) }
        });
        Remarks { enabled }
    }

    /// Whether remarks of `kind` are shown or recorded.
    pub fn enabled(&self, kind: Kind) -> bool {
        self.enabled[kind as usize]
    }

    /// Emits a remark `name` (camel case, static) at `anchor` (an instruction, or a function)
    /// if remarks of `kind` are enabled; `message` is built only then.
    ///
    /// # Safety
    /// `anchor` must be a valid instruction or function of the context the remarks belong to.
    pub unsafe fn emit(
        &self,
        kind: Kind,
        anchor: LLVMValueRef,
        name: &'static core::ffi::CStr,
        message: impl FnOnce() -> String,
    ) {
        if !self.enabled(kind) {
            return;
        }
        let text = CString::new(message().replace('\0', " ")).unwrap_or_default();
        // SAFETY: `anchor` is valid (precondition); both strings are NUL-terminated, `name` lives
        // forever and the shim copies `text` before returning.
        unsafe { omptarget_indirect_remark(kind as u32, anchor, name.as_ptr().cast(), text.as_ptr().cast()) };
    }
}
