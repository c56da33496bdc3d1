// The pipeline cache file's format (pipeline_cache_file.h), without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "pipeline_cache_file.h"

namespace phx::vulkan {
namespace {

PipelineCacheIdentity identity() {
  PipelineCacheIdentity id;
  id.vendor_id = 0x10005;
  id.device_id = 7;
  id.driver_version = 42;
  for (uint32_t i = 0; i < VK_UUID_SIZE; ++i) id.cache_uuid[i] = uint8_t(i * 3);
  return id;
}

// What a driver returns: VkPipelineCacheHeaderVersionOne, then its data.
std::vector<uint8_t> driver_blob(const PipelineCacheIdentity& id) {
  std::vector<uint8_t> blob(32 + 100, 0xab);
  const uint32_t header[4] = {32, VK_PIPELINE_CACHE_HEADER_VERSION_ONE, id.vendor_id, id.device_id};
  std::memcpy(blob.data(), header, sizeof header);
  std::memcpy(blob.data() + 16, id.cache_uuid, VK_UUID_SIZE);
  return blob;
}

TEST(PipelineCacheFile, RoundTrips) {
  const auto blob = driver_blob(identity());
  std::vector<uint8_t> payload;
  std::string reason;
  ASSERT_TRUE(
      unwrap_pipeline_cache(identity(), wrap_pipeline_cache(identity(), blob), payload, reason))
      << reason;
  EXPECT_EQ(payload, blob);
}

TEST(PipelineCacheFile, RefusesWhatTheDriverShouldNotSee) {
  const auto blob = driver_blob(identity());
  const auto good = wrap_pipeline_cache(identity(), blob);
  std::vector<uint8_t> payload;
  std::string reason;
  auto refused = [&](std::vector<uint8_t> file, const PipelineCacheIdentity& id, const char* why) {
    const bool ok = unwrap_pipeline_cache(id, file, payload, reason);
    EXPECT_FALSE(ok) << why;
    EXPECT_NE(reason.find(why), std::string::npos) << reason;
  };
  refused({good.begin(), good.begin() + 20}, identity(), "truncated");
  refused({good.begin(), good.end() - 1}, identity(), "truncated");
  auto flipped = good;
  flipped.at(good.size() - 50) ^= 1;
  refused(flipped, identity(), "hash");
  auto magic = good;
  magic[1] = 'Q';
  refused(magic, identity(), "magic");
  auto format = good;
  format[8] = 9;
  refused(format, identity(), "format version");
  PipelineCacheIdentity newer = identity();
  newer.driver_version = 43;
  refused(good, newer, "another device");
  // Our header right, the driver's wrong (a forged or buggy file): still refused.
  PipelineCacheIdentity other = identity();
  other.cache_uuid[0] ^= 1;
  refused(wrap_pipeline_cache(identity(), driver_blob(other)), identity(), "driver's header");
}

TEST(PipelineCacheFile, WritesAtomically) {
  const auto dir = std::filesystem::temp_directory_path() / "phx_vulkan_cache_file_test";
  std::filesystem::remove_all(dir);
  const std::string path = (dir / "sub" / "cache.bin").string();
  const std::vector<uint8_t> bytes(1000, 7);
  std::string reason;
  ASSERT_TRUE(write_file_atomically(path, bytes, reason)) << reason;
  ASSERT_TRUE(write_file_atomically(path, bytes, reason)) << reason;  // over an old one
  std::vector<uint8_t> back;
  ASSERT_TRUE(read_file(path, 1 << 20, back, reason)) << reason;
  EXPECT_EQ(back, bytes);
  EXPECT_FALSE(read_file(path, 999, back, reason)) << "over the size bound";
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir / "sub"))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1u) << "no temporary file left";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace phx::vulkan
