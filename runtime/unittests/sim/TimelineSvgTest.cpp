//===- TimelineSvgTest.cpp - the SVG picture of a simulated run -----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Builds SimResults by hand and checks what the picture holds: lanes, boxes
// at the right places and in the right colors, the exposed-communication
// lane, escaping, and merging of sub-pixel boxes.
//
//===----------------------------------------------------------------------===//

#include "runtime/sim/TimelineSvg.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

using namespace braid::rt;
using testing::HasSubstr;
using testing::Not;

namespace {

SimOp kernel(const std::string &name, KernelClass kernelClass, double start,
             double end) {
  SimOp op;
  op.kind = SimOpKind::Kernel;
  op.name = name;
  op.kernelClass = kernelClass;
  op.startSec = start;
  op.endSec = end;
  op.isolatedSec = end - start;
  return op;
}

SimOp collective(const std::string &name, double start, double end) {
  SimOp op;
  op.kind = SimOpKind::Collective;
  op.name = name;
  op.axes = "tp";
  op.groupSize = 8;
  op.startSec = start;
  op.endSec = end;
  op.isolatedSec = end - start;
  return op;
}

/// A 4 ms run: compute does a GEMM over [0, 2) ms and attention over [3, 4);
/// comm all-reduces over [1, 3) ms, exposed over [2, 3).
SimResult sampleRun() {
  SimResult result;
  result.profileName = "dgx-h100";
  result.worldSize = 8;
  result.nodes = 1;
  result.gpusPerNode = 8;
  SimStream compute{"compute", {}};
  compute.ops.push_back(kernel("matmul", KernelClass::Gemm, 0, 2e-3));
  SimOp wait;
  wait.kind = SimOpKind::WaitEvent;
  wait.name = "wait_event";
  wait.startSec = 2e-3;
  wait.endSec = 3e-3;
  compute.ops.push_back(wait);
  compute.ops.push_back(
      kernel("attention", KernelClass::Attention, 3e-3, 4e-3));
  SimStream comm{"comm <tp>", {}};
  SimOp reduce = collective("all_reduce", 1e-3, 3e-3);
  reduce.isolatedSec = 1.5e-3; // slowed by contention
  comm.ops.push_back(reduce);
  result.streams = {compute, comm};
  result.metrics.makespanSec = 4e-3;
  result.metrics.totalComputeSec = 3e-3;
  result.metrics.totalCommunicationSec = 1.5e-3;
  result.metrics.overlapEfficiency = 0.75;
  result.metrics.exposedCommunicationSec = 1e-3;
  result.metrics.hiddenCommunicationFraction = 0.5;
  return result;
}

std::string render(const SimResult &result, int width = 1170) {
  std::ostringstream os;
  TimelineSvgOptions options;
  options.width = width;
  options.title = "plan & <test>";
  writeTimelineSvg(result, os, options);
  return os.str();
}

size_t count(const std::string &text, const std::string &what) {
  size_t found = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++found;
  return found;
}

} // namespace

// Width 1170 leaves a 976-pixel plot from x = 170: 1 ms is 244 pixels.
TEST(TimelineSvgTest, BoxesLanesAndAxis) {
  std::string svg = render(sampleRun());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("<svg xmlns=\"http://www.w3.org/2000/svg\" "
                             "width=\"1170.00\""));
  EXPECT_THAT(svg, HasSubstr("</svg>\n"));
  // Lanes, with names escaped.
  EXPECT_THAT(svg, HasSubstr(">compute</text>"));
  EXPECT_THAT(svg, HasSubstr(">comm &lt;tp&gt;</text>"));
  EXPECT_THAT(svg, HasSubstr(">exposed comm.</text>"));
  // Title and numbers.
  EXPECT_THAT(svg, HasSubstr("plan &amp; &lt;test&gt; on dgx-h100, 1 node(s) "
                             "x 8 GPUs, 8 ranks"));
  EXPECT_THAT(svg, HasSubstr("makespan 4.000 ms"));
  EXPECT_THAT(svg, HasSubstr("overlap efficiency 75.0%"));
  // The GEMM box: [0, 2) ms in the first lane (y = 64), blue.
  EXPECT_THAT(svg, HasSubstr("<rect x=\"170.00\" y=\"64.00\" width=\"488.00\" "
                             "height=\"26.00\" fill=\"#4e79a7\""));
  // Attention [3, 4) ms, purple.
  EXPECT_THAT(svg, HasSubstr("<rect x=\"902.00\" y=\"64.00\" width=\"244.00\" "
                             "height=\"26.00\" fill=\"#b07aa1\""));
  // The all-reduce [1, 3) ms in the second lane (y = 100), orange, with a
  // contention stripe and a tooltip naming its group.
  EXPECT_THAT(svg, HasSubstr("<rect x=\"414.00\" y=\"100.00\" width=\"488.00\" "
                             "height=\"26.00\" fill=\"#f28e2b\""));
  EXPECT_THAT(svg, HasSubstr("<rect x=\"414.00\" y=\"100.00\" width=\"488.00\" "
                             "height=\"4\" fill=\"#222222\"/>"));
  EXPECT_THAT(svg, HasSubstr("<title>all_reduce over [tp] (8 ranks): 2.000 ms "
                             "(alone 1.500 ms)</title>"));
  // The wait, a thin gray bar over [2, 3) ms.
  EXPECT_THAT(svg, HasSubstr("<rect x=\"658.00\" y=\"74.40\" width=\"244.00\" "
                             "height=\"5.20\" fill=\"#c8c8c8\"/>"));
  // Exposed communication over [2, 3) ms in the third lane (y = 136).
  EXPECT_THAT(svg, HasSubstr("<rect x=\"658.00\" y=\"136.00\" width=\"244.00\" "
                             "height=\"26.00\" fill=\"#d62728\""));
  // Axis ticks every 0.5 ms (span 4 ms -> step 0.5 ms).
  EXPECT_THAT(svg, HasSubstr(">0 ms</text>"));
  EXPECT_THAT(svg, HasSubstr(">1.5 ms</text>"));
  EXPECT_THAT(svg, HasSubstr(">4 ms</text>"));
  // Legend entries for what is drawn only.
  EXPECT_THAT(svg, HasSubstr(">GEMM</text>"));
  EXPECT_THAT(svg, HasSubstr(">attention</text>"));
  EXPECT_THAT(svg, HasSubstr(">all_reduce</text>"));
  EXPECT_THAT(svg, HasSubstr(">slowed by contention</text>"));
  EXPECT_THAT(svg, Not(HasSubstr(">all_gather</text>")));
  EXPECT_THAT(svg, Not(HasSubstr(">memory-bound kernel</text>")));
}

// Tens of thousands of sub-pixel kernels become a few hundred boxes.
TEST(TimelineSvgTest, MergesSubPixelBoxes) {
  SimResult result;
  result.profileName = "p";
  SimStream stream{"compute", {}};
  const int kernels = 50000;
  for (int i = 0; i < kernels; ++i)
    stream.ops.push_back(
        kernel("add", KernelClass::Memory, i * 1e-6, (i + 1) * 1e-6));
  result.streams = {stream};
  result.metrics.makespanSec = kernels * 1e-6;
  std::string svg = render(result);
  size_t boxes = count(svg, "fill=\"#59a14f\"");
  EXPECT_GT(boxes, 100u);
  EXPECT_LT(boxes, 2000u);
}

// An empty run still draws a valid picture.
TEST(TimelineSvgTest, EmptyRun) {
  SimResult result;
  result.profileName = "p";
  result.streams = {SimStream{"compute", {}}};
  std::string svg = render(result, 100);
  EXPECT_THAT(svg, HasSubstr("width=\"400.00\""));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}
