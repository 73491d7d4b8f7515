//! Type-bound procedures of Fortran objects the host built (flang's device modules).
//!
//! A polymorphic object (`class(shape)`) lives behind a descriptor whose addendum holds the
//! address of its dynamic type's descriptor (`_QM<module>EXdtX<type>`, flang's
//! `Fortran::runtime::typeInfo::DerivedType`). A type-bound call (`s%area()`) reads that pointer
//! from the descriptor, the binding table's address from the type descriptor's first word, and the
//! procedure's address from the binding, and calls it; `select type` compares the pointer with
//! the address of a type's descriptor. A descriptor the host built and mapped holds the *host*
//! type descriptor: on a GPU the reads fault, and on the x86_64 device the call reaches the host
//! procedure. The C++ twin is a host-built object's vtable pointer (`crate::vtables`), and so is
//! the fix:
//!
//! - **Each type descriptor is one device global, paired word by word with the host's**:
//!   flang defines the descriptors `internal` in every device module that uses the type; here they
//!   become one definition per image ([`share_type_descriptors`]: `weak_odr`, hidden), whose words
//!   [`Pass::export_vtable_words`] then exports as it does a vtable's, and host modules record
//!   theirs as vtables ([`omptarget_indirect_abi::is_dispatch_table`]). The device's descriptor
//!   leads to the device's binding table, which holds the device procedures' addresses.
//! - **Loads of the type-descriptor pointer from a descriptor are translated**
//!   ([`is_type_descriptor_load`], taken by `Pass::translate_vtable_loads`): the host's becomes
//!   the device's, so dispatch and `select type` see the device's descriptor; one the device
//!   built passes through unchanged.
//! - **`same_type_as` and `extends_type_of` are routed** ([`Pass::route_type_inquiries`]):
//!   flang's runtime reads the descriptors itself, so its calls go to the device library's
//!   functions of the same contract, which read them through the translation (and are the only
//!   ones a GPU has).
//!
//! [`Pass::export_vtable_words`]: crate::translation::Pass

use std::ffi::CStr;

use omptarget_indirect_abi::c_names::{
    EXTENDS_TYPE_OF, FLANG_EXTENDS_TYPE_OF, FLANG_SAME_TYPE_AS, SAME_TYPE_AS,
};
use omptarget_indirect_abi::{is_fortran_type_descriptor, UNBOUND_BINDING_STUB};

use crate::ir::{direct_calls, set_callee, stand_in_for, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::{LLVMLinkage, LLVMTypeKind, LLVMVisibility};
use crate::remarks::Kind;
use crate::translation::Pass;

/// Why a binding has no device copy, by type and binding name, for its stub's message (what
/// [`crate::binding_copies`] could not copy).
pub(crate) type Uncopied = std::collections::HashMap<(String, String), String>;

impl Pass<'_> {
    /// The step that gives a device module one definition per image of each Fortran type descriptor
    /// ([`share_type_descriptors`]), counted in the summary.
    pub(crate) unsafe fn share_type_descriptors(&mut self) {
        // SAFETY: the pass's module is valid and only the pass accesses it.
        self.summary.shared_type_descriptors = unsafe { share_type_descriptors(self.module) };
    }
}

/// Makes every Fortran type descriptor `module` defines privately one definition per image
/// (`weak_odr`, hidden, no comdat: NVPTX has none), so that every unit's code and the host's
/// pairing see the same address. Returns how many it changed.
///
/// flang gives the tables a descriptor points to (its name, components, bindings, default
/// values) internal linkage in a comdat of their own name. In every unit that uses a module
/// compiled apart, the linker keeps one unit's group of each name and discards the others; a
/// descriptor outside every comdat would then point into a discarded group (ld: "defined in
/// discarded section"). So what a shared descriptor reaches leaves its comdat too, as every local
/// variable of a device module does before this runs (`Pass::ungroup_local_variables`): each unit
/// keeps its own private copy, which only its copy of the descriptor points to.
///
/// Which copy the image keeps matters: a unit that only uses the module (its driver) has the
/// module's procedures as declarations, and flang leaves their addresses in the binding table
/// `undef`. Where the target has comdats (x86_64, AMDGPU), a complete copy is a strong
/// definition in a comdat of its own name, which wins over the incomplete (weak) copies whatever
/// the link order; the complete copies' groups are one. NVPTX has no comdats: there every copy
/// is `weak_odr`, and the first the link meets wins, which is harmless once every unit's binding
/// table leads to the same procedures ([`crate::binding_copies`], `docs/fortran.md`).
///
/// # Safety
/// `module` must be a valid device module that no one else accesses during the call.
unsafe fn share_type_descriptors(module: LLVMModuleRef) -> usize {
    // SAFETY: reads and linkage changes of the module's globals, none added or removed.
    unsafe {
        let mut shared = Vec::new();
        let mut global = LLVMGetFirstGlobal(module);
        while !global.is_null() {
            let private = matches!(
                LLVMGetLinkage(global),
                LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
            );
            if private
                && LLVMIsDeclaration(global) == 0
                && value_name_bytes(global).is_some_and(|name| is_fortran_type_descriptor(&name))
            {
                shared.push(global);
            }
            global = LLVMGetNextGlobal(global);
        }
        let comdats = !std::ffi::CStr::from_ptr(LLVMGetTarget(module)).to_bytes().starts_with(b"nvptx");
        for &descriptor in &shared {
            let complete = !reaches_undef(descriptor);
            LLVMSetVisibility(descriptor, LLVMVisibility::LLVMHiddenVisibility);
            if comdats && complete {
                LLVMSetLinkage(descriptor, LLVMLinkage::LLVMExternalLinkage);
                let group =
                    crate::llvm::comdat::LLVMGetOrInsertComdat(module, LLVMGetValueName2(descriptor, &mut 0));
                crate::llvm::comdat::LLVMSetComdat(descriptor, group);
            } else {
                LLVMSetLinkage(descriptor, LLVMLinkage::LLVMWeakODRLinkage);
                crate::llvm::comdat::LLVMSetComdat(descriptor, core::ptr::null_mut());
            }
        }
        shared.len()
    }
}

impl Pass<'_> {
    /// Fills every procedure address flang left `undef` in a binding table of the module
    /// (`_Q...EXvX<type>`: the procedure bound is not on the device in this unit, not `declare
    /// target` or defined by another file) with the address of a stub that says which binding of
    /// which type device code called and traps (the x86_64 device and NVPTX report
    /// `omptarget-indirect: type-bound procedure ...` first: [`Pass::build_trap_body`]). A type-bound call through such a slot jumped to address 0
    /// or to garbage, and the program died with a segmentation fault and no message. Where
    /// another unit's copy is complete, it still wins at the link ([`share_type_descriptors`]
    /// decided by these `undef`s, so this runs after it). Returns how many slots it filled.
    pub(crate) unsafe fn stub_unbound_bindings(&mut self, uncopied: &Uncopied) -> usize {
        // SAFETY: reads of the module's globals and constants; new constants and functions of its
        // context; an initializer replaced by one of the same type.
        unsafe {
            let mut filled = 0;
            let mut global = LLVMGetFirstGlobal(self.module);
            while !global.is_null() {
                let next = LLVMGetNextGlobal(global);
                let name = value_name_bytes(global).unwrap_or_default();
                let init = LLVMGetInitializer(global);
                let type_name = name.windows(4).position(|w| w == b"EXvX").map(|at| &name[at + 4..]);
                if let (Some(type_name), false) =
                    (type_name, init.is_null() || LLVMIsAConstantArray(init).is_null())
                {
                    let type_name = String::from_utf8_lossy(type_name).into_owned();
                    let count = LLVMGetNumOperands(init).max(0) as u32;
                    let mut elements: Vec<LLVMValueRef> =
                        (0..count).map(|i| LLVMGetOperand(init, i)).collect();
                    let mut changed = false;
                    for (slot, element) in elements.iter_mut().enumerate() {
                        let Some(address) = unbound_address(*element) else { continue };
                        let binding = binding_name(*element).unwrap_or_else(|| format!("#{}", slot + 1));
                        let why = uncopied.get(&(type_name.clone(), binding.clone())).map(String::as_str);
                        let stub = self.unbound_stub(&type_name, &binding, why);
                        let value = address_as(stub, LLVMTypeOf(address));
                        let mut fields: Vec<LLVMValueRef> = (0..LLVMGetNumOperands(*element).max(0) as u32)
                            .map(|i| LLVMGetOperand(*element, i))
                            .collect();
                        fields[0] = value;
                        *element = LLVMConstNamedStruct(
                            LLVMTypeOf(*element),
                            fields.as_mut_ptr(),
                            fields.len() as u32,
                        );
                        filled += 1;
                        changed = true;
                        self.remarks.emit(Kind::Missed, global, c"UnboundBinding", || {
                            format!(
                                "type-bound procedure `{binding}` of type `{type_name}` has no device procedure in this \
                                 unit: a stub that reports the call and traps stands in for it ({})",
                                unbound_fix(why)
                            )
                        });
                    }
                    if changed {
                        let element_type = LLVMGetElementType(LLVMTypeOf(init));
                        let table =
                            LLVMConstArray2(element_type, elements.as_mut_ptr(), elements.len() as u64);
                        LLVMSetInitializer(global, table);
                    }
                }
                global = next;
            }
            filled
        }
    }

    /// The stub for binding `binding` of type `type_name`: one per binding and module, internal.
    unsafe fn unbound_stub(&self, type_name: &str, binding: &str, why: Option<&str>) -> LLVMValueRef {
        // SAFETY: a new function of the module's context, given a body once.
        unsafe {
            let name = std::ffi::CString::new(format!("{UNBOUND_BINDING_STUB}.{type_name}.{binding}"))
                .unwrap_or_default();
            let known = LLVMGetNamedFunction(self.module, name.as_ptr());
            if !known.is_null() && LLVMIsDeclaration(known) == 0 {
                return known;
            }
            // The passed object, as flang passes it first; the stub never returns.
            let mut params = [LLVMPointerTypeInContext(self.context, 0)];
            let void = LLVMVoidTypeInContext(self.context);
            let stub = LLVMAddFunction(
                self.module,
                name.as_ptr(),
                LLVMFunctionType(void, params.as_mut_ptr(), 1, 0),
            );
            LLVMSetLinkage(stub, LLVMLinkage::LLVMInternalLinkage);
            let message = format!(
                "omptarget-indirect: type-bound procedure `{binding}` of type `{type_name}` is not compiled for the \
                 device ({}), but device code called it\n",
                unbound_fix(why)
            );
            self.build_trap_body(stub, Some(message.as_str()));
            stub
        }
    }
}

/// What an unbound binding's messages say of its cause and fix: why its procedure was not
/// copied from the host compile ([`crate::binding_copies`]), or that no host IR of this unit
/// defines it.
fn unbound_fix(why: Option<&str>) -> String {
    match why {
        Some(why) => format!(
            "{why}, so it has no device copy: make the procedure `!$omp declare target` and keep such \
             calls out of it"
        ),
        None => {
            "its procedure is not `!$omp declare target` and no host IR of this file defines it: compile the \
                 file that does with the configuration file, or make the procedure `!$omp declare target`"
                .to_string()
        }
    }
}

/// The procedure address of a binding (flang's `{address, name}`), if flang left it `undef`.
///
/// # Safety
/// `binding` must be a valid constant.
pub(crate) unsafe fn unbound_address(binding: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: kind and operand queries on valid constants.
    unsafe {
        if LLVMIsAConstantStruct(binding).is_null() || LLVMGetNumOperands(binding) < 1 {
            return None;
        }
        let address = LLVMGetOperand(binding, 0);
        (LLVMIsUndef(address) != 0 && holds_an_address(LLVMTypeOf(address))).then_some(address)
    }
}

/// Whether a constant of type `ty` can hold a function's address: a pointer, an integer, or
/// flang's `c_funptr` (a structure of one of those).
///
/// # Safety
/// `ty` must be a valid type.
unsafe fn holds_an_address(ty: LLVMTypeRef) -> bool {
    // SAFETY: type queries.
    unsafe {
        match LLVMGetTypeKind(ty) {
            LLVMTypeKind::LLVMIntegerTypeKind | LLVMTypeKind::LLVMPointerTypeKind => true,
            LLVMTypeKind::LLVMStructTypeKind => {
                LLVMCountStructElementTypes(ty) == 1 && holds_an_address(LLVMStructGetTypeAtIndex(ty, 0))
            }
            _ => false,
        }
    }
}

/// `function`'s address as a constant of type `ty`, one [`holds_an_address`] accepts.
///
/// # Safety
/// `function` must be a valid function, `ty` a type of its context that can hold an address.
pub(crate) unsafe fn address_as(function: LLVMValueRef, ty: LLVMTypeRef) -> LLVMValueRef {
    // SAFETY: type queries and new constants of the function's context.
    unsafe {
        match LLVMGetTypeKind(ty) {
            LLVMTypeKind::LLVMIntegerTypeKind => LLVMConstPtrToInt(function, ty),
            LLVMTypeKind::LLVMStructTypeKind => {
                let mut field = [address_as(function, LLVMStructGetTypeAtIndex(ty, 0))];
                LLVMConstNamedStruct(ty, field.as_mut_ptr(), 1)
            }
            _ => LLVMConstPointerCast(function, ty),
        }
    }
}

/// The name of a binding (flang's `{address, name}`, the name a character descriptor of a
/// constant string), if the constant says it.
///
/// # Safety
/// `binding` must be a valid constant.
pub(crate) unsafe fn binding_name(binding: LLVMValueRef) -> Option<String> {
    // SAFETY: kind and operand queries on valid constants.
    unsafe {
        if LLVMGetNumOperands(binding) < 2 {
            return None;
        }
        let descriptor = LLVMGetOperand(binding, 1);
        if LLVMIsAConstantStruct(descriptor).is_null() || LLVMGetNumOperands(descriptor) < 1 {
            return None;
        }
        let bytes = crate::offload_entries::string_of(LLVMGetOperand(descriptor, 0))?;
        let name = String::from_utf8_lossy(&bytes).trim_end_matches(['\0', ' ']).to_string();
        (!name.is_empty()).then_some(name)
    }
}

/// Whether a binding table of `descriptor` (flang's `_Q...EXvX<type>`, an internal global its
/// initializer names) holds a procedure address flang left `undef` (one it did not resolve in
/// this unit). (Other tables have `undef` padding.)
///
/// # Safety
/// `descriptor` must be a valid global variable with an initializer.
unsafe fn reaches_undef(descriptor: LLVMValueRef) -> bool {
    // SAFETY: operand, type and name queries on valid constants and globals.
    unsafe {
        let init = LLVMGetInitializer(descriptor);
        if init.is_null() {
            return false;
        }
        globals_in_constant(init).into_iter().any(|table| {
            let is_bindings = value_name_bytes(table).is_some_and(|n| n.windows(4).any(|w| w == b"EXvX"));
            let init = LLVMGetInitializer(table);
            // A procedure's address (flang's c_funptr, a pointer or an address), not padding.
            is_bindings
                && !init.is_null()
                && constant_leaves(init).into_iter().any(|leaf| {
                    LLVMIsUndef(leaf) != 0
                        && !matches!(LLVMGetTypeKind(LLVMTypeOf(leaf)), LLVMTypeKind::LLVMArrayTypeKind)
                })
        })
    }
}

/// The global variables `constant` refers to, through its operands (aggregates, casts, address
/// arithmetic).
///
/// # Safety
/// `constant` must be a valid constant.
unsafe fn globals_in_constant(constant: LLVMValueRef) -> Vec<LLVMValueRef> {
    // SAFETY: a kind query on the valid values constant_leaves returns.
    unsafe {
        constant_leaves(constant).into_iter().filter(|v| !LLVMIsAGlobalVariable(*v).is_null()).collect()
    }
}

/// What `constant` is built of, each once: the global variables it refers to and the `undef`s
/// it holds, through its operands (aggregates, casts, address arithmetic), not into the globals'
/// own initializers.
///
/// # Safety
/// `constant` must be a valid constant.
unsafe fn constant_leaves(constant: LLVMValueRef) -> Vec<LLVMValueRef> {
    // SAFETY: operand queries on valid constants.
    unsafe {
        let mut found = Vec::new();
        let mut pending = vec![constant];
        let mut visited = std::collections::HashSet::new();
        while let Some(value) = pending.pop() {
            if !visited.insert(value) {
                continue;
            }
            if !LLVMIsAGlobalVariable(value).is_null() || LLVMIsUndef(value) != 0 {
                found.push(value);
                continue;
            }
            if LLVMIsAConstant(value).is_null() || !LLVMIsAGlobalValue(value).is_null() {
                continue;
            }
            for i in 0..LLVMGetNumOperands(value).max(0) as u32 {
                pending.push(LLVMGetOperand(value, i));
            }
        }
        found
    }
}

/// Whether `inst` loads the type-descriptor pointer of a Fortran descriptor: a pointer loaded
/// through a field address of flang's descriptor type (`{ptr, i64, i32, i8, i8, i8, i8, ...}`)
/// at its addendum, the first pointer after the seven header fields (and the dimensions, for an
/// array's descriptor). flang's LLVM IR keeps these typed field addresses until the optimizer
/// runs, which is when the pass looks (the pipeline's start).
///
/// # Safety
/// `inst` must be a valid instruction.
pub unsafe fn is_type_descriptor_load(inst: LLVMValueRef) -> bool {
    // SAFETY: type and operand queries on valid values.
    unsafe {
        if LLVMIsALoadInst(inst).is_null()
            || LLVMGetTypeKind(LLVMTypeOf(inst)) != LLVMTypeKind::LLVMPointerTypeKind
        {
            return false;
        }
        let mut address = LLVMGetOperand(inst, 0);
        if !LLVMIsAAddrSpaceCastInst(address).is_null() {
            address = LLVMGetOperand(address, 0);
        }
        let is_gep = !LLVMIsAGetElementPtrInst(address).is_null()
            || (!LLVMIsAConstantExpr(address).is_null()
                && LLVMGetConstOpcode(address) == crate::llvm::LLVMOpcode::LLVMGetElementPtr);
        if !is_gep || LLVMGetNumOperands(address) != 3 {
            return false;
        }
        let Some(field) = addendum_field(LLVMGetGEPSourceElementType(address)) else { return false };
        let (first, index) = (LLVMGetOperand(address, 1), LLVMGetOperand(address, 2));
        !LLVMIsAConstantInt(first).is_null()
            && LLVMConstIntGetZExtValue(first) == 0
            && !LLVMIsAConstantInt(index).is_null()
            && LLVMConstIntGetZExtValue(index) == u64::from(field)
    }
}

/// The index of the type-descriptor field of `ty` if it is flang's descriptor type with an
/// addendum: the header `{ptr, i64, i32, i8, i8, i8, i8}`, the dimensions of an array's
/// (`[rank x [3 x i64]]`), then the type descriptor's pointer.
pub(crate) unsafe fn addendum_field(ty: LLVMTypeRef) -> Option<u32> {
    // SAFETY: type queries on a valid type.
    unsafe {
        if LLVMGetTypeKind(ty) != LLVMTypeKind::LLVMStructTypeKind {
            return None;
        }
        let count = LLVMCountStructElementTypes(ty);
        let field = |i: u32| (i < count).then(|| LLVMStructGetTypeAtIndex(ty, i));
        let integer = |i: u32, bits: u32| {
            field(i).is_some_and(|t| {
                LLVMGetTypeKind(t) == LLVMTypeKind::LLVMIntegerTypeKind && LLVMGetIntTypeWidth(t) == bits
            })
        };
        let pointer =
            |i: u32| field(i).is_some_and(|t| LLVMGetTypeKind(t) == LLVMTypeKind::LLVMPointerTypeKind);
        let header = pointer(0) && integer(1, 64) && integer(2, 32) && (3..7).all(|i| integer(i, 8));
        if !header {
            return None;
        }
        let dimensions = field(7).is_some_and(|t| LLVMGetTypeKind(t) == LLVMTypeKind::LLVMArrayTypeKind);
        let at = if dimensions { 8 } else { 7 };
        pointer(at).then_some(at)
    }
}

/// flang's runtime type inquiries and the device library's functions that answer in their place.
const TYPE_INQUIRIES: [(&CStr, &CStr); 2] =
    [(FLANG_SAME_TYPE_AS, SAME_TYPE_AS), (FLANG_EXTENDS_TYPE_OF, EXTENDS_TYPE_OF)];

impl Pass<'_> {
    /// Makes every call of flang's `_FortranASameTypeAs` and `_FortranAExtendsTypeOf` call the
    /// device library's function of the same contract instead.
    pub(crate) unsafe fn route_type_inquiries(&mut self) {
        // SAFETY: handles of the module; each function's calls are collected before any changes.
        unsafe {
            for (flang, ours_name) in TYPE_INQUIRIES {
                let runtime = LLVMGetNamedFunction(self.module, flang.as_ptr());
                if runtime.is_null() {
                    continue;
                }
                let calls = direct_calls(runtime, 2);
                if calls.is_empty() {
                    continue;
                }
                let Some(ours) = stand_in_for(self.module, runtime, ours_name) else {
                    for call in calls {
                        self.remarks.emit(Kind::Missed, call, c"TypeInquiryLeftAlone", || {
                            format!(
                                "left alone: the program declares {} with another type",
                                ours_name.to_string_lossy()
                            )
                        });
                    }
                    continue;
                };
                for call in calls {
                    set_callee(call, ours);
                    self.summary.type_inquiries += 1;
                    self.remarks.emit(Kind::Passed, call, c"TypeInquiryRouted", || {
                        format!(
                            "routed {} to {}: it reads the type descriptors through the translation, so an \
                             object built on the host is asked about through the device's",
                            flang.to_string_lossy(),
                            ours_name.to_string_lossy()
                        )
                    });
                }
            }
        }
    }
}
