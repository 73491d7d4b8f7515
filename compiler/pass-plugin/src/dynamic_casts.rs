//! `dynamic_cast` in device code.
//!
//! clang lowers `dynamic_cast<T*>(p)` to a call of the C++ runtime's `__dynamic_cast`, which reads
//! the vtable pointers of `p`'s object itself; the pass never sees those loads. On an object built
//! on the host they are the host's vtables ([`crate::vtables`]). The call is routed to the device
//! library's [`omptarget_indirect_abi::DYNAMIC_CAST`], which casts alike and translates each
//! vtable pointer it reads.
//!
//! Only calls with RTTI are routed: clang gives GPU device code none (the type_info arguments are
//! null constants), so no library can answer those; they are left as they are and reported.

use omptarget_indirect_abi::c_names::{CXX_DYNAMIC_CAST, DYNAMIC_CAST};

use crate::ir::{direct_calls, set_callee, stand_in_for};
use crate::llvm::core::*;
use crate::policy;
use crate::remarks::Kind;
use crate::translation::Pass;

impl Pass<'_> {
    /// Makes every call of `__dynamic_cast` whose type_info arguments are not null call
    /// [`DYNAMIC_CAST`] instead.
    pub(crate) unsafe fn route_dynamic_casts(&mut self) {
        // SAFETY: handles of the module; the calls are collected before any is changed.
        unsafe {
            let cxx = LLVMGetNamedFunction(self.module, CXX_DYNAMIC_CAST.as_ptr());
            if cxx.is_null() {
                return;
            }
            let calls = direct_calls(cxx, 4);
            if calls.is_empty() {
                return;
            }
            let ours = stand_in_for(self.module, cxx, DYNAMIC_CAST);
            for call in calls {
                let without_rtti = !policy::casts_with_rtti(call);
                let Some(ours) = ours.filter(|_| !without_rtti) else {
                    self.summary.dynamic_casts_left += 1;
                    self.remarks.emit(Kind::Missed, call, c"DynamicCastLeftAlone", || {
                        if without_rtti {
                            "dynamic_cast left alone: this device code has no RTTI (clang gives GPU \
                             targets none), so no runtime can cast here"
                                .into()
                        } else {
                            format!(
                                "dynamic_cast left alone: the program declares {} with another type",
                                DYNAMIC_CAST.to_string_lossy()
                            )
                        }
                    });
                    continue;
                };
                set_callee(call, ours);
                self.summary.dynamic_casts += 1;
                self.remarks.emit(Kind::Passed, call, c"DynamicCastRouted", || {
                    format!(
                        "routed a dynamic_cast to {}: it translates the vtable pointers it reads, so an \
                         object built on the host casts through the device's vtables",
                        DYNAMIC_CAST.to_string_lossy()
                    )
                });
            }
        }
    }
}
