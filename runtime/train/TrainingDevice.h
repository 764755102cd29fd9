//===- TrainingDevice.h - what the training loop needs of a backend -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The training loop and checkpoints run on any backend through this
// interface: fill an input, run one step, copy a buffer to the host, and
// gather equal-sized blocks from every rank. ExecutorDevice is the CPU
// backend's (the Executor and its Communicator); braid-run has the CUDA
// one.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TRAIN_TRAININGDEVICE_H
#define BRAID_RUNTIME_TRAIN_TRAININGDEVICE_H

#include "runtime/core/DType.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt {

class Communicator;
class Executor;

/// One rank's executor of a training plan, as the training loop uses it.
class TrainingDevice {
public:
  virtual ~TrainingDevice() = default;

  virtual int64_t rank() const = 0;
  /// Copies `bytes` host bytes (the binding's exact size) into the input
  /// binding `name`.
  virtual void setInput(const std::string &name, const void *data,
                        size_t bytes) = 0;
  /// Runs the plan once: one training step.
  virtual void run() = 0;
  /// Copies buffer `id` to the host.
  virtual std::vector<uint8_t> readBuffer(uint32_t id) = 0;
  /// Gathers `count` elements of `dtype` from every rank of the mesh: `out`
  /// receives one block per rank, in rank order, on every rank.
  virtual void allGather(const void *in, void *out, int64_t count,
                         DType dtype) = 0;
};

/// The CPU backend: an Executor and the Communicator it runs on (both must
/// outlive the device).
class ExecutorDevice final : public TrainingDevice {
public:
  ExecutorDevice(Executor &executor, Communicator &comm)
      : executor_(executor), comm_(comm) {}

  int64_t rank() const override;
  void setInput(const std::string &name, const void *data,
                size_t bytes) override;
  void run() override;
  std::vector<uint8_t> readBuffer(uint32_t id) override;
  void allGather(const void *in, void *out, int64_t count,
                 DType dtype) override;

private:
  Executor &executor_;
  Communicator &comm_;
};

} // namespace braid::rt

#endif // BRAID_RUNTIME_TRAIN_TRAININGDEVICE_H
