//===- TokenData.cpp - token files and the batches read from them ---------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TokenData.h"

#include "runtime/core/MappedFile.h"

#include <cstring>

namespace braid::rt {

std::optional<TokenFormat> parseTokenFormat(std::string_view text) {
  if (text == "uint16")
    return TokenFormat::U16;
  if (text == "int32")
    return TokenFormat::I32;
  return std::nullopt;
}

std::string_view toString(TokenFormat format) {
  return format == TokenFormat::U16 ? "uint16" : "int32";
}

namespace {
size_t tokenBytes(TokenFormat format) {
  return format == TokenFormat::U16 ? 2 : 4;
}
} // namespace

void TokenFile::setBytes(std::shared_ptr<const uint8_t> bytes,
                         uint64_t byteCount) {
  size_t width = tokenBytes(format_);
  if (byteCount % width != 0)
    throw TrainingError("data file '" + path_ + "' has " +
                        std::to_string(byteCount) + " bytes, not a whole "
                        "number of " + std::string(toString(format_)) +
                        " token ids (" + std::to_string(width) +
                        " bytes each); is --data-dtype right?");
  bytes_ = std::move(bytes);
  size_ = static_cast<int64_t>(byteCount / width);
}

TokenFile TokenFile::open(const std::string &path, TokenFormat format) {
  TokenFile file;
  file.path_ = path;
  file.format_ = format;
  MappedFile mapped;
  try {
    mapped = mapFileReadOnly(path, "data file");
  } catch (const FileError &error) {
    throw TrainingError(error.what());
  }
  file.setBytes(std::move(mapped.bytes), mapped.size);
  return file;
}

TokenFile TokenFile::fromBytes(std::vector<uint8_t> bytes, TokenFormat format,
                               std::string name) {
  TokenFile file;
  file.path_ = std::move(name);
  file.format_ = format;
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  uint64_t count = owned->size();
  file.setBytes(std::shared_ptr<const uint8_t>(owned, owned->data()), count);
  return file;
}

int64_t TokenFile::token(int64_t index) const {
  const uint8_t *at = bytes_.get() + index * tokenBytes(format_);
  // Little-endian on every host.
  if (format_ == TokenFormat::U16)
    return static_cast<int64_t>(at[0]) | static_cast<int64_t>(at[1]) << 8;
  uint32_t bits = static_cast<uint32_t>(at[0]) |
                  static_cast<uint32_t>(at[1]) << 8 |
                  static_cast<uint32_t>(at[2]) << 16 |
                  static_cast<uint32_t>(at[3]) << 24;
  return static_cast<int32_t>(bits);
}

int64_t availableWindows(int64_t tokens, int64_t sequence) {
  if (sequence <= 0 || tokens <= sequence)
    return 0;
  return (tokens - 1) / sequence;
}

namespace {
/// SplitMix64's finalizer.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
} // namespace

WindowOrder::WindowOrder(int64_t windows, std::optional<uint64_t> seed)
    : windows_(windows), seed_(seed) {
  while (halfBits_ < 32 &&
         (uint64_t(1) << (2 * halfBits_)) < static_cast<uint64_t>(windows))
    ++halfBits_;
}

uint64_t WindowOrder::permute(uint64_t value) const {
  uint64_t mask = (uint64_t(1) << halfBits_) - 1;
  uint64_t left = value >> halfBits_, right = value & mask;
  for (uint64_t round = 0; round < 4; ++round) {
    uint64_t f = mix(*seed_ + (round + 1) * 0x9E3779B97F4A7C15ull + right) &
                 mask;
    uint64_t next = left ^ f;
    left = right;
    right = next;
  }
  return left << halfBits_ | right;
}

int64_t WindowOrder::window(int64_t index) const {
  if (!seed_)
    return index;
  // A permutation of [0, 2^2k) restricted to [0, windows) by walking its
  // cycle: every value inside the range is reached from exactly one.
  uint64_t value = permute(static_cast<uint64_t>(index));
  while (value >= static_cast<uint64_t>(windows_))
    value = permute(value);
  return static_cast<int64_t>(value);
}

namespace {
/// Stores `id` as element `index` of an I64 or I32 buffer.
void storeId(std::vector<uint8_t> &buffer, DType dtype, size_t index,
             int64_t id) {
  if (dtype == DType::I64) {
    std::memcpy(buffer.data() + index * 8, &id, 8);
    return;
  }
  int32_t narrow = static_cast<int32_t>(id);
  std::memcpy(buffer.data() + index * 4, &narrow, 4);
}
} // namespace

void fillBatch(const TokenFile &file, const WindowOrder &order, int64_t step,
               int64_t batch, int64_t sequence, BatchTypes types, Batch &out) {
  size_t count = static_cast<size_t>(batch * sequence);
  out.tokens.resize(count * byteSize(types.tokens));
  out.labels.resize(count * byteSize(types.labels));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t index = step * batch + b;
    if (index >= order.windows())
      throw TrainingError("data file '" + file.path() + "': step " +
                          std::to_string(step) + " row " + std::to_string(b) +
                          " needs window " + std::to_string(index) +
                          ", but the file holds " +
                          std::to_string(order.windows()));
    int64_t first = order.window(index) * sequence;
    size_t row = static_cast<size_t>(b * sequence);
    for (int64_t s = 0; s <= sequence; ++s) {
      int64_t id = file.token(first + s);
      if (id < 0)
        throw TrainingError("data file '" + file.path() + "': token " +
                            std::to_string(first + s) + " is " +
                            std::to_string(id) +
                            "; token ids are not negative");
      // Token s is input s and the label of position s - 1.
      if (s < sequence)
        storeId(out.tokens, types.tokens, row + s, id);
      if (s > 0)
        storeId(out.labels, types.labels, row + s - 1, id);
    }
  }
}

} // namespace braid::rt
