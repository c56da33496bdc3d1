// Pins the binary layout of the public headers: the offset of every field of every
// struct, the value of every enum constant, and the type of every function and plugin
// entry, as released. A plugin built against plugin ABI 1.0, or a program built against
// API 0.1, relies on each of them; a reorder, a resized field or a renumbered constant
// breaks it silently, and this test is what makes it loud.
//
// When a minor is released, add a block for it below (the fields and constants it
// appends), never edit an old one: an old block failing means an ABI break.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <phynexus/plugin.h>

#include <cstddef>
#include <type_traits>

namespace {

#if defined(__x86_64__) && defined(__LP64__)
constexpr bool kPinnedPlatform = true;
#else
constexpr bool kPinnedPlatform = false;
#endif

#define PHX_EXPECT_OFFSET(type, field, offset) \
  EXPECT_EQ(offsetof(type, field), size_t{offset}) << #type "." #field " moved"
// A newer minor may append fields, so a struct may grow but never shrink below the end
// of the last field of the version that pinned it.
#define PHX_EXPECT_SIZE_AT_LEAST(type, size) \
  EXPECT_GE(sizeof(type), size_t{size}) << #type " shrank"
#define PHX_EXPECT_FIELD_SIZE(type, field, size) \
  EXPECT_EQ(sizeof(type::field), size_t{size}) << #type "." #field " resized"

class AbiLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kPinnedPlatform) GTEST_SKIP() << "offsets are pinned for x86-64 (LP64) only";
  }
};

// ==== Plugin ABI 1.0 (include/phynexus/plugin.h) =====================================

TEST_F(AbiLayout, PluginAbi_1_0_Versions) {
  EXPECT_EQ(PHX_PLUGIN_ABI_MAJOR, 1);
  EXPECT_STREQ(PHX_PLUGIN_ENTRY_NAME, "phx_plugin_entry");
  EXPECT_EQ(PHX_PLUGIN_MAX_METRICS, 16);
}

TEST_F(AbiLayout, PluginAbi_1_0_Host) {
  PHX_EXPECT_OFFSET(phx_plugin_host, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_host, abi_major, 8);
  PHX_EXPECT_OFFSET(phx_plugin_host, abi_minor, 12);
  PHX_EXPECT_OFFSET(phx_plugin_host, host_data, 16);
  PHX_EXPECT_OFFSET(phx_plugin_host, log, 24);
  PHX_EXPECT_OFFSET(phx_plugin_host, set_error, 32);
  PHX_EXPECT_OFFSET(phx_plugin_host, num_threads, 40);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_host, 44);
}

TEST_F(AbiLayout, PluginAbi_1_0_DeviceInfo) {
  PHX_EXPECT_OFFSET(phx_plugin_device_info, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, type, 8);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, name, 16);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, vendor, 24);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, memory_total_bytes, 32);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, memory_available_bytes, 40);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, compute_units, 48);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, dtype_mask, 52);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, properties, 56);
  PHX_EXPECT_OFFSET(phx_plugin_device_info, property_count, 64);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_device_info, 72);
}

TEST_F(AbiLayout, PluginAbi_1_0_Tensor) {
  PHX_EXPECT_OFFSET(phx_plugin_tensor, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_tensor, buffer, 8);
  PHX_EXPECT_OFFSET(phx_plugin_tensor, offset, 16);
  PHX_EXPECT_OFFSET(phx_plugin_tensor, dtype, 24);
  PHX_EXPECT_OFFSET(phx_plugin_tensor, rank, 28);
  PHX_EXPECT_OFFSET(phx_plugin_tensor, shape, 32);
  PHX_EXPECT_FIELD_SIZE(phx_plugin_tensor, shape, 64);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_tensor, 96);
}

TEST_F(AbiLayout, PluginAbi_1_0_Profile) {
  PHX_EXPECT_OFFSET(phx_plugin_profile, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_profile, metrics, 8);
  PHX_EXPECT_FIELD_SIZE(phx_plugin_profile, metrics, 256);
  PHX_EXPECT_OFFSET(phx_plugin_profile, metric_count, 264);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_profile, 272);
}

TEST_F(AbiLayout, PluginAbi_1_0_Op) {
  PHX_EXPECT_OFFSET(phx_plugin_op, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_op, op, 8);
  PHX_EXPECT_OFFSET(phx_plugin_op, params, 16);
  PHX_EXPECT_OFFSET(phx_plugin_op, inputs, 24);
  PHX_EXPECT_OFFSET(phx_plugin_op, input_count, 32);
  PHX_EXPECT_OFFSET(phx_plugin_op, outputs, 40);
  PHX_EXPECT_OFFSET(phx_plugin_op, output_count, 48);
  PHX_EXPECT_OFFSET(phx_plugin_op, profile, 56);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_op, 64);
}

TEST_F(AbiLayout, PluginAbi_1_0_Api) {
  PHX_EXPECT_OFFSET(phx_plugin_api, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_api, abi_major, 8);
  PHX_EXPECT_OFFSET(phx_plugin_api, abi_minor, 12);
  PHX_EXPECT_OFFSET(phx_plugin_api, name, 16);
  PHX_EXPECT_OFFSET(phx_plugin_api, version, 24);
  PHX_EXPECT_OFFSET(phx_plugin_api, initialize, 32);
  PHX_EXPECT_OFFSET(phx_plugin_api, shutdown, 40);
  PHX_EXPECT_OFFSET(phx_plugin_api, device_count, 48);
  PHX_EXPECT_OFFSET(phx_plugin_api, device_info, 56);
  PHX_EXPECT_OFFSET(phx_plugin_api, op_supported, 64);
  PHX_EXPECT_OFFSET(phx_plugin_api, buffer_allocate, 72);
  PHX_EXPECT_OFFSET(phx_plugin_api, buffer_free, 80);
  PHX_EXPECT_OFFSET(phx_plugin_api, buffer_write, 88);
  PHX_EXPECT_OFFSET(phx_plugin_api, buffer_read, 96);
  PHX_EXPECT_OFFSET(phx_plugin_api, stream_create, 104);
  PHX_EXPECT_OFFSET(phx_plugin_api, stream_destroy, 112);
  PHX_EXPECT_OFFSET(phx_plugin_api, stream_submit, 120);
  PHX_EXPECT_OFFSET(phx_plugin_api, stream_wait, 128);
  PHX_EXPECT_OFFSET(phx_plugin_api, stream_completed, 136);
  PHX_EXPECT_OFFSET(phx_plugin_api, memory_stats, 144);
  PHX_EXPECT_OFFSET(phx_plugin_api, memory_set_limit, 152);
  PHX_EXPECT_OFFSET(phx_plugin_api, memory_release_cached, 160);
  PHX_EXPECT_OFFSET(phx_plugin_api, buffer_copy, 168);
  PHX_EXPECT_OFFSET(phx_plugin_api, device_stats, 176);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_api, 184);
}

// The entries' types: a changed parameter is as much a break as a moved field.
template <typename T, typename U>
constexpr bool kSame = std::is_same_v<T, U>;
static_assert(
    kSame<phx_plugin_entry_fn, phx_status (*)(const phx_plugin_host*, const phx_plugin_api**)>);
static_assert(kSame<decltype(&phx_plugin_entry), phx_plugin_entry_fn>);
static_assert(kSame<decltype(phx_plugin_host::log), void (*)(void*, phx_log_level, const char*)>);
static_assert(kSame<decltype(phx_plugin_host::set_error), void (*)(void*, const char*)>);
static_assert(
    kSame<decltype(phx_plugin_api::initialize), phx_status (*)(const phx_plugin_host*, void**)>);
static_assert(kSame<decltype(phx_plugin_api::shutdown), void (*)(void*)>);
static_assert(kSame<decltype(phx_plugin_api::device_count), phx_status (*)(void*, uint32_t*)>);
static_assert(kSame<decltype(phx_plugin_api::device_info),
                    phx_status (*)(void*, uint32_t, phx_plugin_device_info*)>);
static_assert(kSame<decltype(phx_plugin_api::op_supported),
                    phx_status (*)(void*, uint32_t, phx_op_id, phx_dtype, int*)>);
static_assert(kSame<decltype(phx_plugin_api::buffer_allocate),
                    phx_status (*)(void*, uint32_t, uint64_t, void**)>);
static_assert(kSame<decltype(phx_plugin_api::buffer_free), void (*)(void*, void*)>);
static_assert(kSame<decltype(phx_plugin_api::buffer_write),
                    phx_status (*)(void*, void*, uint64_t, const void*, uint64_t)>);
static_assert(kSame<decltype(phx_plugin_api::buffer_read),
                    phx_status (*)(void*, void*, uint64_t, void*, uint64_t)>);
static_assert(
    kSame<decltype(phx_plugin_api::stream_create), phx_status (*)(void*, uint32_t, void**)>);
static_assert(kSame<decltype(phx_plugin_api::stream_destroy), void (*)(void*, void*)>);
static_assert(kSame<decltype(phx_plugin_api::stream_submit),
                    phx_status (*)(void*, void*, const phx_plugin_op*, uint64_t*)>);
static_assert(kSame<decltype(phx_plugin_api::stream_wait), phx_status (*)(void*, void*, uint64_t)>);
static_assert(
    kSame<decltype(phx_plugin_api::stream_completed), phx_status (*)(void*, void*, uint64_t*)>);
static_assert(kSame<decltype(phx_plugin_api::memory_stats),
                    phx_status (*)(void*, uint32_t, phx_memory_stats*)>);
static_assert(
    kSame<decltype(phx_plugin_api::memory_set_limit), phx_status (*)(void*, uint32_t, uint64_t)>);
static_assert(
    kSame<decltype(phx_plugin_api::memory_release_cached), phx_status (*)(void*, uint32_t)>);
static_assert(kSame<decltype(phx_plugin_api::buffer_copy),
                    phx_status (*)(void*, void*, uint64_t, void*, uint64_t, uint64_t)>);
static_assert(kSame<decltype(phx_plugin_api::device_stats),
                    phx_status (*)(void*, uint32_t, phx_metric*, size_t, size_t*)>);

// ==== Consumer API 0.1 (include/phynexus/phynexus.h) =================================

TEST_F(AbiLayout, Api_0_1_Version) {
  EXPECT_EQ(PHX_API_VERSION_MAJOR, 0);
  EXPECT_GE(PHX_API_VERSION_MINOR, 1);
  EXPECT_EQ(PHX_MAX_RANK, 8);
  EXPECT_GE(PHX_DTYPE_COUNT, 8);
  EXPECT_GE(PHX_OP_COUNT, 17);
  EXPECT_EQ(PHX_CONTEXT_PROFILE, 0x1u);
  EXPECT_EQ(PHX_DTYPE_BIT(PHX_DTYPE_I32), 0x40u);
}

TEST_F(AbiLayout, Api_0_1_Enums) {
  // Every enum of the headers is an int-sized C enum.
  EXPECT_EQ(sizeof(phx_status), 4u);
  EXPECT_EQ(sizeof(phx_dtype), 4u);
  EXPECT_EQ(sizeof(phx_log_level), 4u);
  EXPECT_EQ(sizeof(phx_plugin_state), 4u);
  EXPECT_EQ(sizeof(phx_plugin_stage), 4u);
  EXPECT_EQ(sizeof(phx_device_type), 4u);
  EXPECT_EQ(sizeof(phx_op_id), 4u);
  EXPECT_EQ(sizeof(phx_activation), 4u);
  EXPECT_EQ(sizeof(phx_layout), 4u);

  EXPECT_EQ(PHX_STATUS_OK, 0);
  EXPECT_EQ(PHX_STATUS_INVALID_ARGUMENT, 1);
  EXPECT_EQ(PHX_STATUS_NOT_FOUND, 2);
  EXPECT_EQ(PHX_STATUS_UNSUPPORTED, 3);
  EXPECT_EQ(PHX_STATUS_OUT_OF_MEMORY, 4);
  EXPECT_EQ(PHX_STATUS_DEVICE_UNAVAILABLE, 5);
  EXPECT_EQ(PHX_STATUS_PLUGIN_ERROR, 6);
  EXPECT_EQ(PHX_STATUS_COMPILATION_ERROR, 7);
  EXPECT_EQ(PHX_STATUS_INTERNAL, 8);

  EXPECT_EQ(PHX_DTYPE_INVALID, 0);
  EXPECT_EQ(PHX_DTYPE_F32, 1);
  EXPECT_EQ(PHX_DTYPE_F16, 2);
  EXPECT_EQ(PHX_DTYPE_BF16, 3);
  EXPECT_EQ(PHX_DTYPE_I8, 4);
  EXPECT_EQ(PHX_DTYPE_I16, 5);
  EXPECT_EQ(PHX_DTYPE_I32, 6);
  EXPECT_EQ(PHX_DTYPE_U8, 7);

  EXPECT_EQ(PHX_LOG_TRACE, 0);
  EXPECT_EQ(PHX_LOG_DEBUG, 1);
  EXPECT_EQ(PHX_LOG_INFO, 2);
  EXPECT_EQ(PHX_LOG_WARN, 3);
  EXPECT_EQ(PHX_LOG_ERROR, 4);
  EXPECT_EQ(PHX_LOG_OFF, 5);

  EXPECT_EQ(PHX_PLUGIN_LOADED, 0);
  EXPECT_EQ(PHX_PLUGIN_REJECTED, 1);
  EXPECT_EQ(PHX_PLUGIN_SHADOWED, 2);

  EXPECT_EQ(PHX_PLUGIN_STAGE_FOUND, 0);
  EXPECT_EQ(PHX_PLUGIN_STAGE_OPENED, 1);
  EXPECT_EQ(PHX_PLUGIN_STAGE_ENTRY, 2);
  EXPECT_EQ(PHX_PLUGIN_STAGE_VERSION, 3);
  EXPECT_EQ(PHX_PLUGIN_STAGE_VALIDATED, 4);
  EXPECT_EQ(PHX_PLUGIN_STAGE_INITIALIZED, 5);
  EXPECT_EQ(PHX_PLUGIN_STAGE_READY, 6);

  EXPECT_EQ(PHX_DEVICE_CPU, 0);
  EXPECT_EQ(PHX_DEVICE_GPU, 1);
  EXPECT_EQ(PHX_DEVICE_TPU, 2);
  EXPECT_EQ(PHX_DEVICE_NPU, 3);
  EXPECT_EQ(PHX_DEVICE_ACCELERATOR, 4);

  EXPECT_EQ(PHX_OP_INVALID, 0);
  EXPECT_EQ(PHX_OP_MATMUL, 1);
  EXPECT_EQ(PHX_OP_ADD, 2);
  EXPECT_EQ(PHX_OP_SUB, 3);
  EXPECT_EQ(PHX_OP_MUL, 4);
  EXPECT_EQ(PHX_OP_DIV, 5);
  EXPECT_EQ(PHX_OP_RELU, 6);
  EXPECT_EQ(PHX_OP_GELU, 7);
  EXPECT_EQ(PHX_OP_SILU, 8);
  EXPECT_EQ(PHX_OP_SOFTMAX, 9);
  EXPECT_EQ(PHX_OP_LAYER_NORM, 10);
  EXPECT_EQ(PHX_OP_RMS_NORM, 11);
  EXPECT_EQ(PHX_OP_TRANSPOSE, 12);
  EXPECT_EQ(PHX_OP_REDUCE_SUM, 13);
  EXPECT_EQ(PHX_OP_REDUCE_MAX, 14);
  EXPECT_EQ(PHX_OP_CAST, 15);
  EXPECT_EQ(PHX_OP_CONV2D, 16);

  EXPECT_EQ(PHX_ACTIVATION_NONE, 0);
  EXPECT_EQ(PHX_ACTIVATION_RELU, 1);
  EXPECT_EQ(PHX_ACTIVATION_GELU, 2);
  EXPECT_EQ(PHX_ACTIVATION_SILU, 3);

  EXPECT_EQ(PHX_LAYOUT_NCHW, 0);
  EXPECT_EQ(PHX_LAYOUT_NHWC, 1);
}

TEST_F(AbiLayout, Api_0_1_ContextOptions) {
  PHX_EXPECT_OFFSET(phx_context_options, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_context_options, plugin_paths, 8);
  PHX_EXPECT_OFFSET(phx_context_options, plugin_path_count, 16);
  PHX_EXPECT_OFFSET(phx_context_options, use_default_search_path, 24);
  PHX_EXPECT_OFFSET(phx_context_options, log_level, 28);
  PHX_EXPECT_OFFSET(phx_context_options, log_callback, 32);
  PHX_EXPECT_OFFSET(phx_context_options, log_user_data, 40);
  PHX_EXPECT_OFFSET(phx_context_options, flags, 48);
  PHX_EXPECT_OFFSET(phx_context_options, num_threads, 52);
  PHX_EXPECT_SIZE_AT_LEAST(phx_context_options, 56);
}

TEST_F(AbiLayout, Api_0_1_PluginInfo) {
  PHX_EXPECT_OFFSET(phx_plugin_info, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_info, name, 8);
  PHX_EXPECT_OFFSET(phx_plugin_info, version, 16);
  PHX_EXPECT_OFFSET(phx_plugin_info, path, 24);
  PHX_EXPECT_OFFSET(phx_plugin_info, abi_major, 32);
  PHX_EXPECT_OFFSET(phx_plugin_info, abi_minor, 36);
  PHX_EXPECT_OFFSET(phx_plugin_info, state, 40);
  PHX_EXPECT_OFFSET(phx_plugin_info, stage, 44);
  PHX_EXPECT_OFFSET(phx_plugin_info, reason, 48);
  PHX_EXPECT_OFFSET(phx_plugin_info, device_count, 56);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_info, 60);
}

TEST_F(AbiLayout, Api_0_1_Devices) {
  PHX_EXPECT_OFFSET(phx_property, key, 0);
  PHX_EXPECT_OFFSET(phx_property, value, 8);
  // phx_property has no struct_size: it is an array element and can never grow.
  EXPECT_EQ(sizeof(phx_property), 16u);

  PHX_EXPECT_OFFSET(phx_device_info, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_device_info, index, 8);
  PHX_EXPECT_OFFSET(phx_device_info, plugin, 16);
  PHX_EXPECT_OFFSET(phx_device_info, type, 24);
  PHX_EXPECT_OFFSET(phx_device_info, name, 32);
  PHX_EXPECT_OFFSET(phx_device_info, vendor, 40);
  PHX_EXPECT_OFFSET(phx_device_info, memory_total_bytes, 48);
  PHX_EXPECT_OFFSET(phx_device_info, memory_available_bytes, 56);
  PHX_EXPECT_OFFSET(phx_device_info, compute_units, 64);
  PHX_EXPECT_OFFSET(phx_device_info, dtype_mask, 68);
  PHX_EXPECT_OFFSET(phx_device_info, properties, 72);
  PHX_EXPECT_OFFSET(phx_device_info, property_count, 80);
  PHX_EXPECT_SIZE_AT_LEAST(phx_device_info, 88);
}

TEST_F(AbiLayout, Api_0_1_TensorDesc) {
  PHX_EXPECT_OFFSET(phx_tensor_desc, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_tensor_desc, device, 8);
  PHX_EXPECT_OFFSET(phx_tensor_desc, dtype, 12);
  PHX_EXPECT_OFFSET(phx_tensor_desc, rank, 16);
  PHX_EXPECT_OFFSET(phx_tensor_desc, shape, 24);
  PHX_EXPECT_FIELD_SIZE(phx_tensor_desc, shape, 64);
  PHX_EXPECT_OFFSET(phx_tensor_desc, element_count, 88);
  PHX_EXPECT_OFFSET(phx_tensor_desc, byte_size, 96);
  PHX_EXPECT_SIZE_AT_LEAST(phx_tensor_desc, 104);
}

TEST_F(AbiLayout, Api_0_1_OpParams) {
  PHX_EXPECT_OFFSET(phx_matmul_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_matmul_params, transpose_a, 8);
  PHX_EXPECT_OFFSET(phx_matmul_params, transpose_b, 12);
  PHX_EXPECT_OFFSET(phx_matmul_params, activation, 16);
  PHX_EXPECT_SIZE_AT_LEAST(phx_matmul_params, 20);

  PHX_EXPECT_OFFSET(phx_softmax_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_softmax_params, axis, 8);
  PHX_EXPECT_SIZE_AT_LEAST(phx_softmax_params, 12);

  PHX_EXPECT_OFFSET(phx_norm_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_norm_params, epsilon, 8);
  PHX_EXPECT_SIZE_AT_LEAST(phx_norm_params, 12);

  PHX_EXPECT_OFFSET(phx_transpose_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_transpose_params, perm, 8);
  PHX_EXPECT_FIELD_SIZE(phx_transpose_params, perm, 32);
  PHX_EXPECT_SIZE_AT_LEAST(phx_transpose_params, 40);

  PHX_EXPECT_OFFSET(phx_reduce_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_reduce_params, axes_mask, 8);
  PHX_EXPECT_OFFSET(phx_reduce_params, keep_dims, 12);
  PHX_EXPECT_SIZE_AT_LEAST(phx_reduce_params, 16);

  PHX_EXPECT_OFFSET(phx_conv2d_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_conv2d_params, layout, 8);
  PHX_EXPECT_OFFSET(phx_conv2d_params, stride, 12);
  PHX_EXPECT_OFFSET(phx_conv2d_params, padding, 20);
  PHX_EXPECT_OFFSET(phx_conv2d_params, dilation, 36);
  PHX_EXPECT_OFFSET(phx_conv2d_params, groups, 44);
  PHX_EXPECT_OFFSET(phx_conv2d_params, activation, 48);
  PHX_EXPECT_SIZE_AT_LEAST(phx_conv2d_params, 52);
}

TEST_F(AbiLayout, Api_0_1_OpDesc) {
  PHX_EXPECT_OFFSET(phx_op_desc, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_op_desc, op, 8);
  PHX_EXPECT_OFFSET(phx_op_desc, params, 16);
  PHX_EXPECT_OFFSET(phx_op_desc, inputs, 24);
  PHX_EXPECT_OFFSET(phx_op_desc, input_count, 32);
  PHX_EXPECT_OFFSET(phx_op_desc, outputs, 40);
  PHX_EXPECT_OFFSET(phx_op_desc, output_count, 48);
  PHX_EXPECT_SIZE_AT_LEAST(phx_op_desc, 56);
}

TEST_F(AbiLayout, Api_0_1_Profiling) {
  PHX_EXPECT_OFFSET(phx_metric, name, 0);
  PHX_EXPECT_OFFSET(phx_metric, value, 8);
  // An array element without struct_size, inside phx_plugin_profile: it can never grow.
  EXPECT_EQ(sizeof(phx_metric), 16u);

  PHX_EXPECT_OFFSET(phx_profile_record, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_profile_record, ticket, 8);
  PHX_EXPECT_OFFSET(phx_profile_record, op, 16);
  PHX_EXPECT_OFFSET(phx_profile_record, signature, 24);
  PHX_EXPECT_OFFSET(phx_profile_record, host_time_ns, 32);
  PHX_EXPECT_OFFSET(phx_profile_record, metrics, 40);
  PHX_EXPECT_OFFSET(phx_profile_record, metric_count, 48);
  PHX_EXPECT_SIZE_AT_LEAST(phx_profile_record, 56);
}

TEST_F(AbiLayout, Api_0_1_MemoryStats) {
  PHX_EXPECT_OFFSET(phx_memory_stats, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_memory_stats, bytes_in_use, 8);
  PHX_EXPECT_OFFSET(phx_memory_stats, peak_bytes_in_use, 16);
  PHX_EXPECT_OFFSET(phx_memory_stats, bytes_cached, 24);
  PHX_EXPECT_OFFSET(phx_memory_stats, limit_bytes, 32);
  PHX_EXPECT_OFFSET(phx_memory_stats, allocation_count, 40);
  PHX_EXPECT_SIZE_AT_LEAST(phx_memory_stats, 48);
}

TEST_F(AbiLayout, Api_0_1_InitMacrosSetStructSize) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  EXPECT_EQ(options.struct_size, sizeof(phx_context_options));
  EXPECT_EQ(options.use_default_search_path, 1);
  EXPECT_EQ(options.log_level, PHX_LOG_WARN);
  phx_matmul_params matmul = PHX_MATMUL_PARAMS_INIT;
  EXPECT_EQ(matmul.struct_size, sizeof(phx_matmul_params));
  phx_softmax_params softmax = PHX_SOFTMAX_PARAMS_INIT;
  EXPECT_EQ(softmax.axis, -1);
  phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  EXPECT_FLOAT_EQ(norm.epsilon, 1e-5f);
  phx_conv2d_params conv = PHX_CONV2D_PARAMS_INIT;
  EXPECT_EQ(conv.groups, 1u);
  EXPECT_EQ(conv.stride[0], 1u);
  EXPECT_EQ(conv.dilation[1], 1u);
}

// The consumer functions' types.
static_assert(kSame<decltype(&phx_api_version), uint32_t (*)()>);
static_assert(kSame<decltype(&phx_status_name), const char* (*)(phx_status)>);
static_assert(kSame<decltype(&phx_last_error), const char* (*)()>);
static_assert(kSame<decltype(&phx_set_last_error), phx_status (*)(phx_status, const char*)>);
static_assert(kSame<decltype(&phx_dtype_size), size_t (*)(phx_dtype)>);
static_assert(kSame<decltype(&phx_dtype_name), const char* (*)(phx_dtype)>);
static_assert(kSame<decltype(phx_context_options::log_callback),
                    void (*)(void*, phx_log_level, const char*)>);
static_assert(
    kSame<decltype(&phx_context_create), phx_status (*)(const phx_context_options*, phx_context*)>);
static_assert(kSame<decltype(&phx_context_destroy), phx_status (*)(phx_context)>);
static_assert(kSame<decltype(&phx_plugin_count), phx_status (*)(phx_context, size_t*)>);
static_assert(
    kSame<decltype(&phx_plugin_get), phx_status (*)(phx_context, size_t, phx_plugin_info*)>);
static_assert(kSame<decltype(&phx_device_type_name), const char* (*)(phx_device_type)>);
static_assert(kSame<decltype(&phx_device_count), phx_status (*)(phx_context, size_t*)>);
static_assert(
    kSame<decltype(&phx_device_get), phx_status (*)(phx_context, size_t, phx_device_info*)>);
static_assert(
    kSame<decltype(&phx_tensor_create),
          phx_status (*)(phx_context, size_t, phx_dtype, size_t, const int64_t*, phx_tensor*)>);
static_assert(kSame<decltype(&phx_tensor_destroy), phx_status (*)(phx_tensor)>);
static_assert(kSame<decltype(&phx_tensor_describe), phx_status (*)(phx_tensor, phx_tensor_desc*)>);
static_assert(
    kSame<decltype(&phx_tensor_upload), phx_status (*)(phx_tensor, size_t, const void*, size_t)>);
static_assert(
    kSame<decltype(&phx_tensor_download), phx_status (*)(phx_tensor, size_t, void*, size_t)>);
static_assert(kSame<decltype(&phx_tensor_copy), phx_status (*)(phx_tensor, phx_tensor)>);
static_assert(
    kSame<decltype(&phx_stream_create), phx_status (*)(phx_context, size_t, phx_stream*)>);
static_assert(kSame<decltype(&phx_stream_destroy), phx_status (*)(phx_stream)>);
static_assert(kSame<decltype(&phx_stream_synchronize), phx_status (*)(phx_stream)>);
static_assert(kSame<decltype(&phx_stream_wait), phx_status (*)(phx_stream, uint64_t)>);
static_assert(kSame<decltype(&phx_stream_query), phx_status (*)(phx_stream, uint64_t, int*)>);
static_assert(kSame<decltype(&phx_op_name), const char* (*)(phx_op_id)>);
static_assert(
    kSame<decltype(&phx_op_run), phx_status (*)(phx_stream, const phx_op_desc*, uint64_t*)>);
static_assert(kSame<decltype(&phx_device_supports),
                    phx_status (*)(phx_context, size_t, phx_op_id, phx_dtype, int*)>);
static_assert(kSame<decltype(&phx_profile_count), phx_status (*)(phx_stream, size_t*)>);
static_assert(
    kSame<decltype(&phx_profile_get), phx_status (*)(phx_stream, size_t, phx_profile_record*)>);
static_assert(kSame<decltype(&phx_profile_clear), phx_status (*)(phx_stream)>);
static_assert(kSame<decltype(&phx_device_stats),
                    phx_status (*)(phx_context, size_t, phx_metric*, size_t, size_t*)>);
static_assert(
    kSame<decltype(&phx_memory_stats_get), phx_status (*)(phx_context, size_t, phx_memory_stats*)>);
static_assert(
    kSame<decltype(&phx_memory_set_limit), phx_status (*)(phx_context, size_t, uint64_t)>);
static_assert(kSame<decltype(&phx_memory_release_cached), phx_status (*)(phx_context, size_t)>);

// ==== Plugin ABI 1.1 ==================================================================

TEST_F(AbiLayout, PluginAbi_1_1_Versions) {
  EXPECT_GE(PHX_PLUGIN_ABI_MINOR, 1);
  EXPECT_EQ(PHX_PLUGIN_ABI_MIN_MINOR, 0);
  EXPECT_EQ(PHX_MAX_OP_INPUTS, 9);
  EXPECT_EQ(PHX_MAX_OP_OUTPUTS, 3);
}

// ==== API 0.2 ==========================================================================

TEST_F(AbiLayout, Api_0_2_Enums) {
  EXPECT_GE(PHX_API_VERSION_MINOR, 2);
  EXPECT_GE(PHX_OP_COUNT, 24);
  EXPECT_EQ(PHX_CONTEXT_FALLBACK_CPU, 0x2u);
  EXPECT_EQ(PHX_OP_ATTENTION, 17);
  EXPECT_EQ(PHX_OP_ROPE, 18);
  EXPECT_EQ(PHX_OP_QUANTIZE, 19);
  EXPECT_EQ(PHX_OP_DEQUANTIZE, 20);
  EXPECT_EQ(PHX_OP_QMATMUL, 21);
  EXPECT_EQ(PHX_OP_QCONV2D, 22);
  EXPECT_EQ(PHX_OP_DYNAMIC_QUANTIZE, 23);
  EXPECT_EQ(sizeof(phx_attention_mask), 4u);
  EXPECT_EQ(PHX_ATTENTION_MASK_NONE, 0);
  EXPECT_EQ(PHX_ATTENTION_MASK_CAUSAL, 1);
  EXPECT_EQ(PHX_ATTENTION_MASK_SLIDING_WINDOW, 2);
  EXPECT_EQ(sizeof(phx_calibration_method), 4u);
  EXPECT_EQ(PHX_CALIBRATION_MINMAX, 0);
  EXPECT_EQ(PHX_CALIBRATION_PERCENTILE, 1);
  EXPECT_EQ(PHX_CALIBRATION_MOVING_AVERAGE, 2);
}

TEST_F(AbiLayout, Api_0_2_OpParams) {
  PHX_EXPECT_OFFSET(phx_attention_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_attention_params, scale, 8);
  PHX_EXPECT_OFFSET(phx_attention_params, mask, 12);
  PHX_EXPECT_OFFSET(phx_attention_params, window, 16);
  PHX_EXPECT_SIZE_AT_LEAST(phx_attention_params, 20);
  PHX_EXPECT_OFFSET(phx_rope_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_rope_params, interleaved, 8);
  PHX_EXPECT_SIZE_AT_LEAST(phx_rope_params, 12);
  PHX_EXPECT_OFFSET(phx_quantize_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_quantize_params, axis, 8);
  PHX_EXPECT_SIZE_AT_LEAST(phx_quantize_params, 12);
}

TEST_F(AbiLayout, Api_0_2_CalibrationOptions) {
  PHX_EXPECT_OFFSET(phx_calibration_options, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_calibration_options, method, 8);
  PHX_EXPECT_OFFSET(phx_calibration_options, dtype, 12);
  PHX_EXPECT_OFFSET(phx_calibration_options, symmetric, 16);
  PHX_EXPECT_OFFSET(phx_calibration_options, channel_axis, 20);
  PHX_EXPECT_OFFSET(phx_calibration_options, percentile, 24);
  PHX_EXPECT_OFFSET(phx_calibration_options, averaging_constant, 32);
  PHX_EXPECT_SIZE_AT_LEAST(phx_calibration_options, 40);
}

TEST_F(AbiLayout, Api_0_2_InitMacrosSetStructSize) {
  phx_attention_params attention = PHX_ATTENTION_PARAMS_INIT;
  EXPECT_EQ(attention.struct_size, sizeof(phx_attention_params));
  EXPECT_EQ(attention.mask, PHX_ATTENTION_MASK_NONE);
  phx_rope_params rope = PHX_ROPE_PARAMS_INIT;
  EXPECT_EQ(rope.interleaved, 0);
  phx_quantize_params quantize = PHX_QUANTIZE_PARAMS_INIT;
  EXPECT_EQ(quantize.axis, 1);
  phx_calibration_options calibration = PHX_CALIBRATION_OPTIONS_INIT;
  EXPECT_EQ(calibration.struct_size, sizeof(phx_calibration_options));
  EXPECT_EQ(calibration.dtype, PHX_DTYPE_I8);
  EXPECT_EQ(calibration.channel_axis, -1);
  EXPECT_DOUBLE_EQ(calibration.percentile, 99.99);
}

static_assert(kSame<decltype(&phx_calibrator_create),
                    phx_status (*)(phx_context, const phx_calibration_options*, phx_calibrator*)>);
static_assert(kSame<decltype(&phx_calibrator_destroy), phx_status (*)(phx_calibrator)>);
static_assert(kSame<decltype(&phx_calibrator_observe), phx_status (*)(phx_calibrator, phx_tensor)>);
static_assert(kSame<decltype(&phx_calibrator_compute),
                    phx_status (*)(phx_calibrator, float*, int32_t*, size_t, size_t*)>);

// ---- API 0.3 and plugin ABI 1.2 -------------------------------------------------------

TEST_F(AbiLayout, Api_0_3_OpIds) {
  EXPECT_EQ(PHX_OP_COUNT, 74);
  const phx_op_id ops[] = {
      PHX_OP_SIGMOID,      PHX_OP_TANH,       PHX_OP_EXP,         PHX_OP_LOG,
      PHX_OP_SQRT,         PHX_OP_NEG,        PHX_OP_ABS,         PHX_OP_ERF,
      PHX_OP_FLOOR,        PHX_OP_CEIL,       PHX_OP_RECIPROCAL,  PHX_OP_SIGN,
      PHX_OP_SOFTPLUS,     PHX_OP_LEAKY_RELU, PHX_OP_ELU,         PHX_OP_SELU,
      PHX_OP_CLIP,         PHX_OP_POW,        PHX_OP_MAX,         PHX_OP_MIN,
      PHX_OP_PRELU,        PHX_OP_EQUAL,      PHX_OP_LESS,        PHX_OP_GREATER,
      PHX_OP_WHERE,        PHX_OP_NOT,        PHX_OP_REDUCE_MEAN, PHX_OP_REDUCE_MIN,
      PHX_OP_REDUCE_PROD,  PHX_OP_ARGMAX,     PHX_OP_LOG_SOFTMAX, PHX_OP_BATCH_NORM,
      PHX_OP_INSTANCE_NORM};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i) EXPECT_EQ(ops[i], int(24 + i));
}

TEST_F(AbiLayout, Api_0_3_OpParams) {
  PHX_EXPECT_OFFSET(phx_elementwise_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_elementwise_params, alpha, 8);
  PHX_EXPECT_OFFSET(phx_elementwise_params, beta, 12);
  PHX_EXPECT_SIZE_AT_LEAST(phx_elementwise_params, 16);
  PHX_EXPECT_OFFSET(phx_argmax_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_argmax_params, axis, 8);
  PHX_EXPECT_OFFSET(phx_argmax_params, keep_dims, 12);
  PHX_EXPECT_OFFSET(phx_argmax_params, select_last_index, 16);
  PHX_EXPECT_SIZE_AT_LEAST(phx_argmax_params, 20);
  phx_elementwise_params elementwise = PHX_ELEMENTWISE_PARAMS_INIT(0.5f, 2.0f);
  EXPECT_EQ(elementwise.struct_size, sizeof(phx_elementwise_params));
  EXPECT_EQ(elementwise.alpha, 0.5f);
  EXPECT_EQ(elementwise.beta, 2.0f);
  phx_argmax_params argmax = PHX_ARGMAX_PARAMS_INIT;
  EXPECT_EQ(argmax.struct_size, sizeof(phx_argmax_params));
  EXPECT_EQ(argmax.axis, 0);
  EXPECT_EQ(argmax.keep_dims, 1);
  EXPECT_EQ(argmax.select_last_index, 0);
}

TEST_F(AbiLayout, Api_0_3_OpVariant) {
  PHX_EXPECT_OFFSET(phx_op_variant, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_op_variant, op, 8);
  PHX_EXPECT_OFFSET(phx_op_variant, params, 16);
  PHX_EXPECT_OFFSET(phx_op_variant, input_dtypes, 24);
  PHX_EXPECT_OFFSET(phx_op_variant, input_count, 32);
  PHX_EXPECT_OFFSET(phx_op_variant, output_dtypes, 40);
  PHX_EXPECT_OFFSET(phx_op_variant, output_count, 48);
  PHX_EXPECT_SIZE_AT_LEAST(phx_op_variant, 56);
}

TEST_F(AbiLayout, Api_0_3_OpInfo) {
  PHX_EXPECT_OFFSET(phx_op_info, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_op_info, name, 8);
  PHX_EXPECT_OFFSET(phx_op_info, summary, 16);
  PHX_EXPECT_OFFSET(phx_op_info, params_struct, 24);
  PHX_EXPECT_OFFSET(phx_op_info, input_count, 32);
  PHX_EXPECT_OFFSET(phx_op_info, min_input_count, 40);
  PHX_EXPECT_OFFSET(phx_op_info, input_names, 48);
  PHX_EXPECT_OFFSET(phx_op_info, optional_inputs, 56);
  PHX_EXPECT_OFFSET(phx_op_info, output_count, 64);
  PHX_EXPECT_OFFSET(phx_op_info, output_names, 72);
  PHX_EXPECT_OFFSET(phx_op_info, dtype_mask, 80);
  PHX_EXPECT_SIZE_AT_LEAST(phx_op_info, 88);
}

// The layout, pooling and transposed-convolution ops: appended, in this order, after the
// elementwise, reduction and norm ops of API 0.3.
TEST_F(AbiLayout, Api_0_3_LayoutAndPoolingOps) {
  EXPECT_EQ(PHX_OP_RESHAPE, 57);
  EXPECT_EQ(PHX_OP_CONCAT, PHX_OP_RESHAPE + 1);
  EXPECT_EQ(PHX_OP_SLICE, PHX_OP_RESHAPE + 2);
  EXPECT_EQ(PHX_OP_GATHER, PHX_OP_RESHAPE + 3);
  EXPECT_EQ(PHX_OP_EXPAND, PHX_OP_RESHAPE + 4);
  EXPECT_EQ(PHX_OP_TILE, PHX_OP_RESHAPE + 5);
  EXPECT_EQ(PHX_OP_PAD, PHX_OP_RESHAPE + 6);
  EXPECT_EQ(PHX_OP_MAX_POOL, PHX_OP_RESHAPE + 7);
  EXPECT_EQ(PHX_OP_AVG_POOL, PHX_OP_RESHAPE + 8);
  EXPECT_EQ(PHX_OP_CONV_TRANSPOSE2D, PHX_OP_RESHAPE + 9);
  EXPECT_GE(PHX_OP_COUNT, PHX_OP_CONV_TRANSPOSE2D + 1);
  EXPECT_EQ(sizeof(phx_pad_mode), 4u);
  EXPECT_EQ(PHX_PAD_CONSTANT, 0);
  EXPECT_EQ(PHX_PAD_REFLECT, 1);
  EXPECT_EQ(PHX_PAD_EDGE, 2);
}

// The mobile activations, appended after resize, then sin, cos, round and top_k (with its
// parameters); the parameter descriptions' types.
TEST_F(AbiLayout, Api_0_3_AppendedOpsAndParamTypes) {
  EXPECT_EQ(PHX_OP_HARD_SIGMOID, 68);
  EXPECT_EQ(PHX_OP_HARD_SWISH, 69);
  EXPECT_EQ(PHX_OP_SIN, 70);
  EXPECT_EQ(PHX_OP_COS, 71);
  EXPECT_EQ(PHX_OP_ROUND, 72);
  EXPECT_EQ(PHX_OP_TOP_K, 73);
  PHX_EXPECT_OFFSET(phx_top_k_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_top_k_params, axis, 8);
  PHX_EXPECT_OFFSET(phx_top_k_params, k, 12);
  PHX_EXPECT_OFFSET(phx_top_k_params, largest, 16);
  PHX_EXPECT_SIZE_AT_LEAST(phx_top_k_params, 20);
  const phx_top_k_params top_k = PHX_TOP_K_PARAMS_INIT;
  EXPECT_EQ(top_k.struct_size, sizeof(phx_top_k_params));
  EXPECT_EQ(top_k.axis, -1);
  EXPECT_EQ(top_k.k, 0u);
  EXPECT_EQ(top_k.largest, 1);
  EXPECT_EQ(sizeof(phx_param_type), 4u);
  const phx_param_type types[] = {PHX_PARAM_INT32,   PHX_PARAM_UINT32,    PHX_PARAM_INT64,
                                  PHX_PARAM_FLOAT32, PHX_PARAM_BOOL,      PHX_PARAM_ENUM,
                                  PHX_PARAM_AXES,    PHX_PARAM_DIMENSION, PHX_PARAM_LENGTH};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i) EXPECT_EQ(types[i], int(1 + i));
  PHX_EXPECT_OFFSET(phx_param_field, name, 0);
  PHX_EXPECT_OFFSET(phx_param_field, type, 8);
  PHX_EXPECT_OFFSET(phx_param_field, offset, 16);
  PHX_EXPECT_OFFSET(phx_param_field, count, 24);
  PHX_EXPECT_OFFSET(phx_param_field, enum_names, 32);
  PHX_EXPECT_OFFSET(phx_param_field, enum_count, 40);
  EXPECT_EQ(sizeof(phx_param_field), 48u);  // travels in arrays: its size is the stride
  PHX_EXPECT_OFFSET(phx_op_info, params_size, 88);
  PHX_EXPECT_OFFSET(phx_op_info, param_field_count, 96);
  PHX_EXPECT_OFFSET(phx_op_info, param_fields, 104);
  PHX_EXPECT_OFFSET(phx_op_info, default_params, 112);
}

// Resize, appended after conv_transpose2d, and its enums' values (ONNX's attributes).
TEST_F(AbiLayout, Api_0_3_Resize) {
  EXPECT_EQ(PHX_OP_RESIZE, 67);
  EXPECT_GE(PHX_OP_COUNT, PHX_OP_RESIZE + 1);
  EXPECT_EQ(sizeof(phx_resize_mode), 4u);
  EXPECT_EQ(sizeof(phx_resize_coordinates), 4u);
  EXPECT_EQ(sizeof(phx_resize_nearest), 4u);
  EXPECT_EQ(PHX_RESIZE_NEAREST, 0);
  EXPECT_EQ(PHX_RESIZE_LINEAR, 1);
  EXPECT_EQ(PHX_RESIZE_HALF_PIXEL, 0);
  EXPECT_EQ(PHX_RESIZE_ASYMMETRIC, 1);
  EXPECT_EQ(PHX_RESIZE_ALIGN_CORNERS, 2);
  EXPECT_EQ(PHX_RESIZE_PYTORCH_HALF_PIXEL, 3);
  EXPECT_EQ(PHX_RESIZE_ROUND_PREFER_FLOOR, 0);
  EXPECT_EQ(PHX_RESIZE_ROUND_PREFER_CEIL, 1);
  EXPECT_EQ(PHX_RESIZE_FLOOR, 2);
  EXPECT_EQ(PHX_RESIZE_CEIL, 3);
  PHX_EXPECT_OFFSET(phx_resize_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_resize_params, mode, 8);
  PHX_EXPECT_OFFSET(phx_resize_params, coordinates, 12);
  PHX_EXPECT_OFFSET(phx_resize_params, nearest, 16);
  PHX_EXPECT_OFFSET(phx_resize_params, rank, 20);
  PHX_EXPECT_OFFSET(phx_resize_params, shape, 24);
  PHX_EXPECT_OFFSET(phx_resize_params, scales, 88);
  PHX_EXPECT_SIZE_AT_LEAST(phx_resize_params, 120);
}

TEST_F(AbiLayout, Api_0_3_LayoutAndPoolingParams) {
  PHX_EXPECT_OFFSET(phx_reshape_params, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_reshape_params, rank, 8);
  PHX_EXPECT_OFFSET(phx_reshape_params, shape, 16);
  PHX_EXPECT_SIZE_AT_LEAST(phx_reshape_params, 80);
  PHX_EXPECT_OFFSET(phx_axis_params, axis, 8);
  PHX_EXPECT_SIZE_AT_LEAST(phx_axis_params, 12);
  PHX_EXPECT_OFFSET(phx_slice_params, starts, 8);
  PHX_EXPECT_OFFSET(phx_slice_params, ends, 72);
  PHX_EXPECT_OFFSET(phx_slice_params, steps, 136);
  PHX_EXPECT_SIZE_AT_LEAST(phx_slice_params, 200);
  PHX_EXPECT_OFFSET(phx_tile_params, repeats, 8);
  PHX_EXPECT_SIZE_AT_LEAST(phx_tile_params, 40);
  PHX_EXPECT_OFFSET(phx_pad_params, mode, 8);
  PHX_EXPECT_OFFSET(phx_pad_params, value, 12);
  PHX_EXPECT_OFFSET(phx_pad_params, begin, 16);
  PHX_EXPECT_OFFSET(phx_pad_params, end, 48);
  PHX_EXPECT_SIZE_AT_LEAST(phx_pad_params, 80);
  PHX_EXPECT_OFFSET(phx_pool_params, kernel, 8);
  PHX_EXPECT_OFFSET(phx_pool_params, stride, 20);
  PHX_EXPECT_OFFSET(phx_pool_params, pad_begin, 32);
  PHX_EXPECT_OFFSET(phx_pool_params, pad_end, 44);
  PHX_EXPECT_OFFSET(phx_pool_params, dilation, 56);
  PHX_EXPECT_OFFSET(phx_pool_params, ceil_mode, 68);
  PHX_EXPECT_OFFSET(phx_pool_params, count_include_pad, 72);
  PHX_EXPECT_SIZE_AT_LEAST(phx_pool_params, 76);
  PHX_EXPECT_OFFSET(phx_conv_transpose2d_params, stride, 8);
  PHX_EXPECT_OFFSET(phx_conv_transpose2d_params, padding, 16);
  PHX_EXPECT_OFFSET(phx_conv_transpose2d_params, output_padding, 32);
  PHX_EXPECT_OFFSET(phx_conv_transpose2d_params, dilation, 40);
  PHX_EXPECT_OFFSET(phx_conv_transpose2d_params, groups, 48);
  PHX_EXPECT_SIZE_AT_LEAST(phx_conv_transpose2d_params, 52);
}

TEST_F(AbiLayout, Api_0_3_LayoutAndPoolingInitMacros) {
  phx_axis_params axis = PHX_AXIS_PARAMS_INIT;
  EXPECT_EQ(axis.struct_size, sizeof axis);
  EXPECT_EQ(axis.axis, 0);
  phx_slice_params slice = PHX_SLICE_PARAMS_INIT;
  EXPECT_EQ(slice.struct_size, sizeof slice);
  EXPECT_EQ(slice.steps[PHX_MAX_RANK - 1], 0);
  phx_tile_params tile = PHX_TILE_PARAMS_INIT;
  EXPECT_EQ(tile.struct_size, sizeof tile);
  for (uint32_t r : tile.repeats) EXPECT_EQ(r, 1u);
  phx_pad_params pad = PHX_PAD_PARAMS_INIT;
  EXPECT_EQ(pad.struct_size, sizeof pad);
  EXPECT_EQ(pad.mode, PHX_PAD_CONSTANT);
  EXPECT_EQ(pad.end[PHX_MAX_RANK - 1], 0u);
  phx_pool_params pool = PHX_POOL_PARAMS_INIT;
  EXPECT_EQ(pool.struct_size, sizeof pool);
  EXPECT_EQ(pool.kernel[0], 0u);
  EXPECT_EQ(pool.stride[2], 1u);
  EXPECT_EQ(pool.dilation[2], 1u);
  phx_conv_transpose2d_params transpose = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  EXPECT_EQ(transpose.struct_size, sizeof transpose);
  EXPECT_EQ(transpose.stride[1], 1u);
  EXPECT_EQ(transpose.dilation[1], 1u);
  EXPECT_EQ(transpose.groups, 1u);
}

TEST_F(AbiLayout, PluginAbi_1_2_OpVariant) {
  PHX_EXPECT_OFFSET(phx_plugin_op_variant, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_op_variant, op, 8);
  PHX_EXPECT_OFFSET(phx_plugin_op_variant, params, 16);
  PHX_EXPECT_OFFSET(phx_plugin_op_variant, input_dtypes, 24);
  PHX_EXPECT_OFFSET(phx_plugin_op_variant, input_count, 32);
  PHX_EXPECT_OFFSET(phx_plugin_op_variant, output_dtypes, 40);
  PHX_EXPECT_OFFSET(phx_plugin_op_variant, output_count, 48);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_op_variant, 56);
  // Appended after the last entry of 1.1: a 1.1 plugin's table ends before it.
  PHX_EXPECT_OFFSET(phx_plugin_api, op_variant_supported, 184);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_api, 192);
}

TEST_F(AbiLayout, Api_0_3_Graphs) {
  PHX_EXPECT_OFFSET(phx_profile_record, node, 56);
  PHX_EXPECT_SIZE_AT_LEAST(phx_profile_record, 64);
  EXPECT_EQ(sizeof(phx_value), 4u);
  PHX_EXPECT_OFFSET(phx_graph_input_desc, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_graph_input_desc, name, 8);
  PHX_EXPECT_OFFSET(phx_graph_input_desc, dtype, 16);
  PHX_EXPECT_OFFSET(phx_graph_input_desc, rank, 24);
  PHX_EXPECT_OFFSET(phx_graph_input_desc, shape, 32);
  PHX_EXPECT_OFFSET(phx_graph_input_desc, dim_names, 40);
  PHX_EXPECT_SIZE_AT_LEAST(phx_graph_input_desc, 48);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, name, 8);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, op, 16);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, params, 24);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, inputs, 32);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, input_count, 40);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, output_dtypes, 48);
  PHX_EXPECT_OFFSET(phx_graph_node_desc, output_count, 56);
  PHX_EXPECT_SIZE_AT_LEAST(phx_graph_node_desc, 64);
  PHX_EXPECT_OFFSET(phx_value_info, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_value_info, kind, 8);
  PHX_EXPECT_OFFSET(phx_value_info, name, 16);
  PHX_EXPECT_OFFSET(phx_value_info, dtype, 24);
  PHX_EXPECT_OFFSET(phx_value_info, rank, 28);
  PHX_EXPECT_OFFSET(phx_value_info, shape, 32);
  PHX_EXPECT_SIZE_AT_LEAST(phx_value_info, 96);
  PHX_EXPECT_OFFSET(phx_compile_options, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_compile_options, device, 8);
  PHX_EXPECT_OFFSET(phx_compile_options, flags, 16);
  PHX_EXPECT_OFFSET(phx_compile_options, other_devices, 24);
  PHX_EXPECT_OFFSET(phx_compile_options, other_device_count, 32);
  PHX_EXPECT_OFFSET(phx_compile_options, placement, 40);
  PHX_EXPECT_OFFSET(phx_compile_options, calibration_inputs, 48);
  PHX_EXPECT_OFFSET(phx_compile_options, calibration_sample_count, 56);
  PHX_EXPECT_SIZE_AT_LEAST(phx_compile_options, 64);
  PHX_EXPECT_OFFSET(phx_executable_info, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_executable_info, device, 8);
  PHX_EXPECT_OFFSET(phx_executable_info, input_count, 16);
  PHX_EXPECT_OFFSET(phx_executable_info, output_count, 24);
  PHX_EXPECT_OFFSET(phx_executable_info, graph_node_count, 32);
  PHX_EXPECT_OFFSET(phx_executable_info, node_count, 40);
  PHX_EXPECT_OFFSET(phx_executable_info, removed_nodes, 48);
  PHX_EXPECT_OFFSET(phx_executable_info, fused_nodes, 56);
  PHX_EXPECT_OFFSET(phx_executable_info, folded_nodes, 64);
  PHX_EXPECT_OFFSET(phx_executable_info, device_count, 72);
  PHX_EXPECT_OFFSET(phx_executable_info, copies_per_run, 80);
  PHX_EXPECT_OFFSET(phx_executable_info, constant_bytes, 88);
  PHX_EXPECT_OFFSET(phx_executable_info, planned_bytes, 96);
  PHX_EXPECT_OFFSET(phx_executable_info, lower_bound_bytes, 104);
  PHX_EXPECT_OFFSET(phx_executable_info, compile_time_ns, 112);
  PHX_EXPECT_OFFSET(phx_executable_info, run_count, 120);
  PHX_EXPECT_OFFSET(phx_executable_info, native_parts, 128);
  PHX_EXPECT_OFFSET(phx_executable_info, native_nodes, 136);
  PHX_EXPECT_OFFSET(phx_executable_info, quantized_nodes, 144);
  PHX_EXPECT_OFFSET(phx_executable_info, calibration_error, 152);
  PHX_EXPECT_SIZE_AT_LEAST(phx_executable_info, 160);
  PHX_EXPECT_OFFSET(phx_executable_node_info, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_executable_node_info, name, 8);
  PHX_EXPECT_OFFSET(phx_executable_node_info, op, 16);
  PHX_EXPECT_OFFSET(phx_executable_node_info, device, 24);
  PHX_EXPECT_OFFSET(phx_executable_node_info, compute_dtype, 32);
  PHX_EXPECT_OFFSET(phx_executable_node_info, predicted_time_ns, 40);
  PHX_EXPECT_SIZE_AT_LEAST(phx_executable_node_info, 48);
  EXPECT_EQ(PHX_STATUS_INCOMPATIBLE, 9);
  EXPECT_EQ(PHX_PLACEMENT_FIRST, 0);
  EXPECT_EQ(PHX_PLACEMENT_COST, 1);
  EXPECT_EQ(PHX_COMPILE_DETERMINISTIC, 0x8u);
  // Appended to a struct of 0.1.
  PHX_EXPECT_OFFSET(phx_device_info, compiles_graphs, 88);
  PHX_EXPECT_SIZE_AT_LEAST(phx_device_info, 92);
}

TEST_F(AbiLayout, PluginAbi_1_3_Executables) {
  PHX_EXPECT_OFFSET(phx_plugin_value, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_value, kind, 8);
  PHX_EXPECT_OFFSET(phx_plugin_value, flags, 12);
  PHX_EXPECT_OFFSET(phx_plugin_value, dtype, 16);
  PHX_EXPECT_OFFSET(phx_plugin_value, rank, 20);
  PHX_EXPECT_OFFSET(phx_plugin_value, shape, 24);
  PHX_EXPECT_OFFSET(phx_plugin_value, tensor, 88);
  PHX_EXPECT_OFFSET(phx_plugin_value, name, 184);
  // Array elements (phx_plugin_graph.values, nodes): their size is the stride, fixed.
  EXPECT_EQ(sizeof(phx_plugin_value), 192u);
  PHX_EXPECT_OFFSET(phx_plugin_node, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_node, op, 8);
  PHX_EXPECT_OFFSET(phx_plugin_node, params, 16);
  PHX_EXPECT_OFFSET(phx_plugin_node, inputs, 24);
  PHX_EXPECT_OFFSET(phx_plugin_node, input_count, 32);
  PHX_EXPECT_OFFSET(phx_plugin_node, outputs, 40);
  PHX_EXPECT_OFFSET(phx_plugin_node, output_count, 48);
  PHX_EXPECT_OFFSET(phx_plugin_node, name, 56);
  EXPECT_EQ(sizeof(phx_plugin_node), 64u);
  PHX_EXPECT_OFFSET(phx_plugin_graph, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_graph, values, 8);
  PHX_EXPECT_OFFSET(phx_plugin_graph, value_count, 16);
  PHX_EXPECT_OFFSET(phx_plugin_graph, nodes, 24);
  PHX_EXPECT_OFFSET(phx_plugin_graph, node_count, 32);
  PHX_EXPECT_OFFSET(phx_plugin_graph, flags, 40);
  PHX_EXPECT_OFFSET(phx_plugin_graph, value_ranges, 48);
  PHX_EXPECT_OFFSET(phx_plugin_graph, serialized, 56);
  PHX_EXPECT_OFFSET(phx_plugin_graph, serialized_size, 64);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_graph, 72);
  PHX_EXPECT_OFFSET(phx_plugin_value_range, min, 0);
  PHX_EXPECT_OFFSET(phx_plugin_value_range, max, 4);
  PHX_EXPECT_OFFSET(phx_plugin_value_range, rms, 8);
  EXPECT_EQ(sizeof(phx_plugin_value_range), 12u);  // an array element: fixed
  PHX_EXPECT_OFFSET(phx_plugin_node_report, struct_size, 0);
  PHX_EXPECT_OFFSET(phx_plugin_node_report, compute_dtype, 8);
  EXPECT_EQ(PHX_PLUGIN_GRAPH_DETERMINISTIC, 0x2u);
  // Appended after the last entry of 1.2: a 1.2 plugin's table ends before them.
  PHX_EXPECT_OFFSET(phx_plugin_api, graph_compile, 192);
  PHX_EXPECT_OFFSET(phx_plugin_api, executable_run, 200);
  PHX_EXPECT_OFFSET(phx_plugin_api, executable_destroy, 208);
  PHX_EXPECT_OFFSET(phx_plugin_api, executable_stats, 216);
  PHX_EXPECT_OFFSET(phx_plugin_api, graph_claim, 224);
  PHX_EXPECT_OFFSET(phx_plugin_api, graph_estimate, 232);
  PHX_EXPECT_OFFSET(phx_plugin_api, executable_serialize, 240);
  PHX_EXPECT_OFFSET(phx_plugin_api, executable_node_report, 248);
  PHX_EXPECT_OFFSET(phx_plugin_api, buffer_import_host, 256);
  PHX_EXPECT_OFFSET(phx_plugin_api, buffer_host_data, 264);
  PHX_EXPECT_SIZE_AT_LEAST(phx_plugin_api, 272);
}

static_assert(kSame<decltype(phx_plugin_api::graph_compile),
                    phx_status (*)(void*, uint32_t, const phx_plugin_graph*, void**)>);
static_assert(kSame<decltype(phx_plugin_api::executable_run),
                    phx_status (*)(void*, void*, void*, const phx_plugin_tensor*, size_t,
                                   phx_plugin_profile* const*, uint64_t*)>);
static_assert(kSame<decltype(phx_plugin_api::executable_destroy), void (*)(void*, void*)>);
static_assert(kSame<decltype(phx_plugin_api::executable_stats),
                    phx_status (*)(void*, void*, phx_metric*, size_t, size_t*)>);
static_assert(kSame<decltype(&phx_executable_stats),
                    phx_status (*)(phx_executable, phx_metric*, size_t, size_t*)>);
static_assert(kSame<decltype(phx_plugin_api::graph_claim),
                    phx_status (*)(void*, uint32_t, const phx_plugin_graph*, uint8_t*)>);
static_assert(kSame<decltype(phx_plugin_api::graph_estimate),
                    phx_status (*)(void*, uint32_t, const phx_plugin_graph*, uint64_t*)>);
static_assert(kSame<decltype(phx_plugin_api::executable_serialize),
                    phx_status (*)(void*, void*, void*, size_t, size_t*)>);
static_assert(kSame<decltype(phx_plugin_api::executable_node_report),
                    phx_status (*)(void*, void*, size_t, phx_plugin_node_report*)>);
static_assert(kSame<decltype(phx_plugin_api::buffer_import_host),
                    phx_status (*)(void*, uint32_t, void*, uint64_t, void**)>);
static_assert(
    kSame<decltype(phx_plugin_api::buffer_host_data), phx_status (*)(void*, void*, void**)>);
static_assert(kSame<decltype(&phx_tensor_create_from_host),
                    phx_status (*)(phx_context, size_t, phx_dtype, size_t, const int64_t*, void*,
                                   phx_host_release_fn, void*, phx_tensor*)>);
static_assert(kSame<decltype(&phx_tensor_host_data), phx_status (*)(phx_tensor, void**)>);
static_assert(kSame<decltype(&phx_executable_describe_node),
                    phx_status (*)(phx_executable, size_t, phx_executable_node_info*)>);
static_assert(kSame<decltype(&phx_executable_input_info),
                    phx_status (*)(phx_executable, size_t, phx_value_info*)>);
static_assert(kSame<decltype(&phx_executable_output_info),
                    phx_status (*)(phx_executable, size_t, phx_value_info*)>);
static_assert(
    kSame<decltype(&phx_executable_save), phx_status (*)(phx_executable, void*, size_t, size_t*)>);
static_assert(kSame<decltype(&phx_executable_load),
                    phx_status (*)(phx_context, const void*, size_t, const phx_compile_options*,
                                   phx_executable*)>);

static_assert(kSame<decltype(&phx_graph_create), phx_status (*)(phx_context, phx_graph*)>);
static_assert(kSame<decltype(&phx_graph_destroy), phx_status (*)(phx_graph)>);
static_assert(kSame<decltype(&phx_graph_add_input),
                    phx_status (*)(phx_graph, const phx_graph_input_desc*, phx_value*)>);
static_assert(kSame<decltype(&phx_graph_add_constant),
                    phx_status (*)(phx_graph, const char*, phx_dtype, size_t, const int64_t*,
                                   const void*, size_t, phx_value*)>);
static_assert(kSame<decltype(&phx_graph_add_constant_tensor),
                    phx_status (*)(phx_graph, const char*, phx_tensor, phx_value*)>);
static_assert(kSame<decltype(&phx_graph_add_node),
                    phx_status (*)(phx_graph, const phx_graph_node_desc*, phx_value*)>);
static_assert(
    kSame<decltype(&phx_graph_add_output), phx_status (*)(phx_graph, phx_value, const char*)>);
static_assert(
    kSame<decltype(&phx_graph_value_info), phx_status (*)(phx_graph, phx_value, phx_value_info*)>);
static_assert(
    kSame<decltype(&phx_graph_compile),
          phx_status (*)(phx_context, phx_graph, const phx_compile_options*, phx_executable*)>);
static_assert(kSame<decltype(&phx_executable_destroy), phx_status (*)(phx_executable)>);
static_assert(kSame<decltype(&phx_executable_run),
                    phx_status (*)(phx_stream, phx_executable, const phx_tensor*, size_t,
                                   const phx_tensor*, size_t, uint64_t*)>);
static_assert(
    kSame<decltype(&phx_executable_output_desc),
          phx_status (*)(phx_executable, const phx_tensor*, size_t, size_t, phx_tensor_desc*)>);
static_assert(kSame<decltype(&phx_executable_describe),
                    phx_status (*)(phx_executable, phx_executable_info*)>);
static_assert(kSame<decltype(&phx_op_info_get), phx_status (*)(phx_op_id, phx_op_info*)>);
static_assert(kSame<decltype(&phx_plugin_state_name), const char* (*)(phx_plugin_state)>);
static_assert(kSame<decltype(&phx_plugin_stage_name), const char* (*)(phx_plugin_stage)>);
static_assert(kSame<decltype(&phx_device_supports_op),
                    phx_status (*)(phx_context, size_t, const phx_op_variant*, int*)>);
static_assert(kSame<decltype(phx_plugin_api::op_variant_supported),
                    phx_status (*)(void*, uint32_t, const phx_plugin_op_variant*, int*)>);

}  // namespace
