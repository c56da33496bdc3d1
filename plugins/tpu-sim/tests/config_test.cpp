// The configuration parser: defaults, the generations, overrides, and errors that name
// the bad key (or the malformed line).
#include "config.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace phx::tpu_sim {
namespace {

// Parses env (and a file's text); returns the error, "" on success.
std::string parse(const std::string& env, SimConfig& cfg, const std::string& file_text = "") {
  ConfigSources src;
  src.env_text = env;
  if (!file_text.empty()) {
    src.file_path = "tpu-sim.conf";
    src.file_text = file_text;
  }
  std::string error;
  return parse_config(src, cfg, error) ? "" : error;
}

TEST(Config, DefaultsAreOneV5eChip) {
  SimConfig cfg;
  ASSERT_EQ(parse("", cfg), "");
  EXPECT_EQ(cfg.chip.generation, "v5e");
  EXPECT_EQ(cfg.chip.hbm_bytes, 16'000'000'000u);
  EXPECT_EQ(cfg.chips, 1u);
  EXPECT_EQ(cfg.memory_fraction, 1.0);
  EXPECT_EQ(cfg.timing, TimingMode::kOverlap);
  EXPECT_EQ(cfg.precision, Precision::kDefault);
  EXPECT_TRUE(cfg.flush_subnormals);  // as the hardware does
  EXPECT_EQ(cfg.compile_cache_size, 256u);
  EXPECT_EQ(cfg.chip.mxu_count, 4u);
  EXPECT_EQ(cfg.chip.mxu_size, 128u);
  // The clock is derived so that the peak is the published one: 197 TFLOP/s.
  EXPECT_NEAR(cfg.chip.peak_bf16_tflops(), 197.0, 1e-9);
}

TEST(Config, EveryGenerationHasItsCapacityAndPeak) {
  struct Expected {
    const char* generation;
    uint64_t hbm_bytes;
    double peak;
    uint32_t mxu_size;
  };
  for (const Expected& e :
       {Expected{"v4", 32'000'000'000u, 275.0, 128}, Expected{"v5e", 16'000'000'000u, 197.0, 128},
        Expected{"v5p", 95'000'000'000u, 459.0, 128}, Expected{"v6e", 32'000'000'000u, 918.0, 256},
        Expected{"v7", 128'000'000'000u, 2307.0, 256}}) {
    SimConfig cfg;
    ASSERT_EQ(parse(std::string("generation=") + e.generation, cfg), "");
    EXPECT_EQ(cfg.chip.hbm_bytes, e.hbm_bytes) << e.generation;
    EXPECT_NEAR(cfg.chip.peak_bf16_tflops(), e.peak, 1e-9) << e.generation;
    EXPECT_EQ(cfg.chip.mxu_size, e.mxu_size) << e.generation;
  }
}

TEST(Config, EnvironmentOverridesTheFileAndFiguresOverrideTheGeneration) {
  SimConfig cfg;
  const std::string file =
      "# a comment\n"
      "generation = v5p   # trailing comment\n"
      "chips = 2\n"
      "\n"
      "timing = scalesim\n"
      "subnormals = keep\n";
  ASSERT_EQ(parse("chips=4, memory_fraction=0.5,precision=highest,mxu_count=2", cfg, file), "");
  EXPECT_FALSE(cfg.flush_subnormals);
  EXPECT_EQ(cfg.chip.generation, "v5p");
  EXPECT_EQ(cfg.chips, 4u);
  EXPECT_EQ(cfg.timing, TimingMode::kScaleSim);
  EXPECT_EQ(cfg.precision, Precision::kHighest);
  EXPECT_EQ(cfg.usable_hbm_bytes(), 47'500'000'000u);
  // Two MXUs at v5p's clock: a quarter of its 8-MXU peak.
  EXPECT_NEAR(cfg.chip.peak_bf16_tflops(), 459.0 / 4, 1e-9);
}

TEST(Config, PrecisionTakesJaxsNames) {
  struct Expected {
    const char* setting;
    Precision precision;
  };
  for (const Expected& e : {Expected{"precision=default", Precision::kDefault},
                            Expected{"precision=bf16", Precision::kDefault},  // the older name
                            Expected{"precision=high", Precision::kHigh},
                            Expected{"precision=highest", Precision::kHighest}}) {
    SimConfig cfg;
    ASSERT_EQ(parse(e.setting, cfg), "") << e.setting;
    EXPECT_EQ(cfg.precision, e.precision) << e.setting;
  }
  SimConfig cfg;
  const std::string error = parse("precision=float32", cfg);
  EXPECT_NE(error.find("default, high or highest"), std::string::npos) << error;
}

TEST(Config, ErrorsNameTheBadKey) {
  SimConfig cfg;
  std::string error = parse("generation=v9", cfg);
  EXPECT_NE(error.find("'generation'"), std::string::npos) << error;
  EXPECT_NE(error.find("v9"), std::string::npos) << error;

  error = parse("hbm_bytes=-5", cfg);
  EXPECT_NE(error.find("'hbm_bytes'"), std::string::npos) << error;
  EXPECT_NE(parse("hbm_bytes=1125899906842625", cfg).find("'hbm_bytes'"),
            std::string::npos);                             // 2^50 + 1
  EXPECT_EQ(parse("hbm_bytes=1125899906842624", cfg), "");  // 2^50

  for (const char* bad : {"chips=0", "chips=65", "memory_fraction=0", "memory_fraction=1.5",
                          "timing=fast", "precision=f16", "subnormals=denormal",
                          "compile_cache_size=0", "mxu_size=512", "clock_ghz=nan", "chips=2x"}) {
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    error = parse(bad, cfg);
    EXPECT_NE(error.find("'" + key + "'"), std::string::npos) << bad << ": " << error;
  }

  error = parse("generation=v4,bogus=1", cfg);
  EXPECT_NE(error.find("'bogus'"), std::string::npos) << error;
}

TEST(Config, MalformedFileNamesTheLine) {
  SimConfig cfg;
  std::string error = parse("", cfg, "generation = v4\nthis line has no value\n");
  EXPECT_NE(error.find("tpu-sim.conf:2"), std::string::npos) << error;
  error = parse("", cfg, "chips = 2\nspeed = 3\n");
  EXPECT_NE(error.find("'speed'"), std::string::npos) << error;
  EXPECT_NE(error.find("tpu-sim.conf:2"), std::string::npos) << error;
  error = parse("generation", cfg);
  EXPECT_NE(error.find("PHX_TPU_SIM"), std::string::npos) << error;
}

// Without a topology the chips form the most cube-like torus of the generation's
// dimensionality, with the generation's links.
TEST(Config, TopologyDefaultsToTheMostCubeLikeTorus) {
  struct Expected {
    const char* settings;
    std::vector<uint32_t> dims;
  };
  for (const Expected& e :
       {Expected{"generation=v5p,chips=8", {2, 2, 2}}, Expected{"generation=v5e,chips=8", {2, 4}},
        Expected{"generation=v6e,chips=16", {4, 4}}, Expected{"generation=v4,chips=16", {2, 2, 4}},
        Expected{"generation=v7,chips=6", {1, 2, 3}}, Expected{"generation=v5p,chips=7", {1, 1, 7}},
        Expected{"generation=v5p", {1, 1, 1}}, Expected{"", {1, 1}}}) {
    SimConfig cfg;
    ASSERT_EQ(parse(e.settings, cfg), "") << e.settings;
    EXPECT_EQ(cfg.pod.dims, e.dims) << e.settings;
    EXPECT_EQ(cfg.pod.chip_count(), cfg.chips) << e.settings;
  }
  SimConfig cfg;
  ASSERT_EQ(parse("generation=v5e", cfg), "");
  EXPECT_EQ(cfg.pod.link_gbps, 50.0);  // JAX scaling book: 5e10 bytes/s per link each way
  EXPECT_EQ(cfg.pod.hop_latency_ns, 1000.0);
  ASSERT_EQ(parse("generation=v4", cfg), "");
  EXPECT_EQ(cfg.pod.link_gbps, 45.0);
}

// A topology of fewer axes than the torus is padded with axes of 1; the links' figures
// are overridden.
TEST(Config, TopologyAndLinksAreRead) {
  SimConfig cfg;
  ASSERT_EQ(parse("generation=v5p,chips=8,topology=2x2x2", cfg), "");
  EXPECT_EQ(cfg.pod.dims, (std::vector<uint32_t>{2, 2, 2}));
  ASSERT_EQ(parse("generation=v5p,chips=8,topology=8x1", cfg), "");
  EXPECT_EQ(cfg.pod.dims, (std::vector<uint32_t>{8, 1, 1}));
  ASSERT_EQ(parse("chips=16,topology=4x4,ici_link_gbps=25.5,ici_latency_ns=0", cfg), "");
  EXPECT_EQ(cfg.pod.dims, (std::vector<uint32_t>{4, 4}));
  EXPECT_EQ(cfg.pod.link_gbps, 25.5);
  EXPECT_EQ(cfg.pod.hop_latency_ns, 0.0);
}

TEST(Config, TopologyErrorsSayWhatIsWrong) {
  SimConfig cfg;
  // The product against chips: both keys and both numbers named.
  std::string error = parse("generation=v5p,chips=4,topology=2x2x2", cfg);
  for (const char* part : {"'topology'", "'chips'", "is 8 chips", "is 4", "PHX_TPU_SIM"})
    EXPECT_NE(error.find(part), std::string::npos) << part << ": " << error;
  // More axes than the generation's torus.
  error = parse("generation=v5e,chips=8,topology=2x2x2", cfg);
  for (const char* part : {"'topology'", "3 axes", "v5e's torus has 2"})
    EXPECT_NE(error.find(part), std::string::npos) << part << ": " << error;
  for (const char* bad : {"8", "2x", "x2", "2*4", "0x8", "2x-4", "2x2x2x1", "100x1", "1x8x1x1"}) {
    error = parse(std::string("generation=v5p,chips=8,topology=") + bad, cfg);
    EXPECT_NE(error.find("'topology'"), std::string::npos) << bad << ": " << error;
  }
  for (const char* bad : {"ici_link_gbps=0", "ici_link_gbps=fast", "ici_latency_ns=-1"}) {
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    error = parse(bad, cfg);
    EXPECT_NE(error.find("'" + key + "'"), std::string::npos) << bad << ": " << error;
  }
}

}  // namespace
}  // namespace phx::tpu_sim
