//===- TrainingLoop.h - braid-run --steps -----------------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Runs a training plan for steps [first, steps): each step fills the token
// and label inputs from the token file (TokenData.h), runs the plan once
// (weights stay resident; state weights are updated in place by the plan)
// and reads the loss. The next step's batch is prepared on a second thread
// while the step runs. Rank 0 writes the loss log (`step,loss`, one row per
// step, absolute step numbers, flushed each row) under LOG.partial and
// renames it to LOG after the last step, and writes checkpoints
// (Checkpoint.h) every `saveEvery` steps and after the last one.
//
// Everything that can be checked is checked when the run is prepared,
// before any step runs or any file is written: the plan is a training plan,
// the data holds every window up to `steps`, the checkpoint matches the
// plan, every other input has data.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TRAIN_TRAININGLOOP_H
#define BRAID_RUNTIME_TRAIN_TRAININGLOOP_H

#include "runtime/plan/PlanLoader.h"
#include "runtime/train/TokenData.h"

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace braid::rt {

class SafetensorsFile;
class TrainingDevice;

struct TrainingOptions {
  /// The step after the last one to run (absolute: a run resumed at step 10
  /// with steps = 20 runs steps 10..19).
  int64_t steps = 0;
  /// `step,loss` CSV (rank 0); empty: none.
  std::string lossLog;
  /// Checkpoint file (rank 0); empty: none.
  std::string save;
  /// Also save after every step t with (t + 1) % saveEvery == 0; 0: only
  /// after the last step.
  int64_t saveEvery = 0;
  std::optional<uint64_t> shuffleSeed;
  /// Data for the plan's inputs other than tokens and labels, by name (the
  /// same every step).
  std::map<std::string, std::vector<uint8_t>> fixedInputs;
  /// Print a progress line (rank 0) after every step.
  bool progress = false;
};

/// What a run did, for its summary line.
struct TrainingSummary {
  int64_t firstStep = 0, endStep = 0;
  int64_t tokensPerStep = 0;
  float lastLoss = 0;
  /// Wall time of the steps (inputs in, run, loss out), of checkpoints, of
  /// preparing batches (on the second thread, except the first) and of
  /// waiting for a batch that was not ready when its step could start.
  double stepSeconds = 0, saveSeconds = 0, prepareSeconds = 0,
         waitSeconds = 0;
  uint64_t arenaBytes = 0;
  int64_t checkpoints = 0;
  /// With a run-time micro-batch count (the plan's ran output): the
  /// micro-batches the ranks ran, summed over ranks and steps, and the
  /// ranks; -1 without one.
  int64_t microBatchesRun = -1;
  int64_t ranks = 1;

  /// "trained steps 0..19 ...": the final lines braid-run prints.
  std::string format() const;
};

/// A checked training run of one plan on one rank.
class TrainingRun {
public:
  /// Checks everything before anything runs (see the file comment); throws
  /// TrainingError. `plan`, `data`, `weights` and `resumed` must outlive the
  /// run; `resumed` is the --resume checkpoint (null: none), whose
  /// braid_step becomes the first step.
  TrainingRun(const LoadedPlan &plan, const TokenFile &data,
              TrainingOptions options, const SafetensorsFile *weights,
              const SafetensorsFile *resumed);

  int64_t firstStep() const { return firstStep_; }

  /// Runs the steps on `device` (whose executor was made with the resumed
  /// checkpoint, if any). Rank 0 prints the progress line to `progress`.
  /// Throws TrainingError, or what the device throws.
  TrainingSummary run(TrainingDevice &device, std::ostream &progress);

private:
  const LoadedPlan &plan_;
  const TokenFile &data_;
  TrainingOptions options_;
  const SafetensorsFile *weights_;
  const SafetensorsFile *resumed_;
  int64_t firstStep_ = 0;
  /// Steps one call of the plan runs (Training.steps, at least 1).
  int64_t perCall_ = 1;
  WindowOrder order_;
  BatchTypes types_;
  uint32_t lossBuffer_ = 0;
  /// The plan's ran output (a run-time micro-batch count), if any.
  std::optional<uint32_t> ranBuffer_;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_TRAIN_TRAININGLOOP_H
