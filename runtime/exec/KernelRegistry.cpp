//===- KernelRegistry.cpp - kernels keyed by plan op name -----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/KernelRegistry.h"

#include "runtime/plan/Plan.pb.h"
#include "runtime/plan/PlanError.h"

#include <stdexcept>

namespace braid::rt {

namespace {
/// Attributes that MLIR keeps for its own bookkeeping; a compiler that copies
/// every attribute of an op may pass them through, and they mean nothing here.
bool isBookkeepingAttr(const std::string &name) {
  return name == "operandSegmentSizes" || name == "resultSegmentSizes" ||
         name == "operand_segment_sizes" || name == "result_segment_sizes";
}

const char *kindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int:
    return "an integer";
  case AttrKind::Float:
    return "a float";
  case AttrKind::String:
    return "a string";
  case AttrKind::Ints:
    return "a list of integers";
  case AttrKind::Bool:
    return "a bool";
  }
  return "?";
}

const char *valueKindName(const plan::AttrValue &value) {
  switch (value.value_case()) {
  case plan::AttrValue::kI:
    return "an integer";
  case plan::AttrValue::kF:
    return "a float";
  case plan::AttrValue::kS:
    return "a string";
  case plan::AttrValue::kInts:
    return "a list of integers";
  case plan::AttrValue::kB:
    return "a bool";
  case plan::AttrValue::VALUE_NOT_SET:
    break;
  }
  return "empty";
}

/// Whether `value` can be read as `kind` (the getters' conversions).
bool accepts(AttrKind kind, const plan::AttrValue &value) {
  switch (kind) {
  case AttrKind::Int:
    return value.has_i();
  case AttrKind::Float:
    return value.has_f() || value.has_i();
  case AttrKind::String:
    return value.has_s();
  case AttrKind::Ints:
    return value.has_ints();
  case AttrKind::Bool:
    return value.has_b() ||
           (value.has_i() && (value.i() == 0 || value.i() == 1));
  }
  return false;
}

std::string countRange(int lo, int hi) {
  if (hi < 0)
    return "at least " + std::to_string(lo);
  if (lo == hi)
    return std::to_string(lo);
  return std::to_string(lo) + " to " + std::to_string(hi);
}
} // namespace

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d)
      text += ", ";
    text += std::to_string(shape[d]);
  }
  return text + "]";
}

//===----------------------------------------------------------------------===//
// TensorView, KernelAttrs, KernelArgs
//===----------------------------------------------------------------------===//

int64_t TensorView::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  return count;
}

uint64_t TensorView::numBytes() const {
  return static_cast<uint64_t>(numElements()) * byteSize(dtype);
}

bool TensorView::overlaps(const TensorView &other) const {
  auto *a = static_cast<const char *>(data);
  auto *b = static_cast<const char *>(other.data);
  uint64_t sizeA = numBytes(), sizeB = other.numBytes();
  if (!a || !b || sizeA == 0 || sizeB == 0)
    return false;
  return a < b + sizeB && b < a + sizeA;
}

bool KernelAttrs::has(const std::string &name) const {
  return kernel_->attrs().count(name) != 0;
}

const plan::AttrValue &KernelAttrs::get(const std::string &name) const {
  auto it = kernel_->attrs().find(name);
  if (it == kernel_->attrs().end())
    throw PlanError("attribute '" + name + "' is missing");
  return it->second;
}

bool KernelAttrs::getBool(const std::string &name) const {
  if (!has(name))
    return false;
  const plan::AttrValue &value = get(name);
  if (!accepts(AttrKind::Bool, value))
    throw PlanError("attribute '" + name + "' must be a bool, got " +
                    valueKindName(value));
  return value.has_b() ? value.b() : value.i() != 0;
}

int64_t KernelAttrs::getInt(const std::string &name) const {
  const plan::AttrValue &value = get(name);
  if (!value.has_i())
    throw PlanError("attribute '" + name + "' must be an integer, got " +
                    valueKindName(value));
  return value.i();
}

double KernelAttrs::getFloat(const std::string &name) const {
  const plan::AttrValue &value = get(name);
  if (value.has_f())
    return value.f();
  if (value.has_i())
    return static_cast<double>(value.i());
  throw PlanError("attribute '" + name + "' must be a float, got " +
                  valueKindName(value));
}

const std::string &KernelAttrs::getString(const std::string &name) const {
  const plan::AttrValue &value = get(name);
  if (!value.has_s())
    throw PlanError("attribute '" + name + "' must be a string, got " +
                    valueKindName(value));
  return value.s();
}

std::vector<int64_t> KernelAttrs::getInts(const std::string &name) const {
  const plan::AttrValue &value = get(name);
  if (!value.has_ints())
    throw PlanError("attribute '" + name +
                    "' must be a list of integers, got " +
                    valueKindName(value));
  return {value.ints().values().begin(), value.ints().values().end()};
}

const std::string &KernelArgs::op() const { return kernel->op(); }

//===----------------------------------------------------------------------===//
// KernelRegistry
//===----------------------------------------------------------------------===//

void KernelRegistry::add(KernelInfo info) {
  std::string op = info.op;
  if (!kernels_.emplace(op, std::move(info)).second)
    throw std::invalid_argument("kernel '" + op + "' is registered twice");
}

void KernelRegistry::setPrepare(std::string_view op, KernelPrepareFn prepare) {
  auto it = kernels_.find(op);
  if (it == kernels_.end())
    throw std::invalid_argument("kernel '" + std::string(op) +
                                "' is not registered");
  it->second.prepare = prepare;
}

const KernelInfo *KernelRegistry::lookup(std::string_view op) const {
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::vector<std::string> names;
  for (const auto &entry : kernels_)
    names.push_back(entry.first);
  return names;
}

void KernelRegistry::verify(const KernelInfo &info,
                            const KernelArgs &args) const {
  int inputs = static_cast<int>(args.inputs.size());
  int outputs = static_cast<int>(args.outputs.size());
  if (inputs < info.minInputs ||
      (info.maxInputs >= 0 && inputs > info.maxInputs))
    throw PlanError(info.op + " takes " +
                    countRange(info.minInputs, info.maxInputs) +
                    " inputs, got " + std::to_string(inputs));
  if (outputs < info.minOutputs ||
      (info.maxOutputs >= 0 && outputs > info.maxOutputs))
    throw PlanError(info.op + " has " +
                    countRange(info.minOutputs, info.maxOutputs) +
                    " outputs, got " + std::to_string(outputs));
  if (info.maxIndices >= 0 && args.numIndices > info.maxIndices)
    throw PlanError(info.op + " takes " + countRange(0, info.maxIndices) +
                    " index operands, got " + std::to_string(args.numIndices));

  for (const auto &[name, value] : args.kernel->attrs()) {
    if (isBookkeepingAttr(name))
      continue;
    const AttrSpec *spec = nullptr;
    for (const AttrSpec &candidate : info.attrs)
      if (candidate.name == name)
        spec = &candidate;
    if (!spec)
      throw PlanError(info.op + " has no attribute '" + name + "'");
    if (!accepts(spec->kind, value))
      throw PlanError(info.op + " attribute '" + name + "' must be " +
                      kindName(spec->kind) + ", got " + valueKindName(value));
  }
  for (const AttrSpec &spec : info.attrs)
    if (spec.required && !args.kernel->attrs().count(spec.name))
      throw PlanError(info.op + " needs attribute '" + spec.name + "' (" +
                      kindName(spec.kind) + ")");
  if (info.check)
    info.check(args);
}

} // namespace braid::rt
