//===- ToolOptions.cpp - --help and --version of the compiler tools -------===//

#include "tools/common/ToolOptions.h"

#include "runtime/core/Version.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

llvm::cl::OptionCategory &mlir::braid::getBraidToolCategory() {
  static llvm::cl::OptionCategory category("Braid options");
  return category;
}

const char *const mlir::braid::kBraidBugReportMessage =
    "PLEASE report this crash to the Braid developers (it is a bug in Braid, "
    "not in LLVM or MLIR): attach the command line and the input file below, "
    "and the stack dump.\n";

void mlir::braid::setBraidVersionPrinter(llvm::StringRef toolName) {
  llvm::setBugReportMsg(kBraidBugReportMessage);
  llvm::cl::SetVersionPrinter([name = toolName.str()](llvm::raw_ostream &os) {
    os << name << " (Braid) " << ::braid::rt::kBraidVersion
       << "\n  built with MLIR " << LLVM_VERSION_STRING << "\n";
  });
}

void mlir::braid::hideRegisteredOptions(llvm::ArrayRef<llvm::StringRef> keep) {
  llvm::cl::HideUnrelatedOptions(getBraidToolCategory());
  auto &options = llvm::cl::getRegisteredOptions();
  for (llvm::StringRef name : keep)
    if (llvm::cl::Option *option = options.lookup(name))
      option->setHiddenFlag(llvm::cl::NotHidden);
}

void mlir::braid::registerMlirToolOptions() {
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
}
