/*
 * onnx_run: ONNX models on every device. For each model folder given (as
 * examples/onnx/make_models.py writes them: model.onnx and test_data_set_0 with
 * input_0.pb and output_0.pb), the model is imported once (phx_model_load_onnx, from
 * libphynexus_onnx), compiled for every device with the CPU device for the nodes a device
 * does not run, run on the input, and compared with the expected output, which numpy
 * computed in float64.
 *
 * Tolerance: the largest error, relative to the largest |expected|, must stay within
 * 1e-4 on devices that multiply in f32 (the models' sums are a few hundred terms of
 * magnitude about 1: f32 rounding is a few 1e-6 of that), and within 3e-2 on a device
 * whose "matmul_precision" property is "bf16" (tpu-sim by default, as a TPU: each
 * product's inputs are rounded to 8 significant bits, a relative error up to 2^-8 each).
 * Prints, per device, how many nodes ran there and on the CPU, and the error; exits 0
 * when every device is within tolerance.
 *
 *   usage: phx_example_onnx_run MODEL_FOLDER...
 */
#include <math.h>
#include <phynexus/onnx.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed(const char* call, phx_status status) {
  if (status == PHX_STATUS_OK) return 0;
  const char* status_name = phx_status_name(status);
  fprintf(stderr, "onnx_run: %s failed: %s: %s\n", call, status_name, phx_last_error());
  return 1;
}

static double tolerance_of(phx_context context, size_t device) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  if (phx_device_get(context, device, &info) != PHX_STATUS_OK) return 0;
  for (size_t i = 0; i < info.property_count; ++i)
    if (strcmp(info.properties[i].key, "matmul_precision") == 0 &&
        strcmp(info.properties[i].value, "bf16") == 0)
      return 3e-2;
  return 1e-4;
}

static size_t find_cpu(phx_context context, size_t count) {
  for (size_t d = 0; d < count; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (phx_device_get(context, d, &info) == PHX_STATUS_OK && info.type == PHX_DEVICE_CPU) return d;
  }
  return 0;
}

/* Compiles graph for device (the CPU for what it lacks), runs it on x and writes the
 * largest |output - expected| / max |expected| to *error. Returns 0 on success. */
static int run_on(phx_context context, phx_graph graph, size_t device, size_t cpu,
                  const phx_onnx_tensor* x, const phx_onnx_tensor* expected, double* error) {
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device;
  options.other_devices = &cpu;
  options.other_device_count = device == cpu ? 0 : 1;
  phx_executable exe = NULL;
  phx_stream stream = NULL;
  phx_tensor in = NULL, out = NULL;
  float* got = malloc(expected->size);
  int bad = got == NULL;
  bad = bad || failed("phx_graph_compile", phx_graph_compile(context, graph, &options, &exe));
  bad = bad || failed("phx_stream_create", phx_stream_create(context, device, &stream));
  bad = bad || failed("phx_tensor_create",
                      phx_tensor_create(context, device, x->dtype, x->rank, x->shape, &in));
  bad = bad || failed("phx_tensor_upload", phx_tensor_upload(in, 0, x->data, x->size));
  bad =
      bad || failed("phx_tensor_create", phx_tensor_create(context, device, expected->dtype,
                                                           expected->rank, expected->shape, &out));
  bad = bad || failed("phx_executable_run", phx_executable_run(stream, exe, &in, 1, &out, 1, NULL));
  bad = bad || failed("phx_tensor_download", phx_tensor_download(out, 0, got, expected->size));
  if (!bad) {
    phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
    size_t on_device = 0;
    phx_executable_describe(exe, &info);
    for (size_t n = 0; n < info.node_count; ++n) {
      phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
      if (phx_executable_describe_node(exe, n, &node) == PHX_STATUS_OK && node.device == device)
        ++on_device;
    }
    const float* want = expected->data;
    double worst = 0, scale = 0;
    for (size_t i = 0; i < expected->size / sizeof(float); ++i) {
      const double e = fabs((double)got[i] - want[i]);
      worst = e > worst || isnan(e) ? e : worst;
      scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    }
    *error = scale > 0 ? worst / scale : worst;
    printf("    %zu of %zu nodes here, %zu on the CPU device; error %.2e", on_device,
           info.node_count, info.node_count - on_device, *error);
  }
  phx_tensor_destroy(in);
  phx_tensor_destroy(out);
  phx_stream_destroy(stream);
  phx_executable_destroy(exe);
  free(got);
  return bad;
}

static int run_model(phx_context context, const char* folder) {
  char path[4096];
  phx_onnx_tensor x = PHX_ONNX_TENSOR_INIT, expected = PHX_ONNX_TENSOR_INIT;
  phx_graph graph = NULL;
  int bad = 0;
  snprintf(path, sizeof path, "%s/model.onnx", folder);
  bad = bad || failed("phx_model_load_onnx", phx_model_load_onnx(context, path, NULL, &graph));
  snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", folder);
  bad = bad || failed("phx_onnx_tensor_read", phx_onnx_tensor_read(path, &x));
  snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", folder);
  bad = bad || failed("phx_onnx_tensor_read", phx_onnx_tensor_read(path, &expected));
  size_t count = 0;
  bad = bad || failed("phx_device_count", phx_device_count(context, &count));
  printf("%s\n", folder);
  for (size_t d = 0; !bad && d < count; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    phx_device_get(context, d, &info);
    printf("  device %zu (%s):\n", d, info.name);
    double error = 0;
    const double tolerance = tolerance_of(context, d);
    if (run_on(context, graph, d, find_cpu(context, count), &x, &expected, &error) != 0) {
      bad = 1;
    } else {
      printf(" (tolerance %.0e): %s\n", tolerance, error <= tolerance ? "ok" : "TOO FAR");
      bad = !(error <= tolerance);
    }
  }
  phx_onnx_tensor_free(&x);
  phx_onnx_tensor_free(&expected);
  phx_graph_destroy(graph);
  return bad;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL_FOLDER...\n", argv[0]);
    return 2;
  }
  phx_context context = NULL;
  if (failed("phx_context_create", phx_context_create(NULL, &context))) return 1;
  int bad = 0;
  for (int i = 1; i < argc; ++i) bad |= run_model(context, argv[i]);
  phx_context_destroy(context);
  if (!bad) printf("onnx_run: every model matched on every device\n");
  return bad;
}
