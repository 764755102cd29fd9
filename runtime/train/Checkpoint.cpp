//===- Checkpoint.cpp - trained state saved and resumed -------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Checkpoint.h"

#include "runtime/exec/KernelRegistry.h"
#include "runtime/train/TokenData.h"
#include "runtime/train/TrainingDevice.h"
#include "runtime/weights/WeightSharding.h"

#include <cerrno>
#include <cstring>
#include <map>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace braid::rt {

namespace {
const char *const kFormatKey = "braid_format";
const char *const kStepKey = "braid_step";
const char *const kWeightsFileKey = "braid_weights_file";
const char *const kFormat = "1";

std::string describe(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(toString(dtype)) + " " + shapeToString(shape);
}

DimAxes dimAxesOf(const plan::Weight &weight) {
  DimAxes dimAxes;
  for (const plan::DimSharding &dim : weight.sharding())
    dimAxes.emplace_back(dim.axes().begin(), dim.axes().end());
  return dimAxes;
}

bool isSharded(const DimAxes &dimAxes) {
  for (const std::vector<std::string> &axes : dimAxes)
    if (!axes.empty())
      return true;
  return false;
}

std::string systemError(const std::string &what, const std::string &path) {
  return "cannot " + what + " '" + path + "': " + std::strerror(errno);
}
} // namespace

std::vector<StateTensor> stateTensors(const LoadedPlan &plan) {
  std::vector<StateTensor> tensors;
  std::map<std::string, size_t> byName;
  for (int i = 0; i < plan.proto.weights_size(); ++i) {
    const plan::Weight &weight = plan.proto.weights(i);
    if (!weight.state())
      continue;
    auto [it, added] = byName.emplace(weight.name(), tensors.size());
    if (added) {
      StateTensor tensor;
      tensor.name = weight.name();
      tensor.dtype = plan.buffers[weight.buffer()].dtype;
      tensor.shape.assign(weight.full_shape().begin(),
                          weight.full_shape().end());
      tensor.init = weight.init();
      tensors.push_back(std::move(tensor));
    }
    tensors[it->second].weights.push_back(i);
  }
  return tensors;
}

int64_t checkCheckpoint(const LoadedPlan &plan,
                        const SafetensorsFile &checkpoint) {
  std::string file = "checkpoint '" + checkpoint.path() + "'";
  const std::map<std::string, std::string> &metadata = checkpoint.metadata();
  auto format = metadata.find(kFormatKey);
  if (format == metadata.end() || format->second != kFormat)
    throw TrainingError(file + " has no " + kFormatKey + " \"" + kFormat +
                        "\" in its metadata: it was not written by "
                        "braid-run --save");
  auto step = metadata.find(kStepKey);
  if (step == metadata.end())
    throw TrainingError(file + " has no " + kStepKey +
                        " in its metadata (the step to resume at)");
  const std::string &text = step->second;
  int64_t value = 0;
  bool valid = !text.empty() && text.size() <= 18;
  for (char c : text) {
    valid &= c >= '0' && c <= '9';
    value = value * 10 + (c - '0');
  }
  if (!valid)
    throw TrainingError(file + ": " + kStepKey + " \"" + text +
                        "\" is not a step number");

  std::vector<StateTensor> tensors = stateTensors(plan);
  if (tensors.empty())
    throw TrainingError(file + ": the plan has no state weights to resume");
  std::map<std::string, const StateTensor *> expected;
  for (const StateTensor &tensor : tensors) {
    expected[tensor.name] = &tensor;
    const SafetensorsTensor *stored = checkpoint.find(tensor.name);
    std::string want = "the plan's state weight is " +
                       describe(tensor.dtype, tensor.shape);
    if (!stored)
      throw TrainingError(file + " has no tensor '" + tensor.name + "' (" +
                          want + "): a checkpoint of another plan?");
    if (stored->dtype != tensor.dtype || stored->shape != tensor.shape)
      throw TrainingError(file + ": tensor '" + tensor.name + "' is " +
                          stored->dtypeName + " " +
                          shapeToString(stored->shape) + ", but " + want);
  }
  for (const SafetensorsTensor &stored : checkpoint.tensors())
    if (!expected.count(stored.name))
      throw TrainingError(file + " holds tensor '" + stored.name +
                          "', which is not a state weight of the plan: a "
                          "checkpoint of another plan?");
  return value;
}

AtomicFile::AtomicFile(std::string path, std::string suffix, bool keepPartial)
    : path_(std::move(path)), temporary_(path_ + suffix),
      keepPartial_(keepPartial) {
  // A device or a pipe (/dev/null) is written in place: renaming a
  // temporary over it would replace the device (as root, /dev/null
  // itself).
  struct stat status;
  if (::stat(path_.c_str(), &status) == 0 &&
      (S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode) ||
       S_ISFIFO(status.st_mode) || S_ISSOCK(status.st_mode))) {
    direct_ = true;
    temporary_ = path_;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
  } else {
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                 0644);
  }
  if (fd_ < 0)
    throw TrainingError(systemError("create", temporary_));
}

AtomicFile::~AtomicFile() {
  if (fd_ < 0)
    return;
  ::close(fd_);
  if (!keepPartial_ && !direct_)
    ::unlink(temporary_.c_str());
}

void AtomicFile::write(const void *data, size_t bytes) {
  const char *next = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t written = ::write(fd_, next, bytes);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      throw TrainingError(systemError("write", temporary_));
    next += written;
    bytes -= static_cast<size_t>(written);
  }
}

void AtomicFile::commit() {
  if (direct_) {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0)
      throw TrainingError(systemError("close", path_));
    return;
  }
  if (::fsync(fd_) != 0)
    throw TrainingError(systemError("flush", temporary_));
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    std::string error = systemError("close", temporary_);
    ::unlink(temporary_.c_str());
    throw TrainingError(error);
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    std::string error = "cannot rename '" + temporary_ + "' to '" + path_ +
                        "': " + std::strerror(errno);
    ::unlink(temporary_.c_str());
    throw TrainingError(error);
  }
  // The rename is durable once the folder is flushed too.
  size_t slash = path_.rfind('/');
  std::string folder = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
  int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

namespace {
/// The value a state tensor had before the plan ran: the resumed
/// checkpoint's, the weights file's, or zeros.
std::vector<uint8_t> initialValue(const StateTensor &tensor,
                                  const SafetensorsFile *weights,
                                  const SafetensorsFile *resumed) {
  uint64_t bytes = byteSize(tensor.dtype);
  for (int64_t size : tensor.shape)
    bytes *= static_cast<uint64_t>(size);
  const SafetensorsFile *source =
      resumed ? resumed : tensor.init == plan::FILE ? weights : nullptr;
  if (!source)
    return std::vector<uint8_t>(bytes, 0);
  const SafetensorsTensor *stored = source->find(tensor.name);
  if (!stored || stored->end - stored->begin != bytes)
    throw TrainingError("state weight '" + tensor.name + "' is not in '" +
                        source->path() + "' as the plan was checked against");
  const uint8_t *data = source->data(*stored);
  return std::vector<uint8_t>(data, data + bytes);
}
} // namespace

void saveCheckpoint(const LoadedPlan &plan, TrainingDevice &device,
                    const SafetensorsFile *weights,
                    const SafetensorsFile *resumed, int64_t nextStep,
                    const std::string &path) {
  bool writer = device.rank() == 0;
  int64_t ranks = plan.mesh.numRanks();
  std::vector<SafetensorsEntry> entries;
  for (const StateTensor &tensor : stateTensors(plan)) {
    SafetensorsEntry entry;
    entry.name = tensor.name;
    entry.dtype = tensor.dtype;
    entry.shape = tensor.shape;
    if (writer)
      entry.data = initialValue(tensor, weights, resumed);
    size_t element = byteSize(tensor.dtype);
    for (int index : tensor.weights) {
      const plan::Weight &weight = plan.proto.weights(index);
      const BufferInfo &buffer = plan.buffers[weight.buffer()];
      DimAxes dimAxes = dimAxesOf(weight);
      if (!isSharded(dimAxes)) {
        // Every rank holds the whole block: rank 0's copy is enough.
        if (writer)
          placeRegion(device.readBuffer(weight.buffer()).data(), tensor.shape,
                      element, weightBlock(weight), entry.data.data());
        continue;
      }
      std::vector<uint8_t> mine = device.readBuffer(weight.buffer());
      std::vector<uint8_t> all(mine.size() * static_cast<size_t>(ranks));
      int64_t count = 1;
      for (int64_t size : buffer.shape)
        count *= size;
      device.allGather(mine.data(), all.data(), count, buffer.dtype);
      if (!writer)
        continue;
      for (int64_t rank = 0; rank < ranks; ++rank)
        placeRegion(all.data() + rank * mine.size(), tensor.shape, element,
                    shardRegion(weightBlock(weight), dimAxes, plan.mesh, rank),
                    entry.data.data());
    }
    if (writer)
      entries.push_back(std::move(entry));
  }
  if (!writer)
    return;
  std::map<std::string, std::string> metadata = {
      {kFormatKey, kFormat},
      {kStepKey, std::to_string(nextStep)},
      {kWeightsFileKey, plan.proto.weights_file()}};
  AtomicFile file(path, ".tmp");
  file.write(safetensorsHeader(entries, metadata));
  for (const SafetensorsEntry &entry : entries)
    file.write(entry.data.data(), entry.data.size());
  file.commit();
}

} // namespace braid::rt
