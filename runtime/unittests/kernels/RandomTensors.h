//===- RandomTensors.h - random reference tensors for kernel tests -*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Seeded random inputs for the tests that compare a backend's kernels with
// the reference kernels (CPU and CUDA alike).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_UNITTESTS_KERNELS_RANDOMTENSORS_H
#define BRAID_RUNTIME_UNITTESTS_KERNELS_RANDOMTENSORS_H

#include "runtime/reference/ReferenceKernels.h"

#include <cstdint>
#include <random>
#include <vector>

namespace braid::rt::test {

/// One generator per test binary, fixed seed: failures reproduce.
inline std::mt19937 &generator() {
  static std::mt19937 random(1234);
  return random;
}

inline int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t size : shape)
    n *= size;
  return n;
}

/// Uniform in [lo, hi), rounded to `dtype`.
inline ref::Tensor randomFloats(DType dtype, std::vector<int64_t> shape,
                                double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> uniform(lo, hi);
  std::vector<double> values(count(shape));
  for (double &value : values)
    value = uniform(generator());
  return ref::Tensor::ofFloats(dtype, std::move(shape), std::move(values));
}

/// Uniform in [lo, hi].
inline ref::Tensor randomInts(DType dtype, std::vector<int64_t> shape,
                              int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> uniform(lo, hi);
  std::vector<int64_t> values(count(shape));
  for (int64_t &value : values)
    value = uniform(generator());
  return ref::Tensor::ofInts(dtype, std::move(shape), std::move(values));
}

} // namespace braid::rt::test

#endif // BRAID_RUNTIME_UNITTESTS_KERNELS_RANDOMTENSORS_H
