//===- SafetensorsTest.cpp - reading and validating .safetensors ----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/weights/Safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace braid::rt;
using testing::HasSubstr;

namespace {

/// A file from a header text and `dataBytes` bytes of data.
std::vector<uint8_t> fileOf(const std::string &header, size_t dataBytes) {
  std::vector<uint8_t> bytes(8 + header.size() + dataBytes);
  uint64_t size = header.size();
  for (size_t i = 0; i < 8; ++i)
    bytes[i] = static_cast<uint8_t>(size >> (8 * i));
  for (size_t i = 0; i < header.size(); ++i)
    bytes[8 + i] = static_cast<uint8_t>(header[i]);
  for (size_t i = 0; i < dataBytes; ++i)
    bytes[8 + header.size() + i] = static_cast<uint8_t>(i);
  return bytes;
}

std::string errorOf(std::vector<uint8_t> bytes) {
  try {
    SafetensorsFile::fromBytes(std::move(bytes), "bad.safetensors");
  } catch (const WeightsError &error) {
    return error.what();
  }
  return "";
}

TEST(SafetensorsTest, EncodeThenRead) {
  std::vector<float> values = {1.5f, -2, 3.25f, 4, 5, 6};
  std::vector<uint8_t> raw(values.size() * 4);
  std::memcpy(raw.data(), values.data(), raw.size());
  std::vector<SafetensorsEntry> entries = {
      {"layer.weight", DType::F32, {2, 3}, raw},
      {"ids", DType::I64, {2}, std::vector<uint8_t>(16, 7)},
      {"flag", DType::I1, {}, {1}},
      {"empty", DType::BF16, {0, 4}, {}}};
  SafetensorsFile file = SafetensorsFile::fromBytes(encodeSafetensors(entries));
  ASSERT_EQ(file.tensors().size(), 4u);
  const SafetensorsTensor *weight = file.find("layer.weight");
  ASSERT_NE(weight, nullptr);
  EXPECT_EQ(weight->dtype, DType::F32);
  EXPECT_EQ(weight->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(file.data(*weight), values.data(), 24), 0);
  EXPECT_EQ(file.find("flag")->dtype, DType::I1);
  EXPECT_EQ(file.find("flag")->shape, std::vector<int64_t>{});
  EXPECT_EQ(*file.data(*file.find("flag")), 1);
  EXPECT_EQ(file.find("empty")->end, file.find("empty")->begin);
  EXPECT_EQ(file.find("nope"), nullptr);
}

TEST(SafetensorsTest, OpensAMappedFile) {
  std::vector<SafetensorsEntry> entries = {
      {"w", DType::F16, {3}, {1, 2, 3, 4, 5, 6}}};
  std::vector<uint8_t> bytes = encodeSafetensors(entries);
  std::string path = testing::TempDir() + "/braid-st-" +
                     std::to_string(::getpid()) + ".safetensors";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  {
    SafetensorsFile file = SafetensorsFile::open(path);
    SafetensorsFile copy = file; // copies share the mapping
    EXPECT_EQ(copy.path(), path);
    ASSERT_NE(copy.find("w"), nullptr);
    EXPECT_EQ(copy.data(*copy.find("w"))[5], 6);
  }
  std::remove(path.c_str());
  EXPECT_THROW(SafetensorsFile::open(path), WeightsError);
}

// release() drops a copied tensor's pages from the process; the data reads
// the same afterwards (from the file again), for a mapped file and an
// in-memory one (where it does nothing).
TEST(SafetensorsTest, ReleasedTensorsReadTheSame) {
  std::vector<uint8_t> big(3 * 4096 + 123), small = {7, 8, 9, 10};
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<uint8_t>(i * 31 + 5);
  std::vector<SafetensorsEntry> entries = {
      {"big", DType::I1, {static_cast<int64_t>(big.size())}, big},
      {"small", DType::F32, {1}, small}};
  std::vector<uint8_t> bytes = encodeSafetensors(entries);
  std::string path = testing::TempDir() + "/braid-st-release-" +
                     std::to_string(::getpid()) + ".safetensors";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  for (SafetensorsFile file :
       {SafetensorsFile::open(path), SafetensorsFile::fromBytes(bytes)}) {
    for (const char *name : {"big", "small"}) {
      const SafetensorsTensor &tensor = *file.find(name);
      const std::vector<uint8_t> &expected = name[0] == 'b' ? big : small;
      file.release(tensor, 5000); // a prefix (a whole page of `big`)
      EXPECT_TRUE(
          std::equal(expected.begin(), expected.end(), file.data(tensor)))
          << name << " in " << file.path();
      file.release(tensor);
      EXPECT_TRUE(
          std::equal(expected.begin(), expected.end(), file.data(tensor)))
          << name << " in " << file.path();
    }
  }
  std::remove(path.c_str());
}

TEST(SafetensorsTest, MetadataAndForeignDTypes) {
  SafetensorsFile file = SafetensorsFile::fromBytes(fileOf(
      R"({"__metadata__": {"format": "pt"},
          "d": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}})",
      16));
  EXPECT_EQ(file.metadata().at("format"), "pt");
  ASSERT_NE(file.find("d"), nullptr);
  // Valid in the file; a plan cannot use it.
  EXPECT_FALSE(file.find("d")->dtype.has_value());
  EXPECT_EQ(file.find("d")->dtypeName, "F64");
}

TEST(SafetensorsTest, RejectsMalformedFiles) {
  EXPECT_THAT(errorOf({1, 2, 3}), HasSubstr("fewer than the 8-byte header"));
  std::vector<uint8_t> huge = fileOf("{}", 0);
  huge[7] = 0x10;
  EXPECT_THAT(errorOf(huge), HasSubstr("runs past the end of the file"));
  EXPECT_THAT(errorOf(fileOf("{not json", 0)),
              HasSubstr("header is not valid JSON"));
  EXPECT_THAT(errorOf(fileOf("[1, 2]", 0)),
              HasSubstr("header is not a JSON object"));
  EXPECT_THAT(errorOf(fileOf(R"({"a": 3})", 0)),
              HasSubstr("tensor 'a': entry is not an object"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "Q7", "shape": [], "data_offsets": [0, 0]}})", 0)),
      HasSubstr("tensor 'a': unknown dtype 'Q7'"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}})",
          0)),
      HasSubstr("shape entry -1 is not a non-negative integer"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
          4)),
      HasSubstr("data_offsets [0, 8] are outside the 4 data bytes"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 4]}})",
          16)),
      HasSubstr("are outside"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})",
          16)),
      HasSubstr("holds 8 bytes, but F32 of shape [3] needs 12"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 4294967296], "data_offsets": [0, 8]}})",
          16)),
      HasSubstr("2^63 bytes or more"));
  // An empty tensor is held to the same bound, whatever the order of sizes.
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "BOOL", "shape": [0, 4294967296, 2147483648], "data_offsets": [0, 0]}})",
          16)),
      HasSubstr("2^63 bytes or more"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
          16)),
      HasSubstr("tensors 'a' and 'b' overlap"));
  EXPECT_THAT(errorOf(fileOf(R"({"a": {"dtype": "F32", "shape": [1]}})", 4)),
              HasSubstr("'data_offsets' is missing"));
  EXPECT_THAT(errorOf(fileOf(R"({"__metadata__": {"k": 1}})", 0)),
              HasSubstr("__metadata__ value 'k' is not a string"));
  EXPECT_THAT(
      errorOf(fileOf(
          R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0.5, 4]}})",
          4)),
      HasSubstr("are not non-negative integers"));
}

} // namespace
