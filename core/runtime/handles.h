// Opaque handles that detect misuse. A handle is not a pointer: it encodes the kind of
// object (a tag), a slot of a process-wide table and the slot's generation, so a
// destroyed handle (whose slot may since hold another object), a handle of another kind
// or a made-up value is recognized and refused, never dereferenced.
#pragma once

#include <cstdint>

static_assert(sizeof(uintptr_t) == 8, "handles need 64-bit pointers");
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace phx {

template <typename Object, uint8_t Tag>
class HandleTable {
 public:
  // Registers object and returns its handle value; 0 when the table is full.
  uintptr_t add(Object* object) {
    std::unique_lock lock(mutex_);
    uint32_t index;
    if (!free_.empty()) {
      index = free_.back();
      free_.pop_back();
    } else {
      if (slots_.size() >= kMaxSlots) return 0;
      index = static_cast<uint32_t>(slots_.size());
      slots_.push_back({nullptr, 1});
    }
    slots_[index].object = object;
    return encode(index, slots_[index].generation);
  }

  // The live object of handle, or null for a stale or unknown handle. on_found is
  // called with the object while the table's lock is held: remove waits for it, so the
  // object cannot be freed before on_found has, for instance, retained its owner.
  // on_found may throw; the exception propagates.
  template <typename OnFound>
  Object* find(uintptr_t handle, OnFound&& on_found) const {
    uint32_t index, generation;
    if (!decode(handle, index, generation)) return nullptr;
    std::shared_lock lock(mutex_);
    if (index >= slots_.size() || slots_[index].generation != generation) return nullptr;
    Object* object = slots_[index].object;
    on_found(*object);
    return object;
  }

  // Forgets handle; later lookups of it fail. Returns the object, or null if stale.
  Object* remove(uintptr_t handle) {
    uint32_t index, generation;
    if (!decode(handle, index, generation)) return nullptr;
    std::unique_lock lock(mutex_);
    if (index >= slots_.size() || slots_[index].generation != generation) return nullptr;
    Object* object = slots_[index].object;
    slots_[index].object = nullptr;
    // Generation 0 is never handed out, so a wrapped counter skips it.
    if (++slots_[index].generation == 0) slots_[index].generation = 1;
    free_.push_back(index);
    return object;
  }

 private:
  struct Slot {
    Object* object;
    uint32_t generation;
  };
  // Bits 56-63: the tag; 32-55: slot index + 1; 0-31: generation.
  static constexpr uint32_t kMaxSlots = (1u << 24) - 1;
  static uintptr_t encode(uint32_t index, uint32_t generation) {
    return (static_cast<uintptr_t>(Tag) << 56) | (static_cast<uintptr_t>(index + 1) << 32) |
           generation;
  }
  static bool decode(uintptr_t handle, uint32_t& index, uint32_t& generation) {
    if ((handle >> 56) != Tag) return false;
    uint32_t slot = static_cast<uint32_t>((handle >> 32) & 0xffffffu);
    if (slot == 0) return false;
    index = slot - 1;
    generation = static_cast<uint32_t>(handle);
    return generation != 0;
  }

  mutable std::shared_mutex mutex_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace phx
