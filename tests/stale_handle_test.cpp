// Every public function that takes a handle, given a bad one in each handle parameter: a
// destroyed handle, one of another kind (a tensor passed as a stream), a made-up value,
// null, and, where another argument fixes the context, a live handle of another context.
// Each must answer INVALID_ARGUMENT with a message naming the function, never crash, and
// leave every live object working.
//
// The table lists every such function of phynexus.h, graph.h and comm.h;
// HeaderFunctionsAreAllInTheTable reads the headers and fails for a function that takes a handle
// and is not listed, so a new one cannot go untested.
#include <gtest/gtest.h>
#include <phynexus/phynexus.h>

#include <cctype>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

enum class Kind { kContext, kTensor, kStream, kCalibrator, kGraph, kExecutable, kEvent, kComm };
constexpr Kind kKinds[] = {Kind::kContext, Kind::kTensor,     Kind::kStream, Kind::kCalibrator,
                           Kind::kGraph,   Kind::kExecutable, Kind::kEvent,  Kind::kComm};

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kContext:
      return "phx_context";
    case Kind::kTensor:
      return "phx_tensor";
    case Kind::kStream:
      return "phx_stream";
    case Kind::kCalibrator:
      return "phx_calibrator";
    case Kind::kGraph:
      return "phx_graph";
    case Kind::kExecutable:
      return "phx_executable";
    case Kind::kEvent:
      return "phx_event";
    case Kind::kComm:
      return "phx_comm";
  }
  return "?";
}

template <class Handle>
uintptr_t raw(Handle handle) {
  return reinterpret_cast<uintptr_t>(handle);
}
template <class Handle>
Handle as(uintptr_t value) {
  return reinterpret_cast<Handle>(value);
}

// The objects a call needs besides the handle under test: a context with the CPU plugin,
// two tensors, a stream, a calibrator, a graph (x + x of an f32[4] input x) and its
// executable in it.
struct World {
  phx_context context = nullptr;
  phx_tensor tensor = nullptr, other_tensor = nullptr, output = nullptr;
  phx_stream stream = nullptr;
  phx_calibrator calibrator = nullptr;
  phx_graph graph = nullptr;
  phx_executable executable = nullptr;
  phx_event event = nullptr;
  phx_comm comm = nullptr;  // two ranks on the CPU device
  phx_value x = 0, sum = 0;

  void create() {
    const char* paths[] = {PHX_TEST_DEFAULT_PLUGIN_DIR "/phx_cpu.so"};
    phx_context_options options = PHX_CONTEXT_OPTIONS_INIT;
    options.plugin_paths = paths;
    options.plugin_path_count = 1;
    options.use_default_search_path = 0;
    options.num_threads = 1;
    ASSERT_EQ(phx_context_create(&options, &context), PHX_STATUS_OK) << phx_last_error();
    const int64_t shape[1] = {4};
    const float values[4] = {1, 2, 3, 4};
    for (phx_tensor* t : {&tensor, &other_tensor, &output}) {
      ASSERT_EQ(phx_tensor_create(context, 0, PHX_DTYPE_F32, 1, shape, t), PHX_STATUS_OK)
          << phx_last_error();
      ASSERT_EQ(phx_tensor_upload(*t, 0, values, sizeof values), PHX_STATUS_OK);
    }
    ASSERT_EQ(phx_stream_create(context, 0, &stream), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_calibrator_create(context, nullptr, &calibrator), PHX_STATUS_OK);
    ASSERT_EQ(phx_graph_create(context, &graph), PHX_STATUS_OK) << phx_last_error();
    phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
    input.dtype = PHX_DTYPE_F32;
    input.rank = 1;
    input.shape = shape;
    ASSERT_EQ(phx_graph_add_input(graph, &input, &x), PHX_STATUS_OK) << phx_last_error();
    const phx_value operands[2] = {x, x};
    phx_graph_node_desc node = PHX_GRAPH_NODE_DESC_INIT;
    node.op = PHX_OP_ADD;
    node.inputs = operands;
    node.input_count = 2;
    node.output_count = 1;
    ASSERT_EQ(phx_graph_add_node(graph, &node, &sum), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_graph_add_output(graph, sum, nullptr), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_graph_compile(context, graph, nullptr, &executable), PHX_STATUS_OK)
        << phx_last_error();
    ASSERT_EQ(phx_event_record(stream, 0, &event), PHX_STATUS_OK) << phx_last_error();
    const size_t devices[2] = {0, 0};
    ASSERT_EQ(phx_comm_create(context, devices, 2, nullptr, &comm), PHX_STATUS_OK)
        << phx_last_error();
  }

  // Everything still works: an add gives the right sums, the calibrator computes.
  void expect_working() const {
    const phx_tensor inputs[2] = {tensor, other_tensor};
    const phx_op_desc desc = {sizeof desc, PHX_OP_ADD, nullptr, inputs, 2, &output, 1};
    ASSERT_EQ(phx_op_run(stream, &desc, nullptr), PHX_STATUS_OK) << phx_last_error();
    ASSERT_EQ(phx_stream_synchronize(stream), PHX_STATUS_OK) << phx_last_error();
    float sums[4] = {};
    ASSERT_EQ(phx_tensor_download(output, 0, sums, sizeof sums), PHX_STATUS_OK);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(sums[i], 2.0f * (i + 1));
    ASSERT_EQ(phx_executable_run(stream, executable, &tensor, 1, &output, 1, nullptr),
              PHX_STATUS_OK)
        << phx_last_error();
    float doubled[4] = {};
    ASSERT_EQ(phx_tensor_download(output, 0, doubled, sizeof doubled), PHX_STATUS_OK);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(doubled[i], 2.0f * (i + 1));
    ASSERT_EQ(phx_calibrator_observe(calibrator, tensor), PHX_STATUS_OK) << phx_last_error();
    size_t count = 0;
    EXPECT_EQ(phx_calibrator_compute(calibrator, nullptr, nullptr, 0, &count), PHX_STATUS_OK);
    EXPECT_EQ(count, 1u);
  }

  uintptr_t live(Kind kind) const {
    switch (kind) {
      case Kind::kContext:
        return raw(context);
      case Kind::kTensor:
        return raw(tensor);
      case Kind::kStream:
        return raw(stream);
      case Kind::kCalibrator:
        return raw(calibrator);
      case Kind::kGraph:
        return raw(graph);
      case Kind::kExecutable:
        return raw(executable);
      case Kind::kEvent:
        return raw(event);
      case Kind::kComm:
        return raw(comm);
    }
    return 0;
  }
};

// One handle parameter of one function: the call with value in that parameter and
// valid arguments elsewhere. foreign: a live handle of another context is wrong there,
// because another argument fixes the context.
struct Row {
  const char* function;
  Kind kind;
  bool foreign;
  std::function<phx_status(const World&, uintptr_t)> call;
};

phx_status add(const World& w, phx_stream stream, phx_tensor a, phx_tensor out) {
  const phx_tensor inputs[2] = {a, w.other_tensor};
  const phx_op_desc desc = {sizeof desc, PHX_OP_ADD, nullptr, inputs, 2, &out, 1};
  uint64_t ticket = 0;
  return phx_op_run(stream, &desc, &ticket);
}

phx_status run(phx_stream stream, phx_executable executable, phx_tensor in, phx_tensor out) {
  uint64_t ticket = 0;
  return phx_executable_run(stream, executable, &in, 1, &out, 1, &ticket);
}

const std::vector<Row>& rows() {
  using W = const World&;
  using K = Kind;
  static const std::vector<Row> table = {
      {"phx_context_destroy", K::kContext, false,
       [](W, uintptr_t h) { return phx_context_destroy(as<phx_context>(h)); }},
      {"phx_log_message", K::kContext, false,
       [](W, uintptr_t h) {
         return phx_log_message(as<phx_context>(h), PHX_LOG_WARN, "a stale handle's message");
       }},
      {"phx_plugin_count", K::kContext, false,
       [](W, uintptr_t h) {
         size_t count = 0;
         return phx_plugin_count(as<phx_context>(h), &count);
       }},
      {"phx_plugin_get", K::kContext, false,
       [](W, uintptr_t h) {
         phx_plugin_info info = PHX_PLUGIN_INFO_INIT;
         return phx_plugin_get(as<phx_context>(h), 0, &info);
       }},
      {"phx_device_count", K::kContext, false,
       [](W, uintptr_t h) {
         size_t count = 0;
         return phx_device_count(as<phx_context>(h), &count);
       }},
      {"phx_device_get", K::kContext, false,
       [](W, uintptr_t h) {
         phx_device_info info = PHX_DEVICE_INFO_INIT;
         return phx_device_get(as<phx_context>(h), 0, &info);
       }},
      {"phx_tensor_create", K::kContext, false,
       [](W, uintptr_t h) {
         const int64_t shape[1] = {4};
         phx_tensor t = nullptr;
         return phx_tensor_create(as<phx_context>(h), 0, PHX_DTYPE_F32, 1, shape, &t);
       }},
      {"phx_tensor_destroy", K::kTensor, false,
       [](W, uintptr_t h) { return phx_tensor_destroy(as<phx_tensor>(h)); }},
      {"phx_tensor_describe", K::kTensor, false,
       [](W, uintptr_t h) {
         phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
         return phx_tensor_describe(as<phx_tensor>(h), &desc);
       }},
      {"phx_tensor_upload", K::kTensor, false,
       [](W, uintptr_t h) {
         const float data[4] = {};
         return phx_tensor_upload(as<phx_tensor>(h), 0, data, sizeof data);
       }},
      {"phx_tensor_download", K::kTensor, false,
       [](W, uintptr_t h) {
         float data[4] = {};
         return phx_tensor_download(as<phx_tensor>(h), 0, data, sizeof data);
       }},
      {"phx_trace_begin", K::kContext, false,
       [](W, uintptr_t h) { return phx_trace_begin(as<phx_context>(h), "/dev/null"); }},
      {"phx_trace_end", K::kContext, false,
       [](W, uintptr_t h) { return phx_trace_end(as<phx_context>(h)); }},
      {"phx_tensor_create_from_host", K::kContext, false,
       [](W, uintptr_t h) {
         static float data[4] = {};
         const int64_t shape[1] = {4};
         phx_tensor t = nullptr;
         return phx_tensor_create_from_host(as<phx_context>(h), 0, PHX_DTYPE_F32, 1, shape, data,
                                            nullptr, nullptr, &t);
       }},
      {"phx_tensor_host_data", K::kTensor, false,
       [](W, uintptr_t h) {
         void* data = nullptr;
         return phx_tensor_host_data(as<phx_tensor>(h), &data);
       }},
      {"phx_tensor_copy", K::kTensor, true,
       [](W w, uintptr_t h) { return phx_tensor_copy(as<phx_tensor>(h), w.tensor); }},
      {"phx_tensor_copy", K::kTensor, true,
       [](W w, uintptr_t h) { return phx_tensor_copy(w.other_tensor, as<phx_tensor>(h)); }},
      {"phx_stream_create", K::kContext, false,
       [](W, uintptr_t h) {
         phx_stream s = nullptr;
         return phx_stream_create(as<phx_context>(h), 0, &s);
       }},
      {"phx_stream_destroy", K::kStream, false,
       [](W, uintptr_t h) { return phx_stream_destroy(as<phx_stream>(h)); }},
      {"phx_stream_synchronize", K::kStream, false,
       [](W, uintptr_t h) { return phx_stream_synchronize(as<phx_stream>(h)); }},
      {"phx_stream_wait", K::kStream, false,
       [](W, uintptr_t h) { return phx_stream_wait(as<phx_stream>(h), 1); }},
      {"phx_stream_query", K::kStream, false,
       [](W, uintptr_t h) {
         int done = 0;
         return phx_stream_query(as<phx_stream>(h), 1, &done);
       }},
      {"phx_op_run", K::kStream, false,
       [](W w, uintptr_t h) { return add(w, as<phx_stream>(h), w.tensor, w.output); }},
      {"phx_op_run", K::kTensor, true,
       [](W w, uintptr_t h) { return add(w, w.stream, as<phx_tensor>(h), w.output); }},
      {"phx_op_run", K::kTensor, true,
       [](W w, uintptr_t h) { return add(w, w.stream, w.tensor, as<phx_tensor>(h)); }},
      {"phx_device_supports", K::kContext, false,
       [](W, uintptr_t h) {
         int supported = 0;
         return phx_device_supports(as<phx_context>(h), 0, PHX_OP_ADD, PHX_DTYPE_F32, &supported);
       }},
      {"phx_device_supports_op", K::kContext, false,
       [](W, uintptr_t h) {
         const phx_dtype in[] = {PHX_DTYPE_F32, PHX_DTYPE_F32}, out[] = {PHX_DTYPE_F32};
         const phx_op_variant variant = {sizeof variant, PHX_OP_ADD, nullptr, in, 2, out, 1};
         int supported = 0;
         return phx_device_supports_op(as<phx_context>(h), 0, &variant, &supported);
       }},
      {"phx_profile_count", K::kStream, false,
       [](W, uintptr_t h) {
         size_t count = 0;
         return phx_profile_count(as<phx_stream>(h), &count);
       }},
      {"phx_profile_get", K::kStream, false,
       [](W, uintptr_t h) {
         phx_profile_record record = PHX_PROFILE_RECORD_INIT;
         return phx_profile_get(as<phx_stream>(h), 0, &record);
       }},
      {"phx_profile_clear", K::kStream, false,
       [](W, uintptr_t h) { return phx_profile_clear(as<phx_stream>(h)); }},
      {"phx_device_stats", K::kContext, false,
       [](W, uintptr_t h) {
         size_t count = 0;
         return phx_device_stats(as<phx_context>(h), 0, nullptr, 0, &count);
       }},
      {"phx_memory_stats_get", K::kContext, false,
       [](W, uintptr_t h) {
         phx_memory_stats stats = PHX_MEMORY_STATS_INIT;
         return phx_memory_stats_get(as<phx_context>(h), 0, &stats);
       }},
      {"phx_memory_set_limit", K::kContext, false,
       [](W, uintptr_t h) { return phx_memory_set_limit(as<phx_context>(h), 0, 0); }},
      {"phx_memory_release_cached", K::kContext, false,
       [](W, uintptr_t h) { return phx_memory_release_cached(as<phx_context>(h), 0); }},
      {"phx_calibrator_create", K::kContext, false,
       [](W, uintptr_t h) {
         phx_calibrator c = nullptr;
         return phx_calibrator_create(as<phx_context>(h), nullptr, &c);
       }},
      {"phx_calibrator_destroy", K::kCalibrator, false,
       [](W, uintptr_t h) { return phx_calibrator_destroy(as<phx_calibrator>(h)); }},
      {"phx_calibrator_observe", K::kCalibrator, false,
       [](W w, uintptr_t h) { return phx_calibrator_observe(as<phx_calibrator>(h), w.tensor); }},
      {"phx_calibrator_observe", K::kTensor, true,
       [](W w, uintptr_t h) { return phx_calibrator_observe(w.calibrator, as<phx_tensor>(h)); }},
      {"phx_calibrator_compute", K::kCalibrator, false,
       [](W, uintptr_t h) {
         size_t count = 0;
         return phx_calibrator_compute(as<phx_calibrator>(h), nullptr, nullptr, 0, &count);
       }},
      {"phx_graph_create", K::kContext, false,
       [](W, uintptr_t h) {
         phx_graph g = nullptr;
         return phx_graph_create(as<phx_context>(h), &g);
       }},
      {"phx_graph_destroy", K::kGraph, false,
       [](W, uintptr_t h) { return phx_graph_destroy(as<phx_graph>(h)); }},
      {"phx_graph_add_input", K::kGraph, false,
       [](W, uintptr_t h) {
         const int64_t shape[1] = {4};
         phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
         desc.dtype = PHX_DTYPE_F32;
         desc.rank = 1;
         desc.shape = shape;
         phx_value v = 0;
         return phx_graph_add_input(as<phx_graph>(h), &desc, &v);
       }},
      {"phx_graph_add_constant", K::kGraph, false,
       [](W, uintptr_t h) {
         const int64_t shape[1] = {4};
         const float data[4] = {};
         phx_value v = 0;
         return phx_graph_add_constant(as<phx_graph>(h), nullptr, PHX_DTYPE_F32, 1, shape, data,
                                       sizeof data, &v);
       }},
      {"phx_graph_add_constant_tensor", K::kGraph, false,
       [](W w, uintptr_t h) {
         phx_value v = 0;
         return phx_graph_add_constant_tensor(as<phx_graph>(h), nullptr, w.tensor, &v);
       }},
      {"phx_graph_add_constant_tensor", K::kTensor, true,
       [](W w, uintptr_t h) {
         phx_value v = 0;
         return phx_graph_add_constant_tensor(w.graph, nullptr, as<phx_tensor>(h), &v);
       }},
      {"phx_graph_add_node", K::kGraph, false,
       [](W w, uintptr_t h) {
         phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
         desc.op = PHX_OP_RELU;
         desc.inputs = &w.x;
         desc.input_count = 1;
         desc.output_count = 1;
         phx_value v = 0;
         return phx_graph_add_node(as<phx_graph>(h), &desc, &v);
       }},
      {"phx_graph_add_output", K::kGraph, false,
       [](W w, uintptr_t h) { return phx_graph_add_output(as<phx_graph>(h), w.sum, nullptr); }},
      {"phx_graph_value_info", K::kGraph, false,
       [](W w, uintptr_t h) {
         phx_value_info info = PHX_VALUE_INFO_INIT;
         return phx_graph_value_info(as<phx_graph>(h), w.x, &info);
       }},
      {"phx_graph_compile", K::kContext, true,
       [](W w, uintptr_t h) {
         phx_executable e = nullptr;
         return phx_graph_compile(as<phx_context>(h), w.graph, nullptr, &e);
       }},
      {"phx_graph_compile", K::kGraph, true,
       [](W w, uintptr_t h) {
         phx_executable e = nullptr;
         return phx_graph_compile(w.context, as<phx_graph>(h), nullptr, &e);
       }},
      {"phx_executable_destroy", K::kExecutable, false,
       [](W, uintptr_t h) { return phx_executable_destroy(as<phx_executable>(h)); }},
      {"phx_executable_run", K::kStream, true,
       [](W w, uintptr_t h) { return run(as<phx_stream>(h), w.executable, w.tensor, w.output); }},
      {"phx_executable_run", K::kExecutable, true,
       [](W w, uintptr_t h) { return run(w.stream, as<phx_executable>(h), w.tensor, w.output); }},
      {"phx_executable_run", K::kTensor, true,
       [](W w, uintptr_t h) { return run(w.stream, w.executable, as<phx_tensor>(h), w.output); }},
      {"phx_executable_run", K::kTensor, true,
       [](W w, uintptr_t h) { return run(w.stream, w.executable, w.tensor, as<phx_tensor>(h)); }},
      {"phx_executable_output_desc", K::kExecutable, false,
       [](W w, uintptr_t h) {
         phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
         return phx_executable_output_desc(as<phx_executable>(h), &w.tensor, 1, 0, &desc);
       }},
      {"phx_executable_output_desc", K::kTensor, true,
       [](W w, uintptr_t h) {
         phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
         const phx_tensor input = as<phx_tensor>(h);
         return phx_executable_output_desc(w.executable, &input, 1, 0, &desc);
       }},
      {"phx_executable_describe", K::kExecutable, false,
       [](W, uintptr_t h) {
         phx_executable_info info = PHX_EXECUTABLE_INFO_INIT;
         return phx_executable_describe(as<phx_executable>(h), &info);
       }},
      {"phx_executable_stats", K::kExecutable, false,
       [](W, uintptr_t h) {
         size_t count = 0;
         return phx_executable_stats(as<phx_executable>(h), nullptr, 0, &count);
       }},
      {"phx_executable_describe_node", K::kExecutable, false,
       [](W, uintptr_t h) {
         phx_executable_node_info info = PHX_EXECUTABLE_NODE_INFO_INIT;
         return phx_executable_describe_node(as<phx_executable>(h), 0, &info);
       }},
      {"phx_executable_input_info", K::kExecutable, false,
       [](W, uintptr_t h) {
         phx_value_info info = PHX_VALUE_INFO_INIT;
         return phx_executable_input_info(as<phx_executable>(h), 0, &info);
       }},
      {"phx_executable_output_info", K::kExecutable, false,
       [](W, uintptr_t h) {
         phx_value_info info = PHX_VALUE_INFO_INIT;
         return phx_executable_output_info(as<phx_executable>(h), 0, &info);
       }},
      {"phx_executable_save", K::kExecutable, false,
       [](W, uintptr_t h) {
         size_t size = 0;
         return phx_executable_save(as<phx_executable>(h), nullptr, 0, &size);
       }},
      {"phx_executable_load", K::kContext, false,
       [](W, uintptr_t h) {
         const unsigned char data[16] = {};
         phx_executable exe = nullptr;
         return phx_executable_load(as<phx_context>(h), data, sizeof data, nullptr, &exe);
       }},
      // comm.h: events, asynchronous transfers, communicators.
      {"phx_event_record", K::kStream, false,
       [](W, uintptr_t h) {
         phx_event e = nullptr;
         return phx_event_record(as<phx_stream>(h), 0, &e);
       }},
      {"phx_event_destroy", K::kEvent, false,
       [](W, uintptr_t h) { return phx_event_destroy(as<phx_event>(h)); }},
      {"phx_event_query", K::kEvent, false,
       [](W, uintptr_t h) {
         int done = 0;
         return phx_event_query(as<phx_event>(h), &done);
       }},
      {"phx_event_synchronize", K::kEvent, false,
       [](W, uintptr_t h) { return phx_event_synchronize(as<phx_event>(h)); }},
      {"phx_stream_wait_event", K::kStream, true,
       [](W w, uintptr_t h) { return phx_stream_wait_event(as<phx_stream>(h), w.event); }},
      {"phx_stream_wait_event", K::kEvent, true,
       [](W w, uintptr_t h) { return phx_stream_wait_event(w.stream, as<phx_event>(h)); }},
      {"phx_tensor_upload_async", K::kStream, true,
       [](W w, uintptr_t h) {
         static const float data[4] = {};
         return phx_tensor_upload_async(as<phx_stream>(h), w.tensor, 0, data, sizeof data,
                                        nullptr);
       }},
      {"phx_tensor_upload_async", K::kTensor, true,
       [](W w, uintptr_t h) {
         static const float data[4] = {};
         return phx_tensor_upload_async(w.stream, as<phx_tensor>(h), 0, data, sizeof data,
                                        nullptr);
       }},
      {"phx_tensor_download_async", K::kStream, true,
       [](W w, uintptr_t h) {
         static float data[4] = {};
         return phx_tensor_download_async(as<phx_stream>(h), w.tensor, 0, data, sizeof data,
                                          nullptr);
       }},
      {"phx_tensor_download_async", K::kTensor, true,
       [](W w, uintptr_t h) {
         static float data[4] = {};
         return phx_tensor_download_async(w.stream, as<phx_tensor>(h), 0, data, sizeof data,
                                          nullptr);
       }},
      {"phx_tensor_copy_async", K::kStream, true,
       [](W w, uintptr_t h) {
         return phx_tensor_copy_async(as<phx_stream>(h), w.output, w.tensor, nullptr);
       }},
      {"phx_tensor_copy_async", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_tensor_copy_async(w.stream, as<phx_tensor>(h), w.tensor, nullptr);
       }},
      {"phx_tensor_copy_async", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_tensor_copy_async(w.stream, w.output, as<phx_tensor>(h), nullptr);
       }},
      {"phx_comm_create", K::kContext, false,
       [](W, uintptr_t h) {
         const size_t devices[1] = {0};
         phx_comm c = nullptr;
         return phx_comm_create(as<phx_context>(h), devices, 1, nullptr, &c);
       }},
      {"phx_comm_destroy", K::kComm, false,
       [](W, uintptr_t h) { return phx_comm_destroy(as<phx_comm>(h)); }},
      {"phx_comm_ranks", K::kComm, false,
       [](W, uintptr_t h) {
         size_t ranks = 0;
         return phx_comm_ranks(as<phx_comm>(h), &ranks);
       }},
      {"phx_all_reduce", K::kComm, true,
       [](W w, uintptr_t h) {
         return phx_all_reduce(as<phx_comm>(h), 0, w.stream, w.tensor, w.output, PHX_REDUCE_SUM,
                               nullptr);
       }},
      {"phx_all_reduce", K::kStream, true,
       [](W w, uintptr_t h) {
         return phx_all_reduce(w.comm, 0, as<phx_stream>(h), w.tensor, w.output, PHX_REDUCE_SUM,
                               nullptr);
       }},
      {"phx_all_reduce", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_all_reduce(w.comm, 0, w.stream, as<phx_tensor>(h), w.output, PHX_REDUCE_SUM,
                               nullptr);
       }},
      {"phx_all_reduce", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_all_reduce(w.comm, 0, w.stream, w.tensor, as<phx_tensor>(h), PHX_REDUCE_SUM,
                               nullptr);
       }},
      {"phx_all_gather", K::kComm, true,
       [](W w, uintptr_t h) {
         return phx_all_gather(as<phx_comm>(h), 0, w.stream, w.tensor, w.output, nullptr);
       }},
      {"phx_all_gather", K::kStream, true,
       [](W w, uintptr_t h) {
         return phx_all_gather(w.comm, 0, as<phx_stream>(h), w.tensor, w.output, nullptr);
       }},
      {"phx_all_gather", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_all_gather(w.comm, 0, w.stream, as<phx_tensor>(h), w.output, nullptr);
       }},
      {"phx_all_gather", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_all_gather(w.comm, 0, w.stream, w.tensor, as<phx_tensor>(h), nullptr);
       }},
      {"phx_reduce_scatter", K::kComm, true,
       [](W w, uintptr_t h) {
         return phx_reduce_scatter(as<phx_comm>(h), 0, w.stream, w.tensor, w.output,
                                   PHX_REDUCE_SUM, nullptr);
       }},
      {"phx_reduce_scatter", K::kStream, true,
       [](W w, uintptr_t h) {
         return phx_reduce_scatter(w.comm, 0, as<phx_stream>(h), w.tensor, w.output,
                                   PHX_REDUCE_SUM, nullptr);
       }},
      {"phx_reduce_scatter", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_reduce_scatter(w.comm, 0, w.stream, as<phx_tensor>(h), w.output,
                                   PHX_REDUCE_SUM, nullptr);
       }},
      {"phx_reduce_scatter", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_reduce_scatter(w.comm, 0, w.stream, w.tensor, as<phx_tensor>(h),
                                   PHX_REDUCE_SUM, nullptr);
       }},
      {"phx_broadcast", K::kComm, true,
       [](W w, uintptr_t h) {
         return phx_broadcast(as<phx_comm>(h), 0, w.stream, w.tensor, 0, nullptr);
       }},
      {"phx_broadcast", K::kStream, true,
       [](W w, uintptr_t h) {
         return phx_broadcast(w.comm, 0, as<phx_stream>(h), w.tensor, 0, nullptr);
       }},
      {"phx_broadcast", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_broadcast(w.comm, 0, w.stream, as<phx_tensor>(h), 0, nullptr);
       }},
      {"phx_send", K::kComm, true,
       [](W w, uintptr_t h) { return phx_send(as<phx_comm>(h), 0, w.stream, w.tensor, 1, nullptr); }},
      {"phx_send", K::kStream, true,
       [](W w, uintptr_t h) { return phx_send(w.comm, 0, as<phx_stream>(h), w.tensor, 1, nullptr); }},
      {"phx_send", K::kTensor, true,
       [](W w, uintptr_t h) { return phx_send(w.comm, 0, w.stream, as<phx_tensor>(h), 1, nullptr); }},
      {"phx_shard_scatter", K::kComm, true,
       [](W w, uintptr_t h) {
         return phx_shard_scatter(as<phx_comm>(h), 0, w.stream, w.output, 0, 0, w.tensor, nullptr);
       }},
      {"phx_shard_scatter", K::kStream, true,
       [](W w, uintptr_t h) {
         return phx_shard_scatter(w.comm, 0, as<phx_stream>(h), w.output, 0, 0, w.tensor, nullptr);
       }},
      {"phx_shard_scatter", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_shard_scatter(w.comm, 0, w.stream, as<phx_tensor>(h), 0, 0, w.tensor, nullptr);
       }},
      {"phx_shard_scatter", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_shard_scatter(w.comm, 0, w.stream, w.output, 0, 0, as<phx_tensor>(h), nullptr);
       }},
      {"phx_shard_gather", K::kComm, true,
       [](W w, uintptr_t h) {
         return phx_shard_gather(as<phx_comm>(h), 0, w.stream, w.tensor, 0, w.output, nullptr);
       }},
      {"phx_shard_gather", K::kStream, true,
       [](W w, uintptr_t h) {
         return phx_shard_gather(w.comm, 0, as<phx_stream>(h), w.tensor, 0, w.output, nullptr);
       }},
      {"phx_shard_gather", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_shard_gather(w.comm, 0, w.stream, as<phx_tensor>(h), 0, w.output, nullptr);
       }},
      {"phx_shard_gather", K::kTensor, true,
       [](W w, uintptr_t h) {
         return phx_shard_gather(w.comm, 0, w.stream, w.tensor, 0, as<phx_tensor>(h), nullptr);
       }},
      {"phx_comm_create_transport", K::kContext, false,
       [](W, uintptr_t h) {
         phx_comm_transport transport{};
         transport.struct_size = sizeof transport;
         phx_comm c = nullptr;
         return phx_comm_create_transport(as<phx_context>(h), 0, &transport, &c);
       }},
      {"phx_recv", K::kComm, true,
       [](W w, uintptr_t h) { return phx_recv(as<phx_comm>(h), 1, w.stream, w.tensor, 0, nullptr); }},
      {"phx_recv", K::kStream, true,
       [](W w, uintptr_t h) { return phx_recv(w.comm, 1, as<phx_stream>(h), w.tensor, 0, nullptr); }},
      {"phx_recv", K::kTensor, true,
       [](W w, uintptr_t h) { return phx_recv(w.comm, 1, w.stream, as<phx_tensor>(h), 0, nullptr); }},
  };
  return table;
}

// A bad value for a parameter, and what it is, for the failure message.
struct BadValue {
  std::string what;
  uintptr_t value;
};

class StaleHandles : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(world_.create());
    ASSERT_NO_FATAL_FAILURE(foreign_.create());
    // Handles of every kind that died: alone, and with their context.
    World doomed;
    ASSERT_NO_FATAL_FAILURE(doomed.create());
    World& w = world_;
    phx_tensor tensor = nullptr;
    const int64_t shape[1] = {4};
    ASSERT_EQ(phx_tensor_create(w.context, 0, PHX_DTYPE_F32, 1, shape, &tensor), PHX_STATUS_OK);
    phx_stream stream = nullptr;
    ASSERT_EQ(phx_stream_create(w.context, 0, &stream), PHX_STATUS_OK);
    phx_calibrator calibrator = nullptr;
    ASSERT_EQ(phx_calibrator_create(w.context, nullptr, &calibrator), PHX_STATUS_OK);
    phx_graph graph = nullptr;
    ASSERT_EQ(phx_graph_create(w.context, &graph), PHX_STATUS_OK);
    phx_executable executable = nullptr;
    ASSERT_EQ(phx_graph_compile(w.context, w.graph, nullptr, &executable), PHX_STATUS_OK);
    phx_event event = nullptr;
    ASSERT_EQ(phx_event_record(w.stream, 0, &event), PHX_STATUS_OK);
    phx_comm comm = nullptr;
    const size_t devices[1] = {0};
    ASSERT_EQ(phx_comm_create(w.context, devices, 1, nullptr, &comm), PHX_STATUS_OK);
    ASSERT_EQ(phx_event_destroy(event), PHX_STATUS_OK);
    ASSERT_EQ(phx_comm_destroy(comm), PHX_STATUS_OK);
    ASSERT_EQ(phx_tensor_destroy(tensor), PHX_STATUS_OK);
    ASSERT_EQ(phx_stream_destroy(stream), PHX_STATUS_OK);
    ASSERT_EQ(phx_calibrator_destroy(calibrator), PHX_STATUS_OK);
    ASSERT_EQ(phx_graph_destroy(graph), PHX_STATUS_OK);
    ASSERT_EQ(phx_executable_destroy(executable), PHX_STATUS_OK);
    destroyed_[Kind::kTensor].push_back({"a destroyed tensor", raw(tensor)});
    destroyed_[Kind::kStream].push_back({"a destroyed stream", raw(stream)});
    destroyed_[Kind::kCalibrator].push_back({"a destroyed calibrator", raw(calibrator)});
    destroyed_[Kind::kGraph].push_back({"a destroyed graph", raw(graph)});
    destroyed_[Kind::kExecutable].push_back({"a destroyed executable", raw(executable)});
    destroyed_[Kind::kEvent].push_back({"a destroyed event", raw(event)});
    destroyed_[Kind::kComm].push_back({"a destroyed communicator", raw(comm)});
    for (Kind kind : kKinds)
      destroyed_[kind].push_back(
          {std::string("a ") + kind_name(kind) + " of a destroyed context", doomed.live(kind)});
    ASSERT_EQ(phx_context_destroy(doomed.context), PHX_STATUS_OK);
  }
  void TearDown() override {
    world_.expect_working();
    foreign_.expect_working();
    EXPECT_EQ(phx_context_destroy(world_.context), PHX_STATUS_OK);
    EXPECT_EQ(phx_context_destroy(foreign_.context), PHX_STATUS_OK);
  }

  // Every value that is wrong for a parameter of kind.
  std::vector<BadValue> bad_values(Kind kind, bool foreign) const {
    std::vector<BadValue> values = destroyed_.at(kind);
    values.push_back({"null", 0});
    for (Kind other : kKinds) {
      if (other != kind)
        values.push_back({std::string("a live ") + kind_name(other), world_.live(other)});
    }
    // Made up: plain numbers, and numbers that look like a handle of the right kind (its
    // top byte) with a slot never used or a generation never given out.
    const uintptr_t live = world_.live(kind);
    const uintptr_t kind_bits = live & (uintptr_t{0xff} << 56);
    values.push_back({"1", 1});
    values.push_back({"0xdeadbeef", 0xdeadbeef});
    values.push_back({"all ones", ~uintptr_t{0}});
    values.push_back({"the live handle plus one", live + 1});
    values.push_back({"the live handle's generation flipped", live ^ 0x80000000u});
    values.push_back({"a slot never used", kind_bits | (uintptr_t{0xfffff0} << 32) | 1});
    values.push_back({"generation 0", live & ~uintptr_t{0xffffffff}});
    values.push_back({"the address of a live object", reinterpret_cast<uintptr_t>(&world_)});
    if (foreign) values.push_back({"a live handle of another context", foreign_.live(kind)});
    return values;
  }

  World world_, foreign_;
  std::map<Kind, std::vector<BadValue>> destroyed_;
};

TEST_F(StaleHandles, EveryHandleParameterRejectsEveryBadValue) {
  for (const Row& row : rows()) {
    for (const BadValue& bad : bad_values(row.kind, row.foreign)) {
      const phx_status status = row.call(world_, bad.value);
      const std::string message = phx_last_error();
      EXPECT_EQ(status, PHX_STATUS_INVALID_ARGUMENT)
          << row.function << " with " << bad.what << " as its " << kind_name(row.kind)
          << " returned " << phx_status_name(status) << ": " << message;
      EXPECT_EQ(message.rfind(row.function, 0), 0u)
          << row.function << " with " << bad.what << ": the message does not name it: " << message;
    }
  }
}

// The public functions of phynexus.h, graph.h and comm.h and the handle kinds their parameters
// take (an op descriptor holds tensors). A plain scan rather than std::regex, whose
// libstdc++ 12 code trips -Wmaybe-uninitialized under the sanitizers.
std::map<std::string, std::set<std::string>> header_functions_taking_handles() {
  std::stringstream text;
  for (const char* path : {PHX_TEST_PUBLIC_HEADER, PHX_TEST_GRAPH_HEADER, PHX_TEST_COMM_HEADER}) {
    std::ifstream in(path);
    text << in.rdbuf();
  }
  std::string header = text.str();
  // Comments mention functions and types too.
  for (size_t open; (open = header.find("/*")) != std::string::npos;)
    header.erase(open, header.find("*/", open) + 2 - open);
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  std::map<std::string, std::set<std::string>> found;
  for (size_t at = 0; (at = header.find("PHX_API ", at)) != std::string::npos; ++at) {
    const size_t open = header.find('(', at), close = header.find(')', open);
    size_t name_begin = open;
    while (name_begin > at && is_name_char(header[name_begin - 1])) --name_begin;
    const std::string function = header.substr(name_begin, open - name_begin);
    const std::string params = header.substr(open + 1, close - open - 1);
    for (size_t word = 0; word < params.size();) {
      size_t end = word;
      while (end < params.size() && is_name_char(params[end])) ++end;
      if (end == word) {
        ++word;
        continue;
      }
      const std::string name = params.substr(word, end - word);
      // A handle type followed by '*' is an out parameter, which receives a new handle.
      const size_t next = params.find_first_not_of(' ', end);
      const bool out_parameter = next != std::string::npos && params[next] == '*';
      if (name == "phx_op_desc") found[function].insert("phx_tensor");
      for (const char* kind : {"phx_context", "phx_tensor", "phx_stream", "phx_calibrator",
                               "phx_graph", "phx_executable", "phx_event", "phx_comm"})
        if (name == kind && !out_parameter) found[function].insert(kind);
      word = end;
    }
  }
  return found;
}

TEST(StaleHandleTable, HeaderFunctionsAreAllInTheTable) {
  const auto in_header = header_functions_taking_handles();
  ASSERT_GE(in_header.size(), 25u) << "the header was not parsed: " << PHX_TEST_PUBLIC_HEADER;
  std::map<std::string, std::set<std::string>> in_table;
  for (const Row& row : rows()) in_table[row.function].insert(kind_name(row.kind));
  for (const auto& [function, kinds] : in_header) {
    for (const std::string& kind : kinds) {
      EXPECT_TRUE(in_table[function].count(kind) != 0)
          << function << " takes a " << kind << " but the table has no row for it";
    }
  }
  for (const auto& [function, kinds] : in_table)
    EXPECT_TRUE(in_header.count(function) != 0) << function << " is not in the header";
}

}  // namespace
