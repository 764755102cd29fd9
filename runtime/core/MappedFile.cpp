//===- MappedFile.cpp - a file mapped read-only into memory ---------------===//
//
// Part of the Braid project.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/MappedFile.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace braid::rt {

MappedFile mapFileReadOnly(const std::string &path, const std::string &what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw FileError("cannot open " + what + " '" + path +
                    "': " + std::strerror(errno));
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    int error = errno;
    ::close(fd);
    throw FileError("cannot stat " + what + " '" + path +
                    "': " + std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    throw FileError(what + " '" + path + "' is not a regular file");
  }
  MappedFile file;
  file.size = static_cast<uint64_t>(info.st_size);
  if (file.size == 0) {
    ::close(fd);
    return file;
  }
  void *base = ::mmap(nullptr, file.size, PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  ::close(fd);
  if (base == MAP_FAILED)
    throw FileError("cannot map " + what + " '" + path +
                    "': " + std::strerror(error));
  uint64_t length = file.size;
  file.bytes = std::shared_ptr<const uint8_t>(
      static_cast<const uint8_t *>(base), [length](const uint8_t *p) {
        ::munmap(const_cast<uint8_t *>(p), length);
      });
  return file;
}

} // namespace braid::rt
