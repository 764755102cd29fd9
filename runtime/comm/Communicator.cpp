//===- Communicator.cpp - mesh arithmetic shared by communicators ---------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Ranks are numbered row-major over the mesh: the last axis varies fastest.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace braid::rt {

namespace {
/// Index of `axis` in the mesh; throws std::invalid_argument if absent.
size_t axisIndex(const MeshShape &mesh, const std::string &axis) {
  for (size_t i = 0; i < mesh.axisNames.size(); ++i)
    if (mesh.axisNames[i] == axis)
      return i;
  throw std::invalid_argument("mesh has no axis '" + axis + "'");
}

/// Throws unless every axis has a positive size and names and sizes pair up.
void checkWellFormed(const MeshShape &mesh) {
  if (mesh.axisNames.size() != mesh.axisSizes.size())
    throw std::invalid_argument(
        "mesh has " + std::to_string(mesh.axisNames.size()) +
        " axis names but " + std::to_string(mesh.axisSizes.size()) + " sizes");
  for (size_t i = 0; i < mesh.axisSizes.size(); ++i)
    if (mesh.axisSizes[i] <= 0)
      throw std::invalid_argument("mesh axis '" + mesh.axisNames[i] +
                                  "' has size " +
                                  std::to_string(mesh.axisSizes[i]));
}

/// Row-major stride of axis `i` (the product of the sizes after it).
int64_t strideOf(const MeshShape &mesh, size_t i) {
  int64_t stride = 1;
  for (size_t j = i + 1; j < mesh.axisSizes.size(); ++j)
    stride *= mesh.axisSizes[j];
  return stride;
}

void checkRank(const MeshShape &mesh, int64_t rank) {
  int64_t count = mesh.numRanks();
  if (rank < 0 || rank >= count)
    throw std::invalid_argument("rank " + std::to_string(rank) +
                                " is outside a mesh of " +
                                std::to_string(count) + " ranks");
}
} // namespace

int64_t MeshShape::numRanks() const {
  checkWellFormed(*this);
  int64_t count = 1;
  for (int64_t size : axisSizes) {
    if (count > INT64_MAX / size)
      throw std::invalid_argument("mesh has more than 2^63 ranks");
    count *= size;
  }
  return count;
}

int64_t MeshShape::coordinate(int64_t rank, const std::string &axis) const {
  checkRank(*this, rank);
  size_t i = axisIndex(*this, axis);
  return rank / strideOf(*this, i) % axisSizes[i];
}

std::vector<int64_t>
MeshShape::group(int64_t rank, const std::vector<std::string> &axes) const {
  checkRank(*this, rank);
  // Which mesh axes span the group, in mesh order.
  std::vector<bool> spanned(axisNames.size(), false);
  for (const std::string &axis : axes) {
    size_t i = axisIndex(*this, axis);
    if (spanned[i])
      throw std::invalid_argument("axis '" + axis +
                                  "' is listed twice for one group");
    spanned[i] = true;
  }
  // The member with all spanned coordinates zero, then every combination of
  // the spanned coordinates, the last spanned axis fastest.
  int64_t base = rank;
  for (size_t i = 0; i < axisNames.size(); ++i)
    if (spanned[i])
      base -= coordinate(rank, axisNames[i]) * strideOf(*this, i);
  std::vector<int64_t> members{base};
  for (size_t i = 0; i < axisNames.size(); ++i) {
    if (!spanned[i])
      continue;
    std::vector<int64_t> next;
    next.reserve(members.size() * axisSizes[i]);
    for (int64_t member : members)
      for (int64_t c = 0; c < axisSizes[i]; ++c)
        next.push_back(member + c * strideOf(*this, i));
    members = std::move(next);
  }
  return members;
}

std::string formatAxes(const std::vector<std::string> &axes) {
  std::string text = "[";
  for (size_t k = 0; k < axes.size(); ++k)
    text += (k ? ", " : "") + axes[k];
  return text + "]";
}

std::string formatMesh(const MeshShape &mesh) {
  std::string text = "[";
  size_t numAxes = std::min(mesh.axisNames.size(), mesh.axisSizes.size());
  for (size_t k = 0; k < numAxes; ++k)
    text += (k ? ", " : "") + mesh.axisNames[k] + "=" +
            std::to_string(mesh.axisSizes[k]);
  return text + "]";
}

std::string formatSeconds(std::chrono::milliseconds duration) {
  std::ostringstream text;
  text << double(duration.count()) / 1000.0 << " s";
  return text.str();
}

} // namespace braid::rt
