// The real plugin's barriers and executables through the C API: eager ops wait only for
// the ops they depend on (device stats "barriers" against "submissions"); a graph's part
// on the Vulkan device runs as one submission (plugin.h, "Executables"), with the results
// of the same ops run eagerly, and again on other tensors (the run records again);
// chains of elementwise nodes run as one dispatch.
//
// References are float64. Tolerances (docs/ops.md, tests/op_suite.h): add, sub and mul
// err by at most 2 * 2^-24 of their result each, and an error of an operand reaches the
// result scaled by the other operand (mul) or unchanged (add, sub, relu); matmul
// 2 K 2^-24 sum|a b| + 1e-6 plus the final rounding.
#include <gtest/gtest.h>
#include <phynexus/graph.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace {

constexpr double kU = 0x1p-24;

// Values that need no rounding as f32 but whose sums and products do.
std::vector<float> values(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(seed + 0.73f * float(i)) * 1.7f;
  return v;
}

class VulkanGraphs : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(phx_context_create(nullptr, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    phx_device_count(context_, &count);
    for (size_t i = 0; i < count && device_ == SIZE_MAX; ++i) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      if (phx_device_get(context_, i, &info) == PHX_STATUS_OK &&
          std::string(info.plugin) == "vulkan")
        device_ = i;
    }
    if (device_ == SIZE_MAX) GTEST_SKIP() << "no Vulkan device";
    ASSERT_EQ(phx_stream_create(context_, device_, &stream_), PHX_STATUS_OK) << phx_last_error();
  }
  void TearDown() override {
    for (phx_tensor t : tensors_) phx_tensor_destroy(t);
    if (context_ != nullptr) phx_context_destroy(context_);
  }

  phx_tensor tensor(std::vector<int64_t> shape, const std::vector<float>* data = nullptr) {
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device_, PHX_DTYPE_F32, shape.size(), shape.data(), &t),
              PHX_STATUS_OK)
        << phx_last_error();
    tensors_.push_back(t);
    if (data != nullptr) {
      EXPECT_EQ(phx_tensor_upload(t, 0, data->data(), data->size() * sizeof(float)), PHX_STATUS_OK);
    }
    return t;
  }
  std::vector<float> download(phx_tensor t, size_t n) {
    EXPECT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
    std::vector<float> v(n);
    EXPECT_EQ(phx_tensor_download(t, 0, v.data(), n * sizeof(float)), PHX_STATUS_OK);
    return v;
  }
  void run(phx_op_id op, std::vector<phx_tensor> inputs, phx_tensor out) {
    const phx_op_desc desc = {sizeof desc, op, nullptr, inputs.data(), inputs.size(), &out, 1};
    ASSERT_EQ(phx_op_run(stream_, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
  }
  double stat(const char* name) {
    size_t count = 0;
    phx_device_stats(context_, device_, nullptr, 0, &count);
    std::vector<phx_metric> metrics(count);
    phx_device_stats(context_, device_, metrics.data(), count, &count);
    for (const phx_metric& m : metrics)
      if (std::string(m.name) == name) return m.value;
    ADD_FAILURE() << "no device stat " << name;
    return -1;
  }
  static std::map<std::string, double> executable_stats(phx_executable exe) {
    size_t count = 0;
    EXPECT_EQ(phx_executable_stats(exe, nullptr, 0, &count), PHX_STATUS_OK) << phx_last_error();
    std::vector<phx_metric> metrics(count);
    EXPECT_EQ(phx_executable_stats(exe, metrics.data(), count, &count), PHX_STATUS_OK);
    std::map<std::string, double> named;
    for (const phx_metric& m : metrics) named[m.name] += m.value;
    return named;
  }

  phx_context context_ = nullptr;
  size_t device_ = SIZE_MAX;
  phx_stream stream_ = nullptr;
  std::vector<phx_tensor> tensors_;
};

void expect_near_all(const std::vector<float>& got, const std::vector<double>& ref,
                     const std::vector<double>& tolerance) {
  ASSERT_EQ(got.size(), ref.size());
  size_t failures = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - ref[i]) <= tolerance[i]) && ++failures <= 5)
      ADD_FAILURE() << "element " << i << ": got " << got[i] << ", expected " << ref[i] << " +- "
                    << tolerance[i];
  EXPECT_EQ(failures, 0u) << "of " << got.size();
}

// ---- Eager ops: barriers only on hazards ---------------------------------------------------

// Each submission's first op waits for everything before it (transfers, other work);
// independent ops in the same submission add no barrier, however many gather.
TEST_F(VulkanGraphs, IndependentEagerOpsShareTheirSubmissionsBarrier) {
  constexpr int kOps = 12;
  const std::vector<float> x = values(64, 0.1f), c = values(64, 2.0f);
  const phx_tensor tx = tensor({64}, &x), tc = tensor({64}, &c);
  std::vector<phx_tensor> outs;
  for (int i = 0; i < kOps; ++i) outs.push_back(tensor({64}));
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  const double barriers = stat("barriers"), submissions = stat("submissions");
  for (int i = 0; i < kOps; ++i) run(i % 2 ? PHX_OP_ADD : PHX_OP_MUL, {tx, tc}, outs[i]);
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  EXPECT_EQ(stat("barriers") - barriers, stat("submissions") - submissions);
  for (int i = 0; i < kOps; ++i) {
    std::vector<double> ref(64), tol(64);
    for (int k = 0; k < 64; ++k) {
      ref[k] = i % 2 ? double(x[k]) + c[k] : double(x[k]) * c[k];
      tol[k] = 2 * kU * std::fabs(ref[k]);
    }
    expect_near_all(download(outs[i], 64), ref, tol);
  }
}

// Each op reads what the one before wrote (or writes what it read): every op waits.
TEST_F(VulkanGraphs, DependentEagerOpsEachWait) {
  constexpr int kOps = 8;
  const std::vector<float> x = values(64, 0.3f), c = values(64, 1.0f);
  const phx_tensor tc = tensor({64}, &c);
  const phx_tensor a = tensor({64}, &x), b = tensor({64});
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  const double barriers = stat("barriers");
  for (int i = 0; i < kOps; ++i) run(PHX_OP_ADD, {i % 2 ? b : a, tc}, i % 2 ? a : b);
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  EXPECT_EQ(stat("barriers") - barriers, kOps);
  // kOps roundings of partial sums, each at most 2 * 2^-24 of |x| + kOps |c|.
  std::vector<double> ref(64), tol(64);
  for (int k = 0; k < 64; ++k) {
    ref[k] = double(x[k]) + kOps * double(c[k]);
    tol[k] = 2 * kOps * kU * (std::fabs(x[k]) + kOps * std::fabs(c[k]));
  }
  expect_near_all(download(a, 64), ref, tol);
}

// ---- Executables -----------------------------------------------------------------------

constexpr int64_t kRows = 4, kCols = 16, kOut = 4;

// y = relu((x + c) * x) - c (elementwise, [4, 16]) and z = x w ([4, 16] x [16, 4]), which
// depends on nothing of y's chain.
struct TwoOutputGraph {
  phx_graph graph = nullptr;
  std::vector<float> c = values(kRows * kCols, 5.0f), w = values(kCols * kOut, 9.0f);

  explicit TwoOutputGraph(phx_context context) {
    EXPECT_EQ(phx_graph_create(context, &graph), PHX_STATUS_OK);
    const int64_t shape[2] = {kRows, kCols}, wshape[2] = {kCols, kOut};
    phx_graph_input_desc in = PHX_GRAPH_INPUT_DESC_INIT;
    in.dtype = PHX_DTYPE_F32;
    in.rank = 2;
    in.shape = shape;
    phx_value x = 0, vc = 0, vw = 0;
    EXPECT_EQ(phx_graph_add_input(graph, &in, &x), PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_constant(graph, "c", PHX_DTYPE_F32, 2, shape, c.data(),
                                     c.size() * sizeof(float), &vc),
              PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_constant(graph, "w", PHX_DTYPE_F32, 2, wshape, w.data(),
                                     w.size() * sizeof(float), &vw),
              PHX_STATUS_OK);
    const phx_value a = node(PHX_OP_ADD, {x, vc}), m = node(PHX_OP_MUL, {a, x});
    const phx_value y = node(PHX_OP_SUB, {node(PHX_OP_RELU, {m}), vc});
    const phx_value z = node(PHX_OP_MATMUL, {x, vw});
    EXPECT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);
    EXPECT_EQ(phx_graph_add_output(graph, z, "z"), PHX_STATUS_OK);
  }
  ~TwoOutputGraph() { phx_graph_destroy(graph); }

  phx_value node(phx_op_id op, std::vector<phx_value> inputs) {
    return phx_test::add_node(graph, op, inputs);
  }

  // y's and z's float64 references and tolerances for input x.
  void references(const std::vector<float>& x, std::vector<double>& y, std::vector<double>& ty,
                  std::vector<double>& z, std::vector<double>& tz) const {
    y.assign(kRows * kCols, 0);
    ty.assign(kRows * kCols, 0);
    for (int64_t i = 0; i < kRows * kCols; ++i) {
      const double a = double(x[i]) + c[i], m = a * x[i];
      y[i] = std::max(m, 0.0) - c[i];
      // a's error times |x|, m's own, y's own: 2 ulps of each.
      ty[i] = 2 * kU * (std::fabs(a * x[i]) + std::fabs(m) + std::fabs(y[i]));
    }
    z.assign(kRows * kOut, 0);
    tz.assign(kRows * kOut, 0);
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t o = 0; o < kOut; ++o) {
        double sum = 0, abs_sum = 0;
        for (int64_t k = 0; k < kCols; ++k) {
          sum += double(x[r * kCols + k]) * w[k * kOut + o];
          abs_sum += std::fabs(double(x[r * kCols + k]) * w[k * kOut + o]);
        }
        z[r * kOut + o] = sum;
        tz[r * kOut + o] = 2 * kCols * kU * abs_sum + 1e-6 + kU * std::fabs(sum);
      }
  }
};

TEST_F(VulkanGraphs, ARunIsOneSubmissionWithTheResultsOfEagerOps) {
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  ASSERT_EQ(phx_device_get(context_, device_, &info), PHX_STATUS_OK);
  EXPECT_EQ(info.compiles_graphs, 1u);
  TwoOutputGraph g(context_);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device_;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, g.graph, &options, &exe), PHX_STATUS_OK)
      << phx_last_error();
  phx_executable_info described = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(exe, &described), PHX_STATUS_OK);
  EXPECT_EQ(described.native_parts, 1u);

  const std::vector<float> x = values(kRows * kCols, 0.5f);
  const phx_tensor tx = tensor({kRows, kCols}, &x);
  const phx_tensor ty = tensor({kRows, kCols}), tz = tensor({kRows, kOut});
  const phx_tensor outputs[2] = {ty, tz};
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
    const double submissions = stat("submissions");
    ASSERT_EQ(phx_executable_run(stream_, exe, &tx, 1, outputs, 2, nullptr), PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
    EXPECT_EQ(stat("submissions") - submissions, 1) << "run " << run;
  }
  std::vector<double> y, tol_y, z, tol_z;
  g.references(x, y, tol_y, z, tol_z);
  const std::vector<float> got_y = download(ty, y.size()), got_z = download(tz, z.size());
  expect_near_all(got_y, y, tol_y);
  expect_near_all(got_z, z, tol_z);

  // The same ops, eagerly.
  const phx_tensor tc = tensor({kRows, kCols}, &g.c), tw = tensor({kCols, kOut}, &g.w);
  const phx_tensor a = tensor({kRows, kCols}), m = tensor({kRows, kCols});
  const phx_tensor r = tensor({kRows, kCols}), ey = tensor({kRows, kCols});
  const phx_tensor ez = tensor({kRows, kOut});
  run(PHX_OP_ADD, {tx, tc}, a);
  run(PHX_OP_MUL, {a, tx}, m);
  run(PHX_OP_RELU, {m}, r);
  run(PHX_OP_SUB, {r, tc}, ey);
  run(PHX_OP_MATMUL, {tx, tw}, ez);
  const std::vector<float> eager_y = download(ey, y.size()), eager_z = download(ez, z.size());
  // Both are within tol of the reference: within 2 tol of each other.
  std::vector<double> ref_y(eager_y.begin(), eager_y.end()), ref_z(eager_z.begin(), eager_z.end());
  for (double& t : tol_y) t *= 2;
  for (double& t : tol_z) t *= 2;
  expect_near_all(got_y, ref_y, tol_y);
  expect_near_all(got_z, ref_z, tol_z);

  // y's chain is one fused dispatch; z's matmul depends on nothing of it: the barrier
  // before the first kernel is the run's only one.
  const std::map<std::string, double> stats = executable_stats(exe);
  ASSERT_TRUE(stats.count("kernels_per_run") && stats.count("barriers_per_run"));
  EXPECT_EQ(stats.at("fused_nodes"), 4);
  EXPECT_EQ(stats.at("kernels_per_run"), 2);
  EXPECT_EQ(stats.at("barriers_per_run"), 1);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

// y = silu(gelu((x + c) / e)) * x: every kind of elementwise step in one fused dispatch.
// Bounds: a = x + c errs by 2u|a|; d = a / e by that over |e| and 3u|d| of its own (GLSL
// allows division 2.5 ulps): 5u|d|; gelu (slope at most 1.13) adds 16 ulps of its
// result, silu (slope at most 1.1) 8; the product with x scales s's error by |x| and adds
// 2u|y|; 1e-37 covers results flushed below f32's normal range. The same ops run eagerly,
// and the graph compiled without fusion, give the same bits.
TEST_F(VulkanGraphs, AFusedChainOfEveryElementwiseStepMatchesFloat64AndTheEagerOps) {
  constexpr int64_t kN = 300;  // two workgroups, the second partly idle
  const std::vector<float> x = values(kN, 0.2f), c = values(kN, 4.0f);
  std::vector<float> e(kN);
  for (int64_t i = 0; i < kN; ++i) e[i] = 2.0f + 0.5f * std::cos(0.37f * float(i));
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const int64_t shape[1] = {kN};
  phx_graph_input_desc in = PHX_GRAPH_INPUT_DESC_INIT;
  in.dtype = PHX_DTYPE_F32;
  in.rank = 1;
  in.shape = shape;
  phx_value vx = 0, vc = 0, ve = 0;
  ASSERT_EQ(phx_graph_add_input(graph, &in, &vx), PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_constant(graph, "c", PHX_DTYPE_F32, 1, shape, c.data(), kN * 4, &vc),
            PHX_STATUS_OK);
  ASSERT_EQ(phx_graph_add_constant(graph, "e", PHX_DTYPE_F32, 1, shape, e.data(), kN * 4, &ve),
            PHX_STATUS_OK);
  auto node = [&](phx_op_id op, std::vector<phx_value> inputs) {
    return phx_test::add_node(graph, op, inputs);
  };
  const phx_value d = node(PHX_OP_DIV, {node(PHX_OP_ADD, {vx, vc}), ve});
  const phx_value y = node(PHX_OP_MUL, {node(PHX_OP_SILU, {node(PHX_OP_GELU, {d})}), vx});
  ASSERT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device_;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  options.flags = PHX_COMPILE_NO_FUSION;
  phx_executable unfused = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph, &options, &unfused), PHX_STATUS_OK)
      << phx_last_error();
  phx_graph_destroy(graph);
  const phx_tensor tx = tensor({kN}, &x), ty = tensor({kN});
  ASSERT_EQ(phx_executable_run(stream_, exe, &tx, 1, &ty, 1, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  std::vector<double> ref(kN), tol(kN);
  for (int64_t i = 0; i < kN; ++i) {
    const double a = double(x[i]) + c[i], dd = a / e[i];
    const double g = 0.5 * dd * std::erfc(-dd / std::sqrt(2.0)), sl = g / (1 + std::exp(-g));
    ref[i] = sl * x[i];
    const double err_g = 1.13 * 5 * kU * std::fabs(dd) + 16 * kU * std::fabs(g);
    const double err_s = 1.1 * err_g + 8 * kU * std::fabs(sl);
    tol[i] = std::fabs(x[i]) * err_s + 2 * kU * std::fabs(ref[i]) + 1e-37;
  }
  const std::vector<float> fused = download(ty, kN);
  expect_near_all(fused, ref, tol);
  // Each step rounds as its op's shader: the eager ops' bits.
  const phx_tensor tc = tensor({kN}, &c), te = tensor({kN}, &e), a = tensor({kN});
  const phx_tensor td = tensor({kN}), tg = tensor({kN}), ts = tensor({kN}), eager = tensor({kN});
  run(PHX_OP_ADD, {tx, tc}, a);
  run(PHX_OP_DIV, {a, te}, td);
  run(PHX_OP_GELU, {td}, tg);
  run(PHX_OP_SILU, {tg}, ts);
  run(PHX_OP_MUL, {ts, tx}, eager);
  const std::vector<float> eager_y = download(eager, kN);
  for (int64_t i = 0; i < kN; ++i)
    EXPECT_EQ(std::memcmp(&fused[i], &eager_y[i], sizeof(float)), 0)
        << "element " << i << ": fused " << fused[i] << ", eager " << eager_y[i];
  const std::map<std::string, double> stats = executable_stats(exe);
  EXPECT_EQ(stats.at("fused_nodes"), 5);
  EXPECT_EQ(stats.at("kernels_per_run"), 1);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);

  // Without fusion (PHX_PLUGIN_GRAPH_NO_FUSION): a kernel per node, the same bits.
  const phx_tensor unfused_y = tensor({kN});
  ASSERT_EQ(phx_executable_run(stream_, unfused, &tx, 1, &unfused_y, 1, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  const std::vector<float> node_by_node = download(unfused_y, kN);
  EXPECT_EQ(std::memcmp(node_by_node.data(), eager_y.data(), kN * sizeof(float)), 0);
  const std::map<std::string, double> unfused_stats = executable_stats(unfused);
  EXPECT_EQ(unfused_stats.at("fused_nodes"), 0);
  EXPECT_EQ(unfused_stats.at("kernels_per_run"), 5);
  EXPECT_EQ(phx_executable_destroy(unfused), PHX_STATUS_OK);
}

TEST_F(VulkanGraphs, RunsOnOtherTensorsAreRecordedAgainAndCorrect) {
  TwoOutputGraph g(context_);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device_;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, g.graph, &options, &exe), PHX_STATUS_OK)
      << phx_last_error();
  struct Run {
    std::vector<float> x;
    phx_tensor tx, ty, tz;
  };
  std::vector<Run> runs;
  for (float seed : {0.5f, 3.5f, 7.25f}) {
    Run r{values(kRows * kCols, seed), nullptr, nullptr, nullptr};
    r.tx = tensor({kRows, kCols}, &r.x);
    r.ty = tensor({kRows, kCols});
    r.tz = tensor({kRows, kOut});
    runs.push_back(r);
  }
  // Each set of tensors, then the first again on new contents (its recording may be
  // submitted again): each run's outputs are its own input's.
  const std::vector<float> zeros(kRows * kCols, 0.0f);
  for (size_t i : {0, 1, 2, 0}) {
    Run& r = runs[i];
    r.x = values(kRows * kCols, float(i) + 0.25f * float(r.x[0] > 0));
    ASSERT_EQ(phx_tensor_upload(r.tx, 0, r.x.data(), r.x.size() * sizeof(float)), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_upload(r.ty, 0, zeros.data(), zeros.size() * sizeof(float)),
              PHX_STATUS_OK);
    const phx_tensor outputs[2] = {r.ty, r.tz};
    ASSERT_EQ(phx_executable_run(stream_, exe, &r.tx, 1, outputs, 2, nullptr), PHX_STATUS_OK)
        << phx_last_error();
    std::vector<double> y, tol_y, z, tol_z;
    g.references(r.x, y, tol_y, z, tol_z);
    expect_near_all(download(r.ty, y.size()), y, tol_y);
    expect_near_all(download(r.tz, z.size()), z, tol_z);
  }
  const std::map<std::string, double> stats = executable_stats(exe);
  EXPECT_EQ(stats.at("runs"), 4);
  EXPECT_EQ(stats.at("recordings"), 3) << "the last run binds the first's tensors: it "
                                          "submits the first run's command buffer again";
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
}

// The layout ops run on Vulkan; quantize and dequantize have no Vulkan kernel: compiled for
// Vulkan with the CPU device beside it, a graph's quantize and dequantize nodes run on the
// CPU and the reshape, concat, slice and relus around them on Vulkan, and the result is
// relu(x) flattened, twice, reversed, rounded to a multiple of 1/4: exact (relu, copies,
// and values below 2 in steps of 1/4).
TEST_F(VulkanGraphs, LayoutNodesRunOnVulkanAndQuantizeOnTheCpuDevice) {
  size_t cpu = SIZE_MAX, count = 0;
  phx_device_count(context_, &count);
  for (size_t i = 0; i < count; ++i) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (phx_device_get(context_, i, &info) == PHX_STATUS_OK && std::string(info.plugin) == "cpu")
      cpu = i;
  }
  ASSERT_NE(cpu, SIZE_MAX);
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const int64_t shape[2] = {4, 6};
  phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
  input.dtype = PHX_DTYPE_F32;
  input.rank = 2;
  input.shape = shape;
  phx_value x = 0;
  ASSERT_EQ(phx_graph_add_input(graph, &input, &x), PHX_STATUS_OK);
  const phx_reshape_params flat = {sizeof(phx_reshape_params), 1, {-1}};
  const phx_axis_params axis0 = PHX_AXIS_PARAMS_INIT;
  phx_slice_params reversed = PHX_SLICE_PARAMS_INIT;
  reversed.starts[0] = -1;
  reversed.ends[0] = INT64_MIN;
  reversed.steps[0] = -1;
  const float quarter = 0.25f;
  const int64_t one = 1;
  phx_value scale = 0;
  ASSERT_EQ(phx_graph_add_constant(graph, "scale", PHX_DTYPE_F32, 1, &one, &quarter, sizeof quarter,
                                   &scale),
            PHX_STATUS_OK);
  phx_quantize_params to_i8 = PHX_QUANTIZE_PARAMS_INIT;
  using phx_test::add_node;
  const phx_value a = add_node(graph, PHX_OP_RELU, {x}, "relu_in");
  const phx_value r = add_node(graph, PHX_OP_RESHAPE, {a}, "reshape", &flat);
  const phx_value c = add_node(graph, PHX_OP_CONCAT, {r, r}, "concat", &axis0);
  const phx_value s = add_node(graph, PHX_OP_SLICE, {c}, "slice", &reversed);
  phx_graph_node_desc quantize = PHX_GRAPH_NODE_DESC_INIT;
  const phx_value quantize_inputs[2] = {s, scale};
  const phx_dtype i8 = PHX_DTYPE_I8;
  quantize.name = "quantize";
  quantize.op = PHX_OP_QUANTIZE;
  quantize.params = &to_i8;
  quantize.inputs = quantize_inputs;
  quantize.input_count = 2;
  quantize.output_dtypes = &i8;
  quantize.output_count = 1;
  phx_value q = 0;
  ASSERT_EQ(phx_graph_add_node(graph, &quantize, &q), PHX_STATUS_OK) << phx_last_error();
  const phx_value z = add_node(graph, PHX_OP_DEQUANTIZE, {q, scale}, "dequantize", &to_i8);
  ASSERT_EQ(phx_graph_add_output(graph, add_node(graph, PHX_OP_RELU, {z}, "relu_out"), "y"),
            PHX_STATUS_OK);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device_;
  options.other_devices = &cpu;
  options.other_device_count = 1;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
  ASSERT_EQ(phx_executable_describe(exe, &info), PHX_STATUS_OK);
  for (size_t n = 0; n < info.node_count; ++n) {
    phx_executable_node_info node = PHX_EXECUTABLE_NODE_INFO_INIT;
    ASSERT_EQ(phx_executable_describe_node(exe, n, &node), PHX_STATUS_OK);
    const std::string name = node.name;
    const bool quantized = name == "quantize" || name == "dequantize";
    EXPECT_EQ(node.device, quantized ? cpu : device_) << name;
  }
  const std::vector<float> xs = values(24, 0.1f);
  const phx_tensor tx = tensor({4, 6}, &xs), ty = tensor({48});
  ASSERT_EQ(phx_executable_run(stream_, exe, &tx, 1, &ty, 1, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  std::vector<float> expected;
  for (int i = 47; i >= 0; --i)
    expected.push_back(std::nearbyint(std::max(xs[static_cast<size_t>(i % 24)], 0.0f) * 4) / 4);
  EXPECT_EQ(download(ty, 48), expected);
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
}

}  // namespace
