// What a plugin's serialized executable (plugin.h, executable_serialize) is written and
// read with: fields in native byte order without padding, strings as a uint32_t length and
// their bytes, and an FNV-1a 64 checksum that tells damaged bytes from whole ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace phx::plugin_common {

inline uint64_t fnv1a64(std::span<const uint8_t> bytes, uint64_t hash = 0xcbf29ce484222325ull) {
  for (uint8_t byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// Whether bytes end with the FNV-1a 64 checksum of every byte before it, as put_checksum
// ends them: checked first, so that a damaged field (a format version included) is never
// taken for what it says.
inline bool checksum_matches(std::span<const uint8_t> bytes) {
  uint64_t checksum = 0;
  if (bytes.size() < sizeof checksum) return false;
  std::memcpy(&checksum, bytes.data() + bytes.size() - sizeof checksum, sizeof checksum);
  return checksum == fnv1a64(bytes.first(bytes.size() - sizeof checksum));
}

class ByteWriter {
 public:
  template <class T>
  void put(const T& value) {
    const auto* p = reinterpret_cast<const uint8_t*>(&value);
    bytes.insert(bytes.end(), p, p + sizeof value);
  }
  void put_bytes(std::span<const uint8_t> data) {
    bytes.insert(bytes.end(), data.begin(), data.end());
  }
  void put_string(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  // The checksum of every byte so far, appended.
  void put_checksum() { put(fnv1a64(bytes)); }
  std::vector<uint8_t> bytes;
};

// Reads fields in order; once one does not fit, ok() is false and every later read gives
// zeros or empties, so that a caller checks once, at the end (ok() and remaining() 0).
class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  template <class T>
  T get() {
    T value{};
    if (take(sizeof value)) std::memcpy(&value, bytes_.data() + at_ - sizeof value, sizeof value);
    return value;
  }
  std::span<const uint8_t> get_bytes(uint64_t size) {
    if (!take(size)) return {};
    return bytes_.subspan(at_ - size, size);
  }
  std::string get_string() {
    const std::span<const uint8_t> s = get_bytes(get<uint32_t>());
    return std::string(s.begin(), s.end());
  }
  bool ok() const { return ok_; }
  size_t remaining() const { return bytes_.size() - at_; }

 private:
  bool take(uint64_t size) {
    if (!ok_ || size > bytes_.size() - at_) return ok_ = false;
    at_ += size;
    return true;
  }
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
  bool ok_ = true;
};

// The fields of serialized data between its 8-byte magic and its checksum, once both are
// checked; nullopt with error set for data of another kind (what names the kind expected)
// or damaged data.
inline std::optional<ByteReader> open_serialized(std::span<const uint8_t> bytes,
                                                 const char (&magic)[8], const char* what,
                                                 std::string& error) {
  if (bytes.size() < sizeof magic || std::memcmp(bytes.data(), magic, sizeof magic) != 0) {
    error = std::string("not a serialized ") + what + " (bad magic)";
    return std::nullopt;
  }
  if (!checksum_matches(bytes)) {
    error = "truncated or damaged: its checksum does not match its " +
            std::to_string(bytes.size()) + " bytes";
    return std::nullopt;
  }
  return ByteReader(bytes.first(bytes.size() - sizeof(uint64_t)).subspan(sizeof magic));
}

}  // namespace phx::plugin_common
