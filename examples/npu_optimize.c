/*
 * npu_optimize: a float model quantized for the NPU at compile time (npu-sim's
 * optimize_model), saved, and loaded back.
 *
 *   h = relu(x W1 + b1)     node "fc1": f32 matmul, bias and relu
 *   y = h W2 + b2           node "fc2": f32 matmul and bias
 *
 * compiled for the first NPU device with the CPU device beside it and 8 calibration
 * batches: the compile runs the graph in float on them, the NPU quantizes the nodes it
 * can from the value ranges it is given (int8, or int16 where a range has outliers), and
 * anything it cannot runs on the CPU. Prints where each node runs and in what dtype, the
 * error against float on the calibration batches, and the error of a new batch against a
 * double reference; saves the executable and checks that the loaded one gives the same
 * bits. Exits 0 when the error is within what int8 quantization allows (below), and
 * without an NPU or CPU device prints why and exits 0.
 */
#include <math.h>
#include <phynexus/phynexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 8
#define INPUTS 64
#define HIDDEN 128
#define OUTPUTS 16
#define SAMPLES 8

static float w1[INPUTS * HIDDEN], b1[HIDDEN], w2[HIDDEN * OUTPUTS], b2[OUTPUTS];

static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "npu_optimize: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

/* A deterministic value in [-1, 1). */
static float noise(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((*state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static void reference(const float* x, double* y) {
  for (int b = 0; b < BATCH; ++b) {
    double h[HIDDEN];
    for (int j = 0; j < HIDDEN; ++j) {
      double sum = b1[j];
      for (int i = 0; i < INPUTS; ++i) sum += (double)x[b * INPUTS + i] * w1[i * HIDDEN + j];
      h[j] = sum > 0 ? sum : 0;
    }
    for (int k = 0; k < OUTPUTS; ++k) {
      double sum = b2[k];
      for (int j = 0; j < HIDDEN; ++j) sum += h[j] * w2[j * OUTPUTS + k];
      y[b * OUTPUTS + k] = sum;
    }
  }
}

static phx_status build(phx_context context, phx_graph* out_graph) {
  phx_graph graph = NULL;
  phx_status s = phx_graph_create(context, &graph);
  const int64_t x_shape[2] = {BATCH, INPUTS}, w1_shape[2] = {INPUTS, HIDDEN},
                b1_shape[1] = {HIDDEN}, w2_shape[2] = {HIDDEN, OUTPUTS}, b2_shape[1] = {OUTPUTS};
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.name = "x";
  input.dtype = PHX_DTYPE_F32;
  input.rank = 2;
  input.shape = x_shape;
  phx_value x = 0, vw1 = 0, vb1 = 0, vw2 = 0, vb2 = 0, h = 0, y = 0;
  if (s == PHX_STATUS_OK) s = phx_graph_add_input(graph, &input, &x);
  if (s == PHX_STATUS_OK)
    s = phx_graph_add_constant(graph, "w1", PHX_DTYPE_F32, 2, w1_shape, w1, sizeof w1, &vw1);
  if (s == PHX_STATUS_OK)
    s = phx_graph_add_constant(graph, "b1", PHX_DTYPE_F32, 1, b1_shape, b1, sizeof b1, &vb1);
  if (s == PHX_STATUS_OK)
    s = phx_graph_add_constant(graph, "w2", PHX_DTYPE_F32, 2, w2_shape, w2, sizeof w2, &vw2);
  if (s == PHX_STATUS_OK)
    s = phx_graph_add_constant(graph, "b2", PHX_DTYPE_F32, 1, b2_shape, b2, sizeof b2, &vb2);
  phx_matmul_params relu = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_RELU};
  phx_graph_node_desc node = PHX_GRAPH_NODE_DESC_INIT;
  node.op = PHX_OP_MATMUL;
  node.output_count = 1;
  const phx_value fc1_inputs[3] = {x, vw1, vb1};
  node.name = "fc1";
  node.params = &relu;
  node.inputs = fc1_inputs;
  node.input_count = 3;
  if (s == PHX_STATUS_OK) s = phx_graph_add_node(graph, &node, &h);
  const phx_value fc2_inputs[3] = {h, vw2, vb2};
  node.name = "fc2";
  node.params = NULL;
  node.inputs = fc2_inputs;
  if (s == PHX_STATUS_OK) s = phx_graph_add_node(graph, &node, &y);
  if (s == PHX_STATUS_OK) s = phx_graph_add_output(graph, y, "y");
  *out_graph = graph;
  return s;
}

static int find_device(phx_context context, phx_device_type type, size_t* out) {
  size_t count = 0;
  phx_device_count(context, &count);
  for (size_t d = 0; d < count; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (phx_device_get(context, d, &info) == PHX_STATUS_OK && info.type == type) {
      *out = d;
      return 1;
    }
  }
  return 0;
}

static phx_status run(phx_context context, phx_executable exe, size_t device, const float* x,
                      float* y) {
  const int64_t x_shape[2] = {BATCH, INPUTS}, y_shape[2] = {BATCH, OUTPUTS};
  phx_stream stream = NULL;
  phx_tensor tx = NULL, ty = NULL;
  phx_status s = phx_stream_create(context, device, &stream);
  if (s == PHX_STATUS_OK) s = phx_tensor_create(context, device, PHX_DTYPE_F32, 2, x_shape, &tx);
  if (s == PHX_STATUS_OK) s = phx_tensor_create(context, device, PHX_DTYPE_F32, 2, y_shape, &ty);
  if (s == PHX_STATUS_OK) s = phx_tensor_upload(tx, 0, x, sizeof(float) * BATCH * INPUTS);
  uint64_t ticket = 0;
  if (s == PHX_STATUS_OK) s = phx_executable_run(stream, exe, &tx, 1, &ty, 1, &ticket);
  if (s == PHX_STATUS_OK) s = phx_stream_wait(stream, ticket);
  if (s == PHX_STATUS_OK) s = phx_tensor_download(ty, 0, y, sizeof(float) * BATCH * OUTPUTS);
  phx_tensor_destroy(tx);
  phx_tensor_destroy(ty);
  phx_stream_destroy(stream);
  return s;
}

static void describe(phx_executable exe) {
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  phx_executable_describe(exe, &info);
  for (size_t n = 0; n < info.node_count; ++n) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    if (phx_executable_describe_node(exe, n, &node) != PHX_STATUS_OK) continue;
    printf("  node %-10s on device %zu, computed in %s\n", node.name, node.device,
           phx_dtype_name(node.compute_dtype));
  }
  printf("  %zu of %zu nodes quantized; error against float on the calibration batches: %.4f\n",
         info.quantized_nodes, info.node_count, info.calibration_error);
}

int main(void) {
  unsigned state = 12345;
  for (int i = 0; i < INPUTS * HIDDEN; ++i) w1[i] = 0.18f * noise(&state);
  for (int i = 0; i < HIDDEN; ++i) b1[i] = 0.1f * noise(&state);
  for (int i = 0; i < HIDDEN * OUTPUTS; ++i) w2[i] = 0.15f * noise(&state);
  for (int i = 0; i < OUTPUTS; ++i) b2[i] = 0.1f * noise(&state);

  phx_context context = NULL;
  if (failed("phx_context_create", phx_context_create(NULL, &context))) return 1;
  size_t npu = 0, cpu = 0;
  if (!find_device(context, PHX_DEVICE_NPU, &npu) || !find_device(context, PHX_DEVICE_CPU, &cpu)) {
    printf("npu_optimize: needs an NPU and a CPU device (phx-devices lists them); skipped\n");
    phx_context_destroy(context);
    return 0;
  }
  int status = 1;
  phx_graph graph = NULL;
  phx_executable exe = NULL, loaded = NULL;
  phx_tensor samples[SAMPLES] = {NULL};
  static float x[SAMPLES][BATCH * INPUTS];
  const int64_t x_shape[2] = {BATCH, INPUTS};
  if (failed("building the graph", build(context, &graph))) goto done;
  for (int k = 0; k < SAMPLES; ++k) {
    for (int i = 0; i < BATCH * INPUTS; ++i) x[k][i] = noise(&state);
    if (failed("phx_tensor_create",
               phx_tensor_create(context, cpu, PHX_DTYPE_F32, 2, x_shape, &samples[k])) ||
        failed("phx_tensor_upload", phx_tensor_upload(samples[k], 0, x[k], sizeof x[k])))
      goto done;
  }
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = npu;
  options.other_devices = &cpu;
  options.other_device_count = 1;
  options.calibration_inputs = samples;
  options.calibration_sample_count = SAMPLES;
  if (failed("phx_graph_compile", phx_graph_compile(context, graph, &options, &exe))) goto done;
  printf("npu_optimize: the MLP compiled for device %zu with %d calibration batches\n", npu,
         SAMPLES);
  describe(exe);

  /* A new batch against double. int8 activations and weights each round within half a
   * step of their range, about 1/255 of it; through two layers the error stays within a
   * few percent of the output's largest magnitude: 5% is allowed. */
  float fresh[BATCH * INPUTS], y[BATCH * OUTPUTS], y_loaded[BATCH * OUTPUTS];
  double expected[BATCH * OUTPUTS], largest = 0, worst = 0;
  for (int i = 0; i < BATCH * INPUTS; ++i) fresh[i] = noise(&state);
  reference(fresh, expected);
  if (failed("running", run(context, exe, npu, fresh, y))) goto done;
  for (int i = 0; i < BATCH * OUTPUTS; ++i) {
    largest = fmax(largest, fabs(expected[i]));
    worst = fmax(worst, fabs(y[i] - expected[i]));
  }
  printf("  a new batch: largest error %.4f of largest output %.4f (%.2f%%)\n", worst, largest,
         100 * worst / largest);

  size_t size = 0;
  if (failed("phx_executable_save", phx_executable_save(exe, NULL, 0, &size))) goto done;
  void* bytes = malloc(size);
  phx_status s =
      bytes != NULL ? phx_executable_save(exe, bytes, size, &size) : PHX_STATUS_OUT_OF_MEMORY;
  if (s == PHX_STATUS_OK) s = phx_executable_load(context, bytes, size, &options, &loaded);
  free(bytes);
  if (failed("saving and loading", s) ||
      failed("running", run(context, loaded, npu, fresh, y_loaded)))
    goto done;
  const int same = memcmp(y, y_loaded, sizeof y) == 0;
  printf("  saved (%zu bytes) and loaded: %s\n", size, same ? "the same bits" : "DIFFERENT");
  status = worst <= 0.05 * largest && same ? 0 : 1;
  if (status != 0) fprintf(stderr, "npu_optimize: outside the tolerance\n");

done:
  for (int k = 0; k < SAMPLES; ++k) phx_tensor_destroy(samples[k]);
  phx_executable_destroy(loaded);
  phx_executable_destroy(exe);
  phx_graph_destroy(graph);
  phx_context_destroy(context);
  return status;
}
