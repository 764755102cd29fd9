//===- AutoCount.cpp - a count the cost model may choose ------------------===//

#include "passes/AutoCount.h"

using namespace mlir::braid;

std::optional<AutoCount> AutoCount::parse(llvm::StringRef text) {
  if (text == "auto")
    return automatic();
  int64_t count;
  if (text.getAsInteger(10, count) || count < 0)
    return std::nullopt;
  return AutoCount(count);
}

llvm::raw_ostream &mlir::braid::operator<<(llvm::raw_ostream &os,
                                           const AutoCount &value) {
  if (value.isAuto())
    return os << "auto";
  return os << value.getCount();
}

bool llvm::cl::parser<AutoCount>::parse(Option &option, StringRef argName,
                                        StringRef arg, AutoCount &value) {
  std::optional<AutoCount> parsed = AutoCount::parse(arg);
  if (!parsed)
    return option.error("'" + arg + "' is not a positive count or auto");
  value = *parsed;
  return false;
}

void llvm::cl::parser<AutoCount>::printOptionDiff(const Option &option,
                                                  const AutoCount &value,
                                                  const OptVal &defaultValue,
                                                  size_t globalWidth) const {
  printOptionName(option, globalWidth);
  std::string text;
  llvm::raw_string_ostream(text) << value;
  llvm::outs() << "= " << text << "\n";
}

void llvm::cl::parser<AutoCount>::anchor() {}
