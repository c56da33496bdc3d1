/*
 * The consumer API as a C99 program sees it: only <phynexus/phynexus.h>, built with
 * -std=c99 -pedantic -Wall -Wextra -Werror. Creates a context with the default search
 * path (which finds the CPU plugin beside libphynexus), lists plugins and devices, runs
 * add and matmul on the CPU device against a double-precision reference, checks error
 * paths, and destroys everything. Prints "N passed, N failed"; exits non-zero on any
 * failure.
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_passed;
static int g_failed;

static int check(int ok, const char* what, const char* file, int line) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    fprintf(stderr, "%s:%d: FAILED: %s\n  last error: \"%s\"\n", file, line, what,
            phx_last_error());
  }
  return ok;
}

#define CHECK(cond) check((cond) != 0, #cond, __FILE__, __LINE__)
#define CHECK_STATUS(call, expected) check_status((call), (expected), #call, __FILE__, __LINE__)
#define CHECK_OK(call) CHECK_STATUS(call, PHX_STATUS_OK)

static int check_status(phx_status got, phx_status expected, const char* what, const char* file,
                        int line) {
  char message[512];
  snprintf(message, sizeof message, "%s returned %s, expected %s", what, phx_status_name(got),
           phx_status_name(expected));
  return check(got == expected, message, file, line);
}

/* A failed call leaves a message behind. */
static int has_error_message(void) {
  const char* message = phx_last_error();
  return message != NULL && message[0] != '\0';
}

/* Deterministic values in [-1, 1). */
static float next_value(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) & 0xFFFFu) / 32768.0f - 1.0f;
}

static void fill(float* data, size_t count, unsigned seed) {
  size_t i;
  for (i = 0; i < count; ++i) data[i] = next_value(&seed);
}

static phx_tensor make_tensor(phx_context context, size_t device, size_t rank, const int64_t* shape,
                              const float* data) {
  phx_tensor tensor = NULL;
  size_t count = 1;
  size_t i;
  for (i = 0; i < rank; ++i) count *= (size_t)shape[i];
  if (!CHECK_OK(phx_tensor_create(context, device, PHX_DTYPE_F32, rank, shape, &tensor))) {
    return NULL;
  }
  if (data != NULL) CHECK_OK(phx_tensor_upload(tensor, 0, data, count * sizeof(float)));
  return tensor;
}

static int run_op(phx_stream stream, phx_op_id op, const void* params, const phx_tensor* inputs,
                  size_t input_count, phx_tensor output) {
  phx_op_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.op = op;
  desc.params = params;
  desc.inputs = inputs;
  desc.input_count = input_count;
  desc.outputs = &output;
  desc.output_count = 1;
  return CHECK_OK(phx_op_run(stream, &desc, NULL));
}

/* Lists the plugins; returns 1 if one named "cpu" was loaded. */
static int list_plugins(phx_context context) {
  size_t count = 0;
  size_t i;
  int cpu_loaded = 0;
  phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
  CHECK_OK(phx_plugin_count(context, &count));
  CHECK(count >= 1);
  for (i = 0; i < count; ++i) {
    if (!CHECK_OK(phx_plugin_get(context, i, &info))) continue;
    CHECK(info.name != NULL && info.path != NULL && info.reason != NULL);
    printf("plugin %u: %s %s [%s] state %d stage %d, %u device(s) %s\n", (unsigned)i, info.name,
           info.version, info.path, (int)info.state, (int)info.stage, (unsigned)info.device_count,
           info.reason);
    if (info.state == PHX_PLUGIN_LOADED && strcmp(info.name, "cpu") == 0) {
      cpu_loaded = 1;
      CHECK(info.stage == PHX_PLUGIN_STAGE_READY);
      CHECK(info.device_count >= 1);
      CHECK(info.reason[0] == '\0');
    }
  }
  CHECK_STATUS(phx_plugin_get(context, count, &info), PHX_STATUS_NOT_FOUND);
  CHECK(has_error_message());
  return cpu_loaded;
}

/* Lists the devices; returns the index of the CPU plugin's first device, or count. */
static size_t find_cpu_device(phx_context context) {
  size_t count = 0;
  size_t i;
  size_t found;
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  CHECK_OK(phx_device_count(context, &count));
  found = count;
  for (i = 0; i < count; ++i) {
    if (!CHECK_OK(phx_device_get(context, i, &info))) continue;
    CHECK(info.index == i);
    printf("device %u: %s (%s, %s, plugin %s), %u compute units\n", (unsigned)i, info.name,
           phx_device_type_name(info.type), info.vendor, info.plugin, (unsigned)info.compute_units);
    if (found == count && info.type == PHX_DEVICE_CPU && strcmp(info.plugin, "cpu") == 0) {
      found = i;
      CHECK(info.dtype_mask & PHX_DTYPE_BIT(PHX_DTYPE_F32));
      CHECK(info.memory_total_bytes > 0);
    }
  }
  CHECK_STATUS(phx_device_get(context, count, &info), PHX_STATUS_NOT_FOUND);
  return found;
}

/* c = a + b, b broadcast over the rows of a. */
static void test_add(phx_context context, size_t device, phx_stream stream) {
  enum { R = 13, C = 29 };
  const int64_t a_shape[2] = {R, C};
  const int64_t b_shape[1] = {C};
  static float a[R * C], b[C], c[R * C];
  phx_tensor inputs[2];
  phx_tensor out;
  size_t i, j;
  int mismatches = 0;
  fill(a, R * C, 1u);
  fill(b, C, 2u);
  inputs[0] = make_tensor(context, device, 2, a_shape, a);
  inputs[1] = make_tensor(context, device, 1, b_shape, b);
  out = make_tensor(context, device, 2, a_shape, NULL);
  if (inputs[0] == NULL || inputs[1] == NULL || out == NULL) return;
  if (run_op(stream, PHX_OP_ADD, NULL, inputs, 2, out)) {
    CHECK_OK(phx_stream_synchronize(stream));
    CHECK_OK(phx_tensor_download(out, 0, c, sizeof c));
    for (i = 0; i < R; ++i) {
      for (j = 0; j < C; ++j) {
        double expected = (double)a[i * C + j] + (double)b[j];
        if (fabs(c[i * C + j] - expected) > 1e-6 * fabs(expected) + 1e-7) ++mismatches;
      }
    }
    CHECK(mismatches == 0);
  }
  CHECK_OK(phx_tensor_destroy(inputs[0]));
  CHECK_OK(phx_tensor_destroy(inputs[1]));
  CHECK_OK(phx_tensor_destroy(out));
}

/* c = a @ b (plain), then d = relu(a @ bt^T + bias); checked against double sums. */
static void test_matmul(phx_context context, size_t device, phx_stream stream) {
  enum { M = 19, K = 37, N = 11 };
  const int64_t a_shape[2] = {M, K};
  const int64_t b_shape[2] = {K, N};
  const int64_t bt_shape[2] = {N, K};
  const int64_t bias_shape[1] = {N};
  const int64_t c_shape[2] = {M, N};
  static float a[M * K], b[K * N], bt[N * K], bias[N], c[M * N], d[M * N];
  phx_matmul_params params = PHX_MATMUL_PARAMS_INIT;
  phx_tensor ta, tb, tbt, tbias, tc, td;
  phx_tensor inputs[3];
  uint64_t ticket = 0;
  phx_op_desc desc;
  size_t i, j, k;
  int mismatches = 0;
  fill(a, M * K, 3u);
  fill(b, K * N, 4u);
  fill(bias, N, 5u);
  for (k = 0; k < K; ++k) {
    for (j = 0; j < N; ++j) bt[j * K + k] = b[k * N + j];
  }
  ta = make_tensor(context, device, 2, a_shape, a);
  tb = make_tensor(context, device, 2, b_shape, b);
  tbt = make_tensor(context, device, 2, bt_shape, bt);
  tbias = make_tensor(context, device, 1, bias_shape, bias);
  tc = make_tensor(context, device, 2, c_shape, NULL);
  td = make_tensor(context, device, 2, c_shape, NULL);
  if (!ta || !tb || !tbt || !tbias || !tc || !td) return;

  inputs[0] = ta;
  inputs[1] = tb;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.op = PHX_OP_MATMUL;
  desc.inputs = inputs;
  desc.input_count = 2;
  desc.outputs = &tc;
  desc.output_count = 1;
  CHECK_OK(phx_op_run(stream, &desc, &ticket));
  CHECK(ticket >= 1);
  CHECK_OK(phx_stream_wait(stream, ticket));

  params.transpose_b = 1;
  params.activation = PHX_ACTIVATION_RELU;
  inputs[1] = tbt;
  inputs[2] = tbias;
  run_op(stream, PHX_OP_MATMUL, &params, inputs, 3, td);
  CHECK_OK(phx_stream_synchronize(stream));

  CHECK_OK(phx_tensor_download(tc, 0, c, sizeof c));
  CHECK_OK(phx_tensor_download(td, 0, d, sizeof d));
  for (i = 0; i < M; ++i) {
    for (j = 0; j < N; ++j) {
      double sum = 0.0, magnitude = 0.0, tolerance, relu;
      for (k = 0; k < K; ++k) {
        sum += (double)a[i * K + k] * (double)b[k * N + j];
        magnitude += fabs((double)a[i * K + k] * (double)b[k * N + j]);
      }
      /* f32 accumulation over K terms: a few K * epsilon of the terms' magnitude. */
      tolerance = 1e-5 * magnitude + 1e-6;
      relu = sum + bias[j] > 0.0 ? sum + bias[j] : 0.0;
      if (fabs(c[i * N + j] - sum) > tolerance) ++mismatches;
      if (fabs(d[i * N + j] - relu) > tolerance + 1e-6 * fabs(bias[j])) ++mismatches;
    }
  }
  CHECK(mismatches == 0);

  /* K mismatch: a is M x K, b is N x K without transpose. */
  inputs[0] = ta;
  inputs[1] = tbt;
  ticket = 12345;
  desc.inputs = inputs;
  desc.input_count = 2;
  CHECK_STATUS(phx_op_run(stream, &desc, &ticket), PHX_STATUS_INVALID_ARGUMENT);
  CHECK(has_error_message());
  CHECK(strstr(phx_last_error(), "matmul") != NULL);
  CHECK(ticket == 12345);

  CHECK_OK(phx_tensor_destroy(ta));
  CHECK_OK(phx_tensor_destroy(tb));
  CHECK_OK(phx_tensor_destroy(tbt));
  CHECK_OK(phx_tensor_destroy(tbias));
  CHECK_OK(phx_tensor_destroy(tc));
  CHECK_OK(phx_tensor_destroy(td));
}

static void test_tensor_errors(phx_context context, size_t device) {
  const int64_t shape[2] = {4, 8};
  const int64_t zero_shape[2] = {4, 0};
  int64_t big_shape[PHX_MAX_RANK + 1];
  float data[32] = {0};
  phx_tensor tensor = NULL;
  phx_tensor untouched = (phx_tensor)&g_passed;
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  size_t i;
  for (i = 0; i < PHX_MAX_RANK + 1; ++i) big_shape[i] = 1;

  CHECK_STATUS(phx_tensor_create(context, device, PHX_DTYPE_F32, 2, shape, NULL),
               PHX_STATUS_INVALID_ARGUMENT);
  CHECK(has_error_message());
  CHECK_STATUS(
      phx_tensor_create(context, device, PHX_DTYPE_F32, PHX_MAX_RANK + 1, big_shape, &untouched),
      PHX_STATUS_INVALID_ARGUMENT);
  CHECK(untouched == (phx_tensor)&g_passed);
  CHECK_STATUS(phx_tensor_create(context, device, PHX_DTYPE_F32, 2, zero_shape, &untouched),
               PHX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(phx_tensor_create(context, device, PHX_DTYPE_INVALID, 2, shape, &untouched),
               PHX_STATUS_INVALID_ARGUMENT);
  CHECK(untouched == (phx_tensor)&g_passed);

  if (!CHECK_OK(phx_tensor_create(context, device, PHX_DTYPE_F32, 2, shape, &tensor))) return;
  CHECK_OK(phx_tensor_describe(tensor, &desc));
  CHECK(desc.device == device && desc.dtype == PHX_DTYPE_F32 && desc.rank == 2);
  CHECK(desc.shape[0] == 4 && desc.shape[1] == 8 && desc.shape[2] == 1);
  CHECK(desc.element_count == 32 && desc.byte_size == 128);
  CHECK_STATUS(phx_tensor_describe(tensor, NULL), PHX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(phx_tensor_upload(tensor, 4, data, sizeof data), PHX_STATUS_INVALID_ARGUMENT);
  CHECK(has_error_message());
  CHECK_STATUS(phx_tensor_upload(tensor, 0, NULL, 4), PHX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(phx_tensor_download(tensor, 128, data, 1), PHX_STATUS_INVALID_ARGUMENT);
  CHECK_OK(phx_tensor_destroy(tensor));
}

static void test_memory_stats(phx_context context, size_t device) {
  const int64_t shape[1] = {1024};
  phx_memory_stats before = PHX_MEMORY_STATS_INIT;
  phx_memory_stats during = PHX_MEMORY_STATS_INIT;
  phx_tensor tensor = NULL;
  CHECK_OK(phx_memory_stats_get(context, device, &before));
  if (!CHECK_OK(phx_tensor_create(context, device, PHX_DTYPE_F32, 1, shape, &tensor))) return;
  CHECK_OK(phx_memory_stats_get(context, device, &during));
  CHECK(during.bytes_in_use >= before.bytes_in_use + 4096);
  CHECK(during.allocation_count >= 1);
  CHECK_STATUS(phx_memory_stats_get(context, device, NULL), PHX_STATUS_INVALID_ARGUMENT);
  CHECK_OK(phx_tensor_destroy(tensor));
}

static void test_names(void) {
  CHECK(phx_api_version() == PHX_API_VERSION);
  CHECK(strcmp(phx_status_name(PHX_STATUS_OUT_OF_MEMORY), "PHX_STATUS_OUT_OF_MEMORY") == 0);
  CHECK(strcmp(phx_status_name((phx_status)999), "PHX_STATUS_<unknown>") == 0);
  CHECK(strcmp(phx_dtype_name(PHX_DTYPE_F32), "f32") == 0);
  CHECK(strcmp(phx_dtype_name(PHX_DTYPE_BF16), "bf16") == 0);
  CHECK(phx_dtype_size(PHX_DTYPE_F32) == 4);
  CHECK(phx_dtype_size(PHX_DTYPE_BF16) == 2);
  CHECK(phx_dtype_size((phx_dtype)99) == 0);
  CHECK(strcmp(phx_op_name(PHX_OP_MATMUL), "matmul") == 0);
  CHECK(strcmp(phx_op_name(PHX_OP_ADD), "add") == 0);
  CHECK(strcmp(phx_device_type_name(PHX_DEVICE_CPU), "cpu") == 0);
}

int main(void) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  phx_context context = NULL;
  phx_context untouched = (phx_context)&g_failed;
  phx_stream stream = NULL;
  size_t device_count = 0;
  size_t device;

  test_names();

  CHECK_STATUS(phx_context_create(NULL, NULL), PHX_STATUS_INVALID_ARGUMENT);
  CHECK(has_error_message());
  options.plugin_path_count = 1; /* with plugin_paths null */
  CHECK_STATUS(phx_context_create(&options, &untouched), PHX_STATUS_INVALID_ARGUMENT);
  CHECK(untouched == (phx_context)&g_failed);
  options.plugin_path_count = 0;

  if (!CHECK_OK(phx_context_create(&options, &context))) goto done;
  CHECK_STATUS(phx_device_count(context, NULL), PHX_STATUS_INVALID_ARGUMENT);
  CHECK(has_error_message());
  CHECK_STATUS(phx_plugin_count(context, NULL), PHX_STATUS_INVALID_ARGUMENT);
  CHECK(list_plugins(context));
  device = find_cpu_device(context);
  CHECK_OK(phx_device_count(context, &device_count));
  if (!CHECK(device < device_count)) goto destroy;

  CHECK_STATUS(phx_stream_create(context, device, NULL), PHX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(phx_stream_create(context, device_count, &stream), PHX_STATUS_NOT_FOUND);
  if (!CHECK_OK(phx_stream_create(context, device, &stream))) goto destroy;
  test_add(context, device, stream);
  test_matmul(context, device, stream);
  test_tensor_errors(context, device);
  test_memory_stats(context, device);
  CHECK_OK(phx_stream_destroy(stream));

destroy:
  CHECK_OK(phx_context_destroy(context));
  /* A destroyed handle is detected, never a crash. */
  CHECK_STATUS(phx_context_destroy(context), PHX_STATUS_INVALID_ARGUMENT);
  CHECK_STATUS(phx_device_count(context, &device_count), PHX_STATUS_INVALID_ARGUMENT);
done:
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
