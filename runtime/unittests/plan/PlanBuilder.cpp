//===- PlanBuilder.cpp - building plan messages in tests ------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "PlanBuilder.h"

#include "runtime/plan/PlanLoader.h"

#include <cstring>

namespace braid::rt::test {

PlanBuilder::PlanBuilder(std::vector<std::string> axes,
                         std::vector<int64_t> sizes) {
  plan.set_format_version(kFormatVersion);
  for (const std::string &axis : axes)
    plan.mutable_mesh()->add_axis_names(axis);
  for (int64_t size : sizes)
    plan.mutable_mesh()->add_axis_sizes(size);
}

uint32_t PlanBuilder::buffer(DType dtype, std::vector<int64_t> shape) {
  uint64_t offset = (plan.arena_bytes() + 63) / 64 * 64;
  uint64_t bytes = byteSize(dtype);
  for (int64_t size : shape)
    bytes *= size;
  plan::Buffer *buffer = plan.add_buffers();
  buffer->set_id(plan.buffers_size() - 1);
  buffer->set_offset(offset);
  buffer->set_dtype(toPlanDType(dtype));
  for (int64_t size : shape)
    buffer->add_shape(size);
  plan.set_arena_bytes(offset + bytes);
  return buffer->id();
}

void PlanBuilder::constant(uint32_t buffer, const std::vector<uint8_t> &bytes) {
  plan::Constant *constant = plan.add_constants();
  constant->set_buffer(buffer);
  constant->set_data(bytes.data(), bytes.size());
}

void PlanBuilder::constantFloats(uint32_t buffer,
                                 const std::vector<float> &values) {
  constant(buffer, floatBytes(values));
}

plan::Weight &
PlanBuilder::weight(const std::string &name, uint32_t buffer,
                    std::vector<int64_t> fullShape,
                    std::vector<std::vector<std::string>> sharding) {
  plan::Weight *weight = plan.add_weights();
  weight->set_name(name);
  weight->set_buffer(buffer);
  for (int64_t size : fullShape)
    weight->add_full_shape(size);
  for (const auto &axes : sharding) {
    plan::DimSharding *dim = weight->add_sharding();
    for (const std::string &axis : axes)
      dim->add_axes(axis);
  }
  return *weight;
}

void PlanBuilder::input(const std::string &name, uint32_t buffer) {
  plan::Binding *binding = plan.add_inputs();
  binding->set_name(name);
  binding->set_buffer(buffer);
}

void PlanBuilder::output(const std::string &name, uint32_t buffer) {
  plan::Binding *binding = plan.add_outputs();
  binding->set_name(name);
  binding->set_buffer(buffer);
}

plan::Stream &PlanBuilder::stream(const std::string &name) {
  for (plan::Stream &stream : *plan.mutable_streams())
    if (stream.name() == name)
      return stream;
  plan::Stream *stream = plan.add_streams();
  stream->set_name(name);
  return *stream;
}

plan::Kernel &PlanBuilder::kernel(const std::string &streamName,
                                  const std::string &op,
                                  std::vector<uint32_t> inputs,
                                  std::vector<uint32_t> outputs,
                                  const std::string &location) {
  plan::Instruction *instruction = stream(streamName).add_instructions();
  instruction->set_location(location);
  plan::Kernel *kernel = instruction->mutable_kernel();
  kernel->set_op(op);
  for (uint32_t id : inputs)
    kernel->add_inputs(id);
  for (uint32_t id : outputs)
    kernel->add_outputs(id);
  return *kernel;
}

plan::Collective &PlanBuilder::collective(const std::string &streamName,
                                          const std::string &kind,
                                          std::vector<std::string> axes,
                                          uint32_t input, uint32_t output,
                                          const std::string &location) {
  plan::Instruction *instruction = stream(streamName).add_instructions();
  instruction->set_location(location);
  plan::Collective *collective = instruction->mutable_collective();
  collective->set_kind(kind);
  for (const std::string &axis : axes)
    collective->add_axes(axis);
  collective->set_input(input);
  collective->set_output(output);
  return *collective;
}

uint32_t PlanBuilder::event() {
  plan.set_num_events(plan.num_events() + 1);
  return plan.num_events() - 1;
}

void PlanBuilder::record(const std::string &streamName, uint32_t event) {
  stream(streamName).add_instructions()->set_record_event(event);
}

void PlanBuilder::wait(const std::string &streamName, uint32_t event) {
  stream(streamName).add_instructions()->set_wait_event(event);
}

void setBool(plan::Kernel &kernel, const std::string &name, bool value) {
  (*kernel.mutable_attrs())[name].set_b(value);
}
void setInt(plan::Kernel &kernel, const std::string &name, int64_t value) {
  (*kernel.mutable_attrs())[name].set_i(value);
}
void setFloat(plan::Kernel &kernel, const std::string &name, double value) {
  (*kernel.mutable_attrs())[name].set_f(value);
}
void setString(plan::Kernel &kernel, const std::string &name,
               const std::string &value) {
  (*kernel.mutable_attrs())[name].set_s(value);
}
void setInts(plan::Kernel &kernel, const std::string &name,
             const std::vector<int64_t> &values) {
  plan::IntList *list = (*kernel.mutable_attrs())[name].mutable_ints();
  for (int64_t value : values)
    list->add_values(value);
}

std::vector<uint8_t> floatBytes(const std::vector<float> &values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<uint8_t> int64Bytes(const std::vector<int64_t> &values) {
  std::vector<uint8_t> bytes(values.size() * 8);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

} // namespace braid::rt::test
