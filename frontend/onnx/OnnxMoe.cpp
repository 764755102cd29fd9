//===- OnnxMoe.cpp - raising exported mixture-of-experts blocks -----------===//
//
// Exporters write a sparse MoE layer (Mixtral, Qwen-MoE) as a router softmax
// and TopK, then per expert a NonZero over the routing mask, a Gather of the
// routed rows, the expert's FFN, a multiply by the routing weight and a
// scatter-add back. NonZero has a data-dependent shape, so Braid raises the
// whole block instead of importing it node by node:
//
//   router_topk -> moe_dispatch -> expert FFN over all experts at once
//   (MatMul on an expert's weight becomes grouped_matmul on the stacked
//   weights) -> moe_combine
//
// with a capacity of one slot per token, so no token is dropped and the
// result equals the exported computation.
//
//===----------------------------------------------------------------------===//

#include "frontend/onnx/ImporterImpl.h"

#include "dialects/braid/Locations.h"

#include "onnx/onnx_pb.h"

#include "llvm/ADT/StringSet.h"

#include <deque>
#include <functional>

using namespace mlir;
using namespace mlir::braid;
using namespace mlir::braid::onnx_import;
using namespace mlir::braid::onnx_import::detail;

namespace {
/// Producers and consumers of every value of a graph.
struct GraphIndex {
  llvm::StringMap<int> producer;
  llvm::StringMap<SmallVector<int, 2>> consumers;
  llvm::StringSet<> initializers, graphOutputs;

  explicit GraphIndex(const onnx::GraphProto &graph) {
    for (int i = 0; i < graph.node_size(); ++i) {
      for (const std::string &out : graph.node(i).output())
        producer[out] = i;
      for (const std::string &in : graph.node(i).input())
        if (!in.empty())
          consumers[in].push_back(i);
    }
    for (const onnx::TensorProto &init : graph.initializer())
      initializers.insert(init.name());
    for (const onnx::ValueInfoProto &out : graph.output())
      graphOutputs.insert(out.name());
  }

  int producerOf(StringRef value) const {
    auto it = producer.find(value);
    return it == producer.end() ? -1 : it->second;
  }
  ArrayRef<int> consumersOf(StringRef value) const {
    auto it = consumers.find(value);
    return it == consumers.end() ? ArrayRef<int>() : ArrayRef<int>(it->second);
  }
};
} // namespace

/// Values reachable forward from `seeds` (the seeds included), with the nodes
/// that produce them.
static void forwardClosure(const onnx::GraphProto &graph,
                           const GraphIndex &index, ArrayRef<std::string> seeds,
                           llvm::StringSet<> &values,
                           llvm::DenseSet<int> &nodes) {
  std::deque<std::string> work(seeds.begin(), seeds.end());
  for (const std::string &seed : seeds)
    values.insert(seed);
  while (!work.empty()) {
    std::string value = work.front();
    work.pop_front();
    for (int consumer : index.consumersOf(value)) {
      nodes.insert(consumer);
      for (const std::string &out : graph.node(consumer).output())
        if (values.insert(out).second)
          work.push_back(out);
    }
  }
}

void Importer::findMoeBlocks() {
  const onnx::GraphProto &graph = model.graph();
  GraphIndex index(graph);
  // The graph's nodes in dependency order (the file's may differ).
  auto byPosition = [&](int a, int b) { return positionOf[a] < positionOf[b]; };
  // A parameter: a weight initializer, or a layout of one (a Transpose of
  // an initializer, ...), which folding turns into a weight.
  std::function<bool(StringRef)> isParameter = [&](StringRef value) {
    if (index.initializers.contains(value))
      return true;
    int p = index.producerOf(value);
    if (p < 0)
      return false;
    StringRef op = graph.node(p).op_type();
    return (op == "Transpose" || op == "Cast" || op == "Reshape" ||
            op == "Identity" || op == "Squeeze" || op == "Unsqueeze" ||
            op == "Flatten") &&
           graph.node(p).input_size() > 0 &&
           isParameter(graph.node(p).input(0));
  };
  for (int t : order) {
    const onnx::NodeProto &topK = graph.node(t);
    if (topK.op_type() != "TopK" || topK.output_size() != 2)
      continue;
    MoeBlock block;
    block.topK = t;
    // Router: TopK over a softmax of the logits (through casts).
    std::string probs = topK.input(0);
    int p = index.producerOf(probs);
    while (p >= 0 && graph.node(p).op_type() == "Cast") {
      probs = graph.node(p).input(0);
      p = index.producerOf(probs);
    }
    if (p < 0 || graph.node(p).op_type() != "Softmax")
      continue;
    block.logits = graph.node(p).input(0);
    int gate = index.producerOf(block.logits);
    if (gate < 0 || (graph.node(gate).op_type() != "MatMul" &&
                     graph.node(gate).op_type() != "Gemm"))
      continue;
    block.tokens = graph.node(gate).input(0);

    // Everything that depends on the routing is the block.
    llvm::StringSet<> routed;
    forwardClosure(graph, index, {topK.output(0), topK.output(1)}, routed,
                   block.region);
    llvm::StringSet<> weighted;
    llvm::DenseSet<int> unused;
    forwardClosure(graph, index, {topK.output(0)}, weighted, unused);

    // Renormalization: values / ReduceSum(values).
    for (int c : index.consumersOf(topK.output(0))) {
      const onnx::NodeProto &div = graph.node(c);
      if (div.op_type() != "Div" || div.input(0) != topK.output(0))
        continue;
      int sum = index.producerOf(div.input(1));
      if (sum >= 0 && graph.node(sum).op_type() == "ReduceSum" &&
          graph.node(sum).input(0) == topK.output(0))
        block.normalize = true;
    }

    // Experts: the rows a MatMul on a parameter reads, in graph order.
    SmallVector<int> regionNodes(block.region.begin(), block.region.end());
    llvm::sort(regionNodes, byPosition);
    for (int n : regionNodes) {
      const onnx::NodeProto &matmul = graph.node(n);
      if (matmul.op_type() != "MatMul" || !isParameter(matmul.input(1)) ||
          weighted.contains(matmul.input(0)))
        continue;
      if (llvm::any_of(block.experts, [&](const MoeExpert &e) {
            return e.input == matmul.input(0) || llvm::is_contained(e.nodes, n);
          }))
        continue;
      MoeExpert expert;
      expert.input = matmul.input(0);
      // The expert's output: the operand of the first multiply by a routing
      // weight, reached forward from its input.
      llvm::StringSet<> reach;
      llvm::DenseSet<int> reachNodes;
      forwardClosure(graph, index, {expert.input}, reach, reachNodes);
      SmallVector<int> ordered(reachNodes.begin(), reachNodes.end());
      llvm::sort(ordered, byPosition);
      for (int m : ordered) {
        const onnx::NodeProto &mul = graph.node(m);
        if (mul.op_type() != "Mul")
          continue;
        bool w0 = weighted.contains(mul.input(0)),
             w1 = weighted.contains(mul.input(1));
        if (w0 != w1 && reach.contains(w0 ? mul.input(1) : mul.input(0))) {
          expert.output = w0 ? mul.input(1) : mul.input(0);
          break;
        }
      }
      if (expert.output.empty())
        continue;
      // Its nodes: those between input and output.
      std::deque<std::string> work{expert.output};
      llvm::StringSet<> seen;
      while (!work.empty()) {
        std::string value = work.front();
        work.pop_front();
        if (value == expert.input || !seen.insert(value).second)
          continue;
        int producer = index.producerOf(value);
        if (producer < 0 || !reachNodes.contains(producer))
          continue;
        expert.nodes.push_back(producer);
        for (const std::string &in : graph.node(producer).input())
          if (!in.empty())
            work.push_back(in);
      }
      llvm::sort(expert.nodes, byPosition);
      expert.nodes.erase(std::unique(expert.nodes.begin(), expert.nodes.end()),
                         expert.nodes.end());
      block.experts.push_back(std::move(expert));
    }
    if (block.experts.empty())
      continue;

    // The block's result: the first value that sums every expert (the end
    // of the scatter-add chain). The block is what the routing reaches
    // before it; what follows the result is imported as usual.
    llvm::StringMap<uint64_t> expertsIn;
    if (block.experts.size() > 64)
      continue;
    for (auto [e, expert] : llvm::enumerate(block.experts))
      expertsIn[expert.output] |= uint64_t(1) << e;
    uint64_t all = block.experts.size() == 64
                       ? ~uint64_t(0)
                       : (uint64_t(1) << block.experts.size()) - 1;
    for (int n : regionNodes) {
      uint64_t mask = 0;
      // A shape says nothing about the values it was taken from.
      StringRef kind = graph.node(n).op_type();
      if (kind == "Shape" || kind == "Size")
        continue;
      for (const std::string &in : graph.node(n).input())
        if (!in.empty() && expertsIn.count(in))
          mask |= expertsIn[in];
      for (const std::string &out : graph.node(n).output())
        expertsIn[out] |= mask;
      if (mask == all && block.output.empty())
        block.output = graph.node(n).output(0);
    }
    node = &topK;
    if (block.output.empty())
      fail("found an MoE router (softmax then TopK) whose experts' results "
           "are never summed; Braid cannot raise this block");
    llvm::StringSet<> after;
    llvm::DenseSet<int> afterNodes;
    forwardClosure(graph, index, {block.output}, after, afterNodes);
    for (int n : afterNodes)
      block.region.erase(n);
    // Nothing after the block may read its inner values.
    for (int n : block.region)
      for (const std::string &out : graph.node(n).output()) {
        if (out == block.output)
          continue;
        bool usedOutside = index.graphOutputs.contains(out);
        for (int c : index.consumersOf(out))
          usedOutside |= !block.region.contains(c);
        if (usedOutside)
          fail("the MoE block's inner value '" + out +
               "' is used outside it; Braid raises blocks with one result");
      }
    block.region.insert(t);
    regionNodes.assign(block.region.begin(), block.region.end());
    unsigned blockIndex = moeBlocks.size();
    for (int n : regionNodes)
      moeNodeOwner[n] = blockIndex;
    moeBlocks.push_back(std::move(block));
  }
  node = nullptr;
}

/// The expert index selected by the routing-mask Gather above an expert's
/// NonZero, or -1 when the pattern is not there.
static std::string expertSelector(const onnx::GraphProto &graph,
                                  const GraphIndex &index,
                                  const std::string &input) {
  std::deque<std::string> work{input};
  llvm::StringSet<> seen;
  while (!work.empty()) {
    std::string value = work.front();
    work.pop_front();
    if (!seen.insert(value).second)
      continue;
    int p = index.producerOf(value);
    if (p < 0)
      continue;
    const onnx::NodeProto &n = graph.node(p);
    if (n.op_type() == "NonZero") {
      std::string mask = n.input(0);
      int q = index.producerOf(mask);
      while (q >= 0 && graph.node(q).op_type() == "Cast")
        q = index.producerOf(graph.node(q).input(0));
      if (q >= 0 && graph.node(q).op_type() == "Gather")
        return graph.node(q).input(1);
      return "";
    }
    for (const std::string &in : n.input())
      if (!in.empty())
        work.push_back(in);
  }
  return "";
}

/// Whether `value` is the expert's input or produced by one of its nodes.
static bool insideExpertOf(const onnx::GraphProto &graph,
                           const GraphIndex &index, ArrayRef<int> expertNodes,
                           StringRef input, StringRef value) {
  if (value == input)
    return true;
  int p = index.producerOf(value);
  return p >= 0 && llvm::is_contained(expertNodes, p);
}

void Importer::emitMoeBlock(const MoeBlock &block) {
  const onnx::GraphProto &graph = model.graph();
  GraphIndex index(graph);
  const onnx::NodeProto &topK = graph.node(block.topK);
  auto insideExpert = [&](const MoeExpert &expert, StringRef value) {
    return insideExpertOf(graph, index, expert.nodes, expert.input, value);
  };
  // Two known values with the same contents (per-expert copies of one
  // constant).
  auto sameKnownValue = [&](StringRef a, StringRef b) {
    if (!isKnown(a) || !isKnown(b) || onnxTypeOf(a) != onnxTypeOf(b) ||
        shapeOf(a) != shapeOf(b))
      return false;
    const HostTensor &x = *constant(a), &y = *constant(b);
    return x.ints == y.ints && x.floats == y.floats;
  };
  Value logits = tensor(block.logits), tokens = tensor(block.tokens);
  auto logitsType = cast<RankedTensorType>(logits.getType());
  auto tokensType = cast<RankedTensorType>(tokens.getType());
  if (logitsType.getRank() != 2 || tokensType.getRank() != 2)
    fail("MoE router logits and tokens must be 2-D [tokens, experts] and "
         "[tokens, hidden]");
  int64_t numTokens = logitsType.getDimSize(0),
          numExperts = logitsType.getDimSize(1),
          hidden = tokensType.getDimSize(1);
  int64_t k = requireConstant(topK.input(1), "TopK k").getInt(0);
  if (intAttr("largest", 1) != 1)
    fail("an MoE router picks the largest probabilities");

  // Order the experts by the index each one's routing mask selects.
  SmallVector<const MoeExpert *> experts(numExperts, nullptr);
  for (const MoeExpert &expert : block.experts) {
    std::string selector = expertSelector(graph, index, expert.input);
    const HostTensor *e = selector.empty() ? nullptr : constant(selector);
    if (!e || e->numElements() != 1)
      fail("cannot tell which expert the rows '" + expert.input + "' go to");
    int64_t i = e->getInt(0);
    if (i < 0 || i >= numExperts || experts[i])
      fail("expert index " + Twine(i) + " is out of range or repeated");
    experts[i] = &expert;
  }
  for (auto [i, expert] : llvm::enumerate(experts))
    if (!expert)
      fail("expert " + Twine(i) + " of " + Twine(numExperts) +
           " is missing from the exported graph (a traced export keeps only "
           "the experts its example input reached); export with an input "
           "that routes to every expert");
  const MoeExpert &first = *experts.front();
  for (const MoeExpert *expert : experts)
    if (expert->nodes.size() != first.nodes.size())
      fail("the experts' FFNs differ in structure");

  auto router = RouterTopKOp::create(builder, loc, logits, k, block.normalize);
  // One slot per token: top-k experts are distinct, so none overflows.
  auto bufferType = RankedTensorType::get({numExperts, numTokens, hidden},
                                          tokensType.getElementType());
  Value dispatched = MoeDispatchOp::create(builder, loc, bufferType, tokens,
                                           router.getExperts());

  // The experts' FFN once, over all experts: nodes of expert 0, with each
  // MatMul on a parameter turned into a grouped matmul on the stacked
  // parameters of all experts. Every other op must read the same values
  // from outside the experts in all of them, or expert 0's would silently
  // stand for all.
  setValue(first.input, dispatched);
  for (size_t position = 0; position < first.nodes.size(); ++position) {
    const onnx::NodeProto &n = graph.node(first.nodes[position]);
    node = &n;
    loc = onnxNodeLocation(graphLoc,
                           n.name().empty()
                               ? "#" + std::to_string(first.nodes[position]) +
                                     " " + n.op_type()
                               : n.name());
    for (const MoeExpert *expert : experts)
      if (graph.node(expert->nodes[position]).op_type() != n.op_type() ||
          graph.node(expert->nodes[position]).input_size() != n.input_size())
        fail("the experts' FFNs differ in structure");
    bool onParameter = n.op_type() == "MatMul" && isWeight(n.input(1));
    for (int i = 0; i < n.input_size(); ++i) {
      if (onParameter && i == 1)
        continue;
      for (const MoeExpert *expert : experts) {
        const onnx::NodeProto &mine = graph.node(expert->nodes[position]);
        if (mine.input(i) == n.input(i) ||
            insideExpert(*expert, mine.input(i)) ||
            sameKnownValue(mine.input(i), n.input(i)))
          continue;
        fail("expert ops read different values ('" + n.input(i) + "' and '" +
             mine.input(i) +
             "'); in MoE raising only MatMul weights may differ between "
             "experts");
      }
    }
    if (!onParameter) {
      emitNode();
      continue;
    }
    // Stack the per-expert weights along a new leading dimension.
    RawTensor stacked;
    SmallVector<Attribute> parts;
    for (const MoeExpert *expert : experts) {
      const onnx::NodeProto &mine = graph.node(expert->nodes[position]);
      parts.push_back(builder.getStringAttr(mine.input(1)));
      if (!isWeight(mine.input(1)))
        fail("the experts' FFNs differ in structure");
      RawTensor raw = weightData(mine.input(1));
      if (raw.shape.size() != 2 ||
          (stacked.type != kUndefined &&
           (raw.type != stacked.type ||
            ArrayRef<int64_t>(raw.shape) !=
                ArrayRef<int64_t>(stacked.shape).drop_front())))
        fail("the experts' weights differ in shape or type");
      if (stacked.type == kUndefined) {
        stacked.type = raw.type;
        stacked.shape = {numExperts, raw.shape[0], raw.shape[1]};
      }
      stacked.bytes += raw.bytes;
    }
    Value weight = materializeWeight(n.name() + ".stacked", std::move(stacked),
                                     /*atTop=*/false);
    // Which initializer each expert's slice is (gradient checks, names).
    auto read = weight.getDefiningOp<GetWeightOp>();
    if (auto decl = SymbolTable::lookupNearestSymbolFrom<WeightOp>(
            function, read.getNameAttr()))
      decl->setAttr("braid.stacked_from", builder.getArrayAttr(parts));
    setValue(n.output(0),
             GroupedMatmulOp::create(builder, loc, tensor(n.input(0)), weight,
                                     /*transpose_rhs=*/false));
  }
  node = &topK;
  Value expertOut = tensor(first.output);
  if (cast<RankedTensorType>(expertOut.getType()) != bufferType)
    fail("the experts' output is not [experts, tokens, hidden]");
  Value combined =
      MoeCombineOp::create(builder, loc, tokensType, expertOut,
                           router.getExperts(), router.getWeights());

  setValue(block.output, combined);
}
