//! The rewrite: every indirect call in an OpenMP device module calls
//! `__kmpc_target_translate_fptr(fp)` first and then the pointer it returns.
//!
//! - Only device modules (module flag `openmp-device`: nvptx64, amdgcn and the x86_64
//!   host-offload device); in the host module only Fortran's `omptarget_indirect` holders get
//!   their indirect offload entries ([`crate::fortran`]) and the vtables are recorded
//!   ([`crate::host_vtables`]).
//! - Each decision below is [`crate::policy`]'s; this module is the driver that applies them.
//! - A step on a device module is a method of [`Pass`] (it may emit remarks and counts into the
//!   summary); a step on a host module is a function of the module returning its count (a host
//!   compile has no pass state: no translation, no remarks).
//! - An indirect call is a call or invoke whose callee is not a known function: not a function,
//!   an alias, inline asm, null or undef (intrinsics are functions). Its callee operand is
//!   replaced in place, so it keeps its attributes, calling convention, operand bundles and
//!   tail-call kind.
//! - Vtable pointer loads are translated too, and a call through a slot of a translated vtable
//!   is not translated again (it holds a device address); each vtable's words get a device
//!   global the plugins pair with the host's ([`crate::vtables`]).
//! - Calls of `__dynamic_cast` call the device library's cast, which translates the vtable
//!   pointers it reads ([`crate::dynamic_casts`]).
//! - The OpenMP runtime's own functions are left alone ([`policy::is_runtime_function`]): their
//!   indirect calls go to outlined regions whose device addresses the compiler took.
//! - A callee in another address space with generic-sized pointers (amdgcn loads vtable slots
//!   as `ptr addrspace(1)`) is cast to the generic address space, translated, and cast back.
//! - A callee that is already a translation (directly, through an address-space cast, or every
//!   value a phi or select may pick) is not translated again, and `translate(x)` folds to `x`
//!   where `x` is a known function, null, or a constant address in a global of the module (a
//!   device vtable): already a device address. The fold also runs in the optimizer's peephole
//!   step ([`fold_function`]), so that a call stock clang devirtualizes (an object built in
//!   device code) is devirtualized and inlined with the project too.
//! - After the optimizer, translations left in loops keep their last key and result
//!   ([`crate::loop_cache`]), and the vtable slots of functions the device does not have hold a
//!   trapping stub ([`crate::host_only`]).
//! - `__kmpc_target_translate_fptr` is declared when absent, `nounwind willreturn nosync nofree
//!   memory(none)`, and those attributes are also put on each call this pass inserts: within a
//!   kernel the table never changes (the host writes it between launches), so the translation is
//!   a pure function of its argument, which lets LICM hoist it out of loops and GVN merge it.
//!   (`memory(read)` would not: the indirect call it precedes may write memory, so LICM could
//!   not move the translation across it.)

use std::path::Path;

use crate::device_addresses::device_global_of;
use crate::ir::{direct_calls, instructions, is_known_callee, value_name, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::policy::{self, IndirectCall};
use crate::remarks::{Kind, Remarks};
use crate::summary::{Phase, Summary};
use crate::translation::{pure_attributes, Key, Pass, TranslationFunction};
pub use crate::translation::{LLVM_LOOKUP, TRANSLATE};

/// Rewrites `module` as the module documentation says and reports what it did; a device
/// compile's host IR is the file its command line names ([`crate::binding_copies::host_ir_path`]).
///
/// # Safety
/// `module` must be a valid module that no one else accesses during the call.
pub unsafe fn rewrite_module(module: LLVMModuleRef, phase: Phase) -> Summary {
    let host_ir = crate::binding_copies::host_ir_path(std::env::args_os());
    // SAFETY: as the caller promises.
    unsafe { rewrite_module_with_host_ir(module, phase, host_ir.as_deref()) }
}

/// [`rewrite_module`] with the host compile's IR at `host_ir` (or none), where device copies of
/// Fortran bindings come from ([`crate::binding_copies`]).
///
/// # Safety
/// `module` must be a valid module that no one else accesses during the call.
pub unsafe fn rewrite_module_with_host_ir(
    module: LLVMModuleRef,
    phase: Phase,
    host_ir: Option<&Path>,
) -> Summary {
    // SAFETY: every raw call below takes handles obtained from `module` (valid by precondition)
    // during this call, and collects instructions before changing any.
    unsafe {
        let mut summary = Summary::default();
        if !policy::rewrites(module) {
            match phase {
                Phase::PipelineStart => {
                    summary.fortran_entries = crate::fortran::add_indirect_entries(module);
                    summary.indirect_entries = crate::indirect_entries::name_host_entries(module);
                    summary.polymorphic_maps = crate::fortran_maps::map_dynamic_sizes(module);
                    summary.recorded_binding_tables = crate::binding_copies::record_host_bindings(module);
                }
                // After the optimizer: only the vtables the object file will define, and the
                // image anchor the records are found through.
                Phase::OptimizerLast => {
                    summary.host_vtables = crate::host_vtables::record_host_vtables(module);
                    if summary.host_vtables > 0 {
                        crate::image_anchor::register_in_host(module);
                    }
                }
            }
            return summary;
        }
        summary.device_module = true;
        let context = LLVMGetModuleContext(module);
        let remarks = Remarks::new(context);
        let pure = pure_attributes(context);
        let mut pass = Pass {
            module,
            context,
            remarks: &remarks,
            pure,
            translate: TranslationFunction::Unknown,
            summary,
            phase,
        };
        pass.fold_translations(None);
        if phase == Phase::OptimizerLast {
            // After optimization: the module then knows what it leaves undefined.
            pass.stub_host_only_virtuals();
            pass.define_abi_traps();
            pass.weaken_type_info_references();
        }
        if phase == Phase::PipelineStart {
            pass.adopt_llvm_lookups();
            pass.define_image_anchor();
            pass.adapt_flang_kernels();
            pass.name_device_globals();
            let uncopied = pass.copy_bindings_from_host(host_ir);
            pass.ungroup_local_variables();
            pass.share_type_descriptors();
            pass.summary.unbound_bindings = pass.stub_unbound_bindings(&uncopied);
            pass.export_vtable_words();
            pass.keep_vtable_destructors_out_of_line();
            pass.route_dynamic_casts();
            pass.route_type_inquiries();
        }
        let mut function = LLVMGetFirstFunction(module);
        while !function.is_null() {
            if LLVMIsDeclaration(function) == 0 {
                pass.rewrite_function(function);
            }
            function = LLVMGetNextFunction(function);
        }
        pass.cache_loop_translations();
        pass.summary
    }
}

/// Per-function counts for the analysis remark.
#[derive(Default)]
struct FunctionCounts {
    translated: usize,
    already_translated: usize,
    in_runtime: usize,
    from_device_vtable: usize,
    from_device_variable: usize,
}

impl Pass<'_> {
    /// Replaces each `translate(x)` that is `x` ([`policy::folds`]) by `x`, in `within`
    /// only when given (a function), else in the whole module.
    pub(crate) unsafe fn fold_translations(&mut self, within: Option<LLVMValueRef>) {
        // SAFETY: handles from the module; uses are collected before any call is erased.
        unsafe {
            for name in [TRANSLATE, LLVM_LOOKUP] {
                let function = LLVMGetNamedFunction(self.module, name.as_ptr());
                if function.is_null() {
                    continue;
                }
                // Calls only: erasing an invoke would drop the branch it ends its block with. In one
                // function (the peephole step, run after every instruction combining), its own
                // instructions rather than every use in the module.
                let candidates = match within {
                    Some(f) => calls_of(f, function),
                    None => direct_calls(function, 1),
                };
                let calls = candidates.into_iter().filter(|&call| !LLVMIsACallInst(call).is_null());
                for call in calls {
                    let operand = LLVMGetOperand(call, 0);
                    if !policy::folds(operand) || LLVMTypeOf(operand) != LLVMTypeOf(call) {
                        continue;
                    }
                    self.remarks.emit(Kind::Passed, call, c"TranslationFolded", || {
                        let what = match device_global_of(operand) {
                            Some(global) => {
                                format!("an address in @{}", value_name(global).unwrap_or_default())
                            }
                            None => value_name(operand).unwrap_or_else(|| "a translated pointer".into()),
                        };
                        format!(
                            "folded {}({what}) to its operand: already a device address",
                            name.to_string_lossy()
                        )
                    });
                    LLVMReplaceAllUsesWith(call, operand);
                    LLVMInstructionEraseFromParent(call);
                    self.summary.folded += 1;
                }
            }
        }
    }

    /// Translates the callee of every indirect call in `function`.
    unsafe fn rewrite_function(&mut self, function: LLVMValueRef) {
        // SAFETY: handles from the module; the calls are collected before the first insertion.
        unsafe {
            let runtime = value_name_bytes(function).is_some_and(|name| policy::is_runtime_function(&name));
            if !runtime {
                self.translate_vtable_loads(function);
            }
            let mut counts = FunctionCounts::default();
            let mut sites = Vec::new();
            for inst in instructions(function) {
                let Some(callee) = indirect_callee(inst) else { continue };
                match policy::indirect_call(runtime, callee) {
                    IndirectCall::InRuntime => {
                        counts.in_runtime += 1;
                        self.remarks.emit(Kind::Missed, inst, c"RuntimeCallLeftAlone", || {
                            "indirect call left alone: it is in an OpenMP runtime function".into()
                        });
                    }
                    IndirectCall::AlreadyTranslated => counts.already_translated += 1,
                    IndirectCall::ThroughDeviceVtable => counts.from_device_vtable += 1,
                    IndirectCall::ThroughDeviceVariable => counts.from_device_variable += 1,
                    IndirectCall::Translate => sites.push(inst),
                }
            }
            for site in sites {
                if self.translate_callee(site) {
                    counts.translated += 1;
                }
            }
            self.summary.translated += counts.translated;
            self.summary.already_translated += counts.already_translated;
            self.summary.in_runtime += counts.in_runtime;
            self.summary.from_device_vtable += counts.from_device_vtable;
            self.summary.from_device_variable += counts.from_device_variable;
            // After the optimizer, only news: the calls translated at the start are counted then.
            let report = match self.phase {
                Phase::PipelineStart => {
                    counts.translated
                        + counts.already_translated
                        + counts.in_runtime
                        + counts.from_device_vtable
                        + counts.from_device_variable
                        > 0
                }
                Phase::OptimizerLast => counts.translated > 0,
            };
            if report {
                let phase = self.phase;
                self.remarks.emit(Kind::Analysis, function, c"IndirectCalls", || {
                    format!(
                        "{}{} indirect call(s) translated, {} already translated, {} through a translated \
                         vtable, {} through a variable of device addresses, {} in the runtime left alone",
                        if phase == Phase::OptimizerLast { "after optimization: " } else { "" },
                        counts.translated,
                        counts.already_translated,
                        counts.from_device_vtable,
                        counts.from_device_variable,
                        counts.in_runtime
                    )
                });
            }
        }
    }

    /// Inserts `%t = translate(callee)` before `site` and makes `%t` its callee. Returns false
    /// (and says why in a missed remark) when the callee cannot be translated.
    unsafe fn translate_callee(&mut self, site: LLVMValueRef) -> bool {
        // SAFETY: `site` is a call or invoke of the module.
        unsafe {
            let callee = LLVMGetCalledValue(site);
            let translated = match self.build_translation(callee, site, Key::FunctionPointer) {
                Ok((translated, _)) => translated,
                Err(why) => {
                    self.not_translated(site, "indirect call not translated", why);
                    return false;
                }
            };
            let callee_index = LLVMGetNumOperands(site) - 1;
            debug_assert_eq!(LLVMGetOperand(site, callee_index as u32), callee);
            LLVMSetOperand(site, callee_index as u32, translated);
            let phase = self.phase;
            self.remarks.emit(Kind::Passed, site, c"IndirectCallTranslated", || {
                let what = describe_callee(callee);
                let when = if phase == Phase::OptimizerLast { " (found after optimization)" } else { "" };
                format!("translated the callee of an indirect call through {what} with __kmpc_target_translate_fptr{when}")
            });
            true
        }
    }
}

/// The calls in `function` of `callee` with one argument.
unsafe fn calls_of(function: LLVMValueRef, callee: LLVMValueRef) -> Vec<LLVMValueRef> {
    // SAFETY: a read-only walk over the instructions of a valid function.
    unsafe {
        instructions(function)
            .filter(|&inst| {
                !LLVMIsACallInst(inst).is_null()
                    && LLVMGetCalledValue(inst) == callee
                    && LLVMGetNumArgOperands(inst) == 1
            })
            .collect()
    }
}

/// The callee of `inst` if it is an indirect call: a call or an invoke (callbr is only used with
/// inline asm) whose callee is not [known](is_known_callee).
unsafe fn indirect_callee(inst: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: type queries and the callee read on a valid instruction.
    unsafe {
        if LLVMIsACallInst(inst).is_null() && LLVMIsAInvokeInst(inst).is_null() {
            return None;
        }
        let callee = LLVMGetCalledValue(inst);
        (!is_known_callee(callee)).then_some(callee)
    }
}

/// The optimizer's peephole step (after each instruction combining, in the device compile): folds
/// the translations of `function` that are their operand ([`policy::folds`]), before the
/// optimizer decides what to devirtualize and inline. Returns whether `function` changed.
///
/// # Safety
/// `function` must be a valid function that no one else modifies during the call.
pub unsafe fn fold_function(function: LLVMValueRef) -> bool {
    // SAFETY: the function's module, valid by precondition; nothing else runs on it.
    unsafe {
        let module = LLVMGetGlobalParent(function);
        if !policy::rewrites(module) {
            return false;
        }
        let context = LLVMGetModuleContext(module);
        let remarks = Remarks::new(context);
        let mut pass = Pass {
            module,
            context,
            remarks: &remarks,
            pure: Vec::new(),
            translate: TranslationFunction::Unknown,
            summary: Summary::default(),
            phase: Phase::PipelineStart,
        };
        pass.fold_translations(Some(function));
        pass.summary.folded > 0
    }
}

/// How a callee got its value, for remarks: "'fp'", "a pointer loaded from memory", ...
unsafe fn describe_callee(callee: LLVMValueRef) -> String {
    // SAFETY: type queries and name reads on a valid value.
    unsafe {
        if let Some(name) = value_name(callee) {
            format!("'{name}'")
        } else if !LLVMIsALoadInst(callee).is_null() {
            "a pointer loaded from memory".into()
        } else if !LLVMIsAArgument(callee).is_null() {
            "a function argument".into()
        } else if !LLVMIsAPHINode(callee).is_null() || !LLVMIsASelectInst(callee).is_null() {
            "a pointer chosen on several paths".into()
        } else {
            "a computed pointer".into()
        }
    }
}
