//===- ElementIO.cpp - element storage and reference tensors --------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/ElementIO.h"

#include "runtime/exec/KernelRegistry.h"

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace braid::rt {

namespace {
uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}
float bitsFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}
template <typename T> T loadAs(const void *data, int64_t k) {
  T value;
  std::memcpy(&value, static_cast<const char *>(data) + k * sizeof(T),
              sizeof(T));
  return value;
}
template <typename T> void storeAs(void *data, int64_t k, T value) {
  std::memcpy(static_cast<char *>(data) + k * sizeof(T), &value, sizeof(T));
}
bool isFloatType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16;
}
} // namespace

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  if (exponent == 0x1f) // inf or NaN
    return bitsFloat(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  return bitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t floatToHalf(float value) {
  uint32_t bits = floatBits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t absBits = bits & 0x7fffffff;
  if (absBits >= 0x7f800000) // inf or NaN (keep NaN quiet and non-zero)
    return sign | 0x7c00 | (absBits > 0x7f800000 ? 0x200 : 0);
  float magnitude = bitsFloat(absBits);
  if (magnitude >= 65520.0f) // rounds to inf
    return sign | 0x7c00;
  if (magnitude < 6.103515625e-05f) {
    // Subnormal half: a multiple of 2^-24; nearbyint rounds to even.
    float scaled = std::nearbyint(std::ldexp(magnitude, 24));
    return sign | static_cast<uint16_t>(scaled);
  }
  // Normal: drop 13 mantissa bits with round to nearest even.
  uint32_t rounded = absBits + 0xfff + ((absBits >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded >> 13) - (112 << 10));
}

float bfloat16ToFloat(uint16_t bits) {
  return bitsFloat(static_cast<uint32_t>(bits) << 16);
}

uint16_t floatToBfloat16(float value) {
  uint32_t bits = floatBits(value);
  if ((bits & 0x7fffffff) > 0x7f800000) // NaN: keep it a NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

double loadFloat(DType dtype, const void *data, int64_t k) {
  switch (dtype) {
  case DType::F32:
    return loadAs<float>(data, k);
  case DType::F16:
    return halfToFloat(loadAs<uint16_t>(data, k));
  case DType::BF16:
    return bfloat16ToFloat(loadAs<uint16_t>(data, k));
  default:
    return static_cast<double>(loadInt(dtype, data, k));
  }
}

int64_t loadInt(DType dtype, const void *data, int64_t k) {
  switch (dtype) {
  case DType::I64:
    return loadAs<int64_t>(data, k);
  case DType::I32:
    return loadAs<int32_t>(data, k);
  case DType::I1:
    return loadAs<uint8_t>(data, k) != 0;
  default:
    throw std::invalid_argument("loadInt: " + std::string(toString(dtype)) +
                                " is a floating type");
  }
}

void storeFloat(DType dtype, void *data, int64_t k, double value) {
  switch (dtype) {
  case DType::F32:
    storeAs<float>(data, k, static_cast<float>(value));
    return;
  case DType::F16:
    // roundTo rounds the double once; the float in between is exact.
    storeAs<uint16_t>(
        data, k, floatToHalf(static_cast<float>(ref::roundTo(dtype, value))));
    return;
  case DType::BF16:
    storeAs<uint16_t>(
        data, k,
        floatToBfloat16(static_cast<float>(ref::roundTo(dtype, value))));
    return;
  default:
    throw std::invalid_argument("storeFloat: " + std::string(toString(dtype)) +
                                " is not a floating type");
  }
}

void storeInt(DType dtype, void *data, int64_t k, int64_t value) {
  switch (dtype) {
  case DType::I64:
    storeAs<int64_t>(data, k, value);
    return;
  case DType::I32:
    storeAs<int32_t>(data, k,
                     static_cast<int32_t>(static_cast<uint32_t>(value)));
    return;
  case DType::I1:
    storeAs<uint8_t>(data, k, value != 0);
    return;
  default:
    throw std::invalid_argument("storeInt: " + std::string(toString(dtype)) +
                                " is a floating type");
  }
}

ref::Tensor readTensor(DType dtype, const std::vector<int64_t> &shape,
                       const void *data) {
  ref::Tensor tensor;
  tensor.dtype = dtype;
  tensor.shape = shape;
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  if (isFloatType(dtype)) {
    tensor.f.resize(count);
    if (dtype == DType::F32) {
      const float *values = static_cast<const float *>(data);
      for (int64_t k = 0; k < count; ++k)
        tensor.f[k] = values[k];
    } else {
      for (int64_t k = 0; k < count; ++k)
        tensor.f[k] = loadFloat(dtype, data, k);
    }
  } else {
    tensor.i.resize(count);
    for (int64_t k = 0; k < count; ++k)
      tensor.i[k] = loadInt(dtype, data, k);
  }
  return tensor;
}

void writeTensor(const ref::Tensor &tensor, DType dtype,
                 const std::vector<int64_t> &shape, void *data) {
  if (tensor.dtype != dtype || tensor.shape != shape)
    throw std::invalid_argument(
        "the kernel produced " + std::string(toString(tensor.dtype)) + " " +
        shapeToString(tensor.shape) + " but the output buffer is " +
        std::string(toString(dtype)) + " " + shapeToString(shape));
  if (isFloatType(dtype)) {
    if (dtype == DType::F32) {
      float *values = static_cast<float *>(data);
      for (size_t k = 0; k < tensor.f.size(); ++k)
        values[k] = static_cast<float>(tensor.f[k]);
    } else {
      for (size_t k = 0; k < tensor.f.size(); ++k)
        storeFloat(dtype, data, static_cast<int64_t>(k), tensor.f[k]);
    }
  } else {
    for (size_t k = 0; k < tensor.i.size(); ++k)
      storeInt(dtype, data, static_cast<int64_t>(k), tensor.i[k]);
  }
}

} // namespace braid::rt
