//===- Explain.cpp - the choices the overlap passes make ------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "passes/Explain.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::braid;

static constexpr StringLiteral kExplainAttr = "braid.explain";

double mlir::braid::roundedMicroseconds(double seconds) {
  return std::round(seconds * 1e9) / 1e3;
}

void mlir::braid::recordChoice(ModuleOp module, StringRef pass,
                               StringRef function, StringRef hw,
                               ArrayRef<CandidateEstimate> candidates,
                               std::optional<size_t> chosen) {
  Builder b(module.getContext());
  SmallVector<Attribute> rows;
  for (const CandidateEstimate &candidate : candidates) {
    SmallVector<NamedAttribute> fields{
        b.getNamedAttr("name", b.getStringAttr(candidate.name))};
    if (candidate.seconds)
      fields.push_back(
          b.getNamedAttr("estimate_us", b.getF64FloatAttr(roundedMicroseconds(*candidate.seconds))));
    else
      fields.push_back(
          b.getNamedAttr("rejected", b.getStringAttr(candidate.rejected)));
    rows.push_back(b.getDictionaryAttr(fields));
  }
  SmallVector<NamedAttribute> fields{
      b.getNamedAttr("pass", b.getStringAttr(pass)),
      b.getNamedAttr("function", b.getStringAttr(function)),
      b.getNamedAttr("hw", b.getStringAttr(hw)),
      b.getNamedAttr("candidates", b.getArrayAttr(rows))};
  if (chosen)
    fields.push_back(b.getNamedAttr(
        "chosen", b.getStringAttr(candidates[*chosen].name)));
  SmallVector<Attribute> entries;
  if (auto existing = module->getAttrOfType<ArrayAttr>(kExplainAttr))
    entries.append(existing.begin(), existing.end());
  entries.push_back(b.getDictionaryAttr(fields));
  module->setAttr(kExplainAttr, b.getArrayAttr(entries));
}

std::string mlir::braid::formatChoices(ModuleOp module) {
  auto entries = module->getAttrOfType<ArrayAttr>(kExplainAttr);
  if (!entries)
    return "";
  std::string text;
  for (auto entry : entries.getAsRange<DictionaryAttr>()) {
    auto string = [&](DictionaryAttr dict, StringRef key) {
      auto value = dict.getAs<StringAttr>(key);
      return value ? value.getValue().str() : std::string();
    };
    std::string chosen = string(entry, "chosen");
    auto rows = entry.getAs<ArrayAttr>("candidates");
    std::optional<double> best;
    size_t width = 9;
    for (auto row : rows.getAsRange<DictionaryAttr>()) {
      width = std::max(width, string(row, "name").size());
      if (auto us = row.getAs<FloatAttr>("estimate_us"))
        best = best ? std::min(*best, us.getValueAsDouble())
                    : us.getValueAsDouble();
    }
    text += llvm::formatv("{0} on @{1}, estimated on {2}:\n",
                          string(entry, "pass"), string(entry, "function"),
                          string(entry, "hw"));
    auto padded = [&](std::string name) {
      name.resize(std::max(name.size(), width), ' ');
      return name;
    };
    text += "  " + padded("candidate") + "      makespan   vs best\n";
    for (auto row : rows.getAsRange<DictionaryAttr>()) {
      std::string name = string(row, "name");
      std::string line = "  " + padded(name) + "  ";
      if (auto us = row.getAs<FloatAttr>("estimate_us")) {
        double value = us.getValueAsDouble();
        line += llvm::formatv("{0,9:F1} us  {1,7:F2}x", value,
                              *best > 0 ? value / *best : 1.0);
        if (name == chosen)
          line += "  <- chosen";
      } else {
        line += "not applicable: " + string(row, "rejected");
      }
      text += line + "\n";
    }
    if (chosen.empty())
      text += "  no candidate applies\n";
  }
  return text;
}
