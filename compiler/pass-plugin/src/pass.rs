//! What every part of the pass shares: the module being rewritten and its translation function
//! ([`Pass`]), what a run did ([`Summary`]), and the IR questions several parts ask.

use std::collections::HashSet;
use std::ffi::CStr;

use crate::llvm::core::*;
use crate::llvm::debuginfo::LLVMInstructionGetDebugLoc;
use crate::llvm::prelude::*;
use crate::llvm::target::{LLVMGetModuleDataLayout, LLVMPointerSizeForAS};
use crate::llvm::{LLVMAttributeFunctionIndex, LLVMLinkage, LLVMOpcode};
use crate::remarks::{Kind, Remarks};

pub use omptarget_indirect_abi::c_names::{LLVM_LOOKUP, TRANSLATE};

/// Where in the pipeline the pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the optimizer (every `-O` level, and the LTO pre-link pipeline).
    PipelineStart,
    /// After the optimizer: folds what optimization made foldable, catches new indirect calls.
    OptimizerLast,
}

/// What one run did to a module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The module is an OpenMP device module (nothing else is rewritten).
    pub device_module: bool,
    /// Indirect calls that now call the translation's result.
    pub translated: usize,
    /// Indirect calls whose callee already was a translation.
    pub already_translated: usize,
    /// `translate(@f)` replaced by `@f` (or by its already translated operand).
    pub folded: usize,
    /// Indirect calls left alone because they are in a runtime function.
    pub in_runtime: usize,
    /// Indirect calls left alone because the callee is a pointer of another size than a
    /// generic pointer (in another address space).
    pub other_address_space: usize,
    /// Indirect calls left alone because the program declares the translation with another type.
    pub other_signature: usize,
    /// `__kmpc_target_translate_fptr` was declared by this run.
    pub declared: bool,
    /// Loads of a vtable pointer whose result is now translated ([`crate::vtables`]).
    pub vtable_loads: usize,
    /// Indirect calls through a slot of a translated vtable: the slot already holds a device
    /// address, so the callee is not translated again.
    pub from_device_vtable: usize,
    /// Indirect calls through a local variable that only ever holds device addresses (functions
    /// taken in device code): not translated, so that the optimizer sees the call it makes direct.
    pub from_device_variable: usize,
    /// Device globals defined for the words of the module's vtables ([`crate::vtables`]).
    pub vtable_words: usize,
    /// Calls of `__dynamic_cast` now calling the device library's cast ([`crate::dynamic_casts`]).
    pub dynamic_casts: usize,
    /// Calls of `__dynamic_cast` left alone: no RTTI in this device code.
    pub dynamic_casts_left: usize,
    /// Host-only virtual functions whose vtable slots now hold a trapping stub
    /// ([`crate::host_only`]).
    pub host_only_stubs: usize,
    /// Declarations that another device compile of the program may define, reached from
    /// vtable slots, given a weak definition that traps ([`crate::host_only`]).
    pub weak_traps: usize,
    /// Translations in loops that now keep their last key and result ([`crate::loop_cache`]).
    pub cached: usize,
    /// Translations of function pointers in loops that now look up only a key in the table's
    /// range ([`crate::loop_cache`]).
    pub guarded: usize,
    /// Calls of clang's `__llvm_omp_indirect_call_lookup` that now call the project's translation
    /// ([`crate::llvm_lookups`]).
    pub adopted: usize,
    /// Host module: indirect offload entries added for Fortran procedures named through the
    /// `omptarget_indirect` module ([`crate::fortran`]).
    pub fortran_entries: usize,
    /// Host module: vtables recorded in [`omptarget_indirect_abi::HOST_VTABLES_SECTION`]
    /// ([`crate::host_vtables`]).
    pub host_vtables: usize,
    /// Entries of indirect functions named per function ([`crate::indirect_entries`]): host
    /// entries renamed or added, device globals added.
    pub indirect_entries: usize,
    /// x86_64 device module: type_info declarations made weak
    /// ([`Pass::weaken_type_info_references`](crate::pass::Pass)).
    pub weakened_type_info: usize,
    /// Device module: the image anchor was defined ([`crate::image_anchor`]).
    pub image_anchor: bool,
    /// flang's x86_64 kernels given an adapter of the runtime's signature
    /// ([`crate::flang_kernels`]).
    pub adapted_kernels: usize,
}

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

impl Summary {
    /// Whether the module was modified.
    pub fn changed(&self) -> bool {
        self.translated > 0
            || self.folded > 0
            || self.declared
            || self.adopted > 0
            || self.vtable_loads > 0
            || self.vtable_words > 0
            || self.host_only_stubs > 0
            || self.weak_traps > 0
            || self.dynamic_casts > 0
            || self.fortran_entries > 0
            || self.host_vtables > 0
            || self.image_anchor
            || self.weakened_type_info > 0
            || self.indirect_entries > 0
            || self.cached > 0
            || self.guarded > 0
    }
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

/// A callee the compiler knows: a function (intrinsics included), an alias, inline asm, or a
/// constant null / undef (calling those is undefined; translating them changes nothing).
pub(crate) unsafe fn is_known_callee(callee: LLVMValueRef) -> bool {
    // SAFETY: type queries on a valid value.
    unsafe {
        !LLVMIsAFunction(callee).is_null()
            || !LLVMIsAGlobalAlias(callee).is_null()
            || !LLVMIsAInlineAsm(callee).is_null()
            || !LLVMIsAConstantPointerNull(callee).is_null()
            || !LLVMIsAUndefValue(callee).is_null()
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

/// Whether the instruction `inst` carries metadata of kind `kind`.
pub(crate) unsafe fn has_metadata(inst: LLVMValueRef, kind: &str) -> bool {
    // SAFETY: a metadata read on a valid instruction; the kind is passed with its length.
    unsafe {
        let context = LLVMGetTypeContext(LLVMTypeOf(inst));
        !LLVMGetMetadata(inst, LLVMGetMDKindIDInContext(context, kind.as_ptr().cast(), kind.len() as u32))
            .is_null()
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

/// Whether `value` is a `leaf`, directly, through address-space casts, or as every value a phi or
/// select may pick, each a `leaf` the same way or an `other` value (a phi that reaches itself
/// through a loop adds no other value).
pub(crate) unsafe fn picks_only(
    value: LLVMValueRef,
    visited: &mut HashSet<LLVMValueRef>,
    leaf: &dyn Fn(LLVMValueRef) -> bool,
    other: &dyn Fn(LLVMValueRef) -> bool,
) -> bool {
    // SAFETY: type queries and operand reads on valid values.
    unsafe {
        if !LLVMIsAAddrSpaceCastInst(value).is_null() {
            return picks_only(LLVMGetOperand(value, 0), visited, leaf, other);
        }
        let inputs: Vec<LLVMValueRef> = if !LLVMIsAPHINode(value).is_null() {
            (0..LLVMCountIncoming(value)).map(|i| LLVMGetIncomingValue(value, i)).collect()
        } else if !LLVMIsASelectInst(value).is_null() {
            vec![LLVMGetOperand(value, 1), LLVMGetOperand(value, 2)]
        } else {
            return leaf(value);
        };
        if !visited.insert(value) {
            return true;
        }
        inputs.into_iter().all(|input| other(input) || picks_only(input, visited, leaf, other))
    }
}

/// The name of a named value, as bytes.
pub(crate) unsafe fn value_name_bytes<'a>(value: LLVMValueRef) -> Option<&'a [u8]> {
    // SAFETY: LLVM returns the name's bytes and length; they live as long as the value's name.
    unsafe {
        let mut len = 0;
        let name = LLVMGetValueName2(value, &mut len);
        (!name.is_null() && len > 0).then(|| std::slice::from_raw_parts(name.cast::<u8>(), len))
    }
}

/// The name of a named value, for remarks.
pub(crate) unsafe fn value_name(value: LLVMValueRef) -> Option<String> {
    // SAFETY: `value` is a valid value (this function's precondition), all `value_name_bytes` needs.
    unsafe { value_name_bytes(value).map(|n| String::from_utf8_lossy(n).into_owned()) }
}

/// Appends `globals` to `llvm.compiler.used` (which keeps a global through optimization and
/// linking without making it a root of the program), creating it if the module has none.
pub(crate) unsafe fn keep(module: LLVMModuleRef, context: LLVMContextRef, globals: &[LLVMValueRef]) {
    // SAFETY: the caller's precondition, passed on.
    unsafe { append_to_used(module, context, c"llvm.compiler.used", globals) }
}

/// Appends `globals` to `llvm.used`, which also keeps them through the linker's garbage
/// collection of sections (ELF: `SHF_GNU_RETAIN`).
pub(crate) unsafe fn keep_in_links(module: LLVMModuleRef, context: LLVMContextRef, globals: &[LLVMValueRef]) {
    // SAFETY: the caller's precondition, passed on.
    unsafe { append_to_used(module, context, c"llvm.used", globals) }
}

unsafe fn append_to_used(
    module: LLVMModuleRef,
    context: LLVMContextRef,
    list: &CStr,
    globals: &[LLVMValueRef],
) {
    // SAFETY: the old array's elements are read before it is deleted; the new one has the same
    // name, linkage and section, as LLVM's own appendToUsed and appendToCompilerUsed make it.
    unsafe {
        let generic = LLVMPointerTypeInContext(context, 0);
        let mut elements = Vec::new();
        let old = LLVMGetNamedGlobal(module, list.as_ptr());
        if !old.is_null() {
            let init = LLVMGetInitializer(old);
            if !init.is_null() {
                let count = LLVMGetArrayLength2(LLVMTypeOf(init));
                elements.extend((0..count as u32).map(|i| LLVMGetAggregateElement(init, i)));
            }
            LLVMDeleteGlobal(old);
        }
        elements.extend(globals.iter().map(|&g| LLVMConstPointerCast(g, generic)));
        let array = LLVMConstArray2(generic, elements.as_mut_ptr(), elements.len() as u64);
        let used = LLVMAddGlobal(module, LLVMTypeOf(array), list.as_ptr());
        LLVMSetInitializer(used, array);
        LLVMSetLinkage(used, LLVMLinkage::LLVMAppendingLinkage);
        LLVMSetSection(used, c"llvm.metadata".as_ptr());
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

/// The users of `value`.
pub(crate) unsafe fn users(value: LLVMValueRef) -> Vec<LLVMValueRef> {
    // SAFETY: use-list walk on a valid value.
    unsafe {
        let mut out = Vec::new();
        let mut using = LLVMGetFirstUse(value);
        while !using.is_null() {
            out.push(LLVMGetUser(using));
            using = LLVMGetNextUse(using);
        }
        out
    }
}

/// The instructions of `function`, block by block, read as the walk goes.
///
/// # Safety
/// `function` must be a valid function whose blocks and instructions nothing adds or removes
/// while the iterator is in use (callers collect what they change first).
pub(crate) unsafe fn instructions(function: LLVMValueRef) -> impl Iterator<Item = LLVMValueRef> {
    // SAFETY: the first block of a valid function (null if it has none).
    let mut block = unsafe { LLVMGetFirstBasicBlock(function) };
    let mut inst: LLVMValueRef = std::ptr::null_mut();
    std::iter::from_fn(move || {
        // SAFETY: blocks and instructions of the function, unchanged during the walk (the
        // caller's guarantee).
        unsafe {
            inst = if inst.is_null() { std::ptr::null_mut() } else { LLVMGetNextInstruction(inst) };
            while inst.is_null() && !block.is_null() {
                inst = LLVMGetFirstInstruction(block);
                block = LLVMGetNextBasicBlock(block);
            }
        }
        (!inst.is_null()).then_some(inst)
    })
}

/// The calls and invokes of `function` itself (not other uses of it, such as its address stored
/// or passed) with `arguments` arguments, collected before the caller changes any.
///
/// # Safety
/// `function` must be a valid function.
pub(crate) unsafe fn direct_calls(function: LLVMValueRef, arguments: u32) -> Vec<LLVMValueRef> {
    // SAFETY: use-list reads and type queries on a valid function and its users.
    unsafe {
        let mut calls = Vec::new();
        let mut using = LLVMGetFirstUse(function);
        while !using.is_null() {
            let user = LLVMGetUser(using);
            let is_call = !LLVMIsACallInst(user).is_null() || !LLVMIsAInvokeInst(user).is_null();
            if is_call && LLVMGetCalledValue(user) == function && LLVMGetNumArgOperands(user) == arguments {
                calls.push(user);
            }
            using = LLVMGetNextUse(using);
        }
        calls
    }
}
