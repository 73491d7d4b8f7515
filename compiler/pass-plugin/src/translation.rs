//! The translation itself: the module being rewritten and its translation function (`Pass`),
//! building `__kmpc_target_translate_fptr(value)` where a part of the pass asks for it, and
//! recognizing translations (inserted here, clang's own lookups, the loop cache's).

use std::collections::HashSet;

use crate::ir::{has_metadata, is_known_callee, picks_only, users, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::debuginfo::LLVMInstructionGetDebugLoc;
use crate::llvm::prelude::*;
use crate::llvm::target::{LLVMGetModuleDataLayout, LLVMPointerSizeForAS};
use crate::llvm::LLVMAttributeFunctionIndex;
use crate::remarks::{Kind, Remarks};
use crate::summary::{Phase, Summary};

pub use omptarget_indirect_abi::c_names::{LLVM_LOOKUP, TRANSLATE};

/// What a translation translates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    /// The callee of an indirect call.
    FunctionPointer,
    /// An object's vtable pointer, as loaded ([`crate::vtables`]).
    VtablePointer,
}

/// The metadata kind on the translations of vtable pointers, which the loop cache caches.
pub const VTABLE_TRANSLATION: &str = "omptarget-indirect.vtable";

/// The metadata kind on clang's own lookups of vtable pointers once they are the project's
/// translations ([`crate::llvm_lookups`]): clang says it is a vtable pointer, so the slots read
/// through it hold device addresses, with or without TBAA.
pub const CLANG_VTABLE_LOOKUP: &str = "omptarget-indirect.clang-vtable";

/// The metadata kind the loop cache (`src/shim.cpp`) puts on the translations it cached.
pub const CACHED_TRANSLATION: &str = "omptarget-indirect.cached";

/// The metadata kind the loop cache puts on the translations of function pointers it made look
/// up only a key in the table's range.
pub const GUARDED_TRANSLATION: &str = "omptarget-indirect.guarded";

/// Why a value cannot be translated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Untranslatable {
    /// A pointer in this address space, whose pointers are not the size of generic ones.
    OtherAddressSpace(u32),
    /// The program declares `__kmpc_target_translate_fptr` with another type.
    OtherSignature,
}

pub(crate) struct Pass<'r> {
    pub(crate) module: LLVMModuleRef,
    pub(crate) context: LLVMContextRef,
    pub(crate) remarks: &'r Remarks,
    /// [`pure_attributes`], for the declaration and every inserted call.
    pub(crate) pure: Vec<LLVMAttributeRef>,
    /// The translation function, once looked up or declared.
    pub(crate) translate: TranslationFunction,
    pub(crate) summary: Summary,
    pub(crate) phase: Phase,
}

/// What the module has for `__kmpc_target_translate_fptr`.
#[derive(Clone, Copy)]
pub(crate) enum TranslationFunction {
    /// Not looked up yet.
    Unknown,
    /// Declared (by the program or this pass) as `ptr (ptr)`: the function and its type.
    Usable(LLVMValueRef, LLVMTypeRef),
    /// The program declares it with another type: nothing can call it.
    OtherType,
}

impl Pass<'_> {
    /// Whether the module is for the x86_64 device, which runs in the host process (its code can
    /// write to the standard error stream, and a CPU predicts its branches).
    pub(crate) unsafe fn on_x86_64(&self) -> bool {
        // SAFETY: the module's triple is a NUL-terminated string it owns.
        unsafe { std::ffi::CStr::from_ptr(LLVMGetTarget(self.module)).to_bytes().starts_with(b"x86_64") }
    }

    /// Builds `translate(value)` before the instruction `before`: through the generic address
    /// space and back when `value` is a pointer in another address space of the same size
    /// (amdgcn loads vtable slots as global, AS 1). Returns the translated value and the
    /// instruction that reads `value`.
    pub(crate) unsafe fn build_translation(
        &mut self,
        value: LLVMValueRef,
        before: LLVMValueRef,
        key: Key,
    ) -> Result<(LLVMValueRef, LLVMValueRef), Untranslatable> {
        // SAFETY: `value` and `before` belong to the module; the builder is disposed before return.
        unsafe {
            let value_type = LLVMTypeOf(value);
            let address_space = LLVMGetPointerAddressSpace(value_type);
            let layout = LLVMGetModuleDataLayout(self.module);
            if address_space != 0
                && LLVMPointerSizeForAS(layout, address_space) != LLVMPointerSizeForAS(layout, 0)
            {
                return Err(Untranslatable::OtherAddressSpace(address_space));
            }
            let Some((translate, function_type)) = self.translation_function() else {
                return Err(Untranslatable::OtherSignature);
            };
            let builder = LLVMCreateBuilderInContext(self.context);
            LLVMPositionBuilderBefore(builder, before);
            LLVMSetCurrentDebugLocation2(builder, LLVMInstructionGetDebugLoc(before));
            let generic = LLVMPointerTypeInContext(self.context, 0);
            let mut args = [if address_space == 0 {
                value
            } else {
                LLVMBuildAddrSpaceCast(builder, value, generic, c"".as_ptr())
            }];
            let reader = if address_space == 0 { None } else { Some(args[0]) };
            let call = LLVMBuildCall2(builder, function_type, translate, args.as_mut_ptr(), 1, c"".as_ptr());
            for &attribute in &self.pure {
                LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, attribute);
            }
            if key == Key::VtablePointer {
                // What the loop cache looks for (crate::loop_cache).
                self.mark(call, VTABLE_TRANSLATION);
            }
            let translated = if address_space == 0 {
                call
            } else {
                LLVMBuildAddrSpaceCast(builder, call, value_type, c"".as_ptr())
            };
            LLVMDisposeBuilder(builder);
            Ok((translated, reader.unwrap_or(call)))
        }
    }

    /// Counts and reports (a missed remark at `at`) why a value was not translated.
    pub(crate) unsafe fn not_translated(
        &mut self,
        at: LLVMValueRef,
        what: &'static str,
        why: Untranslatable,
    ) {
        // SAFETY: `at` is an instruction of the module.
        unsafe {
            match why {
                Untranslatable::OtherAddressSpace(address_space) => {
                    self.summary.other_address_space += 1;
                    self.remarks.emit(Kind::Missed, at, c"CalleeNotTranslated", || {
                        format!(
                            "{what}: it is a pointer in address space {address_space}, not the size of a \
                             generic pointer"
                        )
                    });
                }
                Untranslatable::OtherSignature => {
                    self.summary.other_signature += 1;
                    self.remarks.emit(Kind::Missed, at, c"CalleeNotTranslated", || {
                        format!(
                            "{what}: the program declares __kmpc_target_translate_fptr with another type \
                             than ptr (ptr)"
                        )
                    });
                }
            }
        }
    }

    /// Puts an empty metadata node of kind `kind` on `inst`.
    pub(crate) unsafe fn mark(&self, inst: LLVMValueRef, kind: &str) {
        // SAFETY: a metadata kind and node of the module's context set on its instruction.
        unsafe {
            let kind = LLVMGetMDKindIDInContext(self.context, kind.as_ptr().cast(), kind.len() as u32);
            let empty = LLVMMDNodeInContext2(self.context, std::ptr::null_mut(), 0);
            LLVMSetMetadata(inst, kind, LLVMMetadataAsValue(self.context, empty));
        }
    }

    /// `__kmpc_target_translate_fptr`, declared `ptr (ptr)` with [`pure_attributes`] if
    /// the module has no declaration yet; None if the program declared it with another type.
    pub(crate) unsafe fn translation_function(&mut self) -> Option<(LLVMValueRef, LLVMTypeRef)> {
        match self.translate {
            TranslationFunction::Usable(function, function_type) => return Some((function, function_type)),
            TranslationFunction::OtherType => return None,
            TranslationFunction::Unknown => {}
        }
        // SAFETY: module and context are valid; the new declaration belongs to the module.
        let found = unsafe {
            let pointer = LLVMPointerTypeInContext(self.context, 0);
            let mut params = [pointer];
            let expected = LLVMFunctionType(pointer, params.as_mut_ptr(), 1, 0);
            let mut function = LLVMGetNamedFunction(self.module, TRANSLATE.as_ptr());
            if function.is_null() {
                function = LLVMAddFunction(self.module, TRANSLATE.as_ptr(), expected);
                for &attribute in &self.pure {
                    LLVMAddAttributeAtIndex(function, LLVMAttributeFunctionIndex, attribute);
                }
                self.summary.declared = true;
            }
            (LLVMGlobalGetValueType(function) == expected).then_some((function, expected))
        };
        self.translate = match found {
            Some((function, function_type)) => TranslationFunction::Usable(function, function_type),
            None => TranslationFunction::OtherType,
        };
        found
    }
}

/// `nounwind willreturn nosync nofree memory(none)` in `context` (`memory` is an integer
/// attribute: 0 is `none`).
pub(crate) unsafe fn pure_attributes(context: LLVMContextRef) -> Vec<LLVMAttributeRef> {
    // SAFETY: attribute kinds looked up by name in a valid context.
    unsafe {
        ["nounwind", "willreturn", "nosync", "nofree", "memory"]
            .iter()
            .map(|name| {
                let kind = LLVMGetEnumAttributeKindForName(name.as_ptr().cast(), name.len());
                LLVMCreateEnumAttribute(context, kind, 0)
            })
            .collect()
    }
}

/// Whether `value` is the result of a translation: a call of `__kmpc_target_translate_fptr` or
/// `__llvm_omp_indirect_call_lookup`, an address-space cast of one, or a phi / select all of
/// whose inputs are translations or known functions (what the optimizer makes of translations on
/// several paths).
pub(crate) unsafe fn is_translation(value: LLVMValueRef, visited: &mut HashSet<LLVMValueRef>) -> bool {
    // SAFETY: type queries and operand reads on valid values.
    unsafe {
        let translation_call = |value: LLVMValueRef| {
            if LLVMIsACallInst(value).is_null() {
                return false;
            }
            let callee = LLVMGetCalledValue(value);
            !LLVMIsAFunction(callee).is_null()
                && value_name_bytes(callee)
                    .is_some_and(|n| n == TRANSLATE.to_bytes() || n == LLVM_LOOKUP.to_bytes())
        };
        picks_only(value, visited, &translation_call, &|input| {
            is_known_callee(input) || is_key_in_range_only(input)
        })
    }
}

/// Whether `value` is the key of a translation the loop cache made look up only a key in the
/// table's range (cached or guarded): where the cache's phi picks the key itself, the key is
/// outside the range and so a device address.
pub(crate) unsafe fn is_key_in_range_only(value: LLVMValueRef) -> bool {
    // SAFETY: use-list, operand and metadata reads on valid values.
    unsafe {
        users(value).into_iter().any(|user| {
            is_translation_call(user)
                && LLVMGetNumArgOperands(user) == 1
                && LLVMGetOperand(user, 0) == value
                && (has_metadata(user, CACHED_TRANSLATION) || has_metadata(user, GUARDED_TRANSLATION))
        })
    }
}

/// Whether `value` is a call of `__kmpc_target_translate_fptr`.
pub(crate) unsafe fn is_translation_call(value: LLVMValueRef) -> bool {
    // SAFETY: type queries and name reads on a valid value.
    unsafe {
        !LLVMIsACallInst(value).is_null()
            && value_name_bytes(LLVMGetCalledValue(value)).is_some_and(|name| name == TRANSLATE.to_bytes())
    }
}
