// phx-conformance: the op conformance suite against one plugin file, for plugin authors.
//
//   phx-conformance --plugin ./phx_myplugin.so [--graphs] [--gtest_filter=...]
//
// Loads the file alone (no other plugin, no search path), says whether the loader took it
// and why not, lists the entries its table fills, then runs the op suite that ctest runs
// on the shipped plugins (tests/op_suite*.cpp, tests/op_support_test.cpp) on every device
// of the plugin: every op and dtype the device claims against float64 references, and
// UNSUPPORTED for what it does not claim. It prints a table per device of each op and
// dtype: passed, FAILED, declined (claimed, but every variant the suite tried was
// refused, which a plugin of ABI 1.1 or older may do from stream_submit), not run
// (claimed, but no check of the suite ran it) or unsupported. Exit status 0 only when the plugin
// loaded, at least one check ran and none failed. With --graphs every op of the suite runs
// as a one-node graph compiled for the device: through the plugin's graph_compile and
// executable_run where it has them (plugin ABI 1.3), else node by node.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <phx/progress.h>
#include <phynexus/plugin.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "op_suite.h"

namespace {

constexpr phx_dtype kDtypes[] = {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_BF16, PHX_DTYPE_I8,
                                 PHX_DTYPE_I16, PHX_DTYPE_I32, PHX_DTYPE_U8};

// In the order in which one outcome of an op and dtype overrides another.
enum class Outcome { kNotRun, kDeclined, kPassed, kFailed };

// Lays every failure of a test at the door of the op the test ran last.
class Recorder : public phx_test::OpRunObserver, public ::testing::EmptyTestEventListener {
 public:
  using Key = std::tuple<size_t, phx_op_id, phx_dtype>;

  void ran(size_t device, phx_op_id op, phx_dtype dtype, phx_status status) override {
    last_ = Key{device, op, dtype};
    ++runs_;
    Outcome& outcome = outcomes_[*last_];
    const Outcome now = status == PHX_STATUS_OK            ? Outcome::kPassed
                        : status == PHX_STATUS_UNSUPPORTED ? Outcome::kDeclined
                                                           : Outcome::kNotRun;
    outcome = std::max(outcome, now);
  }
  void OnTestStart(const ::testing::TestInfo& test) override {
    last_.reset();
    // Not UnitTest::current_test_info(): googletest holds its lock while it reports.
    test_name_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    if (last_) {
      outcomes_[*last_] = Outcome::kFailed;
    } else {
      unattributed_.push_back(test_name_);
    }
  }

  Outcome outcome(size_t device, phx_op_id op, phx_dtype dtype) const {
    auto it = outcomes_.find(Key{device, op, dtype});
    return it != outcomes_.end() ? it->second : Outcome::kNotRun;
  }
  size_t runs() const { return runs_; }
  const std::vector<std::string>& unattributed() const { return unattributed_; }

 private:
  std::map<Key, Outcome> outcomes_;
  std::optional<Key> last_;  // the op the running test ran last
  std::string test_name_;    // the running test's
  size_t runs_ = 0;
  std::vector<std::string> unattributed_;
};

// The progress line over the tests (phx/progress.h). On a terminal it stands in for
// googletest's per-test lines (brief output: failures and the summary); it must then come
// before googletest's printer among the listeners, so that it clears its line before a
// failure is printed.
class ProgressListener : public ::testing::EmptyTestEventListener {
 public:
  // Per iteration: --gtest_repeat runs the tests again.
  void OnTestIterationStart(const ::testing::UnitTest& unit, int) override {
    progress_.emplace(static_cast<size_t>(unit.test_to_run_count()), "tests");
    done_ = 0;
  }
  void OnTestStart(const ::testing::TestInfo& test) override {
    if (progress_)
      progress_->update(done_, std::string(test.test_suite_name()) + "." + test.name());
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (progress_ && result.failed()) progress_->clear();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    if (progress_) progress_->update(++done_);
  }
  // Before googletest's summary, which its printer writes at the iteration's end.
  void OnEnvironmentsTearDownStart(const ::testing::UnitTest&) override { progress_.reset(); }

 private:
  std::optional<phx::Progress> progress_;
  size_t done_ = 0;
};

// Puts progress before googletest's printer; the listeners own both from then on.
void add_progress_listener(ProgressListener* progress) {
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  ::testing::TestEventListener* printer = listeners.Release(listeners.default_result_printer());
  listeners.Append(progress);
  if (printer != nullptr) listeners.Append(printer);
}

void usage(FILE* to) {
  std::fprintf(to,
               "usage: phx-conformance --plugin FILE [--graphs] [gtest options, e.g. "
               "--gtest_filter=...]\n"
               "Runs the Phynexus op conformance suite on every device of the plugin FILE.\n"
               "--graphs: every op as a one-node graph, compiled for the device (its\n"
               "graph_compile and executable_run, where the plugin has them).\n");
}

// The entries the plugin's table fills, from the entry itself: the loader said whether it
// accepts the table, this says what a plugin author may have forgotten.
void print_entries(const std::string& file) {
  void* library = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return;
  auto entry = reinterpret_cast<phx_plugin_entry_fn>(dlsym(library, PHX_PLUGIN_ENTRY_NAME));
  phx_plugin_host host{};
  host.struct_size = sizeof host;
  host.abi_major = PHX_PLUGIN_ABI_MAJOR;
  host.abi_minor = PHX_PLUGIN_ABI_MINOR;
  host.log = [](void*, phx_log_level, const char*) {};
  host.set_error = [](void*, const char*) {};
  const phx_plugin_api* api = nullptr;
  if (entry != nullptr && entry(&host, &api) == PHX_STATUS_OK && api != nullptr) {
    struct Optional {
      const char* name;
      size_t offset;
    };
#define PHX_OPTIONAL(entry) \
  { #entry, offsetof(phx_plugin_api, entry) }
    const Optional optional[] = {PHX_OPTIONAL(memory_set_limit),
                                 PHX_OPTIONAL(memory_release_cached),
                                 PHX_OPTIONAL(buffer_copy),
                                 PHX_OPTIONAL(device_stats),
                                 PHX_OPTIONAL(op_variant_supported),
                                 PHX_OPTIONAL(graph_compile),
                                 PHX_OPTIONAL(executable_run),
                                 PHX_OPTIONAL(executable_destroy),
                                 PHX_OPTIONAL(executable_stats),
                                 PHX_OPTIONAL(graph_claim),
                                 PHX_OPTIONAL(graph_estimate),
                                 PHX_OPTIONAL(executable_serialize),
                                 PHX_OPTIONAL(executable_node_report),
                                 PHX_OPTIONAL(buffer_import_host),
                                 PHX_OPTIONAL(buffer_host_data)};
#undef PHX_OPTIONAL
    std::printf("optional entries:");
    for (const Optional& o : optional) {
      void* slot = nullptr;
      const bool inside = o.offset + sizeof slot <= api->struct_size;
      if (inside) std::memcpy(&slot, reinterpret_cast<const char*>(api) + o.offset, sizeof slot);
      std::printf(" %s %s;", o.name, slot != nullptr ? "yes" : "no");
    }
    std::printf("\n");
  }
  dlclose(library);
}

// Loads the file alone; false (with the loader's reason printed) when it did not load.
bool check_plugin(const phx_context_options& options, const std::string& file) {
  phx_context context = nullptr;
  if (phx_context_create(&options, &context) != PHX_STATUS_OK) {
    std::fprintf(stderr, "phx-conformance: %s\n", phx_last_error());
    return false;
  }
  size_t count = 0;
  phx_plugin_count(context, &count);
  bool loaded = false;
  if (count == 0) {
    std::printf("FAILED: %s is not a plugin file the loader considers (does it end in .so?)\n",
                file.c_str());
  } else {
    phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
    phx_plugin_get(context, 0, &info);
    loaded = info.state == PHX_PLUGIN_LOADED;
    std::printf("plugin '%s' %s, plugin ABI %u.%u (host %d.%d), from %s: %s\n", info.name,
                info.version, info.abi_major, info.abi_minor, PHX_PLUGIN_ABI_MAJOR,
                PHX_PLUGIN_ABI_MINOR, info.path, loaded ? "loaded" : "REJECTED");
    if (!loaded) std::printf("  reason: %s\n", info.reason);
    if (loaded && info.device_count == 0) std::printf("  it offers no device\n");
    loaded = loaded && info.device_count > 0;
  }
  phx_context_destroy(context);
  if (loaded) print_entries(file);
  return loaded;
}

// Per device: the table of ops and dtypes; returns the number of FAILED cells.
size_t print_report(const phx_context_options& options, const Recorder& recorder) {
  phx_context context = nullptr;
  if (phx_context_create(&options, &context) != PHX_STATUS_OK) return 1;
  size_t devices = 0, failed = 0;
  phx_device_count(context, &devices);
  for (size_t d = 0; d < devices; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    phx_device_get(context, d, &info);
    std::printf("\ndevice %zu (%s, %s):\n%-18s", d, info.name, phx_device_type_name(info.type),
                "op");
    for (phx_dtype dt : kDtypes) std::printf(" %-11s", phx_dtype_name(dt));
    std::printf("\n");
    for (int op = PHX_OP_INVALID + 1; op < PHX_OP_COUNT; ++op) {
      std::printf("%-18s", phx_op_name(static_cast<phx_op_id>(op)));
      for (phx_dtype dt : kDtypes) {
        int claimed = 0;
        phx_device_supports(context, d, static_cast<phx_op_id>(op), dt, &claimed);
        const Outcome outcome = recorder.outcome(d, static_cast<phx_op_id>(op), dt);
        const char* cell = "unsupported";
        if (outcome == Outcome::kFailed) {
          cell = "FAILED";
          ++failed;
        } else if (claimed) {
          cell = outcome == Outcome::kPassed     ? "passed"
                 : outcome == Outcome::kDeclined ? "declined"
                                                 : "not run";
        }
        std::printf(" %-11s", cell);
      }
      std::printf("\n");
    }
  }
  phx_context_destroy(context);
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--plugin" && i + 1 < argc) {
      file = argv[++i];
    } else if (arg.rfind("--plugin=", 0) == 0) {
      file = arg.substr(9);
    } else if (arg == "--graphs") {
      phx_test::ops_as_graphs = true;
    } else if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (file.empty()) {
    usage(stderr);
    return 2;
  }

  const char* paths[] = {file.c_str()};
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.plugin_paths = paths;
  options.plugin_path_count = 1;
  options.use_default_search_path = 0;
  if (!check_plugin(options, file)) {
    std::printf("phx-conformance: FAILED: the plugin did not load, so nothing was checked\n");
    return 1;
  }

  phx_test::suite_context_options() = &options;
  Recorder recorder;
  phx_test::op_run_observer() = &recorder;
  int gtest_argc = static_cast<int>(rest.size());
  // googletest moves the arguments it consumes down over argv[argc], which must be null.
  rest.push_back(nullptr);
  const bool progress = phx::progress_wanted();
  if (progress) GTEST_FLAG_SET(brief, true);  // before InitGoogleTest: --gtest_brief=0 wins
  ::testing::InitGoogleTest(&gtest_argc, rest.data());
  if (progress) add_progress_listener(new ProgressListener);
  // Owned by googletest from here on; this main outlives it.
  ::testing::UnitTest::GetInstance()->listeners().Append(&recorder);
  const int gtest_status = RUN_ALL_TESTS();
  ::testing::UnitTest::GetInstance()->listeners().Release(&recorder);

  const size_t failed_cells = print_report(options, recorder);
  const auto* unit = ::testing::UnitTest::GetInstance();
  std::printf("\ntests: %d passed, %d failed, %d skipped; %zu ops run\n",
              unit->successful_test_count(), unit->failed_test_count(), unit->skipped_test_count(),
              recorder.runs());
  for (const std::string& test : recorder.unattributed())
    std::printf("FAILED outside any op: %s\n", test.c_str());
  if (unit->successful_test_count() + unit->failed_test_count() == 0 || recorder.runs() == 0) {
    std::printf(
        "phx-conformance: FAILED: no check ran. The plugin's devices claim no op the suite "
        "tests, or the filter matched no test\n");
    return 1;
  }
  if (gtest_status != 0 || failed_cells != 0) {
    std::printf("phx-conformance: FAILED\n");
    return 1;
  }
  std::printf("phx-conformance: passed\n");
  return 0;
}
