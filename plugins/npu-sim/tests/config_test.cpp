// The configuration parser and the profiles: defaults, every key, the environment over
// the file, errors that name the bad key (or the malformed line), and each profile's
// figures and op set.
#include "config.h"

#include <gtest/gtest.h>
#include <phx/op_table.h>

#include <string>

#include "profiles.h"

namespace phx::npu_sim {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

// Parses env (and a file's text); returns the error, "" on success.
std::string parse(const std::string& env, NpuConfig& cfg, const std::string& file_text = "") {
  ConfigSources src;
  src.env_text = env;
  if (!file_text.empty()) {
    src.file_path = "npu-sim.conf";
    src.file_text = file_text;
  }
  std::string error;
  return parse_config(src, cfg, error) ? "" : error;
}

TEST(Config, DefaultsAreOneMobileNpu) {
  NpuConfig cfg;
  ASSERT_EQ(parse("", cfg), "");
  const DeviceFigures& f = cfg.figures;
  EXPECT_STREQ(f.profile->name, "mobile");
  EXPECT_EQ(cfg.devices, 1u);
  EXPECT_EQ(f.sram_bytes, 4 * kMiB);
  EXPECT_EQ(f.dram_bytes, 2 * kGiB);
  EXPECT_EQ(f.dram_bandwidth_gbps, 51.2);
  EXPECT_EQ(f.int8_macs_per_cycle, 8192u);
  EXPECT_EQ(f.int16_macs_per_cycle, 0u);
  EXPECT_EQ(f.fp16_macs_per_cycle, 4096u);  // half the int8 rate
  EXPECT_EQ(f.clock_ghz, 1.0);
  EXPECT_EQ(cfg.memory_limit, 0u);
  EXPECT_FALSE(cfg.memory_optimization);
  // 2 operations per MAC: 2 * 8192 * 1 GHz.
  EXPECT_DOUBLE_EQ(f.peak_int8_tops(), 16.384);
  EXPECT_EQ(f.peak_int16_tops(), 0.0);
  EXPECT_DOUBLE_EQ(f.peak_fp16_tflops(), 8.192);
}

TEST(Config, EveryProfileHasItsFigures) {
  struct Expected {
    const char* profile;
    uint64_t sram, dram;
    double int8_tops, int16_tops, fp16_tflops;
  };
  for (const Expected& e :
       {Expected{"mobile", 4 * kMiB, 2 * kGiB, 16.384, 0, 8.192},
        Expected{"edge", 8 * kMiB, 1 * kGiB, 26.2144, 13.1072, 13.1072},
        Expected{"datacenter", 144 * kMiB, 16 * kGiB, 393.216, 196.608, 196.608}}) {
    NpuConfig cfg;
    ASSERT_EQ(parse(std::string("profile=") + e.profile, cfg), "");
    EXPECT_STREQ(cfg.figures.profile->name, e.profile);
    EXPECT_EQ(cfg.figures.sram_bytes, e.sram) << e.profile;
    EXPECT_EQ(cfg.figures.dram_bytes, e.dram) << e.profile;
    EXPECT_NEAR(cfg.figures.peak_int8_tops(), e.int8_tops, 1e-9) << e.profile;
    EXPECT_NEAR(cfg.figures.peak_int16_tops(), e.int16_tops, 1e-9) << e.profile;
    EXPECT_NEAR(cfg.figures.peak_fp16_tflops(), e.fp16_tflops, 1e-9) << e.profile;
  }
}

TEST(Config, EveryKeyTakesEffect) {
  NpuConfig cfg;
  ASSERT_EQ(parse("profile=edge,devices=3,dram_bytes=1048576,sram_bytes=65536,"
                  "memory_limit=524288,memory_optimization=on,dram_bandwidth_gbps=25.6,"
                  "clock_ghz=1.2,op_overhead_ns=0,int8_macs_per_cycle=1024,"
                  "int16_macs_per_cycle=0,fp16_macs_per_cycle=256",
                  cfg),
            "");
  const DeviceFigures& f = cfg.figures;
  EXPECT_STREQ(f.profile->name, "edge");
  EXPECT_EQ(cfg.devices, 3u);
  EXPECT_EQ(f.dram_bytes, 1048576u);
  EXPECT_EQ(f.sram_bytes, 65536u);
  EXPECT_EQ(cfg.memory_limit, 524288u);
  EXPECT_TRUE(cfg.memory_optimization);
  EXPECT_EQ(f.dram_bandwidth_gbps, 25.6);
  EXPECT_EQ(f.clock_ghz, 1.2);
  EXPECT_EQ(f.op_overhead_ns, 0.0);
  EXPECT_EQ(f.int8_macs_per_cycle, 1024u);
  EXPECT_EQ(f.int16_macs_per_cycle, 0u);
  EXPECT_EQ(f.fp16_macs_per_cycle, 256u);
  for (const char* off : {"0", "off", "false"}) {
    ASSERT_EQ(parse(std::string("memory_optimization=") + off, cfg), "");
    EXPECT_FALSE(cfg.memory_optimization) << off;
  }
}

TEST(Config, EnvironmentOverridesTheFile) {
  NpuConfig cfg;
  const std::string file =
      "# a comment\n"
      "profile = datacenter   # trailing comment\n"
      "devices = 2\n"
      "\n"
      "memory_optimization = 1\n";
  ASSERT_EQ(parse("devices=4, clock_ghz=0.5", cfg, file), "");
  EXPECT_STREQ(cfg.figures.profile->name, "datacenter");
  EXPECT_EQ(cfg.devices, 4u);
  EXPECT_TRUE(cfg.memory_optimization);
  // The clock override keeps the MAC array: the peak follows the clock.
  EXPECT_NEAR(cfg.figures.peak_int8_tops(), 2.0 * 131072 * 0.5 / 1e3, 1e-9);
}

TEST(Config, ErrorsNameTheBadKey) {
  NpuConfig cfg;
  std::string error = parse("profile=tiny", cfg);
  EXPECT_NE(error.find("'profile'"), std::string::npos) << error;
  EXPECT_NE(error.find("tiny"), std::string::npos) << error;
  EXPECT_NE(error.find("mobile, edge, datacenter"), std::string::npos) << error;

  for (const char* bad :
       {"devices=0", "devices=17", "devices=2x", "dram_bytes=-5", "dram_bytes=1125899906842625",
        "sram_bytes=0", "memory_limit=0", "memory_optimization=maybe", "dram_bandwidth_gbps=0",
        "clock_ghz=nan", "op_overhead_ns=-1", "int8_macs_per_cycle=0",
        "int16_macs_per_cycle=16777217", "fp16_macs_per_cycle=many"}) {
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    error = parse(bad, cfg);
    EXPECT_NE(error.find("'" + key + "'"), std::string::npos) << bad << ": " << error;
    EXPECT_NE(error.find("PHX_NPU_SIM"), std::string::npos) << bad << ": " << error;
  }
  EXPECT_EQ(parse("dram_bytes=1125899906842624", cfg), "");  // 2^50

  // A limit above the capacity it limits.
  error = parse("profile=edge,memory_limit=1073741825", cfg);
  EXPECT_NE(error.find("'memory_limit'"), std::string::npos) << error;
  EXPECT_NE(error.find("1073741824"), std::string::npos) << error;
  EXPECT_EQ(parse("dram_bytes=4096,memory_limit=4096", cfg), "");

  error = parse("profile=edge,turbo=1", cfg);
  EXPECT_NE(error.find("'turbo'"), std::string::npos) << error;
  EXPECT_NE(error.find("memory_optimization"), std::string::npos) << error;  // known keys
}

TEST(Config, MalformedFileNamesTheLine) {
  NpuConfig cfg;
  std::string error = parse("", cfg, "profile = edge\nthis line has no value\n");
  EXPECT_NE(error.find("npu-sim.conf:2"), std::string::npos) << error;
  error = parse("", cfg, "devices = 2\nspeed = 3\n");
  EXPECT_NE(error.find("'speed'"), std::string::npos) << error;
  EXPECT_NE(error.find("npu-sim.conf:2"), std::string::npos) << error;
  error = parse("", cfg, "devices = 99\n");
  EXPECT_NE(error.find("'devices' in npu-sim.conf:1"), std::string::npos) << error;
  error = parse("profile", cfg);
  EXPECT_NE(error.find("PHX_NPU_SIM"), std::string::npos) << error;
}

constexpr uint32_t bit(phx_dtype d) { return PHX_DTYPE_BIT(d); }

TEST(Profiles, OpSetsGrowFromMobileToDatacenter) {
  const Profile& mobile = *find_profile("mobile");
  const Profile& edge = *find_profile("edge");
  const Profile& dc = *find_profile("datacenter");
  EXPECT_EQ(find_profile("server"), nullptr);

  // Mobile: 8x8 and the f16 float path.
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_QMATMUL), bit(PHX_DTYPE_I8) | bit(PHX_DTYPE_U8));
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_QUANTIZE), bit(PHX_DTYPE_F32));
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_RELU), bit(PHX_DTYPE_I8) | bit(PHX_DTYPE_F16));
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_SUB), bit(PHX_DTYPE_I8) | bit(PHX_DTYPE_F16));
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_MUL), bit(PHX_DTYPE_I8) | bit(PHX_DTYPE_F16));
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_DYNAMIC_QUANTIZE), 0u);
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_MATMUL), bit(PHX_DTYPE_F16));
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_ATTENTION), bit(PHX_DTYPE_F16));
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_CAST), mobile.tensor_dtypes);
  EXPECT_EQ(supported_dtypes(mobile, PHX_OP_TRANSPOSE), mobile.tensor_dtypes);
  EXPECT_EQ(mobile.tensor_dtypes & bit(PHX_DTYPE_I16), 0u);
  EXPECT_NE(mobile.tensor_dtypes & bit(PHX_DTYPE_F16), 0u);
  // Edge adds 16x8, 16-bit integer arithmetic and dynamic quantization.
  EXPECT_NE(supported_dtypes(edge, PHX_OP_QMATMUL) & bit(PHX_DTYPE_I16), 0u);
  EXPECT_NE(supported_dtypes(edge, PHX_OP_QCONV2D) & bit(PHX_DTYPE_I16), 0u);
  EXPECT_NE(supported_dtypes(edge, PHX_OP_MUL) & bit(PHX_DTYPE_I16), 0u);
  EXPECT_NE(supported_dtypes(edge, PHX_OP_REDUCE_SUM) & bit(PHX_DTYPE_I16), 0u);
  EXPECT_EQ(supported_dtypes(edge, PHX_OP_DYNAMIC_QUANTIZE), bit(PHX_DTYPE_F32));
  EXPECT_EQ(supported_dtypes(edge, PHX_OP_MATMUL), bit(PHX_DTYPE_F16));
  // Data-center: the edge set, at its own figures.
  EXPECT_EQ(supported_dtypes(dc, PHX_OP_MATMUL), bit(PHX_DTYPE_F16));
  EXPECT_EQ(supported_dtypes(dc, PHX_OP_SOFTMAX), bit(PHX_DTYPE_F16));
  EXPECT_NE(dc.tensor_dtypes & bit(PHX_DTYPE_F16), 0u);
  // No profile computes in f32 or bf16: that is the CPU fallback's.
  for (const Profile* p : {&mobile, &edge, &dc})
    for (phx_op_id op : {PHX_OP_MATMUL, PHX_OP_SOFTMAX, PHX_OP_ADD, PHX_OP_CONV2D,
                         PHX_OP_REDUCE_SUM, PHX_OP_ATTENTION})
      EXPECT_EQ(supported_dtypes(*p, op) & (bit(PHX_DTYPE_F32) | bit(PHX_DTYPE_BF16)), 0u)
          << p->name << " " << op;

  EXPECT_EQ(describe_ops(mobile).rfind(
                "quantize(f32) dequantize(i8,i32,u8) qmatmul(i8,u8) qconv2d(i8,u8) relu(f16,i8) "
                "add(f16,i8) sub(f16,i8) mul(f16,i8) div(f16) matmul(f16)",
                0),
            0u);
  EXPECT_NE(describe_ops(dc).find("matmul(f16)"), std::string::npos);
}

// Each row of each profile stays within what the op rules allow (the op table's
// dtype_mask) and what the profile holds, and lists an op once. Only data movement
// (transpose, cast, the layout ops, where's values) and the quantization of f32 take f32:
// the rest computes in f16 and the integer widths.
TEST(Profiles, EveryRowIsWithinTheOpRulesAndTheHeldDtypes) {
  const uint32_t f32 = bit(PHX_DTYPE_F32) | bit(PHX_DTYPE_BF16);
  for (const char* name : {"mobile", "edge", "datacenter"}) {
    const Profile& p = *find_profile(name);
    for (size_t i = 0; i < p.op_count; ++i) {
      const OpDtypes& row = p.ops[i];
      const OpSchema* schema = find_op_schema(row.op);
      ASSERT_NE(schema, nullptr) << name << " " << row.op;
      EXPECT_EQ(row.dtypes & ~schema->dtypes, 0u) << name << " " << schema->name;
      EXPECT_EQ(row.dtypes & ~p.tensor_dtypes, 0u) << name << " " << schema->name;
      EXPECT_EQ(supported_dtypes(p, row.op), row.dtypes) << name << " " << schema->name;
      const bool moves_or_quantizes = row.op == PHX_OP_QUANTIZE ||
                                      row.op == PHX_OP_DYNAMIC_QUANTIZE ||
                                      row.op == PHX_OP_TRANSPOSE || row.op == PHX_OP_CAST ||
                                      (row.op >= PHX_OP_RESHAPE && row.op <= PHX_OP_PAD);
      if (!moves_or_quantizes) {
        EXPECT_EQ(row.dtypes & f32, 0u) << name << " " << schema->name;
      }
    }
  }
}

}  // namespace
}  // namespace phx::npu_sim
