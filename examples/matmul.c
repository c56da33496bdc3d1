/*
 * matmul: C = A x B on every device that supports f32 matmul, checked against a
 * reference computed on the host in double precision.
 *
 * Shows the op-as-descriptor model: an op id, its inputs and outputs (tensors created
 * beforehand with the right shapes), submitted to a stream, which answers with a ticket
 * to wait on. Exits 0 when every device's result is within tolerance.
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Sizes that are not multiples of any block size, so that the edges of a blocked
 * kernel are exercised too. */
#define M 33
#define K 70
#define N 45

/* The tolerance of each output, from the sum of the magnitudes of its products S:
 * an f32 sum of K products in any order strays by at most about K * 2^-24 * S (twice
 * that is allowed), and a device that rounds the inputs of matmul to bf16 first (the
 * device property "matmul_precision", e.g. a TPU) adds up to 2^-8 * S: each input is
 * off by at most 2^-9 of itself. */
static float a[M * K], b[K * N], c[M * N];
static double reference[M * N], magnitude[M * N];

/* Prints the failed call with the library's message; returns 1 for a failure. */
static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  /* phx_last_error is valid only until the next phx_ call: take the status name first. */
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "matmul: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* A fixed pseudo-random sequence in [-1, 1), the same on every run. */
static float next_value(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void make_inputs_and_reference(void) {
  uint32_t state = 42;
  for (int i = 0; i < M * K; ++i) a[i] = next_value(&state);
  for (int i = 0; i < K * N; ++i) b[i] = next_value(&state);
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double sum = 0.0, size = 0.0;
      for (int k = 0; k < K; ++k) {
        double product = (double)a[i * K + k] * (double)b[k * N + j];
        sum += product;
        size += fabs(product);
      }
      reference[i * N + j] = sum;
      magnitude[i * N + j] = size;
    }
  }
}

/* Creates an f32 matrix of rows x cols on device; 1 if that failed. */
static int create_matrix(phx_context context, size_t device, int64_t rows, int64_t cols,
                         phx_tensor* out_tensor) {
  const int64_t shape[2] = {rows, cols};
  return failed("phx_tensor_create",
                phx_tensor_create(context, device, PHX_DTYPE_F32, 2, shape, out_tensor));
}

/* The relative error the device's rounding of matmul inputs adds: 2^-8 for bf16. */
static double input_rounding(phx_context context, size_t device) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  if (phx_device_get(context, device, &info) != PHX_STATUS_OK) return 0.0;
  for (size_t i = 0; i < info.property_count; ++i) {
    if (strcmp(info.properties[i].key, "matmul_precision") == 0 &&
        strcmp(info.properties[i].value, "bf16") == 0)
      return 0x1p-8;
  }
  return 0.0;
}

/* Runs C = A x B on device; sets *out_max_error and *out_worst, the largest ratio of an
 * output's error to its tolerance (at most 1 passes). 0 on success. */
static int matmul_on(phx_context context, size_t device, double* out_max_error, double* out_worst) {
  phx_tensor ta = NULL, tb = NULL, tc = NULL;
  phx_stream stream = NULL;
  uint64_t ticket = 0;
  int result = 1;

  if (create_matrix(context, device, M, K, &ta) || create_matrix(context, device, K, N, &tb) ||
      create_matrix(context, device, M, N, &tc) ||
      failed("phx_tensor_upload", phx_tensor_upload(ta, 0, a, sizeof a)) ||
      failed("phx_tensor_upload", phx_tensor_upload(tb, 0, b, sizeof b)) ||
      failed("phx_stream_create", phx_stream_create(context, device, &stream))) {
    goto cleanup;
  }

  {
    const phx_tensor inputs[2] = {ta, tb};
    const phx_tensor outputs[1] = {tc};
    /* params NULL: the defaults (no transposes, no activation). */
    const phx_op_desc desc = {sizeof(phx_op_desc), PHX_OP_MATMUL, NULL, inputs, 2, outputs, 1};
    /* Queued (or already done) when phx_op_run returns; the ticket says when it is done. */
    if (failed("phx_op_run", phx_op_run(stream, &desc, &ticket)) ||
        failed("phx_stream_wait", phx_stream_wait(stream, ticket)) ||
        failed("phx_tensor_download", phx_tensor_download(tc, 0, c, sizeof c))) {
      goto cleanup;
    }
  }

  double max_error = 0.0, worst = 0.0;
  double relative = input_rounding(context, device) + 2.0 * K * 0x1p-24;
  for (int i = 0; i < M * N; ++i) {
    double error = fabs((double)c[i] - reference[i]);
    double ratio = error / (relative * magnitude[i] + 1e-30);
    if (isnan(error) || error > max_error) max_error = error; /* NaN sticks */
    if (isnan(ratio) || ratio > worst) worst = ratio;
  }
  *out_max_error = max_error;
  *out_worst = worst;
  result = 0;

cleanup:
  /* A handle that was never created stays NULL and is not destroyed. */
  if (stream && failed("phx_stream_destroy", phx_stream_destroy(stream))) result = 1;
  if (tc && failed("phx_tensor_destroy", phx_tensor_destroy(tc))) result = 1;
  if (tb && failed("phx_tensor_destroy", phx_tensor_destroy(tb))) result = 1;
  if (ta && failed("phx_tensor_destroy", phx_tensor_destroy(ta))) result = 1;
  return result;
}

int main(void) {
  phx_context context = NULL;
  if (failed("phx_context_create", phx_context_create(NULL, &context))) return 1;
  make_inputs_and_reference();

  int exit_code = 1;
  size_t device_count = 0, checked = 0;
  if (failed("phx_device_count", phx_device_count(context, &device_count))) goto done;

  for (size_t d = 0; d < device_count; ++d) {
    int supported = 0;
    double max_error = 0.0, worst = 0.0;
    if (failed("phx_device_supports",
               phx_device_supports(context, d, PHX_OP_MATMUL, PHX_DTYPE_F32, &supported))) {
      goto done;
    }
    if (!supported) {
      printf("device %zu: no f32 matmul: skipped\n", d);
      continue;
    }
    if (matmul_on(context, d, &max_error, &worst)) goto done;
    printf(
        "device %zu: [%d x %d] x [%d x %d]: max |error| vs double reference = %.3g "
        "(%.2f of its tolerance)\n",
        d, M, K, K, N, max_error, worst);
    if (!(worst <= 1.0)) { /* also catches NaN */
      fprintf(stderr, "matmul: device %zu: an error is %.3g times its tolerance\n", d, worst);
      goto done;
    }
    ++checked;
  }

  if (checked == 0) {
    fprintf(stderr, "matmul: no device runs f32 matmul\n");
  } else {
    printf("matmul verified on %zu device%s\n", checked, checked == 1 ? "" : "s");
    exit_code = 0;
  }

done:
  if (failed("phx_context_destroy", phx_context_destroy(context))) exit_code = 1;
  return exit_code;
}
