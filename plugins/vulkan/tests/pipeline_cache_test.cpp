// The pipeline cache across processes: the helper (cache_helper.cpp) runs relu in a
// fresh process with PHX_VULKAN_CACHE_DIR set to a folder of the test's own. The second
// run finds the first one's pipelines; a damaged, truncated, foreign or other-device file
// is discarded with a warning, the op still runs, and a good file replaces it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.h"

namespace phx_vulkan_test {
namespace {

namespace fs = std::filesystem;

struct HelperRun {
  int exit_code = -1;
  std::string output;
  bool has(const std::string& text) const { return output.find(text) != std::string::npos; }
  double number(const std::string& key) const {
    const size_t at = output.find(key + ": ");
    return at == std::string::npos ? -1 : std::stod(output.substr(at + key.size() + 2));
  }
};

class PipelineCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(PHX_VULKAN_TEST_SCRATCH) /
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  HelperRun run(const char* extra_env = "") {
    const std::string command = std::string("PHX_VULKAN_CACHE_DIR='") + dir_.string() + "' " +
                                extra_env + " '" + PHX_VULKAN_CACHE_HELPER + "' 2>&1";
    HelperRun result;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return result;
    char buffer[4096];
    size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }

  // The files in the folder: the cache alone, never a temporary file left behind.
  std::vector<fs::path> files() const {
    std::vector<fs::path> found;
    for (const auto& entry : fs::directory_iterator(dir_)) found.push_back(entry.path());
    return found;
  }

  std::vector<char> read(const fs::path& path) const {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  void write(const fs::path& path, const std::vector<char>& bytes) const {
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }

  // A first run that writes the cache; its file.
  fs::path first_run() {
    const HelperRun first = run();
    if (first.exit_code == 2) return {};
    EXPECT_EQ(first.exit_code, 0) << first.output;
    EXPECT_GT(first.number("misses"), 0) << first.output;
    EXPECT_EQ(first.number("hits"), 0) << first.output;
    const auto found = files();
    EXPECT_EQ(found.size(), 1u) << "the cache file and no temporary file";
    return found.empty() ? fs::path() : found[0];
  }

  // A driver that caches nothing saves its 32-byte VkPipelineCacheHeaderVersionOne alone
  // (lavapipe 22.3): the file is written, checked and loaded, but holds no pipeline to hit.
  bool driver_caches(const HelperRun& run) { return !run.has("state: loaded 32 bytes"); }

  // A run over a damaged cache: a warning, relu right, no hit, and a good file after it.
  void expect_discarded(const char* what) {
    const HelperRun damaged = run();
    EXPECT_EQ(damaged.exit_code, 0) << what << ": " << damaged.output;
    EXPECT_TRUE(damaged.has("warning: ") && damaged.has("discarded"))
        << what << ": " << damaged.output;
    EXPECT_TRUE(damaged.has("relu: ok")) << what;
    EXPECT_EQ(damaged.number("hits"), 0) << what << ": " << damaged.output;
    const HelperRun after = run();
    EXPECT_TRUE(after.has("state: loaded"))
        << what << ": a good file was written: " << after.output;
    if (driver_caches(after)) {
      EXPECT_GT(after.number("hits"), 0) << what << ": " << after.output;
    }
    EXPECT_EQ(files().size(), 1u);
  }

  fs::path dir_;
};

TEST_F(PipelineCacheTest, SecondProcessHitsTheCache) {
  const fs::path file = first_run();
  if (file.empty()) GTEST_SKIP() << "no Vulkan device";
  const HelperRun second = run();
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_TRUE(second.has("state: loaded")) << second.output;
  EXPECT_FALSE(second.has("warning: ")) << second.output;
  if (!driver_caches(second)) {
    EXPECT_EQ(second.number("hits"), 0) << "nothing to hit: " << second.output;
    return;
  }
  EXPECT_GT(second.number("hits"), 0) << second.output;
  EXPECT_EQ(second.number("misses"), 0) << second.output;
  EXPECT_EQ(files().size(), 1u);
}

TEST_F(PipelineCacheTest, SwitchedOffWritesNothing) {
  const HelperRun off = run("PHX_VULKAN_NO_PIPELINE_CACHE=1");
  if (off.exit_code == 2) GTEST_SKIP() << "no Vulkan device";
  EXPECT_EQ(off.exit_code, 0) << off.output;
  EXPECT_TRUE(off.has("state: off")) << off.output;
  EXPECT_TRUE(files().empty());
}

TEST_F(PipelineCacheTest, CorruptPayloadIsDiscarded) {
  const fs::path file = first_run();
  if (file.empty()) GTEST_SKIP() << "no Vulkan device";
  std::vector<char> bytes = read(file);
  bytes[bytes.size() - 3] ^= 0x5a;
  write(file, bytes);
  expect_discarded("corrupt");
}

TEST_F(PipelineCacheTest, TruncatedFileIsDiscarded) {
  const fs::path file = first_run();
  if (file.empty()) GTEST_SKIP() << "no Vulkan device";
  std::vector<char> bytes = read(file);
  bytes.resize(bytes.size() / 2);
  write(file, bytes);
  expect_discarded("truncated");
  write(file, std::vector<char>(10, 'x'));  // shorter than the header
  expect_discarded("tiny");
}

TEST_F(PipelineCacheTest, ForeignFileIsDiscarded) {
  const fs::path file = first_run();
  if (file.empty()) GTEST_SKIP() << "no Vulkan device";
  std::vector<char> bytes = read(file);
  bytes[0] = 'X';  // not our magic
  write(file, bytes);
  expect_discarded("foreign magic");
  bytes = read(file);
  bytes[12] ^= 1;  // vendorID: another device's cache
  write(file, bytes);
  expect_discarded("other vendor");
}

TEST_F(PipelineCacheTest, OtherDriverUuidIsDiscarded) {
  const fs::path file = first_run();
  if (file.empty()) GTEST_SKIP() << "no Vulkan device";
  std::vector<char> bytes = read(file);
  bytes[24] ^= 0xff;  // the first byte of pipelineCacheUUID in our header
  write(file, bytes);
  expect_discarded("other uuid");
}

}  // namespace
}  // namespace phx_vulkan_test
