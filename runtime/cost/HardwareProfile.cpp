//===- HardwareProfile.cpp - GPUs, nodes and links of a cluster -----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/cost/HardwareProfile.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <sys/stat.h>

#ifndef BRAID_RUNTIME_PROFILES_DIR
#define BRAID_RUNTIME_PROFILES_DIR ""
#endif
#ifndef BRAID_RUNTIME_INSTALLED_PROFILES_DIR
#define BRAID_RUNTIME_INSTALLED_PROFILES_DIR ""
#endif

namespace braid::rt {

namespace {

using nlohmann::json;

constexpr double kTera = 1e12;
constexpr double kGiga = 1e9;
constexpr double kMega = 1e6;
constexpr double kMicro = 1e-6;

/// Reads one JSON object of a profile: each key is read at most once, and
/// finish() rejects the keys nobody asked for. Errors name the file and the
/// dotted path of the field.
class ObjectReader {
public:
  ObjectReader(const json &value, std::string origin, std::string path)
      : value_(value), origin_(std::move(origin)), path_(std::move(path)) {
    if (!value_.is_object())
      fail(path_.empty() ? "the profile" : path_, "must be a JSON object");
  }

  [[noreturn]] void fail(const std::string &field,
                         const std::string &problem) const {
    throw ProfileError(origin_ + ": " + field + ": " + problem);
  }

  std::string fieldPath(const std::string &key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  const json &get(const std::string &key) {
    read_.insert(key);
    auto it = value_.find(key);
    if (it == value_.end())
      fail(fieldPath(key), "is missing");
    return *it;
  }

  bool has(const std::string &key) const { return value_.contains(key); }

  std::string string(const std::string &key) {
    const json &value = get(key);
    if (!value.is_string())
      fail(fieldPath(key), "must be a string");
    return value.get<std::string>();
  }

  /// A finite number in [low, high].
  double number(const std::string &key, double low, double high) {
    const json &value = get(key);
    if (!value.is_number())
      fail(fieldPath(key), "must be a number");
    double number = value.get<double>();
    if (!std::isfinite(number) || number < low || number > high) {
      std::ostringstream os;
      os << number << " is outside [" << low << ", " << high << "]";
      fail(fieldPath(key), os.str());
    }
    return number;
  }

  /// A number > 0.
  double positive(const std::string &key) {
    double value = number(key, 0, 1e30);
    if (value <= 0)
      fail(fieldPath(key), "must be > 0");
    return value;
  }

  int64_t integer(const std::string &key, int64_t low, int64_t high) {
    const json &value = get(key);
    if (!value.is_number_integer())
      fail(fieldPath(key), "must be a whole number");
    int64_t number = value.get<int64_t>();
    if (number < low || number > high)
      fail(fieldPath(key), std::to_string(number) + " is outside [" +
                               std::to_string(low) + ", " +
                               std::to_string(high) + "]");
    return number;
  }

  ObjectReader object(const std::string &key) {
    return ObjectReader(get(key), origin_, fieldPath(key));
  }

  /// Element type -> value * scale, for every key (which must name a type).
  std::map<DType, double> perType(const std::string &key, double scale) {
    const json &table = get(key);
    if (!table.is_object() || table.empty())
      fail(fieldPath(key), "must be a non-empty object of element type -> "
                           "number");
    std::map<DType, double> result;
    for (auto it = table.begin(); it != table.end(); ++it) {
      std::optional<DType> dtype = parseDType(it.key());
      if (!dtype)
        fail(fieldPath(key) + "." + it.key(),
             "is not an element type (f32, f16, bf16, i64, i32, i1)");
      if (!it.value().is_number() || !(it.value().get<double>() > 0) ||
          !std::isfinite(it.value().get<double>()))
        fail(fieldPath(key) + "." + it.key(), "must be a number > 0");
      result[*dtype] = it.value().get<double>() * scale;
    }
    return result;
  }

  void finish() const {
    for (auto it = value_.begin(); it != value_.end(); ++it)
      if (!read_.count(it.key())) {
        std::string known;
        for (const std::string &key : read_)
          known += (known.empty() ? "" : ", ") + key;
        fail(fieldPath(it.key()),
             "is not a profile field (expected " + known + ")");
      }
  }

private:
  const json &value_;
  std::string origin_;
  std::string path_;
  std::set<std::string> read_;
};

EfficiencyCurve readCurve(ObjectReader reader, const char *halfKey,
                          double halfScale) {
  EfficiencyCurve curve;
  curve.maxEfficiency = reader.number("max", 0, 1);
  if (curve.maxEfficiency <= 0)
    reader.fail(reader.fieldPath("max"), "must be > 0");
  if (halfKey)
    curve.halfWork = reader.number(halfKey, 0, 1e12) * halfScale;
  reader.finish();
  return curve;
}

LinkSpec readLink(ObjectReader &reader, bool inter, int64_t *nicsPerNode) {
  static const std::set<std::string> types = {"nvlink", "pcie", "infiniband",
                                              "roce", "ethernet"};
  LinkSpec link;
  link.type = reader.string("type");
  if (!types.count(link.type))
    reader.fail(reader.fieldPath("type"),
                "'" + link.type +
                    "' is not one of nvlink, pcie, infiniband, roce, ethernet");
  link.bandwidth = reader.positive("bandwidth_gb_per_s") * kGiga;
  link.latencySec = reader.number("latency_us", 0, 1e6) * kMicro;
  link.efficiency = reader.number("efficiency", 0, 1);
  if (link.efficiency <= 0)
    reader.fail(reader.fieldPath("efficiency"), "must be > 0");
  if (inter)
    *nicsPerNode = reader.integer("nics_per_node", 1, 1024);
  reader.finish();
  return link;
}

bool isFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

} // namespace

double EfficiencyCurve::at(double work) const {
  return maxEfficiency * work / (work + halfWork);
}

double GpuSpec::matrixPeak(DType dtype) const {
  auto it = matrixFlops.find(dtype);
  return it != matrixFlops.end() ? it->second : vectorPeak(dtype);
}

double GpuSpec::vectorPeak(DType dtype) const {
  auto it = vectorFlops.find(dtype);
  if (it != vectorFlops.end())
    return it->second;
  it = vectorFlops.find(DType::F32);
  // The parser guarantees an f32 entry.
  return it != vectorFlops.end() ? it->second : 0;
}

HardwareProfile parseHardwareProfile(const std::string &text,
                                     const std::string &origin) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::exception &error) {
    throw ProfileError(origin + ": not valid JSON: " + error.what());
  }
  HardwareProfile profile;
  ObjectReader top(document, origin, "");
  profile.name = top.string("name");
  if (profile.name.empty())
    top.fail("name", "is empty");
  profile.description = top.string("description");

  {
    ObjectReader gpu = top.object("gpu");
    profile.gpu.model = gpu.string("model");
    profile.gpu.smCount = gpu.integer("sm_count", 1, 100000);
    profile.gpu.memoryBytes = gpu.positive("memory_gb") * kGiga;
    profile.gpu.memoryBandwidth =
        gpu.positive("memory_bandwidth_gb_per_s") * kGiga;
    profile.gpu.kernelOverheadSec =
        gpu.number("kernel_overhead_us", 0, 1e6) * kMicro;
    profile.gpu.matrixFlops = gpu.perType("matrix_tflops", kTera);
    profile.gpu.vectorFlops = gpu.perType("vector_tflops", kTera);
    if (!profile.gpu.vectorFlops.count(DType::F32))
      gpu.fail(gpu.fieldPath("vector_tflops"),
               "needs an f32 entry (the fallback for other types)");
    gpu.finish();
  }
  {
    ObjectReader efficiency = top.object("efficiency");
    profile.gemm = readCurve(efficiency.object("gemm"), "half_gflop", kGiga);
    profile.attention =
        readCurve(efficiency.object("attention"), "half_gflop", kGiga);
    profile.memory = readCurve(efficiency.object("memory"), "half_mb", kMega);
    profile.vectorEfficiency =
        readCurve(efficiency.object("vector"), nullptr, 0).maxEfficiency;
    efficiency.finish();
  }
  {
    ObjectReader node = top.object("node");
    profile.node.gpusPerNode = node.integer("gpus_per_node", 1, 1 << 20);
    ObjectReader intra = node.object("intra");
    profile.node.intra = readLink(intra, false, nullptr);
    ObjectReader inter = node.object("inter");
    profile.node.inter = readLink(inter, true, &profile.node.nicsPerNode);
    node.finish();
  }
  {
    ObjectReader contention = top.object("contention");
    profile.contention.commSms =
        contention.integer("comm_sms", 0, profile.gpu.smCount);
    profile.contention.matrixSlowdown =
        contention.number("matrix_slowdown", 1, 100);
    profile.contention.memorySlowdown =
        contention.number("memory_slowdown", 1, 100);
    profile.contention.commSlowdown =
        contention.number("comm_slowdown", 1, 100);
    contention.finish();
  }
  {
    const json &sources = top.get("sources");
    if (!sources.is_object() || sources.empty())
      top.fail("sources", "must be a non-empty object of field path -> "
                          "citation");
    for (auto it = sources.begin(); it != sources.end(); ++it) {
      if (!it.value().is_string() || it.value().get<std::string>().empty())
        top.fail("sources." + it.key(), "must be a non-empty string");
      profile.sources[it.key()] = it.value().get<std::string>();
    }
  }
  top.finish();
  return profile;
}

HardwareProfile loadHardwareProfile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file || !isFile(path))
    throw ProfileError(path + ": cannot read the profile file");
  std::ostringstream text;
  text << file.rdbuf();
  HardwareProfile profile = parseHardwareProfile(text.str(), path);
  profile.path = path;
  return profile;
}

std::vector<std::string> profileSearchPath() {
  std::vector<std::string> folders;
  if (const char *env = std::getenv("BRAID_PROFILE_PATH")) {
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos)
        end = list.size();
      if (end > start)
        folders.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  // The source tree's folder while it exists (a build tree), then the
  // installed copy (`cmake --install`), so an installed tool keeps working
  // after the source tree is gone.
  for (const char *builtIn :
       {BRAID_RUNTIME_PROFILES_DIR, BRAID_RUNTIME_INSTALLED_PROFILES_DIR}) {
    std::string folder = builtIn;
    if (!folder.empty() &&
        std::find(folders.begin(), folders.end(), folder) == folders.end())
      folders.push_back(folder);
  }
  return folders;
}

std::vector<std::string> listHardwareProfiles() {
  std::set<std::string> names;
  for (const std::string &folder : profileSearchPath()) {
    DIR *dir = ::opendir(folder.c_str());
    if (!dir)
      continue;
    while (const dirent *entry = ::readdir(dir)) {
      std::string file = entry->d_name;
      const std::string suffix = ".json";
      if (file.size() > suffix.size() &&
          file.compare(file.size() - suffix.size(), suffix.size(), suffix) ==
              0 &&
          isFile(folder + "/" + file))
        names.insert(file.substr(0, file.size() - suffix.size()));
    }
    ::closedir(dir);
  }
  return {names.begin(), names.end()};
}

std::string findHardwareProfile(const std::string &nameOrPath) {
  if (nameOrPath.empty())
    throw ProfileError("no hardware profile given");
  bool isPath = nameOrPath.find('/') != std::string::npos ||
                (nameOrPath.size() > 5 &&
                 nameOrPath.compare(nameOrPath.size() - 5, 5, ".json") == 0);
  if (isPath) {
    if (!isFile(nameOrPath))
      throw ProfileError(nameOrPath + ": no such profile file");
    return nameOrPath;
  }
  for (const std::string &folder : profileSearchPath()) {
    std::string candidate = folder + "/" + nameOrPath + ".json";
    if (isFile(candidate))
      return candidate;
  }
  std::string known;
  for (const std::string &name : listHardwareProfiles())
    known += (known.empty() ? "" : ", ") + name;
  throw ProfileError("unknown hardware profile '" + nameOrPath +
                     "' (known: " + (known.empty() ? "none" : known) +
                     "; or give a path to a .json file)");
}

HardwareProfile resolveHardwareProfile(const std::string &nameOrPath) {
  return loadHardwareProfile(findHardwareProfile(nameOrPath));
}

} // namespace braid::rt
