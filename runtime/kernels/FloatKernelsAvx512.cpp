//===- FloatKernelsAvx512.cpp - the float approximations with AVX-512 ----===//
//
// Part of the Braid project.
//
// Built with -mavx512f (and -ffp-contract=off, so that no multiply-add is
// fused and the results are the baseline build's, bit for bit); called only
// where the CPU has AVX-512 (FloatKernels.cpp checks).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/FloatKernels.h"
#include "runtime/kernels/FloatMath.h"

namespace braid::rt::cpu {

bool mapFloatUnaryAvx512(ref::UnaryKind kind, const float *x, float *y,
                         int64_t count) {
  return mapFloatUnaryHere(kind, x, y, count);
}

} // namespace braid::rt::cpu
