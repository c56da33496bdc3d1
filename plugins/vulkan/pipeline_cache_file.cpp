#include "pipeline_cache_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace phx::vulkan {
namespace {

constexpr char kMagic[8] = {'P', 'H', 'X', 'V', 'K', 'P', 'C', '\0'};
constexpr size_t kHeaderBytes = 8 + 4 * 4 + VK_UUID_SIZE + 8 + 8;

void put(std::vector<uint8_t>& out, size_t& at, const void* value, size_t size) {
  std::memcpy(out.data() + at, value, size);
  at += size;
}

template <typename T>
T get(std::span<const uint8_t> in, size_t& at) {
  T value;
  std::memcpy(&value, in.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

}  // namespace

uint64_t fnv1a64(std::span<const uint8_t> bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

std::vector<uint8_t> wrap_pipeline_cache(const PipelineCacheIdentity& identity,
                                         std::span<const uint8_t> payload) {
  std::vector<uint8_t> file(kHeaderBytes + payload.size());
  const uint64_t size = payload.size(), hash = fnv1a64(payload);
  size_t at = 0;
  put(file, at, kMagic, sizeof kMagic);
  put(file, at, &kPipelineCacheFormat, sizeof kPipelineCacheFormat);
  put(file, at, &identity.vendor_id, sizeof identity.vendor_id);
  put(file, at, &identity.device_id, sizeof identity.device_id);
  put(file, at, &identity.driver_version, sizeof identity.driver_version);
  put(file, at, identity.cache_uuid, VK_UUID_SIZE);
  put(file, at, &size, sizeof size);
  put(file, at, &hash, sizeof hash);
  if (!payload.empty()) put(file, at, payload.data(), payload.size());
  return file;
}

bool driver_header_matches(const PipelineCacheIdentity& identity, std::span<const uint8_t> data,
                           std::string& reason) {
  if (data.size() < 16 + VK_UUID_SIZE) {
    reason = "the driver's header is missing";
    return false;
  }
  size_t at = 0;
  const auto header_size = get<uint32_t>(data, at);
  const auto header_version = get<uint32_t>(data, at);
  const auto vendor = get<uint32_t>(data, at);
  const auto device = get<uint32_t>(data, at);
  if (header_size < 16 + VK_UUID_SIZE || header_size > data.size() ||
      header_version != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || vendor != identity.vendor_id ||
      device != identity.device_id ||
      std::memcmp(data.data() + at, identity.cache_uuid, VK_UUID_SIZE) != 0) {
    reason = "the driver's header (VkPipelineCacheHeaderVersionOne) does not match the device";
    return false;
  }
  return true;
}

bool unwrap_pipeline_cache(const PipelineCacheIdentity& identity, std::span<const uint8_t> file,
                           std::vector<uint8_t>& payload, std::string& reason) {
  if (file.size() < kHeaderBytes) {
    reason = "truncated: " + std::to_string(file.size()) + " bytes, shorter than its header";
    return false;
  }
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) {
    reason = "not a Phynexus pipeline cache (bad magic)";
    return false;
  }
  size_t at = sizeof kMagic;
  const auto format = get<uint32_t>(file, at);
  const auto vendor = get<uint32_t>(file, at);
  const auto device = get<uint32_t>(file, at);
  const auto driver = get<uint32_t>(file, at);
  uint8_t uuid[VK_UUID_SIZE];
  std::memcpy(uuid, file.data() + at, VK_UUID_SIZE);
  at += VK_UUID_SIZE;
  const auto size = get<uint64_t>(file, at);
  const auto hash = get<uint64_t>(file, at);
  if (format != kPipelineCacheFormat) {
    reason = "format version " + std::to_string(format) + ", expected " +
             std::to_string(kPipelineCacheFormat);
    return false;
  }
  if (vendor != identity.vendor_id || device != identity.device_id ||
      driver != identity.driver_version ||
      std::memcmp(uuid, identity.cache_uuid, VK_UUID_SIZE) != 0) {
    reason = "written for another device, driver or driver version";
    return false;
  }
  if (size != file.size() - kHeaderBytes) {
    reason = "truncated or padded: the header says " + std::to_string(size) +
             " payload bytes, the file has " + std::to_string(file.size() - kHeaderBytes);
    return false;
  }
  const std::span<const uint8_t> body = file.subspan(kHeaderBytes);
  if (fnv1a64(body) != hash) {
    reason = "corrupt: the payload's hash does not match";
    return false;
  }
  // A wrong driver header is a driver bug or a forged file; either way the driver should
  // not be handed it.
  if (!driver_header_matches(identity, body, reason)) return false;
  payload.assign(body.begin(), body.end());
  return true;
}

bool read_file(const std::string& path, uint64_t max_bytes, std::vector<uint8_t>& bytes,
               std::string& reason) {
  std::error_code error;
  const uint64_t size = std::filesystem::file_size(path, error);
  if (error) {
    reason = error.message();
    return false;
  }
  if (size > max_bytes) {
    reason =
        std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) + " allowed";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  bytes.resize(size);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size))) {
    reason = "cannot read it";
    return false;
  }
  return true;
}

bool write_file_atomically(const std::string& path, std::span<const uint8_t> bytes,
                           std::string& reason) {
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
  // The process id keeps two processes that save at once from sharing a temporary file.
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  FILE* out = std::fopen(temporary.c_str(), "wb");
  if (out == nullptr) {
    reason = "cannot create " + temporary + ": " + std::strerror(errno);
    return false;
  }
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size();
  const bool closed = std::fclose(out) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path.c_str()) != 0) {
    reason = "cannot write " + path + ": " + std::strerror(errno);
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace phx::vulkan
