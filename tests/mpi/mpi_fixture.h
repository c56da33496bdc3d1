// What the MPI tests share: a context, this process's stream on the CPU device, and the
// inputs of every rank, which each process can make from a seed.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>
#include <phynexus/comm_mpi.h>
#include <phynexus/phynexus.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>
#include <vector>

namespace phx_mpi_test {

constexpr size_t kRanks = 4;
// Generous: a busy CI machine with more ranks than cores must never hit it by accident.
constexpr uint32_t kTimeoutMs = 30000;

inline size_t world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return static_cast<size_t>(rank);
}

inline size_t world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return static_cast<size_t>(size);
}

// Rank rank's input of count elements: f32 spread over many magnitudes and both signs, so
// that the order of additions shows in the last bits; i32 over the whole range, so that
// sums wrap; bf16 as the top half of such f32.
inline std::vector<std::byte> rank_input(size_t rank, phx_dtype dtype, size_t count,
                                         uint64_t seed) {
  std::mt19937_64 random(seed * 1000 + rank);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::vector<std::byte> bytes(count * phx_dtype_size(dtype));
  for (size_t i = 0; i < count; ++i) {
    const float value = std::ldexp(mantissa(random), static_cast<int>(random() % 24) - 12);
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    if (dtype == PHX_DTYPE_F32) {
      std::memcpy(&bytes[i * 4], &bits, 4);
    } else if (dtype == PHX_DTYPE_I32) {
      const uint32_t any = static_cast<uint32_t>(random());
      std::memcpy(&bytes[i * 4], &any, 4);
    } else {
      const uint16_t top = static_cast<uint16_t>(bits >> 16);
      std::memcpy(&bytes[i * 2], &top, 2);
    }
  }
  return bytes;
}

// The index of the first byte where a and b differ, -1 when they are equal.
inline long first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b) {
  if (a.size() != b.size()) return 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<long>(i);
  return -1;
}

class MpiFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(world_size(), kRanks) << "run with mpirun -np " << kRanks;
    rank_ = world_rank();
    // The CPU plugin alone: four processes loading every plugin (the Vulkan one under the
    // validation layer) would take seconds of the machine's few cores.
    const char* plugins[] = {PHX_TEST_CPU_PLUGIN};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = plugins;
    options.plugin_path_count = 1;
    options.use_default_search_path = 0;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    ASSERT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK);
    for (size_t d = 0; d < count; ++d) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      ASSERT_EQ(phx_device_get(context_, d, &info), PHX_STATUS_OK);
      if (info.type == PHX_DEVICE_CPU) {
        cpu_ = d;
        break;
      }
    }
    ASSERT_NE(cpu_, SIZE_MAX) << "no CPU device";
    ASSERT_EQ(phx_stream_create(context_, cpu_, &stream_), PHX_STATUS_OK);
  }
  void TearDown() override { EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK); }

  phx_comm mpi_comm(uint32_t timeout_ms = kTimeoutMs) {
    phx_comm_options options = PHX_COMM_OPTIONS_INIT;
    options.timeout_ms = timeout_ms;
    phx_comm comm = nullptr;
    EXPECT_EQ(phx_comm_create_mpi(context_, cpu_, nullptr, &options, &comm), PHX_STATUS_OK)
        << phx_last_error();
    return comm;
  }

  phx_tensor tensor(phx_dtype dtype, size_t count, const std::vector<std::byte>* data = nullptr) {
    const int64_t shape = static_cast<int64_t>(count);
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, cpu_, dtype, 1, &shape, &t), PHX_STATUS_OK)
        << phx_last_error();
    if (data != nullptr) {
      EXPECT_EQ(phx_tensor_upload(t, 0, data->data(), data->size()), PHX_STATUS_OK)
          << phx_last_error();
    }
    return t;
  }

  std::vector<std::byte> download(phx_tensor t, phx_dtype dtype, size_t count) {
    std::vector<std::byte> bytes(count * phx_dtype_size(dtype));
    EXPECT_EQ(phx_tensor_download(t, 0, bytes.data(), bytes.size()), PHX_STATUS_OK)
        << phx_last_error();
    return bytes;
  }

  size_t rank_ = 0;
  phx_context context_ = nullptr;
  size_t cpu_ = SIZE_MAX;
  phx_stream stream_ = nullptr;
};

}  // namespace phx_mpi_test
