/*
 * A complete, minimal Phynexus device plugin in C99: a starting point for your own.
 *
 * It offers one device, "Example device", of type CPU. Its buffers are plain host
 * memory, its streams run every op at once on the calling thread (synchronous), and it
 * implements two ops, PHX_OP_ADD and PHX_OP_RELU, on f32 only. It tracks its memory so
 * that phx_memory_stats_get has something to say, and adds a metric to profile records.
 *
 * The only header it needs is <phynexus/plugin.h>; it does not link libphynexus. The
 * host reaches it through the one exported symbol, phx_plugin_entry, at the bottom of
 * this file. docs/plugin-guide.md explains every rule this file follows.
 */
#define _POSIX_C_SOURCE 200112L /* posix_memalign */

#include <phynexus/plugin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLE_PLUGIN_VERSION "1.0.0"

/* The memory the device claims to have. A real device reports its own; here it is a
 * budget, so that allocations past it fail with OUT_OF_MEMORY as the contract asks. */
#define EXAMPLE_MEMORY_BYTES (UINT64_C(1) << 30)

/* buffer_allocate must align to at least 64 bytes. */
#define EXAMPLE_BUFFER_ALIGNMENT 64

/* Whether a struct the host filled is large enough to hold field: an older host sends
 * a smaller struct, and the fields it lacks must be taken as their defaults. */
#define EXAMPLE_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((const type*)0)->field))

/* ---- The plugin's objects: opaque pointers to the host ------------------------------ */

typedef struct example_plugin {
  const phx_plugin_host* host; /* lives until shutdown returns */
  /* The host may allocate and free buffers from several threads at once. */
  pthread_mutex_t memory_lock;
  uint64_t bytes_in_use;
  uint64_t peak_bytes_in_use;
  uint64_t allocation_count;
} example_plugin;

typedef struct example_buffer {
  uint64_t size;
  unsigned char* data;
} example_buffer;

typedef struct example_stream {
  uint64_t last_ticket; /* every op has finished when submit returns */
} example_stream;

/* ---- Helpers ------------------------------------------------------------------------- */

/* Describes a failure to the host (which copies the message) and returns status. */
static phx_status fail(const example_plugin* plugin, phx_status status, const char* message) {
  plugin->host->set_error(plugin->host->host_data, message);
  return status;
}

static uint64_t element_count(const phx_plugin_tensor* t) {
  uint64_t count = 1;
  for (uint32_t d = 0; d < t->rank; ++d) count *= (uint64_t)t->shape[d];
  return count;
}

static float* tensor_data(const phx_plugin_tensor* t) {
  example_buffer* buffer = (example_buffer*)t->buffer;
  return (float*)(void*)(buffer->data + t->offset);
}

/* ---- Lifetime ------------------------------------------------------------------------ */

static phx_status example_initialize(const phx_plugin_host* host, void** out_plugin) {
  example_plugin* plugin = (example_plugin*)calloc(1, sizeof *plugin);
  if (plugin == NULL) return PHX_STATUS_OUT_OF_MEMORY;
  plugin->host = host;
  if (pthread_mutex_init(&plugin->memory_lock, NULL) != 0) {
    free(plugin);
    return PHX_STATUS_INTERNAL;
  }
  /* A plugin that computes with host threads would start them here, as many as
   * host->num_threads asks (when EXAMPLE_HAS_FIELD(host, phx_plugin_host, num_threads)),
   * and join them in shutdown. This one runs everything on the caller's thread. */
  *out_plugin = plugin;
  return PHX_STATUS_OK;
}

static void example_shutdown(void* plugin_handle) {
  example_plugin* plugin = (example_plugin*)plugin_handle;
  pthread_mutex_destroy(&plugin->memory_lock);
  free(plugin);
}

/* ---- Devices ------------------------------------------------------------------------- */

static phx_status example_device_count(void* plugin_handle, uint32_t* out_count) {
  (void)plugin_handle;
  *out_count = 1;
  return PHX_STATUS_OK;
}

static phx_status example_device_info(void* plugin_handle, uint32_t device,
                                      phx_plugin_device_info* out_info) {
  example_plugin* plugin = (example_plugin*)plugin_handle;
  (void)device; /* the host only passes indices below device_count: always 0 here */
  static const phx_property properties[] = {{"memory", "host"}, {"execution", "synchronous"}};

  pthread_mutex_lock(&plugin->memory_lock);
  uint64_t in_use = plugin->bytes_in_use;
  pthread_mutex_unlock(&plugin->memory_lock);

  phx_plugin_device_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  info.type = PHX_DEVICE_CPU;
  info.name = "Example device";
  info.vendor = "Phynexus examples";
  info.memory_total_bytes = EXAMPLE_MEMORY_BYTES;
  info.memory_available_bytes = EXAMPLE_MEMORY_BYTES - in_use;
  info.compute_units = 1;
  /* Buffers are bytes, so the device can hold (upload, download, copy) every dtype,
   * even though its ops compute on f32 alone (op_supported says which). */
  info.dtype_mask = 0;
  for (int dtype = PHX_DTYPE_F32; dtype < PHX_DTYPE_COUNT; ++dtype)
    info.dtype_mask |= PHX_DTYPE_BIT(dtype);
  info.properties = properties;
  info.property_count = sizeof properties / sizeof properties[0];
  phx_plugin_write_struct(out_info, &info, sizeof info);
  return PHX_STATUS_OK;
}

static phx_status example_op_supported(void* plugin_handle, uint32_t device, phx_op_id op,
                                       phx_dtype dtype, int* out_supported) {
  (void)plugin_handle;
  (void)device;
  /* An op this plugin does not know (even one added by a later ABI) is simply 0. */
  *out_supported = (op == PHX_OP_ADD || op == PHX_OP_RELU) && dtype == PHX_DTYPE_F32;
  return PHX_STATUS_OK;
}

/* ---- Memory -------------------------------------------------------------------------- */

static phx_status example_buffer_allocate(void* plugin_handle, uint32_t device, uint64_t size,
                                          void** out_buffer) {
  example_plugin* plugin = (example_plugin*)plugin_handle;
  (void)device;

  /* Reserve the bytes first, so that two threads cannot both pass the budget check. */
  pthread_mutex_lock(&plugin->memory_lock);
  int fits = size <= EXAMPLE_MEMORY_BYTES - plugin->bytes_in_use;
  if (fits) {
    plugin->bytes_in_use += size;
    if (plugin->bytes_in_use > plugin->peak_bytes_in_use)
      plugin->peak_bytes_in_use = plugin->bytes_in_use;
    plugin->allocation_count += 1;
  }
  pthread_mutex_unlock(&plugin->memory_lock);
  if (!fits) {
    char message[160];
    snprintf(message, sizeof message,
             "cannot allocate %llu bytes: the device has %llu bytes in all",
             (unsigned long long)size, (unsigned long long)EXAMPLE_MEMORY_BYTES);
    return fail(plugin, PHX_STATUS_OUT_OF_MEMORY, message);
  }

  example_buffer* buffer = (example_buffer*)malloc(sizeof *buffer);
  void* data = NULL;
  if (buffer == NULL || posix_memalign(&data, EXAMPLE_BUFFER_ALIGNMENT, (size_t)size) != 0) {
    free(buffer);
    pthread_mutex_lock(&plugin->memory_lock);
    plugin->bytes_in_use -= size;
    plugin->allocation_count -= 1;
    pthread_mutex_unlock(&plugin->memory_lock);
    return fail(plugin, PHX_STATUS_OUT_OF_MEMORY, "host memory exhausted");
  }
  buffer->size = size;
  buffer->data = (unsigned char*)data;
  *out_buffer = buffer;
  return PHX_STATUS_OK;
}

static void example_buffer_free(void* plugin_handle, void* buffer_handle) {
  example_plugin* plugin = (example_plugin*)plugin_handle;
  example_buffer* buffer = (example_buffer*)buffer_handle;
  pthread_mutex_lock(&plugin->memory_lock);
  plugin->bytes_in_use -= buffer->size;
  plugin->allocation_count -= 1;
  pthread_mutex_unlock(&plugin->memory_lock);
  free(buffer->data);
  free(buffer);
}

/* The host checked that [offset, offset + size) lies inside the buffer. */
static phx_status example_buffer_write(void* plugin_handle, void* buffer_handle, uint64_t offset,
                                       const void* src, uint64_t size) {
  (void)plugin_handle;
  example_buffer* buffer = (example_buffer*)buffer_handle;
  memcpy(buffer->data + offset, src, (size_t)size);
  return PHX_STATUS_OK;
}

static phx_status example_buffer_read(void* plugin_handle, void* buffer_handle, uint64_t offset,
                                      void* dst, uint64_t size) {
  (void)plugin_handle;
  const example_buffer* buffer = (const example_buffer*)buffer_handle;
  memcpy(dst, buffer->data + offset, (size_t)size);
  return PHX_STATUS_OK;
}

static phx_status example_memory_stats(void* plugin_handle, uint32_t device,
                                       phx_memory_stats* out_stats) {
  example_plugin* plugin = (example_plugin*)plugin_handle;
  (void)device;
  phx_memory_stats stats;
  memset(&stats, 0, sizeof stats);
  stats.struct_size = sizeof stats;
  pthread_mutex_lock(&plugin->memory_lock);
  stats.bytes_in_use = plugin->bytes_in_use;
  stats.peak_bytes_in_use = plugin->peak_bytes_in_use;
  stats.allocation_count = plugin->allocation_count;
  pthread_mutex_unlock(&plugin->memory_lock);
  stats.bytes_cached = 0; /* every free goes straight back to the system */
  stats.limit_bytes = EXAMPLE_MEMORY_BYTES;
  phx_plugin_write_struct(out_stats, &stats, sizeof stats);
  return PHX_STATUS_OK;
}

/* ---- Ops ----------------------------------------------------------------------------- */

/* out = a + b with NumPy broadcasting: shapes are aligned at their last dimension, and
 * a dimension of 1 (or a missing leading one) repeats. The host has checked that the
 * shapes broadcast to out's. */
static void add_f32(const phx_plugin_tensor* a, const phx_plugin_tensor* b,
                    const phx_plugin_tensor* out) {
  /* Element strides of a and b per output dimension; 0 where the input repeats. */
  uint64_t stride_a[PHX_MAX_RANK], stride_b[PHX_MAX_RANK];
  uint64_t step_a = 1, step_b = 1;
  for (uint32_t d = out->rank; d-- > 0;) {
    uint32_t from_end = out->rank - 1 - d;
    int64_t dim_a = from_end < a->rank ? a->shape[a->rank - 1 - from_end] : 1;
    int64_t dim_b = from_end < b->rank ? b->shape[b->rank - 1 - from_end] : 1;
    stride_a[d] = dim_a == 1 ? 0 : step_a;
    stride_b[d] = dim_b == 1 ? 0 : step_b;
    step_a *= (uint64_t)dim_a;
    step_b *= (uint64_t)dim_b;
  }

  const float* x = tensor_data(a);
  const float* y = tensor_data(b);
  float* z = tensor_data(out);
  int64_t index[PHX_MAX_RANK] = {0}; /* the output coordinates of element i */
  uint64_t offset_a = 0, offset_b = 0;
  uint64_t count = element_count(out);
  for (uint64_t i = 0; i < count; ++i) {
    z[i] = x[offset_a] + y[offset_b];
    /* Advance the coordinates like an odometer, last dimension fastest. */
    for (uint32_t d = out->rank; d-- > 0;) {
      offset_a += stride_a[d];
      offset_b += stride_b[d];
      if (++index[d] < out->shape[d]) break;
      offset_a -= stride_a[d] * (uint64_t)out->shape[d];
      offset_b -= stride_b[d] * (uint64_t)out->shape[d];
      index[d] = 0;
    }
  }
}

static void relu_f32(const phx_plugin_tensor* x, const phx_plugin_tensor* out) {
  const float* in = tensor_data(x);
  float* result = tensor_data(out);
  uint64_t count = element_count(out);
  for (uint64_t i = 0; i < count; ++i) result[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

static phx_status example_stream_create(void* plugin_handle, uint32_t device, void** out_stream) {
  example_plugin* plugin = (example_plugin*)plugin_handle;
  (void)device;
  example_stream* stream = (example_stream*)calloc(1, sizeof *stream);
  if (stream == NULL) return fail(plugin, PHX_STATUS_OUT_OF_MEMORY, "no memory for a stream");
  *out_stream = stream;
  return PHX_STATUS_OK;
}

static void example_stream_destroy(void* plugin_handle, void* stream) {
  (void)plugin_handle;
  free(stream);
}

/* Runs the op at once: when this returns, it has finished. The host serializes calls on
 * one stream, so the stream needs no lock. */
static phx_status example_stream_submit(void* plugin_handle, void* stream_handle,
                                        const phx_plugin_op* op, uint64_t* out_ticket) {
  example_plugin* plugin = (example_plugin*)plugin_handle;
  example_stream* stream = (example_stream*)stream_handle;

  /* The host checked shapes and dtypes against the op's rules, and submits only what
   * op_supported claimed: add or relu with an f32 first input, which the rules make f32
   * throughout. The last branch is how a plugin refuses a variant of a claimed op that
   * op_supported cannot tell apart (another input's dtype, a parameter): UNSUPPORTED,
   * with a message that names it. */
  if (op->op == PHX_OP_ADD && op->inputs[0].dtype == PHX_DTYPE_F32) {
    add_f32(&op->inputs[0], &op->inputs[1], &op->outputs[0]);
  } else if (op->op == PHX_OP_RELU && op->inputs[0].dtype == PHX_DTYPE_F32) {
    relu_f32(&op->inputs[0], &op->outputs[0]);
  } else {
    return fail(plugin, PHX_STATUS_UNSUPPORTED, "only add and relu on f32");
  }

  /* Profile records are on (profile not null): leave a figure of our own in the record.
   * Metric names must have static storage. */
  phx_plugin_profile* profile = op->profile;
  if (profile != NULL && EXAMPLE_HAS_FIELD(profile, phx_plugin_profile, metric_count) &&
      profile->metric_count < PHX_PLUGIN_MAX_METRICS) {
    phx_metric* metric = &profile->metrics[profile->metric_count++];
    metric->name = "elements";
    metric->value = (double)element_count(&op->outputs[0]);
  }

  stream->last_ticket += 1;
  *out_ticket = stream->last_ticket;
  return PHX_STATUS_OK;
}

/* Every op finished inside submit, so there is never anything to wait for, and no
 * asynchronous error to report. */
static phx_status example_stream_wait(void* plugin_handle, void* stream, uint64_t ticket) {
  (void)plugin_handle;
  (void)stream;
  (void)ticket;
  return PHX_STATUS_OK;
}

static phx_status example_stream_completed(void* plugin_handle, void* stream_handle,
                                           uint64_t* out_ticket) {
  (void)plugin_handle;
  *out_ticket = ((const example_stream*)stream_handle)->last_ticket;
  return PHX_STATUS_OK;
}

/* ---- The function table and the entry ------------------------------------------------ */

static const phx_plugin_api example_api = {
    .struct_size = sizeof(phx_plugin_api),
    /* The ABI this table implements. Claim the oldest minor whose features you use,
     * not the header's PHX_PLUGIN_ABI_MINOR: an older host then still loads you. */
    .abi_major = 1,
    .abi_minor = 0,
    .name = "example", /* unique among plugins: a second "example" found later is shadowed */
    .version = EXAMPLE_PLUGIN_VERSION,
    .initialize = example_initialize,
    .shutdown = example_shutdown,
    .device_count = example_device_count,
    .device_info = example_device_info,
    .op_supported = example_op_supported,
    .buffer_allocate = example_buffer_allocate,
    .buffer_free = example_buffer_free,
    .buffer_write = example_buffer_write,
    .buffer_read = example_buffer_read,
    .stream_create = example_stream_create,
    .stream_destroy = example_stream_destroy,
    .stream_submit = example_stream_submit,
    .stream_wait = example_stream_wait,
    .stream_completed = example_stream_completed,
    .memory_stats = example_memory_stats,
    /* The optional entries stay null: the host answers phx_memory_set_limit with
     * UNSUPPORTED, has nothing to release, copies between buffers through host memory,
     * and gives phx_device_stats only its own figures. */
    .memory_set_limit = NULL,
    .memory_release_cached = NULL,
    .buffer_copy = NULL,
    .device_stats = NULL,
};

/* The one exported symbol. It hands over the table and nothing else: it must not call
 * the host, and it leaves the version check to the host, whose message then names both
 * versions. A plugin that needs services of a later minor would check
 * host->abi_minor here and return PHX_STATUS_UNSUPPORTED when the host is too old. */
PHX_PLUGIN_EXPORT phx_status phx_plugin_entry(const phx_plugin_host* host,
                                              const phx_plugin_api** out_api) {
  (void)host;
  *out_api = &example_api;
  return PHX_STATUS_OK;
}
