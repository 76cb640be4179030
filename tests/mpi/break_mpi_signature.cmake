# SPDX-License-Identifier: BSD-2-Clause
# Writes copies of include/cblob/mpi.h and src/comm/mpi/mpi_comm.c in which
# cblob_mpi_last_error_message returns const void * instead of const char *: it compiles, links
# and runs like the real one, only its signature differs. libcblob_mpi's ABI check must reject the
# library built from them (abi.mpi_changed_signature_is_caught). Each replacement must match
# exactly once, so that a later edit makes this fail loudly instead of copying the real library.
#
# usage: cmake -D SOURCE_DIR=... -D OUT_DIR=... -P break_mpi_signature.cmake
set(old "const char *cblob_mpi_last_error_message(void)")
set(new "const void *cblob_mpi_last_error_message(void)")
foreach(pair "include/cblob/mpi.h=include/cblob/mpi.h" "src/comm/mpi/mpi_comm.c=mpi_comm.c")
  string(REPLACE "=" ";" pair "${pair}")
  list(GET pair 0 source)
  list(GET pair 1 target)
  file(READ ${SOURCE_DIR}/${source} text)
  string(REPLACE "${old}" "${new}" broken "${text}")
  string(REPLACE "${old}" "" without "${text}")
  string(LENGTH "${text}" length)
  string(LENGTH "${without}" length_without)
  string(LENGTH "${old}" length_old)
  math(EXPR matches "(${length} - ${length_without}) / ${length_old}")
  if(NOT matches EQUAL 1)
    message(FATAL_ERROR "break_mpi_signature: '${old}' appears ${matches} times in ${source}, not once")
  endif()
  file(WRITE ${OUT_DIR}/${target} "${broken}")
endforeach()
