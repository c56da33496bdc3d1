// The thread-safety promise of the C API (phynexus.h, "Thread safety" in its
// conventions): one context used by eight threads at once on every device it has, and
// a context destroyed while eight threads still use it. Built with the tsan preset
// these are the ThreadSanitizer run (`ctest --preset tsan -L threading`).
//
// Tolerances. Every input is a multiple of 1/8 in [-2, 2]: exact in f32, f16 and bf16,
// so a device that rounds products' inputs to bf16 (the TPU simulator) computes the same
// products, and each product a_k * b_k is exact in f32. A device that runs these ops
// only on integers (the NPU simulator) gets integers in [-16, 16] instead, and its
// results are exact: tolerance 0. With u(out) the unit roundoff of the output dtype
// (f32 2^-24, f16 2^-11, bf16 2^-8) and one final rounding to it,
// round(ref) = u(out) * |ref| + half the smallest subnormal of out:
//   - relu: exact (tolerance 0).
//   - add: one f32 addition of exact operands, then the final rounding:
//     2^-24 * |ref| + round(ref).
//   - matmul with K products per output: f32 accumulation in any order errs by at most
//     K * 2^-24 * S, S = sum_k |a_k * b_k| (Higham's gamma_K); doubled for the
//     conversions a kernel may make on the way, plus round(ref).
//   - softmax over n elements: (n + 32) * 2^-24 * |ref| + 1e-7 (n for the f32 sum, 32
//     for exp and the division, as in op_suite.h), plus round(ref).
// A value another thread wrote, or a stale buffer, misses these bounds by far.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "op_suite.h"

namespace {

using phx_test::decode;
using phx_test::encode;
using phx_test::final_rounding;

constexpr int kThreads = 8;
constexpr int kRounds = 2;
constexpr int64_t kM = 8, kK = 16, kN = 8;  // matmul [M, K] x [K, N]; the rest [M, N]
constexpr double kF32Roundoff = 0x1p-24;

// Multiples of 1/8 in [-2, 2] for a float dtype, integers in [-16, 16] otherwise (their
// sums stay inside i8); a different sequence per seed.
std::vector<double> sample_values(phx_dtype dtype, int64_t count, uint32_t seed) {
  const double step = phx_test::is_float(dtype) ? 1.0 / 8.0 : 1.0;
  std::vector<double> values(static_cast<size_t>(count));
  uint32_t state = seed * 2654435761u + 1u;
  for (double& v : values) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<double>(static_cast<int>((state >> 16) % 33u) - 16) * step;
  }
  return values;
}

std::vector<unsigned char> to_bytes(phx_dtype dtype, const std::vector<double>& values) {
  const size_t size = phx_dtype_size(dtype);
  std::vector<unsigned char> bytes(values.size() * size);
  for (size_t i = 0; i < values.size(); ++i) encode(dtype, values[i], &bytes[i * size]);
  return bytes;
}

struct Reference {
  std::vector<double> values, tolerances;
};

Reference matmul_reference(phx_dtype out, const std::vector<double>& a,
                           const std::vector<double>& b) {
  Reference r;
  for (int64_t m = 0; m < kM; ++m) {
    for (int64_t n = 0; n < kN; ++n) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t k = 0; k < kK; ++k) {
        const double product = a[m * kK + k] * b[k * kN + n];
        sum += product;
        abs_sum += std::fabs(product);
      }
      r.values.push_back(sum);
      r.tolerances.push_back(2.0 * kK * kF32Roundoff * abs_sum + final_rounding(out, sum));
    }
  }
  return r;
}

Reference add_reference(phx_dtype out, const std::vector<double>& x, const std::vector<double>& y) {
  Reference r;
  for (size_t i = 0; i < x.size(); ++i) {
    const double sum = x[i] + y[i];
    r.values.push_back(sum);
    // Integer sums are exact.
    const double f32_addition = phx_test::is_float(out) ? kF32Roundoff * std::fabs(sum) : 0.0;
    r.tolerances.push_back(f32_addition + final_rounding(out, sum));
  }
  return r;
}

Reference softmax_reference(phx_dtype out, const std::vector<double>& x) {
  Reference r;
  for (int64_t m = 0; m < kM; ++m) {
    double max = x[m * kN], total = 0.0;
    for (int64_t n = 0; n < kN; ++n) max = std::max(max, x[m * kN + n]);
    for (int64_t n = 0; n < kN; ++n) total += std::exp(x[m * kN + n] - max);
    for (int64_t n = 0; n < kN; ++n) {
      const double p = std::exp(x[m * kN + n] - max) / total;
      r.values.push_back(p);
      r.tolerances.push_back((kN + 32) * kF32Roundoff * p + 1e-7 + final_rounding(out, p));
    }
  }
  return r;
}

Reference relu_reference(const std::vector<double>& x) {
  Reference r;
  for (double v : x) {
    r.values.push_back(std::max(v, 0.0));
    r.tolerances.push_back(0.0);
  }
  return r;
}

constexpr phx_op_id kOps[] = {PHX_OP_MATMUL, PHX_OP_ADD, PHX_OP_SOFTMAX, PHX_OP_RELU};
constexpr phx_dtype kDtypes[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16, PHX_DTYPE_I8};

// The ops of kOps that device runs in dtype.
std::vector<phx_op_id> ops_run_in(phx_context context, size_t device, phx_dtype dtype) {
  std::vector<phx_op_id> ops;
  for (phx_op_id op : kOps) {
    int supported = 0;
    EXPECT_EQ(phx_device_supports(context, device, op, dtype, &supported), PHX_STATUS_OK);
    if (supported) ops.push_back(op);
  }
  return ops;
}

// The first dtype of kDtypes the device holds and runs most of kOps in (an NPU runs
// only integer add and relu of them); INVALID when none.
phx_dtype test_dtype(phx_context context, size_t device) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  EXPECT_EQ(phx_device_get(context, device, &info), PHX_STATUS_OK);
  phx_dtype best = PHX_DTYPE_INVALID;
  size_t best_count = 0;
  for (phx_dtype dtype : kDtypes) {
    const size_t count = ops_run_in(context, device, dtype).size();
    if ((info.dtype_mask & PHX_DTYPE_BIT(dtype)) != 0 && count > best_count) {
      best = dtype;
      best_count = count;
    }
  }
  return best;
}

// One device as the eight threads share it: its dtype, the ops it runs in that dtype,
// and the read-only inputs every thread's ops take.
struct SharedDevice {
  size_t index = 0;
  std::string name;
  phx_dtype dtype = PHX_DTYPE_INVALID;
  std::vector<phx_op_id> ops;
  std::vector<double> a, b, x;  // matmul's a [M, K] and b [K, N]; add's and softmax's x
  phx_tensor a_tensor = nullptr, b_tensor = nullptr, x_tensor = nullptr;
};

class Threading : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // Profiling on: every stream also keeps records, which their threads read back.
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.flags = PHX_CONTEXT_PROFILE;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
  }
  static void TearDownTestSuite() {
    EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK) << phx_last_error();
    context_ = nullptr;
  }

  // Every device of the context with its shared inputs uploaded.
  std::vector<SharedDevice> shared_devices() {
    std::vector<SharedDevice> devices;
    size_t count = 0;
    EXPECT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK);
    for (size_t i = 0; i < count; ++i) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      EXPECT_EQ(phx_device_get(context_, i, &info), PHX_STATUS_OK);
      SharedDevice d;
      d.index = i;
      d.name = std::string(info.plugin) + "/" + info.name;
      d.dtype = test_dtype(context_, i);
      EXPECT_NE(d.dtype, PHX_DTYPE_INVALID) << d.name << " runs none of the ops tested";
      if (d.dtype == PHX_DTYPE_INVALID) continue;
      d.ops = ops_run_in(context_, i, d.dtype);
      d.a = sample_values(d.dtype, kM * kK, 1000 + static_cast<uint32_t>(i));
      d.b = sample_values(d.dtype, kK * kN, 2000 + static_cast<uint32_t>(i));
      d.x = sample_values(d.dtype, kM * kN, 3000 + static_cast<uint32_t>(i));
      d.a_tensor = upload(i, d.dtype, {kM, kK}, d.a);
      d.b_tensor = upload(i, d.dtype, {kK, kN}, d.b);
      d.x_tensor = upload(i, d.dtype, {kM, kN}, d.x);
      devices.push_back(std::move(d));
    }
    return devices;
  }

  static phx_tensor upload(size_t device, phx_dtype dtype, std::vector<int64_t> shape,
                           const std::vector<double>& values) {
    phx_tensor tensor = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, dtype, shape.size(), shape.data(), &tensor),
              PHX_STATUS_OK)
        << phx_last_error();
    const auto bytes = to_bytes(dtype, values);
    EXPECT_EQ(phx_tensor_upload(tensor, 0, bytes.data(), bytes.size()), PHX_STATUS_OK)
        << phx_last_error();
    return tensor;
  }

  static phx_context context_;
};

phx_context Threading::context_ = nullptr;

void expect_close(const SharedDevice& d, phx_tensor tensor, const Reference& ref, const char* op,
                  int thread) {
  const size_t size = phx_dtype_size(d.dtype);
  std::vector<unsigned char> bytes(ref.values.size() * size);
  ASSERT_EQ(phx_tensor_download(tensor, 0, bytes.data(), bytes.size()), PHX_STATUS_OK)
      << phx_last_error();
  for (size_t i = 0; i < ref.values.size(); ++i) {
    const double got = decode(d.dtype, &bytes[i * size]);
    ASSERT_LE(std::fabs(got - ref.values[i]), ref.tolerances[i])
        << d.name << " " << op << " " << phx_dtype_name(d.dtype) << ", thread " << thread
        << ", element " << i << ": got " << got << ", expected " << ref.values[i];
  }
}

// The queries any thread may make at any time; each must answer OK while others work.
void query_everything(phx_context context, const SharedDevice& d) {
  phx_metric metrics[16];
  size_t metric_count = 0;
  EXPECT_EQ(phx_device_stats(context, d.index, metrics, 16, &metric_count), PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_GE(metric_count, 1u);  // at least the runtime's "fallback_ops"
  phx_memory_stats memory = PHX_MEMORY_STATS_INIT;
  EXPECT_EQ(phx_memory_stats_get(context, d.index, &memory), PHX_STATUS_OK) << phx_last_error();
  // The shared inputs alone are three live allocations.
  EXPECT_GE(memory.allocation_count, 3u);
  EXPECT_EQ(phx_memory_release_cached(context, d.index), PHX_STATUS_OK) << phx_last_error();
  const phx_status limit = phx_memory_set_limit(context, d.index, 0);  // "no limit": harmless
  EXPECT_TRUE(limit == PHX_STATUS_OK || limit == PHX_STATUS_UNSUPPORTED) << phx_last_error();
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  EXPECT_EQ(phx_device_get(context, d.index, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.index, d.index);
  phx_plugin_info plugin = PHX_PLUGIN_INFO_INIT;
  EXPECT_EQ(phx_plugin_get(context, 0, &plugin), PHX_STATUS_OK);
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  EXPECT_EQ(phx_tensor_describe(d.a_tensor, &desc), PHX_STATUS_OK);
  EXPECT_EQ(desc.shape[0], kM);
  EXPECT_EQ(desc.shape[1], kK);
}

// The stream's profile records: one per op, in submission order.
void expect_profile(phx_stream stream, const std::vector<phx_op_id>& ops) {
  size_t count = 0;
  EXPECT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(count, ops.size());
  for (size_t i = 0; i < count; ++i) {
    phx_profile_record record = PHX_PROFILE_RECORD_INIT;
    EXPECT_EQ(phx_profile_get(stream, i, &record), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(record.op, ops[i]);
    EXPECT_EQ(record.ticket, i + 1);
  }
  EXPECT_EQ(phx_profile_clear(stream), PHX_STATUS_OK);
  EXPECT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK);
  EXPECT_EQ(count, 0u);
}

// A calibrator of the thread's own, over its own tensor y: symmetric i8 maps max |y|
// to 127 (TFLite's convention), computed in double on the host.
void calibrate(phx_context context, phx_tensor tensor, const std::vector<double>& y) {
  phx_calibration_options options = PHX_CALIBRATION_OPTIONS_INIT;
  options.symmetric = 1;
  phx_calibrator calibrator = nullptr;
  ASSERT_EQ(phx_calibrator_create(context, &options, &calibrator), PHX_STATUS_OK)
      << phx_last_error();
  EXPECT_EQ(phx_calibrator_observe(calibrator, tensor), PHX_STATUS_OK) << phx_last_error();
  float scale = 0.0f;
  int32_t zero_point = -1;
  size_t count = 0;
  EXPECT_EQ(phx_calibrator_compute(calibrator, &scale, &zero_point, 1, &count), PHX_STATUS_OK)
      << phx_last_error();
  double max_abs = 0.0;
  for (double v : y) max_abs = std::max(max_abs, std::fabs(v));
  EXPECT_EQ(count, 1u);
  EXPECT_NEAR(scale, max_abs / 127.0, 2 * kF32Roundoff * max_abs / 127.0);
  EXPECT_EQ(zero_point, 0);
  EXPECT_EQ(phx_calibrator_destroy(calibrator), PHX_STATUS_OK);
}

// One thread's turn on one device: its own stream and tensors, the shared inputs, every
// op the device runs, a copy and a calibration, checked, then freed.
void run_turn(phx_context context, const SharedDevice& d, int thread, int round) {
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context, d.index, &stream), PHX_STATUS_OK) << phx_last_error();
  const int64_t shape[] = {kM, kN};
  const std::vector<double> y =
      sample_values(d.dtype, kM * kN, static_cast<uint32_t>(thread * 16 + round));
  phx_tensor own[5] = {};  // y, then the outputs of matmul, add, softmax, relu
  for (phx_tensor& tensor : own)
    ASSERT_EQ(phx_tensor_create(context, d.index, d.dtype, 2, shape, &tensor), PHX_STATUS_OK)
        << phx_last_error();
  const auto y_bytes = to_bytes(d.dtype, y);
  ASSERT_EQ(phx_tensor_upload(own[0], 0, y_bytes.data(), y_bytes.size()), PHX_STATUS_OK)
      << phx_last_error();

  uint64_t ticket = 0;
  for (phx_op_id op : d.ops) {
    phx_op_desc desc = {sizeof desc, op, nullptr, nullptr, 0, nullptr, 1};
    phx_tensor inputs[2] = {};
    switch (op) {
      case PHX_OP_MATMUL:
        inputs[0] = d.a_tensor;
        inputs[1] = d.b_tensor;
        desc.outputs = &own[1];
        break;
      case PHX_OP_ADD:
        inputs[0] = d.x_tensor;
        inputs[1] = own[0];
        desc.outputs = &own[2];
        break;
      case PHX_OP_SOFTMAX:
        inputs[0] = d.x_tensor;
        desc.outputs = &own[3];
        break;
      default:
        inputs[0] = own[0];
        desc.outputs = &own[4];
        break;
    }
    desc.inputs = inputs;
    desc.input_count = op == PHX_OP_MATMUL || op == PHX_OP_ADD ? 2 : 1;
    ASSERT_EQ(phx_op_run(stream, &desc, &ticket), PHX_STATUS_OK)
        << d.name << " " << phx_op_name(op) << ": " << phx_last_error();
  }
  ASSERT_NE(ticket, 0u);
  int done = 0;
  EXPECT_EQ(phx_stream_query(stream, ticket, &done), PHX_STATUS_OK) << phx_last_error();
  query_everything(context, d);
  EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_stream_query(stream, ticket, &done), PHX_STATUS_OK);
  EXPECT_EQ(done, 1);
  EXPECT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK) << phx_last_error();
  expect_profile(stream, d.ops);

  for (phx_op_id op : d.ops) {
    switch (op) {
      case PHX_OP_MATMUL:
        expect_close(d, own[1], matmul_reference(d.dtype, d.a, d.b), "matmul", thread);
        break;
      case PHX_OP_ADD:
        expect_close(d, own[2], add_reference(d.dtype, d.x, y), "add", thread);
        break;
      case PHX_OP_SOFTMAX:
        expect_close(d, own[3], softmax_reference(d.dtype, d.x), "softmax", thread);
        break;
      default:
        expect_close(d, own[4], relu_reference(y), "relu", thread);
        break;
    }
  }
  // A device-side copy of the thread's own y into the spent relu output: exact.
  ASSERT_EQ(phx_tensor_copy(own[4], own[0]), PHX_STATUS_OK) << phx_last_error();
  expect_close(d, own[4], Reference{y, std::vector<double>(y.size(), 0.0)}, "copy", thread);
  if (d.dtype == PHX_DTYPE_F32) calibrate(context, own[0], y);
  for (phx_tensor tensor : own) EXPECT_EQ(phx_tensor_destroy(tensor), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK) << phx_last_error();
}

TEST_F(Threading, EightThreadsShareEveryDevice) {
  const std::vector<SharedDevice> devices = shared_devices();
  ASSERT_FALSE(devices.empty());
  for (const SharedDevice& d : devices)
    EXPECT_GE(d.ops.size(), 2u) << d.name << " runs too few of the ops to test";

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Threads start on different devices, so that every device has several users
      // at once.
      for (int round = 0; round < kRounds; ++round)
        for (size_t i = 0; i < devices.size(); ++i)
          run_turn(context_, devices[(t + i) % devices.size()], t, round);
    });
  }
  for (std::thread& thread : threads) thread.join();

  for (const SharedDevice& d : devices) {
    // The shared inputs were only read: still what was uploaded.
    expect_close(d, d.a_tensor, Reference{d.a, std::vector<double>(d.a.size(), 0.0)},
                 "a (unchanged)", -1);
    for (phx_tensor tensor : {d.a_tensor, d.b_tensor, d.x_tensor})
      EXPECT_EQ(phx_tensor_destroy(tensor), PHX_STATUS_OK);
  }
}

// Traces begin and end, one after another, while eight threads run ops on every device:
// each trace is a whole file (its array closed), whatever the threads were doing when it
// began or ended.
TEST_F(Threading, TracesBeginAndEndWhileEightThreadsRunOps) {
  const std::vector<SharedDevice> devices = shared_devices();
  ASSERT_FALSE(devices.empty());
  const char* dir = getenv("TMPDIR");
  const std::string base = std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") +
                           "/phx_threading_trace_" + std::to_string(getpid()) + "_";
  std::atomic<bool> running{true};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; running || round == 0; ++round)
        run_turn(context_, devices[(t + round) % devices.size()], t, round);
    });
  }
  constexpr int kTraces = 4;
  for (int trace = 0; trace < kTraces; ++trace) {
    const std::string path = base + std::to_string(trace) + ".json";
    ASSERT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_OK) << phx_last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_EQ(phx_trace_end(context_), PHX_STATUS_OK) << phx_last_error();
    FILE* file = fopen(path.c_str(), "rb");
    ASSERT_NE(file, nullptr) << path;
    ASSERT_EQ(fseek(file, -2, SEEK_END), 0) << path;
    char tail[2] = {};
    EXPECT_EQ(fread(tail, 1, 2, file), 2u);
    EXPECT_EQ(std::string(tail, 2), "]\n") << path << " was not closed";
    fclose(file);
    unlink(path.c_str());
  }
  running = false;
  for (std::thread& thread : threads) thread.join();
  for (const SharedDevice& d : devices)
    for (phx_tensor tensor : {d.a_tensor, d.b_tensor, d.x_tensor})
      EXPECT_EQ(phx_tensor_destroy(tensor), PHX_STATUS_OK);
}

// One thread's turn with graphs on device d: a graph of its own whose constant is the shared
// x tensor (read in place by every thread's executable), add(x, y) and relu(y) where the
// device runs them, compiled and run twice on a stream of its own.
void graph_turn(phx_context context, const SharedDevice& d, int thread, int round) {
  std::vector<phx_op_id> ops;
  for (phx_op_id op : d.ops)
    if (op == PHX_OP_ADD || op == PHX_OP_RELU) ops.push_back(op);
  if (ops.empty()) return;
  const int64_t shape[] = {kM, kN};
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context, &graph), PHX_STATUS_OK) << phx_last_error();
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = d.dtype;
  input.rank = 2;
  input.shape = shape;
  phx_value y = 0, x = 0;
  ASSERT_EQ(phx_graph_add_input(graph, &input, &y), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_graph_add_constant_tensor(graph, "x", d.x_tensor, &x), PHX_STATUS_OK);
  for (phx_op_id op : ops) {
    const phx_value operands[2] = {x, y};
    phx_graph_node_desc node = PHX_GRAPH_NODE_DESC_INIT;
    node.op = op;
    node.inputs = op == PHX_OP_ADD ? operands : &y;
    node.input_count = op == PHX_OP_ADD ? 2 : 1;
    node.output_count = 1;
    phx_value out = 0;
    ASSERT_EQ(phx_graph_add_node(graph, &node, &out), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_graph_add_output(graph, out, nullptr), PHX_STATUS_OK) << phx_last_error();
  }
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = d.index;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context, graph, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);

  const std::vector<double> y_values =
      sample_values(d.dtype, kM * kN, static_cast<uint32_t>(500 + thread * 16 + round));
  phx_tensor y_tensor = nullptr;
  ASSERT_EQ(phx_tensor_create(context, d.index, d.dtype, 2, shape, &y_tensor), PHX_STATUS_OK);
  const auto y_bytes = to_bytes(d.dtype, y_values);
  ASSERT_EQ(phx_tensor_upload(y_tensor, 0, y_bytes.data(), y_bytes.size()), PHX_STATUS_OK);
  std::vector<phx_tensor> outputs(ops.size());
  for (phx_tensor& t : outputs)
    ASSERT_EQ(phx_tensor_create(context, d.index, d.dtype, 2, shape, &t), PHX_STATUS_OK);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context, d.index, &stream), PHX_STATUS_OK) << phx_last_error();
  for (int run = 0; run < 2; ++run) {
    uint64_t ticket = 0;
    ASSERT_EQ(
        phx_executable_run(stream, exe, &y_tensor, 1, outputs.data(), outputs.size(), &ticket),
        PHX_STATUS_OK)
        << d.name << ": " << phx_last_error();
    EXPECT_EQ(phx_stream_wait(stream, ticket), PHX_STATUS_OK) << phx_last_error();
  }
  for (size_t i = 0; i < ops.size(); ++i)
    expect_close(
        d, outputs[i],
        ops[i] == PHX_OP_ADD ? add_reference(d.dtype, d.x, y_values) : relu_reference(y_values),
        ops[i] == PHX_OP_ADD ? "graph add" : "graph relu", thread);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
  for (phx_tensor t : outputs) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
  EXPECT_EQ(phx_tensor_destroy(y_tensor), PHX_STATUS_OK);
}

// Eight threads build, compile and run graphs on every device of one context at once.
TEST_F(Threading, EightThreadsCompileAndRunGraphs) {
  const std::vector<SharedDevice> devices = shared_devices();
  ASSERT_FALSE(devices.empty());
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round)
        for (size_t i = 0; i < devices.size(); ++i)
          graph_turn(context_, devices[(t + i) % devices.size()], t, round);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const SharedDevice& d : devices)
    for (phx_tensor tensor : {d.a_tensor, d.b_tensor, d.x_tensor})
      EXPECT_EQ(phx_tensor_destroy(tensor), PHX_STATUS_OK);
}

// Ops a device does not implement run on the CPU device (PHX_CONTEXT_FALLBACK_CPU): eight
// threads at once send f32 matmuls to a device without them, each counted once.
TEST(ThreadingFallback, EightThreadsFallBackToTheCpuAtOnce) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.flags = PHX_CONTEXT_FALLBACK_CPU;
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(&options, &context), PHX_STATUS_OK) << phx_last_error();
  size_t device_count = 0;
  ASSERT_EQ(phx_device_count(context, &device_count), PHX_STATUS_OK);
  size_t device = device_count;
  for (size_t i = 0; i < device_count && device == device_count; ++i) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context, i, &info), PHX_STATUS_OK);
    int supported = 1;
    ASSERT_EQ(phx_device_supports(context, i, PHX_OP_MATMUL, PHX_DTYPE_F32, &supported),
              PHX_STATUS_OK);
    if ((info.dtype_mask & PHX_DTYPE_BIT(PHX_DTYPE_F32)) != 0 && !supported) device = i;
  }
  if (device == device_count) {
    EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
    GTEST_SKIP() << "every device that holds f32 runs f32 matmul itself";
  }

  const std::vector<double> a = sample_values(PHX_DTYPE_F32, kM * kK, 1);
  const std::vector<double> b = sample_values(PHX_DTYPE_F32, kK * kN, 2);
  const Reference expected = matmul_reference(PHX_DTYPE_F32, a, b);
  const int64_t a_shape[] = {kM, kK}, b_shape[] = {kK, kN}, out_shape[] = {kM, kN};
  phx_tensor a_tensor = nullptr, b_tensor = nullptr;
  ASSERT_EQ(phx_tensor_create(context, device, PHX_DTYPE_F32, 2, a_shape, &a_tensor),
            PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_create(context, device, PHX_DTYPE_F32, 2, b_shape, &b_tensor),
            PHX_STATUS_OK);
  const auto a_bytes = to_bytes(PHX_DTYPE_F32, a), b_bytes = to_bytes(PHX_DTYPE_F32, b);
  ASSERT_EQ(phx_tensor_upload(a_tensor, 0, a_bytes.data(), a_bytes.size()), PHX_STATUS_OK);
  ASSERT_EQ(phx_tensor_upload(b_tensor, 0, b_bytes.data(), b_bytes.size()), PHX_STATUS_OK);

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      phx_stream stream = nullptr;
      phx_tensor out = nullptr;
      ASSERT_EQ(phx_stream_create(context, device, &stream), PHX_STATUS_OK);
      ASSERT_EQ(phx_tensor_create(context, device, PHX_DTYPE_F32, 2, out_shape, &out),
                PHX_STATUS_OK);
      for (int round = 0; round < kRounds; ++round) {
        const phx_tensor inputs[] = {a_tensor, b_tensor};
        const phx_op_desc desc = {sizeof desc, PHX_OP_MATMUL, nullptr, inputs, 2, &out, 1};
        ASSERT_EQ(phx_op_run(stream, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
        std::vector<float> got(static_cast<size_t>(kM * kN));
        ASSERT_EQ(phx_tensor_download(out, 0, got.data(), got.size() * sizeof(float)),
                  PHX_STATUS_OK);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_LE(std::fabs(got[i] - expected.values[i]), expected.tolerances[i])
              << "thread " << t << ", element " << i;
      }
      EXPECT_EQ(phx_tensor_destroy(out), PHX_STATUS_OK);
      EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    });
  }
  for (std::thread& thread : threads) thread.join();

  phx_metric metrics[32];
  size_t metric_count = 0;
  ASSERT_EQ(phx_device_stats(context, device, metrics, 32, &metric_count), PHX_STATUS_OK);
  ASSERT_LE(metric_count, 32u);
  const phx_metric& fallback_ops = metrics[metric_count - 1];  // the runtime's, last
  EXPECT_STREQ(fallback_ops.name, "fallback_ops");
  EXPECT_EQ(fallback_ops.value, kThreads * kRounds);
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

// What a thread saw while its context was destroyed under it: every status must be OK
// or INVALID_ARGUMENT; the first other one is kept.
struct Observed {
  std::atomic<int> turns{0};
  std::string unexpected;

  void check(phx_status status, const char* call) {
    if (status != PHX_STATUS_OK && status != PHX_STATUS_INVALID_ARGUMENT && unexpected.empty())
      unexpected =
          std::string(call) + " returned " + phx_status_name(status) + ": " + phx_last_error();
  }
};

// A turn of work that may be cut off by the context's destruction at any call. Returns
// false once the context is gone.
bool busy_turn(phx_context context, size_t device, phx_dtype dtype, Observed& seen) {
  size_t count = 0;
  phx_status status = phx_device_count(context, &count);
  seen.check(status, "phx_device_count");
  if (status != PHX_STATUS_OK) return false;
  phx_stream stream = nullptr;
  seen.check(phx_stream_create(context, device, &stream), "phx_stream_create");
  const int64_t shape[] = {kM, kN};
  phx_tensor x = nullptr, y = nullptr;
  seen.check(phx_tensor_create(context, device, dtype, 2, shape, &x), "phx_tensor_create");
  seen.check(phx_tensor_create(context, device, dtype, 2, shape, &y), "phx_tensor_create");
  const auto bytes = to_bytes(dtype, sample_values(dtype, kM * kN, 7));
  seen.check(phx_tensor_upload(x, 0, bytes.data(), bytes.size()), "phx_tensor_upload");
  phx_op_desc desc = {sizeof desc, PHX_OP_RELU, nullptr, &x, 1, &y, 1};
  uint64_t ticket = 0;
  status = phx_op_run(stream, &desc, &ticket);
  seen.check(status, "phx_op_run");
  if (status == PHX_STATUS_OK) seen.check(phx_stream_wait(stream, ticket), "phx_stream_wait");
  std::vector<unsigned char> out(bytes.size());
  seen.check(phx_tensor_download(y, 0, out.data(), out.size()), "phx_tensor_download");
  phx_memory_stats memory = PHX_MEMORY_STATS_INIT;
  seen.check(phx_memory_stats_get(context, device, &memory), "phx_memory_stats_get");
  size_t metric_count = 0;
  seen.check(phx_device_stats(context, device, nullptr, 0, &metric_count), "phx_device_stats");
  seen.check(phx_tensor_destroy(x), "phx_tensor_destroy");
  seen.check(phx_tensor_destroy(y), "phx_tensor_destroy");
  seen.check(phx_stream_destroy(stream), "phx_stream_destroy");
  ++seen.turns;
  return true;
}

TEST(ThreadingDestroy, ContextDestroyedWhileEightThreadsUseIt) {
  // Contexts are created (and destroyed) on two threads at once.
  phx_status other_status = PHX_STATUS_INTERNAL;
  std::thread other([&] {
    phx_context other_context = nullptr;
    other_status = phx_context_create(nullptr, &other_context);
    if (other_status == PHX_STATUS_OK) other_status = phx_context_destroy(other_context);
  });
  phx_context context = nullptr;
  const phx_status status = phx_context_create(nullptr, &context);
  other.join();
  EXPECT_EQ(other_status, PHX_STATUS_OK);
  ASSERT_EQ(status, PHX_STATUS_OK) << phx_last_error();
  size_t device_count = 0;
  ASSERT_EQ(phx_device_count(context, &device_count), PHX_STATUS_OK);
  std::vector<std::pair<size_t, phx_dtype>> devices;
  for (size_t i = 0; i < device_count; ++i) {
    const phx_dtype dtype = test_dtype(context, i);
    if (dtype != PHX_DTYPE_INVALID) devices.emplace_back(i, dtype);
  }
  ASSERT_FALSE(devices.empty());

  Observed seen[kThreads];
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const auto [device, dtype] = devices[static_cast<size_t>(t) % devices.size()];
      while (busy_turn(context, device, dtype, seen[t])) {
      }
    });
  }
  // Destroyed once every thread is in full swing, by two threads at once: one of them
  // destroys it, the other is refused.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (const Observed& s : seen)
    while (s.turns.load() < 1 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<int> destroyed{0}, refused{0};
  std::vector<std::thread> destroyers;
  for (int i = 0; i < 2; ++i) {
    destroyers.emplace_back([&] {
      const phx_status status = phx_context_destroy(context);
      if (status == PHX_STATUS_OK) ++destroyed;
      if (status == PHX_STATUS_INVALID_ARGUMENT) ++refused;
    });
  }
  for (std::thread& thread : destroyers) thread.join();
  for (std::thread& thread : threads) thread.join();

  EXPECT_EQ(destroyed.load(), 1);
  EXPECT_EQ(refused.load(), 1);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(seen[t].unexpected, "") << "thread " << t;
    EXPECT_GE(seen[t].turns.load(), 1) << "thread " << t << " never finished a turn";
  }
  size_t count = 0;
  EXPECT_EQ(phx_device_count(context, &count), PHX_STATUS_INVALID_ARGUMENT);
}

}  // namespace
