//===- ElementIO.h - element storage and reference tensors ------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// How elements are stored in arena buffers and files (little-endian f32,
// IEEE half f16, bfloat16, i64, i32, i1 as one byte 0/1), conversions of the
// 16-bit float formats, and copies between stored bytes and the reference
// kernels' ref::Tensor.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_KERNELS_ELEMENTIO_H
#define BRAID_RUNTIME_KERNELS_ELEMENTIO_H

#include "runtime/core/DType.h"
#include "runtime/reference/ReferenceKernels.h"

#include <cstdint>
#include <vector>

namespace braid::rt {

/// IEEE binary16 bits to float (exact).
float halfToFloat(uint16_t bits);
/// float to IEEE binary16 bits, rounding to nearest even; overflow gives inf.
uint16_t floatToHalf(float value);
/// bfloat16 bits to float (exact).
float bfloat16ToFloat(uint16_t bits);
/// float to bfloat16 bits, rounding to nearest even; NaN stays NaN.
uint16_t floatToBfloat16(float value);

/// Element `k` of stored `dtype` data as a double (floating types) ...
double loadFloat(DType dtype, const void *data, int64_t k);
/// ... or as an int64 (integer types and i1).
int64_t loadInt(DType dtype, const void *data, int64_t k);
/// Stores `value` (rounded to `dtype`) as element `k`.
void storeFloat(DType dtype, void *data, int64_t k, double value);
/// Stores `value` (i32 wraps, i1 is `!= 0`) as element `k`.
void storeInt(DType dtype, void *data, int64_t k, int64_t value);

/// Reads stored elements into a reference tensor.
ref::Tensor readTensor(DType dtype, const std::vector<int64_t> &shape,
                       const void *data);
/// Writes a reference tensor into storage of `dtype` and `shape`; throws
/// std::invalid_argument when the tensor's dtype or shape differ.
void writeTensor(const ref::Tensor &tensor, DType dtype,
                 const std::vector<int64_t> &shape, void *data);

} // namespace braid::rt

#endif // BRAID_RUNTIME_KERNELS_ELEMENTIO_H
