//===- TokenData.h - token files and the batches read from them -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The data of a training run is one flat file of little-endian token ids
// (nanoGPT's .bin layout: uint16 by default, or int32), memory-mapped.
// With batch B and sequence S, row b of step t reads window
// w = order(t * B + b):
//
//   x = tokens[w * S : w * S + S + 1],  input_ids = x[:-1],  labels = x[1:]
//
// A file of T tokens holds (T - 1) / S windows (rounded down). `order` is
// the identity, or with a shuffle seed a fixed permutation of all windows
// (WindowOrder). A run of N steps needs N * B windows; there are no epochs.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_TRAIN_TOKENDATA_H
#define BRAID_RUNTIME_TRAIN_TOKENDATA_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace braid::rt {

/// Bad training data or options: the message names the file and the
/// problem.
class TrainingError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// How token ids are stored in a data file.
enum class TokenFormat { U16, I32 };

/// "uint16" or "int32" (the --data-dtype spellings); nullopt otherwise.
std::optional<TokenFormat> parseTokenFormat(std::string_view text);
std::string_view toString(TokenFormat format);

/// A read-only file of token ids.
class TokenFile {
public:
  /// Maps the file at `path`; throws TrainingError when it cannot be read or
  /// its size is not a whole number of ids.
  static TokenFile open(const std::string &path, TokenFormat format);
  /// A file held in memory (tests); same checks.
  static TokenFile fromBytes(std::vector<uint8_t> bytes, TokenFormat format,
                             std::string name = "<memory>");

  const std::string &path() const { return path_; }
  TokenFormat format() const { return format_; }
  /// The number of tokens.
  int64_t size() const { return size_; }
  /// Token `index` (< size()), as stored (an int32 file may hold negative
  /// ids; fillBatch rejects them).
  int64_t token(int64_t index) const;

private:
  TokenFile() = default;
  void setBytes(std::shared_ptr<const uint8_t> bytes, uint64_t byteCount);

  std::string path_;
  TokenFormat format_ = TokenFormat::U16;
  std::shared_ptr<const uint8_t> bytes_;
  int64_t size_ = 0;
};

/// The windows of `sequence` + 1 tokens at stride `sequence` that a file of
/// `tokens` tokens holds.
int64_t availableWindows(int64_t tokens, int64_t sequence);

/// The order in which a run reads the windows: the identity, or a
/// permutation of [0, windows) fixed by a seed. The permutation is a
/// four-round balanced Feistel network on the smallest even number of bits
/// 2k >= 2 with 2^2k >= windows, walked until it lands inside [0, windows)
/// (cycle walking); round r maps the halves (L, R) to (R, L xor F_r(R))
/// with F_r(R) = mix(seed + (r + 1) * 0x9E3779B97F4A7C15 + R) mod 2^k, and
/// mix is SplitMix64's finalizer. docs: runtime/README.md.
class WindowOrder {
public:
  WindowOrder(int64_t windows, std::optional<uint64_t> seed);
  /// The window that read number `index` (< windows) uses.
  int64_t window(int64_t index) const;
  int64_t windows() const { return windows_; }

private:
  uint64_t permute(uint64_t value) const;

  int64_t windows_ = 0;
  std::optional<uint64_t> seed_;
  unsigned halfBits_ = 1;
};

/// The host bytes of one step's token and label inputs.
struct Batch {
  std::vector<uint8_t> tokens, labels;
};

/// Element types of the token and label inputs (each I64 or I32).
struct BatchTypes {
  DType tokens = DType::I64, labels = DType::I64;
};

/// Fills `out` with step `step`'s [batch, sequence] token ids and labels.
/// Throws TrainingError naming the file and the position of a negative id,
/// or the window the file does not hold.
void fillBatch(const TokenFile &file, const WindowOrder &order, int64_t step,
               int64_t batch, int64_t sequence, BatchTypes types, Batch &out);

} // namespace braid::rt

#endif // BRAID_RUNTIME_TRAIN_TOKENDATA_H
