//! Fortran's type inquiries, `same_type_as` and `extends_type_of`, on objects the host built.
//!
//! flang lowers both intrinsics to calls of its runtime (`_FortranASameTypeAs`,
//! `_FortranAExtendsTypeOf`), which read each argument's type descriptor from the addendum of
//! its descriptor. An object the host built and mapped carries the *host's* type descriptor:
//! the strict device (and a GPU) faults there, and a GPU has no flang runtime to link at all.
//! The pass plugin routes such calls in device code to [`__omptarget_indirect_same_type_as`] and
//! [`__omptarget_indirect_extends_type_of`], which answer as flang 23's runtime does
//! (`flang-rt/lib/runtime/derived-api.cpp`) with every type-descriptor pointer they read
//! translated through the table, as the pass translates the loads it sees: the table pairs the
//! host's type descriptors with the device's word by word, like vtables.
//!
//! The layouts are flang's (`ISO_Fortran_binding.h`, `flang-rt/runtime/type-info.h`), as flang
//! 23 emits them in LLVM IR (`%_QM__fortran_type_infoTderivedtype`, 440 bytes); the offsets
//! below are recorded in `docs/fortran.md`.

use core::ffi::c_void;

use crate::exports::translate_installed;

/// `CFI_type_struct`: a derived type.
const TYPE_STRUCT: i8 = 42;
/// `CFI_type_other`: an unlimited polymorphic entity (`class(*)`).
const TYPE_OTHER: i8 = -1;
/// `CFI_attribute_pointer`.
const ATTRIBUTE_POINTER: u8 = 1;
/// `CFI_attribute_allocatable`.
const ATTRIBUTE_ALLOCATABLE: u8 = 2;
/// The bit of `extra` that says the descriptor has an addendum (`_CFI_ADDENDUM_FLAG`).
const HAS_ADDENDUM: u8 = 1;
/// The bytes of one dimension (`CFI_dim_t`: lower bound, extent, stride).
const DIMENSION_BYTES: usize = 24;
/// `DerivedType::uninstantiated_`'s base address: the type a parameterized instantiation came
/// from (null without KIND parameters).
const UNINSTANTIATED: usize = 96;
/// `DerivedType::component_`'s base address: the components, the parent's first.
const COMPONENTS: usize = 232;
/// `DerivedType::hasParent_`.
const HAS_PARENT: usize = 428;
/// `Component::derivedType_`'s base address.
const COMPONENT_DERIVED_TYPE: usize = 56;
/// More ancestors than any program declares: a chain this long is not a type's, and ends the
/// walk (the answer is then `false`).
const MOST_ANCESTORS: u32 = 4096;

/// A Fortran descriptor's header (`CFI_cdesc_t` up to its dimensions).
#[repr(C)]
pub struct Descriptor {
    base_addr: *const c_void,
    _elem_len: u64,
    _version: i32,
    rank: u8,
    type_code: i8,
    attribute: u8,
    extra: u8,
}

impl Descriptor {
    fn is_pointer(&self) -> bool {
        self.attribute == ATTRIBUTE_POINTER
    }

    fn is_allocatable(&self) -> bool {
        self.attribute == ATTRIBUTE_ALLOCATABLE
    }

    /// `IsAllocated` and `IsAssociated` alike: the base address is set.
    fn has_data(&self) -> bool {
        !self.base_addr.is_null()
    }

    fn is_derived(&self) -> bool {
        self.type_code == TYPE_STRUCT || self.type_code == TYPE_OTHER
    }
}

/// The device's type descriptor of `descriptor`'s dynamic type: its addendum's, translated
/// (a host-built object's is the host's); null without one.
///
/// # Safety
/// `descriptor` points to a whole descriptor (its dimensions and addendum included).
#[inline(always)]
unsafe fn derived_type(descriptor: &Descriptor) -> *const u8 {
    if descriptor.extra & HAS_ADDENDUM == 0 {
        return core::ptr::null();
    }
    let offset = core::mem::size_of::<Descriptor>() + DIMENSION_BYTES * usize::from(descriptor.rank);
    // SAFETY: the addendum follows the dimensions, its first word the type descriptor's address
    // (the precondition: the descriptor is whole).
    let host = unsafe { *(core::ptr::from_ref(descriptor).cast::<u8>().add(offset).cast::<*mut c_void>()) };
    if host.is_null() {
        return core::ptr::null();
    }
    // SAFETY: the translation reads only the installed table.
    unsafe { translate_installed(host).cast_const().cast() }
}

/// The pointer at `offset` in the type descriptor `derived`.
///
/// # Safety
/// `derived` is a type descriptor flang emitted (the device's).
unsafe fn word_at(derived: *const u8, offset: usize) -> *const u8 {
    // SAFETY: the precondition; every offset used is inside the 440-byte descriptor.
    unsafe { *derived.add(offset).cast::<*const u8>() }
}

/// The parent type's descriptor of `derived`, null when it extends none
/// (`DerivedType::GetParentType`).
///
/// # Safety
/// As for [`word_at`].
unsafe fn parent_type(derived: *const u8) -> *const u8 {
    // SAFETY: the precondition; the parent is the first component, whose type descriptor is the
    // device's (the device's descriptors point at each other).
    unsafe {
        if *derived.add(HAS_PARENT) == 0 {
            return core::ptr::null();
        }
        let components = word_at(derived, COMPONENTS);
        if components.is_null() {
            return core::ptr::null();
        }
        word_at(components, COMPONENT_DERIVED_TYPE)
    }
}

/// `same_type_as(a, b)` as flang 23's runtime answers it (`_FortranASameTypeAs`), the type
/// descriptors read through the translation.
///
/// # Safety
/// `a` and `b` point to whole descriptors, as flang passes them to its runtime; the type
/// descriptors they lead to (through the table) are flang's.
#[no_mangle]
pub unsafe extern "C" fn __omptarget_indirect_same_type_as(
    a: *const Descriptor,
    b: *const Descriptor,
) -> bool {
    // SAFETY: the caller's contract.
    let (a, b) = unsafe { (&*a, &*b) };
    if !a.is_derived() || !b.is_derived() {
        return a.type_code == b.type_code;
    }
    // SAFETY: the caller's contract.
    let (type_a, type_b) = unsafe { (derived_type(a), derived_type(b)) };
    if type_a.is_null() || type_b.is_null() {
        return false;
    }
    if type_a == type_b {
        return true;
    }
    // SAFETY: both are the device's type descriptors (the caller's contract).
    let uninstantiated_a = unsafe { word_at(type_a, UNINSTANTIATED) };
    // Types with KIND parameters are the same type when they came from the same one.
    // SAFETY: as above.
    !uninstantiated_a.is_null() && uninstantiated_a == unsafe { word_at(type_b, UNINSTANTIATED) }
}

/// `extends_type_of(a, mold)` as flang 23's runtime answers it (`_FortranAExtendsTypeOf`,
/// including its test of `mold`'s association where `a` is a pointer), the type descriptors read
/// through the translation.
///
/// # Safety
/// As for [`__omptarget_indirect_same_type_as`].
#[no_mangle]
pub unsafe extern "C" fn __omptarget_indirect_extends_type_of(
    a: *const Descriptor,
    mold: *const Descriptor,
) -> bool {
    // SAFETY: the caller's contract.
    let (a, mold) = unsafe { (&*a, &*mold) };
    if (mold.is_pointer() || mold.is_allocatable()) && !mold.has_data() {
        return true;
    }
    if (a.is_pointer() && !mold.has_data()) || (a.is_allocatable() && !a.has_data()) {
        return false;
    }
    if a.type_code != TYPE_STRUCT || mold.type_code != TYPE_STRUCT {
        return a.type_code != TYPE_OTHER && mold.type_code != TYPE_OTHER && a.type_code == mold.type_code;
    }
    // SAFETY: the caller's contract.
    let (mut ancestor, of_mold) = unsafe { (derived_type(a), derived_type(mold)) };
    if of_mold.is_null() {
        return true;
    }
    let mut steps = 0;
    while !ancestor.is_null() && steps < MOST_ANCESTORS {
        if ancestor == of_mold {
            return true;
        }
        // SAFETY: a device type descriptor, and its parent's.
        ancestor = unsafe { parent_type(ancestor) };
        steps += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type descriptor laid out as flang 23's: 440 bytes, its parent (if any) the first
    /// component's type.
    #[repr(C, align(8))]
    struct TypeDescriptor([u8; 440]);

    /// A component laid out as flang 23's, up to its type descriptor's address.
    #[repr(C, align(8))]
    struct Component([u8; 96]);

    fn type_descriptor(parent: Option<(&TypeDescriptor, &mut Component)>) -> TypeDescriptor {
        let mut bytes = [0u8; 440];
        if let Some((parent, component)) = parent {
            component.0[COMPONENT_DERIVED_TYPE..COMPONENT_DERIVED_TYPE + 8]
                .copy_from_slice(&(core::ptr::from_ref(parent) as usize).to_ne_bytes());
            bytes[COMPONENTS..COMPONENTS + 8]
                .copy_from_slice(&(core::ptr::from_ref(component) as usize).to_ne_bytes());
            bytes[HAS_PARENT] = 1;
        }
        TypeDescriptor(bytes)
    }

    /// A scalar descriptor with an addendum: the header, then the type descriptor's address.
    #[repr(C)]
    struct Scalar {
        header: Descriptor,
        derived: *const TypeDescriptor,
        _parameters: u64,
    }

    fn object(derived: &TypeDescriptor, attribute: u8, data: bool) -> Scalar {
        Scalar {
            header: Descriptor {
                base_addr: if data { core::ptr::from_ref(derived).cast() } else { core::ptr::null() },
                _elem_len: 8,
                _version: 20240719,
                rank: 0,
                type_code: TYPE_STRUCT,
                attribute,
                extra: HAS_ADDENDUM,
            },
            derived,
            _parameters: 0,
        }
    }

    #[test]
    fn inquiries_answer_as_flangs_runtime_on_a_chain_of_extensions() {
        let base = type_descriptor(None);
        let mut first = Component([0; 96]);
        let square = type_descriptor(Some((&base, &mut first)));
        let mut second = Component([0; 96]);
        let cube = type_descriptor(Some((&square, &mut second)));
        let other = type_descriptor(None);
        let [b, s, c, o] = [&base, &square, &cube, &other].map(|t| object(t, ATTRIBUTE_ALLOCATABLE, true));
        let same = |x: &Scalar, y: &Scalar| {
            // SAFETY: whole descriptors, leading to type descriptors laid out as flang's (no table
            // is installed: the translation answers each address with itself).
            unsafe { __omptarget_indirect_same_type_as(&x.header, &y.header) }
        };
        let extends = |x: &Scalar, y: &Scalar| {
            // SAFETY: as above.
            unsafe { __omptarget_indirect_extends_type_of(&x.header, &y.header) }
        };
        assert!(same(&c, &c) && !same(&c, &s) && !same(&b, &o));
        assert!(extends(&c, &b) && extends(&c, &s) && extends(&c, &c) && extends(&s, &b));
        assert!(!extends(&b, &c) && !extends(&c, &o) && !extends(&o, &b));
        // An unallocated mold is extended by anything; an unallocated A extends nothing.
        let unallocated = object(&base, ATTRIBUTE_ALLOCATABLE, false);
        assert!(extends(&c, &unallocated) && !extends(&unallocated, &b));
        // Intrinsic types: the same when their codes are.
        let mut integer = object(&base, 0, true);
        integer.header.type_code = 9;
        integer.header.extra = 0;
        assert!(same(&integer, &integer) && !same(&integer, &c) && extends(&integer, &integer));
    }
}
