# Third-party libraries, found where Debian 12 installs them (scripts/setup.sh installs them).
find_package(Threads REQUIRED)

# BLIS: Debian installs no pkg-config file and ships several threading variants behind
# alternatives. Prefer the pthread variant's own folders so that <blis.h> never resolves to
# another BLAS, and link its libblis.so (SONAME libblis.so.4).
find_path(BLIS_INCLUDE_DIR blis.h
  PATHS /usr/include/x86_64-linux-gnu/blis-pthread /usr/include/x86_64-linux-gnu/blis-openmp
        /usr/include/x86_64-linux-gnu/blis-serial /usr/include/x86_64-linux-gnu /usr/include/blis
  NO_DEFAULT_PATH)
find_library(BLIS_LIBRARY NAMES blis
  PATHS /usr/lib/x86_64-linux-gnu/blis-pthread /usr/lib/x86_64-linux-gnu/blis-openmp
        /usr/lib/x86_64-linux-gnu/blis-serial /usr/lib/x86_64-linux-gnu
  NO_DEFAULT_PATH)
if(NOT BLIS_INCLUDE_DIR OR NOT BLIS_LIBRARY)
  message(FATAL_ERROR "BLIS not found (blis.h: ${BLIS_INCLUDE_DIR}, libblis: ${BLIS_LIBRARY}): run scripts/setup.sh")
endif()
add_library(cblob_blis INTERFACE)
target_include_directories(cblob_blis SYSTEM INTERFACE ${BLIS_INCLUDE_DIR})
target_link_libraries(cblob_blis INTERFACE ${BLIS_LIBRARY})
message(STATUS "BLIS: ${BLIS_LIBRARY} (${BLIS_INCLUDE_DIR})")
