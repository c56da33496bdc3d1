/*
 * Phynexus: ONNX model import (libphynexus_onnx, since API 0.3).
 *
 * An ONNX model becomes a phx_graph (graph.h): its graph inputs become graph inputs, its
 * initializers constants, its nodes op nodes, its graph outputs graph outputs, all
 * built through the public graph API. Compile the graph with phx_graph_compile as any
 * other. This header's functions live in libphynexus_onnx, a library of their own, so
 * that libphynexus links no protobuf; link both. The conventions of phynexus.h hold here
 * too (status, last error, out parameters, struct_size). docs/onnx.md lists the
 * operators, attributes and dtypes taken.
 *
 * Dtypes. ONNX tensors of float, float16, bfloat16, int8, int16, int32 and uint8 keep
 * their dtype. int64, which ONNX uses for indices and shapes, becomes i32 (a constant
 * whose values do not fit is refused); bool becomes u8 holding 0 or 1. Other dtypes
 * (double, int64 values beyond i32, strings, complex) are refused. So an input that the
 * model declares int64 is an i32 input of the graph: phx_onnx_tensor_read narrows such
 * data the same way.
 *
 * Shapes. A dimension the model names (dim_param, e.g. "batch") or leaves unknown is a
 * dynamic dimension of the graph input (PHX_DIM_DYNAMIC, with the name); options may
 * give it a size. Shape arithmetic (Shape, Gather, Concat, Range, ConstantOfShape ...
 * on values known at import) is computed at import, so a model whose Reshape targets
 * come from Shape imports when the shapes involved are known.
 */
#ifndef PHYNEXUS_ONNX_H
#define PHYNEXUS_ONNX_H

#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(PHX_BUILDING_ONNX_LIBRARY)
#define PHX_ONNX_API __attribute__((visibility("default")))
#else
#define PHX_ONNX_API
#endif

/* A tensor in host memory: what phx_onnx_tensor_read gives (the library then owns name
 * and data, which phx_onnx_tensor_free releases), or what a caller passes in
 * phx_onnx_options.input_values (the caller's).
 * Empty tensors. A shape may hold a dimension of 0 (an empty tensor, such as a
 * reduction's empty axes): size is then 0 and data may be null; phx_onnx_tensor_read gives
 * null for it and allocates nothing. Phynexus has no empty graph tensors: an empty tensor
 * is only ever a value known at import (see phx_onnx_options.input_values). */
typedef struct phx_onnx_tensor {
  size_t struct_size;
  const char* name; /* the TensorProto's name, "" when it has none */
  /* Out: after the narrowing described above (int64 -> i32, bool -> u8). In, to
   * phx_onnx_tensor_read: PHX_DTYPE_INVALID (PHX_ONNX_TENSOR_INIT's), or PHX_DTYPE_BF16
   * where the model declares the tensor bfloat16 (see there). */
  phx_dtype dtype;
  size_t rank;
  int64_t shape[PHX_MAX_RANK];
  void* data; /* dense row-major, size bytes; may be null when size is 0 */
  size_t size;
} phx_onnx_tensor;

#define PHX_ONNX_TENSOR_INIT \
  { sizeof(phx_onnx_tensor), NULL, PHX_DTYPE_INVALID, 0, {0, 0, 0, 0, 0, 0, 0, 0}, NULL, 0 }

/* The sizes of one graph input of a model (phx_onnx_options.input_shapes): for a model
 * whose dynamic dimensions must be known at import (a transformer exported with
 * dynamic_axes takes Shape of its input), taken from the input a caller will run it with.
 * No struct_size: it travels in arrays, and its layout is fixed. Since API 0.3. */
typedef struct phx_onnx_input_shape {
  /* A graph input of the model (not an initializer); null: the model's graph input at
   * this entry's position in input_shapes, initializers left out (for a caller that
   * knows its inputs by position only). */
  const char* name;
  size_t rank;          /* the input's rank */
  const int64_t* shape; /* rank sizes, each >= 1; may be null when rank is 0 */
} phx_onnx_input_shape;

/* Import flags. */
/* Skip the ONNX checker (onnx::checker::check_model), which otherwise runs first and
 * refuses a model that breaks the ONNX specification. */
#define PHX_ONNX_SKIP_CHECKER UINT32_C(0x1)
/* Make every value the model's nodes compute a graph output, in the order of the nodes,
 * each named as the model names it (the model's own outputs among them, where their nodes
 * are; those no node computes come last): for a tool that compares two devices value by
 * value (phx-run-onnx --compare-with). Values known at import (shape arithmetic) and
 * inputs passed through are not outputs. Each output is kept whole, so the compile fuses
 * less and a run uses more memory. Since API 0.3. */
#define PHX_ONNX_OUTPUT_EVERY_VALUE UINT32_C(0x2)

typedef struct phx_onnx_options {
  size_t struct_size;
  uint32_t flags; /* PHX_ONNX_* */
  /* dim_count sizes for the model's named dimensions: dim_names[i] (as the model's
   * dim_param) gets dim_sizes[i] (>= 1) in every input that names it. Both null when
   * dim_count is 0. Names the model lacks are ignored. Copied. */
  const char* const* dim_names;
  const int64_t* dim_sizes;
  size_t dim_count;
  /* input_value_count contents for graph inputs, matched by name (phx_onnx_tensor's name,
   * dtype, shape and data, of the dtype and a shape the input takes): such an input
   * becomes a constant, known at import as an initializer is (for a model that takes a
   * Reshape's shape or a reduction's axes as an input). A value may be empty (empty axes:
   * every axis, or none with noop_with_empty_axes) where the input's shape allows a 0; a
   * node that needs it as a graph tensor is then refused (UNSUPPORTED). Null when
   * input_value_count is 0; names the model lacks are refused. Read during the call only. */
  const phx_onnx_tensor* input_values;
  size_t input_value_count;
  /* input_shape_count shapes of graph inputs, matched by name (since API 0.3): each fixes
   * its input's dynamic dimensions, and a named one (dim_param) fixes that name in every
   * input, as dim_names does. A size that contradicts the model, another shape or
   * dim_sizes and a rank other than the input's are refused (INVALID_ARGUMENT); names
   * the model lacks are ignored, as in dim_names (a caller may hold the shapes of files
   * matched to inputs by position). Null when input_shape_count is 0. Read during the
   * call only. */
  const phx_onnx_input_shape* input_shapes;
  size_t input_shape_count;
} phx_onnx_options;

#define PHX_ONNX_OPTIONS_INIT \
  { sizeof(phx_onnx_options), 0, NULL, NULL, 0, NULL, 0, NULL, 0 }

/* Reads the ONNX model at path (a ModelProto file; weights in external files are not
 * taken) and builds it as a new graph of context. options may be null (the defaults).
 * The caller owns *out_graph (phx_graph_destroy); nothing is left behind on failure.
 * Returns INVALID_ARGUMENT (a null argument, bad struct_size, a file that is no valid
 * ModelProto, a model the checker refuses, a node whose inputs break the operator's
 * rules; the message names the node, its operator and the rule), NOT_FOUND (no file at
 * path), UNSUPPORTED (an opset of the default domain outside 1..17, or one below 7
 * that ONNX's version converter cannot bring to 7 (docs/onnx.md); an operator,
 * attribute value or dtype this importer does not take, named with the node),
 * OUT_OF_MEMORY. Thread-safe. */
PHX_ONNX_API phx_status phx_model_load_onnx(phx_context context, const char* path,
                                            const phx_onnx_options* options, phx_graph* out_graph);

/* As phx_model_load_onnx, from size bytes of a serialized ModelProto at data (read
 * during the call only). */
PHX_ONNX_API phx_status phx_model_load_onnx_memory(phx_context context, const void* data,
                                                   size_t size, const phx_onnx_options* options,
                                                   phx_graph* out_graph);

/* ---- Tensor files ----------------------------------------------------------------------
 * A serialized ONNX TensorProto, as the ONNX backend tests keep their inputs and expected
 * outputs (test_data_set_N/input_0.pb).
 */

/* Reads the TensorProto file at path into *out_tensor (its struct_size set by the
 * caller, its dtype PHX_DTYPE_INVALID or as follows). An empty tensor (a dimension of 0)
 * reads as size 0 and data null. A file's data is checked against its shape before
 * anything is allocated. out_tensor->dtype PHX_DTYPE_BF16, set by a caller whose model
 * declares the tensor bfloat16, also takes a UINT16 tensor as bfloat16 bit patterns: ONNX
 * 1.12's backend test data stores bfloat16 so, numpy having no bfloat16. UINT16 is refused
 * otherwise. On failure *out_tensor is unchanged. Returns INVALID_ARGUMENT (null argument,
 * not a TensorProto, data of the wrong size, int64 values beyond i32), NOT_FOUND,
 * UNSUPPORTED (a dtype listed above as refused, rank > PHX_MAX_RANK), OUT_OF_MEMORY.
 * Thread-safe. */
PHX_ONNX_API phx_status phx_onnx_tensor_read(const char* path, phx_onnx_tensor* out_tensor);

/* Writes a TensorProto file at path: name (may be null), dtype, the shape and size bytes
 * of dense row-major data (data may be null when size is 0: an empty tensor). Returns
 * INVALID_ARGUMENT (null argument, size not the shape's byte size, an unknown dtype, a
 * file that cannot be written: the message gives the OS's reason). Thread-safe. */
PHX_ONNX_API phx_status phx_onnx_tensor_write(const char* path, const char* name, phx_dtype dtype,
                                              size_t rank, const int64_t* shape, const void* data,
                                              size_t size);

/* Releases what phx_onnx_tensor_read allocated and zeroes data, name, size and dtype (so
 * that a tensor read again asks no bfloat16). Null or a zeroed tensor is a no-op. Never
 * fails. */
PHX_ONNX_API void phx_onnx_tensor_free(phx_onnx_tensor* tensor);

#ifdef __cplusplus
}
#endif

#endif /* PHYNEXUS_ONNX_H */
