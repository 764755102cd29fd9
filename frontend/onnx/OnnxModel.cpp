//===- OnnxModel.cpp - reading ONNX files and tensors ---------------------===//

#include "frontend/onnx/OnnxModel.h"

#include "onnx/defs/parser.h"
#include "onnx/onnx_pb.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <climits>
#include <cstring>

using namespace mlir::braid::onnx_import;
using llvm::Expected;
using llvm::StringRef;

static llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

Expected<std::unique_ptr<onnx::ModelProto>>
mlir::braid::onnx_import::parseModel(StringRef buffer, StringRef name) {
  auto model = std::make_unique<onnx::ModelProto>();
  bool looksTextual = name.ends_with(".onnxtxt") ||
                      name.ends_with(".onnxtext") ||
                      buffer.ltrim().starts_with("<");
  if (!looksTextual) {
    if (buffer.size() > static_cast<size_t>(INT32_MAX))
      return makeError("'" + name +
                       "' is larger than 2 GiB; store its weights as "
                       "external data");
    if (model->ParseFromArray(buffer.data(), static_cast<int>(buffer.size())))
      return model;
    return makeError("'" + name +
                     "' is not a valid ONNX model: the protobuf is "
                     "truncated or corrupt");
  }
  std::string text = buffer.str();
  onnx::Common::Status status;
  // The text parser converts numbers with std::stof/stol, which throw on bad
  // or out-of-range literals.
  try {
    status = onnx::OnnxParser::Parse(*model, text.c_str());
  } catch (const std::exception &e) {
    return makeError("'" + name + "' is not valid ONNX text: bad number (" +
                     e.what() + ")");
  }
  if (!status.IsOK())
    return makeError("'" + name +
                     "' is not valid ONNX text: " + status.ErrorMessage());
  return model;
}

Expected<std::unique_ptr<onnx::ModelProto>>
mlir::braid::onnx_import::loadModel(StringRef path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  return parseModel((*buffer)->getBuffer(), path);
}

int64_t RawTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Appends `value` to `bytes` as little-endian bytes of its type.
template <typename T> static void appendValue(std::string &bytes, T value) {
  char buffer[sizeof(T)];
  std::memcpy(buffer, &value, sizeof(T));
  bytes.append(buffer, sizeof(T));
}

/// Reads `length` bytes at `offset` of an external data file.
static Expected<std::string> readExternal(const onnx::TensorProto &tensor,
                                          StringRef modelDir) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const onnx::StringStringEntryProto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t value;
      if (StringRef(entry.value()).getAsInteger(10, value) || value < 0)
        return makeError("tensor '" + tensor.name() + "' has external data " +
                         entry.key() + " '" + entry.value() +
                         "', not a non-negative integer");
      (entry.key() == "offset" ? offset : length) = value;
    }
  }
  if (location.empty())
    return makeError("tensor '" + tensor.name() +
                     "' has external data without a location");
  if (llvm::sys::path::is_absolute(location) ||
      StringRef(location).contains(".."))
    return makeError("tensor '" + tensor.name() + "' has external data at '" +
                     location + "', outside the model's folder");
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  // Only the tensor's bytes: reading the whole file for every tensor made
  // a 650 MB model's import take minutes (MemoryBuffer::getFile reads,
  // rather than maps, a file whose size is a multiple of the page size).
  uint64_t size = 0;
  if (std::error_code error = llvm::sys::fs::file_size(path, size))
    return makeError("tensor '" + tensor.name() +
                     "': cannot read external data file '" + path +
                     "': " + error.message());
  if (static_cast<uint64_t>(offset) > size)
    return makeError("tensor '" + tensor.name() + "': external data offset " +
                     llvm::Twine(offset) + " is past the end of '" + path +
                     "' (" + llvm::Twine(size) + " bytes)");
  if (length < 0)
    length = size - offset;
  if (static_cast<uint64_t>(length) > size - offset)
    return makeError("tensor '" + tensor.name() + "': external data '" + path +
                     "' holds " + llvm::Twine(size) +
                     " bytes, fewer than offset " + llvm::Twine(offset) +
                     " + length " + llvm::Twine(length));
  if (length == 0)
    return std::string();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> slice =
      llvm::MemoryBuffer::getFileSlice(path, length, offset);
  if (!slice)
    return makeError("tensor '" + tensor.name() +
                     "': cannot read external data file '" + path +
                     "': " + slice.getError().message());
  return (*slice)->getBuffer().str();
}

Expected<RawTensor>
mlir::braid::onnx_import::readTensor(const onnx::TensorProto &tensor,
                                     StringRef modelDir) {
  RawTensor raw;
  raw.type = tensor.data_type();
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return makeError("tensor '" + tensor.name() +
                       "' has a negative dimension " + llvm::Twine(d));
    raw.shape.push_back(d);
  }
  int64_t elementSize = onnxTypeSize(raw.type);
  if (elementSize == 0)
    return makeError("tensor '" + tensor.name() + "' has element type " +
                     onnxTypeName(raw.type) + ", which Braid does not read");
  std::optional<int64_t> count = checkedNumElements(raw.shape);
  if (!count || *count > INT64_MAX / elementSize)
    return makeError("tensor '" + tensor.name() + "' has too many elements");
  int64_t n = *count;
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    Expected<std::string> bytes = readExternal(tensor, modelDir);
    if (!bytes)
      return bytes.takeError();
    raw.bytes = std::move(*bytes);
  } else if (tensor.has_raw_data()) {
    raw.bytes = tensor.raw_data();
  } else {
    switch (raw.type) {
    case kFloat:
      for (float v : tensor.float_data())
        appendValue(raw.bytes, v);
      break;
    case kDouble:
      for (double v : tensor.double_data())
        appendValue(raw.bytes, v);
      break;
    case kInt64:
      for (int64_t v : tensor.int64_data())
        appendValue(raw.bytes, v);
      break;
    case kUint32:
    case kUint64:
      for (uint64_t v : tensor.uint64_data())
        raw.type == kUint32 ? appendValue(raw.bytes, static_cast<uint32_t>(v))
                            : appendValue(raw.bytes, v);
      break;
    default:
      // int32_data carries every type of 32 bits or less, one per entry.
      for (int32_t v : tensor.int32_data()) {
        if (elementSize == 4)
          appendValue(raw.bytes, v);
        else if (elementSize == 2)
          appendValue(raw.bytes, static_cast<uint16_t>(v));
        else
          appendValue(raw.bytes, static_cast<uint8_t>(v));
      }
      break;
    }
  }
  if (static_cast<int64_t>(raw.bytes.size()) != n * elementSize)
    return makeError("tensor '" + tensor.name() + "' of shape with " +
                     llvm::Twine(n) + " elements of " + onnxTypeName(raw.type) +
                     " holds " + llvm::Twine(raw.bytes.size()) +
                     " bytes, expected " + llvm::Twine(n * elementSize));
  return raw;
}

/// Reads element `i` of little-endian `bytes` as a T.
template <typename T> static T readValue(const std::string &bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}

/// Decodes a 16-bit float with the given semantics to double.
static double halfToDouble(uint16_t bits, const llvm::fltSemantics &sem) {
  llvm::APFloat value(sem, llvm::APInt(16, bits));
  bool losesInfo;
  value.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &losesInfo);
  return value.convertToDouble();
}

Expected<HostTensor> mlir::braid::onnx_import::toHost(const RawTensor &raw) {
  HostTensor t;
  t.type = raw.type;
  t.shape = raw.shape;
  int64_t n = raw.numElements();
  if (t.isFloat())
    t.floats.resize(n);
  else
    t.ints.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    switch (raw.type) {
    case kFloat:
      t.floats[i] = readValue<float>(raw.bytes, i);
      break;
    case kDouble:
      t.floats[i] = readValue<double>(raw.bytes, i);
      break;
    case kFloat16:
      t.floats[i] = halfToDouble(readValue<uint16_t>(raw.bytes, i),
                                 llvm::APFloat::IEEEhalf());
      break;
    case kBFloat16:
      t.floats[i] = halfToDouble(readValue<uint16_t>(raw.bytes, i),
                                 llvm::APFloat::BFloat());
      break;
    case kInt64:
      t.ints[i] = readValue<int64_t>(raw.bytes, i);
      break;
    case kUint64:
      t.ints[i] = static_cast<int64_t>(readValue<uint64_t>(raw.bytes, i));
      break;
    case kInt32:
      t.ints[i] = readValue<int32_t>(raw.bytes, i);
      break;
    case kUint32:
      t.ints[i] = readValue<uint32_t>(raw.bytes, i);
      break;
    case kInt16:
      t.ints[i] = readValue<int16_t>(raw.bytes, i);
      break;
    case kUint16:
      t.ints[i] = readValue<uint16_t>(raw.bytes, i);
      break;
    case kInt8:
      t.ints[i] = readValue<int8_t>(raw.bytes, i);
      break;
    case kUint8:
    case kBool:
      t.ints[i] = readValue<uint8_t>(raw.bytes, i);
      break;
    default:
      return makeError("cannot read elements of type " +
                       onnxTypeName(raw.type));
    }
  }
  return t;
}

/// Rounds `value` to a 16-bit float of the given semantics; returns its bits.
static uint16_t doubleToHalf(double value, const llvm::fltSemantics &sem) {
  llvm::APFloat f(value);
  bool losesInfo;
  f.convert(sem, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
  return static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue());
}

Expected<RawTensor>
mlir::braid::onnx_import::fromHost(const HostTensor &value) {
  RawTensor raw;
  raw.type = value.type;
  raw.shape = value.shape;
  int64_t n = value.numElements();
  int64_t size = onnxTypeSize(value.type);
  if (size == 0)
    return makeError("cannot store elements of type " +
                     onnxTypeName(value.type));
  raw.bytes.reserve(n * size);
  for (int64_t i = 0; i < n; ++i) {
    switch (value.type) {
    case kFloat:
      appendValue(raw.bytes, static_cast<float>(value.floats[i]));
      break;
    case kDouble:
      appendValue(raw.bytes, value.floats[i]);
      break;
    case kFloat16:
      appendValue(raw.bytes,
                  doubleToHalf(value.floats[i], llvm::APFloat::IEEEhalf()));
      break;
    case kBFloat16:
      appendValue(raw.bytes,
                  doubleToHalf(value.floats[i], llvm::APFloat::BFloat()));
      break;
    default: {
      // Integers and booleans: the low `size` bytes of the two's complement.
      uint64_t bits = static_cast<uint64_t>(value.ints[i]);
      for (int64_t b = 0; b < size; ++b)
        raw.bytes.push_back(static_cast<char>((bits >> (8 * b)) & 0xff));
      break;
    }
    }
  }
  return raw;
}

RawTensor mlir::braid::onnx_import::transpose(const RawTensor &raw,
                                              llvm::ArrayRef<int64_t> perm) {
  RawTensor out;
  out.type = raw.type;
  for (int64_t p : perm)
    out.shape.push_back(raw.shape[p]);
  int64_t size = onnxTypeSize(raw.type), n = raw.numElements();
  out.bytes.resize(raw.bytes.size());
  llvm::SmallVector<int64_t, 4> inStrides = rowMajorStrides(raw.shape);
  // Walk the output in order, tracking the input offset of its index.
  llvm::SmallVector<int64_t, 4> index(perm.size(), 0);
  int64_t from = 0;
  for (int64_t to = 0; to < n; ++to) {
    std::memcpy(&out.bytes[to * size], &raw.bytes[from * size], size);
    for (int64_t d = static_cast<int64_t>(perm.size()) - 1; d >= 0; --d) {
      from += inStrides[perm[d]];
      if (++index[d] < out.shape[d])
        break;
      from -= index[d] * inStrides[perm[d]];
      index[d] = 0;
    }
  }
  return out;
}
