# SPDX-License-Identifier: BSD-2-Clause
# Read by cpack once per generator (CPACK_PROJECT_CONFIG_FILE). For the Debian packages: the
# Depends of the library's package, from dpkg-shlibdeps run on the library this build made, as
# CPack would have run it on the staged copy (see cmake/CblobInstall.cmake for why CPack does not).
if(NOT CPACK_GENERATOR STREQUAL "DEB")
  return()
endif()
include(${CPACK_CBLOB_PATHS_FILE}) # CBLOB_LIBRARY_FILE, CBLOB_SHLIBDEPS_DIR (in the build tree)
find_program(CBLOB_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(NOT CBLOB_DPKG_SHLIBDEPS)
  message(FATAL_ERROR "dpkg-shlibdeps not found (install dpkg-dev): it computes libcblob's Depends")
endif()
# dpkg-shlibdeps wants to run in a source package: an empty debian/control is enough.
file(MAKE_DIRECTORY ${CBLOB_SHLIBDEPS_DIR}/debian)
file(WRITE ${CBLOB_SHLIBDEPS_DIR}/debian/control "")
execute_process(COMMAND env LC_ALL=C ${CBLOB_DPKG_SHLIBDEPS} -O ${CBLOB_LIBRARY_FILE}
  WORKING_DIRECTORY ${CBLOB_SHLIBDEPS_DIR}
  RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
if(NOT status EQUAL 0 OR NOT output MATCHES "shlibs:Depends=([^\n]+)")
  message(FATAL_ERROR "dpkg-shlibdeps ${CBLOB_LIBRARY_FILE} failed (${status}): ${errors}")
endif()
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "${CMAKE_MATCH_1}")
