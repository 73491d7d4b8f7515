//! Polymorphic Fortran objects mapped with their dynamic type's size (flang's host modules).
//!
//! flang 23 maps a `class(shape)` object with its *declared* type's size and through the
//! declared type's default mapper, which divides that size by the declared type's: an
//! extension's own components (`circle%r`) never reach the device, and an abstract type without
//! components (size 0) stops the host program with `SIGFPE` in the mapper. The object's
//! descriptor knows the real size: its `elem_len` (the second word), which the runtime sets to
//! the dynamic type's size when it allocates or points the object.
//!
//! So, in host modules, for each map entry of an offload call (`__tgt_target_kernel`,
//! `__tgt_target_data_{begin,end,update}[_nowait]_mapper`) that maps the data of a polymorphic
//! descriptor (its pointer entry the base address loaded from a descriptor with a
//! type-descriptor addendum: a variable's, the local copy flang makes of a dummy argument's, or a
//! derived type's component) with a constant size, through a default mapper or none:
//!
//! - a scalar's size becomes the descriptor's `elem_len`, read where flang stores the size (`0`
//!   still for an unallocated object, as flang's `select` had it);
//! - an array's size (element count times the declared type's size) and its first element's
//!   address (a section's) are computed with `elem_len` instead ([`fix_array_entry`]);
//! - the entry's mapper becomes the registration library's [`MAP_POLYMORPHIC`] and its base the
//!   object's descriptor: that mapper maps the components of the dynamic type the descriptor
//!   names, with its allocatable components' data ([`use_dynamic_mapper`]);
//! - where the call has no mappers array or the entry's base is not one store, the mapper is
//!   dropped instead, when all it does is map the declared type's own components in place (no
//!   pointer loads: no allocatable or pointer component to follow): libomptarget then maps the
//!   object's bytes, all of them. Otherwise the entry is left as flang made it.
//!
//! The same holds inside a derived type's default mapper, for its `class(...)` components,
//! scalars and arrays ([`fix_component_map`]): their map calls call [`MAP_POLYMORPHIC`], whose
//! base flang already passes as the component's descriptor. A flang that maps the dynamic size
//! already (a size that is not a constant) is left alone, so the fix is never applied twice.

use std::collections::HashMap;

use omptarget_indirect_abi::c_names::{MAP_POLYMORPHIC, PUSH_MAPPER_COMPONENT};
use omptarget_indirect_abi::map_type::{ATTACH, TARGET_PARAM};

use crate::fortran_dispatch::addendum_field;
use crate::ir::{instructions, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMTypeKind;
use crate::policy;

/// `__tgt_kernel_arguments`' fields holding the base pointers, pointers, sizes, map types and
/// mappers arrays.
const KERNEL_ARGUMENT_FIELDS: [u64; 5] = [2, 3, 4, 5, 7];
/// The operands of `__tgt_target_data_*_mapper` that are those arrays.
const DATA_MAPPER_OPERANDS: [u32; 5] = [3, 4, 5, 6, 8];

/// Gives the map entries of scalar polymorphic objects their dynamic type's size (module
/// documentation). Returns how many entries it changed.
///
/// # Safety
/// `module` must be a valid host module that no one else accesses during the call.
pub unsafe fn map_dynamic_sizes(module: LLVMModuleRef) -> usize {
    // SAFETY: instructions of the module's functions, collected per function before any change;
    // the changes replace store operands and add loads before those stores.
    unsafe {
        if !policy::maps_dynamic_types() {
            return 0;
        }
        let mut changed = 0;
        let mut function = LLVMGetFirstFunction(module);
        while !function.is_null() {
            if LLVMIsDeclaration(function) == 0 {
                changed += in_function(function);
            }
            function = LLVMGetNextFunction(function);
        }
        changed
    }
}

/// The stores of `function` into the arrays' elements: (array, index) -> the stores.
type Stores = HashMap<(LLVMValueRef, u64), Vec<LLVMValueRef>>;

unsafe fn in_function(function: LLVMValueRef) -> usize {
    // SAFETY: reads of the function's instructions; changes as `map_dynamic_sizes` says.
    unsafe {
        let mut stores: Stores = HashMap::new();
        let mut offloads = Vec::new();
        let mut component_maps = Vec::new();
        for inst in instructions(function) {
            if !LLVMIsAStoreInst(inst).is_null() {
                if let Some(slot) = array_element(LLVMGetOperand(inst, 1)) {
                    stores.entry(slot).or_default().push(inst);
                }
            } else if !LLVMIsACallInst(inst).is_null() {
                if let Some(arrays) = offload_arrays(inst, &stores) {
                    offloads.push(arrays);
                } else if is_component_map(inst) {
                    component_maps.push(inst);
                }
            }
        }
        let mut changed = component_maps.into_iter().filter(|&call| fix_component_map(call)).count();
        for Offload { call, bases, pointers, sizes, map_types, mut mappers, mappers_use } in offloads {
            let entries: Vec<u64> =
                stores.keys().filter(|&&(array, _)| array == pointers).map(|&(_, index)| index).collect();
            for index in entries {
                let (Some(pointer), Some(size)) =
                    (only(&stores, pointers, index), only(&stores, sizes, index))
                else {
                    continue;
                };
                // An attachment entry's size is the pointer's, not the data's; a kernel argument's
                // base is the argument: both are left alone.
                let Some(map_type) = map_type(map_types, index) else { continue };
                if map_type & ATTACH != 0 {
                    continue;
                }
                let base_store = bases
                    .and_then(|bases| only(&stores, bases, index))
                    .filter(|_| map_type & TARGET_PARAM == 0);
                // No mappers array (no entry has a mapper): one of null mappers is made for a
                // polymorphic object's entry that is to get one (flang 24 passes none).
                if mappers.is_none() && base_store.is_some() && entry_descriptor(pointer).is_some() {
                    mappers = null_mappers(call, pointers, mappers_use, &mut stores);
                }
                let mapper_store = match mappers {
                    Some(mappers) => match only(&stores, mappers, index) {
                        Some(store) => Some(store),
                        None => continue,
                    },
                    None => None,
                };
                if fix_entry(pointer, size, mapper_store, base_store) {
                    changed += 1;
                }
            }
        }
        changed
    }
}

/// The one store into element `index` of `array`, if there is exactly one.
fn only(stores: &Stores, array: LLVMValueRef, index: u64) -> Option<LLVMValueRef> {
    match stores.get(&(array, index)).map(Vec::as_slice) {
        Some([store]) => Some(*store),
        _ => None,
    }
}

/// Changes the entry whose pointer, size, mapper and base these stores write, if it maps a
/// polymorphic object with a constant size through a default mapper or none (module
/// documentation).
unsafe fn fix_entry(
    pointer: LLVMValueRef,
    size: LLVMValueRef,
    mapper_store: Option<LLVMValueRef>,
    base_store: Option<LLVMValueRef>,
) -> bool {
    // SAFETY: operand and type queries on valid instructions; new instructions before `size`.
    unsafe {
        // The entry's mapper, replaced: none, or a default mapper (that maps in place, where it
        // is to be dropped).
        let mapper = mapper_store.map(|store| LLVMGetOperand(store, 0)).filter(|m| LLVMIsNull(*m) == 0);
        let dynamic_mapper = mapper_store.zip(base_store);
        if let Some(mapper) = mapper {
            let is_default_mapper = !LLVMIsAFunction(mapper).is_null()
                && value_name_bytes(mapper).is_some_and(|n| n.ends_with(b"_omp_default_mapper"));
            if !is_default_mapper || (dynamic_mapper.is_none() && !maps_in_place(mapper)) {
                return false;
            }
        }
        let replace_mapper = |descriptor: &Descriptor| match dynamic_mapper {
            Some((mapper_store, base_store)) => use_dynamic_mapper(mapper_store, base_store, descriptor),
            None => drop_mapper(mapper_store, mapper),
        };
        let Some((descriptor, element)) = entry_descriptor(pointer) else { return false };
        if descriptor.rank > 0 {
            let Some(element) = element else { return false };
            return fix_array_entry(&descriptor, element, size) && replace_mapper(&descriptor);
        }
        if element.is_some() {
            return false;
        }
        let static_size = LLVMGetOperand(size, 0);
        let Some(constant) = constant_size(static_size) else { return false };
        let builder = LLVMCreateBuilderInContext(LLVMGetTypeContext(LLVMTypeOf(constant)));
        LLVMPositionBuilderBefore(builder, size);
        let elem_len = descriptor.elem_len(builder, LLVMTypeOf(constant));
        let dynamic = with_elem_len(builder, static_size, elem_len);
        LLVMDisposeBuilder(builder);
        LLVMSetOperand(size, 0, dynamic);
        replace_mapper(&descriptor)
    }
}

/// The polymorphic descriptor whose data the entry with this pointer store maps, and the element
/// address of an array's: a scalar's entry points at the base address loaded from its descriptor;
/// an array's at an element of it (`getelementptr <declared type>, ptr %base, i64 %first`).
unsafe fn entry_descriptor(pointer: LLVMValueRef) -> Option<(Descriptor, Option<LLVMValueRef>)> {
    // SAFETY: operand queries on a valid store.
    unsafe {
        let mut target = LLVMGetOperand(pointer, 0);
        let element = (!LLVMIsAGetElementPtrInst(target).is_null() && LLVMGetNumOperands(target) == 2)
            .then_some(target);
        if let Some(element) = element {
            target = LLVMGetOperand(element, 0);
        }
        if LLVMIsALoadInst(target).is_null() {
            return None;
        }
        Some((descriptor_of(LLVMGetOperand(target, 0))?, element))
    }
}

/// A mappers array for `call`, which passes none (`mappers_use`: the operand that passes it): an
/// `alloca` as long as `pointers`, every element stored null before the call (the stores entered
/// in `stores`), passed in place of the null.
unsafe fn null_mappers(
    call: LLVMValueRef,
    pointers: LLVMValueRef,
    mappers_use: Option<(LLVMValueRef, u32)>,
    stores: &mut Stores,
) -> Option<LLVMValueRef> {
    // SAFETY: an alloca at the top of the call's function, stores before the instruction that
    // passes the array, and that operand replaced by the alloca.
    unsafe {
        let (user, operand) = mappers_use?;
        let array_type = LLVMGetAllocatedType(pointers);
        if LLVMGetTypeKind(array_type) != LLVMTypeKind::LLVMArrayTypeKind {
            return None;
        }
        let count = LLVMGetArrayLength2(array_type);
        let context = LLVMGetTypeContext(array_type);
        let ptr = LLVMPointerTypeInContext(context, 0);
        let i32 = LLVMInt32TypeInContext(context);
        let builder = LLVMCreateBuilderInContext(context);
        let function = LLVMGetBasicBlockParent(LLVMGetInstructionParent(call));
        LLVMPositionBuilderBefore(builder, LLVMGetFirstInstruction(LLVMGetEntryBasicBlock(function)));
        let ty = LLVMArrayType2(ptr, count);
        let array = LLVMBuildAlloca(builder, ty, c".offload_mappers".as_ptr());
        LLVMPositionBuilderBefore(builder, user);
        for index in 0..count {
            let mut indices = [LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, index, 0)];
            let element = LLVMBuildInBoundsGEP2(builder, ty, array, indices.as_mut_ptr(), 2, c"".as_ptr());
            let store = LLVMBuildStore(builder, LLVMConstNull(ptr), element);
            stores.insert((array, index), vec![store]);
        }
        LLVMDisposeBuilder(builder);
        LLVMSetOperand(user, operand, array);
        Some(array)
    }
}

/// Whether `call` maps a component inside a mapper: `__tgt_push_mapper_component(handle, base,
/// begin, size, type, name)`, or a call of a default mapper with those operands.
unsafe fn is_component_map(call: LLVMValueRef) -> bool {
    // SAFETY: operand queries on a valid call.
    unsafe {
        let callee = LLVMGetCalledValue(call);
        LLVMGetNumArgOperands(call) == 6
            && !LLVMIsAFunction(callee).is_null()
            && value_name_bytes(callee)
                .is_some_and(|n| n == PUSH_MAPPER_COMPONENT.to_bytes() || n.ends_with(b"_omp_default_mapper"))
    }
}

/// A polymorphic component a mapper maps (flang's default mapper of a derived type with a
/// `class(...)` component), the call (`__tgt_push_mapper_component` or the declared type's
/// default mapper) made to call [`MAP_POLYMORPHIC`] instead, with the component's descriptor (the
/// address its data's address is loaded from, which flang passes as the base already) for its
/// base:
/// - a scalar's size, a constant (in a `select` for an unallocated one), becomes the
///   descriptor's `elem_len`, read before the call;
/// - an array's (`begin` is `getelementptr <declared type>, ptr %data, i64 %first`) size and
///   first element's address are computed with `elem_len` as a variable's are
///   ([`fix_array_size_and_start`]).
unsafe fn fix_component_map(call: LLVMValueRef) -> bool {
    // SAFETY: operand queries on a valid call; new instructions before it (or before the
    // instructions of its size and `begin` operands), its operands replaced.
    unsafe {
        let begin = LLVMGetArgOperand(call, 2);
        let element =
            (!LLVMIsAGetElementPtrInst(begin).is_null() && LLVMGetNumOperands(begin) == 2).then_some(begin);
        let data = element.map_or(begin, |element| LLVMGetOperand(element, 0));
        if LLVMIsALoadInst(data).is_null() {
            return false;
        }
        let address = LLVMGetOperand(data, 0);
        let Some(rank) = descriptor_rank_at(address) else { return false };
        if (rank > 0) != element.is_some() || is_attachment(LLVMGetArgOperand(call, 4)) {
            return false;
        }
        let callee = LLVMGetCalledValue(call);
        let static_size = LLVMGetArgOperand(call, 3);
        let i64 = LLVMTypeOf(static_size);
        let context = LLVMGetTypeContext(i64);
        let elem_len = |builder: LLVMBuilderRef, i64: LLVMTypeRef| {
            let mut eight = [LLVMConstInt(i64, 8, 0)];
            let field = LLVMBuildInBoundsGEP2(
                builder,
                LLVMInt8TypeInContext(context),
                address,
                eight.as_mut_ptr(),
                1,
                c"".as_ptr(),
            );
            LLVMBuildLoad2(builder, i64, field, c"elem_len".as_ptr())
        };
        if let Some(element) = element {
            if !fix_array_size_and_start(&elem_len, element, static_size, |at| defined_before(address, at)) {
                return false;
            }
        } else {
            if constant_size(static_size).is_none() {
                return false;
            }
            let builder = LLVMCreateBuilderInContext(context);
            LLVMPositionBuilderBefore(builder, call);
            let length = elem_len(builder, i64);
            let dynamic = with_elem_len(builder, static_size, length);
            LLVMDisposeBuilder(builder);
            LLVMSetOperand(call, 3, dynamic);
        }
        // The base operand is the component's descriptor already (where `begin` was loaded from).
        LLVMSetOperand(call, 1, address);
        let runtime = dynamic_mapper(LLVMGetGlobalParent(callee));
        let callee_operand = LLVMGetNumOperands(call) - 1;
        LLVMSetOperand(call, callee_operand as u32, runtime);
        LLVMSetInstructionCallConv(call, LLVMGetFunctionCallConv(runtime));
        true
    }
}

/// Whether `value` is available at the instruction `at` without a dominance analysis: it is not
/// an instruction (a global, an argument), or it comes before `at` in `at`'s block.
unsafe fn defined_before(value: LLVMValueRef, at: LLVMValueRef) -> bool {
    // SAFETY: instruction-list walks of a valid block.
    unsafe {
        if LLVMIsAInstruction(value).is_null() {
            return true;
        }
        let block = LLVMGetInstructionParent(at);
        if LLVMGetInstructionParent(value) != block {
            return false;
        }
        let mut inst = LLVMGetFirstInstruction(block);
        while !inst.is_null() && inst != at {
            if inst == value {
                return true;
            }
            inst = LLVMGetNextInstruction(inst);
        }
        false
    }
}

/// Whether a component's map type is an attachment's (its size the descriptor's, its data mapped
/// by the component before it): the constant, or every constant a `phi` of flang's chooses from.
unsafe fn is_attachment(map_type: LLVMValueRef) -> bool {
    // SAFETY: operand queries on a valid value.
    unsafe {
        let attaches =
            |v: LLVMValueRef| !LLVMIsAConstantInt(v).is_null() && LLVMConstIntGetZExtValue(v) & ATTACH != 0;
        if LLVMIsAPHINode(map_type).is_null() {
            return attaches(map_type);
        }
        let incoming = LLVMCountIncoming(map_type);
        incoming > 0 && (0..incoming).all(|i| attaches(LLVMGetIncomingValue(map_type, i)))
    }
}

/// The constant in flang's size of a scalar polymorphic object: the size itself, or the last
/// operand of the `select` that makes it 0 for an unallocated object. None where the size is
/// computed (a flang that maps the dynamic size already).
unsafe fn constant_size(size: LLVMValueRef) -> Option<LLVMValueRef> {
    // SAFETY: operand queries on a valid value.
    unsafe {
        let constant = if LLVMIsASelectInst(size).is_null() { size } else { LLVMGetOperand(size, 2) };
        (!LLVMIsAConstantInt(constant).is_null()).then_some(constant)
    }
}

/// `size` ([`constant_size`]) with `elem_len` for its constant, built at the builder's position.
unsafe fn with_elem_len(builder: LLVMBuilderRef, size: LLVMValueRef, elem_len: LLVMValueRef) -> LLVMValueRef {
    // SAFETY: a select built from a valid select's operands.
    unsafe {
        if LLVMIsASelectInst(size).is_null() {
            return elem_len;
        }
        LLVMBuildSelect(builder, LLVMGetOperand(size, 0), LLVMGetOperand(size, 1), elem_len, c"".as_ptr())
    }
}

/// Makes [`MAP_POLYMORPHIC`] the entry's mapper and `descriptor` its base. True.
unsafe fn use_dynamic_mapper(
    mapper_store: LLVMValueRef,
    base_store: LLVMValueRef,
    descriptor: &Descriptor,
) -> bool {
    // SAFETY: the descriptor's address built before the base store, whose operand it replaces;
    // the mapper store's operand replaced by a function of the module.
    unsafe {
        let builder = LLVMCreateBuilderInContext(LLVMGetTypeContext(descriptor.base_type));
        LLVMPositionBuilderBefore(builder, base_store);
        let address = descriptor.address(builder);
        LLVMDisposeBuilder(builder);
        LLVMSetOperand(base_store, 0, address);
        let module = LLVMGetGlobalParent(LLVMGetBasicBlockParent(LLVMGetInstructionParent(mapper_store)));
        LLVMSetOperand(mapper_store, 0, dynamic_mapper(module));
        true
    }
}

/// The module's declaration of [`MAP_POLYMORPHIC`] (`void (ptr, ptr, ptr, i64, i64, ptr)`),
/// added if it has none.
unsafe fn dynamic_mapper(module: LLVMModuleRef) -> LLVMValueRef {
    // SAFETY: a function looked up or added in a valid module.
    unsafe {
        let existing = LLVMGetNamedFunction(module, MAP_POLYMORPHIC.as_ptr());
        if !existing.is_null() {
            return existing;
        }
        let context = LLVMGetModuleContext(module);
        let ptr = LLVMPointerTypeInContext(context, 0);
        let i64 = LLVMInt64TypeInContext(context);
        let mut parameters = [ptr, ptr, ptr, i64, i64, ptr];
        let ty = LLVMFunctionType(LLVMVoidTypeInContext(context), parameters.as_mut_ptr(), 6, 0);
        LLVMAddFunction(module, MAP_POLYMORPHIC.as_ptr(), ty)
    }
}

/// Drops the entry's mapper, if it has one (`fix_entry` checked that it maps in place). True.
unsafe fn drop_mapper(mapper_store: Option<LLVMValueRef>, mapper: Option<LLVMValueRef>) -> bool {
    // SAFETY: an operand of a valid store replaced by a null of its type.
    unsafe {
        if let (Some(store), Some(mapper)) = (mapper_store, mapper) {
            LLVMSetOperand(store, 0, LLVMConstNull(LLVMTypeOf(mapper)));
        }
    }
    true
}

/// An array's entry: flang computes its size as the element count times the declared type's size
/// (`mul i64 %count, <size>`, then `select`s for an empty and an unallocated array) and its
/// first element's address as `getelementptr <declared type>, ptr %base, i64 %first` (flang 23;
/// flang 24 offsets bytes by the descriptor's stride, `getelementptr i8, ptr %base, i64 %bytes`,
/// which is right and stays). Both become the descriptor's `elem_len`'s: `mul i64 %count,
/// %elem_len`, `getelementptr i8, ptr %base, i64 (%first * %elem_len)`. Returns whether it found
/// the size and changed what was wrong.
unsafe fn fix_array_entry(descriptor: &Descriptor, element: LLVMValueRef, size: LLVMValueRef) -> bool {
    // SAFETY: `elem_len` builds a load of the descriptor's field at the builder's position.
    unsafe {
        fix_array_size_and_start(
            &|builder, i64| descriptor.elem_len(builder, i64),
            element,
            LLVMGetOperand(size, 0),
            |_| true,
        )
    }
}

/// [`fix_array_entry`]'s change, for a size `size` (the value, not its store), with `elem_len`
/// building the load of the descriptor's `elem_len` at a builder's position. `reaches` says
/// whether the descriptor's address is available at an instruction (the multiplication's): where
/// it is not, nothing changes.
unsafe fn fix_array_size_and_start(
    elem_len: &dyn Fn(LLVMBuilderRef, LLVMTypeRef) -> LLVMValueRef,
    element: LLVMValueRef,
    size: LLVMValueRef,
    reaches: impl Fn(LLVMValueRef) -> bool,
) -> bool {
    // SAFETY: operand queries on valid instructions; new instructions before the ones changed.
    unsafe {
        // The multiplication under the selects: the size's last operand, repeatedly.
        let mut value = size;
        while !LLVMIsASelectInst(value).is_null() {
            value = LLVMGetOperand(value, 2);
        }
        let is_mul = !LLVMIsABinaryOperator(value).is_null()
            && LLVMGetInstructionOpcode(value) == crate::llvm::LLVMOpcode::LLVMMul;
        if !is_mul || LLVMIsAConstantInt(LLVMGetOperand(value, 1)).is_null() || !reaches(value) {
            return false;
        }
        let declared = LLVMGetOperand(value, 1);
        let context = LLVMGetTypeContext(LLVMTypeOf(declared));
        let i64 = LLVMTypeOf(declared);
        let builder = LLVMCreateBuilderInContext(context);
        LLVMPositionBuilderBefore(builder, value);
        LLVMSetOperand(value, 1, elem_len(builder, i64));
        let source = LLVMGetGEPSourceElementType(element);
        let in_bytes =
            LLVMGetTypeKind(source) == LLVMTypeKind::LLVMIntegerTypeKind && LLVMGetIntTypeWidth(source) == 8;
        if !in_bytes {
            LLVMPositionBuilderBefore(builder, element);
            let length = elem_len(builder, i64);
            let first = LLVMBuildSExtOrBitCast(builder, LLVMGetOperand(element, 1), i64, c"".as_ptr());
            let mut offset = [LLVMBuildMul(builder, first, length, c"".as_ptr())];
            let address = LLVMBuildInBoundsGEP2(
                builder,
                LLVMInt8TypeInContext(context),
                LLVMGetOperand(element, 0),
                offset.as_mut_ptr(),
                1,
                c"".as_ptr(),
            );
            LLVMReplaceAllUsesWith(element, address);
            LLVMInstructionEraseFromParent(element);
        }
        LLVMDisposeBuilder(builder);
        true
    }
}

/// Whether the default mapper `mapper` only maps data in place: it loads no pointer (it follows
/// no allocatable or pointer component) and calls only the mapper API.
unsafe fn maps_in_place(mapper: LLVMValueRef) -> bool {
    // SAFETY: reads of a defined function's instructions.
    unsafe {
        if LLVMIsDeclaration(mapper) != 0 {
            return false;
        }
        instructions(mapper).all(|inst| {
            if !LLVMIsALoadInst(inst).is_null() {
                return LLVMGetTypeKind(LLVMTypeOf(inst)) != LLVMTypeKind::LLVMPointerTypeKind;
            }
            if LLVMIsACallInst(inst).is_null() {
                return true;
            }
            let callee = LLVMGetCalledValue(inst);
            value_name_bytes(callee)
                .is_some_and(|n| n == b"__tgt_push_mapper_component" || n == b"__tgt_mapper_num_components")
        })
    }
}

/// A polymorphic descriptor whose base address an entry maps: where it is (a value defined
/// wherever the entry's size is stored, or, for a component, the base that the constant
/// `path` of field indices leads from), its type, and its rank.
struct Descriptor {
    base: LLVMValueRef,
    base_type: LLVMTypeRef,
    path: Vec<u64>,
    rank: u32,
}

impl Descriptor {
    /// The descriptor's address, built at the builder's position.
    unsafe fn address(&self, builder: LLVMBuilderRef) -> LLVMValueRef {
        // SAFETY: as `field`.
        unsafe { self.field(builder, &[]) }
    }

    /// Loads the descriptor's `elem_len` (its second word) at the builder's position.
    unsafe fn elem_len(&self, builder: LLVMBuilderRef, i64: LLVMTypeRef) -> LLVMValueRef {
        // SAFETY: a field address of the descriptor, and a load from it.
        unsafe {
            let field = self.field(builder, &[1]);
            LLVMBuildLoad2(builder, i64, field, c"elem_len".as_ptr())
        }
    }

    /// The address of the descriptor's field at `inner` (none: the descriptor itself), built at
    /// the builder's position.
    unsafe fn field(&self, builder: LLVMBuilderRef, inner: &[u64]) -> LLVMValueRef {
        // SAFETY: a field address of a value of this type.
        unsafe {
            if self.path.is_empty() && inner.is_empty() {
                return self.base;
            }
            let i32 = LLVMInt32TypeInContext(LLVMGetTypeContext(self.base_type));
            let mut indices: Vec<LLVMValueRef> = std::iter::once(0)
                .chain(self.path.iter().copied())
                .chain(inner.iter().copied())
                .map(|i| LLVMConstInt(i32, i, 0))
                .collect();
            LLVMBuildInBoundsGEP2(
                builder,
                self.base_type,
                self.base,
                indices.as_mut_ptr(),
                indices.len() as u32,
                c"".as_ptr(),
            )
        }
    }
}

/// The polymorphic descriptor ([`Descriptor`]) whose base address a load from `address` reads:
/// a global or local variable, or an argument's (flang copies a `class(...)` dummy argument's
/// descriptor into a local one), either the descriptor itself or a component of a derived type
/// (`getelementptr <type>, ptr %d, 0, <field>...` with constant indices, or the variable itself
/// where the component is its first field, at offset 0).
unsafe fn descriptor_of(address: LLVMValueRef) -> Option<Descriptor> {
    // SAFETY: type and operand queries on valid values.
    unsafe {
        let defined_everywhere = |v: LLVMValueRef| {
            !LLVMIsAAllocaInst(v).is_null()
                || !LLVMIsAGlobalVariable(v).is_null()
                || !LLVMIsAArgument(v).is_null()
        };
        let (base, base_type, path) = if !LLVMIsAGlobalVariable(address).is_null() {
            (address, LLVMGlobalGetValueType(address), Vec::new())
        } else if !LLVMIsAAllocaInst(address).is_null() {
            (address, LLVMGetAllocatedType(address), Vec::new())
        } else if !LLVMIsAGetElementPtrInst(address).is_null() && LLVMGetNumOperands(address) >= 3 {
            let base = LLVMGetOperand(address, 0);
            let first = LLVMGetOperand(address, 1);
            if !defined_everywhere(base)
                || LLVMIsAConstantInt(first).is_null()
                || LLVMConstIntGetZExtValue(first) != 0
            {
                return None;
            }
            let mut path = Vec::new();
            for i in 2..LLVMGetNumOperands(address) as u32 {
                let index = LLVMGetOperand(address, i);
                if LLVMIsAConstantInt(index).is_null() {
                    return None;
                }
                path.push(LLVMConstIntGetZExtValue(index));
            }
            (base, LLVMGetGEPSourceElementType(address), path)
        } else {
            return None;
        };
        let (path, rank) = descriptor_path(base_type, path)?;
        Some(Descriptor { base, base_type, path, rank })
    }
}

/// The field path from a value of `ty` to the polymorphic descriptor that `path` (constant
/// `getelementptr` indices after the first) addresses, and its rank: down `path` (the address of
/// a descriptor's first field is the descriptor's), then down first fields (a component at
/// offset 0).
unsafe fn descriptor_path(ty: LLVMTypeRef, mut path: Vec<u64>) -> Option<(Vec<u64>, u32)> {
    // SAFETY: type queries on a valid type.
    unsafe {
        let mut ty = ty;
        for (at, &index) in path.iter().enumerate() {
            if at + 1 == path.len() && index == 0 {
                if let Some(rank) = polymorphic_descriptor_rank(ty) {
                    path.pop();
                    return Some((path, rank));
                }
            }
            ty = match LLVMGetTypeKind(ty) {
                LLVMTypeKind::LLVMStructTypeKind if (index as u32) < LLVMCountStructElementTypes(ty) => {
                    LLVMStructGetTypeAtIndex(ty, index as u32)
                }
                LLVMTypeKind::LLVMArrayTypeKind => LLVMGetElementType(ty),
                _ => return None,
            };
        }
        loop {
            if let Some(rank) = polymorphic_descriptor_rank(ty) {
                return Some((path, rank));
            }
            if LLVMGetTypeKind(ty) != LLVMTypeKind::LLVMStructTypeKind || LLVMCountStructElementTypes(ty) == 0
            {
                return None;
            }
            ty = LLVMStructGetTypeAtIndex(ty, 0);
            path.push(0);
        }
    }
}

/// The rank of the polymorphic descriptor at `address` (a variable, or a constant field address
/// of one, of any base), if that is what it is.
unsafe fn descriptor_rank_at(address: LLVMValueRef) -> Option<u32> {
    // SAFETY: type and operand queries on valid values.
    unsafe {
        let (ty, path) = if !LLVMIsAGlobalVariable(address).is_null() {
            (LLVMGlobalGetValueType(address), Vec::new())
        } else if !LLVMIsAAllocaInst(address).is_null() {
            (LLVMGetAllocatedType(address), Vec::new())
        } else if !LLVMIsAGetElementPtrInst(address).is_null() && LLVMGetNumOperands(address) >= 3 {
            let mut path = Vec::new();
            for i in 1..LLVMGetNumOperands(address) as u32 {
                let index = LLVMGetOperand(address, i);
                if LLVMIsAConstantInt(index).is_null() {
                    return None;
                }
                path.push(LLVMConstIntGetZExtValue(index));
            }
            if path.remove(0) != 0 {
                return None;
            }
            (LLVMGetGEPSourceElementType(address), path)
        } else {
            return None;
        };
        descriptor_path(ty, path).map(|(_, rank)| rank)
    }
}

/// The rank of `ty` if it is flang's polymorphic descriptor: `{ptr, i64, i32, i8, i8, i8, i8,
/// [rank x [3 x i64]], ptr, [1 x i64]}` (base address, `elem_len`, version, rank, type,
/// attribute, extra, the dimensions of an array's, then the addendum: the type descriptor and
/// one word).
unsafe fn polymorphic_descriptor_rank(ty: LLVMTypeRef) -> Option<u32> {
    // SAFETY: type queries on a valid type.
    unsafe {
        let at = addendum_field(ty)?;
        if LLVMCountStructElementTypes(ty) != at + 2
            || LLVMGetTypeKind(LLVMStructGetTypeAtIndex(ty, at + 1)) != LLVMTypeKind::LLVMArrayTypeKind
        {
            return None;
        }
        Some(if at == 8 { LLVMGetArrayLength2(LLVMStructGetTypeAtIndex(ty, 7)) as u32 } else { 0 })
    }
}

/// The (array, index) a store to `address` writes: `getelementptr [N x T], ptr %array, 0, i`
/// with constant indices, or the array itself (index 0), the array an `alloca`.
unsafe fn array_element(address: LLVMValueRef) -> Option<(LLVMValueRef, u64)> {
    // SAFETY: operand queries on valid values.
    unsafe {
        if !LLVMIsAAllocaInst(address).is_null() {
            return Some((address, 0));
        }
        if LLVMIsAGetElementPtrInst(address).is_null() || LLVMGetNumOperands(address) != 3 {
            return None;
        }
        let array = LLVMGetOperand(address, 0);
        let (first, index) = (LLVMGetOperand(address, 1), LLVMGetOperand(address, 2));
        if LLVMIsAAllocaInst(array).is_null()
            || LLVMIsAConstantInt(first).is_null()
            || LLVMIsAConstantInt(index).is_null()
        {
            return None;
        }
        (LLVMConstIntGetZExtValue(first) == 0).then(|| (array, LLVMConstIntGetZExtValue(index)))
    }
}

/// What an offload call maps with: its pointers and sizes arrays (their `alloca`s), its map
/// types (a constant array), and its mappers array (none when the call passes null: no entry has
/// a mapper).
struct Offload {
    call: LLVMValueRef,
    /// Where a call that passes no mappers array passes null: (the instruction, its operand),
    /// the store into the kernel arguments' field or the data call itself.
    mappers_use: Option<(LLVMValueRef, u32)>,
    bases: Option<LLVMValueRef>,
    pointers: LLVMValueRef,
    sizes: LLVMValueRef,
    map_types: LLVMValueRef,
    mappers: Option<LLVMValueRef>,
}

/// What `call` maps with, if it is an offload call: `__tgt_target_kernel` takes the arrays in
/// its arguments structure (stored before the call), `__tgt_target_data_*_mapper` as operands.
unsafe fn offload_arrays(call: LLVMValueRef, stores: &Stores) -> Option<Offload> {
    // SAFETY: operand queries on a valid call and the stores before it.
    unsafe {
        let name = value_name_bytes(LLVMGetCalledValue(call))?;
        let array_of =
            |value: LLVMValueRef| array_element(value).and_then(|(array, i)| (i == 0).then_some(array));
        let ([b, p, s, t, m], mappers_use) =
            if name == b"__tgt_target_kernel" && LLVMGetNumArgOperands(call) == 6 {
                let arguments = LLVMGetOperand(call, 5);
                let store_of = |k: u64| -> Option<LLVMValueRef> {
                    let [store] = stores.get(&(arguments, k))?.as_slice() else { return None };
                    Some(*store)
                };
                let field = |k: u64| store_of(k).map(|store| LLVMGetOperand(store, 0));
                let [b, p, s, t, m] = KERNEL_ARGUMENT_FIELDS;
                let values =
                    [field(b).unwrap_or(std::ptr::null_mut()), field(p)?, field(s)?, field(t)?, field(m)?];
                (values, store_of(m).map(|store| (store, 0)))
            } else if name.starts_with(b"__tgt_target_data_")
                && name.ends_with(b"_mapper")
                && LLVMGetNumArgOperands(call) >= 9
            {
                (DATA_MAPPER_OPERANDS.map(|i| LLVMGetOperand(call, i)), Some((call, DATA_MAPPER_OPERANDS[4])))
            } else {
                return None;
            };
        if LLVMIsAGlobalVariable(t).is_null() || LLVMIsGlobalConstant(t) == 0 {
            return None;
        }
        let map_types = LLVMGetInitializer(t);
        let mappers = if LLVMIsNull(m) != 0 { None } else { Some(array_of(m)?) };
        (!map_types.is_null()).then_some(Offload {
            call,
            mappers_use,
            bases: if b.is_null() { None } else { array_of(b) },
            pointers: array_of(p)?,
            sizes: array_of(s)?,
            map_types,
            mappers,
        })
    }
}

/// The map type of entry `index` in the constant array `map_types`, if it says.
unsafe fn map_type(map_types: LLVMValueRef, index: u64) -> Option<u64> {
    // SAFETY: queries on a valid constant.
    unsafe {
        if LLVMIsAConstantDataArray(map_types).is_null()
            || index >= LLVMGetArrayLength2(LLVMTypeOf(map_types))
        {
            return None;
        }
        let element = LLVMGetAggregateElement(map_types, index as u32);
        (!element.is_null() && !LLVMIsAConstantInt(element).is_null())
            .then(|| LLVMConstIntGetZExtValue(element))
    }
}
