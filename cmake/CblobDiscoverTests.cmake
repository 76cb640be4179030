# SPDX-License-Identifier: BSD-2-Clause
# Run after a test executable is built: asks it for its test names (--list) and writes the CTest
# file that registers each as <SUITE>.<name>. Names come from the binary, so tests made by macros
# are found too.
execute_process(COMMAND ${EXE} --list OUTPUT_VARIABLE names RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXE} --list failed")
endif()
string(REPLACE "\n" ";" names "${names}")
# Lists arrive joined with "," (labels) and "|" (environment) to survive the command line.
string(REPLACE "," ";" LABELS "${LABELS}")
string(REPLACE "|" ";" ENVIRONMENT "${ENVIRONMENT}")
set(text "")
foreach(name IN LISTS names)
  if(name STREQUAL "")
    continue()
  endif()
  string(APPEND text "add_test([=[${SUITE}.${name}]=] [=[${EXE}]=] [=[${name}]=])\n")
  string(APPEND text "set_tests_properties([=[${SUITE}.${name}]=] PROPERTIES SKIP_RETURN_CODE 77 LABELS [=[${LABELS}]=]")
  if(NOT ENVIRONMENT STREQUAL "")
    string(APPEND text " ENVIRONMENT [=[${ENVIRONMENT}]=]")
  endif()
  string(APPEND text ")\n")
endforeach()
file(WRITE ${OUT} "${text}")
