// phx-run-onnx: loads an ONNX model, runs it on a device and prints the placement of
// each node and the outputs, compares them with expected ones, saves them, or times
// the run. docs/onnx.md, "phx-run-onnx".
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "onnx_session.h"

namespace fs = std::filesystem;
using namespace phx_tools;

namespace {

constexpr const char* kUsage =
    "usage: phx-run-onnx MODEL.onnx [--device D | --devices D,D,...] [--inputs DIR]\n"
    "                    [--expect DIR] [--save DIR] [--bench [RUNS]]\n"
    "  D: a device index or name (cpu, tpu-sim, npu-sim, vulkan: plugin, type or device\n"
    "     name). --device D runs on D with the CPU device for the nodes D lacks;\n"
    "     --devices takes the list as is, the first the model's device. Default: device 0.\n"
    "  --inputs DIR  input_<i>.pb files (ONNX TensorProto); random inputs when absent\n"
    "  --expect DIR  compares the outputs with output_<i>.pb; exits 1 on a mismatch\n"
    "  --save DIR    writes the outputs as output_<i>.pb\n"
    "  --bench RUNS  prints the mean time of RUNS runs (default 20) after a warm-up\n";

struct Options {
  std::string model;
  std::vector<std::string> devices;
  bool add_cpu = true;
  std::string inputs, expect, save;
  int bench_runs = 0;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "phx-run-onnx: %s\n%s", message.c_str(), kUsage);
  std::exit(2);
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    const size_t end = comma == std::string::npos ? list.size() : comma;
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--device") {
      o.devices = {value()};
    } else if (arg == "--devices") {
      o.devices = split(value());
      o.add_cpu = false;
    } else if (arg == "--inputs") {
      o.inputs = value();
    } else if (arg == "--expect") {
      o.expect = value();
    } else if (arg == "--save") {
      o.save = value();
    } else if (arg == "--bench") {
      o.bench_runs = 20;
      if (i + 1 < argc && argv[i + 1][0] != '-') o.bench_runs = std::atoi(argv[++i]);
      if (o.bench_runs < 1) usage_error("--bench RUNS must be at least 1");
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (!arg.empty() && arg[0] == '-') {
      usage_error("unknown option " + arg);
    } else if (o.model.empty()) {
      o.model = arg;
    } else {
      usage_error("one model only");
    }
  }
  if (o.model.empty()) usage_error("no model given");
  if (o.devices.empty()) o.devices = {"0"};
  return o;
}

size_t find_device(phx_context context, const std::string& spec) {
  size_t count = 0;
  check(phx_device_count(context, &count), "counting devices");
  char* end = nullptr;
  const unsigned long index = std::strtoul(spec.c_str(), &end, 10);
  if (!spec.empty() && *end == '\0') {
    if (index >= count) throw PhxError(PHX_STATUS_NOT_FOUND, "no device " + spec);
    return index;
  }
  for (size_t d = 0; d < count; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    check(phx_device_get(context, d, &info), "describing a device");
    if (spec == info.plugin || spec == info.name || spec == phx_device_type_name(info.type))
      return d;
  }
  throw PhxError(PHX_STATUS_NOT_FOUND, "no device named '" + spec + "'");
}

std::vector<size_t> resolve_devices(phx_context context, const Options& o) {
  std::vector<size_t> devices;
  for (const auto& spec : o.devices) devices.push_back(find_device(context, spec));
  if (o.add_cpu) {
    const size_t cpu = find_device(context, "cpu");
    if (cpu != devices[0]) devices.push_back(cpu);
  }
  return devices;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<HostTensor> model_inputs(OnnxSession& session, const Options& o) {
  std::vector<HostTensor> inputs;
  for (size_t i = 0; i < session.input_count(); ++i) {
    const std::string file = o.inputs + "/input_" + std::to_string(i) + ".pb";
    if (!o.inputs.empty() && fs::exists(file))
      inputs.push_back(read_tensor_file(file, session.input(i).dtype));
    else
      inputs.push_back(random_tensor(session.input(i), 1234 + i));
  }
  return inputs;
}

void print_placement(phx_context context, const OnnxSession& session) {
  std::printf("placement:\n");
  for (const auto& node : session.placement()) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    phx_device_get(context, node.device, &info);
    std::printf("  %-40s %-16s device %zu (%s)\n", node.name.c_str(), node.op.c_str(), node.device,
                info.name != nullptr ? info.name : "?");
  }
}

int run(phx_context context, const Options& o) {
  const std::vector<size_t> devices = resolve_devices(context, o);
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "loading and compiling %s...\n", o.model.c_str());
  OnnxSession session(context, o.model, devices);
  print_placement(context, session);
  const std::vector<HostTensor> inputs = model_inputs(session, o);
  const std::vector<HostTensor> outputs = session.run(inputs);
  int mismatches = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor& out = outputs[i];
    std::printf("output %zu: %s %s", i, phx_dtype_name(out.dtype), shape_text(out.shape).c_str());
    if (!o.expect.empty()) {
      const HostTensor expected =
          read_tensor_file(o.expect + "/output_" + std::to_string(i) + ".pb", out.dtype);
      std::string why;
      const bool ok = outputs_match(out, expected, &why);
      std::printf(": %s%s", ok ? "matches" : "MISMATCH: ", why.c_str());
      mismatches += ok ? 0 : 1;
    }
    std::printf("\n");
    if (!o.save.empty()) {
      fs::create_directories(o.save);
      write_tensor_file(o.save + "/output_" + std::to_string(i) + ".pb", out);
    }
  }
  if (o.bench_runs > 0)
    std::printf("mean run time: %.3f ms over %d runs\n",
                session.time_runs(inputs, o.bench_runs) / 1e6, o.bench_runs);
  return mismatches == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  phx_context context = nullptr;
  if (phx_context_create(nullptr, &context) != PHX_STATUS_OK) {
    std::fprintf(stderr, "phx-run-onnx: %s\n", phx_last_error());
    return 3;
  }
  int rc = 3;
  try {
    rc = run(context, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "phx-run-onnx: %s\n", e.what());
  }
  phx_context_destroy(context);
  return rc;
}
