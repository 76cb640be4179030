# SPDX-License-Identifier: BSD-2-Clause
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

# protobuf-c: the runtime library and protoc-c, which turns proto/caffe_blobs.proto into C at
# build time (its output must match the installed runtime's headers, so it is not committed).
find_path(PROTOBUF_C_INCLUDE_DIR protobuf-c/protobuf-c.h)
find_library(PROTOBUF_C_LIBRARY NAMES protobuf-c)
find_program(PROTOC_C NAMES protoc-c protoc-gen-c)
if(NOT PROTOBUF_C_INCLUDE_DIR OR NOT PROTOBUF_C_LIBRARY OR NOT PROTOC_C)
  message(FATAL_ERROR "protobuf-c not found (header: ${PROTOBUF_C_INCLUDE_DIR}, library: ${PROTOBUF_C_LIBRARY}, "
                      "protoc-c: ${PROTOC_C}): run scripts/setup.sh")
endif()
add_library(cblob_protobuf_c INTERFACE)
target_include_directories(cblob_protobuf_c SYSTEM INTERFACE ${PROTOBUF_C_INCLUDE_DIR})
target_link_libraries(cblob_protobuf_c INTERFACE ${PROTOBUF_C_LIBRARY})
message(STATUS "protobuf-c: ${PROTOBUF_C_LIBRARY} (${PROTOC_C})")

# Jansson (JSON: layer parameters, .npy folders' index) and zlib (npz: CRC-32, deflated members
# of numpy.savez_compressed; src/formats/zip.c is the zip codec), as Debian ships them.
find_path(JANSSON_INCLUDE_DIR jansson.h)
find_library(JANSSON_LIBRARY NAMES jansson)
find_path(ZLIB_INCLUDE_DIR zlib.h)
find_library(ZLIB_LIBRARY NAMES z)
if(NOT JANSSON_INCLUDE_DIR OR NOT JANSSON_LIBRARY OR NOT ZLIB_INCLUDE_DIR OR NOT ZLIB_LIBRARY)
  message(FATAL_ERROR "jansson (${JANSSON_LIBRARY}) or zlib (${ZLIB_LIBRARY}) not found: run scripts/setup.sh")
endif()
add_library(cblob_json_zip INTERFACE)
target_include_directories(cblob_json_zip SYSTEM INTERFACE ${JANSSON_INCLUDE_DIR} ${ZLIB_INCLUDE_DIR})
target_link_libraries(cblob_json_zip INTERFACE ${JANSSON_LIBRARY} ${ZLIB_LIBRARY})
message(STATUS "jansson: ${JANSSON_LIBRARY}, zlib: ${ZLIB_LIBRARY}")
