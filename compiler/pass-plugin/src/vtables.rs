//! Virtual calls on objects the host built.
//!
//! An object built on the host and mapped to the device keeps, in its device copy, the host's
//! vtable pointer: a virtual call reads a slot of the *host* vtable (an illegal address on a GPU)
//! and calls the host function it holds. Two parts fix that:
//!
//! - **Vtable pointer loads are translated** ([`Pass::translate_vtable_loads`]): right after a
//!   load of an object's vtable pointer, `__kmpc_target_translate_fptr(vptr)` replaces it for
//!   every use (slot loads, offset-to-top, virtual-base offsets, RTTI). The table pairs every
//!   word of every host vtable with the same word of the device's, so any address point
//!   translates; a device-built object's vtable pointer is not in the table and passes through.
//!   A slot read from a translated vtable holds a device address, so the indirect call that
//!   follows is not translated again ([`is_device_vtable_slot`]).
//! - **The device says where its vtables are** ([`Pass::export_vtable_words`]): for every word of
//!   every vtable the module defines, a constant global named by
//!   [`omptarget_indirect_abi::VTABLE_WORD_PREFIX`] holds the word's device address; the plugins
//!   pair it with the host's vtable of the same name.
//!
//! Which loads are vtable pointer loads: clang tags them with the TBAA type `vtable pointer` at
//! -O1 and above, and with `!invariant.group` under `-fstrict-vtable-pointers`; those are certain.
//! A function without any TBAA (-O0, `-fno-strict-aliasing`) has no such tag, so there a pointer
//! loaded from memory other than a local variable is taken for a vtable pointer when a pointer
//! read at a constant offset from it is called, or when it is read at a negative offset (what a
//! virtual call, a virtual-base adjustment and `typeid` do). That may also pick a table of
//! function pointers reached through a pointer: translating such a data pointer returns it
//! unchanged (it is no key of the table), and the call through it stays translated, so the guess
//! costs one lookup and never changes a result.

use omptarget_indirect_abi::{is_dispatch_table, write_vtable_word};

use crate::fortran_dispatch::is_type_descriptor_load;

use crate::device_addresses::device_global_of;
use crate::ir::{
    has_metadata, instructions, is_called, keep, kind_id, md_string, node_operands, picks_only, users,
    value_name_bytes,
};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::target::{LLVMABISizeOfType, LLVMGetModuleDataLayout};
use crate::llvm::{LLVMLinkage, LLVMTypeKind, LLVMVisibility};
use crate::remarks::Kind;
use crate::summary::Phase;
use crate::translation::{
    is_key_in_range_only, is_translation, is_translation_call, Key, Pass, CLANG_VTABLE_LOOKUP,
    VTABLE_TRANSLATION,
};

/// How a load was recognised as a vtable pointer load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Evidence {
    /// clang's TBAA type `vtable pointer`, or `!invariant.group`.
    Tagged,
    /// The shape of its uses, in a function without TBAA.
    Shape,
    /// The type-descriptor pointer of a Fortran descriptor ([`crate::fortran_dispatch`]).
    TypeDescriptor,
}

impl Pass<'_> {
    /// Translates the result of every vtable pointer load in `function` that is not translated
    /// yet: `%t = translate(%vptr)` right after the load replaces `%vptr` for every other use.
    pub(crate) unsafe fn translate_vtable_loads(&mut self, function: LLVMValueRef) {
        // SAFETY: instructions of the module's function; collected before any insertion.
        unsafe {
            let tagged_only = has_tbaa(self.context, function);
            let loads: Vec<_> = instructions(function)
                .filter_map(|inst| Some((inst, vtable_load(self.context, inst, tagged_only)?)))
                .filter(|&(inst, _)| !only_translated(inst))
                .collect();
            for (load, evidence) in loads {
                let next = LLVMGetNextInstruction(load);
                let (translated, reader) = match self.build_translation(load, next, Key::VtablePointer) {
                    Ok(built) => built,
                    Err(why) => {
                        self.not_translated(load, "vtable pointer not translated", why);
                        continue;
                    }
                };
                LLVMReplaceAllUsesWith(load, translated);
                // The translation itself reads the load, not its own result.
                LLVMSetOperand(reader, 0, load);
                self.summary.vtable_loads += 1;
                let phase = self.phase;
                self.remarks.emit(Kind::Passed, load, c"VtablePointerTranslated", || {
                    let how = match evidence {
                        Evidence::Tagged => "a vtable pointer load",
                        Evidence::Shape => "a pointer used as a vtable (no TBAA here to tell)",
                        Evidence::TypeDescriptor => "a Fortran descriptor's type-descriptor pointer",
                    };
                    let table =
                        if evidence == Evidence::TypeDescriptor { "type descriptor" } else { "vtable" };
                    let when = if phase == Phase::OptimizerLast { " (found after optimization)" } else { "" };
                    format!(
                        "translated {how} with __kmpc_target_translate_fptr: an object built on the host \
                         reaches the device's {table}{when}"
                    )
                });
            }
        }
    }

    /// Defines, for every word of every vtable and construction vtable the module defines with
    /// external linkage, the [`omptarget_indirect_abi::VTABLE_WORD_PREFIX`] global that holds the
    /// word's device address, kept (`llvm.compiler.used`) and visible by name to the plugins.
    /// Vtables of classes with internal linkage (anonymous namespaces, local classes) have no
    /// name the host can look up and are left out.
    pub(crate) unsafe fn export_vtable_words(&mut self) {
        // SAFETY: globals of the module; new globals are added after the walk.
        unsafe {
            let vtables = defined_vtables(self.module);
            let i8_type = LLVMInt8TypeInContext(self.context);
            let i64_type = LLVMInt64TypeInContext(self.context);
            let mut defined = Vec::new();
            for (vtable, name, size) in vtables {
                let mut word_name = String::new();
                for index in 0..size / 8 {
                    word_name.clear();
                    write_vtable_word(&mut word_name, index, &name).expect("a String takes any text");
                    word_name.push('\0');
                    if !LLVMGetNamedGlobal(self.module, word_name.as_ptr().cast()).is_null() {
                        continue;
                    }
                    let mut offset = [LLVMConstInt(i64_type, index * 8, 0)];
                    let address = LLVMConstInBoundsGEP2(i8_type, vtable, offset.as_mut_ptr(), 1);
                    let word = LLVMAddGlobalInAddressSpace(
                        self.module,
                        LLVMTypeOf(address),
                        word_name.as_ptr().cast(),
                        LLVMGetPointerAddressSpace(LLVMTypeOf(vtable)),
                    );
                    LLVMSetInitializer(word, address);
                    LLVMSetGlobalConstant(word, 1);
                    // One definition per program however many units define the vtable (its
                    // words are the same by the ODR), visible to the plugins' symbol lookup.
                    LLVMSetLinkage(word, LLVMLinkage::LLVMWeakODRLinkage);
                    LLVMSetVisibility(word, LLVMVisibility::LLVMProtectedVisibility);
                    LLVMSetAlignment(word, 8);
                    defined.push(word);
                }
            }
            if defined.is_empty() {
                return;
            }
            self.summary.vtable_words += defined.len();
            keep(self.module, self.context, &defined);
        }
    }
}

/// Every dispatch table (a vtable or construction vtable, `_ZTV*`, `_ZTC*`, or a Fortran type
/// descriptor: [`is_dispatch_table`]) `module` defines with external linkage, as `(global,
/// symbol, size in bytes)`: the ones another module may pair by name.
/// Vtables of classes with internal linkage (anonymous namespaces, local classes) are left out:
/// two units may each define one of the same name.
pub(crate) unsafe fn defined_vtables(module: LLVMModuleRef) -> Vec<(LLVMValueRef, String, u64)> {
    // SAFETY: reads of the globals of a valid module (the caller's precondition).
    unsafe {
        let layout = LLVMGetModuleDataLayout(module);
        let mut vtables = Vec::new();
        let mut global = LLVMGetFirstGlobal(module);
        while !global.is_null() {
            let name = value_name_bytes(global).unwrap_or_default();
            let linkage = LLVMGetLinkage(global);
            if is_dispatch_table(&name)
                && LLVMIsDeclaration(global) == 0
                && !matches!(
                    linkage,
                    LLVMLinkage::LLVMInternalLinkage
                        | LLVMLinkage::LLVMPrivateLinkage
                        | LLVMLinkage::LLVMAvailableExternallyLinkage
                )
            {
                let size = LLVMABISizeOfType(layout, LLVMGlobalGetValueType(global));
                vtables.push((global, String::from_utf8_lossy(&name).into_owned(), size));
            }
            global = LLVMGetNextGlobal(global);
        }
        vtables
    }
}

/// Whether `callee` was read from a slot of a vtable whose pointer this pass translated (a load
/// at a constant offset from the translation of a tagged vtable pointer load): the slot holds a
/// device address already.
pub(crate) unsafe fn is_device_vtable_slot(callee: LLVMValueRef) -> bool {
    // SAFETY: type queries and operand reads on valid values.
    unsafe {
        if LLVMIsALoadInst(callee).is_null() {
            return false;
        }
        let mut address = LLVMGetOperand(callee, 0);
        while !LLVMIsAGetElementPtrInst(address).is_null() && constant_indices(address) {
            address = LLVMGetOperand(address, 0);
        }
        if !LLVMIsAAddrSpaceCastInst(address).is_null() {
            address = LLVMGetOperand(address, 0);
        }
        // A translation folded to the device vtable it found (crate::rewrite::fold_function).
        let device_vtable = device_global_of(address).is_some_and(|global| {
            value_name_bytes(global)
                .is_some_and(|name| name.starts_with(b"_ZTV") || name.starts_with(b"_ZTC"))
        });
        device_vtable || translates_vtable_loads(address)
    }
}

/// Whether `value` is a translation of a vtable pointer load (tagged as one by TBAA), or a phi or
/// select of such translations and null: the loop cache's result (`crate::loop_cache`).
unsafe fn translates_vtable_loads(value: LLVMValueRef) -> bool {
    // SAFETY: type queries and operand reads on valid values.
    unsafe {
        let of_tagged_load = |call: LLVMValueRef| {
            if LLVMIsACallInst(call).is_null()
                || !is_translation(call, &mut Default::default())
                || LLVMGetNumArgOperands(call) != 1
            {
                return false;
            }
            let context = LLVMGetTypeContext(LLVMTypeOf(call));
            let mut translated = LLVMGetOperand(call, 0);
            if !LLVMIsAAddrSpaceCastInst(translated).is_null() {
                translated = LLVMGetOperand(translated, 0);
            }
            // Marked when inserted, and the optimizer (which runs only where clang tags vtable
            // loads) has since replaced the load it translated: an object built in the same
            // function, its vtable's address stored, then loaded.
            let optimized = LLVMIsALoadInst(translated).is_null() && has_metadata(call, VTABLE_TRANSLATION);
            optimized || has_metadata(call, CLANG_VTABLE_LOOKUP) || tagged_vtable_load(context, translated)
        };
        // The loop cache's miss path answers a key outside the table's range with the key itself
        // (a device vtable).
        picks_only(value, &mut Default::default(), &of_tagged_load, &|input| {
            !LLVMIsAConstantPointerNull(input).is_null() || is_key_in_range_only(input)
        })
    }
}

/// How `inst` is a vtable pointer load, if it is one. `tagged_only`: the function has TBAA, so
/// only clang's tags count.
unsafe fn vtable_load(context: LLVMContextRef, inst: LLVMValueRef, tagged_only: bool) -> Option<Evidence> {
    // SAFETY: type queries, metadata and use reads on a valid instruction.
    unsafe {
        if LLVMIsALoadInst(inst).is_null()
            || LLVMGetTypeKind(LLVMTypeOf(inst)) != LLVMTypeKind::LLVMPointerTypeKind
        {
            return None;
        }
        if tagged_vtable_load(context, inst) {
            return Some(Evidence::Tagged);
        }
        if is_type_descriptor_load(inst) {
            return Some(Evidence::TypeDescriptor);
        }
        if tagged_only {
            return None;
        }
        // A local variable (at -O0 every pointer variable lives in an alloca) holds no vtable
        // pointer; an object does.
        let mut address = LLVMGetOperand(inst, 0);
        if !LLVMIsAAddrSpaceCastInst(address).is_null() {
            // amdgcn's locals are private memory, used through a cast to generic pointers.
            address = LLVMGetOperand(address, 0);
        }
        if !LLVMIsAAllocaInst(address).is_null()
            && LLVMGetTypeKind(LLVMGetAllocatedType(address)) == LLVMTypeKind::LLVMPointerTypeKind
        {
            return None;
        }
        used_as_vtable(inst).then_some(Evidence::Shape)
    }
}

/// Whether clang tagged the load `inst` as a vtable pointer load.
unsafe fn tagged_vtable_load(context: LLVMContextRef, inst: LLVMValueRef) -> bool {
    // SAFETY: metadata reads on a valid instruction.
    unsafe {
        if LLVMIsALoadInst(inst).is_null() {
            return false;
        }
        if has_metadata(inst, "invariant.group") {
            return true;
        }
        let tag = LLVMGetMetadata(inst, kind_id(context, "tbaa"));
        // A struct-path access tag is !{base type, access type, offset}; a type node begins with
        // its name.
        let Some(access) = node_operands(tag).get(1).copied() else { return false };
        node_operands(access)
            .first()
            .is_some_and(|&name| md_string(name).as_deref() == Some(b"vtable pointer".as_slice()))
    }
}

/// Whether `function` carries TBAA on any instruction (clang emits it at -O1 and above).
unsafe fn has_tbaa(context: LLVMContextRef, function: LLVMValueRef) -> bool {
    // SAFETY: instruction walk and metadata reads on a valid function.
    unsafe {
        let tbaa = kind_id(context, "tbaa");
        instructions(function).any(|inst| !LLVMGetMetadata(inst, tbaa).is_null())
    }
}

/// Whether the pointer `value` is used as a vtable: a pointer read from it (at any offset: a
/// pointer to a virtual member function holds a variable one) is called, or it is read at a
/// negative constant offset (offset-to-top, RTTI, a virtual base's offset).
unsafe fn used_as_vtable(value: LLVMValueRef) -> bool {
    // SAFETY: use-list walk on a valid value.
    unsafe {
        users(value).into_iter().any(|user| {
            if !LLVMIsALoadInst(user).is_null() {
                return is_called(user, MEMBER_POINTER_MERGES);
            }
            if LLVMIsAGetElementPtrInst(user).is_null() || LLVMGetOperand(user, 0) != value {
                return false;
            }
            let negative = constant_indices(user)
                && (1..LLVMGetNumOperands(user) as u32)
                    .any(|i| LLVMConstIntGetSExtValue(LLVMGetOperand(user, i)) < 0);
            users(user).into_iter().any(|read| {
                !LLVMIsALoadInst(read).is_null()
                    && LLVMGetOperand(read, 0) == user
                    && (negative || is_called(read, MEMBER_POINTER_MERGES))
            })
        })
    }
}

/// The phis and selects a vtable slot's read may pass before its call: a call through a member
/// pointer picks the virtual or the plain function on two paths.
const MEMBER_POINTER_MERGES: u32 = 4;

/// Whether `load` was translated by an earlier run: every user of it is a translation of it
/// (directly or through an address-space cast), or, where the loop cache keeps its last key
/// (`crate::loop_cache`), the compare with that key and the phi carrying it, beside a translation.
unsafe fn only_translated(load: LLVMValueRef) -> bool {
    // SAFETY: use-list walk on a valid value.
    unsafe {
        let mut direct = users(load);
        let casts: Vec<LLVMValueRef> =
            direct.iter().copied().filter(|&u| !LLVMIsAAddrSpaceCastInst(u).is_null()).collect();
        for cast in casts {
            direct.extend(users(cast));
        }
        // The loop cache's compares (the last key, the key range through `ptrtoint`) and phis.
        let cache_part = |user: LLVMValueRef| {
            !LLVMIsAICmpInst(user).is_null()
                || !LLVMIsAPHINode(user).is_null()
                || !LLVMIsAPtrToIntInst(user).is_null()
        };
        direct.iter().any(|&u| is_translation_call(u))
            && direct.into_iter().all(|user| {
                is_translation_call(user) || !LLVMIsAAddrSpaceCastInst(user).is_null() || cache_part(user)
            })
    }
}

/// Whether every index of the GEP `gep` is a constant integer.
unsafe fn constant_indices(gep: LLVMValueRef) -> bool {
    // SAFETY: operand reads on a valid GEP.
    unsafe {
        (1..LLVMGetNumOperands(gep) as u32).all(|i| !LLVMIsAConstantInt(LLVMGetOperand(gep, i)).is_null())
    }
}
