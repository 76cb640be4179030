# SPDX-License-Identifier: BSD-2-Clause
"""The bad-input sweep's cases, derived from the API description.

For every function that returns a status, the sweep makes one valid call (the baseline, which
must succeed, so each bad call below differs from a good one in exactly one argument) and then one
call per bad argument: each non-nullable pointer as NULL, and each value the parameter's `check`
kind says is out of bounds. templates/tests/bad_input_sweep.c.j2 renders them as C, and the test
asserts the documented status, a non-empty message, untouched out-parameters and fixtures whose
shape, data and diff are byte-for-byte unchanged. Where a check kind has other spellings of the
valid value (a negative axis), one more call per spelling must do what the valid call does.

Argument expressions refer to the fixture in the template: fx.ctx, fx.a (float32, 2x3x4x5, data
and diff written), fx.b (the same shape), fx.other_dtype (float64, same shape), fx.other_count
(float32, 7 elements), fx.other_shape (float32, 5x4x3x2), fx.i32 and fx.u32 (integer blobs),
fx.neo and fx.neo_b (float32 NeoML blobs, 2x1x1x2x1x1x3), fx.window (a window of 1 row of fx.a at
position 0), and fixture_buffer(&fx) (a mapping of fx.a that the baseline unmaps).
For the Caffe formats: fx.model (a V2 model with one layer "conv1" holding fx.a and fx.b),
serialized messages (valid_blob_proto = fx.a with its diff, valid_vector_proto = fx.a and fx.b,
valid_net_proto = fx.model; each with a _size), valid_net_text (a net in text format, with its
_size), garbage_bytes, and files.* (paths in a fresh temporary folder: blob, vector and net files
holding those messages, net_text holding the text, a garbage file, a missing file, an output path
and an output path in a missing folder).
For DLPack: sweep_versioned(&fx, fault) and sweep_legacy(&fx, fault) make a float32 3x4 tensor over
external_buffer, valid or with one fault; their deleter counts in release_calls and the fixture
frees them.

Functions marked `gpu` need a working GPU stack: their baseline expects the status this machine
gives (cblob_gpu_probe: CBLOB_OK with a GPU or the test double of the driver, CBLOB_ERR_NO_DRIVER
and friends without), so the same sweep runs on every machine. Their bad cases do not depend on
the machine: arguments are checked before the GPU is looked for.
"""

# Valid values for scalar parameters, by check kind.
VALID_BY_CHECK = {
    "dtype": "CBLOB_DTYPE_FLOAT32",
    "part": "CBLOB_PART_DATA",
    "mode": "CBLOB_MODE_CPU",
    "thread_count": "2",
    "bool": "0",
    "num_axes": "2",
    "dims": "valid_dims",
    "dim": "2",
    "axis": "1",
    "axis_bound": "2",
    "legacy_index": "0",
    "capacity_axes": "CBLOB_MAX_AXES",
    "text_capacity": "sizeof out_buffer",
    "num_indices": "2",
    "indices": "valid_indices",
    "legacy_position": "0",
    "buffer_bytes": "sizeof external_buffer",
    "same_count_blob": "fx.b",
    "same_shape_blob": "fx.b",
    # NeoML operations
    "tensor_rank": "2",
    "neoml_blob": "fx.neo",
    "named_dim": "CBLOB_DIM_CHANNELS",
    "compare_axes_count": "2",
    "compare_axes": "valid_compare_axes",
    "same_count_dims": "reinterpret_dims",
    "window": "fx.window",
    "window_size": "1",
    "window_position": "1",
    "window_shift": "1",
    "matching_dtype": "CBLOB_DTYPE_FLOAT32",
    "element_length": "120",
    "same_shape_any_dtype": "fx.b",
    "blob_count": "1",
    "blob_list": "(cblob_blob *[]){fx.b}",
    "neoml_blob_list": "(cblob_blob *[]){fx.neo_b}",
    "fill_value": "1.5",
    "object_index": "1",
    "element_position": "0",
    "element_count": "120",
    "access": "CBLOB_ACCESS_READ_WRITE",
    "mapped_buffer": "fixture_buffer(&fx)",
    "device_index": "0",
    "device_buffer": "device_buffer(&fx)",
    "compute_capability": "0",
    "text_room": "sizeof out_buffer",
    # Caffe formats
    "blob_proto_bytes": "valid_blob_proto",
    "vector_proto_bytes": "valid_vector_proto",
    "net_proto_bytes": "valid_net_proto",
    "proto_capacity": "sizeof out_buffer",
    "blob_proto_path": "files.blob",
    "vector_proto_path": "files.vector",
    "net_proto_path": "files.net",
    "net_text_bytes": "valid_net_text",
    "net_text_path": "files.net_text",
    "blob_text_bytes": "valid_blob_text",
    "blob_text_path": "files.blob_text",
    "output_path": "files.output",
    "blob_array": "(cblob_blob *const[]){fx.a, fx.b}",
    "proto_blob_count": "2",
    "blob_capacity": "8",
    "net_format": "CBLOB_NET_FORMAT_V2",
    "text": '"conv1"',
    "layer_index": "0",
    "layer_blob_index": "1",
    # Net structure and exports (codegen/api/22_models.yaml); fx.net is a V2 net whose layer 0 has
    # one bottom, top, include rule (one stage, one not_stage) and param spec, and parameters.
    "net_model": "fx.net",
    "layer_capacity": "8",
    "structure_index": "0",
    "rule_kind": "CBLOB_RULE_INCLUDE",
    "attach_list": "CBLOB_ATTACH_UNFILLED",
    "json_flags": "0",
    "export_flags": "0",
    "npz_flags": "0",
    "read_start": "0",
    "read_count": "120",
    "read_bytes": "sizeof external_buffer",
    "safetensors_bytes": "valid_safetensors",
    "npz_bytes": "valid_npz",
    "safetensors_path": "files.safetensors",
    "npz_path": "files.npz",
    # Files of any kind (ABI 1.2)
    "any_file_path": "files.net",
    "open_flags": "0",
    "convert_dtype": "0",
    "file_descriptor": "sweep_fd(files.net)",
    "model_file": "fx.net_file",
    "blobs_file": "fx.blob_file",
    "file_blob_index": "1",
    "output_folder": "files.output_folder",
    "replace_flags": "0",
    "proto_flags": "0",
    # DLPack
    "memory": "CBLOB_MEMORY_HOST",
    "dlpack_versioned": "sweep_versioned(&fx, TENSOR_VALID)",
    "dlpack_legacy": "sweep_legacy(&fx, TENSOR_VALID)",
    # Arenas and communicators: fx.comm is a 1-rank communicator over sweep_engine, a host engine
    # in the template; fx.request is a barrier request on it.
    "arena_blobs": "(cblob_blob *const[]){fx.a, fx.b}",
    "arena_count": "2",
    "arena_alignment": "64",
    "comm_engine": "&sweep_engine",
    "timeout_ms": "1000",
    "bucket_bytes": "1024",
    "comm_blobs": "(cblob_blob *const[]){fx.a, fx.b}",
    "comm_blob_count": "2",
    "reduce_op": "CBLOB_REDUCE_AVERAGE",
    "comm_root": "0",
    "nccl_id_size": "CBLOB_NCCL_UNIQUE_ID_BYTES",
    "nccl_id": "sweep_nccl_id",
    "nccl_ranks": "1",
    "nccl_rank": "0",
}

# Parameters whose valid value follows another's: a size is the size of the bytes it measures.
SIZE_OF_BYTES_CHECKS = {"proto_size"}

# Bad values by check kind: (C expression, expected status, what is wrong). Fixture fx.a has 4
# axes (2, 3, 4, 5).
BAD_BY_CHECK = {
    "dtype": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "dtype 0"), ("99", "CBLOB_ERR_INVALID_ARGUMENT", "dtype 99"),
              ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "dtype -1")],
    "part": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "part 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "part -1")],
    "mode": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "mode 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "mode -1")],
    "thread_count": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "-1 threads"),
                     ("CBLOB_MAX_THREADS + 1", "CBLOB_ERR_OUT_OF_RANGE", "one thread more than CBLOB_MAX_THREADS"),
                     ("INT32_MIN", "CBLOB_ERR_OUT_OF_RANGE", "INT32_MIN threads")],
    "bool": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "boolean 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "boolean -1")],
    "num_axes": [("33", "CBLOB_ERR_SHAPE", "33 axes"), ("-1", "CBLOB_ERR_SHAPE", "-1 axes"),
                 ("INT32_MAX", "CBLOB_ERR_SHAPE", "INT32_MAX axes")],
    "dims": [("negative_dims", "CBLOB_ERR_SHAPE", "a negative dimension"),
             ("overflowing_dims", "CBLOB_ERR_OVERFLOW", "dimensions whose product overflows int64"),
             ("oversized_dims", "CBLOB_ERR_OVERFLOW", "a count whose byte size overflows")],
    "dim": [("-1", "CBLOB_ERR_SHAPE", "dimension -1"), ("INT64_MIN", "CBLOB_ERR_SHAPE", "dimension INT64_MIN"),
            ("INT64_MAX", "CBLOB_ERR_OVERFLOW", "dimension INT64_MAX")],
    "axis": [("4", "CBLOB_ERR_OUT_OF_RANGE", "axis 4 of 4"), ("-5", "CBLOB_ERR_OUT_OF_RANGE", "axis -5 of 4"),
             ("INT32_MAX", "CBLOB_ERR_OUT_OF_RANGE", "axis INT32_MAX"),
             ("INT32_MIN", "CBLOB_ERR_OUT_OF_RANGE", "axis INT32_MIN")],
    "axis_bound": [("-5", "CBLOB_ERR_OUT_OF_RANGE", "axis bound -5 of 4"),
                   ("5", "CBLOB_ERR_OUT_OF_RANGE", "axis bound 5 of 4"),
                   ("INT32_MIN", "CBLOB_ERR_OUT_OF_RANGE", "axis bound INT32_MIN")],
    "legacy_index": [("4", "CBLOB_ERR_OUT_OF_RANGE", "legacy index 4"),
                     ("-5", "CBLOB_ERR_OUT_OF_RANGE", "legacy index -5"),
                     ("INT32_MIN", "CBLOB_ERR_OUT_OF_RANGE", "legacy index INT32_MIN")],
    "capacity_axes": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "room for -1 axes"),
                      ("3", "CBLOB_ERR_OUT_OF_RANGE", "room for 3 of 4 axes")],
    "text_capacity": [("3", "CBLOB_ERR_OUT_OF_RANGE", "a 3-byte text buffer")],
    "num_indices": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "-1 indices"), ("5", "CBLOB_ERR_OUT_OF_RANGE", "5 indices for 4 axes")],
    "indices": [("past_end_indices", "CBLOB_ERR_OUT_OF_RANGE", "an index one past its axis"),
                ("negative_indices", "CBLOB_ERR_OUT_OF_RANGE", "a negative index")],
    "legacy_position": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "position -1"),
                        ("99", "CBLOB_ERR_OUT_OF_RANGE", "position 99")],
    "buffer_bytes": [("1", "CBLOB_ERR_INVALID_ARGUMENT", "a 1-byte buffer")],
    "same_count_blob": [("fx.other_count", "CBLOB_ERR_SHAPE", "a blob with another count"),
                        ("fx.other_dtype", "CBLOB_ERR_DTYPE", "a blob of another dtype")],
    "same_shape_blob": [("fx.other_shape", "CBLOB_ERR_SHAPE", "a blob of another shape"),
                        ("fx.other_dtype", "CBLOB_ERR_DTYPE", "a blob of another dtype")],
    # NeoML operations. fx.neo has 7 axes and 2 objects; fx.window views 1 of fx.a's 2 rows.
    "tensor_rank": [("8", "CBLOB_ERR_SHAPE", "8 dims"), ("-1", "CBLOB_ERR_SHAPE", "-1 dims")],
    "neoml_blob": [("fx.a", "CBLOB_ERR_SHAPE", "a 4-axis blob")],
    "named_dim": [("7", "CBLOB_ERR_INVALID_ARGUMENT", "dim 7"), ("-8", "CBLOB_ERR_INVALID_ARGUMENT", "dim -8"),
                  ("INT32_MIN", "CBLOB_ERR_INVALID_ARGUMENT", "dim INT32_MIN")],
    "compare_axes_count": [("-1", "CBLOB_ERR_INVALID_ARGUMENT", "-1 axes")],
    "compare_axes": [("past_end_axes", "CBLOB_ERR_OUT_OF_RANGE", "axis 4 of 4"),
                     ("before_start_axes", "CBLOB_ERR_OUT_OF_RANGE", "axis -5 of 4")],
    "same_count_dims": [("valid_dims", "CBLOB_ERR_SHAPE", "dimensions of another count"),
                        ("negative_dims", "CBLOB_ERR_SHAPE", "a negative dimension"),
                        ("overflowing_dims", "CBLOB_ERR_OVERFLOW", "dimensions whose product overflows int64")],
    "window": [("fx.a", "CBLOB_ERR_STATE", "a blob that is not a window")],
    "window_size": [("-1", "CBLOB_ERR_SHAPE", "size -1"), ("3", "CBLOB_ERR_OUT_OF_RANGE", "3 rows of 2"),
                    ("INT64_MAX", "CBLOB_ERR_OUT_OF_RANGE", "size INT64_MAX")],
    "window_position": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "position -1"), ("2", "CBLOB_ERR_OUT_OF_RANGE", "position 2"),
                        ("INT64_MIN", "CBLOB_ERR_OUT_OF_RANGE", "position INT64_MIN"),
                        ("INT64_MAX", "CBLOB_ERR_OUT_OF_RANGE", "position INT64_MAX")],
    "window_shift": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "shift -1 from 0"), ("2", "CBLOB_ERR_OUT_OF_RANGE", "shift 2"),
                     ("INT64_MIN", "CBLOB_ERR_OUT_OF_RANGE", "shift INT64_MIN"),
                     ("INT64_MAX", "CBLOB_ERR_OUT_OF_RANGE", "shift INT64_MAX")],
    "matching_dtype": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "dtype 0"), ("99", "CBLOB_ERR_INVALID_ARGUMENT", "dtype 99"),
                       ("CBLOB_DTYPE_FLOAT64", "CBLOB_ERR_DTYPE", "another dtype")],
    "element_length": [("119", "CBLOB_ERR_SHAPE", "119 of 120 elements"), ("121", "CBLOB_ERR_SHAPE", "121 of 120 elements"),
                       ("-1", "CBLOB_ERR_SHAPE", "-1 elements")],
    "same_shape_any_dtype": [("fx.other_shape", "CBLOB_ERR_SHAPE", "a blob of another shape"),
                             ("fx.other_count", "CBLOB_ERR_SHAPE", "a blob of another count")],
    "blob_count": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "no blobs"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "-1 blobs")],
    "blob_list": [("(cblob_blob *[]){NULL}", "CBLOB_ERR_INVALID_ARGUMENT", "a NULL blob in the list"),
                  ("(cblob_blob *[]){fx.other_shape}", "CBLOB_ERR_SHAPE", "a blob of another shape"),
                  ("(cblob_blob *[]){fx.other_dtype}", "CBLOB_ERR_DTYPE", "a blob of another dtype"),
                  ("(cblob_blob *[]){fx.a}", "CBLOB_ERR_INVALID_ARGUMENT", "a blob sharing the written memory")],
    "neoml_blob_list": [("(cblob_blob *[]){NULL}", "CBLOB_ERR_INVALID_ARGUMENT", "a NULL blob in the list"),
                        ("(cblob_blob *[]){fx.a}", "CBLOB_ERR_SHAPE", "a 4-axis blob"),
                        ("(cblob_blob *[]){fx.neo}", "CBLOB_ERR_INVALID_ARGUMENT", "a blob sharing the written memory")],
    "fill_value": [("1e300", "CBLOB_ERR_OVERFLOW", "1e300 for a float32 blob")],
    "object_index": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "object -1"), ("2", "CBLOB_ERR_OUT_OF_RANGE", "object 2 of 2"),
                     ("INT64_MAX", "CBLOB_ERR_OUT_OF_RANGE", "object INT64_MAX")],
    "element_position": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "position -1"),
                         ("1", "CBLOB_ERR_OUT_OF_RANGE", "120 elements from position 1 of 120")],
    "element_count": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "count -1"), ("121", "CBLOB_ERR_OUT_OF_RANGE", "count 121 of 120"),
                      ("INT64_MAX", "CBLOB_ERR_OUT_OF_RANGE", "count INT64_MAX")],
    "access": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "access 0"), ("4", "CBLOB_ERR_INVALID_ARGUMENT", "access 4"),
               ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "access -1")],
    "device_index": [("-1", "CBLOB_ERR_INVALID_ARGUMENT", "device -1"),
                     ("INT32_MIN", "CBLOB_ERR_INVALID_ARGUMENT", "device INT32_MIN")],
    "compute_capability": [("-1", "CBLOB_ERR_INVALID_ARGUMENT", "compute capability -1")],
    # Caffe formats
    "blob_proto_bytes": [("garbage_bytes", "CBLOB_ERR_PARSE", "bytes that are no protobuf message")],
    "vector_proto_bytes": [("garbage_bytes", "CBLOB_ERR_PARSE", "bytes that are no protobuf message")],
    "net_proto_bytes": [("garbage_bytes", "CBLOB_ERR_PARSE", "bytes that are no protobuf message")],
    "proto_size": [("3", "CBLOB_ERR_PARSE", "only the first 3 bytes (truncated)")],
    "proto_capacity": [("3", "CBLOB_ERR_OUT_OF_RANGE", "a 3-byte buffer")],
    "blob_proto_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                        ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage")],
    "vector_proto_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                          ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage")],
    "net_proto_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                       ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage")],
    "net_text_bytes": [("garbage_bytes", "CBLOB_ERR_PARSE", "bytes that are no text-format net")],
    "blob_text_bytes": [("garbage_bytes", "CBLOB_ERR_PARSE", "bytes that are no text-format blob")],
    "blob_text_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                       ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage")],
    "net_text_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                      ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage"),
                      ("files.net", "CBLOB_ERR_PARSE", "a binary .caffemodel")],
    "output_path": [("files.unwritable", "CBLOB_ERR_IO", "a path in a missing folder")],
    "blob_array": [("(cblob_blob *const[]){fx.a, NULL}", "CBLOB_ERR_INVALID_ARGUMENT", "a NULL blob in the array")],
    "proto_blob_count": [("-1", "CBLOB_ERR_INVALID_ARGUMENT", "-1 blobs")],
    "blob_capacity": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "room for -1 blobs"),
                      ("1", "CBLOB_ERR_OUT_OF_RANGE", "room for 1 of 2 blobs")],
    "net_format": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "format 0"), ("3", "CBLOB_ERR_INVALID_ARGUMENT", "format 3")],
    "layer_index": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "layer -1"), ("1", "CBLOB_ERR_OUT_OF_RANGE", "layer 1 of 1")],
    "layer_blob_index": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "blob -1"), ("2", "CBLOB_ERR_OUT_OF_RANGE", "blob 2 of 2")],
    "layer_capacity": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "room for -1 layers")],
    "structure_index": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "index -1"), ("1", "CBLOB_ERR_OUT_OF_RANGE", "index 1 of 1")],
    "rule_kind": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "rule kind 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "rule kind -1")],
    "attach_list": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "list 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "list -1")],
    "json_flags": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "unknown flag 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "flags -1")],
    "export_flags": [("4", "CBLOB_ERR_INVALID_ARGUMENT", "unknown flag 4"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "flags -1")],
    "npz_flags": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "torch names, which npz does not take"),
                  ("4", "CBLOB_ERR_INVALID_ARGUMENT", "unknown flag 4")],
    "read_start": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "start -1"), ("1", "CBLOB_ERR_OUT_OF_RANGE", "120 elements from 1 of 120")],
    "read_count": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "count -1"), ("121", "CBLOB_ERR_OUT_OF_RANGE", "count 121 of 120")],
    "read_bytes": [("3", "CBLOB_ERR_OUT_OF_RANGE", "a 3-byte buffer")],
    "safetensors_bytes": [("garbage_bytes", "CBLOB_ERR_PARSE", "bytes that are no safetensors")],
    "npz_bytes": [("garbage_bytes", "CBLOB_ERR_PARSE", "bytes that are no zip")],
    "safetensors_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                         ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage")],
    "npz_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                 ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage")],
    "any_file_path": [("files.missing", "CBLOB_ERR_IO", "a missing file"),
                      ("files.garbage", "CBLOB_ERR_PARSE", "a file of garbage")],
    "open_flags": [("4", "CBLOB_ERR_INVALID_ARGUMENT", "unknown flag 4"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "flags -1")],
    "convert_dtype": [("99", "CBLOB_ERR_INVALID_ARGUMENT", "dtype 99"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "dtype -1")],
    "file_descriptor": [("-1", "CBLOB_ERR_INVALID_ARGUMENT", "descriptor -1")],
    "model_file": [("fx.blob_file", "CBLOB_ERR_STATE", "a file of blobs")],
    "blobs_file": [("fx.net_file", "CBLOB_ERR_STATE", "a file holding a net")],
    "file_blob_index": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "blob -1"), ("2", "CBLOB_ERR_OUT_OF_RANGE", "blob 2 of 2")],
    "output_folder": [("files.unwritable", "CBLOB_ERR_IO", "a folder in a missing folder"),
                      ("files.blob", "CBLOB_ERR_IO", "a regular file")],
    "replace_flags": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "unknown flag 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "flags -1")],
    "proto_flags": [("4", "CBLOB_ERR_INVALID_ARGUMENT", "unknown flag 4"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "flags -1")],
}

# Values that name what the valid value names in another way: the axis rule (docs/neoml.md, "Axes")
# counts a negative axis or named dimension from the end. Each must succeed and do exactly what
# the valid call does: the same out-parameters, the same fixtures afterwards. Fixture fx.a has 4
# axes and the valid axis is 1; fx.neo has 7 and the valid named dim is CHANNELS (6).
EQUIVALENT_BY_CHECK = {
    "axis": [("-3", "axis -3, axis 1 of 4 counted from the end")],
    "axis_bound": [("-2", "axis bound -2, bound 2 of 4 counted from the end")],
    "named_dim": [("-1", "dim -1, CBLOB_DIM_CHANNELS counted from the end")],
    "compare_axes": [("negative_compare_axes", "axes -4 and -1, axes 0 and 3 of 4 counted from the end")],
}

# DLPack tensors with one thing wrong (sweep_versioned / sweep_legacy in the template), for both
# structs; the versioned one can also have a version and flags cblob refuses.
DLPACK_FAULTS = [
    ("TENSOR_FLOAT16", "CBLOB_ERR_DTYPE", "a float16 tensor"),
    ("TENSOR_BOOL", "CBLOB_ERR_DTYPE", "a bool tensor"),
    ("TENSOR_LANES_4", "CBLOB_ERR_DTYPE", "a float32 tensor of 4 lanes"),
    ("TENSOR_STRIDED", "CBLOB_ERR_SHAPE", "a column-major (strided) tensor"),
    ("TENSOR_NEGATIVE_DIM", "CBLOB_ERR_SHAPE", "a negative dimension"),
    ("TENSOR_TOO_MANY_AXES", "CBLOB_ERR_SHAPE", "33 axes"),
    ("TENSOR_OVERFLOW", "CBLOB_ERR_OVERFLOW", "dimensions whose product overflows int64"),
    ("TENSOR_OPENCL", "CBLOB_ERR_INVALID_ARGUMENT", "an OpenCL tensor"),
    ("TENSOR_NULL_DATA", "CBLOB_ERR_INVALID_ARGUMENT", "data NULL with 12 elements"),
    ("TENSOR_MISALIGNED", "CBLOB_ERR_INVALID_ARGUMENT", "float32 data at an odd byte offset"),
]
BAD_BY_CHECK.update({
    "arena_blobs": [("(cblob_blob *const[]){fx.a, NULL}", "CBLOB_ERR_INVALID_ARGUMENT", "a NULL blob in the list"),
                    ("(cblob_blob *const[]){fx.a, fx.a}", "CBLOB_ERR_INVALID_ARGUMENT", "a blob listed twice"),
                    ("(cblob_blob *const[]){fx.a, fx.other_dtype}", "CBLOB_ERR_DTYPE", "blobs of two dtypes"),
                    ("(cblob_blob *const[]){fx.b, fx.window}", "CBLOB_ERR_STATE", "a window")],
    "arena_count": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "no blobs"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "-1 blobs")],
    "arena_alignment": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "alignment 0"),
                        ("96", "CBLOB_ERR_INVALID_ARGUMENT", "alignment 96, not a power of two"),
                        ("2", "CBLOB_ERR_INVALID_ARGUMENT", "alignment 2, less than a float32"),
                        ("8192", "CBLOB_ERR_INVALID_ARGUMENT", "alignment 8192"),
                        ("-64", "CBLOB_ERR_INVALID_ARGUMENT", "alignment -64")],
    "comm_engine": [("&sweep_engine_old", "CBLOB_ERR_INVALID_ARGUMENT", "a struct_size of 8"),
                    ("&sweep_engine_no_wait", "CBLOB_ERR_INVALID_ARGUMENT", "no wait operation"),
                    ("&sweep_engine_no_ranks", "CBLOB_ERR_INVALID_ARGUMENT", "size 0"),
                    ("&sweep_engine_bad_rank", "CBLOB_ERR_OUT_OF_RANGE", "rank 1 of 1")],
    "timeout_ms": [("-2", "CBLOB_ERR_INVALID_ARGUMENT", "timeout -2"),
                   ("INT64_MIN", "CBLOB_ERR_INVALID_ARGUMENT", "timeout INT64_MIN")],
    "bucket_bytes": [("-1", "CBLOB_ERR_INVALID_ARGUMENT", "-1 bytes")],
    "comm_blobs": [("(cblob_blob *const[]){fx.a, NULL}", "CBLOB_ERR_INVALID_ARGUMENT", "a NULL blob in the list"),
                   ("(cblob_blob *const[]){fx.a, fx.a}", "CBLOB_ERR_INVALID_ARGUMENT", "a blob listed twice"),
                   ("(cblob_blob *const[]){fx.a, fx.window}", "CBLOB_ERR_INVALID_ARGUMENT", "a window of another listed blob"),
                   ("(cblob_blob *const[]){fx.a, fx.i32}", "CBLOB_ERR_DTYPE", "an int32 blob, which sweep_engine does not take")],
    "comm_blob_count": [("-1", "CBLOB_ERR_INVALID_ARGUMENT", "-1 blobs")],
    "reduce_op": [("2", "CBLOB_ERR_INVALID_ARGUMENT", "op 2"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "op -1")],
    "comm_root": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "root -1"), ("1", "CBLOB_ERR_OUT_OF_RANGE", "root 1 of 1")],
    "nccl_id_size": [("CBLOB_NCCL_UNIQUE_ID_BYTES - 1", "CBLOB_ERR_OUT_OF_RANGE", "room for 127 of 128 bytes")],
    "nccl_ranks": [("0", "CBLOB_ERR_INVALID_ARGUMENT", "0 ranks"), ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "-1 ranks")],
    "nccl_rank": [("-1", "CBLOB_ERR_OUT_OF_RANGE", "rank -1"), ("1", "CBLOB_ERR_OUT_OF_RANGE", "rank 1 of 1")],
})
BAD_BY_CHECK["memory"] = [("2", "CBLOB_ERR_INVALID_ARGUMENT", "memory 2"),
                          ("-1", "CBLOB_ERR_INVALID_ARGUMENT", "memory -1")]
BAD_BY_CHECK["dlpack_legacy"] = [(f"sweep_legacy(&fx, {fault})", status, what)
                                 for fault, status, what in DLPACK_FAULTS]
BAD_BY_CHECK["dlpack_versioned"] = [
    (f"sweep_versioned(&fx, {fault})", status, what)
    for fault, status, what in DLPACK_FAULTS + [
        ("TENSOR_MAJOR_2", "CBLOB_ERR_INVALID_ARGUMENT", "DLPack major version 2"),
        ("TENSOR_READ_ONLY", "CBLOB_ERR_INVALID_ARGUMENT", "a read-only tensor")]]

SENTINEL_INT = "0x5A5A5A5A"


class SweepError(Exception):
    pass


def out_declaration(p):
    """(declaration, argument, check that it is untouched) for an out parameter."""
    name = f"out_{p['name']}"
    if p["base"] == "char" and p["depth"] == 1:
        return (f"char {name}[4096]; memset({name}, 'Z', sizeof {name});", name,
                f"buffer_untouched({name}, sizeof {name})")
    if p["base"] == "uint8_t" and p["depth"] == 1:
        return (f"uint8_t {name}[16384]; memset({name}, 'Z', sizeof {name});", name,
                f"buffer_untouched((const char *){name}, sizeof {name})")
    if p["is_handle_array"]:
        return (f"{p['base']} *{name}[8]; memset({name}, 0x5A, sizeof {name});", name,
                f"buffer_untouched((const char *){name}, sizeof {name})")
    pointee = p["type"].rstrip()[:-1].rstrip()  # drop one level of pointer
    if p["depth"] >= 2:
        sentinel = f"({pointee})(uintptr_t){SENTINEL_INT}"
        return (f"{pointee} {name} = {sentinel};", f"&{name}", f"{name} == {sentinel}")
    if p["base"] == "double":
        return (f"double {name} = -12345.5;", f"&{name}", f"{name} == -12345.5")
    if p["base"] == "int64_t" and p.get("length"):
        return (f"int64_t {name}[CBLOB_MAX_AXES + 1]; memset({name}, 0x5A, sizeof {name});", name,
                f"buffer_untouched((const char *){name}, sizeof {name})")
    sentinel = f"({pointee}){SENTINEL_INT}"
    return (f"{pointee} {name} = {sentinel};", f"&{name}", f"{name} == {sentinel}")


def record_outcome(fn, p):
    """A C expression that records an out-parameter's value into `outcome` (equivalent calls)."""
    name = f"out_{p['name']}"
    if p["depth"] == 1 and not p["length"] and p["base"] not in ("char", "uint8_t", "void"):
        return f"record_value(outcome, &{name}, sizeof {name})"
    if p["depth"] == 2 and p["base"] == "cblob_blob" and not p["length"]:
        return f"record_blob(outcome, {name})"
    raise SweepError(f"{fn['name']}({p['name']}): the sweep cannot compare this out-parameter of equivalent calls")


def valid_argument(fn, p, blob_slot):
    if p["dir"] == "out":
        return out_declaration(p)[1]
    if p["check"] in SIZE_OF_BYTES_CHECKS:
        measured = next(q for q in fn["params"] if q["length"] == p["name"])
        return valid_argument(fn, measured, blob_slot) + "_size"
    if p["check"]:  # before the handle defaults: a check kind on a handle names its fixture
        return VALID_BY_CHECK[p["check"]]
    if p["is_handle"] and p["base"] == "cblob_model":
        return "fx.model"
    if p["is_handle"] and p["base"] == "cblob_file":
        return "fx.net_file"
    if p["is_handle"] and p["base"] == "cblob_comm":
        return "fx.comm"
    if p["is_handle"] and p["base"] == "cblob_comm_request":
        return "fx.request"
    if p["is_handle"] and p["base"] == "cblob_context":
        return "fx.ctx"
    if p["is_handle"] and p["base"] == "cblob_blob":
        return "fx.a" if blob_slot == 0 else "fx.b"
    if p["base"] == "cblob_release_fn":
        return "count_release"
    if p["base"] == "cblob_progress_fn":
        return "sweep_progress"
    if p["base"] == "cblob_write_fn":
        return "sweep_write"
    if p["base"] == "void" and p["depth"] == 1:
        return "NULL" if p["nullable"] else "external_buffer"
    if p["base"] in ("double", "float"):
        return "1.5"
    if p["base"] == "cblob_status":
        return "CBLOB_ERR_SHAPE"
    raise SweepError(f"{fn['name']}({p['name']}): the sweep has no valid value for type {p['type']}; "
                     f"give it a check kind")


def build(model):
    """Adds model['sweep']: the baseline and bad cases of every status-returning function."""
    sweep = []
    for fn in model["functions"]:
        if not fn["returns_status"]:
            continue
        blob_slot = 0
        valid = []
        for p in fn["params"]:
            valid.append(valid_argument(fn, p, blob_slot))
            if p["is_handle"] and p["base"] == "cblob_blob" and p["dir"] == "in":
                blob_slot += 1
        outs = [out_declaration(p) for p in fn["params"] if p["dir"] == "out"]

        cases = []

        def add_case(index, expression, status, what):
            if status not in fn["statuses"]:
                raise SweepError(f"{fn['name']}: the sweep expects {status} for {what}, "
                                 f"but the description does not list it")
            arguments = list(valid)
            arguments[index] = expression
            cases.append({"arguments": arguments, "status": status, "what": what})

        for i, p in enumerate(fn["params"]):
            if p["is_pointer"] and not p["nullable"] and p["base"] != "cblob_release_fn":
                add_case(i, "NULL", "CBLOB_ERR_INVALID_ARGUMENT", f"{p['name']} = NULL")
            for expression, status, what in BAD_BY_CHECK.get(p["check"], []):
                add_case(i, expression, status, f"{p['name']}: {what}")
        equivalents = []
        for i, p in enumerate(fn["params"]):
            for expression, what in EQUIVALENT_BY_CHECK.get(p["check"], []):
                arguments = list(valid)
                arguments[i] = expression
                equivalents.append({"arguments": arguments, "what": f"{p['name']}: {what}"})
        if fn["dtype_math"]:
            first_blob = next(i for i, p in enumerate(fn["params"]) if p["is_handle"] and p["base"] == "cblob_blob")
            for blob in ("fx.i32", "fx.u32"):
                add_case(first_blob, blob, "CBLOB_ERR_NOT_IMPLEMENTED", f"an integer blob ({blob})")

        sweep.append({
            "function": fn,
            "valid": valid,
            "outs": outs,
            "cases": cases,
            "equivalents": equivalents,
            "records": [record_outcome(fn, p) for p in fn["params"] if p["dir"] == "out"] if equivalents else [],
            "after_ok": fn.get("sweep_after_ok", ""),
        })
    model["sweep"] = sweep
    model["sweep_void"] = [fn for fn in model["functions"]
                           if fn["returns"] == "void" and len(fn["params"]) == 1 and fn["params"][0]["nullable"]]


# The reason every known failure of the OOM sweep gives: the parts of the library another branch
# was rewriting when the sweep came (src/core, src/neoml, src/comm, cuda/) are fixed after it merges.
KNOWN_OOM_REASON = "fixed by the lead after the core merge"


def build_oom(model, description):
    """Adds entry['oom'] to each sweep entry: the statuses besides CBLOB_ERR_OUT_OF_MEMORY that an
    allocation failure may give (codegen/oom_sweep.yaml, `other_status`, each documented by the
    function) and the known failure that keeps its OOM test skipped (`known`)."""
    by_name = {entry["function"]["name"]: entry for entry in model["sweep"]}
    for entry in model["sweep"]:
        entry["oom"] = {"statuses": [], "known": None}
    for name, case in (description.get("other_status") or {}).items():
        if name not in by_name:
            raise SweepError(f"oom_sweep.yaml other_status: {name} is no function the sweep calls")
        if not case.get("reason"):
            raise SweepError(f"oom_sweep.yaml other_status: {name} needs a reason")
        for status in case["statuses"]:
            if status not in by_name[name]["function"]["statuses"]:
                raise SweepError(f"oom_sweep.yaml other_status: {name} does not document {status}")
        by_name[name]["oom"]["statuses"] = list(case["statuses"])
    for name, case in (description.get("known") or {}).items():
        if name not in by_name:
            raise SweepError(f"oom_sweep.yaml known: {name} is no function the sweep calls")
        if case.get("reason") != KNOWN_OOM_REASON or not case.get("found"):
            raise SweepError(f"oom_sweep.yaml known: {name} needs what was found and the reason \"{KNOWN_OOM_REASON}\"")
        by_name[name]["oom"]["known"] = case
    for entry in model["sweep"]:
        entry["oom"]["out_digests"] = [e for e in (out_digest(p) for p in entry["function"]["params"]
                                                   if p["dir"] == "out") if e]


def out_digest(p):
    """A C expression folding what an out-parameter says into the hash `h` (oom_sweep.c.j2), so a
    call that met a failed allocation and still succeeded can be compared with the valid call; or
    None where the value is an address, which differs between runs."""
    name = f"out_{p['name']}"
    if p["depth"] == 1 and p["base"] != "void":
        return f"h = digest_bytes(h, {'' if p['length'] else '&'}{name}, sizeof {name})"
    if p["depth"] == 2 and not p["length"] and p["base"] == "cblob_blob":
        return f"h = digest_blob(h, {name})"
    if p["depth"] == 2 and not p["length"] and p["base"] == "cblob_model":
        return f"h = digest_model_into(h, {name})"
    if p["depth"] == 2 and p["base"] == "char":
        return f"h = digest_bytes(h, {name}, strlen({name}) + 1)"
    return None
