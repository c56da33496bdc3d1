// Little-endian fields written to and read from a byte buffer, for a saved executable.
// Reading never trusts the data: every field is bounds-checked and a short or oversized
// one fails with INVALID_ARGUMENT naming where, so a truncated or hostile file is refused
// rather than read past its end.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "errors.h"

namespace phx::graph {

class ByteWriter {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
    data_.insert(data_.end(), bytes, bytes + sizeof value);
  }
  void put_bytes(const void* bytes, size_t size) {
    put<uint64_t>(size);
    const auto* begin = static_cast<const unsigned char*>(bytes);
    data_.insert(data_.end(), begin, begin + size);
  }
  void put_string(const std::string& text) { put_bytes(text.data(), text.size()); }

  std::vector<unsigned char>& data() { return data_; }

 private:
  std::vector<unsigned char> data_;
};

class ByteReader {
 public:
  ByteReader(const void* data, size_t size)
      : data_(static_cast<const unsigned char*>(data)), size_(size) {}

  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);
    return value;
  }
  // A count of items that each take at least min_item_bytes: one the rest of the data
  // cannot hold is damage, refused before anything is sized by it.
  size_t get_count(size_t min_item_bytes = 1) {
    const auto count = get<uint32_t>();
    if (uint64_t(count) * min_item_bytes > size_ - offset_) damaged("a count past the end");
    return count;
  }
  std::vector<unsigned char> get_bytes() {
    const auto size = get<uint64_t>();
    if (size > size_ - offset_) damaged("a length past the end");
    const unsigned char* begin = take(static_cast<size_t>(size));
    return {begin, begin + size};
  }
  std::string get_string() {
    const std::vector<unsigned char> bytes = get_bytes();
    return {bytes.begin(), bytes.end()};
  }
  bool at_end() const { return offset_ == size_; }
  [[noreturn]] void damaged(const std::string& what) const {
    fail(PHX_STATUS_INVALID_ARGUMENT, "the saved executable is truncated or damaged: " + what +
                                          " at byte " + std::to_string(offset_));
  }

 private:
  const unsigned char* take(size_t size) {
    if (size > size_ - offset_) damaged("a field past the end");
    const unsigned char* at = data_ + offset_;
    offset_ += size;
    return at;
  }

  const unsigned char* data_;
  size_t size_;
  size_t offset_ = 0;
};

}  // namespace phx::graph
