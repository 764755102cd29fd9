//===- TensorFiles.cpp - .npy and ONNX TensorProto .pb files --------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/tools/TensorFiles.h"

#include "runtime/plan/OnnxTensor.pb.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

namespace braid::rt {

namespace {
using onnx_compat::TensorProto;

std::vector<uint8_t> readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    throw TensorFileError("cannot open '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  if (file.bad())
    throw TensorFileError("cannot read '" + path + "'");
  return bytes;
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// numel * element size of `shape`, or an error for negative or huge shapes.
uint64_t byteCount(const std::vector<int64_t> &shape, DType dtype,
                   const std::string &source) {
  uint64_t bytes = byteSize(dtype);
  for (int64_t size : shape) {
    if (size < 0)
      throw TensorFileError(source + ": negative dimension " +
                            std::to_string(size));
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(size), &bytes))
      throw TensorFileError(source + ": the shape holds more than 2^64 bytes");
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

struct NpySpelling {
  const char *descr;
  DType dtype;
};
const NpySpelling kNpyDTypes[] = {{"<f4", DType::F32},
                                  {"<f2", DType::F16},
                                  {"<i8", DType::I64},
                                  {"<i4", DType::I32},
                                  {"|b1", DType::I1}};

/// The text after `'key':` in a NumPy header dict, with spaces skipped.
std::optional<size_t> findKey(const std::string &header, const char *key) {
  size_t at = header.find(std::string("'") + key + "'");
  if (at == std::string::npos)
    return std::nullopt;
  at = header.find(':', at);
  if (at == std::string::npos)
    return std::nullopt;
  ++at;
  while (at < header.size() && header[at] == ' ')
    ++at;
  return at;
}
} // namespace

int64_t HostTensor::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

std::vector<uint8_t> encodeNpy(const HostTensor &tensor) {
  if (tensor.dtype == DType::BF16)
    throw TensorFileError("'" + tensor.name +
                          "': .npy has no bfloat16 type; use .pb");
  const char *descr = nullptr;
  for (const NpySpelling &spelling : kNpyDTypes)
    if (spelling.dtype == tensor.dtype)
      descr = spelling.descr;
  // A Python tuple: "()", "(3,)", "(2, 3)".
  std::string shape = "(";
  for (size_t d = 0; d < tensor.shape.size(); ++d)
    shape += (d ? ", " : "") + std::to_string(tensor.shape[d]);
  shape += tensor.shape.size() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") + descr +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n', a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  uint16_t length = static_cast<uint16_t>(header.size());
  bytes.push_back(static_cast<uint8_t>(length & 0xff));
  bytes.push_back(static_cast<uint8_t>(length >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), tensor.data.begin(), tensor.data.end());
  return bytes;
}

HostTensor decodeNpy(const uint8_t *bytes, size_t size,
                     const std::string &source) {
  auto fail = [&](const std::string &problem) {
    return TensorFileError(source + ": " + problem);
  };
  static const uint8_t magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(bytes, magic, 6) != 0)
    throw fail("not a .npy file (no \\x93NUMPY magic)");
  uint8_t major = bytes[6];
  size_t lengthBytes = major == 1 ? 2 : 4;
  if (major < 1 || major > 3)
    throw fail(".npy format version " + std::to_string(major) +
               " is not supported");
  if (size < 8 + lengthBytes)
    throw fail("truncated header");
  uint64_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerLength |= static_cast<uint64_t>(bytes[8 + i]) << (8 * i);
  size_t dataStart = 8 + lengthBytes;
  if (headerLength > size - dataStart)
    throw fail("header length " + std::to_string(headerLength) +
               " runs past the end of the file");
  std::string header(reinterpret_cast<const char *>(bytes) + dataStart,
                     headerLength);
  dataStart += headerLength;

  HostTensor tensor;
  std::optional<size_t> descrAt = findKey(header, "descr");
  if (!descrAt || *descrAt >= header.size() || header[*descrAt] != '\'')
    throw fail("header has no 'descr'");
  size_t descrEnd = header.find('\'', *descrAt + 1);
  if (descrEnd == std::string::npos)
    throw fail("header 'descr' is not a string");
  std::string descr = header.substr(*descrAt + 1, descrEnd - *descrAt - 1);
  bool known = false;
  for (const NpySpelling &spelling : kNpyDTypes)
    if (descr == spelling.descr) {
      tensor.dtype = spelling.dtype;
      known = true;
    }
  if (!known)
    throw fail("dtype '" + descr +
               "' is not one of <f4 <f2 <i8 <i4 |b1 (save float64 data as "
               "float32)");

  std::optional<size_t> orderAt = findKey(header, "fortran_order");
  if (!orderAt)
    throw fail("header has no 'fortran_order'");
  if (header.compare(*orderAt, 4, "True") == 0)
    throw fail("Fortran-order arrays are not supported; save in C order");
  if (header.compare(*orderAt, 5, "False") != 0)
    throw fail("'fortran_order' is neither True nor False");

  std::optional<size_t> shapeAt = findKey(header, "shape");
  if (!shapeAt || *shapeAt >= header.size() || header[*shapeAt] != '(')
    throw fail("header has no 'shape' tuple");
  size_t shapeEnd = header.find(')', *shapeAt);
  if (shapeEnd == std::string::npos)
    throw fail("header 'shape' tuple is not closed");
  std::string dims = header.substr(*shapeAt + 1, shapeEnd - *shapeAt - 1);
  size_t at = 0;
  while (at < dims.size()) {
    while (at < dims.size() && (dims[at] == ' ' || dims[at] == ','))
      ++at;
    if (at == dims.size())
      break;
    size_t end = at;
    int64_t value = 0;
    while (end < dims.size() && dims[end] >= '0' && dims[end] <= '9') {
      if (value > (INT64_MAX - 9) / 10)
        throw fail("shape entry is too large");
      value = value * 10 + (dims[end] - '0');
      ++end;
    }
    if (end == at)
      throw fail("shape '(" + dims + ")' is not a tuple of integers");
    tensor.shape.push_back(value);
    at = end;
  }
  uint64_t bytesNeeded = byteCount(tensor.shape, tensor.dtype, source);
  if (size - dataStart != bytesNeeded)
    throw fail("holds " + std::to_string(size - dataStart) +
               " data bytes, but the header's dtype and shape need " +
               std::to_string(bytesNeeded));
  tensor.data.assign(bytes + dataStart, bytes + size);
  return tensor;
}

HostTensor readNpy(const std::string &path) {
  std::vector<uint8_t> bytes = readFile(path);
  return decodeNpy(bytes.data(), bytes.size(), path);
}

void writeNpy(const std::string &path, const HostTensor &tensor) {
  writeFileAtomically(path, encodeNpy(tensor));
}

//===----------------------------------------------------------------------===//
// ONNX TensorProto
//===----------------------------------------------------------------------===//

namespace {
std::optional<DType> fromOnnx(int type) {
  switch (type) {
  case TensorProto::FLOAT:
    return DType::F32;
  case TensorProto::FLOAT16:
    return DType::F16;
  case TensorProto::BFLOAT16:
    return DType::BF16;
  case TensorProto::INT64:
    return DType::I64;
  case TensorProto::INT32:
    return DType::I32;
  case TensorProto::BOOL:
    return DType::I1;
  default:
    return std::nullopt;
  }
}

int toOnnx(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return TensorProto::FLOAT;
  case DType::F16:
    return TensorProto::FLOAT16;
  case DType::BF16:
    return TensorProto::BFLOAT16;
  case DType::I64:
    return TensorProto::INT64;
  case DType::I32:
    return TensorProto::INT32;
  case DType::I1:
    return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}
} // namespace

std::vector<uint8_t> encodeTensorProto(const HostTensor &tensor) {
  TensorProto proto;
  for (int64_t size : tensor.shape)
    proto.add_dims(size);
  proto.set_data_type(toOnnx(tensor.dtype));
  proto.set_name(tensor.name);
  proto.set_raw_data(tensor.data.data(), tensor.data.size());
  std::string bytes = proto.SerializeAsString();
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

HostTensor decodeTensorProto(const uint8_t *bytes, size_t size,
                             const std::string &source) {
  auto fail = [&](const std::string &problem) {
    return TensorFileError(source + ": " + problem);
  };
  TensorProto proto;
  if (size > static_cast<size_t>(INT32_MAX) ||
      !proto.ParseFromArray(bytes, static_cast<int>(size)))
    throw fail("not a serialized ONNX TensorProto");
  if (proto.data_location() == TensorProto::EXTERNAL)
    throw fail("tensor data in external files is not supported");
  std::optional<DType> dtype = fromOnnx(proto.data_type());
  if (!dtype)
    throw fail("ONNX data_type " + std::to_string(proto.data_type()) +
               " is not one of FLOAT, FLOAT16, BFLOAT16, INT64, INT32, BOOL");
  HostTensor tensor;
  tensor.name = proto.name();
  tensor.dtype = *dtype;
  tensor.shape.assign(proto.dims().begin(), proto.dims().end());
  uint64_t bytesNeeded = byteCount(tensor.shape, tensor.dtype, source);
  int64_t count = static_cast<int64_t>(bytesNeeded / byteSize(tensor.dtype));

  if (!proto.raw_data().empty() || bytesNeeded == 0) {
    if (proto.raw_data().size() != bytesNeeded)
      throw fail("raw_data holds " + std::to_string(proto.raw_data().size()) +
                 " bytes, but the dims need " + std::to_string(bytesNeeded));
    tensor.data.assign(proto.raw_data().begin(), proto.raw_data().end());
    if (tensor.dtype == DType::I1)
      for (uint8_t &value : tensor.data)
        value = value != 0;
    return tensor;
  }
  auto expectCount = [&](int64_t held, const char *field) {
    if (held != count)
      throw fail(std::string(field) + " holds " + std::to_string(held) +
                 " values, but the dims need " + std::to_string(count));
  };
  tensor.data.resize(bytesNeeded);
  uint8_t *out = tensor.data.data();
  switch (tensor.dtype) {
  case DType::F32:
    expectCount(proto.float_data_size(), "float_data");
    std::memcpy(out, proto.float_data().data(), bytesNeeded);
    break;
  case DType::I64:
    expectCount(proto.int64_data_size(), "int64_data");
    std::memcpy(out, proto.int64_data().data(), bytesNeeded);
    break;
  case DType::I32:
    expectCount(proto.int32_data_size(), "int32_data");
    std::memcpy(out, proto.int32_data().data(), bytesNeeded);
    break;
  case DType::F16:
  case DType::BF16:
    // The 16-bit patterns, one per int32.
    expectCount(proto.int32_data_size(), "int32_data");
    for (int64_t k = 0; k < count; ++k) {
      uint16_t bits = static_cast<uint16_t>(proto.int32_data(k));
      std::memcpy(out + 2 * k, &bits, 2);
    }
    break;
  case DType::I1:
    expectCount(proto.int32_data_size(), "int32_data");
    for (int64_t k = 0; k < count; ++k)
      out[k] = proto.int32_data(k) != 0;
    break;
  }
  return tensor;
}

HostTensor readTensorProto(const std::string &path) {
  std::vector<uint8_t> bytes = readFile(path);
  return decodeTensorProto(bytes.data(), bytes.size(), path);
}

void writeTensorProto(const std::string &path, const HostTensor &tensor) {
  writeFileAtomically(path, encodeTensorProto(tensor));
}

HostTensor readTensorFile(const std::string &path) {
  if (endsWith(path, ".npy"))
    return readNpy(path);
  if (endsWith(path, ".pb"))
    return readTensorProto(path);
  throw TensorFileError("'" + path +
                        "': expected a .npy or .pb (ONNX TensorProto) file");
}

void writeFileAtomically(const std::string &path,
                         const std::vector<uint8_t> &bytes) {
  std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    if (!file)
      throw TensorFileError("cannot create '" + temporary + "'");
    file.write(reinterpret_cast<const char *>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    if (!file.flush()) {
      std::remove(temporary.c_str());
      throw TensorFileError("cannot write '" + temporary + "'");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw TensorFileError("cannot rename '" + temporary + "' to '" + path +
                          "'");
  }
}

} // namespace braid::rt
