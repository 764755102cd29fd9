//===- HardwareProfileTest.cpp - hardware profile files -------------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// The shipped profiles load, cite a source for every number, and convert
// datasheet units to SI; malformed profiles are rejected with the field
// named; names resolve through the search path.
//
//===----------------------------------------------------------------------===//

#include "runtime/cost/HardwareProfile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <unistd.h>

using namespace braid::rt;
using testing::HasSubstr;

namespace {

/// A minimal valid profile as JSON, for tests that break one field.
nlohmann::json validProfileJson() {
  return nlohmann::json::parse(R"({
    "name": "tiny", "description": "a test node",
    "gpu": {"model": "G", "sm_count": 10, "memory_gb": 16,
            "memory_bandwidth_gb_per_s": 1000, "kernel_overhead_us": 2,
            "matrix_tflops": {"bf16": 100, "f32": 50},
            "vector_tflops": {"f32": 10, "f16": 20}},
    "efficiency": {"gemm": {"max": 0.8, "half_gflop": 1.5},
                   "attention": {"max": 0.5, "half_gflop": 3},
                   "memory": {"max": 0.9, "half_mb": 2},
                   "vector": {"max": 0.7}},
    "node": {"gpus_per_node": 4,
             "intra": {"type": "nvlink", "bandwidth_gb_per_s": 300,
                       "latency_us": 1.5, "efficiency": 0.8},
             "inter": {"type": "infiniband", "nics_per_node": 2,
                       "bandwidth_gb_per_s": 25, "latency_us": 5,
                       "efficiency": 0.9}},
    "contention": {"comm_sms": 2, "matrix_slowdown": 1.25,
                   "memory_slowdown": 1.3, "comm_slowdown": 1.1},
    "sources": {"gpu": "made up"}
  })");
}

std::string parseError(const nlohmann::json &profile) {
  try {
    parseHardwareProfile(profile.dump(), "test.json");
  } catch (const ProfileError &error) {
    return error.what();
  }
  return "no error";
}

/// Calls `visit` with the dotted path of every number in `value`.
void forEachNumber(const nlohmann::json &value, const std::string &path,
                   const std::function<void(const std::string &)> &visit) {
  if (value.is_number()) {
    visit(path);
    return;
  }
  if (!value.is_object())
    return;
  for (auto it = value.begin(); it != value.end(); ++it)
    forEachNumber(it.value(), path.empty() ? it.key() : path + "." + it.key(),
                  visit);
}

/// Whether `sources` has `path` or one of its prefixes ("gpu" covers
/// "gpu.sm_count").
bool cited(const nlohmann::json &sources, std::string path) {
  while (true) {
    if (sources.contains(path))
      return true;
    size_t dot = path.rfind('.');
    if (dot == std::string::npos)
      return false;
    path = path.substr(0, dot);
  }
}

std::string readFile(const std::string &path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

} // namespace

// Units: TFLOP/s, GB/s, GB, us and MB/GFLOP half sizes become SI.
TEST(HardwareProfileTest, ParsesDatasheetUnits) {
  HardwareProfile profile =
      parseHardwareProfile(validProfileJson().dump(), "test.json");
  EXPECT_EQ(profile.name, "tiny");
  EXPECT_EQ(profile.gpu.smCount, 10);
  EXPECT_DOUBLE_EQ(profile.gpu.memoryBytes, 16e9);
  EXPECT_DOUBLE_EQ(profile.gpu.memoryBandwidth, 1e12);
  EXPECT_DOUBLE_EQ(profile.gpu.kernelOverheadSec, 2e-6);
  EXPECT_DOUBLE_EQ(profile.gpu.matrixPeak(DType::BF16), 100e12);
  EXPECT_DOUBLE_EQ(profile.gpu.matrixPeak(DType::F32), 50e12);
  // No matrix entry: the vector peak; no vector entry: the f32 one.
  EXPECT_DOUBLE_EQ(profile.gpu.matrixPeak(DType::F16), 20e12);
  EXPECT_DOUBLE_EQ(profile.gpu.matrixPeak(DType::I64), 10e12);
  EXPECT_DOUBLE_EQ(profile.gpu.vectorPeak(DType::BF16), 10e12);
  EXPECT_DOUBLE_EQ(profile.gemm.maxEfficiency, 0.8);
  EXPECT_DOUBLE_EQ(profile.gemm.halfWork, 1.5e9);
  EXPECT_DOUBLE_EQ(profile.attention.halfWork, 3e9);
  EXPECT_DOUBLE_EQ(profile.memory.halfWork, 2e6);
  EXPECT_DOUBLE_EQ(profile.vectorEfficiency, 0.7);
  EXPECT_EQ(profile.node.gpusPerNode, 4);
  EXPECT_EQ(profile.node.intra.type, "nvlink");
  EXPECT_DOUBLE_EQ(profile.node.intra.bandwidth, 300e9);
  EXPECT_DOUBLE_EQ(profile.node.intra.latencySec, 1.5e-6);
  EXPECT_DOUBLE_EQ(profile.node.intra.effectiveBandwidth(), 240e9);
  EXPECT_EQ(profile.node.nicsPerNode, 2);
  EXPECT_DOUBLE_EQ(profile.node.inter.bandwidth, 25e9);
  EXPECT_DOUBLE_EQ(profile.contention.matrixSlowdown, 1.25);
  EXPECT_EQ(profile.contention.commSms, 2);
  EXPECT_EQ(profile.sources.at("gpu"), "made up");
}

// The efficiency curve reaches half its maximum at halfWork.
TEST(HardwareProfileTest, EfficiencyCurve) {
  EfficiencyCurve curve{0.8, 1e9};
  EXPECT_DOUBLE_EQ(curve.at(1e9), 0.4);
  EXPECT_DOUBLE_EQ(curve.at(3e9), 0.6);
  EXPECT_NEAR(curve.at(1e15), 0.8, 1e-6);
}

// Every malformed field is reported with its dotted path.
TEST(HardwareProfileTest, RejectsMalformedProfiles) {
  EXPECT_THAT(parseError(nlohmann::json::array()), HasSubstr("JSON object"));
  try {
    parseHardwareProfile("{ not json", "broken.json");
    ADD_FAILURE() << "no error";
  } catch (const ProfileError &error) {
    EXPECT_THAT(error.what(), HasSubstr("broken.json: not valid JSON"));
  }

  nlohmann::json profile = validProfileJson();
  profile["gpu"].erase("sm_count");
  EXPECT_THAT(parseError(profile), HasSubstr("gpu.sm_count: is missing"));

  profile = validProfileJson();
  profile["gpu"]["memory_bandwith_gb_per_s"] = 1;
  EXPECT_THAT(parseError(profile),
              HasSubstr("gpu.memory_bandwith_gb_per_s: is not a profile "
                        "field"));

  profile = validProfileJson();
  profile["efficiency"]["gemm"]["max"] = 1.5;
  EXPECT_THAT(parseError(profile),
              HasSubstr("efficiency.gemm.max: 1.5 is outside [0, 1]"));

  profile = validProfileJson();
  profile["gpu"]["matrix_tflops"]["fp8"] = 1000;
  EXPECT_THAT(parseError(profile),
              HasSubstr("gpu.matrix_tflops.fp8: is not an element type"));

  profile = validProfileJson();
  profile["gpu"]["vector_tflops"].erase("f32");
  EXPECT_THAT(parseError(profile), HasSubstr("needs an f32 entry"));

  profile = validProfileJson();
  profile["node"]["intra"]["type"] = "carrier-pigeon";
  EXPECT_THAT(parseError(profile), HasSubstr("node.intra.type"));

  profile = validProfileJson();
  profile["node"]["inter"]["bandwidth_gb_per_s"] = 0;
  EXPECT_THAT(parseError(profile),
              HasSubstr("node.inter.bandwidth_gb_per_s: must be > 0"));

  profile = validProfileJson();
  profile["node"]["gpus_per_node"] = 2.5;
  EXPECT_THAT(parseError(profile),
              HasSubstr("node.gpus_per_node: must be a whole number"));

  profile = validProfileJson();
  profile["contention"]["comm_slowdown"] = 0.5;
  EXPECT_THAT(parseError(profile), HasSubstr("contention.comm_slowdown"));

  profile = validProfileJson();
  profile["contention"]["comm_sms"] = 11;
  EXPECT_THAT(parseError(profile), HasSubstr("contention.comm_sms"));

  profile = validProfileJson();
  profile["sources"] = nlohmann::json::object();
  EXPECT_THAT(parseError(profile), HasSubstr("sources: must be a non-empty"));

  profile = validProfileJson();
  profile.erase("sources");
  EXPECT_THAT(parseError(profile), HasSubstr("sources: is missing"));
}

// The profiles the issue asks for all ship, load, and cite a source for
// every number they hold.
TEST(HardwareProfileTest, ShippedProfilesLoadAndCiteEveryNumber) {
  std::vector<std::string> names = listHardwareProfiles();
  for (const char *required : {"dgx-a100", "dgx-h100", "h800-node", "h200-node",
                               "a800-node", "rtx4090-pcie", "l20-pcie"})
    EXPECT_THAT(names, testing::Contains(std::string(required)));
  for (const std::string &name : names) {
    SCOPED_TRACE(name);
    std::string path = findHardwareProfile(name);
    HardwareProfile profile = loadHardwareProfile(path);
    EXPECT_EQ(profile.name, name) << "the name field matches the file name";
    EXPECT_EQ(profile.path, path);
    EXPECT_GT(profile.gpu.matrixPeak(DType::BF16),
              profile.gpu.vectorPeak(DType::BF16));
    nlohmann::json document = nlohmann::json::parse(readFile(path));
    forEachNumber(document, "", [&](const std::string &field) {
      EXPECT_TRUE(cited(document["sources"], field))
          << field << " has no entry in \"sources\"";
    });
  }
}

// A few datasheet numbers, to catch a profile edited into nonsense.
TEST(HardwareProfileTest, ShippedProfileNumbers) {
  HardwareProfile h100 = resolveHardwareProfile("dgx-h100");
  EXPECT_DOUBLE_EQ(h100.gpu.matrixPeak(DType::BF16), 989.4e12);
  EXPECT_DOUBLE_EQ(h100.gpu.memoryBandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(h100.node.intra.bandwidth, 450e9);
  EXPECT_EQ(h100.node.gpusPerNode, 8);
  HardwareProfile a100 = resolveHardwareProfile("dgx-a100");
  EXPECT_DOUBLE_EQ(a100.gpu.matrixPeak(DType::BF16), 312e12);
  EXPECT_DOUBLE_EQ(a100.node.inter.bandwidth, 25e9);
  HardwareProfile h800 = resolveHardwareProfile("h800-node");
  EXPECT_DOUBLE_EQ(h800.node.intra.bandwidth, 200e9);
  HardwareProfile rtx = resolveHardwareProfile("rtx4090-pcie");
  EXPECT_EQ(rtx.node.intra.type, "pcie");
}

// Names resolve on the search path (BRAID_PROFILE_PATH first); paths are
// taken as they are; an unknown name lists the known ones.
TEST(HardwareProfileTest, ResolvesNamesAndPaths) {
  char folder[] = "/tmp/braid-profile-test-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  std::string dir = folder;
  nlohmann::json profile = validProfileJson();
  std::ofstream(dir + "/tiny.json") << profile.dump();

  EXPECT_EQ(findHardwareProfile(dir + "/tiny.json"), dir + "/tiny.json");
  EXPECT_THROW(findHardwareProfile(dir + "/absent.json"), ProfileError);

  const char *old = std::getenv("BRAID_PROFILE_PATH");
  std::string saved = old ? old : "";
  ::setenv("BRAID_PROFILE_PATH", ("/nonexistent:" + dir).c_str(), 1);
  EXPECT_EQ(findHardwareProfile("tiny"), dir + "/tiny.json");
  EXPECT_EQ(resolveHardwareProfile("tiny").name, "tiny");
  EXPECT_THAT(listHardwareProfiles(), testing::Contains(std::string("tiny")));
  // After the environment's folders: the source tree's, then the installed
  // copy under the install prefix (cmake --install), each once.
  std::vector<std::string> path = profileSearchPath();
  ASSERT_EQ(path.size(), 4u);
  EXPECT_EQ(path[0], "/nonexistent");
  EXPECT_EQ(path[1], dir);
  EXPECT_THAT(path[2], testing::EndsWith("runtime/profiles"));
  EXPECT_THAT(path[3], testing::EndsWith("share/braid/profiles"));
  if (old)
    ::setenv("BRAID_PROFILE_PATH", saved.c_str(), 1);
  else
    ::unsetenv("BRAID_PROFILE_PATH");

  try {
    findHardwareProfile("dgx-z9000");
    ADD_FAILURE() << "no error";
  } catch (const ProfileError &error) {
    EXPECT_THAT(error.what(),
                HasSubstr("unknown hardware profile 'dgx-z9000'"));
    EXPECT_THAT(error.what(), HasSubstr("dgx-h100"));
  }
  EXPECT_THROW(loadHardwareProfile(dir), ProfileError);
  std::remove((dir + "/tiny.json").c_str());
  ::rmdir(folder);
}
