//! The loop cache: after the optimizer (which hoisted the translations whose key is
//! loop-invariant), a translation left inside a loop keeps its last key and result in two
//! registers carried around the loop and calls the lookup only when the key changes. A kernel
//! looping over objects of a few classes, or grouped by class, then pays a compare for most
//! of its virtual calls instead of a lookup.
//!
//! - Which: each translation of a vtable pointer (marked by [`crate::translation::VTABLE_TRANSLATION`])
//!   in a loop whose key is not invariant in its innermost loop, in program functions (not the
//!   OpenMP runtime's), after the optimizer ([`crate::summary::Phase::OptimizerLast`]), at every `-O` level and
//!   in the `-foffload-lto` pre-link compile. Each gets a passed remark `TranslationCached`. The
//!   hit path falls through (branch weights). Function pointers are not cached: measured on
//!   x86_64, a loop calling one of 1024 functions at random lost 14% with the cache (every
//!   iteration a miss), while arrays of objects repeat their classes (the benchmarks:
//!   `docs/performance.md`).
//! - On the GPU targets only a key in the installed table's range is looked up: the
//!   function reads the range once at its entry (the device library's
//!   `__omptarget_indirect_first_key` and `_last_key`), and any other pointer is its own
//!   translation: a vtable of the device (an object built in device code) on the cache's miss
//!   path, and a function pointer taken in device code, whose translation in such a loop is
//!   guarded the same way without a cache (remark `TranslationGuarded`). Lanes of a warp then
//!   never wait for the lookup of a device address. Not on x86_64: measured there
//!   (`docs/performance.md`), the test made device-built objects of random classes faster
//!   (1.17x to 1.03x stock) but host-built ones slower (1.16x to 1.40x), which the CPU's branch
//!   prediction decides; the lookup answers a device address after its own range test.
//! - Correct across launches: the registers start null at each call of the function (a null key
//!   translates to null), so nothing outlives a kernel launch, and the host replaces the table
//!   only between launches. GPU lanes each have their own registers.
//! - `OMPTARGET_INDIRECT_LOOP_CACHE=0` in the compiler's environment turns it off (the
//!   benchmarks' comparison).
//! - The transform itself (loop info, block splitting, promotion to registers) is in the C++
//!   shim, which the C API cannot do without.

use crate::ir::{direct_calls, has_metadata, value_name_bytes};
use crate::llvm::core::*;
use crate::llvm::prelude::*;
use crate::policy;
use crate::remarks::Kind;
use crate::translation::TRANSLATE;
use crate::translation::{Pass, GUARDED_TRANSLATION};

extern "C" {
    fn omptarget_indirect_cache_translations(
        function: LLVMValueRef,
        translate: LLVMValueRef,
        key_range: bool,
        in_registers: bool,
        changed: *mut LLVMValueRef,
        capacity: u32,
    ) -> u32;
}

impl Pass<'_> {
    /// Caches the translations left in the loops of the module's program functions.
    pub(crate) unsafe fn cache_loop_translations(&mut self) {
        if !policy::caches_loops(self.phase) {
            return;
        }
        // SAFETY: handles from the module; the shim changes one function at a time and returns
        // calls of that function.
        unsafe {
            let translate = LLVMGetNamedFunction(self.module, TRANSLATE.as_ptr());
            if translate.is_null() {
                return;
            }
            let key_range = policy::guards_key_range(self.on_x86_64());
            let in_registers = policy::caches_in_registers(self.on_x86_64());
            // The translation calls of each function: how many the shim may hand back.
            let mut functions: Vec<LLVMValueRef> = direct_calls(translate, 1)
                .into_iter()
                .filter(|call| !LLVMIsACallInst(*call).is_null())
                .map(|call| LLVMGetBasicBlockParent(LLVMGetInstructionParent(call)))
                .collect();
            functions.sort();
            let calls = functions.chunk_by(|a, b| a == b).map(|run| (run[0], run.len())).collect::<Vec<_>>();
            for (function, translations) in calls {
                if value_name_bytes(function).is_some_and(|name| policy::is_runtime_function(&name)) {
                    continue;
                }
                let mut changed = vec![std::ptr::null_mut(); translations];
                let count = omptarget_indirect_cache_translations(
                    function,
                    translate,
                    key_range,
                    in_registers,
                    changed.as_mut_ptr(),
                    changed.len() as u32,
                ) as usize;
                for &call in &changed[..count] {
                    if has_metadata(call, GUARDED_TRANSLATION) {
                        self.summary.guarded += 1;
                        self.remarks.emit(Kind::Passed, call, c"TranslationGuarded", || {
                            "the translation in this loop looks up only a pointer in the table's key range: a \
                             function taken in device code costs a compare"
                                .into()
                        });
                    } else {
                        self.summary.cached += 1;
                        self.remarks.emit(Kind::Passed, call, c"TranslationCached", || {
                            "the translation in this loop keeps its last key and result: a repeated key costs a \
                             compare"
                                .into()
                        });
                    }
                }
            }
        }
    }
}
