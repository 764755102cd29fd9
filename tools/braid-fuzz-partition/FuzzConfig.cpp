//===- FuzzConfig.cpp - random meshes and overlap passes ------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "FuzzConfig.h"

#include "lowering/Pipelines.h"
#include "passes/Pipelines.h"

#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <set>

using namespace mlir::braid;
using namespace mlir::braid::fuzz;

namespace {

/// A mesh preset: which axes, with what weight it is drawn.
struct Preset {
  const char *axes; // e.g. "dp,tp"
  int weight;
  bool needsMoe;
};

const Preset kPresets[] = {
    {"tp", 3, false},   {"sp", 2, false},    {"dp", 2, false},
    {"ep", 2, true},    {"cp", 2, false},    {"dp,tp", 2, false},
    {"ep,tp", 1, true}, {"cp,tp", 1, false}, {"dp,sp", 1, false},
    {"dp,ep", 1, true}, {"dp,cp", 1, false},
};

/// Records mesh axis `kind` (tp, sp, dp, ep, cp) of `size` ranks.
void addAxis(MeshSizes &sizes, llvm::StringRef kind, int64_t size) {
  if (kind == "tp" || kind == "sp")
    sizes.tp = size;
  if (kind == "sp")
    sizes.sequenceParallel = true;
  if (kind == "dp")
    sizes.dp = size;
  if (kind == "ep")
    sizes.ep = size;
  if (kind == "cp")
    sizes.cp = size;
}

/// Records what overlap item `kind` with `count` needs of the sizes.
void addOverlap(MeshSizes &sizes, llvm::StringRef kind, int64_t count) {
  if (kind == "domino" || kind == "domino-both")
    sizes.batchChunks = std::max<int64_t>(sizes.batchChunks, count);
  if (kind == "seq")
    sizes.sequenceChunks = std::max<int64_t>(1, count);
  if (kind == "balance")
    sizes.zigzag = true;
}

/// Calls `add` with each item of a comma-separated list of kind[=count]
/// (count 2 when absent).
template <typename Add> void forEachItem(llvm::StringRef list, Add add) {
  llvm::SmallVector<llvm::StringRef> items;
  list.split(items, ',', -1, false);
  for (llvm::StringRef item : items) {
    auto [kind, count] = item.trim().split('=');
    int64_t value = 2;
    if (!count.empty())
      count.getAsInteger(10, value);
    add(kind, value);
  }
}

} // namespace

FuzzConfig mlir::braid::fuzz::randomConfig(Random &rng, uint32_t features) {
  bool moe = features & FeatureMoe;
  bool attention = features & FeatureAttention;
  int total = 0;
  for (const Preset &preset : kPresets)
    if (moe || !preset.needsMoe)
      total += preset.weight;
  int draw = int(rng.below(total));
  const Preset *chosen = &kPresets[0];
  for (const Preset &preset : kPresets) {
    if (!moe && preset.needsMoe)
      continue;
    if (draw < preset.weight) {
      chosen = &preset;
      break;
    }
    draw -= preset.weight;
  }

  FuzzConfig config;
  llvm::SmallVector<llvm::StringRef> axes;
  llvm::StringRef(chosen->axes).split(axes, ',');
  for (llvm::StringRef axis : axes) {
    // One axis: 2, 3 or 4 ranks; two axes: mostly 2 x 2, sometimes a 3.
    int64_t size =
        axes.size() == 1 ? rng.pick({2, 2, 3, 4}) : rng.pick({2, 2, 2, 3});
    if (axes.size() == 2 && axis == axes[1] && size == 3 &&
        config.sizes.dp * config.sizes.ep * config.sizes.cp == 3)
      size = 2; // At most 3 x 2.
    config.parallel += (config.parallel.empty() ? "" : ",") + axis.str() + "=" +
                       std::to_string(size);
    addAxis(config.sizes, axis, size);
  }
  if (config.sizes.ep > 1)
    config.required |= FeatureMoe;

  if (!rng.chance(0.65))
    return config;
  // The overlap passes that apply to this mesh.
  std::vector<OverlapItem> candidates;
  if (config.sizes.tp > 1) {
    candidates.push_back({"domino", rng.between(2, 3)});
    candidates.push_back({"domino-columns", rng.between(2, 3)});
    candidates.push_back({"domino-both", 2});
    candidates.push_back({"seq", rng.between(2, 3)});
    candidates.push_back({"seq-at", rng.between(1, 2)});
  }
  if (config.sizes.dp > 1)
    candidates.push_back({"domino", 2});
  if (config.sizes.ep > 1)
    candidates.push_back({"comet", rng.chance(0.2) ? 0 : rng.between(1, 2)});
  if (config.sizes.cp > 1) {
    if (attention) {
      candidates.push_back({"ring", 0});
      // Rows of the grid; 0 lets the cost model choose.
      std::vector<int64_t> rows{0};
      for (int64_t r = 1; r <= config.sizes.cp; ++r)
        if (config.sizes.cp % r == 0)
          rows.push_back(r);
      candidates.push_back(
          {"attention-2d", rows[rng.below(int64_t(rows.size()))]});
    }
    candidates.push_back({"balance", 0});
  }
  candidates.push_back({"schedule", 0});
  if (rng.chance(0.03))
    candidates.push_back({"auto", 0});

  int64_t items = rng.chance(0.2) ? 2 : 1;
  std::set<std::string> kinds;
  for (int64_t k = 0; k < items; ++k) {
    const OverlapItem &item = candidates[rng.below(int64_t(candidates.size()))];
    if (!kinds.insert(item.kind).second)
      continue;
    config.overlap.push_back(item);
    addOverlap(config.sizes, item.kind, item.count);
    if (item.kind == "ring" || item.kind == "attention-2d")
      config.required |= FeatureAttention;
  }
  return config;
}

std::string mlir::braid::fuzz::renderOverlap(const FuzzConfig &config,
                                             int64_t seq, Random &rng) {
  std::string text;
  for (const OverlapItem &item : config.overlap) {
    std::string rendered = item.kind;
    if (item.kind == "seq-at") {
      std::set<int64_t> points;
      for (int64_t k = 0; k < item.count && seq > 1; ++k)
        points.insert(rng.between(1, seq - 1));
      std::string list;
      for (int64_t point : points)
        list += (list.empty() ? "" : ":") + std::to_string(point);
      rendered += "=" + (list.empty() ? std::string("1") : list);
    } else if (item.kind == "attention-2d") {
      if (item.count > 0)
        rendered += "=" + std::to_string(item.count) + "x" +
                    std::to_string(config.sizes.cp / item.count);
    } else if (item.kind != "ring" && item.kind != "balance" &&
               item.kind != "schedule" && item.kind != "auto") {
      rendered += "=" + std::to_string(item.count);
    }
    text += (text.empty() ? "" : ",") + rendered;
  }
  return text;
}

MeshSizes mlir::braid::fuzz::sizesOf(llvm::StringRef parallel,
                                     llvm::StringRef overlap) {
  MeshSizes sizes;
  forEachItem(parallel, [&](llvm::StringRef kind, int64_t size) {
    addAxis(sizes, kind, size);
  });
  forEachItem(overlap, [&](llvm::StringRef kind, int64_t count) {
    addOverlap(sizes, kind, count);
  });
  return sizes;
}

llvm::Expected<std::string>
mlir::braid::fuzz::fullPipeline(llvm::StringRef parallel,
                                llvm::StringRef overlap) {
  // Built by braidc's own functions, then printed: the pass list is what
  // the minimizer shrinks and what a reproducer shows.
  OpPassManager pm("builtin.module");
  buildImportPipeline(pm);
  DriverPipelineOptions options;
  options.parallel = parallel.str();
  options.overlap = overlap.str();
  // The fuzzer checks that every transformation computes the same values:
  // it applies them even where the cost model would keep the input.
  options.forceOverlap = true;
  std::string error;
  if (failed(buildDriverPipeline(pm, options, [&](const llvm::Twine &message) {
        error = message.str();
        return failure();
      })))
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  buildLowerPipeline(pm);
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  // builtin.module(a, b, ...) -> a,b,...
  llvm::StringRef body(text);
  body.consume_front("builtin.module(");
  body.consume_back(")");
  return body.str();
}

std::vector<std::string>
mlir::braid::fuzz::splitPipeline(llvm::StringRef pipeline) {
  std::vector<std::string> passes;
  int depth = 0;
  std::string current;
  for (char c : pipeline) {
    if (c == '{' || c == '(')
      ++depth;
    if (c == '}' || c == ')')
      --depth;
    if (c == ',' && depth == 0) {
      if (!llvm::StringRef(current).trim().empty())
        passes.push_back(llvm::StringRef(current).trim().str());
      current.clear();
      continue;
    }
    current += c;
  }
  if (!llvm::StringRef(current).trim().empty())
    passes.push_back(llvm::StringRef(current).trim().str());
  return passes;
}
