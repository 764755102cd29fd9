//===- CollectiveCost.cpp - Alpha-beta time of collectives ----------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cost/CollectiveCost.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>

namespace braid::rt {

namespace {

/// Formats `value` the way a user would write it ("-1", "0.5", "nan"), for
/// error messages.
template <typename T> std::string formatValue(T value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

[[noreturn]] void throwInvalid(std::string_view function,
                               std::string_view requirement,
                               const std::string &found) {
  std::string message;
  message += function;
  message += ": ";
  message += requirement;
  message += ", got ";
  message += found;
  throw std::invalid_argument(message);
}

[[noreturn]] void throwUnknownKind(CollectiveKind kind) {
  throw std::invalid_argument("unknown CollectiveKind value " +
                              std::to_string(static_cast<int>(kind)));
}

void checkGroupSize(std::string_view function, std::int64_t groupSize) {
  if (groupSize < 1)
    throwInvalid(function, "group size must be >= 1", formatValue(groupSize));
}

void checkBytes(std::string_view function, double bytes) {
  if (!std::isfinite(bytes) || bytes < 0)
    throwInvalid(function, "byte count must be finite and >= 0",
                 formatValue(bytes));
}

void checkLink(std::string_view function, const LinkParams &link) {
  if (!std::isfinite(link.latencySec) || link.latencySec < 0)
    throwInvalid(function, "link latency (seconds) must be finite and >= 0",
                 formatValue(link.latencySec));
  if (!std::isfinite(link.bandwidthBytesPerSec) ||
      link.bandwidthBytesPerSec <= 0)
    throwInvalid(function, "link bandwidth (bytes/s) must be finite and > 0",
                 formatValue(link.bandwidthBytesPerSec));
}

/// Smallest k with 2^k >= n, for n >= 1: the depth of a binary tree over n
/// ranks. Integer arithmetic, so exact powers of two never round up; unsigned
/// so that `reach` cannot overflow for any positive int64 `n`.
std::int64_t ceilLog2(std::int64_t n) {
  std::int64_t depth = 0;
  for (std::uint64_t reach = 1; reach < static_cast<std::uint64_t>(n);
       reach *= 2)
    ++depth;
  return depth;
}

/// The number of latency terms (alpha) one collective pays.
double latencySteps(CollectiveKind kind, std::int64_t groupSize) {
  double p = static_cast<double>(groupSize);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (p - 1);
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return p - 1;
  case CollectiveKind::Broadcast:
    return static_cast<double>(ceilLog2(groupSize));
  case CollectiveKind::CollectivePermute:
    return 1;
  }
  throwUnknownKind(kind);
}

/// collectiveTime() without argument checks, for callers that checked them.
double uncheckedCollectiveTime(CollectiveKind kind, std::int64_t groupSize,
                               double bytes, const LinkParams &link) {
  // Computed first so that an unknown kind throws even for one rank.
  double steps = latencySteps(kind, groupSize);
  // A one-rank group moves nothing, not even a permute (a shift by one
  // position in a ring of one is the identity).
  if (groupSize == 1)
    return 0;
  // For the algorithms modelled here the fraction of S that crosses each
  // rank's link is exactly NCCL's bus bandwidth factor.
  double latencyTerm = steps * link.latencySec;
  double bandwidthTerm =
      busBandwidthFactor(kind, groupSize) * bytes / link.bandwidthBytesPerSec;
  return latencyTerm + bandwidthTerm;
}

/// The time of `kind` with `algorithm` (Ring or Tree), without checks.
double uncheckedAlgorithmTime(CollectiveKind kind,
                              CollectiveAlgorithm algorithm,
                              std::int64_t groupSize, double bytes,
                              const LinkParams &link) {
  if (groupSize == 1) {
    latencySteps(kind, groupSize); // An unknown kind still throws.
    return 0;
  }
  double p = static_cast<double>(groupSize);
  double depth = static_cast<double>(ceilLog2(groupSize));
  double beta = 1 / link.bandwidthBytesPerSec;
  if (kind == CollectiveKind::AllReduce &&
      algorithm == CollectiveAlgorithm::Tree)
    return 2 * depth * link.latencySec + 2 * bytes * beta;
  if (kind == CollectiveKind::Broadcast &&
      algorithm == CollectiveAlgorithm::Ring)
    return (p - 1) * link.latencySec + bytes * beta;
  return uncheckedCollectiveTime(kind, groupSize, bytes, link);
}

} // namespace

std::string_view toString(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::Ring:
    return "ring";
  case CollectiveAlgorithm::Tree:
    return "tree";
  case CollectiveAlgorithm::Auto:
    return "auto";
  }
  throw std::invalid_argument("unknown CollectiveAlgorithm value " +
                              std::to_string(static_cast<int>(algorithm)));
}

std::string_view toString(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::CollectivePermute:
    return "collective_permute";
  }
  throwUnknownKind(kind);
}

std::optional<CollectiveKind> parseCollectiveKind(std::string_view name) {
  for (CollectiveKind kind :
       {CollectiveKind::AllReduce, CollectiveKind::AllGather,
        CollectiveKind::ReduceScatter, CollectiveKind::AllToAll,
        CollectiveKind::Broadcast, CollectiveKind::CollectivePermute})
    if (toString(kind) == name)
      return kind;
  return std::nullopt;
}

double collectiveTime(CollectiveKind kind, std::int64_t groupSize, double bytes,
                      const LinkParams &link) {
  constexpr std::string_view fn = "collectiveTime";
  checkGroupSize(fn, groupSize);
  checkBytes(fn, bytes);
  checkLink(fn, link);
  return uncheckedCollectiveTime(kind, groupSize, bytes, link);
}

double collectiveTime(CollectiveKind kind, CollectiveAlgorithm algorithm,
                      std::int64_t groupSize, double bytes,
                      const LinkParams &link) {
  constexpr std::string_view fn = "collectiveTime";
  checkGroupSize(fn, groupSize);
  checkBytes(fn, bytes);
  checkLink(fn, link);
  switch (algorithm) {
  case CollectiveAlgorithm::Ring:
  case CollectiveAlgorithm::Tree:
    return uncheckedAlgorithmTime(kind, algorithm, groupSize, bytes, link);
  case CollectiveAlgorithm::Auto:
    return std::min(uncheckedAlgorithmTime(kind, CollectiveAlgorithm::Ring,
                                           groupSize, bytes, link),
                    uncheckedAlgorithmTime(kind, CollectiveAlgorithm::Tree,
                                           groupSize, bytes, link));
  }
  toString(algorithm); // Throws for the unknown value.
  return 0;
}

double chunkedCollectiveTime(CollectiveKind kind, std::int64_t groupSize,
                             double bytes, std::int64_t chunks,
                             const LinkParams &link) {
  constexpr std::string_view fn = "chunkedCollectiveTime";
  checkGroupSize(fn, groupSize);
  checkBytes(fn, bytes);
  if (chunks < 1)
    throwInvalid(fn, "chunk count must be >= 1", formatValue(chunks));
  checkLink(fn, link);
  double count = static_cast<double>(chunks);
  return count * uncheckedCollectiveTime(kind, groupSize, bytes / count, link);
}

double busBandwidthFactor(CollectiveKind kind, std::int64_t groupSize) {
  checkGroupSize("busBandwidthFactor", groupSize);
  double p = static_cast<double>(groupSize);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (p - 1) / p;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (p - 1) / p;
  case CollectiveKind::Broadcast:
  case CollectiveKind::CollectivePermute:
    return 1;
  }
  throwUnknownKind(kind);
}

double busBandwidth(CollectiveKind kind, std::int64_t groupSize, double bytes,
                    double seconds) {
  constexpr std::string_view fn = "busBandwidth";
  checkGroupSize(fn, groupSize);
  checkBytes(fn, bytes);
  if (!std::isfinite(seconds) || seconds <= 0)
    throwInvalid(fn, "elapsed time (seconds) must be finite and > 0",
                 formatValue(seconds));
  return bytes / seconds * busBandwidthFactor(kind, groupSize);
}

} // namespace braid::rt
