/*
 * A program that uses an installed Phynexus, built twice by the install test: once with
 * find_package(Phynexus) and once with pkg-config. It finds the "Example device" of the
 * out-of-tree example plugin (on PHX_ADD_PLUGIN_PATH), runs ADD with a broadcast and
 * RELU on it, and checks the results and the device's memory stats.
 */
#include <phynexus/phynexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Any failure ends the program: it is a test, the process exit frees everything. */
static void check(phx_status status, const char* what) {
  if (status != PHX_STATUS_OK) {
    fprintf(stderr, "consumer: %s: %s: %s\n", what, phx_status_name(status), phx_last_error());
    exit(1);
  }
}

static phx_tensor make_tensor(phx_context context, size_t device, size_t rank, const int64_t* shape,
                              const float* values, size_t count) {
  phx_tensor tensor = NULL;
  check(phx_tensor_create(context, device, PHX_DTYPE_F32, rank, shape, &tensor), "tensor_create");
  if (values != NULL)
    check(phx_tensor_upload(tensor, 0, values, count * sizeof(float)), "tensor_upload");
  return tensor;
}

static void run_op(phx_stream stream, phx_op_id op, const phx_tensor* inputs, size_t input_count,
                   phx_tensor output) {
  phx_op_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.op = op;
  desc.inputs = inputs;
  desc.input_count = input_count;
  desc.outputs = &output;
  desc.output_count = 1;
  uint64_t ticket = 0;
  check(phx_op_run(stream, &desc, &ticket), phx_op_name(op));
  check(phx_stream_wait(stream, ticket), "stream_wait");
}

static int expect_values(const char* what, phx_tensor tensor, const float* expected, size_t count) {
  float actual[16];
  check(phx_tensor_download(tensor, 0, actual, count * sizeof(float)), "tensor_download");
  for (size_t i = 0; i < count; ++i) {
    if (actual[i] != expected[i]) {
      fprintf(stderr, "consumer: %s: element %zu is %g, expected %g\n", what, i, actual[i],
              expected[i]);
      return 0;
    }
  }
  return 1;
}

int main(void) {
  if (phx_api_version() / 10000 != PHX_API_VERSION_MAJOR) {
    fprintf(stderr, "consumer: library API %u, header %d\n", phx_api_version(), PHX_API_VERSION);
    return 1;
  }

  phx_context context = NULL;
  check(phx_context_create(NULL, &context), "context_create");

  size_t device_count = 0;
  check(phx_device_count(context, &device_count), "device_count");
  size_t device = device_count;
  for (size_t i = 0; i < device_count; ++i) {
    /* Not PHX_DEVICE_INFO_INIT: gcc's -Wextra flags its missing initializers in C. */
    phx_device_info info = {0};
    info.struct_size = sizeof info;
    check(phx_device_get(context, i, &info), "device_get");
    if (strcmp(info.name, "Example device") == 0) device = i;
  }
  if (device == device_count) {
    fprintf(stderr, "consumer: no \"Example device\" among %zu devices\n", device_count);
    return 1;
  }

  const int64_t matrix_shape[2] = {2, 3};
  const int64_t row_shape[1] = {3};
  const float a_values[6] = {1, -2, 3, -4, 5, -6};
  const float b_values[3] = {0.5f, 1, -10};
  phx_tensor a = make_tensor(context, device, 2, matrix_shape, a_values, 6);
  phx_tensor b = make_tensor(context, device, 1, row_shape, b_values, 3);
  phx_tensor sum = make_tensor(context, device, 2, matrix_shape, NULL, 0);
  phx_tensor rectified = make_tensor(context, device, 2, matrix_shape, NULL, 0);

  phx_stream stream = NULL;
  check(phx_stream_create(context, device, &stream), "stream_create");
  const phx_tensor add_inputs[2] = {a, b};
  run_op(stream, PHX_OP_ADD, add_inputs, 2, sum);
  run_op(stream, PHX_OP_RELU, &sum, 1, rectified);

  const float expected_sum[6] = {1.5f, -1, -7, -3.5f, 6, -16};
  const float expected_relu[6] = {1.5f, 0, 0, 0, 6, 0};
  int ok = expect_values("add", sum, expected_sum, 6) &&
           expect_values("relu", rectified, expected_relu, 6);

  phx_memory_stats stats = {0};
  stats.struct_size = sizeof stats;
  check(phx_memory_stats_get(context, device, &stats), "memory_stats_get");
  if (stats.allocation_count < 4 || stats.bytes_in_use < 3 * 6 * sizeof(float)) {
    fprintf(stderr, "consumer: memory stats: %llu allocations, %llu bytes in use\n",
            (unsigned long long)stats.allocation_count, (unsigned long long)stats.bytes_in_use);
    ok = 0;
  }

  check(phx_stream_destroy(stream), "stream_destroy");
  check(phx_context_destroy(context), "context_destroy");
  if (ok) printf("consumer: add and relu on the Example device: ok\n");
  return ok ? 0 : 1;
}
