//! Vtable slots of virtual functions the device does not have: the final word on what the
//! plugins make the device define.
//!
//! The frontend plugin (`compiler/frontend-plugin`) emits, in device compiles, the vtables of
//! classes whose objects the host builds, and with them every virtual function they name. What
//! the device cannot have is decided here, after optimization, where the module knows exactly
//! what it leaves undefined:
//!
//! - a virtual function the frontend kept off the device (not `declare target` and reaching
//!   host-only code, or `device_type(host)`): an `extern_weak` declaration;
//! - a virtual function whose body reaches, directly or through functions of the module, a
//!   declaration the device does not provide ([`crate::policy::runtime_provides`] and the frontend
//!   plugin's answer for the file's own declarations): `std::cout`, `strlen`, libstdc++'s
//!   out-of-line functions, an inline variable code generation left out (`std::piecewise_construct`).
//!
//! A GPU link would refuse such a function (and the x86_64 device would hide it, resolving host
//! symbols from the host process). Each one a vtable names is replaced, in the vtables and
//! wherever else the module uses it, by an internal stub of the same type that says which function
//! was called and traps: on the x86_64 device it writes `omptarget-indirect: <mangled name> is not
//! compiled for the device ...` to the standard error stream first, NVPTX prints the same line
//! through CUDA's `__assertfail`, and on AMDGPU the trap's stub is named after the function. What only the replaced functions reached is then deleted (where the
//! module may drop it), so that nothing undefined is left for the link.
//!
//! A function of the program's own code that this file declares and another file defines (a
//! class library's out-of-line member, called from an inline virtual function of its header) is
//! not host-only: that file's device compile may define it (the frontend plugin answers "maybe
//! elsewhere"). Only the device link knows, so where vtable code reaches such a declaration it
//! gets a *weak* definition of its own name that reports the call and traps ([`Pass::define_weak_traps`]):
//! a real definition in another object of the image replaces it, and without one the link still
//! succeeds and the call traps, naming the function. A stub never wins over a definition.

use std::collections::{HashMap, HashSet};
use std::ffi::{c_char, c_int};

use crate::ir::{instructions, value_name, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::{LLVMLinkage, LLVMValueKind, LLVMVisibility};
use crate::policy;
use crate::remarks::Kind;
use crate::translation::{Pass, TRANSLATE};

/// The stub of function `f` is named this prefix followed by `f`'s name.
pub const STUB_PREFIX: &str = "__omptarget_indirect_not_on_device.";

/// `omptarget_indirect_frontend_device_provides` of the frontend plugin: what the device has of
/// the declaration named (pointer, length): [`PROVIDED`], [`MAYBE_ELSEWHERE`], 0 if only host
/// code defines it, -1 if the file declares no such thing.
type FrontendQuery = unsafe extern "C" fn(*const c_char, usize) -> c_int;

/// The frontend plugin's answer for a declaration the device provides.
const PROVIDED: c_int = 1;
/// The frontend plugin's answer for a declaration another device compile may define.
const MAYBE_ELSEWHERE: c_int = 2;

extern "C" {
    fn omptarget_indirect_frontend_query() -> Option<FrontendQuery>;
}

impl Pass<'_> {
    /// Replaces every function a vtable or construction vtable of the module names that the device
    /// does not have (module documentation) by a stub that reports the call and traps.
    pub(crate) unsafe fn stub_host_only_virtuals(&mut self) {
        // SAFETY: globals, functions and constants of the module, all collected before the first
        // replacement; a function is deleted only once nothing uses it.
        unsafe {
            let query = omptarget_indirect_frontend_query();
            let mut vtable_slots = Vec::new();
            let mut global = LLVMGetFirstGlobal(self.module);
            while !global.is_null() {
                let name = value_name_bytes(global).unwrap_or_default();
                let init = LLVMGetInitializer(global);
                if (name.starts_with(b"_ZTV") || name.starts_with(b"_ZTC")) && !init.is_null() {
                    collect_functions(init, &mut vtable_slots, 0);
                }
                global = LLVMGetNextGlobal(global);
            }
            // clang emits the thunks of a function another file defines `available_externally`
            // (for the optimizer). Before an LTO link (`-foffload-lto`) they are still so here,
            // and the link drops their bodies: the vtable would name nothing. The body is the
            // thunk's one definition (ODR), so it is kept as one.
            for &function in &vtable_slots {
                if LLVMGetLinkage(function) == LLVMLinkage::LLVMAvailableExternallyLinkage {
                    LLVMSetLinkage(function, LLVMLinkage::LLVMLinkOnceODRLinkage);
                }
            }
            let Undefined { mut missing, elsewhere } = self.undefined_symbols(query);
            let mut kept_slots = Vec::new();
            for function in vtable_slots {
                // Removed before the function is deleted: a later function may reuse its address.
                let Some(reason) = missing.remove(&function) else {
                    kept_slots.push(function);
                    continue;
                };
                let Some(name) = value_name(function) else { continue };
                let stub = self.trap_stub(function, &name);
                let removed = self.translations_in(function);
                LLVMReplaceAllUsesWith(function, stub);
                LLVMDeleteFunction(function);
                self.summary.host_only_stubs += 1;
                self.remarks.emit(Kind::Passed, stub, c"HostOnlyVirtualStubbed", || {
                    let why = match reason {
                        Missing::KeptOff => "the function is not compiled for the device (the frontend plugin's \
                                             remark says why)"
                            .to_string(),
                        Missing::Reaches(symbol) => {
                            format!("it reaches `{symbol}`, which no device code defines (a GPU link would refuse it)")
                        }
                    };
                    format!("vtable slots of {name} hold a stub that traps: {why}{}", removed_note(removed))
                });
            }
            let removed = delete_unused(&mut missing, |function| self.translations_in(function));
            if removed > 0 {
                let anchor = LLVMGetFirstFunction(self.module);
                self.remarks.emit(Kind::Analysis, anchor, c"HostOnlyCodeRemoved", || {
                    format!("code only the stubs reached is removed{}", removed_note(removed))
                });
            }
            if !elsewhere.is_empty() {
                self.define_weak_traps(&elsewhere, kept_slots);
            }
        }
    }

    /// Gives each declaration of `elsewhere` (another device compile may define it) that the
    /// vtable slots `roots` reach, directly or through functions of the module, a weak definition
    /// that reports the call and traps (module documentation). Protected, so that on the x86_64
    /// device a host function of the same name never stands in for it.
    unsafe fn define_weak_traps(&mut self, elsewhere: &HashSet<LLVMValueRef>, roots: Vec<LLVMValueRef>) {
        // SAFETY: functions of the module (the slots left after stubbing, none deleted); a body
        // is given to a declaration only.
        unsafe {
            let mut reached = HashSet::new();
            let mut pending = roots;
            while let Some(function) = pending.pop() {
                if !reached.insert(function) || LLVMIsDeclaration(function) != 0 {
                    continue;
                }
                for used in referenced_globals(function) {
                    let used =
                        if LLVMIsAGlobalAlias(used).is_null() { used } else { LLVMAliasGetAliasee(used) };
                    if !LLVMIsAFunction(used).is_null() {
                        pending.push(used);
                    }
                }
            }
            for &function in elsewhere {
                if !reached.contains(&function) || LLVMIsDeclaration(function) == 0 {
                    continue;
                }
                let Some(name) = value_name(function) else { continue };
                let message = format!(
                    "omptarget-indirect: {name} is not compiled for the device (no device compile of the program \
                     defines it: the file that defines it was compiled without offloading, or its definition reaches \
                     host code), but device code called it\n"
                );
                self.build_trap_body(function, Some(message.as_str()));
                LLVMSetLinkage(function, LLVMLinkage::LLVMWeakAnyLinkage);
                LLVMSetVisibility(function, LLVMVisibility::LLVMProtectedVisibility);
                self.summary.weak_traps += 1;
                self.remarks.emit(Kind::Passed, function, c"WeakTrapDefined", || {
                    format!(
                        "{name} is declared here and defined by another file: a weak definition that traps stands in \
                         for it until the device link finds that file's device definition"
                    )
                });
            }
        }
    }

    /// What the module leaves undefined: in [`Undefined::missing`] the functions the device cannot
    /// have, each with why: the frontend's `extern_weak` declarations; with the frontend plugin
    /// loaded (`query`), the declarations the device does not provide and every defined function
    /// that reaches one; in [`Undefined::elsewhere`] the declarations another device compile
    /// may define.
    unsafe fn undefined_symbols(&self, query: Option<FrontendQuery>) -> Undefined {
        // SAFETY: reads of the module's globals, functions and their instructions.
        unsafe {
            let mut missing = HashMap::new();
            let mut elsewhere = HashSet::new();
            let mut undefined = Vec::new();
            let x86_64 = self.on_x86_64();
            let ask = |query: FrontendQuery, name: &[u8]| query(name.as_ptr().cast(), name.len());
            let answer = |name: &[u8]| match query {
                _ if policy::runtime_provides(name, x86_64) => PROVIDED,
                // A thunk is emitted with the function it adjusts `this` for: it is where that is.
                Some(query) => match (ask(query, name), thunk_target(name)) {
                    (-1, Some(target)) => ask(query, &target),
                    (found, _) => found,
                },
                None => PROVIDED,
            };
            let mut function = LLVMGetFirstFunction(self.module);
            while !function.is_null() {
                if LLVMIsDeclaration(function) != 0 {
                    let name = value_name_bytes(function).unwrap_or_default();
                    if policy::kept_off(function) {
                        missing.insert(function, Missing::KeptOff);
                    } else if !name.is_empty() {
                        match answer(&name) {
                            PROVIDED => {}
                            MAYBE_ELSEWHERE => {
                                elsewhere.insert(function);
                            }
                            _ => undefined.push(function),
                        }
                    }
                }
                function = LLVMGetNextFunction(function);
            }
            // On a GPU, code that calls a function kept off the device cannot be compiled for it
            // either (a derived class's destructor calls its base's, which another file defines:
            // a weak declaration left in the module stops ptxas). The x86_64 device binds such a
            // declaration to the host program's function when the image loads, as it always did
            // (a library's exception classes call libstdc++'s destructors there).
            let kept_off: Vec<LLVMValueRef> =
                if x86_64 { Vec::new() } else { missing.keys().copied().collect() };
            if query.is_none() && kept_off.is_empty() {
                return Undefined { missing, elsewhere };
            }
            let mut global = LLVMGetFirstGlobal(self.module);
            while !global.is_null() {
                let name = value_name_bytes(global).unwrap_or_default();
                // A variable another file defines is host-only: only `declare target` ones (which
                // the frontend answers as provided) are on the device.
                if LLVMIsDeclaration(global) != 0 && !name.is_empty() && answer(&name) != PROVIDED {
                    undefined.push(global);
                }
                global = LLVMGetNextGlobal(global);
            }
            if undefined.is_empty() && kept_off.is_empty() {
                // The usual module: nothing to trace, no need to read every instruction.
                return Undefined { missing, elsewhere };
            }
            // Who uses what: the functions whose instructions name each global value.
            let mut users: HashMap<LLVMValueRef, Vec<LLVMValueRef>> = HashMap::new();
            let mut function = LLVMGetFirstFunction(self.module);
            while !function.is_null() {
                if LLVMIsDeclaration(function) == 0 {
                    for used in referenced_globals(function) {
                        users.entry(used).or_default().push(function);
                    }
                }
                function = LLVMGetNextFunction(function);
            }
            let mut pending = Vec::new();
            for symbol in undefined {
                let name = value_name(symbol).unwrap_or_default();
                missing.insert(symbol, Missing::Reaches(name.clone()));
                pending.push((symbol, name));
            }
            pending
                .extend(kept_off.into_iter().map(|symbol| (symbol, value_name(symbol).unwrap_or_default())));
            while let Some((symbol, name)) = pending.pop() {
                for &user in users.get(&symbol).map(Vec::as_slice).unwrap_or_default() {
                    if let std::collections::hash_map::Entry::Vacant(entry) = missing.entry(user) {
                        entry.insert(Missing::Reaches(name.clone()));
                        pending.push((user, name.clone()));
                    }
                }
            }
            Undefined { missing, elsewhere }
        }
    }

    /// How many calls of the translation `function` makes (each was announced by a remark).
    unsafe fn translations_in(&self, function: LLVMValueRef) -> usize {
        // SAFETY: reads of a function of the module and its instructions.
        unsafe {
            let translate = LLVMGetNamedFunction(self.module, TRANSLATE.as_ptr());
            if translate.is_null() || LLVMIsDeclaration(function) != 0 {
                return 0;
            }
            instructions(function)
                .filter(|&i| !LLVMIsACallInst(i).is_null() && LLVMGetCalledValue(i) == translate)
                .count()
        }
    }

    /// Defines the stub that replaces `function` (named `name`): internal, of the same type.
    unsafe fn trap_stub(&mut self, function: LLVMValueRef, name: &str) -> LLVMValueRef {
        // SAFETY: a new function of the module, of `function`'s type.
        unsafe {
            let stub_name = format!("{STUB_PREFIX}{name}\0");
            let stub =
                LLVMAddFunction(self.module, stub_name.as_ptr().cast(), LLVMGlobalGetValueType(function));
            LLVMSetLinkage(stub, LLVMLinkage::LLVMInternalLinkage);
            let message = format!(
                "omptarget-indirect: {name} is not compiled for the device (a virtual function that is not declare \
                 target and reaches host code; -Rpass=omptarget-indirect at compile time says why), but device \
                 code called it\n"
            );
            self.build_trap_body(stub, Some(message.as_str()));
            stub
        }
    }
}

/// What a module leaves undefined ([`Pass::undefined_symbols`]).
struct Undefined {
    /// What the device cannot have, each with why.
    missing: HashMap<LLVMValueRef, Missing>,
    /// Declarations another device compile of the program may define.
    elsewhere: HashSet<LLVMValueRef>,
}

/// Why the device cannot have a function.
enum Missing {
    /// The frontend plugin kept it off the device (its remark says why).
    KeptOff,
    /// It is, or reaches, this symbol, which the device does not provide.
    Reaches(String),
}

/// The symbol of the function the Itanium thunk `name` (`_ZTh`, `_ZTv`, `_ZTc` and their call
/// offsets) adjusts `this` or the result for; None if `name` is no thunk.
pub(crate) fn thunk_target(name: &[u8]) -> Option<Vec<u8>> {
    /// The rest after a call offset of `kind` (`h <number> _`, `v <number> _ <number> _`).
    fn call_offset(kind: u8, mut rest: &[u8]) -> Option<&[u8]> {
        let numbers = match kind {
            b'h' => 1,
            b'v' => 2,
            _ => return None,
        };
        for _ in 0..numbers {
            rest = rest.strip_prefix(b"n").unwrap_or(rest);
            let digits = rest.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return None;
            }
            rest = rest[digits..].strip_prefix(b"_")?;
        }
        Some(rest)
    }
    let (&kind, mut rest) = name.strip_prefix(b"_ZT")?.split_first()?;
    if kind == b'c' {
        for _ in 0..2 {
            let (&kind, after) = rest.split_first()?;
            rest = call_offset(kind, after)?;
        }
    } else {
        rest = call_offset(kind, rest)?;
    }
    (!rest.is_empty()).then(|| [b"_Z", rest].concat())
}

/// Adds to `found` the functions `value` (a constant initializer) names, looking through
/// aggregates and constant expressions (bounded: vtables are shallow).
unsafe fn collect_functions(value: LLVMValueRef, found: &mut Vec<LLVMValueRef>, depth: u32) {
    // SAFETY: operand reads of constants of a valid module.
    unsafe {
        if depth > 8 {
            return;
        }
        if LLVMGetValueKind(value) == LLVMValueKind::LLVMFunctionValueKind {
            if !found.contains(&value) {
                found.push(value);
            }
            return;
        }
        // A complete destructor is an alias of the base one (`-mconstructor-aliases`).
        if !LLVMIsAGlobalAlias(value).is_null() {
            collect_functions(LLVMAliasGetAliasee(value), found, depth + 1);
            return;
        }
        if LLVMIsAConstant(value).is_null() || !LLVMIsAGlobalValue(value).is_null() {
            return;
        }
        for index in 0..LLVMGetNumOperands(value).max(0) as u32 {
            collect_functions(LLVMGetOperand(value, index), found, depth + 1);
        }
    }
}

/// The global values (functions, variables, aliases) `function`'s instructions name, directly or
/// inside constant expressions.
unsafe fn referenced_globals(function: LLVMValueRef) -> HashSet<LLVMValueRef> {
    // SAFETY: reads of the blocks, instructions and operands of a defined function.
    unsafe {
        let mut found = HashSet::new();
        let mut seen_constants = HashSet::new();
        for instruction in instructions(function) {
            for index in 0..LLVMGetNumOperands(instruction).max(0) as u32 {
                collect_globals(LLVMGetOperand(instruction, index), &mut found, &mut seen_constants);
            }
        }
        found
    }
}

/// Adds to `found` the global values `value` is or names through constants.
unsafe fn collect_globals(
    value: LLVMValueRef,
    found: &mut HashSet<LLVMValueRef>,
    seen_constants: &mut HashSet<LLVMValueRef>,
) {
    // SAFETY: kind queries and operand reads of a valid value.
    unsafe {
        if value.is_null() || LLVMIsAConstant(value).is_null() {
            return;
        }
        if !LLVMIsAGlobalValue(value).is_null() {
            found.insert(value);
            return;
        }
        if !seen_constants.insert(value) {
            return;
        }
        for index in 0..LLVMGetNumOperands(value).max(0) as u32 {
            collect_globals(LLVMGetOperand(value, index), found, seen_constants);
        }
    }
}

/// `; N translations removed with it`, which `-Rpass` readers add to the translations left in the
/// module (one `translated` remark each was printed when they were made); empty for none.
fn removed_note(removed: usize) -> String {
    if removed == 0 {
        String::new()
    } else {
        format!("; {removed} translations removed with it")
    }
}

/// Deletes the `missing` functions and variables that nothing uses any longer and that the
/// module may drop (discardable definitions, declarations), again until none is left: what the
/// stubbed functions alone reached. Returns the sum of `translations` over the deleted functions.
unsafe fn delete_unused(
    missing: &mut HashMap<LLVMValueRef, Missing>,
    translations: impl Fn(LLVMValueRef) -> usize,
) -> usize {
    // SAFETY: each value is deleted once, when it has no uses (so no dangling reference remains),
    // and leaves `missing` first (a value created later may reuse its address).
    unsafe {
        let droppable = |value: LLVMValueRef| {
            use LLVMLinkage::*;
            LLVMIsDeclaration(value) != 0
                || matches!(
                    LLVMGetLinkage(value),
                    LLVMLinkOnceAnyLinkage
                        | LLVMLinkOnceODRLinkage
                        | LLVMInternalLinkage
                        | LLVMPrivateLinkage
                        | LLVMAvailableExternallyLinkage
                )
        };
        let mut removed = 0;
        // Until nothing more can go: deleting a value may leave what only it used unused.
        loop {
            let unused: Vec<LLVMValueRef> = missing
                .keys()
                .copied()
                .filter(|&value| {
                    LLVMGetFirstUse(value).is_null()
                        && droppable(value)
                        && (!LLVMIsAFunction(value).is_null() || !LLVMIsAGlobalVariable(value).is_null())
                })
                .collect();
            if unused.is_empty() {
                break;
            }
            for value in unused {
                missing.remove(&value);
                if LLVMIsAFunction(value).is_null() {
                    LLVMDeleteGlobal(value);
                } else {
                    removed += translations(value);
                    LLVMDeleteFunction(value);
                }
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::thunk_target;

    #[test]
    fn thunks_name_their_targets() {
        assert_eq!(thunk_target(b"_ZTv0_n32_NK4Left6weightEv").as_deref(), Some(&b"_ZNK4Left6weightEv"[..]));
        assert_eq!(
            thunk_target(b"_ZThn16_NK10TaggedRect3tagEv").as_deref(),
            Some(&b"_ZNK10TaggedRect3tagEv"[..])
        );
        assert_eq!(thunk_target(b"_ZTch0_h16_NV1D1fEv").as_deref(), Some(&b"_ZNV1D1fEv"[..]));
        assert_eq!(thunk_target(b"_ZTcv0_n12_v0_n16_N1B1fEv").as_deref(), Some(&b"_ZN1B1fEv"[..]));
        // Vtables, VTTs, type_info and malformed thunks are no thunks.
        for name in
            [&b"_ZTV4Rect"[..], b"_ZTT7Diamond", b"_ZTI5Shape", b"_ZTh16", b"_ZThn_x", b"_ZTv0_", b"_Z1fv"]
        {
            assert_eq!(thunk_target(name), None, "{}", String::from_utf8_lossy(name));
        }
    }
}
