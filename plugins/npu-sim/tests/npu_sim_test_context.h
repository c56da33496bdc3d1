// What the npu-sim C API tests share: a context whose npu-sim plugin reads the settings a
// test gives it, a stream that destroys itself, and running an op.
#pragma once

#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <vector>

#include "sim_api_fixture.h"

namespace npu_sim_test {

inline const phx_test::SimPluginNames kNpuSim = {"npu-sim", "phx_npu_sim", "PHX_NPU_SIM",
                                                 "PHX_NPU_SIM_CONFIG"};

class Sim : public phx_test::SimContext {
 public:
  // settings: PHX_NPU_SIM's value; config_file: PHX_NPU_SIM_CONFIG's, or none.
  explicit Sim(const char* settings, uint32_t flags = 0, const char* config_file = nullptr)
      : SimContext(kNpuSim, settings, flags, config_file) {}
};

// A stream on a device that destroys itself.
class Stream {
 public:
  Stream(phx_context context, size_t device) {
    EXPECT_EQ(phx_stream_create(context, device, &stream_), PHX_STATUS_OK) << phx_last_error();
  }
  ~Stream() {
    if (stream_ != nullptr) phx_stream_destroy(stream_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  phx_stream get() const { return stream_; }

 private:
  phx_stream stream_ = nullptr;
};

inline phx_status run(phx_stream stream, phx_op_id op, const void* params,
                      std::vector<phx_tensor> inputs, std::vector<phx_tensor> outputs) {
  phx_op_desc desc = {sizeof(phx_op_desc), op, params, inputs.data(), inputs.size(), outputs.data(),
                      outputs.size()};
  return phx_op_run(stream, &desc, nullptr);
}

}  // namespace npu_sim_test
