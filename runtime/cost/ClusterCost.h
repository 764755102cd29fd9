//===- ClusterCost.h - collectives on a cluster of nodes --------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Which links a collective's group runs over, and what that costs.
//
// Ranks are numbered row-major over the mesh (the last axis varies fastest,
// runtime/comm/Communicator.h) and placed on nodes in that order: rank r
// lives on node r / gpus_per_node. A collective over some mesh axes runs on
// the group of ranks that differ only along those axes, so whether a group
// stays inside one node follows from the mesh, the axes and gpus_per_node:
// with mesh (dp = 8, tp = 8) and 8 GPUs per node, a "tp" group is one node
// and a "dp" group is one GPU on each of 8 nodes.
//
// The link rule (a ring is as fast as its slowest hop):
//   - A group inside one node runs on the intra-node link (NVLink or PCIe):
//     latency alpha_intra, bandwidth B_intra * eff_intra.
//   - A group spanning nodes runs at the speed of the node boundary, the
//     slower link: latency alpha_inter, bandwidth
//         min(m, nics_per_node) * B_nic * eff_nic
//     where m is the fewest group members on any one node (NCCL runs one
//     ring per NIC, each crossing the boundary through its own NIC; with one
//     member per node only one NIC carries the ring), capped by the
//     intra-node bandwidth when m > 1 (the rings also cross NVLink/PCIe).
//   - All-to-all spanning nodes is not a ring: each rank sends (P - m)/P of
//     its buffer off its node, through the node's min(m, nics) NICs shared
//     by its m ranks, and (m - 1)/P inside the node at the same time:
//         (P-1)*alpha_inter + max((P-m)/P * S / (min(m, nics)/m * B_nic*eff),
//                                 (m-1)/P * S / (B_intra*eff_intra))
//     evaluated for the smallest and the largest m, the slower one kept.
// Latency, bandwidth and the algorithm formulas come from
// runtime/cost/CollectiveCost.h; docs/cost-model.md has the sources.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_COST_CLUSTERCOST_H
#define BRAID_RUNTIME_COST_CLUSTERCOST_H

#include "runtime/cost/CollectiveCost.h"
#include "runtime/cost/HardwareProfile.h"

#include <cstdint>
#include <vector>

namespace braid::rt {

/// Where the ranks of one collective group sit.
struct GroupPlacement {
  int64_t size = 1;
  /// Nodes holding at least one member.
  int64_t nodes = 1;
  /// The fewest and the most members on one of those nodes.
  int64_t minPerNode = 1;
  int64_t maxPerNode = 1;

  bool spansNodes() const { return nodes > 1; }
};

/// The placement of the group `ranks` (global rank numbers) with
/// `gpusPerNode` GPUs per node. Throws std::invalid_argument for an empty
/// group, a negative rank or `gpusPerNode` < 1.
GroupPlacement placeGroup(const std::vector<int64_t> &ranks,
                          int64_t gpusPerNode);

/// The link a ring over `placement` runs at (the rule in this file's header
/// comment).
LinkParams ringLink(const HardwareProfile &profile,
                    const GroupPlacement &placement);

/// The time, in seconds, of one `kind` collective with `algorithm` over a
/// group placed as `placement`, `bytes` being S as defined in
/// runtime/cost/CollectiveCost.h. Throws std::invalid_argument as
/// collectiveTime() does.
double clusterCollectiveTime(const HardwareProfile &profile,
                             CollectiveKind kind, CollectiveAlgorithm algorithm,
                             const GroupPlacement &placement, double bytes);

} // namespace braid::rt

#endif // BRAID_RUNTIME_COST_CLUSTERCOST_H
