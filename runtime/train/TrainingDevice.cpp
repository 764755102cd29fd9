//===- TrainingDevice.cpp - the CPU backend's training device -------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TrainingDevice.h"

#include "runtime/comm/Communicator.h"
#include "runtime/exec/Executor.h"

#include <cstring>
#include <stdexcept>

namespace braid::rt {

int64_t ExecutorDevice::rank() const { return comm_.rank(); }

void ExecutorDevice::setInput(const std::string &name, const void *data,
                              size_t bytes) {
  TensorView view = executor_.input(name);
  if (view.numBytes() != bytes)
    throw std::invalid_argument("input '" + name + "' holds " +
                                std::to_string(view.numBytes()) +
                                " bytes, not " + std::to_string(bytes));
  std::memcpy(view.data, data, bytes);
}

void ExecutorDevice::run() { executor_.run(); }

std::vector<uint8_t> ExecutorDevice::readBuffer(uint32_t id) {
  TensorView view = executor_.buffer(id);
  const auto *begin = static_cast<const uint8_t *>(view.data);
  return std::vector<uint8_t>(begin, begin + view.numBytes());
}

void ExecutorDevice::allGather(const void *in, void *out, int64_t count,
                               DType dtype) {
  comm_.allGather(comm_.mesh().axisNames, in, out, count, dtype);
}

} // namespace braid::rt
