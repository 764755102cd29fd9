//===- FuzzConfig.h - random meshes and overlap passes ----------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A configuration is what braidc would be asked for: a --parallel mesh
// preset and an --overlap list. The pipeline is then built by braidc's own
// functions (passes/Pipelines: the import clean-up, buildDriverPipeline) and
// ends with braid-lower-pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_TOOLS_BRAIDFUZZPARTITION_FUZZCONFIG_H
#define BRAID_TOOLS_BRAIDFUZZPARTITION_FUZZCONFIG_H

#include "ProgramGenerator.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir {
namespace braid {
namespace fuzz {

/// One --overlap item before the program's sizes are known.
struct OverlapItem {
  /// braidc's item name: domino, domino-columns, domino-both, seq, seq-at,
  /// comet, balance, ring, attention-2d, schedule, auto.
  std::string kind;
  /// Chunks (domino, seq, comet), split points (seq-at: their count),
  /// or the grid (attention-2d: rows; 0 for auto).
  int64_t count = 0;
};

/// A mesh preset and the overlap passes to run after partitioning.
struct FuzzConfig {
  /// braidc's --parallel, e.g. "dp=2,tp=2".
  std::string parallel;
  std::vector<OverlapItem> overlap;
  /// What the program's sizes must divide by.
  MeshSizes sizes;
  /// Features the program must use (attention for ring attention, ...).
  uint32_t required = 0;
};

/// A random configuration that the enabled `features` can exercise.
FuzzConfig randomConfig(Random &rng, uint32_t features);

/// braidc's --overlap for `config` and a program of `seq` positions (split
/// points are chosen with `rng`); empty for no overlap.
std::string renderOverlap(const FuzzConfig &config, int64_t seq, Random &rng);

/// Sizes for the program generator from braidc-style --parallel and
/// --overlap text (for --mesh / --overlap given on the command line).
MeshSizes sizesOf(llvm::StringRef parallel, llvm::StringRef overlap);

/// The whole pipeline, as text: braidc's clean-up of imported models,
/// buildDriverPipeline, then braid-to-exec; an error for bad options.
llvm::Expected<std::string> fullPipeline(llvm::StringRef parallel,
                                         llvm::StringRef overlap);

/// The passes of a textual pipeline, split at its top-level commas.
std::vector<std::string> splitPipeline(llvm::StringRef pipeline);

} // namespace fuzz
} // namespace braid
} // namespace mlir

#endif // BRAID_TOOLS_BRAIDFUZZPARTITION_FUZZCONFIG_H
