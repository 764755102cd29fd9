#!/usr/bin/env bash
# bench/gpu-check/fetch-deps.sh: makes the dependency prefix that travels to
# a GPU machine lacking Braid's runtime dependencies.
#
#   bench/gpu-check/fetch-deps.sh [PREFIX]     # default: bench/gpu-check/deps
#
# Run it on a Debian or Ubuntu machine WITH network access, of the same CPU
# architecture as the GPU machine and a C library no newer than its (a
# Debian 12 prefix suits Ubuntu 24.04). It `apt-get download`s (no root
# needed; run `apt-get update` first if the package lists are stale) the
# packages of protobuf (library, headers, protoc), OpenBLAS (the pthread
# build and its libgfortran), nlohmann-json and googletest, unpacks each with
# `dpkg -x` into PREFIX, then makes the prefix relocatable: the
# update-alternatives links that dpkg -x does not make (libopenblas.so,
# cblas.h, openblas.pc), pkg-config files relative to ${pcfiledir}, the
# OpenBLAS CMake file relative to itself, no absolute symbolic links. Static
# archives other than googletest's and the documentation are dropped to keep
# the prefix small. PREFIX/MANIFEST lists the packages and versions;
# PREFIX.tar.xz (.tar.gz without xz) holds the same, to copy where size
# counts.
#
# bench/gpu-check/gpu-check uses PREFIX (BRAID_DEPS_PREFIX, default
# bench/gpu-check/deps) when the system lacks a dependency.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
prefix=${1:-${BRAID_DEPS_PREFIX:-$here/deps}}

say() { echo "fetch-deps: $*" >&2; }
die() {
  say "error: $*"
  exit 1
}

for tool in apt-get apt-cache dpkg dpkg-deb; do
  command -v "$tool" >/dev/null || die "needs $tool (a Debian or Ubuntu machine)"
done

# A package the archive has (a candidate version), or nothing.
available() {
  local candidate
  candidate=$(apt-cache policy "$1" 2>/dev/null |
    awk '/Candidate:/ { print $2; exit }')
  [[ -n $candidate && $candidate != "(none)" ]]
}

# The direct dependencies of $1 whose names match the regular expression $2,
# the first of each group of alternatives only.
deps_matching() {
  apt-cache depends --no-recommends --no-suggests --no-conflicts \
    --no-breaks --no-replaces --no-enhances "$1" 2>/dev/null |
    awk -v re="$2" '
      /^ *\|?(Pre)?Depends:/ {
        name = $2
        gsub(/[<>]/, "", name)
        if (!in_group && name ~ re) print name
        in_group = ($1 ~ /^\|/)
      }'
}

# The -dev packages; the library (soname) packages are read off their
# dependencies, so the names fit the distribution (libprotobuf32 on
# Debian 12, libprotobuf32t64 on Ubuntu 24.04, ...).
roots=(libprotobuf-dev protobuf-compiler libopenblas-dev
  libopenblas-pthread-dev nlohmann-json3-dev libgtest-dev libgmock-dev)
for package in "${roots[@]}"; do
  available "$package" ||
    die "the package lists have no '$package' (run apt-get update?)"
done
packages=("${roots[@]}")
add() {
  local name
  for name in "$@"; do
    [[ -n $name ]] || continue
    available "$name" || die "the package lists have no '$name'"
    [[ " ${packages[*]} " == *" $name "* ]] || packages+=("$name")
  done
}
# shellcheck disable=SC2046  # one package name per word
add $(deps_matching libprotobuf-dev '^libprotobuf(-lite)?[0-9]')
# shellcheck disable=SC2046
add $(deps_matching protobuf-compiler '^libprotoc[0-9]')
blas_runtime=$(deps_matching libopenblas-pthread-dev '^libopenblas0')
[[ -n $blas_runtime ]] ||
  die "cannot tell the OpenBLAS runtime package of libopenblas-pthread-dev"
# shellcheck disable=SC2086
add $blas_runtime
# libopenblas links libgfortran, which a machine without Fortran lacks.
# shellcheck disable=SC2086
gfortran=$(deps_matching $blas_runtime '^libgfortran[0-9]')
# shellcheck disable=SC2086
add $gfortran
for package in $gfortran; do
  # shellcheck disable=SC2046
  add $(deps_matching "$package" '^libquadmath[0-9]')
done
say "packages: ${packages[*]}"

work=$(mktemp -d)
chmod 755 "$work" # apt-get download as root hands the files to _apt
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${packages[@]}") >&2 ||
  die "apt-get download failed (network? run apt-get update first)"

rm -rf "$prefix"
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
{
  echo "# Made by bench/gpu-check/fetch-deps.sh on $(date -u +%Y-%m-%dT%H:%MZ)"
  # shellcheck disable=SC1091
  echo "# from $(. /etc/os-release && echo "$PRETTY_NAME"), $(dpkg --print-architecture)"
} >"$prefix/MANIFEST"
for deb in "$work"/*.deb; do
  dpkg -x "$deb" "$prefix"
  dpkg-deb -f "$deb" Package Version | paste -sd' ' >>"$prefix/MANIFEST"
done

usr=$prefix/usr
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
  gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
[[ -d $usr/lib/$multiarch ]] ||
  die "unpacked libraries are not in usr/lib/$multiarch"
lib=$usr/lib/$multiarch
blasdir=$(find "$lib" -maxdepth 1 -type d -name 'openblas-pthread' | head -n 1)
[[ -n $blasdir ]] || die "no openblas-pthread folder in $lib"

# Keep it small: no documentation, no static libraries but googletest's,
# no reference BLAS / LAPACK beside OpenBLAS (Braid calls cblas_* only).
rm -rf "$usr/share/doc" "$usr/share/man" "$usr/share/lintian" "$usr/src"
find "$usr" -name '*.a' ! -name 'libgtest*' ! -name 'libgmock*' -delete
find "$blasdir" \( -name 'libblas.so*' -o -name 'liblapack.so*' \
  -o -name 'blas-openblas.pc' -o -name 'lapack-openblas.pc' \) -delete

# Absolute symbolic links inside the prefix become relative ones.
while IFS= read -r -d '' link; do
  target=$(readlink "$link")
  [[ $target == /* ]] || continue
  if [[ -e $prefix$target ]]; then
    ln -sfn "$(realpath -s --relative-to="$(dirname "$link")" "$prefix$target")" \
      "$link"
  else
    say "dropping the link ${link#"$prefix"/} -> $target (not in the prefix)"
    rm -f "$link"
  fi
done < <(find "$prefix" -type l -print0)

# What update-alternatives would have made for the pthread OpenBLAS.
relink() { # relink TARGET LINK: a relative link
  mkdir -p "$(dirname "$2")"
  ln -sfn "$(realpath -s --relative-to="$(dirname "$2")" "$1")" "$2"
}
relink "$blasdir/libopenblas.so.0" "$lib/libopenblas.so.0"
relink "$blasdir/libopenblas.so" "$lib/libopenblas.so"
for header in "$usr/include/$multiarch/openblas-pthread"/*.h; do
  relink "$header" "$usr/include/$multiarch/$(basename "$header")"
done

# openblas.pc where pkg-config looks (a copy: through a link, ${pcfiledir}
# would be the link's folder).
mkdir -p "$lib/pkgconfig"
cp "$blasdir/pkgconfig/openblas.pc" "$lib/pkgconfig/openblas.pc"

# pkg-config files: /usr paths relative to the file's own folder.
while IFS= read -r -d '' pc; do
  up=$(realpath -s --relative-to="$(dirname "$pc")" "$usr")
  sed -i -e "s|^prefix=/usr/*\$|prefix=\${pcfiledir}/$up|" \
    -e "s|=/usr/|=\${pcfiledir}/$up/|g" \
    -e "s| -I/usr/| -I\${pcfiledir}/$up/|g; s| -L/usr/| -L\${pcfiledir}/$up/|g" \
    "$pc"
done < <(find "$usr" -name '*.pc' -type f -print0)

# The OpenBLAS CMake file names /usr paths: make them relative to itself.
while IFS= read -r -d '' config; do
  up=$(realpath -s --relative-to="$(dirname "$config")" "$usr")
  sed -i -e "s|/usr/|\${CMAKE_CURRENT_LIST_DIR}/$up/|g" "$config"
done < <(find "$blasdir" -name 'OpenBLASConfig.cmake' -type f -print0)

# What is left that names /usr absolutely (the "/usr move" branches of the
# googletest files are harmless: they apply only under /usr).
leftovers=$(grep -rIl --include='*.pc' --include='*.cmake' '=/usr\|"/usr/[a-z]' \
  "$usr" 2>/dev/null | grep -v '/cmake/GTest/' || true)
[[ -z $leftovers ]] || say "still naming /usr: $leftovers"

# A smoke test of the unpacked protoc.
if LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$usr/bin/protoc" --version >/dev/null 2>&1; then
  say "protoc runs: $(LD_LIBRARY_PATH="$lib" "$usr/bin/protoc" --version)"
else
  die "the unpacked protoc does not run"
fi
say "made $prefix ($(du -sh "$prefix" | cut -f1)); see $prefix/MANIFEST"

# The same as one archive beside it, for copying to the GPU machine where
# size counts; gpu-check unpacks it when the folder is not there.
archive=$prefix.tar.xz
rm -f "$prefix.tar.xz" "$prefix.tar.gz"
if command -v xz >/dev/null; then
  tar -C "$prefix" -cf - . | xz -T0 -6 >"$archive"
else
  archive=$prefix.tar.gz
  tar -C "$prefix" -czf "$archive" .
fi
say "made $archive ($(du -sh "$archive" | cut -f1))"
