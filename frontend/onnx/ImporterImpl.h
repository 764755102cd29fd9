//===- ImporterImpl.h - the ONNX importer's internal state -------*- C++
//-*-===//
//
// Private to frontend/onnx: the importer class shared by OnnxImporter.cpp (the
// graph walk and value bookkeeping), OnnxFold.cpp (constant folding) and
// OnnxEmit.cpp (braid ops per ONNX op type).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_FRONTEND_ONNX_IMPORTERIMPL_H
#define BRAID_FRONTEND_ONNX_IMPORTERIMPL_H

#include "frontend/onnx/OnnxImporter.h"

#include "dialects/braid/BraidDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/onnx_pb.h"
#include "llvm/Support/Path.h"

#include <memory>

namespace mlir {
namespace braid {
namespace onnx_import {
namespace detail {

/// Signals that a diagnostic was already emitted.
struct ImportFailure {};

/// One evaluation of a folding rule (OnnxFold.cpp).
struct FoldCall;

/// A parameter in a new layout: a Transpose, Reshape, Cast, ... of a weight,
/// evaluated at import and stored as a weight of its own.
struct DerivedWeight {
  /// The weight symbol: the initializer's name and one suffix per layout op
  /// (`fc1.weight.transpose`), made unique when it is declared.
  std::string symbol;
  RawTensor data;
  /// The get_weight reading it, once materialized.
  Value value;
};

/// Imports one model; see OnnxImporter.h.
class Importer {
public:
  Importer(const onnx::ModelProto &model, StringRef modelPath,
           MLIRContext *context, const ImportOptions &options)
      : model(model), modelPath(modelPath.str()), context(context),
        options(options), builder(context), loc(UnknownLoc::get(context)),
        graphLoc(UnknownLoc::get(context)) {
    modelDir = llvm::sys::path::parent_path(modelPath).str();
    if (modelDir.empty())
      modelDir = ".";
  }

  FailureOr<ImportedModel> run();

private:
  friend struct FoldCall;

  /// What the importer knows about one ONNX value.
  struct Entry {
    /// The braid tensor, once materialized.
    Value value;
    /// The value, when it is known at import time.
    std::optional<HostTensor> constant;
    /// The initializer holding the value (read when first needed).
    const onnx::TensorProto *initializer = nullptr;
    /// A weight in a new layout, when the value is one.
    std::shared_ptr<DerivedWeight> derived;
  };

  // --- diagnostics ---------------------------------------------------------
  /// Emits an error about the current node and aborts its import.
  [[noreturn]] void fail(const Twine &message);
  std::string describeNode() const;

  // --- values --------------------------------------------------------------
  Entry &lookup(StringRef name);
  /// The value's static shape.
  SmallVector<int64_t, 4> shapeOf(StringRef name);
  /// The value's ONNX element type.
  int32_t onnxTypeOf(StringRef name);
  /// The value as a braid tensor, materializing constants and weights.
  Value tensor(StringRef name);
  /// The value if it is known at import time (reading initializers).
  const HostTensor *constant(StringRef name);
  /// Whether constant(name) would give a value (without reading it).
  bool isKnown(StringRef name);
  /// Whether the value is a parameter: an initializer with more than one
  /// element, or a layout of one (DerivedWeight).
  bool isWeight(StringRef name);
  /// The bytes of a parameter (isWeight).
  RawTensor weightData(StringRef name);
  /// Like constant(), but fails naming `what` when the value is computed.
  const HostTensor &requireConstant(StringRef name, StringRef what);
  void setValue(StringRef name, Value value);
  void setConstant(StringRef name, HostTensor value);
  /// An inline braid.constant holding `value`.
  Value materialize(const HostTensor &value);
  /// Declares weight `symbol` (made unique) with `data` and reads it with a
  /// get_weight: parameters at the top of the function, after the earlier
  /// reads; other weights (`atTop` false) where they are first used.
  /// With ImportOptions::tieWeights: an earlier weight holding `data` or
  /// its transpose, read (and transposed) here; null if there is none.
  Value tiedWeight(const RawTensor &data);
  Value materializeWeight(StringRef symbol, RawTensor data, bool atTop = true);
  /// Declares a weight symbol (before the function) with `data` for the
  /// weights file: `name` for an initializer's weight, otherwise `name` or,
  /// when taken, `name.2`, `name.3`, ... (the symbol is weights.back().name).
  /// Returns its type. Callers read it with get_weight.
  RankedTensorType declareWeight(StringRef name, RawTensor data);
  /// Elements of an initializer; fails on a negative or overflowing shape.
  int64_t initializerElements(const onnx::TensorProto &tensor);
  /// Fails unless a host tensor of `shape` fits the import's
  /// maxHostElements; returns its number of elements.
  int64_t checkHostElements(ArrayRef<int64_t> shape);
  /// Known tensors (Constant nodes, folded results) with more than this many
  /// elements become weights named `folded.<value>` instead of inline
  /// constants, unless they are boolean (masks stay visible to the attention
  /// raising); so are known operands of MatMul, Gemm, Einsum and embedding
  /// Gathers of any size above one element.
  static constexpr int64_t kMaxInlineElements = 1 << 16;
  Type elementType(int32_t onnxType);

  // --- node access ---------------------------------------------------------
  unsigned numInputs() const { return node->input_size(); }
  bool hasInput(unsigned i) const {
    return i < numInputs() && !node->input(i).empty();
  }
  StringRef inputName(unsigned i) {
    if (i >= numInputs())
      fail("needs input #" + Twine(i) + " but has " + Twine(numInputs()) +
           " inputs");
    return node->input(i);
  }
  Value input(unsigned i);
  StringRef outputName(unsigned i) {
    if (static_cast<int>(i) >= node->output_size())
      fail("needs output #" + Twine(i) + " but has " +
           Twine(node->output_size()) + " outputs");
    return node->output(i);
  }
  const onnx::AttributeProto *attribute(StringRef name) const;
  int64_t intAttr(StringRef name, int64_t defaultValue) const;
  float floatAttr(StringRef name, float defaultValue) const;
  std::string stringAttr(StringRef name, StringRef defaultValue) const;
  std::optional<SmallVector<int64_t, 4>> intsAttr(StringRef name) const;
  /// Axes given as an attribute (older opsets) or as input `index` (newer).
  std::optional<SmallVector<int64_t, 4>> axesFrom(StringRef attr,
                                                  unsigned index);
  /// Normalizes a possibly negative axis for `rank`, failing when out of range.
  int64_t normalizeAxis(int64_t axis, int64_t rank);
  /// Shape after Squeeze (`squeeze`) or Unsqueeze with the node's axes.
  SmallVector<int64_t, 4> squeezedShape(ArrayRef<int64_t> shape, bool squeeze);
  /// The node's Transpose permutation for `rank` (reversal by default),
  /// checked to be a permutation.
  SmallVector<int64_t, 4> permutation(int64_t rank);
  /// Shape after Flatten at the node's axis.
  SmallVector<int64_t, 2> flattenedShape(ArrayRef<int64_t> shape);

  // --- import --------------------------------------------------------------
  void importGraph();
  void importNode(int index);
  /// Topological order of the graph's nodes as onnxruntime accepts them (in
  /// any order in the file), keeping the file's order where it is valid.
  /// Nodes of one MoE block (moeNodeOwner) are ordered as one unit, listed
  /// by its TopK. Fails naming the node and input for a value no node, graph
  /// input or initializer produces, and for a cycle.
  SmallVector<int> orderNodes();
  /// Graph nodes in import order (indices into the graph) and the position
  /// of each graph node in the first (unit-free) order.
  SmallVector<int> order, positionOf;
  /// Values read as operands of ops that tensor parallelism partitions
  /// (MatMul, Gemm, Einsum, Gather data): known ones become weights.
  llvm::StringSet<> parameterOperands;

  // --- mixture-of-experts raising (OnnxMoe.cpp) ------------------------------
  /// One expert of an MoE block: its input rows, its output rows before the
  /// routing weight, and the nodes between them in graph order.
  struct MoeExpert {
    int64_t index = -1;
    std::string input, output;
    SmallVector<int, 8> nodes;
  };
  /// An MoE block found in the graph (softmax router, TopK, per-expert FFNs,
  /// weighted scatter-add back).
  struct MoeBlock {
    int topK = -1;
    std::string logits, tokens, output;
    int64_t k = 0;
    bool normalize = false;
    SmallVector<MoeExpert, 8> experts;
    llvm::DenseSet<int> region;
  };
  /// Finds the MoE blocks of the graph; nodes of a block are then emitted
  /// together as braid MoE ops when its TopK is reached.
  void findMoeBlocks();
  void emitMoeBlock(const MoeBlock &block);
  SmallVector<MoeBlock, 4> moeBlocks;
  /// Node index -> MoE block that owns it (by position in moeBlocks).
  llvm::DenseMap<int, unsigned> moeNodeOwner;
  /// Evaluates the current node if its op has a folding rule and the values
  /// it reads are known; returns whether it did.
  bool tryFold();
  bool foldValue(FoldCall &call);
  bool foldLayout(FoldCall &call);
  void emitNode();
  /// Whether emitNode has a handler for the current node's op type.
  bool canEmit() const;
  /// The emitters: one handler per supported ONNX op type.
  static const llvm::StringMap<void (Importer::*)()> &emitters();
  RankedTensorType inputType(const onnx::ValueInfoProto &info);

  // --- emitters ------------------------------------------------------------
  Value reshape(Value value, ArrayRef<int64_t> shape);
  Value scalar(double value, Type type);
  void emitPassThrough();
  template <typename OpTy> void emitBinary() {
    setValue(outputName(0), create<OpTy>(input(0), input(1)));
  }
  template <typename OpTy> void emitUnary() {
    Value x = input(0);
    setValue(outputName(0),
             verified(OpTy::create(builder, loc, x.getType(), x)));
  }
  template <typename OpTy> void emitVariadic() {
    Value acc = input(0);
    for (unsigned i = 1; i < numInputs(); ++i)
      acc = create<OpTy>(acc, input(i));
    setValue(outputName(0), acc);
  }
  template <CompareKind kind> void emitCompare() {
    setValue(outputName(0), create<CompareOp>(kind, input(0), input(1)));
  }
  void emitPow();
  void emitReciprocal();
  void emitWhere();
  void emitGelu();
  void emitCast();
  void emitTranspose();
  void emitFlatten();
  void emitConcat();
  void emitGather();
  void emitExpand();
  void emitSqueeze();
  void emitUnsqueeze();
  void emitLayerNorm();
  void emitRmsNorm();
  void emitMatMul();
  void emitGemm();
  void emitSoftmax();
  void emitReduce();
  void emitReshape();
  void emitSqueezeUnsqueeze(bool squeeze);
  void emitSlice();
  void emitSplit();
  void emitTrilu();
  void emitAttention();
  void emitNormalization(bool rms);
  void emitArgMax();
  void emitArgMin();
  void emitArgReduce(bool max);
  void emitEinsum();

  // --- folding ---------------------------------------------------------------
  SmallVector<int64_t, 4> reshapeTarget(ArrayRef<int64_t> input,
                                        const HostTensor &shape,
                                        bool allowZero);
  struct SliceBox {
    SmallVector<int64_t, 4> starts, sizes, steps;
  };
  SliceBox sliceBox(ArrayRef<int64_t> shape);

  const onnx::ModelProto &model;
  std::string modelPath, modelDir;
  MLIRContext *context;
  const ImportOptions &options;
  OpBuilder builder;
  /// Where new ops go: the current node (onnxNodeLocation), else the graph.
  Location loc;
  /// The graph's location (OnnxLocation.h); set by importGraph.
  Location graphLoc;
  ModuleOp module;
  func::FuncOp function;
  Block *entry = nullptr;
  llvm::StringMap<Entry> values;
  llvm::StringMap<Value> weightValues;
  std::vector<ImportedWeight> weights;
  /// The most elements of one host tensor (ImportOptions::maxHostElements).
  int64_t maxHostElements = 0;
  /// Names of the graph's initializers (reserved as their weights' symbols)
  /// and the weight symbols declared so far.
  llvm::StringSet<> initializerNames, weightSymbols;
  const onnx::NodeProto *node = nullptr;
  int64_t opset = 0;
  /// Position of the current node in the graph (for unnamed nodes).
  int nodeIndex = -1;

  /// Builds an op whose result types the op infers; when the operands do not
  /// fit, reports the op's own message against the current node.
  template <typename OpTy, typename... Args> OpTy create(Args &&...args) {
    OperationState state(loc, OpTy::getOperationName());
    // Built with a placeholder result type (the builders assert one per
    // result), replaced by the inferred one below.
    static_assert(OpTy::template hasTrait<OpTrait::OneResult>(),
                  "create<> builds single-result ops");
    OpTy::build(builder, state, TypeRange{builder.getNoneType()},
                std::forward<Args>(args)...);
    state.types.clear();
    SmallVector<Type> types;
    std::string message;
    bool inferred;
    {
      ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
        message = diag.str();
        return success();
      });
      inferred = succeeded(OpTy::inferReturnTypes(
          context, loc, state.operands, state.attributes.getDictionary(context),
          state.getRawProperties(), state.regions, types));
    }
    if (!inferred)
      fail(message.empty() ? "cannot build " + OpTy::getOperationName().str() +
                                 " from these operands"
                           : message);
    state.addTypes(types);
    return cast<OpTy>(builder.create(state));
  }
  /// Verifies an op built with explicit result types; on failure erases it
  /// and reports its message against the current node.
  template <typename OpTy> OpTy verified(OpTy op) {
    std::string message;
    {
      ScopedDiagnosticHandler capture(context, [&](Diagnostic &diag) {
        if (message.empty())
          message = diag.str();
        return success();
      });
      if (succeeded(mlir::verify(op, /*verifyRecursively=*/false)))
        return op;
    }
    op->erase();
    fail(message);
  }
};

} // namespace detail
} // namespace onnx_import
} // namespace braid
} // namespace mlir

#endif // BRAID_FRONTEND_ONNX_IMPORTERIMPL_H
