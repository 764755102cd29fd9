//===- CollectiveCost.h - Alpha-beta time of collectives --------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Alpha-beta (latency-bandwidth) cost of the collectives of the `braid`
// dialect on one link class, with the algorithms NCCL uses for large
// messages (ring; a tree for broadcast). With alpha = link latency, beta =
// 1 / link bandwidth, P = group size and S = the buffer size defined below:
//
//   all-reduce                            2(P-1)*alpha + 2(P-1)/P * S*beta
//   reduce-scatter, all-gather, all-to-all (P-1)*alpha +  (P-1)/P * S*beta
//   broadcast (tree)               ceil(log2 P)*alpha +            S*beta
//   collective-permute (one shift)              alpha +            S*beta
//
// A group of one rank moves nothing and costs 0 for every kind.
//
// NCCL also runs all-reduce as a double binary tree (a reduce up two trees,
// each carrying half the buffer, pipelined with the broadcast down): every
// rank sends and receives about 2S in all, over ceil(log2 P) levels up and
// as many down:
//
//   all-reduce (tree)              2*ceil(log2 P)*alpha +        2*S*beta
//
// and broadcast as a pipelined ring (chain), (P-1)*alpha + S*beta. The tree
// wins for small buffers (fewer latency terms), the ring for large ones
// (2(P-1)/P < 2); `CollectiveAlgorithm::Auto` takes the faster, as NCCL's
// tuner does. Other kinds have one algorithm, so every choice gives the ring
// formula above.
//
// What S is, per kind (NCCL's definition, as used by nccl-tests so that
// simulated and published bandwidths are comparable):
//   - AllReduce: the buffer being reduced, which has the same size on every
//     rank and is both the input and the output of each rank.
//   - AllGather: the full gathered OUTPUT buffer of one rank, i.e. P times the
//     piece each rank contributes.
//   - ReduceScatter: the full INPUT buffer of one rank, i.e. P times the piece
//     each rank receives.
//   - AllToAll: the full send buffer of one rank (P pieces, one per peer,
//     including the piece that stays local); equal to its receive buffer.
//   - Broadcast: the buffer sent by the root (and received by every rank).
//   - CollectivePermute: the buffer each rank sends in the one shift (the
//     same size it receives).
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COST_COLLECTIVECOST_H
#define BRAID_RUNTIME_COST_COLLECTIVECOST_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace braid::rt {

/// The collectives of the `braid` dialect.
enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Broadcast,
  CollectivePermute,
};

/// Returns the dialect spelling of `kind` ("all_reduce", "all_gather", ...).
/// Throws std::invalid_argument for a value outside the enumeration.
std::string_view toString(CollectiveKind kind);
/// The kind named `name` as toString() writes it ("all_reduce", ...), if any.
std::optional<CollectiveKind> parseCollectiveKind(std::string_view name);

/// The algorithm a collective runs with (see this file's header comment).
enum class CollectiveAlgorithm {
  /// Rings for every kind: NCCL's choice for large buffers (a pipelined
  /// chain, (P-1)*alpha + S*beta, for broadcast).
  Ring,
  /// The double binary tree for all-reduce; the tree for broadcast; the ring
  /// for the other kinds.
  Tree,
  /// The faster of Ring and Tree for this size.
  Auto,
};

/// Returns "ring", "tree" or "auto". Throws std::invalid_argument for a value
/// outside the enumeration.
std::string_view toString(CollectiveAlgorithm algorithm);

/// Latency and bandwidth of the links a collective runs over.
struct LinkParams {
  /// Per-message latency alpha, in seconds; must be finite and >= 0.
  double latencySec;
  /// Unidirectional bandwidth 1/beta, in bytes per second; must be finite
  /// and > 0.
  double bandwidthBytesPerSec;
};

/// Returns the time, in seconds, of one `kind` collective over a group of
/// `groupSize` ranks on `link`, where `bytes` is the buffer size S defined
/// for that kind in this file's header comment.
///
/// Throws std::invalid_argument, naming the offending value, if `groupSize`
/// < 1, `bytes` is negative or not finite, or `link` is invalid (negative or
/// non-finite latency, non-positive or non-finite bandwidth).
double collectiveTime(CollectiveKind kind, std::int64_t groupSize, double bytes,
                      const LinkParams &link);

/// Returns the time, in seconds, of one `kind` collective run with
/// `algorithm`. The four-argument collectiveTime() is Ring for every kind
/// but broadcast, which it runs as a tree (Tree and Auto give the same).
///
/// Throws std::invalid_argument for every input that
/// collectiveTime(kind, groupSize, bytes, link) rejects and for an unknown
/// algorithm.
double collectiveTime(CollectiveKind kind, CollectiveAlgorithm algorithm,
                      std::int64_t groupSize, double bytes,
                      const LinkParams &link);

/// Returns the time, in seconds, of the same collective split into `chunks`
/// equal pieces of `bytes / chunks` each, issued one after another (as the
/// overlap passes issue them). The bandwidth term is unchanged, but every
/// piece pays the latency term again, so splitting into k pieces costs
/// (k - 1) times the latency term extra; this is why chunk counts have an
/// optimum and are chosen by the cost model.
///
/// Throws std::invalid_argument for `chunks` < 1 and for every input that
/// collectiveTime() rejects.
double chunkedCollectiveTime(CollectiveKind kind, std::int64_t groupSize,
                             double bytes, std::int64_t chunks,
                             const LinkParams &link);

/// Returns the factor NCCL multiplies algorithm bandwidth (S / time) by to
/// get bus bandwidth: 2(P-1)/P for all-reduce; (P-1)/P for all-gather,
/// reduce-scatter and all-to-all; 1 for broadcast and collective-permute.
/// Bus bandwidth is comparable with the link bandwidth whatever P is.
///
/// Throws std::invalid_argument if `groupSize` < 1.
double busBandwidthFactor(CollectiveKind kind, std::int64_t groupSize);

/// Returns NCCL's bus bandwidth, in bytes per second, of a `kind` collective
/// over `groupSize` ranks that moved a buffer of `bytes` (S as defined in
/// this file's header comment) in `seconds`:
/// (bytes / seconds) * busBandwidthFactor(kind, groupSize).
///
/// Throws std::invalid_argument if `groupSize` < 1, `bytes` is negative or
/// not finite, or `seconds` is not a finite number > 0.
double busBandwidth(CollectiveKind kind, std::int64_t groupSize, double bytes,
                    double seconds);

} // namespace braid::rt

#endif // BRAID_RUNTIME_COST_COLLECTIVECOST_H
