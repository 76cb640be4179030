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
# The Depends a library needs (extra options before the library: where to find libcblob).
function(cblob_shlibdeps library out)
  execute_process(COMMAND env LC_ALL=C ${CBLOB_DPKG_SHLIBDEPS} -O ${ARGN} ${library}
    WORKING_DIRECTORY ${CBLOB_SHLIBDEPS_DIR}
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT status EQUAL 0 OR NOT output MATCHES "shlibs:Depends=([^\n]+)")
    message(FATAL_ERROR "dpkg-shlibdeps ${library} failed (${status}): ${errors}")
  endif()
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()
cblob_shlibdeps(${CBLOB_LIBRARY_FILE} CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS)
# libcblob_mpi (where built): MPI's packages from dpkg-shlibdeps; libcblob.so.1, which no
# installed package holds, found in the build tree and named by hand.
if(CPACK_CBLOB_MPI_PATHS_FILE)
  include(${CPACK_CBLOB_MPI_PATHS_FILE}) # CBLOB_MPI_LIBRARY_FILE, CBLOB_LIBRARY_DIR
  cblob_shlibdeps(${CBLOB_MPI_LIBRARY_FILE} mpi_depends -l${CBLOB_LIBRARY_DIR} --ignore-missing-info)
  string(REGEX REPLACE "(, )?libcblob[0-9]+[^,]*" "" mpi_depends "${mpi_depends}")
  string(REGEX REPLACE "^, " "" mpi_depends "${mpi_depends}")
  set(CPACK_DEBIAN_MPI_RUNTIME_PACKAGE_DEPENDS "${mpi_depends}, ${CPACK_CBLOB_MPI_DEPENDS_ON}")
endif()
