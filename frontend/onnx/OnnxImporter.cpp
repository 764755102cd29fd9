//===- OnnxImporter.cpp - ONNX models to braid IR -------------------------===//
//
// One handler per ONNX op type, looked up in a table. Every node is first
// offered to the constant folder (all inputs known at import: shape
// computations, masks); otherwise its handler emits braid ops, whose own type
// inference gives the static result types.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ImporterImpl.h"

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
  emitError(loc) << describeNode() << ": " << message;
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

const HostTensor *Importer::constant(StringRef name) {
  Entry &e = lookup(name);
  if (e.constant)
    return &*e.constant;
  if (e.initializer) {
    if (initializerElements(*e.initializer) > options.maxFoldElements)
      return nullptr;
    llvm::Expected<RawTensor> raw = readTensor(*e.initializer, modelDir);
    if (!raw)
      fail(llvm::toString(raw.takeError()));
    llvm::Expected<HostTensor> host = toHost(*raw);
    if (!host)
      fail(llvm::toString(host.takeError()));
    e.constant = std::move(*host);
    return &*e.constant;
  }
  return nullptr;
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

Value Importer::materializeWeight(StringRef name,
                                  const onnx::TensorProto &tensor) {
  auto it = weightValues.find(name);
  if (it != weightValues.end())
    return it->second;
  llvm::Expected<RawTensor> raw = readTensor(tensor, modelDir);
  if (!raw)
    fail(llvm::toString(raw.takeError()));
  RankedTensorType type = declareWeight(name, std::move(*raw));
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
  Value value = GetWeightOp::create(builder, function.getLoc(), type,
                                    FlatSymbolRefAttr::get(context, name));
  weightValues[name] = value;
  return value;
}

RankedTensorType Importer::declareWeight(StringRef name, RawTensor data) {
  auto type = RankedTensorType::get(data.shape, elementType(data.type));
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPoint(function);
  WeightOp::create(builder, function.getLoc(), builder.getStringAttr(name),
                   TypeAttr::get(type));
  weights.push_back({name.str(), std::move(data)});
  return type;
}

/// Encodes a host tensor as little-endian bytes of its element type.
static RawTensor encode(const HostTensor &value) {
  RawTensor raw;
  raw.type = value.type;
  raw.shape = value.shape;
  auto append = [&](auto v) {
    raw.bytes.append(reinterpret_cast<const char *>(&v), sizeof(v));
  };
  for (int64_t i = 0; i < value.numElements(); ++i) {
    switch (value.type) {
    case kFloat:
      append(static_cast<float>(value.floats[i]));
      break;
    case kDouble:
      append(value.floats[i]);
      break;
    case kFloat16:
    case kBFloat16: {
      APFloat f(value.floats[i]);
      bool losesInfo;
      f.convert(value.type == kFloat16 ? APFloat::IEEEhalf()
                                       : APFloat::BFloat(),
                APFloat::rmNearestTiesToEven, &losesInfo);
      append(static_cast<uint16_t>(f.bitcastToAPInt().getZExtValue()));
      break;
    }
    default:
      break;
    }
  }
  return raw;
}

Value Importer::materializeFoldedWeight(StringRef name,
                                        const HostTensor &value) {
  std::string symbol = ("folded." + name).str();
  RankedTensorType type = declareWeight(symbol, encode(value));
  return GetWeightOp::create(builder, loc, type,
                             FlatSymbolRefAttr::get(context, symbol));
}

Value Importer::tensor(StringRef name) {
  Entry &e = lookup(name);
  if (e.value)
    return e.value;
  if (e.initializer) {
    // Parameters become weights; single numbers are inlined.
    if (initializerElements(*e.initializer) > 1) {
      e.value = materializeWeight(name, *e.initializer);
      return e.value;
    }
    constant(name);
  }
  e.value =
      e.constant->isFloat() && e.constant->numElements() > kMaxInlineFloats
          ? materializeFoldedWeight(name, *e.constant)
          : materialize(*e.constant);
  return e.value;
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
  return RankedTensorType::get(shape, elementType(tensorType.elem_type()));
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
  llvm::StringSet<> initializerNames;
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
  function = func::FuncOp::create(
      builder,
      NameLoc::get(builder.getStringAttr(graphName),
                   FileLineColLoc::get(context, modelPath, 0, 0)),
      "main", builder.getFunctionType(argTypes, {}));
  entry = function.addEntryBlock();
  for (auto [i, info] : llvm::enumerate(args)) {
    function.setArgAttr(i, "braid.name", builder.getStringAttr(info->name()));
    setValue(info->name(), entry->getArgument(i));
  }
  builder.setInsertionPointToEnd(entry);

  int total = graph.node_size();
  findMoeBlocks();
  for (auto [i, n] : llvm::enumerate(graph.node())) {
    if (options.showProgress && (i % 64 == 0 || (int)i + 1 == total))
      llvm::errs() << "\rbraid: importing node " << i + 1 << "/" << total;
    nodeIndex = i;
    auto owner = moeNodeOwner.find(i);
    if (owner == moeNodeOwner.end()) {
      importNode(n);
      continue;
    }
    const MoeBlock &block = moeBlocks[owner->second];
    if (block.topK == static_cast<int>(i)) {
      node = &n;
      loc = NameLoc::get(builder.getStringAttr(n.name()),
                         FileLineColLoc::get(context, modelPath, 0, 0));
      emitMoeBlock(block);
    }
  }
  if (options.showProgress && total > 0)
    llvm::errs() << "\n";
  node = nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const onnx::ValueInfoProto &info : graph.output()) {
    loc = NameLoc::get(builder.getStringAttr(info.name()),
                       FileLineColLoc::get(context, modelPath, 0, 0));
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

void Importer::importNode(const onnx::NodeProto &current) {
  node = &current;
  std::string name =
      current.name().empty() ? current.op_type() : current.name();
  loc = NameLoc::get(builder.getStringAttr(name),
                     FileLineColLoc::get(context, modelPath, 0, 0));
  if (!current.domain().empty() && current.domain() != "ai.onnx")
    fail("unsupported operator: Braid imports only the default ONNX domain");
  if (tryFold())
    return;
  emitNode();
}

FailureOr<ImportedModel> Importer::run() {
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
