// The part of the pass plugin that LLVM's C API cannot express: registering a module pass with
// the new pass manager, emitting optimization remarks, and the loop cache of translations (loop
// info, block splitting, promotion to registers). The rewrite itself is Rust
// (`omptarget_indirect_rewrite_module`, src/rewrite.rs). Every difference between the LLVM
// versions the plugin is built for is in this file, behind LLVM_VERSION_MAJOR, except the Rust
// mirror of PassPluginLibraryInfo (src/lib.rs, one field per API version) and the C API crate
// (src/llvm.rs).
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/DiagnosticHandler.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Instruction.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/DynamicLibrary.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/PromoteMemToReg.h"
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

struct TranslateIndirectCalls : PassInfoMixin<TranslateIndirectCalls> {
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

struct FoldTranslations : PassInfoMixin<FoldTranslations> {
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
//   with last_key and last_result registers carried around the loop (null at function entry:
//   translate(null) is null);
// - of a function pointer, becomes in_range(key) ? translate(key) : key.
// in_range compares with the installed table's first and last keys, read at function entry
// (__omptarget_indirect_first_key / _last_key, device-rtl/src/exports.rs: every other pointer
// translates to itself); without `key_range` there is no such test (the cache's miss path calls
// the lookup, function pointers are left as they are). Writes the calls changed (still the calls
// of the lookup) to `changed`, at most `capacity`, and returns how many; the cached ones carry
// CachedKind, the guarded ones GuardedKind.
unsigned omptarget_indirect_cache_translations(LLVMValueRef function, LLVMValueRef translate, bool key_range,
                                               LLVMValueRef *changed, unsigned capacity) {
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
  DominatorTree DT(F);
  PromoteMemToReg(Slots, DT);
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

// Reports an error in `module`'s compilation: the compiler prints `message` and fails.
void omptarget_indirect_error(LLVMModuleRef module, const char *message) {
  unwrap(module)->getContext().emitError(message);
}
} // extern "C"
