//===- PlanBuilder.h - building plan messages in tests ----------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Tests build plans in C++ through the generated proto classes; this keeps
// the bookkeeping (buffer offsets, arena size, event numbers) out of them.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_UNITTESTS_PLAN_PLANBUILDER_H
#define BRAID_RUNTIME_UNITTESTS_PLAN_PLANBUILDER_H

#include "runtime/core/DType.h"
#include "runtime/plan/Plan.pb.h"

#include <cstdint>
#include <string>
#include <vector>

namespace braid::rt::test {

class PlanBuilder {
public:
  /// A plan over a mesh (default: one axis "x" of size 1).
  explicit PlanBuilder(std::vector<std::string> axes = {"x"},
                       std::vector<int64_t> sizes = {1});

  /// A new buffer at the next 64-byte aligned offset; grows the arena.
  uint32_t buffer(DType dtype, std::vector<int64_t> shape);
  void constant(uint32_t buffer, const std::vector<uint8_t> &bytes);
  void constantFloats(uint32_t buffer, const std::vector<float> &values);
  /// A weight; the returned message can be given a block.
  plan::Weight &weight(const std::string &name, uint32_t buffer,
                       std::vector<int64_t> fullShape,
                       std::vector<std::vector<std::string>> sharding = {});
  void input(const std::string &name, uint32_t buffer);
  void output(const std::string &name, uint32_t buffer);

  /// The kernel appended to stream `stream` (created on first use).
  plan::Kernel &kernel(const std::string &stream, const std::string &op,
                       std::vector<uint32_t> inputs,
                       std::vector<uint32_t> outputs,
                       const std::string &location = "");
  plan::Collective &collective(const std::string &stream,
                               const std::string &kind,
                               std::vector<std::string> axes, uint32_t input,
                               uint32_t output,
                               const std::string &location = "");
  /// A new event number.
  uint32_t event();
  void record(const std::string &stream, uint32_t event);
  void wait(const std::string &stream, uint32_t event);

  std::string serialize() const { return plan.SerializeAsString(); }

  plan::Plan plan;

private:
  plan::Stream &stream(const std::string &name);
};

void setBool(plan::Kernel &kernel, const std::string &name, bool value);
void setInt(plan::Kernel &kernel, const std::string &name, int64_t value);
void setFloat(plan::Kernel &kernel, const std::string &name, double value);
void setString(plan::Kernel &kernel, const std::string &name,
               const std::string &value);
void setInts(plan::Kernel &kernel, const std::string &name,
             const std::vector<int64_t> &values);

/// The little-endian bytes of `values`.
std::vector<uint8_t> floatBytes(const std::vector<float> &values);
std::vector<uint8_t> int64Bytes(const std::vector<int64_t> &values);

} // namespace braid::rt::test

#endif // BRAID_RUNTIME_UNITTESTS_PLAN_PLANBUILDER_H
