// How the fuzz targets read their input, and how the seed generator writes one: fields
// front to back, zeros once the input runs out. Every prefix of an input is therefore an
// input too, and a seed is written field by field in the order the target reads it,
// which keeps the committed seeds reviewable (make_seeds.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace phx::fuzz {

// Marks a number() that takes eight bytes instead of two.
constexpr uint8_t kWideNumber = 0xff;

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool empty() const { return at_ >= size_; }

  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }

  uint64_t u64() {
    uint64_t value = 0;
    for (int i = 0; i < 8; ++i) value |= uint64_t{byte()} << (8 * i);
    return value;
  }

  // A size or an offset: two bytes, little-endian, or kWideNumber and then eight, so
  // that small values are cheap and every value is reachable.
  uint64_t number() {
    const uint8_t low = byte();
    if (low == kWideNumber) return u64();
    return low | uint64_t{byte()} << 8;
  }

  void bytes(void* out, size_t count) {
    auto* to = static_cast<uint8_t*>(out);
    for (size_t i = 0; i < count; ++i) to[i] = byte();
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

class ByteWriter {
 public:
  ByteWriter& byte(uint8_t value) {
    out_.push_back(value);
    return *this;
  }

  ByteWriter& u64(uint64_t value) {
    for (int i = 0; i < 8; ++i) byte(static_cast<uint8_t>(value >> (8 * i)));
    return *this;
  }

  ByteWriter& number(uint64_t value) {
    if (value > 0xffff || (value & 0xff) == kWideNumber) return byte(kWideNumber).u64(value);
    return byte(static_cast<uint8_t>(value)).byte(static_cast<uint8_t>(value >> 8));
  }

  ByteWriter& bytes(const void* data, size_t count) {
    const auto* from = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), from, from + count);
    return *this;
  }

  const std::vector<uint8_t>& data() const { return out_; }

 private:
  std::vector<uint8_t> out_;
};

}  // namespace phx::fuzz
