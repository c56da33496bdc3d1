/*
 * Phynexus: graphs and executables (since API 0.3).
 *
 * A graph records a model once: its inputs, its constants (weights), its op nodes and
 * its outputs. Compiling it for a device gives an executable, which runs the whole model
 * on a stream as one submission: nodes no output needs are dropped, nodes whose inputs
 * are all constants are computed once at compile time, and the intermediates share one
 * planned block of device memory. The conventions of phynexus.h hold here too (status,
 * last error, out parameters, struct_size, handles). phynexus.h includes this header.
 *
 * Values. Every input, constant and node output of a graph is a value, numbered from 0
 * in the order it was added (phx_value). A node names its inputs by value; a value is
 * defined before it can be used, so a graph has no cycles by construction.
 *
 * Shapes. When a node is added its dtypes and shapes are checked with the rules that
 * phx_op_run applies (docs/ops.md) and its outputs' dtypes and shapes inferred; a bad
 * node is refused at once, with a message naming the node. An input may have dynamic
 * dimensions (PHX_DIM_DYNAMIC): the shapes of the nodes that depend on one are unknown
 * until a run gives the sizes, and are checked then (the message names the node); the
 * dtypes are checked at once all the same.
 */
#ifndef PHYNEXUS_GRAPH_H
#define PHYNEXUS_GRAPH_H

#include "phynexus.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct phx_graph_s* phx_graph;
typedef struct phx_executable_s* phx_executable;

/* A value of a graph: an input, a constant or an output of a node. */
typedef uint32_t phx_value;
/* An optional node input left out (as a null tensor in phx_op_desc). */
#define PHX_VALUE_NONE UINT32_MAX
/* A dimension of a graph input whose size each run gives. */
#define PHX_DIM_DYNAMIC INT64_C(-1)

/* Creates an empty graph in context. The caller owns *out_graph and destroys it with
 * phx_graph_destroy (or the context's destruction does). Executables compiled from it
 * do not need it afterwards. Returns INVALID_ARGUMENT, OUT_OF_MEMORY. Thread-safe. */
PHX_API phx_status phx_graph_create(phx_context context, phx_graph* out_graph);

/* Destroys the graph. Returns INVALID_ARGUMENT. Externally synchronized: graph. */
PHX_API phx_status phx_graph_destroy(phx_graph graph);

typedef struct phx_graph_input_desc {
  size_t struct_size;
  const char* name; /* may be null: "input N"; copied */
  phx_dtype dtype;
  size_t rank;
  /* rank entries (may be null when rank is 0), each >= 1 or PHX_DIM_DYNAMIC. */
  const int64_t* shape;
  /* Null, or rank entries naming the dynamic dimensions ("batch", "sequence"; null for
   * an unnamed one); dynamic dimensions of one name have one size in a run. Copied. */
  const char* const* dim_names;
} phx_graph_input_desc;

#define PHX_GRAPH_INPUT_DESC_INIT \
  { sizeof(phx_graph_input_desc), NULL, PHX_DTYPE_INVALID, 0, NULL, NULL }

/* Adds an input; *out_value receives its value. A run passes one tensor per input, in
 * the order the inputs were added. Returns INVALID_ARGUMENT (bad struct_size, unknown
 * dtype, rank > PHX_MAX_RANK, a dimension < 1 that is not PHX_DIM_DYNAMIC, a byte size
 * above 2^62), OUT_OF_MEMORY. Externally synchronized: graph. */
PHX_API phx_status phx_graph_add_input(phx_graph graph, const phx_graph_input_desc* desc,
                                       phx_value* out_value);

/* Adds a constant whose contents are size bytes of host memory at data (dense,
 * row-major), copied now: data may be reused when this returns. name may be null.
 * Returns INVALID_ARGUMENT (size is not the shape's byte size, null data, the errors
 * of phx_tensor_create's shape), OUT_OF_MEMORY. Externally synchronized: graph. */
PHX_API phx_status phx_graph_add_constant(phx_graph graph, const char* name, phx_dtype dtype,
                                          size_t rank, const int64_t* shape, const void* data,
                                          size_t size, phx_value* out_value);

/* Adds a constant whose contents are those of tensor (of the graph's context) when an
 * executable is compiled: not copied for an executable of the tensor's device, which
 * reads the tensor at each run (the tensor must then outlive the executable: a run
 * after its destruction fails with INVALID_ARGUMENT), copied at compile time for
 * another device. name may be null. Returns INVALID_ARGUMENT (a stale tensor or one of
 * another context), OUT_OF_MEMORY. Externally synchronized: graph. */
PHX_API phx_status phx_graph_add_constant_tensor(phx_graph graph, const char* name,
                                                 phx_tensor tensor, phx_value* out_value);

typedef struct phx_graph_node_desc {
  size_t struct_size;
  const char* name; /* may be null: "<op> N" with N the node's number; copied */
  phx_op_id op;
  /* The op's parameter struct (its struct_size set), or null for the defaults; copied. */
  const void* params;
  /* input_count values, in the op's input order; PHX_VALUE_NONE for an optional input
   * left out. */
  const phx_value* inputs;
  size_t input_count;
  /* Null: each output's dtype is the one the op's rules imply. Otherwise output_count
   * dtypes. The ops whose output dtype is the caller's choice need them: cast,
   * quantize, dynamic_quantize, and qmatmul or qconv2d with y_scale. */
  const phx_dtype* output_dtypes;
  size_t output_count; /* the op's output count (phx_op_info) */
} phx_graph_node_desc;

#define PHX_GRAPH_NODE_DESC_INIT \
  { sizeof(phx_graph_node_desc), NULL, PHX_OP_INVALID, NULL, NULL, 0, NULL, 0 }

/* Adds an op node; out_values receives output_count values, its outputs. The node is
 * checked against the op's rules (see "Shapes" above). Returns INVALID_ARGUMENT (a value
 * the graph does not have, the op's rules broken, an output dtype missing where the
 * caller must choose, with a message naming the node), OUT_OF_MEMORY. Externally
 * synchronized: graph. */
PHX_API phx_status phx_graph_add_node(phx_graph graph, const phx_graph_node_desc* desc,
                                      phx_value* out_values);

/* Marks value as an output of the graph: a run writes it into the output tensor of the
 * same position, in the order the outputs were marked. name may be null. Returns
 * INVALID_ARGUMENT (no such value; an input or constant, which no node computes; a
 * value already marked). Externally synchronized: graph. */
PHX_API phx_status phx_graph_add_output(phx_graph graph, phx_value value, const char* name);

typedef enum phx_value_kind {
  PHX_VALUE_INPUT = 0,
  PHX_VALUE_CONSTANT = 1,
  PHX_VALUE_NODE_OUTPUT = 2
} phx_value_kind;

typedef struct phx_value_info {
  size_t struct_size;
  phx_value_kind kind;
  const char* name; /* owned by the graph; valid until it is destroyed */
  phx_dtype dtype;
  uint32_t rank;
  /* Entries past rank are 1; PHX_DIM_DYNAMIC where the size comes with a run. */
  int64_t shape[PHX_MAX_RANK];
} phx_value_info;

#define PHX_VALUE_INFO_INIT                                                \
  {                                                                        \
    sizeof(phx_value_info), PHX_VALUE_INPUT, NULL, PHX_DTYPE_INVALID, 0, { \
      0, 0, 0, 0, 0, 0, 0, 0                                               \
    }                                                                      \
  }

/* Describes value. Returns INVALID_ARGUMENT, NOT_FOUND (no such value). Externally
 * synchronized: graph. */
PHX_API phx_status phx_graph_value_info(phx_graph graph, phx_value value, phx_value_info* out_info);

/* ---- Compiling ------------------------------------------------------------------------ */

/* Compile flags. */
#define PHX_COMPILE_NO_MEMORY_PLAN UINT32_C(0x1) /* each intermediate its own block */
#define PHX_COMPILE_NO_CONSTANT_FOLDING UINT32_C(0x2)
/* No fusion: each node runs as its own op, and the results are those of the nodes run
 * eagerly with phx_op_run, bit for bit. With fusion a matmul takes the bias add and the
 * activation (relu, gelu, silu) that alone read its result; q k^T [times a scalar
 * constant], softmax, times v becomes one attention node; a layer_norm or rms_norm
 * without gamma takes as gamma the [D] value (D its last dimension) of a product that
 * alone reads its result, and a layer_norm without beta as beta the [D] value of a sum
 * that alone reads it; each where the device runs the fused op (docs/graphs.md). The
 * fused kernel rounds once where the separate ops round after each, so results agree
 * within the ops' tolerances (docs/ops.md), not bit for bit. A device that compiles its
 * part (phx_device_info.compiles_graphs) may fuse more there, each device as
 * docs/graphs.md says (the CPU device: chains of elementwise ops, with the same bits). */
#define PHX_COMPILE_NO_FUSION UINT32_C(0x4)
/* Deterministic: compiling the same graph with the same options places and fuses it the
 * same way every time (the PHX_PLACEMENT_COST policy then prices copies with a fixed
 * model instead of timing them), and every run gives the same bits for the same inputs
 * (a device that compiles its part picks no kernel by timing it). The ops themselves
 * give the same bits whatever the thread count, with or without it (docs/ops.md). */
#define PHX_COMPILE_DETERMINISTIC UINT32_C(0x8)

/* How the nodes go to the devices of phx_compile_options. */
typedef enum phx_placement_policy {
  /* Each node on the first of the devices (the executable's, then other_devices in
   * order) that runs it, as ggml's scheduler and ONNX Runtime's partitioner place. */
  PHX_PLACEMENT_FIRST = 0,
  /* Each node, in order, on the device whose predicted time for it plus the time of
   * copying its inputs there (from the devices earlier nodes went to) is least: each
   * device's timing model (the simulators' cycle models; the CPU and Vulkan devices'
   * throughputs, measured once) and a copy cost measured between the devices at
   * compile time. docs/graphs.md, "Placement". */
  PHX_PLACEMENT_COST = 1
} phx_placement_policy;

typedef struct phx_compile_options {
  size_t struct_size;
  /* The executable's device: its runs are on a stream of it, its inputs and outputs live
   * on it, and its nodes run on it where it runs them. */
  size_t device;
  uint32_t flags; /* PHX_COMPILE_* */
  /* Devices for the nodes device does not run: each such node goes to the first of these
   * that runs it, as ggml's scheduler and ONNX Runtime's partitioner place. Values cross
   * between devices by copies the executable makes (phx_executable_info.copies_per_run).
   * May be null when other_device_count is 0. Read during the call only. */
  const size_t* other_devices;
  size_t other_device_count;
  phx_placement_policy placement;
  /* Calibration (e.g. for npu-sim, which then runs float nodes quantized: docs/npu-sim.md):
   * calibration_sample_count sets of the graph's inputs, set after set, each set a tensor
   * per graph input in order (calibration_sample_count * input count tensors), of the
   * input's dtype and of any shape it accepts, on any device of the context. The compile
   * runs the graph in float on them (on the first CPU device: its nodes one by one) and
   * gives each device that compiles its part the range of every value it sees; afterwards
   * it runs the executable on them and reports how far its outputs are from float
   * (phx_executable_info.calibration_error). Read during the call only; may be null when
   * calibration_sample_count is 0. */
  const phx_tensor* calibration_inputs;
  size_t calibration_sample_count;
} phx_compile_options;

#define PHX_COMPILE_OPTIONS_INIT \
  { sizeof(phx_compile_options), 0, 0, NULL, 0, PHX_PLACEMENT_FIRST, NULL, 0 }

/* Compiles graph for a device of context: drops the nodes no output needs, fuses what
 * PHX_COMPILE_NO_FUSION describes (unless that flag is set), places each node (on the
 * device, else on the first of options->other_devices that runs it), computes the nodes
 * whose inputs are all constants (unless PHX_COMPILE_NO_CONSTANT_FOLDING), plans the
 * intermediates' memory (lifetimes, a block per device with reused ranges, unless
 * PHX_COMPILE_NO_MEMORY_PLAN) and allocates it with the constants on the devices. The
 * graph is not changed and may be compiled again. options may be null: device 0. The
 * caller owns *out_executable and destroys it with phx_executable_destroy (or the
 * context's destruction does).
 * Returns INVALID_ARGUMENT (a graph of another context, no outputs, bad options, a
 * destroyed constant tensor), NOT_FOUND (no such device), UNSUPPORTED (no device of the
 * options runs a node: the message names it), OUT_OF_MEMORY, DEVICE_UNAVAILABLE,
 * PLUGIN_ERROR. Externally synchronized: graph. */
PHX_API phx_status phx_graph_compile(phx_context context, phx_graph graph,
                                     const phx_compile_options* options,
                                     phx_executable* out_executable);

/* Waits for the executable's runs, then destroys it. Returns INVALID_ARGUMENT.
 * Externally synchronized: executable. */
PHX_API phx_status phx_executable_destroy(phx_executable executable);

/* Runs the executable on stream, which must be on its device: inputs has a tensor per
 * graph input and outputs one per graph output, in order, of their dtypes and shapes
 * (dynamic dimensions any size the nodes' rules accept; new sizes plan the memory
 * again). Ordered on the stream like an op: *out_ticket, when out_ticket is not null,
 * receives the ticket of its last node, after which the outputs are written. The
 * tensors must stay alive until it has finished. Runs of one executable on different
 * streams do not overlap: a run waits for the previous one to finish first. A run whose
 * nodes span devices waits, at each copy between devices, for the work the copy depends
 * on (the host makes the copies); the steps after the last copy are queued.
 * Returns INVALID_ARGUMENT (wrong counts, dtypes or shapes, tensors of another device
 * or context, a node whose shapes a dynamic size breaks: named), OUT_OF_MEMORY,
 * DEVICE_UNAVAILABLE, PLUGIN_ERROR. Externally synchronized: stream and executable. */
PHX_API phx_status phx_executable_run(phx_stream stream, phx_executable executable,
                                      const phx_tensor* inputs, size_t input_count,
                                      const phx_tensor* outputs, size_t output_count,
                                      uint64_t* out_ticket);

/* Describes output index of a run with these inputs (as phx_executable_run takes them):
 * its dtype, its shape, which dynamic sizes of the inputs decide, and its byte size;
 * device is the executable's. For a program that makes the output tensors of a graph with
 * dynamic dimensions. New sizes plan the memory again, as a run would (the plan is kept
 * for the next run). Nothing is submitted and no tensor is written.
 * Returns INVALID_ARGUMENT (as phx_executable_run for the inputs), NOT_FOUND (index past
 * the outputs), OUT_OF_MEMORY. Externally synchronized: executable. */
PHX_API phx_status phx_executable_output_desc(phx_executable executable, const phx_tensor* inputs,
                                              size_t input_count, size_t index,
                                              phx_tensor_desc* out_desc);

/* Describes input index of the executable as the graph it was compiled from had it
 * (kind PHX_VALUE_INPUT; its name; its dtype; its shape, PHX_DIM_DYNAMIC where a run gives
 * the size): what a program needs to feed an executable it loaded. The name is owned by
 * the executable and valid until it is destroyed. Returns INVALID_ARGUMENT, NOT_FOUND
 * (index past the inputs). Externally synchronized: executable. */
PHX_API phx_status phx_executable_input_info(phx_executable executable, size_t index,
                                             phx_value_info* out_info);

/* Describes output index of the executable: kind PHX_VALUE_NODE_OUTPUT, the name
 * phx_graph_add_output gave it (the value's own where that was null), its dtype, and its
 * rank and shape for the input sizes the executable last planned for: those of the graph
 * when no input is dynamic, else those of its last run or phx_executable_output_desc
 * (rank 0 before the first). The name is owned by the executable and valid until it is
 * destroyed. Returns INVALID_ARGUMENT, NOT_FOUND (index past the outputs). Externally
 * synchronized: executable. Since API 0.3. */
PHX_API phx_status phx_executable_output_info(phx_executable executable, size_t index,
                                              phx_value_info* out_info);

typedef struct phx_executable_info {
  size_t struct_size;
  size_t device;
  size_t input_count;
  size_t output_count;
  size_t graph_node_count; /* nodes of the graph it was compiled from */
  size_t node_count;       /* nodes it runs: ops submitted per run (copies aside) */
  size_t removed_nodes;    /* no output needed them */
  size_t fused_nodes;      /* absorbed into another node (PHX_COMPILE_NO_FUSION) */
  size_t folded_nodes;     /* computed at compile time */
  size_t device_count;     /* devices its nodes run on: 1 unless other_devices served */
  size_t copies_per_run;   /* values copied between devices in a run */
  uint64_t constant_bytes; /* constants and folded values it holds on the device */
  /* The intermediates' block, as planned for the last sizes of the dynamic dimensions,
   * and the least any plan could use: the most bytes of intermediates alive at once. */
  uint64_t planned_bytes;
  uint64_t lower_bound_bytes;
  uint64_t compile_time_ns;
  uint64_t run_count;
  /* Parts of it that their device compiled as a whole (phx_device_info.compiles_graphs),
   * each run as one submission, and the nodes in them; the other nodes run one by one. */
  size_t native_parts;
  size_t native_nodes;
  /* Nodes a device runs in integer arithmetic although the graph has them in float
   * (phx_executable_node_info.compute_dtype). */
  size_t quantized_nodes;
  /* With calibration samples (phx_compile_options): over the samples and the graph's
   * float outputs, the largest |executable - float| of an element, divided by the
   * largest |float| of that output (0 when that is 0); 0 without samples. */
  double calibration_error;
} phx_executable_info;

#define PHX_EXECUTABLE_INFO_INIT \
  { sizeof(phx_executable_info), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0 }

/* Describes the executable. Returns INVALID_ARGUMENT. Externally synchronized:
 * executable. */
PHX_API phx_status phx_executable_describe(phx_executable executable,
                                           phx_executable_info* out_info);

/* The figures the devices give of their native parts (phx_executable_info.native_parts),
 * part after part, e.g. "kernels_per_run", "modelled_time_ns", "compile_cache_hit" (each
 * device's are listed in docs/graphs.md): writes up to capacity of them to out_metrics
 * (may be null when capacity is 0; the names are static strings) and sets *out_count to
 * how many there are, which may exceed capacity. Returns INVALID_ARGUMENT, PLUGIN_ERROR.
 * Externally synchronized: executable. */
PHX_API phx_status phx_executable_stats(phx_executable executable, phx_metric* out_metrics,
                                        size_t capacity, size_t* out_count);

/* One node of those an executable runs (phx_executable_info.node_count, in the order it
 * runs them; copies between devices are not nodes). */
typedef struct phx_executable_node_info {
  size_t struct_size;
  /* The graph node's name; a node that took others in (fusion) has their names joined by
   * " + " ("xw + bias + relu"). Owned by the executable; valid until it is destroyed. */
  const char* name;
  phx_op_id op;  /* after fusion: a matmul with its epilogue, an attention node */
  size_t device; /* the context's index of the device that runs it */
  /* The dtype its arithmetic is done in: the dtype of its first input, or PHX_DTYPE_I8 or
   * PHX_DTYPE_I16 where the device quantized a float node (npu-sim, with calibration). */
  phx_dtype compute_dtype;
  /* PHX_PLACEMENT_COST's prediction of its time on that device, in ns; 0 when the node
   * was placed by another policy. */
  uint64_t predicted_time_ns;
} phx_executable_node_info;

#define PHX_EXECUTABLE_NODE_INFO_INIT \
  { sizeof(phx_executable_node_info), NULL, PHX_OP_INVALID, 0, PHX_DTYPE_INVALID, 0 }

/* Describes node index of the executable. Returns INVALID_ARGUMENT, NOT_FOUND (index
 * at or past node_count), PLUGIN_ERROR. Externally synchronized: executable. */
PHX_API phx_status phx_executable_describe_node(phx_executable executable, size_t index,
                                                phx_executable_node_info* out_info);

/* ---- Saving and loading ------------------------------------------------------------- */

/* Writes the executable, compiled, into buffer: its nodes and placement, the contents of
 * its constants (a program's tensor it reads in place included: the loaded executable
 * owns a copy) and, for each part a device compiled as a whole for the sizes of the last
 * run, what that device keeps of its compile (Vulkan: its pipelines' cache; tpu-sim: the
 * compiled model), so that loading it compiles nothing again; a device that keeps
 * nothing (the CPU device) compiles its part again at load. Sets *out_size to the bytes it takes;
 * writes them when capacity is at least that (buffer may be null when capacity is 0). The data is
 * keyed by the Phynexus version and, per device, by the plugin's name and version and
 * the device's name and vendor. Waits for the executable's runs.
 * Returns INVALID_ARGUMENT (capacity above 0 and less than *out_size: nothing written;
 * null out_size; a constant tensor read in place that was destroyed), OUT_OF_MEMORY,
 * DEVICE_UNAVAILABLE, PLUGIN_ERROR. Externally synchronized: executable. */
PHX_API phx_status phx_executable_save(phx_executable executable, void* buffer, size_t capacity,
                                       size_t* out_size);

/* Makes an executable from what phx_executable_save wrote (size bytes at data, read
 * during the call only). options may be null: each device it was saved for is then the
 * first device of the context of the same identity (plugin name and version, device
 * name and vendor) not taken by another; else options->device takes the first, and
 * options->other_devices the others in order (options->flags and the rest are those
 * saved). The caller owns *out_executable, as phx_graph_compile's.
 * Returns INVALID_ARGUMENT (null pointers, data that is not a saved executable or is
 * truncated or damaged), INCOMPATIBLE (saved by another Phynexus version, or for a
 * device the context lacks or that is of another plugin, plugin version, name or
 * vendor, or that its plugin finds of another driver: the message says which), NOT_FOUND
 * (a device index of options the context lacks), OUT_OF_MEMORY, DEVICE_UNAVAILABLE,
 * PLUGIN_ERROR. Thread-safe. */
PHX_API phx_status phx_executable_load(phx_context context, const void* data, size_t size,
                                       const phx_compile_options* options,
                                       phx_executable* out_executable);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PHYNEXUS_GRAPH_H */
