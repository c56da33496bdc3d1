// phx-onnx-node-tests: the ONNX backend node tests (libonnx-testdata's data/node: a
// model.onnx and test_data_set_N folders of inputs and expected outputs per test) run on
// one device, with the CPU device for the nodes it lacks. Each test passes, fails (a
// mismatch or an error: the message says which) or is unsupported (the importer refuses
// an operator, attribute or dtype it does not take, or the test's data contradicts its
// model: the reason). Exits 1 when a test fails or fewer than --min-passed pass.
// docs/onnx.md, "Conformance".
#include <phx/progress.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "onnx_session.h"

namespace fs = std::filesystem;
using namespace phx_tools;

namespace {

enum class Outcome { passed, failed, unsupported };

struct Result {
  std::string test;
  Outcome outcome;
  std::string reason;
};

struct Options {
  std::string data = "/usr/share/libonnx-testdata/data/node";
  std::string device = "cpu";
  std::string filter;
  size_t min_passed = 0;
  bool verbose = false;
  bool markdown = false;
};

// The tensors are read before the model (whose inputs some of them may become), so a
// UINT16 file is taken as bf16 wherever it is: ONNX 1.12 stores bfloat16 data so. Only a
// tensor the model declares bfloat16 is then fed or matched: the session's inputs and
// the outputs are compared by dtype, and a constant given for another dtype is refused.
std::vector<HostTensor> read_set(const fs::path& dir, const char* prefix) {
  std::vector<HostTensor> tensors;
  for (size_t i = 0;; ++i) {
    const fs::path file = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(file)) break;
    tensors.push_back(read_tensor_file(file.string(), PHX_DTYPE_BF16));
  }
  return tensors;
}

// The message without the "loading <path>: phx_model_load_onnx: " before it.
std::string reason_of(const std::string& message) {
  const std::string marker = "phx_model_load_onnx: ";
  const size_t at = message.find(marker);
  return at == std::string::npos ? message : message.substr(at + marker.size());
}

// Loads the model. When the importer refuses a setting it must know at import (a
// Reshape's shape, axes, pads, a Clip's bounds, an integer product's weights, a Range's
// bounds) that the test feeds as an input, loads it again with those inputs as constants,
// as an exported model has them: first the integer inputs, then every input but the
// first, then every input (a model of constants alone, such as a Range's). Returns the
// session and the inputs made constants; when every try is refused, throws the last
// refusal, which got furthest.
std::unique_ptr<OnnxSession> open_session(phx_context context, const fs::path& model,
                                          const std::vector<size_t>& devices,
                                          const std::vector<HostTensor>& inputs,
                                          std::vector<HostTensor>& bound) {
  const std::vector<HostTensor> none;
  std::vector<HostTensor> integers, all_but_first, all;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].name.empty()) continue;
    if (inputs[i].dtype == PHX_DTYPE_I32) integers.push_back(inputs[i]);
    if (i > 0) all_but_first.push_back(inputs[i]);
    all.push_back(inputs[i]);
  }
  auto names = [](const std::vector<HostTensor>* values) {
    std::vector<std::string> out;
    for (const HostTensor& v : *values) out.push_back(v.name);
    return out;
  };
  std::vector<const std::vector<HostTensor>*> tries = {&none};
  for (const auto* values : {&integers, &all_but_first, &all})
    if (!values->empty() && names(values) != names(tries.back())) tries.push_back(values);
  for (size_t t = 0;; ++t) {
    try {
      auto session = std::make_unique<OnnxSession>(context, model.string(), devices, *tries[t]);
      bound = *tries[t];
      return session;
    } catch (const PhxError& e) {
      if (e.status != PHX_STATUS_UNSUPPORTED || t + 1 == tries.size()) throw;
    }
  }
}

// Whether set gives the inputs in bound the values they were bound with.
bool binds_same(const std::vector<HostTensor>& bound, const std::vector<HostTensor>& set) {
  for (const HostTensor& b : bound) {
    const auto it = std::find_if(set.begin(), set.end(),
                                 [&](const HostTensor& in) { return in.name == b.name; });
    if (it == set.end() || it->shape != b.shape || it->bytes != b.bytes) return false;
  }
  return true;
}

// What contradicts the model in the sizes the test's data gives its inputs (ONNX 1.12's
// CastLike tests of bfloat16 give 'like' as [1] where the model declares [3, 4]), or ""
// when every size fits. Such a test is not run: no runtime that checks its inputs could
// run it. Only a static size excuses a test: a dtype that differs is a failure.
std::string contradicted_size(const OnnxSession& session, const std::vector<HostTensor>& fed) {
  for (size_t i = 0; i < fed.size() && i < session.input_count(); ++i) {
    const phx_value_info declared = session.input(i);
    bool fits = fed[i].shape.size() == declared.rank;
    for (size_t d = 0; fits && d < declared.rank; ++d)
      fits = declared.shape[d] == PHX_DIM_DYNAMIC || declared.shape[d] == fed[i].shape[d];
    if (fits) continue;
    auto text = [](const int64_t* shape, size_t rank) {
      std::string t = "[";
      for (size_t d = 0; d < rank; ++d)
        t += (d ? "," : "") + (shape[d] == PHX_DIM_DYNAMIC ? "?" : std::to_string(shape[d]));
      return t + "]";
    };
    return "the test's data contradicts its model: input '" + fed[i].name + "' is given as " +
           text(fed[i].shape.data(), fed[i].shape.size()) + ", declared " +
           text(declared.shape, declared.rank);
  }
  return "";
}

Result run_test(phx_context context, const fs::path& dir, const std::vector<size_t>& devices) {
  Result r{dir.filename().string(), Outcome::passed, ""};
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      sets.push_back(entry.path());
  std::sort(sets.begin(), sets.end());
  try {
    std::vector<std::vector<HostTensor>> inputs, outputs;
    try {
      for (const auto& set : sets) {
        inputs.push_back(read_set(set, "input_"));
        outputs.push_back(read_set(set, "output_"));
      }
    } catch (const PhxError&) {
      // Data that is no tensor (a sequence, an optional) belongs to a model whose inputs
      // the importer refuses first: say why it does; else the data is the failure.
      OnnxSession plain(context, (dir / "model.onnx").string(), devices);
      throw;
    }
    std::vector<HostTensor> bound;
    auto session = open_session(context, dir / "model.onnx", devices,
                                inputs.empty() ? std::vector<HostTensor>{} : inputs[0], bound);
    for (size_t s = 0; s < sets.size(); ++s) {
      // Constants are the first set's: a set that gives them other values gets a model of
      // its own.
      if (!binds_same(bound, inputs[s]))
        session = open_session(context, dir / "model.onnx", devices, inputs[s], bound);
      std::vector<HostTensor> fed;
      for (const HostTensor& in : inputs[s])
        if (std::none_of(bound.begin(), bound.end(),
                         [&](const HostTensor& b) { return b.name == in.name; }))
          fed.push_back(in);
      const std::string contradiction = contradicted_size(*session, fed);
      if (!contradiction.empty()) return {r.test, Outcome::unsupported, contradiction};
      const std::vector<HostTensor> got = session->run(fed);
      if (got.size() != outputs[s].size()) {
        return {
            r.test, Outcome::failed,
            std::to_string(got.size()) + " outputs, expected " + std::to_string(outputs[s].size())};
      }
      for (size_t i = 0; i < got.size(); ++i) {
        std::string why;
        if (!outputs_match(got[i], outputs[s][i], &why))
          return {r.test, Outcome::failed,
                  sets[s].filename().string() + " output " + std::to_string(i) + ": " + why};
      }
    }
  } catch (const PhxError& e) {
    const bool unsupported = e.status == PHX_STATUS_UNSUPPORTED;
    return {r.test, unsupported ? Outcome::unsupported : Outcome::failed, reason_of(e.what())};
  }
  return r;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "phx-onnx-node-tests: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--data")
      o.data = value();
    else if (arg == "--device")
      o.device = value();
    else if (arg == "--filter")
      o.filter = value();
    else if (arg == "--min-passed")
      o.min_passed = std::stoul(value());
    else if (arg == "--verbose")
      o.verbose = true;
    else if (arg == "--markdown")
      o.markdown = true;
    else {
      std::fprintf(stderr,
                   "usage: phx-onnx-node-tests [--data DIR] [--device NAME|INDEX] [--filter S]\n"
                   "                           [--min-passed N] [--verbose] [--markdown]\n");
      std::exit(2);
    }
  }
  return o;
}

size_t find_device(phx_context context, const std::string& spec) {
  size_t count = 0;
  check(phx_device_count(context, &count), "counting devices");
  for (size_t d = 0; d < count; ++d) {
    phx_device_info info = PHX_DEVICE_INFO_INIT;
    check(phx_device_get(context, d, &info), "describing a device");
    if (spec == std::to_string(d) || spec == info.plugin || spec == info.name ||
        spec == phx_device_type_name(info.type))
      return d;
  }
  throw PhxError(PHX_STATUS_NOT_FOUND, "no device named '" + spec + "'");
}

int run(phx_context context, const Options& o) {
  const size_t device = find_device(context, o.device), cpu = find_device(context, "cpu");
  std::vector<size_t> devices = {device};
  if (cpu != device) devices.push_back(cpu);
  std::vector<fs::path> tests;
  for (const auto& entry : fs::directory_iterator(o.data))
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx") &&
        entry.path().filename().string().find(o.filter) != std::string::npos)
      tests.push_back(entry.path());
  std::sort(tests.begin(), tests.end());
  phx::Progress progress(tests.size(), "tests");
  size_t counts[3] = {};
  for (size_t i = 0; i < tests.size(); ++i) {
    progress.update(i, tests[i].filename().string());
    const Result r = run_test(context, tests[i], devices);
    ++counts[static_cast<int>(r.outcome)];
    const bool prints = r.outcome == Outcome::failed || o.verbose;
    if (prints) progress.clear();
    if (r.outcome == Outcome::failed)
      std::printf("FAILED %s: %s\n", r.test.c_str(), r.reason.c_str());
    if (r.outcome == Outcome::unsupported && o.verbose)
      std::printf("unsupported %s: %s\n", r.test.c_str(), r.reason.c_str());
    if (r.outcome == Outcome::passed && o.verbose) std::printf("passed %s\n", r.test.c_str());
  }
  progress.clear();
  phx_device_info info = PHX_DEVICE_INFO_INIT;
  check(phx_device_get(context, device, &info), "describing a device");
  if (o.markdown)
    std::printf("| %s | %zu | %zu | %zu | %zu |\n", info.plugin, tests.size(), counts[0], counts[1],
                counts[2]);
  else
    std::printf("%s: %zu node tests: %zu passed, %zu failed, %zu unsupported\n", info.plugin,
                tests.size(), counts[0], counts[1], counts[2]);
  if (counts[1] != 0) return 1;
  if (counts[0] < o.min_passed) {
    std::printf("fewer than %zu passed\n", o.min_passed);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  phx_context context = nullptr;
  if (phx_context_create(nullptr, &context) != PHX_STATUS_OK) {
    std::fprintf(stderr, "phx-onnx-node-tests: %s\n", phx_last_error());
    return 3;
  }
  int rc = 3;
  try {
    rc = run(context, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "phx-onnx-node-tests: %s\n", e.what());
  }
  phx_context_destroy(context);
  return rc;
}
