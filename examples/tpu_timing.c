/*
 * tpu_timing: how long a TPU would take, and why. Runs matmuls of a few shapes on every
 * device of type tpu (the tpu-sim plugin; PHX_TPU_SIM chooses the chip and the timing
 * mode) with profiling on, and prints what the simulator's timing model reports per op:
 * MXU cycles, utilization, mapping efficiency, HBM bytes, the estimated time and
 * whether the op was compute- or memory-bound.
 *
 * Shows profiling: a context flag turns records on, and each record carries the
 * plugin's own metrics next to the op's signature.
 */
#include <phynexus/phynexus.h>
#include <stdio.h>
#include <string.h>

/* M, K, N: a square product, shapes that are not multiples of the 128-wide array, a
 * matrix-vector product, and a short, wide one. */
static const int64_t kShapes[][3] = {
    {128, 128, 128}, {1024, 1024, 1024}, {100, 200, 300}, {1, 4096, 4096}, {512, 256, 1},
};
#define SHAPE_COUNT (sizeof kShapes / sizeof kShapes[0])

static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "tpu_timing: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* The value of metric name in record, or -1 when the plugin did not give it. */
static double metric(const phx_profile_record* record, const char* name) {
  for (size_t i = 0; i < record->metric_count; ++i)
    if (strcmp(record->metrics[i].name, name) == 0) return record->metrics[i].value;
  return -1.0;
}

/* Submits one bf16 matmul per shape on device's stream (inputs left uninitialized: only
 * the timing is of interest here). 0 on success. */
static int run_shapes(phx_context context, size_t device, phx_stream stream,
                      phx_tensor tensors[][3]) {
  for (size_t s = 0; s < SHAPE_COUNT; ++s) {
    const int64_t m = kShapes[s][0], k = kShapes[s][1], n = kShapes[s][2];
    const int64_t a_shape[2] = {m, k}, b_shape[2] = {k, n}, c_shape[2] = {m, n};
    if (failed("phx_tensor_create",
               phx_tensor_create(context, device, PHX_DTYPE_BF16, 2, a_shape, &tensors[s][0])) ||
        failed("phx_tensor_create",
               phx_tensor_create(context, device, PHX_DTYPE_BF16, 2, b_shape, &tensors[s][1])) ||
        failed("phx_tensor_create",
               phx_tensor_create(context, device, PHX_DTYPE_F32, 2, c_shape, &tensors[s][2])))
      return 1;
    const phx_op_desc matmul = {
        sizeof matmul, PHX_OP_MATMUL, NULL, tensors[s], 2, &tensors[s][2], 1};
    if (failed("phx_op_run", phx_op_run(stream, &matmul, NULL))) return 1;
  }
  return 0;
}

static int report(size_t device, phx_stream stream) {
  size_t count = 0;
  if (failed("phx_profile_count", phx_profile_count(stream, &count))) return 1;
  printf("device %zu:\n  %-52s %10s %6s %7s %10s %12s %s\n", device, "op", "mxu_cycles", "util",
         "mapping", "hbm_bytes", "estimated_ns", "bound");
  for (size_t i = 0; i < count; ++i) {
    phx_profile_record record = PHX_PROFILE_RECORD_INIT;
    if (failed("phx_profile_get", phx_profile_get(stream, i, &record))) return 1;
    printf("  %-52s %10.0f %6.3f %7.3f %10.0f %12.1f %s\n", record.signature,
           metric(&record, "mxu_cycles"), metric(&record, "mxu_utilization"),
           metric(&record, "mapping_efficiency"), metric(&record, "hbm_bytes"),
           metric(&record, "estimated_time_ns"),
           metric(&record, "memory_bound") > 0.5 ? "memory" : "compute");
  }
  return 0;
}

int main(void) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.flags = PHX_CONTEXT_PROFILE;
  phx_context context = NULL;
  if (failed("phx_context_create", phx_context_create(&options, &context))) return 1;

  int exit_code = 0;
  size_t device_count = 0, tpus = 0;
  if (failed("phx_device_count", phx_device_count(context, &device_count))) exit_code = 1;
  for (size_t d = 0; d < device_count && exit_code == 0; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (failed("phx_device_get", phx_device_get(context, d, &info))) {
      exit_code = 1;
      break;
    }
    if (info.type != PHX_DEVICE_TPU) continue;
    ++tpus;
    printf("%s\n", info.name);
    phx_stream stream = NULL;
    phx_tensor tensors[SHAPE_COUNT][3] = {{NULL}};
    if (failed("phx_stream_create", phx_stream_create(context, d, &stream)) ||
        run_shapes(context, d, stream, tensors) || report(d, stream))
      exit_code = 1;
    /* Destroying the context frees the stream and the tensors too. */
  }
  if (exit_code == 0 && tpus == 0) printf("no tpu device (is the tpu-sim plugin installed?)\n");
  if (failed("phx_context_destroy", phx_context_destroy(context))) exit_code = 1;
  return exit_code;
}
