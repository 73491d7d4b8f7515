//! The mapper of polymorphic Fortran objects: an object is mapped as its *dynamic* type says,
//! with the data of its allocatable components.
//!
//! flang 23 maps a `class(shape)` object through the default mapper of its declared type, which
//! knows only the declared type's components: an extension's own allocatable component (a
//! `poly`'s `coeffs(:)`) stays a host descriptor on the device. The pass plugin gives the map
//! entry of every polymorphic object in a host module [`__omptarget_indirect_map_polymorphic`]
//! as its mapper and the object's descriptor as its base; the mapper reads the dynamic type from
//! the descriptor's addendum and pushes what flang's own default mapper of that type would push
//! (flang 23's scheme, `docs/fortran.md`): per object, an entry for its bytes that its members
//! belong to, its bytes outside its allocatable components' descriptors (to and from as the map
//! says), each such descriptor (always copied to, never back: the device copy's base address is
//! the device's), the descriptor's data (mapped the same way when it is of derived type, with
//! its own dynamic type) and the attachment of the data to the device copy of the descriptor.
//! Pointer components are bytes, as flang maps them (OpenMP does not map what they point to).
//!
//! The layouts are [`omptarget_indirect_abi::fortran`]'s. Anything that does not look like a
//! flang object (no addendum, a size that is no multiple of the element's, a component table
//! beyond any program's) is mapped as the bytes the entry names, what libomptarget maps without
//! a mapper.

use std::ffi::c_void;
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;

use host_table::diagnostics;
use omptarget_indirect_abi::c_names::{MAPPER_NUM_COMPONENTS, PUSH_MAPPER_COMPONENT};
use omptarget_indirect_abi::fortran as layout;
use omptarget_indirect_abi::map_type::{
    ALWAYS, ATTACH, DELETE, FROM, IMPLICIT, MEMBER_OF_SHIFT, TARGET_PARAM, TO,
};

use crate::NAME;

/// `void __tgt_push_mapper_component(handle, base, begin, size, type, name)`.
type PushComponent = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void, i64, i64, *mut c_void);
/// `int64_t __tgt_mapper_num_components(handle)`.
type ComponentCount = unsafe extern "C" fn(*mut c_void) -> i64;

/// Objects inside objects (allocatable components of derived type), deeper than any program's:
/// beyond it the data is mapped as bytes.
const DEEPEST: u32 = 64;
/// Components of one type, more than any program declares: a table this long is not a type's.
const MOST_COMPONENTS: u64 = 1 << 16;
/// Allocatable components of one object, counted through its array components of derived type.
const MOST_ALLOCATABLES: usize = 1 << 20;

/// libomptarget's mapper API, found once in the process.
struct Runtime {
    push: PushComponent,
    count: ComponentCount,
}

fn runtime() -> Option<&'static Runtime> {
    static RUNTIME: OnceLock<Option<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            // SAFETY: dlsym with NUL-terminated names; a non-null result is libomptarget's function
            // of that name, whose signature `omptarget.h` declares as the types above say.
            unsafe {
                let push = libc::dlsym(libc::RTLD_DEFAULT, PUSH_MAPPER_COMPONENT.as_ptr());
                let count = libc::dlsym(libc::RTLD_DEFAULT, MAPPER_NUM_COMPONENTS.as_ptr());
                (!push.is_null() && !count.is_null()).then(|| Runtime {
                    push: std::mem::transmute::<*mut c_void, PushComponent>(push),
                    count: std::mem::transmute::<*mut c_void, ComponentCount>(count),
                })
            }
        })
        .as_ref()
}

/// Maps the polymorphic object (or array of them) whose descriptor is `descriptor` and whose
/// data `begin` and `size` bytes are, as a mapper does for libomptarget: with the components of
/// the dynamic type the descriptor's addendum names (module documentation). `map_type` is the
/// entry's; `name` is passed on.
///
/// # Safety
/// Called by libomptarget as an entry's mapper: `handle` is its mapper handle, `descriptor` a
/// flang descriptor of the object whose data `begin` is, readable with the type descriptors and
/// component tables it leads to.
#[no_mangle]
pub unsafe extern "C" fn __omptarget_indirect_map_polymorphic(
    handle: *mut c_void,
    descriptor: *mut c_void,
    begin: *mut c_void,
    size: i64,
    map_type: i64,
    name: *mut c_void,
) {
    static REPORTED: AtomicBool = AtomicBool::new(false);
    let Some(runtime) = runtime() else {
        diagnostics::notice_once(
            &REPORTED,
            NAME,
            "a polymorphic Fortran object is not mapped: libomptarget's mapper API \
             (__tgt_push_mapper_component) is not in this process",
        );
        return;
    };
    let mapper = Mapper { runtime, handle, name };
    // SAFETY: as the caller guarantees.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        mapper.objects(descriptor.cast(), begin.cast(), size.max(0) as u64, map_type as u64, 0)
    }));
}

/// One call's pushes.
struct Mapper {
    runtime: &'static Runtime,
    handle: *mut c_void,
    name: *mut c_void,
}

/// An allocatable component of an object: its descriptor's offset and size.
#[derive(Clone, Copy)]
struct Allocatable {
    offset: u64,
    descriptor_bytes: u64,
}

impl Mapper {
    fn push(&self, base: *mut u8, begin: *mut u8, size: u64, map_type: u64) {
        // SAFETY: libomptarget's function with the handle it gave this mapper.
        unsafe {
            (self.runtime.push)(
                self.handle,
                base.cast(),
                begin.cast(),
                size as i64,
                map_type as i64,
                self.name,
            )
        }
    }

    /// The position the next component pushed will have (1-based, as `MEMBER_OF` counts).
    fn next_position(&self) -> u64 {
        // SAFETY: as `push`.
        unsafe { (self.runtime.count)(self.handle) as u64 + 1 }
    }

    /// The objects `descriptor` describes, `size` bytes at `begin`: an array's entry for all of
    /// them first (last for a deletion), as clang's mappers push it, then each object.
    unsafe fn objects(&self, descriptor: *mut u8, begin: *mut u8, size: u64, map_type: u64, depth: u32) {
        // SAFETY: reads of the descriptor (the caller's guarantee) and of the type it leads to.
        unsafe {
            if size == 0 || begin.is_null() {
                return;
            }
            if descriptor.is_null() {
                self.push(begin, begin, size, map_type);
                return;
            }
            let elem_len = read::<u64>(descriptor, layout::DESCRIPTOR_ELEM_LEN);
            let ty = dynamic_type(descriptor);
            if ty.is_null() || elem_len == 0 || size % elem_len != 0 || depth > DEEPEST {
                self.push(descriptor, begin, size, map_type);
                return;
            }
            let count = size / elem_len;
            let whole = (map_type & !(TO | FROM)) | IMPLICIT;
            let deleting = map_type & DELETE != 0;
            // clang's rule (flang 23's adds "or the base is not the begin", which leaves a
            // scalar's entry mapped after `map(delete:)`; the base is the descriptor here).
            if count > 1 && !deleting {
                self.push(descriptor, begin, size, whole);
            }
            for k in 0..count {
                self.object(begin.add((k * elem_len) as usize), ty, elem_len, map_type, depth);
            }
            if count > 1 && deleting {
                self.push(descriptor, begin, size, whole);
            }
        }
    }

    /// One object of type `ty`, `len` bytes at `object`.
    unsafe fn object(&self, object: *mut u8, ty: *const u8, len: u64, map_type: u64, depth: u32) {
        // SAFETY: the object's bytes and its type's tables, as `objects`' caller guarantees.
        unsafe {
            let member = (self.next_position() << MEMBER_OF_SHIFT) | IMPLICIT;
            self.push(object, object, len, TARGET_PARAM);
            let mut allocatables = Vec::new();
            collect_allocatables(ty, 0, &mut allocatables, depth);
            allocatables.sort_by_key(|a| a.offset);
            allocatables.retain(|a| a.offset + a.descriptor_bytes <= len);
            let mut at = 0;
            for a in &allocatables {
                if a.offset > at {
                    self.push(
                        object.add(at as usize),
                        object.add(at as usize),
                        a.offset - at,
                        member | (map_type & (TO | FROM)),
                    );
                }
                at = at.max(a.offset + a.descriptor_bytes);
            }
            if len > at {
                self.push(
                    object.add(at as usize),
                    object.add(at as usize),
                    len - at,
                    member | (map_type & (TO | FROM)),
                );
            }
            for a in &allocatables {
                let descriptor = object.add(a.offset as usize);
                self.push(descriptor, descriptor, a.descriptor_bytes, member | ALWAYS | (map_type & TO));
                self.allocated(descriptor, a.descriptor_bytes, map_type, depth);
            }
        }
    }

    /// An allocatable component's data, if allocated, and its attachment to the descriptor.
    unsafe fn allocated(&self, descriptor: *mut u8, descriptor_bytes: u64, map_type: u64, depth: u32) {
        // SAFETY: the component's descriptor, inside the object.
        unsafe {
            let data = read::<*mut u8>(descriptor, layout::DESCRIPTOR_BASE_ADDR);
            let bytes = data_bytes(descriptor);
            if data.is_null() || bytes == 0 {
                return;
            }
            let data_map = IMPLICIT | (map_type & (TO | FROM));
            if dynamic_type(descriptor).is_null() {
                self.push(descriptor, data, bytes, data_map);
            } else {
                self.objects(descriptor, data, bytes, data_map, depth + 1);
            }
            self.push(descriptor, data, descriptor_bytes, ATTACH);
        }
    }
}

/// Reads a `T` at `offset` bytes from `base`.
///
/// # Safety
/// `base + offset` must be readable for a `T`.
unsafe fn read<T: Copy>(base: *const u8, offset: usize) -> T {
    // SAFETY: as the caller guarantees; unaligned, as flang's layouts may place fields.
    unsafe { base.add(offset).cast::<T>().read_unaligned() }
}

/// The type descriptor of a descriptor's dynamic type: its addendum's first word, for a derived
/// type's descriptor with an addendum; null otherwise.
unsafe fn dynamic_type(descriptor: *const u8) -> *const u8 {
    // SAFETY: the descriptor's header, and its addendum where the header says it has one.
    unsafe {
        let type_code = read::<i8>(descriptor, layout::DESCRIPTOR_TYPE);
        let extra = read::<u8>(descriptor, layout::DESCRIPTOR_EXTRA);
        if (type_code != layout::TYPE_STRUCT && type_code != layout::TYPE_OTHER)
            || extra & layout::HAS_ADDENDUM == 0
        {
            return std::ptr::null();
        }
        let rank = read::<u8>(descriptor, layout::DESCRIPTOR_RANK) as usize;
        read::<*const u8>(descriptor, layout::DESCRIPTOR_DIMENSIONS + rank * layout::DIMENSION_BYTES)
    }
}

/// The bytes of a contiguous descriptor's data: `elem_len` times every extent (0 for an empty
/// array).
unsafe fn data_bytes(descriptor: *const u8) -> u64 {
    // SAFETY: the descriptor's header and dimensions.
    unsafe {
        let rank = read::<u8>(descriptor, layout::DESCRIPTOR_RANK) as usize;
        let mut bytes = read::<u64>(descriptor, layout::DESCRIPTOR_ELEM_LEN);
        for d in 0..rank {
            let dimension = layout::DESCRIPTOR_DIMENSIONS + d * layout::DIMENSION_BYTES;
            let extent = read::<i64>(descriptor, dimension + layout::DIMENSION_EXTENT);
            bytes = bytes.saturating_mul(extent.max(0) as u64);
        }
        bytes
    }
}

/// The allocatable components of an object of type `ty` at `offset` bytes into the object:
/// its own, and those of its data components of derived type (the parent component is one),
/// each element's for an array component.
unsafe fn collect_allocatables(ty: *const u8, offset: u64, out: &mut Vec<Allocatable>, depth: u32) {
    // SAFETY: the type descriptor and the component table it leads to.
    unsafe {
        let table = ty.add(layout::TYPE_COMPONENTS);
        let components = read::<*const u8>(table, layout::DESCRIPTOR_BASE_ADDR);
        let count = read::<i64>(table, layout::DESCRIPTOR_DIMENSIONS + layout::DIMENSION_EXTENT);
        let stride = read::<i64>(table, layout::DESCRIPTOR_DIMENSIONS + layout::DIMENSION_STRIDE);
        if components.is_null()
            || count <= 0
            || count as u64 > MOST_COMPONENTS
            || stride <= 0
            || depth > DEEPEST
        {
            return;
        }
        for i in 0..count as usize {
            let component = components.add(i * stride as usize);
            let genre = read::<u8>(component, layout::COMPONENT_GENRE);
            let derived = read::<u8>(component, layout::COMPONENT_CATEGORY) == layout::CATEGORY_DERIVED;
            let rank = read::<u8>(component, layout::COMPONENT_RANK) as u64;
            let at = offset.saturating_add(read::<u64>(component, layout::COMPONENT_OFFSET));
            if out.len() >= MOST_ALLOCATABLES {
                return;
            }
            if genre == layout::GENRE_ALLOCATABLE {
                let addendum = if derived { layout::ADDENDUM_BYTES as u64 } else { 0 };
                let descriptor_bytes = (layout::DESCRIPTOR_DIMENSIONS
                    + layout::DIMENSION_BYTES * rank as usize) as u64
                    + addendum;
                out.push(Allocatable { offset: at, descriptor_bytes });
            } else if genre == layout::GENRE_DATA && derived {
                let inner = read::<*const u8>(component, layout::COMPONENT_DERIVED_TYPE);
                if inner.is_null() {
                    continue;
                }
                let mut own = Vec::new();
                collect_allocatables(inner, 0, &mut own, depth + 1);
                if own.is_empty() {
                    continue;
                }
                let size = read::<u64>(inner, layout::TYPE_SIZE_IN_BYTES);
                for k in 0..elements(component, rank) {
                    let start = at.saturating_add(k.saturating_mul(size));
                    if out.len() + own.len() > MOST_ALLOCATABLES {
                        return;
                    }
                    out.extend(own.iter().map(|a| Allocatable { offset: start + a.offset, ..*a }));
                }
            }
        }
    }
}

/// The elements of a data component of rank `rank`: 1 for a scalar, the product of its
/// explicit bounds' extents for an array (0 where a bound is not a constant).
unsafe fn elements(component: *const u8, rank: u64) -> u64 {
    // SAFETY: the component's bounds descriptor, rank 2 (lower and upper, by dimension), and
    // its values.
    unsafe {
        if rank == 0 {
            return 1;
        }
        let bounds = component.add(layout::COMPONENT_BOUNDS);
        let values = read::<*const u8>(bounds, layout::DESCRIPTOR_BASE_ADDR);
        if values.is_null() {
            return 0;
        }
        let stride_of = |d: usize| {
            read::<i64>(
                bounds,
                layout::DESCRIPTOR_DIMENSIONS + d * layout::DIMENSION_BYTES + layout::DIMENSION_STRIDE,
            )
        };
        let (by_bound, by_dimension) = (stride_of(0), stride_of(1));
        let mut count: u64 = 1;
        for d in 0..rank as isize {
            let value = |bound: isize| {
                let at = values.offset(bound * by_bound as isize + d * by_dimension as isize);
                (read::<u8>(at, 0) == layout::VALUE_EXPLICIT).then(|| read::<i64>(at, layout::VALUE_VALUE))
            };
            let (Some(lower), Some(upper)) = (value(0), value(1)) else { return 0 };
            count = count.saturating_mul((upper - lower + 1).max(0) as u64);
        }
        count
    }
}
