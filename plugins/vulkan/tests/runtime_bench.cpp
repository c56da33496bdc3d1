// Figures of the runtime for docs/vulkan.md, on the tests' plugin: host<->device
// bandwidth of buffer_write/buffer_read, and the cost of one empty op (silu in the test
// plugin is an empty dispatch) with submit and wait, then of 1000 queued ones.
// PHX_VULKAN_NO_DIRECT_UPLOAD=1 measures the staged path.
#include <phynexus/phynexus.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main() {
  const char* paths[] = {PHX_VULKAN_TEST_PLUGIN_DIR};
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = paths;
  options.plugin_path_count = 1;
  options.use_default_search_path = 0;
  phx_context context;
  size_t count = 0;
  if (phx_context_create(&options, &context) != PHX_STATUS_OK ||
      phx_device_count(context, &count) != PHX_STATUS_OK || count == 0) {
    std::fprintf(stderr, "no Vulkan device\n");
    return 1;
  }
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  phx_device_get(context, 0, &info);
  std::printf("device: %s\n", info.name);

  constexpr int64_t kBytes = 64 << 20;
  std::vector<char> host(kBytes, 1);
  phx_tensor t;
  phx_tensor_create(context, 0, PHX_DTYPE_U8, 1, &kBytes, &t);
  double up = 1e9, down = 1e9;
  for (int i = 0; i < 5; ++i) {
    auto start = std::chrono::steady_clock::now();
    phx_tensor_upload(t, 0, host.data(), kBytes);
    up = std::min(up, seconds_since(start));
    start = std::chrono::steady_clock::now();
    phx_tensor_download(t, 0, host.data(), kBytes);
    down = std::min(down, seconds_since(start));
  }
  std::printf("upload 64 MiB: %.0f MB/s, download: %.0f MB/s (best of 5)\n", kBytes / up / 1e6,
              kBytes / down / 1e6);

  phx_stream stream;
  phx_stream_create(context, 0, &stream);
  const int64_t small = 16;
  phx_tensor f;
  phx_tensor_create(context, 0, PHX_DTYPE_F32, 1, &small, &f);
  const phx_op_desc desc = {sizeof desc, PHX_OP_SILU, nullptr, &f, 1, &f, 1};
  std::vector<double> us;
  for (int i = 0; i < 500; ++i) {
    const auto start = std::chrono::steady_clock::now();
    uint64_t ticket;
    if (phx_op_run(stream, &desc, &ticket) != PHX_STATUS_OK ||
        phx_stream_wait(stream, ticket) != PHX_STATUS_OK) {
      std::fprintf(stderr, "op failed: %s\n", phx_last_error());
      return 1;
    }
    us.push_back(seconds_since(start) * 1e6);
  }
  std::sort(us.begin(), us.end());
  std::printf("empty op, submit + wait: best %.1f us, median %.1f us, p99 %.1f us (500 runs)\n",
              us[0], us[us.size() / 2], us[us.size() * 99 / 100]);
  const auto start = std::chrono::steady_clock::now();
  uint64_t ticket = 0;
  for (int i = 0; i < 1000; ++i) phx_op_run(stream, &desc, &ticket);
  phx_stream_wait(stream, ticket);
  std::printf("1000 empty ops queued, then one wait: %.1f us per op\n", seconds_since(start) * 1e3);
  phx_stream_destroy(stream);
  phx_tensor_destroy(f);
  phx_tensor_destroy(t);
  phx_context_destroy(context);
  return 0;
}
