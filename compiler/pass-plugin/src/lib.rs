//! `libomptarget-indirect-pass.so`: an LLVM pass plugin that makes unmodified OpenMP programs call
//! the device copy of `declare target indirect` functions.
//!
//! clang (up to 22) compiles a call through a function pointer in device code as a plain
//! indirect call, so a pointer that reached the device as data (mapped, in an array, in a struct)
//! still holds the *host* address. This plugin rewrites, in device modules only, every such call
//! into `__kmpc_target_translate_fptr(fp)` followed by a call of the result ([`rewrite`], which
//! applies the decisions of [`policy`], each in one place); the
//! device library then maps host addresses to device addresses. In host modules it records where
//! the module's vtables are ([`host_vtables`]), which the host side pairs with the device's.
//!
//! ```sh
//! clang-19 -fopenmp --offload-arch=sm_90 -fpass-plugin=libomptarget-indirect-pass.so ...
//! ```
//!
//! The C++ registration shim (`src/shim.cpp`) adds the pass at the pipeline start and after the
//! optimizer, and emits the remarks ([`remarks`]).

// The driver, and every decision it applies.
pub mod policy;
pub mod rewrite;
// What the decisions rest on.
pub mod device_addresses;
pub mod ir;
pub mod summary;
pub mod translation;
// Each step of the rewrite.
pub mod binding_copies;
pub mod device_link_fixes;
pub mod dynamic_casts;
pub mod flang_kernels;
pub mod fortran;
pub mod fortran_dispatch;
pub mod fortran_maps;
pub mod host_only;
pub mod host_vtables;
pub mod image_anchor;
pub mod indirect_entries;
pub mod llvm_lookups;
pub mod loop_cache;
pub mod vtable_destructors;
pub mod vtables;
// The LLVM C API of the release built for, clang's remarks, and the offload entry layouts.
pub mod llvm;
pub mod offload_entries;
pub mod remarks;

use core::ffi::{c_char, c_void};

use llvm::prelude::{LLVMModuleRef, LLVMValueRef};

pub use rewrite::{rewrite_module, rewrite_module_with_host_ir};
pub use summary::{Phase, Summary};

/// `PassPluginLibraryInfo` of `llvm/Passes/PassPlugin.h` (LLVM 19) or `llvm/Plugins/PassPlugin.h`
/// (LLVM 22, plugin API version 2, one more field; LLVM 24, version 3, another): what `llvmGetPassPluginInfo` returns. Its
/// size must be the header's (checked by a test against the shim's `sizeof`): clang passes a
/// buffer of that size for the result.
#[repr(C)]
pub struct PassPluginLibraryInfo {
    /// `LLVM_PLUGIN_API_VERSION` of the headers the shim was compiled with.
    pub api_version: u32,
    /// Shown by `opt --print-passes` and in plugin errors.
    pub plugin_name: *const c_char,
    /// This crate's version.
    pub plugin_version: *const c_char,
    /// `void (*)(llvm::PassBuilder &)`: registers the pass with the pipeline.
    pub register_pass_builder_callbacks: unsafe extern "C" fn(*mut c_void),
    /// `PreCodeGenCallback` (API version 2, LLVM 22+): none, the back end runs as usual.
    #[cfg(pass_plugin_api_2)]
    pub pre_code_gen_callback: Option<unsafe extern "C" fn()>,
    /// `ParseArguments` (API version 3, LLVM 24+): none, the plugin takes no `-plugin-arg=`.
    #[cfg(pass_plugin_api_3)]
    pub parse_arguments: Option<unsafe extern "C" fn()>,
}

extern "C" {
    fn omptarget_indirect_plugin_api_version() -> u32;
    fn omptarget_indirect_register_callbacks(pass_builder: *mut c_void);
    fn omptarget_indirect_runs_on_compilers_llvm() -> bool;
}

/// The entry point clang and opt look up after loading a pass plugin (`-fpass-plugin=`,
/// `-load-pass-plugin=`). Returns the plugin's name, version and registration callback. In a
/// compiler that does not run on the libLLVM the plugin is linked against (a statically linked
/// or vendor clang), it prints why in one line and returns plugin API version 0, which the
/// compiler refuses ("Wrong API version"): the compile stops instead of building a program
/// whose device code calls host addresses.
#[no_mangle]
pub extern "C" fn llvmGetPassPluginInfo() -> PassPluginLibraryInfo {
    // SAFETY: a C function without arguments; it reads the loader's list of loaded objects.
    let usable = unsafe { omptarget_indirect_runs_on_compilers_llvm() };
    PassPluginLibraryInfo {
        // SAFETY: a C function without arguments that returns a constant.
        api_version: if usable { unsafe { omptarget_indirect_plugin_api_version() } } else { 0 },
        plugin_name: c"omptarget-indirect".as_ptr(),
        plugin_version: concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast(),
        register_pass_builder_callbacks: omptarget_indirect_register_callbacks,
        #[cfg(pass_plugin_api_2)]
        pre_code_gen_callback: None,
        #[cfg(pass_plugin_api_3)]
        parse_arguments: None,
    }
}

/// Called by the shim's module pass: rewrites `module` if it is an OpenMP device module.
/// `phase` is 0 at the pipeline start and 1 after the optimizer. Returns whether the module
/// changed. Never unwinds into C++: a panic (a bug) aborts the compiler with its message rather
/// than crossing the FFI boundary.
///
/// # Safety
/// `module` must be a valid module that no one else modifies during the call.
#[no_mangle]
pub unsafe extern "C" fn omptarget_indirect_rewrite_module(module: LLVMModuleRef, phase: u32) -> bool {
    let phase = if phase == 0 { Phase::PipelineStart } else { Phase::OptimizerLast };
    // SAFETY: the shim passes the module its pass manager runs on, which nothing else touches then.
    let summary = unsafe { rewrite_module(module, phase) };
    summary.changed()
}

/// Called by the shim's function pass in the optimizer's peephole step: folds the translations
/// of `function` that are their operand ([`rewrite::fold_function`]), in OpenMP device modules
/// only. Returns whether the function changed (calls erased; the control flow stays).
///
/// # Safety
/// `function` must be a valid function that no one else modifies during the call.
#[no_mangle]
pub unsafe extern "C" fn omptarget_indirect_fold_function(function: LLVMValueRef) -> bool {
    // SAFETY: the shim passes the function its pass manager runs on.
    unsafe { rewrite::fold_function(function) }
}

#[cfg(test)]
mod tests {
    extern "C" {
        fn omptarget_indirect_plugin_info_size() -> usize;
    }

    /// clang writes nothing past, and reads nothing beyond, the header's struct: the Rust mirror
    /// of it must have the same size for the LLVM version built for.
    #[test]
    fn plugin_info_has_the_headers_size() {
        // SAFETY: a C function without arguments that returns a constant.
        let header = unsafe { omptarget_indirect_plugin_info_size() };
        assert_eq!(core::mem::size_of::<super::PassPluginLibraryInfo>(), header);
    }
}
