//===- ProgramGenerator.h - random single-device braid programs -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Writes random, valid single-device braid programs as MLIR text, from a
// seed, in the shapes real models have: an embedding or a hidden-state input,
// then a stack of residual blocks (attention with fused or separate
// projections and GQA, MLPs plain and gated, MoE layers, norms built in or
// decomposed, reductions, softmax, elementwise chains, shape shuffles), then
// a final norm, an LM head and sometimes the embedding's gradient
// (scatter_add of the hidden state by the token ids). Dimensions are chosen
// for a mesh so that they divide by its axes most of the time, and sometimes
// do not, which the partitioner must reject cleanly.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_BRAIDFUZZPARTITION_PROGRAMGENERATOR_H
#define BRAID_TOOLS_BRAIDFUZZPARTITION_PROGRAMGENERATOR_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <random>
#include <string>

namespace mlir {
namespace braid {
namespace fuzz {

/// The deterministic random source of the fuzzer: the same seed gives the
/// same choices on every platform (no std distributions).
class Random {
public:
  explicit Random(uint64_t seed) : engine(seed) {}
  /// A value in [0, n).
  int64_t below(int64_t n) { return int64_t(engine() % uint64_t(n)); }
  /// A value in [lo, hi].
  int64_t between(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
  /// True with probability p.
  bool chance(double p) { return unit() < p; }
  /// A value in [0, 1).
  double unit() { return double(engine() >> 11) * 0x1.0p-53; }
  /// One of `values`.
  template <typename T, size_t N> T pick(const T (&values)[N]) {
    return values[below(N)];
  }
  uint64_t next() { return engine(); }

private:
  std::mt19937_64 engine;
};

/// Families of generated blocks; a program uses only those enabled.
enum Feature : uint32_t {
  FeatureEmbedding = 1u << 0,
  FeatureAttention = 1u << 1,
  FeatureMlp = 1u << 2,
  FeatureGatedMlp = 1u << 3,
  FeatureMoe = 1u << 4,
  FeatureNorms = 1u << 5,
  FeatureReductions = 1u << 6,
  FeatureSoftmax = 1u << 7,
  FeatureElementwise = 1u << 8,
  FeatureShapeOps = 1u << 9,
  FeatureLmHead = 1u << 10,
  /// Norms written op by op (reduce_mean, sub, rsqrt, ...), as exported.
  FeatureDecomposedNorms = 1u << 11,
  FeatureAll = (1u << 12) - 1,
};

/// Parses a comma-separated list of feature names ("attention,mlp"), or
/// "all"; false for an unknown name. featureNames() lists them.
bool parseFeatures(llvm::StringRef text, uint32_t &features);
std::string featureNames();

/// The mesh a program is written for: the size of every axis (1 when
/// absent) and what must divide which dimension.
struct MeshSizes {
  int64_t tp = 1, dp = 1, ep = 1, cp = 1;
  /// Sequence parallelism: tp also splits the sequence.
  bool sequenceParallel = false;
  /// Chunks an overlap pass cuts the batch or sequence into (1: none).
  int64_t batchChunks = 1, sequenceChunks = 1;
  /// The sequence must split into 2 * cp blocks (braid-balance-sequence).
  bool zigzag = false;
};

/// A program and what it is made of.
struct GeneratedProgram {
  std::string text;
  /// The blocks, e.g. "embed attention(fused-split,gqa,causal) mlp head".
  std::string summary;
  /// The batch and sequence sizes of its inputs.
  int64_t batch = 0, seq = 0;
};

/// Writes a program for `mesh` from `seed` using the enabled `features`
/// (`required` are used at least once when enabled).
GeneratedProgram generateProgram(uint64_t seed, const MeshSizes &mesh,
                                 uint32_t features, uint32_t required);

} // namespace fuzz
} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_BRAIDFUZZPARTITION_PROGRAMGENERATOR_H
