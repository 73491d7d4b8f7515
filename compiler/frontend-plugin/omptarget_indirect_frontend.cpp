//===- omptarget_indirect_frontend.cpp - what the device module must define ------------------===//
//
// A clang frontend plugin (clang 19 to 23), loaded by the configuration files with -fplugin=.
// It runs beside code generation in every compile. In OpenMP host compiles it only annotates the
// functions declared `indirect` (IndirectAnnotations: the pass plugin gives each its own offload
// entry); the rest acts in OpenMP device compiles.
//
// clang emits on the device only what device code odr-uses. Two things that host code hands to
// device code are then missing from the device module:
//
//  1. Functions declared `indirect` that are inline (in-class members, implicit template
//     instantiations named only by host code): the host registers an indirect entry for them, the
//     device has no definition. clang 19 crashes, clang 22 stops ("the address is invalid").
//     Policy: each is kept (an implicit `used`), so its definition and its entry are emitted.
//  2. Vtables of classes whose objects only host code constructs (a mapped arena, containers under
//     unified shared memory, a factory in another file): no device vtable, no device copies of
//     the virtual functions, nothing to pair with the host's vtable.
//     Policy: every dynamic class this file completes outside system headers (no OpenMP needed
//     in it: class libraries are written without), a library's class (system header) that a
//     `declare target` region encloses and this file's own code constructs, and each of their
//     dynamic bases, has its vtable marked used (with a definition), as a constructor in device
//     code would. clang then defines the vtable where the host does (the file of the key
//     function, or every file that completes a class without one), its construction vtables and
//     thunks, and every virtual function it names. `vtables=declare-target` keeps only classes
//     defined in a region or declaring a `declare target` member (docs/frontend.md: the cost).
//     A virtual function that is not `declare target` and reaches host-only code (a
//     `device_type(host)` function, a library's function or a variable that is neither defined in
//     this file nor `declare target`) is not compiled for the device: its declaration becomes weak
//     and the pass plugin fills its slots with a stub that traps, naming it. So is a virtual
//     function declared `device_type(host)`. A function of the program's own code that another
//     file defines is not host-only: that file's device compile may define it, and the pass
//     plugin gives its declaration a weak trapping definition that such a definition replaces.
//
// What it decides is reported as remarks under -Rpass=omptarget-indirect, as the pass plugin's
// are; nothing is printed by default. What it cannot handle it leaves alone (docs/frontend.md).
//
//===----------------------------------------------------------------------------------------===//

#include "clang/Basic/Version.h"

// Sema's internals this plugin writes (markVTable: Sema::VTablesUsed, Sema::VTableUses) are not
// API: they are checked for each release the project supports, and a release gets its record
// (packaging/src/release_record.rs) once they are (docs/llvm.md, "Adding an LLVM release"). The
// compile command hands the records' major versions over as OMPTARGET_INDIRECT_CLANG_RELEASES.
#ifndef OMPTARGET_INDIRECT_CLANG_RELEASES
#error "compile with the command of compiler/frontend-plugin/src/lib.rs, which defines OMPTARGET_INDIRECT_CLANG_RELEASES"
#endif
namespace {
constexpr int CheckedClangReleases[] = {OMPTARGET_INDIRECT_CLANG_RELEASES};
constexpr bool isCheckedClangRelease(int Major) {
  for (int Checked : CheckedClangReleases)
    if (Checked == Major)
      return true;
  return false;
}
} // namespace
static_assert(isCheckedClangRelease(CLANG_VERSION_MAJOR),
              "omptarget-indirect's frontend plugin is checked only for the clang releases the project has a "
              "record of (Sema::VTablesUsed, Sema::VTableUses)");

#include "clang/AST/ASTConsumer.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Mangle.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/Builtins.h"
#include "clang/Basic/Version.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"
#include "clang/Sema/Sema.h"
#include "clang/Sema/SemaConsumer.h"
#include "clang/Sema/SemaOpenMP.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

using namespace clang;

namespace {

/// The remark group the pass plugin uses: -Rpass=omptarget-indirect shows both.
constexpr const char *RemarkName = "omptarget-indirect";

#ifndef OMPTARGET_INDIRECT_RUNTIME_PREFIXES
#error "the build defines OMPTARGET_INDIRECT_RUNTIME_PREFIXES (compiler/frontend-plugin/src/lib.rs)"
#endif
/// The OpenMP runtime's name prefixes: an `extern "C"` function declared without a body under
/// one of them is the runtime's, defined on every device. One list with the pass plugin's
/// (`omptarget_indirect_abi::OPENMP_RUNTIME_PREFIXES`), which the build hands in.
constexpr const char *RuntimePrefixes[] = {OMPTARGET_INDIRECT_RUNTIME_PREFIXES};

#ifndef OMPTARGET_INDIRECT_VENDOR_MARKERS
#error "the build defines OMPTARGET_INDIRECT_VENDOR_MARKERS (compiler/frontend-plugin/src/lib.rs)"
#endif
/// What vendor compilers print in their version (`omptarget_indirect_abi::VENDOR_COMPILERS`).
constexpr const char *VendorMarkers[] = {OMPTARGET_INDIRECT_VENDOR_MARKERS};

/// Whether the clang running the plugin is LLVM's clang of the release whose headers the plugin
/// was compiled against. The plugin takes clang's symbols from the clang that loads it: in
/// another release's clang, or a vendor's, it would act on classes whose layout it does not know.
/// Says why in one line when it is not.
bool runsInItsOwnRelease() {
  const std::string Running = getClangFullVersion();
  bool Vendor = false;
  for (const char *Marker : VendorMarkers)
    Vendor = Vendor || Running.find(Marker) != std::string::npos;
  const std::string::size_type At = Running.find("clang version ");
  const bool SameMajor =
      At != std::string::npos &&
      std::strtol(Running.c_str() + At + sizeof "clang version " - 1, nullptr, 10) == CLANG_VERSION_MAJOR;
  if (SameMajor && !Vendor)
    return true;
  std::fprintf(stderr,
               "omptarget-indirect: the frontend plugin is built for LLVM's clang %d, not %s: it stays "
               "inactive (docs/install.md, \"Which LLVM\")\n",
               CLANG_VERSION_MAJOR, Running.c_str());
  return false;
}

/// How far the host-only check follows calls into functions defined in the file.
constexpr unsigned MaxCallDepth = 8;

/// Which dynamic classes outside system headers get their vtables on the device
/// (`-fplugin-arg-omptarget_indirect-vtables=all|declare-target`).
enum class VTablePolicy {
  /// Every one this file completes (the default): host code may build objects of any class and
  /// hand them to device code, with no OpenMP in the class. A class whose key function another
  /// file defines costs nothing here: that file's device compile emits its vtable.
  All,
  /// Only classes defined in a `declare target` region or declaring a `declare target` member.
  DeclareTarget,
};

using DeviceType = OMPDeclareTargetDeclAttr::DevTypeTy;

/// The `device_type` of `D`'s `declare target`, if it is declared so.
std::optional<DeviceType> deviceTypeOf(const ValueDecl *D) {
  return OMPDeclareTargetDeclAttr::getDeviceType(D);
}

/// Whether `D` is compiled for the device because it is declared `declare target` (any
/// `device_type` but host).
bool isDeviceDeclaration(const ValueDecl *D) {
  std::optional<DeviceType> Type = deviceTypeOf(D);
  return Type && *Type != OMPDeclareTargetDeclAttr::DT_Host;
}

/// Whether `D` is declared in a system header (a library's, the C and C++ libraries included).
bool inSystemHeader(const Decl *D) {
  return D->getASTContext().getSourceManager().isInSystemHeader(D->getLocation());
}

/// Whether a library builtin's header (null if none) is the C math library's: GPUs provide those
/// functions (libdevice, ocml, through clang's OpenMP math headers), as they do not provide the C
/// library's other functions.
bool isMathHeader(const char *Header) {
  return Header && (llvm::StringRef(Header) == "math.h" || llvm::StringRef(Header) == "complex.h");
}

/// Whether another device compile of the program may define `FD`, which this file declares
/// without a body: a function with external linkage declared outside system headers (the
/// program's own code, or a class library's other file, whose device compile defines the
/// virtual functions of the vtables it emits and whatever its device code calls). Only the
/// device link knows whether one does: the pass plugin gives such a declaration a weak trapping
/// definition, which any real definition replaces.
bool mayBeDefinedForDevice(const FunctionDecl *FD) {
  if (deviceTypeOf(FD) == OMPDeclareTargetDeclAttr::DT_Host || !FD->isExternallyVisible())
    return false;
  for (const FunctionDecl *Redeclaration : FD->redecls())
    if (inSystemHeader(Redeclaration))
      return false;
  return true;
}

/// Finds, in a function body and the bodies of the functions it calls that this file defines,
/// the first thing device code cannot reach: a `device_type(host)` function, a library's
/// function (system header) that is neither defined here nor `declare target`, or a global
/// variable that is neither defined here nor `declare target` (its definition is host code
/// elsewhere). Library builtins (printf, malloc, math), the replaceable allocation functions and
/// the OpenMP API are available on the device, and so is a function of the program's own code
/// that another file defines ([mayBeDefinedForDevice]).
class HostOnlyFinder : public RecursiveASTVisitor<HostOnlyFinder> {
public:
  /// The first host-only declaration `FD`'s body reaches, or null.
  const NamedDecl *find(const FunctionDecl *FD) {
    visitFunction(FD, 0);
    return Found;
  }

  bool VisitCallExpr(CallExpr *Call) {
    if (const FunctionDecl *Callee = Call->getDirectCallee())
      visitFunction(Callee, Depth + 1);
    return !Found;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *Construct) {
    visitFunction(Construct->getConstructor(), Depth + 1);
    return !Found;
  }
  bool VisitDeclRefExpr(DeclRefExpr *Ref) {
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (Var && Var->hasGlobalStorage() && !Var->isStaticLocal() && !Var->hasDefinition() &&
        !isDeviceDeclaration(Var) && !Var->getType().isConstQualified())
      Found = Var;
    return !Found;
  }

private:
  void visitFunction(const FunctionDecl *FD, unsigned AtDepth) {
    if (Found || !FD || AtDepth > MaxCallDepth || !Seen.insert(FD->getCanonicalDecl()).second)
      return;
    if (deviceTypeOf(FD) == OMPDeclareTargetDeclAttr::DT_Host) {
      Found = FD;
      return;
    }
    // The root is a virtual function with no `declare target`: look into it. A callee that is
    // `declare target` is compiled for the device anyway: its own problems are its author's.
    if (AtDepth > 0 && isDeviceDeclaration(FD))
      return;
    const FunctionDecl *Definition = nullptr;
    if (FD->hasBody(Definition)) {
      unsigned Saved = Depth;
      Depth = AtDepth;
      TraverseStmt(Definition->getBody());
      Depth = Saved;
      return;
    }
    if (isAvailableWithoutDefinition(FD) || mayBeDefinedForDevice(FD))
      return;
    Found = FD;
  }

  static bool isAvailableWithoutDefinition(const FunctionDecl *FD) {
    if (FD->getBuiltinID() != 0 || FD->isReplaceableGlobalAllocationFunction() ||
        FD->isDefaulted() || FD->isDeleted() || FD->isImplicit() || FD->isPureVirtual())
      return true;
    // A template specialization not instantiated yet: decided where it is instantiated.
    if (FD->getTemplateInstantiationPattern() || FD->getPrimaryTemplate())
      return true;
    const IdentifierInfo *Name = FD->getIdentifier();
    if (!Name || !FD->isExternC())
      return false;
    for (const char *Prefix : RuntimePrefixes)
      if (Name->getName().starts_with(Prefix))
        return true;
    return false;
  }

  llvm::SmallPtrSet<const Decl *, 32> Seen;
  const NamedDecl *Found = nullptr;
  unsigned Depth = 0;
};

/// Whether `FD` is a definition of a function declared `indirect` for the device (any
/// `device_type` but host).
bool isIndirectDefinition(const FunctionDecl *FD) {
  if (!FD || FD->isDependentContext() || !FD->doesThisDeclarationHaveABody())
    return false;
  std::optional<OMPDeclareTargetDeclAttr *> Active = OMPDeclareTargetDeclAttr::getActiveAttr(FD);
  return Active && (*Active)->getIndirect() &&
         (*Active)->getDevType() != OMPDeclareTargetDeclAttr::DT_Host;
}

/// The annotation that tells the pass plugin, in host modules, which functions are indirect
/// (`llvm.global.annotations`): it gives each its own offload entry.
constexpr const char *IndirectAnnotation = "omptarget_indirect";

/// Host compiles: annotates every function declared `indirect` that the file defines (template
/// instantiations and overloads included). clang names an indirect function's offload entry
/// after its declaration's name and line, so that every instantiation of a template, and every
/// overload declared on one line, shares one name and the host keeps one entry of them; the pass
/// plugin names each after its symbol instead, host and device alike, and adds the entries the
/// host module lacks for the functions annotated here.
class IndirectAnnotations final : public ASTConsumer {
public:
  explicit IndirectAnnotations(ASTContext &Context) : Context(Context) {}

  bool HandleTopLevelDecl(DeclGroupRef Group) override {
    for (Decl *D : Group)
      visit(D);
    return true;
  }
  void HandleInlineFunctionDefinition(FunctionDecl *FD) override { annotate(FD); }
  void HandleCXXImplicitFunctionInstantiation(FunctionDecl *FD) override { annotate(FD); }

private:
  void visit(Decl *D) {
    if (auto *FD = dyn_cast<FunctionDecl>(D)) {
      annotate(FD);
    } else if (isa<NamespaceDecl>(D) || isa<LinkageSpecDecl>(D) || isa<ExportDecl>(D)) {
      for (Decl *Inner : cast<DeclContext>(D)->decls())
        visit(Inner);
    }
  }

  void annotate(FunctionDecl *FD) {
    if (!isIndirectDefinition(FD))
      return;
    for (const AnnotateAttr *Annotation : FD->specific_attrs<AnnotateAttr>())
      if (Annotation->getAnnotation() == IndirectAnnotation)
        return;
    FD->addAttr(AnnotateAttr::CreateImplicit(Context, IndirectAnnotation, nullptr, 0));
  }

  ASTContext &Context;
};

/// What the device has of a declaration the device module leaves undefined.
enum class DeviceAnswer : int {
  /// The file declares nothing of that name.
  Unknown = -1,
  /// Only host code defines it: what reaches it cannot be compiled for the device.
  HostOnly = 0,
  /// The device has it: `declare target` outside system headers (another device compile of the
  /// program defines it), a C math function, a replaceable allocation function.
  Provided = 1,
  /// Another device compile of the program may define it ([mayBeDefinedForDevice]): the pass
  /// plugin gives it a weak definition that traps, which a real definition replaces at the
  /// device link.
  MaybeElsewhere = 2,
};

/// Answers, by symbol name, what the device has of a declaration of this file that the device
/// module leaves undefined (DeviceAnswer): the pass plugin asks it for each one after
/// optimization, where the module knows exactly what is undefined (the AST only guesses). Host
/// only is everything else the file declares and uses: host code elsewhere (`std::cout`,
/// `strlen`, libstdc++'s out-of-line functions, inline variables code generation leaves out of
/// the device module such as `std::piecewise_construct`), and library declarations a `begin
/// declare target` region happens to enclose.
class DeviceSymbolIndex : public RecursiveASTVisitor<DeviceSymbolIndex> {
public:
  explicit DeviceSymbolIndex(ASTContext &Context) : Names(Context) {
    // By name, not by declaration: code generation calls the C math library for builtins the
    // file need not declare (`__builtin_sqrtf` keeps a call to `sqrtf` for errno on x86_64), and
    // names such a builtin's implicit declaration after the library function.
    const Builtin::Context &Builtins = Context.BuiltinInfo;
    for (unsigned ID = Builtin::NotBuiltin + 1; ID < Builtin::FirstTSBuiltin; ++ID)
      if (isMathHeader(Builtins.getHeaderName(ID)))
        MathLibrary.insert(std::string(Builtins.getName(ID)));
    TraverseDecl(Context.getTranslationUnitDecl());
  }

  /// What the device has of the declaration named `Name`.
  DeviceAnswer provides(llvm::StringRef Name) const {
    if (MathLibrary.contains(Name))
      return DeviceAnswer::Provided;
    auto Found = Answers.find(Name);
    return Found == Answers.end() ? DeviceAnswer::Unknown : Found->second;
  }

  bool shouldVisitTemplateInstantiations() const { return true; }
  // Statements declare nothing that code generation names outside them.
  bool TraverseStmt(Stmt *, DataRecursionQueue * = nullptr) { return true; }

  bool VisitFunctionDecl(FunctionDecl *FD) {
    if (FD == FD->getCanonicalDecl() && !FD->isDependentContext() && FD->isUsed(false))
      record(FD, providedForDevice(FD));
    return true;
  }
  bool VisitVarDecl(VarDecl *VD) {
    if (VD == VD->getCanonicalDecl() && VD->hasGlobalStorage() && !VD->isStaticLocal() &&
        !VD->getDeclContext()->isDependentContext() && VD->isUsed(false))
      record(VD, declaredForDevice(VD) ? DeviceAnswer::Provided : DeviceAnswer::HostOnly);
    return true;
  }

private:
  static DeviceAnswer providedForDevice(const FunctionDecl *FD) {
    if (deviceTypeOf(FD) == OMPDeclareTargetDeclAttr::DT_Host)
      return DeviceAnswer::HostOnly;
    if (FD->isReplaceableGlobalAllocationFunction() || declaredForDevice(FD))
      return DeviceAnswer::Provided;
    if (!FD->isDefined() && mayBeDefinedForDevice(FD))
      return DeviceAnswer::MaybeElsewhere;
    return DeviceAnswer::HostOnly;
  }

  /// Some declaration of `D` is `declare target` for the device, outside system headers.
  static bool declaredForDevice(const ValueDecl *D) {
    for (const Decl *Redeclaration : D->redecls())
      if (isDeviceDeclaration(cast<ValueDecl>(Redeclaration)) && !inSystemHeader(Redeclaration))
        return true;
    return false;
  }

  void record(const NamedDecl *D, DeviceAnswer Answer) {
    std::vector<std::string> Manglings;
    if (isa<CXXConstructorDecl>(D) || isa<CXXDestructorDecl>(D))
      Manglings = Names.getAllManglings(D);
    else
      Manglings.push_back(Names.getName(D));
    for (const std::string &Name : Manglings)
      if (!Name.empty())
        Answers[Name] = Answer;
  }

  ASTNameGenerator Names;
  llvm::StringSet<> MathLibrary;
  llvm::StringMap<DeviceAnswer> Answers;
};

/// Finds, in this file's own code (outside system headers), the library classes whose objects
/// it constructs.
class ConstructedClasses : public RecursiveASTVisitor<ConstructedClasses> {
public:
  explicit ConstructedClasses(llvm::function_ref<void(CXXRecordDecl *, SourceLocation)> Found)
      : Found(Found) {}

  bool VisitCXXConstructExpr(CXXConstructExpr *Construct) {
    CXXRecordDecl *Class = Construct->getConstructor()->getParent();
    if (Class->hasDefinition() && Class->isDynamicClass() && inSystemHeader(Class))
      Found(Class, Construct->getBeginLoc());
    return true;
  }

private:
  llvm::function_ref<void(CXXRecordDecl *, SourceLocation)> Found;
};

class DeviceDefinitions;

/// The device compile running in this process, which the pass plugin (loaded into the same
/// compiler) asks through omptarget_indirect_frontend_device_provides.
DeviceDefinitions *ActiveDeviceCompile = nullptr;

class DeviceDefinitions final : public SemaConsumer {
public:
  DeviceDefinitions(CompilerInstance &CI, VTablePolicy Policy)
      : Context(CI.getASTContext()), Diags(CI.getDiagnostics()), Policy(Policy),
        Remarks(CI.getCodeGenOpts().OptimizationRemark.patternMatches(RemarkName)) {
    KeptRemark = Diags.getCustomDiagID(
        DiagnosticsEngine::Remark,
        "kept indirect function %0 for the device: its definition and offload entry are "
        "emitted although no device code names it [-Rpass=omptarget-indirect]");
    VTableRemark = Diags.getCustomDiagID(
        DiagnosticsEngine::Remark,
        "vtable of %0 emitted for the device: objects the host builds reach device code "
        "[-Rpass=omptarget-indirect]");
    TrapRemark = Diags.getCustomDiagID(
        DiagnosticsEngine::Remark,
        "%0 is not compiled for the device (%1): its vtable slots hold a stub that traps "
        "naming it [-Rpass=omptarget-indirect]");
    SkippedRemark = Diags.getCustomDiagID(
        DiagnosticsEngine::Remark,
        "vtable of %0 not emitted for the device: %1 [-Rpass=omptarget-indirect]");
  }

  ~DeviceDefinitions() override {
    if (ActiveDeviceCompile == this)
      ActiveDeviceCompile = nullptr;
  }

  /// DeviceSymbolIndex::provides, once the file is parsed and checked (Unknown before).
  DeviceAnswer provides(llvm::StringRef Name) const {
    return Index ? Index->provides(Name) : DeviceAnswer::Unknown;
  }

  void InitializeSema(Sema &S) override { TheSema = &S; }
  void ForgetSema() override { TheSema = nullptr; }

  bool HandleTopLevelDecl(DeclGroupRef Group) override {
    for (Decl *D : Group)
      visitDeclaration(D);
    return true;
  }

  // In-class member function definitions arrive here once their class is complete.
  void HandleInlineFunctionDefinition(FunctionDecl *FD) override {
    keepIfIndirect(FD);
    findConstructedClasses(FD);
  }

  void HandleCXXImplicitFunctionInstantiation(FunctionDecl *FD) override {
    keepIfIndirect(FD);
    findConstructedClasses(FD);
  }

  void HandleTagDeclDefinition(TagDecl *Tag) override {
    auto *Class = dyn_cast<CXXRecordDecl>(Tag);
    if (!Class || !TheSema || !isDeviceCompile())
      return;
    bool Declared =
        TheSema->OpenMP().isInOpenMPDeclareTargetContext() || declaresDeviceMember(Class);
    bool Library = inSystemHeader(Class);
    if (!Declared && (Policy != VTablePolicy::All || Library || !Class->isDynamicClass()))
      return;
    // A library's class (a header a region encloses) goes to the device when this file's own
    // code constructs its objects or its own classes derive from it, not for being declared.
    if (Library && Class->isDynamicClass())
      LibraryClasses.insert(Class->getCanonicalDecl());
    else
      markVTable(Class, Class->getLocation());
  }

  // Sema is defining the vtable (this file emits it: its key function is here, or it has none):
  // decide, before code generation reads them, which of the virtual functions it names (its own
  // and those it inherits) the device cannot compile.
  void HandleVTable(CXXRecordDecl *Class) override {
    if (!Marked.contains(Class->getCanonicalDecl()))
      return;
    remark(Class->getLocation(), VTableRemark) << qualified(Class);
    trapHostOnlyVirtuals(Class);
  }

  void HandleTranslationUnit(ASTContext &) override {
    // Built now, before code generation's turn: the driver's -clear-ast-before-backend frees the
    // AST before the optimizer (and the pass plugin's question) runs.
    Index.emplace(Context);
    ActiveDeviceCompile = this;
    if (!Remarks)
      return;
    for (const CXXRecordDecl *Class : LibraryClasses)
      if (!Marked.contains(Class))
        remark(Class->getLocation(), SkippedRemark)
            << qualified(Class)
            << "a library's class (system header) that this file's own code neither constructs "
               "nor derives from";
  }

private:
  void visitDeclaration(Decl *D) {
    if (auto *Var = dyn_cast<VarDecl>(D)) {
      if (Var->hasInit() && !inSystemHeader(Var))
        findConstructedClasses(Var);
    } else if (auto *FD = dyn_cast<FunctionDecl>(D)) {
      keepIfIndirect(FD);
      findConstructedClasses(FD);
      // An out-of-line virtual function declared `declare target`: its class goes to the device.
      auto *Method = dyn_cast<CXXMethodDecl>(FD);
      if (Method && Method->isVirtual() && isDeviceDeclaration(Method))
        markVTable(Method->getParent(), Method->getLocation());
    } else if (auto *Context = dyn_cast<DeclContext>(D)) {
      // Namespaces and linkage blocks arrive whole, once they are closed.
      if (isa<NamespaceDecl>(D) || isa<LinkageSpecDecl>(D) || isa<ExportDecl>(D))
        for (Decl *Inner : Context->decls())
          visitDeclaration(Inner);
    }
  }

  void keepIfIndirect(FunctionDecl *FD) {
    if (!isDeviceCompile() || !FD || FD->hasAttr<UsedAttr>() || !isIndirectDefinition(FD))
      return;
    FD->addAttr(UsedAttr::CreateImplicit(Context));
    remark(FD->getLocation(), KeptRemark) << qualified(FD);
  }

  /// Marks the library classes of regions whose objects `D` (a definition of this file's own
  /// code) constructs.
  void findConstructedClasses(Decl *D) {
    if (!isDeviceCompile() || LibraryClasses.empty() || D->isInvalidDecl() || inSystemHeader(D))
      return;
    if (auto *FD = dyn_cast<FunctionDecl>(D)) {
      const FunctionDecl *Pattern = FD->getTemplateInstantiationPattern();
      if (FD->isDependentContext() || !FD->doesThisDeclarationHaveABody() ||
          (Pattern && inSystemHeader(Pattern)))
        return;
    }
    ConstructedClasses([this](CXXRecordDecl *Class, SourceLocation Where) {
      if (LibraryClasses.contains(Class->getCanonicalDecl()))
        markVTable(Class, Where);
    }).TraverseDecl(D);
  }

  /// Whether `Class` declares a member function that is `declare target` for the device (a
  /// class template's specialization carries its members' attributes).
  static bool declaresDeviceMember(const CXXRecordDecl *Class) {
    for (const CXXMethodDecl *Method : Class->methods())
      if (isDeviceDeclaration(Method))
        return true;
    return false;
  }

  /// Marks the vtables of `Class` and its dynamic bases used, with definitions required.
  void markVTable(CXXRecordDecl *Class, SourceLocation Where) {
    if (!isDeviceCompile() || !TheSema || !Class->hasDefinition())
      return;
    Class = Class->getDefinition();
    if (!Class->isDynamicClass() || Class->isDependentContext() ||
        !Marked.insert(Class->getCanonicalDecl()).second)
      return;
    if (!Class->isExternallyVisible()) {
      // The host's vtable has no name the device's could be paired by.
      remark(Class->getLocation(), SkippedRemark) << qualified(Class) << "the class has internal linkage";
      return;
    }
    Sema &S = *TheSema;
    if (S.OpenMP().isInOpenMPDeclareTargetContext()) {
      S.MarkVTableUsed(Where, Class, /*DefinitionRequired=*/true);
    } else {
      // Sema::MarkVTableUsed ignores device compiles outside a declare target region; what it
      // does otherwise (Itanium ABI, a class that is not local) is recording the use:
      // DefineUsedVTables then defines the vtable at the end of the file.
      auto [Use, Fresh] = S.VTablesUsed.insert({Class->getCanonicalDecl(), true});
      if (Fresh || !Use->second) {
        Use->second = true;
        S.VTableUses.push_back({Class->getCanonicalDecl(), Where});
      }
    }
    for (const CXXBaseSpecifier &Base : Class->bases())
      if (CXXRecordDecl *BaseClass = Base.getType()->getAsCXXRecordDecl())
        markVTable(BaseClass, Where);
    for (const CXXBaseSpecifier &Base : Class->vbases())
      if (CXXRecordDecl *BaseClass = Base.getType()->getAsCXXRecordDecl())
        markVTable(BaseClass, Where);
  }

  /// Keeps from the device the virtual functions `Class` and its bases declare that the device
  /// cannot compile: declared `device_type(host)`, or not `declare target` and reaching host-only
  /// code. The bases' too, and now: code generation declares an inherited function when it emits
  /// this vtable, which may come before the base's own, and a declaration made then stays strong.
  void trapHostOnlyVirtuals(CXXRecordDecl *Class) {
    for (const CXXBaseSpecifier &Base : Class->bases())
      if (CXXRecordDecl *BaseClass = Base.getType()->getAsCXXRecordDecl())
        if (BaseClass->hasDefinition())
          trapHostOnlyVirtuals(BaseClass->getDefinition());
    for (CXXMethodDecl *Method : Class->methods()) {
      if (!Method->isVirtual() || Method->isPureVirtual() || !Method->isUserProvided() ||
          !Trapped.insert(Method->getCanonicalDecl()).second)
        continue;
      std::optional<DeviceType> Type = deviceTypeOf(Method);
      std::string Why;
      if (Type == OMPDeclareTargetDeclAttr::DT_Host) {
        Why = "declared device_type(host)";
      } else if (!Type) {
        const NamedDecl *HostOnly = HostOnlyFinder().find(Method);
        if (!HostOnly) {
          declareOutOfLineDestructor(Method);
          continue;
        }
        Why = "not declare target, reaches host-only `" + HostOnly->getQualifiedNameAsString() + "`";
        // Code generation then leaves its body out of the device module.
        for (FunctionDecl *Redeclaration : Method->redecls())
          Redeclaration->addAttr(OMPDeclareTargetDeclAttr::CreateImplicit(
              Context, OMPDeclareTargetDeclAttr::MT_To, OMPDeclareTargetDeclAttr::DT_Host,
              /*IndirectExpr=*/nullptr, /*Indirect=*/false, /*Level=*/0));
      } else {
        continue;
      }
      // A weak declaration: the device link leaves it unresolved, the pass plugin replaces it.
      for (FunctionDecl *Redeclaration : Method->redecls())
        if (!Redeclaration->hasAttr<WeakAttr>())
          Redeclaration->addAttr(WeakAttr::CreateImplicit(Context));
      remark(Method->getLocation(), TrapRemark) << qualified(Method) << Why;
    }
  }

  /// Makes a virtual destructor this file defines out of line (`Shape::~Shape() {}`) `declare
  /// target`. Code generation emits a function that is not `declare target` for the device when
  /// device code (here: the vtable) first names it, once per declaration: of a destructor only the
  /// first variant named (the complete one, an alias of the base one) would be emitted, the alias
  /// then pointing to nothing (clang 19 crashes). Declared `declare target`, every variant named
  /// is emitted. Other virtual functions, and destructors defined in their class, need nothing.
  void declareOutOfLineDestructor(CXXMethodDecl *Method) {
    const FunctionDecl *Definition = nullptr;
    if (!isa<CXXDestructorDecl>(Method) || !Method->hasBody(Definition) ||
        isa<CXXRecordDecl>(Definition->getLexicalDeclContext()))
      return;
    for (FunctionDecl *Redeclaration : Method->redecls())
      Redeclaration->addAttr(OMPDeclareTargetDeclAttr::CreateImplicit(
          Context, OMPDeclareTargetDeclAttr::MT_To, OMPDeclareTargetDeclAttr::DT_Any,
          /*IndirectExpr=*/nullptr, /*Indirect=*/false, /*Level=*/0));
  }

  /// `D`'s name with its scopes and template arguments, as remarks quote it.
  static std::string qualified(const NamedDecl *D) {
    std::string Name;
    llvm::raw_string_ostream Out(Name);
    D->getNameForDiagnostic(Out, D->getASTContext().getPrintingPolicy(), /*Qualified=*/true);
    return "`" + Out.str() + "`";
  }

  bool isDeviceCompile() const {
    return Context.getLangOpts().OpenMP && Context.getLangOpts().OpenMPIsTargetDevice;
  }

  /// A remark at `Where`, shown under -Rpass=omptarget-indirect only.
  DiagnosticBuilder remark(SourceLocation Where, unsigned ID) {
    // An ignored diagnostic still takes its arguments: nothing prints.
    if (!Remarks)
      ID = Ignored;
    return Diags.Report(Where, ID);
  }

  ASTContext &Context;
  DiagnosticsEngine &Diags;
  VTablePolicy Policy;
  Sema *TheSema = nullptr;
  bool Remarks;
  unsigned KeptRemark = 0, VTableRemark = 0, TrapRemark = 0, SkippedRemark = 0;
  unsigned Ignored = Diags.getCustomDiagID(DiagnosticsEngine::Ignored, "%0%1");
  llvm::SmallPtrSet<const CXXRecordDecl *, 32> Marked;
  llvm::SmallPtrSet<const CXXMethodDecl *, 32> Trapped;
  /// Dynamic classes of system headers in `declare target` regions, marked only when this
  /// file's own code constructs them (or as bases of marked classes).
  llvm::SmallPtrSet<const CXXRecordDecl *, 32> LibraryClasses;
  std::optional<DeviceSymbolIndex> Index;
};

class DeviceDefinitionsAction final : public PluginASTAction {
protected:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI, llvm::StringRef) override {
    // C and compiles without OpenMP get a consumer that does nothing.
    if (!CI.getLangOpts().OpenMP)
      return std::make_unique<ASTConsumer>();
    if (!CI.getLangOpts().OpenMPIsTargetDevice)
      return std::make_unique<IndirectAnnotations>(CI.getASTContext());
    return std::make_unique<DeviceDefinitions>(CI, Policy);
  }

  // -fplugin-arg-omptarget_indirect-vtables=all|declare-target. An unknown argument is warned
  // about and ignored: a plugin never stops a build for its own options.
  bool ParseArgs(const CompilerInstance &CI, const std::vector<std::string> &Args) override {
    // Once per compile, before anything of clang's is touched: false leaves the compile alone.
    static const bool Usable = runsInItsOwnRelease();
    if (!Usable)
      return false;
    for (const std::string &Arg : Args) {
      if (Arg == "vtables=all") {
        Policy = VTablePolicy::All;
      } else if (Arg == "vtables=declare-target") {
        Policy = VTablePolicy::DeclareTarget;
      } else {
        DiagnosticsEngine &Diags = CI.getDiagnostics();
        Diags.Report(Diags.getCustomDiagID(DiagnosticsEngine::Warning,
                                           "omptarget-indirect: unknown plugin argument '%0' "
                                           "ignored (known: vtables=all, vtables=declare-target)"))
            << Arg;
      }
    }
    return true;
  }

  // Beside code generation, in the same compile: no -plugin flag needed.
  ActionType getActionType() override { return AddBeforeMainAction; }

private:
  VTablePolicy Policy = VTablePolicy::All;
};

} // namespace

/// Asked by the pass plugin (looked up in the compiler process, where both plugins are loaded)
/// for each declaration that the optimized device module leaves undefined: `Name` (`Length`
/// bytes, no NUL needed) is the symbol. Returns 1 if the device provides it (`declare target`
/// outside system headers, a C math function, an allocation function), 2 if another device
/// compile of the program may define it (a function of the program's own code that this file
/// declares without a body), 0 if host code alone defines it, -1 if this file uses no such
/// declaration or no device compile is running.
extern "C" __attribute__((visibility("default"))) int
omptarget_indirect_frontend_device_provides(const char *Name, size_t Length) {
  if (!ActiveDeviceCompile || !Name)
    return static_cast<int>(DeviceAnswer::Unknown);
  return static_cast<int>(ActiveDeviceCompile->provides(llvm::StringRef(Name, Length)));
}

static FrontendPluginRegistry::Add<DeviceDefinitionsAction>
    // clang hands `-fplugin-arg-<name>-<argument>` to the plugin named up to the first `-`: the
    // name has none.
    Registration("omptarget_indirect", "emit on the device what host code hands to device code");
