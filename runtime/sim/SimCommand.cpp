//===- SimCommand.cpp - `braid-run --backend sim` -------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/SimCommand.h"

#include "runtime/cost/HardwareProfile.h"
#include "runtime/sim/Simulator.h"
#include "runtime/sim/TimelineSvg.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace braid::rt {

const char *const kSimUsage =
    R"(  --backend B         cpu (default: run the plan on CPUs), cuda (run it on
                      one GPU per rank, NCCL between ranks) or sim (simulate
                      it in virtual time on --hw; no weights or inputs
                      needed)
  --hw PROFILE        sim: a hardware profile, by name (see runtime/profiles:
                      dgx-a100, dgx-h100, h800-node, h200-node, a800-node,
                      rtx4090-pcie, l20-pcie) or a path to a .json profile
  --nodes N           sim: nodes in the cluster (default: as few as hold the
                      plan's mesh)
  --world N           sim: the simulated world size; must equal the plan's
                      mesh size (one rank's plan stands for every rank)
  --rank-speeds F,F,... sim: heterogeneous workers, one kernel time factor
                      per rank (1.5: that rank's kernels take 1.5x as long);
                      every collective waits for the slowest rank, whose
                      timeline the simulator shows; a plan with optional
                      groups (--optional-groups) is simulated rank by rank
  --svg FILE          an SVG timeline: of the simulated run (sim; --trace
                      writes its Chrome trace), or of rank 0's measured
                      run (cpu, cuda)
  --compare-sim PROFILE  cpu, cuda: the --svg picture holds the measured run
                      and, below it, the same plan simulated on PROFILE
)";

bool SimFlags::anySimOnlyFlag() const {
  return !hw.empty() || nodes != 0 || world != 0 || !rankSpeeds.empty();
}

namespace {

int64_t parseCount(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < 1 ||
      value > (1ll << 30))
    throw std::invalid_argument(flag +
                                " needs a whole number from 1 to 2^30, "
                                "got '" +
                                text + "'");
  return value;
}

} // namespace

SimFlags takeSimFlags(int &argc, char **argv) {
  SimFlags flags;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string flag = arg;
    std::optional<std::string> inlineValue;
    size_t equals = arg.find('=');
    if (arg.rfind("--", 0) == 0 && equals != std::string::npos) {
      flag = arg.substr(0, equals);
      inlineValue = arg.substr(equals + 1);
    }
    bool ours = flag == "--backend" || flag == "--hw" || flag == "--nodes" ||
                flag == "--world" || flag == "--svg" ||
                flag == "--compare-sim" || flag == "--rank-speeds";
    if (!ours) {
      argv[kept++] = argv[i];
      continue;
    }
    std::string value;
    if (inlineValue) {
      value = *inlineValue;
    } else {
      if (i + 1 >= argc)
        throw std::invalid_argument(flag + " needs a value");
      value = argv[++i];
    }
    if (flag == "--backend") {
      if (value != "cpu" && value != "cuda" && value != "sim")
        throw std::invalid_argument("--backend must be cpu, cuda or sim, got '" +
                                    value + "'");
      flags.backend = value;
    } else if (flag == "--hw") {
      if (value.empty())
        throw std::invalid_argument("--hw needs a profile name or path");
      flags.hw = value;
    } else if (flag == "--nodes") {
      flags.nodes = parseCount("--nodes", value);
    } else if (flag == "--world") {
      flags.world = parseCount("--world", value);
    } else if (flag == "--rank-speeds") {
      flags.rankSpeeds.clear();
      size_t start = 0;
      while (true) {
        size_t comma = value.find(',', start);
        std::string item = value.substr(start, comma - start);
        char *end = nullptr;
        errno = 0;
        double factor = std::strtod(item.c_str(), &end);
        if (item.empty() || *end != '\0' || errno != 0 || !(factor > 0) ||
            !std::isfinite(factor))
          throw std::invalid_argument(
              "--rank-speeds needs positive numbers separated by commas, one "
              "per rank (a rank's kernel time factor), got '" +
              value + "'");
        flags.rankSpeeds.push_back(factor);
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
    } else if (flag == "--compare-sim") {
      if (value.empty())
        throw std::invalid_argument("--compare-sim needs a profile name or path");
      flags.compareSim = value;
    } else {
      if (value.empty())
        throw std::invalid_argument("--svg needs a file name");
      flags.svg = value;
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  if (flags.backend != "sim" && flags.anySimOnlyFlag())
    throw std::invalid_argument(
        "--hw, --nodes, --world and --rank-speeds need --backend sim "
        "(--compare-sim PROFILE "
        "simulates beside a measured run)");
  if (!flags.compareSim.empty() && flags.backend == "sim")
    throw std::invalid_argument(
        "--compare-sim compares a measured run with the simulator: it needs "
        "--backend cpu or cuda");
  if (!flags.compareSim.empty() && flags.svg.empty())
    throw std::invalid_argument("--compare-sim draws into --svg FILE: give one");
  if (flags.backend == "sim" && flags.hw.empty())
    throw std::invalid_argument("--backend sim needs --hw PROFILE");
  return flags;
}

int runSimBackend(const SimFlags &flags, const std::string &planPath,
                  const std::string &tracePath, std::ostream &out) {
  auto started = std::chrono::steady_clock::now();
  SimConfig config;
  config.profile = resolveHardwareProfile(flags.hw);
  config.nodes = flags.nodes;
  config.rankSpeeds = flags.rankSpeeds;
  config.optionalPolicies = flags.optionalPolicies;
  LoadedPlan plan = loadPlanForSimulation(planPath);
  int64_t meshRanks = plan.mesh.numRanks();
  if (flags.world != 0 && flags.world != meshRanks)
    throw std::invalid_argument(
        "--world " + std::to_string(flags.world) +
        " differs from the plan's "
        "mesh of " +
        std::to_string(meshRanks) +
        " ranks; a plan is compiled for its mesh, so compile it for a mesh "
        "of " +
        std::to_string(flags.world) + " ranks to simulate that many");
  SimResult result = simulate(plan, config);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();

  if (plan.proto.has_training()) {
    const plan::Training &training = plan.proto.training();
    if (training.steps() > 1)
      out << "training plan: one call of " << training.steps()
          << " training steps simulated ("
          << (training.algorithm().empty() ? std::string("")
                                           : training.algorithm() + ", ")
          << "batch " << training.batch() << " x sequence "
          << training.sequence() << " = "
          << training.batch() * training.sequence() << " tokens per step)\n";
    else
      out << "training plan: one training step simulated (batch "
          << training.batch() << " x sequence " << training.sequence()
          << " = " << training.batch() * training.sequence() << " tokens)\n";
  }
  out << result.summary();
  char wall[96];
  std::snprintf(wall, sizeof(wall),
                "  (loading and simulating took %.3f s of wall time)\n",
                seconds);
  out << wall;
  if (!tracePath.empty()) {
    std::ofstream trace(tracePath);
    result.writeChromeTrace(trace);
    if (!trace)
      throw std::runtime_error("cannot write the trace '" + tracePath + "'");
  }
  if (!flags.svg.empty()) {
    std::ofstream svg(flags.svg);
    TimelineSvgOptions options;
    size_t slash = planPath.rfind('/');
    options.title =
        slash == std::string::npos ? planPath : planPath.substr(slash + 1);
    writeTimelineSvg(result, svg, options);
    if (!svg)
      throw std::runtime_error("cannot write the timeline '" + flags.svg + "'");
  }
  return 0;
}

void writeMeasuredSvg(const SimFlags &flags, const std::string &planPath,
                      const RunProfile &profile, const MeshShape &mesh,
                      const std::string &backend) {
  size_t slash = planPath.rfind('/');
  std::string name =
      slash == std::string::npos ? planPath : planPath.substr(slash + 1);
  std::string where = "measured on the " + backend + " backend, rank " +
                      std::to_string(profile.rank) + " of " +
                      std::to_string(mesh.numRanks());
  SimResult measured = measuredResult(profile, mesh, backend);
  TimelineSvgOptions measuredOptions;
  measuredOptions.title = "Measured: " + name;
  measuredOptions.where = where;
  std::ofstream svg(flags.svg);
  if (flags.compareSim.empty()) {
    writeTimelineSvg(measured, svg, measuredOptions);
  } else {
    SimConfig config;
    config.profile = resolveHardwareProfile(flags.compareSim);
    SimResult simulated = simulate(loadPlanForSimulation(planPath), config);
    TimelineSvgOptions simulatedOptions;
    simulatedOptions.title = "Simulated: " + name;
    writeStackedTimelineSvg(
        {{&measured, measuredOptions}, {&simulated, simulatedOptions}}, svg);
  }
  if (!svg)
    throw std::runtime_error("cannot write the timeline '" + flags.svg + "'");
}

} // namespace braid::rt
