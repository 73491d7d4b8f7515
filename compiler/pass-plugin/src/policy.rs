//! Every decision the pass makes, each in one place; the other modules carry them out.
//!
//! | decision | rule | carried out by |
//! |---|---|---|
//! | rewrite | device modules only ([`rewrites`]); host modules get their indirect entries named and their vtables recorded | `rewrite`, `host_vtables` |
//! | leave alone | the OpenMP runtime's own functions ([`is_runtime_function`]) | `rewrite`, `llvm_lookups`, `loop_cache` |
//! | translate | the callee of every indirect call ([`indirect_call`]), every vtable pointer load, and every load of a Fortran descriptor's type-descriptor pointer | `rewrite`, `vtables`, `fortran_dispatch` |
//! | pair | each dispatch table (vtable or Fortran type descriptor: `omptarget_indirect_abi::is_dispatch_table`) one definition per image, its words exported | `vtables`, `fortran_dispatch` |
//! | route | calls the runtime would answer from host data: `__dynamic_cast` where it has RTTI ([`casts_with_rtti`]), flang's `same_type_as` and `extends_type_of` | `dynamic_casts`, `fortran_dispatch` |
//! | adopt | clang 23's own lookups become translations, a vtable pointer's told from a function pointer's ([`looks_up_a_vtable_pointer`]) | `llvm_lookups` |
//! | not again | a translation already, a slot of a translated vtable, a local that only ever holds device addresses ([`indirect_call`]) | `rewrite` |
//! | fold | `translate(x)` is `x` where `x` is a device address whatever the table holds ([`folds`]) | `rewrite` (and the peephole step) |
//! | provide | what a GPU's device runtime defines, so a function reaching it may stay ([`runtime_provides`]) | `host_only` |
//! | stub | a vtable slot of a function kept off the device ([`kept_off`]) or reaching what nothing provides: a stub that traps | `host_only` |
//! | out of line | a destructor, or a thunk to one, that only vtables and other such destructors name: never inlined ([`keeps_out_of_line`]) | `vtable_destructors` |
//! | cache | translations of vtable pointers left in loops, after the optimizer, unless switched off ([`caches_loops`]); in registers on GPUs, in stack slots on x86_64 ([`caches_in_registers`]) | `loop_cache` |
//! | guard | on GPUs, a translation in a loop looks up only keys in the table's range ([`guards_key_range`]) | `loop_cache` |
//! | copy | Fortran bindings without `declare target` get device copies from the host compile's IR, unless switched off ([`copies_bindings`]) | `binding_copies` |
//! | map | polymorphic objects are mapped by their dynamic type, unless switched off ([`maps_dynamic_types`]) | `fortran_maps` |
//!
//! Each decision has its IR test in `tests/rewrite.rs` (a module in, the decision out).

use std::collections::HashSet;

use crate::device_addresses::{holds_only_device_addresses, translates_to_itself};
use crate::ir::{has_module_flag, is_called, users, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMLinkage;
use crate::summary::Phase;
use crate::translation::is_translation;
use crate::vtables::is_device_vtable_slot;

/// The module flag clang sets on every OpenMP device module (`-fopenmp-is-target-device`).
pub const DEVICE_MODULE_FLAG: &str = "openmp-device";

/// Whether the pass rewrites `module`: an OpenMP device module (nvptx64, amdgcn, or the x86_64
/// host-offload device).
///
/// # Safety
/// `module` must be a valid module.
pub unsafe fn rewrites(module: LLVMModuleRef) -> bool {
    // SAFETY: valid module (caller).
    unsafe { has_module_flag(module, DEVICE_MODULE_FLAG) }
}

/// Whether a function with this name belongs to the OpenMP runtime (left alone: its indirect
/// calls go to outlined regions whose device addresses the compiler took) rather than to the
/// program ([`omptarget_indirect_abi::is_openmp_runtime_function`]).
pub fn is_runtime_function(name: &[u8]) -> bool {
    omptarget_indirect_abi::is_openmp_runtime_function(name)
}

/// What the pass does with an indirect call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndirectCall {
    /// Its callee is translated.
    Translate,
    /// It is in an OpenMP runtime function: left alone.
    InRuntime,
    /// Its callee is a translation already.
    AlreadyTranslated,
    /// Its callee was read from a slot of a translated vtable: a device address.
    ThroughDeviceVtable,
    /// Its callee is loaded from a local that only ever holds device addresses.
    ThroughDeviceVariable,
}

/// The decision for an indirect call through `callee` in a function that is (`in_runtime`) or
/// is not the OpenMP runtime's.
///
/// # Safety
/// `callee` must be a valid value.
pub unsafe fn indirect_call(in_runtime: bool, callee: LLVMValueRef) -> IndirectCall {
    // SAFETY: analyses of a valid value (caller).
    unsafe {
        if in_runtime {
            IndirectCall::InRuntime
        } else if is_translation(callee, &mut HashSet::new()) {
            IndirectCall::AlreadyTranslated
        } else if is_device_vtable_slot(callee) {
            IndirectCall::ThroughDeviceVtable
        } else if holds_only_device_addresses(callee) {
            IndirectCall::ThroughDeviceVariable
        } else {
            IndirectCall::Translate
        }
    }
}

/// Whether `translate(operand)` folds to `operand`: a known function or null, a translation
/// already, or an address in a global of the device module (`device_addresses::translates_to_itself`).
///
/// # Safety
/// `operand` must be a valid value.
pub unsafe fn folds(operand: LLVMValueRef) -> bool {
    // SAFETY: analyses of a valid value (caller).
    unsafe { translates_to_itself(operand) }
}

/// What only code generation for the x86_64 device asks for, and the host process provides:
/// exception handling and the C++ ABI's runtime (`__cxa_`, `_Unwind_`, `std::terminate`) and RTTI
/// objects (`_ZTI`, `_ZTS`, the type-info vtables). GPU compiles ask for none of them (no
/// exceptions: a `throw` becomes a trap), so counting them missing would stub on x86_64 what a
/// GPU compile keeps.
const X86_64_CODE_GENERATION: &[&[u8]] = &[
    b"__cxa_",
    b"_Unwind_",
    b"__gxx_personality",
    b"_ZSt9terminatev",
    b"_ZTI",
    b"_ZTS",
    b"_ZTVN10__cxxabiv1",
];

/// Whether a GPU's device runtime defines the symbol `name`, whatever the file declares: LLVM's
/// intrinsics; the OpenMP DeviceRTL's entry points (`__kmpc_`, `omp_`, `ompx_`, `__llvm_omp_`,
/// ...) and its C and C++ ABI functions (LLVM 19 and 22: `printf`, `memcmp`, `memset`,
/// `__assert_fail`, `__cxa_pure_virtual`, `__cxa_deleted_virtual`; amdgcn: `malloc`, `free`,
/// `vprintf`); CUDA's PTX system calls (`malloc`, `free`, `vprintf`, `__assertfail`); the math
/// libraries clang's OpenMP headers call (`__nv_`, `__ocml_`, `__ockl_`); this project's device
/// library (`__kmpc_target_translate_fptr`, `__omptarget_indirect_`); the global `operator new`
/// and `operator delete` (`_Znw`, `_Zna`, `_Zdl`, `_Zda`: clang's OpenMP `<new>` defines them in
/// GPU compiles, the C++ library on the x86_64 device).
/// On the x86_64 device (`x86_64`), also what its code generation asks for (`X86_64_CODE_GENERATION`).
pub fn runtime_provides(name: &[u8], x86_64: bool) -> bool {
    const PREFIXES: &[&[u8]] = &[
        b"llvm.",
        b"llvm_omp_",
        b"__llvm_",
        b"__nv_",
        b"__ocml_",
        b"__ockl_",
        b"__oclc_",
        b"__omptarget_indirect_",
        b"_Znw",
        b"_Zna",
        b"_Zdl",
        b"_Zda",
    ];
    const NAMES: &[&[u8]] = &[
        b"printf",
        b"vprintf",
        b"malloc",
        b"free",
        b"memcmp",
        b"memset",
        b"memcpy",
        b"memmove",
        b"__assert_fail",
        b"__assertfail",
        b"__cxa_pure_virtual",
        b"__cxa_deleted_virtual",
    ];
    (x86_64 && X86_64_CODE_GENERATION.iter().any(|prefix| name.starts_with(prefix)))
        || is_runtime_function(name)
        || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
        || NAMES.contains(&name)
}

/// Whether the declaration `function` is a C++ function the frontend plugin kept off the device
/// (not `declare target` and reaching host-only code, or `device_type(host)`): it declares them
/// `extern_weak`, and the vtable slots naming them get a stub that traps.
///
/// # Safety
/// `function` must be a valid function.
pub unsafe fn kept_off(function: LLVMValueRef) -> bool {
    // SAFETY: linkage and name reads of a valid function (caller).
    unsafe {
        LLVMIsDeclaration(function) != 0
            && LLVMGetLinkage(function) == LLVMLinkage::LLVMExternalWeakLinkage
            && value_name_bytes(function).is_some_and(|name| name.starts_with(b"_Z"))
    }
}

/// Whether a call of `__dynamic_cast` is routed to the device library's cast: only where it has
/// RTTI (its type_info arguments are not null constants). clang gives GPU device code none, so
/// no runtime can answer those: they are left as they are, with a remark.
///
/// # Safety
/// `call` must be a valid call of `__dynamic_cast` (four arguments).
pub unsafe fn casts_with_rtti(call: LLVMValueRef) -> bool {
    // SAFETY: operand reads and constant queries on a valid call (caller).
    unsafe {
        (1..=2).all(|i| {
            let type_info = LLVMGetOperand(call, i);
            LLVMIsConstant(type_info) == 0 || LLVMIsNull(type_info) == 0
        })
    }
}

/// Whether a call of clang's own lookup (`__llvm_omp_indirect_call_lookup`) looks up a vtable
/// pointer rather than a function pointer: clang inserts both, and a function pointer's result
/// is called while a vtable pointer's is read (its slots). The translation that replaces it is
/// then marked as a vtable's, for the loop cache.
///
/// # Safety
/// `call` must be a valid call.
pub unsafe fn looks_up_a_vtable_pointer(call: LLVMValueRef) -> bool {
    // SAFETY: a valid call (caller).
    unsafe { !is_called(call, 0) }
}

/// The environment variable that turns the loop cache off for a compile (`=0`): the benchmarks
/// build their loops both ways to measure what it saves.
pub const LOOP_CACHE_SWITCH: &str = "OMPTARGET_INDIRECT_LOOP_CACHE";

/// The environment variable that turns copies of Fortran bindings from the host's IR off (`=0`):
/// the negative control, where every binding without `declare target` keeps its trapping stub.
pub const BINDING_COPIES_SWITCH: &str = "OMPTARGET_INDIRECT_BINDING_COPIES";

/// The environment variable that leaves flang's map sizes of polymorphic objects as they are
/// (`=0`): the negative control of the dynamic-type maps.
pub const POLYMORPHIC_MAPS_SWITCH: &str = "OMPTARGET_INDIRECT_POLYMORPHIC_MAPS";

/// Whether a switch of the compiler's environment leaves its step on: anything but `0`.
fn is_on(switch: Option<&std::ffi::OsStr>) -> bool {
    switch.is_none_or(|value| value != "0")
}

/// Whether translations left in loops get the loop cache in this `phase`: after the optimizer
/// (which hoisted the loop-invariant ones), unless [`LOOP_CACHE_SWITCH`] is off.
pub fn caches_loops(phase: Phase) -> bool {
    caches_loops_with(phase, std::env::var_os(LOOP_CACHE_SWITCH).as_deref())
}

/// [`caches_loops`] with the switch's value given.
fn caches_loops_with(phase: Phase, switch: Option<&std::ffi::OsStr>) -> bool {
    phase == Phase::OptimizerLast && is_on(switch)
}

/// Whether a device compile gives Fortran bindings without `declare target` device copies of
/// their host procedures, from the host compile's IR: unless [`BINDING_COPIES_SWITCH`] is off.
pub fn copies_bindings() -> bool {
    is_on(std::env::var_os(BINDING_COPIES_SWITCH).as_deref())
}

/// Whether a host compile maps polymorphic objects by their dynamic type's size and components:
/// unless [`POLYMORPHIC_MAPS_SWITCH`] is off.
pub fn maps_dynamic_types() -> bool {
    is_on(std::env::var_os(POLYMORPHIC_MAPS_SWITCH).as_deref())
}

/// Whether a translation in a loop looks up only keys in the table's range: on GPUs, where lanes
/// of a warp would otherwise wait for the lookup of a device address; not on the x86_64 device,
/// where measured it made host-built objects slower (`docs/performance.md`).
pub fn guards_key_range(x86_64: bool) -> bool {
    !x86_64
}

/// Whether a loop's cache keeps its last key and result in registers: on GPUs; not on the x86_64
/// device, whose loops of virtual calls already hold their own values in the six callee-saved
/// registers, so that two more pushed the array pointer and the bound out to the stack, their
/// reloads on the path to the next object; in stack slots the cache's own loads are off that path
/// (`docs/performance.md`).
pub fn caches_in_registers(x86_64: bool) -> bool {
    !x86_64
}

/// Whether the use of the destructor (or thunk to one) `function` by `user` lets it stay out of
/// line: every use of a destructor that device code reaches only through vtable slots is a slot
/// of a vtable no device code stores (no object of its class is built there, so no virtual call
/// on one becomes direct) or a call from another such destructor (`within`), and the optimizer
/// then never copies it into its callers (`crate::vtable_destructors`). A destructor device code
/// calls directly, or may once a virtual call is devirtualized, keeps the optimizer's choice.
///
/// # Safety
/// `user` must be a user of the valid function `function`.
pub unsafe fn keeps_out_of_line(
    user: LLVMValueRef,
    function: LLVMValueRef,
    within: &HashSet<LLVMValueRef>,
) -> bool {
    // SAFETY: valid values (caller).
    unsafe { names_for_vtables(user, function, within, 0) }
}

/// How deep a vtable's initializer nests the constants that name its slots (the vtable's
/// struct, its arrays, a cast or offset of a slot).
const MAX_CONSTANT_DEPTH: u32 = 4;

/// Whether `user`, a user of the function `function`, names it only for a vtable: a direct call
/// from a function of `set`, a constant that only vtables (`_ZTV`, `_ZTC`) hold, or an alias
/// that only such users name; `depth` counts the constants and aliases followed.
unsafe fn names_for_vtables(
    user: LLVMValueRef,
    function: LLVMValueRef,
    set: &HashSet<LLVMValueRef>,
    depth: u32,
) -> bool {
    // SAFETY: kind tests, operands and parents of valid values.
    unsafe {
        if !LLVMIsAInstruction(user).is_null() {
            let is_call = !LLVMIsACallInst(user).is_null() || !LLVMIsAInvokeInst(user).is_null();
            let caller = LLVMGetBasicBlockParent(LLVMGetInstructionParent(user));
            return is_call && LLVMGetCalledValue(user) == function && set.contains(&caller);
        }
        if !LLVMIsAGlobalVariable(user).is_null() {
            let vtable = value_name_bytes(user)
                .is_some_and(|name| name.starts_with(b"_ZTV") || name.starts_with(b"_ZTC"));
            return vtable && !used_by_code(user, set, 0);
        }
        if depth >= MAX_CONSTANT_DEPTH {
            return false;
        }
        let is_alias = !LLVMIsAGlobalAlias(user).is_null();
        if !is_alias && (LLVMIsAConstant(user).is_null() || !LLVMIsAGlobalValue(user).is_null()) {
            return false;
        }
        users(user).into_iter().all(|outer| names_for_vtables(outer, user, set, depth + 1))
    }
}

/// Whether code of the module other than the destructors of `within` uses the global `value`
/// (through constants and other globals that code reads, such as a VTT): a vtable that
/// constructors in device code store, whose class's virtual calls the optimizer may then make
/// direct (and inline, as stock clang does). A destructor stores its own class's vtable, which
/// makes nothing direct outside it; the words the pass exports for the host (the globals
/// [`omptarget_indirect_abi::vtable_word`] recognises) are no use either. Too deep a chain of
/// constants counts as a use.
unsafe fn used_by_code(value: LLVMValueRef, within: &HashSet<LLVMValueRef>, depth: u32) -> bool {
    // SAFETY: kind tests, use lists and parents of valid values.
    unsafe {
        users(value).into_iter().any(|user| {
            if !LLVMIsAInstruction(user).is_null() {
                return !within.contains(&LLVMGetBasicBlockParent(LLVMGetInstructionParent(user)));
            }
            if depth >= MAX_CONSTANT_DEPTH {
                return true;
            }
            let exported_word = !LLVMIsAGlobalVariable(user).is_null()
                && value_name_bytes(user).is_some_and(|name| {
                    std::str::from_utf8(&name).ok().and_then(omptarget_indirect_abi::vtable_word).is_some()
                });
            !exported_word && used_by_code(user, within, depth + 1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_names() {
        for runtime in
            ["__kmpc_parallel_51", "__llvm_omp_indirect_call_lookup", "__omp_rtl_x", "omp_get_num_teams"]
        {
            assert!(is_runtime_function(runtime.as_bytes()), "{runtime}");
        }
        for program in
            ["__omp_offloading_fe00_98c0b0_main_l8", "__omp_outlined__1", "main", "_Z3fooi", "_ZN5ompxy1fEv"]
        {
            assert!(!is_runtime_function(program.as_bytes()), "{program}");
        }
    }

    #[test]
    fn what_a_device_runtime_provides() {
        for provided in
            ["printf", "llvm.trap", "__nv_sin", "__kmpc_target_translate_fptr", "_Znwm", "omp_get_team_num"]
        {
            assert!(runtime_provides(provided.as_bytes(), false), "{provided}");
        }
        for missing in ["strlen", "_ZSt4cout", "puts", "__cxa_throw", "_ZTI5Shape"] {
            assert!(!runtime_provides(missing.as_bytes(), false), "{missing} on a GPU");
        }
        // The x86_64 device's code generation asks for the C++ ABI's runtime, which the host has.
        for host in ["__cxa_throw", "_Unwind_Resume", "_ZTI5Shape", "_ZTVN10__cxxabiv117__class_type_infoE"] {
            assert!(runtime_provides(host.as_bytes(), true), "{host} on x86_64");
        }
        assert!(!runtime_provides(b"strlen", true));
    }

    #[test]
    fn the_key_range_is_guarded_on_gpus_only() {
        assert!(guards_key_range(false));
        assert!(!guards_key_range(true));
    }

    #[test]
    fn loops_are_cached_after_the_optimizer_only() {
        use std::ffi::OsStr;
        for switch in [None, Some(OsStr::new("1"))] {
            assert!(!caches_loops_with(Phase::PipelineStart, switch));
            assert!(caches_loops_with(Phase::OptimizerLast, switch));
        }
        assert!(!caches_loops_with(Phase::OptimizerLast, Some(OsStr::new("0"))), "switched off");
    }

    #[test]
    fn a_switch_is_off_at_zero_only() {
        use std::ffi::OsStr;
        assert!(is_on(None));
        assert!(is_on(Some(OsStr::new("1"))));
        assert!(is_on(Some(OsStr::new(""))));
        assert!(!is_on(Some(OsStr::new("0"))));
    }
}
