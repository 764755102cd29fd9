//===- MappedFile.h - a file mapped read-only into memory -------*- C++ -*-===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//
//
// Weights files and token files are read through read-only private
// mappings: opening a large file reads nothing, and pages come in as they
// are touched.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_RUNTIME_CORE_MAPPEDFILE_H
#define BRAID_RUNTIME_CORE_MAPPEDFILE_H

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace braid::rt {

/// A file that cannot be opened, examined or mapped; the message names it
/// and says why.
class FileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The bytes of a mapped file; the mapping is released with the last copy.
struct MappedFile {
  std::shared_ptr<const uint8_t> bytes;
  uint64_t size = 0;
};

/// Maps the regular file at `path` read-only. `what` names the file's role
/// in messages ("weights file", "data file"). An empty file maps to no
/// bytes. Throws FileError.
MappedFile mapFileReadOnly(const std::string &path, const std::string &what);

} // namespace braid::rt

#endif // BRAID_RUNTIME_CORE_MAPPEDFILE_H
