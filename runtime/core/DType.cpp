//===- DType.cpp - Element types of runtime buffers -----------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/DType.h"

#include <array>
#include <stdexcept>
#include <string>
#include <utility>

namespace braid::rt {

namespace {
/// Every element type with its canonical name; parseDType searches this.
constexpr std::array<std::pair<DType, std::string_view>, 6> kDTypeNames = {{
    {DType::F32, "f32"},
    {DType::F16, "f16"},
    {DType::BF16, "bf16"},
    {DType::I64, "i64"},
    {DType::I32, "i32"},
    {DType::I1, "i1"},
}};

[[noreturn]] void throwUnknownDType(DType type) {
  throw std::invalid_argument("unknown DType value " +
                              std::to_string(static_cast<int>(type)));
}
} // namespace

std::size_t byteSize(DType type) {
  switch (type) {
  case DType::F32:
    return 4;
  case DType::F16:
  case DType::BF16:
    return 2;
  case DType::I64:
    return 8;
  case DType::I32:
    return 4;
  case DType::I1:
    return 1;
  }
  throwUnknownDType(type);
}

std::string_view toString(DType type) {
  for (const auto &[candidate, name] : kDTypeNames)
    if (candidate == type)
      return name;
  throwUnknownDType(type);
}

std::optional<DType> parseDType(std::string_view name) {
  for (const auto &[type, candidate] : kDTypeNames)
    if (candidate == name)
      return type;
  return std::nullopt;
}

} // namespace braid::rt
