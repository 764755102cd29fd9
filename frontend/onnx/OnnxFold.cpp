//===- OnnxFold.cpp - evaluating ONNX nodes at import time ----------------===//
//
// Nodes whose inputs are all known are evaluated on the host: this folds the
// shape computations (Shape -> Gather -> Concat -> Reshape), position ids
// (Range) and causal masks (Trilu, comparisons, Where, ScatterND) that
// exporters emit, so the braid IR has static shapes and no shape arithmetic.
//
// One rule per ONNX op type, looked up in a table (as the emitters are). A
// rule declares its operands the way the op's schema does (count, element
// types and which operands share one, ranks, how their shapes relate, its
// axis attribute), and checkOperands verifies all of that once, before any
// rule reads a value; the rules then only compute.
//
// FoldLayout rules (Identity, Transpose, Reshape, Cast, Squeeze, ...) compute a
// FoldLayout from the operands' shapes alone. Applied to a parameter, the
// result stays a parameter: a DerivedWeight with the bytes in the new layout,
// so a MatMul still reads a braid.get_weight whatever the exporter wrote.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ImporterImpl.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/StringExtras.h"

#include <array>
#include <climits>
#include <cmath>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::onnx_import;
using namespace mlir::braid::onnx_import::detail;

//===----------------------------------------------------------------------===//
// Rule signatures
//===----------------------------------------------------------------------===//

namespace mlir::braid::onnx_import::detail {
/// Element types an operand accepts.
enum class OperandTypes : uint8_t {
  Any,     // every type a host tensor holds
  Numeric, // integer or floating, not bool
  Float,   // floating
  Index,   // int32 or int64
  Int64,   // shapes
  Bool,
};

/// Ranks an operand accepts.
enum class OperandRank : uint8_t {
  Any,
  Scalar,   // rank 0, or one element of rank 1 (as onnxruntime accepts)
  Vector,   // rank 1
  AtLeast1, // not a scalar
  AtLeast2,
};

/// How the operands' shapes relate.
enum class ShapeRelation : uint8_t {
  Free,
  Broadcast,      // all operands broadcast together (numpy)
  ConcatAxis,     // equal except along the axis
  MatMul,         // numpy matmul: contraction sizes, batch broadcast
  ScatterND,      // updates = indices[:-1] + data[indices[-1]:]
  ElementsOnAxis, // GatherElements/ScatterElements: indices (and updates)
                  // of the data's rank, no larger off the axis
};

/// One operand of a rule.
struct FoldOperand {
  OperandTypes types = OperandTypes::Any;
  /// Operands with the same nonzero group share one element type.
  uint8_t group = 0;
  OperandRank rank = OperandRank::Any;
  bool optional = false;
  /// Only the operand's type and shape are read, never its values.
  bool typeAndShapeOnly = false;
};

/// A layout change: a new shape for the same elements, a permutation, or a
/// conversion of every element.
struct FoldLayout {
  SmallVector<int64_t, 4> shape;
  SmallVector<int64_t, 4> perm;
  int32_t castTo = kUndefined;
  /// Names the weight a layout of a weight becomes (`w.transpose`); empty
  /// for Identity, which keeps the weight itself.
  StringRef suffix;
};

using FoldFn = std::optional<HostTensor> (*)(FoldCall &);
using LayoutFn = FoldLayout (*)(FoldCall &);

/// How one ONNX op type folds.
struct FoldRule {
  /// Computes the result from known operands; std::nullopt leaves the node
  /// to its emitter (an attribute combination the rule does not cover).
  FoldFn fold = nullptr;
  /// For layout ops (instead of `fold`): the layout from the operands'
  /// shapes, applied to values and weights alike.
  LayoutFn layout = nullptr;
  SmallVector<FoldOperand, 4> operands;
  /// The last operand repeats (Concat, Max, Min).
  bool variadic = false;
  /// Operand 0 is a table the node reads rows of (Gather): a weight there
  /// stays a weight, so that a lookup at constant positions (GPT-2's
  /// position embedding) keeps its parameter instead of folding it into a
  /// constant that training could not update.
  bool keepsWeightTable = false;
  ShapeRelation shapes = ShapeRelation::Free;
  /// An axis attribute of operand 0, checked and normalized (FoldCall::axis).
  const char *axisAttr = nullptr;
  int64_t axisDefault = 0;

  FoldRule withShapes(ShapeRelation relation) const {
    FoldRule rule = *this;
    rule.shapes = relation;
    return rule;
  }
  FoldRule withAxis(const char *attr, int64_t defaultValue) const {
    FoldRule rule = *this;
    rule.axisAttr = attr;
    rule.axisDefault = defaultValue;
    return rule;
  }
  FoldRule keepingWeightTable() const {
    FoldRule rule = *this;
    rule.keepsWeightTable = true;
    return rule;
  }
  FoldRule repeatingLast() const {
    FoldRule rule = *this;
    rule.variadic = true;
    return rule;
  }
};

/// One evaluation of a rule on the current node: what checkOperands found,
/// the operands' values, and the importer's services for the rule.
struct FoldCall {
  Importer &importer;
  const FoldRule &rule;
  /// Per input: present (named), its ONNX type and shape.
  SmallVector<bool, 4> present;
  SmallVector<int32_t, 4> types;
  SmallVector<SmallVector<int64_t, 4>, 4> shapes;
  /// The rule's axis, normalized.
  int64_t axis = 0;

  FoldCall(Importer &importer, const FoldRule &rule)
      : importer(importer), rule(rule) {}

  unsigned size() const { return present.size(); }
  bool has(unsigned i) const { return i < present.size() && present[i]; }
  /// The known value of present operand `i`.
  const HostTensor &in(unsigned i) {
    return *importer.constant(importer.inputName(i));
  }
  /// The single element of a Scalar operand, as an integer.
  int64_t scalar(unsigned i) { return in(i).getInt(0); }
  int64_t intAttr(StringRef name, int64_t defaultValue) const {
    return importer.intAttr(name, defaultValue);
  }
  std::optional<SmallVector<int64_t, 4>> intsAttr(StringRef name) const {
    return importer.intsAttr(name);
  }
  [[noreturn]] void fail(const Twine &message) { importer.fail(message); }
  /// Fails unless a result of `shape` may be held on the host; when the op
  /// has an emitter, a result too large leaves the node to it instead.
  int64_t checkElements(ArrayRef<int64_t> shape) {
    std::optional<int64_t> n = checkedNumElements(shape);
    if (n && *n > importer.maxHostElements && importer.canEmit())
      throw TooLarge();
    return importer.checkHostElements(shape);
  }
  /// Thrown by checkElements when the node is better emitted.
  struct TooLarge {};
  StringRef op() const { return importer.node->op_type(); }
  /// The importer's helpers the rules share with the emitters.
  int64_t normalizeAxis(int64_t axis, int64_t rank) {
    return importer.normalizeAxis(axis, rank);
  }
  std::string stringAttr(StringRef name, StringRef defaultValue) const {
    return importer.stringAttr(name, defaultValue);
  }
  /// The node's attribute `name`, when it is a tensor: its value.
  std::optional<HostTensor> tensorAttr(StringRef name);
  const onnx::NodeProto &node() const { return *importer.node; }
  SmallVector<int64_t, 4> squeezedShape(ArrayRef<int64_t> shape, bool squeeze) {
    return importer.squeezedShape(shape, squeeze);
  }
  SmallVector<int64_t, 4> permutation(int64_t rank) {
    return importer.permutation(rank);
  }
  SmallVector<int64_t, 2> flattenedShape(ArrayRef<int64_t> shape) {
    return importer.flattenedShape(shape);
  }
  SmallVector<int64_t, 4> reshapeTarget(ArrayRef<int64_t> input,
                                        const HostTensor &shape,
                                        bool allowZero) {
    return importer.reshapeTarget(input, shape, allowZero);
  }
  /// Starts, sizes and steps of the node's Slice of `shape`.
  void sliceBox(ArrayRef<int64_t> shape, SmallVectorImpl<int64_t> &starts,
                SmallVectorImpl<int64_t> &sizes,
                SmallVectorImpl<int64_t> &steps) {
    Importer::SliceBox box = importer.sliceBox(shape);
    starts.assign(box.starts);
    sizes.assign(box.sizes);
    steps.assign(box.steps);
  }
  /// Reads a tensor held by the model (a Constant's value attribute).
  HostTensor readHost(const onnx::TensorProto &tensor) {
    SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
    checkElements(dims);
    llvm::Expected<RawTensor> raw = readTensor(tensor, importer.modelDir);
    if (!raw)
      fail(llvm::toString(raw.takeError()));
    llvm::Expected<HostTensor> host = toHost(*raw);
    if (!host)
      fail(llvm::toString(host.takeError()));
    return std::move(*host);
  }
};

static FoldOperand of(OperandTypes types, uint8_t group = 0,
                      OperandRank rank = OperandRank::Any) {
  FoldOperand o;
  o.types = types;
  o.group = group;
  o.rank = rank;
  return o;
}
static FoldOperand optionalOf(OperandTypes types, uint8_t group = 0,
                              OperandRank rank = OperandRank::Any) {
  FoldOperand o = of(types, group, rank);
  o.optional = true;
  return o;
}
static FoldOperand typeAndShape() {
  FoldOperand o;
  o.typeAndShapeOnly = true;
  return o;
}

} // namespace mlir::braid::onnx_import::detail

std::optional<HostTensor> FoldCall::tensorAttr(StringRef name) {
  const onnx::AttributeProto *attr = importer.attribute(name);
  if (!attr)
    return std::nullopt;
  return readHost(attr->t());
}

static std::string shapeText(ArrayRef<int64_t> shape) {
  return "[" +
         llvm::join(llvm::map_range(
                        shape, [](int64_t d) { return std::to_string(d); }),
                    ", ") +
         "]";
}

static bool accepts(OperandTypes types, int32_t type) {
  switch (types) {
  case OperandTypes::Any:
    return onnxTypeSize(type) > 0;
  case OperandTypes::Numeric:
    return onnxTypeSize(type) > 0 && type != kBool;
  case OperandTypes::Float:
    return isFloatType(type);
  case OperandTypes::Index:
    return type == kInt32 || type == kInt64;
  case OperandTypes::Int64:
    return type == kInt64;
  case OperandTypes::Bool:
    return type == kBool;
  }
  return false;
}

static StringRef typesText(OperandTypes types) {
  switch (types) {
  case OperandTypes::Any:
    return "a numeric or boolean tensor";
  case OperandTypes::Numeric:
    return "a numeric tensor";
  case OperandTypes::Float:
    return "a floating-point tensor";
  case OperandTypes::Index:
    return "an INT32 or INT64 tensor";
  case OperandTypes::Int64:
    return "an INT64 tensor";
  case OperandTypes::Bool:
    return "a BOOL tensor";
  }
  return "";
}

/// Checks that the current node has as many operands as `rule` declares and
/// every required one is named (for every node of the op type: its emitter
/// relies on that too).
static void checkOperandCount(FoldCall &call) {
  const FoldRule &rule = call.rule;
  unsigned count = call.size();
  size_t declared = rule.operands.size();
  unsigned required = 0;
  for (const FoldOperand &o : rule.operands)
    required += !o.optional;
  if (count < required || (!rule.variadic && count > declared)) {
    size_t most = rule.variadic ? required : declared;
    call.fail(call.op() + " takes " +
              (rule.variadic ? "at least " + Twine(required)
               : required == declared
                   ? Twine(declared)
                   : Twine(required) + " to " + Twine(declared)) +
              (most == 1 ? " input" : " inputs") + ", not " + Twine(count));
  }
  for (unsigned i = 0; i < count; ++i)
    if (!call.has(i) &&
        !rule.operands[std::min<size_t>(i, declared - 1)].optional)
      call.fail(call.op() + " input #" + Twine(i) +
                " is required but left out");
}

/// Checks the current node's operands against `rule` the way the op's schema
/// does: element types (and which must agree), ranks, the axis attribute,
/// and how the shapes relate; fails naming what differs. The shapes the
/// relation implies are checked against the host limit before any rule
/// allocates its result.
static void checkOperands(FoldCall &call) {
  const FoldRule &rule = call.rule;
  unsigned count = call.size();
  size_t declared = rule.operands.size();
  auto spec = [&](unsigned i) -> const FoldOperand & {
    return rule.operands[std::min<size_t>(i, declared - 1)];
  };
  std::array<int, 4> groupOwner;
  groupOwner.fill(-1);
  for (unsigned i = 0; i < count; ++i) {
    const FoldOperand &o = spec(i);
    if (!call.has(i) || o.typeAndShapeOnly)
      continue;
    int32_t type = call.types[i];
    if (!accepts(o.types, type))
      call.fail(call.op() + " input #" + Twine(i) + " must be " +
                typesText(o.types) + ", not " + onnxTypeName(type));
    if (o.group) {
      int &owner = groupOwner[o.group];
      if (owner < 0)
        owner = i;
      else if (call.types[owner] != type)
        call.fail(call.op() + " inputs #" + Twine(owner) + " and #" + Twine(i) +
                  " must have one element type, not " +
                  onnxTypeName(call.types[owner]) + " and " +
                  onnxTypeName(type));
    }
    ArrayRef<int64_t> shape = call.shapes[i];
    int64_t rank = shape.size();
    bool ok = true;
    switch (o.rank) {
    case OperandRank::Any:
      break;
    case OperandRank::Scalar:
      ok = rank == 0 || (rank == 1 && shape[0] == 1);
      break;
    case OperandRank::Vector:
      ok = rank == 1;
      break;
    case OperandRank::AtLeast1:
      ok = rank >= 1;
      break;
    case OperandRank::AtLeast2:
      ok = rank >= 2;
      break;
    }
    if (!ok)
      call.fail(call.op() + " input #" + Twine(i) + " must be " +
                (o.rank == OperandRank::Scalar     ? "a scalar"
                 : o.rank == OperandRank::Vector   ? "1-D"
                 : o.rank == OperandRank::AtLeast1 ? "of rank 1 or more"
                                                   : "of rank 2 or more") +
                ", not of shape " + shapeText(shape));
  }

  if (rule.axisAttr) {
    int64_t rank = call.shapes.empty() ? 0 : call.shapes[0].size();
    call.axis =
        call.normalizeAxis(call.intAttr(rule.axisAttr, rule.axisDefault), rank);
  }

  switch (rule.shapes) {
  case ShapeRelation::Free:
    return;
  case ShapeRelation::Broadcast: {
    SmallVector<int64_t, 4> result;
    for (unsigned i = 0; i < count; ++i) {
      std::optional<SmallVector<int64_t, 4>> joined =
          broadcastShapes(result, call.shapes[i]);
      if (!joined)
        call.fail(call.op() + " operand shapes " + shapeText(result) + " and " +
                  shapeText(call.shapes[i]) + " do not broadcast");
      result = *joined;
    }
    call.checkElements(result);
    return;
  }
  case ShapeRelation::ConcatAxis: {
    ArrayRef<int64_t> first = call.shapes[0];
    SmallVector<int64_t, 4> result(first);
    result[call.axis] = 0;
    for (unsigned i = 0; i < count; ++i) {
      ArrayRef<int64_t> shape = call.shapes[i];
      if (shape.size() != first.size())
        call.fail(call.op() + " input #" + Twine(i) + " has rank " +
                  Twine(shape.size()) + " but input #0 has rank " +
                  Twine(first.size()));
      bool fits = true;
      for (size_t d = 0; fits && d < shape.size(); ++d)
        fits = d == static_cast<size_t>(call.axis) || shape[d] == first[d];
      if (!fits)
        call.fail(call.op() + " input #" + Twine(i) + " of shape " +
                  shapeText(shape) + " does not fit input #0 of shape " +
                  shapeText(first) + " along axis " + Twine(call.axis));
      if (result[call.axis] > INT64_MAX - shape[call.axis])
        call.fail(call.op() + " result is too large");
      result[call.axis] += shape[call.axis];
    }
    call.checkElements(result);
    return;
  }
  case ShapeRelation::MatMul: {
    // numpy: a 1-D lhs gets a leading 1, a 1-D rhs a trailing 1.
    SmallVector<int64_t, 4> a(call.shapes[0]), b(call.shapes[1]);
    if (a.size() == 1)
      a.insert(a.begin(), 1);
    if (b.size() == 1)
      b.push_back(1);
    if (a.back() != b[b.size() - 2])
      call.fail(
          "MatMul contraction sizes differ: " + shapeText(call.shapes[0]) +
          " and " + shapeText(call.shapes[1]));
    std::optional<SmallVector<int64_t, 4>> batch = broadcastShapes(
        ArrayRef<int64_t>(a).drop_back(2), ArrayRef<int64_t>(b).drop_back(2));
    if (!batch)
      call.fail("MatMul batch dimensions of " + shapeText(call.shapes[0]) +
                " and " + shapeText(call.shapes[1]) + " do not broadcast");
    batch->append({a[a.size() - 2], b.back()});
    call.checkElements(*batch);
    return;
  }
  case ShapeRelation::ScatterND: {
    ArrayRef<int64_t> data = call.shapes[0], indices = call.shapes[1],
                      updates = call.shapes[2];
    int64_t k = indices.back();
    if (k < 1 || k > static_cast<int64_t>(data.size()))
      call.fail("ScatterND indices of shape " + shapeText(indices) + " index " +
                Twine(k) + " dimensions of data of shape " + shapeText(data));
    SmallVector<int64_t, 4> expected(indices.drop_back());
    expected.append(data.begin() + k, data.end());
    if (ArrayRef<int64_t>(expected) != updates)
      call.fail("ScatterND updates have shape " + shapeText(updates) +
                ", expected " + shapeText(expected));
    return;
  }
  case ShapeRelation::ElementsOnAxis: {
    ArrayRef<int64_t> data = call.shapes[0], indices = call.shapes[1];
    if (indices.size() != data.size())
      call.fail(call.op() + " indices of shape " + shapeText(indices) +
                " and data of shape " + shapeText(data) + " differ in rank");
    for (size_t d = 0; d < data.size(); ++d)
      if (d != static_cast<size_t>(call.axis) && indices[d] > data[d])
        call.fail(call.op() + " indices of shape " + shapeText(indices) +
                  " exceed data of shape " + shapeText(data) +
                  " in dimension " + Twine(d));
    if (count > 2 && call.shapes[2] != call.shapes[1])
      call.fail(call.op() + " updates of shape " + shapeText(call.shapes[2]) +
                " differ from indices of shape " + shapeText(indices));
    return;
  }
  }
}

//===----------------------------------------------------------------------===//
// Arithmetic helpers (integers wrap, as the kernels' two's complement does)
//===----------------------------------------------------------------------===//

/// `op` on the two's complement bits of `a` and `b`.
template <typename Op> static int64_t wrapping(int64_t a, int64_t b, Op op) {
  return static_cast<int64_t>(
      op(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
}
static int64_t wrapAdd(int64_t a, int64_t b) {
  return wrapping(a, b, std::plus<>());
}
static int64_t wrapSub(int64_t a, int64_t b) {
  return wrapping(a, b, std::minus<>());
}
static int64_t wrapMul(int64_t a, int64_t b) {
  return wrapping(a, b, std::multiplies<>());
}
static int64_t intPow(int64_t base, int64_t exponent) {
  if (exponent < 0)
    return base == 1 ? 1 : base == -1 ? (exponent % 2 ? -1 : 1) : 0;
  int64_t result = 1;
  for (; exponent; exponent >>= 1, base = wrapMul(base, base))
    if (exponent & 1)
      result = wrapMul(result, base);
  return result;
}

/// An elementwise rule over broadcast operands with result type `type`.
static std::optional<HostTensor>
elementwise(FoldCall &call, int32_t type,
            const std::function<double(double, double)> &floatFn,
            const std::function<int64_t(int64_t, int64_t)> &intFn) {
  HostTensor acc = call.in(0);
  for (unsigned i = 1; i < call.size(); ++i) {
    std::optional<HostTensor> next =
        broadcastBinary(acc, call.in(i), type, floatFn, intFn);
    acc = std::move(*next); // the shapes were checked to broadcast
  }
  acc.type = type;
  return acc;
}

template <typename FloatFn, typename IntFn>
static std::optional<HostTensor> sameType(FoldCall &call, FloatFn f, IntFn g) {
  return elementwise(call, call.types[0], f, g);
}

template <typename FloatFn, typename IntFn>
static std::optional<HostTensor> predicate(FoldCall &call, FloatFn f, IntFn g) {
  return elementwise(
      call, kBool, [&](double a, double b) -> double { return f(a, b); },
      [&](int64_t a, int64_t b) -> int64_t { return g(a, b); });
}

/// A unary rule on floating elements.
static std::optional<HostTensor> unaryFloat(FoldCall &call,
                                            double (*fn)(double)) {
  HostTensor t = call.in(0);
  for (double &v : t.floats)
    v = fn(v);
  return t;
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

static std::optional<HostTensor> foldConstant(FoldCall &call) {
  for (const onnx::AttributeProto &attr : call.node().attribute()) {
    StringRef name = attr.name();
    if (name == "value")
      return call.readHost(attr.t());
    if (name == "value_float")
      return HostTensor::filled(kFloat, {}, attr.f());
    if (name == "value_int")
      return HostTensor::scalarInt(attr.i());
    if (name == "value_ints")
      return HostTensor::ints1D(
          SmallVector<int64_t>(attr.ints().begin(), attr.ints().end()));
    if (name == "value_floats") {
      HostTensor t;
      t.type = kFloat;
      t.shape = {attr.floats_size()};
      t.floats.assign(attr.floats().begin(), attr.floats().end());
      return t;
    }
  }
  call.fail("has no value attribute Braid can read (value, value_float, "
            "value_int, value_ints, value_floats)");
}

static std::optional<HostTensor> foldShape(FoldCall &call) {
  ArrayRef<int64_t> shape = call.shapes[0];
  int64_t rank = shape.size();
  int64_t start = call.intAttr("start", 0), end = call.intAttr("end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  return HostTensor::ints1D(SmallVector<int64_t>(
      shape.begin() + start, shape.begin() + std::max(start, end)));
}

static std::optional<HostTensor> foldSize(FoldCall &call) {
  std::optional<int64_t> n = checkedNumElements(call.shapes[0]);
  if (!n)
    call.fail("the input has too many elements");
  return HostTensor::scalarInt(*n);
}

/// The values of an Int64 Vector operand.
static SmallVector<int64_t, 4> intsOf(const HostTensor &t) {
  return SmallVector<int64_t, 4>(t.ints.begin(), t.ints.end());
}

static std::optional<HostTensor> foldConstantOfShape(FoldCall &call) {
  SmallVector<int64_t, 4> dims = intsOf(call.in(0));
  call.checkElements(dims);
  HostTensor value = HostTensor::filled(kFloat, {}, 0.0);
  if (std::optional<HostTensor> given = call.tensorAttr("value")) {
    if (given->numElements() != 1)
      call.fail("ConstantOfShape's value must have one element, not " +
                Twine(given->numElements()));
    value = std::move(*given);
  }
  return HostTensor::filled(value.type, dims, value.getDouble(0));
}

static std::optional<HostTensor> foldRange(FoldCall &call) {
  const HostTensor &start = call.in(0), &limit = call.in(1),
                   &delta = call.in(2);
  HostTensor t;
  t.type = start.type;
  int64_t n;
  if (start.isFloat()) {
    double s = start.floats[0], d = delta.floats[0];
    if (d == 0)
      call.fail("Range delta is 0");
    double count = std::ceil((limit.floats[0] - s) / d);
    if (std::isnan(count))
      call.fail("Range has a NaN bound or delta");
    n = count <= 0 ? 0 : count >= 9.2e18 ? INT64_MAX : int64_t(count);
    call.checkElements({n});
    t.floats.reserve(n);
    for (int64_t i = 0; i < n; ++i)
      t.floats.push_back(s + i * d);
  } else {
    __int128 s = start.ints[0], l = limit.ints[0], d = delta.ints[0];
    if (d == 0)
      call.fail("Range delta is 0");
    // ceil((l - s) / d) without overflow.
    __int128 span = l - s, count = span / d;
    if (count * d != span && (span > 0) == (d > 0))
      ++count;
    n = count <= 0 ? 0 : count > INT64_MAX ? INT64_MAX : int64_t(count);
    call.checkElements({n});
    t.ints.reserve(n);
    for (int64_t i = 0; i < n; ++i)
      t.ints.push_back(wrapAdd(start.ints[0], wrapMul(i, delta.ints[0])));
  }
  t.shape = {n};
  return t;
}

static std::optional<HostTensor> foldDiv(FoldCall &call) {
  return sameType(call, std::divides<double>(),
                  [&](int64_t a, int64_t b) -> int64_t {
                    if (b == 0)
                      call.fail("integer division by zero");
                    return b == -1 ? wrapSub(0, a) : a / b;
                  });
}

static std::optional<HostTensor> foldPow(FoldCall &call) {
  return elementwise(
      call, call.types[0], [](double a, double b) { return std::pow(a, b); },
      intPow);
}

static std::optional<HostTensor> foldMod(FoldCall &call) {
  bool fmod = call.intAttr("fmod", 0) != 0;
  if (isFloatType(call.types[0]) && !fmod)
    call.fail("Mod of floating-point values needs fmod=1");
  return sameType(
      call, [](double a, double b) { return std::fmod(a, b); },
      [&](int64_t a, int64_t b) -> int64_t {
        if (b == 0)
          call.fail("integer modulo by zero");
        if (b == -1)
          return 0;
        int64_t r = a % b;
        // fmod=0: the sign follows the divisor (Python); fmod=1: the
        // dividend (C).
        return !fmod && r != 0 && (r < 0) != (b < 0) ? r + b : r;
      });
}

static std::optional<HostTensor> foldNot(FoldCall &call) {
  HostTensor t = call.in(0);
  for (int64_t &v : t.ints)
    v = !v;
  return t;
}

static std::optional<HostTensor> foldNeg(FoldCall &call) {
  HostTensor t = call.in(0);
  for (double &v : t.floats)
    v = -v;
  for (int64_t &v : t.ints)
    v = wrapSub(0, v);
  return t;
}

static std::optional<HostTensor> foldAbs(FoldCall &call) {
  HostTensor t = call.in(0);
  for (double &v : t.floats)
    v = std::fabs(v);
  for (int64_t &v : t.ints)
    v = v < 0 ? wrapSub(0, v) : v;
  return t;
}

static std::optional<HostTensor> foldMatMul(FoldCall &call) {
  HostTensor a = call.in(0), b = call.in(1);
  bool vectorA = a.shape.size() == 1, vectorB = b.shape.size() == 1;
  if (vectorA)
    a.shape.insert(a.shape.begin(), 1);
  if (vectorB)
    b.shape.push_back(1);
  int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(),
          n = b.shape.back();
  SmallVector<int64_t, 4> batch =
      *broadcastShapes(ArrayRef<int64_t>(a.shape).drop_back(2),
                       ArrayRef<int64_t>(b.shape).drop_back(2));
  // Broadcast both operands to the full batch, then multiply per batch.
  SmallVector<int64_t, 4> shapeA(batch), shapeB(batch), shape(batch);
  shapeA.append({m, k});
  shapeB.append({k, n});
  shape.append({m, n});
  call.checkElements(shapeA);
  call.checkElements(shapeB);
  HostTensor fa = broadcastTo(a, shapeA), fb = broadcastTo(b, shapeB);
  HostTensor out = HostTensor::filled(a.type, shape, 0.0);
  int64_t batches = m * n == 0 ? 0 : out.numElements() / (m * n);
  for (int64_t p = 0; p < batches; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t to = (p * m + i) * n + j;
        for (int64_t l = 0; l < k; ++l) {
          int64_t x = (p * m + i) * k + l, y = (p * k + l) * n + j;
          if (out.isFloat())
            out.floats[to] += fa.floats[x] * fb.floats[y];
          else
            out.ints[to] =
                wrapAdd(out.ints[to], wrapMul(fa.ints[x], fb.ints[y]));
        }
      }
  if (vectorB)
    shape.pop_back();
  if (vectorA)
    shape.erase(shape.end() - (vectorB ? 1 : 2));
  out.shape = shape;
  return out;
}

static std::optional<HostTensor> foldWhere(FoldCall &call) {
  const HostTensor &c = call.in(0), &a = call.in(1), &b = call.in(2);
  SmallVector<int64_t, 4> shape =
      *broadcastShapes(*broadcastShapes(c.shape, a.shape), b.shape);
  HostTensor cb = broadcastTo(c, shape), ab = broadcastTo(a, shape),
             bb = broadcastTo(b, shape);
  for (int64_t i = 0; i < ab.numElements(); ++i)
    if (!cb.ints[i])
      ab.copyElement(i, bb, i);
  return ab;
}

static std::optional<HostTensor> foldGather(FoldCall &call) {
  const HostTensor &data = call.in(0), &indices = call.in(1);
  SmallVector<int64_t, 4> shape(data.shape.begin(),
                                data.shape.begin() + call.axis);
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(data.shape.begin() + call.axis + 1, data.shape.end());
  call.checkElements(shape);
  std::optional<HostTensor> r = gather(data, indices, call.axis);
  if (!r)
    call.fail("an index is out of range for axis " + Twine(call.axis) +
              " of size " + Twine(data.shape[call.axis]));
  return r;
}

static std::optional<HostTensor> foldConcat(FoldCall &call) {
  SmallVector<const HostTensor *> inputs;
  for (unsigned i = 0; i < call.size(); ++i)
    inputs.push_back(&call.in(i));
  return concat(inputs, call.axis);
}

static std::optional<HostTensor> foldExpand(FoldCall &call) {
  const HostTensor &t = call.in(0);
  std::optional<SmallVector<int64_t, 4>> out =
      broadcastShapes(t.shape, intsOf(call.in(1)));
  if (!out)
    call.fail("cannot expand a tensor of shape " + shapeText(t.shape) + " to " +
              shapeText(intsOf(call.in(1))));
  call.checkElements(*out);
  return broadcastTo(t, *out);
}

static std::optional<HostTensor> foldTile(FoldCall &call) {
  const HostTensor &t = call.in(0);
  SmallVector<int64_t, 4> repeats = intsOf(call.in(1)), shape;
  if (repeats.size() != t.shape.size())
    call.fail("Tile has " + Twine(repeats.size()) + " repeats for rank " +
              Twine(t.shape.size()));
  for (auto [d, r] : llvm::zip(t.shape, repeats)) {
    if (r < 0)
      call.fail("Tile repeats must not be negative");
    if (r != 0 && d > INT64_MAX / r)
      call.fail("Tile result is too large");
    shape.push_back(d * r);
  }
  call.checkElements(shape);
  HostTensor out = HostTensor::filled(t.type, shape, 0);
  SmallVector<int64_t, 4> inStrides = rowMajorStrides(t.shape);
  SmallVector<int64_t, 4> index(shape.size(), 0);
  for (int64_t to = 0; to < out.numElements(); ++to) {
    int64_t from = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      from += (index[d] % t.shape[d]) * inStrides[d];
    out.copyElement(to, t, from);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

static std::optional<HostTensor> foldSlice(FoldCall &call) {
  const HostTensor &t = call.in(0);
  SmallVector<int64_t, 4> starts, sizes, steps;
  call.sliceBox(t.shape, starts, sizes, steps);
  return slice(t, starts, sizes, steps);
}

static std::optional<HostTensor> foldTrilu(FoldCall &call) {
  HostTensor t = call.in(0);
  int64_t k = call.has(1) ? call.scalar(1) : 0;
  bool upper = call.intAttr("upper", 1) != 0;
  int64_t rank = t.shape.size();
  int64_t rows = t.shape[rank - 2], cols = t.shape[rank - 1];
  for (int64_t i = 0; i < t.numElements(); ++i) {
    // Compared in 128 bits: k may be any int64.
    __int128 r = (i / cols) % rows, c = i % cols;
    bool keep = upper ? c - r >= k : c - r <= k;
    if (!keep) {
      if (t.isFloat())
        t.floats[i] = 0;
      else
        t.ints[i] = 0;
    }
  }
  return t;
}

static std::optional<HostTensor> foldCumSum(FoldCall &call) {
  HostTensor t = call.in(0);
  int64_t rank = t.shape.size();
  int64_t axis = call.normalizeAxis(call.scalar(1), rank);
  if (call.intAttr("exclusive", 0) || call.intAttr("reverse", 0))
    return std::nullopt;
  SmallVector<int64_t, 4> strides = rowMajorStrides(t.shape);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if ((i / strides[axis]) % t.shape[axis] == 0)
      continue;
    if (t.isFloat())
      t.floats[i] += t.floats[i - strides[axis]];
    else
      t.ints[i] = wrapAdd(t.ints[i], t.ints[i - strides[axis]]);
  }
  return t;
}

/// Combines a scattered update into `target` by the node's `reduction`.
static void scatterInto(FoldCall &call, HostTensor &out, int64_t to,
                        const HostTensor &updates, int64_t from,
                        StringRef reduction) {
  if (out.isFloat()) {
    double &t = out.floats[to], u = updates.floats[from];
    t = reduction == "add"   ? t + u
        : reduction == "mul" ? t * u
        : reduction == "max" ? std::max(t, u)
        : reduction == "min" ? std::min(t, u)
                             : u;
    return;
  }
  int64_t &t = out.ints[to], u = updates.ints[from];
  t = reduction == "add"   ? wrapAdd(t, u)
      : reduction == "mul" ? wrapMul(t, u)
      : reduction == "max" ? std::max(t, u)
      : reduction == "min" ? std::min(t, u)
                           : u;
}

static std::string scatterReduction(FoldCall &call) {
  std::string reduction = call.stringAttr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" &&
      reduction != "max" && reduction != "min")
    call.fail("unknown " + call.op() + " reduction '" + reduction + "'");
  return reduction;
}

static std::optional<HostTensor> foldScatterND(FoldCall &call) {
  const HostTensor &indices = call.in(1), &updates = call.in(2);
  HostTensor out = call.in(0);
  std::string reduction = scatterReduction(call);
  int64_t k = indices.shape.back();
  int64_t tuples = indices.numElements() / k;
  SmallVector<int64_t, 4> strides = rowMajorStrides(out.shape);
  int64_t block = 1;
  for (size_t d = k; d < out.shape.size(); ++d)
    block *= out.shape[d];
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t offset = 0;
    for (int64_t d = 0; d < k; ++d) {
      int64_t i = indices.ints[t * k + d], size = out.shape[d];
      if (i < -size || i >= size)
        call.fail("ScatterND index " + Twine(i) +
                  " is out of range for "
                  "dimension " +
                  Twine(d) + " of size " + Twine(size));
      offset += (i < 0 ? i + size : i) * strides[d];
    }
    for (int64_t e = 0; e < block; ++e)
      scatterInto(call, out, offset + e, updates, t * block + e, reduction);
  }
  return out;
}

/// Calls `fn(position, target)` for each element of `indices`, where target
/// is the flat data offset with the axis coordinate replaced by the index.
static void forEachOnAxis(FoldCall &call, ArrayRef<int64_t> dataShape,
                          const HostTensor &indices,
                          llvm::function_ref<void(int64_t, int64_t)> fn) {
  SmallVector<int64_t, 4> strides = rowMajorStrides(dataShape);
  SmallVector<int64_t, 4> index(indices.shape.size(), 0);
  int64_t size = dataShape[call.axis];
  for (int64_t p = 0; p < indices.numElements(); ++p) {
    int64_t i = indices.ints[p];
    if (i < -size || i >= size)
      call.fail(call.op() + " index " + Twine(i) +
                " is out of range for "
                "axis " +
                Twine(call.axis) + " of size " + Twine(size));
    int64_t target = 0;
    for (size_t d = 0; d < index.size(); ++d)
      target += (d == static_cast<size_t>(call.axis) ? (i < 0 ? i + size : i)
                                                     : index[d]) *
                strides[d];
    fn(p, target);
    for (int64_t d = static_cast<int64_t>(index.size()) - 1; d >= 0; --d) {
      if (++index[d] < indices.shape[d])
        break;
      index[d] = 0;
    }
  }
}

static std::optional<HostTensor> foldScatterElements(FoldCall &call) {
  HostTensor out = call.in(0);
  const HostTensor &updates = call.in(2);
  std::string reduction = scatterReduction(call);
  forEachOnAxis(call, out.shape, call.in(1), [&](int64_t p, int64_t target) {
    scatterInto(call, out, target, updates, p, reduction);
  });
  return out;
}

static std::optional<HostTensor> foldGatherElements(FoldCall &call) {
  const HostTensor &data = call.in(0), &indices = call.in(1);
  HostTensor out = HostTensor::filled(data.type, indices.shape, 0);
  forEachOnAxis(call, data.shape, indices, [&](int64_t p, int64_t source) {
    out.copyElement(p, data, source);
  });
  return out;
}

static std::optional<HostTensor> foldArgReduce(FoldCall &call) {
  const HostTensor &t = call.in(0);
  bool max = call.op() == "ArgMax";
  bool last = call.intAttr("select_last_index", 0) != 0;
  bool keepDims = call.intAttr("keepdims", 1) != 0;
  int64_t axis = call.axis, n = t.shape[axis];
  if (n == 0)
    call.fail(call.op() + " over an empty axis");
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= t.shape[d];
  for (size_t d = axis + 1; d < t.shape.size(); ++d)
    inner *= t.shape[d];
  SmallVector<int64_t, 4> shape(t.shape);
  if (keepDims)
    shape[axis] = 1;
  else
    shape.erase(shape.begin() + axis);
  HostTensor out = HostTensor::filled(kInt64, shape, 0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      int64_t best = 0;
      for (int64_t j = 1; j < n; ++j) {
        int64_t a = (o * n + j) * inner + i, b = (o * n + best) * inner + i;
        bool better, equal;
        if (t.isFloat()) {
          better = max ? t.floats[a] > t.floats[b] : t.floats[a] < t.floats[b];
          equal = t.floats[a] == t.floats[b];
        } else {
          better = max ? t.ints[a] > t.ints[b] : t.ints[a] < t.ints[b];
          equal = t.ints[a] == t.ints[b];
        }
        if (better || (last && equal))
          best = j;
      }
      out.ints[o * inner + i] = best;
    }
  return out;
}

static std::optional<HostTensor> foldNonZero(FoldCall &call) {
  const HostTensor &t = call.in(0);
  int64_t rank = t.shape.size(), n = t.numElements();
  SmallVector<int64_t> hits;
  for (int64_t i = 0; i < n; ++i)
    if (t.getDouble(i) != 0.0)
      hits.push_back(i);
  int64_t count = hits.size();
  call.checkElements({rank, count});
  HostTensor out = HostTensor::filled(kInt64, {rank, count}, 0);
  SmallVector<int64_t, 4> strides = rowMajorStrides(t.shape);
  for (int64_t h = 0; h < count; ++h)
    for (int64_t d = 0; d < rank; ++d)
      out.ints[d * count + h] = (hits[h] / strides[d]) % t.shape[d];
  return out;
}

//===----------------------------------------------------------------------===//
// FoldLayout rules
//===----------------------------------------------------------------------===//

static FoldLayout layoutIdentity(FoldCall &call) {
  return {SmallVector<int64_t, 4>(call.shapes[0]), {}, kUndefined, ""};
}

static FoldLayout layoutCast(FoldCall &call) {
  int32_t to =
      call.op() == "CastLike" ? call.types[1] : call.intAttr("to", kUndefined);
  if (onnxTypeSize(to) == 0)
    call.fail("Cast to " + onnxTypeName(to) + " is not supported");
  return {SmallVector<int64_t, 4>(call.shapes[0]), {}, to, "cast"};
}

static FoldLayout layoutTranspose(FoldCall &call) {
  SmallVector<int64_t, 4> perm = call.permutation(call.shapes[0].size()), shape;
  for (int64_t p : perm)
    shape.push_back(call.shapes[0][p]);
  return {shape, perm, kUndefined, "transpose"};
}

static FoldLayout layoutReshape(FoldCall &call) {
  return {call.reshapeTarget(call.shapes[0], call.in(1),
                             call.intAttr("allowzero", 0) != 0),
          {},
          kUndefined,
          "reshape"};
}

static FoldLayout layoutFlatten(FoldCall &call) {
  SmallVector<int64_t, 2> shape = call.flattenedShape(call.shapes[0]);
  return {SmallVector<int64_t, 4>(ArrayRef<int64_t>(shape)),
          {},
          kUndefined,
          "flatten"};
}

static FoldLayout layoutSqueeze(FoldCall &call) {
  return {call.squeezedShape(call.shapes[0], /*squeeze=*/true),
          {},
          kUndefined,
          "squeeze"};
}

static FoldLayout layoutUnsqueeze(FoldCall &call) {
  return {call.squeezedShape(call.shapes[0], /*squeeze=*/false),
          {},
          kUndefined,
          "unsqueeze"};
}

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

static FoldRule rule(FoldFn fold, std::initializer_list<FoldOperand> operands) {
  FoldRule r;
  r.fold = fold;
  r.operands.assign(operands.begin(), operands.end());
  return r;
}

static FoldRule layoutRule(LayoutFn layout,
                           std::initializer_list<FoldOperand> operands) {
  FoldRule r;
  r.layout = layout;
  r.operands.assign(operands.begin(), operands.end());
  return r;
}

/// Elementwise rules: `Kind` picks the operation.
enum class Arith { Add, Sub, Mul, Max, Min };
template <Arith Kind> static std::optional<HostTensor> foldArith(FoldCall &c) {
  switch (Kind) {
  case Arith::Add:
    return sameType(c, std::plus<double>(), wrapAdd);
  case Arith::Sub:
    return sameType(c, std::minus<double>(), wrapSub);
  case Arith::Mul:
    return sameType(c, std::multiplies<double>(), wrapMul);
  case Arith::Max:
    return sameType(
        c, [](double a, double b) { return std::fmax(a, b); },
        [](int64_t a, int64_t b) { return std::max(a, b); });
  case Arith::Min:
    return sameType(
        c, [](double a, double b) { return std::fmin(a, b); },
        [](int64_t a, int64_t b) { return std::min(a, b); });
  }
  return std::nullopt;
}

template <CompareKind Kind>
static std::optional<HostTensor> foldCompare(FoldCall &c) {
  auto compare = [](auto a, auto b) {
    switch (Kind) {
    case CompareKind::EQ:
      return a == b;
    case CompareKind::LT:
      return a < b;
    case CompareKind::LE:
      return a <= b;
    case CompareKind::GT:
      return a > b;
    case CompareKind::GE:
      return a >= b;
    default:
      return a != b;
    }
  };
  return predicate(
      c, [&](double a, double b) { return compare(a, b); },
      [&](int64_t a, int64_t b) { return compare(a, b); });
}

enum class Logic { And, Or, Xor };
template <Logic Kind> static std::optional<HostTensor> foldLogic(FoldCall &c) {
  auto apply = [](bool a, bool b) {
    return Kind == Logic::And ? a && b : Kind == Logic::Or ? a || b : a != b;
  };
  return predicate(
      c, [&](double a, double b) { return apply(a != 0, b != 0); },
      [&](int64_t a, int64_t b) { return apply(a != 0, b != 0); });
}

template <double (*Fn)(double)>
static std::optional<HostTensor> foldUnary(FoldCall &c) {
  return unaryFloat(c, Fn);
}

static double reciprocal(double v) { return 1.0 / v; }
static double sqrtOf(double v) { return std::sqrt(v); }
static double floorOf(double v) { return std::floor(v); }
static double ceilOf(double v) { return std::ceil(v); }
static double expOf(double v) { return std::exp(v); }
static double logOf(double v) { return std::log(v); }
static double cosOf(double v) { return std::cos(v); }
static double sinOf(double v) { return std::sin(v); }
static double tanhOf(double v) { return std::tanh(v); }

static const llvm::StringMap<FoldRule> &foldRules() {
  using T = OperandTypes;
  const FoldOperand any = of(T::Any), numeric = of(T::Numeric),
                    floating = of(T::Float), same = of(T::Any, 1),
                    sameNumeric = of(T::Numeric, 1), sameBool = of(T::Bool, 1),
                    shape = of(T::Int64, 0, OperandRank::Vector);
  const FoldRule add = rule(foldArith<Arith::Add>, {sameNumeric, sameNumeric})
                           .withShapes(ShapeRelation::Broadcast);
  auto binary = [&](FoldFn fn, FoldOperand operand) {
    return rule(fn, {operand, operand}).withShapes(ShapeRelation::Broadcast);
  };
  auto unary = [&](FoldFn fn, FoldOperand operand) {
    return rule(fn, {operand});
  };
  static const llvm::StringMap<FoldRule> rules = {
      // Constants and static shapes.
      {"Constant", rule(foldConstant, {})},
      {"Shape", rule(foldShape, {typeAndShape()})},
      {"Size", rule(foldSize, {typeAndShape()})},
      {"ConstantOfShape", rule(foldConstantOfShape, {shape})},
      {"Range", rule(foldRange, {of(T::Numeric, 1, OperandRank::Scalar),
                                 of(T::Numeric, 1, OperandRank::Scalar),
                                 of(T::Numeric, 1, OperandRank::Scalar)})},
      // Layouts: parameters stay parameters.
      {"Identity", layoutRule(layoutIdentity, {any})},
      {"Cast", layoutRule(layoutCast, {any})},
      {"CastLike", layoutRule(layoutCast, {any, typeAndShape()})},
      {"Transpose", layoutRule(layoutTranspose, {any})},
      {"Reshape", layoutRule(layoutReshape, {any, shape})},
      {"Flatten", layoutRule(layoutFlatten, {any})},
      {"Squeeze",
       layoutRule(layoutSqueeze,
                  {any, optionalOf(T::Int64, 0, OperandRank::Vector)})},
      {"Unsqueeze",
       layoutRule(layoutUnsqueeze,
                  {any, optionalOf(T::Int64, 0, OperandRank::Vector)})},
      // Arithmetic, comparisons, logic.
      {"Add", add},
      {"Sub", binary(foldArith<Arith::Sub>, sameNumeric)},
      {"Mul", binary(foldArith<Arith::Mul>, sameNumeric)},
      {"Div", binary(foldDiv, sameNumeric)},
      {"Pow", rule(foldPow, {of(T::Numeric, 1), of(T::Numeric, 2)})
                  .withShapes(ShapeRelation::Broadcast)},
      {"Max", rule(foldArith<Arith::Max>, {sameNumeric})
                  .repeatingLast()
                  .withShapes(ShapeRelation::Broadcast)},
      {"Min", rule(foldArith<Arith::Min>, {sameNumeric})
                  .repeatingLast()
                  .withShapes(ShapeRelation::Broadcast)},
      {"Mod", binary(foldMod, sameNumeric)},
      {"Equal", binary(foldCompare<CompareKind::EQ>, same)},
      {"Less", binary(foldCompare<CompareKind::LT>, sameNumeric)},
      {"LessOrEqual", binary(foldCompare<CompareKind::LE>, sameNumeric)},
      {"Greater", binary(foldCompare<CompareKind::GT>, sameNumeric)},
      {"GreaterOrEqual", binary(foldCompare<CompareKind::GE>, sameNumeric)},
      {"And", binary(foldLogic<Logic::And>, sameBool)},
      {"Or", binary(foldLogic<Logic::Or>, sameBool)},
      {"Xor", binary(foldLogic<Logic::Xor>, sameBool)},
      {"Not", unary(foldNot, of(T::Bool))},
      {"Neg", unary(foldNeg, numeric)},
      {"Abs", unary(foldAbs, numeric)},
      {"Sqrt", unary(foldUnary<sqrtOf>, floating)},
      {"Reciprocal", unary(foldUnary<reciprocal>, floating)},
      {"Floor", unary(foldUnary<floorOf>, floating)},
      {"Ceil", unary(foldUnary<ceilOf>, floating)},
      {"Exp", unary(foldUnary<expOf>, floating)},
      {"Log", unary(foldUnary<logOf>, floating)},
      {"Cos", unary(foldUnary<cosOf>, floating)},
      {"Sin", unary(foldUnary<sinOf>, floating)},
      {"Tanh", unary(foldUnary<tanhOf>, floating)},
      {"MatMul", rule(foldMatMul, {of(T::Numeric, 1, OperandRank::AtLeast1),
                                   of(T::Numeric, 1, OperandRank::AtLeast1)})
                     .withShapes(ShapeRelation::MatMul)},
      {"Where", rule(foldWhere, {of(T::Bool), same, same})
                    .withShapes(ShapeRelation::Broadcast)},
      {"ArgMax", rule(foldArgReduce, {of(T::Numeric, 0, OperandRank::AtLeast1)})
                     .withAxis("axis", 0)},
      {"ArgMin", rule(foldArgReduce, {of(T::Numeric, 0, OperandRank::AtLeast1)})
                     .withAxis("axis", 0)},
      // Data movement.
      {"Gather",
       rule(foldGather, {of(T::Any, 0, OperandRank::AtLeast1), of(T::Index)})
           .withAxis("axis", 0)
           .keepingWeightTable()},
      {"GatherElements",
       rule(foldGatherElements,
            {of(T::Any, 0, OperandRank::AtLeast1), of(T::Index)})
           .withAxis("axis", 0)
           .withShapes(ShapeRelation::ElementsOnAxis)},
      {"Concat", rule(foldConcat, {of(T::Any, 1, OperandRank::AtLeast1)})
                     .repeatingLast()
                     .withAxis("axis", 0)
                     .withShapes(ShapeRelation::ConcatAxis)},
      {"Expand", rule(foldExpand, {any, shape})},
      {"Tile", rule(foldTile, {any, shape})},
      // Before opset 10 the bounds are attributes (sliceBox reads either).
      {"Slice",
       rule(foldSlice, {any, optionalOf(T::Index, 1, OperandRank::Vector),
                        optionalOf(T::Index, 1, OperandRank::Vector),
                        optionalOf(T::Index, 1, OperandRank::Vector),
                        optionalOf(T::Index, 1, OperandRank::Vector)})},
      {"Trilu",
       rule(foldTrilu, {of(T::Any, 0, OperandRank::AtLeast2),
                        optionalOf(T::Int64, 0, OperandRank::Scalar)})},
      {"CumSum",
       rule(foldCumSum, {numeric, of(T::Index, 0, OperandRank::Scalar)})},
      {"ScatterND",
       rule(foldScatterND, {of(T::Any, 1, OperandRank::AtLeast1),
                            of(T::Int64, 0, OperandRank::AtLeast1), same})
           .withShapes(ShapeRelation::ScatterND)},
      {"ScatterElements",
       rule(foldScatterElements,
            {of(T::Any, 1, OperandRank::AtLeast1), of(T::Index), same})
           .withAxis("axis", 0)
           .withShapes(ShapeRelation::ElementsOnAxis)},
      {"NonZero", rule(foldNonZero, {of(T::Any, 0, OperandRank::AtLeast1)})},
  };
  return rules;
}

//===----------------------------------------------------------------------===//
// Folding the current node
//===----------------------------------------------------------------------===//

/// Applies `layout` to a known value.
static HostTensor apply(const FoldLayout &layout, HostTensor t) {
  if (!layout.perm.empty())
    return transpose(t, layout.perm);
  if (layout.castTo != kUndefined)
    return castTo(t, layout.castTo);
  t.shape = layout.shape;
  return t;
}

bool Importer::tryFold() {
  auto found = foldRules().find(node->op_type());
  if (found == foldRules().end())
    return false;
  const FoldRule &rule = found->second;
  FoldCall call(*this, rule);
  for (unsigned i = 0; i < numInputs(); ++i) {
    call.present.push_back(hasInput(i));
    call.types.push_back(kUndefined);
    call.shapes.emplace_back();
  }
  checkOperandCount(call);
  outputName(0); // fails for a node without outputs
  // Rules give one result; nodes asking for more are emitted.
  if (node->output_size() > 1)
    return false;

  if (rule.keepsWeightTable && hasInput(0) && isWeight(inputName(0)))
    return false;
  // Fold only when every value the rule reads is known (operand 0 of a
  // layout may be a parameter).
  for (unsigned i = 0; i < numInputs(); ++i) {
    if (!hasInput(i))
      continue;
    bool shapeOnly =
        !rule.operands.empty() &&
        rule.operands[std::min<size_t>(i, rule.operands.size() - 1)]
            .typeAndShapeOnly;
    if (!shapeOnly && !isKnown(inputName(i)))
      return false;
    call.types[i] = onnxTypeOf(inputName(i));
    call.shapes[i] = shapeOf(inputName(i));
  }
  try {
    checkOperands(call);
    return rule.layout ? foldLayout(call) : foldValue(call);
  } catch (const FoldCall::TooLarge &) {
    return false;
  }
}

bool Importer::foldValue(FoldCall &call) {
  std::optional<HostTensor> result = call.rule.fold(call);
  if (!result)
    return false;
  normalizeElements(*result);
  setConstant(outputName(0), std::move(*result));
  return true;
}

bool Importer::foldLayout(FoldCall &call) {
  FoldLayout layout = call.rule.layout(call);
  StringRef source = inputName(0), output = outputName(0);
  if (!isWeight(source)) {
    setConstant(output, apply(layout, *constant(source)));
    return true;
  }
  // Tied weights: a parameter read in another layout stays that parameter,
  // so the layout becomes an op on its read instead of a second weight.
  if ((options.layoutsOnReads || options.tieWeights) && !layout.suffix.empty())
    return false;
  // A parameter in another layout is a parameter: the same weight for
  // Identity, a new one otherwise.
  Entry &from = lookup(source);
  Entry result;
  if (layout.suffix.empty()) {
    result.value = from.value;
    result.initializer = from.initializer;
    result.derived = from.derived;
    values[output] = std::move(result);
    return true;
  }
  auto derived = std::make_shared<DerivedWeight>();
  derived->symbol =
      ((from.derived ? from.derived->symbol : from.initializer->name()) + "." +
       layout.suffix)
          .str();
  RawTensor data = weightData(source);
  if (!layout.perm.empty()) {
    data = transpose(data, layout.perm);
  } else if (layout.castTo != kUndefined) {
    checkHostElements(data.shape);
    llvm::Expected<HostTensor> host = toHost(data);
    if (!host)
      fail(llvm::toString(host.takeError()));
    llvm::Expected<RawTensor> cast = fromHost(castTo(*host, layout.castTo));
    if (!cast)
      fail(llvm::toString(cast.takeError()));
    data = std::move(*cast);
  } else {
    data.shape = layout.shape;
  }
  derived->data = std::move(data);
  result.derived = std::move(derived);
  values[output] = std::move(result);
  return true;
}

SmallVector<int64_t, 4> Importer::reshapeTarget(ArrayRef<int64_t> input,
                                                const HostTensor &shape,
                                                bool allowZero) {
  SmallVector<int64_t, 4> target;
  int64_t inferred = -1, known = 1, total = 1;
  std::optional<int64_t> elements = checkedNumElements(input);
  if (!elements)
    fail("the input has too many elements");
  total = *elements;
  for (int64_t i = 0; i < shape.numElements(); ++i) {
    int64_t d = shape.getInt(i);
    if (d == 0 && !allowZero) {
      if (i >= static_cast<int64_t>(input.size()))
        fail("shape entry " + Twine(i) +
             " is 0 (copy) but the input has rank " + Twine(input.size()));
      d = input[i];
    }
    if (d == -1) {
      if (inferred >= 0)
        fail("shape has more than one -1");
      inferred = i;
      target.push_back(1);
      continue;
    }
    if (d < 0)
      fail("shape entry " + Twine(i) + " is " + Twine(d));
    if (d != 0 && known > INT64_MAX / d)
      fail("the shape's sizes overflow");
    known *= d;
    target.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      fail("cannot infer the -1 of the shape: " + Twine(total) +
           " elements do not divide by " + Twine(known));
    target[inferred] = total / known;
  } else if (known != total) {
    fail("cannot reshape " + Twine(total) + " elements into " + Twine(known));
  }
  return target;
}

Importer::SliceBox Importer::sliceBox(ArrayRef<int64_t> shape) {
  int64_t rank = shape.size();
  SliceBox box;
  box.starts.assign(rank, 0);
  box.sizes.assign(shape.begin(), shape.end());
  box.steps.assign(rank, 1);
  SmallVector<int64_t, 4> starts, ends, axes, steps;
  if (opset < 10) {
    if (!intsAttr("starts") || !intsAttr("ends"))
      fail("Slice before opset 10 needs the starts and ends attributes");
    starts = *intsAttr("starts");
    ends = *intsAttr("ends");
    if (auto given = intsAttr("axes"))
      axes = *given;
  } else {
    if (!hasInput(1) || !hasInput(2))
      fail("Slice needs the starts and ends inputs");
    auto read = [&](unsigned i, StringRef what) {
      const HostTensor &t = requireConstant(inputName(i), what);
      SmallVector<int64_t, 4> v;
      for (int64_t k = 0; k < t.numElements(); ++k)
        v.push_back(t.getInt(k));
      return v;
    };
    starts = read(1, "Slice starts");
    ends = read(2, "Slice ends");
    if (hasInput(3))
      axes = read(3, "Slice axes");
    if (hasInput(4))
      steps = read(4, "Slice steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    fail("starts, ends, axes and steps have different lengths");
  SmallVector<bool, 4> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normalizeAxis(axes[i], rank), dim = shape[axis];
    if (seen[axis])
      fail("Slice axis " + Twine(axis) + " is given twice");
    seen[axis] = true;
    int64_t step = steps[i];
    if (step == 0)
      fail("Slice step is 0 on axis " + Twine(axis));
    // Negative bounds count from the end; any int64 is valid (no overflow:
    // one before the first element is -1).
    auto fromEnd = [&](int64_t v) {
      return v >= 0 ? v : v >= -dim ? v + dim : int64_t(-1);
    };
    int64_t start = fromEnd(starts[i]), end = fromEnd(ends[i]), size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? (end - start - 1) / step + 1 : 0;
    } else if (dim == 0) {
      start = 0;
      size = 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      int64_t stride = step == INT64_MIN ? INT64_MAX : -step;
      size = start > end ? (start - end - 1) / stride + 1 : 0;
    }
    box.starts[axis] = start;
    box.sizes[axis] = size;
    box.steps[axis] = step;
  }
  return box;
}
