//===- Safetensors.h - reading .safetensors weight files --------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The safetensors format: an 8-byte little-endian header size N, N bytes of
// JSON mapping tensor names to {"dtype", "shape", "data_offsets": [begin,
// end]} (offsets relative to the data that follows the header) plus an
// optional "__metadata__" object of strings, then the data. Opening a file
// validates all of it: every offset inside the file, byte sizes equal to
// shape times element size, no two tensors overlapping, dtypes known. The
// file is memory-mapped, so opening a large file reads only its header.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_WEIGHTS_SAFETENSORS_H
#define BRAID_RUNTIME_WEIGHTS_SAFETENSORS_H

#include "runtime/core/DType.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace braid::rt {

/// A weights file that is malformed; the message names the file, the tensor
/// and the field.
class WeightsError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// One tensor listed in a safetensors header.
struct SafetensorsTensor {
  std::string name;
  /// The dtype as spelled in the file ("F32", "BF16", "F64", ...).
  std::string dtypeName;
  /// The Braid element type, or nullopt for a valid safetensors dtype that
  /// Braid buffers cannot hold (F64, I8, U8, ...): such a tensor may sit in
  /// the file but not be used by a plan.
  std::optional<DType> dtype;
  std::vector<int64_t> shape;
  /// Byte range in the data section.
  uint64_t begin = 0;
  uint64_t end = 0;
};

/// A validated, read-only safetensors file.
class SafetensorsFile {
public:
  /// Maps and validates the file at `path`; throws WeightsError. `role`
  /// names the file in messages ("checkpoint").
  static SafetensorsFile open(const std::string &path,
                              const std::string &role = "weights file");
  /// Validates an in-memory file (tests, fuzzing); throws WeightsError.
  static SafetensorsFile fromBytes(std::vector<uint8_t> bytes,
                                   std::string name = "<memory>");

  /// The path given to open(), or the name given to fromBytes().
  const std::string &path() const { return path_; }
  /// Tensors in name order.
  const std::vector<SafetensorsTensor> &tensors() const { return tensors_; }
  /// The tensor named `name`, or null.
  const SafetensorsTensor *find(std::string_view name) const;
  /// The first byte of `tensor`'s data.
  const uint8_t *data(const SafetensorsTensor &tensor) const;
  /// Drops the mapped pages that hold only `tensor`'s first `bytes` bytes
  /// of data (all of it by default) from this process's memory; they are
  /// read from the file again if touched. A loader calls it as it copies a
  /// weight, so that the file does not count in the peak memory beside the
  /// copy. Nothing for fromBytes().
  void release(const SafetensorsTensor &tensor,
               uint64_t bytes = UINT64_MAX) const;
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

private:
  SafetensorsFile() = default;
  void parse();

  std::string path_;
  std::string role_ = "weights file";
  /// The whole file (mapped or owned); shared so that copies stay cheap.
  std::shared_ptr<const uint8_t> bytes_;
  bool mapped_ = false;
  uint64_t size_ = 0;
  uint64_t dataStart_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

/// A tensor to write: name, dtype, shape and its little-endian bytes.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// Encodes tensors as a safetensors file (in the order given), with
/// `metadata` as its "__metadata__" object (none when empty).
std::vector<uint8_t>
encodeSafetensors(const std::vector<SafetensorsEntry> &entries,
                  const std::map<std::string, std::string> &metadata = {});

/// The first bytes of that file: the 8-byte header size and the JSON header,
/// padded; the entries' data follows in order (for writers that stream it).
std::string
safetensorsHeader(const std::vector<SafetensorsEntry> &entries,
                  const std::map<std::string, std::string> &metadata = {});

/// The safetensors spelling of `dtype` ("F32", "BF16", "BOOL", ...).
std::string_view safetensorsDTypeName(DType dtype);

} // namespace braid::rt

#endif // BRAID_RUNTIME_WEIGHTS_SAFETENSORS_H
