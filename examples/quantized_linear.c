/*
 * quantized_linear: y = x w as an int8 layer, on every device that can hold int8.
 *
 * The path a deployment takes: a calibrator watches sample activations and gives their
 * scale and zero point (min-max, asymmetric); the weights get one symmetric scale per
 * output channel; quantize turns both into int8, qmatmul multiplies them with int32
 * accumulation and gives y back in f32. The context asks for CPU fallback, so a device
 * that lacks one of these ops still runs the layer (phx_device_stats says how often it
 * fell back). Exits 0 when every device's y is within 3% (relative Frobenius error) of
 * the f32 product computed here in double precision: int8 per-channel weights with
 * min-max int8 activations land near 1-2% on data like this (docs/quantization.md).
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define M 64
#define K 256
#define N 128

static float x[M * K], w[K * N], y[M * N];
static double reference[M * N];

static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "quantized_linear: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* A fixed pseudo-random sequence in [-1, 1), the same on every run. */
static float next_value(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void make_data(void) {
  uint32_t state = 7;
  /* Activations of a ReLU-like layer, shifted: an asymmetric range, as calibration meets. */
  for (int i = 0; i < M * K; ++i) x[i] = 1.5f * next_value(&state) + 0.5f;
  for (int i = 0; i < K * N; ++i) w[i] = 0.1f * next_value(&state);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double sum = 0.0;
      for (int k = 0; k < K; ++k) sum += (double)x[i * K + k] * (double)w[k * N + j];
      reference[i * N + j] = sum;
    }
}

/* Creates a tensor of rank 1 (cols == 0: [rows]) or 2 and uploads data unless it is NULL. */
static int tensor(phx_context context, size_t device, phx_dtype dtype, int64_t rows, int64_t cols,
                  const void* data, phx_tensor* out) {
  const int64_t shape[2] = {rows, cols};
  const size_t rank = cols == 0 ? 1 : 2;
  const size_t elements = (size_t)(rows * (cols == 0 ? 1 : cols));
  if (failed("phx_tensor_create", phx_tensor_create(context, device, dtype, rank, shape, out)))
    return 1;
  if (data == NULL) return 0;
  return failed("phx_tensor_upload",
                phx_tensor_upload(*out, 0, data, elements * phx_dtype_size(dtype)));
}

static int run(phx_stream stream, phx_op_id op, const void* params, const phx_tensor* inputs,
               size_t input_count, phx_tensor output) {
  const phx_op_desc desc = {sizeof desc, op, params, inputs, input_count, &output, 1};
  return failed(phx_op_name(op), phx_op_run(stream, &desc, NULL));
}

/* Scale and zero point per channel of `values` (rows x cols, channels along axis 1 when
 * per_channel), from a calibrator on device 0. */
static int calibrate(phx_context context, const float* values, int64_t rows, int64_t cols,
                     int per_channel, float* scales, int32_t* zero_points) {
  phx_calibration_options options = PHX_CALIBRATION_OPTIONS_INIT;
  options.symmetric = per_channel; /* weights symmetric per channel, activations not */
  options.channel_axis = per_channel ? 1 : -1;
  phx_calibrator calibrator;
  phx_tensor sample;
  size_t count = 0;
  if (failed("phx_calibrator_create", phx_calibrator_create(context, &options, &calibrator)) ||
      tensor(context, 0, PHX_DTYPE_F32, rows, cols, values, &sample) ||
      failed("phx_calibrator_observe", phx_calibrator_observe(calibrator, sample)) ||
      failed("phx_calibrator_compute",
             phx_calibrator_compute(calibrator, scales, zero_points, (size_t)cols, &count)))
    return 1;
  phx_tensor_destroy(sample);
  phx_calibrator_destroy(calibrator);
  return 0;
}

static double fallback_ops(phx_context context, size_t device) {
  phx_metric metrics[64];
  size_t count = 0;
  if (phx_device_stats(context, device, metrics, 64, &count) != PHX_STATUS_OK) return -1.0;
  for (size_t i = 0; i < count && i < 64; ++i)
    if (strcmp(metrics[i].name, "fallback_ops") == 0) return metrics[i].value;
  return 0.0;
}

/* Runs the layer on device; *out_error receives y's relative error. */
static int run_layer(phx_context context, size_t device, const float* x_scale,
                     const int32_t* x_zero, const float* w_scales, double* out_error) {
  phx_stream stream;
  phx_tensor xf, wf, xs, xz, ws, xq, wq, out;
  phx_quantize_params per_column = PHX_QUANTIZE_PARAMS_INIT;
  per_column.axis = 1;
  if (failed("phx_stream_create", phx_stream_create(context, device, &stream)) ||
      tensor(context, device, PHX_DTYPE_F32, M, K, x, &xf) ||
      tensor(context, device, PHX_DTYPE_F32, K, N, w, &wf) ||
      tensor(context, device, PHX_DTYPE_F32, 1, 0, x_scale, &xs) ||
      tensor(context, device, PHX_DTYPE_I32, 1, 0, x_zero, &xz) ||
      tensor(context, device, PHX_DTYPE_F32, N, 0, w_scales, &ws) ||
      tensor(context, device, PHX_DTYPE_I8, M, K, NULL, &xq) ||
      tensor(context, device, PHX_DTYPE_I8, K, N, NULL, &wq) ||
      tensor(context, device, PHX_DTYPE_F32, M, N, NULL, &out))
    return 1;
  const phx_tensor quantize_x[3] = {xf, xs, xz};
  const phx_tensor quantize_w[2] = {wf, ws};
  const phx_tensor product[5] = {xq, wq, xs, xz, ws};
  if (run(stream, PHX_OP_QUANTIZE, NULL, quantize_x, 3, xq) ||
      run(stream, PHX_OP_QUANTIZE, &per_column, quantize_w, 2, wq) ||
      run(stream, PHX_OP_QMATMUL, NULL, product, 5, out) ||
      failed("phx_stream_synchronize", phx_stream_synchronize(stream)) ||
      failed("phx_tensor_download", phx_tensor_download(out, 0, y, sizeof y)))
    return 1;
  double diff = 0.0, norm = 0.0;
  for (int i = 0; i < M * N; ++i) {
    diff += (y[i] - reference[i]) * (y[i] - reference[i]);
    norm += reference[i] * reference[i];
  }
  *out_error = sqrt(diff / norm);
  phx_stream_destroy(stream);
  return 0;
}

int main(void) {
  make_data();
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.flags = PHX_CONTEXT_FALLBACK_CPU;
  phx_context context;
  size_t devices = 0;
  if (failed("phx_context_create", phx_context_create(&options, &context)) ||
      failed("phx_device_count", phx_device_count(context, &devices)))
    return 1;

  float x_scale, w_scales[N];
  int32_t x_zero, w_zeros[N];
  if (calibrate(context, x, M, K, 0, &x_scale, &x_zero) ||
      calibrate(context, w, K, N, 1, w_scales, w_zeros))
    return 1;
  printf("activations: scale %.5f, zero point %d; weights: %d channel scales\n", x_scale,
         (int)x_zero, N);

  int verified = 0, errors = 0;
  for (size_t d = 0; d < devices; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (failed("phx_device_get", phx_device_get(context, d, &info))) return 1;
    const uint32_t needs =
        PHX_DTYPE_BIT(PHX_DTYPE_F32) | PHX_DTYPE_BIT(PHX_DTYPE_I8) | PHX_DTYPE_BIT(PHX_DTYPE_I32);
    if ((info.dtype_mask & needs) != needs) {
      printf("device %zu (%s): cannot hold int8 tensors: skipped\n", d, info.name);
      continue;
    }
    double error = 0.0;
    if (run_layer(context, d, &x_scale, &x_zero, w_scales, &error)) return 1;
    const double fell_back = fallback_ops(context, d);
    printf("device %zu (%s): relative error %.2f%% (%s)\n", d, info.name, 100.0 * error,
           fell_back > 0 ? "some ops ran on the CPU through the fallback" : "native");
    if (error > 0.03) ++errors;
    ++verified;
  }
  printf("quantized_linear %s on %d devices\n", errors ? "FAILED" : "verified", verified);
  return failed("phx_context_destroy", phx_context_destroy(context)) || errors != 0 ||
         verified == 0;
}
