//===- MoeOps.cuh - index math of the MoE and loss kernels -------*- CUDA
//-*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The per-element and per-row pieces of router_topk, moe_dispatch,
// moe_combine and cross_entropy, as __host__ __device__ code: Moe.cu launches
// them (one thread, one warp or one block per row), and the host test runs
// the same pieces over host memory against the reference kernels, including
// the lane decomposition the warp and block kernels use (lane `l` of `lanes`
// takes the elements l, l + lanes, ... of a row; the lanes' partial results
// are then merged by a fixed butterfly, which the test replays).
//
// Everything lives in namespace `moe` so that helpers with common names
// (Pack, ...) cannot collide with those of the other kernel files.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CUDA_KERNELS_MOEOPS_CUH
#define BRAID_RUNTIME_CUDA_KERNELS_MOEOPS_CUH

#include "runtime/cuda/kernels/CudaCommon.cuh"

#include <cmath>
#include <cstdint>

namespace braid::rt::cuda::moe {

BRAID_HD float infinity() { return INFINITY; }
BRAID_HD float quietNaN() { return NAN; }

//===----------------------------------------------------------------------===//
// Vector access
//===----------------------------------------------------------------------===//

/// W consecutive elements loaded or stored as one access (16 bytes when W is
/// vecWidth<T>()). Defined here because CudaCommon.cuh has no such helper.
template <typename T, int W> struct alignas(sizeof(T) * W) Pack { T v[W]; };

template <typename T, int W> BRAID_HD Pack<T, W> loadPack(const T *p) {
  return *reinterpret_cast<const Pack<T, W> *>(p);
}
template <typename T, int W>
BRAID_HD void storePack(T *p, const Pack<T, W> &v) {
  *reinterpret_cast<Pack<T, W> *>(p) = v;
}

/// Elements in a 16-byte access.
template <typename T> constexpr int vecWidth() {
  return static_cast<int>(16 / sizeof(T));
}

/// Whether rows of `rowLength` elements of T starting at `base` can all be
/// read with 16-byte accesses.
template <typename T> bool vectorizable(const void *base, int64_t rowLength) {
  return reinterpret_cast<uintptr_t>(base) % 16 == 0 &&
         rowLength % vecWidth<T>() == 0;
}

//===----------------------------------------------------------------------===//
// router_topk
//===----------------------------------------------------------------------===//

/// An expert and its logit; index < 0 stands for no expert.
struct Candidate {
  float value;
  int32_t index;
};

/// The reference's ranking: larger logit first, equal logits by lower index.
BRAID_HD bool ranksBefore(float va, int64_t ia, float vb, int64_t ib) {
  return va > vb || (va == vb && ia < ib);
}

/// The higher-ranked of two candidates. Commutative (two different experts
/// never tie), so every lane of a butterfly ends with the same one.
BRAID_HD Candidate better(Candidate a, Candidate b) {
  if (b.index < 0)
    return a;
  if (a.index < 0)
    return b;
  return ranksBefore(b.value, b.index, a.value, a.index) ? b : a;
}

/// Maximum of lane `lane`'s logits of a row of `experts`.
template <typename T>
BRAID_HD float laneMax(const T *row, int64_t experts, int lane, int lanes) {
  float m = -infinity();
  for (int64_t e = lane; e < experts; e += lanes)
    m = fmaxf(m, toFloat(row[e]));
  return m;
}

/// Sum of exp(logit - max) over lane `lane`'s logits.
template <typename T>
BRAID_HD float laneExpSum(const T *row, int64_t experts, float max, int lane,
                          int lanes) {
  float s = 0.f;
  for (int64_t e = lane; e < experts; e += lanes)
    s += expf(toFloat(row[e]) - max);
  return s;
}

/// Lane `lane`'s best expert among those ranking after `prev` (every expert
/// when `first`). NaN logits are never chosen (the reference rejects them).
template <typename T>
BRAID_HD Candidate laneNext(const T *row, int64_t experts, bool first,
                            Candidate prev, int lane, int lanes) {
  Candidate best{0.f, -1};
  if (!first && prev.index < 0)
    return best;
  for (int64_t e = lane; e < experts; e += lanes) {
    float v = toFloat(row[e]);
    if (v != v)
      continue;
    if (!first && !ranksBefore(prev.value, prev.index, v, e))
      continue;
    if (best.index < 0 || ranksBefore(v, e, best.value, best.index))
      best = Candidate{v, static_cast<int32_t>(e)};
  }
  return best;
}

/// Lanes that work alone: every reduction is the identity.
struct SingleLane {
  BRAID_HD float max(float v) const { return v; }
  BRAID_HD float sum(float v) const { return v; }
  BRAID_HD Candidate best(Candidate c) const { return c; }
};

/// logits [tokens, experts] -> weights [tokens, k] (T), experts [tokens, k]
/// (i64): softmax over experts, the k best by logit, optionally rescaled to
/// sum to 1, all as ref::routerTopK (in float).
template <typename T> struct RouterTopK {
  const T *logits;
  T *weights;
  int64_t *chosen;
  int64_t tokens;
  int64_t experts;
  int64_t k;
  bool normalize;

  /// Token `t`, computed by `lanes` cooperating lanes whose partial results
  /// `reduce` merges (identity for one lane, shuffles for a warp). Pick j is
  /// written by lane j % lanes, which later reads back only its own writes.
  template <typename Reduce>
  BRAID_HD void row(int64_t t, int lane, int lanes, Reduce reduce) const {
    const T *x = logits + t * experts;
    float max = reduce.max(laneMax(x, experts, lane, lanes));
    float sum = reduce.sum(laneExpSum(x, experts, max, lane, lanes));
    int64_t *ids = chosen + t * k;
    T *w = weights + t * k;
    // The chosen probabilities are summed in pick order, as the reference.
    float chosenSum = 0.f;
    Candidate prev{0.f, -1};
    for (int64_t j = 0; j < k; ++j) {
      prev = reduce.best(laneNext(x, experts, j == 0, prev, lane, lanes));
      if (prev.index >= 0)
        chosenSum += expf(prev.value - max) / sum;
      if (j % lanes == lane)
        ids[j] = prev.index;
    }
    for (int64_t j = lane; j < k; j += lanes) {
      int64_t e = ids[j];
      float p = e < 0 ? 0.f : expf(toFloat(x[e]) - max) / sum;
      w[j] = fromFloat<T>(normalize ? p / chosenSum : p);
    }
  }

  /// One thread per token (small expert counts, and the host test).
  BRAID_HD void operator()(int64_t t) const { row(t, 0, 1, SingleLane{}); }
};

//===----------------------------------------------------------------------===//
// moe_dispatch and moe_combine: slot assignment
//===----------------------------------------------------------------------===//

/// The GPU assigns slots with one block of kScanThreads per expert; each
/// thread takes kScanItems consecutive (token, choice) pairs of a chunk, so
/// thread order then item order is the reference's token-then-choice order.
constexpr int kScanThreads = 1024;
constexpr int kScanItems = 8;
constexpr int64_t kScanChunk = int64_t(kScanThreads) * kScanItems;

/// The slot of every (token, choice) pair routed to one expert: the count of
/// earlier pairs routed to it, dropped at `capacity`. Results go to
/// `target` (per pair: row e * capacity + slot of the [E * C] buffer; must be
/// prefilled with -1, which stays for dropped pairs and out-of-range experts)
/// and/or `source` (per buffer row: its token; -1 for an unused slot). Either
/// may be null.
template <typename I> struct SlotScan {
  const I *experts;
  int64_t pairs;
  int64_t choices;
  int64_t capacity;
  int32_t *target;
  int32_t *source;

  /// How many of the pairs [first, first + kScanItems) go to expert `e`.
  BRAID_HD int countItems(int64_t e, int64_t first) const {
    int count = 0;
    for (int i = 0; i < kScanItems; ++i) {
      int64_t pair = first + i;
      if (pair < pairs && static_cast<int64_t>(experts[pair]) == e)
        ++count;
    }
    return count;
  }

  /// Records the pairs [first, first + kScanItems) that go to expert `e`,
  /// the first of them being the `rank`-th such pair overall.
  BRAID_HD void writeItems(int64_t e, int64_t first, int64_t rank) const {
    for (int i = 0; i < kScanItems; ++i) {
      int64_t pair = first + i;
      if (pair >= pairs || static_cast<int64_t>(experts[pair]) != e)
        continue;
      if (rank < capacity) {
        int64_t row = e * capacity + rank;
        if (target)
          target[pair] = static_cast<int32_t>(row);
        if (source)
          source[row] = static_cast<int32_t>(pair / choices);
      }
      ++rank;
    }
  }

  /// Marks expert `e`'s slots from `count` on as unused (thread `thread` of
  /// `threads` takes every threads-th one).
  BRAID_HD void fillUnused(int64_t e, int64_t count, int64_t thread,
                           int64_t threads) const {
    if (!source)
      return;
    for (int64_t c = count + thread; c < capacity; c += threads)
      source[e * capacity + c] = -1;
  }
};

/// The scan done serially, one thread per expert (host test; the same
/// chunking as the block kernel, including stopping once the expert is full).
template <typename I> struct AssignSlotsSerial {
  SlotScan<I> scan;

  BRAID_HD void operator()(int64_t e) const {
    int64_t count = 0;
    for (int64_t first = 0; first < scan.pairs && count < scan.capacity;
         first += kScanItems) {
      scan.writeItems(e, first, count);
      count += scan.countItems(e, first);
    }
    scan.fillUnused(e, count, 0, 1);
  }
};

/// out[r, h] = x[source[r], h], or 0 for an unused slot; over the [E * C]
/// rows of `hidden` elements, W at a time.
template <typename T, int W> struct DispatchGather {
  const T *x;
  const int32_t *source;
  T *out;
  int64_t hidden;

  /// Number of work items.
  int64_t size(int64_t rows) const { return rows * (hidden / W); }

  BRAID_HD void operator()(int64_t i) const {
    int64_t packsPerRow = hidden / W;
    int64_t r = i / packsPerRow;
    int64_t h = (i - r * packsPerRow) * W;
    int32_t token = source[r];
    Pack<T, W> v;
    if (token >= 0) {
      v = loadPack<T, W>(x + int64_t(token) * hidden + h);
    } else {
      for (int j = 0; j < W; ++j)
        v.v[j] = fromFloat<T>(0.f);
    }
    storePack<T, W>(out + r * hidden + h, v);
  }
};

/// out[t, h] = sum over choices j (in order) of weights[t, j] *
/// y[target[t, j], h], skipping dropped pairs; W elements at a time.
template <typename T, int W> struct CombineGather {
  const T *y;
  const T *weights;
  const int32_t *target;
  T *out;
  int64_t choices;
  int64_t hidden;

  int64_t size(int64_t tokens) const { return tokens * (hidden / W); }

  BRAID_HD void operator()(int64_t i) const {
    int64_t packsPerRow = hidden / W;
    int64_t t = i / packsPerRow;
    int64_t h = (i - t * packsPerRow) * W;
    float acc[W];
    for (int j = 0; j < W; ++j)
      acc[j] = 0.f;
    for (int64_t c = 0; c < choices; ++c) {
      int64_t pair = t * choices + c;
      int32_t row = target[pair];
      if (row < 0)
        continue; // Dropped for capacity: contributes zero.
      float w = toFloat(weights[pair]);
      Pack<T, W> v = loadPack<T, W>(y + int64_t(row) * hidden + h);
      for (int j = 0; j < W; ++j)
        acc[j] += w * toFloat(v.v[j]);
    }
    Pack<T, W> o;
    for (int j = 0; j < W; ++j)
      o.v[j] = fromFloat<T>(acc[j]);
    storePack<T, W>(out + t * hidden + h, o);
  }
};

//===----------------------------------------------------------------------===//
// cross_entropy
//===----------------------------------------------------------------------===//

/// Running log-sum-exp: the maximum seen and the sum of exp(x - max). Empty:
/// {-inf, 0}. -inf logits add nothing; NaN or +inf logits make the sum NaN,
/// as they make the reference's loss NaN.
struct LseState {
  float max;
  float sum;
};

BRAID_HD LseState emptyLse() { return LseState{-infinity(), 0.f}; }

/// Adds W logits: one rescale of the sum per pack, one exp per logit.
template <typename T, int W>
BRAID_HD void accumulate(LseState &state, const Pack<T, W> &pack) {
  float v[W];
  float next = state.max;
  for (int j = 0; j < W; ++j) {
    v[j] = toFloat(pack.v[j]);
    next = fmaxf(next, v[j]);
  }
  // The guard keeps inf - inf (an infinite max seen again) out of the scale.
  if (next != state.max)
    state.sum *= expf(state.max - next);
  for (int j = 0; j < W; ++j)
    if (v[j] != -infinity())
      state.sum += expf(v[j] - next);
  state.max = next;
}

/// Merges two states. Commutative (float addition is), so every lane of a
/// butterfly ends with the same state.
BRAID_HD LseState mergeLse(LseState a, LseState b) {
  float m = fmaxf(a.max, b.max);
  float sa = a.max == m ? a.sum : a.sum * expf(a.max - m);
  float sb = b.max == m ? b.sum : b.sum * expf(b.max - m);
  return LseState{m, sa + sb};
}

/// Lane `lane`'s state over the packs lane, lane + lanes, ... of a row of
/// `packs` packs of W logits.
template <typename T, int W>
BRAID_HD LseState lanePartial(const T *row, int64_t packs, int64_t lane,
                              int64_t lanes) {
  LseState state = emptyLse();
  for (int64_t p = lane; p < packs; p += lanes)
    accumulate<T, W>(state, loadPack<T, W>(row + p * W));
  return state;
}

/// logits [samples, classes] and labels [samples] -> the per-sample loss
/// logsumexp(row) - row[label], stored as T in `out` (reduction none) or as
/// float in `losses` (mean, sum). A label outside [0, classes), which the
/// reference rejects, gives NaN.
template <typename T, typename I> struct CrossEntropyRows {
  const T *logits;
  const I *labels;
  int64_t samples;
  int64_t classes;
  T *out;
  float *losses;

  BRAID_HD const T *row(int64_t s) const { return logits + s * classes; }

  BRAID_HD void finish(int64_t s, LseState state) const {
    int64_t label = static_cast<int64_t>(labels[s]);
    float loss = quietNaN();
    if (label >= 0 && label < classes)
      loss = state.max + logf(state.sum) - toFloat(row(s)[label]);
    if (out)
      out[s] = fromFloat<T>(loss);
    else
      losses[s] = loss;
  }
};

/// One thread per sample (few classes, and the host test).
template <typename T, typename I, int W> struct CrossEntropyRow {
  CrossEntropyRows<T, I> rows;

  BRAID_HD void operator()(int64_t s) const {
    rows.finish(s, lanePartial<T, W>(rows.row(s), rows.classes / W, 0, 1));
  }
};

/// The deterministic sum of the losses: block b of `blocks` (kSumThreads
/// threads) sums a fixed, grid-strided share, reduced by a fixed tree; a
/// single block then sums the partials the same way. The partition depends
/// on the sample count only.
constexpr int kSumThreads = 256;

inline int64_t sumBlocks(int64_t n) {
  int64_t blocks = ceilDiv(n, int64_t(kSumThreads) * 16);
  return blocks < 1 ? 1 : (blocks > 256 ? 256 : blocks);
}

/// Thread `thread` of block `block`'s share of in[0, n).
BRAID_HD float threadSum(const float *in, int64_t n, int64_t block,
                         int64_t blocks, int64_t thread) {
  float s = 0.f;
  for (int64_t i = block * kSumThreads + thread; i < n;
       i += blocks * kSumThreads)
    s += in[i];
  return s;
}

} // namespace braid::rt::cuda::moe

#endif // BRAID_RUNTIME_CUDA_KERNELS_MOEOPS_CUH
