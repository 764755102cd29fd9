//===- braid-fuzz-partition.cpp - differential tester of partitioning -----===//
//
//   braid-fuzz-partition --seed=1 --count=500
//   braid-fuzz-partition --reproduce=case.mlir --mesh=tp=2 --overlap=domino=2
//
// Generates random single-device braid programs and random configurations
// (a braidc --parallel mesh and --overlap passes), compiles each program the
// way `braidc --emit=plan` would, runs the plan on one thread per rank and
// compares every rank's outputs with the reference interpreter's. Prints one
// line per case with --verbose, a minimized reproducer for every mismatch
// and crash (up to --max-minimize of them), and a summary; exits 1 on any
// mismatch or crash.
//
//===----------------------------------------------------------------------===//

#include "CaseRunner.h"
#include "FuzzConfig.h"
#include "Minimizer.h"
#include "ProgramGenerator.h"

#include "lowering/Passes.h"
#include "passes/Passes.h"
#include "lowering/Pipelines.h"
#include "passes/Pipelines.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "tools/common/ToolOptions.h"

#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unistd.h>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::fuzz;

namespace {
llvm::cl::opt<uint64_t>
    seed("seed", llvm::cl::desc("Seed of the first case; case k uses seed + k"),
         llvm::cl::init(1), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<int64_t> count("count", llvm::cl::desc("Number of cases"),
                             llvm::cl::init(100), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<double>
    timeLimit("time-limit",
              llvm::cl::desc("Stop starting cases after this many seconds "
                             "(0: no limit)"),
              llvm::cl::init(0), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<bool> verbose("verbose",
                            llvm::cl::desc("One line per case: seed, mesh, "
                                           "overlap, program, outcome"), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<std::string>
    featureList("features",
                llvm::cl::desc("Block families programs may use, "
                               "comma-separated (default: all)"),
                llvm::cl::init("all"), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<std::string>
    mesh("mesh",
         llvm::cl::desc("Use this braidc --parallel mesh for every case "
                        "(e.g. dp=2,tp=2) instead of random ones; 'none': "
                        "one rank, no partitioning (checks the lowering, "
                        "the executor and the reference alone)"), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<std::string>
    overlap("overlap",
            llvm::cl::desc("Use this braidc --overlap list for every case "
                           "('none': no overlap passes)"), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<std::string>
    reproduce("reproduce",
              llvm::cl::desc("Run one case: the program in this file, with "
                             "--mesh/--overlap or --pipeline"),
              llvm::cl::value_desc("file.mlir"), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<std::string> pipelineText(
    "pipeline",
    llvm::cl::desc("With --reproduce: the pass pipeline to run (braid-opt "
                   "syntax, without builtin.module); overrides --mesh and "
                   "--overlap"), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<uint64_t>
    dataSeed("data-seed",
             llvm::cl::desc("With --reproduce: the seed of the weights and "
                            "inputs (a case's is its seed)"),
             llvm::cl::init(1), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<double>
    tolerance("tolerance",
              llvm::cl::desc("Largest error relative to the largest "
                             "expected magnitude"),
              llvm::cl::init(1e-4), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<double> conditioningFactor(
    "conditioning-factor",
    llvm::cl::desc("Accept an output's error up to this multiple of how far "
                   "the reference moves when evaluated in double precision "
                   "or with values perturbed by one ulp, when that is above "
                   "--tolerance (0: --tolerance alone)"),
    llvm::cl::init(8), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<int64_t>
    timeoutSeconds("timeout",
                   llvm::cl::desc("Seconds a collective or event wait may "
                                  "block before the case is a crash"),
                   llvm::cl::init(20), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<int64_t>
    maxMinimize("max-minimize",
                llvm::cl::desc("Minimize at most this many failing cases "
                               "(the rest are listed by seed)"),
                llvm::cl::init(3), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<int64_t>
    minimizeSeconds("minimize-time",
                    llvm::cl::desc("Seconds spent minimizing one case"),
                    llvm::cl::init(60), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<bool>
    printPrograms("print-programs",
                  llvm::cl::desc("Print every generated program"), llvm::cl::cat(getBraidToolCategory()));
llvm::cl::opt<std::string>
    saveDir("save-dir",
            llvm::cl::desc("Write every minimized reproducer to this folder "
                           "as case-<seed>.mlir"), llvm::cl::cat(getBraidToolCategory()));

/// The case being run, for the fatal-signal handler: written before each
/// case, printed with write(2) if the process dies.
char currentCase[4096] = "";

void printCurrentCase(void *) {
  if (!currentCase[0])
    return;
  const char header[] = "\nbraid-fuzz-partition: crashed (signal) in ";
  (void)!::write(2, header, sizeof header - 1);
  (void)!::write(2, currentCase, std::strlen(currentCase));
  (void)!::write(2, "\n", 1);
}

void setCurrentCase(const std::string &text) {
  size_t n = std::min(text.size(), sizeof currentCase - 1);
  std::memcpy(currentCase, text.data(), n);
  currentCase[n] = 0;
}

std::string quoteForShell(llvm::StringRef text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Prints the outcome details of one case.
void printResult(llvm::raw_ostream &os, const CaseResult &result) {
  if (result.outcome == Outcome::Rejected || result.outcome == Outcome::Crash)
    os << "  at " << result.stage << ": " << result.reason << "\n";
  for (const OutputError &output : result.outputs)
    os << "  output '" << output.name << "': max abs error "
       << llvm::format("%.3e", output.maxAbs) << ", relative "
       << llvm::format("%.3e", output.relative) << " (worst rank "
       << output.worstRank << "); the f32 reference moves "
       << llvm::format("%.3e", output.referenceError)
       << " under other roundings\n";
  for (const OutputError &output : result.outputs) {
    if (output.worstElement.empty() ||
        (result.outcome != Outcome::Mismatch && output.relative <= tolerance))
      continue;
    os << "    worst element of '" << output.name << "' [";
    llvm::interleaveComma(output.worstElement, os);
    os << "]: " << llvm::format("%.9g", output.got) << " on rank "
       << output.worstRank << ", " << llvm::format("%.9g", output.expected)
       << " in the f32 reference, " << llvm::format("%.9g", output.exact)
       << " in double precision; allowed error "
       << llvm::format("%.3e", output.accepted) << " (relative)\n";
  }
}

/// Prints a reproducer: how to rerun it, then the program.
void printReproducer(llvm::raw_ostream &os, FailingCase &failing,
                     uint64_t caseSeed, int64_t trials) {
  std::string file = "case-" + std::to_string(caseSeed) + ".mlir";
  if (!saveDir.empty()) {
    llvm::SmallString<256> path(saveDir.getValue());
    llvm::sys::path::append(path, file);
    file = path.str().str();
    std::error_code error;
    llvm::raw_fd_ostream out(file, error);
    if (!error)
      failing.program->print(out);
  }
  llvm::Expected<std::string> pipeline =
      fullPipeline(failing.parallel, failing.overlap);
  std::string passes = pipeline ? *pipeline : "?";
  if (!pipeline)
    llvm::consumeError(pipeline.takeError());
  os << "=== minimized reproducer of case " << caseSeed << " ("
     << outcomeName(failing.result.outcome) << ", " << trials
     << " trials) ===\n";
  os << "// braid-fuzz-partition --reproduce=" << file
     << " --mesh=" << (failing.parallel.empty() ? "none" : failing.parallel)
     << " --overlap=" << (failing.overlap.empty() ? "none" : failing.overlap)
     << " --data-seed=" << caseSeed << "\n";
  os << "// braid-opt " << file
     << " --pass-pipeline=" << quoteForShell("builtin.module(" + passes + ")")
     << "\n";
  std::string details;
  llvm::raw_string_ostream detailStream(details);
  printResult(detailStream, failing.result);
  llvm::StringRef rest(details);
  while (!rest.empty()) {
    auto [line, next] = rest.split('\n');
    os << "//" << line << "\n";
    rest = next;
  }
  failing.program->print(os);
  os << "\n";
}

/// Counts outcomes and rejection reasons.
struct Tally {
  int64_t cases = 0, passed = 0, rejected = 0, mismatches = 0, crashes = 0;
  /// Cases whose program amplifies rounding so much that an output moves
  /// more than the tolerance under other roundings (OutputError::referenceError).
  int64_t illConditioned = 0;
  /// Of those, the cases that passed with an error above the tolerance.
  int64_t passedAboveTolerance = 0;
  double tolerance = 0;
  llvm::StringMap<int64_t> reasons;
  std::vector<std::string> failures;

  /// The largest error among passing cases, to judge the tolerance by.
  double largestPassingError = 0;
  std::string largestPassingCase;

  void add(const CaseResult &result, const std::string &what) {
    ++cases;
    illConditioned += llvm::any_of(result.outputs, [&](const OutputError &o) {
      return o.referenceError > tolerance;
    });
    switch (result.outcome) {
    case Outcome::Pass:
      ++passed;
      passedAboveTolerance +=
          llvm::any_of(result.outputs, [&](const OutputError &o) {
            return o.relative > tolerance;
          });
      for (const OutputError &output : result.outputs)
        if (output.relative > largestPassingError) {
          largestPassingError = output.relative;
          largestPassingCase = what.substr(0, what.find(':'));
        }
      break;
    case Outcome::Rejected:
      ++rejected;
      ++reasons[result.reason];
      break;
    case Outcome::Mismatch:
      ++mismatches;
      failures.push_back(what);
      break;
    case Outcome::Crash:
      ++crashes;
      failures.push_back(what);
      break;
    }
  }

  void print(llvm::raw_ostream &os, double seconds) const {
    std::vector<std::pair<int64_t, std::string>> top;
    for (const auto &entry : reasons)
      top.push_back({entry.getValue(), entry.getKey().str()});
    std::sort(top.begin(), top.end(), [](const auto &a, const auto &b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (!failures.empty()) {
      os << "failing cases:\n";
      for (const std::string &failure : failures)
        os << "  " << failure << "\n";
    }
    if (!top.empty()) {
      os << "rejections by first diagnostic:\n";
      for (const auto &[n, reason] : top)
        os << llvm::format("  %5lld  ", (long long)n) << reason << "\n";
    }
    os << "braid-fuzz-partition: " << cases << " configurations, " << passed
       << " passed, " << rejected << " rejected";
    if (!top.empty()) {
      os << " (top: ";
      for (size_t k = 0; k < std::min<size_t>(3, top.size()); ++k)
        os << (k ? "; " : "") << top[k].first << " x '" << top[k].second << "'";
      os << ")";
    }
    os << ", " << mismatches << " mismatches, " << crashes << " crashes in "
       << llvm::format("%.1f", seconds) << " s";
    if (illConditioned)
      os << "; " << illConditioned
         << " ill-conditioned (an output moves more than the tolerance under "
            "other roundings; its elements are allowed a multiple of how far "
            "each moves), "
         << passedAboveTolerance << " of them passed above the tolerance";
    if (passed)
      os << "; largest relative error passed: "
         << llvm::format("%.1e", largestPassingError) << " ("
         << largestPassingCase << ")";
    os << "\n";
  }
};

int runReproduce(CaseRunner &runner) {
  auto buffer = llvm::MemoryBuffer::getFile(reproduce);
  if (!buffer) {
    llvm::errs() << "error: cannot read '" << reproduce
                 << "': " << buffer.getError().message() << "\n";
    return 1;
  }
  std::string errors;
  OwningOpRef<ModuleOp> program =
      runner.parse((*buffer)->getBuffer(), reproduce, errors);
  if (!program) {
    llvm::errs() << errors;
    return 1;
  }
  std::string pipeline = pipelineText;
  if (pipeline.empty()) {
    llvm::Expected<std::string> built =
        fullPipeline(mesh == "none" ? "" : mesh.getValue(),
                     overlap == "none" ? "" : overlap.getValue());
    if (!built) {
      llvm::errs() << "error: " << llvm::toString(built.takeError()) << "\n";
      return 1;
    }
    pipeline = *built;
  }
  for (const std::string &pass : splitPipeline(pipeline)) {
    PassManager check(program->getContext());
    std::string message;
    llvm::raw_string_ostream stream(message);
    if (failed(parsePassPipeline(pass, check, stream))) {
      llvm::errs() << "error: --pipeline '" << pipeline << "': " << message
                   << "\n";
      return 1;
    }
  }
  CaseResult result = runner.run(*program, splitPipeline(pipeline), dataSeed);
  llvm::outs() << reproduce << ": " << outcomeName(result.outcome);
  if (result.ranks > 0)
    llvm::outs() << " on " << result.ranks << " ranks";
  llvm::outs() << "\n  pipeline: " << pipeline << "\n";
  printResult(llvm::outs(), result);
  return result.outcome == Outcome::Mismatch || result.outcome == Outcome::Crash
             ? 1
             : 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  registerCanonicalizerPass();
  registerCSEPass();
  registerBraidPasses();
  registerBraidPipelines();
  registerLoweringPipelines();
  registerLoweringPasses();
  hideRegisteredOptions();
  setBraidVersionPrinter("braid-fuzz-partition");
  llvm::cl::ParseCommandLineOptions(
      argc, argv,
      "Differential tester of braid-partition and the overlap passes\n");
  llvm::sys::AddSignalHandler(printCurrentCase, nullptr);

  uint32_t features = 0;
  if (!parseFeatures(featureList, features)) {
    llvm::errs() << "error: --features '" << featureList
                 << "': expected a comma-separated list of " << featureNames()
                 << "\n";
    return 1;
  }

  MLIRContext context;
  context.disableMultithreading();
  context.printOpOnDiagnostic(false);
  RunnerOptions options;
  options.tolerance = tolerance;
  options.conditioningFactor = conditioningFactor;
  options.timeout = std::chrono::seconds(timeoutSeconds);
  CaseRunner runner(context, options);

  if (!reproduce.empty())
    return runReproduce(runner);

  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  Tally tally;
  tally.tolerance = options.tolerance;
  int64_t minimized = 0;
  for (int64_t k = 0; k < count; ++k) {
    if (timeLimit > 0 && elapsed() >= timeLimit)
      break;
    uint64_t caseSeed = seed + uint64_t(k);
    Random rng(caseSeed * 0x2545f4914f6cdd1dULL + 0x1234567);
    FuzzConfig config = randomConfig(rng, features);
    std::string parallel = config.parallel, overlapItems;
    MeshSizes sizes = config.sizes;
    if (!mesh.empty() || !overlap.empty()) {
      if (!mesh.empty())
        parallel = mesh == "none" ? "" : mesh.getValue();
      overlapItems = overlap == "none" ? "" : overlap.getValue();
      sizes = sizesOf(parallel, overlapItems);
      config.required = sizes.ep > 1 ? uint32_t(FeatureMoe) : 0;
    }
    GeneratedProgram generated = generateProgram(rng.next(), sizes, features,
                                                 config.required & features);
    if (mesh.empty() && overlap.empty())
      overlapItems = renderOverlap(config, generated.seq, rng);

    std::string what =
        "case " + std::to_string(caseSeed) +
        ": --mesh=" + (parallel.empty() ? "none" : parallel) +
        " --overlap=" + (overlapItems.empty() ? "none" : overlapItems) +
        " program: " + generated.summary;
    setCurrentCase(what);
    if (printPrograms)
      llvm::outs() << "// " << what << "\n" << generated.text;
    CaseResult result;
    std::string errors;
    OwningOpRef<ModuleOp> program =
        runner.parse(generated.text, "generated", errors);
    llvm::Expected<std::string> pipeline = fullPipeline(parallel, overlapItems);
    if (!pipeline) {
      llvm::errs() << "error: " << llvm::toString(pipeline.takeError()) << "\n";
      return 1;
    }
    if (!program) {
      result.outcome = Outcome::Crash;
      result.stage = "generator";
      result.reason = "the generated program does not parse: " + errors;
    } else {
      result = runner.run(*program, splitPipeline(*pipeline), caseSeed);
    }
    tally.add(result, what + " -> " + outcomeName(result.outcome));
    if (verbose) {
      llvm::outs() << what << " -> " << outcomeName(result.outcome);
      if (result.ranks > 0)
        llvm::outs() << " (" << result.ranks << " ranks, " << result.collectives
                     << " collectives, " << result.shardedWeights
                     << " sharded weights)";
      llvm::outs() << "\n";
      if (result.outcome != Outcome::Pass)
        printResult(llvm::outs(), result);
    }
    bool failed =
        result.outcome == Outcome::Mismatch || result.outcome == Outcome::Crash;
    if (!failed)
      continue;
    if (!verbose) {
      llvm::outs() << what << " -> " << outcomeName(result.outcome) << "\n";
      printResult(llvm::outs(), result);
    }
    if (!program) {
      llvm::outs() << generated.text;
      continue;
    }
    if (minimized >= maxMinimize)
      continue;
    ++minimized;
    FailingCase failing{std::move(program), parallel, overlapItems, result};
    int64_t trials = minimize(runner, failing, caseSeed,
                              std::chrono::seconds(minimizeSeconds));
    printReproducer(llvm::outs(), failing, caseSeed, trials);
    llvm::outs().flush();
  }
  setCurrentCase("");
  tally.print(llvm::outs(), elapsed());
  return tally.mismatches + tally.crashes > 0 ? 1 : 0;
}
