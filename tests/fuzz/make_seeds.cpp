// Writes the seed corpora of the fuzz targets under the folder given (tests/fuzz/corpus
// when run as README.md says): for fuzz_op_run a well-formed program per op family, one
// of transfers and one of misuse; for fuzz_graph graph programs; for fuzz_executable_load
// executables saved on every device; for fuzz_sim_config a configuration per TPU generation
// and NPU profile and a few malformed ones; for fuzz_pipeline_cache a valid cache file
// and a few broken ones. The seeds are only starting points: the fuzzer mutates them.
#include <phynexus/phynexus.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "cache_identity.h"
#include "fuzz_input.h"
#include "graph_program.h"
#include "op_program.h"

namespace {

using namespace phx::fuzz;
namespace fs = std::filesystem;

void write(const fs::path& path, const std::vector<uint8_t>& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write(const fs::path& path, const std::string& text) {
  write(path, std::vector<uint8_t>(text.begin(), text.end()));
}

// A fuzz_op_run program, written in the order op_program.h gives. Tensors live on the
// home device unless `device` says otherwise.
class Program {
 public:
  // dtype and op are ints: the misuse seed names values no enumerator has.
  Program& create(uint8_t slot, int dtype, std::initializer_list<int8_t> shape, uint8_t device = 0,
                  uint8_t fill = 0x3f) {
    out_.byte(kCreate).byte(slot).byte(static_cast<uint8_t>(dtype));
    out_.byte(static_cast<uint8_t>(shape.size()));
    for (int8_t dim : shape) out_.byte(static_cast<uint8_t>(dim));
    out_.byte(device).byte(fill);
    return *this;
  }

  // params: the op's parameter struct, or null for the defaults.
  template <typename Params = phx_matmul_params>
  Program& run(int op, std::initializer_list<uint8_t> inputs,
               std::initializer_list<uint8_t> outputs, const Params* params = nullptr) {
    out_.byte(kRunOp).byte(static_cast<uint8_t>(op));
    if (params == nullptr) {
      out_.byte(kNoParams);
    } else {
      // Everything after struct_size, which the fuzzer sets itself.
      out_.byte(kOwnParams);
      out_.bytes(reinterpret_cast<const uint8_t*>(params) + sizeof(size_t),
                 sizeof(Params) - sizeof(size_t));
    }
    out_.byte(static_cast<uint8_t>(inputs.size()));
    for (uint8_t input : inputs) out_.byte(input);
    out_.byte(static_cast<uint8_t>(outputs.size()));
    for (uint8_t output : outputs) out_.byte(output);
    out_.byte(kWaitTicket);
    return *this;
  }

  Program& upload(uint8_t handle, uint64_t offset, uint64_t size, uint8_t flags = 0) {
    out_.byte(kUpload).byte(handle).number(offset).number(size).byte(flags).byte(0x41);
    return *this;
  }

  Program& download(uint8_t handle, uint64_t offset, uint64_t size, uint8_t flags = 0) {
    out_.byte(kDownload).byte(handle).number(offset).number(size).byte(flags);
    return *this;
  }

  Program& copy(uint8_t dst, uint8_t src) {
    out_.byte(kCopy).byte(dst).byte(src);
    return *this;
  }

  Program& destroy(uint8_t handle) {
    out_.byte(kDestroy).byte(handle);
    return *this;
  }

  const std::vector<uint8_t>& data() const { return out_.data(); }

 private:
  ByteWriter out_;
};

void write_op_run(const fs::path& dir) {
  const auto f32 = PHX_DTYPE_F32;
  const phx_matmul_params relu_bt = {sizeof relu_bt, 0, 1, PHX_ACTIVATION_RELU};
  write(dir / "matmul_bias", Program()
                                 .create(0, f32, {4, 8})
                                 .create(1, f32, {8, 3})
                                 .create(2, f32, {3})
                                 .create(3, f32, {4, 3})
                                 .run(PHX_OP_MATMUL, {0, 1, 2}, {3})
                                 .data());
  write(dir / "matmul_batched_relu_transpose_b", Program()
                                                     .create(0, PHX_DTYPE_F16, {2, 4, 8})
                                                     .create(1, PHX_DTYPE_F16, {3, 8})
                                                     .create(2, f32, {2, 4, 3})
                                                     .run(PHX_OP_MATMUL, {0, 1}, {2}, &relu_bt)
                                                     .data());
  for (phx_op_id op : {PHX_OP_ADD, PHX_OP_SUB, PHX_OP_MUL, PHX_OP_DIV})
    write(dir / (std::string("binary_broadcast_") + phx_op_name(op)), Program()
                                                                          .create(0, f32, {2, 1, 3})
                                                                          .create(1, f32, {4, 1})
                                                                          .create(2, f32, {2, 4, 3})
                                                                          .run(op, {0, 1}, {2})
                                                                          .data());
  write(dir / "add_i32", Program()
                             .create(0, PHX_DTYPE_I32, {5})
                             .create(1, PHX_DTYPE_I32, {5})
                             .create(2, PHX_DTYPE_I32, {5})
                             .run(PHX_OP_ADD, {0, 1}, {2})
                             .data());
  for (phx_op_id op : {PHX_OP_RELU, PHX_OP_GELU, PHX_OP_SILU})
    write(
        dir / (std::string("unary_") + phx_op_name(op)),
        Program().create(0, f32, {5, 7}, 0, 0xbf).create(1, f32, {5, 7}).run(op, {0}, {1}).data());
  write(dir / "relu_i8", Program()
                             .create(0, PHX_DTYPE_I8, {9}, 0, 0x80)
                             .create(1, PHX_DTYPE_I8, {9})
                             .run(PHX_OP_RELU, {0}, {1})
                             .data());
  const phx_softmax_params axis0 = {sizeof axis0, 0};
  write(dir / "softmax_axis0", Program()
                                   .create(0, f32, {3, 5})
                                   .create(1, f32, {3, 5})
                                   .run(PHX_OP_SOFTMAX, {0}, {1}, &axis0)
                                   .data());
  const phx_norm_params eps = {sizeof eps, 1e-3f};
  write(dir / "layer_norm", Program()
                                .create(0, f32, {2, 6})
                                .create(1, f32, {6})
                                .create(2, f32, {6})
                                .create(3, f32, {2, 6})
                                .run(PHX_OP_LAYER_NORM, {0, 1, 2}, {3}, &eps)
                                .data());
  write(dir / "rms_norm", Program()
                              .create(0, PHX_DTYPE_BF16, {2, 6})
                              .create(1, PHX_DTYPE_BF16, {6})
                              .create(2, PHX_DTYPE_BF16, {2, 6})
                              .run(PHX_OP_RMS_NORM, {0, 1}, {2})
                              .data());
  const phx_transpose_params perm = {sizeof perm, {2, 0, 1}};
  write(dir / "transpose", Program()
                               .create(0, f32, {2, 3, 4})
                               .create(1, f32, {4, 2, 3})
                               .run(PHX_OP_TRANSPOSE, {0}, {1}, &perm)
                               .data());
  const phx_reduce_params dim0 = {sizeof dim0, 1, 0};
  const phx_reduce_params all_kept = {sizeof all_kept, 0, 1};
  write(dir / "reduce_sum_dim0", Program()
                                     .create(0, f32, {3, 4})
                                     .create(1, f32, {4})
                                     .run(PHX_OP_REDUCE_SUM, {0}, {1}, &dim0)
                                     .data());
  write(dir / "reduce_max_keep_dims", Program()
                                          .create(0, PHX_DTYPE_I16, {3, 4})
                                          .create(1, PHX_DTYPE_I16, {1, 1})
                                          .run(PHX_OP_REDUCE_MAX, {0}, {1}, &all_kept)
                                          .data());
  write(dir / "cast_f32_to_i8_nan", Program()
                                        .create(0, f32, {6}, 0, 0xff)
                                        .create(1, PHX_DTYPE_I8, {6})
                                        .run(PHX_OP_CAST, {0}, {1})
                                        .data());
  write(dir / "cast_u8_to_f16", Program()
                                    .create(0, PHX_DTYPE_U8, {6})
                                    .create(1, PHX_DTYPE_F16, {6})
                                    .run(PHX_OP_CAST, {0}, {1})
                                    .data());
  phx_conv2d_params padded = PHX_CONV2D_PARAMS_INIT;
  padded.padding[0] = padded.padding[1] = padded.padding[2] = padded.padding[3] = 1;
  padded.stride[0] = padded.stride[1] = 2;
  write(dir / "conv2d_bias", Program()
                                 .create(0, f32, {1, 2, 5, 5})
                                 .create(1, f32, {3, 2, 3, 3})
                                 .create(2, f32, {3})
                                 .create(3, f32, {1, 3, 3, 3})
                                 .run(PHX_OP_CONV2D, {0, 1, 2}, {3})
                                 .data());
  write(dir / "conv2d_padded_strided", Program()
                                           .create(0, f32, {1, 2, 5, 5})
                                           .create(1, f32, {3, 2, 3, 3})
                                           .create(2, f32, {1, 3, 3, 3})
                                           .run(PHX_OP_CONV2D, {0, 1}, {2}, &padded)
                                           .data());
  const phx_attention_params causal = {sizeof causal, 0.0f, PHX_ATTENTION_MASK_CAUSAL, 0};
  write(dir / "attention_gqa_causal", Program()
                                          .create(0, f32, {1, 2, 3, 4})
                                          .create(1, f32, {1, 1, 5, 4})
                                          .create(2, f32, {1, 1, 5, 4})
                                          .create(3, f32, {1, 2, 3, 4})
                                          .run(PHX_OP_ATTENTION, {0, 1, 2}, {3}, &causal)
                                          .data());
  write(dir / "rope", Program()
                          .create(0, f32, {1, 3, 8})
                          .create(1, f32, {3, 2})
                          .create(2, f32, {3, 2})
                          .create(3, f32, {1, 3, 8})
                          .run(PHX_OP_ROPE, {0, 1, 2}, {3})
                          .data());
  write(dir / "quantize", Program()
                              .create(0, f32, {4, 3})
                              .create(1, f32, {1})
                              .create(2, PHX_DTYPE_I8, {4, 3})
                              .run(PHX_OP_QUANTIZE, {0, 1}, {2})
                              .data());
  const phx_quantize_params axis1 = PHX_QUANTIZE_PARAMS_INIT;
  write(dir / "dequantize_per_channel", Program()
                                            .create(0, PHX_DTYPE_I8, {4, 3})
                                            .create(1, f32, {3})
                                            .create(2, PHX_DTYPE_I32, {3}, 0, 0)
                                            .create(3, f32, {4, 3})
                                            .run(PHX_OP_DEQUANTIZE, {0, 1, 2}, {3}, &axis1)
                                            .data());
  // qmatmul and qconv2d: 0 a or x, 1 b or weight, 2 a_scale, 3 b_scale, 4 y_scale,
  // 5 y_zero_point, 6 out; the optional zero points of a and b and the bias null.
  const uint8_t none = kNullHandle;
  write(dir / "qmatmul_requantized",
        Program()
            .create(0, PHX_DTYPE_I8, {2, 4})
            .create(1, PHX_DTYPE_I8, {4, 3})
            .create(2, f32, {1})
            .create(3, f32, {1})
            .create(4, f32, {1})
            .create(5, PHX_DTYPE_I32, {1}, 0, 0)
            .create(6, PHX_DTYPE_I8, {2, 3})
            .run(PHX_OP_QMATMUL, {0, 1, 2, none, 3, none, none, 4, 5}, {6})
            .data());
  write(dir / "qconv2d_requantized",
        Program()
            .create(0, PHX_DTYPE_I8, {1, 2, 4, 4})
            .create(1, PHX_DTYPE_I8, {3, 2, 3, 3})
            .create(2, f32, {1})
            .create(3, f32, {1})
            .create(4, f32, {1})
            .create(5, PHX_DTYPE_I32, {1}, 0, 0)
            .create(6, PHX_DTYPE_I8, {1, 3, 2, 2})
            .run(PHX_OP_QCONV2D, {0, 1, 2, none, 3, none, none, 4, 5}, {6})
            .data());
  write(dir / "dynamic_quantize_u8", Program()
                                         .create(0, f32, {10}, 0, 0xc0)
                                         .create(1, PHX_DTYPE_U8, {10})
                                         .create(2, f32, {1})
                                         .create(3, PHX_DTYPE_I32, {1})
                                         .run(PHX_OP_DYNAMIC_QUANTIZE, {0}, {1, 2, 3})
                                         .data());
  // Transfers within and past a tensor, and copies across devices and onto itself.
  write(dir / "transfers_and_copies", Program()
                                          .create(0, f32, {4, 4})
                                          .create(1, f32, {16}, 1)
                                          .create(2, PHX_DTYPE_I32, {2, 8}, 2)
                                          .upload(0, 8, 32)
                                          .upload(0, 60, 8)
                                          .download(0, 0, 64)
                                          .download(0, 64, 1)
                                          .copy(1, 0)
                                          .copy(2, 1)
                                          .copy(0, 0)
                                          .destroy(0)
                                          .copy(1, kStaleHandle)
                                          .data());
  // What the API must refuse: shapes it cannot hold, stale and null handles, null host
  // pointers, counts out of range.
  write(dir / "misuse", Program()
                            .create(0, f32, {0, 3})
                            .create(0, f32, {-1})
                            .create(0, 9, {2})
                            .create(1, f32, {3})
                            .destroy(1)
                            .destroy(kStaleHandle)
                            .destroy(kNullHandle)
                            .create(2, f32, {3})
                            .upload(2, 0, 12, kNullHostPointer)
                            .download(kStaleHandle, 0, 4)
                            .run(PHX_OP_RELU, {2}, {2, 2, 2, 2})
                            .run(PHX_OP_ADD, {2, kNullHandle}, {2})
                            .run(99, {2}, {2})
                            .data());
}

// fuzz_graph's commands (graph_program.h), field by field.
class GraphProgram {
 public:
  GraphProgram& input(phx_dtype dtype, std::initializer_list<uint8_t> dims,
                      std::initializer_list<uint8_t> names) {
    out_.byte(kGraphInput).byte(dtype).byte(static_cast<uint8_t>(dims.size()));
    for (uint8_t d : dims) out_.byte(d);
    for (uint8_t n : names) out_.byte(n);
    return *this;
  }
  GraphProgram& constant(phx_dtype dtype, std::initializer_list<uint8_t> dims) {
    out_.byte(kGraphConstant).byte(dtype).byte(static_cast<uint8_t>(dims.size()));
    for (uint8_t d : dims) out_.byte(d);
    out_.byte(1);  // the exact size
    return *this;
  }
  GraphProgram& tensor(uint8_t elements_code, bool destroyed) {
    out_.byte(kGraphTensor).byte(elements_code).byte(destroyed ? 0 : 1);
    return *this;
  }
  // A node without parameters or output dtypes: each output's dtype from the op's rules.
  GraphProgram& node(phx_op_id op, std::initializer_list<uint8_t> inputs, uint8_t outputs = 1) {
    out_.byte(kGraphNode).byte(op).byte(0).byte(static_cast<uint8_t>(inputs.size()));
    for (uint8_t v : inputs) out_.byte(v);
    out_.byte(outputs);
    for (uint8_t o = 0; o < outputs; ++o) out_.byte(PHX_DTYPE_F32);
    for (int i = 0; i < 64; ++i) out_.byte(0);  // parameter bytes: at most 64 are read
    return *this;
  }
  GraphProgram& output(uint8_t value) {
    out_.byte(kGraphOutput).byte(value);
    return *this;
  }
  GraphProgram& compile(uint8_t flags, std::initializer_list<uint8_t> dynamic_sizes) {
    out_.byte(kGraphCompile).byte(flags);
    for (uint8_t s : dynamic_sizes) out_.byte(s);
    return *this;
  }
  std::vector<uint8_t> data() const { return out_.data(); }

 private:
  ByteWriter out_;
};

void write_graph(const fs::path& dir) {
  // x[batch, 4] @ w[4, 3], relu: a dynamic batch, sizes 2 then 3 per device.
  write(dir / "matmul_relu_dynamic", GraphProgram()
                                         .input(PHX_DTYPE_F32, {kDynamicDim, 4}, {1, 0})
                                         .constant(PHX_DTYPE_F32, {4, 3})
                                         .node(PHX_OP_MATMUL, {0, 1})
                                         .node(PHX_OP_RELU, {2})
                                         .output(3)
                                         .compile(0, {1, 2, 1, 2, 1, 2, 1, 2})
                                         .data());
  // a + b of constants folds; x + it is the output; gelu(x) is dead. Compiled with folding
  // and without it.
  write(dir / "folded_and_dead", GraphProgram()
                                     .constant(PHX_DTYPE_F32, {4})
                                     .constant(PHX_DTYPE_F32, {4})
                                     .node(PHX_OP_ADD, {0, 1})
                                     .input(PHX_DTYPE_F32, {4}, {0})
                                     .node(PHX_OP_ADD, {3, 2})
                                     .node(PHX_OP_GELU, {3})
                                     .output(4)
                                     .compile(0, {})
                                     .compile(PHX_COMPILE_NO_CONSTANT_FOLDING, {})
                                     .data());
  // The same, saved, loaded and run again (bit 4) on every device: sizes for both runs.
  write(dir / "matmul_relu_saved",
        GraphProgram()
            .input(PHX_DTYPE_F32, {kDynamicDim, 4}, {1, 0})
            .constant(PHX_DTYPE_F32, {4, 3})
            .node(PHX_OP_MATMUL, {0, 1})
            .node(PHX_OP_RELU, {2})
            .output(3)
            .compile(16, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2})
            .data());
  // A tensor constant destroyed before the compile; value numbers past the graph; an
  // input as an output; a node of an unknown op.
  write(dir / "misuse", GraphProgram()
                            .tensor(3, true)
                            .input(PHX_DTYPE_F32, {4}, {0})
                            .node(PHX_OP_MUL, {0, 1})
                            .output(1)
                            .node(PHX_OP_ADD, {7, 1})
                            .node(static_cast<phx_op_id>(PHX_OP_COUNT), {1})
                            .output(2)
                            .compile(0, {})
                            .data());
}

// Saved executables (phx_executable_save) of x[2, 4] @ w + b, relu, - x: on every device
// that compiles it, and once more with a dynamic batch on the first device.
void write_executable_load(const fs::path& dir) {
  phx_context context = nullptr;
  size_t devices = 0;
  if (phx_context_create(nullptr, &context) != PHX_STATUS_OK ||
      phx_device_count(context, &devices) != PHX_STATUS_OK) {
    std::fprintf(stderr, "make_seeds: no context: %s\n", phx_last_error());
    return;
  }
  const float w[16] = {0.5f, -1, 0.25f, 2, 1, 0, -0.5f, 1, 0.75f, 1, -2, 0, 1, 0.5f, 0, -1};
  const float b[4] = {0.5f, -0.25f, 1, 0};
  for (const int64_t batch : {int64_t{2}, PHX_DIM_DYNAMIC}) {
    phx_graph graph = nullptr;
    phx_graph_create(context, &graph);
    const int64_t x_shape[2] = {batch, 4}, w_shape[2] = {4, 4}, b_shape[1] = {4};
    phx_graph_input_desc input = PHX_GRAPH_INPUT_DESC_INIT;
    input.dtype = PHX_DTYPE_F32;
    input.rank = 2;
    input.shape = x_shape;
    phx_value x = 0, vw = 0, vb = 0, product = 0, sum = 0, relu = 0, y = 0;
    phx_graph_add_input(graph, &input, &x);
    phx_graph_add_constant(graph, "w", PHX_DTYPE_F32, 2, w_shape, w, sizeof w, &vw);
    phx_graph_add_constant(graph, "b", PHX_DTYPE_F32, 1, b_shape, b, sizeof b, &vb);
    auto node = [&](phx_op_id op, std::initializer_list<phx_value> inputs, phx_value* out) {
      const std::vector<phx_value> values(inputs);
      phx_graph_node_desc desc = PHX_GRAPH_NODE_DESC_INIT;
      desc.op = op;
      desc.inputs = values.data();
      desc.input_count = values.size();
      desc.output_count = 1;
      phx_graph_add_node(graph, &desc, out);
    };
    node(PHX_OP_MATMUL, {x, vw}, &product);
    node(PHX_OP_ADD, {product, vb}, &sum);
    node(PHX_OP_RELU, {sum}, &relu);
    node(PHX_OP_SUB, {relu, x}, &y);
    phx_graph_add_output(graph, y, "y");
    for (size_t d = 0; d < (batch == PHX_DIM_DYNAMIC ? 1 : devices); ++d) {
      phx_compile_options options = PHX_COMPILE_OPTIONS_INIT;
      options.device = d;
      phx_executable exe = nullptr;
      size_t size = 0;
      if (phx_graph_compile(context, graph, &options, &exe) != PHX_STATUS_OK ||
          phx_executable_save(exe, nullptr, 0, &size) != PHX_STATUS_OK) {
        phx_executable_destroy(exe);
        continue;
      }
      std::vector<uint8_t> bytes(size);
      phx_executable_save(exe, bytes.data(), size, &size);
      phx_device_info info = PHX_DEVICE_INFO_INIT;
      phx_device_get(context, d, &info);
      write(dir / ((batch == PHX_DIM_DYNAMIC ? "mlp_dynamic_" : "mlp_") + std::string(info.plugin)),
            bytes);
      phx_executable_destroy(exe);
    }
    phx_graph_destroy(graph);
  }
  phx_context_destroy(context);
}

void write_sim_config(const fs::path& dir) {
  // The file's text, NUL, then the variable's.
  auto config = [](const std::string& file, const std::string& env) {
    return file + std::string(1, '\0') + env;
  };
  for (const char* generation : {"v4", "v5e", "v5p", "v6e", "v7"})
    write(dir / (std::string("tpu_") + generation),
          config(std::string("# one chip\ngeneration = ") + generation +
                     "\nchips = 2\nprecision = highest\n",
                 "timing=scalesim,memory_fraction=0.5"));
  write(dir / "tpu_overrides",
        config("hbm_bytes = 1000000\nmxu_count = 8\nmxu_size = 64\nclock_ghz = 1.5\n"
               "hbm_bandwidth_gbps = 800\ncompile_cache_size = 4\nlaunch_overhead_ns = 0\n",
               ""));
  for (const char* profile : {"mobile", "edge", "datacenter"})
    write(dir / (std::string("npu_") + profile),
          config(std::string("profile = ") + profile + "\ndevices = 2\n",
                 "memory_optimization=on,memory_limit=1048576"));
  write(dir / "npu_overrides",
        config("sram_bytes = 65536\ndram_bytes = 1073741824\ndram_bandwidth_gbps = 10.5\n"
               "int8_macs_per_cycle = 512\nint16_macs_per_cycle = 0\nfp16_macs_per_cycle = 256\n"
               "op_overhead_ns = 100\n",
               "clock_ghz=0.8"));
  write(dir / "settings_typed", config("i = 7\nn = 2.5e3\n", "f=true"));
  write(dir / "malformed_line", config("generation v4\n", ""));
  write(dir / "unknown_key", config("", "generation=v5e,colour=blue"));
  write(dir / "out_of_range", config("chips = 65\nmemory_fraction = 0\n", "devices=0"));
}

void write_pipeline_cache(const fs::path& dir) {
  const phx::vulkan::PipelineCacheIdentity identity = fuzz_cache_identity();
  // The driver's header, then some bytes of its own.
  VkPipelineCacheHeaderVersionOne header = {};
  header.headerSize = sizeof header;
  header.headerVersion = VK_PIPELINE_CACHE_HEADER_VERSION_ONE;
  header.vendorID = identity.vendor_id;
  header.deviceID = identity.device_id;
  std::memcpy(header.pipelineCacheUUID, identity.cache_uuid, VK_UUID_SIZE);
  std::vector<uint8_t> payload(sizeof header + 48);
  std::memcpy(payload.data(), &header, sizeof header);
  for (size_t i = sizeof header; i < payload.size(); ++i) payload[i] = static_cast<uint8_t>(i);
  const std::vector<uint8_t> valid = phx::vulkan::wrap_pipeline_cache(identity, payload);
  write(dir / "valid", valid);

  std::vector<uint8_t> broken = valid;
  broken.resize(40);
  write(dir / "truncated_header", broken);
  broken = valid;
  broken[0] = 'X';
  write(dir / "bad_magic", broken);
  broken = valid;
  broken.back() ^= 1;
  write(dir / "bad_hash", broken);
  broken = valid;
  broken.push_back(0);
  write(dir / "padded", broken);
  phx::vulkan::PipelineCacheIdentity other = identity;
  other.device_id = 1;
  write(dir / "other_device", phx::vulkan::wrap_pipeline_cache(other, payload));
  std::vector<uint8_t> short_driver_header = payload;
  short_driver_header[0] = 16;
  write(dir / "bad_driver_header", phx::vulkan::wrap_pipeline_cache(identity, short_driver_header));
  write(dir / "empty_payload", phx::vulkan::wrap_pipeline_cache(identity, {}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus folder>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  write_op_run(root / "fuzz_op_run");
  write_graph(root / "fuzz_graph");
  write_executable_load(root / "fuzz_executable_load");
  write_sim_config(root / "fuzz_sim_config");
  write_pipeline_cache(root / "fuzz_pipeline_cache");
  return 0;
}
