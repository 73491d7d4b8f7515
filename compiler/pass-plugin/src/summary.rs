//! What a run of the pass did to a module ([`Summary`]), and where in the pipeline it ran
//! ([`Phase`]).

/// Where in the pipeline the pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Before the optimizer (every `-O` level, and the LTO pre-link pipeline).
    PipelineStart,
    /// After the optimizer: folds what optimization made foldable, catches new indirect calls.
    OptimizerLast,
}

/// What one run did to a module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// The module is an OpenMP device module (nothing else is rewritten).
    pub device_module: bool,
    /// Indirect calls that now call the translation's result.
    pub translated: usize,
    /// Indirect calls whose callee already was a translation.
    pub already_translated: usize,
    /// `translate(@f)` replaced by `@f` (or by its already translated operand).
    pub folded: usize,
    /// Indirect calls left alone because they are in a runtime function.
    pub in_runtime: usize,
    /// Indirect calls left alone because the callee is a pointer of another size than a
    /// generic pointer (in another address space).
    pub other_address_space: usize,
    /// Indirect calls left alone because the program declares the translation with another type.
    pub other_signature: usize,
    /// `__kmpc_target_translate_fptr` was declared by this run.
    pub declared: bool,
    /// Loads of a vtable pointer whose result is now translated ([`crate::vtables`]).
    pub vtable_loads: usize,
    /// Indirect calls through a slot of a translated vtable: the slot already holds a device
    /// address, so the callee is not translated again.
    pub from_device_vtable: usize,
    /// Indirect calls through a local variable that only ever holds device addresses (functions
    /// taken in device code): not translated, so that the optimizer sees the call it makes direct.
    pub from_device_variable: usize,
    /// Device globals defined for the words of the module's vtables ([`crate::vtables`]).
    pub vtable_words: usize,
    /// Calls of `__dynamic_cast` now calling the device library's cast ([`crate::dynamic_casts`]).
    pub dynamic_casts: usize,
    /// Calls of `__dynamic_cast` left alone: no RTTI in this device code.
    pub dynamic_casts_left: usize,
    /// Host-only virtual functions whose vtable slots now hold a trapping stub
    /// ([`crate::host_only`]).
    pub host_only_stubs: usize,
    /// Declarations that another device compile of the program may define, reached from
    /// vtable slots, given a weak definition that traps ([`crate::host_only`]).
    pub weak_traps: usize,
    /// Device module: destructors and their thunks that only vtables name, kept out of line
    /// ([`crate::vtable_destructors`]).
    pub out_of_line_destructors: usize,
    /// Translations in loops that now keep their last key and result ([`crate::loop_cache`]).
    pub cached: usize,
    /// Translations of function pointers in loops that now look up only a key in the table's
    /// range ([`crate::loop_cache`]).
    pub guarded: usize,
    /// Calls of clang's `__llvm_omp_indirect_call_lookup` that now call the project's translation
    /// ([`crate::llvm_lookups`]).
    pub adopted: usize,
    /// Host module: indirect offload entries added for Fortran procedures named through the
    /// `omptarget_indirect` module ([`crate::fortran`]).
    pub fortran_entries: usize,
    /// Host module: vtables recorded in [`omptarget_indirect_abi::HOST_VTABLES_SECTION`]
    /// ([`crate::host_vtables`]).
    pub host_vtables: usize,
    /// Entries of indirect functions named per function ([`crate::indirect_entries`]): host
    /// entries renamed or added, device globals added.
    pub indirect_entries: usize,
    /// x86_64 device module: type_info declarations made weak
    /// ([`crate::device_link_fixes`]).
    pub weakened_type_info: usize,
    /// Device module: local variables taken out of comdat groups ([`crate::device_link_fixes`]).
    pub ungrouped_locals: usize,
    /// Device module: the image anchor was defined ([`crate::image_anchor`]).
    pub image_anchor: bool,
    /// flang's x86_64 kernels given an adapter of the runtime's signature
    /// ([`crate::flang_kernels`]).
    pub adapted_kernels: usize,
    /// Device module: Fortran type descriptors made one definition per image
    /// ([`crate::fortran_dispatch`]).
    pub shared_type_descriptors: usize,
    /// Host module: binding tables whose procedures the module records for the device compile
    /// ([`crate::binding_copies`]).
    pub recorded_binding_tables: usize,
    /// Device module: binding-table slots flang left `undef`, now the address of the bound
    /// procedure's copy from the host compile's IR ([`crate::binding_copies`]).
    pub copied_bindings: usize,
    /// Device module: binding-table slots flang left `undef` whose procedure another file
    /// defines, now the address of that procedure by its own name, with a weak definition here
    /// that reports the call and traps ([`crate::binding_copies`]).
    pub elsewhere_bindings: usize,
    /// Device module: binding-table slots flang left `undef`, now a stub that reports the call
    /// and traps ([`crate::fortran_dispatch`]).
    pub unbound_bindings: usize,
    /// Host module: map entries of polymorphic objects now of their dynamic type's size
    /// ([`crate::fortran_maps`]).
    pub polymorphic_maps: usize,
    /// Calls of flang's `same_type_as` and `extends_type_of` now calling the device library's
    /// ([`crate::fortran_dispatch`]).
    pub type_inquiries: usize,
}

impl Summary {
    /// Whether the module was modified.
    pub fn changed(&self) -> bool {
        self.translated > 0
            || self.folded > 0
            || self.declared
            || self.adopted > 0
            || self.vtable_loads > 0
            || self.vtable_words > 0
            || self.host_only_stubs > 0
            || self.weak_traps > 0
            || self.dynamic_casts > 0
            || self.fortran_entries > 0
            || self.host_vtables > 0
            || self.image_anchor
            || self.weakened_type_info > 0
            || self.ungrouped_locals > 0
            || self.indirect_entries > 0
            || self.out_of_line_destructors > 0
            || self.cached > 0
            || self.guarded > 0
            || self.adapted_kernels > 0
            || self.shared_type_descriptors > 0
            || self.copied_bindings > 0
            || self.elsewhere_bindings > 0
            || self.recorded_binding_tables > 0
            || self.unbound_bindings > 0
            || self.polymorphic_maps > 0
            || self.type_inquiries > 0
    }
}
