//! The rewrite run in-process on IR parsed by the same libLLVM clang uses, then verified by
//! LLVM's verifier. (The plugin loaded by clang and opt is tested end to end by `cargo xtask
//! test`.)

use std::ffi::{CStr, CString};

use omptarget_indirect_pass::llvm::analysis::{LLVMVerifierFailureAction, LLVMVerifyModule};
use omptarget_indirect_pass::llvm::core::*;
#[allow(deprecated)] // see Module::parse
use omptarget_indirect_pass::llvm::ir_reader::LLVMParseIRInContext;
use omptarget_indirect_pass::llvm::prelude::*;
use omptarget_indirect_pass::{rewrite_module, rewrite_module_with_host_ir, Phase, Summary};

const DEVICE_FLAG: &str = "!llvm.module.flags = !{!0}\n!0 = !{i32 7, !\"openmp-device\", i32 51}\n";

/// A parsed module and its context, disposed together.
struct Module {
    context: LLVMContextRef,
    module: LLVMModuleRef,
}

impl Module {
    fn parse(ir: &str) -> Module {
        // SAFETY: a fresh context owns the module; the buffer is consumed by the parser.
        unsafe {
            let context = LLVMContextCreate();
            let source = CString::new(ir).unwrap();
            let buffer =
                LLVMCreateMemoryBufferWithMemoryRangeCopy(source.as_ptr(), ir.len(), c"test.ll".as_ptr());
            let mut module = std::ptr::null_mut();
            let mut message = std::ptr::null_mut();
            // LLVM 22 deprecates it for LLVMParseIRInContext2 (which leaves the buffer to the
            // caller); both versions have it, and it takes the buffer as this test wants.
            #[allow(deprecated)]
            let failed = LLVMParseIRInContext(context, buffer, &mut module, &mut message) != 0;
            if failed {
                panic!("bad test IR: {}", CStr::from_ptr(message).to_string_lossy());
            }
            Module { context, module }
        }
    }

    fn rewrite(&self, phase: Phase) -> Summary {
        // SAFETY: the module is valid and only this test uses it.
        let summary = unsafe { rewrite_module(self.module, phase) };
        self.verify();
        summary
    }

    fn verify(&self) {
        // SAFETY: valid module; the message is freed by LLVM's allocator.
        unsafe {
            let mut message = std::ptr::null_mut();
            let broken = LLVMVerifyModule(
                self.module,
                LLVMVerifierFailureAction::LLVMReturnStatusAction,
                &mut message,
            );
            let text = CStr::from_ptr(message).to_string_lossy().into_owned();
            LLVMDisposeMessage(message);
            assert!(broken == 0, "the rewritten module does not verify: {text}\n{}", self.text());
        }
    }

    fn text(&self) -> String {
        // SAFETY: LLVM allocates the string; it is copied and freed.
        unsafe {
            let raw = LLVMPrintModuleToString(self.module);
            let text = CStr::from_ptr(raw).to_string_lossy().into_owned();
            LLVMDisposeMessage(raw);
            text
        }
    }

    /// The line of the printed function `name` that contains `needle`.
    fn line_in(&self, function: &str, needle: &str) -> String {
        let text = self.text();
        let body = text
            .split("\ndefine ")
            .find(|f| f.contains(&format!("@{function}(")))
            .unwrap_or_else(|| panic!("no function {function} in\n{text}"));
        body.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with `{needle}` in {function}:\n{body}"))
            .trim()
            .to_string()
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: the module and context were created by `parse` and are not used afterwards.
        unsafe {
            LLVMDisposeModule(self.module);
            LLVMContextDispose(self.context);
        }
    }
}

/// The callee register of a printed call line: `%7` in `%8 = call i32 %7(i32 1)`, the first
/// `%name` directly followed by `(`.
fn callee_of(line: &str) -> &str {
    for (start, _) in line.match_indices('%') {
        let name_len = line[start + 1..]
            .find(|c: char| !(c.is_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(line.len() - start - 1);
        let end = start + 1 + name_len;
        if line[end..].starts_with('(') {
            return &line[start..end];
        }
    }
    panic!("no indirect callee in `{line}`")
}

/// Asserts that the indirect call on `call_line` calls the result of translating `operand`.
fn assert_translated(module: &Module, function: &str, call_line: &str, operand: &str) {
    let callee = callee_of(call_line);
    let definition = module.line_in(function, &format!("{callee} = "));
    assert!(
        definition.contains(&format!("@__kmpc_target_translate_fptr(ptr {operand})")),
        "callee {callee} of `{call_line}` is `{definition}`, not a translation of {operand}"
    );
}

#[test]
fn host_modules_are_left_alone() {
    let module = Module::parse("define void @f(ptr %fp) {\n  call void %fp()\n  ret void\n}\n");
    let before = module.text();
    assert_eq!(module.rewrite(Phase::PipelineStart), Summary::default());
    assert_eq!(module.text(), before);
}

#[test]
fn every_indirect_call_is_translated_and_keeps_its_form() {
    let module = Module::parse(&format!(
        r#"declare void @known(ptr)
declare void @llvm.donothing()
define i32 @kernel(ptr %fp, ptr %table) {{
  call void %fp(ptr null)
  %loaded = load ptr, ptr %table
  %r = tail call fastcc noundef i32 %loaded(i32 1) #0 [ "tag"(i32 7) ]
  call void @known(ptr %fp)
  call void asm sideeffect "", ""()
  call void @llvm.donothing()
  ret i32 %r
}}
define i32 @tail(ptr %fp, i32 %x) {{
  %r = musttail call i32 %fp(ptr %fp, i32 %x)
  ret i32 %r
}}
attributes #0 = {{ nounwind }}
{DEVICE_FLAG}"#
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.translated, summary.declared, summary.folded), (3, true, 0));
    assert_translated(&module, "kernel", &module.line_in("kernel", "(ptr null)"), "%fp");
    let kept = module.line_in("kernel", "(i32 1)");
    assert!(
        kept.contains("tail call fastcc noundef i32 %") && kept.contains(r#"[ "tag"(i32 7) ]"#),
        "attributes, calling convention, bundle or tail kind lost: `{kept}`"
    );
    let group =
        kept.split(" #").nth(1).and_then(|g| g.split_whitespace().next()).expect("no attribute group");
    let text = module.text();
    let attributes = text.lines().find(|l| l.starts_with(&format!("attributes #{group} = "))).unwrap();
    assert_eq!(attributes, format!("attributes #{group} = {{ nounwind }}"));
    assert_translated(&module, "kernel", &kept, "%loaded");
    assert_translated(&module, "tail", &module.line_in("tail", "musttail call"), "%fp");
    // Known callees: untouched.
    module.line_in("kernel", "call void @known(ptr %fp)");
    module.line_in("kernel", "call void asm sideeffect");
    module.line_in("kernel", "call void @llvm.donothing()");
    // The declaration lets the optimizer hoist and merge it.
    let text = module.text();
    let declaration =
        text.lines().find(|l| l.starts_with("declare ptr @__kmpc_target_translate_fptr(ptr)")).unwrap();
    let group = declaration.rsplit('#').next().unwrap();
    let attributes = text.lines().find(|l| l.starts_with(&format!("attributes #{group} = "))).unwrap();
    for needed in ["nounwind", "willreturn", "nosync", "nofree", "memory(none)"] {
        assert!(attributes.contains(needed), "{needed} missing: {attributes}");
    }
}

#[test]
fn invokes_are_translated() {
    let module = Module::parse(&format!(
        r#"declare i32 @__gxx_personality_v0(...)
define void @caller(ptr %fp) personality ptr @__gxx_personality_v0 {{
  invoke void %fp(i32 3) to label %ok unwind label %bad
ok:
  ret void
bad:
  %lp = landingpad {{ ptr, i32 }} cleanup
  resume {{ ptr, i32 }} %lp
}}
{DEVICE_FLAG}"#
    ));
    assert_eq!(module.rewrite(Phase::PipelineStart).translated, 1);
    assert_translated(&module, "caller", &module.line_in("caller", "invoke void"), "%fp");
}

#[test]
fn runtime_functions_are_left_alone_but_kernels_and_outlined_regions_are_not() {
    let module = Module::parse(&format!(
        r#"define void @__kmpc_parallel_51(ptr %fn) {{
  call void %fn()
  ret void
}}
define void @__omp_offloading_10302_main_l5(ptr %fn) {{
  call void %fn()
  ret void
}}
define internal void @__omp_outlined__1(ptr %fn) {{
  call void %fn()
  ret void
}}
{DEVICE_FLAG}"#
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.translated, summary.in_runtime), (2, 1));
    assert_eq!(module.line_in("__kmpc_parallel_51", "call void"), "call void %fn()");
    assert_translated(
        &module,
        "__omp_offloading_10302_main_l5",
        &module.line_in("__omp_offloading_10302_main_l5", "call void %"),
        "%fn",
    );
    assert_translated(
        &module,
        "__omp_outlined__1",
        &module.line_in("__omp_outlined__1", "call void %"),
        "%fn",
    );
}

#[test]
fn translations_of_known_functions_fold_and_translations_are_not_repeated() {
    let module = Module::parse(&format!(
        r#"declare ptr @__kmpc_target_translate_fptr(ptr)
declare ptr @__llvm_omp_indirect_call_lookup(ptr)
define void @f() {{
  ret void
}}
define void @g(ptr %fp, i1 %c) {{
entry:
  %a = call ptr @__kmpc_target_translate_fptr(ptr @f)
  call void %a()
  %b = call ptr @__llvm_omp_indirect_call_lookup(ptr null)
  %t = call ptr @__kmpc_target_translate_fptr(ptr %fp)
  call void %t()
  %u = call ptr @__kmpc_target_translate_fptr(ptr %t)
  %s = select i1 %c, ptr %t, ptr @f
  call void %s()
  br label %loop
loop:
  %p = phi ptr [ %t, %entry ], [ %p, %loop ]
  call void %p()
  br i1 %c, label %loop, label %done
done:
  call void %u()
  ret void
}}
{DEVICE_FLAG}"#
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.folded, summary.translated, summary.declared), (3, 0, false), "{summary:?}");
    // %t, the select, the phi, and %u (folded to %t).
    assert_eq!(summary.already_translated, 4);
    let text = module.text();
    assert_eq!(text.matches("call ptr @__kmpc_target_translate_fptr").count(), 1, "{text}");
    assert!(!text.contains("call ptr @__llvm_omp_indirect_call_lookup"), "{text}");
    module.line_in("g", "call void @f()");
}

#[test]
fn device_addresses_fold_and_variables_holding_only_them_are_not_translated() {
    // `@_ZTV1S` is a vtable of the device module: its address translates to itself whatever the table
    // holds. `%own` only ever holds device functions (what SROA makes a direct call before OpenMP's
    // kernel optimization); `%mixed` also holds an argument, `%escaped` is passed away.
    let module = Module::parse(&format!(
        r#"declare ptr @__kmpc_target_translate_fptr(ptr)
@_ZTV1S = linkonce_odr constant {{ [3 x ptr] }} {{ [3 x ptr] [ptr null, ptr null, ptr @f] }}
define void @f() {{
  ret void
}}
define void @g() {{
  ret void
}}
declare void @keep(ptr)
define void @k(ptr %fp, i1 %c) {{
  %own = alloca ptr, align 8
  %mixed = alloca ptr, align 8
  %escaped = alloca ptr, align 8
  %slot = call ptr @__kmpc_target_translate_fptr(ptr getelementptr inbounds (i8, ptr @_ZTV1S, i64 16))
  %h = load ptr, ptr %slot, align 8
  call void %h()
  store ptr @f, ptr %own, align 8
  br i1 %c, label %other, label %call
other:
  store ptr @g, ptr %own, align 8
  br label %call
call:
  %o = load ptr, ptr %own, align 8
  call void %o()
  store ptr @f, ptr %mixed, align 8
  store ptr %fp, ptr %mixed, align 8
  %m = load ptr, ptr %mixed, align 8
  call void %m()
  store ptr @f, ptr %escaped, align 8
  call void @keep(ptr %escaped)
  %e = load ptr, ptr %escaped, align 8
  call void %e()
  ret void
}}
{DEVICE_FLAG}"#
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    let counts =
        (summary.folded, summary.from_device_vtable, summary.from_device_variable, summary.translated);
    assert_eq!(counts, (1, 1, 1, 2), "{summary:?}");
    let text = module.text();
    for device in ["getelementptr", "%h", "%o"] {
        assert!(!text.contains(&format!("@__kmpc_target_translate_fptr(ptr {device}")), "{device}: {text}");
    }
    for host in ["%m", "%e"] {
        assert!(text.contains(&format!("@__kmpc_target_translate_fptr(ptr {host})")), "{host}: {text}");
    }
}

#[test]
fn a_second_run_changes_nothing() {
    let module = Module::parse(&format!(
        "define void @k(ptr %fp) {{\n  call void %fp()\n  call void %fp()\n  ret void\n}}\n{DEVICE_FLAG}"
    ));
    assert_eq!(module.rewrite(Phase::PipelineStart).translated, 2);
    let once = module.text();
    let again = module.rewrite(Phase::OptimizerLast);
    assert_eq!((again.translated, again.already_translated, again.changed()), (0, 2, false));
    assert_eq!(module.text(), once);
}

#[test]
fn the_programs_own_declaration_is_used() {
    let module = Module::parse(&format!(
        "declare ptr @__kmpc_target_translate_fptr(ptr)\ndefine void @k(ptr %fp) {{\n  call void %fp()\n  ret void\n}}\n{DEVICE_FLAG}"
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.translated, summary.declared), (1, false));
    // Its call still carries the attributes, on the call site.
    let call = module.line_in("k", "@__kmpc_target_translate_fptr(ptr %fp)");
    assert!(call.contains(" #"), "no call-site attributes: {call}");
}

#[test]
fn a_translation_declared_with_another_type_is_not_called() {
    let module = Module::parse(&format!(
        "declare i64 @__kmpc_target_translate_fptr(i64)\ndefine void @k(ptr %fp) {{\n  call void %fp()\n  ret void\n}}\n{DEVICE_FLAG}"
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    // The only change: the image anchor every device module gets.
    assert_eq!((summary.translated, summary.other_signature, summary.image_anchor), (0, 1, true));
    assert_eq!(module.line_in("k", "call void"), "call void %fp()");
}

#[test]
fn callees_in_other_address_spaces_are_translated_through_casts() {
    // amdgcn loads vtable slots as `ptr addrspace(1)`: cast to generic, translate, cast back.
    let module = Module::parse(&format!(
        "define void @k(ptr addrspace(1) %fp) {{\n  call addrspace(1) void %fp()\n  ret void\n}}\n{DEVICE_FLAG}"
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.translated, summary.other_address_space), (1, 0));
    let call = module.line_in("k", "call addrspace(1) void %");
    let back = module.line_in("k", &format!("{} = addrspacecast ptr ", callee_of(&call)));
    assert!(back.ends_with("to ptr addrspace(1)"), "{back}");
    module.line_in("k", "addrspacecast ptr addrspace(1) %fp to ptr");
    assert_eq!(module.rewrite(Phase::OptimizerLast).already_translated, 1);
}

#[test]
fn callees_of_another_pointer_size_are_left_alone() {
    let module = Module::parse(&format!(
        "target datalayout = \"p3:32:32\"\ndefine void @k(ptr addrspace(3) %fp) {{\n  call addrspace(3) void %fp()\n  ret void\n}}\n{DEVICE_FLAG}"
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.translated, summary.other_address_space), (0, 1));
}

/// A class hierarchy's device code as clang emits it at -O2 before the optimizer: the vtable
/// pointer loads carry the TBAA type `vtable pointer`, a member function pointer's load does not.
const TAGGED_VTABLES: &str = r#"
@_ZTV6Square = weak_odr constant { [4 x ptr] } { [4 x ptr] [ptr null, ptr null, ptr @area, ptr @area] }
@_ZTVN12_GLOBAL__N_11LE = internal constant { [3 x ptr] } { [3 x ptr] [ptr null, ptr null, ptr @area] }
@_ZTV8External = external constant { [3 x ptr] }
@keep = global i32 0
@llvm.compiler.used = appending global [1 x ptr] [ptr @keep], section "llvm.metadata"
define i32 @area(ptr %this, i32 %x) {
  ret i32 %x
}
define i32 @kernel(ptr %obj, ptr %s) {
  %vtable = load ptr, ptr %obj, align 8, !tbaa !10
  %slot = getelementptr inbounds ptr, ptr %vtable, i64 1
  %fn = load ptr, ptr %slot, align 8
  %r = call i32 %fn(ptr %obj, i32 3)
  %base = getelementptr i8, ptr %vtable, i64 -24
  %offset = load i64, ptr %base, align 8
  %member = load ptr, ptr %s, align 8, !tbaa !14
  %q = call i32 %member(ptr %obj, i32 %r)
  ret i32 %q
}
!10 = !{!11, !11, i64 0}
!11 = !{!"vtable pointer", !12, i64 0}
!12 = !{!"Simple C++ TBAA"}
!13 = !{!"any pointer", !12, i64 0}
!14 = !{!13, !13, i64 0}
"#;

#[test]
fn a_tagged_vtable_pointer_load_is_translated_once_and_its_slots_call_as_they_are() {
    let module = Module::parse(&format!("{TAGGED_VTABLES}{DEVICE_FLAG}"));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.vtable_loads, summary.from_device_vtable, summary.translated), (1, 1, 1));
    // Every use of the loaded vtable pointer reads the translation: the slot and the offset.
    let translation = module.line_in("kernel", "@__kmpc_target_translate_fptr(ptr %vtable)");
    let translated = translation.split(" = ").next().expect("a named result");
    for user in ["%slot = ", "%base = "] {
        let line = module.line_in("kernel", user);
        assert!(line.contains(&format!("ptr {translated},")), "`{line}` does not read {translated}");
    }
    // The call through the slot is not translated again; the member pointer's call is.
    assert_eq!(callee_of(&module.line_in("kernel", "(ptr %obj, i32 3)")), "%fn");
    assert_translated(&module, "kernel", &module.line_in("kernel", "(ptr %obj, i32 %r)"), "%member");
    // After the optimizer nothing is translated twice.
    let again = module.rewrite(Phase::OptimizerLast);
    assert_eq!((again.vtable_loads, again.translated), (0, 0));
}

#[test]
fn every_word_of_an_externally_visible_vtable_gets_a_kept_device_global() {
    let module = Module::parse(&format!("{TAGGED_VTABLES}{DEVICE_FLAG}"));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!(summary.vtable_words, 4);
    let text = module.text();
    for (index, offset) in [(0, None), (1, Some(8)), (2, Some(16)), (3, Some(24))] {
        let name =
            format!("@__omptarget_indirect_vtable_{index}__ZTV6Square = weak_odr protected constant ptr ");
        let line =
            text.lines().find(|l| l.starts_with(&name)).unwrap_or_else(|| panic!("no {name} in\n{text}"));
        match offset {
            None => assert!(line.contains("ptr @_ZTV6Square, align 8"), "{line}"),
            Some(bytes) => assert!(line.contains(&format!("@_ZTV6Square, i64 {bytes})")), "{line}"),
        }
        assert!(
            text.lines().any(|l| l.starts_with("@llvm.compiler.used")
                && l.contains(&format!("ptr @__omptarget_indirect_vtable_{index}__ZTV6Square"))
                && l.contains("ptr @keep")),
            "word {index} is not kept beside what was:\n{text}"
        );
    }
    // Internal and external (not defined here) vtables get none; a second run adds none.
    assert!(!text.contains("vtable_0__ZTVN12_GLOBAL__N_11LE") && !text.contains("vtable_0__ZTV8External"));
    assert_eq!(module.rewrite(Phase::PipelineStart).vtable_words, 0);
}

#[test]
fn without_tbaa_a_pointer_used_as_a_vtable_is_translated_and_a_local_one_is_not() {
    // -O0: no TBAA anywhere. `%vt` is read through an object and its slot is called; `%local`
    // is a pointer variable of the function (an alloca of ptr); `%data` is only dereferenced.
    let module = Module::parse(&format!(
        r#"define i32 @kernel(ptr %obj, ptr %fns) {{
  %p = alloca ptr, align 8
  store ptr %fns, ptr %p, align 8
  %vt = load ptr, ptr %obj, align 8
  %slot = getelementptr inbounds ptr, ptr %vt, i64 2
  %fn = load ptr, ptr %slot, align 8
  %r = call i32 %fn(ptr %obj)
  %local = load ptr, ptr %p, align 8
  %entry = getelementptr inbounds ptr, ptr %local, i64 1
  %g = load ptr, ptr %entry, align 8
  %s = call i32 %g(ptr %obj)
  %data = load ptr, ptr %obj, align 8
  %word = getelementptr inbounds i32, ptr %data, i64 1
  %v = load i32, ptr %word, align 4
  ret i32 %v
}}
{DEVICE_FLAG}"#
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.vtable_loads, summary.translated, summary.from_device_vtable), (1, 2, 0));
    assert!(module.text().contains("@__kmpc_target_translate_fptr(ptr %vt)"));
    assert!(!module.text().contains("@__kmpc_target_translate_fptr(ptr %local)"));
    assert!(!module.text().contains("@__kmpc_target_translate_fptr(ptr %data)"));
    // Guessed, not known: the call through its slot stays translated.
    assert_translated(&module, "kernel", &module.line_in("kernel", "%r = "), "%fn");
}

#[test]
fn dynamic_casts_with_rtti_call_the_device_librarys_cast_and_those_without_are_left_alone() {
    // x86_64 device code has RTTI: the type_info arguments are globals. GPU device code has none:
    // clang passes null constants.
    let module = Module::parse(&format!(
        r#"@_ZTI4Base = external constant ptr
@_ZTI7Derived = external constant ptr
declare ptr @__dynamic_cast(ptr, ptr, ptr, i64)
define ptr @with_rtti(ptr %obj) {{
  %d = call ptr @__dynamic_cast(ptr %obj, ptr @_ZTI4Base, ptr @_ZTI7Derived, i64 0)
  ret ptr %d
}}
define ptr @without_rtti(ptr %obj) {{
  %d = call ptr @__dynamic_cast(ptr %obj, ptr null, ptr null, i64 0)
  ret ptr %d
}}
{DEVICE_FLAG}"#
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.dynamic_casts, summary.dynamic_casts_left), (1, 1));
    assert!(module
        .line_in("with_rtti", "%d = ")
        .contains("@__omptarget_indirect_dynamic_cast(ptr %obj, ptr @_ZTI4Base, ptr @_ZTI7Derived, i64 0)"));
    assert!(module.line_in("without_rtti", "%d = ").contains("@__dynamic_cast(ptr %obj, ptr null"));
    assert!(module.text().contains("declare ptr @__omptarget_indirect_dynamic_cast(ptr, ptr, ptr, i64)"));
    // Nothing is left to route after the optimizer, nor in a host module.
    assert_eq!(module.rewrite(Phase::OptimizerLast).dynamic_casts, 0);
    let host = Module::parse(
        "declare ptr @__dynamic_cast(ptr, ptr, ptr, i64)\n@t = external constant ptr\n\
         define ptr @f(ptr %o) {\n  %d = call ptr @__dynamic_cast(ptr %o, ptr @t, ptr @t, i64 0)\n  ret ptr %d\n}\n",
    );
    assert_eq!(host.rewrite(Phase::PipelineStart).dynamic_casts, 0);
}

/// A device module as flang 23 emits it for `r = s%area()` on a mapped `class(shape)` and
/// `same_type_as(s, t)`: the type descriptor (`internal`, in a comdat) and its binding table, the
/// descriptor copied, its type-descriptor pointer loaded from the scalar descriptor (field 7) and
/// from an array's (field 8, after the dimensions), the binding's address read and called.
const FORTRAN_DISPATCH: &str = r#"
$_QMshapesEXdtXsquare = comdat any
%binding = type { i64, { ptr, i64, i32, i8, i8, i8, i8 } }
@_QMshapesPsquare_area = external global i8
@_QMshapesEXvXsquare = internal constant [1 x %binding] [%binding { i64 ptrtoint (ptr @_QMshapesPsquare_area to i64), { ptr, i64, i32, i8, i8, i8, i8 } zeroinitializer }]
@_QMshapesEXdtXsquare = internal constant { ptr, i64 } { ptr @_QMshapesEXvXsquare, i64 32 }, comdat
@_QMshapesEXvXhelper = internal constant [1 x i64] zeroinitializer
declare i1 @_FortranASameTypeAs(ptr, ptr)
define float @kernel(ptr %box, ptr %array) {
  %td.ptr = getelementptr { ptr, i64, i32, i8, i8, i8, i8, ptr, [1 x i64] }, ptr %box, i32 0, i32 7
  %td = load ptr, ptr %td.ptr, align 8
  %bindings = load ptr, ptr %td, align 8
  %address = load i64, ptr %bindings, align 8
  %area = inttoptr i64 %address to ptr
  %r = call float %area(ptr %box)
  %base.ptr = getelementptr { ptr, i64, i32, i8, i8, i8, i8, [1 x [3 x i64]], ptr, [1 x i64] }, ptr %array, i32 0, i32 0
  %base = load ptr, ptr %base.ptr, align 8
  %atd.ptr = getelementptr { ptr, i64, i32, i8, i8, i8, i8, [1 x [3 x i64]], ptr, [1 x i64] }, ptr %array, i32 0, i32 8
  %atd = load ptr, ptr %atd.ptr, align 8
  %same = call i1 @_FortranASameTypeAs(ptr %box, ptr %array)
  ret float %r
}
"#;

/// [`FORTRAN_DISPATCH`] as a unit that only uses the module sees it: the binding's procedure
/// unresolved (`undef`), the binding table in a comdat of its own as flang puts it.
fn fortran_dispatch_of_a_user(triple: &str) -> String {
    format!("target triple = \"{triple}\"\n")
        + &FORTRAN_DISPATCH
            .replace("i64 ptrtoint (ptr @_QMshapesPsquare_area to i64)", "i64 undef")
            .replace(
                "@_QMshapesEXvXsquare = internal constant [1 x %binding]",
                "$_QMshapesEXvXsquare = comdat any\n@_QMshapesEXvXsquare = internal constant [1 x %binding]",
            )
            .replace(
                "zeroinitializer }]\n@_QMshapesEXdtXsquare",
                "zeroinitializer }], comdat\n@_QMshapesEXdtXsquare",
            )
}

#[test]
fn a_type_descriptor_with_unresolved_bindings_gives_way_and_keeps_its_tables_out_of_comdats() {
    for triple in ["x86_64-unknown-linux-gnu", "nvptx64-nvidia-cuda"] {
        let source = fortran_dispatch_of_a_user(triple);
        assert!(source.contains("i64 undef") && source.contains("}], comdat"), "{source}");
        let module = Module::parse(&format!("{source}{DEVICE_FLAG}"));
        module.rewrite(Phase::PipelineStart);
        let text = module.text();
        // Weak: a unit whose bindings are resolved wins at the link, whatever the order.
        assert!(text.contains("@_QMshapesEXdtXsquare = weak_odr hidden constant"), "{triple}:\n{text}");
        // Its binding table left flang's comdat: a copy the link discards no descriptor points to.
        let bindings = text.lines().find(|l| l.starts_with("@_QMshapesEXvXsquare = ")).unwrap_or_default();
        assert!(!bindings.contains("comdat"), "{triple}: {bindings}");
    }
    // NVPTX has no comdats: a complete copy is weak_odr there too.
    let complete = format!("target triple = \"nvptx64-nvidia-cuda\"\n{FORTRAN_DISPATCH}{DEVICE_FLAG}");
    let module = Module::parse(&complete);
    module.rewrite(Phase::PipelineStart);
    let text = module.text();
    assert!(text.contains("@_QMshapesEXdtXsquare = weak_odr hidden constant"), "{text}");
    assert!(!text.contains("$_QMshapesEXdtXsquare = comdat"), "{text}");
}

#[test]
fn an_unbound_binding_becomes_a_stub_that_names_it_and_traps() {
    // The binding's name as flang gives it: a character descriptor of a constant string.
    let named = |source: String| {
        source
            .replace(
                "@_QMshapesPsquare_area = external global i8",
                "@_QMshapesPsquare_area = external global i8\n@_QMshapesEXnXarea = internal constant [4 x i8] c\"area\"",
            )
            .replace(
                "{ ptr, i64, i32, i8, i8, i8, i8 } zeroinitializer }]",
                "{ ptr, i64, i32, i8, i8, i8, i8 } { ptr @_QMshapesEXnXarea, i64 4, i32 0, i8 0, i8 0, i8 0, i8 0 } }]",
            )
    };
    // x86_64 and NVPTX say which binding was called (NVPTX through CUDA's `__assertfail`); AMDGPU
    // only traps.
    for (triple, prints) in
        [("x86_64-unknown-linux-gnu", true), ("nvptx64-nvidia-cuda", true), ("amdgcn-amd-amdhsa", false)]
    {
        let source = named(fortran_dispatch_of_a_user(triple));
        assert!(source.contains("i64 undef") && source.contains("c\"area\""), "{source}");
        let module = Module::parse(&format!("{source}{DEVICE_FLAG}"));
        let summary = module.rewrite(Phase::PipelineStart);
        let text = module.text();
        assert_eq!(summary.unbound_bindings, 1, "{triple}:\n{text}");
        // The descriptor still gives way to a complete copy: it was incomplete before the stub.
        assert!(text.contains("@_QMshapesEXdtXsquare = weak_odr hidden constant"), "{triple}:\n{text}");
        let bindings = text.lines().find(|l| l.starts_with("@_QMshapesEXvXsquare = ")).unwrap_or_default();
        assert!(
            bindings.contains("i64 ptrtoint (ptr @__omptarget_indirect_unbound.square.area to i64)"),
            "{triple}: {bindings}"
        );
        assert!(!bindings.contains("undef"), "{triple}: {bindings}");
        assert!(
            text.contains("define internal void @__omptarget_indirect_unbound.square.area(ptr"),
            "{triple}:\n{text}"
        );
        let message = "type-bound procedure `area` of type `square` is not compiled for the device";
        assert_eq!(text.contains(message), prints, "{triple}:\n{text}");
        assert!(text.contains("call void @llvm.trap()"), "{triple}:\n{text}");
        // A second run finds nothing left to fill.
        assert_eq!(module.rewrite(Phase::PipelineStart).unbound_bindings, 0);
    }
    // A complete table keeps its procedure.
    let module = Module::parse(&format!("{FORTRAN_DISPATCH}{DEVICE_FLAG}"));
    assert_eq!(module.rewrite(Phase::PipelineStart).unbound_bindings, 0);
    assert!(!module.text().contains("__omptarget_indirect_unbound."));
}

/// The host compile's IR of [`FORTRAN_DISPATCH`]'s module: the binding's procedure defined,
/// calling a procedure without a binding that reads a constant table and calls an intrinsic;
/// `CALLEE_EXTRA` is where a test adds a call.
const FORTRAN_BOUND_HOST: &str = r#"
%binding = type { i64, { ptr, i64, i32, i8, i8, i8, i8 } }
@_QMshapesECweights = internal constant [2 x float] [float 1.0, float 2.0]
@_QMshapesEXnXarea = internal constant [4 x i8] c"area"
@_QMshapesEXvXsquare = linkonce_odr constant [1 x %binding] [%binding { i64 ptrtoint (ptr @_QMshapesPsquare_area to i64), { ptr, i64, i32, i8, i8, i8, i8 } { ptr @_QMshapesEXnXarea, i64 4, i32 0, i8 0, i8 0, i8 0, i8 0 } }]
declare float @llvm.fabs.f32(float)
declare void @_FortranAioOutputReal32(ptr, float)
define float @_QMshapesPsquare_area(ptr %self) {
  %slot = alloca float, align 4
  %side = load float, ptr %self, align 4
  %weight.ptr = getelementptr [2 x float], ptr @_QMshapesECweights, i64 0, i64 1
  %weight = load float, ptr %weight.ptr, align 4
  %scaled = call float @_QMshapesPweighted(float %side, float %weight)
  store float %scaled, ptr %slot, align 4
  %r = load float, ptr %slot, align 4
  ret float %r
}
define float @_QMshapesPweighted(float %x, float %w) {
  %a = call float @llvm.fabs.f32(float %x)
  %p = fmul float %a, %w
  ; CALLEE_EXTRA
  ret float %p
}
"#;

const AMDGPU_LAYOUT: &str = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-\
p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-\
v2048:2048-n32:64-S32-A5-G1-ni:7:8:9";

/// [`FORTRAN_BOUND_HOST`] (with `extra` in its callee) as the host compile writes it for the device
/// compile: rewritten at the pipeline's start (which records the binding tables), its table then
/// dropped as the optimizer drops an unused one, written as bitcode to a file of `dir`.
fn host_ir_file(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    host_ir_file_of(dir, &FORTRAN_BOUND_HOST.replace("; CALLEE_EXTRA", extra))
}

/// [`host_ir_file`] of the host module `module` (whose binding table is `_QMshapesEXvXsquare`).
fn host_ir_file_of(dir: &std::path::Path, module: &str) -> std::path::PathBuf {
    let source = format!("target triple = \"x86_64-unknown-linux-gnu\"\n{module}");
    let host = Module::parse(&source);
    assert_eq!(host.rewrite(Phase::PipelineStart).recorded_binding_tables, 1);
    let path = dir.join("host.bc");
    // SAFETY: the table is unused (the record holds the procedure, not the table); the module
    // is valid.
    unsafe {
        LLVMDeleteGlobal(LLVMGetNamedGlobal(host.module, c"_QMshapesEXvXsquare".as_ptr()));
        let file = CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(
            omptarget_indirect_pass::llvm::bit_writer::LLVMWriteBitcodeToFile(host.module, file.as_ptr()),
            0
        );
    }
    path
}

/// [`fortran_dispatch_of_a_user`] with the binding's name, as the module's own device compile
/// sees it when the procedure is not `declare target`: the slot `undef`, nothing of the procedure.
fn fortran_dispatch_without_declare_target(triple: &str, layout: &str) -> String {
    format!("target datalayout = \"{layout}\"\n")
        + &fortran_dispatch_of_a_user(triple)
            .replace("@_QMshapesPsquare_area = external global i8\n", "@_QMshapesEXnXarea = internal constant [4 x i8] c\"area\"\n")
            .replace(
                "{ ptr, i64, i32, i8, i8, i8, i8 } zeroinitializer }]",
                "{ ptr, i64, i32, i8, i8, i8, i8 } { ptr @_QMshapesEXnXarea, i64 4, i32 0, i8 0, i8 0, i8 0, i8 0 } }]",
            )
}

#[test]
fn a_binding_without_declare_target_gets_a_copy_of_the_host_procedure() {
    let dir = std::env::temp_dir().join(format!("omptarget-indirect-binding-copies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let host_ir = host_ir_file(&dir, "");
    for (triple, layout) in
        [("x86_64-unknown-linux-gnu", ""), ("amdgcn-amd-amdhsa", AMDGPU_LAYOUT), ("nvptx64-nvidia-cuda", "")]
    {
        let source = fortran_dispatch_without_declare_target(triple, layout);
        assert!(source.contains("i64 undef") && !source.contains("@_QMshapesPsquare_area"), "{source}");
        let module = Module::parse(&format!("{source}{DEVICE_FLAG}"));
        // SAFETY: the module is valid and only this test uses it.
        let summary =
            unsafe { rewrite_module_with_host_ir(module.module, Phase::PipelineStart, Some(&host_ir)) };
        module.verify();
        let text = module.text();
        assert_eq!((summary.copied_bindings, summary.unbound_bindings), (1, 0), "{triple}:\n{text}");
        let bindings = text.lines().find(|l| l.starts_with("@_QMshapesEXvXsquare = ")).unwrap_or_default();
        assert!(
            bindings.contains("i64 ptrtoint (ptr @_QMshapesPsquare_area to i64)"),
            "{triple}: {bindings}"
        );
        // The procedure, its callee and the constant table it reads; the intrinsic declared.
        assert!(text.contains("define float @_QMshapesPsquare_area(ptr %self)"), "{triple}:\n{text}");
        assert!(text.contains("define float @_QMshapesPweighted(float %x, float %w)"), "{triple}:\n{text}");
        assert!(text.contains("@_QMshapesECweights = internal"), "{triple}:\n{text}");
        assert!(text.contains("declare float @llvm.fabs.f32(float)"), "{triple}:\n{text}");
        // Complete now: the descriptor wins over a user's copy (a strong one where comdats exist).
        let strong = !triple.starts_with("nvptx");
        assert_eq!(text.contains("@_QMshapesEXdtXsquare = hidden constant"), strong, "{triple}:\n{text}");
        if triple.starts_with("amdgcn") {
            // AMDGPU's stack is address space 5, its globals 1.
            assert!(text.contains("%slot = alloca float, align 4, addrspace(5)"), "{text}");
            assert!(text.contains("addrspace(1) constant [2 x float]"), "{text}");
        }
    }
    // Nothing to copy from: the stub stays.
    let source = fortran_dispatch_without_declare_target("x86_64-unknown-linux-gnu", "");
    let module = Module::parse(&format!("{source}{DEVICE_FLAG}"));
    assert_eq!(module.rewrite(Phase::PipelineStart).copied_bindings, 0);
    assert!(module.text().contains("@__omptarget_indirect_unbound.square.area"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_binding_whose_procedure_another_file_defines_leads_to_it_by_name_with_a_weak_trap_here() {
    // The driver's host compile declares the module's procedure (the module's file defines it).
    let dir =
        std::env::temp_dir().join(format!("omptarget-indirect-binding-elsewhere-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let driver_host = FORTRAN_BOUND_HOST.replace(
        "define float @_QMshapesPsquare_area(ptr %self) {",
        "declare float @_QMshapesPsquare_area(ptr)\ndefine float @_QMshapesPunused_area(ptr %self) {",
    );
    let host_ir = host_ir_file_of(&dir, &driver_host);
    for (triple, layout) in
        [("x86_64-unknown-linux-gnu", ""), ("amdgcn-amd-amdhsa", AMDGPU_LAYOUT), ("nvptx64-nvidia-cuda", "")]
    {
        let source = fortran_dispatch_without_declare_target(triple, layout);
        let module = Module::parse(&format!("{source}{DEVICE_FLAG}"));
        // SAFETY: the module is valid and only this test uses it.
        let summary =
            unsafe { rewrite_module_with_host_ir(module.module, Phase::PipelineStart, Some(&host_ir)) };
        module.verify();
        let text = module.text();
        assert_eq!(
            (summary.copied_bindings, summary.elsewhere_bindings, summary.unbound_bindings),
            (0, 1, 0),
            "{triple}:\n{text}"
        );
        // The slot names the module's procedure, which is here only as a weak trap that names the
        // binding; nothing of the host's bodies came in.
        let bindings = text.lines().find(|l| l.starts_with("@_QMshapesEXvXsquare = ")).unwrap_or_default();
        assert!(
            bindings.contains("i64 ptrtoint (ptr @_QMshapesPsquare_area to i64)"),
            "{triple}: {bindings}"
        );
        let body = text
            .split("\ndefine ")
            .find(|f| f.contains("@_QMshapesPsquare_area(ptr"))
            .unwrap_or_else(|| panic!("{triple}: no definition in\n{text}"));
        assert!(body.starts_with("weak protected float @_QMshapesPsquare_area("), "{triple}: {body}");
        assert!(body.contains("@llvm.trap()"), "{triple}: {body}");
        assert!(!text.contains("define float @_QMshapesPweighted"), "{triple}:\n{text}");
        let message = "type-bound procedure `area` of type `square` is not compiled for the device (`_QMshapesPsquare_area` is defined by another file";
        assert_eq!(text.contains(message), !triple.starts_with("amdgcn"), "{triple}:\n{text}");
        // Every unit's table now leads to the same procedures: the descriptor is complete.
        let strong = !triple.starts_with("nvptx");
        assert_eq!(text.contains("@_QMshapesEXdtXsquare = hidden constant"), strong, "{triple}:\n{text}");
        assert!(!text.contains("__omptarget_indirect_unbound."), "{triple}:\n{text}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_binding_whose_procedure_calls_what_the_device_lacks_keeps_a_stub_that_says_so() {
    let dir = std::env::temp_dir().join(format!("omptarget-indirect-binding-refusal-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let host_ir = host_ir_file(&dir, "call void @_FortranAioOutputReal32(ptr null, float %p)");
    let source = fortran_dispatch_without_declare_target("x86_64-unknown-linux-gnu", "");
    let module = Module::parse(&format!("{source}{DEVICE_FLAG}"));
    // SAFETY: the module is valid and only this test uses it.
    let summary = unsafe { rewrite_module_with_host_ir(module.module, Phase::PipelineStart, Some(&host_ir)) };
    module.verify();
    let text = module.text();
    assert_eq!((summary.copied_bindings, summary.unbound_bindings), (0, 1), "{text}");
    // Nothing of the host's procedures came in, and the stub says why.
    assert!(!text.contains("define float @_QMshapesP"), "{text}");
    assert!(
        text.contains("`_QMshapesPweighted` calls `_FortranAioOutputReal32`, which the device does not have"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn fortran_type_descriptors_are_shared_paired_and_translated_and_type_inquiries_routed() {
    let module = Module::parse(&format!("{FORTRAN_DISPATCH}{DEVICE_FLAG}"));
    let summary = module.rewrite(Phase::PipelineStart);
    let text = module.text();
    // One definition per image: its bindings resolved, a strong one in a comdat of its own (no
    // triple: a target with comdats); the binding tables stay private.
    assert_eq!(summary.shared_type_descriptors, 1);
    let descriptor = text.lines().find(|l| l.starts_with("@_QMshapesEXdtXsquare = ")).unwrap_or_default();
    assert!(descriptor.starts_with("@_QMshapesEXdtXsquare = hidden constant"), "{text}");
    assert!(descriptor.ends_with(", comdat"), "{descriptor}");
    assert!(text.contains("@_QMshapesEXvXhelper = internal constant"), "{text}");
    // Its two words are exported as a vtable's are.
    assert_eq!(summary.vtable_words, 2);
    assert!(
        text.contains("@__omptarget_indirect_vtable_1__QMshapesEXdtXsquare = weak_odr protected constant")
    );
    // Both type-descriptor loads are translated, the base address is not.
    assert_eq!(summary.vtable_loads, 2);
    for loaded in ["%td", "%atd"] {
        assert!(text.contains(&format!("@__kmpc_target_translate_fptr(ptr {loaded})")), "{loaded}:\n{text}");
    }
    assert!(!text.contains("@__kmpc_target_translate_fptr(ptr %base)"));
    assert!(module.line_in("kernel", "%bindings = ").contains("ptr %"), "{text}");
    assert!(!module.line_in("kernel", "%bindings = ").contains("ptr %td,"), "{text}");
    // same_type_as asks the device library.
    assert_eq!(summary.type_inquiries, 1);
    assert!(module
        .line_in("kernel", "%same = ")
        .contains("@__omptarget_indirect_same_type_as(ptr %box, ptr %array)"));
    // A second run changes nothing of this.
    let again = module.rewrite(Phase::PipelineStart);
    assert_eq!(
        (again.shared_type_descriptors, again.vtable_words, again.vtable_loads, again.type_inquiries),
        (0, 0, 0, 0)
    );
}

/// A host module as flang 22 emits it for `type(indirect) :: twice_indirect = indirect(twice)`
/// declared target, beside a procedure that already has an indirect entry and a holder left
/// out of `declare target` (LLVM 20+ entry layout).
const FORTRAN_HOST: &str = r#"
%_QMomptarget_indirectTindirect = type { ptr }
%struct.__tgt_offload_entry = type { i64, i16, i16, i32, ptr, ptr, i64, i64, ptr }
@_QMcalleesEtwice_indirect = global %_QMomptarget_indirectTindirect { ptr @_QMcalleesPtwice }
@_QMcalleesEthrice_indirect = global %_QMomptarget_indirectTindirect { ptr @_QMcalleesPthrice }
@name = internal unnamed_addr constant [26 x i8] c"_QMcalleesEtwice_indirect\00", section ".llvm.rodata.offloading"
@name3 = internal unnamed_addr constant [27 x i8] c"_QMcalleesEthrice_indirect\00", section ".llvm.rodata.offloading"
@fname = internal unnamed_addr constant [8 x i8] c"thrice.\00", section ".llvm.rodata.offloading"
@.offloading.entry._QMcalleesEtwice_indirect = weak constant %struct.__tgt_offload_entry { i64 0, i16 1, i16 1, i32 0, ptr @_QMcalleesEtwice_indirect, ptr @name, i64 8, i64 0, ptr null }, section "llvm_offload_entries", align 8
@.offloading.entry._QMcalleesEthrice_indirect = weak constant %struct.__tgt_offload_entry { i64 0, i16 1, i16 1, i32 0, ptr @_QMcalleesEthrice_indirect, ptr @name3, i64 8, i64 0, ptr null }, section "llvm_offload_entries", align 8
@.offloading.entry.thrice = weak constant %struct.__tgt_offload_entry { i64 0, i16 1, i16 1, i32 8, ptr @_QMcalleesPthrice, ptr @fname, i64 8, i64 0, ptr null }, section "llvm_offload_entries", align 8
define i32 @_QMcalleesPtwice(ptr %x) {
  ret i32 2
}
define i32 @_QMcalleesPthrice(ptr %x) {
  ret i32 3
}
"#;

#[test]
fn a_fortran_holder_declared_target_gets_an_indirect_entry_for_its_procedure() {
    let module = Module::parse(FORTRAN_HOST);
    let summary = module.rewrite(Phase::PipelineStart);
    // twice gets one; thrice already has one (the clause's own entry wins).
    assert_eq!(summary.fortran_entries, 1);
    let text = module.text();
    let twin = text
        .lines()
        .find(|l| l.starts_with("@.offloading.entry._QMcalleesEtwice_indirect.indirect = "))
        .unwrap_or_else(|| panic!("no indirect entry in\n{text}"));
    assert!(
        twin.contains("i32 8, ptr @_QMcalleesPtwice, ptr @name, i64 8")
            && twin.contains("section \"llvm_offload_entries\"")
            && twin.starts_with("@.offloading.entry._QMcalleesEtwice_indirect.indirect = weak constant"),
        "{twin}"
    );
    assert!(text
        .lines()
        .any(|l| l.starts_with("@llvm.compiler.used") && l.contains("twice_indirect.indirect")));
    assert!(!text.contains("thrice_indirect.indirect"));
    // Once is enough: a second run adds nothing.
    assert_eq!(module.rewrite(Phase::PipelineStart).fortran_entries, 0);
}

/// A host module of an OpenMP compile (LLVM 20+ entry layout): two instantiations of one indirect
/// template, one entry between them as clang leaves it, both annotated by the frontend plugin;
/// an external vtable and an internal one.
const CXX_HOST: &str = r#"
%struct.__tgt_offload_entry = type { i64, i16, i16, i32, ptr, ptr, i64, i64, ptr }
@name = internal unnamed_addr constant [38 x i8] c"__omp_offloading_fe00_9dc043_twice_l2\00", section ".llvm.rodata.offloading"
@.offloading.entry.__omp_offloading_fe00_9dc043_twice_l2 = weak constant %struct.__tgt_offload_entry { i64 0, i16 1, i16 1, i32 8, ptr @_Z5twiceIiET_S0_, ptr @name, i64 8, i64 0, ptr null }, section "llvm_offload_entries", align 8
@.str = private unnamed_addr constant [19 x i8] c"omptarget_indirect\00", section "llvm.metadata"
@.file = private unnamed_addr constant [6 x i8] c"t.cpp\00", section "llvm.metadata"
@llvm.global.annotations = appending global [2 x { ptr, ptr, ptr, i32, ptr }] [{ ptr, ptr, ptr, i32, ptr } { ptr @_Z5twiceIiET_S0_, ptr @.str, ptr @.file, i32 2, ptr null }, { ptr, ptr, ptr, i32, ptr } { ptr @_Z5twiceIdET_S0_, ptr @.str, ptr @.file, i32 2, ptr null }], section "llvm.metadata"
@_ZTV6Circle = constant { [4 x ptr] } { [4 x ptr] [ptr null, ptr null, ptr @_Z5twiceIiET_S0_, ptr @_Z5twiceIdET_S0_] }
@_ZTVN12_GLOBAL__N_15LocalE = internal constant { [3 x ptr] } { [3 x ptr] [ptr null, ptr null, ptr @_Z5twiceIiET_S0_] }
@use = global ptr @_ZTVN12_GLOBAL__N_15LocalE
define weak_odr i32 @_Z5twiceIiET_S0_(i32 %x) {
  ret i32 %x
}
define weak_odr double @_Z5twiceIdET_S0_(double %x) {
  ret double %x
}
!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp", i32 51}
"#;

#[test]
fn host_modules_name_an_entry_per_instantiation_and_record_their_vtables() {
    let module = Module::parse(CXX_HOST);
    let start = module.rewrite(Phase::PipelineStart);
    // clang's entry renamed after twice<int>, and one added for twice<double>.
    assert_eq!(start.indirect_entries, 2);
    let text = module.text();
    for symbol in ["_Z5twiceIiET_S0_", "_Z5twiceIdET_S0_"] {
        let entry = text
            .lines()
            .find(|l| l.starts_with(&format!("@.offloading.entry.__omp_offloading_indirect_{symbol} = ")))
            .unwrap_or_else(|| {
                panic!(
                    "no entry for {symbol} in
{text}"
                )
            });
        assert!(entry.contains(&format!("i32 8, ptr @{symbol}, ptr @")), "{entry}");
        assert!(text.contains(&format!("c\"__omp_offloading_indirect_{symbol}\\00\"")), "{text}");
    }
    let end = module.rewrite(Phase::OptimizerLast);
    assert_eq!(end.host_vtables, 1, "the internal vtable has no name to pair by");
    let text = module.text();
    let record =
        text.lines().find(|l| l.contains("section \"omptarget_indirect_vtables\"")).unwrap_or_else(|| {
            panic!(
                "no record in
{text}"
            )
        });
    // "OIVT", 40 bytes (24 + "_ZTV6Circle" NUL-padded to 16), the vtable, 32 bytes.
    assert!(record.contains("i32 1414941007, i32 40, ptr @_ZTV6Circle, i64 32"), "{record}");
    assert!(text
        .lines()
        .any(|l| l.starts_with("@llvm.used") && l.contains("@__omptarget_indirect_host_vtable")));
    let anchor = text
        .lines()
        .find(|l| l.starts_with("@.offloading.entry.__omptarget_indirect_image_anchor = "))
        .unwrap_or_else(|| {
            panic!(
                "no anchor entry in
{text}"
            )
        });
    // In the entry layout of the LLVM the plugin is built for: flags 0, 8 bytes.
    assert!(
        anchor.contains("ptr @__omptarget_indirect_image_anchor, ptr @.omptarget_indirect.entry_name")
            && anchor.contains("i64 8")
            && anchor.contains("comdat($__omptarget_indirect_image_anchor)"),
        "{anchor}"
    );
    assert!(
        text.contains("@__omptarget_indirect_image_anchor = linkonce_odr hidden global i64 0, comdat"),
        "{text}"
    );
    // A module that is not OpenMP's gets nothing.
    let plain = Module::parse(
        "@_ZTV1A = constant [2 x ptr] zeroinitializer
",
    );
    assert_eq!(plain.rewrite(Phase::OptimizerLast).host_vtables, 0);
}

#[test]
fn device_modules_name_a_global_per_indirect_function_beside_clangs() {
    let module = Module::parse(&format!(
        "@__omp_offloading_fe00_9dc043_twice_l2 = protected constant ptr @_Z5twiceIiET_S0_
         @__omp_offloading_fe00_9dc043_twice_l2.1 = protected constant ptr @_Z5twiceIdET_S0_
         @__omp_offloading_fe00_9dc043_local_l3 = protected constant ptr @_ZL5locali
         define weak_odr i32 @_Z5twiceIiET_S0_(i32 %x) {{
  ret i32 %x
}}
         define weak_odr double @_Z5twiceIdET_S0_(double %x) {{
  ret double %x
}}
         define internal i32 @_ZL5locali(i32 %x) {{
  ret i32 %x
}}
{DEVICE_FLAG}"
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!((summary.indirect_entries, summary.image_anchor), (3, true));
    let text = module.text();
    for symbol in ["_Z5twiceIiET_S0_", "_Z5twiceIdET_S0_"] {
        assert!(
            text.contains(&format!(
                "@__omp_offloading_indirect_{symbol} = weak_odr protected constant ptr @{symbol}"
            )),
            "{text}"
        );
    }
    // Internal linkage: the file's hash before the symbol (test.ll), strong.
    assert!(
        text.lines().any(|l| l.starts_with("@__omp_offloading_indirect_")
            && l.contains("__ZL5locali = protected constant ptr @_ZL5locali")),
        "{text}"
    );
    // clang's globals stay, for a host compiled without the plugin: weak where the function is
    // inline (every file that uses it defines it), strong where it is local to the file.
    assert!(text.contains("@__omp_offloading_fe00_9dc043_twice_l2.1 = weak protected constant"), "{text}");
    assert!(text.contains("@__omp_offloading_fe00_9dc043_local_l3 = protected constant"), "{text}");
    assert!(text.contains("@__omptarget_indirect_image_anchor = weak_odr protected global i64 0"));
}

/// A device module for `triple` (empty: no target) whose function `sum` translates, in a loop, a
/// vtable pointer, a loop-invariant one and a function pointer, and whose runtime function loops
/// over vtable pointers too.
fn loops_of_translations(triple: &str) -> Module {
    Module::parse(&format!(
        "{triple}{}",
        format_args!(
            r#"declare ptr @__kmpc_target_translate_fptr(ptr) #0
define i64 @sum(ptr %objects, i64 %n, ptr %invariant) {{
entry:
  %once = call ptr @__kmpc_target_translate_fptr(ptr %invariant) #0
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc.next, %loop ]
  %slot = getelementptr ptr, ptr %objects, i64 %i
  %fp = load ptr, ptr %slot
  %t = call ptr @__kmpc_target_translate_fptr(ptr %fp) #0, !omptarget-indirect.vtable !1
  %same = call ptr @__kmpc_target_translate_fptr(ptr %invariant) #0, !omptarget-indirect.vtable !1
  %r = call i64 %t(i64 %i)
  %other = getelementptr ptr, ptr %slot, i64 1
  %fp2 = load ptr, ptr %other
  %f = call ptr @__kmpc_target_translate_fptr(ptr %fp2) #0
  %r2 = call i64 %f(i64 %r)
  %acc.next = add i64 %acc, %r2
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %acc.next
}}
define void @__kmpc_runtime_loop(ptr %objects, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %slot = getelementptr ptr, ptr %objects, i64 %i
  %fp = load ptr, ptr %slot
  %t = call ptr @__kmpc_target_translate_fptr(ptr %fp) #0, !omptarget-indirect.vtable !1
  call void %t()
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}
attributes #0 = {{ nounwind willreturn nosync nofree memory(none) }}
!1 = !{{}}
{DEVICE_FLAG}"#
        )
    ))
}

/// After the optimizer, a vtable pointer's translation in a loop whose key changes keeps its last
/// key and result: the lookup is called on the miss path only, a phi picks the cached result on
/// the hit path, and the key registers start null. A loop-invariant key (LICM's job), a
/// translation outside a loop and a function pointer's are left as they are; so is the OpenMP
/// runtime.
#[test]
fn translations_in_loops_keep_their_last_key_and_result() {
    let module = loops_of_translations("");
    let summary = module.rewrite(Phase::OptimizerLast);
    assert_eq!((summary.cached, summary.guarded), (1, 1), "{}", module.text());
    // The key is compared with the last one; the call moved to the miss path, which stores both.
    let compare = module.line_in("sum", "%translation.same = icmp eq ptr");
    assert!(compare.contains("%fp"), "{compare}");
    let text = module.text();
    let body = text.split("\ndefine ").find(|f| f.starts_with("i64 @sum(")).unwrap();
    let indirect = module.line_in("sum", "(i64 %i)");
    let result = module.line_in("sum", &format!("{} = phi ptr", callee_of(&indirect)));
    assert!(
        result.contains("%translation.found"),
        "the callee is the miss path's answer or the last result: {result}"
    );
    // The miss path calls the lookup only for a key in the table's range; any other key is its own
    // answer.
    let found = module.line_in("sum", "= phi ptr [ %t, ");
    assert!(found.contains("%translation.found") && found.contains("[ %fp, "), "{found}");
    module.line_in("sum", "br i1 %translation.in_range");
    for bound in ["call i64 @__omptarget_indirect_first_key()", "call i64 @__omptarget_indirect_last_key()"] {
        assert_eq!(body.matches(bound).count(), 1, "read once, at the function's entry:\n{body}");
    }
    // Carried around the loop: the header's phis start null from the entry.
    let carried: Vec<&str> = body.lines().filter(|l| l.contains("= phi ptr [ null, %entry ]")).collect();
    assert_eq!(carried.len(), 2, "last key and last result carried from null:\n{body}");
    assert!(!body.contains("alloca"), "the cache lives in registers:\n{body}");
    // Left alone: the loop-invariant key, the translation outside the loop, the runtime's loop.
    assert_eq!(body.matches("@__kmpc_target_translate_fptr(ptr %invariant)").count(), 2);
    // A function pointer's translation is not cached, only guarded by the key range.
    let pointer = module.line_in("sum", "(ptr %fp2)");
    assert!(!pointer.contains("cached") && pointer.contains("guarded"), "{pointer}");
    let guard = module.line_in("sum", "= phi ptr [ %f, ");
    assert!(guard.contains("%translation.found") && guard.contains("[ %fp2, "), "{guard}");
    let hit = module.line_in("sum", "br i1 %translation.same");
    assert!(hit.contains("!prof"), "the hit path is the likely one: {hit}");
    assert!(!text
        .split("\ndefine ")
        .find(|f| f.contains("@__kmpc_runtime_loop("))
        .unwrap()
        .contains("translation.same"));
    // A second run (a module optimized twice) leaves the cached translation as it is.
    assert_eq!(module.rewrite(Phase::OptimizerLast).cached, 0);
}

/// clang 23's own lookup before a virtual call and a function-pointer call becomes the
/// project's translation: one lookup per call, none left of LLVM's, and the call it feeds is not
/// translated again.
#[test]
fn clang_23_lookups_are_answered_by_the_translation() {
    let module = Module::parse(&format!(
        r#"declare ptr @__llvm_omp_indirect_call_lookup(ptr)
define i32 @kernel(ptr %object, ptr %fp) {{
  %vtable = load ptr, ptr %object
  %device_vtable = call ptr @__llvm_omp_indirect_call_lookup(ptr %vtable)
  %slot = load ptr, ptr %device_vtable
  %r = call i32 %slot(ptr %object)
  %device_fp = call ptr @__llvm_omp_indirect_call_lookup(ptr %fp)
  %s = call i32 %device_fp(i32 %r)
  ret i32 %s
}}
{DEVICE_FLAG}"#
    ));
    let summary = module.rewrite(Phase::PipelineStart);
    assert_eq!(summary.adopted, 2, "{}", module.text());
    let text = module.text();
    let body = text.split("define i32 @kernel").nth(1).unwrap();
    assert!(!body.contains("@__llvm_omp_indirect_call_lookup("), "{text}");
    assert_eq!(body.matches("call ptr @__kmpc_target_translate_fptr(").count(), 2, "{text}");
    assert_eq!(summary.translated, 0, "{text}");
}

/// A flang x86_64 device module with one kernel built as a GPU kernel (its launch environment
/// last), named by an offload entry; `ident` is the module's `llvm.ident`.
fn flang_x86_64_kernel(ident: &str) -> Module {
    Module::parse(&format!(
        r#"target triple = "x86_64-unknown-linux-gnu"
@k_kernel_environment = weak_odr protected constant i8 0
@entry = weak constant ptr @k
declare i32 @__kmpc_target_init(ptr, ptr)
define weak_odr protected void @k(ptr %a, i64 %n, ptr %dyn) {{
  %r = call i32 @__kmpc_target_init(ptr @k_kernel_environment, ptr %dyn)
  store i64 %n, ptr %a
  ret void
}}
!llvm.ident = !{{!1}}
!1 = !{{!"{ident}"}}
{DEVICE_FLAG}"#
    ))
}

/// Where the x86_64 host plugin calls a kernel with one argument array (LLVM 23), flang's
/// kernels get an adapter of that signature under their own name; elsewhere, and in modules
/// clang built, nothing changes.
#[test]
fn flang_kernels_on_x86_64_take_the_runtimes_argument_array() {
    let module = flang_x86_64_kernel("Debian flang version 23.1.4");
    let summary = module.rewrite(Phase::PipelineStart);
    if cfg!(host_kernels_take_argument_array) {
        assert_eq!(summary.adapted_kernels, 1);
        let text = module.text();
        assert!(text.contains("define weak_odr protected void @k(ptr"), "{text}");
        assert!(text.contains("define internal void @k.flang_kernel(ptr %a, i64 %n, ptr %dyn)"), "{text}");
        assert!(text.contains("@entry = weak constant ptr @k\n"), "{text}");
        // Each argument loaded through its pointer in the array; a null launch environment.
        let call = module.line_in("k", "call void @k.flang_kernel(");
        assert!(call.ends_with(", ptr null)"), "{call}");
        assert!(module.line_in("k", "load i64").contains("load i64, ptr"), "{text}");
    } else {
        assert_eq!(summary.adapted_kernels, 0);
    }
    let clang = flang_x86_64_kernel("Debian clang version 23.1.4");
    assert_eq!(clang.rewrite(Phase::PipelineStart).adapted_kernels, 0);
}

/// A device module whose vtable names a virtual function the frontend kept off the device (an
/// `extern_weak` declaration) beside one it compiled, for `triple`.
fn vtable_with_a_function_kept_off(triple: &str) -> Module {
    Module::parse(&format!(
        r#"target triple = "{triple}"
@_ZTV1A = weak_odr constant {{ [4 x ptr] }} {{ [4 x ptr] [ptr null, ptr null, ptr @_ZN1A4hostEv, ptr @_ZN1A6deviceEv] }}
declare extern_weak void @_ZN1A4hostEv(ptr)
define linkonce_odr void @_ZN1A6deviceEv(ptr %this) {{
  ret void
}}
{DEVICE_FLAG}"#
    ))
}

#[test]
fn a_virtual_function_kept_off_the_device_becomes_a_stub_that_names_it_and_traps() {
    let module = vtable_with_a_function_kept_off("x86_64-unknown-linux-gnu");
    assert_eq!(module.rewrite(Phase::OptimizerLast).host_only_stubs, 1);
    let text = module.text();
    let stub = "@__omptarget_indirect_not_on_device._ZN1A4hostEv";
    let vtable =
        text.lines().find(|l| l.starts_with("@_ZTV1A ")).unwrap_or_else(|| panic!("no vtable in\n{text}"));
    assert!(vtable.contains(stub) && vtable.contains("@_ZN1A6deviceEv"), "{vtable}");
    assert!(!text.contains("@_ZN1A4hostEv("), "the declaration is still used:\n{text}");
    // On the x86_64 device the stub says which function was called, with the name as data (a
    // `%s` format), then traps.
    let body =
        text.split("\ndefine ").find(|f| f.contains(&format!("{stub}("))).expect("the stub's definition");
    assert!(body.contains("@dprintf(i32 2, ptr @") && body.contains("@llvm.trap()"), "{body}");
    let format =
        text.lines().find(|l| l.contains("c\"%s\\00\"")).unwrap_or_else(|| panic!("no %s format in\n{text}"));
    assert!(
        body.contains(format.split(' ').next().unwrap()),
        "the stub does not print through `%s`:\n{body}"
    );
    assert!(text.lines().any(|l| l.contains("_ZN1A4hostEv is not compiled for the device")), "{text}");
}

#[test]
fn on_nvptx_the_stub_reports_through_assertfail_and_on_amdgpu_it_only_traps() {
    for (triple, reports) in [("nvptx64-nvidia-cuda", true), ("amdgcn-amd-amdhsa", false)] {
        let module = vtable_with_a_function_kept_off(triple);
        assert_eq!(module.rewrite(Phase::OptimizerLast).host_only_stubs, 1);
        let text = module.text();
        let body = text
            .split("\ndefine ")
            .find(|f| f.contains("@__omptarget_indirect_not_on_device._ZN1A4hostEv("))
            .unwrap_or_else(|| panic!("no stub in\n{text}"));
        assert!(body.contains("@llvm.trap()") && !body.contains("dprintf"), "{triple}: {body}");
        assert_eq!(body.contains("call void @__assertfail(ptr @"), reports, "{triple}: {body}");
        // The message has no newline: CUDA's report wraps it in a line of its own.
        let message = "c\"omptarget-indirect: _ZN1A4hostEv is not compiled for the device";
        assert_eq!(text.contains(message), reports, "{triple}:\n{text}");
        assert!(!text.contains("called it\\0A"), "{triple}:\n{text}");
    }
}

#[test]
fn host_modules_and_the_pipeline_start_stub_nothing() {
    let module = vtable_with_a_function_kept_off("x86_64-unknown-linux-gnu");
    assert_eq!(module.rewrite(Phase::PipelineStart).host_only_stubs, 0);
    let host = Module::parse(
        "@_ZTV1A = weak_odr constant { [3 x ptr] } { [3 x ptr] [ptr null, ptr null, ptr @_ZN1A4hostEv] }\n\
         declare extern_weak void @_ZN1A4hostEv(ptr)\n",
    );
    assert_eq!(host.rewrite(Phase::OptimizerLast).host_only_stubs, 0);
    assert!(host.text().contains("ptr @_ZN1A4hostEv]"));
}

#[test]
fn on_the_x86_64_device_loop_translations_are_cached_but_not_guarded() {
    let module = loops_of_translations("target triple = \"x86_64-unknown-linux-gnu\"\n");
    let summary = module.rewrite(Phase::OptimizerLast);
    assert_eq!((summary.cached, summary.guarded), (1, 0), "{}", module.text());
    assert!(!module.text().contains("@__omptarget_indirect_first_key"), "{}", module.text());
    // The last key and result stay in stack slots: the loop's own values keep the registers.
    let text = module.text();
    let body = text.split("\ndefine ").find(|f| f.starts_with("i64 @sum(")).unwrap();
    for slot in ["%translation.key = alloca ptr", "%translation.result = alloca ptr"] {
        assert!(body.contains(slot), "no {slot}:\n{body}");
    }
    assert!(!body.contains("= phi ptr [ null, %entry ]"), "carried in registers:\n{body}");
}

/// A host module as flang 23 emits a `map(to: s)` of a `class(shape), allocatable :: s` (the
/// data entry's size `shape`'s, 4 bytes, through `shape`'s default mapper); MAPPER_LOAD is what
/// the mapper loads (a pointer when it follows an allocatable component); MAP_TYPE the entry's
/// (1: to; 0x4000: an attachment).
fn polymorphic_map(size: &str, mapper_load: &str, map_type: u64) -> String {
    format!(
        r#"
%kernel_arguments = type {{ i32, i32, ptr, ptr, ptr, ptr, ptr, ptr, i64, i64, [3 x i32], [3 x i32], i32 }}
@_QFEs = internal global {{ ptr, i64, i32, i8, i8, i8, i8, ptr, [1 x i64] }} zeroinitializer
@field = internal global ptr null
@maptypes = private unnamed_addr constant [2 x i64] [i64 32, i64 {map_type}]
declare i32 @__tgt_target_kernel(ptr, i64, i32, i32, ptr, ptr)
declare void @__tgt_push_mapper_component(ptr, ptr, ptr, i64, i64, ptr)
define internal void @.omp_mapper._QQMgeoshape_omp_default_mapper(ptr %h, ptr %base, ptr %begin, i64 %size, i64 %type, ptr %name) {{
  %count = udiv exact i64 %size, 4
  %loaded = load {mapper_load}, ptr @field
  call void @__tgt_push_mapper_component(ptr %h, ptr %base, ptr %begin, i64 %count, i64 %type, ptr %name)
  ret void
}}
define void @main() {{
  %pointers = alloca [2 x ptr]
  %sizes = alloca [2 x i64]
  %mappers = alloca [2 x ptr]
  %args = alloca %kernel_arguments
  %data = load ptr, ptr @_QFEs
  %none = icmp eq ptr %data, null
  %size = {size}
  %p1 = getelementptr inbounds [2 x ptr], ptr %pointers, i32 0, i32 1
  store ptr %data, ptr %p1
  %s1 = getelementptr inbounds [2 x i64], ptr %sizes, i32 0, i32 1
  store i64 %size, ptr %s1
  %m1 = getelementptr inbounds [2 x ptr], ptr %mappers, i64 0, i64 1
  store ptr @.omp_mapper._QQMgeoshape_omp_default_mapper, ptr %m1
  %pointers0 = getelementptr inbounds [2 x ptr], ptr %pointers, i32 0, i32 0
  %sizes0 = getelementptr inbounds [2 x i64], ptr %sizes, i32 0, i32 0
  %a3 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 3
  store ptr %pointers0, ptr %a3
  %a4 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 4
  store ptr %sizes0, ptr %a4
  %a5 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 5
  store ptr @maptypes, ptr %a5
  %a7 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 7
  store ptr %mappers, ptr %a7
  %r = call i32 @__tgt_target_kernel(ptr null, i64 -1, i32 -1, i32 0, ptr null, ptr %args)
  ret void
}}
"#
    )
}

#[test]
fn a_polymorphic_scalar_is_mapped_with_its_dynamic_types_size() {
    let module = Module::parse(&polymorphic_map("select i1 %none, i64 0, i64 4", "i64", 1));
    let summary = module.rewrite(Phase::PipelineStart);
    let text = module.text();
    assert_eq!(summary.polymorphic_maps, 1, "{text}");
    // The size is the descriptor's elem_len, 0 still for an unallocated object.
    assert!(text.contains("%elem_len = load i64, ptr getelementptr inbounds"), "{text}");
    assert!(module.line_in("main", "store i64 ").contains("ptr %s1"), "{text}");
    assert!(text.contains("select i1 %none, i64 0, i64 %elem_len"), "{text}");
    // The mapper, which only mapped in place, is dropped: libomptarget maps every byte.
    assert!(text.contains("store ptr null, ptr %m1"), "{text}");
    // A second run finds the size no longer constant.
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 0);

    // A mapper that follows a pointer (an allocatable component) is kept, and so is the size.
    let module = Module::parse(&polymorphic_map("select i1 %none, i64 0, i64 4", "ptr", 1));
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 0);
    assert!(module.text().contains("store ptr @.omp_mapper._QQMgeoshape_omp_default_mapper, ptr %m1"));

    // A size flang already computes (a flang that maps the dynamic size) is left alone.
    let dynamic = polymorphic_map("load i64, ptr getelementptr (i8, ptr @_QFEs, i64 8)", "i64", 1);
    let module = Module::parse(&dynamic);
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 0);

    // An attachment entry (its size the descriptor's) is left alone.
    let module = Module::parse(&polymorphic_map("select i1 %none, i64 0, i64 4", "i64", 0x4000));
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 0);
    // (The switch that turns the maps off is read from the compiler's environment, which a test
    // thread must not change under the others: `policy`'s unit tests cover when it is off, and
    // the Fortran programs' negative control, built with it off, fails the end-to-end step.)
}

#[test]
fn a_polymorphic_dummy_argument_is_mapped_with_its_dynamic_types_size() {
    // flang copies a `class(shape)` dummy's descriptor into a local one and loads the base
    // address through its first field; an entry without mapper, and no mappers array at all.
    let source = r#"
%kernel_arguments = type { i32, i32, ptr, ptr, ptr, ptr, ptr, ptr, i64, i64, [3 x i32], [3 x i32], i32 }
%box = type { ptr, i64, i32, i8, i8, i8, i8, ptr, [1 x i64] }
@maptypes = private unnamed_addr constant [1 x i64] [i64 3]
declare i32 @__tgt_target_kernel(ptr, i64, i32, i32, ptr, ptr)
declare void @llvm.memcpy.p0.p0.i32(ptr, ptr, i32, i1)
define void @grow(ptr %dummy) {
  %pointers = alloca [1 x ptr]
  %sizes = alloca [1 x i64]
  %args = alloca %kernel_arguments
  %copy = alloca %box
  call void @llvm.memcpy.p0.p0.i32(ptr %copy, ptr %dummy, i32 40, i1 false)
  %first = getelementptr %box, ptr %copy, i32 0, i32 0
  %data = load ptr, ptr %first
  %none = icmp eq ptr %data, null
  %size = select i1 %none, i64 0, i64 4
  store ptr %data, ptr %pointers
  store i64 %size, ptr %sizes
  %a3 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 3
  store ptr %pointers, ptr %a3
  %a4 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 4
  store ptr %sizes, ptr %a4
  %a5 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 5
  store ptr @maptypes, ptr %a5
  %a7 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 7
  store ptr null, ptr %a7
  %r = call i32 @__tgt_target_kernel(ptr null, i64 -1, i32 -1, i32 0, ptr null, ptr %args)
  ret void
}
"#;
    let module = Module::parse(source);
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 1, "{}", module.text());
    let text = module.text();
    assert!(text.contains("getelementptr inbounds %box, ptr %copy, i32 0, i32 1"), "{text}");
    assert!(text.contains("select i1 %none, i64 0, i64 %elem_len"), "{text}");
}

#[test]
fn a_polymorphic_array_and_its_section_are_mapped_with_the_dynamic_types_size() {
    // flang's entry of `map(to: many(k:m))`: the count times the declared size, the section's
    // first element addressed in declared-type elements.
    let source = r#"
%kernel_arguments = type { i32, i32, ptr, ptr, ptr, ptr, ptr, ptr, i64, i64, [3 x i32], [3 x i32], i32 }
%array_box = type { ptr, i64, i32, i8, i8, i8, i8, [1 x [3 x i64]], ptr, [1 x i64] }
%_QMgeoTshape = type { i32 }
@_QFEmany = internal global %array_box zeroinitializer
@maptypes = private unnamed_addr constant [1 x i64] [i64 1]
declare i32 @__tgt_target_kernel(ptr, i64, i32, i32, ptr, ptr)
define void @main(i64 %count, i64 %first) {
  %pointers = alloca [1 x ptr]
  %sizes = alloca [1 x i64]
  %args = alloca %kernel_arguments
  %element_count = mul i64 %count, 4
  %empty = icmp eq i64 %element_count, 0
  %bytes = select i1 %empty, i64 1, i64 %element_count
  %data = load ptr, ptr @_QFEmany
  %section = getelementptr inbounds %_QMgeoTshape, ptr %data, i64 %first
  %none = icmp eq ptr %section, null
  %size = select i1 %none, i64 0, i64 %bytes
  store ptr %section, ptr %pointers
  store i64 %size, ptr %sizes
  %a3 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 3
  store ptr %pointers, ptr %a3
  %a4 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 4
  store ptr %sizes, ptr %a4
  %a5 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 5
  store ptr @maptypes, ptr %a5
  %a7 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 7
  store ptr null, ptr %a7
  %r = call i32 @__tgt_target_kernel(ptr null, i64 -1, i32 -1, i32 0, ptr null, ptr %args)
  ret void
}
"#;
    let module = Module::parse(source);
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 1, "{}", module.text());
    let text = module.text();
    // The count times elem_len, and the section's first element elem_len bytes apart.
    assert!(text.contains("%element_count = mul i64 %count, %elem_len"), "{text}");
    assert!(text.contains("getelementptr inbounds i8, ptr %data, i64 "), "{text}");
    assert!(!text.contains("getelementptr inbounds %_QMgeoTshape"), "{text}");
    // A second run finds nothing constant left.
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 0);
}

#[test]
fn a_polymorphic_component_is_mapped_with_its_dynamic_types_size_by_its_holders_mapper() {
    // The default mapper of a derived type whose second field is a `class(shape)` component: it
    // maps the component's data through the declared type's mapper, with the declared size.
    let source = r#"
%box = type { ptr, i64, i32, i8, i8, i8, i8, ptr, [1 x i64] }
%_QMgeoTholder = type { i32, %box }
declare void @__tgt_push_mapper_component(ptr, ptr, ptr, i64, i64, ptr)
define internal void @.omp_mapper._QMgeoTshape_omp_default_mapper(ptr %h, ptr %base, ptr %begin, i64 %size, i64 %type, ptr %name) {
  call void @__tgt_push_mapper_component(ptr %h, ptr %base, ptr %begin, i64 %size, i64 %type, ptr %name)
  ret void
}
define internal void @.omp_mapper._QQMgeoholder_omp_default_mapper(ptr %h, ptr %base, ptr %begin, i64 %size, i64 %type, ptr %name) {
  %component = getelementptr %_QMgeoTholder, ptr %begin, i32 0, i32 1
  %first = getelementptr %box, ptr %component, i32 0, i32 0
  %data = load ptr, ptr %first
  %none = icmp eq ptr %data, null
  %bytes = select i1 %none, i64 0, i64 4
  call void @.omp_mapper._QMgeoTshape_omp_default_mapper(ptr %h, ptr %first, ptr %data, i64 %bytes, i64 %type, ptr %name)
  ret void
}
"#;
    let module = Module::parse(source);
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 1, "{}", module.text());
    let text = module.text();
    assert!(text.contains("getelementptr inbounds i8, ptr %first, i64 8"), "{text}");
    assert!(text.contains("select i1 %none, i64 0, i64 %elem_len"), "{text}");
    // The declared type's mapper gives way to the registration library's, which maps the
    // dynamic type's components; its base is the component's descriptor.
    let call = module.line_in(".omp_mapper._QQMgeoholder_omp_default_mapper", "call void @");
    assert!(
        call.contains("@__omptarget_indirect_map_polymorphic(ptr %h, ptr %first, ptr %data, i64 %"),
        "{call}"
    );
    assert!(!call.contains("i64 %bytes"), "{call}");
}

#[test]
fn a_polymorphic_array_component_is_mapped_with_its_dynamic_types_size_by_its_holders_mapper() {
    // The default mapper of a derived type whose second field is a `class(shape), allocatable ::
    // items(:)` component, in flang 23's shape: the data's size is the element count times the
    // declared type's size (4), and its first element `getelementptr %shape, ptr %data, i64 0`;
    // the attachment (map type 0x4000, the descriptor's size) is left alone.
    let source = r#"
%array_box = type { ptr, i64, i32, i8, i8, i8, i8, [1 x [3 x i64]], ptr, [1 x i64] }
%_QMgeoTshape = type { i32 }
%_QMgeoTbag = type { i32, %array_box }
declare void @__tgt_push_mapper_component(ptr, ptr, ptr, i64, i64, ptr)
define internal void @.omp_mapper._QMgeoTshape_omp_default_mapper(ptr %h, ptr %base, ptr %begin, i64 %size, i64 %type, ptr %name) {
  call void @__tgt_push_mapper_component(ptr %h, ptr %base, ptr %begin, i64 %size, i64 %type, ptr %name)
  ret void
}
define internal void @.omp_mapper._QQMgeobag_omp_default_mapper(ptr %h, ptr %base, ptr %begin, i64 %size, i64 %type, ptr %name) {
  %component = getelementptr %_QMgeoTbag, ptr %begin, i32 0, i32 1
  %extent_at = getelementptr %array_box, ptr %component, i32 0, i32 7, i64 0, i32 1
  %extent = load i64, ptr %extent_at
  %first = getelementptr %array_box, ptr %component, i32 0, i32 0
  %element_count = mul i64 %extent, 4
  %empty = icmp eq i64 %element_count, 0
  %at_least_one = select i1 %empty, i64 1, i64 %element_count
  %attached = load ptr, ptr %first
  %attached_at = getelementptr inbounds %_QMgeoTshape, ptr %attached, i64 0
  %data = load ptr, ptr %first
  %data_at = getelementptr inbounds %_QMgeoTshape, ptr %data, i64 0
  %none = icmp eq ptr %data_at, null
  %bytes = select i1 %none, i64 0, i64 %at_least_one
  call void @.omp_mapper._QMgeoTshape_omp_default_mapper(ptr %h, ptr %first, ptr %data_at, i64 %bytes, i64 %type, ptr %name)
  call void @__tgt_push_mapper_component(ptr %h, ptr %component, ptr %attached_at, i64 64, i64 16384, ptr %name)
  ret void
}
"#;
    let module = Module::parse(source);
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 1, "{}", module.text());
    let text = module.text();
    let count = module.line_in(".omp_mapper._QQMgeobag_omp_default_mapper", "%element_count = mul");
    assert!(count.contains("mul i64 %extent, %elem_len"), "{count}");
    assert!(text.contains("getelementptr inbounds i8, ptr %first, i64 8"), "{text}");
    // The data's first element is `first * elem_len` bytes in; the attachment's stays.
    assert!(!text.contains("%data_at = getelementptr inbounds %_QMgeoTshape"), "{text}");
    assert!(
        text.contains("%attached_at = getelementptr inbounds %_QMgeoTshape, ptr %attached, i64 0"),
        "{text}"
    );
    let call = module.line_in(".omp_mapper._QQMgeobag_omp_default_mapper", "call void @__omptarget");
    assert!(call.contains("@__omptarget_indirect_map_polymorphic(ptr %h, ptr %first, ptr %"), "{call}");
    let attachment = module.line_in(".omp_mapper._QQMgeobag_omp_default_mapper", "i64 16384");
    assert!(
        attachment.contains("@__tgt_push_mapper_component(ptr %h, ptr %component, ptr %attached_at, i64 64"),
        "{attachment}"
    );
    // A second run finds nothing left to change.
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 0, "{}", module.text());
}

/// `polymorphic_map`'s module with the base pointers array flang writes: the entry's base is the
/// descriptor, `@_QFEs` (BASE, a store of it).
fn polymorphic_map_with_bases(mapper_load: &str, map_type: u64, base: &str) -> String {
    polymorphic_map("select i1 %none, i64 0, i64 4", mapper_load, map_type)
        .replace(
            "  %pointers = alloca [2 x ptr]\n",
            "  %bases = alloca [2 x ptr]\n  %pointers = alloca [2 x ptr]\n",
        )
        .replace(
            "  store ptr %data, ptr %p1\n",
            &format!(
                "  store ptr %data, ptr %p1\n  %b1 = getelementptr inbounds [2 x ptr], ptr %bases, i32 0, i32 1\n  store ptr {base}, ptr %b1\n"
            ),
        )
        .replace(
            "  %a3 = getelementptr",
            "  %bases0 = getelementptr inbounds [2 x ptr], ptr %bases, i32 0, i32 0\n  %a2 = getelementptr inbounds %kernel_arguments, ptr %args, i32 0, i32 2\n  store ptr %bases0, ptr %a2\n  %a3 = getelementptr",
        )
}

#[test]
fn a_polymorphic_object_is_mapped_by_the_registration_librarys_mapper_from_its_descriptor() {
    // Whether the declared type's mapper maps in place or follows an allocatable component, the
    // entry gets the mapper that reads the dynamic type's components, and its base stays the
    // descriptor.
    for mapper_load in ["i64", "ptr"] {
        let module = Module::parse(&polymorphic_map_with_bases(mapper_load, 3, "@_QFEs"));
        assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 1, "{}", module.text());
        let text = module.text();
        assert!(text.contains("store ptr @__omptarget_indirect_map_polymorphic, ptr %m1"), "{text}");
        assert!(text.contains("store ptr @_QFEs, ptr %b1"), "{text}");
        assert!(
            text.contains("declare void @__omptarget_indirect_map_polymorphic(ptr, ptr, ptr, i64, i64, ptr)"),
            "{text}"
        );
        assert!(text.contains("select i1 %none, i64 0, i64 %elem_len"), "{text}");
    }
    // A base flang did not make the descriptor becomes it.
    let module = Module::parse(&polymorphic_map_with_bases("i64", 3, "%data"));
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 1, "{}", module.text());
    assert!(module.text().contains("store ptr @_QFEs, ptr %b1"), "{}", module.text());
    // A kernel argument's entry (its base the argument) keeps its base: only the in-place mapper
    // is dropped, as without a base.
    let module = Module::parse(&polymorphic_map_with_bases("i64", 0x23, "%data"));
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 1, "{}", module.text());
    let text = module.text();
    assert!(text.contains("store ptr %data, ptr %b1") && text.contains("store ptr null, ptr %m1"), "{text}");
    // An attachment entry is left alone.
    let module = Module::parse(&polymorphic_map_with_bases("ptr", 0x4000, "@_QFEs"));
    assert_eq!(module.rewrite(Phase::PipelineStart).polymorphic_maps, 0, "{}", module.text());
}

/// Device code in which `Derived`'s vtable names its destructors (and a thunk to one), which
/// call `Base`'s and a member's; a kernel destroys a `Local` directly and builds a `Built` (whose
/// virtual calls the optimizer may then make direct); a function whose name only looks like a
/// destructor's (`N::xD2()`) fills a slot.
const DESTRUCTORS: &str = r#"
target triple = "nvptx64-nvidia-cuda"
@_ZTV7Derived = weak_odr constant { [5 x ptr], [3 x ptr] } { [5 x ptr] [ptr null, ptr null, ptr @_ZN7DerivedD1Ev, ptr @_ZN7DerivedD0Ev, ptr @_ZN1N3xD2Ev], [3 x ptr] [ptr inttoptr (i64 -8 to ptr), ptr null, ptr @_ZThn8_N7DerivedD1Ev] }
@table = global ptr @_ZN4Held1D2Ev
@_ZTV5Built = weak_odr constant { [3 x ptr] } { [3 x ptr] [ptr null, ptr null, ptr @_ZN5BuiltD0Ev] }
define linkonce_odr void @_ZN4BaseD2Ev(ptr %this) {
  call void @_ZN6MemberD2Ev(ptr %this)
  ret void
}
define linkonce_odr void @_ZN6MemberD2Ev(ptr %this) {
  ret void
}
define linkonce_odr void @_ZN7DerivedD2Ev(ptr %this) {
  store ptr getelementptr inbounds (i8, ptr @_ZTV7Derived, i64 16), ptr %this
  call void @_ZN4BaseD2Ev(ptr %this)
  ret void
}
define linkonce_odr void @_ZN7DerivedD1Ev(ptr %this) {
  call void @_ZN7DerivedD2Ev(ptr %this)
  ret void
}
define linkonce_odr void @_ZN7DerivedD0Ev(ptr %this) {
  call void @_ZN7DerivedD1Ev(ptr %this)
  ret void
}
define linkonce_odr void @_ZThn8_N7DerivedD1Ev(ptr %this) {
  %base = getelementptr i8, ptr %this, i64 -8
  call void @_ZN7DerivedD1Ev(ptr %base)
  ret void
}
define linkonce_odr void @_ZN1N3xD2Ev(ptr %this) {
  ret void
}
define linkonce_odr void @_ZN5LocalD2Ev(ptr %this) {
  call void @_ZN6MemberD2Ev(ptr %this)
  ret void
}
define linkonce_odr void @_ZN4Held1D2Ev(ptr %this) {
  ret void
}
define linkonce_odr void @_ZN5BuiltD0Ev(ptr %this) {
  ret void
}
define void @__omp_offloading_10_2a_kernel_l1(ptr %local, ptr %built) {
  call void @_ZN5LocalD2Ev(ptr %local)
  store ptr getelementptr inbounds (i8, ptr @_ZTV5Built, i64 16), ptr %built
  ret void
}
"#;

#[test]
fn destructors_that_only_vtables_name_stay_out_of_line_and_the_others_are_left_alone() {
    let module = Module::parse(&format!("{DESTRUCTORS}{DEVICE_FLAG}"));
    let summary = module.rewrite(Phase::PipelineStart);
    let text = module.text();
    let attributes_of = |function: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.starts_with("define") && l.contains(&format!("@{function}(")))
            .unwrap_or_else(|| panic!("no {function} in\n{text}"));
        let group = line.rsplit('#').next().unwrap_or("").trim_end_matches(" {").trim();
        text.lines()
            .find(|l| l.starts_with(&format!("attributes #{group} = ")))
            .map(str::to_string)
            .unwrap_or_default()
    };
    // The vtable's destructors, their thunk and what only they call: out of line.
    for function in
        ["_ZN7DerivedD0Ev", "_ZN7DerivedD1Ev", "_ZN7DerivedD2Ev", "_ZThn8_N7DerivedD1Ev", "_ZN4BaseD2Ev"]
    {
        assert!(attributes_of(function).contains("noinline"), "{function} may still be inlined:\n{text}");
    }
    // Called directly by the kernel (itself, or a member's destructor it calls), of a class device
    // code builds, named by a global that is no vtable, or no destructor at all: left to the
    // optimizer.
    for function in ["_ZN5LocalD2Ev", "_ZN6MemberD2Ev", "_ZN5BuiltD0Ev", "_ZN4Held1D2Ev", "_ZN1N3xD2Ev"] {
        assert!(!attributes_of(function).contains("noinline"), "{function} was kept out of line:\n{text}");
    }
    assert_eq!(summary.out_of_line_destructors, 5);
    assert_eq!(module.rewrite(Phase::PipelineStart).out_of_line_destructors, 0);
}
