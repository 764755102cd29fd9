//===- Checkpoint.h - trained state saved and resumed -----------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// A checkpoint is a safetensors file holding every state weight of a
// training plan whole, under its weights-file name, with the metadata
//
//   braid_format        "1"
//   braid_step          the step a resumed run starts at (decimal)
//   braid_weights_file  the plan's weights_file (informational)
//
// Saving gathers each sharded state weight's shards from every rank through
// the communicator and places them by the weight's block and sharding (the
// loader's slicing, inverted); rank 0 writes the file atomically (FILE.tmp,
// fsync, rename). Resuming checks the file against the plan (every state
// weight present with its dtype and full shape, nothing else, braid_step
// present) before anything runs; the executors then slice it for their rank
// as they slice the weights file.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TRAIN_CHECKPOINT_H
#define BRAID_RUNTIME_TRAIN_CHECKPOINT_H

#include "runtime/plan/PlanLoader.h"
#include "runtime/weights/Safetensors.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt {

class TrainingDevice;

/// One state tensor of a plan: every plan weight of its name holds a block
/// (or all) of it.
struct StateTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  plan::WeightInit init = plan::FILE;
  /// Indices into the plan's weights.
  std::vector<int> weights;
};

/// The state tensors of `plan`, in the order of their first weight.
std::vector<StateTensor> stateTensors(const LoadedPlan &plan);

/// Checks a --resume checkpoint against `plan` and returns its braid_step.
/// Throws TrainingError naming the file and the tensor or metadata entry.
int64_t checkCheckpoint(const LoadedPlan &plan,
                        const SafetensorsFile &checkpoint);

/// A file written under a temporary name and renamed into place only when
/// complete, so that a reader never sees a partial file under `path`.
/// Without commit() the temporary is removed (`keepPartial`: kept, for a
/// log that is useful even when the run failed). A device or a pipe
/// (/dev/null) is written in place instead.
class AtomicFile {
public:
  /// Creates `path` + `suffix`; throws TrainingError.
  AtomicFile(std::string path, std::string suffix, bool keepPartial = false);
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  /// Appends bytes (one write, no buffering); throws TrainingError.
  void write(const void *data, size_t bytes);
  void write(const std::string &text) { write(text.data(), text.size()); }
  /// Flushes to disk, renames into place; throws TrainingError.
  void commit();
  const std::string &temporaryPath() const { return temporary_; }

private:
  std::string path_, temporary_;
  int fd_ = -1;
  bool keepPartial_ = false;
  /// The path is a device or a pipe: written in place, never renamed over.
  bool direct_ = false;
};

/// Gathers every state weight of `plan` whole on rank 0 and writes them to
/// `path` with braid_step = `nextStep`. Every rank must call it at the same
/// point (it runs collectives). A part of a state tensor that no weight of
/// the plan holds keeps its value from `resumed` (when given) or the
/// weights file or zeros. Throws TrainingError; on failure no file is left
/// at `path` (an existing one is untouched).
void saveCheckpoint(const LoadedPlan &plan, TrainingDevice &device,
                    const SafetensorsFile *weights,
                    const SafetensorsFile *resumed, int64_t nextStep,
                    const std::string &path);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TRAIN_CHECKPOINT_H
