// The LLVM-C API the pass plugin's Rust code uses (every LLVM name in src/*.rs), as LLVM
// 23.1.4's headers declare it. The plugin built for an LLVM whose llvm-sys release does not
// exist calls that LLVM through these declarations: build.rs compiles this file against the
// headers of the LLVM it builds for, and a function, type or constant that differs there
// fails an assertion and stops the build. Written by `cargo xtask llvm-c-api <llvm-config>`
// from clang's AST dump of the headers; each line ends with the name it checks.
#include <llvm-c/Core.h>
#include <llvm-c/BitReader.h>
#include <llvm-c/Comdat.h>
#include <llvm-c/DebugInfo.h>
#include <llvm-c/Target.h>
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMABISizeOfType), unsigned long long (LLVMTargetDataRef, LLVMTypeRef)), "LLVMABISizeOfType"); /* LLVMABISizeOfType */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAddAttributeAtIndex), void (LLVMValueRef, LLVMAttributeIndex, LLVMAttributeRef)), "LLVMAddAttributeAtIndex"); /* LLVMAddAttributeAtIndex */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAddCallSiteAttribute), void (LLVMValueRef, LLVMAttributeIndex, LLVMAttributeRef)), "LLVMAddCallSiteAttribute"); /* LLVMAddCallSiteAttribute */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAddFunction), LLVMValueRef (LLVMModuleRef, const char *, LLVMTypeRef)), "LLVMAddFunction"); /* LLVMAddFunction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAddGlobal), LLVMValueRef (LLVMModuleRef, LLVMTypeRef, const char *)), "LLVMAddGlobal"); /* LLVMAddGlobal */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAddGlobalInAddressSpace), LLVMValueRef (LLVMModuleRef, LLVMTypeRef, const char *, unsigned int)), "LLVMAddGlobalInAddressSpace"); /* LLVMAddGlobalInAddressSpace */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAddNamedMetadataOperand), void (LLVMModuleRef, const char *, LLVMValueRef)), "LLVMAddNamedMetadataOperand"); /* LLVMAddNamedMetadataOperand */
_Static_assert(LLVMAddrSpaceCast == 60, "LLVMAddrSpaceCast"); /* LLVMAddrSpaceCast */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAliasGetAliasee), LLVMValueRef (LLVMValueRef)), "LLVMAliasGetAliasee"); /* LLVMAliasGetAliasee */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAppendBasicBlockInContext), LLVMBasicBlockRef (LLVMContextRef, LLVMValueRef, const char *)), "LLVMAppendBasicBlockInContext"); /* LLVMAppendBasicBlockInContext */
_Static_assert(LLVMAppendingLinkage == 7, "LLVMAppendingLinkage"); /* LLVMAppendingLinkage */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMArrayType2), LLVMTypeRef (LLVMTypeRef, uint64_t)), "LLVMArrayType2"); /* LLVMArrayType2 */
_Static_assert(LLVMArrayTypeKind == 11, "LLVMArrayTypeKind"); /* LLVMArrayTypeKind */
_Static_assert(LLVMAttributeFunctionIndex == -1, "LLVMAttributeFunctionIndex"); /* LLVMAttributeFunctionIndex */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMAttributeRef), struct LLVMOpaqueAttributeRef *), "LLVMAttributeRef"); /* LLVMAttributeRef */
_Static_assert(LLVMAvailableExternallyLinkage == 1, "LLVMAvailableExternallyLinkage"); /* LLVMAvailableExternallyLinkage */
_Static_assert(LLVMBitCast == 41, "LLVMBitCast"); /* LLVMBitCast */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildAddrSpaceCast), LLVMValueRef (LLVMBuilderRef, LLVMValueRef, LLVMTypeRef, const char *)), "LLVMBuildAddrSpaceCast"); /* LLVMBuildAddrSpaceCast */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildAlloca), LLVMValueRef (LLVMBuilderRef, LLVMTypeRef, const char *)), "LLVMBuildAlloca"); /* LLVMBuildAlloca */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildCall2), LLVMValueRef (LLVMBuilderRef, LLVMTypeRef, LLVMValueRef, LLVMValueRef *, unsigned int, const char *)), "LLVMBuildCall2"); /* LLVMBuildCall2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildGlobalString), LLVMValueRef (LLVMBuilderRef, const char *, const char *)), "LLVMBuildGlobalString"); /* LLVMBuildGlobalString */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildInBoundsGEP2), LLVMValueRef (LLVMBuilderRef, LLVMTypeRef, LLVMValueRef, LLVMValueRef *, unsigned int, const char *)), "LLVMBuildInBoundsGEP2"); /* LLVMBuildInBoundsGEP2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildLoad2), LLVMValueRef (LLVMBuilderRef, LLVMTypeRef, LLVMValueRef, const char *)), "LLVMBuildLoad2"); /* LLVMBuildLoad2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildMul), LLVMValueRef (LLVMBuilderRef, LLVMValueRef, LLVMValueRef, const char *)), "LLVMBuildMul"); /* LLVMBuildMul */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildRetVoid), LLVMValueRef (LLVMBuilderRef)), "LLVMBuildRetVoid"); /* LLVMBuildRetVoid */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildSExtOrBitCast), LLVMValueRef (LLVMBuilderRef, LLVMValueRef, LLVMTypeRef, const char *)), "LLVMBuildSExtOrBitCast"); /* LLVMBuildSExtOrBitCast */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildSelect), LLVMValueRef (LLVMBuilderRef, LLVMValueRef, LLVMValueRef, LLVMValueRef, const char *)), "LLVMBuildSelect"); /* LLVMBuildSelect */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildStore), LLVMValueRef (LLVMBuilderRef, LLVMValueRef, LLVMValueRef)), "LLVMBuildStore"); /* LLVMBuildStore */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuildUnreachable), LLVMValueRef (LLVMBuilderRef)), "LLVMBuildUnreachable"); /* LLVMBuildUnreachable */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMBuilderRef), struct LLVMOpaqueBuilder *), "LLVMBuilderRef"); /* LLVMBuilderRef */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstArray2), LLVMValueRef (LLVMTypeRef, LLVMValueRef *, uint64_t)), "LLVMConstArray2"); /* LLVMConstArray2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstInBoundsGEP2), LLVMValueRef (LLVMTypeRef, LLVMValueRef, LLVMValueRef *, unsigned int)), "LLVMConstInBoundsGEP2"); /* LLVMConstInBoundsGEP2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstInt), LLVMValueRef (LLVMTypeRef, unsigned long long, LLVMBool)), "LLVMConstInt"); /* LLVMConstInt */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstIntGetSExtValue), long long (LLVMValueRef)), "LLVMConstIntGetSExtValue"); /* LLVMConstIntGetSExtValue */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstIntGetZExtValue), unsigned long long (LLVMValueRef)), "LLVMConstIntGetZExtValue"); /* LLVMConstIntGetZExtValue */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstNamedStruct), LLVMValueRef (LLVMTypeRef, LLVMValueRef *, unsigned int)), "LLVMConstNamedStruct"); /* LLVMConstNamedStruct */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstNull), LLVMValueRef (LLVMTypeRef)), "LLVMConstNull"); /* LLVMConstNull */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstPointerCast), LLVMValueRef (LLVMValueRef, LLVMTypeRef)), "LLVMConstPointerCast"); /* LLVMConstPointerCast */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstPointerNull), LLVMValueRef (LLVMTypeRef)), "LLVMConstPointerNull"); /* LLVMConstPointerNull */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstPtrToInt), LLVMValueRef (LLVMValueRef, LLVMTypeRef)), "LLVMConstPtrToInt"); /* LLVMConstPtrToInt */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstStringInContext2), LLVMValueRef (LLVMContextRef, const char *, size_t, LLVMBool)), "LLVMConstStringInContext2"); /* LLVMConstStringInContext2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMConstStructInContext), LLVMValueRef (LLVMContextRef, LLVMValueRef *, unsigned int, LLVMBool)), "LLVMConstStructInContext"); /* LLVMConstStructInContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMContextRef), struct LLVMOpaqueContext *), "LLVMContextRef"); /* LLVMContextRef */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMCountIncoming), unsigned int (LLVMValueRef)), "LLVMCountIncoming"); /* LLVMCountIncoming */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMCountParamTypes), unsigned int (LLVMTypeRef)), "LLVMCountParamTypes"); /* LLVMCountParamTypes */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMCountParams), unsigned int (LLVMValueRef)), "LLVMCountParams"); /* LLVMCountParams */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMCountStructElementTypes), unsigned int (LLVMTypeRef)), "LLVMCountStructElementTypes"); /* LLVMCountStructElementTypes */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMCreateBuilderInContext), LLVMBuilderRef (LLVMContextRef)), "LLVMCreateBuilderInContext"); /* LLVMCreateBuilderInContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMCreateEnumAttribute), LLVMAttributeRef (LLVMContextRef, unsigned int, uint64_t)), "LLVMCreateEnumAttribute"); /* LLVMCreateEnumAttribute */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMCreateMemoryBufferWithContentsOfFile), LLVMBool (const char *, LLVMMemoryBufferRef *, char **)), "LLVMCreateMemoryBufferWithContentsOfFile"); /* LLVMCreateMemoryBufferWithContentsOfFile */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMDeleteFunction), void (LLVMValueRef)), "LLVMDeleteFunction"); /* LLVMDeleteFunction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMDeleteGlobal), void (LLVMValueRef)), "LLVMDeleteGlobal"); /* LLVMDeleteGlobal */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMDisposeBuilder), void (LLVMBuilderRef)), "LLVMDisposeBuilder"); /* LLVMDisposeBuilder */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMDisposeMemoryBuffer), void (LLVMMemoryBufferRef)), "LLVMDisposeMemoryBuffer"); /* LLVMDisposeMemoryBuffer */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMDisposeMessage), void (char *)), "LLVMDisposeMessage"); /* LLVMDisposeMessage */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMDisposeModule), void (LLVMModuleRef)), "LLVMDisposeModule"); /* LLVMDisposeModule */
_Static_assert(LLVMExternalLinkage == 0, "LLVMExternalLinkage"); /* LLVMExternalLinkage */
_Static_assert(LLVMExternalWeakLinkage == 12, "LLVMExternalWeakLinkage"); /* LLVMExternalWeakLinkage */
_Static_assert(LLVMFP128TypeKind == 5, "LLVMFP128TypeKind"); /* LLVMFP128TypeKind */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMFunctionType), LLVMTypeRef (LLVMTypeRef, LLVMTypeRef *, unsigned int, LLVMBool)), "LLVMFunctionType"); /* LLVMFunctionType */
_Static_assert(LLVMFunctionValueKind == 5, "LLVMFunctionValueKind"); /* LLVMFunctionValueKind */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetAggregateElement), LLVMValueRef (LLVMValueRef, unsigned int)), "LLVMGetAggregateElement"); /* LLVMGetAggregateElement */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetAlignment), unsigned int (LLVMValueRef)), "LLVMGetAlignment"); /* LLVMGetAlignment */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetAllocatedType), LLVMTypeRef (LLVMValueRef)), "LLVMGetAllocatedType"); /* LLVMGetAllocatedType */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetArgOperand), LLVMValueRef (LLVMValueRef, unsigned int)), "LLVMGetArgOperand"); /* LLVMGetArgOperand */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetArrayLength2), uint64_t (LLVMTypeRef)), "LLVMGetArrayLength2"); /* LLVMGetArrayLength2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetAsString), const char *(LLVMValueRef, size_t *)), "LLVMGetAsString"); /* LLVMGetAsString */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetBasicBlockParent), LLVMValueRef (LLVMBasicBlockRef)), "LLVMGetBasicBlockParent"); /* LLVMGetBasicBlockParent */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetCalledValue), LLVMValueRef (LLVMValueRef)), "LLVMGetCalledValue"); /* LLVMGetCalledValue */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetComdat), LLVMComdatRef (LLVMValueRef)), "LLVMGetComdat"); /* LLVMGetComdat */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetConstOpcode), LLVMOpcode (LLVMValueRef)), "LLVMGetConstOpcode"); /* LLVMGetConstOpcode */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetDataLayoutStr), const char *(LLVMModuleRef)), "LLVMGetDataLayoutStr"); /* LLVMGetDataLayoutStr */
_Static_assert(LLVMGetElementPtr == 29, "LLVMGetElementPtr"); /* LLVMGetElementPtr */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetElementType), LLVMTypeRef (LLVMTypeRef)), "LLVMGetElementType"); /* LLVMGetElementType */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetEntryBasicBlock), LLVMBasicBlockRef (LLVMValueRef)), "LLVMGetEntryBasicBlock"); /* LLVMGetEntryBasicBlock */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetEnumAttributeAtIndex), LLVMAttributeRef (LLVMValueRef, LLVMAttributeIndex, unsigned int)), "LLVMGetEnumAttributeAtIndex"); /* LLVMGetEnumAttributeAtIndex */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetEnumAttributeKindForName), unsigned int (const char *, size_t)), "LLVMGetEnumAttributeKindForName"); /* LLVMGetEnumAttributeKindForName */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetFirstBasicBlock), LLVMBasicBlockRef (LLVMValueRef)), "LLVMGetFirstBasicBlock"); /* LLVMGetFirstBasicBlock */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetFirstFunction), LLVMValueRef (LLVMModuleRef)), "LLVMGetFirstFunction"); /* LLVMGetFirstFunction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetFirstGlobal), LLVMValueRef (LLVMModuleRef)), "LLVMGetFirstGlobal"); /* LLVMGetFirstGlobal */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetFirstInstruction), LLVMValueRef (LLVMBasicBlockRef)), "LLVMGetFirstInstruction"); /* LLVMGetFirstInstruction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetFirstUse), LLVMUseRef (LLVMValueRef)), "LLVMGetFirstUse"); /* LLVMGetFirstUse */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetFunctionCallConv), unsigned int (LLVMValueRef)), "LLVMGetFunctionCallConv"); /* LLVMGetFunctionCallConv */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetGEPSourceElementType), LLVMTypeRef (LLVMValueRef)), "LLVMGetGEPSourceElementType"); /* LLVMGetGEPSourceElementType */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetGlobalParent), LLVMModuleRef (LLVMValueRef)), "LLVMGetGlobalParent"); /* LLVMGetGlobalParent */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetIncomingValue), LLVMValueRef (LLVMValueRef, unsigned int)), "LLVMGetIncomingValue"); /* LLVMGetIncomingValue */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetInitializer), LLVMValueRef (LLVMValueRef)), "LLVMGetInitializer"); /* LLVMGetInitializer */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetInstructionOpcode), LLVMOpcode (LLVMValueRef)), "LLVMGetInstructionOpcode"); /* LLVMGetInstructionOpcode */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetInstructionParent), LLVMBasicBlockRef (LLVMValueRef)), "LLVMGetInstructionParent"); /* LLVMGetInstructionParent */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetIntTypeWidth), unsigned int (LLVMTypeRef)), "LLVMGetIntTypeWidth"); /* LLVMGetIntTypeWidth */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetIntrinsicID), unsigned int (LLVMValueRef)), "LLVMGetIntrinsicID"); /* LLVMGetIntrinsicID */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetLinkage), LLVMLinkage (LLVMValueRef)), "LLVMGetLinkage"); /* LLVMGetLinkage */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetMDKindIDInContext), unsigned int (LLVMContextRef, const char *, unsigned int)), "LLVMGetMDKindIDInContext"); /* LLVMGetMDKindIDInContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetMDNodeNumOperands), unsigned int (LLVMValueRef)), "LLVMGetMDNodeNumOperands"); /* LLVMGetMDNodeNumOperands */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetMDNodeOperands), void (LLVMValueRef, LLVMValueRef *)), "LLVMGetMDNodeOperands"); /* LLVMGetMDNodeOperands */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetMDString), const char *(LLVMValueRef, unsigned int *)), "LLVMGetMDString"); /* LLVMGetMDString */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetMetadata), LLVMValueRef (LLVMValueRef, unsigned int)), "LLVMGetMetadata"); /* LLVMGetMetadata */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetModuleContext), LLVMContextRef (LLVMModuleRef)), "LLVMGetModuleContext"); /* LLVMGetModuleContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetModuleDataLayout), LLVMTargetDataRef (LLVMModuleRef)), "LLVMGetModuleDataLayout"); /* LLVMGetModuleDataLayout */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetModuleFlag), LLVMMetadataRef (LLVMModuleRef, const char *, size_t)), "LLVMGetModuleFlag"); /* LLVMGetModuleFlag */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNamedFunction), LLVMValueRef (LLVMModuleRef, const char *)), "LLVMGetNamedFunction"); /* LLVMGetNamedFunction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNamedGlobal), LLVMValueRef (LLVMModuleRef, const char *)), "LLVMGetNamedGlobal"); /* LLVMGetNamedGlobal */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNamedMetadataNumOperands), unsigned int (LLVMModuleRef, const char *)), "LLVMGetNamedMetadataNumOperands"); /* LLVMGetNamedMetadataNumOperands */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNamedMetadataOperands), void (LLVMModuleRef, const char *, LLVMValueRef *)), "LLVMGetNamedMetadataOperands"); /* LLVMGetNamedMetadataOperands */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNextBasicBlock), LLVMBasicBlockRef (LLVMBasicBlockRef)), "LLVMGetNextBasicBlock"); /* LLVMGetNextBasicBlock */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNextFunction), LLVMValueRef (LLVMValueRef)), "LLVMGetNextFunction"); /* LLVMGetNextFunction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNextGlobal), LLVMValueRef (LLVMValueRef)), "LLVMGetNextGlobal"); /* LLVMGetNextGlobal */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNextInstruction), LLVMValueRef (LLVMValueRef)), "LLVMGetNextInstruction"); /* LLVMGetNextInstruction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNextUse), LLVMUseRef (LLVMUseRef)), "LLVMGetNextUse"); /* LLVMGetNextUse */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNumArgOperands), unsigned int (LLVMValueRef)), "LLVMGetNumArgOperands"); /* LLVMGetNumArgOperands */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetNumOperands), int (LLVMValueRef)), "LLVMGetNumOperands"); /* LLVMGetNumOperands */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetOperand), LLVMValueRef (LLVMValueRef, unsigned int)), "LLVMGetOperand"); /* LLVMGetOperand */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetOrInsertComdat), LLVMComdatRef (LLVMModuleRef, const char *)), "LLVMGetOrInsertComdat"); /* LLVMGetOrInsertComdat */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetParam), LLVMValueRef (LLVMValueRef, unsigned int)), "LLVMGetParam"); /* LLVMGetParam */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetParamTypes), void (LLVMTypeRef, LLVMTypeRef *)), "LLVMGetParamTypes"); /* LLVMGetParamTypes */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetPointerAddressSpace), unsigned int (LLVMTypeRef)), "LLVMGetPointerAddressSpace"); /* LLVMGetPointerAddressSpace */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetReturnType), LLVMTypeRef (LLVMTypeRef)), "LLVMGetReturnType"); /* LLVMGetReturnType */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetSection), const char *(LLVMValueRef)), "LLVMGetSection"); /* LLVMGetSection */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetSourceFileName), const char *(LLVMModuleRef, size_t *)), "LLVMGetSourceFileName"); /* LLVMGetSourceFileName */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetStructName), const char *(LLVMTypeRef)), "LLVMGetStructName"); /* LLVMGetStructName */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetTarget), const char *(LLVMModuleRef)), "LLVMGetTarget"); /* LLVMGetTarget */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetTypeContext), LLVMContextRef (LLVMTypeRef)), "LLVMGetTypeContext"); /* LLVMGetTypeContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetTypeKind), LLVMTypeKind (LLVMTypeRef)), "LLVMGetTypeKind"); /* LLVMGetTypeKind */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetUser), LLVMValueRef (LLVMUseRef)), "LLVMGetUser"); /* LLVMGetUser */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetValueKind), LLVMValueKind (LLVMValueRef)), "LLVMGetValueKind"); /* LLVMGetValueKind */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetValueName2), const char *(LLVMValueRef, size_t *)), "LLVMGetValueName2"); /* LLVMGetValueName2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGetVisibility), LLVMVisibility (LLVMValueRef)), "LLVMGetVisibility"); /* LLVMGetVisibility */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMGlobalGetValueType), LLVMTypeRef (LLVMValueRef)), "LLVMGlobalGetValueType"); /* LLVMGlobalGetValueType */
_Static_assert(LLVMGlobalUnnamedAddr == 2, "LLVMGlobalUnnamedAddr"); /* LLVMGlobalUnnamedAddr */
_Static_assert(LLVMHiddenVisibility == 1, "LLVMHiddenVisibility"); /* LLVMHiddenVisibility */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMInstructionEraseFromParent), void (LLVMValueRef)), "LLVMInstructionEraseFromParent"); /* LLVMInstructionEraseFromParent */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMInstructionGetDebugLoc), LLVMMetadataRef (LLVMValueRef)), "LLVMInstructionGetDebugLoc"); /* LLVMInstructionGetDebugLoc */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMInt16TypeInContext), LLVMTypeRef (LLVMContextRef)), "LLVMInt16TypeInContext"); /* LLVMInt16TypeInContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMInt32TypeInContext), LLVMTypeRef (LLVMContextRef)), "LLVMInt32TypeInContext"); /* LLVMInt32TypeInContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMInt64TypeInContext), LLVMTypeRef (LLVMContextRef)), "LLVMInt64TypeInContext"); /* LLVMInt64TypeInContext */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMInt8TypeInContext), LLVMTypeRef (LLVMContextRef)), "LLVMInt8TypeInContext"); /* LLVMInt8TypeInContext */
_Static_assert(LLVMIntegerTypeKind == 8, "LLVMIntegerTypeKind"); /* LLVMIntegerTypeKind */
_Static_assert(LLVMInternalLinkage == 8, "LLVMInternalLinkage"); /* LLVMInternalLinkage */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAAddrSpaceCastInst), LLVMValueRef (LLVMValueRef)), "LLVMIsAAddrSpaceCastInst"); /* LLVMIsAAddrSpaceCastInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAAllocaInst), LLVMValueRef (LLVMValueRef)), "LLVMIsAAllocaInst"); /* LLVMIsAAllocaInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAArgument), LLVMValueRef (LLVMValueRef)), "LLVMIsAArgument"); /* LLVMIsAArgument */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsABinaryOperator), LLVMValueRef (LLVMValueRef)), "LLVMIsABinaryOperator"); /* LLVMIsABinaryOperator */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsACallInst), LLVMValueRef (LLVMValueRef)), "LLVMIsACallInst"); /* LLVMIsACallInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstant), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstant"); /* LLVMIsAConstant */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstantArray), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstantArray"); /* LLVMIsAConstantArray */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstantDataArray), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstantDataArray"); /* LLVMIsAConstantDataArray */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstantDataSequential), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstantDataSequential"); /* LLVMIsAConstantDataSequential */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstantExpr), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstantExpr"); /* LLVMIsAConstantExpr */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstantInt), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstantInt"); /* LLVMIsAConstantInt */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstantPointerNull), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstantPointerNull"); /* LLVMIsAConstantPointerNull */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAConstantStruct), LLVMValueRef (LLVMValueRef)), "LLVMIsAConstantStruct"); /* LLVMIsAConstantStruct */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAFunction), LLVMValueRef (LLVMValueRef)), "LLVMIsAFunction"); /* LLVMIsAFunction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAGetElementPtrInst), LLVMValueRef (LLVMValueRef)), "LLVMIsAGetElementPtrInst"); /* LLVMIsAGetElementPtrInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAGlobalAlias), LLVMValueRef (LLVMValueRef)), "LLVMIsAGlobalAlias"); /* LLVMIsAGlobalAlias */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAGlobalValue), LLVMValueRef (LLVMValueRef)), "LLVMIsAGlobalValue"); /* LLVMIsAGlobalValue */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAGlobalVariable), LLVMValueRef (LLVMValueRef)), "LLVMIsAGlobalVariable"); /* LLVMIsAGlobalVariable */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAICmpInst), LLVMValueRef (LLVMValueRef)), "LLVMIsAICmpInst"); /* LLVMIsAICmpInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAInlineAsm), LLVMValueRef (LLVMValueRef)), "LLVMIsAInlineAsm"); /* LLVMIsAInlineAsm */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAInstruction), LLVMValueRef (LLVMValueRef)), "LLVMIsAInstruction"); /* LLVMIsAInstruction */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAInvokeInst), LLVMValueRef (LLVMValueRef)), "LLVMIsAInvokeInst"); /* LLVMIsAInvokeInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsALoadInst), LLVMValueRef (LLVMValueRef)), "LLVMIsALoadInst"); /* LLVMIsALoadInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAMDNode), LLVMValueRef (LLVMValueRef)), "LLVMIsAMDNode"); /* LLVMIsAMDNode */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAMDString), LLVMValueRef (LLVMValueRef)), "LLVMIsAMDString"); /* LLVMIsAMDString */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAPHINode), LLVMValueRef (LLVMValueRef)), "LLVMIsAPHINode"); /* LLVMIsAPHINode */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAPtrToIntInst), LLVMValueRef (LLVMValueRef)), "LLVMIsAPtrToIntInst"); /* LLVMIsAPtrToIntInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsASelectInst), LLVMValueRef (LLVMValueRef)), "LLVMIsASelectInst"); /* LLVMIsASelectInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAStoreInst), LLVMValueRef (LLVMValueRef)), "LLVMIsAStoreInst"); /* LLVMIsAStoreInst */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsAUndefValue), LLVMValueRef (LLVMValueRef)), "LLVMIsAUndefValue"); /* LLVMIsAUndefValue */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsConstant), LLVMBool (LLVMValueRef)), "LLVMIsConstant"); /* LLVMIsConstant */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsConstantString), LLVMBool (LLVMValueRef)), "LLVMIsConstantString"); /* LLVMIsConstantString */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsDeclaration), LLVMBool (LLVMValueRef)), "LLVMIsDeclaration"); /* LLVMIsDeclaration */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsGlobalConstant), LLVMBool (LLVMValueRef)), "LLVMIsGlobalConstant"); /* LLVMIsGlobalConstant */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsNull), LLVMBool (LLVMValueRef)), "LLVMIsNull"); /* LLVMIsNull */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsPackedStruct), LLVMBool (LLVMTypeRef)), "LLVMIsPackedStruct"); /* LLVMIsPackedStruct */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsThreadLocal), LLVMBool (LLVMValueRef)), "LLVMIsThreadLocal"); /* LLVMIsThreadLocal */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMIsUndef), LLVMBool (LLVMValueRef)), "LLVMIsUndef"); /* LLVMIsUndef */
_Static_assert(LLVMLinkOnceAnyLinkage == 2, "LLVMLinkOnceAnyLinkage"); /* LLVMLinkOnceAnyLinkage */
_Static_assert(LLVMLinkOnceODRLinkage == 3, "LLVMLinkOnceODRLinkage"); /* LLVMLinkOnceODRLinkage */
_Static_assert(sizeof(LLVMLinkage) == sizeof(int), "LLVMLinkage"); /* LLVMLinkage */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMMDNodeInContext2), LLVMMetadataRef (LLVMContextRef, LLVMMetadataRef *, size_t)), "LLVMMDNodeInContext2"); /* LLVMMDNodeInContext2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMMDStringInContext2), LLVMMetadataRef (LLVMContextRef, const char *, size_t)), "LLVMMDStringInContext2"); /* LLVMMDStringInContext2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMMetadataAsValue), LLVMValueRef (LLVMContextRef, LLVMMetadataRef)), "LLVMMetadataAsValue"); /* LLVMMetadataAsValue */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMModuleRef), struct LLVMOpaqueModule *), "LLVMModuleRef"); /* LLVMModuleRef */
_Static_assert(LLVMMul == 12, "LLVMMul"); /* LLVMMul */
_Static_assert(sizeof(LLVMOpcode) == sizeof(int), "LLVMOpcode"); /* LLVMOpcode */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMParseBitcodeInContext2), LLVMBool (LLVMContextRef, LLVMMemoryBufferRef, LLVMModuleRef *)), "LLVMParseBitcodeInContext2"); /* LLVMParseBitcodeInContext2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMPointerSizeForAS), unsigned int (LLVMTargetDataRef, unsigned int)), "LLVMPointerSizeForAS"); /* LLVMPointerSizeForAS */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMPointerTypeInContext), LLVMTypeRef (LLVMContextRef, unsigned int)), "LLVMPointerTypeInContext"); /* LLVMPointerTypeInContext */
_Static_assert(LLVMPointerTypeKind == 12, "LLVMPointerTypeKind"); /* LLVMPointerTypeKind */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMPositionBuilderAtEnd), void (LLVMBuilderRef, LLVMBasicBlockRef)), "LLVMPositionBuilderAtEnd"); /* LLVMPositionBuilderAtEnd */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMPositionBuilderBefore), void (LLVMBuilderRef, LLVMValueRef)), "LLVMPositionBuilderBefore"); /* LLVMPositionBuilderBefore */
_Static_assert(LLVMPrivateLinkage == 9, "LLVMPrivateLinkage"); /* LLVMPrivateLinkage */
_Static_assert(LLVMProtectedVisibility == 2, "LLVMProtectedVisibility"); /* LLVMProtectedVisibility */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMReplaceAllUsesWith), void (LLVMValueRef, LLVMValueRef)), "LLVMReplaceAllUsesWith"); /* LLVMReplaceAllUsesWith */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetAlignment), void (LLVMValueRef, unsigned int)), "LLVMSetAlignment"); /* LLVMSetAlignment */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetComdat), void (LLVMValueRef, LLVMComdatRef)), "LLVMSetComdat"); /* LLVMSetComdat */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetCurrentDebugLocation2), void (LLVMBuilderRef, LLVMMetadataRef)), "LLVMSetCurrentDebugLocation2"); /* LLVMSetCurrentDebugLocation2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetFunctionCallConv), void (LLVMValueRef, unsigned int)), "LLVMSetFunctionCallConv"); /* LLVMSetFunctionCallConv */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetGlobalConstant), void (LLVMValueRef, LLVMBool)), "LLVMSetGlobalConstant"); /* LLVMSetGlobalConstant */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetInitializer), void (LLVMValueRef, LLVMValueRef)), "LLVMSetInitializer"); /* LLVMSetInitializer */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetInstructionCallConv), void (LLVMValueRef, unsigned int)), "LLVMSetInstructionCallConv"); /* LLVMSetInstructionCallConv */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetLinkage), void (LLVMValueRef, LLVMLinkage)), "LLVMSetLinkage"); /* LLVMSetLinkage */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetMetadata), void (LLVMValueRef, unsigned int, LLVMValueRef)), "LLVMSetMetadata"); /* LLVMSetMetadata */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetOperand), void (LLVMValueRef, unsigned int, LLVMValueRef)), "LLVMSetOperand"); /* LLVMSetOperand */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetSection), void (LLVMValueRef, const char *)), "LLVMSetSection"); /* LLVMSetSection */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetUnnamedAddress), void (LLVMValueRef, LLVMUnnamedAddr)), "LLVMSetUnnamedAddress"); /* LLVMSetUnnamedAddress */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetValueName2), void (LLVMValueRef, const char *, size_t)), "LLVMSetValueName2"); /* LLVMSetValueName2 */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMSetVisibility), void (LLVMValueRef, LLVMVisibility)), "LLVMSetVisibility"); /* LLVMSetVisibility */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMStructGetTypeAtIndex), LLVMTypeRef (LLVMTypeRef, unsigned int)), "LLVMStructGetTypeAtIndex"); /* LLVMStructGetTypeAtIndex */
_Static_assert(LLVMStructTypeKind == 10, "LLVMStructTypeKind"); /* LLVMStructTypeKind */
_Static_assert(sizeof(LLVMTypeKind) == sizeof(int), "LLVMTypeKind"); /* LLVMTypeKind */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMTypeOf), LLVMTypeRef (LLVMValueRef)), "LLVMTypeOf"); /* LLVMTypeOf */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMTypeRef), struct LLVMOpaqueType *), "LLVMTypeRef"); /* LLVMTypeRef */
_Static_assert(sizeof(LLVMUnnamedAddr) == sizeof(int), "LLVMUnnamedAddr"); /* LLVMUnnamedAddr */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMValueAsMetadata), LLVMMetadataRef (LLVMValueRef)), "LLVMValueAsMetadata"); /* LLVMValueAsMetadata */
_Static_assert(sizeof(LLVMValueKind) == sizeof(int), "LLVMValueKind"); /* LLVMValueKind */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMValueRef), struct LLVMOpaqueValue *), "LLVMValueRef"); /* LLVMValueRef */
_Static_assert(LLVMVectorTypeKind == 13, "LLVMVectorTypeKind"); /* LLVMVectorTypeKind */
_Static_assert(sizeof(LLVMVisibility) == sizeof(int), "LLVMVisibility"); /* LLVMVisibility */
_Static_assert(__builtin_types_compatible_p(__typeof__(LLVMVoidTypeInContext), LLVMTypeRef (LLVMContextRef)), "LLVMVoidTypeInContext"); /* LLVMVoidTypeInContext */
_Static_assert(LLVMWeakAnyLinkage == 5, "LLVMWeakAnyLinkage"); /* LLVMWeakAnyLinkage */
_Static_assert(LLVMWeakODRLinkage == 6, "LLVMWeakODRLinkage"); /* LLVMWeakODRLinkage */
_Static_assert(LLVMX86_FP80TypeKind == 4, "LLVMX86_FP80TypeKind"); /* LLVMX86_FP80TypeKind */
