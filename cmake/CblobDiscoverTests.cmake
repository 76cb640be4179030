# SPDX-License-Identifier: BSD-2-Clause
# Run after a test executable is built: asks it for its test names (--list) and writes the CTest
# file that registers each as <SUITE>.<name>. Names come from the binary, so tests made by macros
# are found too. With TWIN_SUITE and TWIN_LAUNCHER, each is registered a second time as
# <TWIN_SUITE>.<name>, run through the launcher (as another user, say). With DEFERRED_SEEDS (seeds
# separated by spaces) and DEFERRED_LAUNCHER, each is registered again as <SUITE>_deferred.<name>,
# run through the launcher once per seed with the test double of the CUDA driver in deferred mode
# (tests/fake_cuda/fake_cuda.h).
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
  if(ARGN) # a launcher, and what it takes before the command
    list(GET ARGN 0 launcher)
    list(REMOVE_AT ARGN 0)
    set(arguments "")
    foreach(argument IN LISTS ARGN)
      string(APPEND arguments "[=[${argument}]=] ")
    endforeach()
    set(command "[=[${launcher}]=] ${arguments}${command}")
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
  if(DEFINED DEFERRED_SEEDS AND NOT DEFERRED_SEEDS STREQUAL "")
    # Fixed seeds, so that a failure repeats (the launcher names the seed that failed); each seed
    # is another order of the queued work.
    register(${SUITE}_deferred "${ENVIRONMENT}" ${DEFERRED_LAUNCHER} ${DEFERRED_SEEDS})
  endif()
endforeach()
file(WRITE ${OUT} "${text}")
