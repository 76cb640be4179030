# SPDX-License-Identifier: BSD-2-Clause
# Regenerates the sample model and compares it with the committed file.
execute_process(COMMAND ${GENERATOR} ${OUT} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${GENERATOR} failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT} ${COMMITTED} RESULT_VARIABLE different)
if(different)
  message(FATAL_ERROR "${COMMITTED} differs from what tools/make_sample.c writes now: "
                      "run build/release/tools/cblob_make_sample samples/tiny_lenet.caffemodel")
endif()
