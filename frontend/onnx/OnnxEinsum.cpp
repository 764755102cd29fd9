//===- OnnxEinsum.cpp - Einsum as transposes, reshapes and matmuls --------===//
//
// An Einsum of one or two operands becomes braid ops:
//
//   one operand:  reduce_sum over the labels the output drops, then a
//                 transpose into the output's order;
//   two operands: labels only one operand has and the output drops are
//                 summed first; the rest are batch (both operands and the
//                 output), free (one operand and the output) or contracted
//                 (both operands, not the output). With contracted labels
//                 the operands are laid out as [batch, M, K] and [batch, K,
//                 N] (transposes folded into matmul's flags where the order
//                 allows) for one braid.matmul; without, a broadcast
//                 braid.mul forms the outer product. A reshape and a
//                 transpose give the output's order.
//
// `...` stands for broadcast dimensions (aligned from the right, as numpy
// does); the implicit form (no `->`) outputs them first, then the labels that
// occur once, in alphabetical order. Repeated labels in one operand
// (diagonals, traces) and three or more operands are errors naming the
// equation.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ImporterImpl.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::onnx_import;
using namespace mlir::braid::onnx_import::detail;

namespace {
/// A label: a letter's character code, or kEllipsis + i for the i-th
/// broadcast dimension (counted from the left of the widest `...`).
using Label = int;
constexpr Label kEllipsis = 256;

/// One operand's or the output's labels, `...` expanded.
using Labels = SmallVector<Label, 6>;

/// Parses one term; `ellipsis` gets where `...` stood (or -1).
bool parseTerm(StringRef term, SmallVectorImpl<Label> &letters, int &ellipsis,
               std::string &error) {
  ellipsis = -1;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (llvm::isAlpha(c)) {
      letters.push_back(c);
      continue;
    }
    if (term.substr(i).starts_with("...") && ellipsis < 0) {
      ellipsis = letters.size();
      i += 2;
      continue;
    }
    error = "unexpected '" + std::string(1, c) + "' in '" + term.str() + "'";
    return false;
  }
  return true;
}

/// Where each label of `from` stands in `to` (all present).
SmallVector<int64_t, 4> positions(ArrayRef<Label> from, ArrayRef<Label> to) {
  SmallVector<int64_t, 4> result;
  for (Label l : from)
    result.push_back(llvm::find(to, l) - to.begin());
  return result;
}
} // namespace

void Importer::emitEinsum() {
  std::string equation = stringAttr("equation", "");
  std::string compact;
  for (char c : equation)
    if (c != ' ')
      compact += c;
  auto reject = [&](const Twine &why) {
    fail("Einsum '" + equation + "': " + why);
  };

  StringRef text = compact, outputText;
  bool explicitOutput = false;
  if (size_t arrow = text.find("->"); arrow != StringRef::npos) {
    outputText = text.substr(arrow + 2);
    text = text.substr(0, arrow);
    explicitOutput = true;
  }
  SmallVector<StringRef, 2> terms;
  text.split(terms, ',');
  if (terms.size() > 2)
    reject("Braid imports equations of one or two operands, this one has " +
           Twine(terms.size()));
  if (terms.size() != numInputs())
    reject("the equation has " + Twine(terms.size()) +
           " operands but the node " + Twine(numInputs()) + " inputs");

  // Labels per operand, `...` expanded to broadcast labels aligned right.
  SmallVector<Value, 2> operands;
  SmallVector<SmallVector<Label, 6>, 2> letters(terms.size());
  SmallVector<int, 2> ellipsisAt(terms.size());
  SmallVector<int64_t, 2> ellipsisRank(terms.size(), 0);
  int64_t widest = 0;
  for (auto [i, term] : llvm::enumerate(terms)) {
    std::string error;
    if (!parseTerm(term, letters[i], ellipsisAt[i], error))
      reject(error);
    operands.push_back(input(i));
    int64_t rank = cast<RankedTensorType>(operands[i].getType()).getRank();
    int64_t named = letters[i].size();
    if (ellipsisAt[i] < 0 ? rank != named : rank < named)
      reject("operand #" + Twine(i) + " '" + term + "' names " + Twine(named) +
             " dimensions but has rank " + Twine(rank));
    if (ellipsisAt[i] >= 0)
      ellipsisRank[i] = rank - named;
    widest = std::max(widest, ellipsisRank[i]);
  }
  SmallVector<Labels, 2> labels(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    for (auto [k, l] : llvm::enumerate(letters[i])) {
      if (static_cast<int>(k) == ellipsisAt[i])
        for (int64_t e = widest - ellipsisRank[i]; e < widest; ++e)
          labels[i].push_back(kEllipsis + e);
      if (llvm::is_contained(labels[i], l))
        reject("operand #" + Twine(i) + " repeats '" + Twine(char(l)) +
               "' (diagonals and traces are not supported)");
      labels[i].push_back(l);
    }
    if (ellipsisAt[i] == static_cast<int>(letters[i].size()))
      for (int64_t e = widest - ellipsisRank[i]; e < widest; ++e)
        labels[i].push_back(kEllipsis + e);
  }

  // The output's labels.
  Labels output;
  bool anyEllipsis = llvm::any_of(ellipsisAt, [](int at) { return at >= 0; });
  if (explicitOutput) {
    SmallVector<Label, 6> outLetters;
    int outEllipsis;
    std::string error;
    if (!parseTerm(outputText, outLetters, outEllipsis, error))
      reject(error);
    if (anyEllipsis && widest > 0 && outEllipsis < 0)
      reject("the output must keep the operands' '...' dimensions");
    for (auto [k, l] : llvm::enumerate(outLetters)) {
      if (static_cast<int>(k) == outEllipsis)
        for (int64_t e = 0; e < widest; ++e)
          output.push_back(kEllipsis + e);
      if (llvm::is_contained(output, l))
        reject("the output repeats '" + Twine(char(l)) + "'");
      Label label = l;
      if (llvm::none_of(labels, [&](const Labels &in) {
            return llvm::is_contained(in, label);
          }))
        reject("output label '" + Twine(char(l)) + "' is in no operand");
      output.push_back(l);
    }
    if (outEllipsis == static_cast<int>(outLetters.size()))
      for (int64_t e = 0; e < widest; ++e)
        output.push_back(kEllipsis + e);
  } else {
    for (int64_t e = 0; e < widest; ++e)
      output.push_back(kEllipsis + e);
    SmallVector<Label, 6> once;
    for (const Labels &in : labels)
      for (Label l : in)
        if (l < kEllipsis && llvm::count_if(labels, [&](const Labels &other) {
                               return llvm::is_contained(other, l);
                             }) == 1)
          once.push_back(l);
    llvm::sort(once);
    output.append(once);
  }

  // Sizes per label: letters agree; broadcast labels may be 1 on one side.
  llvm::DenseMap<Label, int64_t> size;
  for (size_t i = 0; i < terms.size(); ++i) {
    auto type = cast<RankedTensorType>(operands[i].getType());
    for (auto [d, l] : llvm::enumerate(labels[i])) {
      int64_t n = type.getDimSize(d);
      auto [it, inserted] = size.try_emplace(l, n);
      if (inserted || it->second == n)
        continue;
      if (l < kEllipsis || (it->second != 1 && n != 1))
        reject("'" + (l < kEllipsis ? Twine(char(l)) : Twine("...")) +
               "' has size " + Twine(it->second) + " in one operand and " +
               Twine(n) + " in operand #" + Twine(i));
      it->second = std::max(it->second, n);
    }
  }

  auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  auto permute = [&](Value v, ArrayRef<Label> from, ArrayRef<Label> to) {
    SmallVector<int64_t, 4> perm = positions(to, from);
    if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
      return v;
    return Value(create<TransposeOp>(v, builder.getDenseI64ArrayAttr(perm)));
  };
  // Sums the labels of operand i that no other operand and not the output
  // has.
  auto sumOwn = [&](unsigned i) {
    SmallVector<int64_t> dims;
    Labels kept;
    for (auto [d, l] : llvm::enumerate(labels[i])) {
      bool elsewhere = llvm::is_contained(output, l);
      for (size_t j = 0; j < labels.size(); ++j)
        elsewhere |= j != i && llvm::is_contained(labels[j], l);
      if (elsewhere)
        kept.push_back(l);
      else
        dims.push_back(d);
    }
    if (!dims.empty())
      operands[i] = create<ReduceSumOp>(operands[i], dims, false);
    labels[i] = kept;
  };

  if (terms.size() == 1) {
    sumOwn(0);
    setValue(outputName(0), permute(operands[0], labels[0], output));
    return;
  }
  sumOwn(0);
  sumOwn(1);
  const Labels &a = labels[0], &b = labels[1];
  Labels batch, freeA, freeB, contracted;
  for (Label l : a) {
    bool inB = llvm::is_contained(b, l), inOut = llvm::is_contained(output, l);
    (inB ? (inOut ? batch : contracted) : freeA).push_back(l);
  }
  for (Label l : b)
    if (!llvm::is_contained(a, l))
      freeB.push_back(l);
  auto dimsOf = [&](ArrayRef<Label> ls, Value v, ArrayRef<Label> order) {
    SmallVector<int64_t, 4> dims;
    auto type = typeOf(v);
    for (Label l : ls)
      dims.push_back(type.getDimSize(llvm::find(order, l) - order.begin()));
    return dims;
  };
  auto product = [](ArrayRef<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  auto concatLabels = [](std::initializer_list<ArrayRef<Label>> parts) {
    Labels all;
    for (ArrayRef<Label> part : parts)
      all.append(part.begin(), part.end());
    return all;
  };
  SmallVector<int64_t, 4> batchA = dimsOf(batch, operands[0], a),
                          batchB = dimsOf(batch, operands[1], b);
  SmallVector<int64_t, 4> freeSizesA = dimsOf(freeA, operands[0], a),
                          freeSizesB = dimsOf(freeB, operands[1], b);
  Value result;
  Labels resultLabels = concatLabels({batch, freeA, freeB});
  if (contracted.empty()) {
    // Outer product: [batch, freeA, 1...] * [batch, 1..., freeB].
    SmallVector<int64_t, 4> shapeA(batchA), shapeB(batchB);
    shapeA.append(freeSizesA);
    shapeA.append(freeB.size(), 1);
    shapeB.append(freeA.size(), 1);
    shapeB.append(freeSizesB);
    Value lhs =
        reshape(permute(operands[0], a, concatLabels({batch, freeA})), shapeA);
    Value rhs =
        reshape(permute(operands[1], b, concatLabels({batch, freeB})), shapeB);
    result = create<MulOp>(lhs, rhs);
  } else {
    SmallVector<int64_t, 4> contractedSizes =
        dimsOf(contracted, operands[0], a);
    int64_t m = product(freeSizesA), n = product(freeSizesB),
            k = product(contractedSizes);
    // Each operand as [batch, rows, cols], transposed by matmul's flag when
    // its labels already stand in the other order.
    auto layOut = [&](Value v, ArrayRef<Label> have, ArrayRef<Label> free,
                      ArrayRef<int64_t> batchSizes, int64_t freeSize,
                      bool freeFirst, bool &transposed) {
      Labels direct = freeFirst ? concatLabels({batch, free, contracted})
                                : concatLabels({batch, contracted, free});
      Labels flipped = freeFirst ? concatLabels({batch, contracted, free})
                                 : concatLabels({batch, free, contracted});
      transposed = ArrayRef<Label>(have) != ArrayRef<Label>(direct) &&
                   ArrayRef<Label>(have) == ArrayRef<Label>(flipped);
      SmallVector<int64_t, 4> shape(batchSizes);
      if (freeFirst != transposed)
        shape.append({freeSize, k});
      else
        shape.append({k, freeSize});
      return reshape(permute(v, have, transposed ? flipped : direct), shape);
    };
    bool transposeA, transposeB;
    Value lhs = layOut(operands[0], a, freeA, batchA, m, /*freeFirst=*/true,
                       transposeA);
    Value rhs = layOut(operands[1], b, freeB, batchB, n, /*freeFirst=*/false,
                       transposeB);
    result = create<MatmulOp>(lhs, rhs, transposeA, transposeB);
  }
  // [batch, M, N] (or the outer product) back to one dimension per label.
  SmallVector<int64_t, 4> shape(
      typeOf(result).getShape().take_front(batch.size()));
  shape.append(freeSizesA);
  shape.append(freeSizesB);
  result = reshape(result, shape);
  setValue(outputName(0), permute(result, resultLabels, output));
}
