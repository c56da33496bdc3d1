// The Vulkan ops beyond what the op suite (tests/op_suite_test.cpp) covers: matmul under
// both of its variants (PHX_VULKAN_MATMUL=direct and =shared), and tensors larger than one
// binding (DeviceCaps::max_binding_bytes), which the elementwise ops, cast and matmul split
// into sub-range dispatches. The binding is lowered to 1 MiB for those
// (PHX_VULKAN_MAX_BINDING_BYTES), so that the split runs on tensors of a few MiB on every
// device rather than on 136 MB past lavapipe's 128 MiB, and not at all on a GPU's 4 GiB.
// References are float64, with the op suite's tolerances (tests/op_suite.h): matmul
// 2 K 2^-24 sum|a b| + 1e-6 plus the final rounding, add 2 * 2^-24 |ref|, cast exact.
#include <cstdlib>
#include <string>

#include "op_suite.h"

namespace phx_test {
namespace {

// The first device of the Vulkan plugin, or none.
bool find_vulkan_device(phx_context context, size_t* out_device) {
  size_t count = 0;
  phx_device_count(context, &count);
  for (size_t i = 0; i < count; ++i) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    if (phx_device_get(context, i, &info) == PHX_STATUS_OK &&
        std::string(info.plugin) == "vulkan") {
      *out_device = i;
      return true;
    }
  }
  return false;
}

class VulkanKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(phx_context_create(nullptr, &context_), PHX_STATUS_OK) << phx_last_error();
    if (!find_vulkan_device(context_, &device_)) GTEST_SKIP() << "no Vulkan device";
    ASSERT_EQ(phx_stream_create(context_, device_, &stream_), PHX_STATUS_OK) << phx_last_error();
  }
  void TearDown() override {
    unsetenv("PHX_VULKAN_MATMUL");
    if (context_) phx_context_destroy(context_);
  }

  Tensor upload(const HostTensor& h) {
    Tensor t;
    EXPECT_EQ(create_tensor(context_, device_, h.dtype, h.shape, &t), PHX_STATUS_OK)
        << phx_last_error();
    const std::vector<unsigned char> bytes = to_bytes(h);
    EXPECT_EQ(phx_tensor_upload(t.get(), 0, bytes.data(), bytes.size()), PHX_STATUS_OK);
    return t;
  }

  // Runs op into a new output and compares it with expected.
  void run_and_check(phx_op_id op, const void* params, const std::vector<phx_tensor>& inputs,
                     phx_dtype out_dtype, const Shape& out_shape, const Expected& expected) {
    Tensor out;
    ASSERT_EQ(create_tensor(context_, device_, out_dtype, out_shape, &out), PHX_STATUS_OK);
    const phx_tensor outputs[1] = {out.get()};
    const phx_op_desc desc = {sizeof desc, op, params, inputs.data(), inputs.size(), outputs, 1};
    ASSERT_EQ(phx_op_run(stream_, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
    const size_t size = phx_dtype_size(out_dtype);
    std::vector<unsigned char> bytes(expected.values.size() * size);
    ASSERT_EQ(phx_tensor_download(out.get(), 0, bytes.data(), bytes.size()), PHX_STATUS_OK);
    size_t failures = 0;
    for (size_t i = 0; i < expected.values.size(); ++i) {
      const double got = decode(out_dtype, &bytes[i * size]);
      const double ref = expected.values[i];
      const bool ok = std::isnan(ref) ? std::isnan(got)
                                      : std::fabs(got - ref) <= expected.tolerances[i] ||
                                            (std::isinf(ref) && got == ref);
      if (!ok && ++failures <= 5) {
        ADD_FAILURE() << "element " << i << ": got " << got << ", expected " << ref << " +- "
                      << expected.tolerances[i];
      }
    }
    EXPECT_EQ(failures, 0u) << "of " << expected.values.size();
  }

  // a [batch..., M, K] (stored transposed with ta), b likewise; optional bias.
  void check_matmul(phx_dtype dt, phx_dtype out_dt, const Shape& a_shape, const Shape& b_shape,
                    bool ta, bool tb, const Shape* bias_shape, phx_activation act, Random& rng) {
    SCOPED_TRACE(std::string(phx_dtype_name(dt)) + "->" + phx_dtype_name(out_dt) + " a" +
                 shape_string(a_shape) + (ta ? "T" : "") + " b" + shape_string(b_shape) +
                 (tb ? "T" : ""));
    const HostTensor a = rng.tensor(dt, a_shape);
    const HostTensor b = rng.tensor(dt, b_shape);
    const size_t ra = a_shape.size(), rb = b_shape.size();
    const int64_t m = ta ? a_shape[ra - 1] : a_shape[ra - 2];
    const int64_t k = ta ? a_shape[ra - 2] : a_shape[ra - 1];
    const int64_t n = tb ? b_shape[rb - 2] : b_shape[rb - 1];
    const Shape batch_a(a_shape.begin(), a_shape.end() - 2);
    const Shape batch_b(b_shape.begin(), b_shape.end() - 2);
    Shape out_shape = broadcast_shape(batch_a, batch_b);
    out_shape.push_back(m);
    out_shape.push_back(n);
    HostTensor bias;
    if (bias_shape) bias = rng.tensor(out_dt, *bias_shape);

    Expected expected;
    for_each_index(out_shape, [&](const Index& index, int64_t) {
      const Index batch(index.begin(), index.end() - 2);
      const int64_t i = index[index.size() - 2], j = index.back();
      const int64_t a_base = broadcast_offset(batch_a, batch) * m * k;
      const int64_t b_base = broadcast_offset(batch_b, batch) * k * n;
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = a.at(a_base + (ta ? p * m + i : i * k + p));
        const double y = b.at(b_base + (tb ? j * k + p : p * n + j));
        sum += x * y;
        abs_sum += std::fabs(x * y);
      }
      if (bias_shape) {
        const double bv = bias.at(broadcast_offset(bias.shape, index));
        sum += bv;
        abs_sum += std::fabs(bv);
      }
      const double ref = apply_activation(act, sum);
      expected.add(ref, accumulation_tolerance(k, abs_sum, act, ref, out_dt));
    });
    const Tensor ta_t = upload(a), tb_t = upload(b);
    Tensor bias_t;
    std::vector<phx_tensor> inputs = {ta_t.get(), tb_t.get()};
    if (bias_shape) {
      bias_t = upload(bias);
      inputs.push_back(bias_t.get());
    }
    const phx_matmul_params params = {sizeof params, ta ? 1 : 0, tb ? 1 : 0, act};
    run_and_check(PHX_OP_MATMUL, &params, inputs, out_dt, out_shape, expected);
  }

  void check_matmul_variant(const char* variant) {
    setenv("PHX_VULKAN_MATMUL", variant, 1);
    Random rng(7);
    const Shape bias_n = {257};
    const Shape bias_m1 = {129, 1};
    const Shape bias_136 = {136};
    for (phx_dtype dt : kFloatDtypes) {
      // Out = in, and f32 where the input is narrower.
      std::vector<phx_dtype> out_dtypes = {dt};
      if (dt != PHX_DTYPE_F32) out_dtypes.push_back(PHX_DTYPE_F32);
      for (phx_dtype out_dt : out_dtypes) {
        check_matmul(dt, out_dt, {1, 1}, {1, 1}, false, false, nullptr, PHX_ACTIVATION_NONE, rng);
        // M = 129 and N = 257: a tile and one row, two tiles and one column. K = 264 is
        // 8 whole K blocks of the shared variant (32 on lavapipe) and 8 more, and 33 of
        // the direct kernel's 8-element steps, a multiple of 8 for its vector loads.
        check_matmul(dt, out_dt, {129, 264}, {264, 257}, false, false, &bias_n, PHX_ACTIVATION_GELU,
                     rng);
        check_matmul(dt, out_dt, {264, 129}, {257, 264}, true, true, &bias_m1, PHX_ACTIVATION_SILU,
                     rng);
        check_matmul(dt, out_dt, {2, 1, 127, 33}, {3, 33, 129}, false, false, nullptr,
                     PHX_ACTIVATION_RELU, rng);
        check_matmul(dt, out_dt, {256, 256}, {256, 256}, false, true, nullptr, PHX_ACTIVATION_NONE,
                     rng);
        // k and n multiples of 8 with neither operand transposed: the direct kernel's
        // 8-element loads of a and of b; the batch of a starts each matrix at a multiple
        // of 8 elements too.
        check_matmul(dt, out_dt, {3, 72, 40}, {40, 136}, false, false, &bias_136,
                     PHX_ACTIVATION_RELU, rng);
      }
    }
  }

  phx_context context_ = nullptr;
  phx_stream stream_ = nullptr;
  size_t device_ = 0;
};

TEST_F(VulkanKernels, MatmulDirectVariant) { check_matmul_variant("direct"); }

TEST_F(VulkanKernels, MatmulSharedMemoryVariant) { check_matmul_variant("shared"); }

// The ops on tensors larger than one binding, with the binding lowered to 1 MiB. Each op
// must make at least ceil(bytes / 1 MiB) dispatches, one per binding's worth, where one
// binding would take one: that is the split.
class VulkanSplitKernels : public VulkanKernels {
 protected:
  static constexpr uint64_t kBindingBytes = 1 << 20;

  void SetUp() override {
    // Read when the context loads the plugin.
    setenv("PHX_VULKAN_MAX_BINDING_BYTES", std::to_string(kBindingBytes).c_str(), 1);
    VulkanKernels::SetUp();
  }
  void TearDown() override {
    VulkanKernels::TearDown();
    unsetenv("PHX_VULKAN_MAX_BINDING_BYTES");
  }

  double dispatches() {
    size_t count = 0;
    EXPECT_EQ(phx_device_stats(context_, device_, nullptr, 0, &count), PHX_STATUS_OK);
    std::vector<phx_metric> metrics(count);
    EXPECT_EQ(phx_device_stats(context_, device_, metrics.data(), count, &count), PHX_STATUS_OK);
    for (const phx_metric& m : metrics)
      if (std::string(m.name) == "dispatches") return m.value;
    ADD_FAILURE() << "the device has no \"dispatches\" statistic";
    return 0;
  }

  static double bindings_needed(uint64_t bytes) {
    return double((bytes + kBindingBytes - 1) / kBindingBytes);
  }
};

// 600 x 1000 f32: 2.4 MB, three bindings' worth; the chunks start inside rows, so the
// broadcast operand is read across chunk boundaries.
constexpr int64_t kRows = 600;
constexpr int64_t kColumns = 1000;
constexpr int64_t kLarge = kRows * kColumns;

TEST_F(VulkanSplitKernels, AddAndCastSplitLargeTensors) {
  Random rng(8);
  const HostTensor a = rng.tensor(PHX_DTYPE_F32, {kRows, kColumns});
  const HostTensor b = rng.tensor(PHX_DTYPE_F32, {kColumns});  // broadcast along rows
  Expected sum;
  for (int64_t i = 0; i < kLarge; ++i) {
    const double ref = a.at(i) + b.at(i % kColumns);
    sum.add(ref, 2 * kF32Epsilon * std::fabs(ref));
  }
  const Tensor at = upload(a), bt = upload(b);
  const double before_add = dispatches();
  run_and_check(PHX_OP_ADD, nullptr, {at.get(), bt.get()}, PHX_DTYPE_F32, a.shape, sum);
  EXPECT_GE(dispatches() - before_add, bindings_needed(kLarge * 4)) << "add did not split";
  Expected cast;
  for (double v : a.values) cast.add(round_to_float(PHX_DTYPE_BF16, v), 0.0);
  const double before_cast = dispatches();
  run_and_check(PHX_OP_CAST, nullptr, {at.get()}, PHX_DTYPE_BF16, a.shape, cast);
  EXPECT_GE(dispatches() - before_cast, bindings_needed(kLarge * 4)) << "cast did not split";
}

TEST_F(VulkanSplitKernels, MatmulSplitsALargeOperand) {
  Random rng(9);
  // a [600, 1000] f32 is 2.4 MB: row blocks of 256 rows (whole 128-row tiles), then 88;
  // b and the output are small.
  const Shape bias = {5};
  for (const char* variant : {"direct", "shared"}) {
    setenv("PHX_VULKAN_MATMUL", variant, 1);
    const double before = dispatches();
    check_matmul(PHX_DTYPE_F32, PHX_DTYPE_F32, {kRows, kColumns}, {kColumns, 5}, false, false,
                 &bias, PHX_ACTIVATION_NONE, rng);
    EXPECT_GE(dispatches() - before, bindings_needed(kLarge * 4))
        << variant << ": matmul did not split";
  }
}

}  // namespace
}  // namespace phx_test
