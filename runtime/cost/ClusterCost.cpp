//===- ClusterCost.cpp - collectives on a cluster of nodes ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cost/ClusterCost.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace braid::rt {

GroupPlacement placeGroup(const std::vector<int64_t> &ranks,
                          int64_t gpusPerNode) {
  if (ranks.empty())
    throw std::invalid_argument("placeGroup: the group is empty");
  if (gpusPerNode < 1)
    throw std::invalid_argument("placeGroup: GPUs per node must be >= 1, got " +
                                std::to_string(gpusPerNode));
  std::map<int64_t, int64_t> perNode;
  for (int64_t rank : ranks) {
    if (rank < 0)
      throw std::invalid_argument("placeGroup: negative rank " +
                                  std::to_string(rank));
    ++perNode[rank / gpusPerNode];
  }
  GroupPlacement placement;
  placement.size = static_cast<int64_t>(ranks.size());
  placement.nodes = static_cast<int64_t>(perNode.size());
  placement.minPerNode = placement.size;
  placement.maxPerNode = 0;
  for (const auto &[node, count] : perNode) {
    placement.minPerNode = std::min(placement.minPerNode, count);
    placement.maxPerNode = std::max(placement.maxPerNode, count);
  }
  return placement;
}

LinkParams ringLink(const HardwareProfile &profile,
                    const GroupPlacement &placement) {
  const NodeSpec &node = profile.node;
  if (!placement.spansNodes())
    return {node.intra.latencySec, node.intra.effectiveBandwidth()};
  double lanes =
      static_cast<double>(std::min(placement.minPerNode, node.nicsPerNode));
  double bandwidth = lanes * node.inter.effectiveBandwidth();
  if (placement.minPerNode > 1)
    bandwidth = std::min(bandwidth, node.intra.effectiveBandwidth());
  return {node.inter.latencySec, bandwidth};
}

namespace {

/// All-to-all over a group that spans nodes (the formula in ClusterCost.h).
double interNodeAllToAllTime(const HardwareProfile &profile,
                             const GroupPlacement &placement, double bytes) {
  const NodeSpec &node = profile.node;
  double p = static_cast<double>(placement.size);
  double slowest = 0;
  for (int64_t m : {placement.minPerNode, placement.maxPerNode}) {
    double members = static_cast<double>(m);
    double nicShare = static_cast<double>(std::min(m, node.nicsPerNode)) /
                      members * node.inter.effectiveBandwidth();
    double offNode = (p - members) / p * bytes / nicShare;
    double onNode = (members - 1) / p * bytes / node.intra.effectiveBandwidth();
    slowest = std::max(slowest, std::max(offNode, onNode));
  }
  return (p - 1) * node.inter.latencySec + slowest;
}

} // namespace

double clusterCollectiveTime(const HardwareProfile &profile,
                             CollectiveKind kind, CollectiveAlgorithm algorithm,
                             const GroupPlacement &placement, double bytes) {
  LinkParams link = ringLink(profile, placement);
  // Checks every argument (and gives 0 for a group of one).
  double time = collectiveTime(kind, algorithm, placement.size, bytes, link);
  if (kind == CollectiveKind::AllToAll && placement.spansNodes())
    return interNodeAllToAllTime(profile, placement, bytes);
  return time;
}

} // namespace braid::rt
