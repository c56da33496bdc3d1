/*
 * Phynexus plugin SDK: for those who write a device backend. Consumers use phynexus.h.
 *
 * A plugin is a shared library that exports exactly one symbol, phx_plugin_entry
 * (PHX_PLUGIN_ENTRY_NAME). The loader finds it (docs/loader.md), calls the entry with
 * the host's services, and gets back the plugin's function table, phx_plugin_api.
 * docs/plugin-guide.md walks through writing one; examples/plugin/ is a complete one
 * built out of tree against the installed SDK.
 *
 * Versioning, both ways. The host tells the plugin the highest ABI it speaks
 * (phx_plugin_host.abi_major/abi_minor); the plugin answers with the ABI it implements
 * (phx_plugin_api.abi_major/abi_minor). The host accepts the same major with any minor
 * at or above PHX_PLUGIN_ABI_MIN_MINOR; anything else is rejected with a message naming
 * both versions, and the plugin is never called again (not even shutdown). A plugin of
 * a newer minor than the host's sees the host's minor in phx_plugin_host and uses only
 * what that minor offers, or refuses by returning an error from its entry; the host
 * ignores the entries of its table past those the host knows.
 * A new minor only appends: entries at the end of phx_plugin_api, fields at the end of a
 * struct, enum values. See CHANGELOG-plugin.md beside this header.
 *
 * Sizes. Every struct that crosses the boundary begins with struct_size. A receiver
 * reads only the fields that fit in struct_size and takes defaults for the rest (an
 * older sender); it ignores bytes past what it knows (a newer sender). A plugin sets
 * struct_size of what it fills to sizeof as it was compiled.
 *
 * Calls. The host calls the plugin only with arguments it has checked: handles the
 * plugin gave out and has not seen freed, device indices below the device count, ops
 * whose shapes and dtypes follow the op's rules (docs/ops.md), byte ranges inside the
 * buffer. Entries marked (optional) may be null; the host then answers UNSUPPORTED or
 * does the work another way, and never calls null. Entries must not let a C++
 * exception escape (the host catches it, counts it as PLUGIN_ERROR and logs it). On
 * failure an entry returns a status other than OK and may describe it with
 * phx_plugin_host.set_error.
 *
 * Linking. A plugin links nothing of Phynexus: it uses this header's types and the
 * host's services, and never calls the functions of phynexus.h (libphynexus may not
 * be what loaded it, and its symbols are not the plugin's to rely on).
 *
 * Threads. The host may call any entry from any thread. Entries on different objects
 * may run at once; the host serializes calls on one stream and never frees a buffer
 * while an entry uses it. The plugin's own threads must be joined in shutdown.
 */
#ifndef PHYNEXUS_PLUGIN_H
#define PHYNEXUS_PLUGIN_H

#include <phynexus/phynexus.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- ABI version ------------------------------------------------------------------ */

#define PHX_PLUGIN_ABI_MAJOR 1
#define PHX_PLUGIN_ABI_MINOR 3
/* The oldest minor of this major the host still loads. */
#define PHX_PLUGIN_ABI_MIN_MINOR 0

#define PHX_PLUGIN_ENTRY_NAME "phx_plugin_entry"

#if defined(__GNUC__)
#define PHX_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define PHX_PLUGIN_EXPORT
#endif

/* ---- Host services: what the host offers the plugin -------------------------------- */

typedef struct phx_plugin_host {
  size_t struct_size;
  uint32_t abi_major; /* the highest ABI the host speaks */
  uint32_t abi_minor;
  void* host_data; /* pass back as the first argument of the functions below */
  /* Logs a message under the plugin's name; the host filters by level. Thread-safe. */
  void (*log)(void* host_data, phx_log_level level, const char* message);
  /* Describes the failure the current entry is about to return; the message is copied.
   * Call it only inside an entry, on the thread that runs it. Thread-safe. */
  void (*set_error)(void* host_data, const char* message);
  /* Host threads the context asks plugins to use for compute (phx_context_options
   * num_threads after PHX_NUM_THREADS); 0 means one per hardware thread. */
  uint32_t num_threads;
} phx_plugin_host;

/* ---- Out-structs --------------------------------------------------------------------- */

/* Copies value, an out-struct of value_size bytes that the plugin filled, into out, the
 * struct the host handed an entry (device_info, memory_stats): no more than out's
 * struct_size holds, so that an older host's smaller struct is never written past, and
 * then sets out's struct_size to the bytes filled, so that a newer host knows which of
 * its fields the plugin left alone. Thread-safe. */
static inline void phx_plugin_write_struct(void* out, const void* value, size_t value_size) {
  size_t out_size;
  memcpy(&out_size, out, sizeof out_size);
  size_t filled = out_size < value_size ? out_size : value_size;
  memcpy(out, value, filled);
  memcpy(out, &filled, sizeof filled);
}

/* ---- Sizes ------------------------------------------------------------------------------
 * What phx_dtype_size and an element count give a consumer, for plugins, which link
 * nothing of libphynexus. Since ABI 1.1. */

/* Bytes per element of dtype; 0 for a value that is no dtype. Thread-safe. */
static inline size_t phx_plugin_dtype_size(phx_dtype dtype) {
  switch ((int)dtype) {
    case PHX_DTYPE_F32:
    case PHX_DTYPE_I32:
      return 4;
    case PHX_DTYPE_F16:
    case PHX_DTYPE_BF16:
    case PHX_DTYPE_I16:
      return 2;
    case PHX_DTYPE_I8:
    case PHX_DTYPE_U8:
      return 1;
    default:
      return 0;
  }
}

/* The product of the first rank entries of shape (1 for rank 0). Thread-safe. */
static inline uint64_t phx_plugin_element_count(uint32_t rank, const int64_t* shape) {
  uint64_t count = 1;
  for (uint32_t i = 0; i < rank; ++i) count *= (uint64_t)shape[i];
  return count;
}

/* ---- Devices -------------------------------------------------------------------------- */

typedef struct phx_plugin_device_info {
  size_t struct_size;
  phx_device_type type;
  const char* name;   /* owned by the plugin; valid until shutdown */
  const char* vendor; /* owned by the plugin; valid until shutdown */
  uint64_t memory_total_bytes;
  uint64_t memory_available_bytes;
  uint32_t compute_units;
  uint32_t dtype_mask; /* PHX_DTYPE_BIT of each dtype a buffer may hold */
  /* Extra properties for inspection (phx-devices); owned by the plugin, valid until
   * shutdown; may be null when property_count is 0. */
  const phx_property* properties;
  size_t property_count;
} phx_plugin_device_info;

/* ---- Ops -------------------------------------------------------------------------------- */

/* A tensor as the plugin sees it: dense, row-major, inside one of its buffers. */
typedef struct phx_plugin_tensor {
  size_t struct_size;
  void* buffer;    /* a buffer the plugin allocated */
  uint64_t offset; /* byte offset of the first element in the buffer */
  phx_dtype dtype;
  uint32_t rank;
  int64_t shape[PHX_MAX_RANK]; /* entries past rank are 1 */
} phx_plugin_tensor;

/* Where a plugin leaves its own figures for an op's profile record. The plugin appends
 * up to PHX_PLUGIN_MAX_METRICS metrics; names must be string literals (static storage).
 * Valid until the op has finished: an asynchronous plugin may fill it until then. */
#define PHX_PLUGIN_MAX_METRICS 16
typedef struct phx_plugin_profile {
  size_t struct_size;
  phx_metric metrics[PHX_PLUGIN_MAX_METRICS];
  size_t metric_count;
} phx_plugin_profile;

/* Ops since ABI 1.1: attention, rope, the quantized ops (phynexus.h, API 0.2) and their
 * parameter structs; an op may then have up to PHX_MAX_OP_INPUTS inputs and
 * PHX_MAX_OP_OUTPUTS outputs. The host never submits them to, nor asks op_supported about
 * them of, a plugin that declared ABI 1.0. */
typedef struct phx_plugin_op {
  size_t struct_size;
  phx_op_id op;
  /* The op's parameter struct in this header's layout, defaults filled in by the host;
   * null for ops without parameters. */
  const void* params;
  /* Inputs in the op's order; an absent optional input has buffer == null. */
  const phx_plugin_tensor* inputs;
  size_t input_count;
  const phx_plugin_tensor* outputs;
  size_t output_count;
  /* Null unless profiling is on. */
  phx_plugin_profile* profile;
} phx_plugin_op;

/* An op without its tensors: what op_variant_supported is asked about. Since ABI 1.2. */
typedef struct phx_plugin_op_variant {
  size_t struct_size;
  phx_op_id op;
  /* As in phx_plugin_op: this header's layout, defaults filled in; null for ops without
   * parameters. */
  const void* params;
  /* The dtypes of the inputs, in the op's order; PHX_DTYPE_INVALID for an absent
   * optional input. */
  const phx_dtype* input_dtypes;
  size_t input_count;
  const phx_dtype* output_dtypes;
  size_t output_count;
} phx_plugin_op_variant;

/* ---- Executables (since ABI 1.3) --------------------------------------------------------
 * A plugin may compile the part of a consumer's graph (graph.h) that runs on one of its
 * devices, as PJRT's and IREE's devices compile a model: it then sees every node at
 * once, may fuse nodes, make its pipelines and record its work once, and runs the whole
 * part as one ticket of a stream. The host does what is common to every device first:
 * it checks every node with the op rules, drops dead nodes, fuses what graph.h
 * describes, places nodes on devices, folds constants and plans the memory of the
 * intermediates. A plugin without these entries runs the same nodes one by one through
 * stream_submit.
 *
 * The graph the plugin sees has fixed shapes: a consumer graph with dynamic dimensions
 * is compiled again for each new set of sizes. Its values are numbered from 0; every
 * value is an input, an output, a constant or an intermediate of the part. */

typedef enum phx_plugin_value_kind {
  PHX_PLUGIN_VALUE_INPUT = 1,       /* written before the run (by the program, another device) */
  PHX_PLUGIN_VALUE_OUTPUT = 2,      /* read after the run: every output must be written */
  PHX_PLUGIN_VALUE_CONSTANT = 3,    /* bound at compile time already (phx_plugin_value.tensor) */
  PHX_PLUGIN_VALUE_INTERMEDIATE = 4 /* read by no one after the run: a node the plugin fuses
                                       away need not write it */
} phx_plugin_value_kind;

/* phx_plugin_value.flags: the constant's contents are the same at every run, so that what
 * the plugin derives from them at compile time (a re-laid-out or quantized weight) stays
 * true. Without it the contents may change between runs (a program's tensor that the
 * executable reads in place, graph.h's phx_graph_add_constant_tensor). */
#define PHX_PLUGIN_VALUE_CONTENTS_FIXED UINT32_C(0x1)

/* Fixed in size, as phx_plugin_tensor: it travels in an array (phx_plugin_graph.values),
 * whose stride its size is. So is phx_plugin_node. */
typedef struct phx_plugin_value {
  size_t struct_size;
  phx_plugin_value_kind kind;
  uint32_t flags; /* PHX_PLUGIN_VALUE_* */
  phx_dtype dtype;
  uint32_t rank;
  int64_t shape[PHX_MAX_RANK]; /* entries past rank are 1 */
  /* A constant's tensor, of this value's dtype and shape, in a buffer of the device,
   * which the plugin may read during graph_compile (a blocking read of its own buffer)
   * and which every run binds again, unchanged. buffer is null for the other kinds. */
  phx_plugin_tensor tensor;
  const char* name; /* the consumer graph's name of the value; for messages; never null */
} phx_plugin_value;

/* The plugin's index of a value for an absent optional input of a node. */
#define PHX_PLUGIN_NO_VALUE UINT32_MAX

typedef struct phx_plugin_node {
  size_t struct_size;
  phx_op_id op;
  /* As in phx_plugin_op: this header's layout, defaults filled in; null for ops without
   * parameters. */
  const void* params;
  /* Value indices in the op's order; PHX_PLUGIN_NO_VALUE for an absent optional input. */
  const uint32_t* inputs;
  size_t input_count;
  const uint32_t* outputs;
  size_t output_count;
  const char* name; /* the consumer graph's node; for messages; never null */
} phx_plugin_node;

/* What a value's elements were over the calibration samples (phx_plugin_graph.value_ranges):
 * the range a quantizer maps, and the root mean square that tells an outlier-stretched
 * range (noise of the range's step against the signal) from a full one. Fixed in size. */
typedef struct phx_plugin_value_range {
  float min;
  float max;
  float rms;
} phx_plugin_value_range;

/* What graph_compile is given. Every pointer in it is valid during the call only: the
 * plugin copies what it keeps. */
typedef struct phx_plugin_graph {
  size_t struct_size;
  const phx_plugin_value* values;
  size_t value_count;
  /* In an order that runs them: a value is written before a node reads it. Every node is
   * a variant the device accepted (op_supported, op_variant_supported), its shapes
   * checked with the op's rules; no value is written by two nodes, and no node writes an
   * input or a constant. A node whose every output is an intermediate that no later
   * node reads does not occur (the host dropped it). */
  const phx_plugin_node* nodes;
  size_t node_count;
  uint32_t flags; /* PHX_PLUGIN_GRAPH_* */
  /* Null, or value_count ranges: the least and the greatest element each value took when
   * the host ran the graph in float on the consumer's calibration samples (graph.h,
   * phx_compile_options), for a device that quantizes; all 0 for a value of an integer
   * dtype. */
  const phx_plugin_value_range* value_ranges;
  /* Null, or serialized_size bytes that executable_serialize wrote of an executable of
   * this plugin (phx_executable_load): the plugin makes the executable from them instead
   * of compiling again, and answers INCOMPATIBLE when they were made by another version,
   * driver or device, or for another graph (its own key; never silently wrong). */
  const void* serialized;
  size_t serialized_size;
} phx_plugin_graph;

/* phx_plugin_graph.flags: run each node as a kernel of its own, as stream_submit would
 * run it: the consumer asked for the results of the nodes run one by one, bit for bit
 * (graph.h, PHX_COMPILE_NO_FUSION). The plugin may still record or submit them together. */
#define PHX_PLUGIN_GRAPH_NO_FUSION UINT32_C(0x1)
/* phx_plugin_graph.flags: the consumer asked for determinism (PHX_COMPILE_DETERMINISTIC):
 * choose no kernel by timing it, so that every run and every compile gives the same bits. */
#define PHX_PLUGIN_GRAPH_DETERMINISTIC UINT32_C(0x2)

/* What executable_node_report says of one node of an executable. */
typedef struct phx_plugin_node_report {
  size_t struct_size;
  /* The dtype the node's arithmetic is done in: the dtype of its first input, or an
   * integer dtype where the plugin quantized a float node (PHX_DTYPE_I8, PHX_DTYPE_I16). */
  phx_dtype compute_dtype;
} phx_plugin_node_report;

/* ---- Collectives (since ABI 1.3) ------------------------------------------------------
 * The host's communicator (comm.h) moves the bytes of a collective itself; a plugin that
 * models its devices' interconnect prices the collective with collective_estimate, and the
 * host reports that time in the collective's profile records.
 */
typedef enum phx_plugin_collective {
  PHX_PLUGIN_COLLECTIVE_ALL_REDUCE = 0,     /* every rank ends with the reduction of all */
  PHX_PLUGIN_COLLECTIVE_ALL_GATHER = 1,     /* every rank ends with every rank's part */
  PHX_PLUGIN_COLLECTIVE_REDUCE_SCATTER = 2, /* rank r ends with part r of the reduction */
  PHX_PLUGIN_COLLECTIVE_BROADCAST = 3,      /* every rank ends with the root's (rank 0's) */
  PHX_PLUGIN_COLLECTIVE_SEND = 4            /* devices[0] sends to devices[1] */
} phx_plugin_collective;

/* ---- The plugin's function table ------------------------------------------------------
 * Every object the plugin hands out (plugin, buffer, stream) is an opaque pointer of its
 * own; the host never looks inside.
 */
typedef struct phx_plugin_api {
  size_t struct_size;
  uint32_t abi_major; /* the ABI the plugin implements */
  uint32_t abi_minor;
  const char* name;    /* short, unique, e.g. "cpu"; static storage */
  const char* version; /* the plugin's own version; static storage */

  /* Starts the plugin: enumerates its devices, starts its threads. *out_plugin is
   * passed back to every other entry. host lives until shutdown returns. Called once.
   * Returning anything but OK rejects the plugin (shutdown is not called).
   * Runs alone: no other entry of this instance is called before it returns. */
  phx_status (*initialize)(const phx_plugin_host* host, void** out_plugin);

  /* Frees everything and joins every thread. Called once, after the host has freed
   * every buffer and stream of the plugin, before the library is unloaded. Runs alone. */
  void (*shutdown)(void* plugin);

  /* The number of devices. A plugin with none is recorded and unloaded. Thread-safe. */
  phx_status (*device_count)(void* plugin, uint32_t* out_count);

  /* Fills *out_info (struct_size set by the host) for device. Thread-safe. */
  phx_status (*device_info)(void* plugin, uint32_t device, phx_plugin_device_info* out_info);

  /* Sets *out_supported to 1 if device implements op for some variant whose first input
   * is of dtype (op_variant_supported, since 1.2, says which variants). An op the plugin
   * does not know is 0, not an error. Asked once per op and dtype when a context is
   * created; the answers must not change while the plugin is loaded. Thread-safe. */
  phx_status (*op_supported)(void* plugin, uint32_t device, phx_op_id op, phx_dtype dtype,
                             int* out_supported);

  /* Allocates size bytes (>= 1) of device memory, aligned to at least 64 bytes.
   * OUT_OF_MEMORY past the device's memory or limit. Thread-safe. */
  phx_status (*buffer_allocate)(void* plugin, uint32_t device, uint64_t size, void** out_buffer);

  /* Frees a buffer (no work that uses it is pending: the host waited). Thread-safe. */
  void (*buffer_free)(void* plugin, void* buffer);

  /* Blocking copies between host memory and a buffer; the range is inside the buffer.
   * The host has waited for the device's queued work that uses the buffer.
   * Thread-safe for distinct buffers. */
  phx_status (*buffer_write)(void* plugin, void* buffer, uint64_t offset, const void* src,
                             uint64_t size);
  phx_status (*buffer_read)(void* plugin, void* buffer, uint64_t offset, void* dst, uint64_t size);

  /* Creates an in-order stream on device. Thread-safe. */
  phx_status (*stream_create)(void* plugin, uint32_t device, void** out_stream);

  /* Destroys a stream whose work has finished. Thread-safe for distinct streams. */
  void (*stream_destroy)(void* plugin, void* stream);

  /* Queues (or runs) op on stream; *out_ticket receives a number that increases by one
   * per op on this stream, starting at 1. An op the device cannot run is UNSUPPORTED.
   * Errors of an op running asynchronously are returned by stream_wait.
   * The host serializes stream_submit, stream_wait and stream_completed calls that name
   * the same stream; calls on distinct streams may run at once. */
  phx_status (*stream_submit)(void* plugin, void* stream, const phx_plugin_op* op,
                              uint64_t* out_ticket);

  /* Blocks until the op with ticket (or every op, with UINT64_MAX) has finished.
   * Serialized per stream by the host (see stream_submit). */
  phx_status (*stream_wait)(void* plugin, void* stream, uint64_t ticket);

  /* Sets *out_ticket to the highest ticket that has finished; never blocks. Serialized
   * per stream by the host (see stream_submit). */
  phx_status (*stream_completed)(void* plugin, void* stream, uint64_t* out_ticket);

  /* Fills *out_stats (struct_size set by the host) for device. Thread-safe. */
  phx_status (*memory_stats)(void* plugin, uint32_t device, phx_memory_stats* out_stats);

  /* (optional) Limits the device's bytes in use; 0 removes the limit. Thread-safe. */
  phx_status (*memory_set_limit)(void* plugin, uint32_t device, uint64_t limit_bytes);

  /* (optional) Returns the device's cached pool memory to the system. Thread-safe. */
  phx_status (*memory_release_cached)(void* plugin, uint32_t device);

  /* (optional) Copies size bytes between two buffers of this plugin (possibly of two of
   * its devices). Without it the host copies through host memory. Thread-safe for
   * distinct destination buffers. */
  phx_status (*buffer_copy)(void* plugin, void* dst, uint64_t dst_offset, void* src,
                            uint64_t src_offset, uint64_t size);

  /* (optional) The device's running statistics (compile-cache hits, modelled cycles...):
   * writes up to capacity metrics to out_metrics (names with static storage) and sets
   * *out_count to how many the device has, which may exceed capacity. Thread-safe. */
  phx_status (*device_stats)(void* plugin, uint32_t device, phx_metric* out_metrics,
                             size_t capacity, size_t* out_count);

  /* ---- Since ABI 1.2 ---- */

  /* (optional) Sets *out_supported to 1 if device runs this exact variant of an op: the
   * dtypes of all its tensors and its parameters, which the host has checked against the
   * op's rules. The host asks it only of variants whose op and first input dtype
   * op_supported accepted, before every stream_submit and for phx_device_supports_op,
   * and submits only the variants it accepts. Without it the host takes op_supported's
   * answer for every variant, and stream_submit answers UNSUPPORTED for one the device
   * cannot run (docs/plugin-guide.md, "Supporting part of an op"). Thread-safe. */
  phx_status (*op_variant_supported)(void* plugin, uint32_t device,
                                     const phx_plugin_op_variant* variant, int* out_supported);
  /* ---- Since ABI 1.3 (see "Executables" above) ---- */

  /* (optional: all three of graph_compile, executable_run and executable_destroy, or
   * none) Compiles graph for device; *out_executable is passed back to executable_run
   * and executable_destroy. UNSUPPORTED is no error: the host runs the nodes one by one
   * through stream_submit instead (a device that compiles some graphs and not others).
   * Any other failure fails the consumer's compile with the plugin's message.
   * Thread-safe. */
  phx_status (*graph_compile)(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                              void** out_executable);

  /* Queues (or runs) the whole executable on stream, a stream of the device it was
   * compiled for: values has one tensor per value of its graph (value_count of them, in
   * order, of each value's dtype and shape; a constant's is the one it had at compile
   * time; the others may be other memory at each run). *out_ticket receives one ticket,
   * as stream_submit gives, after which every output is written. node_profiles is null
   * unless profiling is on; then it has the graph's node_count entries, where the plugin
   * leaves each node's figures as for phx_plugin_op.profile (a node fused into another
   * may have none: the other's stand for both). Errors as stream_submit; the host
   * serializes it with the stream's other calls. */
  phx_status (*executable_run)(void* plugin, void* stream, void* executable,
                               const phx_plugin_tensor* values, size_t value_count,
                               phx_plugin_profile* const* node_profiles, uint64_t* out_ticket);

  /* Frees an executable; no run of it is pending (the host waited). Thread-safe. */
  void (*executable_destroy)(void* plugin, void* executable);

  /* (optional) The executable's own figures (kernels per run, a modelled time, whether
   * the compile was a cache hit...): writes up to capacity metrics to out_metrics (names
   * with static storage) and sets *out_count to how many it has, which may exceed
   * capacity. Thread-safe. */
  phx_status (*executable_stats)(void* plugin, void* executable, phx_metric* out_metrics,
                                 size_t capacity, size_t* out_count);

  /* (optional; needs graph_compile) Sets out_claimed[n] to 1 for each node n of graph
   * that device runs inside a compiled part although op_supported or op_variant_supported
   * says it does not run it alone (npu-sim: a float node it quantizes with the
   * calibration ranges), 0 for the others; graph has node_count entries. The graph is the
   * consumer's whole graph after the host's fusion, before placement: its constants have
   * no tensor yet (buffer null), a dynamic dimension has its size in the first calibration
   * sample, else 1 (or, where 1 breaks a node's rule, a stand-in from 4099 up). The host may then
   * place claimed nodes on device, and graph_compile must not answer UNSUPPORTED for a part that
   * holds one. Thread-safe. */
  phx_status (*graph_claim)(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                            uint8_t* out_claimed);

  /* (optional) Sets out_time_ns[n] to the device's predicted time, in ns, for node n of
   * graph run alone (graph as for graph_claim), from its timing model; UINT64_MAX for a
   * node it does not run. The host's PHX_PLACEMENT_COST policy (graph.h) compares these
   * across devices; a device without the entry is priced by the host's roofline of the
   * op's FLOPs and bytes (docs/graphs.md, "Placement"). Thread-safe. */
  phx_status (*graph_estimate)(void* plugin, uint32_t device, const phx_plugin_graph* graph,
                               uint64_t* out_time_ns);

  /* (optional) Writes what the plugin needs to make the executable again without
   * compiling (phx_plugin_graph.serialized) into buffer, as phx_executable_save does: sets
   * *out_size, and writes when capacity is at least that (buffer may be null when
   * capacity is 0). Without it, a saved executable keeps nothing of its parts on this
   * device, and loading it compiles them again. Thread-safe. */
  phx_status (*executable_serialize)(void* plugin, void* executable, void* buffer, size_t capacity,
                                     size_t* out_size);

  /* (optional) Fills *out_report (struct_size set by the host) for node of the
   * executable's graph. Without it the host reports each node's own dtype. Thread-safe. */
  phx_status (*executable_node_report)(void* plugin, void* executable, size_t node,
                                       phx_plugin_node_report* out_report);

  /* (optional) Makes a buffer of device over size bytes (>= 1) of host memory at data,
   * aligned to at least the size of the dtype it will hold (the host checked), which the
   * host keeps valid until buffer_free of this buffer returns: the consumer's
   * phx_tensor_create_from_host. buffer_free then forgets the memory and never frees it.
   * Such a buffer need not count against the device's memory. UNSUPPORTED when device
   * cannot compute on host memory, or not at data's alignment. Thread-safe. */
  phx_status (*buffer_import_host)(void* plugin, uint32_t device, void* data, uint64_t size,
                                   void** out_buffer);

  /* (optional) Sets *out_data to the host address of the buffer's first byte when the
   * device's memory is the host's: the consumer's phx_tensor_host_data, which reads and
   * writes there while no work that uses the buffer is pending (the host waited), and
   * may keep the address for the buffer's life. UNSUPPORTED otherwise. Thread-safe. */
  phx_status (*buffer_host_data)(void* plugin, void* buffer, void** out_data);

  /* (ABI 1.3, continued: see "Collectives" above) */

  /* (optional) Sets *out_time_ns to the modelled time, in ns, of collective among
   * device_count (>= 2; exactly 2 for SEND) distinct devices of this plugin, given in
   * rank order (the host checked). bytes is the size of the whole buffer the collective
   * is about, whatever the op: each rank's buffer for all_reduce and broadcast, the
   * gathered result for all_gather, each rank's input for reduce_scatter, the message for
   * send. UNSUPPORTED when the plugin has no model for these devices. Thread-safe. */
  phx_status (*collective_estimate)(void* plugin, phx_plugin_collective collective,
                                    const uint32_t* devices, size_t device_count, uint64_t bytes,
                                    uint64_t* out_time_ns);
} phx_plugin_api;

/* The entry every plugin exports. host lives until the plugin's shutdown returns.
 * Sets *out_api to a table with static storage duration and returns OK; any other
 * status rejects the plugin. It must not call any other function of the host. */
typedef phx_status (*phx_plugin_entry_fn)(const phx_plugin_host* host,
                                          const phx_plugin_api** out_api);
PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host* host,
                                              const phx_plugin_api** out_api);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PHYNEXUS_PLUGIN_H */
