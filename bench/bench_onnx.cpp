// ONNX import and an imported CNN on the CPU device (models from make_onnx_models.py,
// written at build time):
// - import_big: phx_model_load_onnx of a 100.7 MB model (six 2048x2048 f32 layers),
//   against reading the same file into memory (the least any import does); before the
//   benchmarks, the growth of the process's peak RSS during one import, in model sizes
//   (the weights held twice at the peak would show as 2).
// - cnn: 3 x (conv 3x3 + relu + max pool 2), flatten, gemm 4096->128 + relu, gemm 128->10,
//   batch 8, 64x64x3 input: the imported model compiled for the CPU device, against the
//   same network computed with OpenBLAS (im2col + sgemm per convolution, sgemm per
//   gemm, plain loops for relu and pooling) on the same weights and threads.
#include <cblas.h>
#include <phynexus/onnx.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

using phx_bench::check;

const std::string kModels = PHX_BENCH_ONNX_MODELS;
constexpr int64_t kBatch = 8, kSide = 64;

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

void BM_import_big(benchmark::State& state, phx_context context) {
  const std::string path = kModels + "/big.onnx";
  for (auto _ : state) {
    phx_graph graph = nullptr;
    check(phx_model_load_onnx(context, path.c_str(), nullptr, &graph), "phx_model_load_onnx");
    phx_graph_destroy(graph);
  }
}

void BM_read_big(benchmark::State& state) {
  const std::string path = kModels + "/big.onnx";
  for (auto _ : state) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    std::vector<char> bytes(static_cast<size_t>(in.tellg()));
    in.seekg(0);
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    benchmark::DoNotOptimize(bytes.data());
  }
}

// The CNN's weights, read from the tensor files beside the model.
struct Weights {
  std::vector<float> conv_w[3], conv_b[3], fc_w[2], fc_b[2];
};

std::vector<float> read_floats(const std::string& name) {
  phx_onnx_tensor t = PHX_ONNX_TENSOR_INIT;
  check(phx_onnx_tensor_read((kModels + "/cnn_" + name + ".pb").c_str(), &t), "tensor read");
  const auto* data = static_cast<const float*>(t.data);
  std::vector<float> v(data, data + t.size / sizeof(float));
  phx_onnx_tensor_free(&t);
  return v;
}

Weights read_weights() {
  Weights w;
  for (int i = 0; i < 3; ++i) {
    w.conv_w[i] = read_floats("conv" + std::to_string(i) + "_w");
    w.conv_b[i] = read_floats("conv" + std::to_string(i) + "_b");
  }
  for (int i = 0; i < 2; ++i) {
    w.fc_w[i] = read_floats("fc" + std::to_string(i) + "_w");
    w.fc_b[i] = read_floats("fc" + std::to_string(i) + "_b");
  }
  return w;
}

// One image's 3x3 convolution with padding 1 + bias + relu + 2x2 max pool, through
// im2col and sgemm: in [c, s, s] -> out [k, s/2, s/2].
void conv_block(const float* in, int64_t c, int64_t s, const std::vector<float>& w,
                const std::vector<float>& b, int64_t k, std::vector<float>& cols,
                std::vector<float>& conv, float* out) {
  cols.assign(static_cast<size_t>(c * 9 * s * s), 0.0f);
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t ky = 0; ky < 3; ++ky)
      for (int64_t kx = 0; kx < 3; ++kx) {
        float* row = cols.data() + ((ch * 3 + ky) * 3 + kx) * s * s;
        for (int64_t y = 0; y < s; ++y) {
          const int64_t iy = y + ky - 1;
          if (iy < 0 || iy >= s) continue;
          for (int64_t x = 0; x < s; ++x) {
            const int64_t ix = x + kx - 1;
            if (ix >= 0 && ix < s) row[y * s + x] = in[(ch * s + iy) * s + ix];
          }
        }
      }
  conv.resize(static_cast<size_t>(k * s * s));
  for (int64_t o = 0; o < k; ++o) std::fill_n(conv.data() + o * s * s, s * s, b[o]);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(k),
              static_cast<int>(s * s), static_cast<int>(c * 9), 1.0f, w.data(),
              static_cast<int>(c * 9), cols.data(), static_cast<int>(s * s), 1.0f, conv.data(),
              static_cast<int>(s * s));
  const int64_t h = s / 2;
  for (int64_t o = 0; o < k; ++o)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < h; ++x) {
        const float* p = conv.data() + (o * s + 2 * y) * s + 2 * x;
        const float m = std::max(std::max(p[0], p[1]), std::max(p[s], p[s + 1]));
        out[(o * h + y) * h + x] = std::max(m, 0.0f);  // relu commutes with max
      }
}

void BM_cnn_openblas(benchmark::State& state) {
  const Weights w = read_weights();
  std::vector<float> x(static_cast<size_t>(kBatch * 3 * kSide * kSide), 0.5f);
  std::vector<float> cols, conv, a[4], fc(kBatch * 128), y(kBatch * 10);
  const int64_t channels[4] = {3, 16, 32, 64};
  for (int i = 1; i < 4; ++i)
    a[i].resize(static_cast<size_t>(kBatch * channels[i] * (kSide >> i) * (kSide >> i)));
  for (auto _ : state) {
    for (int64_t n = 0; n < kBatch; ++n) {
      const float* in = x.data() + n * 3 * kSide * kSide;
      for (int i = 0; i < 3; ++i) {
        const int64_t s = kSide >> i, out_size = channels[i + 1] * (s / 2) * (s / 2);
        float* out = a[i + 1].data() + n * out_size;
        conv_block(in, channels[i], s, w.conv_w[i], w.conv_b[i], channels[i + 1], cols, conv, out);
        in = out;
      }
    }
    for (int64_t n = 0; n < kBatch; ++n) std::copy_n(w.fc_b[0].data(), 128, fc.data() + n * 128);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBatch, 128, 4096, 1.0f, a[3].data(),
                4096, w.fc_w[0].data(), 128, 1.0f, fc.data(), 128);
    for (float& v : fc) v = std::max(v, 0.0f);
    for (int64_t n = 0; n < kBatch; ++n) std::copy_n(w.fc_b[1].data(), 10, y.data() + n * 10);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBatch, 10, 128, 1.0f, fc.data(), 128,
                w.fc_w[1].data(), 10, 1.0f, y.data(), 10);
    benchmark::DoNotOptimize(y.data());
  }
}

void BM_cnn_phynexus_cpu(benchmark::State& state, phx_context context, size_t cpu) {
  phx_graph graph = nullptr;
  check(phx_model_load_onnx(context, (kModels + "/cnn.onnx").c_str(), nullptr, &graph),
        "phx_model_load_onnx");
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = cpu;
  phx_executable exe = nullptr;
  check(phx_graph_compile(context, graph, &options, &exe), "phx_graph_compile");
  phx_stream stream = nullptr;
  check(phx_stream_create(context, cpu, &stream), "phx_stream_create");
  const int64_t x_shape[4] = {kBatch, 3, kSide, kSide}, y_shape[2] = {kBatch, 10};
  phx_tensor x = nullptr, y = nullptr;
  check(phx_tensor_create(context, cpu, PHX_DTYPE_F32, 4, x_shape, &x), "phx_tensor_create");
  check(phx_tensor_create(context, cpu, PHX_DTYPE_F32, 2, y_shape, &y), "phx_tensor_create");
  std::vector<float> host(static_cast<size_t>(kBatch * 3 * kSide * kSide), 0.5f);
  check(phx_tensor_upload(x, 0, host.data(), host.size() * sizeof(float)), "phx_tensor_upload");
  auto run = [&] {
    check(phx_executable_run(stream, exe, &x, 1, &y, 1, nullptr), "phx_executable_run");
    check(phx_stream_synchronize(stream), "phx_stream_synchronize");
  };
  run();
  for (auto _ : state) run();
  phx_tensor_destroy(x);
  phx_tensor_destroy(y);
  phx_stream_destroy(stream);
  phx_executable_destroy(exe);
  phx_graph_destroy(graph);
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = phx_bench::bench_threads();
  setenv("PHX_NUM_THREADS", std::to_string(threads).c_str(), 1);
  openblas_set_num_threads(static_cast<int>(threads));
  phx_context context = nullptr;
  check(phx_context_create(nullptr, &context), "phx_context_create");
  size_t cpu = 0;  // the first device of the cpu plugin
  size_t count = 0;
  check(phx_device_count(context, &count), "phx_device_count");
  for (size_t d = count; d-- > 0;) {
    phx_device_info info{};
    info.struct_size = sizeof info;
    check(phx_device_get(context, d, &info), "phx_device_get");
    if (std::string(info.plugin) == "cpu") cpu = d;
  }
  // Peak memory of one import, before any benchmark raises the peak.
  std::ifstream model(kModels + "/big.onnx", std::ios::binary | std::ios::ate);
  const double model_kib = static_cast<double>(model.tellg()) / 1024.0;
  const long before = peak_rss_kib();
  phx_graph graph = nullptr;
  check(phx_model_load_onnx(context, (kModels + "/big.onnx").c_str(), nullptr, &graph), "import");
  const long after = peak_rss_kib();
  phx_graph_destroy(graph);

  benchmark::RegisterBenchmark("import_big", BM_import_big, context)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("read_big", BM_read_big)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("cnn_phynexus_cpu", BM_cnn_phynexus_cpu, context, cpu)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("cnn_openblas", BM_cnn_openblas)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  // The median with repetitions (as bench/run.sh runs it), else the one result.
  benchmark::Initialize(&argc, argv);
  phx_bench::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  auto time = [&](const std::string& name) {
    const auto* run = reporter.find(name + "/");
    return run == nullptr ? -1.0 : run->GetAdjustedRealTime();
  };
  std::printf(
      "\nimport of a %.1f MB model: %.0f ms, %.2fx the time of reading the file; "
      "peak RSS grew by %.2f model sizes\n",
      model_kib / 1024.0 * 1.048576, time("import_big"), time("import_big") / time("read_big"),
      static_cast<double>(after - before) / model_kib);
  if (time("cnn_phynexus_cpu") > 0 && time("cnn_openblas") > 0)
    std::printf("cnn (batch 8, 64x64) on the CPU device: %.2fx the time of OpenBLAS im2col\n",
                time("cnn_phynexus_cpu") / time("cnn_openblas"));
  phx_context_destroy(context);
  benchmark::Shutdown();
  return 0;
}
