# SPDX-License-Identifier: BSD-2-Clause
# Install and package (cmake --install, cpack). Three components, which are also the Debian
# packages:
#   runtime      libcblob1     the library, libcblob.so.1.x.y and its SONAME link libcblob.so.1
#   development  libcblob-dev  cblob.h and DLPack's header, the libcblob.so link, cblob.pc and the
#                              CMake package config (find_package(cblob CONFIG): cblob::cblob)
#   tools        cblob-tools   the cblob program
# The program has a package of its own so that the runtime package holds nothing but the
# library: libcblob1 and a future libcblob2 must be installable side by side, and a /usr/bin file
# in both would conflict. The .tar.gz holds all three.
include(CMakePackageConfigHelpers)

set(CBLOB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/cblob)

install(TARGETS cblob EXPORT cblobTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)
install(FILES ${CMAKE_SOURCE_DIR}/include/cblob/cblob.h ${CBLOB_BUILD_INCLUDE_DIR}/cblob/dlpack.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cblob COMPONENT development)
install(FILES ${CMAKE_SOURCE_DIR}/third_party/dlpack/LICENSE ${CMAKE_SOURCE_DIR}/third_party/dlpack/README.md
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/dlpack COMPONENT development)
install(TARGETS cblob_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)

# pkg-config: prefix relative to the .pc file's folder (${pcfiledir}) unless a folder was given
# as an absolute path.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(CBLOB_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(CBLOB_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(CBLOB_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH up "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" up "${up}")
  set(CBLOB_PC_PREFIX "\${pcfiledir}/${up}")
  set(CBLOB_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(CBLOB_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/cblob.pc.in ${CMAKE_BINARY_DIR}/cblob.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cblob.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
# The build tree as a pkg-config package: pkg-config prefers <name>-uninstalled.pc where it finds
# one, so PKG_CONFIG_PATH=<build>/pkgconfig-uninstalled makes `pkg-config cblob` (and what asks it:
# Go's `#cgo pkg-config: cblob`, cblob-sys's build script) use this build's header and library.
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/pkgconfig-uninstalled/cblob-uninstalled.pc CONTENT
"# cblob in its build tree (not installed): written by cmake/CblobInstall.cmake
libdir=$<TARGET_FILE_DIR:cblob>
includedir=${CMAKE_SOURCE_DIR}/include

Name: cblob
Description: ${PROJECT_DESCRIPTION} (build tree)
Version: ${PROJECT_VERSION}
Libs: -L\${libdir} -lcblob
Cflags: -I\${includedir} -I${CBLOB_BUILD_INCLUDE_DIR}
")

# CMake package config. SameMajorVersion: any 1.x satisfies find_package(cblob 1.y) for y <= x,
# as the ABI promises.
install(EXPORT cblobTargets NAMESPACE cblob:: DESTINATION ${CBLOB_CMAKE_DIR} COMPONENT development)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/cblobConfig.cmake.in ${CMAKE_BINARY_DIR}/cblobConfig.cmake
  INSTALL_DESTINATION ${CBLOB_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cblobConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cblobConfig.cmake ${CMAKE_BINARY_DIR}/cblobConfigVersion.cmake
  DESTINATION ${CBLOB_CMAKE_DIR} COMPONENT development)

# ---- CPack ---------------------------------------------------------------------------------
set(CPACK_PACKAGE_NAME cblob)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
# Whoever publishes the packages names themselves here (-DCBLOB_PACKAGE_MAINTAINER=...). The
# default is an address that can never reach anyone (.invalid, RFC 2606), which lintian accepts.
set(CBLOB_PACKAGE_MAINTAINER "cblob maintainers <cblob-maintainers@example.invalid>" CACHE STRING
  "The Maintainer field of the Debian packages: \"Name <address>\"")
set(CPACK_PACKAGE_CONTACT "${CBLOB_PACKAGE_MAINTAINER}")
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_COMPONENTS_ALL runtime development tools)
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF) # one .tar.gz with everything
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGING_INSTALL_PREFIX /usr)
# The packaged library and program are stripped; the build tree keeps its debug info (-g), which
# the ABI check (abidw, abidiff) reads.
set(CPACK_STRIP_FILES ON)
set(cblob_runtime_package "libcblob${PROJECT_VERSION_MAJOR}")
set(cblob_debian_dir ${CMAKE_SOURCE_DIR}/cmake/debian)

# Every package carries /usr/share/doc/<package>/copyright (DEP-5: cblob under BSD-2-Clause,
# DLPack's header under Apache-2.0) and the changelog; the program's package its manual page.
# Both compressed as Debian wants them (gzip -9n: no name or time stamp in the bytes), at
# configure time so that installing never waits on a build target.
function(cblob_gzip source output)
  execute_process(COMMAND gzip -9nc ${source} OUTPUT_FILE ${output} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "gzip ${source} failed")
  endif()
  set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${source})
endfunction()
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/debian)
cblob_gzip(${cblob_debian_dir}/changelog ${CMAKE_BINARY_DIR}/debian/changelog.gz)
# The manual page, rendered from docs/cblob.1.md (generated/tools/cblob.1.in), names the folders of
# the prefix this tree is configured for.
set(CBLOB_VERSION ${PROJECT_VERSION})
set(CBLOB_INCLUDE_DIR ${CMAKE_INSTALL_FULL_INCLUDEDIR})
configure_file(${CMAKE_SOURCE_DIR}/generated/tools/cblob.1.in ${CMAKE_BINARY_DIR}/tools/cblob.1 @ONLY)
cblob_gzip(${CMAKE_BINARY_DIR}/tools/cblob.1 ${CMAKE_BINARY_DIR}/debian/cblob.1.gz)
install(FILES ${CMAKE_BINARY_DIR}/debian/cblob.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)

# One component: the Debian package's name, section, description (lines of at most 80
# characters, as Debian's control files want) and its documentation folder.
function(cblob_package component package section description)
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_NAME ${package} PARENT_SCOPE)
  set(CPACK_DEBIAN_${upper}_PACKAGE_SECTION ${section} PARENT_SCOPE)
  set(CPACK_COMPONENT_${upper}_DESCRIPTION "${description}" PARENT_SCOPE)
  install(FILES ${cblob_debian_dir}/copyright ${CMAKE_BINARY_DIR}/debian/changelog.gz
    DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
endfunction()

cblob_package(runtime ${cblob_runtime_package} libs
"cblob gives N-d arrays of data and diff, synced lazily between host and GPU,
with Caffe's protobuf formats, NeoML's blob operations and DLPack exchange,
behind a versioned C ABI for Rust, Go, C# and any C FFI.
.
This package holds the shared library. CUDA is loaded at run time when present.")
cblob_package(development libcblob-dev libdevel
"The development files of cblob: the header cblob/cblob.h, DLPack's header as
cblob/dlpack.h, the libcblob.so link, the pkg-config file cblob.pc and the
CMake package config (find_package(cblob CONFIG) gives cblob::cblob).")
cblob_package(tools cblob-tools science
"The cblob program: inspect and convert Caffe's .caffemodel and .binaryproto
files, and report what the library finds on the machine (BLAS, CPU, GPU).")
set(CPACK_COMPONENT_RUNTIME_DISPLAY_NAME "cblob library")
set(CPACK_COMPONENT_DEVELOPMENT_DISPLAY_NAME "cblob development files")
set(CPACK_COMPONENT_TOOLS_DISPLAY_NAME "cblob program")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${cblob_runtime_package} (= ${PROJECT_VERSION})")

# The program's dependencies come from dpkg-shlibdeps (libc6, and libcblob1 named exactly, at
# this version). The program needs libcblob.so.1, which no installed package has: dpkg-shlibdeps
# finds it in the build tree and skips it.
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/src)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${cblob_runtime_package} (= ${PROJECT_VERSION})")

# The library's package: CPack's own analysis of a package holding a shared library also writes
# postinst and postrm scripts calling ldconfig, which Debian replaced by the ldconfig trigger; so
# CPack does not analyse this package. Its control files are ours instead: the trigger, and
# DEBIAN/shlibs (packages linking libcblob.so.1 then depend on libcblob1 (>= this version));
# its Depends come from dpkg-shlibdeps run on the built library (cmake/CblobCPackProject.cmake).
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/debian/shlibs
  CONTENT "libcblob ${PROJECT_VERSION_MAJOR} ${cblob_runtime_package} (>= ${PROJECT_VERSION})\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/shlibs ${cblob_debian_dir}/triggers)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/debian/cpack_paths.cmake
  CONTENT "set(CBLOB_LIBRARY_FILE \"$<TARGET_FILE:cblob>\")\nset(CBLOB_SHLIBDEPS_DIR \"${CMAKE_BINARY_DIR}/debian/shlibdeps\")\n")
set(CPACK_CBLOB_PATHS_FILE ${CMAKE_BINARY_DIR}/debian/cpack_paths.cmake)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_SOURCE_DIR}/cmake/CblobCPackProject.cmake)
set(CPACK_PRE_BUILD_SCRIPTS ${CMAKE_SOURCE_DIR}/cmake/CblobCPackPreBuild.cmake)

# libcblob_mpi (src/comm/mpi), where MPI was found: two more packages, made as libcblob's are.
#   mpi_runtime      libcblob-mpi1      libcblob_mpi.so.1.x.y and its SONAME link
#   mpi_development  libcblob-mpi-dev   cblob/mpi.h, the libcblob_mpi.so link, cblob-mpi.pc
if(TARGET cblob_mpi)
  set(cblob_mpi_runtime_package "libcblob-mpi${PROJECT_VERSION_MAJOR}")
  install(TARGETS cblob_mpi
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT mpi_runtime NAMELINK_COMPONENT mpi_development)
  install(FILES ${CMAKE_SOURCE_DIR}/include/cblob/mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cblob
    COMPONENT mpi_development)
  configure_file(${CMAKE_SOURCE_DIR}/cmake/cblob-mpi.pc.in ${CMAKE_BINARY_DIR}/cblob-mpi.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/cblob-mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    COMPONENT mpi_development)
  list(APPEND CPACK_COMPONENTS_ALL mpi_runtime mpi_development)
  cblob_package(mpi_runtime ${cblob_mpi_runtime_package} libs
"cblob's communicators over MPI: data-parallel training with cblob blobs
(all-reduce, broadcast and barrier, blocking or not, with timeouts) on an
MPI communicator, such as Open MPI's.
.
This package holds the shared library libcblob_mpi.so.1.")
  cblob_package(mpi_development libcblob-mpi-dev libdevel
"The development files of cblob's MPI communicators: the header cblob/mpi.h,
the libcblob_mpi.so link and the pkg-config file cblob-mpi.pc.")
  set(CPACK_COMPONENT_MPI_RUNTIME_DISPLAY_NAME "cblob MPI library")
  set(CPACK_COMPONENT_MPI_DEVELOPMENT_DISPLAY_NAME "cblob MPI development files")
  set(CPACK_DEBIAN_MPI_DEVELOPMENT_PACKAGE_DEPENDS
      "${cblob_mpi_runtime_package} (= ${PROJECT_VERSION}), libcblob-dev (= ${PROJECT_VERSION}), libopenmpi-dev")
  # As for libcblob1: the shlibs file and the ldconfig trigger by hand, Depends from dpkg-shlibdeps
  # (cmake/CblobCPackProject.cmake), which cannot know libcblob1 from the build tree: it is named
  # here.
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/debian/mpi/shlibs
    CONTENT "libcblob_mpi ${PROJECT_VERSION_MAJOR} ${cblob_mpi_runtime_package} (>= ${PROJECT_VERSION})\n")
  set(CPACK_DEBIAN_MPI_RUNTIME_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/debian/mpi/shlibs ${cblob_debian_dir}/triggers)
  set(CPACK_DEBIAN_MPI_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)
  set(CPACK_CBLOB_MPI_DEPENDS_ON "${cblob_runtime_package} (>= ${PROJECT_VERSION})")
  file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/debian/cpack_mpi_paths.cmake
    CONTENT "set(CBLOB_MPI_LIBRARY_FILE \"$<TARGET_FILE:cblob_mpi>\")\nset(CBLOB_LIBRARY_DIR \"$<TARGET_FILE_DIR:cblob>\")\n")
  set(CPACK_CBLOB_MPI_PATHS_FILE ${CMAKE_BINARY_DIR}/debian/cpack_mpi_paths.cmake)
endif()

include(CPack)

# The C# binding's NuGet package (bindings/csharp/pack.sh), where Mono's mcs and nuget are:
# `cmake --build <build> --target nupkg` writes <build>/nuget/CBlob.<version>.nupkg.
find_program(CBLOB_MCS mcs)
find_program(CBLOB_NUGET nuget)
if(CBLOB_MCS AND CBLOB_NUGET AND NOT CBLOB_SANITIZE)
  add_custom_target(nupkg
    COMMAND ${CMAKE_SOURCE_DIR}/bindings/csharp/pack.sh ${PROJECT_VERSION} $<TARGET_FILE:cblob> ${CMAKE_BINARY_DIR}/nuget
    COMMENT "NuGet package of the C# binding"
    VERBATIM)
  add_dependencies(nupkg cblob)
endif()
