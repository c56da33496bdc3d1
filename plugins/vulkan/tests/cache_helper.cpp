// Runs relu once on the tests' plugin and prints what the pipeline cache did, for
// pipeline_cache_test.cpp to run in fresh processes:
//   warning: <each warning the plugin logged>
//   state: <the device's pipeline_cache property>
//   hits: <pipeline_cache_hits> misses: <pipeline_cache_misses> relu: ok|wrong
// Exit status 0 when relu ran and was right, 1 otherwise, 2 without a Vulkan device.
#include <phynexus/phynexus.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

void print_warning(void*, phx_log_level level, const char* message) {
  if (level >= PHX_LOG_WARN) std::printf("warning: %s\n", message);
}

}  // namespace

int main() {
  const char* paths[] = {PHX_VULKAN_TEST_PLUGIN_DIR};
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = paths;
  options.plugin_path_count = 1;
  options.use_default_search_path = 0;
  options.log_level = PHX_LOG_WARN;
  options.log_callback = print_warning;
  phx_context context;
  if (phx_context_create(&options, &context) != PHX_STATUS_OK) return 1;
  size_t count = 0;
  phx_device_count(context, &count);
  if (count == 0) return 2;
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  phx_device_get(context, 0, &info);
  for (size_t i = 0; i < info.property_count; ++i)
    if (std::string(info.properties[i].key) == "pipeline_cache")
      std::printf("state: %s\n", info.properties[i].value);

  const int64_t shape[1] = {256};
  std::vector<float> x(256), y(256);
  for (int i = 0; i < 256; ++i) x[size_t(i)] = float(i - 128);
  phx_tensor in, out;
  phx_stream stream;
  uint64_t ticket = 0;
  bool ok = phx_tensor_create(context, 0, PHX_DTYPE_F32, 1, shape, &in) == PHX_STATUS_OK &&
            phx_tensor_create(context, 0, PHX_DTYPE_F32, 1, shape, &out) == PHX_STATUS_OK &&
            phx_tensor_upload(in, 0, x.data(), 1024) == PHX_STATUS_OK &&
            phx_stream_create(context, 0, &stream) == PHX_STATUS_OK;
  const phx_op_desc desc = {sizeof desc, PHX_OP_RELU, nullptr, &in, 1, &out, 1};
  ok = ok && phx_op_run(stream, &desc, &ticket) == PHX_STATUS_OK &&
       phx_stream_wait(stream, ticket) == PHX_STATUS_OK &&
       phx_tensor_download(out, 0, y.data(), 1024) == PHX_STATUS_OK;
  for (int i = 0; i < 256 && ok; ++i) ok = y[size_t(i)] == (i > 128 ? float(i - 128) : 0.0f);

  size_t metric_count = 0;
  phx_device_stats(context, 0, nullptr, 0, &metric_count);
  std::vector<phx_metric> metrics(metric_count);
  phx_device_stats(context, 0, metrics.data(), metric_count, &metric_count);
  double hits = -1, misses = -1;
  for (const phx_metric& m : metrics) {
    if (std::string(m.name) == "pipeline_cache_hits") hits = m.value;
    if (std::string(m.name) == "pipeline_cache_misses") misses = m.value;
  }
  std::printf("hits: %g misses: %g relu: %s\n", hits, misses, ok ? "ok" : "wrong");
  phx_context_destroy(context);  // saves the cache
  return ok ? 0 : 1;
}
