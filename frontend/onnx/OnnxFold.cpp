//===- OnnxFold.cpp - evaluating ONNX nodes at import time ----------------===//
//
// Nodes whose inputs are all known are evaluated on the host: this folds the
// shape computations (Shape -> Gather -> Concat -> Reshape), position ids
// (Range) and causal masks (Trilu, comparisons, Where) that exporters emit, so
// the braid IR has static shapes and no shape arithmetic.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ImporterImpl.h"

#include "onnx/onnx_pb.h"

#include <climits>
#include <cmath>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::onnx_import;
using namespace mlir::braid::onnx_import::detail;

/// Reads the `value*` attribute of a Constant node.
static std::optional<HostTensor> constantAttr(const onnx::NodeProto &node,
                                              StringRef modelDir,
                                              std::string &error) {
  for (const onnx::AttributeProto &attr : node.attribute()) {
    StringRef name = attr.name();
    if (name == "value") {
      llvm::Expected<RawTensor> raw = readTensor(attr.t(), modelDir);
      if (!raw) {
        error = llvm::toString(raw.takeError());
        return std::nullopt;
      }
      llvm::Expected<HostTensor> host = toHost(*raw);
      if (!host) {
        error = llvm::toString(host.takeError());
        return std::nullopt;
      }
      return std::move(*host);
    }
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
  error = "has no value attribute Braid can read (value, value_float, "
          "value_int, value_ints, value_floats)";
  return std::nullopt;
}

bool Importer::tryFold() {
  StringRef op = node->op_type();
  if (op == "Constant") {
    std::string error;
    std::optional<HostTensor> value = constantAttr(*node, modelDir, error);
    if (!value)
      fail(error);
    setConstant(outputName(0), std::move(*value));
    return true;
  }
  // Shape and Size only need the static type of their input.
  if (op == "Shape") {
    SmallVector<int64_t, 4> shape = shapeOf(inputName(0));
    int64_t rank = shape.size();
    int64_t start = intAttr("start", 0), end = intAttr("end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    SmallVector<int64_t> dims(shape.begin() + start,
                              shape.begin() + std::max(start, end));
    setConstant(outputName(0), HostTensor::ints1D(dims));
    return true;
  }
  if (op == "Size") {
    int64_t n = 1;
    for (int64_t d : shapeOf(inputName(0)))
      n *= d;
    setConstant(outputName(0), HostTensor::scalarInt(n));
    return true;
  }
  if (node->output_size() != 1)
    return false;
  // Folding may read parameters too (a transposed or cast weight, rotary
  // tables computed from a frequency buffer); a large folded result becomes
  // a weight again when it is materialized.
  for (unsigned i = 0; i < numInputs(); ++i)
    if (hasInput(i) && !constant(inputName(i)))
      return false;
  std::optional<HostTensor> result = foldCurrent();
  if (!result || result->numElements() > options.maxFoldElements)
    return false;
  setConstant(outputName(0), std::move(*result));
  return true;
}

/// ONNX type of a comparison result.
static constexpr int32_t kCompareType = kBool;

SmallVector<int64_t, 4> Importer::reshapeTarget(ArrayRef<int64_t> input,
                                                const HostTensor &shape,
                                                bool allowZero) {
  SmallVector<int64_t, 4> target;
  int64_t inferred = -1, known = 1, total = 1;
  for (int64_t d : input)
    total *= d;
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
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normalizeAxis(axes[i], rank), dim = shape[axis];
    int64_t step = steps[i];
    if (step == 0)
      fail("Slice step is 0 on axis " + Twine(axis));
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t size;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      size = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      size = start > end ? (start - end - step - 1) / -step : 0;
    }
    box.starts[axis] = start;
    box.sizes[axis] = size;
    box.steps[axis] = step;
  }
  return box;
}

std::optional<HostTensor> Importer::foldCurrent() {
  StringRef op = node->op_type();
  auto in = [&](unsigned i) -> const HostTensor & {
    return *constant(inputName(i));
  };
  auto binary = [&](int32_t type, std::function<double(double, double)> f,
                    std::function<int64_t(int64_t, int64_t)> g) {
    std::optional<HostTensor> r = broadcastBinary(in(0), in(1), type, f, g);
    if (!r)
      fail("operand shapes do not broadcast");
    return r;
  };
  auto unaryFloat =
      [&](std::function<double(double)> f) -> std::optional<HostTensor> {
    HostTensor t = in(0);
    if (!t.isFloat())
      return std::nullopt;
    for (double &v : t.floats)
      v = f(v);
    if (t.type == kFloat)
      for (double &v : t.floats)
        v = static_cast<float>(v);
    return t;
  };
  auto roundToType = [](std::optional<HostTensor> t) {
    if (t && t->type == kFloat)
      for (double &v : t->floats)
        v = static_cast<float>(v);
    return t;
  };

  if (op == "Identity")
    return in(0);
  if (op == "Cast")
    return castTo(in(0), intAttr("to", kFloat));
  if (op == "CastLike")
    return castTo(in(0), in(1).type);
  if (op == "ConstantOfShape") {
    const HostTensor &shape = in(0);
    SmallVector<int64_t> dims;
    for (int64_t i = 0; i < shape.numElements(); ++i)
      dims.push_back(shape.getInt(i));
    std::optional<int64_t> n = checkedNumElements(dims);
    if (!n)
      fail("ConstantOfShape's shape is negative or overflows");
    if (*n > options.maxFoldElements)
      return std::nullopt;
    HostTensor value = HostTensor::filled(kFloat, {}, 0.0);
    if (const onnx::AttributeProto *attr = attribute("value")) {
      llvm::Expected<RawTensor> raw = readTensor(attr->t(), modelDir);
      if (!raw)
        fail(llvm::toString(raw.takeError()));
      llvm::Expected<HostTensor> host = toHost(*raw);
      if (!host)
        fail(llvm::toString(host.takeError()));
      value = std::move(*host);
    }
    return HostTensor::filled(value.type, dims, value.getDouble(0));
  }
  if (op == "Add")
    return roundToType(
        binary(in(0).type, std::plus<double>(), std::plus<int64_t>()));
  if (op == "Sub")
    return roundToType(
        binary(in(0).type, std::minus<double>(), std::minus<int64_t>()));
  if (op == "Mul")
    return roundToType(binary(in(0).type, std::multiplies<double>(),
                              std::multiplies<int64_t>()));
  if (op == "Div")
    return roundToType(
        binary(in(0).type, std::divides<double>(), [&](int64_t a, int64_t b) {
          if (b == 0)
            fail("integer division by zero");
          return a / b;
        }));
  if (op == "Pow")
    return roundToType(binary(
        in(0).type, [](double a, double b) { return std::pow(a, b); },
        [](int64_t a, int64_t b) {
          return static_cast<int64_t>(std::pow(a, b));
        }));
  if (op == "Max" && numInputs() == 2)
    return binary(
        in(0).type, [](double a, double b) { return std::max(a, b); },
        [](int64_t a, int64_t b) { return std::max(a, b); });
  if (op == "Min" && numInputs() == 2)
    return binary(
        in(0).type, [](double a, double b) { return std::min(a, b); },
        [](int64_t a, int64_t b) { return std::min(a, b); });
  if (op == "Mod" && !in(0).isFloat())
    return binary(
        in(0).type, [](double a, double b) { return std::fmod(a, b); },
        [&](int64_t a, int64_t b) {
          if (b == 0)
            fail("integer modulo by zero");
          int64_t r = a % b; // ONNX fmod=0: the sign follows the divisor.
          return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
        });
  if (op == "Equal")
    return binary(
        kCompareType, [](double a, double b) { return a == b; },
        [](int64_t a, int64_t b) { return a == b; });
  if (op == "Less")
    return binary(
        kCompareType, [](double a, double b) { return a < b; },
        [](int64_t a, int64_t b) { return a < b; });
  if (op == "LessOrEqual")
    return binary(
        kCompareType, [](double a, double b) { return a <= b; },
        [](int64_t a, int64_t b) { return a <= b; });
  if (op == "Greater")
    return binary(
        kCompareType, [](double a, double b) { return a > b; },
        [](int64_t a, int64_t b) { return a > b; });
  if (op == "GreaterOrEqual")
    return binary(
        kCompareType, [](double a, double b) { return a >= b; },
        [](int64_t a, int64_t b) { return a >= b; });
  if (op == "And")
    return binary(
        kBool, [](double a, double b) { return a && b; },
        [](int64_t a, int64_t b) { return a && b; });
  if (op == "Or")
    return binary(
        kBool, [](double a, double b) { return a || b; },
        [](int64_t a, int64_t b) { return a || b; });
  if (op == "Xor")
    return binary(
        kBool, [](double a, double b) { return (a != 0) != (b != 0); },
        [](int64_t a, int64_t b) { return (a != 0) != (b != 0); });
  if (op == "Not") {
    HostTensor t = in(0);
    for (int64_t &v : t.ints)
      v = !v;
    return t;
  }
  if (op == "Neg") {
    HostTensor t = in(0);
    for (double &v : t.floats)
      v = -v;
    for (int64_t &v : t.ints)
      v = -v;
    return t;
  }
  if (op == "Abs") {
    HostTensor t = in(0);
    for (double &v : t.floats)
      v = std::fabs(v);
    for (int64_t &v : t.ints)
      v = v < 0 ? -v : v;
    return t;
  }
  if (op == "Sqrt")
    return unaryFloat([](double v) { return std::sqrt(v); });
  if (op == "Reciprocal")
    return unaryFloat([](double v) { return 1.0 / v; });
  if (op == "Floor")
    return unaryFloat([](double v) { return std::floor(v); });
  if (op == "Ceil")
    return unaryFloat([](double v) { return std::ceil(v); });
  if (op == "Exp")
    return unaryFloat([](double v) { return std::exp(v); });
  if (op == "Log")
    return unaryFloat([](double v) { return std::log(v); });
  if (op == "Cos")
    return unaryFloat([](double v) { return std::cos(v); });
  if (op == "Sin")
    return unaryFloat([](double v) { return std::sin(v); });
  if (op == "Tanh")
    return unaryFloat([](double v) { return std::tanh(v); });
  if (op == "MatMul") {
    const HostTensor &a = in(0), &b = in(1);
    if (a.shape.size() < 2 || b.shape.size() < 2)
      return std::nullopt;
    int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(),
            n = b.shape.back();
    if (b.shape[b.shape.size() - 2] != k)
      fail("MatMul contraction sizes differ");
    ArrayRef<int64_t> batchA = ArrayRef<int64_t>(a.shape).drop_back(2);
    ArrayRef<int64_t> batchB = ArrayRef<int64_t>(b.shape).drop_back(2);
    std::optional<SmallVector<int64_t, 4>> batch =
        broadcastShapes(batchA, batchB);
    if (!batch)
      fail("MatMul batch dimensions do not broadcast");
    // Broadcast both operands to the full batch, then multiply per batch.
    SmallVector<int64_t, 4> shapeA(*batch), shapeB(*batch);
    shapeA.append({m, k});
    shapeB.append({k, n});
    HostTensor fa = castTo(broadcastTo(a, shapeA), kDouble);
    HostTensor fb = castTo(broadcastTo(b, shapeB), kDouble);
    SmallVector<int64_t, 4> shape(*batch);
    shape.append({m, n});
    HostTensor out = HostTensor::filled(a.type, shape, 0.0);
    int64_t batches = out.numElements() / (m * n);
    for (int64_t p = 0; p < batches; ++p)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (int64_t l = 0; l < k; ++l)
            sum +=
                fa.floats[(p * m + i) * k + l] * fb.floats[(p * k + l) * n + j];
          if (out.isFloat())
            out.floats[(p * m + i) * n + j] = sum;
          else
            out.ints[(p * m + i) * n + j] = static_cast<int64_t>(sum);
        }
    return roundToType(out);
  }
  if (op == "Where") {
    const HostTensor &c = in(0), &a = in(1), &b = in(2);
    std::optional<SmallVector<int64_t, 4>> shape =
        broadcastShapes(c.shape, a.shape);
    if (shape)
      shape = broadcastShapes(*shape, b.shape);
    if (!shape)
      fail("condition and values do not broadcast");
    HostTensor cb = broadcastTo(c, *shape), ab = broadcastTo(a, *shape),
               bb = broadcastTo(b, *shape);
    for (int64_t i = 0; i < ab.numElements(); ++i)
      if (!cb.ints[i]) {
        if (ab.isFloat())
          ab.floats[i] = bb.getDouble(i);
        else
          ab.ints[i] = bb.getInt(i);
      }
    return ab;
  }
  if (op == "Gather") {
    const HostTensor &data = in(0);
    int64_t axis = normalizeAxis(intAttr("axis", 0), data.shape.size());
    std::optional<HostTensor> r = gather(data, in(1), axis);
    if (!r)
      fail("an index is out of range for axis " + Twine(axis) + " of size " +
           Twine(data.shape[axis]));
    return r;
  }
  if (op == "Concat") {
    SmallVector<const HostTensor *> inputs;
    for (unsigned i = 0; i < numInputs(); ++i)
      if (hasInput(i))
        inputs.push_back(&in(i));
    if (inputs.empty())
      fail("Concat needs at least one input");
    int64_t axis =
        normalizeAxis(intAttr("axis", 0), inputs.front()->shape.size());
    return concat(inputs, axis);
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    HostTensor t = in(0);
    std::optional<SmallVector<int64_t, 4>> axes = axesFrom("axes", 1);
    SmallVector<int64_t, 4> shape;
    if (op == "Unsqueeze") {
      if (!axes)
        fail("Unsqueeze needs axes");
      int64_t rank = t.shape.size() + axes->size();
      SmallVector<bool> inserted(rank, false);
      for (int64_t a : *axes) {
        int64_t d = normalizeAxis(a, rank);
        if (inserted[d])
          fail("Unsqueeze axis " + Twine(a) + " is given twice");
        inserted[d] = true;
      }
      size_t next = 0;
      for (int64_t d = 0; d < rank; ++d)
        shape.push_back(inserted[d] ? 1 : t.shape[next++]);
    } else {
      int64_t rank = t.shape.size();
      SmallVector<bool> removed(rank, false);
      if (axes)
        for (int64_t a : *axes) {
          int64_t d = normalizeAxis(a, rank);
          if (t.shape[d] != 1)
            fail("cannot squeeze dimension " + Twine(d) + " of size " +
                 Twine(t.shape[d]));
          removed[d] = true;
        }
      for (int64_t d = 0; d < rank; ++d)
        if (!(axes ? removed[d] : t.shape[d] == 1))
          shape.push_back(t.shape[d]);
    }
    t.shape = shape;
    return t;
  }
  if (op == "Reshape") {
    HostTensor t = in(0);
    t.shape = reshapeTarget(t.shape, in(1), intAttr("allowzero", 0));
    return t;
  }
  if (op == "Flatten") {
    HostTensor t = in(0);
    int64_t rank = t.shape.size();
    int64_t axis = intAttr("axis", 1);
    axis = axis < 0 ? axis + rank : axis;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d)
      (d < axis ? outer : inner) *= t.shape[d];
    t.shape = {outer, inner};
    return t;
  }
  if (op == "Expand") {
    const HostTensor &t = in(0), &shape = in(1);
    SmallVector<int64_t> dims;
    for (int64_t i = 0; i < shape.numElements(); ++i)
      dims.push_back(shape.getInt(i));
    std::optional<SmallVector<int64_t, 4>> out = broadcastShapes(t.shape, dims);
    if (!out)
      fail("cannot expand the input to the given shape");
    std::optional<int64_t> n = checkedNumElements(*out);
    if (!n)
      fail("Expand's shape is negative or overflows");
    if (*n > options.maxFoldElements)
      return std::nullopt;
    return broadcastTo(t, *out);
  }
  if (op == "Transpose") {
    const HostTensor &t = in(0);
    SmallVector<int64_t, 4> perm;
    if (auto given = intsAttr("perm"))
      perm = *given;
    else
      for (int64_t d = t.shape.size() - 1; d >= 0; --d)
        perm.push_back(d);
    SmallVector<bool> seen(t.shape.size(), false);
    if (perm.size() != t.shape.size())
      fail("perm has " + Twine(perm.size()) + " entries for rank " +
           Twine(t.shape.size()));
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(t.shape.size()) || seen[p])
        fail("perm is not a permutation of the dimensions");
      seen[p] = true;
    }
    return transpose(t, perm);
  }
  if (op == "Slice") {
    SliceBox box = sliceBox(in(0).shape);
    return slice(in(0), box.starts, box.sizes, box.steps);
  }
  if (op == "Range") {
    const HostTensor &start = in(0), &limit = in(1), &delta = in(2);
    HostTensor t;
    t.type = start.type;
    double s = start.getDouble(0), l = limit.getDouble(0),
           d = delta.getDouble(0);
    if (d == 0)
      fail("Range delta is 0");
    double count = std::ceil((l - s) / d);
    if (!(count <= static_cast<double>(options.maxFoldElements)))
      fail("Range has more than " + Twine(options.maxFoldElements) +
           " elements, the import's folding limit");
    int64_t n = std::max<int64_t>(0, static_cast<int64_t>(count));
    t.shape = {n};
    for (int64_t i = 0; i < n; ++i) {
      if (t.isFloat())
        t.floats.push_back(s + i * d);
      else
        t.ints.push_back(start.getInt(0) + i * delta.getInt(0));
    }
    return roundToType(t);
  }
  if (op == "Trilu") {
    HostTensor t = in(0);
    int64_t k = hasInput(1) ? in(1).getInt(0) : 0;
    bool upper = intAttr("upper", 1);
    int64_t rank = t.shape.size();
    if (rank < 2)
      fail("Trilu needs a tensor of rank 2 or more");
    int64_t rows = t.shape[rank - 2], cols = t.shape[rank - 1];
    for (int64_t i = 0; i < t.numElements(); ++i) {
      int64_t r = (i / cols) % rows, c = i % cols;
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
  if (op == "CumSum") {
    HostTensor t = in(0);
    int64_t rank = t.shape.size();
    int64_t axis = normalizeAxis(in(1).getInt(0), rank);
    if (intAttr("exclusive", 0) || intAttr("reverse", 0))
      return std::nullopt;
    SmallVector<int64_t, 4> strides = rowMajorStrides(t.shape);
    for (int64_t i = 0; i < t.numElements(); ++i) {
      if ((i / strides[axis]) % t.shape[axis] == 0)
        continue;
      if (t.isFloat())
        t.floats[i] += t.floats[i - strides[axis]];
      else
        t.ints[i] += t.ints[i - strides[axis]];
    }
    return t;
  }
  return std::nullopt;
}
