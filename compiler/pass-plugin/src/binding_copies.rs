//! Device copies of the procedures bound to Fortran types, taken from the host compile's IR.
//!
//! flang's device compile keeps only the procedures that are `!$omp declare target` (and those
//! they call); a binding whose procedure is an ordinary module procedure (how people, and flang's
//! own tests, write type-bound code) is `undef` in the device's binding table, and a type-bound
//! call of it on the device jumps to nothing. The host compile runs first and writes its IR for
//! the device compile to read (`-fopenmp-host-ir-file-path`): that IR has the procedure's body.
//! This step copies it into the device module and points the slot at the copy, which is what
//! `!$omp declare target` on the procedure gives (`docs/fortran.md` says why this rather than a
//! flang plugin).
//!
//! What is copied, per slot, is the bound procedure and every procedure of the host's IR it
//! reaches that the device module does not have (the closure is copied whole or not at all):
//!
//! - a procedure the device module has (declared or defined: another binding's copy, a `declare
//!   target` procedure, the runtime's functions device code already calls) is used, not copied;
//! - an intrinsic is declared;
//! - a variable the device has (a `declare target` one, a type descriptor) is used; a constant
//!   the device lacks (a string, a constant table) is copied, private to the unit;
//! - anything else stops the copy, and the slot keeps its trapping stub
//!   ([`Pass::stub_unbound_bindings`]), whose message says why: a call of a procedure the device
//!   does not have (flang's I/O runtime on a GPU, say), a variable the device does not have (a
//!   module variable that is not `declare target`: the device would read a copy the program
//!   never maps), inline assembly or `llvm.x86.*` on a GPU, or, on a GPU, an aggregate passed or
//!   returned by value (the host's IR has that lowered for the host's calling convention).
//!
//! Only the unit whose host IR defines the procedure copies it (the module's own file). A unit
//! whose host IR only declares it (a driver compiled apart) points the slot at the procedure by
//! its own name and defines that name weakly, as a body that reports the call and traps: the
//! module's copy (a strong definition) replaces it at the link, so every unit's binding table
//! leads to the same procedures and it no longer matters which unit's type descriptor the link
//! keeps (NVPTX keeps the first it meets: a module in a static archive comes after the driver).
//! Where the module's file was compiled without offloading, the weak definition is the only
//! one, and the call stops with its line.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsString};
use std::path::{Path, PathBuf};

use crate::fortran_dispatch::Uncopied;
use crate::ir::{instructions, value_name, value_name_bytes};
use crate::llvm::bit_reader::LLVMParseBitcodeInContext2;
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMTypeKind;
use crate::policy;
use crate::remarks::Kind;
use crate::translation::Pass;

/// The compile option that names the host compile's IR for a device compile (clang's and flang's).
const HOST_IR_OPTION: &str = "-fopenmp-host-ir-file-path";

extern "C" {
    // src/shim.cpp: clones the named functions and constants of `host` into `device`, or changes
    // nothing and returns false when something they use cannot be resolved there.
    fn omptarget_indirect_copy_functions(
        device: LLVMModuleRef,
        host: LLVMModuleRef,
        functions: *const *const std::ffi::c_char,
        function_count: usize,
        constants: *const *const std::ffi::c_char,
        constant_count: usize,
    ) -> bool;
}

/// The host module's named metadata that records each binding table's procedures: one node per
/// table, its name and then each slot's procedure (or nothing).
const HOST_BINDINGS: &CStr = c"omptarget-indirect.bindings";

/// Records, in the host module, which procedure each slot of each binding table holds
/// ([`HOST_BINDINGS`]): the optimizer drops the tables of types the unit itself does not use
/// (a module's own file) from the IR the device compile reads, but keeps the procedures, and
/// metadata changes nothing in the host's code. Returns how many tables it recorded.
///
/// # Safety
/// `module` must be a valid host module that no one else accesses during the call.
pub unsafe fn record_host_bindings(module: LLVMModuleRef) -> usize {
    // SAFETY: reads of the module's globals; new metadata of its context.
    unsafe {
        let context = LLVMGetModuleContext(module);
        let mut recorded = 0;
        let mut global = LLVMGetFirstGlobal(module);
        while !global.is_null() {
            let name = value_name_bytes(global).unwrap_or_default();
            let init = LLVMGetInitializer(global);
            if is_binding_table(&name) && !init.is_null() && !LLVMIsAConstantArray(init).is_null() {
                let mut operands = vec![LLVMMDStringInContext2(context, name.as_ptr().cast(), name.len())];
                for index in 0..LLVMGetNumOperands(init).max(0) as u32 {
                    let procedure = function_in(LLVMGetOperand(init, index));
                    operands.push(match procedure {
                        Some(procedure) => LLVMValueAsMetadata(procedure),
                        None => LLVMMDStringInContext2(context, c"".as_ptr(), 0),
                    });
                }
                let node = LLVMMDNodeInContext2(context, operands.as_mut_ptr(), operands.len());
                LLVMAddNamedMetadataOperand(
                    module,
                    HOST_BINDINGS.as_ptr(),
                    LLVMMetadataAsValue(context, node),
                );
                recorded += 1;
            }
            global = LLVMGetNextGlobal(global);
        }
        recorded
    }
}

/// Whether `name` is one of flang's binding tables (`_Q...EXvX<type>`).
fn is_binding_table(name: &[u8]) -> bool {
    name.starts_with(b"_Q") && name.windows(4).any(|w| w == b"EXvX")
}

/// The procedure `host` records ([`record_host_bindings`]) in slot `index` of the binding table
/// named `table`, or, where it recorded none, that its table's initializer holds there.
///
/// # Safety
/// `host` must be a valid module.
unsafe fn host_procedure(host: LLVMModuleRef, table: &[u8], index: usize) -> Option<LLVMValueRef> {
    // SAFETY: reads of the module's named metadata, globals and constants.
    unsafe {
        let count = LLVMGetNamedMetadataNumOperands(host, HOST_BINDINGS.as_ptr()) as usize;
        let mut nodes = vec![std::ptr::null_mut(); count];
        if count > 0 {
            LLVMGetNamedMetadataOperands(host, HOST_BINDINGS.as_ptr(), nodes.as_mut_ptr());
        }
        for node in nodes {
            let length = LLVMGetMDNodeNumOperands(node) as usize;
            let mut operands = vec![std::ptr::null_mut(); length];
            LLVMGetMDNodeOperands(node, operands.as_mut_ptr());
            let Some(&first) = operands.first() else { continue };
            let mut name_length = 0;
            let name = LLVMGetMDString(first, &mut name_length);
            if name.is_null() || std::slice::from_raw_parts(name.cast::<u8>(), name_length as usize) != table
            {
                continue;
            }
            let procedure = *operands.get(index + 1)?;
            return (!procedure.is_null() && !LLVMIsAFunction(procedure).is_null()).then_some(procedure);
        }
        let name = CString::new(table).ok()?;
        let global = LLVMGetNamedGlobal(host, name.as_ptr());
        let init = if global.is_null() { std::ptr::null_mut() } else { LLVMGetInitializer(global) };
        if init.is_null() || index >= LLVMGetNumOperands(init).max(0) as usize {
            return None;
        }
        function_in(LLVMGetOperand(init, index as u32))
    }
}

/// The host IR file `arguments` (a compiler's command line) names, if any.
pub fn host_ir_path(arguments: impl IntoIterator<Item = OsString>) -> Option<PathBuf> {
    let mut arguments = arguments.into_iter();
    while let Some(argument) = arguments.next() {
        if argument == HOST_IR_OPTION {
            return arguments.next().map(PathBuf::from);
        }
        let text = argument.to_string_lossy();
        if let Some(path) = text.strip_prefix(HOST_IR_OPTION).and_then(|rest| rest.strip_prefix('=')) {
            return Some(PathBuf::from(path));
        }
    }
    None
}

/// One slot of a binding table that flang left `undef`.
struct Slot {
    table: LLVMValueRef,
    index: usize,
    type_name: String,
    binding: String,
}

/// What fills a slot: the procedure copied from the host's IR (or one the device module has), or
/// the procedure of another file, by its name ([`Pass::elsewhere_procedure`]).
enum Filled {
    Copy(LLVMValueRef),
    Elsewhere(LLVMValueRef),
}

/// What one copy takes from the host's IR: procedures to define, constants to copy.
#[derive(Default)]
struct Plan {
    functions: Vec<LLVMValueRef>,
    constants: Vec<LLVMValueRef>,
}

impl Pass<'_> {
    /// Copies the procedure of every `undef` binding slot from the host compile's IR at
    /// `host_ir`, as the module documentation says, and points the slots at the copies. Returns,
    /// for each slot left `undef`, why, where the host's IR says.
    pub(crate) unsafe fn copy_bindings_from_host(&mut self, host_ir: Option<&Path>) -> Uncopied {
        let mut uncopied = Uncopied::new();
        // SAFETY: the module's globals and constants are read; the host module is parsed into the
        // module's context, read, handed to the shim (which reads it and writes the device
        // module) and disposed of here.
        unsafe {
            let slots = self.unbound_slots();
            if !policy::copies_bindings() {
                for slot in slots {
                    uncopied.insert(
                        (slot.type_name, slot.binding),
                        format!("copies from the host's IR are off ({}=0)", policy::BINDING_COPIES_SWITCH),
                    );
                }
                return uncopied;
            }
            if slots.is_empty() {
                return uncopied;
            }
            let Some(path) = host_ir else { return uncopied };
            let Some(host) = self.parse_host_ir(path) else { return uncopied };
            let mut changed: HashMap<LLVMValueRef, Vec<(usize, LLVMValueRef)>> = HashMap::new();
            for slot in &slots {
                match self.copy_slot(host, slot) {
                    Ok(Some(Filled::Elsewhere(procedure))) => {
                        changed.entry(slot.table).or_default().push((slot.index, procedure));
                        self.summary.elsewhere_bindings += 1;
                        self.remarks.emit(Kind::Analysis, slot.table, c"BindingElsewhere", || {
                            format!(
                                "type-bound procedure `{}` of type `{}`: `{}` is defined by another file; a weak \
                                 definition that traps stands in for it until that file's device copy replaces it \
                                 at the link",
                                slot.binding,
                                slot.type_name,
                                value_name(procedure).unwrap_or_default()
                            )
                        });
                    }
                    Ok(Some(Filled::Copy(copy))) => {
                        changed.entry(slot.table).or_default().push((slot.index, copy));
                        self.summary.copied_bindings += 1;
                        self.remarks.emit(Kind::Passed, slot.table, c"BindingCopied", || {
                            format!(
                                "type-bound procedure `{}` of type `{}`: `{}` copied from the host compile's IR",
                                slot.binding,
                                slot.type_name,
                                value_name(copy).unwrap_or_default()
                            )
                        });
                    }
                    Ok(None) => {}
                    Err(why) => {
                        self.remarks.emit(Kind::Missed, slot.table, c"BindingNotCopied", || {
                            format!(
                                "type-bound procedure `{}` of type `{}` not copied from the host compile's IR: {why}",
                                slot.binding, slot.type_name
                            )
                        });
                        uncopied.insert((slot.type_name.clone(), slot.binding.clone()), why);
                    }
                }
            }
            LLVMDisposeModule(host);
            for (table, copies) in changed {
                let init = LLVMGetInitializer(table);
                let count = LLVMGetNumOperands(init).max(0) as u32;
                let mut elements: Vec<LLVMValueRef> = (0..count).map(|i| LLVMGetOperand(init, i)).collect();
                for (index, copy) in copies {
                    let element = elements[index];
                    let mut fields: Vec<LLVMValueRef> = (0..LLVMGetNumOperands(element).max(0) as u32)
                        .map(|i| LLVMGetOperand(element, i))
                        .collect();
                    fields[0] = crate::fortran_dispatch::address_as(copy, LLVMTypeOf(fields[0]));
                    elements[index] =
                        LLVMConstNamedStruct(LLVMTypeOf(element), fields.as_mut_ptr(), fields.len() as u32);
                }
                let element_type = LLVMGetElementType(LLVMTypeOf(init));
                LLVMSetInitializer(
                    table,
                    LLVMConstArray2(element_type, elements.as_mut_ptr(), elements.len() as u64),
                );
            }
            uncopied
        }
    }

    /// The `undef` procedure slots of the module's binding tables (`_Q...EXvX<type>`).
    unsafe fn unbound_slots(&self) -> Vec<Slot> {
        let mut slots = Vec::new();
        // SAFETY: reads of the module's globals and their initializers.
        unsafe {
            let mut global = LLVMGetFirstGlobal(self.module);
            while !global.is_null() {
                let name = value_name_bytes(global).unwrap_or_default();
                let init = LLVMGetInitializer(global);
                let type_name = name.windows(4).position(|w| w == b"EXvX").map(|at| &name[at + 4..]);
                let is_table =
                    is_binding_table(&name) && !init.is_null() && !LLVMIsAConstantArray(init).is_null();
                if let (Some(type_name), true) = (type_name, is_table) {
                    for index in 0..LLVMGetNumOperands(init).max(0) as u32 {
                        let element = LLVMGetOperand(init, index);
                        if crate::fortran_dispatch::unbound_address(element).is_none() {
                            continue;
                        }
                        slots.push(Slot {
                            table: global,
                            index: index as usize,
                            type_name: String::from_utf8_lossy(type_name).into_owned(),
                            binding: crate::fortran_dispatch::binding_name(element)
                                .unwrap_or_else(|| format!("#{}", index + 1)),
                        });
                    }
                }
                global = LLVMGetNextGlobal(global);
            }
        }
        slots
    }

    /// The host compile's IR, parsed into the module's context; `None` (with a remark) if it
    /// cannot be read.
    unsafe fn parse_host_ir(&self, path: &Path) -> Option<LLVMModuleRef> {
        // SAFETY: a memory buffer of the file, disposed of after the parse (which copies what it
        // needs); the module returned belongs to the caller.
        unsafe {
            let file = CString::new(path.as_os_str().as_encoded_bytes()).ok()?;
            let mut buffer = std::ptr::null_mut();
            let mut message = std::ptr::null_mut();
            let failed =
                LLVMCreateMemoryBufferWithContentsOfFile(file.as_ptr(), &mut buffer, &mut message) != 0;
            if !message.is_null() {
                LLVMDisposeMessage(message);
            }
            let mut host = std::ptr::null_mut();
            let parsed = !failed && LLVMParseBitcodeInContext2(self.context, buffer, &mut host) == 0;
            if !buffer.is_null() {
                LLVMDisposeMemoryBuffer(buffer);
            }
            if !parsed {
                let anchor = LLVMGetFirstFunction(self.module);
                self.remarks.emit(Kind::Missed, anchor, c"HostIrUnreadable", || {
                    format!(
                        "the host compile's IR `{}` could not be read: no binding is copied",
                        path.display()
                    )
                });
                return None;
            }
            Some(host)
        }
    }

    /// Copies the procedure of `slot` from `host`: its device function (a copy made now, or an
    /// earlier one; or another file's procedure), `None` where the host's IR has no such table or
    /// binding, or why not.
    unsafe fn copy_slot(&self, host: LLVMModuleRef, slot: &Slot) -> Result<Option<Filled>, String> {
        // SAFETY: reads of both modules; the shim changes the device module only when it
        // succeeds.
        unsafe {
            let table = value_name_bytes(slot.table).unwrap_or_default();
            let Some(procedure) = host_procedure(host, &table, slot.index) else { return Ok(None) };
            let procedure_name = value_name(procedure).unwrap_or_default();
            let known = self.named_function(&procedure_name);
            if !known.is_null() && LLVMIsDeclaration(known) == 0 {
                // An earlier slot's copy, or its weak definition of another file's procedure.
                let elsewhere = LLVMIsDeclaration(procedure) != 0;
                return Ok(Some(if elsewhere { Filled::Elsewhere(known) } else { Filled::Copy(known) }));
            }
            let cname = CString::new(procedure_name.clone()).unwrap_or_default();
            if !LLVMGetNamedGlobal(self.module, cname.as_ptr()).is_null() {
                return Err(format!("the device module has a variable named `{procedure_name}`"));
            }
            if LLVMIsDeclaration(procedure) != 0 {
                return Ok(Some(Filled::Elsewhere(self.elsewhere_procedure(procedure, known, slot))));
            }
            let plan = self.plan_copy(procedure)?;
            let names = |values: &[LLVMValueRef]| -> Vec<CString> {
                values
                    .iter()
                    .map(|&v| CString::new(value_name_bytes(v).unwrap_or_default()).unwrap_or_default())
                    .collect()
            };
            let (functions, constants) = (names(&plan.functions), names(&plan.constants));
            let function_pointers: Vec<_> = functions.iter().map(|name| name.as_ptr()).collect();
            let constant_pointers: Vec<_> = constants.iter().map(|name| name.as_ptr()).collect();
            let copied = omptarget_indirect_copy_functions(
                self.module,
                host,
                function_pointers.as_ptr(),
                function_pointers.len(),
                constant_pointers.as_ptr(),
                constant_pointers.len(),
            );
            let copy = self.named_function(&procedure_name);
            if !copied || copy.is_null() {
                return Err(format!("`{procedure_name}` uses something the device module cannot resolve"));
            }
            Ok(Some(Filled::Copy(copy)))
        }
    }

    /// The device function of `procedure`, which the host's IR declares and another file defines:
    /// the module's declaration `known` where device code already calls it (that call needs the
    /// other file's definition anyway), else a weak definition of the same name and type that
    /// reports the call of `slot`'s binding and traps (protected: on the x86_64 device no host
    /// function of that name stands in for it). The other file's copy, a strong definition,
    /// replaces it at the link.
    unsafe fn elsewhere_procedure(
        &self,
        procedure: LLVMValueRef,
        known: LLVMValueRef,
        slot: &Slot,
    ) -> LLVMValueRef {
        // SAFETY: a new function of the device module's context, of a type of that context (the
        // host module was parsed into it), given a body once.
        unsafe {
            if !known.is_null() {
                return known;
            }
            let name = value_name(procedure).unwrap_or_default();
            let cname = CString::new(name.clone()).unwrap_or_default();
            let function = LLVMAddFunction(self.module, cname.as_ptr(), LLVMGlobalGetValueType(procedure));
            let message = format!(
                "omptarget-indirect: type-bound procedure `{}` of type `{}` is not compiled for the device \
                 (`{name}` is defined by another file, whose device compile did not define it: compile that file \
                 with the configuration file, or make the procedure `!$omp declare target`), but device code \
                 called it\n",
                slot.binding, slot.type_name
            );
            self.build_trap_body(function, Some(&message));
            LLVMSetLinkage(function, crate::llvm::LLVMLinkage::LLVMWeakAnyLinkage);
            LLVMSetVisibility(function, crate::llvm::LLVMVisibility::LLVMProtectedVisibility);
            function
        }
    }

    /// What copying `root` takes ([`Plan`]), or why it cannot be copied (module documentation).
    unsafe fn plan_copy(&self, root: LLVMValueRef) -> Result<Plan, String> {
        // SAFETY: reads of the host module's functions, instructions and constants, and name
        // lookups in the device module.
        unsafe {
            let gpu = !self.on_x86_64();
            let mut plan = Plan::default();
            let mut seen = std::collections::HashSet::new();
            let mut functions = vec![root];
            seen.insert(root);
            if gpu {
                passes_aggregates(root)?;
            }
            while let Some(function) = functions.pop() {
                plan.functions.push(function);
                let user = value_name(function).unwrap_or_default();
                let mut pending: Vec<LLVMValueRef> = Vec::new();
                for inst in instructions(function) {
                    for i in 0..LLVMGetNumOperands(inst).max(0) as u32 {
                        pending.push(LLVMGetOperand(inst, i));
                    }
                }
                while let Some(value) = pending.pop() {
                    if value.is_null() || !seen.insert(value) {
                        continue;
                    }
                    if !LLVMIsAFunction(value).is_null() {
                        let name = value_name(value).unwrap_or_default();
                        let known = self.named_function(&name);
                        if !known.is_null() {
                            if gpu {
                                passes_aggregates(known)?;
                            }
                        } else if LLVMGetIntrinsicID(value) != 0 {
                            if gpu && name.starts_with("llvm.x86.") {
                                return Err(format!("`{user}` calls the x86 intrinsic `{name}`"));
                            }
                        } else if LLVMIsDeclaration(value) == 0 {
                            if gpu {
                                passes_aggregates(value)?;
                            }
                            functions.push(value);
                        } else {
                            return Err(format!("`{user}` calls `{name}`, which the device does not have"));
                        }
                    } else if !LLVMIsAGlobalVariable(value).is_null() {
                        let name = value_name(value).unwrap_or_default();
                        let cname = CString::new(name.clone()).unwrap_or_default();
                        if !LLVMGetNamedGlobal(self.module, cname.as_ptr()).is_null() {
                            continue;
                        }
                        let init = LLVMGetInitializer(value);
                        if LLVMIsGlobalConstant(value) == 0 || init.is_null() || LLVMIsThreadLocal(value) != 0
                        {
                            return Err(format!(
                                "`{user}` uses the variable `{name}`, which is not on the device"
                            ));
                        }
                        plan.constants.push(value);
                        pending.push(init);
                    } else if !LLVMIsAGlobalValue(value).is_null() {
                        let name = value_name(value).unwrap_or_default();
                        return Err(format!("`{user}` uses the alias `{name}`"));
                    } else if !LLVMIsAInlineAsm(value).is_null() {
                        if gpu {
                            return Err(format!("`{user}` holds inline assembly"));
                        }
                    } else if !LLVMIsAConstant(value).is_null() {
                        for i in 0..LLVMGetNumOperands(value).max(0) as u32 {
                            pending.push(LLVMGetOperand(value, i));
                        }
                    }
                }
            }
            Ok(plan)
        }
    }

    /// The device module's function named `name`, or null.
    unsafe fn named_function(&self, name: &str) -> LLVMValueRef {
        let name = CString::new(name).unwrap_or_default();
        // SAFETY: a name lookup in the module.
        unsafe { LLVMGetNamedFunction(self.module, name.as_ptr()) }
    }
}

/// The function a constant refers to (a binding's `{c_funptr, name}`: its address), if any.
///
/// # Safety
/// `constant` must be a valid constant.
unsafe fn function_in(constant: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: kind and operand queries on valid constants.
    unsafe {
        let mut pending = vec![constant];
        while let Some(value) = pending.pop() {
            if !LLVMIsAFunction(value).is_null() {
                return Some(value);
            }
            if LLVMIsAConstant(value).is_null() || !LLVMIsAGlobalValue(value).is_null() {
                continue;
            }
            // The address comes first (a binding's name, a character descriptor, after it).
            for i in (0..LLVMGetNumOperands(value).max(0) as u32).rev() {
                pending.push(LLVMGetOperand(value, i));
            }
        }
        None
    }
}

/// Refuses a function that takes or returns an aggregate by value: the host's IR has it lowered
/// for the host's calling convention, which a GPU's differs from.
///
/// # Safety
/// `function` must be a valid function.
unsafe fn passes_aggregates(function: LLVMValueRef) -> Result<(), String> {
    // SAFETY: type queries on a valid function's type.
    unsafe {
        let ty = LLVMGlobalGetValueType(function);
        let mut types = vec![LLVMGetReturnType(ty)];
        let count = LLVMCountParamTypes(ty) as usize;
        let mut params = vec![std::ptr::null_mut(); count];
        LLVMGetParamTypes(ty, params.as_mut_ptr());
        types.extend(params);
        let aggregate = types.iter().any(|&t| {
            matches!(
                LLVMGetTypeKind(t),
                LLVMTypeKind::LLVMStructTypeKind
                    | LLVMTypeKind::LLVMArrayTypeKind
                    | LLVMTypeKind::LLVMVectorTypeKind
                    | LLVMTypeKind::LLVMX86_FP80TypeKind
                    | LLVMTypeKind::LLVMFP128TypeKind
            )
        });
        if aggregate {
            let name = value_name(function).unwrap_or_default();
            return Err(format!("`{name}` passes a value the host and the device pass differently"));
        }
        Ok(())
    }
}
