//===- FloatKernelsAvx512.cpp - the float approximations with AVX-512 ----===//
//
// Part of the Braid project.
//
// Built with -mavx512f -mfma -ffp-contract=fast: multiply-adds are fused,
// so results differ from the baseline copy's in the last bits (tested:
// within 4 ulp, and as accurate); called only where the CPU has AVX-512F
// and FMA (FloatKernels.cpp checks).
//
//===----------------------------------------------------------------------===//

#include "runtime/kernels/FloatKernels.h"
#include "runtime/kernels/FloatMath.h"

namespace braid::rt::cpu {

bool mapFloatUnaryAvx512(ref::UnaryKind kind, const float *x, float *y,
                         int64_t count) {
  return mapFloatUnaryHere(kind, x, y, count);
}

void normRowsAvx512(const float *x, const float *gamma, const float *beta,
                    float *y, int64_t rows, int64_t size, double epsilon,
                    bool centered) {
  normRowsHere(x, gamma, beta, y, rows, size, epsilon, centered);
}

void softmaxScoresRowAvx512(float *row, int64_t sk, int64_t limit, float scale,
                            const TensorView *mask, int64_t maskRow,
                            int64_t maskStep) {
  softmaxScoresRowHere(row, sk, limit, scale, mask, maskRow, maskStep);
}

void smallProductAvx512(const float *a, const float *b, float *c, int64_t m,
                        int64_t n, int64_t k) {
  smallProductHere(a, b, c, m, n, k);
}

} // namespace braid::rt::cpu
