//===- Safetensors.cpp - writing .safetensors weight files ----------------===//

#include "frontend/onnx/Safetensors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <nlohmann/json.hpp>

using namespace mlir::braid::onnx_import;

llvm::StringRef mlir::braid::onnx_import::safetensorsDType(int32_t onnxType) {
  switch (onnxType) {
  case kFloat:
    return "F32";
  case kFloat16:
    return "F16";
  case kBFloat16:
    return "BF16";
  case kDouble:
    return "F64";
  case kInt64:
    return "I64";
  case kInt32:
    return "I32";
  case kInt16:
    return "I16";
  case kInt8:
    return "I8";
  case kUint8:
    return "U8";
  case kBool:
    return "BOOL";
  default:
    return "";
  }
}

llvm::Error mlir::braid::onnx_import::writeSafetensors(
    llvm::StringRef path, llvm::ArrayRef<ImportedWeight> weights) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}, {"producer", "braid"}};
  uint64_t offset = 0;
  for (const ImportedWeight &weight : weights) {
    llvm::StringRef dtype = safetensorsDType(weight.data.type);
    if (dtype.empty())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "weight '" + weight.name + "' has element type " +
              onnxTypeName(weight.data.type) + ", which safetensors lacks");
    uint64_t end = offset + weight.data.bytes.size();
    header[weight.name] = {
        {"dtype", dtype.str()},
        {"shape", std::vector<int64_t>(weight.data.shape.begin(),
                                       weight.data.shape.end())},
        {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string json = header.dump();
  // Pad the header so the data starts 8-byte aligned.
  json.append((8 - json.size() % 8) % 8, ' ');

  // A device or a pipe (/dev/null) is written in place: renaming a
  // temporary over it would replace the device (as root, /dev/null itself).
  llvm::sys::fs::file_status status;
  using llvm::sys::fs::file_type;
  bool special = !llvm::sys::fs::status(path, status) &&
                 (status.type() == file_type::character_file ||
                  status.type() == file_type::block_file ||
                  status.type() == file_type::fifo_file ||
                  status.type() == file_type::socket_file);
  llvm::SmallString<256> temporary(path);
  if (!special)
    temporary += ".tmp";
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(temporary, ec, llvm::sys::fs::OF_None);
    if (ec)
      return llvm::createStringError(ec, "cannot write '" + temporary +
                                             "': " + ec.message());
    uint64_t size = json.size();
    char length[8];
    for (int i = 0; i < 8; ++i)
      length[i] = static_cast<char>((size >> (8 * i)) & 0xff);
    out.write(length, 8);
    out << json;
    for (const ImportedWeight &weight : weights)
      out << weight.data.bytes;
    out.close();
    if (out.has_error()) {
      if (!special)
        llvm::sys::fs::remove(temporary);
      return llvm::createStringError(
          out.error(), "cannot write '" + path + "': " + out.error().message());
    }
  }
  if (special)
    return llvm::Error::success();
  if (std::error_code ec = llvm::sys::fs::rename(temporary, path)) {
    llvm::sys::fs::remove(temporary);
    return llvm::createStringError(ec, "cannot write '" + path +
                                           "': " + ec.message());
  }
  return llvm::Error::success();
}
