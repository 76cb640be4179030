# SPDX-License-Identifier: BSD-2-Clause
# Run after a test executable is built: asks it for its test names (--list) and writes the CTest
# file that registers each as <SUITE>.<name>. Names come from the binary, so tests made by macros
# are found too. With TWIN_SUITE and TWIN_LAUNCHER, each is registered a second time as
# <TWIN_SUITE>.<name>, run through the launcher (as another user, say). With DEFERRED set, each is
# registered again as <SUITE>_deferred.<name>, run with the test double of the CUDA driver in
# deferred mode (tests/fake_cuda/fake_cuda.h).
execute_process(COMMAND ${EXE} --list OUTPUT_VARIABLE names RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${EXE} --list failed")
endif()
string(REPLACE "\n" ";" names "${names}")
# Lists arrive joined with "," (labels) and "|" (environment) to survive the command line.
string(REPLACE "," ";" LABELS "${LABELS}")
string(REPLACE "|" ";" ENVIRONMENT "${ENVIRONMENT}")
set(text "")
function(register suite environment)
  set(command "[=[${EXE}]=] [=[${name}]=]")
  if(ARGN) # a launcher
    set(command "[=[${ARGN}]=] ${command}")
  endif()
  set(line "add_test([=[${suite}.${name}]=] ${command})\n")
  string(APPEND line "set_tests_properties([=[${suite}.${name}]=] PROPERTIES SKIP_RETURN_CODE 77 LABELS [=[${LABELS}]=]")
  if(NOT environment STREQUAL "")
    string(APPEND line " ENVIRONMENT [=[${environment}]=]")
  endif()
  string(APPEND line ")\n")
  set(text "${text}${line}" PARENT_SCOPE)
endfunction()

foreach(name IN LISTS names)
  if(name STREQUAL "")
    continue()
  endif()
  register(${SUITE} "${ENVIRONMENT}")
  if(DEFINED TWIN_SUITE)
    register(${TWIN_SUITE} "${ENVIRONMENT}" ${TWIN_LAUNCHER})
  endif()
  if(DEFERRED)
    # A fixed seed, so that a failure repeats; another seed explores other orders.
    register(${SUITE}_deferred "${ENVIRONMENT};CBLOB_FAKE_CUDA_DEFERRED=1")
  endif()
endforeach()
file(WRITE ${OUT} "${text}")
