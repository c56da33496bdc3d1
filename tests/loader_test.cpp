// The plugin loader against real plugins that misbehave (tests/plugins/): each case
// lives in a folder of its own under PHX_TEST_PLUGIN_DIR; a test searches the folders it
// names, usually the bad case first and then "good", to prove that one broken plugin
// is recorded with its reason and never hides the others.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <phynexus/plugin.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

std::string case_dir(const std::string& name) {
  return std::string(PHX_TEST_PLUGIN_DIR) + "/" + name;
}

std::string case_file(const std::string& folder, const std::string& test_case) {
  return case_dir(folder) + "/phx_test_" + test_case + ".so";
}

// A copy of a phx_plugin_info whose strings outlive the context.
struct PluginRecord {
  std::string name;
  std::string version;
  std::string path;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  phx_plugin_state state = PHX_PLUGIN_LOADED;
  phx_plugin_stage stage = PHX_PLUGIN_STAGE_FOUND;
  std::string reason;
  uint32_t device_count = 0;
};

std::ostream& operator<<(std::ostream& os, const PluginRecord& r) {
  return os << "{" << r.path << ": name '" << r.name << "' version '" << r.version << "' abi "
            << r.abi_major << "." << r.abi_minor << " state " << r.state << " stage " << r.stage
            << " devices " << r.device_count << " reason '" << r.reason << "'}";
}

struct DeviceRecord {
  std::string plugin;
  std::string name;
  phx_device_type type = PHX_DEVICE_CPU;
  uint32_t index = 0;
};

// A context that searches the given folders, and what it found.
class Context {
 public:
  explicit Context(std::vector<std::string> folders, bool default_search = false)
      : folders_(std::move(folders)) {
    std::vector<const char*> paths;
    for (const std::string& f : folders_) paths.push_back(f.c_str());
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths.empty() ? nullptr : paths.data();
    options.plugin_path_count = paths.size();
    options.use_default_search_path = default_search ? 1 : 0;
    options.log_level = PHX_LOG_OFF;
    status_ = phx_context_create(&options, &context_);
    if (status_ != PHX_STATUS_OK) {
      context_ = nullptr;
      error_ = phx_last_error();
    }
  }
  ~Context() {
    if (context_ != nullptr) phx_context_destroy(context_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  bool ok() const { return context_ != nullptr; }
  std::string error() const { return std::string(phx_status_name(status_)) + ": " + error_; }
  phx_context get() const { return context_; }

  std::vector<PluginRecord> plugins() const {
    std::vector<PluginRecord> records;
    size_t count = 0;
    EXPECT_EQ(phx_plugin_count(context_, &count), PHX_STATUS_OK) << phx_last_error();
    for (size_t i = 0; i < count; ++i) {
      phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
      EXPECT_EQ(phx_plugin_get(context_, i, &info), PHX_STATUS_OK) << phx_last_error();
      PluginRecord r;
      r.name = info.name != nullptr ? info.name : "<null>";
      r.version = info.version != nullptr ? info.version : "<null>";
      r.path = info.path != nullptr ? info.path : "<null>";
      r.abi_major = info.abi_major;
      r.abi_minor = info.abi_minor;
      r.state = info.state;
      r.stage = info.stage;
      r.reason = info.reason != nullptr ? info.reason : "<null>";
      r.device_count = info.device_count;
      records.push_back(r);
    }
    return records;
  }

  std::vector<DeviceRecord> devices() const {
    std::vector<DeviceRecord> records;
    size_t count = 0;
    EXPECT_EQ(phx_device_count(context_, &count), PHX_STATUS_OK) << phx_last_error();
    for (size_t i = 0; i < count; ++i) {
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      EXPECT_EQ(phx_device_get(context_, i, &info), PHX_STATUS_OK) << phx_last_error();
      records.push_back({info.plugin != nullptr ? info.plugin : "<null>",
                         info.name != nullptr ? info.name : "<null>", info.type, info.index});
    }
    return records;
  }

  // The record of the file at path, if the context considered it.
  std::optional<PluginRecord> plugin_at(const std::string& path) const {
    for (const PluginRecord& r : plugins()) {
      if (r.path == path) return r;
    }
    return std::nullopt;
  }

  // Every record, for failure messages.
  std::string describe() const {
    std::ostringstream os;
    os << "plugins found:";
    for (const PluginRecord& r : plugins()) os << "\n  " << r;
    os << "\ndevices:";
    for (const DeviceRecord& d : devices()) {
      os << "\n  " << d.index << ": " << d.name << " (" << d.plugin << ")";
    }
    return os.str();
  }

 private:
  std::vector<std::string> folders_;
  phx_context context_ = nullptr;
  phx_status status_ = PHX_STATUS_OK;
  std::string error_;
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

bool under(const std::string& path, const std::string& folder) {
  return path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 &&
         path[folder.size()] == '/';
}

// Every test gets its own trace folder (the test plugins log entry, initialize and
// shutdown there) and an environment without plugin search variables.
class Loader : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("PHX_PLUGIN_PATH");
    unsetenv("PHX_ADD_PLUGIN_PATH");
    unsetenv("PHX_LOG_LEVEL");
    std::string pattern = (fs::temp_directory_path() / "phx_loader_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    trace_dir_ = pattern;
    setenv("PHX_TEST_TRACE_DIR", trace_dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("PHX_TEST_TRACE_DIR");
    unsetenv("PHX_PLUGIN_PATH");
    unsetenv("PHX_ADD_PLUGIN_PATH");
    if (!trace_dir_.empty()) fs::remove_all(trace_dir_);
  }

  // How often the plugin built for test_case saw event ("entry", "initialize",
  // "shutdown") since the test began.
  int calls(const std::string& test_case, const std::string& event) const {
    std::ifstream in(trace_dir_ + "/" + test_case + ".trace");
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line == event;
    return n;
  }

  std::string trace_dir_;
};

// The good plugin, as found in its folder.
void expect_good_loaded(const Context& ctx) {
  std::optional<PluginRecord> good = ctx.plugin_at(case_file("good", "good"));
  ASSERT_TRUE(good.has_value()) << ctx.describe();
  EXPECT_EQ(good->state, PHX_PLUGIN_LOADED) << *good;
  EXPECT_EQ(good->stage, PHX_PLUGIN_STAGE_READY) << *good;
  EXPECT_EQ(good->name, "testgood");
  EXPECT_EQ(good->device_count, 1u);
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 1u) << ctx.describe();
  EXPECT_EQ(devices[0].plugin, "testgood");
  EXPECT_EQ(devices[0].name, "testgood device");
  EXPECT_EQ(devices[0].type, PHX_DEVICE_CPU);
  EXPECT_EQ(devices[0].index, 0u);
}

TEST_F(Loader, GoodPluginLoads) {
  Context ctx({case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<PluginRecord> plugins = ctx.plugins();
  ASSERT_EQ(plugins.size(), 1u) << ctx.describe();
  const PluginRecord& good = plugins[0];
  EXPECT_EQ(good.path, case_file("good", "good"));
  EXPECT_EQ(good.name, "testgood");
  EXPECT_EQ(good.version, "1.2.3");
  EXPECT_EQ(good.abi_major, uint32_t{PHX_PLUGIN_ABI_MAJOR});
  EXPECT_EQ(good.abi_minor, uint32_t{PHX_PLUGIN_ABI_MINOR});
  EXPECT_EQ(good.state, PHX_PLUGIN_LOADED);
  EXPECT_EQ(good.stage, PHX_PLUGIN_STAGE_READY);
  EXPECT_EQ(good.reason, "");
  EXPECT_EQ(good.device_count, 1u);
  expect_good_loaded(ctx);
  EXPECT_EQ(calls("good", "initialize"), 1);
  EXPECT_EQ(calls("good", "shutdown"), 0);
}

TEST_F(Loader, PluginsAreShutDownWhenTheContextIsDestroyed) {
  {
    Context ctx({case_dir("good")});
    ASSERT_TRUE(ctx.ok()) << ctx.error();
    EXPECT_EQ(calls("good", "shutdown"), 0);
  }
  EXPECT_EQ(calls("good", "initialize"), 1);
  EXPECT_EQ(calls("good", "shutdown"), 1);
}

// A library a plugin opened itself and closes at shutdown (the Vulkan loader's driver) is
// unmapped with the context, unless PHX_DISABLE_UNLOAD asks that a leak checker still
// find it mapped at exit. Each run opens a copy of its own, which nothing else maps.
TEST_F(Loader, DisableUnloadKeepsTheLibrariesAPluginOpenedMapped) {
  const char* preset = std::getenv("PHX_DISABLE_UNLOAD");
  const std::string was = preset == nullptr ? "" : preset;
  for (const bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "PHX_DISABLE_UNLOAD=1" : "PHX_DISABLE_UNLOAD unset");
    const std::string library = trace_dir_ + (keep ? "/kept.so" : "/closed.so");
    fs::copy_file(case_file("good", "good"), library);
    setenv("PHX_TEST_OPENED_LIBRARY", library.c_str(), 1);
    if (keep) {
      setenv("PHX_DISABLE_UNLOAD", "1", 1);
    } else {
      unsetenv("PHX_DISABLE_UNLOAD");
    }
    {
      Context ctx({case_dir("opens_library")});
      ASSERT_TRUE(ctx.ok()) << ctx.error();
      ASSERT_EQ(ctx.devices().size(), 1u) << ctx.describe();
      void* opened = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
      ASSERT_NE(opened, nullptr) << "the plugin did not open " << library;
      dlclose(opened);  // the plugin's reference is left the only one
    }
    EXPECT_EQ(calls("opens_library", "shutdown"), keep ? 2 : 1);
    void* after = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
    EXPECT_EQ(after != nullptr, keep);
    if (after != nullptr) dlclose(after);
  }
  unsetenv("PHX_TEST_OPENED_LIBRARY");
  if (was.empty()) {
    unsetenv("PHX_DISABLE_UNLOAD");
  } else {
    setenv("PHX_DISABLE_UNLOAD", was.c_str(), 1);
  }
}

TEST_F(Loader, GoodPluginRunsAnOp) {
  Context ctx({case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  const int64_t shape[2] = {2, 3};
  const int64_t row_shape[1] = {3};
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const float b[3] = {10, 20, 30};
  phx_tensor ta = nullptr, tb = nullptr, tc = nullptr;
  ASSERT_EQ(phx_tensor_create(ctx.get(), 0, PHX_DTYPE_F32, 2, shape, &ta), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_tensor_create(ctx.get(), 0, PHX_DTYPE_F32, 1, row_shape, &tb), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_tensor_create(ctx.get(), 0, PHX_DTYPE_F32, 2, shape, &tc), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_tensor_upload(ta, 0, a, sizeof a), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_tensor_upload(tb, 0, b, sizeof b), PHX_STATUS_OK) << phx_last_error();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(ctx.get(), 0, &stream), PHX_STATUS_OK) << phx_last_error();
  phx_tensor inputs[2] = {ta, tb};
  phx_op_desc desc{};
  desc.struct_size = sizeof desc;
  desc.op = PHX_OP_ADD;
  desc.inputs = inputs;
  desc.input_count = 2;
  desc.outputs = &tc;
  desc.output_count = 1;
  uint64_t ticket = 0;
  ASSERT_EQ(phx_op_run(stream, &desc, &ticket), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(ticket, 1u);
  ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK) << phx_last_error();
  float c[6] = {};
  ASSERT_EQ(phx_tensor_download(tc, 0, c, sizeof c), PHX_STATUS_OK) << phx_last_error();
  const float expected[6] = {11, 22, 33, 14, 25, 36};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(c[i], expected[i]) << "element " << i;

  // The plugin supports add on f32 only.
  int supported = -1;
  EXPECT_EQ(phx_device_supports(ctx.get(), 0, PHX_OP_MATMUL, PHX_DTYPE_F32, &supported),
            PHX_STATUS_OK);
  EXPECT_EQ(supported, 0);
  desc.op = PHX_OP_SUB;
  EXPECT_EQ(phx_op_run(stream, &desc, &ticket), PHX_STATUS_UNSUPPORTED);

  // Objects still alive when the context goes are freed with it (ASan checks).
  EXPECT_EQ(phx_tensor_destroy(ta), PHX_STATUS_OK);
}

// ---- Rejections ----------------------------------------------------------------------

struct RejectCase {
  const char* test_case;   // the build, and its folder
  phx_plugin_stage stage;  // the last stage reached
  std::vector<std::string> reason_contains;
  const char* name;      // the name recorded: "" when the plugin never said
  int initialize_calls;  // -1: not checked
  int shutdown_calls;    // after the context is destroyed; -1: not checked
};

std::ostream& operator<<(std::ostream& os, const RejectCase& c) { return os << c.test_case; }

class LoaderRejects : public Loader, public ::testing::WithParamInterface<RejectCase> {};

TEST_P(LoaderRejects, RecordsTheReasonAndStillLoadsTheGoodPlugin) {
  const RejectCase& c = GetParam();
  {
    Context ctx({case_dir(c.test_case), case_dir("good")});
    ASSERT_TRUE(ctx.ok()) << ctx.error();
    std::vector<PluginRecord> plugins = ctx.plugins();
    ASSERT_EQ(plugins.size(), 2u) << ctx.describe();
    const PluginRecord& bad = plugins[0];
    EXPECT_EQ(bad.path, case_file(c.test_case, c.test_case));
    EXPECT_EQ(bad.state, PHX_PLUGIN_REJECTED) << bad;
    EXPECT_EQ(bad.stage, c.stage) << bad;
    EXPECT_EQ(bad.name, c.name) << bad;
    EXPECT_EQ(bad.device_count, 0u) << bad;
    EXPECT_FALSE(bad.reason.empty()) << bad;
    for (const std::string& s : c.reason_contains) {
      EXPECT_TRUE(contains(bad.reason, s)) << "reason lacks '" << s << "': " << bad;
    }
    expect_good_loaded(ctx);
    if (c.initialize_calls >= 0) {
      EXPECT_EQ(calls(c.test_case, "initialize"), c.initialize_calls);
    }
  }
  if (c.shutdown_calls >= 0) {
    EXPECT_EQ(calls(c.test_case, "shutdown"), c.shutdown_calls);
  }
  // Every initialize that succeeded is paired with one shutdown.
  EXPECT_LE(calls(c.test_case, "shutdown"), calls(c.test_case, "initialize"));
  EXPECT_EQ(calls("good", "shutdown"), 1);
}

const std::string kAbi =
    std::to_string(PHX_PLUGIN_ABI_MAJOR) + "." + std::to_string(PHX_PLUGIN_ABI_MINOR);
const std::string kWrongAbi =
    std::to_string(PHX_PLUGIN_ABI_MAJOR + 1) + "." + std::to_string(PHX_PLUGIN_ABI_MINOR);
// The struct_size that holds every required entry of phx_plugin_api.
const size_t kRequiredTableSize = offsetof(phx_plugin_api, memory_stats) + sizeof(void*);

INSTANTIATE_TEST_SUITE_P(
    Cases, LoaderRejects,
    ::testing::Values(
        RejectCase{"no_entry_symbol", PHX_PLUGIN_STAGE_OPENED, {"phx_plugin_entry"}, "", 0, 0},
        RejectCase{"entry_fails",
                   PHX_PLUGIN_STAGE_OPENED,
                   {"phx_plugin_entry", "PHX_STATUS_UNSUPPORTED"},
                   "",
                   0,
                   0},
        // The plugin is never called again once the versions disagree, not even shutdown;
        // nor is the rest of its table read, whose layout another major may change.
        RejectCase{"wrong_major",
                   PHX_PLUGIN_STAGE_ENTRY,
                   {"plugin ABI " + kWrongAbi, "host speaks " + kAbi},
                   "",
                   0,
                   0},
        RejectCase{"missing_required_entry",
                   PHX_PLUGIN_STAGE_VERSION,
                   {"missing required entry 'stream_submit'"},
                   "testmissing",
                   0,
                   0},
        // graph_compile without executable_run and executable_destroy: an executable
        // the host could make but never run or free.
        RejectCase{"partial_graph_entries",
                   PHX_PLUGIN_STAGE_VERSION,
                   {"graph_compile, executable_run and executable_destroy come together",
                    "sets 1 of them"},
                   "testpartialgraphs",
                   0,
                   0},
        // The table ends before initialize: said as a table too small, with the size
        // given and the size every required entry needs (up to memory_stats, the last).
        RejectCase{"table_too_small",
                   PHX_PLUGIN_STAGE_VERSION,
                   {"function table too small",
                    "struct_size " + std::to_string(offsetof(phx_plugin_api, initialize)) +
                        " ends before the required entry 'initialize'",
                    "need struct_size " + std::to_string(kRequiredTableSize)},
                   "testtoosmall",
                   0,
                   0},
        // The table ends just before the last required entry: the memory behind it holds
        // memory_stats, which the loader must not read.
        RejectCase{"short_required",
                   PHX_PLUGIN_STAGE_VERSION,
                   {"struct_size " + std::to_string(offsetof(phx_plugin_api, memory_stats)) +
                        " ends before the required entry 'memory_stats'",
                    "need struct_size " + std::to_string(kRequiredTableSize)},
                   "testshortrequired",
                   0,
                   0},
        // A failed initialize is not followed by shutdown.
        RejectCase{"init_fails",
                   PHX_PLUGIN_STAGE_VALIDATED,
                   {"PHX_STATUS_DEVICE_UNAVAILABLE", "simulated init failure"},
                   "testinitfails",
                   1,
                   0},
        RejectCase{"throws_in_entry",
                   PHX_PLUGIN_STAGE_OPENED,
                   {"exception", "simulated exception in entry"},
                   "",
                   0,
                   0},
        RejectCase{"throws_in_init",
                   PHX_PLUGIN_STAGE_VALIDATED,
                   {"exception", "simulated exception in initialize"},
                   "testthrowsinit",
                   1,
                   0},
        // Rejected after a successful initialize: shut down before being unloaded.
        RejectCase{"throws_in_device_count",
                   PHX_PLUGIN_STAGE_INITIALIZED,
                   {"exception", "simulated exception in device_count"},
                   "testthrowscount",
                   1,
                   1},
        RejectCase{
            "no_devices", PHX_PLUGIN_STAGE_INITIALIZED, {"no devices"}, "testnodevices", 1, 1}),
    [](const ::testing::TestParamInfo<RejectCase>& info) {
      return std::string(info.param.test_case);
    });

TEST_F(Loader, RejectsAFileThatIsNoLibraryWithDlerrorText) {
  const std::string garbage = case_dir("garbage") + "/garbage.so";
  // The loader's reason carries what dlopen said about the file.
  ASSERT_EQ(dlopen(garbage.c_str(), RTLD_NOW | RTLD_LOCAL), nullptr);
  const std::string dl_error = dlerror();
  Context ctx({case_dir("garbage"), case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::optional<PluginRecord> bad = ctx.plugin_at(garbage);
  ASSERT_TRUE(bad.has_value()) << ctx.describe();
  EXPECT_EQ(bad->state, PHX_PLUGIN_REJECTED) << *bad;
  EXPECT_EQ(bad->stage, PHX_PLUGIN_STAGE_FOUND) << *bad;
  EXPECT_EQ(bad->name, "");
  EXPECT_EQ(bad->abi_major, 0u);
  EXPECT_TRUE(contains(bad->reason, dl_error)) << "dlerror: " << dl_error << "\n" << *bad;
  EXPECT_EQ(ctx.plugins().size(), 2u) << ctx.describe();
  expect_good_loaded(ctx);
}

TEST_F(Loader, AcceptsANewerMinorWithALongerTable) {
  Context ctx({case_dir("newer_minor")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::optional<PluginRecord> newer = ctx.plugin_at(case_file("newer_minor", "newer_minor"));
  ASSERT_TRUE(newer.has_value()) << ctx.describe();
  EXPECT_EQ(newer->state, PHX_PLUGIN_LOADED) << *newer;
  EXPECT_EQ(newer->stage, PHX_PLUGIN_STAGE_READY) << *newer;
  EXPECT_EQ(newer->abi_major, uint32_t{PHX_PLUGIN_ABI_MAJOR});
  EXPECT_EQ(newer->abi_minor, uint32_t{PHX_PLUGIN_ABI_MINOR + 1});
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].plugin, "testnewer");
}

// ---- Log output ------------------------------------------------------------------------

struct LogLine {
  phx_log_level level;
  std::string text;
};

std::ostream& operator<<(std::ostream& os, const std::vector<LogLine>& lines) {
  for (const LogLine& line : lines) os << "\n  [" << line.level << "] " << line.text;
  return os;
}

// What a context with the default log level (warnings and errors) logged while it
// searched folders, created and destroyed.
std::vector<LogLine> log_of_loading(const std::vector<std::string>& folders) {
  std::vector<LogLine> lines;
  std::vector<const char*> paths;
  for (const std::string& f : folders) paths.push_back(f.c_str());
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = paths.data();
  options.plugin_path_count = paths.size();
  options.use_default_search_path = 0;
  options.log_callback = [](void* user_data, phx_log_level level, const char* message) {
    static_cast<std::vector<LogLine>*>(user_data)->push_back({level, message});
  };
  options.log_user_data = &lines;
  phx_context context = nullptr;
  EXPECT_EQ(phx_context_create(&options, &context), PHX_STATUS_OK) << phx_last_error();
  if (context != nullptr) {
    EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
  }
  return lines;
}

// Whether one line of the given level holds every piece of text.
bool logged(const std::vector<LogLine>& lines, phx_log_level level,
            std::initializer_list<std::string> pieces) {
  for (const LogLine& line : lines) {
    if (line.level != level) continue;
    bool all = true;
    for (const std::string& piece : pieces) all = all && contains(line.text, piece);
    if (all) return true;
  }
  return false;
}

class LoaderDebug : public Loader {
 protected:
  void SetUp() override {
    Loader::SetUp();
    setenv("PHX_LOADER_DEBUG", "1", 1);
  }
  void TearDown() override {
    unsetenv("PHX_LOADER_DEBUG");
    Loader::TearDown();
  }
};

// PHX_LOADER_DEBUG=1 names every file of every folder searched, candidate or not, and
// what became of it.
TEST_F(LoaderDebug, NamesEveryFileAndWhyItWasLoadedOrSkipped) {
  const std::vector<std::string> folders = {case_dir("non_candidates"),  case_dir("does_not_exist"),
                                            case_dir("empty"),           case_dir("garbage"),
                                            case_dir("table_too_small"), case_dir("good"),
                                            case_dir("duplicate")};
  const std::vector<LogLine> lines = log_of_loading(folders);
  const std::string others = case_dir("non_candidates");
  EXPECT_TRUE(
      logged(lines, PHX_LOG_DEBUG,
             {"searching " + others + " (from plugin_paths)", "0 candidate(s)", "3 other file(s)"}))
      << lines;
  EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG, {others + "/readme.txt: skipped", "not end in .so"}))
      << lines;
  EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG, {others + "/libold.so.1: skipped", "not end in .so"}))
      << lines;
  EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG, {others + "/folder.so: skipped", "a folder"})) << lines;
  EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG,
                     {"searching " + case_dir("does_not_exist") + " ", "does not exist"}))
      << lines;
  EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG,
                     {"searching " + case_dir("empty") + " ", "0 candidate(s), 0 other file(s)"}))
      << lines;
  EXPECT_TRUE(
      logged(lines, PHX_LOG_DEBUG,
             {case_dir("garbage") + "/garbage.so: rejected at stage 'found'", "cannot open"}))
      << lines;
  EXPECT_TRUE(
      logged(lines, PHX_LOG_DEBUG,
             {case_file("table_too_small", "table_too_small") + ": rejected at stage 'version'",
              "function table too small"}))
      << lines;
  EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG,
                     {case_file("good", "good") + ": loaded 'testgood' 1.2.3 (plugin ABI " + kAbi +
                      "), 1 device(s)"}))
      << lines;
  EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG,
                     {case_file("duplicate", "duplicate") + ": shadowed: shadowed by " +
                      case_file("good", "good")}))
      << lines;
  // Every file of every folder has a line of its own.
  for (const std::string& folder : folders) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
      const std::string file = e.path().string();
      EXPECT_TRUE(logged(lines, PHX_LOG_DEBUG, {file + ": "})) << "no line names " << file << lines;
    }
  }
}

// Without PHX_LOADER_DEBUG a context is quiet about the search (warnings only).
TEST_F(Loader, TheSearchIsNotLoggedByDefault) {
  const std::vector<LogLine> lines =
      log_of_loading({case_dir("non_candidates"), case_dir("garbage"), case_dir("good")});
  for (const LogLine& line : lines) {
    EXPECT_FALSE(contains(line.text, "loader: searching")) << line.text;
    EXPECT_FALSE(contains(line.text, ": skipped:")) << line.text;
    EXPECT_FALSE(contains(line.text, ": loaded '")) << line.text;
  }
}

// A plugin of a newer minor of the same major loads (docs/loader.md), and a warning at
// the default log level names its version and the host's.
TEST_F(Loader, ANewerMinorLoadsWithAWarningNamingBothVersions) {
  const std::string future = case_file("abi_1_99", "abi_1_99");
  const std::vector<LogLine> lines = log_of_loading({case_dir("abi_1_99"), case_dir("good")});
  const std::string future_abi = std::to_string(PHX_PLUGIN_ABI_MAJOR) + ".99";
  EXPECT_TRUE(logged(
      lines, PHX_LOG_WARN,
      {future, "'testfuture'", "plugin ABI " + future_abi, "newer than this host's " + kAbi}))
      << lines;
  // Only that plugin is warned about.
  EXPECT_FALSE(logged(lines, PHX_LOG_WARN, {case_file("good", "good")})) << lines;

  Context ctx({case_dir("abi_1_99")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::optional<PluginRecord> record = ctx.plugin_at(future);
  ASSERT_TRUE(record.has_value()) << ctx.describe();
  EXPECT_EQ(record->state, PHX_PLUGIN_LOADED) << *record;
  EXPECT_EQ(record->abi_minor, 99u);
  EXPECT_EQ(ctx.devices().size(), 1u) << ctx.describe();
}

// ---- Device types ---------------------------------------------------------------------

TEST_F(Loader, AnAcceleratorIsListedWithItsType) {
  Context ctx({case_dir("accelerator"), case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 2u) << ctx.describe();
  EXPECT_EQ(devices[0].plugin, "testaccelerator");
  EXPECT_EQ(devices[0].type, PHX_DEVICE_ACCELERATOR);
  EXPECT_STREQ(phx_device_type_name(devices[0].type), "accelerator");
  EXPECT_EQ(devices[1].type, PHX_DEVICE_CPU);
}

// A type that a later minor added, from a plugin of that minor: listed as an accelerator,
// with a warning that names the value and both ABIs.
TEST_F(Loader, ATypeOfANewerMinorIsListedAsAnAccelerator) {
  const std::vector<LogLine> lines = log_of_loading({case_dir("newer_device_type")});
  const std::string newer_abi =
      std::to_string(PHX_PLUGIN_ABI_MAJOR) + "." + std::to_string(PHX_PLUGIN_ABI_MINOR + 1);
  EXPECT_TRUE(logged(lines, PHX_LOG_WARN,
                     {"testnewertype: device_info gave device 0 the type " +
                          std::to_string(PHX_DEVICE_ACCELERATOR + 1),
                      "unknown to this host (plugin ABI " + kAbi + "; the plugin's is " +
                          newer_abi + "): listed as accelerator"}))
      << lines;
  Context ctx({case_dir("newer_device_type")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 1u) << ctx.describe();
  EXPECT_EQ(devices[0].type, PHX_DEVICE_ACCELERATOR);
}

// The same from a plugin of the host's own minor is a bug: the plugin offers no device,
// with the reason recorded, and the others are unaffected.
TEST_F(Loader, AnUnknownTypeFromAPluginOfTheHostsMinorIsRejected) {
  Context ctx({case_dir("unknown_device_type"), case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::optional<PluginRecord> bad =
      ctx.plugin_at(case_file("unknown_device_type", "unknown_device_type"));
  ASSERT_TRUE(bad.has_value()) << ctx.describe();
  EXPECT_EQ(bad->state, PHX_PLUGIN_REJECTED) << *bad;
  EXPECT_TRUE(contains(bad->reason, "device_info gave device 0 the type 99")) << *bad;
  EXPECT_TRUE(contains(bad->reason, "none of phx_device_type's (0 to " +
                                        std::to_string(PHX_DEVICE_ACCELERATOR) + ")"))
      << *bad;
  expect_good_loaded(ctx);
}

TEST_F(Loader, AsksAnAbi10PluginOnlyAboutTheOpsOf10) {
  // The plugin fails op_supported for any op past conv2d, which would reject it.
  Context ctx({case_dir("abi_1_0")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::optional<PluginRecord> old = ctx.plugin_at(case_file("abi_1_0", "abi_1_0"));
  ASSERT_TRUE(old.has_value()) << ctx.describe();
  EXPECT_EQ(old->state, PHX_PLUGIN_LOADED) << *old;
  EXPECT_EQ(old->abi_minor, 0u);
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].plugin, "testold");
}

TEST_F(Loader, TreatsOptionalEntriesPastStructSizeAsAbsent) {
  Context ctx({case_dir("short_optional"), case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::optional<PluginRecord> shorter =
      ctx.plugin_at(case_file("short_optional", "short_optional"));
  ASSERT_TRUE(shorter.has_value()) << ctx.describe();
  EXPECT_EQ(shorter->state, PHX_PLUGIN_LOADED) << *shorter;
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 2u) << ctx.describe();
  ASSERT_EQ(devices[0].plugin, "testshort");
  // memory_set_limit lies past the table's struct_size: the host must not call it.
  EXPECT_EQ(phx_memory_set_limit(ctx.get(), 0, 4096), PHX_STATUS_UNSUPPORTED);
  EXPECT_EQ(calls("short_optional", "memory_set_limit"), 0);
  // The good plugin's table has it.
  EXPECT_EQ(phx_memory_set_limit(ctx.get(), 1, 4096), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(calls("good", "memory_set_limit"), 1);
}

// ---- Search order and shadowing -------------------------------------------------------

TEST_F(Loader, ALaterPluginOfTheSameNameIsShadowed) {
  {
    Context ctx({case_dir("good"), case_dir("duplicate")});
    ASSERT_TRUE(ctx.ok()) << ctx.error();
    std::vector<PluginRecord> plugins = ctx.plugins();
    ASSERT_EQ(plugins.size(), 2u) << ctx.describe();
    EXPECT_EQ(plugins[0].path, case_file("good", "good"));
    EXPECT_EQ(plugins[0].state, PHX_PLUGIN_LOADED);
    EXPECT_EQ(plugins[1].path, case_file("duplicate", "duplicate"));
    EXPECT_EQ(plugins[1].state, PHX_PLUGIN_SHADOWED) << plugins[1];
    EXPECT_EQ(plugins[1].name, "testgood");
    EXPECT_FALSE(plugins[1].reason.empty());
    EXPECT_EQ(plugins[1].device_count, 0u);
    EXPECT_GE(plugins[1].stage, PHX_PLUGIN_STAGE_ENTRY);
    expect_good_loaded(ctx);
  }
  EXPECT_EQ(calls("duplicate", "shutdown"), calls("duplicate", "initialize"));
}

TEST_F(Loader, ShadowingFollowsTheSearchOrderNotTheFolderName) {
  Context ctx({case_dir("duplicate"), case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<PluginRecord> plugins = ctx.plugins();
  ASSERT_EQ(plugins.size(), 2u) << ctx.describe();
  EXPECT_EQ(plugins[0].path, case_file("duplicate", "duplicate"));
  EXPECT_EQ(plugins[0].state, PHX_PLUGIN_LOADED);
  EXPECT_EQ(plugins[0].version, "9.9.9-duplicate");
  EXPECT_EQ(plugins[1].path, case_file("good", "good"));
  EXPECT_EQ(plugins[1].state, PHX_PLUGIN_SHADOWED) << plugins[1];
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 1u);
  EXPECT_EQ(devices[0].plugin, "testgood");
}

TEST_F(Loader, FilesInAFolderAreTakenInSortedNameOrder) {
  Context ctx({case_dir("order")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<PluginRecord> plugins = ctx.plugins();
  ASSERT_EQ(plugins.size(), 2u) << ctx.describe();
  EXPECT_EQ(plugins[0].path, case_file("order", "order_a"));
  EXPECT_EQ(plugins[0].version, "a");
  EXPECT_EQ(plugins[0].state, PHX_PLUGIN_LOADED);
  EXPECT_EQ(plugins[1].path, case_file("order", "order_b"));
  EXPECT_EQ(plugins[1].state, PHX_PLUGIN_SHADOWED);
}

TEST_F(Loader, DevicesAreNumberedInPluginSearchOrder) {
  Context ctx(
      {case_dir("newer_minor"), case_dir("garbage"), case_dir("good"), case_dir("short_optional")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<DeviceRecord> devices = ctx.devices();
  ASSERT_EQ(devices.size(), 3u) << ctx.describe();
  EXPECT_EQ(devices[0].plugin, "testnewer");
  EXPECT_EQ(devices[1].plugin, "testgood");
  EXPECT_EQ(devices[2].plugin, "testshort");
  for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(devices[i].index, i);
}

TEST_F(Loader, OnlyRegularFilesEndingInSoAreCandidates) {
  Context ctx({case_dir("non_candidates")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  EXPECT_TRUE(ctx.plugins().empty()) << ctx.describe();
}

TEST_F(Loader, AMissingFolderIsNoError) {
  Context ctx({case_dir("does_not_exist"), case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  EXPECT_EQ(ctx.plugins().size(), 1u) << ctx.describe();
  expect_good_loaded(ctx);
}

TEST_F(Loader, AContextWithoutPluginsIsValid) {
  Context ctx({});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  EXPECT_TRUE(ctx.plugins().empty()) << ctx.describe();
  EXPECT_TRUE(ctx.devices().empty());
}

// ---- Environment ----------------------------------------------------------------------

// The plugins of the default folder beside libphynexus, as files.
std::vector<std::string> default_folder_plugins() {
  std::vector<std::string> files;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(PHX_TEST_DEFAULT_PLUGIN_DIR, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".so") files.push_back(e.path().string());
  }
  return files;
}

size_t count_under(const std::vector<PluginRecord>& plugins, const std::string& folder) {
  size_t n = 0;
  for (const PluginRecord& r : plugins) n += under(r.path, folder);
  return n;
}

TEST_F(Loader, PhxPluginPathReplacesTheDefaultFolder) {
  setenv("PHX_PLUGIN_PATH", case_dir("good").c_str(), 1);
  Context ctx({}, /*default_search=*/true);
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<PluginRecord> plugins = ctx.plugins();
  EXPECT_EQ(count_under(plugins, case_dir("good")), 1u) << ctx.describe();
  EXPECT_EQ(count_under(plugins, PHX_TEST_DEFAULT_PLUGIN_DIR), 0u) << ctx.describe();
  EXPECT_EQ(plugins.size(), 1u) << ctx.describe();
  expect_good_loaded(ctx);
}

TEST_F(Loader, PhxPluginPathIsColonSeparatedAndKeepsItsOrder) {
  const std::string value =
      case_dir("duplicate") + "::" + case_dir("does_not_exist") + ":" + case_dir("good");
  setenv("PHX_PLUGIN_PATH", value.c_str(), 1);
  Context ctx({}, /*default_search=*/true);
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<PluginRecord> plugins = ctx.plugins();
  ASSERT_EQ(plugins.size(), 2u) << ctx.describe();
  EXPECT_EQ(plugins[0].path, case_file("duplicate", "duplicate"));
  EXPECT_EQ(plugins[0].state, PHX_PLUGIN_LOADED);
  EXPECT_EQ(plugins[1].path, case_file("good", "good"));
  EXPECT_EQ(plugins[1].state, PHX_PLUGIN_SHADOWED);
}

TEST_F(Loader, PhxAddPluginPathKeepsTheDefaultFolder) {
  std::vector<std::string> defaults = default_folder_plugins();
  ASSERT_FALSE(defaults.empty()) << "no plugin built in " PHX_TEST_DEFAULT_PLUGIN_DIR;
  setenv("PHX_ADD_PLUGIN_PATH", case_dir("good").c_str(), 1);
  Context ctx({}, /*default_search=*/true);
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<PluginRecord> plugins = ctx.plugins();
  EXPECT_EQ(count_under(plugins, case_dir("good")), 1u) << ctx.describe();
  EXPECT_EQ(count_under(plugins, PHX_TEST_DEFAULT_PLUGIN_DIR), defaults.size()) << ctx.describe();
  std::optional<PluginRecord> good = ctx.plugin_at(case_file("good", "good"));
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(good->state, PHX_PLUGIN_LOADED);
}

TEST_F(Loader, PluginPathsComeBeforeTheEnvironment) {
  setenv("PHX_PLUGIN_PATH", case_dir("duplicate").c_str(), 1);
  Context ctx({case_dir("good")}, /*default_search=*/true);
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::vector<PluginRecord> plugins = ctx.plugins();
  ASSERT_EQ(plugins.size(), 2u) << ctx.describe();
  EXPECT_EQ(plugins[0].path, case_file("good", "good"));
  EXPECT_EQ(plugins[0].state, PHX_PLUGIN_LOADED);
  EXPECT_EQ(plugins[1].path, case_file("duplicate", "duplicate"));
  EXPECT_EQ(plugins[1].state, PHX_PLUGIN_SHADOWED);
}

TEST_F(Loader, WithoutTheDefaultSearchTheEnvironmentIsIgnored) {
  setenv("PHX_PLUGIN_PATH", case_dir("good").c_str(), 1);
  setenv("PHX_ADD_PLUGIN_PATH", case_dir("duplicate").c_str(), 1);
  Context ctx({});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  EXPECT_TRUE(ctx.plugins().empty()) << ctx.describe();
}

// The current directory is never searched, with or without the default search path.
TEST_F(Loader, TheCurrentDirectoryIsNeverSearched) {
  const fs::path previous = fs::current_path();
  fs::current_path(case_dir("good"));
  setenv("PHX_PLUGIN_PATH", case_dir("empty").c_str(), 1);
  std::vector<PluginRecord> without_default, with_default;
  {
    Context ctx({});
    if (ctx.ok()) without_default = ctx.plugins();
  }
  {
    Context ctx({}, /*default_search=*/true);
    if (ctx.ok()) with_default = ctx.plugins();
  }
  fs::current_path(previous);
  EXPECT_TRUE(without_default.empty());
  EXPECT_TRUE(with_default.empty());
  for (const PluginRecord& r : with_default) ADD_FAILURE() << "unexpected " << r;
}

// ---- Files writable by others ----------------------------------------------------------

// A copy of the good plugin, alone in a folder of its own under the trace folder, with
// the modes a test then loosens.
class LoaderFileModes : public Loader {
 protected:
  void SetUp() override {
    Loader::SetUp();
    folder_ = trace_dir_ + "/plugins";
    plugin_ = folder_ + "/phx_test_good.so";
    ASSERT_TRUE(fs::create_directory(folder_));
    fs::copy_file(case_file("good", "good"), plugin_);
    ASSERT_EQ(chmod(folder_.c_str(), 0755), 0);
    ASSERT_EQ(chmod(plugin_.c_str(), 0755), 0);
  }

  // Loads folder and expects the copy refused before dlopen, with a reason that names
  // what and its mode.
  void expect_refused(const std::string& folder, const std::vector<std::string>& mentions) {
    Context ctx({folder});
    ASSERT_TRUE(ctx.ok()) << ctx.error();
    std::vector<PluginRecord> plugins = ctx.plugins();
    ASSERT_EQ(plugins.size(), 1u) << ctx.describe();
    EXPECT_EQ(plugins[0].state, PHX_PLUGIN_REJECTED) << plugins[0];
    EXPECT_EQ(plugins[0].stage, PHX_PLUGIN_STAGE_FOUND) << plugins[0];
    for (const std::string& mention : mentions)
      EXPECT_TRUE(contains(plugins[0].reason, mention))
          << "no '" << mention << "' in " << plugins[0];
    EXPECT_TRUE(ctx.devices().empty()) << ctx.describe();
    // Never mapped, so its constructors never ran.
    EXPECT_EQ(dlopen(plugins[0].path.c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr);
    EXPECT_EQ(calls("good", "entry"), 0);
  }

  std::string folder_, plugin_;
};

TEST_F(LoaderFileModes, APluginOnlyItsOwnerCanWriteLoads) {
  Context ctx({folder_});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  std::optional<PluginRecord> copy = ctx.plugin_at(plugin_);
  ASSERT_TRUE(copy.has_value()) << ctx.describe();
  EXPECT_EQ(copy->state, PHX_PLUGIN_LOADED) << *copy;
  EXPECT_EQ(ctx.devices().size(), 1u) << ctx.describe();
}

TEST_F(LoaderFileModes, AWorldWritableFileIsRefused) {
  ASSERT_EQ(chmod(plugin_.c_str(), 0757), 0);
  expect_refused(folder_, {"file " + plugin_, "writable by others", "mode 0757"});
}

TEST_F(LoaderFileModes, ARefusalIsLoggedAsAWarning) {
  ASSERT_EQ(chmod(plugin_.c_str(), 0757), 0);
  std::vector<std::pair<phx_log_level, std::string>> messages;
  const char* paths[] = {folder_.c_str()};
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = paths;
  options.plugin_path_count = 1;
  options.use_default_search_path = 0;
  options.log_callback = [](void* user_data, phx_log_level level, const char* message) {
    static_cast<decltype(messages)*>(user_data)->emplace_back(level, message);
  };
  options.log_user_data = &messages;
  phx_context context = nullptr;
  ASSERT_EQ(phx_context_create(&options, &context), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_context_destroy(context), PHX_STATUS_OK);
  bool warned = false;
  for (const auto& [level, message] : messages)
    warned = warned || (level == PHX_LOG_WARN && contains(message, "refusing " + plugin_) &&
                        contains(message, "mode 0757"));
  EXPECT_TRUE(warned) << messages.size() << " messages, none a warning about " << plugin_;
}

TEST_F(LoaderFileModes, AGroupWritableFileIsRefused) {
  ASSERT_EQ(chmod(plugin_.c_str(), 0775), 0);
  expect_refused(folder_, {"file " + plugin_, "writable by its group", "mode 0775"});
}

TEST_F(LoaderFileModes, AFileInAWorldWritableFolderIsRefused) {
  ASSERT_EQ(chmod(folder_.c_str(), 0757), 0);
  expect_refused(folder_, {"folder " + folder_ + " ", "writable by others", "mode 0757"});
}

// The sticky bit stops others from replacing the file but not from adding one beside it,
// which the next search would load.
TEST_F(LoaderFileModes, AStickyWorldWritableFolderIsRefusedToo) {
  ASSERT_EQ(chmod(folder_.c_str(), 01777), 0);
  expect_refused(folder_, {"folder " + folder_ + " ", "mode 1777"});
}

TEST_F(LoaderFileModes, AFileNamedExplicitlyIsCheckedToo) {
  ASSERT_EQ(chmod(plugin_.c_str(), 0757), 0);
  expect_refused(plugin_, {"file " + plugin_, "mode 0757"});
}

// A link is judged by the file it leads to, which dlopen maps, and that file's folder;
// the link's own mode (always 0777) does not matter.
TEST_F(LoaderFileModes, ALinkIsJudgedByItsTarget) {
  const std::string links = trace_dir_ + "/links";
  ASSERT_TRUE(fs::create_directory(links));
  ASSERT_EQ(chmod(links.c_str(), 0755), 0);
  fs::create_symlink(plugin_, links + "/phx_link.so");
  ASSERT_EQ(chmod(folder_.c_str(), 0777), 0);
  expect_refused(links, {"folder " + folder_ + " ", "mode 0777"});
  ASSERT_EQ(chmod(folder_.c_str(), 0755), 0);
  ASSERT_EQ(chmod(plugin_.c_str(), 0777), 0);
  expect_refused(links, {"file " + plugin_, "mode 0777"});
  ASSERT_EQ(chmod(plugin_.c_str(), 0755), 0);
  Context ctx({links});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  ASSERT_EQ(ctx.plugins().size(), 1u) << ctx.describe();
  EXPECT_EQ(ctx.plugins()[0].state, PHX_PLUGIN_LOADED) << ctx.describe();
}

// ---- Set-user-ID programs ----------------------------------------------------------------

// Runs command through the shell; its output and exit status.
std::pair<std::string, int> run(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {"popen failed", -1};
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  return {output, pclose(pipe)};
}

// Why nobody (uid 65534) cannot reach path: a folder on the way that others may not
// search; empty if none.
std::string unreachable_by_nobody(const fs::path& path) {
  for (fs::path p = path; p != p.parent_path(); p = p.parent_path()) {
    struct stat info {};
    if (stat(p.c_str(), &info) != 0 || (info.st_mode & S_IXOTH) == 0)
      return p.string() + " is not searchable by others";
  }
  return {};
}

// Set-uid and set-gid programs must not take plugin folders from the environment of the
// user who runs them (phx::env_value, which is secure_getenv). The real thing: a root-owned set-uid
// copy of a probe program, run as nobody with PHX_PLUGIN_PATH naming a folder with the good plugin,
// must not load it; the same probe without the set-uid bit, run the same way, does.
TEST_F(Loader, SetUidProgramsIgnorePhxPluginPath) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root, to make a set-uid-root copy of the probe";
  const char* setpriv = "/usr/bin/setpriv";
  if (access(setpriv, X_OK) != 0) GTEST_SKIP() << setpriv << " is missing (util-linux)";
  const fs::path probe = PHX_TEST_SETUID_PROBE;
  // glibc ignores $ORIGIN in a set-uid program: the probe must name libphynexus's folder.
  auto [dynamic, readelf_status] = run("readelf -d '" + probe.string() + "'");
  if (readelf_status != 0) GTEST_SKIP() << "readelf failed: " << dynamic;
  if (!contains(dynamic, "PATH)") || contains(dynamic, "$ORIGIN"))
    GTEST_SKIP() << "the probe finds libphynexus by no absolute run path:\n" << dynamic;
  // Beside the probe, in the build tree: /tmp is often mounted nosuid.
  std::string work = (probe.parent_path() / "phx_setuid.XXXXXX").string();
  ASSERT_NE(mkdtemp(work.data()), nullptr);
  struct Cleanup {
    std::string folder;
    ~Cleanup() { fs::remove_all(folder); }
  } cleanup{work};
  ASSERT_EQ(chmod(work.c_str(), 0755), 0);
  struct statvfs filesystem {};
  ASSERT_EQ(statvfs(work.c_str(), &filesystem), 0);
  if ((filesystem.f_flag & ST_NOSUID) != 0) GTEST_SKIP() << work << " is on a nosuid filesystem";
  for (const fs::path& needed : {fs::path(work), fs::path(PHX_TEST_DEFAULT_PLUGIN_DIR)}) {
    std::string why = unreachable_by_nobody(needed);
    if (!why.empty()) GTEST_SKIP() << why;
  }

  const std::string plugins = work + "/plugins";
  ASSERT_TRUE(fs::create_directory(plugins));
  fs::copy_file(case_file("good", "good"), plugins + "/phx_test_good.so");
  const std::string plain = work + "/probe", set_uid = work + "/probe_setuid";
  fs::copy_file(probe, plain);
  fs::copy_file(probe, set_uid);
  ASSERT_EQ(chown(set_uid.c_str(), 0, 0), 0);
  for (const std::string& path : {plugins, plugins + "/phx_test_good.so", plain})
    ASSERT_EQ(chmod(path.c_str(), 0755), 0) << path;
  ASSERT_EQ(chmod(set_uid.c_str(), 04755), 0);

  // A clean environment but for the plugin path; a set-uid process cannot be traced, so
  // LeakSanitizer, in the asan build, could not run in it.
  auto as_nobody = [&](const std::string& program) {
    return run("env -i PATH=/usr/bin:/bin PHX_PLUGIN_PATH='" + plugins +
               "' ASAN_OPTIONS=detect_leaks=0 " + setpriv +
               " --reuid=65534 --regid=65534 --clear-groups '" + program + "'");
  };
  const std::string loaded_line = "plugin loaded " + plugins + "/phx_test_good.so\n";

  auto [plain_output, plain_status] = as_nobody(plain);
  ASSERT_EQ(plain_status, 0) << plain_output;
  EXPECT_TRUE(contains(plain_output, "ruid 65534 euid 65534 secure 0")) << plain_output;
  EXPECT_TRUE(contains(plain_output, "env_value PHX_PLUGIN_PATH " + plugins + "\n"))
      << plain_output;
  EXPECT_TRUE(contains(plain_output, loaded_line)) << plain_output;

  auto [setuid_output, setuid_status] = as_nobody(set_uid);
  ASSERT_EQ(setuid_status, 0) << setuid_output;
  EXPECT_TRUE(contains(setuid_output, "ruid 65534 euid 0 secure 1")) << setuid_output;
  EXPECT_TRUE(contains(setuid_output, "env_value PHX_PLUGIN_PATH <unset>\n")) << setuid_output;
  EXPECT_FALSE(contains(setuid_output, plugins)) << setuid_output;
  // It did search: the default folder, which no environment can take away.
  EXPECT_TRUE(contains(setuid_output, "plugin loaded " PHX_TEST_DEFAULT_PLUGIN_DIR "/"))
      << setuid_output;
}

// ---- Lifetime -------------------------------------------------------------------------

// Every path of the loader, twenty times over: under ASan a leak or a double unload shows.
TEST_F(Loader, ContextsCanBeCreatedAndDestroyedRepeatedly) {
  const std::vector<std::string> folders = {case_dir("garbage"),
                                            case_dir("no_entry_symbol"),
                                            case_dir("entry_fails"),
                                            case_dir("wrong_major"),
                                            case_dir("missing_required_entry"),
                                            case_dir("table_too_small"),
                                            case_dir("init_fails"),
                                            case_dir("throws_in_entry"),
                                            case_dir("throws_in_init"),
                                            case_dir("throws_in_device_count"),
                                            case_dir("no_devices"),
                                            case_dir("good"),
                                            case_dir("duplicate"),
                                            case_dir("newer_minor"),
                                            case_dir("short_optional"),
                                            case_dir("order"),
                                            case_dir("short_required"),
                                            case_dir("abi_1_99"),
                                            case_dir("accelerator"),
                                            case_dir("newer_device_type"),
                                            case_dir("unknown_device_type")};
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    Context ctx(folders);
    ASSERT_TRUE(ctx.ok()) << ctx.error();
    ASSERT_EQ(ctx.plugins().size(), 22u) << ctx.describe();
    // good, newer_minor, short_optional, order_a, abi_1_99, accelerator, newer_device_type.
    ASSERT_EQ(ctx.devices().size(), 7u) << ctx.describe();
  }
  EXPECT_EQ(calls("good", "initialize"), kRounds);
  EXPECT_EQ(calls("good", "shutdown"), kRounds);
  EXPECT_EQ(calls("no_devices", "shutdown"), calls("no_devices", "initialize"));
  EXPECT_EQ(calls("init_fails", "shutdown"), 0);
  // Initialized, then its devices refused: still shut down with the context.
  EXPECT_EQ(calls("unknown_device_type", "initialize"), kRounds);
  EXPECT_EQ(calls("unknown_device_type", "shutdown"), kRounds);
}

// ---- Calling conventions of phx_plugin_get ---------------------------------------------

TEST_F(Loader, PluginGetChecksItsArguments) {
  Context ctx({case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
  EXPECT_EQ(phx_plugin_get(ctx.get(), 1, &info), PHX_STATUS_NOT_FOUND);
  EXPECT_STRNE(phx_last_error(), "");
  EXPECT_EQ(phx_plugin_get(ctx.get(), 0, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_STRNE(phx_last_error(), "");
  EXPECT_EQ(phx_plugin_get(nullptr, 0, &info), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_plugin_count(ctx.get(), nullptr), PHX_STATUS_INVALID_ARGUMENT);
}

// A caller built against an older header passes a shorter struct: nothing past its
// struct_size is written.
TEST_F(Loader, PluginGetWritesOnlyStructSizeBytes) {
  Context ctx({case_dir("good")});
  ASSERT_TRUE(ctx.ok()) << ctx.error();
  phx_plugin_info info;
  std::memset(&info, 0xAB, sizeof info);
  info.struct_size = offsetof(phx_plugin_info, abi_major);
  ASSERT_EQ(phx_plugin_get(ctx.get(), 0, &info), PHX_STATUS_OK) << phx_last_error();
  EXPECT_STREQ(info.name, "testgood");
  EXPECT_EQ(info.path, case_file("good", "good"));
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(&info);
  for (size_t i = offsetof(phx_plugin_info, abi_major); i < sizeof info; ++i) {
    ASSERT_EQ(bytes[i], 0xAB) << "byte " << i << " past struct_size was written";
  }
}

}  // namespace
