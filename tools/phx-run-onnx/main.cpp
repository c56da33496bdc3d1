// phx-run-onnx: loads an ONNX model, runs it on a device and prints the placement of
// each node and the outputs, compares them with expected ones, saves them, or times
// the run. docs/onnx.md, "phx-run-onnx".
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "onnx_session.h"

namespace fs = std::filesystem;
using namespace phx_tools;

namespace {

// The exit statuses (docs/onnx.md, "phx-run-onnx"), for scripts that tell a wrong result
// from a model this build cannot run.
enum ExitStatus : int {
  kExitOk = 0,
  kExitMismatch = 1,     // --expect: an output differs
  kExitUsage = 2,        // bad command line
  kExitError = 3,        // any other failure: a missing or broken file, a device error...
  kExitUnsupported = 4,  // refused as PHX_STATUS_UNSUPPORTED: an operator or setting not taken
};

constexpr const char* kUsage =
    "usage: phx-run-onnx MODEL.onnx [--device D | --devices D,D,...] [--inputs DIR]\n"
    "                    [--dims NAME=SIZE,...] [--expect DIR [--rtol R] [--atol A]]\n"
    "                    [--save DIR] [--bench [RUNS]] [--compare-with D [--rtol R] [--atol A]]\n"
    "  D: a device index or name (cpu, tpu-sim, npu-sim, vulkan: plugin, type or device\n"
    "     name). --device D runs on D with the CPU device for the nodes D lacks;\n"
    "     --devices takes the list as is, the first the model's device. Default: device 0.\n"
    "  --inputs DIR  input_<i>.pb files (ONNX TensorProto); random inputs when absent.\n"
    "                A file that names its input fixes that input's dynamic sizes\n"
    "  --dims NAME=SIZE,...  sizes of the model's named dynamic dimensions (dim_param)\n"
    "  --expect DIR  compares the outputs with output_<i>.pb, within |got - e| <= atol +\n"
    "                rtol |e| at the precision the devices compute in (docs/onnx.md)\n"
    "  --rtol R, --atol A  replace the derived rtol, atol\n"
    "  --save DIR    writes the outputs as output_<i>.pb\n"
    "  --bench RUNS  times RUNS runs (default 20) after one untimed warm-up run and\n"
    "                prints their median, p10, p90, min and max\n"
    "  --compare-with D  runs the model on D too (with the CPU device for what D lacks)\n"
    "                and compares every value the nodes compute, in the model's order, at\n"
    "                the precision of the first devices; names the first one out of\n"
    "                tolerance, where the first devices go wrong\n"
    "exit status: 0 ok, 1 a mismatch, 2 usage, 3 an error, 4 a model or device refused\n"
    "             as unsupported\n";

struct Options {
  std::string model;
  std::vector<std::string> devices;
  bool add_cpu = true;
  std::string inputs, expect, save, compare_with;
  std::vector<std::pair<std::string, int64_t>> dims;
  std::optional<double> rtol, atol;
  int bench_runs = 0;
};

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "phx-run-onnx: %s\n%s", message.c_str(), kUsage);
  std::exit(kExitUsage);
}

// A tolerance given on the command line: a finite number >= 0.
double tolerance_value(const std::string& option, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < 0)
    usage_error(option + " needs a number >= 0, not '" + text + "'");
  return v;
}

// NAME=SIZE of --dims: a size >= 1.
std::pair<std::string, int64_t> dim_size(const std::string& item) {
  const size_t eq = item.find('=');
  char* end = nullptr;
  const long long size =
      eq == std::string::npos ? 0 : std::strtoll(item.c_str() + eq + 1, &end, 10);
  if (eq == std::string::npos || eq == 0 || end == item.c_str() + eq + 1 || *end != '\0' ||
      size < 1)
    usage_error("--dims takes NAME=SIZE with a size >= 1, not '" + item + "'");
  return {item.substr(0, eq), size};
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
    } else if (arg == "--dims") {
      for (const std::string& item : split(value())) o.dims.push_back(dim_size(item));
    } else if (arg == "--expect") {
      o.expect = value();
    } else if (arg == "--rtol") {
      o.rtol = tolerance_value(arg, value());
    } else if (arg == "--atol") {
      o.atol = tolerance_value(arg, value());
    } else if (arg == "--compare-with") {
      o.compare_with = value();
    } else if (arg == "--save") {
      o.save = value();
    } else if (arg == "--bench") {
      o.bench_runs = 20;
      if (i + 1 < argc && argv[i + 1][0] != '-') o.bench_runs = std::atoi(argv[++i]);
      if (o.bench_runs < 1) usage_error("--bench RUNS must be at least 1");
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(kExitOk);
    } else if (!arg.empty() && arg[0] == '-') {
      usage_error("unknown option " + arg);
    } else if (o.model.empty()) {
      o.model = arg;
    } else {
      usage_error("one model only");
    }
  }
  if (o.model.empty()) usage_error("no model given");
  if ((o.rtol || o.atol) && o.expect.empty() && o.compare_with.empty())
    usage_error("--rtol and --atol go with --expect or --compare-with");
  if (!o.compare_with.empty() && (!o.expect.empty() || !o.save.empty() || o.bench_runs > 0))
    usage_error("--compare-with goes without --expect, --save and --bench");
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

// The value at fraction q (0 to 1) of sorted times, by nearest rank.
double percentile(const std::vector<double>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

void print_bench(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const double median = n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  std::printf(
      "run time over %zu runs (after 1 untimed warm-up run): median %.3f ms, p10 %.3f ms, "
      "p90 %.3f ms, min %.3f ms, max %.3f ms\n",
      n, median / 1e6, percentile(times, 0.1) / 1e6, percentile(times, 0.9) / 1e6,
      times.front() / 1e6, times.back() / 1e6);
}

// The tolerance for comparing a result computed at precision with expected: derived
// from both (onnx_session.cpp), or --rtol and --atol where given.
Tolerance tolerance_for(const HostTensor& expected, const ComputePrecision& precision,
                        const Options& o) {
  Tolerance tolerance = precision_tolerance(expected.dtype, precision, largest_magnitude(expected));
  tolerance.rtol = o.rtol.value_or(tolerance.rtol);
  tolerance.atol = o.atol.value_or(tolerance.atol);
  return tolerance;
}

// What the import fixes: the --dims, and the shape of each --inputs file that names its
// input (read here as the node tests read them; model_inputs reads them again once the
// inputs' dtypes are known).
ImportSizes import_sizes(const Options& o) {
  ImportSizes sizes;
  sizes.dims = o.dims;
  for (size_t i = 0; !o.inputs.empty(); ++i) {
    const std::string file = o.inputs + "/input_" + std::to_string(i) + ".pb";
    if (!fs::exists(file)) break;
    const HostTensor t = read_tensor_file(file, PHX_DTYPE_BF16);
    if (!t.name.empty()) sizes.input_shapes.emplace_back(t.name, t.shape);
  }
  return sizes;
}

int run(phx_context context, const Options& o) {
  const std::vector<size_t> devices = resolve_devices(context, o);
  if (isatty(STDERR_FILENO)) std::fprintf(stderr, "loading and compiling %s...\n", o.model.c_str());
  OnnxSession session(context, o.model, devices, {}, import_sizes(o));
  print_placement(context, session);
  const std::vector<HostTensor> inputs = model_inputs(session, o);
  const std::vector<HostTensor> outputs = session.run(inputs);
  ComputePrecision precision;
  if (!o.expect.empty()) {
    precision = session.compute_precision();
    std::printf("comparing at %s precision, reduction length %lld\n", precision.name.c_str(),
                static_cast<long long>(precision.reduction_length));
  }
  int mismatches = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor& out = outputs[i];
    std::printf("output %zu: %s %s", i, phx_dtype_name(out.dtype), shape_text(out.shape).c_str());
    if (!o.expect.empty()) {
      const HostTensor expected =
          read_tensor_file(o.expect + "/output_" + std::to_string(i) + ".pb", out.dtype);
      const Tolerance tolerance = tolerance_for(expected, precision, o);
      std::string why;
      const bool ok = outputs_match(out, expected, tolerance, &why);
      std::printf(" (rtol %.3g, atol %.3g): %s%s", tolerance.rtol, tolerance.atol,
                  ok ? "matches" : "MISMATCH: ", why.c_str());
      mismatches += ok ? 0 : 1;
    }
    std::printf("\n");
    if (!o.save.empty()) {
      fs::create_directories(o.save);
      write_tensor_file(o.save + "/output_" + std::to_string(i) + ".pb", out);
    }
  }
  if (o.bench_runs > 0) print_bench(session.time_runs(inputs, o.bench_runs));
  return mismatches == 0 ? kExitOk : kExitMismatch;
}

// --compare-with: the model on both devices with every value an output
// (PHX_ONNX_OUTPUT_EVERY_VALUE), compared in the model's order at the precision of the
// devices under test. The values before the first one out of tolerance, its inputs among
// them, matched: the error is born in the node that computes it.
int compare_devices(phx_context context, const Options& o) {
  const std::vector<size_t> devices = resolve_devices(context, o);
  std::vector<size_t> reference_devices = {find_device(context, o.compare_with)};
  const size_t cpu = find_device(context, "cpu");
  if (cpu != reference_devices[0]) reference_devices.push_back(cpu);
  const ImportSizes sizes = import_sizes(o);
  if (isatty(STDERR_FILENO))
    std::fprintf(stderr, "loading and compiling %s twice, every value an output...\n",
                 o.model.c_str());
  OnnxSession session(context, o.model, devices, {}, sizes, PHX_ONNX_OUTPUT_EVERY_VALUE);
  OnnxSession reference(context, o.model, reference_devices, {}, sizes,
                        PHX_ONNX_OUTPUT_EVERY_VALUE);
  print_placement(context, session);
  const std::vector<HostTensor> inputs = model_inputs(session, o);
  const std::vector<HostTensor> got = session.run(inputs);
  const std::vector<HostTensor> want = reference.run(inputs);
  if (got.size() != want.size())
    throw PhxError(PHX_STATUS_INTERNAL, "the two devices' executables have " +
                                            std::to_string(got.size()) + " and " +
                                            std::to_string(want.size()) + " outputs");
  const ComputePrecision precision = session.compute_precision();
  phx_device_info reference_info = PHX_DEVICE_INFO_INIT;
  check(phx_device_get(context, reference_devices[0], &reference_info), "describing a device");
  std::printf("comparing %zu values with device %zu (%s) at %s precision, reduction length %lld\n",
              got.size(), reference_devices[0], reference_info.name, precision.name.c_str(),
              static_cast<long long>(precision.reduction_length));
  size_t out_of_tolerance = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const Tolerance tolerance = tolerance_for(want[i], precision, o);
    std::string why;
    if (outputs_match(got[i], want[i], tolerance, &why)) continue;
    if (out_of_tolerance++ == 0)
      std::printf(
          "first value out of tolerance: '%s' (value %zu of %zu, rtol %.3g, atol %.3g): %s\n",
          session.output_name(i).c_str(), i + 1, got.size(), tolerance.rtol, tolerance.atol,
          why.c_str());
  }
  if (out_of_tolerance == 0) {
    std::printf("every value within tolerance\n");
    return kExitOk;
  }
  std::printf("%zu of %zu values out of tolerance\n", out_of_tolerance, got.size());
  return kExitMismatch;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  phx_context context = nullptr;
  if (phx_context_create(nullptr, &context) != PHX_STATUS_OK) {
    std::fprintf(stderr, "phx-run-onnx: %s\n", phx_last_error());
    return kExitError;
  }
  int rc = kExitError;
  try {
    rc = options.compare_with.empty() ? run(context, options) : compare_devices(context, options);
  } catch (const PhxError& e) {
    std::fprintf(stderr, "phx-run-onnx: %s\n", e.what());
    if (e.status == PHX_STATUS_UNSUPPORTED) rc = kExitUnsupported;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "phx-run-onnx: %s\n", e.what());
  }
  phx_context_destroy(context);
  return rc;
}
