// Bad input for every function of phynexus.h. Each failure must come back as the status
// the function's comment promises, with a message in phx_last_error() that names the
// function, with every out parameter unchanged and every object involved still working
// (the header: "a failed call changes no object"), and never as a crash.

#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

namespace {

using Shape = std::vector<int64_t>;

constexpr size_t kHugeSize = std::numeric_limits<size_t>::max();
constexpr phx_status kInvalid = PHX_STATUS_INVALID_ARGUMENT;
constexpr phx_status kNotFound = PHX_STATUS_NOT_FOUND;
// Enum values the library does not know: 99, and -1 as C passes it.
constexpr int kUnknownEnumValues[] = {99, -1};

// A C caller may pass any integer where the header declares an enum, and the library must
// answer it. C++ cannot form such an enum value without undefined behaviour (UBSan's enum
// check aborts on it), so the helpers below, which play that C caller, form it where that
// check is off, and write enum fields of structs as plain bytes.
#define PLAYS_A_C_CALLER __attribute__((no_sanitize("enum")))

template <class Enum>
PLAYS_A_C_CALLER Enum as_enum(int value) {
  return static_cast<Enum>(value);
}

PLAYS_A_C_CALLER const char* status_name(int status) {
  return phx_status_name(as_enum<phx_status>(status));
}
PLAYS_A_C_CALLER const char* dtype_name(int dtype) {
  return phx_dtype_name(as_enum<phx_dtype>(dtype));
}
PLAYS_A_C_CALLER size_t dtype_size(int dtype) { return phx_dtype_size(as_enum<phx_dtype>(dtype)); }
PLAYS_A_C_CALLER const char* op_name(int op) { return phx_op_name(as_enum<phx_op_id>(op)); }
PLAYS_A_C_CALLER const char* device_type_name(int type) {
  return phx_device_type_name(as_enum<phx_device_type>(type));
}
PLAYS_A_C_CALLER const char* plugin_state_name(int state) {
  return phx_plugin_state_name(as_enum<phx_plugin_state>(state));
}
PLAYS_A_C_CALLER const char* plugin_stage_name(int stage) {
  return phx_plugin_stage_name(as_enum<phx_plugin_stage>(stage));
}
PLAYS_A_C_CALLER phx_status device_supports(phx_context context, size_t device, int op, int dtype,
                                            int* out_supported) {
  return phx_device_supports(context, device, as_enum<phx_op_id>(op), as_enum<phx_dtype>(dtype),
                             out_supported);
}
PLAYS_A_C_CALLER phx_status tensor_create(phx_context context, size_t device, int dtype,
                                          size_t rank, const int64_t* shape, phx_tensor* out) {
  return phx_tensor_create(context, device, as_enum<phx_dtype>(dtype), rank, shape, out);
}

template <class Enum>
void set_enum_field(Enum& field, int value) {
  static_assert(sizeof field == sizeof value);
  std::memcpy(&field, &value, sizeof value);
}

// Handle values no library hands out: an out parameter still holding one after a failed
// call was left unchanged.
const auto kContextSentinel = reinterpret_cast<phx_context>(uintptr_t{0x5E11});
const auto kTensorSentinel = reinterpret_cast<phx_tensor>(uintptr_t{0x5E12});
const auto kStreamSentinel = reinterpret_cast<phx_stream>(uintptr_t{0x5E13});
constexpr size_t kCountSentinel = 0x5E14;

// A struct with its struct_size set and every other byte 0xAB, so that a write to any
// field shows.
template <class T>
T sentinel_struct(size_t struct_size = sizeof(T)) {
  T t;
  std::memset(static_cast<void*>(&t), 0xAB, sizeof t);
  t.struct_size = struct_size;
  return t;
}

template <class T>
bool same_bytes(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof a) == 0;
}

// Checks a failed call: its status, and a last error that names each of `mentions`
// (the function first, then what the rule is about).
::testing::AssertionResult Fails(phx_status got, phx_status want,
                                 const std::vector<std::string>& mentions) {
  // Copied before any other phx_ call, which may replace it.
  const std::string message = phx_last_error();
  if (got != want) {
    return ::testing::AssertionFailure()
           << "returned " << phx_status_name(got) << ", expected " << phx_status_name(want)
           << "; last error: \"" << message << "\"";
  }
  for (const std::string& mention : mentions) {
    if (message.find(mention) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "the last error \"" << message << "\" does not mention \"" << mention << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

phx_context new_context(const phx_context_options* options = nullptr) {
  phx_context context = nullptr;
  EXPECT_EQ(phx_context_create(options, &context), PHX_STATUS_OK) << phx_last_error();
  return context;
}

phx_tensor new_tensor(phx_context context, size_t device, phx_dtype dtype, const Shape& shape) {
  phx_tensor tensor = nullptr;
  EXPECT_EQ(phx_tensor_create(context, device, dtype, shape.size(),
                              shape.empty() ? nullptr : shape.data(), &tensor),
            PHX_STATUS_OK)
      << phx_last_error();
  return tensor;
}

// An f32 tensor holding `values`.
phx_tensor f32_tensor(phx_context context, size_t device, const Shape& shape,
                      const std::vector<float>& values) {
  phx_tensor tensor = new_tensor(context, device, PHX_DTYPE_F32, shape);
  EXPECT_EQ(phx_tensor_upload(tensor, 0, values.data(), values.size() * sizeof(float)),
            PHX_STATUS_OK)
      << phx_last_error();
  return tensor;
}

std::vector<float> f32_values(phx_tensor tensor, size_t count) {
  std::vector<float> values(count, -1.0f);
  EXPECT_EQ(phx_tensor_download(tensor, 0, values.data(), count * sizeof(float)), PHX_STATUS_OK)
      << phx_last_error();
  return values;
}

// ---- Names and versions ------------------------------------------------------------------------

TEST(Names, StatusNamesAndTheirFallback) {
  EXPECT_STREQ(phx_status_name(PHX_STATUS_OK), "PHX_STATUS_OK");
  EXPECT_STREQ(phx_status_name(PHX_STATUS_OUT_OF_MEMORY), "PHX_STATUS_OUT_OF_MEMORY");
  EXPECT_STREQ(phx_status_name(PHX_STATUS_INTERNAL), "PHX_STATUS_INTERNAL");
  for (int unknown : kUnknownEnumValues) {
    EXPECT_STREQ(status_name(unknown), "PHX_STATUS_<unknown>") << unknown;
  }
}

TEST(Names, DtypeNamesSizesAndTheirFallback) {
  EXPECT_STREQ(phx_dtype_name(PHX_DTYPE_F32), "f32");
  EXPECT_STREQ(phx_dtype_name(PHX_DTYPE_F16), "f16");
  EXPECT_STREQ(phx_dtype_name(PHX_DTYPE_BF16), "bf16");
  std::vector<std::string> names;
  for (int dt = PHX_DTYPE_F32; dt < PHX_DTYPE_COUNT; ++dt) {
    const std::string name = phx_dtype_name(static_cast<phx_dtype>(dt));
    EXPECT_NE(name, "unknown") << dt;
    EXPECT_EQ(std::count(names.begin(), names.end(), name), 0) << name << " twice";
    names.push_back(name);
  }
  for (int unknown : kUnknownEnumValues) {
    EXPECT_STREQ(dtype_name(unknown), "unknown") << unknown;
    EXPECT_EQ(dtype_size(unknown), 0u) << unknown;
  }
  const size_t sizes[] = {0, 4, 2, 2, 1, 2, 4, 1};
  for (int dt = PHX_DTYPE_F32; dt < PHX_DTYPE_COUNT; ++dt) {
    EXPECT_EQ(phx_dtype_size(static_cast<phx_dtype>(dt)), sizes[dt])
        << phx_dtype_name(static_cast<phx_dtype>(dt));
  }
}

TEST(Names, OpNamesAndTheirFallback) {
  EXPECT_STREQ(phx_op_name(PHX_OP_MATMUL), "matmul");
  EXPECT_STREQ(phx_op_name(PHX_OP_ADD), "add");
  std::vector<std::string> names;
  for (int op = PHX_OP_MATMUL; op < PHX_OP_COUNT; ++op) {
    const std::string name = phx_op_name(static_cast<phx_op_id>(op));
    EXPECT_NE(name, "unknown") << op;
    EXPECT_FALSE(name.empty()) << op;
    EXPECT_EQ(std::count(names.begin(), names.end(), name), 0) << name << " twice";
    names.push_back(name);
  }
  for (int unknown : kUnknownEnumValues) EXPECT_STREQ(op_name(unknown), "unknown") << unknown;
}

TEST(Names, DeviceTypeNamesAndTheirFallback) {
  EXPECT_STREQ(phx_device_type_name(PHX_DEVICE_CPU), "cpu");
  EXPECT_STREQ(phx_device_type_name(PHX_DEVICE_GPU), "gpu");
  EXPECT_STREQ(phx_device_type_name(PHX_DEVICE_TPU), "tpu");
  EXPECT_STREQ(phx_device_type_name(PHX_DEVICE_NPU), "npu");
  EXPECT_STREQ(phx_device_type_name(PHX_DEVICE_ACCELERATOR), "accelerator");
  for (int unknown : kUnknownEnumValues) {
    EXPECT_STREQ(device_type_name(unknown), "unknown") << unknown;
  }
}

TEST(Names, PluginStatesStagesAndTheirFallback) {
  EXPECT_STREQ(phx_plugin_state_name(PHX_PLUGIN_LOADED), "loaded");
  EXPECT_STREQ(phx_plugin_state_name(PHX_PLUGIN_REJECTED), "rejected");
  EXPECT_STREQ(phx_plugin_state_name(PHX_PLUGIN_SHADOWED), "shadowed");
  const char* const stages[] = {"found",     "opened",      "entry", "version",
                                "validated", "initialized", "ready"};
  for (int stage = PHX_PLUGIN_STAGE_FOUND; stage <= PHX_PLUGIN_STAGE_READY; ++stage)
    EXPECT_STREQ(plugin_stage_name(stage), stages[stage]);
  for (int unknown : kUnknownEnumValues) {
    EXPECT_STREQ(plugin_state_name(unknown), "unknown") << unknown;
    EXPECT_STREQ(plugin_stage_name(unknown), "unknown") << unknown;
  }
}

TEST(Names, ApiVersionMatchesTheHeader) {
  EXPECT_EQ(phx_api_version(), static_cast<uint32_t>(PHX_API_VERSION));
}

// ---- phx_last_error --------------------------------------------------------------------------

TEST(LastError, EmptyOnAThreadThatNeverFailedAndKeptPerThread) {
  std::string fresh = "not read";
  std::thread([&] { fresh = phx_last_error(); }).join();
  EXPECT_EQ(fresh, "");

  EXPECT_EQ(phx_context_create(nullptr, nullptr), kInvalid);
  const std::string mine = phx_last_error();
  EXPECT_FALSE(mine.empty());
  std::string other = "not read";
  std::thread([&] {
    size_t count = 0;
    EXPECT_EQ(phx_device_count(nullptr, &count), kInvalid);
    other = phx_last_error();
  }).join();
  EXPECT_NE(other.find("phx_device_count"), std::string::npos) << other;
  EXPECT_EQ(std::string(phx_last_error()), mine) << "another thread's failure changed mine";
}

TEST(LastError, SetByALayeredLibraryAsTheLibrarysOwn) {
  EXPECT_EQ(phx_set_last_error(PHX_STATUS_UNSUPPORTED, "importer: no such operator"),
            PHX_STATUS_UNSUPPORTED);
  EXPECT_STREQ(phx_last_error(), "importer: no such operator");
  EXPECT_EQ(phx_set_last_error(PHX_STATUS_INVALID_ARGUMENT, nullptr), kInvalid);
  EXPECT_STREQ(phx_last_error(), "");
}

// ---- Context ------------------------------------------------------------------------------------

TEST(Context, CreateRejectsNullOutAndBadOptions) {
  EXPECT_TRUE(Fails(phx_context_create(nullptr, nullptr), kInvalid, {"phx_context_create"}));
  for (size_t struct_size : {size_t{0}, size_t{1}, kHugeSize}) {
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.struct_size = struct_size;
    phx_context context = kContextSentinel;
    EXPECT_TRUE(Fails(phx_context_create(&options, &context), kInvalid, {"phx_context_create"}))
        << "struct_size " << struct_size;
    EXPECT_EQ(context, kContextSentinel);
  }
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = nullptr;
  options.plugin_path_count = 1;
  phx_context context = kContextSentinel;
  EXPECT_TRUE(Fails(phx_context_create(&options, &context), kInvalid, {"phx_context_create"}));
  EXPECT_EQ(context, kContextSentinel);
}

TEST(Context, DestroyRejectsNullAndDestroyedHandles) {
  EXPECT_TRUE(Fails(phx_context_destroy(nullptr), kInvalid, {"phx_context_destroy"}));
  phx_context context = new_context();
  ASSERT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_context_destroy(context), kInvalid, {"phx_context_destroy"}));
}

// Every function that takes a context, given one already destroyed, and the handles that
// died with it.
TEST(Context, DestroyedContextAndItsObjectsAreRejected) {
  phx_context context = new_context();
  phx_tensor tensor = new_tensor(context, 0, PHX_DTYPE_F32, {4});
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context, 0, &stream), PHX_STATUS_OK);
  ASSERT_EQ(phx_context_destroy(context), PHX_STATUS_OK);

  size_t count = kCountSentinel;
  EXPECT_TRUE(Fails(phx_plugin_count(context, &count), kInvalid, {"phx_plugin_count"}));
  EXPECT_TRUE(Fails(phx_device_count(context, &count), kInvalid, {"phx_device_count"}));
  EXPECT_EQ(count, kCountSentinel);
  phx_plugin_info plugin = sentinel_struct<phx_plugin_info>();
  EXPECT_TRUE(Fails(phx_plugin_get(context, 0, &plugin), kInvalid, {"phx_plugin_get"}));
  phx_device_info device = sentinel_struct<phx_device_info>();
  EXPECT_TRUE(Fails(phx_device_get(context, 0, &device), kInvalid, {"phx_device_get"}));
  phx_tensor new_one = kTensorSentinel;
  const int64_t shape[] = {4};
  EXPECT_TRUE(Fails(phx_tensor_create(context, 0, PHX_DTYPE_F32, 1, shape, &new_one), kInvalid,
                    {"phx_tensor_create"}));
  EXPECT_EQ(new_one, kTensorSentinel);
  phx_stream new_stream = kStreamSentinel;
  EXPECT_TRUE(Fails(phx_stream_create(context, 0, &new_stream), kInvalid, {"phx_stream_create"}));
  EXPECT_EQ(new_stream, kStreamSentinel);
  int supported = 7;
  EXPECT_TRUE(Fails(phx_device_supports(context, 0, PHX_OP_ADD, PHX_DTYPE_F32, &supported),
                    kInvalid, {"phx_device_supports"}));
  EXPECT_EQ(supported, 7);
  phx_memory_stats stats = sentinel_struct<phx_memory_stats>();
  EXPECT_TRUE(Fails(phx_memory_stats_get(context, 0, &stats), kInvalid, {"phx_memory_stats_get"}));
  EXPECT_TRUE(Fails(phx_memory_set_limit(context, 0, 0), kInvalid, {"phx_memory_set_limit"}));
  EXPECT_TRUE(
      Fails(phx_memory_release_cached(context, 0), kInvalid, {"phx_memory_release_cached"}));

  phx_tensor_desc desc = sentinel_struct<phx_tensor_desc>();
  EXPECT_TRUE(Fails(phx_tensor_describe(tensor, &desc), kInvalid, {"phx_tensor_describe"}));
  EXPECT_TRUE(Fails(phx_tensor_destroy(tensor), kInvalid, {"phx_tensor_destroy"}));
  EXPECT_TRUE(Fails(phx_stream_synchronize(stream), kInvalid, {"phx_stream_synchronize"}));
  EXPECT_TRUE(Fails(phx_stream_destroy(stream), kInvalid, {"phx_stream_destroy"}));
}

// phx_log_message reaches the context's callback at or above its level only, and refuses a
// bad context, level or message without logging anything.
TEST(Context, LogMessageGoesToTheCallbackAndRefusesBadInput) {
  std::vector<std::pair<phx_log_level, std::string>> logged;
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.use_default_search_path = 0;
  options.log_level = PHX_LOG_INFO;
  options.log_callback = [](void* user_data, phx_log_level level, const char* message) {
    static_cast<std::vector<std::pair<phx_log_level, std::string>>*>(user_data)->emplace_back(
        level, message);
  };
  options.log_user_data = &logged;
  phx_context context = new_context(&options);
  logged.clear();  // whatever creating the context said
  ASSERT_EQ(phx_log_message(context, PHX_LOG_DEBUG, "below the level"), PHX_STATUS_OK);
  ASSERT_EQ(phx_log_message(context, PHX_LOG_WARN, "a warning"), PHX_STATUS_OK);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].first, PHX_LOG_WARN);
  EXPECT_NE(logged[0].second.find("a warning"), std::string::npos) << logged[0].second;

  EXPECT_TRUE(Fails(phx_log_message(nullptr, PHX_LOG_WARN, "x"), kInvalid, {"phx_log_message"}));
  EXPECT_TRUE(Fails(phx_log_message(context, PHX_LOG_OFF, "x"), kInvalid, {"level 5"}));
  EXPECT_TRUE(
      Fails(phx_log_message(context, static_cast<phx_log_level>(-1), "x"), kInvalid, {"level -1"}));
  EXPECT_TRUE(Fails(phx_log_message(context, PHX_LOG_ERROR, nullptr), kInvalid, {"message"}));
  EXPECT_EQ(logged.size(), 1u);
  ASSERT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_log_message(context, PHX_LOG_WARN, "x"), kInvalid, {"phx_log_message"}));
}

// A context may have no device; device indices are then all out of range.
TEST(Context, WithoutDevicesEveryDeviceIsNotFound) {
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.use_default_search_path = 0;
  phx_context context = new_context(&options);
  size_t count = kCountSentinel;
  ASSERT_EQ(phx_device_count(context, &count), PHX_STATUS_OK);
  EXPECT_EQ(count, 0u);
  phx_tensor tensor = kTensorSentinel;
  const int64_t shape[] = {4};
  EXPECT_TRUE(Fails(phx_tensor_create(context, 0, PHX_DTYPE_F32, 1, shape, &tensor), kNotFound,
                    {"phx_tensor_create"}));
  EXPECT_EQ(tensor, kTensorSentinel);
  phx_stream stream = kStreamSentinel;
  EXPECT_TRUE(Fails(phx_stream_create(context, 0, &stream), kNotFound, {"phx_stream_create"}));
  EXPECT_EQ(stream, kStreamSentinel);
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

// ---- The fixture: a context with at least one device, a stream on device 0 ------------------

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    context_ = new_context();
    ASSERT_NE(context_, nullptr);
    ASSERT_EQ(phx_device_count(context_, &device_count_), PHX_STATUS_OK);
    ASSERT_GE(device_count_, 1u) << "the CPU plugin was not found";
    ASSERT_EQ(phx_stream_create(context_, 0, &stream_), PHX_STATUS_OK) << phx_last_error();
  }
  void TearDown() override {
    EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);  // destroys what tests left alive
  }

  phx_tensor tensor(const Shape& shape, phx_dtype dtype = PHX_DTYPE_F32, size_t device = 0) {
    return new_tensor(context_, device, dtype, shape);
  }

  // Runs add [2, 3] + [3] on the stream and checks the sums: the stream and the context
  // still work after what failed before.
  void expect_still_works() {
    phx_tensor a = f32_tensor(context_, 0, {2, 3}, {1, 2, 3, 4, 5, 6});
    phx_tensor b = f32_tensor(context_, 0, {3}, {10, 20, 30});
    phx_tensor out = tensor({2, 3});
    const phx_tensor inputs[] = {a, b};
    const phx_op_desc desc = {sizeof desc, PHX_OP_ADD, nullptr, inputs, 2, &out, 1};
    ASSERT_EQ(phx_op_run(stream_, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK) << phx_last_error();
    EXPECT_EQ(f32_values(out, 6), (std::vector<float>{11, 22, 33, 14, 25, 36}));
    for (phx_tensor t : {a, b, out}) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
  }

  phx_context context_ = nullptr;
  phx_stream stream_ = nullptr;
  size_t device_count_ = 0;
};

// ---- Plugins and devices -----------------------------------------------------------------------

TEST_F(BadInput, PluginCountAndGet) {
  size_t count = kCountSentinel;
  EXPECT_TRUE(Fails(phx_plugin_count(nullptr, &count), kInvalid, {"phx_plugin_count"}));
  EXPECT_EQ(count, kCountSentinel);
  EXPECT_TRUE(Fails(phx_plugin_count(context_, nullptr), kInvalid, {"phx_plugin_count"}));
  ASSERT_EQ(phx_plugin_count(context_, &count), PHX_STATUS_OK);

  phx_plugin_info info = sentinel_struct<phx_plugin_info>();
  const phx_plugin_info before = info;
  EXPECT_TRUE(Fails(phx_plugin_get(nullptr, 0, &info), kInvalid, {"phx_plugin_get"}));
  EXPECT_TRUE(Fails(phx_plugin_get(context_, 0, nullptr), kInvalid, {"phx_plugin_get"}));
  EXPECT_TRUE(Fails(phx_plugin_get(context_, count, &info), kNotFound, {"phx_plugin_get"}));
  EXPECT_TRUE(Fails(phx_plugin_get(context_, kHugeSize, &info), kNotFound, {"phx_plugin_get"}));
  EXPECT_TRUE(same_bytes(info, before));
  for (size_t struct_size : {size_t{0}, size_t{1}, kHugeSize}) {
    phx_plugin_info bad = sentinel_struct<phx_plugin_info>(struct_size);
    const phx_plugin_info bad_before = bad;
    EXPECT_TRUE(Fails(phx_plugin_get(context_, 0, &bad), kInvalid, {"phx_plugin_get"}))
        << "struct_size " << struct_size;
    EXPECT_TRUE(same_bytes(bad, bad_before));
  }
  phx_plugin_info good = sentinel_struct<phx_plugin_info>();
  EXPECT_EQ(phx_plugin_get(context_, 0, &good), PHX_STATUS_OK) << "the context still answers";
}

TEST_F(BadInput, DeviceCountAndGet) {
  size_t count = kCountSentinel;
  EXPECT_TRUE(Fails(phx_device_count(nullptr, &count), kInvalid, {"phx_device_count"}));
  EXPECT_EQ(count, kCountSentinel);
  EXPECT_TRUE(Fails(phx_device_count(context_, nullptr), kInvalid, {"phx_device_count"}));

  phx_device_info info = sentinel_struct<phx_device_info>();
  const phx_device_info before = info;
  EXPECT_TRUE(Fails(phx_device_get(nullptr, 0, &info), kInvalid, {"phx_device_get"}));
  EXPECT_TRUE(Fails(phx_device_get(context_, 0, nullptr), kInvalid, {"phx_device_get"}));
  EXPECT_TRUE(Fails(phx_device_get(context_, device_count_, &info), kNotFound, {"phx_device_get"}));
  EXPECT_TRUE(Fails(phx_device_get(context_, kHugeSize, &info), kNotFound, {"phx_device_get"}));
  EXPECT_TRUE(same_bytes(info, before));
  for (size_t struct_size : {size_t{0}, size_t{1}, kHugeSize}) {
    phx_device_info bad = sentinel_struct<phx_device_info>(struct_size);
    const phx_device_info bad_before = bad;
    EXPECT_TRUE(Fails(phx_device_get(context_, 0, &bad), kInvalid, {"phx_device_get"}))
        << "struct_size " << struct_size;
    EXPECT_TRUE(same_bytes(bad, bad_before));
  }
  EXPECT_EQ(phx_device_get(context_, 0, &info), PHX_STATUS_OK) << "the context still answers";
}

// A program built against an older header passes a smaller struct: the library must
// write only its first struct_size bytes.
TEST_F(BadInput, OlderSmallerStructIsWrittenOnlyUpToItsSize) {
  const size_t old_size = offsetof(phx_device_info, name);
  phx_device_info info = sentinel_struct<phx_device_info>(old_size);
  const phx_device_info before = info;
  ASSERT_EQ(phx_device_get(context_, 0, &info), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(info.index, 0u);
  EXPECT_EQ(std::memcmp(reinterpret_cast<const char*>(&info) + old_size,
                        reinterpret_cast<const char*>(&before) + old_size, sizeof info - old_size),
            0)
      << "bytes past struct_size were written";
}

TEST_F(BadInput, DeviceSupports) {
  int supported = 7;
  EXPECT_TRUE(Fails(phx_device_supports(nullptr, 0, PHX_OP_ADD, PHX_DTYPE_F32, &supported),
                    kInvalid, {"phx_device_supports"}));
  EXPECT_TRUE(Fails(phx_device_supports(context_, 0, PHX_OP_ADD, PHX_DTYPE_F32, nullptr), kInvalid,
                    {"phx_device_supports"}));
  EXPECT_TRUE(
      Fails(phx_device_supports(context_, device_count_, PHX_OP_ADD, PHX_DTYPE_F32, &supported),
            kNotFound, {"phx_device_supports"}));
  for (int bad : {99, -1, int{PHX_OP_INVALID}, int{PHX_OP_COUNT}}) {
    EXPECT_TRUE(Fails(device_supports(context_, 0, bad, PHX_DTYPE_F32, &supported), kInvalid,
                      {"phx_device_supports"}))
        << "op " << bad;
  }
  for (int bad : {99, -1, int{PHX_DTYPE_INVALID}}) {
    EXPECT_TRUE(Fails(device_supports(context_, 0, PHX_OP_ADD, bad, &supported), kInvalid,
                      {"phx_device_supports"}))
        << "dtype " << bad;
  }
  EXPECT_EQ(supported, 7);
  ASSERT_EQ(phx_device_supports(context_, 0, PHX_OP_ADD, PHX_DTYPE_F32, &supported), PHX_STATUS_OK);
  EXPECT_EQ(supported, 1) << "the CPU device adds f32";
}

// ---- Tensors
// -------------------------------------------------------------------------------------

TEST_F(BadInput, TensorCreate) {
  const int64_t good_shape[] = {2, 3};
  phx_tensor out = kTensorSentinel;
  EXPECT_TRUE(Fails(phx_tensor_create(nullptr, 0, PHX_DTYPE_F32, 2, good_shape, &out), kInvalid,
                    {"phx_tensor_create"}));
  EXPECT_TRUE(Fails(phx_tensor_create(context_, 0, PHX_DTYPE_F32, 2, good_shape, nullptr), kInvalid,
                    {"phx_tensor_create"}));
  EXPECT_TRUE(Fails(phx_tensor_create(context_, 0, PHX_DTYPE_F32, 2, nullptr, &out), kInvalid,
                    {"phx_tensor_create"}))
      << "null shape with rank 2";
  EXPECT_TRUE(Fails(phx_tensor_create(context_, device_count_, PHX_DTYPE_F32, 2, good_shape, &out),
                    kNotFound, {"phx_tensor_create"}));
  for (int bad : {99, -1, int{PHX_DTYPE_INVALID}}) {
    EXPECT_TRUE(Fails(tensor_create(context_, 0, bad, 2, good_shape, &out), kInvalid,
                      {"phx_tensor_create"}))
        << "dtype " << bad;
  }
  const int64_t rank9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_TRUE(Fails(phx_tensor_create(context_, 0, PHX_DTYPE_F32, 9, rank9, &out), kInvalid,
                    {"phx_tensor_create"}));
  const std::vector<Shape> bad_shapes = {
      {0},
      {3, 0},
      {-1},
      {4, -7},
      {std::numeric_limits<int64_t>::min()},
      {int64_t{1} << 40, int64_t{1} << 40},  // the element count overflows
      {int64_t{1} << 62},                    // the f32 byte size overflows 64 bits
      {std::numeric_limits<int64_t>::max(), 2}};
  for (const Shape& shape : bad_shapes) {
    EXPECT_TRUE(
        Fails(phx_tensor_create(context_, 0, PHX_DTYPE_F32, shape.size(), shape.data(), &out),
              kInvalid, {"phx_tensor_create"}))
        << "shape [" << shape[0] << (shape.size() > 1 ? ", " + std::to_string(shape[1]) : "")
        << "]";
  }
  // 2^61 bytes: representable, but no device has it.
  const int64_t enormous[] = {int64_t{1} << 59};
  EXPECT_TRUE(Fails(phx_tensor_create(context_, 0, PHX_DTYPE_F32, 1, enormous, &out),
                    PHX_STATUS_OUT_OF_MEMORY, {"phx_tensor_create"}));
  EXPECT_EQ(out, kTensorSentinel);

  // Rank 0 with a null shape is a scalar.
  phx_tensor scalar = nullptr;
  ASSERT_EQ(phx_tensor_create(context_, 0, PHX_DTYPE_F32, 0, nullptr, &scalar), PHX_STATUS_OK)
      << phx_last_error();
  phx_tensor_desc desc = sentinel_struct<phx_tensor_desc>();
  ASSERT_EQ(phx_tensor_describe(scalar, &desc), PHX_STATUS_OK);
  EXPECT_EQ(desc.rank, 0u);
  EXPECT_EQ(desc.element_count, 1u);
  EXPECT_EQ(desc.byte_size, 4u);
  expect_still_works();
}

TEST_F(BadInput, TensorDestroyAndDescribe) {
  EXPECT_TRUE(Fails(phx_tensor_destroy(nullptr), kInvalid, {"phx_tensor_destroy"}));
  phx_tensor t = tensor({2, 3});
  phx_tensor_desc desc = sentinel_struct<phx_tensor_desc>();
  const phx_tensor_desc before = desc;
  EXPECT_TRUE(Fails(phx_tensor_describe(nullptr, &desc), kInvalid, {"phx_tensor_describe"}));
  EXPECT_TRUE(Fails(phx_tensor_describe(t, nullptr), kInvalid, {"phx_tensor_describe"}));
  EXPECT_TRUE(same_bytes(desc, before));
  for (size_t struct_size : {size_t{0}, size_t{1}, kHugeSize}) {
    phx_tensor_desc bad = sentinel_struct<phx_tensor_desc>(struct_size);
    const phx_tensor_desc bad_before = bad;
    EXPECT_TRUE(Fails(phx_tensor_describe(t, &bad), kInvalid, {"phx_tensor_describe"}))
        << "struct_size " << struct_size;
    EXPECT_TRUE(same_bytes(bad, bad_before));
  }
  ASSERT_EQ(phx_tensor_describe(t, &desc), PHX_STATUS_OK) << "the tensor still works";
  EXPECT_EQ(desc.byte_size, 24u);
  ASSERT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
  desc = before;
  EXPECT_TRUE(Fails(phx_tensor_describe(t, &desc), kInvalid, {"phx_tensor_describe"}));
  EXPECT_TRUE(same_bytes(desc, before));
  EXPECT_TRUE(Fails(phx_tensor_destroy(t), kInvalid, {"phx_tensor_destroy"}));
  expect_still_works();
}

TEST_F(BadInput, UploadAndDownloadRanges) {
  const std::vector<float> original = {1, 2, 3, 4, 5, 6};
  phx_tensor t = f32_tensor(context_, 0, {6}, original);  // 24 bytes
  std::vector<unsigned char> host(64, 0x5A);
  const std::vector<unsigned char> host_before = host;
  struct Range {
    size_t offset;
    size_t size;
  };
  const std::vector<Range> bad_ranges = {
      {0, 25},            // one byte past the end
      {24, 1},            // starts at the end
      {20, 8},            // straddles the end
      {25, 0},            // an empty range past the end
      {kHugeSize, 1},     // offset + size wraps to 0
      {8, kHugeSize - 3}  // offset + size wraps to 4
  };
  for (const Range& r : bad_ranges) {
    SCOPED_TRACE("offset " + std::to_string(r.offset) + " size " + std::to_string(r.size));
    EXPECT_TRUE(Fails(phx_tensor_upload(t, r.offset, host.data(), r.size), kInvalid,
                      {"phx_tensor_upload"}));
    EXPECT_TRUE(Fails(phx_tensor_download(t, r.offset, host.data(), r.size), kInvalid,
                      {"phx_tensor_download"}));
    EXPECT_EQ(host, host_before) << "a failed download wrote to dst";
  }
  EXPECT_TRUE(
      Fails(phx_tensor_upload(nullptr, 0, host.data(), 4), kInvalid, {"phx_tensor_upload"}));
  EXPECT_TRUE(
      Fails(phx_tensor_download(nullptr, 0, host.data(), 4), kInvalid, {"phx_tensor_download"}));
  EXPECT_TRUE(Fails(phx_tensor_upload(t, 0, nullptr, 4), kInvalid, {"phx_tensor_upload"}));
  EXPECT_TRUE(Fails(phx_tensor_download(t, 0, nullptr, 4), kInvalid, {"phx_tensor_download"}));
  // A null pointer with nothing to copy is fine.
  EXPECT_EQ(phx_tensor_upload(t, 0, nullptr, 0), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_tensor_download(t, 24, nullptr, 0), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(f32_values(t, 6), original) << "a failed upload changed the tensor";

  ASSERT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_tensor_upload(t, 0, host.data(), 4), kInvalid, {"phx_tensor_upload"}));
  EXPECT_TRUE(Fails(phx_tensor_download(t, 0, host.data(), 4), kInvalid, {"phx_tensor_download"}));
  EXPECT_EQ(host, host_before);
  expect_still_works();
}

TEST_F(BadInput, TensorCopy) {
  const std::vector<float> src_values = {1, 2, 3, 4, 5, 6};
  const std::vector<float> dst_values = {9, 9, 9, 9, 9, 9};
  phx_tensor src = f32_tensor(context_, 0, {2, 3}, src_values);
  phx_tensor dst = f32_tensor(context_, 0, {6}, dst_values);
  phx_tensor other_dtype = tensor({6}, PHX_DTYPE_I32);  // same bytes, another dtype
  phx_tensor other_size = tensor({7});
  phx_tensor half = tensor({12}, PHX_DTYPE_F16);  // same bytes, another dtype
  EXPECT_TRUE(Fails(phx_tensor_copy(nullptr, src), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(dst, nullptr), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(src, src), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(other_dtype, src), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(half, src), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(other_size, src), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(dst, other_size), kInvalid, {"phx_tensor_copy"}));

  phx_context foreign = new_context();
  phx_tensor foreign_tensor = f32_tensor(foreign, 0, {6}, src_values);
  EXPECT_TRUE(Fails(phx_tensor_copy(dst, foreign_tensor), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(foreign_tensor, src), kInvalid, {"phx_tensor_copy"}));
  EXPECT_EQ(phx_context_destroy(foreign), PHX_STATUS_OK);

  phx_tensor dead = tensor({6});
  ASSERT_EQ(phx_tensor_destroy(dead), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_tensor_copy(dst, dead), kInvalid, {"phx_tensor_copy"}));
  EXPECT_TRUE(Fails(phx_tensor_copy(dead, src), kInvalid, {"phx_tensor_copy"}));

  EXPECT_EQ(f32_values(dst, 6), dst_values) << "a failed copy changed dst";
  ASSERT_EQ(phx_tensor_copy(dst, src), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(f32_values(dst, 6), src_values);
  expect_still_works();
}

// ---- Streams
// -------------------------------------------------------------------------------------

TEST_F(BadInput, StreamCreateAndDestroy) {
  phx_stream stream = kStreamSentinel;
  EXPECT_TRUE(Fails(phx_stream_create(nullptr, 0, &stream), kInvalid, {"phx_stream_create"}));
  EXPECT_TRUE(Fails(phx_stream_create(context_, 0, nullptr), kInvalid, {"phx_stream_create"}));
  EXPECT_TRUE(
      Fails(phx_stream_create(context_, device_count_, &stream), kNotFound, {"phx_stream_create"}));
  EXPECT_TRUE(
      Fails(phx_stream_create(context_, kHugeSize, &stream), kNotFound, {"phx_stream_create"}));
  EXPECT_EQ(stream, kStreamSentinel);
  EXPECT_TRUE(Fails(phx_stream_destroy(nullptr), kInvalid, {"phx_stream_destroy"}));
  ASSERT_EQ(phx_stream_create(context_, 0, &stream), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_stream_destroy(stream), kInvalid, {"phx_stream_destroy"}));
  expect_still_works();
}

TEST_F(BadInput, StreamSynchronizeWaitQuery) {
  int done = 7;
  EXPECT_TRUE(Fails(phx_stream_synchronize(nullptr), kInvalid, {"phx_stream_synchronize"}));
  EXPECT_TRUE(Fails(phx_stream_wait(nullptr, 1), kInvalid, {"phx_stream_wait"}));
  EXPECT_TRUE(Fails(phx_stream_query(nullptr, 1, &done), kInvalid, {"phx_stream_query"}));
  EXPECT_TRUE(Fails(phx_stream_query(stream_, 1, nullptr), kInvalid, {"phx_stream_query"}));
  EXPECT_EQ(done, 7);
  // Nothing was submitted to this stream yet: ticket 1 is not issued.
  EXPECT_TRUE(Fails(phx_stream_wait(stream_, 1), kInvalid, {"phx_stream_wait"}));
  EXPECT_TRUE(Fails(phx_stream_wait(stream_, std::numeric_limits<uint64_t>::max()), kInvalid,
                    {"phx_stream_wait"}));

  phx_stream dead = nullptr;
  ASSERT_EQ(phx_stream_create(context_, 0, &dead), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_destroy(dead), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_stream_synchronize(dead), kInvalid, {"phx_stream_synchronize"}));
  EXPECT_TRUE(Fails(phx_stream_wait(dead, 1), kInvalid, {"phx_stream_wait"}));
  EXPECT_TRUE(Fails(phx_stream_query(dead, 1, &done), kInvalid, {"phx_stream_query"}));
  EXPECT_EQ(done, 7);
  expect_still_works();
}

// ---- Profiling
// -------------------------------------------------------------------------------------

TEST_F(BadInput, ProfileFunctions) {
  size_t count = kCountSentinel;
  EXPECT_TRUE(Fails(phx_profile_count(nullptr, &count), kInvalid, {"phx_profile_count"}));
  EXPECT_TRUE(Fails(phx_profile_count(stream_, nullptr), kInvalid, {"phx_profile_count"}));
  EXPECT_EQ(count, kCountSentinel);
  EXPECT_TRUE(Fails(phx_profile_clear(nullptr), kInvalid, {"phx_profile_clear"}));

  // A profiling context with one record, so that only the argument under test is wrong.
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.flags = PHX_CONTEXT_PROFILE;
  phx_context context = new_context(&options);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context, 0, &stream), PHX_STATUS_OK);
  phx_tensor x = f32_tensor(context, 0, {4}, {-1, 2, -3, 4});
  phx_tensor y = new_tensor(context, 0, PHX_DTYPE_F32, {4});
  const phx_op_desc desc = {sizeof desc, PHX_OP_RELU, nullptr, &x, 1, &y, 1};
  ASSERT_EQ(phx_op_run(stream, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK);
  ASSERT_EQ(count, 1u);

  phx_profile_record record = sentinel_struct<phx_profile_record>();
  const phx_profile_record before = record;
  EXPECT_TRUE(Fails(phx_profile_get(nullptr, 0, &record), kInvalid, {"phx_profile_get"}));
  EXPECT_TRUE(Fails(phx_profile_get(stream, 0, nullptr), kInvalid, {"phx_profile_get"}));
  EXPECT_TRUE(Fails(phx_profile_get(stream, 1, &record), kNotFound, {"phx_profile_get"}));
  EXPECT_TRUE(Fails(phx_profile_get(stream, kHugeSize, &record), kNotFound, {"phx_profile_get"}));
  EXPECT_TRUE(same_bytes(record, before));
  for (size_t struct_size : {size_t{0}, size_t{1}, kHugeSize}) {
    phx_profile_record bad = sentinel_struct<phx_profile_record>(struct_size);
    const phx_profile_record bad_before = bad;
    EXPECT_TRUE(Fails(phx_profile_get(stream, 0, &bad), kInvalid, {"phx_profile_get"}))
        << "struct_size " << struct_size;
    EXPECT_TRUE(same_bytes(bad, bad_before));
  }
  ASSERT_EQ(phx_profile_get(stream, 0, &record), PHX_STATUS_OK) << "the record is still there";
  EXPECT_EQ(record.op, PHX_OP_RELU);

  phx_stream dead = nullptr;
  ASSERT_EQ(phx_stream_create(context, 0, &dead), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_destroy(dead), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_profile_count(dead, &count), kInvalid, {"phx_profile_count"}));
  EXPECT_TRUE(Fails(phx_profile_get(dead, 0, &record), kInvalid, {"phx_profile_get"}));
  EXPECT_TRUE(Fails(phx_profile_clear(dead), kInvalid, {"phx_profile_clear"}));
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

// ---- Memory
// ----------------------------------------------------------------------------------------

TEST_F(BadInput, MemoryFunctions) {
  phx_memory_stats stats = sentinel_struct<phx_memory_stats>();
  const phx_memory_stats before = stats;
  EXPECT_TRUE(Fails(phx_memory_stats_get(nullptr, 0, &stats), kInvalid, {"phx_memory_stats_get"}));
  EXPECT_TRUE(
      Fails(phx_memory_stats_get(context_, 0, nullptr), kInvalid, {"phx_memory_stats_get"}));
  EXPECT_TRUE(Fails(phx_memory_stats_get(context_, device_count_, &stats), kNotFound,
                    {"phx_memory_stats_get"}));
  EXPECT_TRUE(same_bytes(stats, before));
  for (size_t struct_size : {size_t{0}, size_t{1}, kHugeSize}) {
    phx_memory_stats bad = sentinel_struct<phx_memory_stats>(struct_size);
    const phx_memory_stats bad_before = bad;
    EXPECT_TRUE(Fails(phx_memory_stats_get(context_, 0, &bad), kInvalid, {"phx_memory_stats_get"}))
        << "struct_size " << struct_size;
    EXPECT_TRUE(same_bytes(bad, bad_before));
  }
  EXPECT_TRUE(Fails(phx_memory_set_limit(nullptr, 0, 0), kInvalid, {"phx_memory_set_limit"}));
  EXPECT_TRUE(
      Fails(phx_memory_set_limit(context_, device_count_, 0), kNotFound, {"phx_memory_set_limit"}));
  EXPECT_TRUE(
      Fails(phx_memory_release_cached(nullptr, 0), kInvalid, {"phx_memory_release_cached"}));
  EXPECT_TRUE(Fails(phx_memory_release_cached(context_, device_count_), kNotFound,
                    {"phx_memory_release_cached"}));
  EXPECT_EQ(phx_memory_stats_get(context_, 0, &stats), PHX_STATUS_OK);
  expect_still_works();
}

// ---- phx_op_run: the descriptor and its handles ------------------------------------------------

TEST_F(BadInput, OpRunRejectsBadDescriptors) {
  phx_tensor a = f32_tensor(context_, 0, {4}, {1, 2, 3, 4});
  phx_tensor b = f32_tensor(context_, 0, {4}, {5, 6, 7, 8});
  const std::vector<float> untouched = {-9, -9, -9, -9};
  phx_tensor out = f32_tensor(context_, 0, {4}, untouched);
  const phx_tensor inputs[] = {a, b};
  const phx_tensor null_inputs[] = {a, nullptr};
  const phx_op_desc good = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, inputs, 2, &out, 1};
  uint64_t ticket = 0x5E15;
  auto fails = [&](const phx_op_desc& desc, const char* why) {
    EXPECT_TRUE(Fails(phx_op_run(stream_, &desc, &ticket), kInvalid, {"phx_op_run"})) << why;
  };
  EXPECT_TRUE(Fails(phx_op_run(nullptr, &good, &ticket), kInvalid, {"phx_op_run"}));
  EXPECT_TRUE(Fails(phx_op_run(stream_, nullptr, &ticket), kInvalid, {"phx_op_run"}));
  for (size_t struct_size : {size_t{0}, size_t{1}, kHugeSize}) {
    phx_op_desc desc = good;
    desc.struct_size = struct_size;
    fails(desc, "desc struct_size");
  }
  for (int bad : {99, -1, int{PHX_OP_INVALID}, int{PHX_OP_COUNT}}) {
    phx_op_desc desc = good;
    set_enum_field(desc.op, bad);
    fails(desc, "unknown op");
  }
  phx_op_desc desc = good;
  desc.inputs = nullptr;
  fails(desc, "null inputs with a count of 2");
  desc = good;
  desc.outputs = nullptr;
  fails(desc, "null outputs with a count of 1");
  desc = good;
  desc.inputs = null_inputs;
  fails(desc, "a required input is null");
  const phx_tensor null_output = nullptr;
  desc = good;
  desc.outputs = &null_output;
  fails(desc, "the output is null");

  phx_tensor dead = tensor({4});
  ASSERT_EQ(phx_tensor_destroy(dead), PHX_STATUS_OK);
  const phx_tensor dead_inputs[] = {a, dead};
  desc = good;
  desc.inputs = dead_inputs;
  fails(desc, "a destroyed input");
  desc = good;
  desc.outputs = &dead;
  fails(desc, "a destroyed output");

  phx_stream dead_stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, 0, &dead_stream), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_destroy(dead_stream), PHX_STATUS_OK);
  EXPECT_TRUE(Fails(phx_op_run(dead_stream, &good, &ticket), kInvalid, {"phx_op_run"}));

  EXPECT_EQ(ticket, 0x5E15u) << "out_ticket was written by a failed call";
  ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
  EXPECT_EQ(f32_values(out, 4), untouched) << "a failed op wrote its output";
  ASSERT_EQ(phx_op_run(stream_, &good, &ticket), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_stream_wait(stream_, ticket), PHX_STATUS_OK);
  EXPECT_EQ(f32_values(out, 4), (std::vector<float>{6, 8, 10, 12}));
}

// A tensor of context B in an op on a stream of context A.
TEST_F(BadInput, OpRunRejectsHandlesOfAnotherContext) {
  phx_context other = new_context();
  phx_tensor foreign = f32_tensor(other, 0, {4}, {1, 2, 3, 4});
  phx_tensor mine = f32_tensor(context_, 0, {4}, {1, 2, 3, 4});
  phx_tensor out = tensor({4});
  phx_tensor foreign_out = new_tensor(other, 0, PHX_DTYPE_F32, {4});
  const phx_tensor mixed[] = {mine, foreign};
  const phx_tensor own[] = {mine, mine};
  const phx_op_desc foreign_input = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, mixed, 2, &out, 1};
  const phx_op_desc foreign_output = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, own, 2,
                                      &foreign_out,        1};
  EXPECT_TRUE(Fails(phx_op_run(stream_, &foreign_input, nullptr), kInvalid, {"phx_op_run"}));
  EXPECT_TRUE(Fails(phx_op_run(stream_, &foreign_output, nullptr), kInvalid, {"phx_op_run"}));
  // And a stream of B with tensors of A.
  phx_stream other_stream = nullptr;
  ASSERT_EQ(phx_stream_create(other, 0, &other_stream), PHX_STATUS_OK);
  const phx_op_desc all_mine = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, own, 2, &out, 1};
  EXPECT_TRUE(Fails(phx_op_run(other_stream, &all_mine, nullptr), kInvalid, {"phx_op_run"}));
  EXPECT_EQ(phx_context_destroy(other), PHX_STATUS_OK);
  expect_still_works();
}

// Two devices of two plugins: the CPU and the loader's "good" test plugin (one f32 device
// that adds), so that this runs whatever the machine has.
TEST(CrossDevice, OpRunRejectsATensorOfAnotherDevice) {
  const char* paths[] = {PHX_TEST_PLUGIN_DIR "/good"};
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = paths;
  options.plugin_path_count = 1;
  phx_context context = new_context(&options);
  size_t count = 0;
  ASSERT_EQ(phx_device_count(context, &count), PHX_STATUS_OK);
  ASSERT_GE(count, 2u) << "expected the test plugin's device and the CPU";
  size_t cpu = count;
  size_t other = count;
  for (size_t i = 0; i < count; ++i) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context, i, &info), PHX_STATUS_OK);
    (std::string(info.plugin) == "cpu" ? cpu : other) = i;
  }
  ASSERT_LT(cpu, count);
  ASSERT_LT(other, count);
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context, cpu, &stream), PHX_STATUS_OK);
  phx_tensor here = f32_tensor(context, cpu, {4}, {1, 2, 3, 4});
  phx_tensor there = f32_tensor(context, other, {4}, {10, 20, 30, 40});
  phx_tensor out = f32_tensor(context, cpu, {4}, {0, 0, 0, 0});
  phx_tensor out_there = f32_tensor(context, other, {4}, {0, 0, 0, 0});
  const phx_tensor mixed[] = {here, there};
  const phx_tensor local[] = {here, here};
  const phx_op_desc foreign_input = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, mixed, 2, &out, 1};
  const phx_op_desc foreign_output = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, local, 2,
                                      &out_there,          1};
  EXPECT_TRUE(Fails(phx_op_run(stream, &foreign_input, nullptr), kInvalid, {"phx_op_run"}));
  EXPECT_TRUE(Fails(phx_op_run(stream, &foreign_output, nullptr), kInvalid, {"phx_op_run"}));
  EXPECT_EQ(f32_values(out_there, 4), (std::vector<float>{0, 0, 0, 0}));

  // Both still work: a copy across the plugins, then an op on the CPU's tensors alone.
  ASSERT_EQ(phx_tensor_copy(out, there), PHX_STATUS_OK) << phx_last_error();
  const phx_tensor sum_inputs[] = {here, out};
  phx_tensor result = new_tensor(context, cpu, PHX_DTYPE_F32, {4});
  const phx_op_desc sum = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, sum_inputs, 2, &result, 1};
  ASSERT_EQ(phx_op_run(stream, &sum, nullptr), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
  EXPECT_EQ(f32_values(result, 4), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
}

// ---- phx_op_run: every op's rules ---------------------------------------------------------------

// A tensor of a bad op: its dtype and shape, or absent (a null handle).
struct Spec {
  Spec(Shape s, phx_dtype dt = PHX_DTYPE_F32) : shape(std::move(s)), dtype(dt) {}
  static Spec absent() {
    Spec s({});
    s.is_absent = true;
    return s;
  }
  Shape shape;
  phx_dtype dtype;
  bool is_absent = false;
};

struct BadOp {
  const char* why;
  phx_op_id op;
  const void* params;
  std::vector<Spec> inputs;
  std::vector<Spec> outputs;
  std::vector<std::string> mentions;  // what the message must name besides the op
};

class BadOpRules : public BadInput {
 protected:
  // Each op must fail with INVALID_ARGUMENT, a message naming phx_op_run, the op and the
  // mentions, and leave its outputs as they were.
  void expect_rejected(const std::vector<BadOp>& cases) {
    for (const BadOp& c : cases) {
      SCOPED_TRACE(std::string(phx_op_name(c.op)) + ": " + c.why);
      std::vector<phx_tensor> inputs;
      std::vector<phx_tensor> outputs;
      for (const Spec& s : c.inputs)
        inputs.push_back(s.is_absent ? nullptr : tensor(s.shape, s.dtype));
      for (const Spec& s : c.outputs) outputs.push_back(tensor(s.shape, s.dtype));
      std::vector<std::vector<unsigned char>> outputs_before;
      for (phx_tensor t : outputs) outputs_before.push_back(fill_with_pattern(t));
      const phx_op_desc desc = {sizeof(phx_op_desc), c.op,           c.params,      inputs.data(),
                                inputs.size(),       outputs.data(), outputs.size()};
      std::vector<std::string> mentions = {"phx_op_run", phx_op_name(c.op)};
      mentions.insert(mentions.end(), c.mentions.begin(), c.mentions.end());
      uint64_t ticket = 0x5E16;
      EXPECT_TRUE(Fails(phx_op_run(stream_, &desc, &ticket), kInvalid, mentions));
      EXPECT_EQ(ticket, 0x5E16u);
      ASSERT_EQ(phx_stream_synchronize(stream_), PHX_STATUS_OK);
      for (size_t i = 0; i < outputs.size(); ++i) {
        std::vector<unsigned char> now(outputs_before[i].size());
        ASSERT_EQ(phx_tensor_download(outputs[i], 0, now.data(), now.size()), PHX_STATUS_OK);
        EXPECT_EQ(now, outputs_before[i]) << "output " << i << " was written";
      }
      for (phx_tensor t : inputs) {
        if (t) phx_tensor_destroy(t);
      }
      for (phx_tensor t : outputs) phx_tensor_destroy(t);
    }
    expect_still_works();
  }

  static std::vector<unsigned char> fill_with_pattern(phx_tensor t) {
    phx_tensor_desc desc{};
    desc.struct_size = sizeof desc;
    EXPECT_EQ(phx_tensor_describe(t, &desc), PHX_STATUS_OK);
    std::vector<unsigned char> bytes(desc.byte_size);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(0x3C + i);
    EXPECT_EQ(phx_tensor_upload(t, 0, bytes.data(), bytes.size()), PHX_STATUS_OK);
    return bytes;
  }
};

TEST_F(BadOpRules, Matmul) {
  const phx_matmul_params plain = PHX_MATMUL_PARAMS_INIT;
  phx_matmul_params transpose_a = plain;
  transpose_a.transpose_a = 1;
  phx_matmul_params bad_activation = plain;
  set_enum_field(bad_activation.activation, 99);
  phx_matmul_params size_zero = plain;
  size_zero.struct_size = 0;
  phx_matmul_params size_huge = plain;
  size_huge.struct_size = kHugeSize;
  constexpr auto f16 = PHX_DTYPE_F16;
  expect_rejected({
      {"K mismatch", PHX_OP_MATMUL, &plain, {{{3, 37}}, {{41, 2}}}, {{{3, 2}}}, {"37", "41"}},
      {"a of rank 1", PHX_OP_MATMUL, &plain, {{{37}}, {{37, 2}}}, {{{2}}}, {}},
      {"batch dims that do not broadcast",
       PHX_OP_MATMUL,
       &plain,
       {{{2, 3, 4}}, {{3, 4, 5}}},
       {{{3, 3, 5}}},
       {}},
      {"output N wrong", PHX_OP_MATMUL, &plain, {{{3, 4}}, {{4, 5}}}, {{{3, 6}}}, {}},
      {"output of a higher rank", PHX_OP_MATMUL, &plain, {{{3, 4}}, {{4, 5}}}, {{{1, 3, 5}}}, {}},
      {"transpose_a makes K 3", PHX_OP_MATMUL, &transpose_a, {{{3, 4}}, {{4, 5}}}, {{{4, 5}}}, {}},
      {"a and b dtypes differ", PHX_OP_MATMUL, &plain, {{{3, 4}}, {{4, 5}, f16}}, {{{3, 5}}}, {}},
      {"f32 inputs, f16 output", PHX_OP_MATMUL, &plain, {{{3, 4}}, {{4, 5}}}, {{{3, 5}, f16}}, {}},
      {"f16 inputs, bf16 output",
       PHX_OP_MATMUL,
       &plain,
       {{{3, 4}, f16}, {{4, 5}, f16}},
       {{{3, 5}, PHX_DTYPE_BF16}},
       {}},
      {"bias dtype is not the output's",
       PHX_OP_MATMUL,
       &plain,
       {{{3, 4}, f16}, {{4, 5}, f16}, {{5}, f16}},
       {{{3, 5}}},
       {}},
      {"bias does not broadcast",
       PHX_OP_MATMUL,
       &plain,
       {{{3, 4}}, {{4, 5}}, {{4}}},
       {{{3, 5}}},
       {}},
      {"bias would grow the output",
       PHX_OP_MATMUL,
       &plain,
       {{{3, 4}}, {{4, 5}}, {{2, 3, 5}}},
       {{{3, 5}}},
       {}},
      {"unknown activation", PHX_OP_MATMUL, &bad_activation, {{{3, 4}}, {{4, 5}}}, {{{3, 5}}}, {}},
      {"params struct_size 0", PHX_OP_MATMUL, &size_zero, {{{3, 4}}, {{4, 5}}}, {{{3, 5}}}, {}},
      {"params struct_size huge", PHX_OP_MATMUL, &size_huge, {{{3, 4}}, {{4, 5}}}, {{{3, 5}}}, {}},
      {"one input", PHX_OP_MATMUL, &plain, {{{3, 4}}}, {{{3, 5}}}, {}},
      {"four inputs", PHX_OP_MATMUL, &plain, {{{3, 4}}, {{4, 5}}, {{5}}, {{5}}}, {{{3, 5}}}, {}},
      {"no output", PHX_OP_MATMUL, &plain, {{{3, 4}}, {{4, 5}}}, {}, {}},
      {"two outputs", PHX_OP_MATMUL, &plain, {{{3, 4}}, {{4, 5}}}, {{{3, 5}}, {{3, 5}}}, {}},
      {"a absent", PHX_OP_MATMUL, &plain, {Spec::absent(), {{4, 5}}}, {{{3, 5}}}, {}},
  });
}

TEST_F(BadOpRules, ElementwiseBinary) {
  std::vector<BadOp> cases;
  for (phx_op_id op : {PHX_OP_ADD, PHX_OP_SUB, PHX_OP_MUL, PHX_OP_DIV}) {
    cases.push_back(
        {"shapes do not broadcast", op, nullptr, {{{3, 37}}, {{41}}}, {{{3, 41}}}, {"37", "41"}});
    cases.push_back(
        {"output bigger than the broadcast", op, nullptr, {{{3, 4}}, {{4}}}, {{{2, 3, 4}}}, {}});
    cases.push_back({"output transposed", op, nullptr, {{{3, 4}}, {{4}}}, {{{4, 3}}}, {}});
    cases.push_back(
        {"input dtypes differ", op, nullptr, {{{4}}, {{4}, PHX_DTYPE_F16}}, {{{4}}}, {}});
    cases.push_back(
        {"output dtype differs", op, nullptr, {{{4}}, {{4}}}, {{{4}, PHX_DTYPE_I32}}, {}});
    cases.push_back({"one input", op, nullptr, {{{4}}}, {{{4}}}, {}});
    cases.push_back({"three inputs", op, nullptr, {{{4}}, {{4}}, {{4}}}, {{{4}}}, {}});
    cases.push_back({"two outputs", op, nullptr, {{{4}}, {{4}}}, {{{4}}, {{4}}}, {}});
    cases.push_back({"b absent", op, nullptr, {{{4}}, Spec::absent()}, {{{4}}}, {}});
  }
  expect_rejected(cases);
}

TEST_F(BadOpRules, ElementwiseUnary) {
  std::vector<BadOp> cases;
  for (phx_op_id op : {PHX_OP_RELU, PHX_OP_GELU, PHX_OP_SILU}) {
    cases.push_back({"output shape differs", op, nullptr, {{{3, 4}}}, {{{4, 3}}}, {}});
    cases.push_back({"output dtype differs", op, nullptr, {{{4}}}, {{{4}, PHX_DTYPE_F16}}, {}});
    cases.push_back({"two inputs", op, nullptr, {{{4}}, {{4}}}, {{{4}}}, {}});
    cases.push_back({"no input", op, nullptr, {}, {{{4}}}, {}});
  }
  expect_rejected(cases);
}

TEST_F(BadOpRules, Softmax) {
  const phx_softmax_params axis2 = {sizeof(phx_softmax_params), 2};
  const phx_softmax_params axis_minus3 = {sizeof(phx_softmax_params), -3};
  const phx_softmax_params size_zero = {0, -1};
  const phx_softmax_params last = PHX_SOFTMAX_PARAMS_INIT;
  expect_rejected({
      {"axis 2 of rank 2", PHX_OP_SOFTMAX, &axis2, {{{3, 4}}}, {{{3, 4}}}, {}},
      {"axis -3 of rank 2", PHX_OP_SOFTMAX, &axis_minus3, {{{3, 4}}}, {{{3, 4}}}, {}},
      {"params struct_size 0", PHX_OP_SOFTMAX, &size_zero, {{{3, 4}}}, {{{3, 4}}}, {}},
      {"output shape differs", PHX_OP_SOFTMAX, &last, {{{3, 4}}}, {{{4, 3}}}, {}},
  });
}

TEST_F(BadOpRules, Norms) {
  const phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  const phx_norm_params size_zero = {0, 1e-5f};
  std::vector<BadOp> cases;
  for (phx_op_id op : {PHX_OP_LAYER_NORM, PHX_OP_RMS_NORM}) {
    cases.push_back(
        {"gamma of the wrong size", op, &norm, {{{3, 37}}, {{41}}}, {{{3, 37}}}, {"37", "41"}});
    cases.push_back(
        {"gamma of another dtype", op, &norm, {{{3, 4}}, {{4}, PHX_DTYPE_F16}}, {{{3, 4}}}, {}});
    cases.push_back({"output shape differs", op, &norm, {{{3, 4}}}, {{{4, 3}}}, {}});
    cases.push_back({"params struct_size 0", op, &size_zero, {{{3, 4}}}, {{{3, 4}}}, {}});
    cases.push_back({"x absent", op, &norm, {Spec::absent()}, {{{3, 4}}}, {}});
  }
  cases.push_back({"beta of the wrong size",
                   PHX_OP_LAYER_NORM,
                   &norm,
                   {{{3, 4}}, Spec::absent(), {{5}}},
                   {{{3, 4}}},
                   {}});
  cases.push_back(
      {"four inputs", PHX_OP_LAYER_NORM, &norm, {{{3, 4}}, {{4}}, {{4}}, {{4}}}, {{{3, 4}}}, {}});
  cases.push_back(
      {"rms_norm has no beta", PHX_OP_RMS_NORM, &norm, {{{3, 4}}, {{4}}, {{4}}}, {{{3, 4}}}, {}});
  expect_rejected(cases);
}

TEST_F(BadOpRules, Transpose) {
  const phx_transpose_params repeated = {sizeof(phx_transpose_params), {0, 0}};
  const phx_transpose_params out_of_range = {sizeof(phx_transpose_params), {0, 2}};
  const phx_transpose_params swap = {sizeof(phx_transpose_params), {1, 0}};
  const phx_transpose_params size_zero = {0, {1, 0}};
  expect_rejected({
      {"perm repeats 0", PHX_OP_TRANSPOSE, &repeated, {{{3, 4}}}, {{{3, 3}}}, {}},
      {"perm names dim 2 of rank 2", PHX_OP_TRANSPOSE, &out_of_range, {{{3, 4}}}, {{{3, 4}}}, {}},
      {"output shape not permuted", PHX_OP_TRANSPOSE, &swap, {{{3, 4}}}, {{{3, 4}}}, {}},
      {"output dtype differs", PHX_OP_TRANSPOSE, &swap, {{{3, 4}}}, {{{4, 3}, PHX_DTYPE_I32}}, {}},
      {"params struct_size 0", PHX_OP_TRANSPOSE, &size_zero, {{{3, 4}}}, {{{4, 3}}}, {}},
  });
}

TEST_F(BadOpRules, Reductions) {
  const phx_reduce_params dim2_of_rank2 = {sizeof(phx_reduce_params), 0b100, 0};
  const phx_reduce_params dim0 = {sizeof(phx_reduce_params), 0b1, 0};
  const phx_reduce_params dim0_kept = {sizeof(phx_reduce_params), 0b1, 1};
  const phx_reduce_params size_zero = {0, 0b1, 0};
  std::vector<BadOp> cases;
  for (phx_op_id op : {PHX_OP_REDUCE_SUM, PHX_OP_REDUCE_MAX}) {
    cases.push_back({"mask names dim 2 of rank 2", op, &dim2_of_rank2, {{{3, 4}}}, {{{3, 4}}}, {}});
    cases.push_back({"output keeps a dim", op, &dim0, {{{3, 4}}}, {{{1, 4}}}, {}});
    cases.push_back({"output reduced the wrong dim", op, &dim0, {{{3, 4}}}, {{{3}}}, {}});
    cases.push_back({"output drops a kept dim", op, &dim0_kept, {{{3, 4}}}, {{{4}}}, {}});
    cases.push_back({"output dtype differs", op, &dim0, {{{3, 4}}}, {{{4}, PHX_DTYPE_I32}}, {}});
    cases.push_back({"params struct_size 0", op, &size_zero, {{{3, 4}}}, {{{4}}}, {}});
  }
  expect_rejected(cases);
}

TEST_F(BadOpRules, OpsOfApi03) {
  const phx_elementwise_params elementwise_size_zero = {0, 0.5f, 1.0f};
  const phx_elementwise_params nan_alpha = PHX_ELEMENTWISE_PARAMS_INIT(NAN, 1.0f);
  const phx_argmax_params axis2 = {sizeof(phx_argmax_params), 2, 1, 0};
  const phx_argmax_params axis_minus3 = {sizeof(phx_argmax_params), -3, 1, 0};
  const phx_argmax_params argmax_size_zero = {0, 0, 1, 0};
  const phx_argmax_params first_axis = PHX_ARGMAX_PARAMS_INIT;
  const phx_softmax_params softmax_axis2 = {sizeof(phx_softmax_params), 2};
  const phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  const phx_dtype u8 = PHX_DTYPE_U8, i32 = PHX_DTYPE_I32;
  const Spec x{{3, 4}}, c{{4}};
  expect_rejected({
      {"params struct_size 0",
       PHX_OP_LEAKY_RELU,
       &elementwise_size_zero,
       {x},
       {x},
       {"struct_size"}},
      {"alpha NaN", PHX_OP_CLIP, &nan_alpha, {x}, {x}, {"NaN"}},
      {"argmax axis 2 of rank 2", PHX_OP_ARGMAX, &axis2, {x}, {{{3, 4}, i32}}, {"axis 2"}},
      {"argmax axis -3 of rank 2", PHX_OP_ARGMAX, &axis_minus3, {x}, {{{3, 4}, i32}}, {"axis -3"}},
      {"argmax struct_size 0", PHX_OP_ARGMAX, &argmax_size_zero, {x}, {{{1, 4}, i32}}, {}},
      {"argmax output f32", PHX_OP_ARGMAX, &first_axis, {x}, {{{1, 4}}}, {"i32"}},
      {"argmax output drops the kept axis", PHX_OP_ARGMAX, &first_axis, {x}, {{{4}, i32}}, {}},
      {"comparison output f32", PHX_OP_LESS, nullptr, {x, x}, {x}, {"u8"}},
      {"comparison of f32 and i32",
       PHX_OP_EQUAL,
       nullptr,
       {x, {{3, 4}, i32}},
       {{{3, 4}, u8}},
       {"a and b"}},
      {"where's cond f32", PHX_OP_WHERE, nullptr, {x, x, x}, {x}, {"u8"}},
      {"where's a and b differ",
       PHX_OP_WHERE,
       nullptr,
       {{{3, 4}, u8}, x, {{3, 4}, i32}},
       {x},
       {"a and b"}},
      {"where's shapes",
       PHX_OP_WHERE,
       nullptr,
       {{{3}, u8}, {{4}}, {{4}}},
       {{{4}}},
       {"do not broadcast"}},
      {"prelu slope wider than x", PHX_OP_PRELU, nullptr, {c, x}, {x}, {"slope"}},
      {"prelu slope of another size", PHX_OP_PRELU, nullptr, {x, {{5}}}, {x}, {"slope"}},
      {"not of f32", PHX_OP_NOT, nullptr, {x}, {x}, {"u8"}},
      {"log_softmax axis 2 of rank 2", PHX_OP_LOG_SOFTMAX, &softmax_axis2, {x}, {x}, {"axis 2"}},
      {"batch_norm of rank 1", PHX_OP_BATCH_NORM, &norm, {c, c, c, c, c}, {c}, {"rank >= 2"}},
      {"batch_norm mean of another size",
       PHX_OP_BATCH_NORM,
       &norm,
       {x, c, c, {{3}}, c},
       {x},
       {"mean"}},
      {"batch_norm without var", PHX_OP_BATCH_NORM, &norm, {x, c, c, c}, {x}, {"5 inputs"}},
      {"instance_norm of rank 2", PHX_OP_INSTANCE_NORM, &norm, {x, c, c}, {x}, {"rank >= 3"}},
      {"instance_norm scale of another size",
       PHX_OP_INSTANCE_NORM,
       &norm,
       {{{2, 3, 5}}, c, {{3}}},
       {{{2, 3, 5}}},
       {"scale"}},
      {"reduce_mean of i32",
       PHX_OP_REDUCE_MEAN,
       nullptr,
       {{{3, 4}, i32}},
       {{{}, i32}},
       {"defined for"}},
      {"reduce_prod of u8",
       PHX_OP_REDUCE_PROD,
       nullptr,
       {{{3, 4}, u8}},
       {{{}, u8}},
       {"defined for"}},
      {"sigmoid of i32",
       PHX_OP_SIGMOID,
       nullptr,
       {{{3, 4}, i32}},
       {{{3, 4}, i32}},
       {"defined for"}},
      {"neg of u8", PHX_OP_NEG, nullptr, {{{3, 4}, u8}}, {{{3, 4}, u8}}, {"defined for"}},
  });
}

TEST_F(BadOpRules, Cast) {
  expect_rejected({
      {"shapes differ", PHX_OP_CAST, nullptr, {{{3, 4}}}, {{{4, 3}, PHX_DTYPE_I32}}, {}},
      {"element counts differ", PHX_OP_CAST, nullptr, {{{12}}}, {{{13}, PHX_DTYPE_F16}}, {}},
      {"two inputs", PHX_OP_CAST, nullptr, {{{4}}, {{4}}}, {{{4}, PHX_DTYPE_F16}}, {}},
  });
}

TEST_F(BadOpRules, Conv2d) {
  const phx_conv2d_params plain = PHX_CONV2D_PARAMS_INIT;
  phx_conv2d_params groups2 = plain;
  groups2.groups = 2;
  phx_conv2d_params groups4 = plain;
  groups4.groups = 4;
  phx_conv2d_params groups0 = plain;
  groups0.groups = 0;
  phx_conv2d_params stride0 = plain;
  stride0.stride[0] = 0;
  phx_conv2d_params dilation0 = plain;
  dilation0.dilation[1] = 0;
  phx_conv2d_params bad_layout = plain;
  set_enum_field(bad_layout.layout, 99);
  phx_conv2d_params bad_activation = plain;
  set_enum_field(bad_activation.activation, 99);
  phx_conv2d_params size_zero = plain;
  size_zero.struct_size = 0;
  phx_conv2d_params nhwc = plain;
  nhwc.layout = PHX_LAYOUT_NHWC;
  // Good shapes, NCHW: x [1, 4, 5, 5], weight [6, 4, 3, 3], out [1, 6, 3, 3].
  expect_rejected({
      {"groups 2 do not divide 3 channels",
       PHX_OP_CONV2D,
       &groups2,
       {{{1, 3, 5, 5}}, {{6, 1, 3, 3}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"groups 4 do not divide 6 output channels",
       PHX_OP_CONV2D,
       &groups4,
       {{{1, 4, 5, 5}}, {{6, 1, 3, 3}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"groups 0", PHX_OP_CONV2D, &groups0, {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}}, {{{1, 6, 3, 3}}}, {}},
      {"output height 0",
       PHX_OP_CONV2D,
       &plain,
       {{{1, 4, 2, 5}}, {{6, 4, 3, 3}}},
       {{{1, 6, 1, 3}}},
       {}},
      {"weight C_in / groups is not x's",
       PHX_OP_CONV2D,
       &plain,
       {{{1, 4, 5, 5}}, {{6, 3, 3, 3}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"bias of the wrong size",
       PHX_OP_CONV2D,
       &plain,
       {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}, {{5}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"output shape wrong",
       PHX_OP_CONV2D,
       &plain,
       {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}},
       {{{1, 6, 5, 5}}},
       {}},
      {"NHWC weight given as NCHW",
       PHX_OP_CONV2D,
       &nhwc,
       {{{1, 5, 5, 4}}, {{6, 4, 3, 3}}},
       {{{1, 3, 3, 6}}},
       {}},
      {"stride 0", PHX_OP_CONV2D, &stride0, {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}}, {{{1, 6, 3, 3}}}, {}},
      {"dilation 0",
       PHX_OP_CONV2D,
       &dilation0,
       {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"unknown layout",
       PHX_OP_CONV2D,
       &bad_layout,
       {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"unknown activation",
       PHX_OP_CONV2D,
       &bad_activation,
       {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"params struct_size 0",
       PHX_OP_CONV2D,
       &size_zero,
       {{{1, 4, 5, 5}}, {{6, 4, 3, 3}}},
       {{{1, 6, 3, 3}}},
       {}},
      {"x of rank 3", PHX_OP_CONV2D, &plain, {{{4, 5, 5}}, {{6, 4, 3, 3}}}, {{{6, 3, 3}}}, {}},
      {"weight absent",
       PHX_OP_CONV2D,
       &plain,
       {{{1, 4, 5, 5}}, Spec::absent()},
       {{{1, 6, 3, 3}}},
       {}},
  });
}

// A dtype an op's rules exclude (matmul, div, gelu, silu, softmax, norms and conv2d are
// for floats; relu for floats and signed integers) is a broken rule, which the core
// checks before any plugin sees the op: INVALID_ARGUMENT, not UNSUPPORTED, which means
// "valid, but this device does not implement it".
TEST_F(BadOpRules, DtypesTheRulesForbid) {
  constexpr auto i32 = PHX_DTYPE_I32;
  const phx_matmul_params matmul = PHX_MATMUL_PARAMS_INIT;
  const phx_softmax_params softmax = PHX_SOFTMAX_PARAMS_INIT;
  const phx_norm_params norm = PHX_NORM_PARAMS_INIT;
  const phx_conv2d_params conv = PHX_CONV2D_PARAMS_INIT;
  expect_rejected({
      {"i32 inputs", PHX_OP_MATMUL, &matmul, {{{3, 4}, i32}, {{4, 5}, i32}}, {{{3, 5}, i32}}, {}},
      {"i32", PHX_OP_DIV, nullptr, {{{4}, i32}, {{4}, i32}}, {{{4}, i32}}, {}},
      {"i32", PHX_OP_GELU, nullptr, {{{4}, i32}}, {{{4}, i32}}, {}},
      {"i8", PHX_OP_SILU, nullptr, {{{4}, PHX_DTYPE_I8}}, {{{4}, PHX_DTYPE_I8}}, {}},
      {"u8", PHX_OP_RELU, nullptr, {{{4}, PHX_DTYPE_U8}}, {{{4}, PHX_DTYPE_U8}}, {}},
      {"i32", PHX_OP_SOFTMAX, &softmax, {{{3, 4}, i32}}, {{{3, 4}, i32}}, {}},
      {"i32", PHX_OP_LAYER_NORM, &norm, {{{3, 4}, i32}}, {{{3, 4}, i32}}, {}},
      {"i32", PHX_OP_RMS_NORM, &norm, {{{3, 4}, i32}}, {{{3, 4}, i32}}, {}},
      {"i32",
       PHX_OP_CONV2D,
       &conv,
       {{{1, 4, 5, 5}, i32}, {{6, 4, 3, 3}, i32}},
       {{{1, 6, 3, 3}, i32}},
       {}},
  });
}

// ---- the layout, pooling and transposed-convolution ops (API 0.3) ----

TEST_F(BadOpRules, ReshapeAndExpand) {
  const phx_reshape_params to_5x3 = {sizeof(phx_reshape_params), 2, {5, 3}};
  const phx_reshape_params two_inferred = {sizeof(phx_reshape_params), 2, {-1, -1}};
  const phx_reshape_params minus_two = {sizeof(phx_reshape_params), 2, {-2, 6}};
  const phx_reshape_params zero_past_rank = {sizeof(phx_reshape_params), 3, {2, 6, 0}};
  const phx_reshape_params not_divisible = {sizeof(phx_reshape_params), 2, {5, -1}};
  const phx_reshape_params rank_9 = {sizeof(phx_reshape_params), PHX_MAX_RANK + 1, {}};
  const phx_reshape_params size_zero = {0, 2, {3, 4}};
  const phx_reshape_params expand_zero = {sizeof(phx_reshape_params), 2, {0, 4}};
  const phx_reshape_params expand_to_5 = {sizeof(phx_reshape_params), 2, {3, 5}};
  const phx_reshape_params same = {sizeof(phx_reshape_params), 2, {3, 4}};
  expect_rejected({
      {"count mismatch", PHX_OP_RESHAPE, &to_5x3, {{{3, 4}}}, {{{5, 3}}}, {"5x3", "12"}},
      {"two -1", PHX_OP_RESHAPE, &two_inferred, {{{3, 4}}}, {{{3, 4}}}, {"more than one -1"}},
      {"an entry below -1", PHX_OP_RESHAPE, &minus_two, {{{3, 4}}}, {{{2, 6}}}, {"-2"}},
      {"0 past x's rank", PHX_OP_RESHAPE, &zero_past_rank, {{{3, 4}}}, {{{2, 6, 1}}}, {"0"}},
      {"-1 not inferable", PHX_OP_RESHAPE, &not_divisible, {{{3, 4}}}, {{{5, 2}}}, {"infer"}},
      {"rank past the maximum", PHX_OP_RESHAPE, &rank_9, {{{3, 4}}}, {{{12}}}, {"PHX_MAX_RANK"}},
      {"params null", PHX_OP_RESHAPE, nullptr, {{{3, 4}}}, {{{12}}}, {"phx_reshape_params"}},
      {"params struct_size 0", PHX_OP_RESHAPE, &size_zero, {{{3, 4}}}, {{{3, 4}}}, {}},
      {"output dtype differs", PHX_OP_RESHAPE, &same, {{{3, 4}}}, {{{3, 4}, PHX_DTYPE_I32}}, {}},
      {"output of another shape", PHX_OP_RESHAPE, &same, {{{3, 4}}}, {{{4, 3}}}, {"3x4"}},
      {"expand to a 0", PHX_OP_EXPAND, &expand_zero, {{{3, 4}}}, {{{3, 4}}}, {">= 1"}},
      {"expand does not broadcast",
       PHX_OP_EXPAND,
       &expand_to_5,
       {{{3, 4}}},
       {{{3, 5}}},
       {"do not broadcast"}},
      {"expand params null",
       PHX_OP_EXPAND,
       nullptr,
       {{{3, 4}}},
       {{{3, 4}}},
       {"phx_reshape_params"}},
  });
}

TEST_F(BadOpRules, ConcatAndGather) {
  const phx_axis_params axis1 = {sizeof(phx_axis_params), 1};
  const phx_axis_params axis2 = {sizeof(phx_axis_params), 2};
  const phx_axis_params axis_minus3 = {sizeof(phx_axis_params), -3};
  const phx_axis_params size_huge = {kHugeSize, 0};
  constexpr auto i32 = PHX_DTYPE_I32;
  expect_rejected({
      {"axis 2 of rank 2", PHX_OP_CONCAT, &axis2, {{{3, 4}}, {{3, 4}}}, {{{3, 8}}}, {"axis 2"}},
      {"axis -3 of rank 2", PHX_OP_CONCAT, &axis_minus3, {{{3, 4}}, {{3, 4}}}, {{{6, 4}}}, {"-3"}},
      {"other dims differ", PHX_OP_CONCAT, &axis1, {{{3, 4}}, {{2, 4}}}, {{{3, 8}}}, {"input 1"}},
      {"ranks differ", PHX_OP_CONCAT, &axis1, {{{3, 4}}, {{3, 4, 1}}}, {{{3, 8}}}, {}},
      {"dtypes differ", PHX_OP_CONCAT, &axis1, {{{3, 4}}, {{3, 4}, i32}}, {{{3, 8}}}, {}},
      {"a gap",
       PHX_OP_CONCAT,
       &axis1,
       {{{3, 4}}, Spec::absent(), {{3, 4}}},
       {{{3, 8}}},
       {"input 1", "gap"}},
      {"output too short", PHX_OP_CONCAT, &axis1, {{{3, 4}}, {{3, 4}}}, {{{3, 7}}}, {"3x8"}},
      {"a scalar", PHX_OP_CONCAT, nullptr, {Spec(Shape{}), Spec(Shape{})}, {{{2}}}, {"rank"}},
      {"params struct_size huge", PHX_OP_CONCAT, &size_huge, {{{3, 4}}}, {{{3, 4}}}, {}},
      {"gather axis 2 of rank 2",
       PHX_OP_GATHER,
       &axis2,
       {{{3, 4}}, {{2}, i32}},
       {{{3, 2}}},
       {"axis 2"}},
      {"f32 indices", PHX_OP_GATHER, nullptr, {{{3, 4}}, {{2}}}, {{{2, 4}}}, {"indices"}},
      {"indices absent", PHX_OP_GATHER, nullptr, {{{3, 4}}, Spec::absent()}, {{{2, 4}}}, {}},
      {"output rank past the maximum",
       PHX_OP_GATHER,
       nullptr,
       {{{3, 4}}, {{1, 1, 1, 1, 1, 1, 1, 1}, i32}},
       {{{1, 1, 1, 1, 1, 1, 1, 1}}},
       {"PHX_MAX_RANK"}},
      {"gather output of another dtype",
       PHX_OP_GATHER,
       nullptr,
       {{{3, 4}}, {{2}, i32}},
       {{{2, 4}, i32}},
       {}},
  });
}

TEST_F(BadOpRules, SliceTileAndPad) {
  phx_slice_params empty = PHX_SLICE_PARAMS_INIT;
  empty.starts[1] = 3;
  empty.ends[1] = 1;
  empty.steps[1] = 1;
  phx_tile_params zero_repeat = PHX_TILE_PARAMS_INIT;
  zero_repeat.repeats[1] = 0;
  phx_pad_params reflect_too_far = PHX_PAD_PARAMS_INIT;
  reflect_too_far.mode = PHX_PAD_REFLECT;
  reflect_too_far.end[1] = 4;
  phx_pad_params bad_mode = PHX_PAD_PARAMS_INIT;
  set_enum_field(bad_mode.mode, 7);
  expect_rejected({
      {"an empty slice", PHX_OP_SLICE, &empty, {{{3, 4}}}, {{{3, 1}}}, {"dimension 1", "empty"}},
      {"slice output of another shape", PHX_OP_SLICE, nullptr, {{{3, 4}}}, {{{3, 3}}}, {}},
      {"a repeat of 0", PHX_OP_TILE, &zero_repeat, {{{3, 4}}}, {{{3, 4}}}, {"repeats[1]"}},
      {"tile output of another shape", PHX_OP_TILE, nullptr, {{{3, 4}}}, {{{3, 8}}}, {}},
      {"a reflection past the dimension",
       PHX_OP_PAD,
       &reflect_too_far,
       {{{3, 4}}},
       {{{3, 8}}},
       {"dimension 1"}},
      {"unknown pad mode", PHX_OP_PAD, &bad_mode, {{{3, 4}}}, {{{3, 4}}}, {"mode 7"}},
  });
}

TEST_F(BadOpRules, Pooling) {
  phx_pool_params p = PHX_POOL_PARAMS_INIT;
  p.kernel[0] = p.kernel[1] = 2;
  phx_pool_params no_kernel = PHX_POOL_PARAMS_INIT;
  phx_pool_params absurd_stride = p;
  absurd_stride.stride[1] = 1u << 31;
  phx_pool_params too_big = p;
  too_big.kernel[0] = 9;
  std::vector<BadOp> cases;
  for (phx_op_id op : {PHX_OP_MAX_POOL, PHX_OP_AVG_POOL}) {
    cases.push_back({"rank 2", op, &p, {{{3, 4}}}, {{{3, 4}}}, {"rank 3 to 5"}});
    cases.push_back({"rank 6", op, &p, {{{1, 1, 2, 2, 2, 2}}}, {{{1, 1, 1, 1, 1, 1}}}, {}});
    cases.push_back({"no kernel",
                     op,
                     &no_kernel,
                     {{{1, 2, 4, 4}}},
                     {{{1, 2, 4, 4}}},
                     {"kernel[0]", "required"}});
    cases.push_back({"null params", op, nullptr, {{{1, 2, 4, 4}}}, {{{1, 2, 4, 4}}}, {"kernel"}});
    cases.push_back({"an absurd stride",
                     op,
                     &absurd_stride,
                     {{{1, 2, 4, 4}}},
                     {{{1, 2, 3, 1}}},
                     {"stride", "[1]"}});
    cases.push_back(
        {"a window past x", op, &too_big, {{{1, 2, 4, 4}}}, {{{1, 2, 1, 3}}}, {"empty"}});
    cases.push_back(
        {"output of another shape", op, &p, {{{1, 2, 4, 4}}}, {{{1, 2, 2, 2}}}, {"1x2x3x3"}});
  }
  cases.push_back({"avg_pool of i32",
                   PHX_OP_AVG_POOL,
                   &p,
                   {{{1, 2, 4, 4}, PHX_DTYPE_I32}},
                   {{{1, 2, 3, 3}, PHX_DTYPE_I32}},
                   {}});
  expect_rejected(cases);
}

TEST_F(BadOpRules, ConvTranspose2d) {
  const phx_conv_transpose2d_params plain = PHX_CONV_TRANSPOSE2D_PARAMS_INIT;
  phx_conv_transpose2d_params groups3 = plain;
  groups3.groups = 3;
  phx_conv_transpose2d_params absurd_output_padding = plain;
  absurd_output_padding.output_padding[0] = 1u << 31;
  phx_conv_transpose2d_params stride0 = plain;
  stride0.stride[1] = 0;
  phx_conv_transpose2d_params padded_away = plain;
  padded_away.padding[0] = padded_away.padding[1] = 2;
  expect_rejected({
      {"x of rank 3",
       PHX_OP_CONV_TRANSPOSE2D,
       &plain,
       {{{2, 3, 3}}, {{2, 2, 2, 2}}},
       {{{2, 4, 4}}},
       {"rank 4"}},
      {"weight's C_in differs",
       PHX_OP_CONV_TRANSPOSE2D,
       &plain,
       {{{1, 2, 3, 3}}, {{3, 2, 2, 2}}},
       {{{1, 2, 4, 4}}},
       {"C_in 2"}},
      {"groups do not divide C_in",
       PHX_OP_CONV_TRANSPOSE2D,
       &groups3,
       {{{1, 2, 3, 3}}, {{2, 2, 2, 2}}},
       {{{1, 6, 4, 4}}},
       {"groups 3"}},
      {"an absurd output_padding",
       PHX_OP_CONV_TRANSPOSE2D,
       &absurd_output_padding,
       {{{1, 2, 3, 3}}, {{2, 2, 2, 2}}},
       {{{1, 2, 5, 4}}},
       {"output_padding"}},
      {"stride 0",
       PHX_OP_CONV_TRANSPOSE2D,
       &stride0,
       {{{1, 2, 3, 3}}, {{2, 2, 2, 2}}},
       {{{1, 2, 4, 4}}},
       {"stride"}},
      {"padding takes the whole output",
       PHX_OP_CONV_TRANSPOSE2D,
       &padded_away,
       {{{1, 2, 1, 3}}, {{2, 2, 2, 2}}},
       {{{1, 2, 1, 4}}},
       {"empty"}},
      {"bias of the wrong size",
       PHX_OP_CONV_TRANSPOSE2D,
       &plain,
       {{{1, 2, 3, 3}}, {{2, 2, 2, 2}}, {{3}}},
       {{{1, 2, 4, 4}}},
       {"bias"}},
      {"output of another shape",
       PHX_OP_CONV_TRANSPOSE2D,
       &plain,
       {{{1, 2, 3, 3}}, {{2, 2, 2, 2}}},
       {{{1, 2, 3, 3}}},
       {"1x2x4x4"}},
      {"i8",
       PHX_OP_CONV_TRANSPOSE2D,
       &plain,
       {{{1, 2, 3, 3}, PHX_DTYPE_I8}, {{2, 2, 2, 2}, PHX_DTYPE_I8}},
       {{{1, 2, 4, 4}, PHX_DTYPE_I8}},
       {}},
  });
}

TEST_F(BadOpRules, Resize) {
  const phx_resize_params plain = {sizeof(phx_resize_params),
                                   PHX_RESIZE_LINEAR,
                                   PHX_RESIZE_HALF_PIXEL,
                                   PHX_RESIZE_ROUND_PREFER_FLOOR,
                                   2,
                                   {6, 8},
                                   {}};
  auto with = [&](auto change) {
    phx_resize_params p = plain;
    change(p);
    return p;
  };
  const phx_resize_params mode_7 = with([](auto& p) { p.mode = static_cast<phx_resize_mode>(7); });
  const phx_resize_params coordinates_4 =
      with([](auto& p) { p.coordinates = static_cast<phx_resize_coordinates>(4); });
  const phx_resize_params nearest_minus_1 =
      with([](auto& p) { p.nearest = static_cast<phx_resize_nearest>(-1); });
  const phx_resize_params rank_3 = with([](auto& p) {
    p.rank = 3;
    p.shape[2] = 2;
  });
  const phx_resize_params rank_9 = with([](auto& p) { p.rank = PHX_MAX_RANK + 1; });
  const phx_resize_params dimension_0 = with([](auto& p) { p.shape[1] = 0; });
  const phx_resize_params negative_scale = with([](auto& p) { p.scales[0] = -2.0f; });
  const phx_resize_params nan_scale = with([](auto& p) { p.scales[1] = NAN; });
  const phx_resize_params infinite_scale = with([](auto& p) { p.scales[1] = INFINITY; });
  const phx_resize_params huge = with([](auto& p) { p.shape[0] = p.shape[1] = int64_t{1} << 40; });
  expect_rejected({
      {"params null", PHX_OP_RESIZE, nullptr, {{{3, 4}}}, {{{6, 8}}}, {"phx_resize_params"}},
      {"unknown mode", PHX_OP_RESIZE, &mode_7, {{{3, 4}}}, {{{6, 8}}}, {"mode 7"}},
      {"unknown coordinates",
       PHX_OP_RESIZE,
       &coordinates_4,
       {{{3, 4}}},
       {{{6, 8}}},
       {"coordinates 4"}},
      {"unknown rounding", PHX_OP_RESIZE, &nearest_minus_1, {{{3, 4}}}, {{{6, 8}}}, {"-1"}},
      {"rank not x's", PHX_OP_RESIZE, &rank_3, {{{3, 4}}}, {{{6, 8, 2}}}, {"rank 3", "3x4"}},
      {"rank past the maximum", PHX_OP_RESIZE, &rank_9, {{{3, 4}}}, {{{6, 8}}}, {"PHX_MAX_RANK"}},
      {"a dimension 0", PHX_OP_RESIZE, &dimension_0, {{{3, 4}}}, {{{6, 8}}}, {"shape[1]", ">= 1"}},
      {"a negative scale", PHX_OP_RESIZE, &negative_scale, {{{3, 4}}}, {{{6, 8}}}, {"scales[0]"}},
      {"a NaN scale", PHX_OP_RESIZE, &nan_scale, {{{3, 4}}}, {{{6, 8}}}, {"scales[1]"}},
      {"an infinite scale", PHX_OP_RESIZE, &infinite_scale, {{{3, 4}}}, {{{6, 8}}}, {"scales[1]"}},
      {"an output too large", PHX_OP_RESIZE, &huge, {{{3, 4}}}, {{{6, 8}}}, {"too large"}},
      {"output of another shape", PHX_OP_RESIZE, &plain, {{{3, 4}}}, {{{8, 6}}}, {"6x8"}},
      {"output dtype differs", PHX_OP_RESIZE, &plain, {{{3, 4}}}, {{{6, 8}, PHX_DTYPE_F16}}, {}},
      {"i32", PHX_OP_RESIZE, &plain, {{{3, 4}, PHX_DTYPE_I32}}, {{{6, 8}, PHX_DTYPE_I32}}, {}},
  });
}

}  // namespace
