//===- ProgramGenerator.cpp - random single-device braid programs ---------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The program is written as text through a small IR writer that knows each
// op's result shape. Every block maps the hidden state [B, S, D] to a new
// one of the same shape, mostly through a residual add, so blocks stack in
// any order and the minimizer can drop a block by bypassing its add. Values
// stay O(1): weights are scaled by their fan-in, norms sit in front of
// blocks, and exp, log, sqrt and division only see bounded or positive
// operands.
//
//===----------------------------------------------------------------------===//

#include "ProgramGenerator.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <set>

using namespace mlir::braid::fuzz;

namespace {

using Shape = std::vector<int64_t>;

/// An SSA value of the program being written.
struct Val {
  std::string name;
  Shape shape;
  std::string element = "f32";
};

std::string typeOf(const Shape &shape, const std::string &element = "f32") {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  return text + element + ">";
}
std::string typeOf(const Val &v) { return typeOf(v.shape, v.element); }

std::string list(const Shape &values) {
  std::string text = "[";
  for (size_t k = 0; k < values.size(); ++k)
    text += (k ? ", " : "") + std::to_string(values[k]);
  return text + "]";
}

/// A float literal MLIR parses (it needs the decimal point).
std::string floatLiteral(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6e", value);
  return text;
}

/// numpy broadcasting of two shapes (they are compatible by construction).
Shape broadcastShapes(const Shape &a, const Shape &b) {
  size_t rank = std::max(a.size(), b.size());
  Shape result(rank);
  for (size_t k = 0; k < rank; ++k) {
    int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    result[k] = da == 1 ? db : da;
  }
  return result;
}

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

/// Writes ops as text and tracks their shapes.
class IRWriter {
public:
  std::string declarations;
  std::string body;

  Val def(const std::string &rhs, Shape shape,
          const std::string &element = "f32") {
    Val v{"%v" + std::to_string(counter++), std::move(shape), element};
    body += "    " + v.name + " = " + rhs + "\n";
    return v;
  }

  /// `results` values of one op: %vN#0, %vN#1, ...
  std::vector<Val>
  defMany(const std::string &rhs,
          const std::vector<std::pair<Shape, std::string>> &results) {
    std::string name = "%v" + std::to_string(counter++);
    body += "    " + name + ":" + std::to_string(results.size()) + " = " + rhs +
            "\n";
    std::vector<Val> values;
    for (size_t k = 0; k < results.size(); ++k)
      values.push_back({name + "#" + std::to_string(k), results[k].first,
                        results[k].second});
    return values;
  }

  Val weight(const std::string &base, Shape shape) {
    std::string name = base;
    for (int k = 1; !weightNames.insert(name).second; ++k)
      name = base + "_" + std::to_string(k);
    declarations += "  braid.weight @" + name + " : " + typeOf(shape) + "\n";
    return def("braid.get_weight @" + name + " : " + typeOf(shape), shape);
  }

  Val scalar(double value) {
    return def(
        "braid.constant dense<" + floatLiteral(value) + "> : tensor<f32>", {});
  }

  Val unary(const char *op, const Val &x) {
    return def(std::string("braid.") + op + " " + x.name + " : " + typeOf(x),
               x.shape);
  }

  Val binary(const char *op, const Val &a, const Val &b) {
    Shape shape = broadcastShapes(a.shape, b.shape);
    return def(std::string("braid.") + op + " " + a.name + ", " + b.name +
                   " : (" + typeOf(a) + ", " + typeOf(b) + ") -> " +
                   typeOf(shape),
               shape);
  }

  Val matmul(const Val &a, const Val &b, bool transposeRhs = false) {
    Shape batchA(a.shape.begin(), a.shape.end() - 2);
    Shape batchB(b.shape.begin(), b.shape.end() - 2);
    Shape shape = broadcastShapes(batchA, batchB);
    shape.push_back(a.shape[a.shape.size() - 2]);
    shape.push_back(transposeRhs ? b.shape[b.shape.size() - 2]
                                 : b.shape.back());
    return def("braid.matmul " + a.name + ", " + b.name +
                   (transposeRhs ? " transpose_rhs" : "") + " : (" + typeOf(a) +
                   ", " + typeOf(b) + ") -> " + typeOf(shape),
               shape);
  }

  Val reshape(const Val &x, Shape shape) {
    if (shape == x.shape)
      return x;
    return def("braid.reshape " + x.name + " : " + typeOf(x) + " -> " +
                   typeOf(shape, x.element),
               shape, x.element);
  }

  Val transpose(const Val &x, const Shape &permutation) {
    Shape shape;
    for (int64_t p : permutation)
      shape.push_back(x.shape[p]);
    return def("braid.transpose " + x.name + " " + list(permutation) + " : " +
                   typeOf(x) + " -> " + typeOf(shape, x.element),
               shape, x.element);
  }

  Val slice(const Val &x, const Shape &offsets, const Shape &sizes) {
    return def("braid.slice " + x.name + " offsets " + list(offsets) +
                   " sizes " + list(sizes) + " strides " +
                   list(Shape(sizes.size(), 1)) + " : " + typeOf(x) + " -> " +
                   typeOf(sizes, x.element),
               sizes, x.element);
  }

  /// `x` cut along `dim` at `widths` by one slice per piece.
  std::vector<Val> slices(const Val &x, int64_t dim, const Shape &widths) {
    std::vector<Val> pieces;
    int64_t offset = 0;
    for (int64_t width : widths) {
      Shape offsets(x.shape.size(), 0), sizes = x.shape;
      offsets[dim] = offset;
      sizes[dim] = width;
      pieces.push_back(slice(x, offsets, sizes));
      offset += width;
    }
    return pieces;
  }

  std::vector<Val> split(const Val &x, int64_t dim, const Shape &widths) {
    std::vector<std::pair<Shape, std::string>> results;
    std::string types;
    for (int64_t width : widths) {
      Shape shape = x.shape;
      shape[dim] = width;
      types += (types.empty() ? "" : ", ") + typeOf(shape);
      results.push_back({shape, x.element});
    }
    return defMany("braid.split " + x.name + " dim " + std::to_string(dim) +
                       " : " + typeOf(x) + " -> " + types,
                   results);
  }

  Val concat(const std::vector<Val> &inputs, int64_t dim) {
    Shape shape = inputs[0].shape;
    shape[dim] = 0;
    std::string names, types;
    for (const Val &v : inputs) {
      shape[dim] += v.shape[dim];
      names += (names.empty() ? "" : ", ") + v.name;
      types += (types.empty() ? "" : ", ") + typeOf(v);
    }
    return def("braid.concat " + names + " dim " + std::to_string(dim) +
                   " : (" + types + ") -> " + typeOf(shape),
               shape);
  }

  Val reduce(const char *op, const Val &x, const Shape &dims, bool keepDims) {
    Shape shape;
    for (size_t k = 0; k < x.shape.size(); ++k) {
      bool reduced = llvm::is_contained(dims, int64_t(k));
      if (!reduced)
        shape.push_back(x.shape[k]);
      else if (keepDims)
        shape.push_back(1);
    }
    return def(std::string("braid.") + op + " " + x.name + " dims " +
                   list(dims) + (keepDims ? " keep_dims" : "") + " : " +
                   typeOf(x) + " -> " + typeOf(shape),
               shape);
  }

  Val softmax(const Val &x, int64_t dim) {
    return def("braid.softmax " + x.name + " dim " + std::to_string(dim) +
                   " : " + typeOf(x),
               x.shape);
  }

  Val broadcastTo(const Val &x, Shape shape) {
    return def("braid.broadcast_to " + x.name + " : " + typeOf(x) + " -> " +
                   typeOf(shape),
               shape);
  }

private:
  int counter = 0;
  std::set<std::string> weightNames;
};

/// The sizes of one program.
struct Dims {
  int64_t batch, seq, heads, kvHeads, headDim, hidden, ffn, vocab;
  int64_t experts, topK, capacity;
};

/// Writes one program: entry, blocks, tail.
class ProgramWriter {
public:
  ProgramWriter(uint64_t seed, const MeshSizes &mesh, uint32_t features,
                uint32_t required)
      : rng(seed), mesh(mesh), features(features), required(required) {}

  GeneratedProgram write();

private:
  bool has(uint32_t feature) const { return features & feature; }
  void note(const std::string &text) {
    summary += (summary.empty() ? "" : " ") + text;
  }
  std::string prefix() const { return "l" + std::to_string(layer); }

  void chooseDims();
  Val entry();
  Val block(uint32_t kind, Val h);
  void tail(Val h);

  Val norm(const Val &h, std::string &what);
  Val activation(const Val &x, std::string &what);
  Val linear(const Val &x, int64_t out, const std::string &name, bool bias);
  Val residual(const Val &h, const Val &y);

  Val attentionBlock(const Val &h);
  Val toHeads(const Val &x, int64_t heads);
  Val rotate(const Val &x, std::string &what);
  Val mlpBlock(const Val &h);
  Val gatedMlpBlock(const Val &h);
  Val moeBlock(const Val &h);
  Val normBlock(const Val &h);
  Val reductionBlock(const Val &h);
  Val softmaxBlock(const Val &h);
  Val elementwiseBlock(const Val &h);
  Val shapeBlock(const Val &h);

  Random rng;
  MeshSizes mesh;
  uint32_t features, required;
  IRWriter w;
  Dims d{};
  std::string summary;
  int layer = 0;
  /// Function arguments and results, as text.
  std::vector<std::string> arguments, results, resultTypes;
  std::vector<Val> outputs;
  std::optional<Val> embedding;
  /// The token ids the embedding gathers by, when there is one.
  std::optional<Val> tokenIds;
  /// The additive padding mask [B, 1, 1, S], once an attention made it.
  std::optional<Val> paddingMask;
};

void ProgramWriter::chooseDims() {
  int64_t tp = mesh.tp;
  // Sequence: split by cp (in 2 * cp zigzag blocks), by tp under sequence
  // parallelism, and into the overlap passes' chunks.
  int64_t seqFactor =
      std::lcm(mesh.cp * (mesh.zigzag ? 2 : 1), mesh.sequenceParallel ? tp : 1);
  seqFactor = std::lcm(seqFactor, mesh.sequenceChunks);
  Shape seqs;
  for (int64_t s = seqFactor; s <= 16; s += seqFactor)
    if (s >= 4)
      seqs.push_back(s);
  d.seq = seqs.empty() ? seqFactor : seqs[rng.below(seqs.size())];
  // Batch chunks need not be equal: a batch of 3 in 2 chunks is 2 and 1.
  int64_t chunks = mesh.batchChunks;
  d.batch = mesh.dp * (chunks > 1 ? rng.between(chunks, 2 * chunks - 1)
                                  : rng.between(1, 2));
  d.heads = tp * (tp >= 3 ? 1 : rng.between(1, 2));
  if (tp == 1)
    d.heads = rng.between(2, 4);
  d.kvHeads = d.heads;
  if (d.heads % 2 == 0 && (d.heads / 2) % tp == 0 && rng.chance(0.5))
    d.kvHeads = d.heads / 2; // Grouped-query attention.
  d.headDim = rng.chance(0.5) ? 2 : 4;
  d.hidden = d.heads * d.headDim;
  d.ffn = roundUp(rng.between(d.hidden, 2 * d.hidden), tp);
  d.vocab = roundUp(rng.between(8, 16), tp);
  d.experts = mesh.ep * (mesh.ep >= 3 ? 1 : 2);
  if (mesh.ep == 1)
    d.experts = rng.between(2, 4);
  d.topK = rng.between(1, std::min<int64_t>(2, d.experts));
  int64_t tokens = d.batch * d.seq;
  // Capacity of every token: nothing is dropped (an expert gets each token
  // at most once); sometimes less, so that the slots fill up.
  d.capacity = rng.chance(0.8)
                   ? tokens
                   : std::max<int64_t>(1, tokens * d.topK / d.experts);

  // Now and then one size that does not divide by its axis.
  if (rng.chance(0.08)) {
    switch (rng.below(5)) {
    case 0:
      d.heads = d.kvHeads = tp == 1 ? 3 : tp + 1;
      d.hidden = d.heads * d.headDim;
      note("odd-heads");
      break;
    case 1:
      d.seq += 1;
      note("odd-seq");
      break;
    case 2:
      d.batch += 1;
      note("odd-batch");
      break;
    case 3:
      d.ffn += 1;
      note("odd-ffn");
      break;
    default:
      d.experts += 1;
      note("odd-experts");
      break;
    }
  }
}

Val ProgramWriter::entry() {
  if (has(FeatureEmbedding) && rng.chance(0.6)) {
    arguments.push_back("%ids: " + typeOf({d.batch, d.seq}, "i64") +
                        " {braid.name = \"input_ids\"}");
    Val ids{"%ids", {d.batch, d.seq}, "i64"};
    tokenIds = ids;
    Val table = w.weight("embed.weight", {d.vocab, d.hidden});
    embedding = table;
    Val h = w.def("braid.gather " + table.name + "[" + ids.name +
                      "] axis 0 : (" + typeOf(table) + ", " + typeOf(ids) +
                      ") -> " + typeOf({d.batch, d.seq, d.hidden}),
                  {d.batch, d.seq, d.hidden});
    std::string what = "embed";
    if (rng.chance(0.5)) {
      // Learned positions, GPT-2 style, as [S, D] or [1, S, D].
      Shape shape =
          rng.chance(0.5) ? Shape{d.seq, d.hidden} : Shape{1, d.seq, d.hidden};
      h = w.binary("add", h, w.weight("embed.positions", shape));
      what += "+pos";
    }
    note(what);
    return h;
  }
  arguments.push_back("%x: " + typeOf({d.batch, d.seq, d.hidden}) +
                      " {braid.name = \"x\"}");
  note("input");
  return Val{"%x", {d.batch, d.seq, d.hidden}};
}

Val ProgramWriter::norm(const Val &h, std::string &what) {
  bool builtIn = has(FeatureNorms), decomposed = has(FeatureDecomposedNorms);
  if ((!builtIn && !decomposed) || rng.chance(0.1)) {
    what = "none";
    return h;
  }
  int64_t last = int64_t(h.shape.size()) - 1;
  Shape gammaShape{h.shape.back()};
  std::string p = prefix();
  // A norm hides a wrong scale of its input up to epsilon's share of the
  // variance; a large epsilon now and then makes such errors visible.
  bool largeEpsilon = rng.chance(0.3);
  double layerEpsilon = largeEpsilon ? 0.05 : 1e-5;
  double rmsEpsilon = largeEpsilon ? 0.05 : 1e-6;
  int64_t kind = builtIn && decomposed ? rng.below(4)
                 : builtIn             ? rng.below(2)
                                       : 2 + rng.below(2);
  what = largeEpsilon ? "eps-large," : "";
  switch (kind) {
  case 0: {
    Val gamma = w.weight(p + ".ln.weight", gammaShape);
    bool bias = rng.chance(0.7);
    std::string operands = h.name + ", " + gamma.name;
    std::string types = typeOf(h) + ", " + typeOf(gamma);
    if (bias) {
      Val beta = w.weight(p + ".ln.bias", gammaShape);
      operands += ", " + beta.name;
      types += ", " + typeOf(beta);
    }
    what += "layer_norm";
    return w.def("braid.layer_norm " + operands + " axis " +
                     std::to_string(last) + " eps " +
                     floatLiteral(layerEpsilon) + " : (" + types + ") -> " +
                     typeOf(h),
                 h.shape);
  }
  case 1: {
    Val gamma = w.weight(p + ".rms.weight", gammaShape);
    what += "rms_norm";
    return w.def("braid.rms_norm " + h.name + ", " + gamma.name + " axis " +
                     std::to_string(last) + " eps " + floatLiteral(rmsEpsilon) +
                     " : (" + typeOf(h) + ", " + typeOf(gamma) + ") -> " +
                     typeOf(h),
                 h.shape);
  }
  case 2: {
    // Layer norm as exported op by op: mean, centre, variance, rsqrt.
    Val mean = w.reduce("reduce_mean", h, {last}, true);
    Val centred = w.binary("sub", h, mean);
    Val square = rng.chance(0.5) ? w.binary("mul", centred, centred)
                                 : w.binary("pow", centred, w.scalar(2.0));
    Val variance = w.reduce("reduce_mean", square, {last}, true);
    Val shifted = w.binary("add", variance, w.scalar(layerEpsilon));
    Val inverse = rng.chance(0.5) ? w.unary("rsqrt", shifted)
                                  : w.binary("div", w.scalar(1.0),
                                             w.unary("sqrt", shifted));
    Val normed = w.binary("mul", centred, inverse);
    Val scaled =
        w.binary("mul", normed, w.weight(p + ".ln.weight", gammaShape));
    what += "layer_norm-decomposed";
    return w.binary("add", scaled, w.weight(p + ".ln.bias", gammaShape));
  }
  default: {
    // RMS norm as LLaMA's ONNX export writes it.
    Val square = w.binary("pow", h, w.scalar(2.0));
    Val mean = w.reduce("reduce_mean", square, {last}, true);
    Val shifted = w.binary("add", mean, w.scalar(rmsEpsilon));
    Val inverse = w.binary("div", w.scalar(1.0), w.unary("sqrt", shifted));
    Val normed = w.binary("mul", h, inverse);
    what += "rms_norm-decomposed";
    return w.binary("mul", w.weight(p + ".rms.weight", gammaShape), normed);
  }
  }
}

Val ProgramWriter::activation(const Val &x, std::string &what) {
  switch (rng.below(7)) {
  case 0:
    what = "gelu";
    return w.unary("gelu", x);
  case 1:
    what = "gelu_tanh";
    return w.def("braid.gelu " + x.name + " tanh : " + typeOf(x), x.shape);
  case 2:
    what = "silu";
    return w.unary("silu", x);
  case 3:
    what = "relu";
    return w.unary("relu", x);
  case 4: {
    // x * sigmoid(x), as exported.
    what = "silu-decomposed";
    return w.binary("mul", x, w.unary("sigmoid", x));
  }
  case 5: {
    // 0.5 x (1 + erf(x / sqrt 2)), as exported.
    what = "gelu-erf-decomposed";
    Val e = w.unary("erf", w.binary("div", x, w.scalar(std::sqrt(2.0))));
    Val g = w.binary("mul", x, w.binary("add", e, w.scalar(1.0)));
    return w.binary("mul", g, w.scalar(0.5));
  }
  default: {
    // GPT-2's tanh approximation, op by op.
    what = "gelu-tanh-decomposed";
    Val cube = w.binary("pow", x, w.scalar(3.0));
    Val inner = w.binary("add", x, w.binary("mul", cube, w.scalar(0.044715)));
    Val t = w.unary("tanh", w.binary("mul", inner, w.scalar(0.7978845608)));
    Val half = w.binary("mul", x, w.scalar(0.5));
    return w.binary("mul", half, w.binary("add", t, w.scalar(1.0)));
  }
  }
}

/// x [..., K] times a new weight to [..., out], as [K, out] or as an ONNX
/// Linear's [out, K] with transpose_rhs, optionally plus a bias.
Val ProgramWriter::linear(const Val &x, int64_t out, const std::string &name,
                          bool bias) {
  int64_t in = x.shape.back();
  bool transposed = rng.chance(0.25);
  Val weight =
      w.weight(name + ".weight", transposed ? Shape{out, in} : Shape{in, out});
  Val y = w.matmul(x, weight, transposed);
  if (bias)
    y = w.binary("add", y, w.weight(name + ".bias", {out}));
  return y;
}

Val ProgramWriter::residual(const Val &h, const Val &y) {
  return rng.chance(0.5) ? w.binary("add", h, y) : w.binary("add", y, h);
}

Val ProgramWriter::toHeads(const Val &x, int64_t heads) {
  // [B, S, heads * Dh] -> [B, S, heads, Dh] -> [B, heads, S, Dh]
  Val split = w.reshape(x, {d.batch, d.seq, heads, d.headDim});
  return w.transpose(split, {0, 2, 1, 3});
}

/// Rotary position embedding on [B, H, S, Dh]: the op, or LLaMA's export
/// (x * cos + concat(-x2, x1) * sin).
Val ProgramWriter::rotate(const Val &x, std::string &what) {
  std::string p = prefix();
  if (rng.chance(0.5)) {
    Shape table{d.seq, d.headDim};
    Val cos = w.weight(p + ".rope.cos", table);
    Val sin = w.weight(p + ".rope.sin", table);
    bool interleaved = rng.chance(0.3);
    what += interleaved ? ",rotary-interleaved" : ",rotary";
    return w.def("braid.rotary " + x.name + ", " + cos.name + ", " + sin.name +
                     (interleaved ? " interleaved" : "") + " : (" + typeOf(x) +
                     ", " + typeOf(cos) + ", " + typeOf(sin) + ") -> " +
                     typeOf(x),
                 x.shape);
  }
  Shape table{1, 1, d.seq, d.headDim};
  Val cos = w.weight(p + ".rope.cos", table);
  Val sin = w.weight(p + ".rope.sin", table);
  int64_t half = d.headDim / 2;
  std::vector<Val> halves = w.slices(x, 3, {half, half});
  Val rotated = w.concat({w.unary("neg", halves[1]), halves[0]}, 3);
  what += ",rotary-decomposed";
  return w.binary("add", w.binary("mul", x, cos),
                  w.binary("mul", rotated, sin));
}

Val ProgramWriter::attentionBlock(const Val &h) {
  std::string what;
  Val x = norm(h, what);
  std::string p = prefix() + ".attn";
  int64_t qWidth = d.heads * d.headDim, kvWidth = d.kvHeads * d.headDim;
  bool flat = rng.chance(0.3); // GPT-2 projects [B*S, D].
  Val in = flat ? w.reshape(x, {d.batch * d.seq, d.hidden}) : x;
  bool bias = rng.chance(0.5);
  Val q, k, v;
  int kind = rng.below(3);
  if (kind == 0) {
    q = linear(in, qWidth, p + ".q", bias);
    k = linear(in, kvWidth, p + ".k", bias);
    v = linear(in, kvWidth, p + ".v", bias);
    what += ",separate";
  } else {
    // One fused projection, cut by a split or by slices of unequal widths.
    Val qkv = linear(in, qWidth + 2 * kvWidth, p + ".qkv", bias);
    int64_t last = int64_t(qkv.shape.size()) - 1;
    if (flat && rng.chance(0.5)) {
      // GPT-2 reshapes back to [B, S, 3D] before splitting.
      qkv = w.reshape(qkv, {d.batch, d.seq, qWidth + 2 * kvWidth});
      last = 2;
    }
    std::vector<Val> parts =
        kind == 1 ? w.split(qkv, last, {qWidth, kvWidth, kvWidth})
                  : w.slices(qkv, last, {qWidth, kvWidth, kvWidth});
    q = parts[0];
    k = parts[1];
    v = parts[2];
    what += kind == 1 ? ",fused-split" : ",fused-slices";
  }
  if (flat) {
    q = w.reshape(q, {d.batch, d.seq, qWidth});
    k = w.reshape(k, {d.batch, d.seq, kvWidth});
    v = w.reshape(v, {d.batch, d.seq, kvWidth});
  }
  q = toHeads(q, d.heads);
  k = toHeads(k, d.kvHeads);
  v = toHeads(v, d.kvHeads);
  if (rng.chance(0.3)) {
    q = rotate(q, what);
    k = rotate(k, what);
  }
  if (d.kvHeads != d.heads) {
    what += ",gqa";
    if (rng.chance(0.4)) {
      // LLaMA's export repeats the key/value heads explicitly.
      int64_t group = d.heads / d.kvHeads;
      auto repeat = [&](const Val &t) {
        Val five = w.reshape(t, {d.batch, d.kvHeads, 1, d.seq, d.headDim});
        Val wide =
            w.broadcastTo(five, {d.batch, d.kvHeads, group, d.seq, d.headDim});
        return w.reshape(wide, {d.batch, d.heads, d.seq, d.headDim});
      };
      k = repeat(k);
      v = repeat(v);
      what += "-repeated";
    }
  }
  bool causal = rng.chance(0.6);
  double scale = 1.0 / std::sqrt(double(d.headDim));
  Val o;
  if (!paddingMask && has(FeatureEmbedding) && rng.chance(0.2)) {
    // A padding mask input ([B, S], 1 keeps a key), made additive as
    // exported models do: (1 - mask) * -1e9 as [B, 1, 1, S].
    arguments.push_back("%mask: " + typeOf({d.batch, d.seq}, "i64") +
                        " {braid.name = \"attention_mask\"}");
    Val mask{"%mask", {d.batch, d.seq}, "i64"};
    Val keep = w.def("braid.cast %mask : " + typeOf(mask) + " -> " +
                         typeOf(mask.shape),
                     mask.shape);
    Val additive =
        w.binary("mul", w.binary("sub", w.scalar(1.0), keep), w.scalar(-1e9));
    paddingMask = w.reshape(additive, {d.batch, 1, 1, d.seq});
  }
  bool masked = paddingMask && rng.chance(0.7);
  if (!masked && k.shape[1] == d.heads && rng.chance(0.3)) {
    // softmax(scale Q K^T + mask) V on [B*H, S, Dh], as raising finds it.
    Shape merged{d.batch * d.heads, d.seq, d.headDim};
    Val q3 = w.reshape(q, merged), k3 = w.reshape(k, merged),
        v3 = w.reshape(v, merged);
    Val scores = w.binary("mul", w.matmul(q3, k3, true), w.scalar(scale));
    bool select = causal && rng.chance(0.4);
    if (causal) {
      // A causal mask constant: added (-1e9 above the diagonal), or a
      // boolean one for a select (masked_fill).
      std::string values;
      for (int64_t i = 0; i < d.seq; ++i) {
        values += i ? ", [" : "[";
        for (int64_t j = 0; j < d.seq; ++j)
          values +=
              (j ? ", " : "") + (select ? std::string(j <= i ? "true" : "false")
                                        : floatLiteral(j <= i ? 0.0 : -1e9));
        values += "]";
      }
      std::string element = select ? "i1" : "f32";
      Val mask = w.def("braid.constant dense<[" + values +
                           "]> : " + typeOf({d.seq, d.seq}, element),
                       {d.seq, d.seq}, element);
      if (select) {
        Val fill = w.scalar(-1e9);
        scores = w.def("braid.select " + mask.name + ", " + scores.name + ", " +
                           fill.name + " : (" + typeOf(mask) + ", " +
                           typeOf(scores) + ", " + typeOf(fill) + ") -> " +
                           typeOf(scores),
                       scores.shape);
      } else {
        scores = w.binary("add", scores, mask);
      }
    }
    Val probs = w.softmax(scores, 2);
    o = w.reshape(w.matmul(probs, v3), {d.batch, d.heads, d.seq, d.headDim});
    what += select   ? ",explicit-select"
            : causal ? ",explicit-causal"
                     : ",explicit";
  } else {
    std::string maskOperand, maskType;
    if (masked) {
      maskOperand = " mask " + paddingMask->name;
      maskType = ", " + typeOf(*paddingMask);
    }
    o = w.def("braid.attention " + q.name + ", " + k.name + ", " + v.name +
                  maskOperand + (causal ? " causal" : "") + " scale " +
                  floatLiteral(scale) + " : (" + typeOf(q) + ", " + typeOf(k) +
                  ", " + typeOf(v) + maskType + ") -> " + typeOf(q.shape),
              q.shape);
    what += causal ? ",causal" : "";
    what += masked ? ",padding-mask" : "";
  }
  Val merged =
      w.reshape(w.transpose(o, {0, 2, 1, 3}), {d.batch, d.seq, d.hidden});
  Val y = linear(merged, d.hidden, p + ".o", rng.chance(0.5));
  note("attention(" + what + ")");
  return residual(h, y);
}

Val ProgramWriter::mlpBlock(const Val &h) {
  std::string what;
  Val x = norm(h, what);
  std::string p = prefix() + ".mlp";
  bool flat = rng.chance(0.3);
  if (flat)
    x = w.reshape(x, {d.batch * d.seq, d.hidden});
  Val u = linear(x, d.ffn, p + ".fc1", rng.chance(0.6));
  std::string act;
  u = activation(u, act);
  if (rng.chance(0.2)) {
    // NormFormer normalizes the hidden layer: over the split columns.
    std::string mid;
    ++layer;
    u = norm(u, mid);
    act += ",mid-" + mid;
  }
  Val y = linear(u, d.hidden, p + ".fc2", rng.chance(0.6));
  if (flat)
    y = w.reshape(y, h.shape);
  note("mlp(" + what + "," + act + (flat ? ",flat" : "") + ")");
  return residual(h, y);
}

Val ProgramWriter::gatedMlpBlock(const Val &h) {
  std::string what;
  Val x = norm(h, what);
  std::string p = prefix() + ".gated";
  Val gate, up;
  int kind = rng.below(3);
  if (kind == 0) {
    gate = linear(x, d.ffn, p + ".gate", false);
    up = linear(x, d.ffn, p + ".up", false);
    what += ",separate";
  } else {
    // Phi-3's gate_up_proj: one weight, cut in two.
    Val both = linear(x, 2 * d.ffn, p + ".gate_up", false);
    std::vector<Val> halves = kind == 1 ? w.split(both, 2, {d.ffn, d.ffn})
                                        : w.slices(both, 2, {d.ffn, d.ffn});
    gate = halves[0];
    up = halves[1];
    what += kind == 1 ? ",fused-split" : ",fused-slices";
  }
  std::string act;
  Val y = linear(w.binary("mul", activation(gate, act), up), d.hidden,
                 p + ".down", false);
  note("gated_mlp(" + what + "," + act + ")");
  return residual(h, y);
}

Val ProgramWriter::moeBlock(const Val &h) {
  std::string what;
  Val x = norm(h, what);
  std::string p = prefix() + ".moe";
  int64_t tokens = d.batch * d.seq;
  Val flat = w.reshape(x, {tokens, d.hidden});
  Val logits = linear(flat, d.experts, p + ".router", false);
  bool normalize = rng.chance(0.6);
  std::vector<Val> routed = w.defMany(
      "braid.router_topk " + logits.name + " k " + std::to_string(d.topK) +
          (normalize ? " normalize" : "") + " : (" + typeOf(logits) + ") -> (" +
          typeOf({tokens, d.topK}) + ", " + typeOf({tokens, d.topK}, "i64") +
          ")",
      {{{tokens, d.topK}, "f32"}, {{tokens, d.topK}, "i64"}});
  Val weights = routed[0], experts = routed[1];
  Shape slots{d.experts, d.capacity, d.hidden};
  Val dispatched =
      w.def("braid.moe_dispatch " + flat.name + ", " + experts.name + " : (" +
                typeOf(flat) + ", " + typeOf(experts) + ") -> " + typeOf(slots),
            slots);
  auto expertMatmul = [&](const Val &in, int64_t out, const std::string &name) {
    int64_t inner = in.shape.back();
    bool transposed = rng.chance(0.3);
    Val weight = w.weight(name, transposed ? Shape{d.experts, out, inner}
                                           : Shape{d.experts, inner, out});
    Shape shape{d.experts, d.capacity, out};
    return w.def("braid.grouped_matmul " + in.name + ", " + weight.name +
                     (transposed ? " transpose_rhs" : "") + " : (" +
                     typeOf(in) + ", " + typeOf(weight) + ") -> " +
                     typeOf(shape),
                 shape);
  };
  std::string act;
  Val hidden = activation(expertMatmul(dispatched, d.ffn, p + ".w1"), act);
  if (rng.chance(0.6))
    hidden =
        w.binary("mul", hidden, expertMatmul(dispatched, d.ffn, p + ".w3"));
  Val out = expertMatmul(hidden, d.hidden, p + ".w2");
  Val combined =
      w.def("braid.moe_combine " + out.name + ", " + experts.name + ", " +
                weights.name + " : (" + typeOf(out) + ", " + typeOf(experts) +
                ", " + typeOf(weights) + ") -> " + typeOf(flat),
            flat.shape);
  note("moe(" + what + ",E" + std::to_string(d.experts) + ",k" +
       std::to_string(d.topK) + ",C" + std::to_string(d.capacity) +
       (normalize ? ",normalize" : "") + "," + act + ")");
  return residual(h, w.reshape(combined, h.shape));
}

Val ProgramWriter::normBlock(const Val &h) {
  std::string what;
  Val y = norm(h, what);
  note("norm(" + what + ")");
  return y;
}

Val ProgramWriter::reductionBlock(const Val &h) {
  std::string p = prefix() + ".reduce";
  switch (rng.below(9)) {
  case 7: {
    // Gate by the largest projected feature (its value matters, unlike the
    // max a softmax subtracts).
    Val u = linear(h, d.ffn, p + ".up", false);
    Val peak = w.reduce("reduce_max", u, {2}, true);
    note("reduce(max-of-projection)");
    return residual(h, w.binary("mul", h, w.unary("sigmoid", peak)));
  }
  case 8: {
    // Max pooling over the sequence, broadcast back.
    Val peak = w.reduce("reduce_max", h, {1}, true);
    note("reduce(sequence-max)");
    return w.binary("sub", h, w.binary("mul", peak, w.scalar(0.5)));
  }
  case 6: {
    // Mean over the heads of [B, H, S, Dh], broadcast back.
    Val heads = toHeads(h, d.heads);
    Val centred =
        w.binary("sub", heads, w.reduce("reduce_mean", heads, {1}, true));
    Val back = w.reshape(w.transpose(centred, {0, 2, 1, 3}), h.shape);
    note("reduce(head-mean)");
    return residual(h, back);
  }
  case 0: {
    // Centre a column-parallel projection over its own (split) columns.
    Val u = linear(h, d.ffn, p + ".up", false);
    Val centred = w.binary("sub", u, w.reduce("reduce_mean", u, {2}, true));
    note("reduce(mean-of-projection)");
    return residual(
        h, linear(w.unary("relu", centred), d.hidden, p + ".down", false));
  }
  case 1: {
    // A softmax written out over the projected columns.
    Val u = linear(h, d.ffn, p + ".up", false);
    Val e = w.unary("exp",
                    w.binary("sub", u, w.reduce("reduce_max", u, {2}, true)));
    Val probs = w.binary("div", e, w.reduce("reduce_sum", e, {2}, true));
    note("reduce(manual-softmax)");
    return residual(h, linear(probs, d.hidden, p + ".down", false));
  }
  case 2: {
    // Mean over the sequence, broadcast back.
    bool keep = rng.chance(0.5);
    Val mean = w.reduce("reduce_mean", h, {1}, keep);
    if (!keep)
      mean = w.reshape(mean, {d.batch, 1, d.hidden});
    note(std::string("reduce(sequence-mean") + (keep ? "" : ",reshaped") + ")");
    return w.binary("sub", h, w.binary("mul", mean, w.scalar(0.5)));
  }
  case 3: {
    // Mean over the batch (batch-norm like statistics).
    Val mean = w.reduce("reduce_mean", h, {0}, true);
    note("reduce(batch-mean)");
    return w.binary("sub", h, mean);
  }
  case 4: {
    // One scale from the whole sequence and hidden state.
    Val sum = w.reduce("reduce_sum", w.binary("mul", h, h), {1, 2}, true);
    Val mean = w.binary("div", sum, w.scalar(double(d.seq * d.hidden)));
    Val inverse = w.unary("rsqrt", w.binary("add", mean, w.scalar(1e-5)));
    note("reduce(global-rms)");
    return w.binary("mul", h, inverse);
  }
  default: {
    // Max over the hidden state, without keep_dims, reshaped back.
    Val peak = w.reduce("reduce_max", h, {2}, false);
    Val column = w.reshape(peak, {d.batch, d.seq, 1});
    note("reduce(max-reshaped)");
    return w.binary("sub", h, w.binary("mul", column, w.scalar(0.25)));
  }
  }
}

Val ProgramWriter::softmaxBlock(const Val &h) {
  std::string p = prefix() + ".gate";
  if (rng.chance(0.5)) {
    // A softmax gate over the hidden state of a projection.
    Val g = w.softmax(linear(h, d.hidden, p, false), 2);
    note("softmax(gate)");
    return residual(
        h, w.binary("mul", h, w.binary("mul", g, w.scalar(double(d.hidden)))));
  }
  // Over the sequence: attention pooling without queries.
  Val g = w.softmax(h, 1);
  note("softmax(sequence)");
  return residual(h, g);
}

Val ProgramWriter::elementwiseBlock(const Val &h) {
  Val x = h;
  std::string what;
  int64_t steps = rng.between(2, 4);
  for (int64_t k = 0; k < steps; ++k) {
    std::string step;
    switch (rng.below(9)) {
    case 0:
      x = w.unary("tanh", x);
      step = "tanh";
      break;
    case 1:
      x = w.unary("sigmoid", x);
      step = "sigmoid";
      break;
    case 2:
      x = w.unary("exp", w.unary("tanh", x));
      step = "exp-tanh";
      break;
    case 3:
      x = w.unary("neg", x);
      step = "neg";
      break;
    case 4:
      x = w.binary("mul", x, w.scalar(rng.chance(0.5) ? 1.5 : -0.75));
      step = "scale";
      break;
    case 5:
      x = w.binary(rng.chance(0.5) ? "max" : "min", x, w.scalar(0.1));
      step = "clamp";
      break;
    case 6:
      // softplus: log(1 + exp(tanh x)).
      x = w.unary("log", w.binary("add", w.unary("exp", w.unary("tanh", x)),
                                  w.scalar(1.0)));
      step = "softplus";
      break;
    case 7:
      x = w.binary("div", x,
                   w.binary("add", w.binary("mul", x, x), w.scalar(1.0)));
      step = "div";
      break;
    default:
      x = activation(x, step);
      break;
    }
    what += (what.empty() ? "" : ",") + step;
  }
  note("elementwise(" + what + ")");
  return residual(h, x);
}

Val ProgramWriter::shapeBlock(const Val &h) {
  std::string p = prefix() + ".shape";
  switch (rng.below(5)) {
  case 0: {
    // Cut the hidden state in unequal parts, treat each, put them back.
    int64_t first = rng.between(1, d.hidden - 1);
    std::vector<Val> parts = rng.chance(0.5)
                                 ? w.split(h, 2, {first, d.hidden - first})
                                 : w.slices(h, 2, {first, d.hidden - first});
    Val a = w.unary("tanh", parts[0]);
    Val b = w.binary("mul", parts[1], w.scalar(0.5));
    note("shape(split-concat)");
    return residual(h, w.concat({b, a}, 2));
  }
  case 1: {
    // Token mixing (MLP-Mixer): a matmul along the sequence.
    Val t = w.transpose(h, {0, 2, 1});
    Val mixed = w.matmul(t, w.weight(p + ".tokens", {d.seq, d.seq}));
    note("shape(token-mixing)");
    return residual(h, w.transpose(mixed, {0, 2, 1}));
  }
  case 2: {
    // Roll the sequence by one.
    Val rest = w.slice(h, {0, 1, 0}, {d.batch, d.seq - 1, d.hidden});
    Val first = w.slice(h, {0, 0, 0}, {d.batch, 1, d.hidden});
    note("shape(roll)");
    return residual(h, w.concat({rest, first}, 1));
  }
  case 3: {
    // Heads merged into the batch and back: [B*H, S, Dh].
    Val heads = toHeads(h, d.heads);
    Val merged = w.reshape(heads, {d.batch * d.heads, d.seq, d.headDim});
    Val act = w.unary("silu", merged);
    Val back = w.transpose(w.reshape(act, {d.batch, d.heads, d.seq, d.headDim}),
                           {0, 2, 1, 3});
    note("shape(heads-in-batch)");
    return residual(h, w.reshape(back, h.shape));
  }
  default: {
    // [B, S, D] -> [B, S*D/2, 2] pairs -> swap -> back.
    if (d.hidden % 2)
      return elementwiseBlock(h);
    Val pairs = w.reshape(h, {d.batch, d.seq * d.hidden / 2, 2});
    std::vector<Val> halves = w.slices(pairs, 2, {1, 1});
    Val swapped = w.concat({halves[1], w.unary("neg", halves[0])}, 2);
    note("shape(pair-swap)");
    return residual(h, w.reshape(swapped, h.shape));
  }
  }
}

Val ProgramWriter::block(uint32_t kind, Val h) {
  ++layer;
  switch (kind) {
  case FeatureAttention:
    return attentionBlock(h);
  case FeatureMlp:
    return mlpBlock(h);
  case FeatureGatedMlp:
    return gatedMlpBlock(h);
  case FeatureMoe:
    return moeBlock(h);
  case FeatureNorms:
    return normBlock(h);
  case FeatureReductions:
    return reductionBlock(h);
  case FeatureSoftmax:
    return softmaxBlock(h);
  case FeatureShapeOps:
    return shapeBlock(h);
  default:
    return elementwiseBlock(h);
  }
}

void ProgramWriter::tail(Val h) {
  std::string what;
  if ((has(FeatureNorms) || has(FeatureDecomposedNorms)) && rng.chance(0.6)) {
    ++layer;
    h = norm(h, what);
    what = "final-" + what;
  }
  bool head = has(FeatureLmHead) && rng.chance(0.6);
  if (!head || rng.chance(0.2)) {
    outputs.push_back(h);
    results.push_back("hidden");
  }
  if (head) {
    Val logits;
    if (embedding && rng.chance(0.3)) {
      // GPT-2 ties the LM head to the embedding.
      logits = w.matmul(h, *embedding, /*transposeRhs=*/true);
      what += (what.empty() ? "" : " ") + std::string("head(tied)");
    } else {
      logits = w.matmul(h, w.weight("lm_head.weight", {d.hidden, d.vocab}));
      what += (what.empty() ? "" : " ") + std::string("head");
    }
    outputs.push_back(logits);
    results.push_back("logits");
  }
  if (has(FeatureReductions) && rng.chance(0.15)) {
    outputs.push_back(w.reduce("reduce_mean", h, {1}, false));
    results.push_back("pooled");
    what += (what.empty() ? "" : " ") + std::string("pooled");
  }
  Shape hiddenShape{d.batch, d.seq, d.hidden};
  if (tokenIds && h.shape == hiddenShape && rng.chance(0.3)) {
    // The embedding's gradient: the hidden state added back into the rows
    // of the tokens it came from (gather's transpose).
    outputs.push_back(w.def("braid.scatter_add " + h.name + "[" +
                                tokenIds->name + "] axis 0 : (" + typeOf(h) +
                                ", " + typeOf(*tokenIds) + ") -> " +
                                typeOf({d.vocab, d.hidden}),
                            {d.vocab, d.hidden}));
    results.push_back("embed.grad");
    what += (what.empty() ? "" : " ") + std::string("embed-grad");
  }
  if (!what.empty())
    note(what);
}

GeneratedProgram ProgramWriter::write() {
  chooseDims();
  Val h = entry();

  llvm::SmallVector<uint32_t> kinds;
  for (uint32_t kind :
       {FeatureAttention, FeatureMlp, FeatureGatedMlp, FeatureMoe, FeatureNorms,
        FeatureReductions, FeatureSoftmax, FeatureElementwise, FeatureShapeOps})
    if (has(kind) || (kind == FeatureNorms && has(FeatureDecomposedNorms)))
      kinds.push_back(kind);
  // Transformer blocks come up more often than the rest.
  llvm::SmallVector<uint32_t> weighted;
  for (uint32_t kind : kinds) {
    weighted.push_back(kind);
    if (kind & (FeatureAttention | FeatureMlp | FeatureGatedMlp))
      weighted.push_back(kind);
  }
  llvm::SmallVector<uint32_t> plan;
  for (uint32_t kind : kinds)
    if (required & kind)
      plan.push_back(kind);
  int64_t count = rng.between(1, 3);
  while (int64_t(plan.size()) < count && !weighted.empty())
    plan.push_back(weighted[rng.below(weighted.size())]);
  for (size_t k = plan.size(); k > 1; --k)
    std::swap(plan[k - 1], plan[rng.below(k)]);

  bool extraInput = rng.chance(0.15);
  for (size_t k = 0; k < plan.size(); ++k) {
    h = block(plan[k], h);
    if (k == 0 && extraInput) {
      arguments.push_back("%skip: " + typeOf(h) + " {braid.name = \"skip\"}");
      h = w.binary("add", h, Val{"%skip", h.shape});
      note("skip-input");
    }
  }
  tail(h);

  std::string signature, returned, returnedTypes;
  for (size_t k = 0; k < outputs.size(); ++k) {
    signature += (k ? ", " : "") + typeOf(outputs[k]) + " {braid.name = \"" +
                 results[k] + "\"}";
    returned += (k ? ", " : "") + outputs[k].name;
    returnedTypes += (k ? ", " : "") + typeOf(outputs[k]);
  }
  GeneratedProgram program;
  program.text = "module {\n" + w.declarations + "  func.func @main(" +
                 llvm::join(arguments, ", ") + ") -> (" + signature + ") {\n" +
                 w.body + "    return " + returned + " : " + returnedTypes +
                 "\n  }\n}\n";
  program.summary = summary;
  program.batch = d.batch;
  program.seq = d.seq;
  return program;
}

} // namespace

bool mlir::braid::fuzz::parseFeatures(llvm::StringRef text,
                                      uint32_t &features) {
  static const std::pair<const char *, uint32_t> names[] = {
      {"embedding", FeatureEmbedding},
      {"attention", FeatureAttention},
      {"mlp", FeatureMlp},
      {"gated-mlp", FeatureGatedMlp},
      {"moe", FeatureMoe},
      {"norms", FeatureNorms},
      {"reductions", FeatureReductions},
      {"softmax", FeatureSoftmax},
      {"elementwise", FeatureElementwise},
      {"shape-ops", FeatureShapeOps},
      {"lm-head", FeatureLmHead},
      {"decomposed-norms", FeatureDecomposedNorms},
      {"all", FeatureAll}};
  features = 0;
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    const auto *found = llvm::find_if(
        names, [&](const auto &entry) { return item.trim() == entry.first; });
    if (found == std::end(names))
      return false;
    features |= found->second;
  }
  return features != 0;
}

std::string mlir::braid::fuzz::featureNames() {
  return "embedding, attention, mlp, gated-mlp, moe, norms, "
         "decomposed-norms, reductions, softmax, elementwise, shape-ops, "
         "lm-head, all";
}

GeneratedProgram mlir::braid::fuzz::generateProgram(uint64_t seed,
                                                    const MeshSizes &mesh,
                                                    uint32_t features,
                                                    uint32_t required) {
  return ProgramWriter(seed, mesh, features, required).write();
}
