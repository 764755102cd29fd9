//===- OnnxImporter.cpp - ONNX models to braid IR -------------------------===//
//
// One handler per ONNX op type, looked up in a table. Every node is first
// offered to the constant folder (all inputs known at import: shape
// computations, masks); otherwise its handler emits braid ops, whose own type
// inference gives the static result types.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ImporterImpl.h"

#include "dialects/braid/Locations.h"

#include "dialects/braid/BraidDialect.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <functional>
#include <queue>

#include <unistd.h>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::onnx_import;

void mlir::braid::onnx_import::registerImportDialects(MLIRContext &context) {
  context.loadDialect<BraidDialect, func::FuncDialect, arith::ArithDialect>();
}

using mlir::braid::onnx_import::detail::Importer;
using mlir::braid::onnx_import::detail::ImportFailure;

//===----------------------------------------------------------------------===//
// Diagnostics
//===----------------------------------------------------------------------===//

std::string Importer::describeNode() const {
  if (!node)
    return "graph";
  std::string text =
      node->name().empty()
          ? "node #" + std::to_string(nodeIndex) + " (" + node->op_type()
          : "node '" + node->name() + "' (" + node->op_type();
  bool defaultDomain = node->domain().empty() || node->domain() == "ai.onnx";
  text += ", domain '" +
          (defaultDomain ? std::string("ai.onnx") : node->domain()) + "'";
  // The opset of the node's own domain, as the model imports it.
  int64_t version = defaultDomain ? opset : -1;
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (!defaultDomain && set.domain() == node->domain())
      version = set.version();
  text += version >= 0 ? ", opset " + std::to_string(version) + ")"
                       : ", no opset imported)";
  return text;
}

void Importer::fail(const Twine &message) {
  // At the model file alone: the message names the node already.
  emitError(FileLineColLoc::get(context, modelPath, 0, 0))
      << describeNode() << ": " << message;
  throw ImportFailure();
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Importer::Entry &Importer::lookup(StringRef name) {
  auto it = values.find(name);
  if (it == values.end())
    fail("input '" + name + "' is not produced by any earlier node, graph " +
         "input or initializer");
  return it->second;
}

Type Importer::elementType(int32_t onnxType) {
  switch (onnxType) {
  case kFloat:
    return builder.getF32Type();
  case kFloat16:
    return builder.getF16Type();
  case kBFloat16:
    return builder.getBF16Type();
  case kInt64:
    return builder.getI64Type();
  case kInt32:
    return builder.getI32Type();
  case kBool:
    return builder.getI1Type();
  default:
    fail("element type " + onnxTypeName(onnxType) +
         " is not supported in computed tensors (Braid has f32, f16, bf16, "
         "i64, i32, bool)");
  }
}

/// ONNX element type of a braid element type.
static int32_t onnxTypeFor(Type type) {
  if (type.isF32())
    return kFloat;
  if (type.isF16())
    return kFloat16;
  if (type.isBF16())
    return kBFloat16;
  if (type.isInteger(64))
    return kInt64;
  if (type.isInteger(32))
    return kInt32;
  if (type.isInteger(1))
    return kBool;
  return kUndefined;
}

SmallVector<int64_t, 4> Importer::shapeOf(StringRef name) {
  Entry &e = lookup(name);
  if (e.value)
    return SmallVector<int64_t, 4>(
        cast<RankedTensorType>(e.value.getType()).getShape());
  if (e.constant)
    return e.constant->shape;
  if (e.derived)
    return e.derived->data.shape;
  return SmallVector<int64_t, 4>(e.initializer->dims().begin(),
                                 e.initializer->dims().end());
}

int32_t Importer::onnxTypeOf(StringRef name) {
  Entry &e = lookup(name);
  if (e.value)
    return onnxTypeFor(
        cast<RankedTensorType>(e.value.getType()).getElementType());
  if (e.constant)
    return e.constant->type;
  if (e.derived)
    return e.derived->data.type;
  return e.initializer->data_type();
}

int64_t Importer::initializerElements(const onnx::TensorProto &tensor) {
  SmallVector<int64_t> dims(tensor.dims().begin(), tensor.dims().end());
  std::optional<int64_t> n = checkedNumElements(dims);
  if (!n)
    fail("initializer '" + tensor.name() +
         "' has a negative dimension or too many elements");
  return *n;
}

int64_t Importer::checkHostElements(ArrayRef<int64_t> shape) {
  std::optional<int64_t> n = checkedNumElements(shape);
  if (!n)
    fail("a tensor of shape [" +
         llvm::join(llvm::map_range(
                        shape, [](int64_t d) { return std::to_string(d); }),
                    ", ") +
         "] has a negative dimension or too many elements");
  if (*n > maxHostElements)
    fail("evaluating it at import needs a tensor of " + Twine(*n) +
         " elements, more than this machine's memory allows (" +
         Twine(maxHostElements) + ")");
  return *n;
}

bool Importer::isKnown(StringRef name) {
  Entry &e = lookup(name);
  return e.constant || e.initializer || e.derived;
}

bool Importer::isWeight(StringRef name) {
  Entry &e = lookup(name);
  return e.derived ||
         (e.initializer && initializerElements(*e.initializer) > 1);
}

RawTensor Importer::weightData(StringRef name) {
  Entry &e = lookup(name);
  if (e.derived)
    return e.derived->data;
  llvm::Expected<RawTensor> raw = readTensor(*e.initializer, modelDir);
  if (!raw)
    fail(llvm::toString(raw.takeError()));
  return std::move(*raw);
}

const HostTensor *Importer::constant(StringRef name) {
  Entry &e = lookup(name);
  if (e.constant)
    return &*e.constant;
  if (!e.initializer && !e.derived)
    return nullptr;
  if (e.initializer)
    initializerElements(*e.initializer);
  checkHostElements(shapeOf(name));
  llvm::Expected<HostTensor> host = toHost(weightData(name));
  if (!host)
    fail(llvm::toString(host.takeError()));
  e.constant = std::move(*host);
  return &*e.constant;
}

const HostTensor &Importer::requireConstant(StringRef name, StringRef what) {
  const HostTensor *value = constant(name);
  if (!value)
    fail(what + " '" + name +
         "' is computed at run time; Braid needs it known when importing " +
         "(static shapes)");
  return *value;
}

void Importer::setValue(StringRef name, Value value) {
  if (name.empty())
    return;
  Entry e;
  e.value = value;
  values[name] = std::move(e);
}

void Importer::setConstant(StringRef name, HostTensor value) {
  if (name.empty())
    return;
  Entry e;
  e.constant = std::move(value);
  values[name] = std::move(e);
}

Value Importer::materialize(const HostTensor &value) {
  Type element = elementType(value.type);
  auto type = RankedTensorType::get(value.shape, element);
  DenseElementsAttr attr;
  if (auto floatType = dyn_cast<FloatType>(element)) {
    SmallVector<APFloat> items;
    items.reserve(value.floats.size());
    for (double v : value.floats) {
      APFloat f(v);
      bool losesInfo;
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &losesInfo);
      items.push_back(f);
    }
    attr = DenseElementsAttr::get(type, items);
  } else {
    unsigned width = element.getIntOrFloatBitWidth();
    SmallVector<APInt> items;
    items.reserve(value.ints.size());
    for (int64_t v : value.ints)
      items.push_back(APInt(width, static_cast<uint64_t>(v),
                            /*isSigned=*/width > 1, /*implicitTrunc=*/true));
    attr = DenseElementsAttr::get(type, items);
  }
  return ConstantOp::create(builder, loc, type, attr);
}

Value Importer::tiedWeight(const RawTensor &data) {
  if (data.shape.size() != 2 || !isFloatType(data.type))
    return Value();
  RawTensor transposed = transpose(data, {1, 0});
  for (const ImportedWeight &weight : weights) {
    const RawTensor &other = weight.data;
    if (other.type != data.type || other.bytes.size() != data.bytes.size())
      continue;
    bool same = other.shape == data.shape && other.bytes == data.bytes;
    bool flipped = other.shape == transposed.shape &&
                   other.bytes == transposed.bytes;
    if (!same && !flipped)
      continue;
    Value read = weightValues.lookup(weight.name);
    if (!read)
      continue;
    if (same)
      return read;
    auto type = RankedTensorType::get(data.shape, elementType(data.type));
    return TransposeOp::create(builder, loc, type, read,
                               builder.getDenseI64ArrayAttr({1, 0}));
  }
  return Value();
}

Value Importer::materializeWeight(StringRef symbol, RawTensor data,
                                  bool atTop) {
  RankedTensorType type = declareWeight(symbol, std::move(data));
  StringRef declared = weights.back().name;
  if (!atTop)
    return GetWeightOp::create(builder, loc, type,
                               FlatSymbolRefAttr::get(context, declared));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(entry);
  // Weights are read in order of first use, after the earlier reads.
  Operation *last = nullptr;
  for (Operation &op : *entry) {
    if (!isa<GetWeightOp>(op))
      break;
    last = &op;
  }
  if (last)
    builder.setInsertionPointAfter(last);
  return GetWeightOp::create(builder, function.getLoc(), type,
                             FlatSymbolRefAttr::get(context, declared));
}

RankedTensorType Importer::declareWeight(StringRef name, RawTensor data) {
  auto type = RankedTensorType::get(data.shape, elementType(data.type));
  // An initializer's weight keeps its name (reserved for it); any other
  // weight whose name is taken gets a numbered one.
  bool ownName = initializerNames.contains(name) && !weightSymbols.count(name);
  std::string symbol = name.str();
  for (int n = 2; !ownName && (weightSymbols.contains(symbol) ||
                               initializerNames.contains(symbol));
       ++n)
    symbol = (name + "." + Twine(n)).str();
  weightSymbols.insert(symbol);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(function);
  WeightOp::create(builder, function.getLoc(), builder.getStringAttr(symbol),
                   TypeAttr::get(type));
  weights.push_back({symbol, std::move(data)});
  return type;
}

Value Importer::tensor(StringRef name) {
  Entry &e = lookup(name);
  if (e.value)
    return e.value;
  if (e.derived) {
    // One weight per derived tensor, however many names alias it.
    if (!e.derived->value)
      e.derived->value = materializeWeight(e.derived->symbol, e.derived->data);
    return e.value = e.derived->value;
  }
  if (e.initializer && initializerElements(*e.initializer) > 1) {
    // Parameters become weights named as the initializer.
    StringRef symbol = e.initializer->name();
    auto it = weightValues.find(symbol);
    if (it == weightValues.end()) {
      RawTensor data = weightData(name);
      Value tied = options.tieWeights ? tiedWeight(data) : Value();
      it = weightValues
               .try_emplace(symbol, tied ? tied
                                         : materializeWeight(symbol,
                                                             std::move(data)))
               .first;
    }
    return e.value = it->second;
  }
  const HostTensor &known = *constant(name);
  int64_t n = known.numElements();
  bool asWeight = n > 1 && ((known.type != kBool && n > kMaxInlineElements) ||
                            parameterOperands.contains(name));
  if (!asWeight)
    return e.value = materialize(known);
  llvm::Expected<RawTensor> raw = fromHost(known);
  if (!raw)
    fail(llvm::toString(raw.takeError()));
  return e.value = materializeWeight(("folded." + name).str(), std::move(*raw),
                                     /*atTop=*/false);
}

Value Importer::input(unsigned i) {
  if (!hasInput(i))
    fail("missing required input #" + Twine(i));
  return tensor(inputName(i));
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

const onnx::AttributeProto *Importer::attribute(StringRef name) const {
  for (const onnx::AttributeProto &attr : node->attribute())
    if (attr.name() == name)
      return &attr;
  return nullptr;
}

int64_t Importer::intAttr(StringRef name, int64_t defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? attr->i() : defaultValue;
}

float Importer::floatAttr(StringRef name, float defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? attr->f() : defaultValue;
}

std::string Importer::stringAttr(StringRef name, StringRef defaultValue) const {
  const onnx::AttributeProto *attr = attribute(name);
  return attr ? attr->s() : defaultValue.str();
}

std::optional<SmallVector<int64_t, 4>>
Importer::intsAttr(StringRef name) const {
  const onnx::AttributeProto *attr = attribute(name);
  if (!attr)
    return std::nullopt;
  return SmallVector<int64_t, 4>(attr->ints().begin(), attr->ints().end());
}

std::optional<SmallVector<int64_t, 4>> Importer::axesFrom(StringRef attr,
                                                          unsigned index) {
  if (auto axes = intsAttr(attr))
    return axes;
  if (!hasInput(index))
    return std::nullopt;
  const HostTensor &axes = requireConstant(inputName(index), "axes");
  SmallVector<int64_t, 4> result;
  for (int64_t i = 0; i < axes.numElements(); ++i)
    result.push_back(axes.getInt(i));
  return result;
}

int64_t Importer::normalizeAxis(int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    fail("axis " + Twine(axis) + " is out of range for rank " + Twine(rank));
  return normalized;
}

SmallVector<int64_t, 4> Importer::squeezedShape(ArrayRef<int64_t> in,
                                                bool squeeze) {
  std::optional<SmallVector<int64_t, 4>> axes = axesFrom("axes", 1);
  SmallVector<int64_t, 4> shape;
  if (squeeze) {
    int64_t rank = in.size();
    SmallVector<bool> removed(rank, false);
    if (axes)
      for (int64_t a : *axes) {
        int64_t d = normalizeAxis(a, rank);
        if (in[d] != 1)
          fail("cannot squeeze dimension " + Twine(d) + " of size " +
               Twine(in[d]));
        removed[d] = true;
      }
    for (int64_t d = 0; d < rank; ++d)
      if (!(axes ? removed[d] : in[d] == 1))
        shape.push_back(in[d]);
    return shape;
  }
  if (!axes)
    fail("Unsqueeze needs axes");
  int64_t rank = in.size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    int64_t d = normalizeAxis(a, rank);
    if (inserted[d])
      fail("Unsqueeze axis " + Twine(a) + " is given twice");
    inserted[d] = true;
  }
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    shape.push_back(inserted[d] ? 1 : in[next++]);
  return shape;
}

SmallVector<int64_t, 4> Importer::permutation(int64_t rank) {
  SmallVector<int64_t, 4> perm;
  if (auto given = intsAttr("perm"))
    perm = *given;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  SmallVector<bool> seen(rank, false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t p : perm) {
    valid &= p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    fail("perm [" +
         llvm::join(
             llvm::map_range(perm, [](int64_t p) { return std::to_string(p); }),
             ", ") +
         "] is not a permutation of 0.." + Twine(rank - 1));
  return perm;
}

SmallVector<int64_t, 2> Importer::flattenedShape(ArrayRef<int64_t> in) {
  int64_t rank = in.size();
  int64_t axis = intAttr("axis", 1);
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized > rank)
    fail("axis " + Twine(axis) + " is out of range for Flatten of rank " +
         Twine(rank));
  std::optional<int64_t> outer = checkedNumElements(in.take_front(normalized)),
                         inner = checkedNumElements(in.drop_front(normalized));
  if (!outer || !inner)
    fail("the input has too many elements");
  return {*outer, *inner};
}

//===----------------------------------------------------------------------===//
// Graph
//===----------------------------------------------------------------------===//

RankedTensorType Importer::inputType(const onnx::ValueInfoProto &info) {
  if (!info.type().has_tensor_type())
    fail("graph input '" + info.name() + "' is not a tensor");
  const onnx::TypeProto_Tensor &tensorType = info.type().tensor_type();
  SmallVector<int64_t, 4> shape;
  auto given = options.inputShapes.find(info.name());
  if (given != options.inputShapes.end()) {
    shape = given->second;
    if (tensorType.has_shape() &&
        tensorType.shape().dim_size() != static_cast<int>(shape.size()))
      fail("--input-shape gives " + Twine(shape.size()) +
           " dimensions for graph input '" + info.name() + "' of rank " +
           Twine(tensorType.shape().dim_size()));
    // A size the model states must not be overridden.
    if (tensorType.has_shape())
      for (auto [d, dim] : llvm::enumerate(tensorType.shape().dim()))
        if (dim.has_dim_value() && dim.dim_value() != shape[d])
          fail("--input-shape gives size " + Twine(shape[d]) +
               " to dimension " + Twine(d) + " of graph input '" + info.name() +
               "', which the model fixes at " + Twine(dim.dim_value()));
  } else {
    if (!tensorType.has_shape())
      fail("graph input '" + info.name() +
           "' has no shape; give one with --input-shape " + info.name() +
           "=AxB...");
    for (auto [d, dim] : llvm::enumerate(tensorType.shape().dim())) {
      if (!dim.has_dim_value() || dim.dim_value() < 0)
        fail("graph input '" + info.name() + "' has a dynamic dimension " +
             Twine(d) +
             (dim.has_dim_param() ? " ('" + dim.dim_param() + "')"
                                  : std::string()) +
             "; Braid needs static shapes: give them with --input-shape " +
             info.name() + "=AxB...");
      shape.push_back(dim.dim_value());
    }
  }
  if (!checkedNumElements(shape))
    fail("graph input '" + info.name() + "' has too many elements");
  return RankedTensorType::get(shape, elementType(tensorType.elem_type()));
}

SmallVector<int> Importer::orderNodes() {
  const onnx::GraphProto &graph = model.graph();
  int numNodes = graph.node_size();
  // A unit is a node, or every node of an MoE block (named by its TopK).
  auto unitOf = [&](int n) {
    auto owner = moeNodeOwner.find(n);
    return owner == moeNodeOwner.end() ? n : moeBlocks[owner->second].topK;
  };
  llvm::StringMap<int> producer;
  for (int n = 0; n < numNodes; ++n)
    for (const std::string &out : graph.node(n).output()) {
      if (out.empty())
        continue;
      auto [it, inserted] = producer.try_emplace(out, n);
      if (!inserted) {
        node = &graph.node(n);
        nodeIndex = n;
        fail("output '" + out + "' is also produced by node #" +
             Twine(it->second) + " (" + graph.node(it->second).op_type() + ")");
      }
    }
  llvm::StringSet<> graphInputs;
  for (const onnx::ValueInfoProto &info : graph.input())
    graphInputs.insert(info.name());

  SmallVector<SmallVector<int, 2>> successors(numNodes);
  SmallVector<int> waitingFor(numNodes, 0);
  for (int n = 0; n < numNodes; ++n)
    for (const std::string &in : graph.node(n).input()) {
      if (in.empty())
        continue; // an optional input left out
      auto it = producer.find(in);
      if (it != producer.end()) {
        int from = unitOf(it->second), to = unitOf(n);
        if (from != to) {
          successors[from].push_back(to);
          ++waitingFor[to];
        }
        continue;
      }
      if (graphInputs.contains(in) || initializerNames.contains(in))
        continue;
      node = &graph.node(n);
      nodeIndex = n;
      fail("input '" + in +
           "' is not produced by any node, graph input or initializer");
    }

  // Kahn's algorithm, taking the ready unit that comes first in the file.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int n = 0; n < numNodes; ++n)
    if (unitOf(n) == n && waitingFor[n] == 0)
      ready.push(n);
  SmallVector<int> result;
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    result.push_back(n);
    for (int next : successors[n])
      if (--waitingFor[next] == 0)
        ready.push(next);
  }
  if (static_cast<int>(result.size()) ==
      llvm::count_if(llvm::seq(0, numNodes),
                     [&](int n) { return unitOf(n) == n; }))
    return result;
  // Some units wait forever: walk from one of them to what it waits for
  // until a node repeats; that node is on a cycle.
  auto waitingInput = [&](int n) -> const std::string * {
    for (const std::string &in : graph.node(n).input()) {
      auto it = producer.find(in);
      if (!in.empty() && it != producer.end() &&
          waitingFor[unitOf(it->second)] > 0)
        return &in;
    }
    return nullptr;
  };
  int n = *llvm::find_if(llvm::seq(0, numNodes), [&](int m) {
    return waitingFor[unitOf(m)] > 0 && waitingInput(m);
  });
  llvm::DenseSet<int> seen;
  while (seen.insert(n).second) {
    const std::string *in = waitingInput(n);
    if (!in)
      break;
    n = producer.lookup(*in);
  }
  node = &graph.node(n);
  nodeIndex = n;
  if (const std::string *in = waitingInput(n))
    fail("input '" + *in + "' depends on this node's own result: the graph " +
         "has a cycle");
  fail("the graph has a cycle through this node");
}

void Importer::importGraph() {
  const onnx::GraphProto &graph = model.graph();
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      opset = set.version();
  if (opset == 0)
    fail("the model imports no version of the default ONNX domain");

  for (const auto &given : options.inputShapes) {
    bool known = llvm::any_of(graph.input(), [&](const auto &info) {
      return info.name() == given.getKey();
    });
    if (!known)
      fail("--input-shape names '" + given.getKey() +
           "', which is not a graph input");
  }
  for (const onnx::TensorProto &init : graph.initializer()) {
    Entry e;
    e.initializer = &init;
    values[init.name()] = std::move(e);
    initializerNames.insert(init.name());
  }

  SmallVector<Type> argTypes;
  SmallVector<const onnx::ValueInfoProto *> args;
  for (const onnx::ValueInfoProto &info : graph.input()) {
    if (initializerNames.contains(info.name()))
      continue; // an initializer with a default value (old IR versions)
    argTypes.push_back(inputType(info));
    args.push_back(&info);
  }

  builder.setInsertionPointToEnd(module.getBody());
  std::string graphName = graph.name().empty() ? "main" : graph.name();
  graphLoc = onnxGraphLocation(context, modelPath, graphName);
  loc = graphLoc;
  function = func::FuncOp::create(builder, graphLoc, "main",
                                  builder.getFunctionType(argTypes, {}));
  entry = function.addEntryBlock();
  for (auto [i, info] : llvm::enumerate(args)) {
    function.setArgAttr(i, "braid.name", builder.getStringAttr(info->name()));
    setValue(info->name(), entry->getArgument(i));
  }
  builder.setInsertionPointToEnd(entry);

  // Operands that tensor parallelism partitions: known ones are weights.
  for (const onnx::NodeProto &n : graph.node()) {
    StringRef op = n.op_type();
    for (auto [i, in] : llvm::enumerate(n.input()))
      if (op == "MatMul" || op == "Gemm" || op == "Einsum" ||
          (op == "Gather" && i == 0))
        parameterOperands.insert(in);
  }

  // Nodes in dependency order first (MoE raising walks the graph in that
  // order), then again with each MoE block as one unit: the block is emitted
  // once everything it reads from outside exists.
  order = orderNodes();
  positionOf.assign(graph.node_size(), 0);
  for (auto [position, n] : llvm::enumerate(order))
    positionOf[n] = position;
  findMoeBlocks();
  if (!moeBlocks.empty())
    order = orderNodes();

  int total = order.size();
  for (auto [i, n] : llvm::enumerate(order)) {
    if (options.showProgress && (i % 64 == 0 || (int)i + 1 == total))
      llvm::errs() << "\rbraid: importing node " << i + 1 << "/" << total;
    importNode(n);
  }
  if (options.showProgress && total > 0)
    llvm::errs() << "\n";
  node = nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &info : graph.output()) {
    loc = graphLoc;
    if (!values.count(info.name()))
      fail("graph output '" + info.name() +
           "' is not produced by any node, graph input or initializer");
    Value value = tensor(info.name());
    results.push_back(value);
    resultTypes.push_back(value.getType());
  }
  func::ReturnOp::create(builder, loc, results);
  function.setType(builder.getFunctionType(argTypes, resultTypes));
  for (auto [i, info] : llvm::enumerate(graph.output()))
    function.setResultAttr(i, "braid.name", builder.getStringAttr(info.name()));
}

void Importer::importNode(int index) {
  const onnx::NodeProto &current = model.graph().node(index);
  node = &current;
  nodeIndex = index;
  std::string name =
      current.name().empty()
          ? "#" + std::to_string(index) + " " + current.op_type()
          : current.name();
  loc = onnxNodeLocation(graphLoc, name);
  auto owner = moeNodeOwner.find(index);
  if (owner != moeNodeOwner.end()) {
    emitMoeBlock(moeBlocks[owner->second]);
    return;
  }
  if (!current.domain().empty() && current.domain() != "ai.onnx")
    fail("unsupported operator: Braid imports only the default ONNX domain");
  if (tryFold())
    return;
  emitNode();
}

/// A quarter of the machine's physical memory, in host elements of 8 bytes.
static int64_t memoryBoundElements() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return int64_t(1) << 30; // 8 GiB of elements when the OS does not say
  return static_cast<int64_t>(pages) / 32 * pageSize;
}

FailureOr<ImportedModel> Importer::run() {
  maxHostElements = options.maxHostElements > 0 ? options.maxHostElements
                                                : memoryBoundElements();
  loc = FileLineColLoc::get(context, modelPath, 0, 0);
  module = ModuleOp::create(loc);
  OwningOpRef<ModuleOp> owned(module);
  try {
    if (!model.has_graph())
      fail("the model has no graph");
    importGraph();
  } catch (const ImportFailure &) {
    return failure();
  }
  if (failed(verify(module)))
    return failure();
  ImportedModel result;
  result.module = std::move(owned);
  result.weights = std::move(weights);
  return result;
}

FailureOr<ImportedModel>
mlir::braid::onnx_import::importModel(const onnx::ModelProto &model,
                                      StringRef modelPath, MLIRContext *context,
                                      const ImportOptions &options) {
  registerImportDialects(*context);
  Importer importer(model, modelPath, context, options);
  return importer.run();
}
