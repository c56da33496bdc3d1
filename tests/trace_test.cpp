// Traces (phx_trace_begin, PHX_TRACE): the file a short run writes on every device is JSON
// in the Chrome Trace Event Format whose ops are the profile API's, on tracks that are
// named, ordered and properly nested; a killed process leaves a readable open array; bad
// input and unwritable paths fail cleanly.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph_builder.h"

namespace {

using nlohmann::json;

// A file name of this test's own in the temporary directory.
std::string temp_path(const std::string& name) {
  const char* dir = getenv("TMPDIR");
  return std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/phx_trace_test_" +
         std::to_string(getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The events of a trace file; closed: the file must be a complete array, else the open
// form a killed process leaves, which gets its closing bracket here.
json parse_trace(const std::string& path, bool closed) {
  std::string text = read_file(path);
  if (!closed) text += "]";
  json events = json::parse(text);  // throws, failing the test, on anything but JSON
  EXPECT_TRUE(events.is_array());
  return events;
}

uint64_t track_key(const json& event) {
  return event["pid"].get<uint64_t>() << 32 | event["tid"].get<uint64_t>();
}

// Device d's process (the writer's layout: the devices first, the host after them).
uint64_t device_pid(size_t d) { return d + 1; }

// What a viewer opens on must be a device, not the host. speedscope (its
// src/import/trace-event.ts) makes a profile per (pid, tid) with "X", "B" or "E" events,
// sorts them by pid, then tid, as numbers, ignoring the sort indices, and shows the first;
// Perfetto orders processes by process_sort_index (a process without one counts as 0) and
// honours thread_sort_index where it orders threads by it.
void check_viewer_order(const json& events) {
  uint64_t host = 0;
  std::map<uint64_t, int64_t> process_index;
  std::map<std::pair<uint64_t, uint64_t>, int64_t> thread_index;
  std::set<uint64_t> processes;
  std::set<std::pair<uint64_t, uint64_t>> threads, span_tracks;
  for (const json& e : events) {
    const uint64_t pid = e["pid"].get<uint64_t>();
    const std::pair<uint64_t, uint64_t> track{pid, e["tid"].get<uint64_t>()};
    if (e["ph"] == "X" || e["ph"] == "B" || e["ph"] == "E") span_tracks.insert(track);
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") {
      processes.insert(pid);
      if (e["args"]["name"].get<std::string>().rfind("host (pid ", 0) == 0) host = pid;
    }
    if (e["name"] == "thread_name") threads.insert(track);
    if (e["name"] == "process_sort_index")
      process_index[pid] = e["args"]["sort_index"].get<int64_t>();
    if (e["name"] == "thread_sort_index")
      thread_index[track] = e["args"]["sort_index"].get<int64_t>();
  }
  ASSERT_NE(host, 0u) << "no process is named \"host (pid N)\"";
  // Perfetto: every process has an index above 0 (the default of the processes it makes up,
  // pid 0's), the devices in pid order, which is their index order, and the host last.
  int64_t last = 0;
  for (uint64_t pid : processes) {
    ASSERT_TRUE(process_index.count(pid)) << "process " << pid << " has no process_sort_index";
    EXPECT_GT(process_index[pid], last) << "process " << pid;
    last = process_index[pid];
  }
  EXPECT_EQ(*processes.rbegin(), host) << "the host's process is not the last";
  // Within a process, tracks in tid order: a stream's track above its simulated time's.
  for (const auto& track : threads) {
    ASSERT_TRUE(thread_index.count(track)) << track.first << "/" << track.second;
    EXPECT_EQ(thread_index[track], int64_t(track.second)) << track.first << "/" << track.second;
  }
  // speedscope: its profiles in (pid, tid) order are the devices' tracks, then the host's.
  bool host_seen = false;
  for (const auto& [pid, tid] : span_tracks) {
    host_seen |= pid == host;
    EXPECT_TRUE(pid == host || !host_seen)
        << "device track " << pid << "/" << tid << " after the host's in speedscope's order";
  }
}

// The invariants every trace keeps, whatever ran.
void check_layout(const json& events) {
  std::set<uint64_t> named_processes, named_threads;
  for (const json& e : events) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") named_processes.insert(e["pid"].get<uint64_t>());
    if (e["name"] == "thread_name") named_threads.insert(track_key(e));
    if (e["name"] == "process_name" || e["name"] == "thread_name") {
      EXPECT_FALSE(e["args"]["name"].get<std::string>().empty());
    }
  }
  check_viewer_order(events);
  std::map<uint64_t, std::vector<std::pair<double, double>>> spans;  // per track, file order
  std::map<uint64_t, double> last_counter_ts;
  for (const json& e : events) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("ts")) << e.dump();
    EXPECT_TRUE(named_processes.count(e["pid"].get<uint64_t>())) << e.dump();
    if (e["ph"] == "X") {
      EXPECT_TRUE(named_threads.count(track_key(e))) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0.0) << e.dump();
      spans[track_key(e)].emplace_back(e["ts"].get<double>(),
                                       e["ts"].get<double>() + e["dur"].get<double>());
    } else if (e["ph"] == "C") {
      for (const auto& [name, value] : e["args"].items()) EXPECT_GE(value.get<double>(), 0) << name;
      double& last = last_counter_ts[e["pid"].get<uint64_t>()];
      EXPECT_GE(e["ts"].get<double>(), last) << e.dump();
      last = e["ts"].get<double>();
    }
  }
  for (const auto& [track, list] : spans) {
    // A span is written when it ends: the ends never go back in the file.
    for (size_t i = 1; i < list.size(); ++i)
      EXPECT_GE(list[i].second, list[i - 1].second) << "track " << track << " span " << i;
    // Two spans of a track are apart or one holds the other (a run and its nodes). The
    // timestamps have three decimals of microseconds: equal ends may differ by 0.001.
    constexpr double kRounding = 0.0015;
    for (size_t i = 0; i < list.size(); ++i) {
      for (size_t j = i + 1; j < list.size(); ++j) {
        const auto [a0, a1] = list[i];
        const auto [b0, b1] = list[j];
        const bool apart = a1 <= b0 + kRounding || b1 <= a0 + kRounding;
        const bool nested = (a0 <= b0 + kRounding && b1 <= a1 + kRounding) ||
                            (b0 <= a0 + kRounding && a1 <= b1 + kRounding);
        EXPECT_TRUE(apart || nested) << "track " << track << ": [" << a0 << ", " << a1 << "] and ["
                                     << b0 << ", " << b1 << "] overlap";
      }
    }
  }
}

struct Tensors {
  phx_tensor a = nullptr, b = nullptr, c = nullptr, d = nullptr;
};

class Trace : public ::testing::Test {
 protected:
  void open(uint32_t flags) {
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.flags = flags;
    ASSERT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_device_count(context_, &device_count_), PHX_STATUS_OK);
  }
  void TearDown() override {
    if (context_ != nullptr) {
      EXPECT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
    }
    for (const std::string& path : files_) unlink(path.c_str());
  }
  std::string file(const std::string& name) {
    files_.push_back(temp_path(name));
    return files_.back();
  }
  phx_tensor tensor(size_t device, int64_t rows, int64_t cols, float first) {
    const int64_t shape[] = {rows, cols};
    phx_tensor t = nullptr;
    EXPECT_EQ(phx_tensor_create(context_, device, PHX_DTYPE_F32, 2, shape, &t), PHX_STATUS_OK)
        << phx_last_error();
    std::vector<float> values(size_t(rows * cols));
    for (size_t i = 0; i < values.size(); ++i) values[i] = first + 0.25f * float(i);
    EXPECT_EQ(phx_tensor_upload(t, 0, values.data(), values.size() * sizeof(float)), PHX_STATUS_OK);
    return t;
  }
  // c = relu(a b) + d on stream: three ops, with a ticket each.
  void run_ops(phx_stream stream, const Tensors& t) {
    const phx_tensor mm_in[] = {t.a, t.b}, add_in[] = {t.c, t.d};
    const phx_op_desc ops[] = {{sizeof(phx_op_desc), PHX_OP_MATMUL, nullptr, mm_in, 2, &t.c, 1},
                               {sizeof(phx_op_desc), PHX_OP_RELU, nullptr, &t.c, 1, &t.c, 1},
                               {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, add_in, 2, &t.c, 1}};
    for (const phx_op_desc& op : ops)
      ASSERT_EQ(phx_op_run(stream, &op, nullptr), PHX_STATUS_OK) << phx_last_error();
  }

  // An add in the first of f32, f16, i8 that device runs itself, not through the CPU
  // fallback: a simulated device's op then has a modelled time.
  void run_native_add(size_t device, phx_stream stream) {
    for (phx_dtype dtype : {PHX_DTYPE_F32, PHX_DTYPE_F16, PHX_DTYPE_I8}) {
      int supported = 0;
      ASSERT_EQ(phx_device_supports(context_, device, PHX_OP_ADD, dtype, &supported),
                PHX_STATUS_OK);
      if (supported == 0) continue;
      const int64_t shape[] = {8};
      const std::vector<uint8_t> zeros(8 * phx_dtype_size(dtype));
      phx_tensor x = nullptr, y = nullptr;
      ASSERT_EQ(phx_tensor_create(context_, device, dtype, 1, shape, &x), PHX_STATUS_OK);
      ASSERT_EQ(phx_tensor_create(context_, device, dtype, 1, shape, &y), PHX_STATUS_OK);
      ASSERT_EQ(phx_tensor_upload(x, 0, zeros.data(), zeros.size()), PHX_STATUS_OK);
      const phx_tensor in[] = {x, x};
      const phx_op_desc add = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, in, 2, &y, 1};
      ASSERT_EQ(phx_op_run(stream, &add, nullptr), PHX_STATUS_OK) << phx_last_error();
      EXPECT_EQ(phx_tensor_destroy(x), PHX_STATUS_OK);
      EXPECT_EQ(phx_tensor_destroy(y), PHX_STATUS_OK);
      return;
    }
    ADD_FAILURE() << "device " << device << " runs no add of f32, f16 or i8";
  }

  phx_context context_ = nullptr;
  size_t device_count_ = 0;
  std::vector<std::string> files_;
};

// A 4x4 f32 input of graph.
phx_value input_4x4(phx_graph graph) {
  const int64_t shape[] = {4, 4};
  phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
  desc.dtype = PHX_DTYPE_F32;
  desc.rank = 2;
  desc.shape = shape;
  phx_value x = 0;
  EXPECT_EQ(phx_graph_add_input(graph, &desc, &x), PHX_STATUS_OK) << phx_last_error();
  return x;
}

// The graph relu(x w) + x of 4x4 f32, compiled for device with the CPU device (0) for
// what it lacks.
phx_executable compile_graph(phx_context context, size_t device) {
  phx_graph graph = nullptr;
  EXPECT_EQ(phx_graph_create(context, &graph), PHX_STATUS_OK);
  const phx_value x = input_4x4(graph), w = input_4x4(graph);
  const phx_value product = phx_test::add_node(graph, PHX_OP_MATMUL, {x, w}, "product");
  const phx_value rectified = phx_test::add_node(graph, PHX_OP_RELU, {product}, "rectified");
  const phx_value sum = phx_test::add_node(graph, PHX_OP_ADD, {rectified, x}, "sum");
  EXPECT_EQ(phx_graph_add_output(graph, sum, "y"), PHX_STATUS_OK);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  options.device = device;
  const size_t cpu = 0;
  options.other_devices = &cpu;
  options.other_device_count = device == 0 ? 0 : 1;
  phx_executable exe = nullptr;
  EXPECT_EQ(phx_graph_compile(context, graph, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
  return exe;
}

struct Record {
  uint64_t ticket;
  std::string signature, node;
  double host_time_us;
};

std::vector<Record> profile_records(phx_stream stream) {
  size_t count = 0;
  EXPECT_EQ(phx_profile_count(stream, &count), PHX_STATUS_OK);
  std::vector<Record> records;
  for (size_t i = 0; i < count; ++i) {
    phx_profile_record r = PHX_PROFILE_RECORD_INIT;
    EXPECT_EQ(phx_profile_get(stream, i, &r), PHX_STATUS_OK);
    records.push_back({r.ticket, r.signature, r.node, double(r.host_time_ns) / 1000});
  }
  return records;
}

// On every device: ops, an upload, a download, a graph compiled and run twice. Every op
// the profile API reports is in the trace once with its signature and duration.
TEST_F(Trace, ShortRunOnEveryDeviceMatchesTheProfileRecords) {
  open(PHX_CONTEXT_PROFILE | PHX_CONTEXT_FALLBACK_CPU);
  ASSERT_GT(device_count_, 0u);
  const std::string path = file("every_device.json");
  ASSERT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_OK) << phx_last_error();

  std::vector<phx_stream> streams(device_count_);
  std::vector<bool> simulated(device_count_);
  for (size_t d = 0; d < device_count_; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context_, d, &info), PHX_STATUS_OK);
    simulated[d] = std::strstr(info.plugin, "sim") != nullptr;
    ASSERT_EQ(phx_stream_create(context_, d, &streams[d]), PHX_STATUS_OK) << phx_last_error();
    Tensors t{tensor(d, 4, 4, -1), tensor(d, 4, 4, 0.5f), tensor(d, 4, 4, 0), tensor(d, 4, 4, 2)};
    run_ops(streams[d], t);
    run_native_add(d, streams[d]);
    phx_executable exe = compile_graph(context_, d);
    ASSERT_NE(exe, nullptr);
    const phx_tensor in[] = {t.a, t.b};
    for (int run = 0; run < 2; ++run)
      ASSERT_EQ(phx_executable_run(streams[d], exe, in, 2, &t.d, 1, nullptr), PHX_STATUS_OK)
          << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(streams[d]), PHX_STATUS_OK);
    float result[16];
    ASSERT_EQ(phx_tensor_download(t.c, 0, result, sizeof result), PHX_STATUS_OK);
    EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);
    for (phx_tensor x : {t.a, t.b, t.c, t.d}) EXPECT_EQ(phx_tensor_destroy(x), PHX_STATUS_OK);
  }
  ASSERT_EQ(phx_trace_end(context_), PHX_STATUS_OK) << phx_last_error();

  const json events = parse_trace(path, true);
  check_layout(events);
  std::set<std::string> kinds;
  for (const json& e : events) kinds.insert(e["name"].get<std::string>());
  for (const char* kind :
       {"upload", "download", "stream synchronize", "graph compile", "executable run", "memory"})
    EXPECT_TRUE(kinds.count(kind)) << kind;
  // speedscope opens on the lowest (pid, tid) with spans: device 0's stream.
  std::set<std::pair<uint64_t, uint64_t>> span_tracks;
  for (const json& e : events)
    if (e["ph"] == "X") span_tracks.emplace(e["pid"].get<uint64_t>(), e["tid"].get<uint64_t>());
  ASSERT_FALSE(span_tracks.empty());
  EXPECT_EQ(span_tracks.begin()->first, device_pid(0));

  for (size_t d = 0; d < device_count_; ++d) {
    const uint64_t pid = device_pid(d);
    const std::vector<Record> records = profile_records(streams[d]);
    EXPECT_GE(records.size(), 3u) << "device " << d;
    for (const Record& record : records) {
      std::vector<const json*> found;
      for (const json& e : events) {
        if (e["ph"] != "X" || e["cat"] != "op" || e["pid"] != pid) continue;
        const json& args = e["args"];
        const std::string node = args.contains("node") ? args["node"].get<std::string>() : "";
        if (args["ticket"] == record.ticket && args["signature"] == record.signature &&
            node == record.node)
          found.push_back(&e);
      }
      ASSERT_EQ(found.size(), 1u) << "device " << d << " ticket " << record.ticket << " "
                                  << record.signature << " " << record.node;
      const json& e = *found[0];
      // Within 1%, and the file's three decimals of a microsecond.
      EXPECT_NEAR(e["dur"].get<double>(), record.host_time_us, 0.01 * record.host_time_us + 0.0005);
      EXPECT_TRUE(e["args"]["flops"].get<double>() > 0);
      EXPECT_TRUE(e["args"]["bytes"].get<double>() > 0);
      EXPECT_TRUE(e["args"]["cpu_fallback"].is_boolean());
    }
    bool has_simulated_track = false;
    for (const json& e : events)
      has_simulated_track |= e["cat"] == "simulated op" && e["pid"] == pid;
    EXPECT_EQ(has_simulated_track, bool(simulated[d])) << "device " << d;
    EXPECT_EQ(phx_stream_destroy(streams[d]), PHX_STATUS_OK);
  }
}

// The compiles an op causes: on a Vulkan device, the pipelines its first submission
// creates, a span inside the op's; on a simulated TPU, the chip's compile cache, missed by
// the first matmul of a shape and hit by the second, instants on its simulated track.
TEST_F(Trace, CompilesAreDrawnWithTheOpsThatCausedThem) {
  open(0);
  const std::string path = file("compiles.json");
  ASSERT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_OK) << phx_last_error();
  std::vector<std::pair<uint64_t, std::string>> checked;  // pid, plugin
  for (size_t d = 0; d < device_count_; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    ASSERT_EQ(phx_device_get(context_, d, &info), PHX_STATUS_OK);
    const std::string plugin = info.plugin;
    if (plugin != "vulkan" && plugin != "tpu-sim") continue;
    checked.emplace_back(device_pid(d), plugin);
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(context_, d, &stream), PHX_STATUS_OK);
    const phx_tensor a = tensor(d, 4, 4, -1), b = tensor(d, 4, 4, 0.5f), c = tensor(d, 4, 4, 0);
    const phx_tensor in[] = {a, b};
    const phx_op_desc matmul = {sizeof(phx_op_desc), PHX_OP_MATMUL, nullptr, in, 2, &c, 1};
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(phx_op_run(stream, &matmul, nullptr), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK);
    for (phx_tensor t : {a, b, c}) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
    EXPECT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
  }
  ASSERT_EQ(phx_trace_end(context_), PHX_STATUS_OK) << phx_last_error();
  if (checked.empty()) GTEST_SKIP() << "no Vulkan or tpu-sim device";

  const json events = parse_trace(path, true);
  check_layout(events);
  for (const auto& [pid, plugin] : checked) {
    SCOPED_TRACE(plugin);
    std::vector<std::string> lookups;
    size_t compiles = 0;
    for (const json& e : events) {
      if (e["pid"] != pid || e["cat"] != "compile") continue;
      if (e["ph"] == "i") {
        EXPECT_EQ(e["tid"].get<uint64_t>() % 2, 1u) << "not on the simulated track";
        lookups.push_back(e["name"]);
        continue;
      }
      ASSERT_EQ(e["ph"], "X");
      ++compiles;
      EXPECT_EQ(e["name"], "pipeline compile");
      EXPECT_GE(e["args"]["pipelines"].get<double>(), 1);
      // The op that caused it starts with it and holds it.
      bool held = false;
      for (const json& op : events)
        held |= op["cat"] == "op" && op["pid"] == pid && op["tid"] == e["tid"] &&
                op["ts"] == e["ts"] && op["dur"].get<double>() + 0.0015 >= e["dur"].get<double>();
      EXPECT_TRUE(held) << e.dump();
    }
    if (plugin == "vulkan") {
      EXPECT_GE(compiles, 1u);
    } else {
      EXPECT_EQ(lookups, (std::vector<std::string>{"compile cache miss", "compile cache hit"}));
    }
  }
}

// The matmul of an executable run on the CPU device lies inside its run's span.
TEST_F(Trace, ExecutableNodesNestUnderTheirRun) {
  open(0);
  const std::string path = file("nested.json");
  ASSERT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_OK) << phx_last_error();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, 0, &stream), PHX_STATUS_OK);
  const phx_tensor x = tensor(0, 4, 4, 1), w = tensor(0, 4, 4, 2), y = tensor(0, 4, 4, 0);
  phx_executable exe = compile_graph(context_, 0);
  const phx_tensor in[] = {x, w};
  ASSERT_EQ(phx_executable_run(stream, exe, in, 2, &y, 1, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_trace_end(context_), PHX_STATUS_OK) << phx_last_error();

  const json events = parse_trace(path, true);
  check_layout(events);
  const json* run = nullptr;
  std::vector<const json*> nodes;
  for (const json& e : events) {
    if (e["name"] == "executable run") run = &e;
    if (e["cat"] == "op" && e["args"].contains("node")) nodes.push_back(&e);
  }
  ASSERT_NE(run, nullptr);
  ASSERT_FALSE(nodes.empty());
  const double start = (*run)["ts"], end = start + (*run)["dur"].get<double>();
  for (const json* node : nodes) {
    EXPECT_EQ((*node)["tid"], (*run)["tid"]);
    EXPECT_GE((*node)["ts"].get<double>() + 0.0015, start);
    EXPECT_LE((*node)["ts"].get<double>() + (*node)["dur"].get<double>(), end + 0.0015);
  }
}

// Names are the program's text: quotes, backslashes and control characters reach the file
// escaped, and a JSON parser gives them back as they were.
TEST_F(Trace, NamesWithCharactersToEscapeReadBackAsTheyWere) {
  open(0);
  const std::string path = file("escaped.json");
  const std::string name = "say \"hi\" \\ to\ttab\nline\x01 end";
  phx_graph graph = nullptr;
  ASSERT_EQ(phx_graph_create(context_, &graph), PHX_STATUS_OK);
  const phx_value y = phx_test::add_node(graph, PHX_OP_RELU, {input_4x4(graph)}, name.c_str());
  ASSERT_EQ(phx_graph_add_output(graph, y, "y"), PHX_STATUS_OK);
  phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
  phx_executable exe = nullptr;
  ASSERT_EQ(phx_graph_compile(context_, graph, &options, &exe), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);

  ASSERT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_OK) << phx_last_error();
  phx_stream stream = nullptr;
  ASSERT_EQ(phx_stream_create(context_, 0, &stream), PHX_STATUS_OK);
  const phx_tensor in = tensor(0, 4, 4, 1), out = tensor(0, 4, 4, 0);
  ASSERT_EQ(phx_executable_run(stream, exe, &in, 1, &out, 1, nullptr), PHX_STATUS_OK);
  ASSERT_EQ(phx_trace_end(context_), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_executable_destroy(exe), PHX_STATUS_OK);

  const json events = parse_trace(path, true);
  size_t found = 0;
  for (const json& e : events)
    if (e["cat"] == "op" && e["args"].contains("node")) {
      EXPECT_EQ(e["args"]["node"].get<std::string>(), name);
      EXPECT_EQ(e["args"]["signature"].get<std::string>(), "f32[4x4] -> f32[4x4]");
      ++found;
    }
  EXPECT_EQ(found, 1u);
}

// The op span on flow end's track that holds its timestamp (its binding point), or null.
const json* enclosing_op(const json& events, const json& end) {
  constexpr double kRounding = 0.0015;
  const double ts = end["ts"].get<double>();
  for (const json& e : events)
    if (e["ph"] == "X" && track_key(e) == track_key(end) &&
        e["ts"].get<double>() <= ts + kRounding &&
        ts <= e["ts"].get<double>() + e["dur"].get<double>() + kRounding)
      return &e;
  return nullptr;
}

// An event recorded on one device's stream and waited for by another's, an all-reduce and
// a message between the two: each is an arrow from one op span to another on the tracks
// it connects, pointing forward in time.
TEST_F(Trace, EventsAndCollectivesAreArrowsBetweenTracks) {
  open(0);
  // Another device that adds f32, where there is one.
  size_t other = 0;
  for (size_t d = 1; d < device_count_ && other == 0; ++d) {
    int supported = 0;
    ASSERT_EQ(phx_device_supports(context_, d, PHX_OP_ADD, PHX_DTYPE_F32, &supported),
              PHX_STATUS_OK);
    if (supported != 0) other = d;
  }
  const std::string path = file("arrows.json");
  ASSERT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_OK) << phx_last_error();
  phx_stream first = nullptr, second = nullptr;
  ASSERT_EQ(phx_stream_create(context_, 0, &first), PHX_STATUS_OK);
  ASSERT_EQ(phx_stream_create(context_, other, &second), PHX_STATUS_OK);
  const phx_tensor a = tensor(0, 1, 8, 1), b = tensor(other, 1, 8, 2);
  const phx_tensor a_sum = tensor(0, 1, 8, 0), b_sum = tensor(other, 1, 8, 0);

  const phx_tensor a_in[] = {a, a}, b_in[] = {b, b};
  const phx_op_desc add_a = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, a_in, 2, &a_sum, 1};
  const phx_op_desc add_b = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, b_in, 2, &b_sum, 1};
  uint64_t ticket = 0;
  ASSERT_EQ(phx_op_run(first, &add_a, &ticket), PHX_STATUS_OK) << phx_last_error();
  phx_event event = nullptr;
  ASSERT_EQ(phx_event_record(first, ticket, &event), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_stream_wait_event(second, event), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_op_run(second, &add_b, nullptr), PHX_STATUS_OK) << phx_last_error();

  const size_t devices[] = {0, other};
  phx_comm comm = nullptr;
  ASSERT_EQ(phx_comm_create(context_, devices, 2, nullptr, &comm), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_all_reduce(comm, 0, first, a, a_sum, PHX_REDUCE_SUM, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_all_reduce(comm, 1, second, b, b_sum, PHX_REDUCE_SUM, nullptr), PHX_STATUS_OK)
      << phx_last_error();
  ASSERT_EQ(phx_send(comm, 0, first, a, 1, nullptr), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_recv(comm, 1, second, b, 0, nullptr), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(first), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_stream_synchronize(second), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_trace_end(context_), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_event_destroy(event), PHX_STATUS_OK);
  EXPECT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_destroy(first), PHX_STATUS_OK);
  EXPECT_EQ(phx_stream_destroy(second), PHX_STATUS_OK);

  const json events = parse_trace(path, true);
  check_layout(events);
  // Per arrow (a flow's id, category and name): its leaving and arriving ends.
  std::map<std::string, std::pair<std::vector<const json*>, std::vector<const json*>>> arrows;
  for (const json& e : events) {
    if (e["ph"] != "s" && e["ph"] != "f") continue;
    EXPECT_EQ(e["cat"], "flow") << e.dump();
    const std::string key = e["name"].get<std::string>() + "/" + e["id"].dump();
    (e["ph"] == "s" ? arrows[key].first : arrows[key].second).push_back(&e);
    if (e["ph"] == "f") {
      EXPECT_EQ(e["bp"], "e") << e.dump();
    }
  }
  std::map<std::string, int> per_name;
  for (const auto& [key, ends] : arrows) {
    ASSERT_EQ(ends.first.size(), 1u) << key;
    ASSERT_EQ(ends.second.size(), 1u) << key;
    const json& from = *ends.first[0];
    const json& to = *ends.second[0];
    EXPECT_LE(from["ts"].get<double>(), to["ts"].get<double>()) << key;
    const json* from_span = enclosing_op(events, from);
    const json* to_span = enclosing_op(events, to);
    ASSERT_NE(from_span, nullptr) << key << ": " << from.dump();
    ASSERT_NE(to_span, nullptr) << key << ": " << to.dump();
    const std::string name = from["name"];
    ++per_name[name];
    if (name == "event") {
      // From the add that produced it to the add queued behind the wait.
      EXPECT_EQ((*from_span)["name"], "add");
      EXPECT_EQ((*to_span)["name"], "add");
      EXPECT_EQ((*from_span)["args"]["ticket"], ticket);
    } else {
      EXPECT_EQ((*from_span)["name"], name);
      EXPECT_EQ((*to_span)["name"], name);
    }
    if (other != 0) {
      EXPECT_NE(from["pid"], to["pid"]) << key;
    }
  }
  EXPECT_EQ(per_name["event"], 1);
  EXPECT_EQ(per_name["all_reduce"], 1);  // from the rank that arrived last to the other
  EXPECT_EQ(per_name["send_recv"], 1);
  for (const phx_tensor t : {a, b, a_sum, b_sum}) EXPECT_EQ(phx_tensor_destroy(t), PHX_STATUS_OK);
}

// A process killed with SIGKILL after a synchronize leaves the open array with its ops.
TEST_F(Trace, KilledProcessLeavesAReadableOpenArray) {
  const std::string path = file("killed.json");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Only async-signal-safe exits from here: the child never returns into the test.
    phx_context context = nullptr;
    phx_stream stream = nullptr;
    phx_tensor t = nullptr;
    const int64_t shape[] = {1, 4};
    if (phx_context_create(nullptr, &context) != PHX_STATUS_OK ||
        phx_trace_begin(context, path.c_str()) != PHX_STATUS_OK ||
        phx_stream_create(context, 0, &stream) != PHX_STATUS_OK ||
        phx_tensor_create(context, 0, PHX_DTYPE_F32, 2, shape, &t) != PHX_STATUS_OK)
      _exit(2);
    const phx_tensor in[] = {t, t};
    const phx_op_desc add = {sizeof(phx_op_desc), PHX_OP_ADD, nullptr, in, 2, &t, 1};
    for (int i = 0; i < 5; ++i)
      if (phx_op_run(stream, &add, nullptr) != PHX_STATUS_OK) _exit(3);
    if (phx_stream_synchronize(stream) != PHX_STATUS_OK) _exit(4);
    raise(SIGKILL);
    _exit(5);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  const json events = parse_trace(path, false);
  check_layout(events);
  int adds = 0;
  for (const json& e : events) adds += e["name"] == "add" && e["cat"] == "op";
  EXPECT_EQ(adds, 5);
}

// A process that exits normally without ending its trace or destroying its context
// leaves a complete file.
TEST_F(Trace, NormalExitCompletesTheFile) {
  const std::string path = file("exit.json");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The CPU plugin alone: lavapipe's threads leak when a process exits without destroying
    // its context, which LeakSanitizer would report at this exit.
    const std::string cpu = std::string(PHX_TEST_DEFAULT_PLUGIN_DIR) + "/phx_cpu.so";
    const char* paths[] = {cpu.c_str()};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 1;
    options.use_default_search_path = 0;
    phx_context context = nullptr;
    if (phx_context_create(&options, &context) != PHX_STATUS_OK ||
        phx_trace_begin(context, path.c_str()) != PHX_STATUS_OK)
      _exit(2);
    exit(0);  // exit, not _exit: the library completes its open traces then
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  check_layout(parse_trace(path, true));
}

TEST_F(Trace, UnwritablePathFailsCleanly) {
  open(0);
  const std::string path = "/nonexistent-phx-directory/run.json";
  EXPECT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(phx_last_error(), path.c_str()), nullptr) << phx_last_error();
  // Nothing was begun: ending is refused, and a writable path works afterwards.
  EXPECT_EQ(phx_trace_end(context_), PHX_STATUS_INVALID_ARGUMENT);
  const std::string good = file("after_failure.json");
  EXPECT_EQ(phx_trace_begin(context_, good.c_str()), PHX_STATUS_OK) << phx_last_error();
  EXPECT_EQ(phx_trace_end(context_), PHX_STATUS_OK);
  check_layout(parse_trace(good, true));
}

TEST_F(Trace, BadInputIsRefusedWithAMessage) {
  open(0);
  const std::string path = file("bad_input.json");
  EXPECT_EQ(phx_trace_begin(nullptr, path.c_str()), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_trace_end(nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_trace_begin(context_, nullptr), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(phx_last_error(), "path is null"), nullptr) << phx_last_error();
  EXPECT_EQ(phx_trace_begin(context_, ""), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(phx_trace_end(context_), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(phx_last_error(), "no trace"), nullptr) << phx_last_error();
  ASSERT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_OK);
  EXPECT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(phx_last_error(), "already"), nullptr) << phx_last_error();
  // The refused second begin left the first trace as it was.
  EXPECT_EQ(phx_trace_end(context_), PHX_STATUS_OK);
  check_layout(parse_trace(path, true));
}

// "%p" names the file by process id, so that ranks started alike write their own.
TEST_F(Trace, PercentPBecomesTheProcessId) {
  open(0);
  const std::string pattern = temp_path("rank_%p.json");
  const std::string expected = temp_path("rank_" + std::to_string(getpid()) + ".json");
  files_.push_back(expected);
  ASSERT_EQ(phx_trace_begin(context_, pattern.c_str()), PHX_STATUS_OK) << phx_last_error();
  ASSERT_EQ(phx_trace_end(context_), PHX_STATUS_OK);
  check_layout(parse_trace(expected, true));
}

std::vector<std::string> warnings;
void keep_warnings(void*, phx_log_level level, const char* message) {
  if (level >= PHX_LOG_WARN) warnings.emplace_back(message);
}

// PHX_TRACE begins a trace at context creation; an unwritable one is a warning only.
TEST_F(Trace, EnvironmentVariableBeginsATrace) {
  const std::string path = file("environment.json");
  ASSERT_EQ(setenv("PHX_TRACE", path.c_str(), 1), 0);
  open(0);
  unsetenv("PHX_TRACE");
  EXPECT_EQ(phx_trace_begin(context_, path.c_str()), PHX_STATUS_INVALID_ARGUMENT);  // begun
  ASSERT_EQ(phx_context_destroy(context_), PHX_STATUS_OK);
  context_ = nullptr;
  check_layout(parse_trace(path, true));

  ASSERT_EQ(setenv("PHX_TRACE", "/nonexistent-phx-directory/run.json", 1), 0);
  phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
  options.log_callback = keep_warnings;
  warnings.clear();
  EXPECT_EQ(phx_context_create(&options, &context_), PHX_STATUS_OK) << phx_last_error();
  unsetenv("PHX_TRACE");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("PHX_TRACE"), std::string::npos) << warnings[0];
  EXPECT_EQ(phx_trace_end(context_), PHX_STATUS_INVALID_ARGUMENT);
}

}  // namespace
