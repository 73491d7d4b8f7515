//! Living with clang 23's own lookup.
//!
//! clang 23 inserts a call of LLVM's `__llvm_omp_indirect_call_lookup` before every virtual call in
//! device code (on the vtable pointer) and, on GPU targets, before function-pointer calls in
//! target-region bodies (docs/llvm.md). Left alone, those calls answer from LLVM's table only,
//! outside the loop cache, and the project's translation would pass over the calls they feed. Each
//! becomes a call of the project's translation instead: one lookup per call, answered from the
//! project's table first and LLVM's after it (as the device library does for every call), and
//! from then on a translation like any the pass inserts (hoisted, cached in loops, folded where
//! the pointer is a device address).

use omptarget_indirect_abi::c_names::LLVM_LOOKUP;

use crate::ir::{direct_calls, set_callee, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::LLVMAttributeFunctionIndex;
use crate::policy::{self, is_runtime_function};
use crate::remarks::Kind;
use crate::translation::{Pass, CLANG_VTABLE_LOOKUP, VTABLE_TRANSLATION};

impl Pass<'_> {
    /// Makes each call of `__llvm_omp_indirect_call_lookup` in the program's functions call
    /// `__kmpc_target_translate_fptr` (the same type, `ptr (ptr)`). The runtime's own calls, if
    /// any, stay LLVM's.
    pub(crate) unsafe fn adopt_llvm_lookups(&mut self) {
        // SAFETY: handles of the module; the calls are collected before any is changed, and the
        // callee operand replaced is a function of the same type.
        unsafe {
            let lookup = LLVMGetNamedFunction(self.module, LLVM_LOOKUP.as_ptr());
            if lookup.is_null() {
                return;
            }
            let calls = direct_calls(lookup, 1);
            if calls.is_empty() {
                return;
            }
            let Some((translate, translate_type)) = self.translation_function() else { return };
            if LLVMGlobalGetValueType(lookup) != translate_type {
                return;
            }
            for call in calls {
                let caller = LLVMGetBasicBlockParent(LLVMGetInstructionParent(call));
                if value_name_bytes(caller).is_some_and(|name| is_runtime_function(&name)) {
                    continue;
                }
                set_callee(call, translate);
                for &attribute in &self.pure {
                    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, attribute);
                }
                if policy::looks_up_a_vtable_pointer(call) {
                    self.mark(call, VTABLE_TRANSLATION);
                    self.mark(call, CLANG_VTABLE_LOOKUP);
                }
                self.summary.adopted += 1;
                self.remarks.emit(Kind::Passed, call, c"LookupAdopted", || {
                    "translated clang's own lookup: its call of __llvm_omp_indirect_call_lookup now calls \
                     __kmpc_target_translate_fptr"
                        .to_string()
                });
            }
        }
    }
}
