//===- Safetensors.cpp - reading .safetensors weight files ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/weights/Safetensors.h"

#include "runtime/core/MappedFile.h"
#include "runtime/core/Shape.h"

#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace braid::rt {

namespace {
using nlohmann::json;

struct DTypeSpelling {
  const char *name;
  std::optional<DType> dtype;
  uint64_t bytes;
};

/// Every dtype of the safetensors format; those without a Braid element type
/// are valid in a file but cannot be loaded into a buffer.
const DTypeSpelling kDTypes[] = {
    {"F32", DType::F32, 4},       {"F16", DType::F16, 2},
    {"BF16", DType::BF16, 2},     {"I64", DType::I64, 8},
    {"I32", DType::I32, 4},       {"BOOL", DType::I1, 1},
    {"F64", std::nullopt, 8},     {"I16", std::nullopt, 2},
    {"I8", std::nullopt, 1},      {"U8", std::nullopt, 1},
    {"U16", std::nullopt, 2},     {"U32", std::nullopt, 4},
    {"U64", std::nullopt, 8},     {"F8_E4M3", std::nullopt, 1},
    {"F8_E5M2", std::nullopt, 1},
};

const DTypeSpelling *findDType(const std::string &name) {
  for (const DTypeSpelling &spelling : kDTypes)
    if (name == spelling.name)
      return &spelling;
  return nullptr;
}

/// Reads a JSON number that must be a non-negative integer.
std::optional<uint64_t> asUnsigned(const json &value) {
  if (value.is_number_unsigned())
    return value.get<uint64_t>();
  if (value.is_number_integer()) {
    int64_t v = value.get<int64_t>();
    if (v >= 0)
      return static_cast<uint64_t>(v);
  }
  return std::nullopt;
}

} // namespace

SafetensorsFile SafetensorsFile::open(const std::string &path,
                                      const std::string &role) {
  SafetensorsFile file;
  file.path_ = path;
  file.role_ = role;
  MappedFile mapped;
  try {
    mapped = mapFileReadOnly(path, role);
  } catch (const FileError &error) {
    throw WeightsError(error.what());
  }
  if (mapped.size < 8)
    throw WeightsError(role + " '" + path + "' has " +
                       std::to_string(mapped.size) +
                       " bytes, fewer than the 8-byte header size");
  file.bytes_ = std::move(mapped.bytes);
  file.mapped_ = true;
  file.size_ = mapped.size;
  file.parse();
  return file;
}

SafetensorsFile SafetensorsFile::fromBytes(std::vector<uint8_t> bytes,
                                           std::string name) {
  SafetensorsFile file;
  file.path_ = std::move(name);
  file.size_ = bytes.size();
  auto owner = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  file.bytes_ = std::shared_ptr<const uint8_t>(owner, owner->data());
  file.parse();
  return file;
}

void SafetensorsFile::parse() {
  auto fail = [&](const std::string &problem) -> WeightsError {
    return WeightsError(role_ + " '" + path_ + "': " + problem);
  };
  if (size_ < 8)
    throw fail("has " + std::to_string(size_) +
               " bytes, fewer than the 8-byte header size");
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | bytes_.get()[i];
  if (headerSize > size_ - 8)
    throw fail("header size " + std::to_string(headerSize) +
               " runs past the end of the file (" + std::to_string(size_) +
               " bytes)");
  dataStart_ = 8 + headerSize;
  uint64_t dataSize = size_ - dataStart_;

  const char *text = reinterpret_cast<const char *>(bytes_.get() + 8);
  json header = json::parse(text, text + headerSize, /*cb=*/nullptr,
                            /*allow_exceptions=*/false);
  if (header.is_discarded())
    throw fail("header is not valid JSON");
  if (!header.is_object())
    throw fail("header is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string &name = it.key();
    const json &entry = it.value();
    if (name == "__metadata__") {
      if (!entry.is_object())
        throw fail("__metadata__ is not an object");
      for (auto m = entry.begin(); m != entry.end(); ++m) {
        if (!m.value().is_string())
          throw fail("__metadata__ value '" + m.key() + "' is not a string");
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string &problem) {
      return fail("tensor '" + name + "': " + problem);
    };
    if (!entry.is_object())
      throw bad("entry is not an object");
    auto dtypeIt = entry.find("dtype");
    auto shapeIt = entry.find("shape");
    auto offsetsIt = entry.find("data_offsets");
    if (dtypeIt == entry.end() || !dtypeIt->is_string())
      throw bad("'dtype' is missing or not a string");
    if (shapeIt == entry.end() || !shapeIt->is_array())
      throw bad("'shape' is missing or not an array");
    if (offsetsIt == entry.end() || !offsetsIt->is_array() ||
        offsetsIt->size() != 2)
      throw bad("'data_offsets' is missing or not a pair");

    SafetensorsTensor tensor;
    tensor.name = name;
    tensor.dtypeName = dtypeIt->get<std::string>();
    const DTypeSpelling *spelling = findDType(tensor.dtypeName);
    if (!spelling)
      throw bad("unknown dtype '" + tensor.dtypeName + "'");
    tensor.dtype = spelling->dtype;

    for (const json &dim : *shapeIt) {
      std::optional<uint64_t> size = asUnsigned(dim);
      if (!size || *size > static_cast<uint64_t>(INT64_MAX))
        throw bad("shape entry " + dim.dump() +
                  " is not a non-negative integer");
      tensor.shape.push_back(static_cast<int64_t>(*size));
    }
    // The plan loader holds buffers to the same bound, so that any product
    // of some sizes fits in int64.
    std::optional<uint64_t> expected =
        checkedByteSize(tensor.shape, spelling->bytes);
    if (!expected)
      throw bad("shape " + shapeIt->dump() + " of " + tensor.dtypeName +
                ": its non-zero sizes hold 2^63 bytes or more");
    std::optional<uint64_t> begin = asUnsigned((*offsetsIt)[0]);
    std::optional<uint64_t> end = asUnsigned((*offsetsIt)[1]);
    if (!begin || !end)
      throw bad("data_offsets " + offsetsIt->dump() +
                " are not non-negative integers");
    if (*begin > *end || *end > dataSize)
      throw bad("data_offsets [" + std::to_string(*begin) + ", " +
                std::to_string(*end) + "] are outside the " +
                std::to_string(dataSize) + " data bytes");
    if (*expected != *end - *begin)
      throw bad("holds " + std::to_string(*end - *begin) + " bytes, but " +
                tensor.dtypeName + " of shape " + shapeIt->dump() + " needs " +
                std::to_string(*expected));
    tensor.begin = *begin;
    tensor.end = *end;
    index_[name] = tensors_.size();
    tensors_.push_back(std::move(tensor));
  }

  // Two tensors must not share bytes.
  std::vector<const SafetensorsTensor *> byOffset;
  for (const SafetensorsTensor &tensor : tensors_)
    if (tensor.end > tensor.begin)
      byOffset.push_back(&tensor);
  std::sort(byOffset.begin(), byOffset.end(),
            [](auto *a, auto *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->begin < byOffset[i - 1]->end)
      throw fail("tensors '" + byOffset[i - 1]->name + "' and '" +
                 byOffset[i]->name + "' overlap");
}

const SafetensorsTensor *SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t *SafetensorsFile::data(const SafetensorsTensor &tensor) const {
  return bytes_.get() + dataStart_ + tensor.begin;
}

void SafetensorsFile::release(const SafetensorsTensor &tensor,
                              uint64_t bytes) const {
  if (!mapped_ || tensor.end <= tensor.begin)
    return;
  bytes = std::min(bytes, tensor.end - tensor.begin);
  // Whole pages inside the tensor's bytes only: a neighbour's data on a
  // shared page stays.
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto first = reinterpret_cast<uintptr_t>(data(tensor));
  uintptr_t last = first + bytes;
  uintptr_t begin = (first + page - 1) / page * page, end = last / page * page;
  if (begin < end)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

std::string_view safetensorsDTypeName(DType dtype) {
  for (const DTypeSpelling &spelling : kDTypes)
    if (spelling.dtype == dtype)
      return spelling.name;
  throw std::invalid_argument("unknown DType value " +
                              std::to_string(static_cast<int>(dtype)));
}

std::string
safetensorsHeader(const std::vector<SafetensorsEntry> &entries,
                  const std::map<std::string, std::string> &metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const SafetensorsEntry &entry : entries) {
    header[entry.name] = {
        {"dtype", std::string(safetensorsDTypeName(entry.dtype))},
        {"shape", entry.shape},
        {"data_offsets", {offset, offset + entry.data.size()}}};
    offset += entry.data.size();
  }
  if (!metadata.empty())
    header["__metadata__"] = metadata;
  std::string text = header.dump();
  // Pad with spaces so the data starts 8-byte aligned, as the Python writer
  // does.
  while ((8 + text.size()) % 8)
    text.push_back(' ');
  std::string bytes;
  bytes.reserve(8 + text.size());
  uint64_t size = text.size();
  for (int i = 0; i < 8; ++i)
    bytes.push_back(static_cast<char>(size >> (8 * i)));
  return bytes + text;
}

std::vector<uint8_t>
encodeSafetensors(const std::vector<SafetensorsEntry> &entries,
                  const std::map<std::string, std::string> &metadata) {
  std::string header = safetensorsHeader(entries, metadata);
  uint64_t dataBytes = 0;
  for (const SafetensorsEntry &entry : entries)
    dataBytes += entry.data.size();
  std::vector<uint8_t> bytes;
  bytes.reserve(header.size() + dataBytes);
  // (push_back rather than insert: GCC 12 misreports insert after a
  // fixed-size prefix as out of bounds, -Warray-bounds.)
  for (char c : header)
    bytes.push_back(static_cast<uint8_t>(c));
  for (const SafetensorsEntry &entry : entries)
    bytes.insert(bytes.end(), entry.data.begin(), entry.data.end());
  return bytes;
}

} // namespace braid::rt
