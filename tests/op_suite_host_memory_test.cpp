// Tensors over host memory (phx_tensor_create_from_host, phx_tensor_host_data) on every
// device found at run time. A device either computes on the caller's memory in place or
// answers UNSUPPORTED and keeps nothing; either way bad input is refused first, the release
// callback runs exactly once and only for a tensor that was made, and never before the
// device's last work on the memory. Values are small integers in f32: every sum is exact,
// so results are compared exactly.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "op_suite.h"

using namespace phx_test;

namespace {

// A suite name of its own: phx-conformance links every suite file, and each file's
// instantiation would otherwise run the OpSuite tests of the others again.
using HostMemoryTest = OpSuite;

// Counts release calls; poisons the memory on release, so that an op that still read it
// afterwards would give NaNs.
struct Released {
  int calls = 0;
  std::vector<float>* memory = nullptr;
};

void count_release(void* user_data) {
  auto* released = static_cast<Released*>(user_data);
  ++released->calls;
  if (released->memory != nullptr)
    for (float& v : *released->memory) v = std::numeric_limits<float>::quiet_NaN();
}

std::vector<float> iota(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = from + static_cast<float>(i);
  return v;
}

TEST_P(HostMemoryTest, HostMemoryIsRefusedBeforeAnyDeviceIsAsked) {
  std::vector<float> memory(8);
  Released released;
  const int64_t shape[] = {2, 4}, bad_shape[] = {2, 0};
  phx_tensor t = nullptr;
  EXPECT_EQ(phx_tensor_create_from_host(context_, device(), PHX_DTYPE_F32, 2, shape, nullptr,
                                        count_release, &released, &t),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("data is null"), std::string::npos);
  EXPECT_EQ(phx_tensor_create_from_host(context_, device(), PHX_DTYPE_F32, 2, shape,
                                        reinterpret_cast<char*>(memory.data()) + 1, count_release,
                                        &released, &t),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(phx_last_error()).find("aligned"), std::string::npos);
  EXPECT_EQ(phx_tensor_create_from_host(context_, device(), PHX_DTYPE_F32, 2, bad_shape,
                                        memory.data(), count_release, &released, &t),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_tensor_create_from_host(context_, device(), static_cast<phx_dtype>(99), 2, shape,
                                        memory.data(), count_release, &released, &t),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_tensor_create_from_host(context_, device(), PHX_DTYPE_F32, 2, shape, memory.data(),
                                        count_release, &released, nullptr),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_tensor_create_from_host(nullptr, device(), PHX_DTYPE_F32, 2, shape, memory.data(),
                                        count_release, &released, &t),
            PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_tensor_create_from_host(context_, 1000, PHX_DTYPE_F32, 2, shape, memory.data(),
                                        count_release, &released, &t),
            PHX_STATUS_NOT_FOUND);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(released.calls, 0) << "release called for a tensor that was never made";

  void* data = nullptr;
  EXPECT_EQ(phx_tensor_host_data(nullptr, &data), PHX_STATUS_INVALID_ARGUMENT);
  Tensor allocated = make(PHX_DTYPE_F32, {2, 4});
  EXPECT_EQ(phx_tensor_host_data(allocated.get(), nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(data, nullptr);
}

TEST_P(HostMemoryTest, HostMemoryTensorsComputeInPlaceOrAreUnsupported) {
  if (!claims(PHX_OP_ADD, PHX_DTYPE_F32)) GTEST_SKIP() << "no f32 add";
  std::vector<float> a = iota(12, 1.0f), b = iota(12, 100.0f), out(12, -1.0f);
  Released released_a, released_b, released_out;
  released_a.memory = &a;
  Tensor ta, tb, tout;
  const Shape shape = {3, 4};
  phx_tensor t = nullptr;
  const phx_status status = phx_tensor_create_from_host(
      context_, device(), PHX_DTYPE_F32, 2, shape.data(), a.data(), count_release, &released_a, &t);
  if (status == PHX_STATUS_UNSUPPORTED) {
    EXPECT_EQ(t, nullptr);
    EXPECT_EQ(released_a.calls, 0);
    EXPECT_EQ(a, iota(12, 1.0f)) << "a refused tensor wrote the memory";
    GTEST_SKIP() << "the device does not compute on host memory: " << phx_last_error();
  }
  ASSERT_EQ(status, PHX_STATUS_OK) << phx_last_error();
  ta = Tensor(t);
  ASSERT_EQ(phx_tensor_create_from_host(context_, device(), PHX_DTYPE_F32, 2, shape.data(),
                                        b.data(), count_release, &released_b, &t),
            PHX_STATUS_OK)
      << phx_last_error();
  tb = Tensor(t);
  ASSERT_EQ(phx_tensor_create_from_host(context_, device(), PHX_DTYPE_F32, 2, shape.data(),
                                        out.data(), count_release, &released_out, &t),
            PHX_STATUS_OK)
      << phx_last_error();
  tout = Tensor(t);

  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  ASSERT_EQ(phx_tensor_describe(ta.get(), &desc), PHX_STATUS_OK);
  EXPECT_EQ(desc.rank, 2u);
  EXPECT_EQ(desc.shape[0], 3);
  EXPECT_EQ(desc.shape[1], 4);
  EXPECT_EQ(desc.byte_size, 48u);
  EXPECT_EQ(download(ta, PHX_DTYPE_F32, 12), std::vector<double>(a.begin(), a.end()));

  // The op reads a and b and writes out where they lie.
  ASSERT_EQ(run(PHX_OP_ADD, nullptr, {ta.get(), tb.get()}, {tout.get()}), PHX_STATUS_OK)
      << phx_last_error();
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], a[i] + b[i]) << i;

  // What the caller writes, the next op reads.
  a[5] = 1000.0f;
  ASSERT_EQ(run(PHX_OP_ADD, nullptr, {ta.get(), tb.get()}, {tout.get()}), PHX_STATUS_OK);
  EXPECT_EQ(out[5], 1000.0f + b[5]);

  // The host address, where the device offers one, is the caller's memory itself.
  void* data = nullptr;
  const phx_status host_status = phx_tensor_host_data(tout.get(), &data);
  if (host_status == PHX_STATUS_OK)
    EXPECT_EQ(data, out.data());
  else
    EXPECT_EQ(host_status, PHX_STATUS_UNSUPPORTED) << phx_last_error();

  // Destroyed with an op still queued on it: the op finishes first, then release runs
  // (which poisons a: an op that read it afterwards would write NaN).
  const float expected0 = a[0] + b[0];
  out[0] = -1.0f;
  const phx_tensor inputs[] = {ta.get(), tb.get()}, outputs[] = {tout.get()};
  const phx_op_desc add = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, inputs, 2, outputs, 1};
  ASSERT_EQ(phx_op_run(stream_, &add, nullptr), PHX_STATUS_OK) << phx_last_error();
  ta = Tensor();
  EXPECT_EQ(released_a.calls, 1);
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  EXPECT_EQ(out[0], expected0) << "the op read the memory after its release";
  EXPECT_EQ(released_b.calls, 0);
  EXPECT_EQ(released_out.calls, 0);
  tb = Tensor();
  tout = Tensor();
  EXPECT_EQ(released_b.calls, 1);
  EXPECT_EQ(released_out.calls, 1);
}

TEST_P(HostMemoryTest, HostMemoryIsReleasedWhenItsContextIsDestroyed) {
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(suite_context_options(), &context), PHX_STATUS_OK);
  std::vector<float> memory = iota(6, 0.0f);
  Released released;
  const int64_t shape[] = {6};
  phx_tensor t = nullptr;
  const phx_status status = phx_tensor_create_from_host(
      context, device(), PHX_DTYPE_F32, 1, shape, memory.data(), count_release, &released, &t);
  EXPECT_TRUE(status == PHX_STATUS_OK || status == PHX_STATUS_UNSUPPORTED) << phx_last_error();
  EXPECT_EQ(released.calls, 0);
  ASSERT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
  EXPECT_EQ(released.calls, status == PHX_STATUS_OK ? 1 : 0);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Devices, HostMemoryTest, ::testing::ValuesIn(devices_found_at_run_time()),
                         [](const auto& info) { return info.param.name; });
