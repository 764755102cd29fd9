//===- TimelineSvg.h - a picture of a simulated timeline --------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Draws a simulated run as an SVG a person can look at: one lane per stream
// with a box per kernel or collective (colored by roofline class or
// collective kind; a dark stripe on top marks work slowed by sharing the
// GPU or a link), thin gray bars where a stream waits on an event, a lane
// marking exposed communication (a collective running while no kernel
// does), a time axis, a legend and the run's numbers in the title. Boxes
// narrower than a pixel are merged with their neighbours of the same color
// so that long runs stay small.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_SIM_TIMELINESVG_H
#define BRAID_RUNTIME_SIM_TIMELINESVG_H

#include "runtime/sim/Simulator.h"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace braid::rt {

struct TimelineSvgOptions {
  /// Width of the whole picture in pixels (>= 400).
  int width = 1600;
  /// The first title line (e.g. the plan's file name); the second line
  /// always holds the run's numbers.
  std::string title;
  /// What ran it, for the title; empty: the simulated cluster (profile,
  /// nodes, GPUs, ranks).
  std::string where;
};

/// Writes the SVG picture of `result`.
void writeTimelineSvg(const SimResult &result, std::ostream &os,
                      const TimelineSvgOptions &options = {});

/// Writes several pictures one above the other in one SVG (braid-run
/// --compare-sim: the measured run over the simulated one).
void writeStackedTimelineSvg(
    const std::vector<std::pair<const SimResult *, TimelineSvgOptions>> &parts,
    std::ostream &os);

} // namespace braid::rt

#endif // BRAID_RUNTIME_SIM_TIMELINESVG_H
