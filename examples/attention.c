/*
 * attention: causal grouped-query attention, as a decoder layer runs it, on every device
 * that implements it, checked against a reference computed here in double precision.
 *
 * q [1, H, S, D] with H = 4 query heads reading Hkv = 2 key/value heads (heads 0 and 1
 * share key/value head 0); each query sees the keys at or before its own position.
 * The tolerance of an output: the softmax weights p of its row are computed in f32
 * (about (S + 32) * 2^-24 relative each), and the f32 sum of S terms p * v adds
 * S * 2^-24 * sum |p v|; 4 * (S + 32) * 2^-24 * sum |p v| + 1e-6 covers both.
 * Exits 0 when every device is within it.
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdint.h>
#include <stdio.h>

#define H 4
#define HKV 2
#define S 50
#define D 32

static float q[H * S * D], k[HKV * S * D], v[HKV * S * D], out[H * S * D];
static double reference[H * S * D], magnitude[H * S * D];

static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "attention: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

static float next_value(uint32_t* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)(*state >> 8) / (float)(1u << 23) - 1.0f;
}

static void make_inputs_and_reference(void) {
  uint32_t state = 11;
  for (int i = 0; i < H * S * D; ++i) q[i] = next_value(&state);
  for (int i = 0; i < HKV * S * D; ++i) k[i] = next_value(&state);
  for (int i = 0; i < HKV * S * D; ++i) v[i] = next_value(&state);
  const double scale = 1.0 / sqrt((double)D);
  for (int h = 0; h < H; ++h) {
    const int kv = h / (H / HKV);
    for (int i = 0; i < S; ++i) {
      double scores[S], max = -INFINITY, sum = 0.0;
      for (int j = 0; j <= i; ++j) { /* causal: keys up to the query's own position */
        double dot = 0.0;
        for (int d = 0; d < D; ++d)
          dot += (double)q[(h * S + i) * D + d] * (double)k[(kv * S + j) * D + d];
        scores[j] = dot * scale;
        if (scores[j] > max) max = scores[j];
      }
      for (int j = 0; j <= i; ++j) sum += (scores[j] = exp(scores[j] - max));
      for (int d = 0; d < D; ++d) {
        double value = 0.0, size = 0.0;
        for (int j = 0; j <= i; ++j) {
          const double term = scores[j] / sum * (double)v[(kv * S + j) * D + d];
          value += term;
          size += fabs(term);
        }
        reference[(h * S + i) * D + d] = value;
        magnitude[(h * S + i) * D + d] = size;
      }
    }
  }
}

static int tensor(phx_context context, size_t device, int64_t heads, const float* data,
                  phx_tensor* out_tensor) {
  const int64_t shape[4] = {1, heads, S, D};
  if (failed("phx_tensor_create",
             phx_tensor_create(context, device, PHX_DTYPE_F32, 4, shape, out_tensor)))
    return 1;
  return data != NULL &&
         failed("phx_tensor_upload",
                phx_tensor_upload(*out_tensor, 0, data, (size_t)(heads * S * D) * sizeof(float)));
}

/* Runs attention on device; *out_worst receives the largest error / tolerance. */
static int run_on(phx_context context, size_t device, double* out_worst) {
  phx_tensor tq, tk, tv, to;
  phx_stream stream;
  uint64_t ticket;
  if (tensor(context, device, H, q, &tq) || tensor(context, device, HKV, k, &tk) ||
      tensor(context, device, HKV, v, &tv) || tensor(context, device, H, NULL, &to) ||
      failed("phx_stream_create", phx_stream_create(context, device, &stream)))
    return 1;
  phx_attention_params params = PHX_ATTENTION_PARAMS_INIT; /* scale 1 / sqrt(D) */
  params.mask = PHX_ATTENTION_MASK_CAUSAL;
  const phx_tensor inputs[3] = {tq, tk, tv};
  const phx_op_desc desc = {sizeof desc, PHX_OP_ATTENTION, &params, inputs, 3, &to, 1};
  if (failed("phx_op_run", phx_op_run(stream, &desc, &ticket)) ||
      failed("phx_stream_wait", phx_stream_wait(stream, ticket)) ||
      failed("phx_tensor_download", phx_tensor_download(to, 0, out, sizeof out)))
    return 1;
  double worst = 0.0;
  for (int i = 0; i < H * S * D; ++i) {
    const double tolerance = 4.0 * (S + 32) * 0x1p-24 * magnitude[i] + 1e-6;
    const double ratio = fabs(out[i] - reference[i]) / tolerance;
    if (!(ratio <= worst)) worst = ratio; /* a NaN counts as the worst */
  }
  *out_worst = worst;
  phx_stream_destroy(stream);
  return 0;
}

int main(void) {
  make_inputs_and_reference();
  phx_context context;
  size_t devices = 0;
  if (failed("phx_context_create", phx_context_create(NULL, &context)) ||
      failed("phx_device_count", phx_device_count(context, &devices)))
    return 1;
  int verified = 0, wrong = 0;
  for (size_t d = 0; d < devices; ++d) {
    int supported = 0;
    if (failed("phx_device_supports",
               phx_device_supports(context, d, PHX_OP_ATTENTION, PHX_DTYPE_F32, &supported)))
      return 1;
    if (!supported) {
      printf("device %zu: no f32 attention: skipped\n", d);
      continue;
    }
    double worst = 0.0;
    if (run_on(context, d, &worst)) return 1;
    printf("device %zu: causal GQA attention [1 x %d x %d x %d]: max error %.2g of its tolerance\n",
           d, H, S, D, worst);
    if (!(worst <= 1.0)) ++wrong;
    ++verified;
  }
  printf("attention %s on %d devices\n", wrong ? "FAILED" : "verified", verified);
  return failed("phx_context_destroy", phx_context_destroy(context)) || wrong != 0 || verified == 0;
}
