// Fuzzes graph building, compiling and running (graph.h): the input is a program of
// commands that add inputs, constants (host bytes or tensors, some destroyed before the
// compile), nodes (any op id, any value numbers, any parameter bytes, any output dtypes)
// and outputs, look values up, and compile the graph for every device and run it with
// inputs of random small sizes. Every call must return a known status with a message
// when it fails, never PHX_STATUS_INTERNAL; an accepted node must describe outputs of a
// known dtype and rank; once the graph, its executables and every tensor are destroyed,
// each device's memory in use must be back where it started.
#include <phynexus/phynexus.h>

#include <algorithm>
#include <string>
#include <vector>

#include "api_checks.h"
#include "fuzz_input.h"
#include "graph_program.h"

namespace {

using namespace phx::fuzz;

constexpr size_t kMaxCommands = 48;
constexpr size_t kMaxDim = 4;  // small tensors: the time goes to the checks, not the kernels
constexpr size_t kHostBytes = 4096;
const char* const kDimNames[] = {nullptr, "batch", "sequence"};

struct State : FuzzContext {
  std::vector<uint8_t> host = std::vector<uint8_t>(kHostBytes, 0x3c);
};
State* state = nullptr;

class Program {
 public:
  Program(const uint8_t* data, size_t size) : in_(data, size) {}

  void run() {
    if (check("phx_graph_create", phx_graph_create(state->context, &graph_)) != PHX_STATUS_OK)
      finding("phx_graph_create", "no graph");
    for (size_t i = 0; i < kMaxCommands && !in_.empty(); ++i) {
      switch (in_.byte() % kGraphCommandCount) {
        case kGraphInput:
          add_input();
          break;
        case kGraphConstant:
          add_constant();
          break;
        case kGraphTensor:
          add_constant_tensor();
          break;
        case kGraphOutput:
          add_output();
          break;
        case kGraphInfo:
          value_info();
          break;
        case kGraphCompile:
          compile_and_run();
          break;
        default:
          add_node();
          break;
      }
    }
    if (check("phx_graph_destroy", phx_graph_destroy(graph_)) != PHX_STATUS_OK)
      finding("phx_graph_destroy", "a live graph could not be destroyed");
    for (phx_tensor t : tensors_) check("phx_tensor_destroy", phx_tensor_destroy(t));
  }

 private:
  // A value number: mostly one the graph has, sometimes past them or PHX_VALUE_NONE.
  phx_value value() {
    const uint8_t code = in_.byte();
    if (code == 0xff) return PHX_VALUE_NONE;
    return static_cast<phx_value>(code % (values_ + 2));
  }

  void read_shape(size_t rank, int64_t* shape, bool allow_dynamic) {
    for (size_t d = 0; d < rank; ++d) {
      const uint8_t code = in_.byte();
      shape[d] = allow_dynamic && code == kDynamicDim ? PHX_DIM_DYNAMIC
                                                      : static_cast<int64_t>(code % (kMaxDim + 1));
    }
  }

  void add_input() {
    phx_graph_input_desc desc = PHX_GRAPH_INPUT_DESC_INIT;
    const int dtype = in_.byte() % (PHX_DTYPE_COUNT + 1);
    const size_t rank = in_.byte() % 5;
    int64_t shape[PHX_MAX_RANK] = {};
    read_shape(rank, shape, true);
    const char* names[PHX_MAX_RANK] = {};
    for (size_t d = 0; d < rank; ++d) names[d] = kDimNames[in_.byte() % 3];
    desc.dtype = raw_enum<phx_dtype>(dtype);
    desc.rank = rank;
    desc.shape = shape;
    desc.dim_names = names;
    phx_value v = 0;
    if (check("phx_graph_add_input", phx_graph_add_input(graph_, &desc, &v)) == PHX_STATUS_OK) {
      added(v);
      inputs_.push_back(v);
    }
  }

  void add_constant() {
    const int dtype = in_.byte() % (PHX_DTYPE_COUNT + 1);
    const size_t rank = in_.byte() % 4;
    int64_t shape[PHX_MAX_RANK] = {};
    read_shape(rank, shape, false);
    size_t bytes = dtype_bytes(dtype);
    for (size_t d = 0; d < rank; ++d) bytes *= static_cast<size_t>(std::max<int64_t>(shape[d], 0));
    const size_t size = bytes + (in_.byte() == 0 ? 1 : 0);  // sometimes a wrong size
    if (size > state->host.size()) return;
    phx_value v = 0;
    if (check("phx_graph_add_constant",
              phx_graph_add_constant(graph_, nullptr, raw_enum<phx_dtype>(dtype), rank, shape,
                                     state->host.data(), size, &v)) == PHX_STATUS_OK)
      added(v);
  }

  // A tensor of the first device as a constant; destroyed before the compile when the
  // input says so, which the compile must refuse cleanly.
  void add_constant_tensor() {
    const int64_t shape[1] = {static_cast<int64_t>(in_.byte() % kMaxDim + 1)};
    phx_tensor tensor = nullptr;
    if (check("phx_tensor_create", phx_tensor_create(state->context, 0, PHX_DTYPE_F32, 1, shape,
                                                     &tensor)) != PHX_STATUS_OK)
      return;
    check("phx_tensor_upload", phx_tensor_upload(tensor, 0, state->host.data(), 4 * shape[0]));
    phx_value v = 0;
    if (check("phx_graph_add_constant_tensor",
              phx_graph_add_constant_tensor(graph_, nullptr, tensor, &v)) == PHX_STATUS_OK)
      added(v);
    if (in_.byte() == 0)
      check("phx_tensor_destroy", phx_tensor_destroy(tensor));
    else
      tensors_.push_back(tensor);
  }

  void add_node() {
    const int op = in_.byte() % (PHX_OP_COUNT + 1);
    const uint8_t flags = in_.byte();
    phx_value inputs[PHX_MAX_OP_INPUTS + 1] = {};
    const size_t input_count = in_.byte() % (PHX_MAX_OP_INPUTS + 2);
    for (size_t i = 0; i < input_count; ++i) inputs[i] = value();
    const size_t output_count = in_.byte() % (PHX_MAX_OP_OUTPUTS + 1);
    phx_dtype output_dtypes[PHX_MAX_OP_OUTPUTS + 1] = {};
    for (size_t o = 0; o < output_count; ++o)
      output_dtypes[o] = raw_enum<phx_dtype>(in_.byte() % (PHX_DTYPE_COUNT + 1));
    // Parameter bytes from the input, with a struct_size that is right unless the input
    // says otherwise.
    std::vector<uint8_t> params(std::max(params_size(op), sizeof(size_t)));
    in_.bytes(params.data(), params.size());
    if ((flags & 1) != 0) {
      const size_t size = params_size(op);
      std::memcpy(params.data(), &size, sizeof size);
    }
    phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
    desc.op = raw_enum<phx_op_id>(op);
    desc.params = flags & 2 ? params.data() : nullptr;
    desc.inputs = inputs;
    desc.input_count = input_count;
    desc.output_dtypes = flags & 4 ? output_dtypes : nullptr;
    desc.output_count = output_count;
    phx_value outputs[PHX_MAX_OP_OUTPUTS + 1] = {};
    if (check("phx_graph_add_node", phx_graph_add_node(graph_, &desc, outputs)) != PHX_STATUS_OK)
      return;
    for (size_t o = 0; o < output_count; ++o) {
      if (outputs[o] != values_)
        finding("phx_graph_add_node", "output values are not numbered after the graph's");
      added(outputs[o]);
      phx_value_info info = PHX_VALUE_INFO_INIT;
      if (check("phx_graph_value_info", phx_graph_value_info(graph_, outputs[o], &info)) !=
              PHX_STATUS_OK ||
          dtype_bytes(info.dtype) == 0 || info.rank > PHX_MAX_RANK)
        finding("phx_graph_value_info", "an accepted node's output is not described");
    }
  }

  void add_output() {
    const phx_value v = value();
    if (check("phx_graph_add_output", phx_graph_add_output(graph_, v, nullptr)) == PHX_STATUS_OK)
      outputs_.push_back(v);
  }

  void value_info() {
    phx_value_info info = PHX_VALUE_INFO_INIT;
    check("phx_graph_value_info", phx_graph_value_info(graph_, value(), &info));
  }

  void compile_and_run() {
    const uint8_t code = in_.byte();
    const uint32_t flags = code % 8;
    for (size_t device = 0; device < state->streams.size(); ++device) {
      phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
      options.device = device;
      options.flags = flags;
      // Bit 3: every other device may take the nodes this one lacks.
      std::vector<size_t> others;
      for (size_t d = 0; d < state->streams.size(); ++d)
        if (d != device) others.push_back(d);
      if ((code & 8) != 0) {
        options.other_devices = others.data();
        options.other_device_count = others.size();
      }
      phx_executable exe = nullptr;
      if (check("phx_graph_compile", phx_graph_compile(state->context, graph_, &options, &exe)) !=
          PHX_STATUS_OK)
        continue;
      run(exe, device);
      // Bit 4: saved and loaded, the loaded one run too.
      if ((code & 16) != 0) save_and_load(exe, device);
      if (check("phx_executable_destroy", phx_executable_destroy(exe)) != PHX_STATUS_OK)
        finding("phx_executable_destroy", "a live executable could not be destroyed");
    }
  }

  void save_and_load(phx_executable exe, size_t device) {
    size_t size = 0;
    if (check("phx_executable_save", phx_executable_save(exe, nullptr, 0, &size)) !=
        PHX_STATUS_OK)
      return;
    std::vector<uint8_t> bytes(size);
    if (check("phx_executable_save", phx_executable_save(exe, bytes.data(), size, &size)) !=
        PHX_STATUS_OK)
      return;
    // Onto the same devices: the others in order, as compile_and_run offered them.
    std::vector<size_t> others;
    for (size_t d = 0; d < state->streams.size(); ++d)
      if (d != device) others.push_back(d);
    phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
    options.device = device;
    options.other_devices = others.data();
    options.other_device_count = others.size();
    phx_executable loaded = nullptr;
    if (check("phx_executable_load", phx_executable_load(state->context, bytes.data(), size,
                                                         &options, &loaded)) != PHX_STATUS_OK)
      finding("phx_executable_load", "a saved executable could not be loaded");
    run(loaded, device);
    if (check("phx_executable_destroy", phx_executable_destroy(loaded)) != PHX_STATUS_OK)
      finding("phx_executable_destroy", "a loaded executable could not be destroyed");
  }

  // One run with input tensors of the graph's shapes, dynamic dimensions of small sizes.
  void run(phx_executable exe, size_t device) {
    std::vector<phx_tensor> inputs, outputs;
    bool made = true;
    for (phx_value v : inputs_) {
      phx_value_info info = PHX_VALUE_INFO_INIT;
      check("phx_graph_value_info", phx_graph_value_info(graph_, v, &info));
      for (uint32_t d = 0; d < info.rank; ++d)
        if (info.shape[d] == PHX_DIM_DYNAMIC) info.shape[d] = in_.byte() % kMaxDim + 1;
      phx_tensor t = nullptr;
      made = made && check("phx_tensor_create",
                           phx_tensor_create(state->context, device, info.dtype, info.rank,
                                             info.shape, &t)) == PHX_STATUS_OK;
      if (t != nullptr) inputs.push_back(t);
    }
    for (size_t o = 0; made && o < outputs_.size(); ++o) {
      phx_tensor_desc desc = PHX_TENSOR_DESC_INIT;
      if (check("phx_executable_output_desc",
                phx_executable_output_desc(exe, inputs.data(), inputs.size(), o, &desc)) !=
          PHX_STATUS_OK) {
        made = false;
        break;
      }
      phx_tensor t = nullptr;
      made =
          check("phx_tensor_create", phx_tensor_create(state->context, device, desc.dtype,
                                                       desc.rank, desc.shape, &t)) == PHX_STATUS_OK;
      if (t != nullptr) outputs.push_back(t);
    }
    if (made) {
      uint64_t ticket = 0;
      if (check("phx_executable_run",
                phx_executable_run(state->streams[device], exe, inputs.data(), inputs.size(),
                                   outputs.data(), outputs.size(), &ticket)) == PHX_STATUS_OK)
        check("phx_stream_wait", phx_stream_wait(state->streams[device], ticket));
    }
    for (phx_tensor t : inputs) check("phx_tensor_destroy", phx_tensor_destroy(t));
    for (phx_tensor t : outputs) check("phx_tensor_destroy", phx_tensor_destroy(t));
  }

  void added(phx_value v) {
    if (v != values_) finding("phx_graph_add_*", "values are not numbered in order");
    ++values_;
  }

  ByteReader in_;
  phx_graph graph_ = nullptr;
  phx_value values_ = 0;
  std::vector<phx_value> inputs_, outputs_;
  std::vector<phx_tensor> tensors_;
};

void destroy_state() {
  close_fuzz_context(*state);
  delete state;
  state = nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  target_name = "fuzz_graph";
  set_environment();
  state = new State;
  open_fuzz_context(*state, 0);
  std::atexit(destroy_state);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Program(data, size).run();
  expect_baseline_memory(*state);
  return 0;
}
