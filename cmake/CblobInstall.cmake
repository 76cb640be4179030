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
set(CPACK_PACKAGE_CONTACT "cblob maintainers <cblob-maintainers@example.invalid>")
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_COMPONENTS_ALL runtime development tools)
set(CPACK_ARCHIVE_COMPONENT_INSTALL OFF) # one .tar.gz with everything
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGING_INSTALL_PREFIX /usr)
# Dependencies of the library and the program from dpkg-shlibdeps (libc6, libblis4-...,
# libprotobuf-c1); the packages of cblob itself are named exactly, at this version.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The program needs libcblob.so.1, which no installed package has: dpkg-shlibdeps finds it in the
# build tree and skips it (cblob-tools names libcblob1 itself).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/src)
set(cblob_runtime_package "libcblob${PROJECT_VERSION_MAJOR}")

set(CPACK_COMPONENT_RUNTIME_DISPLAY_NAME "cblob library")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
  "The shared library. cblob gives N-d arrays of data and diff synced lazily between host and GPU, Caffe's protobuf formats, NeoML's blob operations and DLPack exchange, behind a versioned C ABI for Rust, Go, C# and any C FFI. CUDA is loaded at run time when present.")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${cblob_runtime_package})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
# DEBIAN/shlibs (packages linking libcblob.so.1 then depend on libcblob1 (>= this version)); the
# library's package also gets ldconfig calls in postinst and postrm.
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_COMPONENT_DEVELOPMENT_DISPLAY_NAME "cblob development files")
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
  "The development files: the header cblob/cblob.h, DLPack's header as cblob/dlpack.h, the libcblob.so link, the pkg-config file cblob.pc and the CMake package config (find_package(cblob CONFIG) gives cblob::cblob).")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libcblob-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "${cblob_runtime_package} (= ${PROJECT_VERSION})")

set(CPACK_COMPONENT_TOOLS_DISPLAY_NAME "cblob program")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "The cblob program: inspect and convert Caffe's .caffemodel and .binaryproto files, and report what the library finds on the machine (BLAS, CPU, GPU).")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME cblob-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "${cblob_runtime_package} (= ${PROJECT_VERSION})")

include(CPack)
