//! flang's descriptor and type-information layouts, as flang emits them from release 23 on in LLVM IR
//! (`ISO_Fortran_binding.h`'s `CFI_cdesc_t`, `flang-rt`'s `type-info.h`: the types
//! `%_QM__fortran_type_infoTderivedtype`, 440 bytes, and `%_QM__fortran_type_infoTcomponent`,
//! 256 bytes). `docs/fortran.md` records them. Byte offsets, read with plain loads: the device
//! library reads type descriptors a host-built object carries, the registration library the
//! component tables of the objects it maps.

/// A descriptor's `base_addr`.
pub const DESCRIPTOR_BASE_ADDR: usize = 0;
/// A descriptor's `elem_len`: the bytes of one element (a polymorphic object's dynamic type's).
pub const DESCRIPTOR_ELEM_LEN: usize = 8;
/// A descriptor's `rank` (`u8`).
pub const DESCRIPTOR_RANK: usize = 20;
/// A descriptor's `type` (`i8`, [`TYPE_STRUCT`], [`TYPE_OTHER`], ...).
pub const DESCRIPTOR_TYPE: usize = 21;
/// A descriptor's `attribute` (`u8`: [`ATTRIBUTE_POINTER`], [`ATTRIBUTE_ALLOCATABLE`]).
pub const DESCRIPTOR_ATTRIBUTE: usize = 22;
/// A descriptor's `extra` (`u8`; bit [`HAS_ADDENDUM`]).
pub const DESCRIPTOR_EXTRA: usize = 23;
/// Where a descriptor's dimensions begin, [`DIMENSION_BYTES`] each (lower bound, extent, byte
/// stride), the addendum after them.
pub const DESCRIPTOR_DIMENSIONS: usize = 24;
/// The bytes of one dimension (`CFI_dim_t`).
pub const DIMENSION_BYTES: usize = 24;
/// A dimension's extent, from the dimension's start.
pub const DIMENSION_EXTENT: usize = 8;
/// A dimension's byte stride, from the dimension's start.
pub const DIMENSION_STRIDE: usize = 16;
/// The bytes of an addendum: the type descriptor, then one length-parameter word (flang reserves
/// one even for a type without).
pub const ADDENDUM_BYTES: usize = 16;
/// The bit of `extra` that says the descriptor has an addendum (`_CFI_ADDENDUM_FLAG`).
pub const HAS_ADDENDUM: u8 = 1;
/// `CFI_type_struct`: a derived type.
pub const TYPE_STRUCT: i8 = 42;
/// `CFI_type_other`: an unlimited polymorphic entity (`class(*)`).
pub const TYPE_OTHER: i8 = -1;
/// `CFI_attribute_pointer`.
pub const ATTRIBUTE_POINTER: u8 = 1;
/// `CFI_attribute_allocatable`.
pub const ATTRIBUTE_ALLOCATABLE: u8 = 2;

/// `DerivedType::sizeInBytes_` (`u64`).
pub const TYPE_SIZE_IN_BYTES: usize = 88;
/// `DerivedType::uninstantiated_`'s base address: the type a parameterized instantiation came
/// from (null without KIND parameters).
pub const TYPE_UNINSTANTIATED: usize = 96;
/// `DerivedType::component_`: a rank-1 descriptor of the components, the parent's first.
pub const TYPE_COMPONENTS: usize = 232;
/// `DerivedType::hasParent_` (`u8`).
pub const TYPE_HAS_PARENT: usize = 428;

/// `Component::genre_` (`u8`: [`GENRE_DATA`], [`GENRE_POINTER`], [`GENRE_ALLOCATABLE`], ...).
pub const COMPONENT_GENRE: usize = 24;
/// `Component::category_` (`u8`: [`CATEGORY_DERIVED`] for a derived type).
pub const COMPONENT_CATEGORY: usize = 25;
/// `Component::rank_` (`u8`).
pub const COMPONENT_RANK: usize = 27;
/// `Component::offset_` (`u64`): the component's bytes from the object's start.
pub const COMPONENT_OFFSET: usize = 32;
/// `Component::derivedType_`'s base address: a derived-type component's type descriptor.
pub const COMPONENT_DERIVED_TYPE: usize = 56;
/// `Component::bounds_`: a rank-2 descriptor (lower and upper, by dimension) of `Value`s, an
/// array component's bounds.
pub const COMPONENT_BOUNDS: usize = 160;
/// `Value::value_` (`i64`), after its genre (`u8`, [`VALUE_EXPLICIT`] for a constant).
pub const VALUE_VALUE: usize = 8;
/// The bytes of one `Value`.
pub const VALUE_BYTES: usize = 16;
/// `Value::Genre::Explicit`: `value_` is the constant itself (1 is deferred, 3 a length
/// parameter's).
pub const VALUE_EXPLICIT: u8 = 2;
/// `Component::Genre::Data`: the component's bytes are its value.
pub const GENRE_DATA: u8 = 1;
/// `Component::Genre::Pointer`.
pub const GENRE_POINTER: u8 = 2;
/// `Component::Genre::Allocatable`: a descriptor whose data the object owns.
pub const GENRE_ALLOCATABLE: u8 = 3;
/// `TypeCategory::Derived`.
pub const CATEGORY_DERIVED: u8 = 6;
