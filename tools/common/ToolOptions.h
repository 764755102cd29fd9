//===- ToolOptions.h - --help and --version of the compiler tools -*- C++
//-*-===//
//
// braidc, braid-translate and braid-opt link the shared libMLIR, whose LLVM
// backends register hundreds of command-line options (AMDGPU, ARM, BPF...)
// at load time. These helpers keep --help to what a Braid user can use and
// give every tool the project's --version.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_COMMON_TOOLOPTIONS_H
#define BRAID_TOOLS_COMMON_TOOLOPTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"

namespace mlir {
namespace braid {

/// The category of a tool's own options; --help shows it first.
llvm::cl::OptionCategory &getBraidToolCategory();

/// Makes --version print "<tool> (Braid) <version>" and the MLIR version,
/// and a crash's banner ask for a report to Braid, not to llvm-project.
void setBraidVersionPrinter(llvm::StringRef toolName);

/// The banner a crash prints before its stack dump.
extern const char *const kBraidBugReportMessage;

/// Hides from --help every option registered so far, except those in the
/// Braid category, the generic ones (--help, --version) and `keep`. Call it
/// before registering the options that should stay visible.
void hideRegisteredOptions(llvm::ArrayRef<llvm::StringRef> keep = {});

/// Registers the --mlir-* flags mlir-opt has for printing
/// (--mlir-print-debuginfo), the context (--mlir-print-op-on-diagnostic),
/// the pass manager (--mlir-print-ir-after-all, --mlir-pass-statistics) and
/// timing (--mlir-timing), for a tool that builds its own pass manager
/// (braidc, braid-translate). Call it after hideRegisteredOptions so they
/// show in --help; the pass manager applies them with
/// applyPassManagerCLOptions and applyDefaultTimingPassManagerCLOptions.
void registerMlirToolOptions();

} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_COMMON_TOOLOPTIONS_H
