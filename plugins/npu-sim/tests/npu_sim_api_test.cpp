// The NPU-sim plugin through the C API: the devices each profile lists, the ops each
// supports, DRAM capacity and limits, what memory optimization saves, configuration
// errors, profile metrics and statistics, the quantization error, and the CPU fallback.
// Every test sets PHX_NPU_SIM before creating its context (the plugin reads it then).
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "npu_sim_test_context.h"

namespace {

using npu_sim_test::run;
using npu_sim_test::Sim;
using phx_test::expect_rejected;
using phx_test::metric;
using phx_test::property;
using phx_test::Tensor;

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// ---- devices and op sets ---------------------------------------------------------------

TEST(NpuSim, ListsEveryDeviceWithItsProfile) {
  Sim sim("profile=edge,devices=2");
  ASSERT_EQ(sim.devices().size(), 2u);
  for (size_t d : sim.devices()) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(sim.context(), d, &info), PHX_STATUS_OK);
    EXPECT_EQ(info.type, PHX_DEVICE_NPU);
    EXPECT_STREQ(info.name, "NPU edge (simulated)");
    EXPECT_EQ(info.memory_total_bytes, uint64_t{1} << 30);
    EXPECT_EQ(info.compute_units, 8u);
    EXPECT_NE(info.dtype_mask & PHX_DTYPE_BIT(PHX_DTYPE_I16), 0u);
    EXPECT_NE(info.dtype_mask & PHX_DTYPE_BIT(PHX_DTYPE_F16), 0u);
    EXPECT_EQ(property(sim.context(), d, "profile"), "edge");
    EXPECT_EQ(property(sim.context(), d, "sram"), "8 MiB (8388608 bytes)");
    EXPECT_EQ(property(sim.context(), d, "dram"), "1 GiB (1073741824 bytes)");
    EXPECT_EQ(property(sim.context(), d, "dram_bandwidth"), "12.8 GB/s");
    EXPECT_EQ(property(sim.context(), d, "int8_macs_per_cycle"), "16384");
    EXPECT_EQ(property(sim.context(), d, "clock"), "0.8 GHz");
    EXPECT_EQ(property(sim.context(), d, "peak_int8_tops"), "26.21");
    EXPECT_EQ(property(sim.context(), d, "peak_int16_tops"), "13.11");
    EXPECT_EQ(property(sim.context(), d, "memory_optimization"), "off");
    EXPECT_NE(property(sim.context(), d, "supported_ops").find("qmatmul(i8,i16,u8)"),
              std::string::npos);
  }
  EXPECT_TRUE(sim.has_cpu());
}

TEST(NpuSim, EachProfileAnswersForItsOpSet) {
  {
    Sim sim("profile=mobile");
    const size_t d = sim.device();
    EXPECT_TRUE(sim.supports(d, PHX_OP_QMATMUL, PHX_DTYPE_I8));
    EXPECT_TRUE(sim.supports(d, PHX_OP_QMATMUL, PHX_DTYPE_U8));
    EXPECT_FALSE(sim.supports(d, PHX_OP_QMATMUL, PHX_DTYPE_I16));  // no 16x8
    EXPECT_TRUE(sim.supports(d, PHX_OP_QCONV2D, PHX_DTYPE_I8));
    EXPECT_TRUE(sim.supports(d, PHX_OP_QUANTIZE, PHX_DTYPE_F32));
    EXPECT_TRUE(sim.supports(d, PHX_OP_DEQUANTIZE, PHX_DTYPE_I32));
    EXPECT_TRUE(sim.supports(d, PHX_OP_RELU, PHX_DTYPE_I8));
    EXPECT_TRUE(sim.supports(d, PHX_OP_ADD, PHX_DTYPE_I8));
    EXPECT_FALSE(sim.supports(d, PHX_OP_DYNAMIC_QUANTIZE, PHX_DTYPE_F32));
    EXPECT_FALSE(sim.supports(d, PHX_OP_SOFTMAX, PHX_DTYPE_F32));
    EXPECT_FALSE(sim.supports(d, PHX_OP_MATMUL, PHX_DTYPE_F32));
    EXPECT_FALSE(sim.supports(d, PHX_OP_ADD, PHX_DTYPE_F32));
    EXPECT_TRUE(sim.supports(d, PHX_OP_SUB, PHX_DTYPE_I8));
    EXPECT_TRUE(sim.supports(d, PHX_OP_MUL, PHX_DTYPE_I8));
    EXPECT_TRUE(sim.supports(d, PHX_OP_REDUCE_SUM, PHX_DTYPE_I8));
    EXPECT_TRUE(sim.supports(d, PHX_OP_TRANSPOSE, PHX_DTYPE_F32));
    EXPECT_TRUE(sim.supports(d, PHX_OP_CAST, PHX_DTYPE_F32));
    EXPECT_FALSE(sim.supports(d, PHX_OP_REDUCE_SUM, PHX_DTYPE_F32));
    // The f16 float path, the MAC-array ops at the f16 rate.
    for (phx_op_id op : {PHX_OP_MATMUL, PHX_OP_CONV2D, PHX_OP_ATTENTION, PHX_OP_SOFTMAX,
                         PHX_OP_RMS_NORM, PHX_OP_ROPE, PHX_OP_SILU, PHX_OP_DIV})
      EXPECT_TRUE(sim.supports(d, op, PHX_DTYPE_F16)) << op;
    EXPECT_FALSE(sim.supports(d, PHX_OP_MATMUL, PHX_DTYPE_BF16));
    // The layout ops move every dtype it holds; the pools, resize and conv_transpose2d
    // (on the MAC array) are f16, and max_pool i8 too, as reduce_max.
    for (phx_op_id op : {PHX_OP_RESHAPE, PHX_OP_CONCAT, PHX_OP_SLICE, PHX_OP_GATHER, PHX_OP_EXPAND,
                         PHX_OP_TILE, PHX_OP_PAD})
      for (phx_dtype dt : {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_I32, PHX_DTYPE_I8, PHX_DTYPE_U8})
        EXPECT_TRUE(sim.supports(d, op, dt)) << op << " " << dt;
    for (phx_op_id op :
         {PHX_OP_MAX_POOL, PHX_OP_AVG_POOL, PHX_OP_CONV_TRANSPOSE2D, PHX_OP_RESIZE}) {
      EXPECT_TRUE(sim.supports(d, op, PHX_DTYPE_F16)) << op;
      EXPECT_FALSE(sim.supports(d, op, PHX_DTYPE_F32)) << op;
    }
    EXPECT_TRUE(sim.supports(d, PHX_OP_MAX_POOL, PHX_DTYPE_I8));
    EXPECT_FALSE(sim.supports(d, PHX_OP_AVG_POOL, PHX_DTYPE_I8));
    // Its datapath holds no 16-bit values at all.
    Tensor t(sim.context(), d, PHX_DTYPE_I16, {4});
    EXPECT_EQ(t.status(), PHX_STATUS_UNSUPPORTED);
  }
  {
    Sim sim("profile=edge");
    const size_t d = sim.device();
    EXPECT_TRUE(sim.supports(d, PHX_OP_QMATMUL, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_QCONV2D, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_DYNAMIC_QUANTIZE, PHX_DTYPE_F32));
    EXPECT_TRUE(sim.supports(d, PHX_OP_RELU, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_MUL, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_REDUCE_MAX, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_MAX_POOL, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_PAD, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_MATMUL, PHX_DTYPE_F16));
  }
  {
    // Without an f16 MAC array the f16 products go, the vector unit's f16 ops stay.
    Sim sim("profile=mobile,fp16_macs_per_cycle=0");
    for (phx_op_id op : {PHX_OP_MATMUL, PHX_OP_CONV2D, PHX_OP_CONV_TRANSPOSE2D, PHX_OP_ATTENTION})
      EXPECT_FALSE(sim.supports(sim.device(), op, PHX_DTYPE_F16)) << op;
    EXPECT_TRUE(sim.supports(sim.device(), PHX_OP_SOFTMAX, PHX_DTYPE_F16));
  }
  {
    // Without an int16 MAC array there is no 16x8.
    Sim sim("profile=edge,int16_macs_per_cycle=0");
    EXPECT_FALSE(sim.supports(sim.device(), PHX_OP_QMATMUL, PHX_DTYPE_I16));
    EXPECT_TRUE(sim.supports(sim.device(), PHX_OP_QMATMUL, PHX_DTYPE_I8));
  }
  {
    Sim sim("profile=datacenter");
    const size_t d = sim.device();
    EXPECT_TRUE(sim.supports(d, PHX_OP_MATMUL, PHX_DTYPE_F16));
    EXPECT_TRUE(sim.supports(d, PHX_OP_SOFTMAX, PHX_DTYPE_F16));
    EXPECT_FALSE(sim.supports(d, PHX_OP_MATMUL, PHX_DTYPE_F32));
    EXPECT_FALSE(sim.supports(d, PHX_OP_MATMUL, PHX_DTYPE_BF16));
  }
}

// The ops of API 0.3 from sigmoid to instance_norm, every dtype asked of every profile:
// float math in f16; the ops exact on integers on i8 (and i16 where the profile computes
// in it) too; where and not on u8; nothing on f32, bf16 or i32.
TEST(NpuSim, EachProfileRunsTheVectorOpsOfApi03InItsWidths) {
  const std::vector<phx_op_id> float_only = {
      PHX_OP_SIGMOID,     PHX_OP_TANH,       PHX_OP_EXP,          PHX_OP_LOG,
      PHX_OP_SQRT,        PHX_OP_ERF,        PHX_OP_FLOOR,        PHX_OP_CEIL,
      PHX_OP_RECIPROCAL,  PHX_OP_SOFTPLUS,   PHX_OP_LEAKY_RELU,   PHX_OP_ELU,
      PHX_OP_SELU,        PHX_OP_POW,        PHX_OP_PRELU,        PHX_OP_REDUCE_MEAN,
      PHX_OP_LOG_SOFTMAX, PHX_OP_BATCH_NORM, PHX_OP_INSTANCE_NORM};
  const std::vector<phx_op_id> integer_too = {PHX_OP_NEG,    PHX_OP_ABS,        PHX_OP_SIGN,
                                              PHX_OP_CLIP,   PHX_OP_MAX,        PHX_OP_MIN,
                                              PHX_OP_EQUAL,  PHX_OP_LESS,       PHX_OP_GREATER,
                                              PHX_OP_ARGMAX, PHX_OP_REDUCE_MIN, PHX_OP_REDUCE_PROD};
  const std::vector<phx_op_id> boolean = {PHX_OP_WHERE, PHX_OP_NOT};
  ASSERT_EQ(float_only.size() + integer_too.size() + boolean.size(),
            size_t(PHX_OP_INSTANCE_NORM - PHX_OP_SIGMOID + 1));
  for (const char* profile : {"mobile", "edge", "datacenter"}) {
    Sim sim((std::string("profile=") + profile).c_str());
    const size_t d = sim.device();
    const bool wide = std::string(profile) != "mobile";
    auto expect_set = [&](const std::vector<phx_op_id>& ops, std::vector<phx_dtype> runs) {
      for (phx_op_id op : ops)
        for (int value = PHX_DTYPE_F32; value < PHX_DTYPE_COUNT; ++value) {
          const auto dt = static_cast<phx_dtype>(value);
          const bool expected = std::find(runs.begin(), runs.end(), dt) != runs.end();
          EXPECT_EQ(sim.supports(d, op, dt), expected)
              << profile << " " << phx_op_name(op) << " " << phx_dtype_name(dt);
        }
    };
    expect_set(float_only, {PHX_DTYPE_F16});
    expect_set(integer_too, wide ? std::vector{PHX_DTYPE_F16, PHX_DTYPE_I8, PHX_DTYPE_I16}
                                 : std::vector{PHX_DTYPE_F16, PHX_DTYPE_I8});
    expect_set(boolean, {PHX_DTYPE_U8});
  }
}

TEST(NpuSim, UnsupportedOpIsRefusedWithoutFallback) {
  Sim sim("profile=mobile");
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), sim.device(), &stream), PHX_STATUS_OK);
  Tensor x(sim.context(), sim.device(), PHX_DTYPE_F32, {2, 8});
  Tensor y(sim.context(), sim.device(), PHX_DTYPE_F32, {2, 8});
  x.upload(std::vector<float>(16, 1.0f));
  EXPECT_EQ(run(stream, PHX_OP_SOFTMAX, nullptr, {x.get()}, {y.get()}), PHX_STATUS_UNSUPPORTED);
  phx_stream_destroy(stream);
}

// ---- memory ------------------------------------------------------------------------------

TEST(NpuSim, DramCapacityAndLimitAreEnforced) {
  Sim sim("dram_bytes=1048576");
  const size_t d = sim.device();
  {
    Tensor fits(sim.context(), d, PHX_DTYPE_I8, {524288});
    ASSERT_EQ(fits.status(), PHX_STATUS_OK);
    Tensor too_big(sim.context(), d, PHX_DTYPE_I8, {786432});
    EXPECT_EQ(too_big.status(), PHX_STATUS_OUT_OF_MEMORY);
    const std::string message = phx_last_error();
    EXPECT_NE(message.find("requested 786432 bytes"), std::string::npos) << message;
    EXPECT_NE(message.find("524288 bytes in use"), std::string::npos) << message;
    EXPECT_NE(message.find("capacity 1048576 bytes"), std::string::npos) << message;
    const phx_memory_stats s = sim.memory(d);
    EXPECT_EQ(s.bytes_in_use, 524288u);
    EXPECT_EQ(s.allocation_count, 1u);
    EXPECT_EQ(s.limit_bytes, 1048576u);
  }
  EXPECT_EQ(sim.memory(d).bytes_in_use, 0u);
  EXPECT_EQ(sim.memory(d).peak_bytes_in_use, 524288u);

  ASSERT_EQ(phx_memory_set_limit(sim.context(), d, 262144), PHX_STATUS_OK);
  EXPECT_EQ(sim.memory(d).limit_bytes, 262144u);
  {
    Tensor over_limit(sim.context(), d, PHX_DTYPE_I8, {524288});
    EXPECT_EQ(over_limit.status(), PHX_STATUS_OUT_OF_MEMORY);
    EXPECT_NE(std::string(phx_last_error()).find("limit 262144 bytes"), std::string::npos);
  }
  ASSERT_EQ(phx_memory_set_limit(sim.context(), d, 0), PHX_STATUS_OK);
  Tensor back(sim.context(), d, PHX_DTYPE_I8, {524288});
  EXPECT_EQ(back.status(), PHX_STATUS_OK);
}

TEST(NpuSim, MemoryLimitKeySetsTheInitialLimit) {
  Sim sim("profile=edge,memory_limit=65536");
  EXPECT_EQ(sim.memory(sim.device()).limit_bytes, 65536u);
  Tensor t(sim.context(), sim.device(), PHX_DTYPE_I8, {65537});
  EXPECT_EQ(t.status(), PHX_STATUS_OUT_OF_MEMORY);
}

// The same allocation pattern (a model's steps: the same tensors created and destroyed)
// with and without memory optimization; returns the device's statistics and, in after,
// its memory statistics before the cache is released.
std::map<std::string, double> run_steps(const char* settings, phx_memory_stats& after) {
  Sim sim(settings);
  const size_t d = sim.device();
  for (int step = 0; step < 10; ++step) {
    Tensor a(sim.context(), d, PHX_DTYPE_I8, {1000});
    Tensor b(sim.context(), d, PHX_DTYPE_F32, {10000});
    Tensor c(sim.context(), d, PHX_DTYPE_I32, {250, 250});
    EXPECT_EQ(c.status(), PHX_STATUS_OK);
  }
  after = sim.memory(d);
  const auto stats = sim.stats(d);
  EXPECT_EQ(phx_memory_release_cached(sim.context(), d), PHX_STATUS_OK);
  EXPECT_EQ(sim.memory(d).bytes_cached, 0u);
  return stats;
}

TEST(NpuSim, MemoryOptimizationReusesFreedBuffers) {
  phx_memory_stats plain_memory, optimized_memory;
  auto plain = run_steps("memory_optimization=0", plain_memory);
  auto optimized = run_steps("memory_optimization=1", optimized_memory);
  EXPECT_EQ(plain["host_allocations"], 30.0);
  EXPECT_EQ(plain["buffers_reused"], 0.0);
  EXPECT_EQ(plain["bytes_reused"], 0.0);
  EXPECT_EQ(plain_memory.bytes_cached, 0u);
  EXPECT_EQ(optimized["host_allocations"], 3.0);  // the first step's
  EXPECT_EQ(optimized["buffers_reused"], 27.0);
  // Size classes: 1000 -> 1024, 40000 -> 40960, 250000 -> 262144 bytes.
  const double step_bytes = 1024 + 40960 + 262144;
  EXPECT_EQ(optimized["bytes_reused"], 9 * step_bytes);
  EXPECT_EQ(optimized_memory.bytes_cached, uint64_t(step_bytes));
  EXPECT_EQ(optimized_memory.bytes_in_use, 0u);
}

// ---- configuration errors ------------------------------------------------------------------

TEST(NpuSim, BadConfigurationRejectsThePluginNamingTheKey) {
  expect_rejected(Sim("profile=tiny"), "'profile'");
  expect_rejected(Sim("devices=0"), "'devices'");
  expect_rejected(Sim("memory_optimization=maybe"), "'memory_optimization'");
  expect_rejected(Sim("profile=edge,memory_limit=2147483648"), "'memory_limit'");
  expect_rejected(Sim("devices=2,turbo=1"), "'turbo'");
}

TEST(NpuSim, BadConfigFileRejectsThePlugin) {
  phx_test::expect_config_file_read(npu_sim_test::kNpuSim, "profile", "edge", "devices");
}

// ---- the timing model in profile records and statistics ---------------------------------

TEST(NpuSim, ProfileRecordsAndStatisticsCarryTheModel) {
  Sim sim("profile=mobile", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  // relu i8 on 2^20 elements: ceil(2^20 / 64 lanes) = 16384 cycles at 1 GHz; DRAM 2 MiB
  // at 51.2 GB/s = 40960 ns: memory-bound; + 2000 ns of op overhead.
  const int64_t n = int64_t{1} << 20;
  Tensor x(sim.context(), d, PHX_DTYPE_I8, {n});
  Tensor y(sim.context(), d, PHX_DTYPE_I8, {n});
  Tensor z(sim.context(), d, PHX_DTYPE_I8, {n});
  std::vector<int8_t> values(static_cast<size_t>(n));
  for (size_t i = 0; i < values.size(); ++i) values[i] = int8_t(int(i % 200) - 100);
  x.upload(values);
  ASSERT_EQ(run(stream, PHX_OP_RELU, nullptr, {x.get()}, {y.get()}), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(run(stream, PHX_OP_ADD, nullptr, {y.get(), y.get()}, {z.get()}), PHX_STATUS_OK)
      << phx_last_error();
  const auto relu = y.download<int8_t>(size_t(n));
  EXPECT_EQ(relu[0], 0);
  EXPECT_EQ(relu[150], 50);

  EXPECT_EQ(metric(stream, 0, "macs"), 0.0);
  EXPECT_EQ(metric(stream, 0, "cycles"), 16384.0);
  EXPECT_EQ(metric(stream, 0, "dram_bytes"), 2.0 * n);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "compute_ns"), 16384.0);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "memory_ns"), 2.0 * n / 51.2);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "estimated_time_ns"), 2.0 * n / 51.2 + 2000);
  EXPECT_EQ(metric(stream, 0, "memory_bound"), 1.0);
  EXPECT_TRUE(std::isnan(metric(stream, 0, "quant_error_rel")));  // not a quantized op
  EXPECT_EQ(metric(stream, 1, "dram_bytes"), 3.0 * n);            // add: two inputs, one output

  auto stats = sim.stats(d);
  EXPECT_EQ(stats["ops"], 2.0);
  EXPECT_EQ(stats["macs_total"], 0.0);
  EXPECT_EQ(stats["dram_bytes_total"], 5.0 * n);
  EXPECT_EQ(stats["memory_bound_ops"], 2.0);
  EXPECT_DOUBLE_EQ(stats["modelled_time_ns_total"],
                   metric(stream, 0, "estimated_time_ns") + metric(stream, 1, "estimated_time_ns"));
  EXPECT_EQ(stats["fallback_ops"], 0.0);
  phx_stream_destroy(stream);
}

TEST(NpuSim, DatacenterF16MatmulRunsAtTheF16Rate) {
  Sim sim("profile=datacenter", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  Tensor a(sim.context(), d, PHX_DTYPE_F16, {64, 128}),
      b(sim.context(), d, PHX_DTYPE_F16, {128, 32});
  Tensor c(sim.context(), d, PHX_DTYPE_F32, {64, 32});
  a.upload(std::vector<uint16_t>(64 * 128, 0x3c00));  // 1.0
  b.upload(std::vector<uint16_t>(128 * 32, 0x3800));  // 0.5
  ASSERT_EQ(run(stream, PHX_OP_MATMUL, nullptr, {a.get(), b.get()}, {c.get()}), PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_EQ(c.download<float>(1)[0], 64.0f);
  // 64 * 32 * 128 = 262144 MACs at 65536 f16 MACs per cycle: 4 cycles at 1.5 GHz; DRAM
  // 16384 + 8192 + 8192 bytes at 136.5 GB/s: memory-bound, + 1000 ns.
  EXPECT_EQ(metric(stream, 0, "macs"), 262144.0);
  EXPECT_EQ(metric(stream, 0, "cycles"), 4.0);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "compute_ns"), 4 / 1.5);
  EXPECT_EQ(metric(stream, 0, "dram_bytes"), 32768.0);
  EXPECT_EQ(metric(stream, 0, "memory_bound"), 1.0);
  EXPECT_DOUBLE_EQ(metric(stream, 0, "estimated_time_ns"), 32768 / 136.5 + 1000);
  phx_stream_destroy(stream);
}

// ---- quantized ops ------------------------------------------------------------------------

// Symmetric per-tensor int8 quantization of v: the scale and the values.
float symmetric_scale(const std::vector<float>& v, float qmax) {
  float m = 0;
  for (float x : v) m = std::max(m, std::abs(x));
  return m / qmax;
}

std::vector<int8_t> quantize_i8(const std::vector<float>& v, float scale) {
  std::vector<int8_t> q(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    q[i] = int8_t(std::clamp(std::nearbyint(v[i] / scale), -127.0f, 127.0f));
  return q;
}

// qmatmul of Gaussian a [M x K] and b [K x N] quantized to int8 (b per column), with i8
// out (a min-max output scale) and with the raw i32 accumulators.
TEST(NpuSim, QmatmulReportsItsErrorAgainstF32) {
  Sim sim("profile=mobile", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  const int64_t m = 64, k = 256, n = 96;
  const auto af = gaussian(size_t(m * k), 1), bf = gaussian(size_t(k * n), 2);
  const float a_scale = symmetric_scale(af, 127);
  std::vector<float> b_scales(static_cast<size_t>(n));
  std::vector<int8_t> bq(static_cast<size_t>(k * n));
  for (int64_t j = 0; j < n; ++j) {
    float mx = 0;
    for (int64_t i = 0; i < k; ++i) mx = std::max(mx, std::abs(bf[size_t(i * n + j)]));
    b_scales[size_t(j)] = mx / 127;
    for (int64_t i = 0; i < k; ++i)
      bq[size_t(i * n + j)] = int8_t(std::nearbyint(bf[size_t(i * n + j)] / b_scales[size_t(j)]));
  }
  // The f32 product's spread: sqrt(K) for unit Gaussians; min-max over +-4 sigma.
  const float y_scale = 4.0f * std::sqrt(float(k)) / 127;

  Tensor a(sim.context(), d, PHX_DTYPE_I8, {m, k}), b(sim.context(), d, PHX_DTYPE_I8, {k, n});
  Tensor as(sim.context(), d, PHX_DTYPE_F32, {1}), bs(sim.context(), d, PHX_DTYPE_F32, {n});
  Tensor ys(sim.context(), d, PHX_DTYPE_F32, {1}), yz(sim.context(), d, PHX_DTYPE_I32, {1});
  Tensor y(sim.context(), d, PHX_DTYPE_I8, {m, n}), acc(sim.context(), d, PHX_DTYPE_I32, {m, n});
  a.upload(quantize_i8(af, a_scale));
  b.upload(bq);
  as.upload(std::vector<float>{a_scale});
  bs.upload(b_scales);
  ys.upload(std::vector<float>{y_scale});
  yz.upload(std::vector<int32_t>{0});
  ASSERT_EQ(
      run(stream, PHX_OP_QMATMUL, nullptr,
          {a.get(), b.get(), as.get(), nullptr, bs.get(), nullptr, nullptr, ys.get(), yz.get()},
          {y.get()}),
      PHX_STATUS_OK)
      << phx_last_error();
  // The raw accumulators: exact integers, so only the inputs' quantization is left.
  ASSERT_EQ(run(stream, PHX_OP_QMATMUL, nullptr, {a.get(), b.get(), as.get(), nullptr, bs.get()},
                {acc.get()}),
            PHX_STATUS_OK)
      << phx_last_error();

  // Requantized to int8: the output's rounding, about 1%.
  const double requantized = metric(stream, 0, "quant_error_rel");
  EXPECT_GT(requantized, 0.002);
  EXPECT_LT(requantized, 0.03);
  // The raw accumulators are exact: against f32 on the same dequantized inputs only the
  // f32 rounding of the reference is left.
  EXPECT_LT(metric(stream, 1, "quant_error_rel"), 1e-5);

  // The same a as u8 with zero point 128: the reference dequantizes with it.
  Tensor a_u8(sim.context(), d, PHX_DTYPE_U8, {m, k}), azp(sim.context(), d, PHX_DTYPE_I32, {1});
  std::vector<uint8_t> shifted(static_cast<size_t>(m * k));
  const auto aq_i8 = quantize_i8(af, a_scale);
  for (size_t i = 0; i < shifted.size(); ++i) shifted[i] = uint8_t(aq_i8[i] + 128);
  a_u8.upload(shifted);
  azp.upload(std::vector<int32_t>{128});
  ASSERT_EQ(run(stream, PHX_OP_QMATMUL, nullptr,
                {a_u8.get(), b.get(), as.get(), azp.get(), bs.get()}, {acc.get()}),
            PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_LT(metric(stream, 2, "quant_error_rel"), 1e-5);
  EXPECT_EQ(metric(stream, 0, "macs"), double(m * n * k));
  // 64 * 96 * 256 MACs at 8192 per cycle, 1 GHz.
  EXPECT_EQ(metric(stream, 0, "cycles"), std::ceil(double(m * n * k) / 8192));
  EXPECT_EQ(sim.stats(d)["macs_total"], 3.0 * m * n * k);

  // The device computed the integer product (the u8 run's, zero point removed):
  // spot-check one accumulator.
  const auto acc_values = acc.download<int32_t>(size_t(m * n));
  int32_t want = 0;
  for (int64_t i = 0; i < k; ++i) want += int32_t(aq_i8[size_t(i)]) * bq[size_t(i * n)];
  EXPECT_EQ(acc_values[0], want);
  phx_stream_destroy(stream);
}

TEST(NpuSim, Qconv2dReportsItsErrorAgainstF32) {
  Sim sim("profile=edge", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  // NCHW x [1, 16, 10, 10] in int16 (16x8), weight [8, 16, 3, 3] per output channel,
  // bias [8]; f32 out (dequantized by the op) and i16 out (requantized).
  const int64_t c_in = 16, c_out = 8, h = 10, w = 10;
  const auto xf = gaussian(static_cast<size_t>(c_in * h * w), 3);
  const auto wf = gaussian(static_cast<size_t>(c_out * c_in * 9), 4);
  const float x_scale = symmetric_scale(xf, 32767);
  std::vector<int16_t> xq(xf.size());
  for (size_t i = 0; i < xf.size(); ++i) xq[i] = int16_t(std::nearbyint(xf[i] / x_scale));
  std::vector<float> w_scales(static_cast<size_t>(c_out));
  std::vector<int8_t> wq(wf.size());
  for (int64_t o = 0; o < c_out; ++o) {
    const std::vector<float> row(wf.begin() + o * c_in * 9, wf.begin() + (o + 1) * c_in * 9);
    w_scales[size_t(o)] = symmetric_scale(row, 127);
    for (int64_t i = 0; i < c_in * 9; ++i)
      wq[size_t(o * c_in * 9 + i)] = int8_t(std::nearbyint(row[size_t(i)] / w_scales[size_t(o)]));
  }
  Tensor x(sim.context(), d, PHX_DTYPE_I16, {1, c_in, h, w});
  Tensor wt(sim.context(), d, PHX_DTYPE_I8, {c_out, c_in, 3, 3});
  Tensor xs(sim.context(), d, PHX_DTYPE_F32, {1}), ws(sim.context(), d, PHX_DTYPE_F32, {c_out});
  Tensor bias(sim.context(), d, PHX_DTYPE_I32, {c_out});
  Tensor ys(sim.context(), d, PHX_DTYPE_F32, {1}), yz(sim.context(), d, PHX_DTYPE_I32, {1});
  Tensor y(sim.context(), d, PHX_DTYPE_F32, {1, c_out, 8, 8});
  Tensor y16(sim.context(), d, PHX_DTYPE_I16, {1, c_out, 8, 8});
  x.upload(xq);
  wt.upload(wq);
  xs.upload(std::vector<float>{x_scale});
  ws.upload(w_scales);
  bias.upload(std::vector<int32_t>{100000, -100000, 0, 5, 50000, -7, 0, 1});
  // Outputs spread about sqrt(K) = 12: +-80 covers them.
  ys.upload(std::vector<float>{80.0f / 32767});
  yz.upload(std::vector<int32_t>{0});
  ASSERT_EQ(run(stream, PHX_OP_QCONV2D, nullptr,
                {x.get(), wt.get(), xs.get(), nullptr, ws.get(), nullptr, bias.get()}, {y.get()}),
            PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(
      run(stream, PHX_OP_QCONV2D, nullptr,
          {x.get(), wt.get(), xs.get(), nullptr, ws.get(), nullptr, bias.get(), ys.get(), yz.get()},
          {y16.get()}),
      PHX_STATUS_OK)
      << phx_last_error();
  // f32 out: exact accumulation, dequantized per channel with the bias; f32 rounding left.
  EXPECT_LT(metric(stream, 0, "quant_error_rel"), 1e-5);
  // i16 out: a step of 80 / 32767 against values of about 12.
  const double error = metric(stream, 1, "quant_error_rel");
  EXPECT_GT(error, 1e-6);
  EXPECT_LT(error, 1e-3);
  // M = 64 pixels, K = 16 * 9, N = 8 at the int16 rate: 8192 MACs per cycle, 0.8 GHz.
  EXPECT_EQ(metric(stream, 0, "macs"), 64.0 * 144 * 8);
  EXPECT_EQ(metric(stream, 0, "cycles"), std::ceil(64.0 * 144 * 8 / 8192));
  phx_stream_destroy(stream);
}

TEST(NpuSim, QuantizeAndDynamicQuantizeReportTheirRoundingError) {
  Sim sim("profile=edge", PHX_CONTEXT_PROFILE);
  const size_t d = sim.device();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  const auto xf = gaussian(4096, 5);
  Tensor x(sim.context(), d, PHX_DTYPE_F32, {64, 64});
  Tensor scale(sim.context(), d, PHX_DTYPE_F32, {1}), zp(sim.context(), d, PHX_DTYPE_I32, {1});
  Tensor q(sim.context(), d, PHX_DTYPE_I8, {64, 64});
  Tensor dq(sim.context(), d, PHX_DTYPE_I8, {64, 64});
  Tensor dscale(sim.context(), d, PHX_DTYPE_F32, {1}), dzp(sim.context(), d, PHX_DTYPE_I32, {1});
  x.upload(xf);
  scale.upload(std::vector<float>{symmetric_scale(xf, 127)});
  zp.upload(std::vector<int32_t>{0});
  ASSERT_EQ(run(stream, PHX_OP_QUANTIZE, nullptr, {x.get(), scale.get(), zp.get()}, {q.get()}),
            PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(
      run(stream, PHX_OP_DYNAMIC_QUANTIZE, nullptr, {x.get()}, {dq.get(), dscale.get(), dzp.get()}),
      PHX_STATUS_OK)
      << phx_last_error();
  // Rounding to a step of max|x| / 127 (about 3.7 / 127): uniform noise of step / sqrt(12)
  // against unit values, about 0.8%.
  for (size_t record : {0u, 1u}) {
    const double error = metric(stream, record, "quant_error_rel");
    EXPECT_GT(error, 0.002) << record;
    EXPECT_LT(error, 0.02) << record;
  }
  EXPECT_EQ(dscale.download<float>(1)[0], symmetric_scale(xf, 127));
  phx_stream_destroy(stream);
}

// ---- CPU fallback -------------------------------------------------------------------------

TEST(NpuSim, UnsupportedOpRunsOnTheCpuWithFallback) {
  Sim sim("profile=mobile", PHX_CONTEXT_FALLBACK_CPU);
  const size_t d = sim.device();
  ASSERT_FALSE(sim.supports(d, PHX_OP_SOFTMAX, PHX_DTYPE_F32));
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(sim.context(), d, &stream), PHX_STATUS_OK);
  Tensor x(sim.context(), d, PHX_DTYPE_F32, {2, 3});
  Tensor y(sim.context(), d, PHX_DTYPE_F32, {2, 3});
  x.upload(std::vector<float>{0, 0, 0, 1000, 1000, -1000});
  ASSERT_EQ(run(stream, PHX_OP_SOFTMAX, nullptr, {x.get()}, {y.get()}), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
  const auto got = y.download<float>(6);
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(got[i], 1.0f / 3, 1e-6f);
  EXPECT_NEAR(got[3], 0.5f, 1e-6f);
  EXPECT_NEAR(got[5], 0.0f, 1e-6f);
  auto stats = sim.stats(d);
  EXPECT_EQ(stats["fallback_ops"], 1.0);
  EXPECT_EQ(stats["ops"], 0.0);  // the NPU itself ran nothing
  phx_stream_destroy(stream);
}

}  // namespace
