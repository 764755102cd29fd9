# Install layout and the exported CMake package (find_package(Braid)).
#
# Both the whole tree and the runtime built on its own (cmake -S runtime)
# install one export set, BraidTargets, with targets named Braid::<Name>;
# BraidConfig.cmake finds the dependencies those targets link and says which
# components this install has (Runtime always; Compiler when MLIR was there;
# Cuda when the CUDA backend was built). See docs/cmake-package.md.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Headers keep their tree paths ("passes/Passes.h", "runtime/core/DType.h")
# under one folder, so a consumer's include lines match Braid's own.
set(BRAID_INSTALL_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}/braid")
set(BRAID_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Braid")
set(BRAID_INSTALL_PLUGINDIR "${CMAKE_INSTALL_LIBDIR}/braid")
set(BRAID_INSTALL_PROFILEDIR "${CMAKE_INSTALL_DATADIR}/braid/profiles")

# braid_export_library(<target> <ExportName>): installs a library into the
# export set as Braid::<ExportName>, with the installed include folder as its
# include directory, and gives it the same alias in the build tree.
function(braid_export_library target name)
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "MODULE_LIBRARY")
    target_include_directories(${target} INTERFACE
      $<INSTALL_INTERFACE:${BRAID_INSTALL_INCLUDEDIR}>)
  endif()
  if(NOT TARGET Braid::${name})
    add_library(Braid::${name} ALIAS ${target})
  endif()
  set(destination ${CMAKE_INSTALL_LIBDIR})
  if(type STREQUAL "MODULE_LIBRARY")
    set(destination ${BRAID_INSTALL_PLUGINDIR})
  endif()
  install(TARGETS ${target} EXPORT BraidTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${destination})
endfunction()

# braid_install_headers(<source folder> <binary folder> <tree path>): the
# headers (and TableGen .td and generated .h.inc) of one folder of the tree.
function(braid_install_headers source binary path)
  install(DIRECTORY "${source}/" DESTINATION "${BRAID_INSTALL_INCLUDEDIR}/${path}"
    FILES_MATCHING PATTERN "*.h" PATTERN "*.td"
    PATTERN "unittests" EXCLUDE PATTERN "tools" EXCLUDE
    PATTERN "profiles" EXCLUDE)
  if(binary AND EXISTS "${binary}")
    install(DIRECTORY "${binary}/" DESTINATION "${BRAID_INSTALL_INCLUDEDIR}/${path}"
      FILES_MATCHING PATTERN "*.h.inc" PATTERN "*.pb.h"
      PATTERN "CMakeFiles" EXCLUDE PATTERN "unittests" EXCLUDE)
  endif()
endfunction()

# braid_install_package(): the export set and BraidConfig.cmake. Call once,
# after every braid_export_library.
# What the runtime's configure found, for BraidConfig.cmake to find again:
# global properties BRAID_PACKAGE_BLAS (the BLAS target), BRAID_PACKAGE_HAS_MPI
# and BRAID_PACKAGE_COMPONENTS (appended to by each part of the tree).
function(braid_install_package version)
  set(BRAID_PACKAGE_VERSION ${version})
  get_property(BRAID_PACKAGE_COMPONENTS GLOBAL PROPERTY BRAID_PACKAGE_COMPONENTS)
  get_property(BRAID_PACKAGE_BLAS GLOBAL PROPERTY BRAID_PACKAGE_BLAS)
  get_property(BRAID_PACKAGE_HAS_MPI GLOBAL PROPERTY BRAID_PACKAGE_HAS_MPI)
  if(NOT BRAID_PACKAGE_HAS_MPI)
    set(BRAID_PACKAGE_HAS_MPI OFF)
  endif()
  set(BRAID_PACKAGE_MLIR_DIR "${MLIR_DIR}")
  install(EXPORT BraidTargets NAMESPACE Braid::
    FILE BraidTargets.cmake DESTINATION ${BRAID_INSTALL_CMAKEDIR})
  set(config_in "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/BraidConfig.cmake.in")
  set(config_out "${CMAKE_CURRENT_BINARY_DIR}/BraidConfig.cmake")
  configure_package_config_file("${config_in}" "${config_out}"
    INSTALL_DESTINATION ${BRAID_INSTALL_CMAKEDIR}
    PATH_VARS BRAID_INSTALL_INCLUDEDIR BRAID_INSTALL_PLUGINDIR
      BRAID_INSTALL_PROFILEDIR)
  write_basic_package_version_file(
    "${CMAKE_CURRENT_BINARY_DIR}/BraidConfigVersion.cmake"
    VERSION ${BRAID_PACKAGE_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES "${config_out}"
    "${CMAKE_CURRENT_BINARY_DIR}/BraidConfigVersion.cmake"
    DESTINATION ${BRAID_INSTALL_CMAKEDIR})
endfunction()
