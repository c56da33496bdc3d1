// The public headers compile as C++ (under the project's -Wall -Wextra -Werror, with
// -pedantic added in CMakeLists.txt), their declarations have C linkage, and every
// PHX_*_INIT macro initializes its struct in C++ as it does in C.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <phynexus/plugin.h>

namespace {

TEST(HeadersCxx, InitMacrosSetStructSize) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  phx_plugin_info plugin = PHX_PLUGIN_INFO_INIT;
  phx_device_info device = PHX_DEVICE_INFO_INIT;
  phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
  phx_matmul_params matmul = PHX_MATMUL_PARAMS_INIT;
  phx_softmax_params softmax = PHX_SOFTMAX_PARAMS_INIT;
  phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  phx_reduce_params reduce = PHX_REDUCE_PARAMS_INIT;
  phx_conv2d_params conv = PHX_CONV2D_PARAMS_INIT;
  phx_profile_record record = PHX_PROFILE_RECORD_INIT;
  phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
  EXPECT_EQ(options.struct_size, sizeof options);
  EXPECT_EQ(options.plugin_paths, nullptr);
  EXPECT_EQ(plugin.struct_size, sizeof plugin);
  EXPECT_EQ(plugin.name, nullptr);
  EXPECT_EQ(device.struct_size, sizeof device);
  EXPECT_EQ(desc.struct_size, sizeof desc);
  EXPECT_EQ(matmul.struct_size, sizeof matmul);
  EXPECT_EQ(softmax.struct_size, sizeof softmax);
  EXPECT_EQ(norm.struct_size, sizeof norm);
  EXPECT_EQ(reduce.struct_size, sizeof reduce);
  EXPECT_EQ(conv.struct_size, sizeof conv);
  EXPECT_EQ(record.struct_size, sizeof record);
  EXPECT_EQ(stats.struct_size, sizeof stats);
  EXPECT_EQ(stats.bytes_in_use, 0u);
}

TEST(HeadersCxx, FunctionsHaveCLinkage) {
  // Calls through the C names resolve against libphynexus, which exports C symbols.
  EXPECT_EQ(phx_api_version(), static_cast<uint32_t>(PHX_API_VERSION));
  EXPECT_STREQ(phx_status_name(PHX_STATUS_OK), "PHX_STATUS_OK");
}

}  // namespace
