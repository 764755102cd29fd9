//===- MoveKernels.h - data movement on arena memory ------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The kernels that only move elements (transpose, slice, concat, split,
// broadcast_to, gather), for every element type: they copy bytes, whole
// contiguous runs with memcpy where the layout allows, instead of going
// through the reference adapter (which converts every element to double and
// back). Shapes are checked when the plan is loaded; the caller falls back
// to the reference when an output overlaps an input.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_KERNELS_MOVEKERNELS_H
#define BRAID_RUNTIME_KERNELS_MOVEKERNELS_H

#include "runtime/exec/KernelRegistry.h"

#include <vector>

namespace braid::rt::cpu {

/// out = x with its dimensions permuted: out dimension d is x's
/// `permutation[d]`.
void transposeBytes(const TensorView &x, const std::vector<int64_t> &permutation,
                    const TensorView &out);

/// out[i] = x[offsets + i * strides] for every index i of out.
void sliceBytes(const TensorView &x, const std::vector<int64_t> &offsets,
                const std::vector<int64_t> &strides, const TensorView &out);

/// out = the inputs one after the other along `dim`.
void concatBytes(const std::vector<TensorView> &inputs, int64_t dim,
                 const TensorView &out);

/// The pieces of x along `dim`, in order, into `outputs`.
void splitBytes(const TensorView &x, int64_t dim,
                const std::vector<TensorView> &outputs);

/// x broadcast (numpy rules, aligned at the last dimension) to out's shape.
void broadcastBytes(const TensorView &x, const TensorView &out);

/// ONNX Gather along `axis` with i64 or i32 `indices` (negative ones count
/// from the end). Throws std::invalid_argument naming gather for an index
/// out of range, before writing anything.
void gatherBytes(const TensorView &x, const TensorView &indices, int64_t axis,
                 const TensorView &out);

} // namespace braid::rt::cpu

#endif // BRAID_RUNTIME_KERNELS_MOVEKERNELS_H
