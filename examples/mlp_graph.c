/*
 * mlp_graph: the two-layer perceptron of mlp.c, recorded once as a graph, compiled for
 * every device and run there, checked against the same double reference.
 *
 *   hidden = relu(x W1 + b1)    node "layer1": a matmul with a bias input and ReLU
 *   y      = hidden W2 + b2     node "layer2": a matmul with a bias input
 *
 * for a batch of 4 inputs. The graph has one input (x), four constants (the weights and
 * biases, copied from host memory when added) and one output (y); the hidden layer is an
 * intermediate, which the executable keeps in its planned memory. A device that does not
 * run a node is skipped with the message of phx_graph_compile, which names the node.
 * Prints the output, the executable's description and the largest error per device, and
 * exits 0 when every device that compiled the graph is within tolerance.
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

/* Prints the failed call with the library's message; returns 1 for a failure. */
static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  /* phx_last_error is valid only until the next phx_ call: take the status name first. */
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "mlp_graph: %s failed: %s: %s\n", call, status_name, phx_last_error());
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

/* Records the model as a graph of context; 0 on success. The graph holds copies of the
 * weights: the host arrays may change afterwards without changing it. */
static int build_graph(phx_context context, phx_graph* out_graph) {
  static const int64_t x_shape[2] = {BATCH, INPUTS}, w1_shape[2] = {INPUTS, HIDDEN};
  static const int64_t b1_shape[1] = {HIDDEN}, w2_shape[2] = {HIDDEN, OUTPUTS};
  static const int64_t b2_shape[1] = {OUTPUTS};
  phx_graph graph = NULL;
  phx_value v_x, v_w1, v_b1, v_w2, v_b2, v_hidden, v_y;
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  /* Layer 1 fuses ReLU after the bias; layer 2 takes the defaults (params null). */
  phx_matmul_params relu = {sizeof(phx_matmul_params), 0, 0, PHX_ACTIVATION_RELU};
  phx_graph_node_desc layer1 = PHX_GRAPH_NODE_DESC_INIT, layer2 = PHX_GRAPH_NODE_DESC_INIT;
  phx_value layer1_in[3], layer2_in[3];

  if (failed("phx_graph_create", phx_graph_create(context, &graph))) return 1;
  input.name = "x";
  input.dtype = PHX_DTYPE_F32;
  input.rank = 2;
  input.shape = x_shape;
  if (failed("phx_graph_add_input", phx_graph_add_input(graph, &input, &v_x)) ||
      failed(
          "phx_graph_add_constant (W1)",
          phx_graph_add_constant(graph, "W1", PHX_DTYPE_F32, 2, w1_shape, w1, sizeof w1, &v_w1)) ||
      failed(
          "phx_graph_add_constant (b1)",
          phx_graph_add_constant(graph, "b1", PHX_DTYPE_F32, 1, b1_shape, b1, sizeof b1, &v_b1)) ||
      failed(
          "phx_graph_add_constant (W2)",
          phx_graph_add_constant(graph, "W2", PHX_DTYPE_F32, 2, w2_shape, w2, sizeof w2, &v_w2)) ||
      failed(
          "phx_graph_add_constant (b2)",
          phx_graph_add_constant(graph, "b2", PHX_DTYPE_F32, 1, b2_shape, b2, sizeof b2, &v_b2))) {
    phx_graph_destroy(graph);
    return 1;
  }

  /* A node names its inputs by value, in the op's order: a, b, bias. Its output's dtype
   * and shape are inferred, and a node that breaks matmul's rules is refused here. */
  layer1_in[0] = v_x;
  layer1_in[1] = v_w1;
  layer1_in[2] = v_b1;
  layer1.name = "layer1";
  layer1.op = PHX_OP_MATMUL;
  layer1.params = &relu;
  layer1.inputs = layer1_in;
  layer1.input_count = 3;
  layer1.output_count = 1;
  if (failed("phx_graph_add_node (layer1)", phx_graph_add_node(graph, &layer1, &v_hidden))) {
    phx_graph_destroy(graph);
    return 1;
  }
  layer2_in[0] = v_hidden;
  layer2_in[1] = v_w2;
  layer2_in[2] = v_b2;
  layer2.name = "layer2";
  layer2.op = PHX_OP_MATMUL;
  layer2.inputs = layer2_in;
  layer2.input_count = 3;
  layer2.output_count = 1;
  if (failed("phx_graph_add_node (layer2)", phx_graph_add_node(graph, &layer2, &v_y)) ||
      failed("phx_graph_add_output", phx_graph_add_output(graph, v_y, "y"))) {
    phx_graph_destroy(graph);
    return 1;
  }
  *out_graph = graph;
  return 0;
}

/* Runs the compiled model on device into y; 0 on success. */
static int forward_on(phx_context context, size_t device, phx_executable exe,
                      float y[BATCH * OUTPUTS]) {
  static const int64_t x_shape[2] = {BATCH, INPUTS}, y_shape[2] = {BATCH, OUTPUTS};
  phx_tensor x_tensor = NULL, y_tensor = NULL;
  phx_stream stream = NULL;
  uint64_t ticket = 0;
  int result = 1;

  if (failed("phx_tensor_create (x)",
             phx_tensor_create(context, device, PHX_DTYPE_F32, 2, x_shape, &x_tensor)) ||
      failed("phx_tensor_upload", phx_tensor_upload(x_tensor, 0, x, sizeof x)) ||
      failed("phx_tensor_create (y)",
             phx_tensor_create(context, device, PHX_DTYPE_F32, 2, y_shape, &y_tensor)) ||
      failed("phx_stream_create", phx_stream_create(context, device, &stream))) {
    goto cleanup;
  }
  {
    /* One tensor per graph input and per graph output, in the order they were added. */
    const phx_tensor inputs[1] = {x_tensor};
    const phx_tensor outputs[1] = {y_tensor};
    /* The whole model is one submission; its ticket is that of its last node. */
    if (failed("phx_executable_run",
               phx_executable_run(stream, exe, inputs, 1, outputs, 1, &ticket)) ||
        failed("phx_stream_wait", phx_stream_wait(stream, ticket)) ||
        failed("phx_tensor_download",
               phx_tensor_download(y_tensor, 0, y, BATCH * OUTPUTS * sizeof(float)))) {
      goto cleanup;
    }
  }
  result = 0;

cleanup:
  /* Handles that were never created stay NULL and are not destroyed. */
  if (stream && failed("phx_stream_destroy", phx_stream_destroy(stream))) result = 1;
  if (x_tensor && failed("phx_tensor_destroy", phx_tensor_destroy(x_tensor))) result = 1;
  if (y_tensor && failed("phx_tensor_destroy", phx_tensor_destroy(y_tensor))) result = 1;
  return result;
}

/* Compiles the graph for device: 0 and *out_exe on success, 2 when the device does not
 * run a node (the message names it), 1 on another failure. */
static int compile_for(phx_context context, phx_graph graph, size_t device,
                       phx_executable* out_exe) {
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  phx_status status;
  options.device = device;
  status = phx_graph_compile(context, graph, &options, out_exe);
  if (status == PHX_STATUS_UNSUPPORTED) {
    printf("device %zu: skipped: %s\n", device, phx_last_error());
    return 2;
  }
  return failed("phx_graph_compile", status);
}

/* Prints what compiling made of the graph. */
static int print_description(size_t device, phx_executable exe) {
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  if (failed("phx_executable_describe", phx_executable_describe(exe, &info))) return 1;
  printf(
      "device %zu executable: %zu of %zu nodes run (%zu fused into another), %llu bytes of "
      "constants, %llu bytes of intermediates planned (lower bound %llu)\n",
      device, info.node_count, info.graph_node_count, info.fused_nodes,
      (unsigned long long)info.constant_bytes, (unsigned long long)info.planned_bytes,
      (unsigned long long)info.lower_bound_bytes);
  return 0;
}

int main(void) {
  phx_context context = NULL;
  phx_graph graph = NULL;
  if (failed("phx_context_create", phx_context_create(NULL, &context))) return 1;
  make_inputs_and_reference();

  int exit_code = 1;
  size_t device_count = 0, checked = 0;
  if (failed("phx_device_count", phx_device_count(context, &device_count))) goto done;
  /* One graph for every device: it names no device until it is compiled. */
  if (build_graph(context, &graph)) goto done;

  for (size_t d = 0; d < device_count; ++d) {
    phx_executable exe = NULL;
    float y[BATCH * OUTPUTS];
    double max_error = 0.0, worst = 0.0;
    int compiled = compile_for(context, graph, d, &exe);
    if (compiled == 2) continue;
    if (compiled) goto done;
    if (print_description(d, exe) || forward_on(context, d, exe, y)) {
      phx_executable_destroy(exe);
      goto done;
    }
    if (failed("phx_executable_destroy", phx_executable_destroy(exe))) goto done;
    worst = print_and_compare(d, y, input_rounding(context, d), &max_error);
    printf("device %zu: max |error| vs double reference = %.3g (%.2f of its tolerance)\n", d,
           max_error, worst);
    if (!(worst <= 1.0)) { /* also catches NaN */
      fprintf(stderr, "mlp_graph: device %zu: an error is %.3g times its tolerance\n", d, worst);
      goto done;
    }
    ++checked;
  }

  if (checked == 0) {
    fprintf(stderr, "mlp_graph: no device compiled the graph\n");
  } else {
    printf("mlp_graph verified on %zu device%s\n", checked, checked == 1 ? "" : "s");
    exit_code = 0;
  }

done:
  /* The context would destroy the graph too; destroying it first is tidier. */
  if (graph && failed("phx_graph_destroy", phx_graph_destroy(graph))) exit_code = 1;
  if (failed("phx_context_destroy", phx_context_destroy(context))) exit_code = 1;
  return exit_code;
}
