//===- TrainingLoop.cpp - braid-run --steps -------------------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TrainingLoop.h"

#include "runtime/exec/PlanSteps.h"
#include "runtime/train/Checkpoint.h"
#include "runtime/train/TrainingDevice.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace braid::rt {

namespace {
using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// "1:02:03" or "2:03".
std::string formatDuration(double seconds) {
  long long total = static_cast<long long>(seconds + 0.5);
  char text[48];
  if (total >= 3600)
    std::snprintf(text, sizeof(text), "%lld:%02lld:%02lld", total / 3600,
                  total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof(text), "%lld:%02lld", total / 60, total % 60);
  return text;
}

/// Reads batches on a thread of its own, one at a time: start(step) hands
/// it a step, take() waits for that batch.
class BatchReader {
public:
  explicit BatchReader(std::function<void(int64_t, Batch &)> read)
      : read_(std::move(read)), thread_([this] { loop(); }) {}
  ~BatchReader() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  void start(int64_t step) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      step_ = step;
      pending_ = true;
    }
    changed_.notify_all();
  }

  /// Waits for the batch of the last start() and swaps it into `batch` (the
  /// old contents become the reader's next buffer); rethrows its error.
  /// Returns the seconds the reader spent on it.
  double take(Batch &batch) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !pending_; });
    if (error_)
      std::rethrow_exception(std::exchange(error_, nullptr));
    std::swap(batch, batch_);
    return seconds_;
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      changed_.wait(lock, [this] { return stop_ || pending_; });
      if (stop_)
        return;
      int64_t step = step_;
      // batch_ is the reader's while a read is pending.
      lock.unlock();
      Clock::time_point begin = Clock::now();
      std::exception_ptr error;
      try {
        read_(step, batch_);
      } catch (...) {
        error = std::current_exception();
      }
      double seconds = secondsSince(begin);
      lock.lock();
      error_ = error;
      seconds_ = seconds;
      pending_ = false;
      changed_.notify_all();
    }
  }

  std::function<void(int64_t, Batch &)> read_;
  std::mutex mutex_;
  std::condition_variable changed_;
  Batch batch_;
  int64_t step_ = 0;
  bool pending_ = false, stop_ = false;
  double seconds_ = 0;
  std::exception_ptr error_;
  std::thread thread_;
};
} // namespace

TrainingRun::TrainingRun(const LoadedPlan &plan, const TokenFile &data,
                         TrainingOptions options,
                         const SafetensorsFile *weights,
                         const SafetensorsFile *resumed)
    : plan_(plan), data_(data), options_(std::move(options)),
      weights_(weights), resumed_(resumed), order_(0, std::nullopt) {
  const plan::Plan &proto = plan.proto;
  if (!proto.has_training())
    throw TrainingError("the plan is not a training plan (it has no "
                        "training section); --steps runs plans compiled with "
                        "braidc --train");
  const plan::Training &training = proto.training();
  int64_t batch = training.batch(), sequence = training.sequence();
  perCall_ = std::max<int64_t>(training.steps(), 1);
  int64_t perCall = perCall_;
  if (options_.steps <= 0)
    throw TrainingError("--steps must be positive");
  if (options_.saveEvery < 0)
    throw TrainingError("--save-every must not be negative");
  if (training.algorithm() == "cocod-sgd" &&
      (!options_.save.empty() || resumed))
    throw TrainingError(
        "the plan trains with CoCoD-SGD: its ranks hold different "
        "parameters between averagings, so one checkpoint of them is not "
        "the run's state; --save and --resume are not supported for it yet");
  if (options_.steps % perCall != 0) {
    std::string why = training.algorithm() == "cocod-sgd" ? "cocod-sgd period"
                      : training.algorithm() == "acco"
                          ? "acco: two rounds of micro-batches"
                          : "micro-batches accumulated per step";
    throw TrainingError("--steps " + std::to_string(options_.steps) +
                        ": the plan runs " + std::to_string(perCall) +
                        " steps per call (" + why +
                        "), so --steps must be a multiple of " +
                        std::to_string(perCall));
  }
  if (options_.saveEvery % perCall != 0)
    throw TrainingError("--save-every " + std::to_string(options_.saveEvery) +
                        " must be a multiple of the plan's " +
                        std::to_string(perCall) + " steps per call");
  if (!options_.save.empty() && stateTensors(plan).empty())
    throw TrainingError("--save: the plan has no state weights to save");
  if (resumed) {
    firstStep_ = checkCheckpoint(plan, *resumed);
    if (firstStep_ % perCall != 0)
      throw TrainingError("checkpoint '" + resumed->path() +
                          "' resumes at step " + std::to_string(firstStep_) +
                          ", which does not start a call of the plan's " +
                          std::to_string(perCall) + " steps");
    if (firstStep_ >= options_.steps)
      throw TrainingError(
          "checkpoint '" + resumed->path() + "' resumes at step " +
          std::to_string(firstStep_) + ", but --steps " +
          std::to_string(options_.steps) +
          " ends before it (--steps counts from step 0, not from the "
          "checkpoint)");
  }

  int64_t windows = availableWindows(data.size(), sequence);
  __int128 needed = static_cast<__int128>(options_.steps) * batch;
  if (needed > windows) {
    auto count = [](__int128 value) {
      return value > INT64_MAX ? std::string("more than 2^63")
                               : std::to_string(static_cast<int64_t>(value));
    };
    throw TrainingError(
        "data file '" + data.path() + "' holds " + std::to_string(data.size()) +
        " tokens, " + std::to_string(windows) + " windows of " +
        std::to_string(sequence) + " + 1 tokens; " +
        std::to_string(options_.steps) + " steps of batch " +
        std::to_string(batch) + " need " + count(needed) +
        " windows, at least " + count(needed * sequence + 1) + " tokens");
  }
  order_ = WindowOrder(windows, options_.shuffleSeed);
  types_.tokens =
      plan.buffers[bindingBuffer(plan, training.tokens_input(), true)].dtype;
  types_.labels =
      plan.buffers[bindingBuffer(plan, training.labels_input(), true)].dtype;
  lossBuffer_ = bindingBuffer(plan, training.loss_output(), false);
  if (!training.ran_output().empty())
    ranBuffer_ = bindingBuffer(plan, training.ran_output(), false);

  for (const auto &[name, bytes] : options_.fixedInputs) {
    if (name == training.tokens_input() || name == training.labels_input())
      throw TrainingError("input '" + name +
                          "' is filled from the data file in a training "
                          "run; give no other data for it");
    uint32_t buffer;
    try {
      buffer = bindingBuffer(plan, name, true);
    } catch (const std::invalid_argument &) {
      throw TrainingError("the plan has no input '" + name + "'");
    }
    if (bytes.size() != plan.buffers[buffer].bytes)
      throw TrainingError("input '" + name + "' needs " +
                          std::to_string(plan.buffers[buffer].bytes) +
                          " bytes, not " + std::to_string(bytes.size()));
  }
  for (const plan::Binding &input : proto.inputs()) {
    const std::string &name = input.name();
    if (name != training.tokens_input() && name != training.labels_input() &&
        !options_.fixedInputs.count(name))
      throw TrainingError("input '" + name +
                          "' has no data: a training run fills only the "
                          "tokens and labels; give the others with --input " +
                          name + "=FILE");
  }
}

TrainingSummary TrainingRun::run(TrainingDevice &device,
                                 std::ostream &progress) {
  const plan::Training &training = plan_.proto.training();
  int64_t batch = training.batch(), sequence = training.sequence();
  // A call of the plan runs `perCall` steps: its inputs hold their batches
  // one after the other, which are the windows of one batch of perCall *
  // batch rows at call index step / perCall.
  int64_t perCall = perCall_;
  bool writer = device.rank() == 0;
  TrainingSummary summary;
  summary.firstStep = summary.endStep = firstStep_;
  summary.tokensPerStep = batch * sequence;
  summary.arenaBytes = plan_.proto.arena_bytes();
  if (ranBuffer_) {
    summary.microBatchesRun = 0;
    summary.ranks = plan_.mesh.numRanks();
  }

  // Files are created only now that everything is checked; a checkpoint
  // that cannot be created fails before the first step, not after the last.
  std::unique_ptr<AtomicFile> log;
  if (writer && !options_.save.empty())
    AtomicFile probe(options_.save, ".tmp");
  if (writer && !options_.lossLog.empty()) {
    log = std::make_unique<AtomicFile>(options_.lossLog, ".partial",
                                       /*keepPartial=*/true);
    log->write("step,loss\n");
  }

  Batch current;
  Clock::time_point start = Clock::now();
  fillBatch(data_, order_, firstStep_ / perCall, perCall * batch, sequence,
            types_, current);
  summary.prepareSeconds += secondsSince(start);
  // The next batch is read on a second thread while a step runs.
  BatchReader reader([&](int64_t step, Batch &out) {
    fillBatch(data_, order_, step / perCall, perCall * batch, sequence,
              types_, out);
  });
  Clock::time_point lastPrint;
  for (int64_t call = firstStep_; call < options_.steps; call += perCall) {
    Clock::time_point stepStart = Clock::now();
    device.setInput(training.tokens_input(), current.tokens.data(),
                    current.tokens.size());
    device.setInput(training.labels_input(), current.labels.data(),
                    current.labels.size());
    for (const auto &[name, bytes] : options_.fixedInputs)
      device.setInput(name, bytes.data(), bytes.size());
    bool more = call + perCall < options_.steps;
    if (more)
      reader.start(call + perCall);
    device.run();
    Clock::time_point ran = Clock::now();
    if (more)
      summary.prepareSeconds += reader.take(current);
    summary.waitSeconds += secondsSince(ran);

    std::vector<uint8_t> lossBytes = device.readBuffer(lossBuffer_);
    std::vector<float> losses(perCall);
    std::memcpy(losses.data(), lossBytes.data(), perCall * sizeof(float));
    // With a run-time micro-batch count, the ranks that ran each step (a
    // step no rank ran is no step of the run: not logged).
    std::vector<float> ranks(perCall, 1.0f);
    if (ranBuffer_) {
      std::vector<uint8_t> ranBytes = device.readBuffer(*ranBuffer_);
      std::memcpy(ranks.data(), ranBytes.data(), perCall * sizeof(float));
    }
    float loss = losses.back();
    for (int64_t k = 0; k < perCall && ranBuffer_; ++k)
      if (ranks[k] > 0) {
        loss = losses[k];
        summary.microBatchesRun += static_cast<int64_t>(ranks[k] + 0.5f);
      }
    int64_t step = call + perCall - 1;
    summary.stepSeconds += secondsSince(stepStart);
    summary.lastLoss = loss;
    summary.endStep = step + 1;

    if (log) {
      for (int64_t k = 0; k < perCall; ++k) {
        if (ranks[k] <= 0)
          continue;
        char row[64];
        std::snprintf(row, sizeof(row), "%lld,%.9g\n",
                      static_cast<long long>(call + k), losses[k]);
        log->write(row);
      }
    }
    if (writer && options_.progress &&
        (step + 1 == options_.steps ||
         secondsSince(lastPrint) >= 0.1)) {
      lastPrint = Clock::now();
      int64_t done = step + 1 - firstStep_;
      double perStep = summary.stepSeconds / done;
      char line[160];
      std::snprintf(line, sizeof(line),
                    "\rstep %lld/%lld  loss %.6g  %.0f tokens/s  ETA %s\033[K",
                    static_cast<long long>(step + 1),
                    static_cast<long long>(options_.steps), loss,
                    summary.tokensPerStep / perStep,
                    formatDuration(perStep * (options_.steps - step - 1))
                        .c_str());
      progress << line << std::flush;
    }
    bool last = step + 1 == options_.steps;
    bool every =
        options_.saveEvery > 0 && (step + 1) % options_.saveEvery == 0;
    if (!options_.save.empty() && (last || every)) {
      Clock::time_point saveStart = Clock::now();
      saveCheckpoint(plan_, device, weights_, resumed_, step + 1,
                     options_.save);
      summary.saveSeconds += secondsSince(saveStart);
      ++summary.checkpoints;
    }
  }
  if (writer && options_.progress)
    progress << "\n";
  if (log)
    log->commit();
  return summary;
}

std::string TrainingSummary::format() const {
  int64_t steps = endStep - firstStep;
  char text[512];
  std::snprintf(
      text, sizeof(text),
      "trained steps %lld..%lld (%lld steps of %lld tokens) in %.3f s: "
      "%.1f steps/s, %.0f tokens/s; final loss %.9g\n"
      "  peak arena %llu bytes per step (the plan's arena)\n"
      "  input pipeline: each next batch read on a second thread while its "
      "step ran (%.3f s reading in all, %.3f s of steps waiting for it)\n",
      static_cast<long long>(firstStep), static_cast<long long>(endStep - 1),
      static_cast<long long>(steps), static_cast<long long>(tokensPerStep),
      stepSeconds, stepSeconds > 0 ? steps / stepSeconds : 0.0,
      stepSeconds > 0 ? steps * tokensPerStep / stepSeconds : 0.0,
      static_cast<double>(lastLoss),
      static_cast<unsigned long long>(arenaBytes), prepareSeconds,
      waitSeconds);
  std::string result = text;
  if (microBatchesRun >= 0) {
    std::snprintf(text, sizeof(text),
                  "  run-time micro-batch count: %lld micro-batches run over "
                  "the ranks, of %lld slots (%lld per rank)\n",
                  static_cast<long long>(microBatchesRun),
                  static_cast<long long>(steps * ranks),
                  static_cast<long long>(steps));
    result += text;
  }
  if (checkpoints > 0) {
    std::snprintf(text, sizeof(text), "  checkpoints: %lld in %.3f s\n",
                  static_cast<long long>(checkpoints), saveSeconds);
    result += text;
  }
  return result;
}

} // namespace braid::rt
