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
//! `__tgt_target_data_{begin,end,update}[_nowait]_mapper`) that maps the data of a scalar
//! polymorphic descriptor (its pointer entry the base address loaded from a descriptor with a
//! type-descriptor addendum: a variable's, or the local copy flang makes of a dummy argument's)
//! with a constant size, through a default mapper or none:
//!
//! - the size becomes the descriptor's `elem_len`, read where flang stores the size (`0` still
//!   for an unallocated object, as flang's `select` had it);
//! - the mapper is dropped, when all it does is map the declared type's own components in place
//!   (no pointer loads: no allocatable or pointer component to follow): libomptarget then maps
//!   the object's bytes, all of them. An entry whose mapper follows components is left as flang
//!   made it.
//!
//! A flang that maps the dynamic size already (a size that is not a constant) is left alone, so
//! the fix is never applied twice. Arrays of polymorphic objects and polymorphic components are
//! not covered (`docs/fortran.md`).

use std::collections::HashMap;

use crate::fortran_dispatch::addendum_field;
use crate::ir::{instructions, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMTypeKind;

/// `OMPTARGET_INDIRECT_POLYMORPHIC_MAPS=0` in the compiler's environment leaves flang's map
/// sizes as they are (the negative control).
pub const SWITCH: &str = "OMPTARGET_INDIRECT_POLYMORPHIC_MAPS";

/// `__tgt_kernel_arguments`' fields holding the pointers, sizes, map types and mappers arrays.
const KERNEL_ARGUMENT_FIELDS: [u64; 4] = [3, 4, 5, 7];
/// The operands of `__tgt_target_data_*_mapper` that are those arrays.
const DATA_MAPPER_OPERANDS: [u32; 4] = [4, 5, 6, 8];

/// libomptarget's map-type bit of an entry that attaches a pointer to data mapped by another
/// entry (its size is the pointer's, not the data's): left alone.
const MAP_ATTACH: u64 = 0x4000;

/// Gives the map entries of scalar polymorphic objects their dynamic type's size (module
/// documentation). Returns how many entries it changed.
///
/// # Safety
/// `module` must be a valid host module that no one else accesses during the call.
pub unsafe fn map_dynamic_sizes(module: LLVMModuleRef) -> usize {
    // SAFETY: instructions of the module's functions, collected per function before any change;
    // the changes replace store operands and add loads before those stores.
    unsafe {
        if std::env::var_os(SWITCH).is_some_and(|value| value == "0") {
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
        for inst in instructions(function) {
            if !LLVMIsAStoreInst(inst).is_null() {
                if let Some(slot) = array_element(LLVMGetOperand(inst, 1)) {
                    stores.entry(slot).or_default().push(inst);
                }
            } else if !LLVMIsACallInst(inst).is_null() {
                if let Some(arrays) = offload_arrays(inst, &stores) {
                    offloads.push(arrays);
                }
            }
        }
        let mut changed = 0;
        for Offload { pointers, sizes, map_types, mappers } in offloads {
            let entries: Vec<u64> =
                stores.keys().filter(|&&(array, _)| array == pointers).map(|&(_, index)| index).collect();
            for index in entries {
                let (Some(pointer), Some(size)) =
                    (only(&stores, pointers, index), only(&stores, sizes, index))
                else {
                    continue;
                };
                if map_type(map_types, index).is_none_or(|t| t & MAP_ATTACH != 0) {
                    continue;
                }
                // No mappers array: no entry has a mapper.
                let mapper_store = match mappers {
                    Some(mappers) => match only(&stores, mappers, index) {
                        Some(store) => Some(store),
                        None => continue,
                    },
                    None => None,
                };
                if fix_entry(pointer, size, mapper_store) {
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

/// Changes the entry whose pointer, size and mapper these stores write, if it maps a scalar
/// polymorphic object with a constant size through a default mapper that only maps the declared
/// type's components in place.
unsafe fn fix_entry(pointer: LLVMValueRef, size: LLVMValueRef, mapper_store: Option<LLVMValueRef>) -> bool {
    // SAFETY: operand and type queries on valid instructions; new instructions before `size`.
    unsafe {
        // The entry's mapper, to be dropped: none, or a default mapper that maps in place.
        let mapper = mapper_store.map(|store| LLVMGetOperand(store, 0)).filter(|m| LLVMIsNull(*m) == 0);
        if let Some(mapper) = mapper {
            let is_default_mapper = !LLVMIsAFunction(mapper).is_null()
                && value_name_bytes(mapper).is_some_and(|n| n.ends_with(b"_omp_default_mapper"));
            if !(is_default_mapper && maps_in_place(mapper)) {
                return false;
            }
        }
        let base = LLVMGetOperand(pointer, 0);
        if LLVMIsALoadInst(base).is_null() {
            return false;
        }
        let Some((descriptor, descriptor_type)) = descriptor_of(LLVMGetOperand(base, 0)) else {
            return false;
        };
        let static_size = LLVMGetOperand(size, 0);
        let select = !LLVMIsASelectInst(static_size).is_null();
        let constant = if select { LLVMGetOperand(static_size, 2) } else { static_size };
        if LLVMIsAConstantInt(constant).is_null() {
            return false;
        }
        let context = LLVMGetTypeContext(LLVMTypeOf(constant));
        let builder = LLVMCreateBuilderInContext(context);
        LLVMPositionBuilderBefore(builder, size);
        let i32 = LLVMInt32TypeInContext(context);
        let mut indices = [LLVMConstInt(i32, 0, 0), LLVMConstInt(i32, 1, 0)];
        let field = LLVMBuildInBoundsGEP2(
            builder,
            descriptor_type,
            descriptor,
            indices.as_mut_ptr(),
            2,
            c"".as_ptr(),
        );
        let elem_len = LLVMBuildLoad2(builder, LLVMTypeOf(constant), field, c"elem_len".as_ptr());
        let dynamic = if select {
            LLVMBuildSelect(
                builder,
                LLVMGetOperand(static_size, 0),
                LLVMGetOperand(static_size, 1),
                elem_len,
                c"".as_ptr(),
            )
        } else {
            elem_len
        };
        LLVMDisposeBuilder(builder);
        LLVMSetOperand(size, 0, dynamic);
        if let (Some(store), Some(mapper)) = (mapper_store, mapper) {
            LLVMSetOperand(store, 0, LLVMConstNull(LLVMTypeOf(mapper)));
        }
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

/// The descriptor whose base address a load from `address` reads, and its type, if it is a
/// scalar polymorphic descriptor ([`is_polymorphic_scalar_descriptor`]): a global or local
/// variable of that type, or its first field (`getelementptr <type>, ptr %d, 0, 0`) where `%d` is
/// a variable or an argument (flang copies a `class(...)` dummy argument's descriptor into a
/// local one). Those are defined wherever the size is stored.
unsafe fn descriptor_of(address: LLVMValueRef) -> Option<(LLVMValueRef, LLVMTypeRef)> {
    // SAFETY: type and operand queries on valid values.
    unsafe {
        let (descriptor, ty) = if !LLVMIsAGlobalVariable(address).is_null() {
            (address, LLVMGlobalGetValueType(address))
        } else if !LLVMIsAAllocaInst(address).is_null() {
            (address, LLVMGetAllocatedType(address))
        } else if !LLVMIsAGetElementPtrInst(address).is_null() && LLVMGetNumOperands(address) == 3 {
            let zero = |i| {
                let index = LLVMGetOperand(address, i);
                !LLVMIsAConstantInt(index).is_null() && LLVMConstIntGetZExtValue(index) == 0
            };
            let descriptor = LLVMGetOperand(address, 0);
            let defined_everywhere = !LLVMIsAAllocaInst(descriptor).is_null()
                || !LLVMIsAGlobalVariable(descriptor).is_null()
                || !LLVMIsAArgument(descriptor).is_null();
            if !(zero(1) && zero(2) && defined_everywhere) {
                return None;
            }
            (descriptor, LLVMGetGEPSourceElementType(address))
        } else {
            return None;
        };
        is_polymorphic_scalar_descriptor(ty).then_some((descriptor, ty))
    }
}

/// Whether `ty` is flang's scalar polymorphic descriptor `{ptr, i64, i32, i8, i8, i8, i8, ptr,
/// [1 x i64]}` (base address, `elem_len`, version, rank 0, type, attribute, extra, then the
/// addendum: the type descriptor, no dimensions before it, and one word).
unsafe fn is_polymorphic_scalar_descriptor(ty: LLVMTypeRef) -> bool {
    // SAFETY: type queries on a valid type.
    unsafe {
        addendum_field(ty) == Some(7)
            && LLVMCountStructElementTypes(ty) == 9
            && LLVMGetTypeKind(LLVMStructGetTypeAtIndex(ty, 8)) == LLVMTypeKind::LLVMArrayTypeKind
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
        let [p, s, t, m] = if name == b"__tgt_target_kernel" && LLVMGetNumArgOperands(call) == 6 {
            let arguments = LLVMGetOperand(call, 5);
            let field = |k: u64| -> Option<LLVMValueRef> {
                let [store] = stores.get(&(arguments, k))?.as_slice() else { return None };
                Some(LLVMGetOperand(*store, 0))
            };
            let [p, s, t, m] = KERNEL_ARGUMENT_FIELDS;
            [field(p)?, field(s)?, field(t)?, field(m)?]
        } else if name.starts_with(b"__tgt_target_data_")
            && name.ends_with(b"_mapper")
            && LLVMGetNumArgOperands(call) >= 9
        {
            DATA_MAPPER_OPERANDS.map(|i| LLVMGetOperand(call, i))
        } else {
            return None;
        };
        if LLVMIsAGlobalVariable(t).is_null() || LLVMIsGlobalConstant(t) == 0 {
            return None;
        }
        let map_types = LLVMGetInitializer(t);
        let mappers = if LLVMIsNull(m) != 0 { None } else { Some(array_of(m)?) };
        (!map_types.is_null()).then_some(Offload {
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
