//===- DType.h - Element types of runtime buffers ---------------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The element types a Braid plan can carry. They mirror the element types of
// the `braid` dialect (f32, f16, bf16, i64, i32, i1) but are defined here
// without MLIR so that the runtime builds alone.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CORE_DTYPE_H
#define BRAID_RUNTIME_CORE_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace braid::rt {

/// Element type of a tensor buffer in a plan.
enum class DType { F32, F16, BF16, I64, I32, I1 };

/// Returns the number of bytes one element of `type` occupies in memory.
/// Booleans (i1) are stored unpacked, one byte per element.
/// Throws std::invalid_argument for a value outside the enumeration.
std::size_t byteSize(DType type);

/// Returns the canonical lower-case name of `type` ("f32", "bf16", "i1", ...),
/// the same spelling MLIR uses for the element type.
/// Throws std::invalid_argument for a value outside the enumeration.
std::string_view toString(DType type);

/// Parses a canonical name as produced by toString(DType). Matching is exact
/// and case-sensitive; returns std::nullopt for any other string.
std::optional<DType> parseDType(std::string_view name);

} // namespace braid::rt

#endif // BRAID_RUNTIME_CORE_DTYPE_H
