/*
 * mlp: a two-layer perceptron on every device, checked against a double reference.
 *
 *   hidden = relu(x W1 + b1)    Linear 10 -> 20 with ReLU: one matmul with a bias input
 *                               and the fused ReLU activation
 *   y      = hidden W2 + b2     Linear 20 -> 5: a matmul with a bias input
 *
 * for a batch of 4 inputs. Both ops go to one stream; the second reads what the first
 * wrote because a stream runs its ops in order. Prints the output and the largest error
 * per device, and exits 0 when every device is within tolerance.
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BATCH 4
#define INPUTS 10
#define HIDDEN 20
#define OUTPUTS 5

/* Host copies of the parameters and the input, the reference output, and what each
 * output's tolerance is made of (see tolerance()). */
static float x[BATCH * INPUTS], w1[INPUTS * HIDDEN], b1[HIDDEN];
static float w2[HIDDEN * OUTPUTS], b2[OUTPUTS];
static double reference[BATCH * OUTPUTS];
static double hidden_magnitude[BATCH * HIDDEN], output_magnitude[BATCH * OUTPUTS];

/* The model's tensors on one device. */
enum { T_X, T_W1, T_B1, T_HIDDEN, T_W2, T_B2, T_Y, TENSOR_COUNT };

typedef struct tensor_spec {
  size_t rank;
  int64_t shape[2];
  const float* data; /* uploaded from here; NULL for the tensors the ops write */
  size_t bytes;
} tensor_spec;

static const tensor_spec specs[TENSOR_COUNT] = {
    [T_X] = {2, {BATCH, INPUTS}, x, sizeof x},      [T_W1] = {2, {INPUTS, HIDDEN}, w1, sizeof w1},
    [T_B1] = {1, {HIDDEN}, b1, sizeof b1},          [T_HIDDEN] = {2, {BATCH, HIDDEN}, NULL, 0},
    [T_W2] = {2, {HIDDEN, OUTPUTS}, w2, sizeof w2}, [T_B2] = {1, {OUTPUTS}, b2, sizeof b2},
    [T_Y] = {2, {BATCH, OUTPUTS}, NULL, 0},
};

/* Prints the failed call with the library's message; returns 1 for a failure. */
static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  /* phx_last_error is valid only until the next phx_ call: take the status name first. */
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "mlp: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* A fixed pseudo-random sequence in [-1, 1), the same on every run. */
static float next_value(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void fill(float* values, int count, uint32_t* state) {
  for (int i = 0; i < count; ++i) values[i] = next_value(state);
}

/* The forward pass on the host, in double precision. */
static void make_inputs_and_reference(void) {
  uint32_t state = 7;
  fill(x, BATCH * INPUTS, &state);
  fill(w1, INPUTS * HIDDEN, &state);
  fill(b1, HIDDEN, &state);
  fill(w2, HIDDEN * OUTPUTS, &state);
  fill(b2, OUTPUTS, &state);

  for (int n = 0; n < BATCH; ++n) {
    double hidden[HIDDEN];
    for (int j = 0; j < HIDDEN; ++j) {
      double sum = b1[j], size = fabs(b1[j]);
      for (int i = 0; i < INPUTS; ++i) {
        sum += (double)x[n * INPUTS + i] * w1[i * HIDDEN + j];
        size += fabs((double)x[n * INPUTS + i] * w1[i * HIDDEN + j]);
      }
      hidden[j] = sum > 0.0 ? sum : 0.0;
      hidden_magnitude[n * HIDDEN + j] = size;
    }
    for (int k = 0; k < OUTPUTS; ++k) {
      double sum = b2[k], size = fabs(b2[k]);
      for (int j = 0; j < HIDDEN; ++j) {
        sum += hidden[j] * w2[j * OUTPUTS + k];
        size += fabs(hidden[j] * w2[j * OUTPUTS + k]);
      }
      reference[n * OUTPUTS + k] = sum;
      output_magnitude[n * OUTPUTS + k] = size;
    }
  }
}

/* The relative error the device's rounding of matmul inputs adds: 2^-8 where the
 * device property "matmul_precision" is bf16 (each input off by at most 2^-9). */
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

/* The tolerance of output (n, k). A layer's f32 sum of terms whose magnitudes add up to
 * S strays by at most (rounding + 2 * terms * 2^-24) * S; ReLU does not grow an error,
 * and the second layer carries the first one's error through |w2|. */
static double tolerance(int n, int k, double rounding) {
  double first = rounding + 2.0 * (INPUTS + 1) * 0x1p-24;
  double second = rounding + 2.0 * (HIDDEN + 1) * 0x1p-24;
  double carried = 0.0;
  for (int j = 0; j < HIDDEN; ++j)
    carried += fabs(w2[j * OUTPUTS + k]) * first * hidden_magnitude[n * HIDDEN + j];
  return second * output_magnitude[n * OUTPUTS + k] + carried;
}

/* Runs the forward pass on device into y; 0 on success. */
static int forward_on(phx_context context, size_t device, float y[BATCH * OUTPUTS]) {
  phx_tensor t[TENSOR_COUNT] = {NULL};
  phx_stream stream = NULL;
  int result = 1;

  for (int i = 0; i < TENSOR_COUNT; ++i) {
    if (failed("phx_tensor_create", phx_tensor_create(context, device, PHX_DTYPE_F32, specs[i].rank,
                                                      specs[i].shape, &t[i]))) {
      goto cleanup;
    }
    if (specs[i].data &&
        failed("phx_tensor_upload", phx_tensor_upload(t[i], 0, specs[i].data, specs[i].bytes))) {
      goto cleanup;
    }
  }
  if (failed("phx_stream_create", phx_stream_create(context, device, &stream))) goto cleanup;

  {
    /* Layer 1: matmul inputs are a, b and the optional bias; ReLU is fused after it. */
    phx_matmul_params relu = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_RELU};
    const phx_tensor layer1_in[3] = {t[T_X], t[T_W1], t[T_B1]};
    const phx_tensor layer1_out[1] = {t[T_HIDDEN]};
    const phx_op_desc layer1 = {
        sizeof(phx_op_desc), PHX_OP_MATMUL, &relu, layer1_in, 3, layer1_out, 1};
    /* Layer 2: no parameters means the defaults, i.e. no activation. */
    const phx_tensor layer2_in[3] = {t[T_HIDDEN], t[T_W2], t[T_B2]};
    const phx_tensor layer2_out[1] = {t[T_Y]};
    const phx_op_desc layer2 = {
        sizeof(phx_op_desc), PHX_OP_MATMUL, NULL, layer2_in, 3, layer2_out, 1};
    uint64_t ticket1 = 0, ticket2 = 0;

    /* Waiting for the last ticket is enough: the stream runs its ops in order. */
    if (failed("phx_op_run (layer 1)", phx_op_run(stream, &layer1, &ticket1)) ||
        failed("phx_op_run (layer 2)", phx_op_run(stream, &layer2, &ticket2)) ||
        failed("phx_stream_wait", phx_stream_wait(stream, ticket2)) ||
        failed("phx_tensor_download",
               phx_tensor_download(t[T_Y], 0, y, BATCH * OUTPUTS * sizeof(float)))) {
      goto cleanup;
    }
  }
  result = 0;

cleanup:
  /* Handles that were never created stay NULL and are not destroyed. */
  if (stream && failed("phx_stream_destroy", phx_stream_destroy(stream))) result = 1;
  for (int i = 0; i < TENSOR_COUNT; ++i) {
    if (t[i] && failed("phx_tensor_destroy", phx_tensor_destroy(t[i]))) result = 1;
  }
  return result;
}

/* Prints y, sets *out_max_error to its largest distance from the reference, and returns
 * the largest ratio of an output's error to its tolerance (at most 1 passes). */
static double print_and_compare(size_t device, const float y[BATCH * OUTPUTS], double rounding,
                                double* out_max_error) {
  double max_error = 0.0, worst = 0.0;
  printf("device %zu output:\n", device);
  for (int n = 0; n < BATCH; ++n) {
    printf("  ");
    for (int k = 0; k < OUTPUTS; ++k) {
      double error = fabs((double)y[n * OUTPUTS + k] - reference[n * OUTPUTS + k]);
      double ratio = error / (tolerance(n, k, rounding) + 1e-30);
      if (isnan(error) || error > max_error) max_error = error; /* NaN sticks */
      if (isnan(ratio) || ratio > worst) worst = ratio;
      printf(" %9.5f", (double)y[n * OUTPUTS + k]);
    }
    printf("\n");
  }
  *out_max_error = max_error;
  return worst;
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
    float y[BATCH * OUTPUTS];
    if (failed("phx_device_supports",
               phx_device_supports(context, d, PHX_OP_MATMUL, PHX_DTYPE_F32, &supported))) {
      goto done;
    }
    if (!supported) {
      printf("device %zu: no f32 matmul: skipped\n", d);
      continue;
    }
    if (forward_on(context, d, y)) goto done;
    double max_error = 0.0;
    double worst = print_and_compare(d, y, input_rounding(context, d), &max_error);
    printf("device %zu: max |error| vs double reference = %.3g (%.2f of its tolerance)\n", d,
           max_error, worst);
    if (!(worst <= 1.0)) { /* also catches NaN */
      fprintf(stderr, "mlp: device %zu: an error is %.3g times its tolerance\n", d, worst);
      goto done;
    }
    ++checked;
  }

  if (checked == 0) {
    fprintf(stderr, "mlp: no device runs f32 matmul\n");
  } else {
    printf("mlp verified on %zu device%s\n", checked, checked == 1 ? "" : "s");
    exit_code = 0;
  }

done:
  if (failed("phx_context_destroy", phx_context_destroy(context))) exit_code = 1;
  return exit_code;
}
