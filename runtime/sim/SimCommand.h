//===- SimCommand.h - `braid-run --backend sim` -----------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The command-line side of the simulator, kept here so that braid-run only
// hands it the flags and the plan:
//
//   braid-run PLAN --backend sim --hw PROFILE [--nodes N] [--world N]
//             [--trace out.json] [--svg out.svg]
//   braid-run PLAN [--backend cpu|cuda] --svg out.svg [--compare-sim PROFILE]
//
// PROFILE is a name from runtime/profiles (dgx-h100, ...) or a path to a
// profile file. --nodes defaults to the fewest nodes that hold the plan's
// mesh. --world is the simulated world size: one rank's plan stands for
// every rank, and a plan is compiled for its mesh, so --world must equal the
// mesh size (it exists to state and check the size; to simulate more ranks,
// compile the plan for a larger mesh). Weights and inputs are not needed.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SIM_SIMCOMMAND_H
#define BRAID_RUNTIME_SIM_SIMCOMMAND_H

#include "runtime/comm/Communicator.h"
#include "runtime/exec/PlanSteps.h"
#include "runtime/exec/RunProfile.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace braid::rt {

/// The simulator's braid-run flags.
struct SimFlags {
  /// "cpu" (the default) or "sim".
  std::string backend = "cpu";
  std::string hw;
  int64_t nodes = 0;
  int64_t world = 0;
  std::string svg;
  /// A profile to simulate the plan on beside a measured run (--compare-sim).
  std::string compareSim;
  /// --rank-speeds: each rank's kernel time factor (empty: all 1).
  std::vector<double> rankSpeeds;
  /// braid-run's --optional-groups (parsed with the executors' options;
  /// braid-run copies it here): each rank's policy, the last for the rest.
  std::vector<OptionalPolicy> optionalPolicies;

  /// Whether a flag that only the sim backend reads was given.
  bool anySimOnlyFlag() const;
};

/// The lines braid-run's --help shows for these flags.
extern const char *const kSimUsage;

/// Removes --backend, --hw, --nodes, --world, --svg and --compare-sim (as "--flag value" or
/// "--flag=value") from argv, compacting it and updating argc, and returns
/// them. Throws std::invalid_argument, naming the flag, for a missing or
/// malformed value, an unknown backend, or a sim-only flag without
/// --backend sim.
SimFlags takeSimFlags(int &argc, char **argv);

/// Runs `planPath` in the simulator: prints the summary to `out`, writes
/// the Chrome trace to `tracePath` and the SVG to flags.svg when they are
/// not empty. Returns the exit status (0). Throws (PlanError, ProfileError,
/// std::invalid_argument, std::runtime_error) with a one-line message on any
/// error.
int runSimBackend(const SimFlags &flags, const std::string &planPath,
                  const std::string &tracePath, std::ostream &out);

/// Draws a measured run (one rank's profile, `backend` "cpu" or "cuda") into
/// flags.svg with the simulator's renderer; with flags.compareSim, the same
/// plan simulated on that profile below it. Throws with a one-line message.
void writeMeasuredSvg(const SimFlags &flags, const std::string &planPath,
                      const RunProfile &profile, const MeshShape &mesh,
                      const std::string &backend);

} // namespace braid::rt

#endif // BRAID_RUNTIME_SIM_SIMCOMMAND_H
