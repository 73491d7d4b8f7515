//! LLVM-C helpers the pass's parts share: names, use lists, instruction walks, metadata, module
//! flags, the `llvm.used` lists. They ask the IR questions; what the answers mean for the
//! rewrite is [`crate::policy`]'s.

use std::collections::HashSet;
use std::ffi::CStr;

use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMLinkage;

/// The function named `name` that calls of `runtime` may call in its place: declared with
/// `runtime`'s type and calling convention where the module has none; None where the module
/// declares it with another type.
pub(crate) unsafe fn stand_in_for(
    module: LLVMModuleRef,
    runtime: LLVMValueRef,
    name: &CStr,
) -> Option<LLVMValueRef> {
    // SAFETY: handles of a valid module (the caller's).
    unsafe {
        let function_type = LLVMGlobalGetValueType(runtime);
        let mut stand_in = LLVMGetNamedFunction(module, name.as_ptr());
        if stand_in.is_null() {
            stand_in = LLVMAddFunction(module, name.as_ptr(), function_type);
            LLVMSetFunctionCallConv(stand_in, LLVMGetFunctionCallConv(runtime));
        }
        (LLVMGlobalGetValueType(stand_in) == function_type).then_some(stand_in)
    }
}

/// Makes the call (or invoke) `call` call `callee` (a function of the same type): the callee is
/// its last operand.
pub(crate) unsafe fn set_callee(call: LLVMValueRef, callee: LLVMValueRef) {
    // SAFETY: a valid call; its callee is its last operand.
    unsafe { LLVMSetOperand(call, LLVMGetNumOperands(call) as u32 - 1, callee) }
}

/// The name of a named value, as bytes: a copy, since renaming or deleting the value frees
/// LLVM's.
pub(crate) unsafe fn value_name_bytes(value: LLVMValueRef) -> Option<Vec<u8>> {
    // SAFETY: LLVM returns the name's bytes and length, valid until the value is renamed or
    // deleted; they are copied at once.
    unsafe {
        let mut len = 0;
        let name = LLVMGetValueName2(value, &mut len);
        (!name.is_null() && len > 0).then(|| std::slice::from_raw_parts(name.cast::<u8>(), len).to_vec())
    }
}

/// The name of a named value, for remarks.
pub(crate) unsafe fn value_name(value: LLVMValueRef) -> Option<String> {
    // SAFETY: `value` is a valid value (this function's precondition), all `value_name_bytes` needs.
    unsafe { value_name_bytes(value).map(|n| String::from_utf8_lossy(&n).into_owned()) }
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
/// Whether the instruction `inst` carries metadata of kind `kind`.
pub(crate) unsafe fn has_metadata(inst: LLVMValueRef, kind: &str) -> bool {
    // SAFETY: a metadata read on a valid instruction; the kind is passed with its length.
    unsafe {
        let context = LLVMGetTypeContext(LLVMTypeOf(inst));
        !LLVMGetMetadata(inst, LLVMGetMDKindIDInContext(context, kind.as_ptr().cast(), kind.len() as u32))
            .is_null()
    }
}

/// Whether `module` carries the module flag `flag`.
pub(crate) unsafe fn has_module_flag(module: LLVMModuleRef, flag: &str) -> bool {
    // SAFETY: valid module (caller); the key is passed with its length.
    unsafe { !LLVMGetModuleFlag(module, flag.as_ptr().cast(), flag.len()).is_null() }
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

/// The metadata kind `name` in `context`.
pub(crate) unsafe fn kind_id(context: LLVMContextRef, name: &str) -> u32 {
    // SAFETY: the name is passed with its length.
    unsafe { LLVMGetMDKindIDInContext(context, name.as_ptr().cast(), name.len() as u32) }
}

/// The operands of the metadata node `node` (as values); empty for null or a non-node.
pub(crate) unsafe fn node_operands(node: LLVMValueRef) -> Vec<LLVMValueRef> {
    // SAFETY: `node` is null or metadata wrapped as a value; the buffer has the node's size.
    unsafe {
        if node.is_null() || LLVMIsAMDNode(node).is_null() {
            return Vec::new();
        }
        let mut operands = vec![std::ptr::null_mut(); LLVMGetMDNodeNumOperands(node) as usize];
        LLVMGetMDNodeOperands(node, operands.as_mut_ptr());
        operands
    }
}

/// The bytes of the metadata string `value`, if it is one (a copy).
pub(crate) unsafe fn md_string(value: LLVMValueRef) -> Option<Vec<u8>> {
    // SAFETY: LLVM returns the string's bytes and length, owned by the context; copied at once.
    unsafe {
        if value.is_null() || LLVMIsAMDString(value).is_null() {
            return None;
        }
        let mut len = 0;
        let text = LLVMGetMDString(value, &mut len);
        (!text.is_null()).then(|| std::slice::from_raw_parts(text.cast::<u8>(), len as usize).to_vec())
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

/// Whether `value` is the callee of a call or invoke, directly or through at most `merges` phis
/// and selects.
pub(crate) unsafe fn is_called(value: LLVMValueRef, merges: u32) -> bool {
    // SAFETY: use-list walk and callee reads on valid values.
    unsafe {
        users(value).into_iter().any(|user| {
            if !LLVMIsACallInst(user).is_null() || !LLVMIsAInvokeInst(user).is_null() {
                return LLVMGetCalledValue(user) == value;
            }
            let merge = !LLVMIsAPHINode(user).is_null() || !LLVMIsASelectInst(user).is_null();
            merge && merges > 0 && is_called(user, merges - 1)
        })
    }
}
