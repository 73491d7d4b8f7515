//! Which values are device addresses already, whatever the table holds: what a translation of
//! them would return unchanged. The rules of [`crate::policy`] rest on these answers.

use std::collections::HashSet;

use crate::ir::{is_known_callee, users, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMOpcode;
use crate::translation::is_translation;

/// Whether `translate(operand)` is `operand` whatever the table holds: a known function or null
/// ([`is_known_callee`]), a translation already, or an address in a global of the device module
/// (a device vtable, function or variable: the table's keys are host addresses). Folding these
/// as soon as the optimizer makes them constant lets it devirtualize and inline what stock clang
/// does (an object built in device code calls through its own device vtable).
pub(crate) unsafe fn translates_to_itself(operand: LLVMValueRef) -> bool {
    // SAFETY: type queries on a valid value.
    unsafe {
        is_known_callee(operand)
            || is_translation(operand, &mut HashSet::new())
            || device_global_of(operand).is_some()
    }
}

/// The global `value` points into, if it is a constant address in one: the global itself, or a
/// constant expression that offsets or casts it.
pub(crate) unsafe fn device_global_of(value: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: type queries and operand reads on valid constants.
    unsafe {
        let mut value = value;
        while !LLVMIsAConstantExpr(value).is_null()
            && matches!(
                LLVMGetConstOpcode(value),
                LLVMOpcode::LLVMGetElementPtr | LLVMOpcode::LLVMBitCast | LLVMOpcode::LLVMAddrSpaceCast
            )
        {
            value = LLVMGetOperand(value, 0);
        }
        (!LLVMIsAGlobalValue(value).is_null()).then_some(value)
    }
}

/// Whether `value` is a load of a local variable that only ever holds addresses that
/// [translate to themselves](translates_to_itself): an `alloca` of the function (or an
/// address-space cast of one: amdgcn's locals are private memory) whose every use is a load, a
/// store of such an address into it, a lifetime marker or such a cast. What the optimizer's first
/// cleanup (SROA, before OpenMP's kernel optimization) turns into a constant: translating it
/// would hide from that optimization a call stock clang makes direct (`int (*f)(int) = twice;
/// f(1)` in a kernel, which it then runs in SPMD mode).
pub(crate) unsafe fn holds_only_device_addresses(value: LLVMValueRef) -> bool {
    // SAFETY: type queries, operand and use-list reads on valid values.
    unsafe {
        if LLVMIsALoadInst(value).is_null() {
            return false;
        }
        let mut variable = LLVMGetOperand(value, 0);
        if !LLVMIsAAddrSpaceCastInst(variable).is_null() {
            variable = LLVMGetOperand(variable, 0);
        }
        if LLVMIsAAllocaInst(variable).is_null() {
            return false;
        }
        let mut places = vec![variable];
        let mut stored = false;
        while let Some(place) = places.pop() {
            for user in users(place) {
                if !LLVMIsALoadInst(user).is_null() {
                    continue;
                }
                if !LLVMIsAAddrSpaceCastInst(user).is_null() {
                    places.push(user);
                    continue;
                }
                if !LLVMIsAStoreInst(user).is_null() && LLVMGetOperand(user, 1) == place {
                    if !translates_to_itself(LLVMGetOperand(user, 0)) {
                        return false;
                    }
                    stored = true;
                    continue;
                }
                let lifetime = !LLVMIsACallInst(user).is_null()
                    && value_name_bytes(LLVMGetCalledValue(user))
                        .is_some_and(|n| n.starts_with(b"llvm.lifetime."));
                if !lifetime {
                    return false;
                }
            }
        }
        stored
    }
}
