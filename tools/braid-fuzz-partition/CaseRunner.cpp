//===- CaseRunner.cpp - one differential test of a pipeline ---------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "CaseRunner.h"

#include "ProgramGenerator.h"

#include "dialects/braid/BraidDialect.h"
#include "dialects/exec/ExecDialect.h"
#include "lowering/ExecToPlan.h"
#include "tools/common/ReferenceInterpreter.h"

#include "runtime/comm/ThreadCommunicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/kernels/CpuKernels.h"
#include "runtime/kernels/ElementIO.h"
#include "runtime/plan/Plan.pb.h"
#include "runtime/weights/Safetensors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>
#include <thread>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::fuzz;
namespace rt = ::braid::rt;
namespace ref = ::braid::rt::ref;

const char *mlir::braid::fuzz::outcomeName(Outcome outcome) {
  switch (outcome) {
  case Outcome::Pass:
    return "pass";
  case Outcome::Rejected:
    return "rejected";
  case Outcome::Mismatch:
    return "MISMATCH";
  case Outcome::Crash:
    return "CRASH";
  }
  return "?";
}

namespace {

/// splitmix64: a well-mixed 64-bit value from any seed.
uint64_t mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

/// FNV-1a of a name, so each tensor's values depend on its name only.
uint64_t hashName(llvm::StringRef name) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : name)
    hash = (hash ^ uint8_t(c)) * 0x100000001b3ULL;
  return hash;
}

/// The weights and inputs of one case.
struct CaseData {
  llvm::StringMap<ref::Tensor> weights;
  std::vector<uint8_t> weightsFile;
  std::vector<ref::Tensor> inputs;
};

/// Random values for a tensor named `name`: weights scaled by their fan-in
/// (vectors, i.e. norm scales and biases, in [0.5, 1.5]); inputs in
/// [-1, 1]; integers in [0, range).
ref::Tensor randomTensor(uint64_t seed, llvm::StringRef name, rt::DType dtype,
                         const std::vector<int64_t> &shape, bool isWeight,
                         int64_t range) {
  fuzz::Random rng(mix(seed ^ hashName(name)));
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  if (dtype == rt::DType::I64 || dtype == rt::DType::I32 ||
      dtype == rt::DType::I1) {
    std::vector<int64_t> values(count);
    for (int64_t &v : values)
      v = rng.below(dtype == rt::DType::I1 ? 2 : std::max<int64_t>(range, 1));
    return ref::Tensor::ofInts(dtype, shape, values);
  }
  double low = -1, high = 1;
  if (isWeight && shape.size() == 1) {
    low = 0.5;
    high = 1.5;
  } else if (isWeight && shape.size() >= 2) {
    int64_t fan = std::min(shape[shape.size() - 1], shape[shape.size() - 2]);
    high = std::sqrt(3.0 / double(std::max<int64_t>(fan, 1)));
    low = -high;
  }
  std::vector<double> values(count);
  for (double &v : values)
    v = low + (high - low) * rng.unit();
  return ref::Tensor::ofFloats(dtype, shape, values);
}

/// The number of rows `arg` indexes when it is the indices of gathers or
/// scatter_adds (the fewest any of them has), else 2.
int64_t indexRange(BlockArgument arg) {
  int64_t range = 0;
  auto use = [&](Value indices, Value table, int64_t axis) {
    if (indices != arg)
      return;
    int64_t rows = cast<RankedTensorType>(table.getType()).getDimSize(axis);
    range = range == 0 ? rows : std::min(range, rows);
  };
  for (Operation *user : arg.getUsers()) {
    if (auto gather = dyn_cast<GatherOp>(user))
      use(gather.getIndices(), gather.getInput(), gather.getAxis());
    if (auto scatter = dyn_cast<ScatterAddOp>(user))
      use(scatter.getIndices(), scatter.getResult(), scatter.getAxis());
  }
  return range == 0 ? 2 : range;
}

std::vector<uint8_t> storedBytes(const ref::Tensor &tensor) {
  std::vector<uint8_t> bytes(tensor.numElements() * rt::byteSize(tensor.dtype));
  rt::writeTensor(tensor, tensor.dtype, tensor.shape, bytes.data());
  return bytes;
}

CaseData makeData(ModuleOp module, func::FuncOp main, uint64_t seed) {
  CaseData data;
  std::vector<rt::SafetensorsEntry> entries;
  for (auto weight : module.getOps<WeightOp>()) {
    RankedTensorType type = weight.getTensorType();
    rt::DType dtype = runtimeDType(type.getElementType());
    ref::Tensor tensor = randomTensor(seed, weight.getSymName(), dtype,
                                      tensorShape(type), true, 2);
    entries.push_back(
        {weight.getSymName().str(), dtype, tensor.shape, storedBytes(tensor)});
    data.weights[weight.getSymName()] = std::move(tensor);
  }
  data.weightsFile = rt::encodeSafetensors(entries);
  for (BlockArgument arg : main.getArguments()) {
    auto name =
        main.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "braid.name");
    std::string key = "input:" + (name ? name.getValue().str()
                                       : std::to_string(arg.getArgNumber()));
    data.inputs.push_back(randomTensor(
        seed, key, runtimeDType(getElementTypeOrSelf(arg.getType())),
        tensorShape(arg.getType()), false, indexRange(arg)));
  }
  return data;
}

std::string firstLine(llvm::StringRef text) {
  return text.split('\n').first.trim().str();
}

/// Collects the errors emitted while alive and swallows every diagnostic
/// (remarks of the overlap passes included).
class ErrorCollector {
public:
  explicit ErrorCollector(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diagnostic) {
          if (diagnostic.getSeverity() == DiagnosticSeverity::Error)
            errors.push_back(diagnostic.str());
          return success();
        }) {}

  std::vector<std::string> errors;

private:
  ScopedDiagnosticHandler handler;
};

/// The index in each dimension of flat element `flat` of `shape`.
std::vector<int64_t> unflatten(int64_t flat, llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
  return index;
}

bool allFinite(const ref::Tensor &tensor) {
  if (!tensor.isFloat())
    return true;
  return llvm::all_of(tensor.f, [](double v) { return std::isfinite(v); });
}

} // namespace

CaseRunner::CaseRunner(MLIRContext &context, RunnerOptions options)
    : context(context), options(options) {
  context.loadDialect<BraidDialect, exec::ExecDialect, func::FuncDialect,
                      arith::ArithDialect>();
}

OwningOpRef<ModuleOp> CaseRunner::parse(llvm::StringRef text,
                                        llvm::StringRef bufferName,
                                        std::string &errors) {
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  llvm::raw_string_ostream stream(errors);
  SourceMgrDiagnosticHandler handler(sourceMgr, &context, stream);
  return parseSourceFile<ModuleOp>(sourceMgr, &context);
}

CaseResult CaseRunner::run(ModuleOp program,
                           const std::vector<std::string> &pipeline,
                           uint64_t dataSeed) {
  CaseResult result;
  auto crash = [&](const std::string &stage, const std::string &reason) {
    result.outcome = Outcome::Crash;
    result.stage = stage;
    result.reason = reason;
    return result;
  };

  // The reference.
  auto main = program.lookupSymbol<func::FuncOp>("main");
  if (!main)
    return crash("generator", "the program has no @main");
  CaseData data;
  std::vector<ref::Tensor> expected;
  try {
    data = makeData(program, main, dataSeed);
    expected = interpretFunction(main, data.inputs, data.weights);
  } catch (const std::exception &error) {
    return crash("reference", error.what());
  }
  for (const ref::Tensor &tensor : expected)
    if (!allFinite(tensor))
      return crash("reference", "the reference outputs are not all finite");
  // How much rounding error the program amplifies: the same program in
  // double precision, and twice with every stored value perturbed by up to
  // one ulp (rounding in another order). A partitioned program rounds in
  // another order too, so an output may differ from the reference by a
  // multiple of that spread; a well-conditioned program keeps the tight
  // tolerance, and an ill-conditioned one (a division by a mean of signed
  // values, the normalized difference of two identical rows, a top-k near
  // tie) does not fail on f32 noise.
  std::vector<ref::Tensor> exact;
  std::vector<std::vector<ref::Tensor>> perturbed;
  try {
    {
      ref::ExactArithmetic doublePrecision;
      exact = interpretFunction(main, data.inputs, data.weights);
    }
    for (uint64_t k = 1; k <= 2; ++k) {
      ref::PerturbedArithmetic noise(dataSeed * 2654435761u + k);
      perturbed.push_back(interpretFunction(main, data.inputs, data.weights));
    }
  } catch (const std::exception &error) {
    return crash("reference", std::string("in another precision: ") +
                                  error.what());
  }

  // The pipeline, one pass at a time, verifying after each.
  OwningOpRef<ModuleOp> work = program.clone();
  for (const std::string &pass : pipeline) {
    PassManager pm(&context);
    pm.enableVerifier(false);
    std::string parseErrors;
    llvm::raw_string_ostream parseStream(parseErrors);
    if (failed(parsePassPipeline(pass, pm, parseStream)))
      return crash(pass, "cannot parse the pass: " + firstLine(parseErrors));
    ErrorCollector collector(context);
    if (failed(pm.run(*work))) {
      if (collector.errors.empty())
        return crash(pass, "the pass failed without an error");
      result.outcome = Outcome::Rejected;
      result.stage = pass;
      result.reason = firstLine(collector.errors.front());
      return result;
    }
    if (failed(verify(*work)))
      return crash(pass, "invalid IR after the pass: " +
                             (collector.errors.empty()
                                  ? std::string("(no message)")
                                  : firstLine(collector.errors.front())));
  }

  // The plan, in memory.
  auto plans = llvm::to_vector(work->getOps<exec::PlanOp>());
  if (plans.size() != 1)
    return crash("exec-to-plan", "expected one exec.plan after the pipeline");
  ::braid::plan::Plan plan;
  {
    ErrorCollector collector(context);
    if (failed(
            translateExecToPlan(plans.front(), "weights.safetensors", plan))) {
      result.outcome = Outcome::Rejected;
      result.stage = "exec-to-plan";
      result.reason = collector.errors.empty()
                          ? "(no message)"
                          : firstLine(collector.errors.front());
      return result;
    }
  }
  std::optional<rt::SafetensorsFile> weights;
  std::optional<rt::LoadedPlan> loaded;
  try {
    weights =
        rt::SafetensorsFile::fromBytes(data.weightsFile, "weights.safetensors");
    rt::LoadOptions loadOptions;
    loadOptions.kernels = &rt::cpuKernels();
    loadOptions.weights = &*weights;
    loaded = rt::validatePlan(std::move(plan), loadOptions);
  } catch (const std::exception &error) {
    return crash("plan-loader", error.what());
  }
  if (loaded->proto.inputs_size() != int(data.inputs.size()) ||
      loaded->proto.outputs_size() != int(expected.size()))
    return crash("plan-loader",
                 "the plan's inputs or outputs differ from the program's");

  // Every rank on its own thread.
  int64_t ranks = loaded->mesh.numRanks();
  result.ranks = ranks;
  for (const auto &stream : loaded->proto.streams())
    for (const auto &instruction : stream.instructions())
      result.collectives += instruction.has_collective();
  for (const auto &weight : loaded->proto.weights())
    result.shardedWeights += llvm::any_of(
        weight.sharding(), [](const auto &dim) { return dim.axes_size() > 0; });
  rt::ThreadWorld world(loaded->mesh);
  std::vector<std::vector<ref::Tensor>> actual(ranks);
  std::vector<std::string> failures(ranks);
  auto runRank = [&](int64_t rank) {
    try {
      std::unique_ptr<rt::Communicator> comm = world.communicator(rank);
      comm->setTimeout(options.timeout);
      rt::ExecutorOptions executorOptions;
      executorOptions.eventTimeout = options.timeout;
      rt::Executor executor(*loaded, *comm, &*weights, executorOptions);
      for (int k = 0; k < loaded->proto.inputs_size(); ++k) {
        rt::TensorView view = executor.input(loaded->proto.inputs(k).name());
        rt::writeTensor(data.inputs[k], view.dtype, view.shape, view.data);
      }
      executor.run();
      for (const auto &binding : loaded->proto.outputs()) {
        rt::TensorView view = executor.output(binding.name());
        actual[rank].push_back(
            rt::readTensor(view.dtype, view.shape, view.data));
      }
    } catch (const std::exception &error) {
      failures[rank] = error.what();
      world.abort("rank " + std::to_string(rank) + " failed");
    }
  };
  std::vector<std::thread> threads;
  for (int64_t rank = 1; rank < ranks; ++rank)
    threads.emplace_back(runRank, rank);
  runRank(0);
  for (std::thread &thread : threads)
    thread.join();
  for (int64_t rank = 0; rank < ranks; ++rank)
    if (!failures[rank].empty())
      return crash("executor", "rank " + std::to_string(rank) + ": " +
                                   firstLine(failures[rank]));

  // Every rank against the reference, element by element: an element may
  // differ from the reference by the tolerance (relative to the largest
  // expected magnitude) plus `conditioningFactor` times how far that element
  // moves in double precision or under perturbed rounding. The allowance is
  // per element, so an ill-conditioned element (a normalized difference of
  // identical rows, a top-k near tie) does not excuse errors elsewhere.
  for (size_t k = 0; k < expected.size(); ++k) {
    OutputError error;
    error.name = loaded->proto.outputs(int(k)).name();
    const ref::Tensor &reference = expected[k];
    for (int64_t rank = 0; rank < ranks; ++rank)
      if (actual[rank][k].shape != reference.shape)
        return crash("executor", "output '" + error.name +
                                     "' has another shape than the reference");
    int64_t count = reference.numElements();
    double largest = 0;
    for (int64_t i = 0; i < count; ++i)
      largest = std::max(largest, std::fabs(reference.at(i)));
    double scale = largest > 0 ? largest : 1;
    std::vector<double> allowed(count);
    double largestMove = 0;
    for (int64_t i = 0; i < count; ++i) {
      double move = std::fabs(exact[k].at(i) - reference.at(i));
      for (const std::vector<ref::Tensor> &run : perturbed)
        move = std::max(move, std::fabs(run[k].at(i) - reference.at(i)));
      if (std::isnan(move))
        move = 0;
      largestMove = std::max(largestMove, move);
      allowed[i] =
          options.tolerance * scale + options.conditioningFactor * move;
    }
    error.referenceError = largestMove / scale;
    double worstExcess = -1;
    int64_t worstIndex = -1;
    for (int64_t rank = 0; rank < ranks; ++rank) {
      const ref::Tensor &got = actual[rank][k];
      double maxAbs = 0;
      for (int64_t i = 0; i < count; ++i) {
        double a = got.at(i), e = reference.at(i);
        double difference = std::fabs(a - e);
        if (std::isnan(difference))
          difference = std::isnan(a) && std::isnan(e) ? 0 : HUGE_VAL;
        maxAbs = std::max(maxAbs, difference);
        double excess = allowed[i] > 0 ? difference / allowed[i]
                        : difference > 0 ? HUGE_VAL
                                         : 0;
        if (excess > worstExcess) {
          worstExcess = excess;
          worstIndex = i;
          error.worstRank = rank;
        }
      }
      error.maxAbs = std::max(error.maxAbs, maxAbs);
    }
    error.relative = error.maxAbs / scale;
    if (worstIndex >= 0) {
      error.worstElement = unflatten(worstIndex, reference.shape);
      error.got = actual[error.worstRank][k].at(worstIndex);
      error.expected = reference.at(worstIndex);
      error.exact = exact[k].at(worstIndex);
      error.accepted = allowed[worstIndex] / scale;
    }
    if (!(worstExcess <= 1)) {
      result.outcome = Outcome::Mismatch;
      result.reason += (result.reason.empty() ? "" : ", ") + error.name;
    }
    result.outputs.push_back(error);
  }
  return result;
}
