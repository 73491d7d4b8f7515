// The part of the pass plugin that LLVM's C API cannot express: registering a module pass with
// the new pass manager, emitting optimization remarks, the loop cache of translations (loop
// info, block splitting, promotion to registers), and cloning host functions into a device
// module. The rewrite itself is Rust (`omptarget_indirect_rewrite_module`, src/rewrite.rs). Every difference between the LLVM
// versions the plugin is built for is in this file, behind LLVM_VERSION_MAJOR, except the Rust
// mirror of PassPluginLibraryInfo (src/lib.rs, one field per API version) and the C API crate
// (src/llvm.rs).
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DebugInfo.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/PromoteMemToReg.h"
#include "llvm/Transforms/Utils/ValueMapper.h"
#include "llvm-c/Core.h"
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>
#if LLVM_VERSION_MAJOR >= 22
#include "llvm/Plugins/PassPlugin.h"
#else
#include "llvm/Passes/PassPlugin.h"
#endif

using namespace llvm;

extern "C" {
// Defined in Rust (src/lib.rs). `phase` is 0 at pipeline start, 1 after the optimizer. Returns
// whether the module changed.
bool omptarget_indirect_rewrite_module(LLVMModuleRef module, unsigned phase);
// Defined in Rust (src/lib.rs): folds the function's translations of device addresses. Returns
// whether the function changed.
bool omptarget_indirect_fold_function(LLVMValueRef function);
}

namespace {

// The name -Rpass=, -Rpass-missed= and -Rpass-analysis= select, and `opt -passes=` accepts.
constexpr const char *PassName = "omptarget-indirect";

// LLVM 24 moved PassInfoMixin into `detail`: a pass says whether it may be skipped by deriving
// from RequiredPassInfoMixin or OptionalPassInfoMixin.
#if LLVM_VERSION_MAJOR >= 24
template <typename Pass> using RequiredPass = RequiredPassInfoMixin<Pass>;
template <typename Pass> using OptionalPass = OptionalPassInfoMixin<Pass>;
#else
template <typename Pass> using RequiredPass = PassInfoMixin<Pass>;
template <typename Pass> using OptionalPass = PassInfoMixin<Pass>;
#endif

struct TranslateIndirectCalls : RequiredPass<TranslateIndirectCalls> {
  unsigned Phase;
  explicit TranslateIndirectCalls(unsigned Phase) : Phase(Phase) {}
  PreservedAnalyses run(Module &M, ModuleAnalysisManager &) {
    return omptarget_indirect_rewrite_module(wrap(&M), Phase) ? PreservedAnalyses::none()
                                                               : PreservedAnalyses::all();
  }
  // Runs at -O0 too, and in optnone functions: without it the program calls host addresses.
  static bool isRequired() { return true; }
  static StringRef name() { return PassName; }
};

struct FoldTranslations : OptionalPass<FoldTranslations> {
  PreservedAnalyses run(Function &F, FunctionAnalysisManager &) {
    if (!omptarget_indirect_fold_function(wrap(&F)))
      return PreservedAnalyses::all();
    PreservedAnalyses Kept;
    Kept.preserveSet<CFGAnalyses>();
    return Kept;
  }
  static StringRef name() { return "omptarget-indirect-fold"; }
};

void registerCallbacks(PassBuilder &PB) {
  // Pipeline start: before the optimizer, so that it can hoist and merge the translations. It
  // runs for the device compile at every -O level and in the LTO pre-link pipeline
  // (-foffload-lto), the last place a rewrite can happen: clang-linker-wrapper loads no plugin.
  PB.registerPipelineStartEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(TranslateIndirectCalls(0)); });
  // After each instruction combining: a translation of a device address the optimizer just
  // made constant folds before it decides what to devirtualize and inline.
  PB.registerPeepholeEPCallback(
      [](FunctionPassManager &FPM, OptimizationLevel) { FPM.addPass(FoldTranslations()); });
  // Optimizer last: folds translations whose operand optimization turned into a known function,
  // and translates indirect calls that optimization created.
#if LLVM_VERSION_MAJOR >= 20
  PB.registerOptimizerLastEPCallback([](ModulePassManager &MPM, OptimizationLevel, ThinOrFullLTOPhase) {
    MPM.addPass(TranslateIndirectCalls(1));
  });
#else
  PB.registerOptimizerLastEPCallback(
      [](ModulePassManager &MPM, OptimizationLevel) { MPM.addPass(TranslateIndirectCalls(1)); });
#endif
  // `opt -load-pass-plugin=... -passes=omptarget-indirect`.
  PB.registerPipelineParsingCallback(
      [](StringRef Name, ModulePassManager &MPM, ArrayRef<PassBuilder::PipelineElement>) {
        if (Name != PassName)
          return false;
        MPM.addPass(TranslateIndirectCalls(0));
        return true;
      });
}

// Remark kinds, as src/remarks.rs numbers them.
enum RemarkKind : unsigned { Passed = 0, Missed = 1, Analysis = 2 };

// One remark of `kind` at an instruction or a function.
template <typename Anchor>
void emitRemark(unsigned kind, const Anchor *At, const char *name, const char *message) {
  LLVMContext &Ctx = At->getContext();
  switch (kind) {
  case Passed:
    Ctx.diagnose(OptimizationRemark(PassName, name, At) << message);
    return;
  case Missed:
    Ctx.diagnose(OptimizationRemarkMissed(PassName, name, At) << message);
    return;
  default:
    Ctx.diagnose(OptimizationRemarkAnalysis(PassName, name, At) << message);
    return;
  }
}

} // namespace

extern "C" {

// The plugin API version of the headers this shim is compiled against.
uint32_t omptarget_indirect_plugin_api_version() { return LLVM_PLUGIN_API_VERSION; }

// The size of those headers' PassPluginLibraryInfo, which src/lib.rs mirrors (a test compares).
size_t omptarget_indirect_plugin_info_size() { return sizeof(PassPluginLibraryInfo); }

// The frontend plugin's omptarget_indirect_frontend_device_provides when the frontend plugin is
// loaded into this compiler (clang loads both plugins as permanent libraries), else null (flang,
// a compile without the configuration file, opt).
void *omptarget_indirect_frontend_query() {
  return sys::DynamicLibrary::SearchForAddressOfSymbol("omptarget_indirect_frontend_device_provides");
}

// Whether the compiler that loaded the plugin runs on the libLLVM the plugin is linked against.
// A clang or flang with LLVM linked in statically (LLVM's CMake default, Spack's without
// +link_llvm_dylib), or on another build's libLLVM (a vendor's), gets a second copy of LLVM
// loaded for the plugin alone: the plugin would then rewrite modules through the wrong copy's
// code and registries. That copy is loaded after the plugin (the loader loads an object's
// dependencies after it), the compiler's own before: says so in one line when it is not.
bool omptarget_indirect_runs_on_compilers_llvm() {
  struct Search {
    const void *address;
    int index = -1;
    const char *name = nullptr;
  };
  Search Plugin{reinterpret_cast<const void *>(&omptarget_indirect_runs_on_compilers_llvm)};
  Search Llvm{reinterpret_cast<const void *>(&LLVMContextCreate)};
  struct Walk {
    Search *Searches[2];
    int Index = 0;
  } State{{&Plugin, &Llvm}};
  dl_iterate_phdr(
      [](dl_phdr_info *Info, size_t, void *Data) {
        auto &W = *static_cast<Walk *>(Data);
        for (Search *S : W.Searches)
          for (int I = 0; I < Info->dlpi_phnum; ++I) {
            const ElfW(Phdr) &P = Info->dlpi_phdr[I];
            auto Start = Info->dlpi_addr + P.p_vaddr;
            auto At = reinterpret_cast<ElfW(Addr)>(S->address);
            if (P.p_type == PT_LOAD && At >= Start && At < Start + P.p_memsz) {
              S->index = W.Index;
              S->name = Info->dlpi_name;
            }
          }
        ++W.Index;
        return 0;
      },
      &State);
  if (Plugin.index < 0 || Llvm.index < 0 || Llvm.index < Plugin.index)
    return true;
  char Compiler[4096];
  ssize_t Length = readlink("/proc/self/exe", Compiler, sizeof Compiler - 1);
  Compiler[Length > 0 ? Length : 0] = 0;
  std::fprintf(stderr,
               "omptarget-indirect: %s does not run on %s, which the pass plugin is built against "
               "(LLVM linked in statically, or another build's libLLVM): use an LLVM whose clang "
               "and flang link libLLVM.so (docs/install.md, \"Which LLVM\")\n",
               Length > 0 ? Compiler : "this compiler", Llvm.name);
  return false;
}

// Whether `name` is the Itanium symbol of a destructor variant (D0, D1, D2), by LLVM's
// demangler: a name such as `_ZN1N3xD2Ev` (function `N::xD2()`) only looks like one.
bool omptarget_indirect_is_destructor(const char *name) {
  ItaniumPartialDemangler Demangler;
  if (Demangler.partialDemangle(name) || !Demangler.isCtorOrDtor())
    return false;
  size_t Size = 0;
  char *Base = Demangler.getFunctionBaseName(nullptr, &Size);
  bool Destructor = Base && Base[0] == '~';
  std::free(Base);
  return Destructor;
}

// The PassPluginLibraryInfo callback (C++ reference = pointer in the C ABI).
void omptarget_indirect_register_callbacks(PassBuilder &PB) { registerCallbacks(PB); }

// Whether a remark of `kind` from this pass would be shown or recorded: lets the Rust side skip
// formatting messages nobody reads.
bool omptarget_indirect_remark_enabled(LLVMContextRef context, unsigned kind) {
  LLVMContext &Ctx = *unwrap(context);
  if (Ctx.getLLVMRemarkStreamer())
    return true;
  const DiagnosticHandler *Handler = Ctx.getDiagHandlerPtr();
  switch (kind) {
  case Passed:
    return Handler->isPassedOptRemarkEnabled(PassName);
  case Missed:
    return Handler->isMissedOptRemarkEnabled(PassName);
  default:
    return Handler->isAnalysisRemarkEnabled(PassName);
  }
}

// Emits one remark of `kind` named `name` (a static string) with text `message`, located at
// `anchor`: an instruction, or a function (for per-function summaries).
void omptarget_indirect_remark(unsigned kind, LLVMValueRef anchor, const char *name,
                               const char *message) {
  Value *At = unwrap(anchor);
  if (auto *I = dyn_cast<Instruction>(At))
    emitRemark(kind, I, name, message);
  else if (auto *F = dyn_cast<Function>(At))
    emitRemark(kind, F, name, message);
}

} // extern "C"

namespace {

// Marks a call already cached or guarded: a module optimized twice keeps one of each per
// translation (src/pass.rs: CACHED_TRANSLATION, GUARDED_TRANSLATION).
constexpr const char *CachedKind = "omptarget-indirect.cached";
constexpr const char *GuardedKind = "omptarget-indirect.guarded";
// Marks the translations of vtable pointers (src/pass.rs, VTABLE_TRANSLATION): the ones cached.
constexpr const char *VtableKind = "omptarget-indirect.vtable";

// Makes the translation `Call` run only for a key in [First, Last] (any other pointer translates
// to itself): the call moves into a block of its own before `At`, and the returned phi at `At`,
// which now has every use the call had, is its result or the key.
PHINode *lookUpInRangeOnly(CallInst *Call, Instruction *At, Value *First, Value *Last) {
  IRBuilder<> B(At);
  Value *Key = Call->getArgOperand(0);
  Value *Word = B.CreatePtrToInt(Key, B.getInt64Ty());
  Value *InRange =
      B.CreateAnd(B.CreateICmpUGE(Word, First), B.CreateICmpULE(Word, Last), "translation.in_range");
  BasicBlock *Head = B.GetInsertBlock();
  Instruction *LookUp = SplitBlockAndInsertIfThen(InRange, At, false);
  BasicBlock *Tail = LookUp->getSuccessor(0);
  Call->moveBefore(*LookUp->getParent(), LookUp->getIterator());
  PHINode *Found = PHINode::Create(Call->getType(), 2, "translation.found");
  Found->insertBefore(Tail->begin());
  Call->replaceAllUsesWith(Found);
  Found->addIncoming(Call, LookUp->getParent());
  Found->addIncoming(Key, Head);
  for (BasicBlock *BB : {Head, LookUp->getParent()})
    for (Instruction &I : *BB)
      if (!I.getDebugLoc())
        I.setDebugLoc(Call->getDebugLoc());
  return Found;
}

} // namespace

extern "C" {

// The loop cache and its guard (src/loop_cache.rs has the policy). Each translation in
// `function` that is inside a loop and whose key is not invariant in its innermost loop:
// - of a vtable pointer, becomes
//     key == last_key ? last_result
//     : (last_key = key, last_result = in_range(key) ? translate(key) : key)
//   with last_key and last_result carried around the loop (null at function entry:
//   translate(null) is null), in registers with `in_registers`, else in stack slots;
// - of a function pointer, becomes in_range(key) ? translate(key) : key.
// in_range compares with the installed table's first and last keys, read at function entry
// (__omptarget_indirect_first_key / _last_key, device-rtl/src/exports.rs: every other pointer
// translates to itself); without `key_range` there is no such test (the cache's miss path calls
// the lookup, function pointers are left as they are). Writes the calls changed (still the calls
// of the lookup) to `changed`, at most `capacity`, and returns how many; the cached ones carry
// CachedKind, the guarded ones GuardedKind.
unsigned omptarget_indirect_cache_translations(LLVMValueRef function, LLVMValueRef translate, bool key_range,
                                               bool in_registers, LLVMValueRef *changed, unsigned capacity) {
  Function &F = *cast<Function>(unwrap(function));
  auto *Translate = cast<Function>(unwrap(translate));
  if (F.isDeclaration())
    return 0;
  SmallVector<CallInst *, 8> Sites, Guards;
  {
    DominatorTree DT(F);
    LoopInfo LI(DT);
    for (BasicBlock &BB : F)
      for (Instruction &I : BB) {
        auto *Call = dyn_cast<CallInst>(&I);
        if (!Call || Call->getCalledOperand() != Translate || Call->arg_size() != 1 ||
            Call->getMetadata(CachedKind) || Call->getMetadata(GuardedKind) ||
            Sites.size() + Guards.size() == capacity)
          continue;
        Loop *L = LI.getLoopFor(&BB);
        if (!L || L->isLoopInvariant(Call->getArgOperand(0)))
          continue;
        if (Call->getMetadata(VtableKind))
          Sites.push_back(Call);
        else if (key_range)
          Guards.push_back(Call);
      }
  }
  if (Sites.empty() && Guards.empty())
    return 0;
  IRBuilder<> Entry(&*F.getEntryBlock().getFirstInsertionPt());
  // The range of the installed table's keys, read once per call of the function (as pure as the
  // translation: the table does not change during a kernel).
  auto RangeEnd = [&](const char *Name) {
    FunctionCallee End = F.getParent()->getOrInsertFunction(Name, FunctionType::get(Entry.getInt64Ty(), false));
    if (auto *Declared = dyn_cast<Function>(End.getCallee()); Declared && Declared->isDeclaration())
      Declared->addFnAttrs(AttrBuilder(F.getContext(), Translate->getAttributes().getFnAttrs()));
    return Entry.CreateCall(End);
  };
  Value *FirstKey = key_range ? RangeEnd("__omptarget_indirect_first_key") : nullptr;
  Value *LastKey = key_range ? RangeEnd("__omptarget_indirect_last_key") : nullptr;
  unsigned Count = 0;
  for (CallInst *Call : Guards) {
    lookUpInRangeOnly(Call, Call, FirstKey, LastKey);
    Call->setMetadata(GuardedKind, MDNode::get(F.getContext(), {}));
    changed[Count++] = wrap(Call);
  }
  SmallVector<AllocaInst *, 16> Slots;
  SmallVector<PHINode *, 8> Results;
  for (CallInst *Call : Sites) {
    Type *Ptr = Call->getType();
    Value *Key = Call->getArgOperand(0);
    AllocaInst *LastKeyOf = Entry.CreateAlloca(Ptr, nullptr, "translation.key");
    AllocaInst *LastResult = Entry.CreateAlloca(Ptr, nullptr, "translation.result");
    Entry.CreateStore(Constant::getNullValue(Ptr), LastKeyOf);
    Entry.CreateStore(Constant::getNullValue(Ptr), LastResult);
    IRBuilder<> Head(Call);
    Value *Same = Head.CreateICmpEQ(Head.CreateLoad(Ptr, LastKeyOf), Key, "translation.same");
    Instruction *HitEnd = nullptr, *MissEnd = nullptr;
    // The hit path falls through: a run of objects of one class pays a compare.
    SplitBlockAndInsertIfThenElse(Same, Call, &HitEnd, &MissEnd,
                                  MDBuilder(F.getContext()).createBranchWeights(1000, 1));
    BasicBlock *Tail = Call->getParent();
    // With key_range, the miss path looks up only a key in the table's range: any other pointer
    // (a vtable of the device: an object built in device code) is its own answer, for a compare
    // and no call.
    Value *Found = Call;
    if (key_range)
      Found = lookUpInRangeOnly(Call, MissEnd, FirstKey, LastKey);
    else
      Call->moveBefore(*MissEnd->getParent(), MissEnd->getIterator());
    PHINode *Result = PHINode::Create(Ptr, 2, "translated");
    Result->insertBefore(Tail->begin());
    Found->replaceAllUsesWith(Result);
    IRBuilder<> Hit(HitEnd);
    Result->addIncoming(Hit.CreateLoad(Ptr, LastResult), HitEnd->getParent());
    Result->addIncoming(Found, MissEnd->getParent());
    IRBuilder<> Miss(MissEnd);
    Miss.CreateStore(Key, LastKeyOf);
    Miss.CreateStore(Found, LastResult);
    for (BasicBlock *BB : {HitEnd->getParent(), MissEnd->getParent()})
      for (Instruction &I : *BB)
        I.setDebugLoc(Call->getDebugLoc());
    Slots.push_back(LastKeyOf);
    Slots.push_back(LastResult);
    Results.push_back(Result);
    Call->setMetadata(CachedKind, MDNode::get(F.getContext(), {}));
    changed[Count++] = wrap(Call);
  }
  // The last key and result in registers, or left in their stack slots (policy.rs:
  // caches_in_registers).
  if (in_registers) {
    DominatorTree DT(F);
    PromoteMemToReg(Slots, DT);
  }
  // The last result's register and the result picked after the branch are the same phi: keep one.
  for (PHINode *Result : Results)
    for (PHINode &Other : Result->getParent()->phis())
      if (&Other != Result && Other.isIdenticalTo(Result)) {
        Result->replaceAllUsesWith(&Other);
        Result->eraseFromParent();
        break;
      }
  return Count;
}

// Device copies of host procedures (src/binding_copies.rs has the policy): defines in `device`
// the functions of `host` (a module of the same context) named in `functions`, their bodies
// cloned, and copies into it, internal, the constant variables of `host` named in `constants`.
// Every other global value the bodies and the constants' initializers use must be in `device`
// by name (used there, through an address-space cast where the device keeps globals in another
// one) or be an intrinsic (declared there); otherwise, or where `device` defines a function of
// those names already or declares it with another type, nothing changes and it returns false.
// The copies carry the device's target attributes, keep no debug information, and their stack
// slots are in the device's alloca address space. `host` loses its debug information.
bool omptarget_indirect_copy_functions(LLVMModuleRef device, LLVMModuleRef host, const char *const *functions,
                                       size_t function_count, const char *const *constants,
                                       size_t constant_count) {
  Module &Device = *unwrap(device);
  Module &Host = *unwrap(host);
  const DataLayout &DL = Device.getDataLayout();
  SmallVector<Function *, 8> Sources;
  SmallVector<GlobalVariable *, 8> Variables;
  SmallPtrSet<const GlobalValue *, 16> Copied;
  for (size_t I = 0; I < function_count; ++I) {
    Function *F = Host.getFunction(functions[I]);
    if (!F || F->isDeclaration())
      return false;
    if (Device.getNamedGlobal(F->getName()))
      return false;
    if (Function *Known = Device.getFunction(F->getName());
        Known && (!Known->isDeclaration() || Known->getFunctionType() != F->getFunctionType()))
      return false;
    Sources.push_back(F);
    Copied.insert(F);
  }
  for (size_t I = 0; I < constant_count; ++I) {
    GlobalVariable *G = Host.getGlobalVariable(constants[I], /*AllowInternal=*/true);
    if (!G || !G->isConstant() || !G->hasInitializer() || G->isThreadLocal())
      return false;
    Variables.push_back(G);
    Copied.insert(G);
  }
  // Every global value the copies use, through constant expressions and aggregates.
  SetVector<GlobalValue *> Used;
  SmallVector<const Value *, 32> Pending;
  SmallPtrSet<const Value *, 32> Seen;
  for (Function *F : Sources)
    for (Instruction &I : instructions(F))
      for (const Use &Op : I.operands())
        Pending.push_back(Op.get());
  for (GlobalVariable *G : Variables)
    Pending.push_back(G->getInitializer());
  while (!Pending.empty()) {
    const Value *V = Pending.pop_back_val();
    if (!Seen.insert(V).second)
      continue;
    if (auto *GV = dyn_cast<GlobalValue>(V)) {
      if (!Copied.contains(GV))
        Used.insert(const_cast<GlobalValue *>(GV));
      continue;
    }
    if (isa<InlineAsm>(V))
      return false;
    if (auto *C = dyn_cast<Constant>(V))
      for (const Use &Op : C->operands())
        Pending.push_back(Op.get());
  }
  ValueToValueMapTy VMap;
  auto AsHosts = [](Constant *C, Type *T) {
    return C->getType() == T ? C : ConstantExpr::getPointerBitCastOrAddrSpaceCast(C, T);
  };
  SmallVector<std::pair<GlobalValue *, Constant *>, 16> Resolved;
  for (GlobalValue *GV : Used) {
    if (GlobalValue *Known = Device.getNamedValue(GV->getName())) {
      if (isa<Function>(GV) != isa<Function>(Known))
        return false;
      Resolved.push_back({GV, Known});
    } else if (auto *F = dyn_cast<Function>(GV); F && F->isIntrinsic()) {
      Resolved.push_back({GV, nullptr});
    } else {
      return false;
    }
  }
  // Nothing fails from here on.
  for (auto &[GV, Known] : Resolved) {
    if (!Known)
      Known = cast<Constant>(Device.getOrInsertFunction(GV->getName(), cast<Function>(GV)->getFunctionType(),
                                                       cast<Function>(GV)->getAttributes())
                                 .getCallee());
    VMap[GV] = AsHosts(Known, GV->getType());
  }
  // The device's target attributes, as its own functions have them.
  AttributeList Target;
  for (Function &F : Device)
    if (!F.isDeclaration() && F.hasFnAttribute("target-cpu")) {
      Target = F.getAttributes();
      break;
    }
  StripDebugInfo(Host);
  SmallVector<std::pair<Function *, Function *>, 8> Copies;
  for (Function *F : Sources) {
    Function *Copy = Device.getFunction(F->getName());
    if (!Copy)
      Copy = Function::Create(F->getFunctionType(), F->getLinkage(), DL.getProgramAddressSpace(), F->getName(),
                              &Device);
    VMap[F] = Copy;
    Copies.push_back({F, Copy});
  }
  SmallVector<std::pair<GlobalVariable *, GlobalVariable *>, 8> Constants;
  for (GlobalVariable *G : Variables) {
    auto *Copy = new GlobalVariable(Device, G->getValueType(), /*isConstant=*/true, GlobalValue::InternalLinkage,
                                    nullptr, G->getName(), nullptr, GlobalValue::NotThreadLocal,
                                    DL.getDefaultGlobalsAddressSpace());
    Copy->setAlignment(G->getAlign());
    Copy->setUnnamedAddr(G->getUnnamedAddr());
    VMap[G] = AsHosts(Copy, G->getType());
    Constants.push_back({G, Copy});
  }
  for (auto &[G, Copy] : Constants)
    Copy->setInitializer(MapValue(G->getInitializer(), VMap));
  for (auto &[F, Copy] : Copies) {
    auto Arg = Copy->arg_begin();
    for (Argument &A : F->args()) {
      Arg->setName(A.getName());
      VMap[&A] = &*Arg++;
    }
    SmallVector<ReturnInst *, 4> Returns;
    CloneFunctionInto(Copy, F, VMap, CloneFunctionChangeType::DifferentModule, Returns);
    Copy->setComdat(nullptr);
    Copy->setLinkage(F->getLinkage());
    for (const char *Kind : {"target-cpu", "target-features", "tune-cpu"}) {
      Copy->removeFnAttr(Kind);
      if (Target.hasFnAttr(Kind))
        Copy->addFnAttr(Target.getFnAttr(Kind));
    }
    // The host's stack slots are in address space 0; AMDGPU's are in 5.
    SmallVector<AllocaInst *, 8> Slots;
    for (Instruction &I : instructions(Copy))
      if (auto *Slot = dyn_cast<AllocaInst>(&I); Slot && Slot->getAddressSpace() != DL.getAllocaAddrSpace())
        Slots.push_back(Slot);
    for (AllocaInst *Slot : Slots) {
      IRBuilder<> B(Slot);
      AllocaInst *Moved = B.CreateAlloca(Slot->getAllocatedType(), DL.getAllocaAddrSpace(), Slot->getArraySize());
      Moved->setAlignment(Slot->getAlign());
      Moved->takeName(Slot);
      Slot->replaceAllUsesWith(B.CreateAddrSpaceCast(Moved, Slot->getType()));
      Slot->eraseFromParent();
    }
  }
  return true;
}

// Reports an error in `module`'s compilation: the compiler prints `message` and fails.
void omptarget_indirect_error(LLVMModuleRef module, const char *message) {
  unwrap(module)->getContext().emitError(message);
}
} // extern "C"
