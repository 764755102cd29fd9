//===- ParallelPipeline.cpp - braidc's --parallel and --overlap -----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "tools/common/ParallelPipeline.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <optional>

using namespace mlir::braid;
using llvm::StringRef;

static llvm::Error optionError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The braid-partition options of --parallel, e.g. "dp=2 tp=2".
static llvm::Expected<std::string> partitionOptions(StringRef parallel) {
  // tp=N, dp=N, ep=N, cp=N, sp (sequence parallel on tp) or sp=N (tp=N
  // with sequence parallelism), comma-separated.
  llvm::SmallVector<StringRef> items;
  parallel.split(items, ',');
  std::string options;
  llvm::StringSet<> seen;
  for (StringRef item : items) {
    auto [kind, count] = item.trim().split('=');
    int64_t ranks = 0;
    bool known = llvm::is_contained({"tp", "dp", "ep", "cp", "sp"}, kind);
    bool counted =
        !count.empty() && !count.getAsInteger(10, ranks) && ranks >= 1;
    if (!known || (kind != "sp" && !counted) ||
        (kind == "sp" && !count.empty() && !counted) ||
        !seen.insert(kind).second)
      return optionError("--parallel '" + parallel + "': '" + item +
                         "' is not one of tp=N, dp=N, ep=N, cp=N, sp, sp=N "
                         "(each at most once)");
    if (kind == "sp") {
      options += " sp=true";
      if (counted)
        options += " tp=" + count.str();
    } else {
      options += " " + kind.str() + "=" + count.str();
    }
  }
  return options.substr(1);
}

/// The cp size of --parallel, if it has one.
static std::optional<int64_t> contextParallelSize(StringRef parallel) {
  llvm::SmallVector<StringRef> axes;
  parallel.split(axes, ',');
  for (StringRef axis : axes) {
    auto [name, size] = axis.trim().split('=');
    int64_t ranks;
    if (name == "cp" && !size.getAsInteger(10, ranks))
      return ranks;
  }
  return std::nullopt;
}

llvm::Expected<std::string>
mlir::braid::buildParallelPipeline(const ParallelOptions &options) {
  std::string pipeline = options.pipeline;
  if (!options.parallel.empty()) {
    llvm::Expected<std::string> partition = partitionOptions(options.parallel);
    if (!partition)
      return partition.takeError();
    std::string passes =
        "braid-split-fused-projections,braid-partition{" + *partition + "}";
    pipeline = pipeline.empty() ? passes : passes + "," + pipeline;
  }
  if (options.overlap.empty())
    return pipeline;

  StringRef overlap = options.overlap;
  std::string passes;
  std::string hw = " hw=" + options.hardware;
  llvm::SmallVector<StringRef> items;
  overlap.split(items, ',');
  for (StringRef item : items) {
    auto [kind, count] = item.trim().split('=');
    if (kind == "balance" && count.empty()) {
      // Before partitioning: the zigzag order for the cp ranks.
      std::optional<int64_t> cp = contextParallelSize(options.parallel);
      if (!cp)
        return optionError("--overlap balance reorders the sequence for "
                           "context parallelism; give --parallel cp=N");
      pipeline = "braid-balance-sequence{parts=" + std::to_string(*cp) + "}," +
                 pipeline;
      continue;
    }
    if (kind == "ring" && count.empty()) {
      passes += ",braid-ring-attention";
      continue;
    }
    if (kind == "attention-2d") {
      passes += ",braid-attention-2d{grid=" +
                (count.empty() ? std::string("auto") : count.str()) + hw + "}";
      continue;
    }
    if (kind == "seq-at") {
      // Split points P:P:... (sequence positions where chunks start).
      llvm::SmallVector<StringRef> points;
      count.split(points, ':');
      std::string list;
      for (StringRef point : points) {
        int64_t position = 0;
        if (point.getAsInteger(10, position) || position < 1)
          return optionError("--overlap '" + overlap + "': '" + item +
                             "' needs split points P:P:... (positions >= 1)");
        list += (list.empty() ? "" : ",") + point.str();
      }
      passes += ",braid-seq-pipeline{split-points=" + list + hw + "}";
      continue;
    }
    int64_t chunks = 0;
    if (!count.empty() && (count.getAsInteger(10, chunks) || chunks < 0))
      return optionError("--overlap '" + overlap + "': '" + item +
                         "' needs a chunk count >= 0");
    std::string k = " chunks=" + std::to_string(chunks);
    if (kind == "domino")
      passes += ",braid-domino{split=rows" + k + hw + "}";
    else if (kind == "domino-columns")
      passes += ",braid-domino{split=columns" + k + hw + "}";
    else if (kind == "domino-both")
      passes += ",braid-domino{split=both" + k + hw + "}";
    else if (kind == "comet")
      passes += ",braid-comet{combine-" + k.substr(1) + hw + "}";
    else if (kind == "seq")
      passes += ",braid-seq-pipeline{" + k.substr(1) + hw + "}";
    else if (kind == "auto" && count.empty())
      passes += ",braid-overlap-auto{" + hw.substr(1) + "}";
    else if (kind != "schedule" || !count.empty())
      return optionError("--overlap '" + overlap + "': '" + item +
                         "' is not one of domino[=K], domino-columns[=K], "
                         "domino-both[=K], seq[=K], seq-at=P[:P...], "
                         "comet[=K], balance, ring, attention-2d[=RxC], "
                         "schedule, auto");
  }
  passes += ",braid-schedule{" + hw.substr(1) + "},braid-verify-collectives";
  return pipeline.empty() ? passes.substr(1) : pipeline + passes;
}
