// conv2d on the CPU device against im2col + OpenBLAS sgemm in the same run (issue #19):
// ResNet-like layers, f32, NCHW, bias, no activation, batch 1 and 8:
// - 3x3 (padding 1) and 1x1 convolutions of 56x56x64 (64 -> 64 channels) and of
//   14x14x256 (256 -> 256).
// The reference fills each image's output with the bias and adds w [Cout, Cin*kh*kw] .
// col [Cin*kh*kw, H*W] with cblas_sgemm; a 1x1 convolution needs no col (x is the matrix).
// At the end it prints, per layer, OpenBLAS's time over the CPU device's: the speed of the
// CPU device relative to OpenBLAS, which issue #19 wants at 0.8 or more.
#include <cblas.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_common.h"

namespace {

using phx_bench::check;

struct Layer {
  const char* name;
  int64_t channels, side, kernel;
};

constexpr Layer kLayers[] = {
    {"3x3_56x56x64", 64, 56, 3},
    {"1x1_56x56x64", 64, 56, 1},
    {"3x3_14x14x256", 256, 14, 3},
    {"1x1_14x14x256", 256, 14, 1},
};
constexpr int64_t kBatches[] = {1, 8};

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 17 - 8);
  return v;
}

void BM_conv_phynexus_cpu(benchmark::State& state, const phx_bench::CpuDevice* cpu, Layer layer,
                          int64_t batch) {
  const int64_t c = layer.channels, s = layer.side, k = layer.kernel;
  phx_bench::Tensor x(*cpu, PHX_DTYPE_F32, {batch, c, s, s}), w(*cpu, PHX_DTYPE_F32, {c, c, k, k}),
      b(*cpu, PHX_DTYPE_F32, {c}), y(*cpu, PHX_DTYPE_F32, {batch, c, s, s});
  const std::vector<float> xv = ramp(batch * c * s * s, 0.1f), wv = ramp(c * c * k * k, 0.01f),
                           bv = ramp(c, 0.5f);
  check(phx_tensor_upload(x.get(), 0, xv.data(), xv.size() * sizeof(float)), "upload");
  check(phx_tensor_upload(w.get(), 0, wv.data(), wv.size() * sizeof(float)), "upload");
  check(phx_tensor_upload(b.get(), 0, bv.data(), bv.size() * sizeof(float)), "upload");
  phx_conv2d_params params = PHX_CONV2D_PARAMS_INIT;
  for (uint32_t& p : params.padding) p = static_cast<uint32_t>(k / 2);
  const phx_tensor inputs[3] = {x.get(), w.get(), b.get()}, output = y.get();
  phx_op_desc desc = phx_bench::op_desc(PHX_OP_CONV2D, inputs, 3, &output);
  desc.params = &params;
  auto run = [&] {
    uint64_t ticket = 0;
    check(phx_op_run(cpu->stream, &desc, &ticket), "phx_op_run");
    check(phx_stream_wait(cpu->stream, ticket), "phx_stream_wait");
  };
  run();
  for (auto _ : state) run();
}

void BM_conv_openblas(benchmark::State& state, Layer layer, int64_t batch) {
  const int64_t c = layer.channels, s = layer.side, k = layer.kernel, pixels = s * s,
                patch = c * k * k, pad = k / 2;
  const std::vector<float> x = ramp(batch * c * pixels, 0.1f), w = ramp(c * patch, 0.01f),
                           b = ramp(c, 0.5f);
  std::vector<float> col(static_cast<size_t>(k == 1 ? 0 : patch * pixels)),
      y(static_cast<size_t>(batch * c * pixels));
  for (auto _ : state) {
    for (int64_t n = 0; n < batch; ++n) {
      const float* in = x.data() + n * c * pixels;
      float* out = y.data() + n * c * pixels;
      if (k != 1) {
        for (int64_t r = 0; r < patch; ++r) {
          const int64_t ch = r / (k * k), ky = r / k % k, kx = r % k;
          float* row = col.data() + r * pixels;
          for (int64_t oy = 0; oy < s; ++oy) {
            const int64_t iy = oy + ky - pad;
            for (int64_t ox = 0; ox < s; ++ox) {
              const int64_t ix = ox + kx - pad;
              row[oy * s + ox] =
                  (iy >= 0 && iy < s && ix >= 0 && ix < s) ? in[(ch * s + iy) * s + ix] : 0.0f;
            }
          }
        }
      }
      for (int64_t o = 0; o < c; ++o) std::fill_n(out + o * pixels, pixels, b[o]);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(c),
                  static_cast<int>(pixels), static_cast<int>(patch), 1.0f, w.data(),
                  static_cast<int>(patch), k == 1 ? in : col.data(), static_cast<int>(pixels), 1.0f,
                  out, static_cast<int>(pixels));
    }
    benchmark::DoNotOptimize(y.data());
  }
}

std::string label(const Layer& layer, int64_t batch) {
  return std::string(layer.name) + "_batch" + std::to_string(batch);
}

}  // namespace

int main(int argc, char** argv) {
  const unsigned threads = phx_bench::bench_threads();
  openblas_set_num_threads(static_cast<int>(threads));
  phx_bench::CpuDevice cpu = phx_bench::open_cpu_device(threads);
  for (const Layer& layer : kLayers)
    for (int64_t batch : kBatches) {
      benchmark::RegisterBenchmark(("conv_phynexus_cpu/" + label(layer, batch)).c_str(),
                                   BM_conv_phynexus_cpu, &cpu, layer, batch)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("conv_openblas/" + label(layer, batch)).c_str(),
                                   BM_conv_openblas, layer, batch)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  // The median with repetitions, else the one result.
  benchmark::Initialize(&argc, argv);
  phx_bench::RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf(
      "\nconv2d, %u thread(s), %s: OpenBLAS im2col's time over the CPU device's "
      "(issue #19: >= 0.8)\n",
      threads, cpu.isa.c_str());
  for (const Layer& layer : kLayers)
    for (int64_t batch : kBatches) {
      const auto* phx = reporter.find("conv_phynexus_cpu/" + label(layer, batch) + "/");
      const auto* blas = reporter.find("conv_openblas/" + label(layer, batch) + "/");
      if (phx == nullptr || blas == nullptr) continue;
      std::printf("  %-22s %.2f (%.3f ms against %.3f ms)\n", label(layer, batch).c_str(),
                  blas->GetAdjustedRealTime() / phx->GetAdjustedRealTime(),
                  phx->GetAdjustedRealTime(), blas->GetAdjustedRealTime());
    }
  phx_bench::close_cpu_device(cpu);
  benchmark::Shutdown();
  return 0;
}
