//! Where the host's vtables are, recorded by host compiles (host modules of OpenMP programs).
//!
//! The host side pairs each device vtable word with the same word of the host's vtable of the same
//! name. Symbol tables cannot always say where that vtable is: `strip` removes a non-exported
//! vtable's symbol, `-fvisibility=hidden` keeps a shared library's out of its dynamic symbols. So
//! each host module records, for every vtable and construction vtable it defines with external
//! linkage (those the device exports words of), the vtable's address, size and symbol in the
//! section [`HOST_VTABLES_SECTION`], one [`omptarget_indirect_abi::HostVtableRecord`] per vtable
//! followed by its name. The records are data: the linker keeps them (`llvm.used`), `strip`
//! leaves them and the section headers that find them, and the loader relocates the addresses.
//! A vtable several units define (inline virtual functions) is recorded by each: the copies the
//! linker merges give equal records.

use omptarget_indirect_abi::{HostVtableRecord, HOST_VTABLES_SECTION, HOST_VTABLE_MAGIC};

use crate::ir::{has_module_flag, keep_in_links};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::llvm::LLVMLinkage;
use crate::vtables::defined_vtables;

/// The module flag clang sets on the modules of `-fopenmp` compiles, host and device.
const OPENMP_MODULE_FLAG: &str = "openmp";

/// Records the vtables `module` defines in [`HOST_VTABLES_SECTION`], if it is the host module of an
/// OpenMP compile (other modules are left alone). Returns how many it recorded.
///
/// # Safety
/// `module` must be a valid host module that no one else accesses during the call.
pub unsafe fn record_host_vtables(module: LLVMModuleRef) -> usize {
    // SAFETY: globals of the module, read before the records are added after them.
    unsafe {
        if !has_module_flag(module, OPENMP_MODULE_FLAG) {
            return 0;
        }
        let vtables = defined_vtables(module);
        if vtables.is_empty() {
            return 0;
        }
        let context = LLVMGetModuleContext(module);
        let i32_type = LLVMInt32TypeInContext(context);
        let i64_type = LLVMInt64TypeInContext(context);
        let section = std::ffi::CString::new(HOST_VTABLES_SECTION).expect("no NUL in the section name");
        let header = core::mem::size_of::<HostVtableRecord>();
        let mut records = Vec::with_capacity(vtables.len());
        for (vtable, name, size) in vtables {
            // The name, NUL-terminated and zero-padded to a multiple of 8 bytes.
            let mut text = name.into_bytes();
            text.resize((header + text.len() + 1).div_ceil(8) * 8 - header, 0);
            let length = (header + text.len()) as u64;
            let mut fields = [
                LLVMConstInt(i32_type, u64::from(HOST_VTABLE_MAGIC), 0),
                LLVMConstInt(i32_type, length, 0),
                vtable,
                LLVMConstInt(i64_type, size, 0),
                LLVMConstStringInContext2(context, text.as_ptr().cast(), text.len(), 1),
            ];
            let init = LLVMConstStructInContext(context, fields.as_mut_ptr(), fields.len() as u32, 1);
            let record =
                LLVMAddGlobal(module, LLVMTypeOf(init), c"__omptarget_indirect_host_vtable".as_ptr());
            LLVMSetInitializer(record, init);
            LLVMSetGlobalConstant(record, 1);
            LLVMSetLinkage(record, LLVMLinkage::LLVMPrivateLinkage);
            LLVMSetSection(record, section.as_ptr());
            LLVMSetAlignment(record, 8);
            records.push(record);
        }
        keep_in_links(module, context, &records);
        records.len()
    }
}
