//===- AutoCount.h - a count the cost model may choose ----------*- C++ -*-===//
//
// The type of pass options such as `braid-domino`'s `chunks`: a positive
// count, or `auto`, which asks the pass to choose with the cost model
// (`--braid-domino=chunks=auto`). `0` is accepted as a synonym of `auto`.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_PASSES_AUTOCOUNT_H
#define BRAID_PASSES_AUTOCOUNT_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cassert>
#include <cstdint>
#include <optional>

namespace mlir {
namespace braid {

/// A positive count, or `auto`: chosen by the cost model.
class AutoCount {
public:
  /// `count` > 0 gives that count; 0 is `auto`.
  constexpr AutoCount(int64_t count = 0) : count(count) {}

  /// The value that asks for the cost model's choice.
  static constexpr AutoCount automatic() { return AutoCount(0); }

  /// Parses `auto`, `0` (auto) or a positive integer; nothing else.
  static std::optional<AutoCount> parse(llvm::StringRef text);

  bool isAuto() const { return count == 0; }

  /// The count given; only when not auto.
  int64_t getCount() const {
    assert(!isAuto() && "auto has no count");
    return count;
  }

  bool operator==(const AutoCount &other) const { return count == other.count; }
  bool operator!=(const AutoCount &other) const { return count != other.count; }

private:
  int64_t count;
};

/// Prints `auto` or the count, as the option is spelled.
llvm::raw_ostream &operator<<(llvm::raw_ostream &os, const AutoCount &value);

} // namespace braid
} // namespace mlir

namespace llvm {
namespace cl {
/// Parses an AutoCount pass option or command-line flag.
template <>
class parser<mlir::braid::AutoCount>
    : public basic_parser<mlir::braid::AutoCount> {
public:
  parser(Option &option) : basic_parser(option) {}

  /// Returns true (after reporting it) when `arg` is not a count or `auto`.
  bool parse(Option &option, StringRef argName, StringRef arg,
             mlir::braid::AutoCount &value);

  StringRef getValueName() const override { return "count|auto"; }

  void printOptionDiff(const Option &option,
                       const mlir::braid::AutoCount &value,
                       const OptVal &defaultValue, size_t globalWidth) const;

  void anchor() override;
};
} // namespace cl
} // namespace llvm

#endif // BRAID_PASSES_AUTOCOUNT_H
