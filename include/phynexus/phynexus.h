/*
 * Phynexus: the consumer C API.
 *
 * One API for every device: a context finds the device plugins, and tensors, streams
 * and ops are reached through the functions below whatever the device is.
 *
 * Conventions that hold for every function unless its comment says otherwise:
 * - Every function returns a phx_status. On failure the calling thread's last error
 *   (phx_last_error) holds a message with context, and every out parameter is left
 *   unchanged. Nothing is half done: a failed call changes no object.
 * - Out parameters are named out_*; they must not be null.
 * - Structs passed in or out begin with struct_size, which the caller sets to
 *   sizeof(the struct) as it was compiled (the PHX_*_INIT macros do this). A library
 *   that knows a larger struct reads and writes only the first struct_size bytes, so
 *   a program built against an older header keeps working with a newer library.
 * - Handles (phx_context, phx_tensor, phx_stream, phx_calibrator) are opaque. A
 *   destroyed handle, or a handle from another context, is detected and answered with
 *   PHX_STATUS_INVALID_ARGUMENT; it never crashes.
 * - Strings returned by the library are UTF-8, NUL-terminated and owned by the
 *   object named in the function's comment.
 * - Thread safety is stated per function. "Thread-safe" means any threads may call it
 *   at once; "externally synchronized: X" means calls that name the same X must not
 *   overlap (the program orders them: one thread per X, or a lock).
 * - A tensor's contents are memory: while a call or an op writes them, no other call or
 *   op may read or write them; ops on any streams may read one tensor at once. An op
 *   uses its tensors from its submission until it has finished; phx_tensor_upload,
 *   _download, _copy and phx_calibrator_observe first wait for the work already queued
 *   on the tensors' devices, so they come after every op submitted before them.
 * - Destroying a tensor, stream or calibrator while another call uses it, or names it,
 *   is a race the program must prevent (they are externally synchronized). Destroying
 *   a context is not: other threads may go on using it and its objects meanwhile, and
 *   each such call either completes as if it ran before the destruction or returns
 *   INVALID_ARGUMENT (see phx_context_destroy).
 *
 * The API follows semantic versioning: PHX_API_VERSION_MAJOR changes only with an
 * incompatible change; a new minor only appends (functions, enum values, struct
 * fields after the last one). See CHANGELOG-api.md beside this header.
 */
#ifndef PHYNEXUS_PHYNEXUS_H
#define PHYNEXUS_PHYNEXUS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libphynexus is built with hidden visibility; only what is marked PHX_API is exported. */
#if defined(PHX_BUILDING_LIBRARY)
#define PHX_API __attribute__((visibility("default")))
#else
#define PHX_API
#endif

/* ---- Version -------------------------------------------------------------------- */

#define PHX_API_VERSION_MAJOR 0
#define PHX_API_VERSION_MINOR 3
#define PHX_API_VERSION_PATCH 0
/* The version as one number: major * 10000 + minor * 100 + patch. */
#define PHX_API_VERSION \
  (PHX_API_VERSION_MAJOR * 10000 + PHX_API_VERSION_MINOR * 100 + PHX_API_VERSION_PATCH)

/* The API version of the library actually loaded, as PHX_API_VERSION encodes it.
 * Compare with PHX_API_VERSION to detect a library older than the header.
 * Thread-safe. Never fails. */
PHX_API uint32_t phx_api_version(void);

/* ---- Status and errors ------------------------------------------------------------ */

typedef enum phx_status {
  PHX_STATUS_OK = 0,
  PHX_STATUS_INVALID_ARGUMENT = 1,   /* a null pointer, bad size, bad shape, stale handle */
  PHX_STATUS_NOT_FOUND = 2,          /* no such device, plugin or record index */
  PHX_STATUS_UNSUPPORTED = 3,        /* valid, but this device does not implement it */
  PHX_STATUS_OUT_OF_MEMORY = 4,      /* host or device memory, or the device's limit */
  PHX_STATUS_DEVICE_UNAVAILABLE = 5, /* the device is lost or was never usable */
  PHX_STATUS_PLUGIN_ERROR = 6,       /* a plugin broke its contract */
  PHX_STATUS_COMPILATION_ERROR = 7,  /* a kernel could not be compiled for the device */
  PHX_STATUS_INTERNAL = 8,           /* a bug in Phynexus; please report it */
  /* Since 0.3: saved data made for another device, driver, plugin or Phynexus version
   * (phx_executable_load) */
  PHX_STATUS_INCOMPATIBLE = 9
} phx_status;

/* The status's name, e.g. "PHX_STATUS_OUT_OF_MEMORY"; "PHX_STATUS_<unknown>" for a
 * value this library does not know. Static storage. Thread-safe. */
PHX_API const char* phx_status_name(phx_status status);

/* The message of the last failed call made by this thread, with its context, e.g.
 * "phx_op_run: matmul: K mismatch: a is 3x4, b is 5x2". "" when no call has failed.
 * The string is owned by the library and valid until this thread's next phx_ call.
 * Thread-safe (each thread has its own). Never fails. */
PHX_API const char* phx_last_error(void);

/* For libraries layered over this API (the ONNX importer, language bindings), so that
 * their failures reach phx_last_error as the library's own do: records message (copied;
 * null records "") as the calling thread's last error and returns status unchanged.
 * Since API 0.3. Thread-safe. Never fails. */
PHX_API phx_status phx_set_last_error(phx_status status, const char* message);

/* ---- Data types ------------------------------------------------------------------- */

typedef enum phx_dtype {
  PHX_DTYPE_INVALID = 0,
  PHX_DTYPE_F32 = 1,
  PHX_DTYPE_F16 = 2,  /* IEEE 754 binary16 */
  PHX_DTYPE_BF16 = 3, /* bfloat16: the top 16 bits of an f32; rounded to nearest even */
  PHX_DTYPE_I8 = 4,
  PHX_DTYPE_I16 = 5,
  PHX_DTYPE_I32 = 6,
  PHX_DTYPE_U8 = 7
} phx_dtype;
#define PHX_DTYPE_COUNT 8

/* Bit (1 << dtype) of a dtype mask. */
#define PHX_DTYPE_BIT(dtype) (UINT32_C(1) << (dtype))

/* Bytes per element; 0 for an unknown dtype. Thread-safe. */
PHX_API size_t phx_dtype_size(phx_dtype dtype);
/* "f32", "bf16", ...; "unknown" for an unknown dtype. Static storage. Thread-safe. */
PHX_API const char* phx_dtype_name(phx_dtype dtype);

/* ---- Logging ------------------------------------------------------------------------ */

typedef enum phx_log_level {
  PHX_LOG_TRACE = 0,
  PHX_LOG_DEBUG = 1,
  PHX_LOG_INFO = 2,
  PHX_LOG_WARN = 3,
  PHX_LOG_ERROR = 4,
  PHX_LOG_OFF = 5
} phx_log_level;

/* Receives every log message at or above the context's level. Called from any thread
 * the library runs on, possibly several at once; must not call back into Phynexus.
 * message is valid only during the call. */
typedef void (*phx_log_callback)(void* user_data, phx_log_level level, const char* message);

/* ---- Context ------------------------------------------------------------------------ */

typedef struct phx_context_s* phx_context;

/* Context flags. */
#define PHX_CONTEXT_PROFILE UINT32_C(0x1) /* every stream keeps profile records */
/* An op that a device does not support (UNSUPPORTED) runs on the CPU plugin's device
 * (else the first CPU device) instead, when that one supports it: its inputs are copied
 * there, the op runs, its outputs are copied back, before phx_op_run returns. Counted per
 * device in phx_device_stats ("fallback_ops") and logged once per op and dtype.
 * PHX_FALLBACK=cpu in the environment adds it. docs/c-api.md, "CPU fallback". Since API
 * 0.2. */
#define PHX_CONTEXT_FALLBACK_CPU UINT32_C(0x2)

typedef struct phx_context_options {
  size_t struct_size;
  /* Folders searched for plugins before any other; may be null when count is 0.
   * The strings are copied. */
  const char* const* plugin_paths;
  size_t plugin_path_count;
  /* Non-zero: after plugin_paths, search PHX_PLUGIN_PATH / PHX_ADD_PLUGIN_PATH and the
   * plugin folder beside the installed library (see docs/loader.md). Zero: only
   * plugin_paths. */
  int use_default_search_path;
  /* Messages below this level are dropped. PHX_LOG_LEVEL in the environment, when
   * set, overrides it ("trace", "debug", "info", "warn", "error", "off"). */
  phx_log_level log_level;
  /* Null: messages go to standard error. */
  phx_log_callback log_callback;
  void* log_user_data;
  /* PHX_CONTEXT_* flags. PHX_PROFILE=1 in the environment adds PHX_CONTEXT_PROFILE. */
  uint32_t flags;
  /* Worker threads for plugins that use host threads (the CPU plugin); 0 means one per
   * hardware thread. PHX_NUM_THREADS in the environment overrides it. */
  uint32_t num_threads;
} phx_context_options;

/* Default options: no extra paths, default search on, PHX_LOG_WARN, no flags. */
#define PHX_CONTEXT_OPTIONS_INIT \
  { sizeof(phx_context_options), NULL, 0, 1, PHX_LOG_WARN, NULL, NULL, 0, 0 }

/* Creates a context: finds and loads the plugins, initializes them and lists their
 * devices. A plugin that cannot be used is recorded with the reason (see
 * phx_plugin_get) and does not make this call fail; a context with no device is valid.
 * options may be null for the defaults. The caller owns *out_context and destroys it
 * with phx_context_destroy.
 * Returns INVALID_ARGUMENT (out_context null, bad struct_size, plugin_paths null with a
 * non-zero count), OUT_OF_MEMORY. Thread-safe. */
PHX_API phx_status phx_context_create(const phx_context_options* options, phx_context* out_context);

/* Destroys the context, and with it every tensor, stream and calibrator still alive in
 * it: work queued on its streams is waited for first. The plugins are shut down and
 * unloaded. Handles of the context and its objects are invalid afterwards (detected,
 * never a crash), and so are the strings it owned (phx_plugin_get, phx_device_get).
 * Thread-safe, even while other threads use the context or its objects. A call that
 * had reached one of its handles before the destruction began runs to its end and this
 * function waits for it (one blocked in phx_stream_wait included: its work is waited
 * for anyway); a call that reaches one after returns INVALID_ARGUMENT and does nothing.
 * Objects such a finishing call created are destroyed with the context.
 * Returns INVALID_ARGUMENT for a null, destroyed or foreign handle, and to every call
 * but one when several threads destroy the same context at once. */
PHX_API phx_status phx_context_destroy(phx_context context);

/* Sends message to the context's log at level, where the library's own messages go (its
 * callback, else standard error; dropped below the context's level): for what is built
 * on this API, such as the ONNX importer and the language packages, to report in the
 * same place. The message is copied. Returns INVALID_ARGUMENT (a null, destroyed or
 * foreign context, a level outside PHX_LOG_TRACE to PHX_LOG_ERROR, a null message).
 * Thread-safe. Since API 0.3. */
PHX_API phx_status phx_log_message(phx_context context, phx_log_level level, const char* message);

/* ---- Plugins ------------------------------------------------------------------------ */

typedef enum phx_plugin_state {
  PHX_PLUGIN_LOADED = 0,   /* in use; its devices are listed */
  PHX_PLUGIN_REJECTED = 1, /* could not be used; reason says why */
  PHX_PLUGIN_SHADOWED = 2  /* same name as a plugin found earlier in the search order */
} phx_plugin_state;

/* How far the loader got with a candidate file. */
typedef enum phx_plugin_stage {
  PHX_PLUGIN_STAGE_FOUND = 0,       /* file seen */
  PHX_PLUGIN_STAGE_OPENED = 1,      /* dlopen succeeded */
  PHX_PLUGIN_STAGE_ENTRY = 2,       /* entry symbol found and called */
  PHX_PLUGIN_STAGE_VERSION = 3,     /* ABI versions agreed */
  PHX_PLUGIN_STAGE_VALIDATED = 4,   /* required entries present */
  PHX_PLUGIN_STAGE_INITIALIZED = 5, /* initialize succeeded */
  PHX_PLUGIN_STAGE_READY = 6        /* devices listed */
} phx_plugin_stage;

typedef struct phx_plugin_info {
  size_t struct_size;
  const char* name;    /* "" when the plugin never said it */
  const char* version; /* the plugin's own version; "" when unknown */
  const char* path;    /* the file */
  uint32_t abi_major;  /* the plugin ABI it implements; 0 when it never said */
  uint32_t abi_minor;
  phx_plugin_state state;
  phx_plugin_stage stage; /* the last stage reached */
  const char* reason;     /* why it was rejected or shadowed; "" when loaded */
  uint32_t device_count;
} phx_plugin_info;

/* Every field listed, so that -Wmissing-field-initializers (in -Wextra) stays quiet. */
#define PHX_PLUGIN_INFO_INIT                                                                    \
  {                                                                                             \
    sizeof(phx_plugin_info), NULL, NULL, NULL, 0, 0, PHX_PLUGIN_LOADED, PHX_PLUGIN_STAGE_FOUND, \
        NULL, 0                                                                                 \
  }

/* The number of candidate plugin files the context considered, loaded or not.
 * Returns INVALID_ARGUMENT. Thread-safe. */
PHX_API phx_status phx_plugin_count(phx_context context, size_t* out_count);

/* Fills *out_info (whose struct_size the caller set) for candidate index, in search
 * order. The strings are owned by the context and live as long as it does.
 * Returns INVALID_ARGUMENT, NOT_FOUND (index >= count). Thread-safe. */
PHX_API phx_status phx_plugin_get(phx_context context, size_t index, phx_plugin_info* out_info);

/* "loaded", "rejected", "shadowed"; "unknown" otherwise (since API 0.3). Static storage.
 * Thread-safe. */
PHX_API const char* phx_plugin_state_name(phx_plugin_state state);

/* "found", "opened", "entry", "version", "validated", "initialized", "ready"; "unknown"
 * otherwise (since API 0.3): the words of the loader's log and of phx-devices. Static
 * storage. Thread-safe. */
PHX_API const char* phx_plugin_stage_name(phx_plugin_stage stage);

/* ---- Devices ------------------------------------------------------------------------ */

typedef enum phx_device_type {
  PHX_DEVICE_CPU = 0,
  PHX_DEVICE_GPU = 1,
  PHX_DEVICE_TPU = 2,
  PHX_DEVICE_NPU = 3,
  /* Since API 0.3: a dedicated accelerator that is none of the above (an FPGA, a DSP, a
   * vendor's inference chip), as OpenCL's CL_DEVICE_TYPE_ACCELERATOR. A device of a type
   * that a later API adds is listed with this one by a library that predates the type. */
  PHX_DEVICE_ACCELERATOR = 4
} phx_device_type;

/* "cpu", "gpu", "tpu", "npu", "accelerator"; "unknown" otherwise. Static storage.
 * Thread-safe. */
PHX_API const char* phx_device_type_name(phx_device_type type);

/* A plugin-specific property for inspection, e.g. {"isa", "avx512"}. */
typedef struct phx_property {
  const char* key;
  const char* value;
} phx_property;

typedef struct phx_device_info {
  size_t struct_size;
  uint32_t index;     /* the device's index in the context */
  const char* plugin; /* the name of the plugin that provides it */
  phx_device_type type;
  const char* name;
  const char* vendor;
  uint64_t memory_total_bytes;     /* the memory tensors may use */
  uint64_t memory_available_bytes; /* as the plugin last measured it */
  uint32_t compute_units;          /* cores, SMs, MXUs...: the plugin's natural unit */
  uint32_t dtype_mask;             /* PHX_DTYPE_BIT of each dtype it can hold */
  const phx_property* properties;  /* property_count entries; may be null when 0 */
  size_t property_count;
  /* Since 0.3: 1 when the device compiles the part of a graph placed on it as a whole
   * (graph.h: its kernels and their order made once, a run submitted as one); 0 when an
   * executable runs its nodes there one by one. */
  uint32_t compiles_graphs;
} phx_device_info;

#define PHX_DEVICE_INFO_INIT \
  { sizeof(phx_device_info), 0, NULL, PHX_DEVICE_CPU, NULL, NULL, 0, 0, 0, 0, NULL, 0, 0 }

/* The number of devices, over all loaded plugins. Devices are numbered 0..count-1 in
 * plugin search order. Returns INVALID_ARGUMENT. Thread-safe. */
PHX_API phx_status phx_device_count(phx_context context, size_t* out_count);

/* Fills *out_info for device. The strings and properties are owned by the context and
 * live as long as it does. Returns INVALID_ARGUMENT, NOT_FOUND. Thread-safe. */
PHX_API phx_status phx_device_get(phx_context context, size_t device, phx_device_info* out_info);

/* ---- Tensors ------------------------------------------------------------------------ */

#define PHX_MAX_RANK 8

typedef struct phx_tensor_s* phx_tensor;

/* Creates a dense, row-major tensor of the given dtype and shape on device. Its
 * contents are undefined until written. rank 0 is a scalar (shape may then be null);
 * every dimension must be >= 1 (use a separate code path for empty tensors).
 * The caller owns *out_tensor and destroys it with phx_tensor_destroy.
 * Returns INVALID_ARGUMENT (rank > PHX_MAX_RANK, a dimension < 1, a byte size above
 * 2^62, which no machine holds, unknown dtype), NOT_FOUND (no such device), UNSUPPORTED (the
 * device cannot hold dtype), OUT_OF_MEMORY (also past the device's memory limit).
 * Thread-safe. */
PHX_API phx_status phx_tensor_create(phx_context context, size_t device, phx_dtype dtype,
                                     size_t rank, const int64_t* shape, phx_tensor* out_tensor);

/* Waits for queued work that uses the tensor, then frees it; a wait that fails (a lost
 * device) is logged and the tensor freed all the same. Returns INVALID_ARGUMENT.
 * Externally synchronized: tensor (no other call may name it at the same time). */
PHX_API phx_status phx_tensor_destroy(phx_tensor tensor);

typedef struct phx_tensor_desc {
  size_t struct_size;
  uint32_t device;
  phx_dtype dtype;
  uint32_t rank;
  int64_t shape[PHX_MAX_RANK]; /* entries past rank are 1 */
  uint64_t element_count;
  uint64_t byte_size;
} phx_tensor_desc;

#define PHX_TENSOR_DESC_INIT \
  { sizeof(phx_tensor_desc), 0, PHX_DTYPE_INVALID, 0, {0, 0, 0, 0, 0, 0, 0, 0}, 0, 0 }

/* Describes the tensor. Returns INVALID_ARGUMENT. Thread-safe. */
PHX_API phx_status phx_tensor_describe(phx_tensor tensor, phx_tensor_desc* out_desc);

/* Copies size bytes from host memory src into the tensor at byte offset. Blocking:
 * waits for the work already queued on the device's streams, and returns when the
 * data is in the tensor (src may be reused at once).
 * Returns INVALID_ARGUMENT (null src with size > 0, offset + size past the tensor,
 * overflow). Thread-safe, but transfers (upload, download, copy) that name the same
 * tensor must not overlap; the rule on tensor contents applies. */
PHX_API phx_status phx_tensor_upload(phx_tensor tensor, size_t offset, const void* src,
                                     size_t size);

/* Copies size bytes of the tensor from byte offset into host memory dst. Blocking: waits
 * for the work already queued on the device's streams. Same errors as upload.
 * Thread-safe, but transfers that name the same tensor must not overlap. */
PHX_API phx_status phx_tensor_download(phx_tensor tensor, size_t offset, void* dst, size_t size);

/* Copies src into dst, which may be on any two devices of the same context; they
 * must have the same dtype and byte size (shapes may differ). Goes through host memory
 * when the plugins offer nothing better. Blocking.
 * Returns INVALID_ARGUMENT (mismatch, stale or foreign handle, dst == src),
 * OUT_OF_MEMORY. Thread-safe, but transfers that name dst or src must not overlap. */
PHX_API phx_status phx_tensor_copy(phx_tensor dst, phx_tensor src);

/* ---- Tensors over host memory (since 0.3) --------------------------------------------
 * A device whose memory is the host's (the CPU device) can compute on memory the caller
 * allocated and read its tensors in place: the zero-copy exchange numpy and DLPack need.
 * A device that cannot answers UNSUPPORTED, and the caller copies instead
 * (phx_tensor_create + phx_tensor_upload, phx_tensor_download).
 */

/* Called once when the library no longer uses the memory given to
 * phx_tensor_create_from_host: after the device's last work on the tensor, from
 * phx_tensor_destroy, or from phx_context_destroy after it has freed everything else (so
 * it must not call the library on that context). */
typedef void (*phx_host_release_fn)(void* user_data);

/* Creates a dense, row-major tensor of dtype and shape (as phx_tensor_create) on device
 * whose elements are the bytes at data: no copy is made, and what either side writes the
 * other sees (with the ordering rules of upload and download: ops queued on the tensor
 * may read and write data until they finish). data must hold the tensor's byte size,
 * aligned to the dtype's size, and stay valid until release(user_data) is called;
 * release may be null when the caller knows the memory outlives the tensor. Such a
 * tensor does not count against the device's memory or limit.
 * The caller owns *out_tensor and destroys it with phx_tensor_destroy. On any failure
 * nothing is kept and release is not called: the memory is still the caller's.
 * Returns INVALID_ARGUMENT (as phx_tensor_create; null data; data misaligned),
 * NOT_FOUND, UNSUPPORTED (the device cannot compute on host memory, or not at data's
 * alignment), OUT_OF_MEMORY. Thread-safe. */
PHX_API phx_status phx_tensor_create_from_host(phx_context context, size_t device, phx_dtype dtype,
                                               size_t rank, const int64_t* shape, void* data,
                                               phx_host_release_fn release, void* user_data,
                                               phx_tensor* out_tensor);

/* Waits for the work already queued on the device's streams (as phx_tensor_download
 * does), then sets *out_data to the address of the tensor's first element in host
 * memory: its elements in place, dense and row-major, for as long as the tensor lives.
 * Reads see what finished work wrote; work queued later may change them (wait for it).
 * Writes are as an upload's, without its wait.
 * Returns INVALID_ARGUMENT, UNSUPPORTED (the device's memory is not the host's).
 * Thread-safe. */
PHX_API phx_status phx_tensor_host_data(phx_tensor tensor, void** out_data);

/* ---- Streams ------------------------------------------------------------------------ */

typedef struct phx_stream_s* phx_stream;

/* Creates an in-order queue of work on device. Ops run in the order they were
 * submitted; each submission gets a ticket, increasing from 1, that can be waited on.
 * A stream is used by one thread at a time; threads that work at once each use their
 * own streams, any number of them on one device.
 * The caller owns *out_stream and destroys it with phx_stream_destroy.
 * Returns INVALID_ARGUMENT, NOT_FOUND, DEVICE_UNAVAILABLE, OUT_OF_MEMORY. Thread-safe. */
PHX_API phx_status phx_stream_create(phx_context context, size_t device, phx_stream* out_stream);

/* Waits for the stream's work, then destroys it. Returns INVALID_ARGUMENT.
 * Externally synchronized: stream (no other call may name it at the same time). */
PHX_API phx_status phx_stream_destroy(phx_stream stream);

/* Blocks until every op submitted to the stream has finished. Returns the first error
 * an op met while running asynchronously (then clears it), DEVICE_UNAVAILABLE,
 * INVALID_ARGUMENT. Externally synchronized: stream. */
PHX_API phx_status phx_stream_synchronize(phx_stream stream);

/* Blocks until the op with this ticket (from phx_op_run) has finished. A ticket not yet
 * issued is INVALID_ARGUMENT. Externally synchronized: stream. */
PHX_API phx_status phx_stream_wait(phx_stream stream, uint64_t ticket);

/* Sets *out_done to 1 if the op with this ticket has finished, else 0; never blocks.
 * Returns INVALID_ARGUMENT. Externally synchronized: stream. */
PHX_API phx_status phx_stream_query(phx_stream stream, uint64_t ticket, int* out_done);

/* ---- Ops ------------------------------------------------------------------------------
 * An op is a descriptor: an op id, a parameter struct of that op (or null for an op
 * without parameters, or to take every default), its input tensors and its output
 * tensors, which the caller created with the right dtype and shape beforehand.
 * All tensors of an op must live on the stream's device. Shapes broadcast as in NumPy
 * where an op says so. The rules of each op: docs/ops.md.
 */

typedef enum phx_op_id {
  PHX_OP_INVALID = 0,
  /* in: a [..., M, K] (or [..., K, M] with transpose_a), b [..., K, N] (or [..., N, K]),
   * optional bias [N] (any shape broadcastable to the output); out: [..., M, N], batch
   * dimensions broadcast. f32, f16, bf16 in (a and b alike); out the same or f32;
   * products are accumulated in f32. */
  PHX_OP_MATMUL = 1,
  PHX_OP_ADD = 2, /* in: a, b (broadcast); out: the broadcast shape; same dtype */
  PHX_OP_SUB = 3,
  PHX_OP_MUL = 4,
  PHX_OP_DIV = 5,
  PHX_OP_RELU = 6, /* in: x; out: same shape and dtype */
  PHX_OP_GELU = 7, /* the exact, erf-based GELU */
  PHX_OP_SILU = 8,
  PHX_OP_SOFTMAX = 9,     /* phx_softmax_params; in: x; out: same shape */
  PHX_OP_LAYER_NORM = 10, /* phx_norm_params; in: x, optional gamma, optional beta */
  PHX_OP_RMS_NORM = 11,   /* phx_norm_params; in: x, optional gamma */
  PHX_OP_TRANSPOSE = 12,  /* phx_transpose_params; in: x; out: permuted shape */
  PHX_OP_REDUCE_SUM = 13, /* phx_reduce_params; in: x; out: reduced shape */
  PHX_OP_REDUCE_MAX = 14,
  PHX_OP_CAST = 15,   /* in: x; out: same shape, the output's dtype; see docs/ops.md */
  PHX_OP_CONV2D = 16, /* phx_conv2d_params; in: x, weight, optional bias [C_out] */
  /* ---- Since API 0.2 ---- */
  /* phx_attention_params; in: q [B, H, Sq, D], k [B, Hkv, Skv, D], v [B, Hkv, Skv, Dv]
   * with H a multiple of Hkv (grouped-query attention: query head h reads key/value head
   * h / (H / Hkv)); out: [B, H, Sq, Dv]. softmax(scale * q k^T + mask) v per head, the
   * softmax in f32. f32, f16, bf16 (q, k, v and out alike). */
  PHX_OP_ATTENTION = 17,
  /* phx_rope_params; in: x [..., S, D], cos [S, R], sin [S, R] (f32, 2R <= D: a
   * precomputed table of the angles of position s and pair i); out: like x. The first 2R
   * features of each row are rotated in R pairs, the rest copied. f32, f16, bf16. */
  PHX_OP_ROPE = 18,
  /* phx_quantize_params; in: x (f32), scale (f32), optional zero_point (i32, scale's
   * shape); out: i8, u8 or i16, x's shape. q = saturate(round_half_even(x / scale) + zp).
   * scale of one element quantizes per tensor; [C] per channel along params.axis. */
  PHX_OP_QUANTIZE = 19,
  /* phx_quantize_params; in: q (i8, u8, i16 or i32), scale, optional zero_point, as for
   * quantize; out: f32, q's shape. x = (q - zp) * scale. */
  PHX_OP_DEQUANTIZE = 20,
  /* phx_matmul_params (transpose_a must be 0; activation NONE or RELU). Integer matmul
   * with integer accumulation (int32 for 8-bit a, int64 for i16 a: "16x8"). in, in this
   * order (optional ones may be null):
   *   0 a [..., M, K] (i8, u8 or i16)   1 b [K, N] or [N, K] with transpose_b (i8)
   *   2 a_scale (f32 [1])               3 a_zero_point (i32 [1], optional)
   *   4 b_scale (f32 [1] or [N])        5 b_zero_point (i32, b_scale's shape, optional)
   *   6 bias (i32 [N], optional; its scale is a_scale * b_scale, its zero point 0)
   *   7 y_scale (f32 [1])               8 y_zero_point (i32 [1], optional)
   * out [..., M, N]: i8, u8 or i16 requantized with y_scale and y_zero_point (both
   * needed then, y_scale required), i32 the raw accumulators plus bias (8-bit a only),
   * or f32 dequantized. RELU clamps at the output's zero. See docs/ops.md. */
  PHX_OP_QMATMUL = 21,
  /* phx_conv2d_params (activation NONE or RELU). Integer conv2d; inputs in the order of
   * qmatmul with x for a and weight for b (w_scale [1] or [C_out], bias i32 [C_out]);
   * out as for qmatmul. */
  PHX_OP_QCONV2D = 22,
  /* Dynamic quantization of activations at run time, per tensor. in: x (f32); out: y
   * (u8: asymmetric over [min(0, min x), max(0, max x)]; i8 or i16: symmetric over
   * max |x|), scale (f32 [1]), zero_point (i32 [1]). */
  PHX_OP_DYNAMIC_QUANTIZE = 23,
  /* ---- Since API 0.3 ----
   * Dtype sets below: "float" is f32, f16 and bf16; "sint" is i8, i16 and i32; "all" is
   * float, sint and u8. A boolean is a u8 holding 0 or 1, as ONNX's bool. Float ops on
   * f16 and bf16 compute in f32 and round once. */
  /* Unary, no parameters; in: x; out: same shape and dtype. */
  PHX_OP_SIGMOID = 24,    /* float: 1 / (1 + e^-x) */
  PHX_OP_TANH = 25,       /* float */
  PHX_OP_EXP = 26,        /* float */
  PHX_OP_LOG = 27,        /* float: natural logarithm */
  PHX_OP_SQRT = 28,       /* float */
  PHX_OP_NEG = 29,        /* float, sint (integers wrap around: -(-128) is -128 in i8) */
  PHX_OP_ABS = 30,        /* float, sint (integers wrap around, as neg) */
  PHX_OP_ERF = 31,        /* float */
  PHX_OP_FLOOR = 32,      /* float */
  PHX_OP_CEIL = 33,       /* float */
  PHX_OP_RECIPROCAL = 34, /* float: 1 / x */
  PHX_OP_SIGN = 35,       /* float, sint: -1, 0 or 1 (NaN stays NaN) */
  PHX_OP_SOFTPLUS = 36,   /* float: log(1 + e^x), computed without overflow */
  /* Unary with phx_elementwise_params (null: the defaults named here); in: x; out: same
   * shape and dtype. */
  PHX_OP_LEAKY_RELU = 37, /* float: x < 0 ? alpha * x : x; alpha default 0.01 */
  PHX_OP_ELU = 38,        /* float: x < 0 ? alpha * (e^x - 1) : x; alpha default 1 */
  /* float: beta * (x <= 0 ? alpha * (e^x - 1) : x); defaults alpha
   * 1.67326319217681884765625, beta 1.05070102214813232421875 (ONNX's Selu) */
  PHX_OP_SELU = 39,
  /* all: min(max(x, alpha), beta); defaults alpha -FLT_MAX, beta FLT_MAX. For integer
   * dtypes the bounds are rounded toward the inside of the range (alpha up, beta down)
   * and saturated to the dtype. alpha > beta gives beta everywhere, as ONNX's Clip. */
  PHX_OP_CLIP = 40,
  /* Binary; in: a, b (broadcast as in NumPy; one dtype); out: the broadcast shape. */
  PHX_OP_POW = 41, /* float: a^b as C's powf */
  PHX_OP_MAX = 42, /* all (a NaN in either input gives NaN) */
  PHX_OP_MIN = 43, /* all (a NaN in either input gives NaN) */
  /* float; in: x, slope (broadcast to x's shape); out: like x: x < 0 ? slope * x : x */
  PHX_OP_PRELU = 44,
  /* Comparisons; in: a, b (broadcast; one dtype, any of all); out: u8 0 or 1 of the
   * broadcast shape. A NaN compares unequal, neither less nor greater. */
  PHX_OP_EQUAL = 45,
  PHX_OP_LESS = 46,
  PHX_OP_GREATER = 47,
  /* in: cond (u8), a, b (one dtype, any of all); the three broadcast together; out: a's
   * dtype, the broadcast shape: cond != 0 ? a : b. */
  PHX_OP_WHERE = 48,
  PHX_OP_NOT = 49, /* in: x (u8); out: u8, x's shape: x == 0 ? 1 : 0 */
  /* phx_reduce_params, as reduce_sum; in: x; out: reduced shape. */
  PHX_OP_REDUCE_MEAN = 50, /* float; sums in f32 */
  PHX_OP_REDUCE_MIN = 51,  /* all (a NaN in a reduced set gives NaN) */
  PHX_OP_REDUCE_PROD = 52, /* float (products in f32), sint (wrapping around) */
  /* phx_argmax_params; in: x (all); out: i32, x's shape without axis (1 there with
   * keep_dims): the index of the largest element along axis. Ties give the first index
   * (the last with select_last_index). A NaN counts as larger than every number (the
   * first NaN, or the last with select_last_index, wins), as NumPy's argmax. */
  PHX_OP_ARGMAX = 53,
  /* phx_softmax_params; in: x (float); out: like x: x - max - log(sum e^(x - max))
   * along axis, the sum in f32. */
  PHX_OP_LOG_SOFTMAX = 54,
  /* phx_norm_params; inference batch norm. in: x [N, C, ...] (rank >= 2), scale [C],
   * bias [C], mean [C], var [C] (all required, x's dtype; float); out: like x:
   * (x - mean) / sqrt(var + epsilon) * scale + bias along dimension 1. */
  PHX_OP_BATCH_NORM = 55,
  /* phx_norm_params; in: x [N, C, D1, ...] (rank >= 3), scale [C], bias [C] (x's dtype;
   * float); out: like x: each (n, c) normalized over D1... with its mean and biased
   * variance (divided by the count), sums in f32, then * scale + bias. */
  PHX_OP_INSTANCE_NORM = 56,
  /* Layout, pooling and transposed convolution. */
  /* phx_reshape_params (required: null is refused); in: x (any dtype); out: the target
   * shape, x's dtype and row-major data. A target entry 0 copies x's dimension at that
   * index; one entry -1 is inferred from the element count, which must stay the same. */
  PHX_OP_RESHAPE = 57,
  /* phx_axis_params (default axis 0); in: 1 to PHX_MAX_OP_INPUTS tensors of one dtype
   * (any) and rank, equal but along axis, with no gap (null) between them; out: their
   * concatenation along axis. */
  PHX_OP_CONCAT = 58,
  /* phx_slice_params; in: x (any dtype); out: the elements start, start + step, ... (up to
   * end, exclusive) of each dimension, as ONNX's Slice and Python's slicing. An empty
   * result is refused. */
  PHX_OP_SLICE = 59,
  /* phx_axis_params (default axis 0); in: data (any dtype), indices (i32, any rank;
   * negative ones count from the end of the axis); out: data.shape[:axis] +
   * indices.shape + data.shape[axis + 1:] (rank <= PHX_MAX_RANK), data's dtype. An index
   * outside [-n, n) (n the axis's size) cannot be refused before the op runs: its slice
   * of the output is zeros. */
  PHX_OP_GATHER = 60,
  /* phx_reshape_params (required) as the target shape; in: x (any dtype); out: x
   * broadcast with the target, as NumPy broadcasts two shapes (ONNX's Expand: either
   * may have 1s; ranks aligned at the end). */
  PHX_OP_EXPAND = 61,
  /* phx_tile_params (default: all ones, a copy); in: x (any dtype); out: x repeated
   * repeats[d] times along each dimension d. */
  PHX_OP_TILE = 62,
  /* phx_pad_params (default: no padding, a copy); in: x (any dtype); out: x with
   * begin[d] and end[d] elements added before and after each dimension d: the constant
   * value (converted to x's dtype), a reflection of x (pads < the dimension) or x's edge. */
  PHX_OP_PAD = 63,
  /* phx_pool_params (kernel required); in: x [N, C, D1..Dk], k = 1 to 3; out:
   * [N, C, O1..Ok], each the largest value of its window, padding ignored. f32, f16,
   * bf16, i8, i16, i32, u8. */
  PHX_OP_MAX_POOL = 64,
  /* phx_pool_params (kernel required); as max pool, each output the mean of its window
   * (over its elements of x, or with count_include_pad over the window clipped to the
   * padded extent), summed in f32. f32, f16, bf16. */
  PHX_OP_AVG_POOL = 65,
  /* phx_conv_transpose2d_params; NCHW: in: x [N, C_in, H, W], weight
   * [C_in, C_out / groups, KH, KW], optional bias [C_out]; out: [N, C_out, Ho, Wo] with
   * Ho = (H - 1) stride - pad_top - pad_bottom + dilation (KH - 1) + output_padding + 1,
   * Wo likewise: the gradient of conv2d with respect to its input, as ONNX's
   * ConvTranspose. f32, f16, bf16 (x, weight, bias and out alike), f32 accumulation. */
  PHX_OP_CONV_TRANSPOSE2D = 66,
  /* phx_resize_params (required: null is refused); in: x (f32, f16, bf16; rank 1 to 8);
   * out: params.shape, x's dtype: x resampled as ONNX's Resize (opsets 11 to 17) with
   * its nearest or linear mode (N-linear: the weights of every dimension multiplied,
   * rounded to f32, the source coordinate clamped to x's extent). */
  PHX_OP_RESIZE = 67,
  /* ---- Since API 0.3: the activations of mobile networks (ONNX's HardSigmoid and
   * HardSwish). A NaN x gives NaN. */
  /* float, phx_elementwise_params: max(0, min(1, alpha * x + beta)); defaults alpha 0.2,
   * beta 0.5 (ONNX's) */
  PHX_OP_HARD_SIGMOID = 68,
  /* float, no parameters: x * max(0, min(1, x / 6 + 1 / 2)), as ONNX's and PyTorch's */
  PHX_OP_HARD_SWISH = 69,
  /* ---- Since API 0.3: the math of rotary position embeddings and of rounding (ONNX's
   * Sin, Cos and Round). Unary, no parameters; in: x; out: same shape and dtype. */
  PHX_OP_SIN = 70,   /* float: sine of x in radians */
  PHX_OP_COS = 71,   /* float: cosine of x in radians */
  PHX_OP_ROUND = 72, /* float: the nearest integer, halves to the even one (2.5 gives 2) */
  /* ---- Since API 0.3: selection (ONNX's TopK). phx_top_k_params (k must be set); in: x
   * (all); out: values (x's dtype) and indices (i32), each x's shape with k along axis:
   * the k largest elements along axis (the smallest with largest 0), in order from the
   * first picked, and their indices. Equal elements keep their order (the lower index
   * first); a NaN counts as larger than every number, as in argmax. */
  PHX_OP_TOP_K = 73
} phx_op_id;
#define PHX_OP_COUNT 74

/* "matmul", "add", ...; "unknown" otherwise. Static storage. Thread-safe. */
PHX_API const char* phx_op_name(phx_op_id op);

/* The type of one member of an op's parameter struct (phx_param_field). Every type but
 * INT64 is 4 bytes; the enums of this header are 4 bytes too. */
typedef enum phx_param_type {
  PHX_PARAM_INT32 = 1,     /* int32_t (or int) */
  PHX_PARAM_UINT32 = 2,    /* uint32_t */
  PHX_PARAM_INT64 = 3,     /* int64_t */
  PHX_PARAM_FLOAT32 = 4,   /* float */
  PHX_PARAM_BOOL = 5,      /* int: zero or non-zero */
  PHX_PARAM_ENUM = 6,      /* an enum of this header, its values 0 to enum_count - 1 */
  PHX_PARAM_AXES = 7,      /* uint32_t: bit i names dimension i of the first input */
  PHX_PARAM_DIMENSION = 8, /* uint32_t: a dimension of the first input, 0 to rank - 1 */
  PHX_PARAM_LENGTH = 9     /* uint32_t: how many leading entries of the next member hold
                              values (reshape's rank before its shape) */
} phx_param_type;

/* One member of a parameter struct after its struct_size, described as data: enough to
 * fill, copy, print or hash the struct without knowing it (a binding's keyword arguments,
 * a cache key). Travels in arrays: fixed within the major, never appended to. */
typedef struct phx_param_field {
  const char* name; /* the member's name in this header: "transpose_a", "stride" */
  phx_param_type type;
  size_t offset;                 /* offsetof(the struct, the member) */
  size_t count;                  /* 1, or the array's length (stride: 2, perm: PHX_MAX_RANK) */
  const char* const* enum_names; /* ENUM: enum_count names of the values 0, 1, ...
                                    ("none", "relu", "gelu", "silu"); NULL otherwise */
  size_t enum_count;
} phx_param_field;

/* What the library's op table says of an op (since API 0.3): the table that phx_op_run
 * checks every op against (docs/ops.md). For tools and bindings that build ops without
 * knowing each one: a generic op builder, a model importer, the generated docs. */
typedef struct phx_op_info {
  size_t struct_size;
  const char* name;               /* as phx_op_name */
  const char* summary;            /* one line: what the op computes */
  const char* params_struct;      /* "phx_matmul_params"; "" for an op without parameters */
  size_t input_count;             /* the most inputs it takes */
  size_t min_input_count;         /* the fewest: through the last required input */
  const char* const* input_names; /* input_count names: "a", "b", "bias" */
  uint32_t optional_inputs;       /* bit i: input i may be a null tensor */
  size_t output_count;            /* exactly this many outputs */
  const char* const* output_names;
  uint32_t dtype_mask; /* PHX_DTYPE_BIT of each dtype of its first input it is
                          defined for; a device may run fewer (phx_device_supports) */
  /* The parameter struct as data; 0 and NULL for an op without parameters. */
  size_t params_size;       /* sizeof the struct */
  size_t param_field_count; /* its members after struct_size, in order */
  const phx_param_field* param_fields;
  /* params_size bytes (static, as the strings), struct_size set: the parameters a null
   * params pointer stands for (leaky_relu's alpha 0.01, conv2d's stride 1). NULL where the
   * op has parameters but no such struct: it refuses null (reshape, expand, resize), or
   * its default depends on the input (transpose: x's dimensions reversed). */
  const void* default_params;
} phx_op_info;

#define PHX_OP_INFO_INIT \
  { sizeof(phx_op_info), NULL, NULL, NULL, 0, 0, NULL, 0, 0, NULL, 0, 0, 0, NULL, NULL }

/* Fills *out_info (its struct_size set by the caller, e.g. with PHX_OP_INFO_INIT; a
 * smaller one from an older header gets the fields it covers). The strings and arrays
 * are static: valid as long as the library is loaded. Nothing is written on failure.
 * Returns INVALID_ARGUMENT (out_info null, bad struct_size), NOT_FOUND (op is no op of
 * this library: PHX_OP_INVALID, or a value past the last). Thread-safe. */
PHX_API phx_status phx_op_info_get(phx_op_id op, phx_op_info* out_info);

typedef enum phx_activation {
  PHX_ACTIVATION_NONE = 0,
  PHX_ACTIVATION_RELU = 1,
  PHX_ACTIVATION_GELU = 2,
  PHX_ACTIVATION_SILU = 3
} phx_activation;

typedef struct phx_matmul_params {
  size_t struct_size;
  int transpose_a;           /* non-zero: a is stored [..., K, M] */
  int transpose_b;           /* non-zero: b is stored [..., N, K] */
  phx_activation activation; /* applied after the bias */
} phx_matmul_params;
#define PHX_MATMUL_PARAMS_INIT \
  { sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_NONE }

typedef struct phx_softmax_params {
  size_t struct_size;
  int32_t axis; /* negative counts from the end; default -1 */
} phx_softmax_params;
#define PHX_SOFTMAX_PARAMS_INIT \
  { sizeof(phx_softmax_params), -1 }

/* Layer and RMS norm normalize over the last dimension; gamma and beta have its size. */
typedef struct phx_norm_params {
  size_t struct_size;
  float epsilon; /* added to the variance (mean square); default 1e-5 */
} phx_norm_params;
#define PHX_NORM_PARAMS_INIT \
  { sizeof(phx_norm_params), 1e-5f }

typedef struct phx_transpose_params {
  size_t struct_size;
  /* Output dimension i is input dimension perm[i]; the first rank entries must be a
   * permutation of 0..rank-1. */
  uint32_t perm[PHX_MAX_RANK];
} phx_transpose_params;

typedef struct phx_reduce_params {
  size_t struct_size;
  uint32_t axes_mask; /* bit i reduces dimension i; 0 reduces every dimension */
  int keep_dims;      /* non-zero: reduced dimensions stay as 1 */
} phx_reduce_params;
#define PHX_REDUCE_PARAMS_INIT \
  { sizeof(phx_reduce_params), 0, 0 }

typedef enum phx_layout {
  PHX_LAYOUT_NCHW = 0, /* x [N, C, H, W]; weight [C_out, C_in / groups, KH, KW] */
  PHX_LAYOUT_NHWC = 1  /* x [N, H, W, C]; weight [C_out, KH, KW, C_in / groups] */
} phx_layout;

typedef struct phx_conv2d_params {
  size_t struct_size;
  phx_layout layout;
  uint32_t stride[2];   /* height, width; default 1, 1 */
  uint32_t padding[4];  /* top, bottom, left, right; zeros */
  uint32_t dilation[2]; /* height, width; default 1, 1 */
  uint32_t groups;      /* default 1; divides C_in and C_out */
  phx_activation activation;
} phx_conv2d_params;
#define PHX_CONV2D_PARAMS_INIT                                                   \
  {                                                                              \
    sizeof(phx_conv2d_params), PHX_LAYOUT_NCHW, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, \
        PHX_ACTIVATION_NONE                                                      \
  }

/* Attention masks. A query at position i sees the key at position j when the mask
 * allows it; positions are aligned at the end, so that query i is at position
 * i + Skv - Sq (a decoder's new tokens after its cache). */
typedef enum phx_attention_mask {
  PHX_ATTENTION_MASK_NONE = 0,
  PHX_ATTENTION_MASK_CAUSAL = 1,        /* j <= position of i */
  PHX_ATTENTION_MASK_SLIDING_WINDOW = 2 /* causal and j > position of i - window */
} phx_attention_mask;

typedef struct phx_attention_params {
  size_t struct_size;
  float scale; /* applied to q k^T; 0 (the default) means 1 / sqrt(D) */
  phx_attention_mask mask;
  uint32_t window; /* SLIDING_WINDOW: keys seen per query, >= 1 */
} phx_attention_params;
#define PHX_ATTENTION_PARAMS_INIT \
  { sizeof(phx_attention_params), 0.0f, PHX_ATTENTION_MASK_NONE, 0 }

typedef struct phx_rope_params {
  size_t struct_size;
  /* Zero (the default): pair i is features (i, i + R), as GPT-NeoX and Llama rotate;
   * non-zero: features (2i, 2i + 1), as GPT-J does. */
  int interleaved;
} phx_rope_params;
#define PHX_ROPE_PARAMS_INIT \
  { sizeof(phx_rope_params), 0 }

typedef struct phx_quantize_params {
  size_t struct_size;
  /* With a per-channel scale [C]: the axis of x of size C (negative counts from the
   * end). Default 1, as ONNX's QuantizeLinear. Ignored for a per-tensor scale. */
  int32_t axis;
} phx_quantize_params;
#define PHX_QUANTIZE_PARAMS_INIT \
  { sizeof(phx_quantize_params), 1 }

/* Since API 0.3: the parameters of leaky_relu, elu, selu and clip. A null params
 * pointer takes the op's defaults (see phx_op_id); a passed struct gives both values, so
 * start from PHX_ELEMENTWISE_PARAMS_INIT with the op's defaults. Neither may be NaN. */
typedef struct phx_elementwise_params {
  size_t struct_size;
  float alpha;
  float beta; /* selu and clip only; ignored by the others */
} phx_elementwise_params;
#define PHX_ELEMENTWISE_PARAMS_INIT(alpha, beta) \
  { sizeof(phx_elementwise_params), (alpha), (beta) }

/* Since API 0.3: the parameters of argmax. */
typedef struct phx_argmax_params {
  size_t struct_size;
  int32_t axis;          /* negative counts from the end; default 0, as ONNX's ArgMax */
  int keep_dims;         /* non-zero (the default): the axis stays as 1 */
  int select_last_index; /* non-zero: ties give the last index; default 0, the first */
} phx_argmax_params;
#define PHX_ARGMAX_PARAMS_INIT \
  { sizeof(phx_argmax_params), 0, 1, 0 }
/* Since API 0.3: the parameters of top_k. */
typedef struct phx_top_k_params {
  size_t struct_size;
  int32_t axis; /* negative counts from the end; default -1, as ONNX's TopK */
  uint32_t k;   /* 1 to the axis's size; the default, 0, is refused: k must be set */
  int largest;  /* non-zero (the default): the largest elements; zero: the smallest */
} phx_top_k_params;
#define PHX_TOP_K_PARAMS_INIT \
  { sizeof(phx_top_k_params), -1, 0, 1 }
/* ---- Since API 0.3: the parameters of the layout, pooling and transposed-convolution ops */

/* Reshape's and expand's target shape. Reshape: entry 0 copies x's dimension at that
 * index, one entry -1 is inferred. Expand: NumPy broadcasting with x's shape. No default:
 * these ops refuse null parameters. */
typedef struct phx_reshape_params {
  size_t struct_size;
  uint32_t rank; /* <= PHX_MAX_RANK */
  int64_t shape[PHX_MAX_RANK];
} phx_reshape_params;

/* The axis of concat and gather. */
typedef struct phx_axis_params {
  size_t struct_size;
  int32_t axis; /* negative counts from the end; default 0 */
} phx_axis_params;
#define PHX_AXIS_PARAMS_INIT \
  { sizeof(phx_axis_params), 0 }

/* Per dimension d < rank: a step of 0 takes dimension d whole (so a zeroed struct, the
 * default, copies x). Otherwise as ONNX's Slice: a negative start or end counts from the
 * end (adds the dimension), then both are clamped to [0, dim] for a positive step, to
 * [-1, dim - 1] for a negative one; end is exclusive. INT64_MAX and INT64_MIN reach
 * either end. */
typedef struct phx_slice_params {
  size_t struct_size;
  int64_t starts[PHX_MAX_RANK];
  int64_t ends[PHX_MAX_RANK];
  int64_t steps[PHX_MAX_RANK];
} phx_slice_params;
#define PHX_SLICE_PARAMS_INIT                 \
  {                                           \
    sizeof(phx_slice_params), {0}, {0}, { 0 } \
  }

typedef struct phx_tile_params {
  size_t struct_size;
  uint32_t repeats[PHX_MAX_RANK]; /* >= 1 for each dimension of x; default 1 */
} phx_tile_params;
#define PHX_TILE_PARAMS_INIT                            \
  {                                                     \
    sizeof(phx_tile_params), { 1, 1, 1, 1, 1, 1, 1, 1 } \
  }

typedef enum phx_pad_mode {
  PHX_PAD_CONSTANT = 0, /* the padding holds value */
  PHX_PAD_REFLECT = 1,  /* x mirrored about its first and last element (excluded) */
  PHX_PAD_EDGE = 2      /* x's first and last element repeated */
} phx_pad_mode;

typedef struct phx_pad_params {
  size_t struct_size;
  phx_pad_mode mode;
  float value;                  /* CONSTANT: converted to x's dtype as cast converts */
  uint32_t begin[PHX_MAX_RANK]; /* elements added before each dimension of x */
  uint32_t end[PHX_MAX_RANK];   /* and after it; REFLECT needs both < the dimension */
} phx_pad_params;
#define PHX_PAD_PARAMS_INIT                                    \
  {                                                            \
    sizeof(phx_pad_params), PHX_PAD_CONSTANT, 0.0f, {0}, { 0 } \
  }

/* Max and average pooling over the k = rank - 2 spatial dimensions of x [N, C, D1..Dk]
 * (k = 1 to 3; entries past k are ignored). Output size per dimension i, as ONNX's:
 * (D + pad_begin + pad_end - dilation (kernel - 1) - 1) / stride + 1, rounded down, or up
 * with ceil_mode, where a last window that would start in the end padding is dropped
 * (as ONNX and PyTorch do). */
typedef struct phx_pool_params {
  size_t struct_size;
  uint32_t kernel[3];    /* >= 1 for each spatial dimension: required */
  uint32_t stride[3];    /* 0 means 1 */
  uint32_t pad_begin[3]; /* elements of padding before each spatial dimension */
  uint32_t pad_end[3];   /* and after it */
  uint32_t dilation[3];  /* 0 means 1 */
  int ceil_mode;
  /* Average pool: non-zero divides by the window's size clipped to the padded extent of
   * x; zero (the default) by the count of x's elements in the window. */
  int count_include_pad;
} phx_pool_params;
#define PHX_POOL_PARAMS_INIT \
  { sizeof(phx_pool_params), {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, {0, 0, 0}, {1, 1, 1}, 0, 0 }

typedef struct phx_conv_transpose2d_params {
  size_t struct_size;
  uint32_t stride[2];         /* height, width; default 1, 1 */
  uint32_t padding[4];        /* top, bottom, left, right, taken off the output; zeros */
  uint32_t output_padding[2]; /* added at the bottom and right of the output; zeros */
  uint32_t dilation[2];       /* height, width; default 1, 1 */
  uint32_t groups;            /* default 1; divides C_in and C_out */
} phx_conv_transpose2d_params;
#define PHX_CONV_TRANSPOSE2D_PARAMS_INIT \
  { sizeof(phx_conv_transpose2d_params), {1, 1}, {0, 0, 0, 0}, {0, 0}, {1, 1}, 1 }

/* ---- Since API 0.3: resize's parameters, as ONNX's Resize attributes */

typedef enum phx_resize_mode {
  PHX_RESIZE_NEAREST = 0, /* the element of x nearest the source coordinate */
  PHX_RESIZE_LINEAR = 1   /* linear interpolation along every dimension */
} phx_resize_mode;

/* How an output index o of a dimension maps to a source coordinate of x (in double), with
 * in and out the dimension's sizes, s its scale (params.scales, or out / in) and
 * L = s in (ONNX's length_resized; out when the scale is out / in):
 * HALF_PIXEL (o + 0.5) / s - 0.5; ASYMMETRIC o / s; ALIGN_CORNERS o (in - 1) / (L - 1)
 * (0 where L is 1); PYTORCH_HALF_PIXEL as HALF_PIXEL but 0 where L is 1. */
typedef enum phx_resize_coordinates {
  PHX_RESIZE_HALF_PIXEL = 0,
  PHX_RESIZE_ASYMMETRIC = 1,
  PHX_RESIZE_ALIGN_CORNERS = 2,
  PHX_RESIZE_PYTORCH_HALF_PIXEL = 3
} phx_resize_coordinates;

/* How NEAREST rounds the source coordinate to an index of x (then clamped to [0, in - 1]):
 * to the nearest integer, halves down or up, or down or up. */
typedef enum phx_resize_nearest {
  PHX_RESIZE_ROUND_PREFER_FLOOR = 0,
  PHX_RESIZE_ROUND_PREFER_CEIL = 1,
  PHX_RESIZE_FLOOR = 2,
  PHX_RESIZE_CEIL = 3
} phx_resize_nearest;

/* No default: resize refuses null parameters. */
typedef struct phx_resize_params {
  size_t struct_size;
  phx_resize_mode mode;
  phx_resize_coordinates coordinates;
  phx_resize_nearest nearest;  /* NEAREST only */
  uint32_t rank;               /* x's rank */
  int64_t shape[PHX_MAX_RANK]; /* the output's dimensions, each >= 1 */
  float scales[PHX_MAX_RANK];  /* > 0: the scale ONNX's coordinate transform uses for that
                                  dimension; 0: output / input */
} phx_resize_params;

typedef struct phx_op_desc {
  size_t struct_size;
  phx_op_id op;
  /* The op's parameter struct (its struct_size set), or null for the defaults. */
  const void* params;
  const phx_tensor* inputs; /* input_count entries; an optional input may be null */
  size_t input_count;
  const phx_tensor* outputs; /* output_count entries */
  size_t output_count;
} phx_op_desc;

/* The most inputs and outputs of one op (qmatmul and qconv2d: 9 inputs; dynamic
 * quantize: 3 outputs). */
#define PHX_MAX_OP_INPUTS 9
#define PHX_MAX_OP_OUTPUTS 3

/* Checks the op against its rules and submits it to the stream. When this returns OK
 * the op is queued (or already done): *out_ticket, when out_ticket is not null,
 * receives its ticket for phx_stream_wait. The tensors must stay alive until it has
 * finished. Inputs are read and outputs written in stream order.
 * Returns INVALID_ARGUMENT (with the rule broken, e.g. "matmul: K mismatch: a is 3x4,
 * b is 5x2"), UNSUPPORTED (the device does not implement the op for these dtypes),
 * OUT_OF_MEMORY, DEVICE_UNAVAILABLE, PLUGIN_ERROR. Externally synchronized: stream;
 * the tensors follow the rule on tensor contents (several streams may read one input
 * at once). */
PHX_API phx_status phx_op_run(phx_stream stream, const phx_op_desc* desc, uint64_t* out_ticket);

/* Sets *out_supported to 1 if device implements op for some variant whose first input
 * is of dtype, else 0: a coarse question, for listing what a device offers. Whether one
 * exact variant runs (the other inputs' and the outputs' dtypes, the parameters) is
 * phx_device_supports_op's to answer. This is the device's own answer: with CPU
 * fallback on (see PHX_CONTEXT_FALLBACK_CPU) phx_op_run may still run an op it does
 * not support.
 * Returns INVALID_ARGUMENT (unknown op or dtype), NOT_FOUND. Thread-safe. */
PHX_API phx_status phx_device_supports(phx_context context, size_t device, phx_op_id op,
                                       phx_dtype dtype, int* out_supported);

/* An op without its tensors, as phx_device_supports_op asks about it: the op, its
 * parameters and the dtypes its tensors would have. Since API 0.3. */
typedef struct phx_op_variant {
  size_t struct_size;
  phx_op_id op;
  /* The op's parameter struct (its struct_size set), or null for the defaults. */
  const void* params;
  /* input_count entries, in the op's input order; PHX_DTYPE_INVALID for an optional
   * input left out (as a null tensor in phx_op_desc). */
  const phx_dtype* input_dtypes;
  size_t input_count;
  const phx_dtype* output_dtypes; /* output_count entries */
  size_t output_count;
} phx_op_variant;

/* Sets *out_supported to 1 if device runs the op variant, else 0. The answer is the one
 * phx_op_run then gives: for tensors of these dtypes, in shapes the op's rules accept,
 * on a context without CPU fallback, phx_op_run succeeds when this says 1 (a device may
 * still refuse a tensor too large for it, which shapes decide) and refuses the op when
 * it says 0: UNSUPPORTED, or INVALID_ARGUMENT for a variant the op's rules refuse (say,
 * matmul of f32 by f16), which is answered 0 too. A plugin of plugin ABI 1.1 or older
 * answers for the first input's dtype only. variant, its parameter struct and its dtype
 * arrays are read during the call only; none is kept.
 * Returns INVALID_ARGUMENT (null variant or out_supported, bad struct_size, unknown op
 * or dtype, no inputs or outputs or more than PHX_MAX_OP_INPUTS or PHX_MAX_OP_OUTPUTS,
 * null dtype arrays, a bad parameter struct), NOT_FOUND (no such device), PLUGIN_ERROR.
 * Thread-safe. Since API 0.3. */
PHX_API phx_status phx_device_supports_op(phx_context context, size_t device,
                                          const phx_op_variant* variant, int* out_supported);

/* ---- Profiling -------------------------------------------------------------------------
 * With PHX_CONTEXT_PROFILE (or PHX_PROFILE=1), every stream keeps a record per op.
 */

/* A figure a plugin adds to a record, e.g. {"gpu_time_ns", 1830.0}. */
typedef struct phx_metric {
  const char* name;
  double value;
} phx_metric;

typedef struct phx_profile_record {
  size_t struct_size;
  uint64_t ticket;
  phx_op_id op;
  const char* signature;     /* dtypes and shapes, e.g. "f32[64x32], f32[32x16] -> f32[64x16]" */
  uint64_t host_time_ns;     /* from submission until the plugin returned */
  const phx_metric* metrics; /* metric_count entries from the plugin; may be null */
  size_t metric_count;
  /* Since API 0.3: the graph node the op ran for, when an executable ran it (its name,
   * phx_graph_node_desc); "" for an op of phx_op_run. */
  const char* node;
} phx_profile_record;

#define PHX_PROFILE_RECORD_INIT \
  { sizeof(phx_profile_record), 0, PHX_OP_INVALID, NULL, 0, NULL, 0, NULL }

/* Waits for the stream's work, then sets *out_count to its number of records.
 * Returns INVALID_ARGUMENT. Externally synchronized: stream. */
PHX_API phx_status phx_profile_count(phx_stream stream, size_t* out_count);

/* Fills *out_record with record index (0 is the oldest). The strings and metrics are
 * owned by the stream and valid until phx_profile_clear or the stream's destruction.
 * Returns INVALID_ARGUMENT, NOT_FOUND. Externally synchronized: stream. */
PHX_API phx_status phx_profile_get(phx_stream stream, size_t index, phx_profile_record* out_record);

/* Drops the stream's records. Returns INVALID_ARGUMENT. Externally synchronized: stream. */
PHX_API phx_status phx_profile_clear(phx_stream stream);

/* ---- Device statistics ------------------------------------------------------------------ */

/* A device's running statistics, as its plugin defines them (e.g. a simulator's
 * "compile_cache_hits" or "modelled_cycles_total"), followed by the runtime's own for
 * the device: "fallback_ops", the ops of this device that ran on the CPU device. Copies up to
 * capacity metrics into out_metrics (which may be null when capacity is 0) and sets *out_count to
 * the number the device has, which may exceed capacity: call once with capacity 0 to size the
 * array. Metric names have static storage in the plugin and live as long as the context. A device
 * whose plugin keeps no statistics has only the runtime's. Returns INVALID_ARGUMENT, NOT_FOUND,
 * PLUGIN_ERROR. Thread-safe. */
PHX_API phx_status phx_device_stats(phx_context context, size_t device, phx_metric* out_metrics,
                                    size_t capacity, size_t* out_count);

/* ---- Memory --------------------------------------------------------------------------- */

typedef struct phx_memory_stats {
  size_t struct_size;
  uint64_t bytes_in_use;      /* held by live tensors */
  uint64_t peak_bytes_in_use; /* since the device was initialized */
  uint64_t bytes_cached;      /* freed, kept in the plugin's pools for reuse */
  uint64_t limit_bytes;       /* allocations past it fail; the device's capacity if unset */
  uint64_t allocation_count;  /* live allocations */
} phx_memory_stats;

#define PHX_MEMORY_STATS_INIT \
  { sizeof(phx_memory_stats), 0, 0, 0, 0, 0 }

/* Fills *out_stats for device. Returns INVALID_ARGUMENT, NOT_FOUND. Thread-safe. */
PHX_API phx_status phx_memory_stats_get(phx_context context, size_t device,
                                        phx_memory_stats* out_stats);

/* Limits the bytes that tensors on device may hold together; 0 removes the limit.
 * Later allocations past it fail with OUT_OF_MEMORY; tensors already alive stay.
 * Returns INVALID_ARGUMENT, NOT_FOUND, UNSUPPORTED (the plugin offers no limit).
 * Thread-safe. */
PHX_API phx_status phx_memory_set_limit(phx_context context, size_t device, uint64_t limit_bytes);

/* Returns the memory cached in device's pools to the system. Tensors alive are not
 * touched. Returns INVALID_ARGUMENT, NOT_FOUND. Thread-safe. */
PHX_API phx_status phx_memory_release_cached(phx_context context, size_t device);

/* ---- Calibration -----------------------------------------------------------------------
 * A calibrator watches sample tensors (activations of a few representative batches) and
 * turns the ranges it saw into quantization parameters for quantize, qmatmul and
 * qconv2d. It computes on the host; tensors of any device may be observed. Since API 0.2.
 */

typedef struct phx_calibrator_s* phx_calibrator;

typedef enum phx_calibration_method {
  /* The smallest and largest value seen (TFLite, ONNX Runtime and PyTorch's default). */
  PHX_CALIBRATION_MINMAX = 0,
  /* The given percentile of the values seen (of |x| when symmetric, of each tail when
   * not), from a histogram: outliers no longer stretch the range. */
  PHX_CALIBRATION_PERCENTILE = 1,
  /* Per observed tensor its min and max, averaged over tensors with an exponential
   * moving average (PyTorch's MovingAverageMinMaxObserver). */
  PHX_CALIBRATION_MOVING_AVERAGE = 2
} phx_calibration_method;

typedef struct phx_calibration_options {
  size_t struct_size;
  phx_calibration_method method;
  phx_dtype dtype; /* the quantized dtype: i8 (default), u8 or i16 */
  /* Non-zero: the range is symmetric about zero and the zero point 0 (u8: 128). */
  int symmetric;
  /* Negative: one scale for the whole tensor. Otherwise the axis of the observed tensors
   * along which each channel gets its own scale and zero point. */
  int32_t channel_axis;
  double percentile;         /* PERCENTILE: in (0, 100], default 99.99 */
  double averaging_constant; /* MOVING_AVERAGE: weight of the newest tensor, default 0.01 */
} phx_calibration_options;
#define PHX_CALIBRATION_OPTIONS_INIT \
  { sizeof(phx_calibration_options), PHX_CALIBRATION_MINMAX, PHX_DTYPE_I8, 0, -1, 99.99, 0.01 }

/* Creates a calibrator in context; options may be null for the defaults. The caller
 * owns *out_calibrator and destroys it with phx_calibrator_destroy (or the context's
 * destruction does). Returns INVALID_ARGUMENT (a dtype other than i8, u8, i16, an unknown
 * method, a percentile outside (0, 100], an averaging constant outside (0, 1]),
 * OUT_OF_MEMORY. Thread-safe. */
PHX_API phx_status phx_calibrator_create(phx_context context,
                                         const phx_calibration_options* options,
                                         phx_calibrator* out_calibrator);

/* Destroys the calibrator. Returns INVALID_ARGUMENT.
 * Externally synchronized: calibrator (no other call may name it at the same time). */
PHX_API phx_status phx_calibrator_destroy(phx_calibrator calibrator);

/* Adds the values of tensor (f32, on any device of the calibrator's context) to what
 * the calibrator has seen. Blocking: waits for the queued work that writes the tensor.
 * Non-finite values are ignored. With a channel axis, every tensor must have the same
 * size along it. Returns INVALID_ARGUMENT (not f32, a foreign tensor, a channel axis
 * past its rank or of another size than before), OUT_OF_MEMORY.
 * Externally synchronized: calibrator; the tensor is read as by phx_tensor_download
 * (transfers that name it must not overlap). */
PHX_API phx_status phx_calibrator_observe(phx_calibrator calibrator, phx_tensor tensor);

/* The quantization parameters for what was observed: one scale and zero point per
 * channel (one per tensor without a channel axis). Copies up to capacity of them into
 * out_scales and out_zero_points (either may be null when capacity is 0) and sets
 * *out_count to how many there are: call once with capacity 0 to size the arrays. The
 * range always contains zero; a zero range gives scale 1. Returns INVALID_ARGUMENT,
 * NOT_FOUND (nothing observed yet). Externally synchronized: calibrator. */
PHX_API phx_status phx_calibrator_compute(phx_calibrator calibrator, float* out_scales,
                                          int32_t* out_zero_points, size_t capacity,
                                          size_t* out_count);

/* ---- Traces (since API 0.3) ------------------------------------------------------------
 * A trace is a timeline of what a context did, written to a file in the Chrome Trace
 * Event Format that Perfetto (ui.perfetto.dev), chrome://tracing and speedscope open: a
 * process per device with a track per stream, where every op is a span with its
 * signature, FLOPs, bytes and plugin metrics; a host track with the calls that block
 * (waits, uploads, downloads, copies) and graph compiles; executable runs with their nodes
 * nested; the bytes each device holds over time. docs/tracing.md lists every event.
 * PHX_TRACE=<path> in the environment begins one when a context is created (a path that
 * cannot be written is a logged warning; the context is created all the same).
 * The events are streamed to the file as a JSON array: memory stays bounded, the file is
 * complete after phx_trace_end, phx_context_destroy or a normal exit, and a process killed
 * meanwhile leaves the array without its closing bracket, which readers of the format
 * accept, holding every event up to its last phx_stream_synchronize or download (the
 * writer also hands its events to the file every 32 KiB, and every 100 ms while events
 * come).
 * Off, tracing costs an op one predictable branch.
 */

/* Begins writing context's trace to the file at path (created, or truncated): the events
 * of the work submitted and the calls made from now on. "%p" in path is
 * replaced by the process id, so that processes started alike (MPI ranks) write files of
 * their own. path is read during the call only. The trace ends with phx_trace_end, the
 * context's destruction or the program's normal exit.
 * Returns INVALID_ARGUMENT (null or empty path, a trace already being written for
 * context, a file that cannot be opened for writing: the message says why). Thread-safe. */
PHX_API phx_status phx_trace_begin(phx_context context, const char* path);

/* Waits for the work queued on every stream of context (its events belong to the trace),
 * then writes the rest of the trace and closes the file: complete JSON from then on.
 * Returns INVALID_ARGUMENT (no trace is being written for context), and what a wait
 * returns (DEVICE_UNAVAILABLE, or an op's error: the trace then stays open). Thread-safe. */
PHX_API phx_status phx_trace_end(phx_context context);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* Graphs and executables, events and communicators: one include still gives the whole API. */
#include "comm.h"
#include "graph.h"

#endif /* PHYNEXUS_PHYNEXUS_H */
