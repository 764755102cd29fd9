//===- TensorFilesTest.cpp - .npy and ONNX TensorProto .pb files ----------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/tools/TensorFiles.h"

#include "runtime/plan/OnnxTensor.pb.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>

using namespace braid::rt;
using testing::HasSubstr;

namespace {

HostTensor tensorOf(DType dtype, std::vector<int64_t> shape) {
  HostTensor tensor;
  tensor.name = "t";
  tensor.dtype = dtype;
  tensor.shape = std::move(shape);
  tensor.data.resize(tensor.numElements() * byteSize(dtype));
  for (size_t i = 0; i < tensor.data.size(); ++i)
    tensor.data[i] = static_cast<uint8_t>(i * 37 + 11);
  if (dtype == DType::I1)
    for (uint8_t &value : tensor.data)
      value &= 1;
  return tensor;
}

std::string temporaryPath(const std::string &name) {
  return testing::TempDir() + "/braid-" + std::to_string(::getpid()) + "-" +
         name;
}

TEST(TensorFilesTest, NpyRoundTrips) {
  for (DType dtype :
       {DType::F32, DType::F16, DType::I64, DType::I32, DType::I1})
    for (const std::vector<int64_t> &shape :
         {std::vector<int64_t>{}, {3}, {2, 3}, {2, 0, 4}}) {
      HostTensor tensor = tensorOf(dtype, shape);
      std::vector<uint8_t> bytes = encodeNpy(tensor);
      // The header keeps the data 64-byte aligned.
      EXPECT_EQ((bytes.size() - tensor.data.size()) % 64, 0u);
      HostTensor back = decodeNpy(bytes.data(), bytes.size(), "mem");
      EXPECT_EQ(back.dtype, dtype);
      EXPECT_EQ(back.shape, shape);
      EXPECT_EQ(back.data, tensor.data);
    }
  EXPECT_THROW(encodeNpy(tensorOf(DType::BF16, {2})), TensorFileError);
}

TEST(TensorFilesTest, ReadsWhatNumPyWrites) {
  // np.save of np.arange(6, dtype=np.float32).reshape(2, 3), format 1.0.
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::vector<uint8_t> bytes = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, static_cast<uint8_t>(header.size()),
      0};
  bytes.insert(bytes.end(), header.begin(), header.end());
  for (float value : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) {
    uint8_t raw[4];
    std::memcpy(raw, &value, 4);
    bytes.insert(bytes.end(), raw, raw + 4);
  }
  HostTensor tensor = decodeNpy(bytes.data(), bytes.size(), "arange.npy");
  EXPECT_EQ(tensor.shape, (std::vector<int64_t>{2, 3}));
  float last;
  std::memcpy(&last, tensor.data.data() + 20, 4);
  EXPECT_EQ(last, 5.0f);
}

TEST(TensorFilesTest, NpyErrors) {
  auto error = [](std::string header, size_t dataBytes) -> std::string {
    std::vector<uint8_t> bytes = {
        0x93, 'N', 'U',
        'M',  'P', 'Y',
        1,    0,   static_cast<uint8_t>(header.size()),
        0};
    bytes.insert(bytes.end(), header.begin(), header.end());
    bytes.resize(bytes.size() + dataBytes);
    try {
      decodeNpy(bytes.data(), bytes.size(), "x.npy");
    } catch (const TensorFileError &e) {
      return e.what();
    }
    return "";
  };
  EXPECT_THAT(
      error("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", 8),
      HasSubstr("dtype '<f8'"));
  EXPECT_THAT(
      error("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", 4),
      HasSubstr("Fortran-order"));
  EXPECT_THAT(
      error("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 8),
      HasSubstr(
          "holds 8 data bytes, but the header's dtype and shape need 12"));
  EXPECT_THAT(
      error("{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }", 4),
      HasSubstr("not a tuple of integers"));
  EXPECT_THAT(error("{'fortran_order': False, 'shape': (1,), }", 4),
              HasSubstr("no 'descr'"));
  const uint8_t garbage[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  EXPECT_THROW(decodeNpy(garbage, sizeof(garbage), "g"), TensorFileError);
}

TEST(TensorFilesTest, TensorProtoRoundTripsAndFiles) {
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::I64,
                      DType::I32, DType::I1}) {
    HostTensor tensor = tensorOf(dtype, {2, 3});
    std::vector<uint8_t> bytes = encodeTensorProto(tensor);
    HostTensor back = decodeTensorProto(bytes.data(), bytes.size(), "mem");
    EXPECT_EQ(back.name, "t");
    EXPECT_EQ(back.dtype, dtype);
    EXPECT_EQ(back.shape, tensor.shape);
    EXPECT_EQ(back.data, tensor.data);
  }
  std::string pb = temporaryPath("t.pb"), npy = temporaryPath("t.npy");
  HostTensor tensor = tensorOf(DType::F32, {4});
  writeTensorProto(pb, tensor);
  writeNpy(npy, tensor);
  EXPECT_EQ(readTensorFile(pb).data, tensor.data);
  EXPECT_EQ(readTensorFile(npy).data, tensor.data);
  std::remove(pb.c_str());
  std::remove(npy.c_str());
  EXPECT_THAT(
      [&] {
        try {
          readTensorFile(pb);
        } catch (const TensorFileError &e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("cannot open"));
  EXPECT_THROW(readTensorFile("data.csv"), TensorFileError);
}

TEST(TensorFilesTest, TensorProtoTypedFields) {
  braid::onnx_compat::TensorProto proto;
  proto.add_dims(3);
  proto.set_data_type(braid::onnx_compat::TensorProto::FLOAT);
  for (float value : {1.5f, -2.f, 4.f})
    proto.add_float_data(value);
  std::string bytes = proto.SerializeAsString();
  HostTensor tensor = decodeTensorProto(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "f");
  float middle;
  std::memcpy(&middle, tensor.data.data() + 4, 4);
  EXPECT_EQ(middle, -2.f);

  braid::onnx_compat::TensorProto half;
  half.add_dims(2);
  half.set_data_type(braid::onnx_compat::TensorProto::FLOAT16);
  half.add_int32_data(0x3c00);
  half.add_int32_data(0xc000);
  bytes = half.SerializeAsString();
  tensor = decodeTensorProto(reinterpret_cast<const uint8_t *>(bytes.data()),
                             bytes.size(), "h");
  EXPECT_EQ(tensor.data, (std::vector<uint8_t>{0x00, 0x3c, 0x00, 0xc0}));

  braid::onnx_compat::TensorProto ids;
  ids.add_dims(2);
  ids.set_data_type(braid::onnx_compat::TensorProto::INT64);
  ids.add_int64_data(7);
  bytes = ids.SerializeAsString();
  EXPECT_THAT(
      [&] {
        try {
          decodeTensorProto(reinterpret_cast<const uint8_t *>(bytes.data()),
                            bytes.size(), "ids.pb");
        } catch (const TensorFileError &e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("int64_data holds 1 values, but the dims need 2"));

  braid::onnx_compat::TensorProto doubles;
  doubles.set_data_type(braid::onnx_compat::TensorProto::DOUBLE);
  bytes = doubles.SerializeAsString();
  EXPECT_THROW(
      decodeTensorProto(reinterpret_cast<const uint8_t *>(bytes.data()),
                        bytes.size(), "d"),
      TensorFileError);

  braid::onnx_compat::TensorProto external;
  external.set_data_type(braid::onnx_compat::TensorProto::FLOAT);
  external.set_data_location(braid::onnx_compat::TensorProto::EXTERNAL);
  bytes = external.SerializeAsString();
  EXPECT_THROW(
      decodeTensorProto(reinterpret_cast<const uint8_t *>(bytes.data()),
                        bytes.size(), "e"),
      TensorFileError);

  braid::onnx_compat::TensorProto raw;
  raw.add_dims(2);
  raw.set_data_type(braid::onnx_compat::TensorProto::INT32);
  raw.set_raw_data(std::string(7, '\0'));
  bytes = raw.SerializeAsString();
  EXPECT_THROW(
      decodeTensorProto(reinterpret_cast<const uint8_t *>(bytes.data()),
                        bytes.size(), "r"),
      TensorFileError);
}

} // namespace
