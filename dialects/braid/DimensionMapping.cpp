//===- DimensionMapping.cpp - how op dimensions relate --------------------===//

#include "dialects/braid/BraidDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::braid;

unsigned DimensionMapping::addFactor(int64_t size, FactorKind kind,
                                     std::optional<ReductionKind> combiner,
                                     std::optional<unsigned> prefixOf) {
  factors.push_back(
      Factor{size, kind, combiner, prefixOf, std::nullopt, std::nullopt});
  return factors.size() - 1;
}

unsigned DimensionMapping::addRoutedFactor(int64_t size, unsigned slots,
                                           unsigned routedBy) {
  factors.push_back(Factor{size, FactorKind::Routed, std::nullopt,
                           std::nullopt, slots, routedBy});
  return factors.size() - 1;
}

int64_t DimensionMapping::blockDimSize(const DimFactors &dims,
                                       ArrayRef<FactorBlock> blocks) const {
  int64_t size = 1;
  for (unsigned f : dims) {
    const FactorBlock *block = llvm::find_if(
        blocks, [&](const FactorBlock &b) { return b.factor == f; });
    size *= block != blocks.end() ? block->size : factors[f].size;
  }
  return size;
}

/// Whether factor `f` appears in some dimension of `value`.
static bool mentions(const ValueFactors &value, unsigned f) {
  return llvm::any_of(value, [&](const DimFactors &dims) {
    return llvm::is_contained(dims, f);
  });
}

/// Whether factor `f` appears in an operand other than `operand`.
static bool inOtherOperand(ArrayRef<ValueFactors> operands, unsigned operand,
                           unsigned f) {
  for (auto [i, value] : llvm::enumerate(operands))
    if (i != operand && mentions(value, f))
      return true;
  return false;
}

SmallVector<unsigned>
DimensionMapping::getContractionFactors(unsigned operand) const {
  SmallVector<unsigned> result;
  for (auto [f, factor] : llvm::enumerate(factors))
    if (factor.kind == FactorKind::Reduction &&
        mentions(operands[operand], f) && inOtherOperand(operands, operand, f))
      result.push_back(f);
  return result;
}

int DimensionMapping::getOwnOutputFactor(unsigned operand) const {
  if (results.empty())
    return -1;
  for (auto [f, factor] : llvm::enumerate(factors))
    if (factor.kind == FactorKind::Parallel && mentions(operands[operand], f) &&
        mentions(results[0], f) && !inOtherOperand(operands, operand, f))
      return f;
  return -1;
}

int DimensionMapping::getSharedBatchFactor(unsigned operand) const {
  if (results.empty())
    return -1;
  for (auto [f, factor] : llvm::enumerate(factors))
    if (factor.kind == FactorKind::Parallel && mentions(operands[operand], f) &&
        mentions(results[0], f) && inOtherOperand(operands, operand, f))
      return f;
  return -1;
}

bool DimensionMapping::leadsEveryDimension(unsigned f) const {
  auto check = [&](ArrayRef<ValueFactors> values) {
    for (const ValueFactors &dims : values)
      for (const DimFactors &dimFactors : dims)
        if (llvm::is_contained(dimFactors, f) && dimFactors.front() != f)
          return false;
    return true;
  };
  return check(operands) && check(results);
}

int mlir::braid::leadingFactor(const ValueFactors &dims, int64_t dim) {
  return dim < 0 || dim >= (int64_t)dims.size() || dims[dim].empty()
             ? -1
             : (int)dims[dim].front();
}

int64_t mlir::braid::dimLedBy(const ValueFactors &dims, int f) {
  for (auto [d, dimFactors] : llvm::enumerate(dims))
    if (!dimFactors.empty() && (int)dimFactors.front() == f)
      return d;
  return -1;
}

SmallVector<OperandDimRef>
DimensionMapping::getOperandDimsOf(unsigned result, unsigned dim) const {
  SmallVector<OperandDimRef> refs;
  const DimFactors &resultFactors = results[result][dim];
  auto boundsCausal = [&](unsigned f) {
    return factors[f].kind == FactorKind::CausalPrefix &&
           llvm::is_contained(resultFactors, *factors[f].prefixOf);
  };
  for (auto [operand, dims] : llvm::enumerate(operands)) {
    for (auto [d, dimFactors] : llvm::enumerate(dims)) {
      if (llvm::any_of(dimFactors, [&](unsigned f) {
            return llvm::is_contained(resultFactors, f);
          }))
        refs.push_back({(unsigned)operand, (unsigned)d, DimRelation::Parallel});
      else if (llvm::any_of(dimFactors, boundsCausal))
        refs.push_back(
            {(unsigned)operand, (unsigned)d, DimRelation::CausalPrefix});
    }
  }
  return refs;
}

/// Checks one value's entry; appends used factors to `used`.
static std::optional<std::string> checkValue(const ValueFactors &dims,
                                             Value value, StringRef what,
                                             unsigned index,
                                             ArrayRef<Factor> factors,
                                             SmallVectorImpl<bool> &used) {
  std::string prefix = (what + " #" + Twine(index)).str();
  auto tensorType = dyn_cast<RankedTensorType>(value.getType());
  if (!tensorType) {
    if (!dims.empty())
      return prefix + " is not a tensor but has dimensions mapped";
    return std::nullopt;
  }
  if ((int64_t)dims.size() != tensorType.getRank())
    return prefix + " has rank " + std::to_string(tensorType.getRank()) +
           " but " + std::to_string(dims.size()) + " mapped dimensions";
  for (auto [d, dimFactors] : llvm::enumerate(dims)) {
    int64_t product = 1;
    for (unsigned f : dimFactors) {
      if (f >= factors.size())
        return prefix + " names unknown factor f" + std::to_string(f);
      product *= factors[f].size;
    }
    if (product != tensorType.getDimSize(d))
      return prefix + " dimension " + std::to_string(d) + " has size " +
             std::to_string(tensorType.getDimSize(d)) +
             " but its factors multiply to " + std::to_string(product);
  }
  SmallVector<unsigned> seen;
  for (const DimFactors &dimFactors : dims)
    for (unsigned f : dimFactors) {
      if (llvm::is_contained(seen, f))
        return prefix + " uses factor f" + std::to_string(f) + " twice";
      seen.push_back(f);
      used[f] = true;
    }
  return std::nullopt;
}

std::optional<std::string> DimensionMapping::check(Operation *op) const {
  if (operands.size() != op->getNumOperands())
    return "mapping has " + std::to_string(operands.size()) +
           " operands, op has " + std::to_string(op->getNumOperands());
  if (results.size() != op->getNumResults())
    return "mapping has " + std::to_string(results.size()) +
           " results, op has " + std::to_string(op->getNumResults());
  SmallVector<bool> used(factors.size(), false);
  for (auto [i, dims] : llvm::enumerate(operands))
    if (auto err =
            checkValue(dims, op->getOperand(i), "operand", i, factors, used))
      return err;
  SmallVector<bool> inResult(factors.size(), false);
  for (auto [i, dims] : llvm::enumerate(results)) {
    if (auto err =
            checkValue(dims, op->getResult(i), "result", i, factors, used))
      return err;
    for (const DimFactors &dimFactors : dims)
      for (unsigned f : dimFactors)
        inResult[f] = true;
  }
  for (auto [f, factor] : llvm::enumerate(factors)) {
    std::string name = "factor f" + std::to_string(f);
    if (factor.size < 0)
      return name + " has negative size " + std::to_string(factor.size);
    if (!used[f])
      return name + " is used by no dimension";
    switch (factor.kind) {
    case FactorKind::Parallel:
      if (!inResult[f])
        return name + " is parallel but appears in no result";
      break;
    case FactorKind::Reduction:
      if (inResult[f])
        return name + " is a reduction but appears in a result";
      if (!factor.combiner)
        return name + " is a reduction without a combiner";
      break;
    case FactorKind::Whole:
      break;
    case FactorKind::CausalPrefix:
      if (inResult[f])
        return name + " is causal but appears in a result";
      if (!factor.prefixOf || *factor.prefixOf >= factors.size() ||
          factors[*factor.prefixOf].kind != FactorKind::Parallel ||
          !inResult[*factor.prefixOf])
        return name + " is causal but not bounded by a parallel result factor";
      break;
    case FactorKind::Routed:
      if (!factor.routesTo || *factor.routesTo >= factors.size() ||
          *factor.routesTo == f)
        return name + " is routed but names no slot factor";
      if (!factor.routedBy || *factor.routedBy >= operands.size())
        return name + " is routed but names no operand of routing choices";
      break;
    }
  }
  return std::nullopt;
}

static void printValues(raw_ostream &os, ArrayRef<ValueFactors> values) {
  os << "(";
  llvm::interleaveComma(values, os, [&](const ValueFactors &dims) {
    if (dims.empty()) {
      os << "-";
      return;
    }
    os << "[";
    llvm::interleaveComma(dims, os, [&](const DimFactors &dimFactors) {
      if (dimFactors.empty()) {
        os << "_";
      } else if (dimFactors.size() == 1) {
        os << "f" << dimFactors.front();
      } else {
        os << "(";
        llvm::interleave(
            dimFactors, os, [&](unsigned f) { os << "f" << f; }, " ");
        os << ")";
      }
    });
    os << "]";
  });
  os << ")";
}

void DimensionMapping::print(raw_ostream &os) const {
  printValues(os, operands);
  os << " -> ";
  printValues(os, results);
  os << " {";
  llvm::interleaveComma(llvm::enumerate(factors), os, [&](auto indexed) {
    const Factor &factor = indexed.value();
    os << "f" << indexed.index() << " = " << factor.size;
    switch (factor.kind) {
    case FactorKind::Parallel:
      break;
    case FactorKind::Reduction:
      os << " " << stringifyReductionKind(*factor.combiner);
      break;
    case FactorKind::Whole:
      os << " whole";
      break;
    case FactorKind::CausalPrefix:
      os << " causal(f" << *factor.prefixOf << ")";
      break;
    case FactorKind::Routed:
      os << " routed(f" << *factor.routesTo << ")";
      break;
    }
  });
  os << "}";
}

std::string DimensionMapping::toString() const {
  std::string text;
  llvm::raw_string_ostream os(text);
  print(os);
  return text;
}

//===----------------------------------------------------------------------===//
// Shared mappings
//===----------------------------------------------------------------------===//

ValueFactors mlir::braid::alignToResult(Value value,
                                        ArrayRef<unsigned> resultFactors,
                                        ArrayRef<int64_t> resultShape) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type)
    return {};
  ValueFactors dims;
  int64_t offset = (int64_t)resultShape.size() - type.getRank();
  for (int64_t d = 0; d < type.getRank(); ++d) {
    int64_t r = d + offset;
    if (type.getDimSize(d) == resultShape[r])
      dims.push_back({resultFactors[r]});
    else
      dims.push_back({});
  }
  return dims;
}

SmallVector<unsigned> mlir::braid::addParallelFactors(DimensionMapping &mapping,
                                                      ArrayRef<int64_t> shape) {
  SmallVector<unsigned> factors;
  for (int64_t size : shape)
    factors.push_back(mapping.addFactor(size, FactorKind::Parallel));
  return factors;
}

DimensionMapping mlir::braid::getElementwiseMapping(Operation *op) {
  DimensionMapping mapping;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  SmallVector<unsigned> resultFactors =
      addParallelFactors(mapping, resultType.getShape());
  for (Value operand : op->getOperands())
    mapping.addOperand(
        alignToResult(operand, resultFactors, resultType.getShape()));
  for (Value result : op->getResults())
    mapping.addResult(
        alignToResult(result, resultFactors, resultType.getShape()));
  return mapping;
}

DimensionMapping
mlir::braid::getResizeMapping(Operation *op,
                              function_ref<bool(int64_t)> keepsDim) {
  DimensionMapping mapping;
  auto input = cast<RankedTensorType>(op->getOperand(0).getType());
  auto result = cast<RankedTensorType>(op->getResult(0).getType());
  ValueFactors in, out;
  for (int64_t d = 0; d < input.getRank(); ++d) {
    if (keepsDim(d)) {
      unsigned f = mapping.addFactor(input.getDimSize(d), FactorKind::Parallel);
      in.push_back({f});
      out.push_back({f});
      continue;
    }
    in.push_back({mapping.addFactor(input.getDimSize(d), FactorKind::Whole)});
    out.push_back(
        {mapping.addFactor(result.getDimSize(d), FactorKind::Parallel)});
  }
  mapping.addOperand(std::move(in));
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    mapping.addOperand({});
  mapping.addResult(std::move(out));
  return mapping;
}

DimensionMapping mlir::braid::getReductionMapping(Operation *op,
                                                  ArrayRef<int64_t> dims,
                                                  bool keepDims,
                                                  ReductionKind combiner) {
  DimensionMapping mapping;
  auto inputType = cast<RankedTensorType>(op->getOperand(0).getType());
  ValueFactors input, result;
  for (auto [d, size] : llvm::enumerate(inputType.getShape())) {
    if (llvm::is_contained(dims, (int64_t)d)) {
      input.push_back(
          {mapping.addFactor(size, FactorKind::Reduction, combiner)});
      if (keepDims)
        result.push_back({});
      continue;
    }
    unsigned f = mapping.addFactor(size, FactorKind::Parallel);
    input.push_back({f});
    result.push_back({f});
  }
  mapping.addOperand(std::move(input));
  mapping.addResult(std::move(result));
  return mapping;
}

DimensionMapping mlir::braid::getNormalizationMapping(Operation *op,
                                                      int64_t axis) {
  DimensionMapping mapping;
  auto inputType = cast<RankedTensorType>(op->getOperand(0).getType());
  ValueFactors input, trailing;
  for (auto [d, size] : llvm::enumerate(inputType.getShape())) {
    bool normalized = (int64_t)d >= axis;
    unsigned f = mapping.addFactor(size, normalized ? FactorKind::Whole
                                                    : FactorKind::Parallel);
    input.push_back({f});
    if (normalized)
      trailing.push_back({f});
  }
  mapping.addOperand(input);
  for (unsigned i = 1; i < op->getNumOperands(); ++i)
    mapping.addOperand(trailing);
  mapping.addResult(input);
  return mapping;
}

//===----------------------------------------------------------------------===//
// Sizes
//===----------------------------------------------------------------------===//

int64_t mlir::braid::getNumElements(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

int64_t mlir::braid::getNumBytes(Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t bits = type.getElementTypeBitWidth();
  return type.getNumElements() * std::max<int64_t>(1, bits / 8);
}

int64_t mlir::braid::getOperandAndResultBytes(Operation *op) {
  int64_t bytes = 0;
  for (Value value : op->getOperands())
    if (isa<RankedTensorType>(value.getType()))
      bytes += getNumBytes(value);
  for (Value value : op->getResults())
    if (isa<RankedTensorType>(value.getType()))
      bytes += getNumBytes(value);
  return bytes;
}
